"""Every example kernel compiles to PTX for each architecture and assembles with ptxas without
spilling; the instructions the language's operations map to are in the code."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import compiler, toolchain
from argus.backends.nvptx.errors import CodegenError, TargetError
from argus.backends.nvptx.occupancy import occupancy
from argus.backends.nvptx.targets import ARCHS, arch
from argus.backends.nvptx.toolchain import Resources, find_ptxas
from argus.dsl import (
    ArgusError,
    Tensor,
    bf16,
    f8e4m3,
    f32,
    kernel,
    make_local,
    make_shared,
    matmul,
    thread_idx,
    warpgroup_mma_64xNx16,
)
from argus.dsl.atoms import MMAAtom
from argus.layout import Layout, parse

from .conftest import example_kernels, language_kernels

needs_ptxas = pytest.mark.skipif(toolchain.find_ptxas() is None, reason="ptxas is not installed")


def specialize(module: Any, name: str) -> Any:
    problem = getattr(module, f"example_{name}")(np.random.default_rng(0))
    return getattr(module, name).specialize(**problem.constants)


@pytest.mark.parametrize("module, name", example_kernels())
@pytest.mark.parametrize("target", sorted(ARCHS))
def test_example_compiles_to_ptx(module: Any, name: str, target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    needs = getattr(module, "TARGETS", None)  # an example for some targets only says which
    if needs is not None and f"nvptx:{target}" not in needs:
        with pytest.raises(CodegenError, match=f"needs nvptx:.*sm_90a.*|nvptx:{target} does not have") as info:
            compiler.build(specialize(module, name), arch(target), assemble=False)
        assert info.value.location is not None and info.value.location.line > 0
        return
    binary = compiler.build(specialize(module, name), arch(target), assemble=False)
    assert f".target {target}" in binary.ptx
    assert f".entry {binary.abi.name}(" in binary.ptx


@needs_ptxas
@pytest.mark.parametrize("module, name", example_kernels())
def test_example_assembles_for_hopper_without_spills(module: Any, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    binary = compiler.build(specialize(module, name), arch("sm_90a"), assemble=True)
    assert binary.cubin and binary.resources is not None
    assert binary.resources.spill_stores == binary.resources.spill_loads == 0, binary.resources.text()
    assert binary.resources.stack_bytes == 0, "a register array went to local memory"
    assert binary.resources.registers > 0


@needs_ptxas
def test_gemm_issues_tensor_core_instructions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    gemm = next(p.values for p in example_kernels() if p.id == "gemm:gemm")
    binary = compiler.build(specialize(*gemm), arch("sm_90a"), assemble=True)
    assert binary.ptx.count("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32") == 8
    try:
        sass = toolchain.disassemble(binary.cubin or b"")
    except toolchain.ToolchainError as err:
        pytest.skip(str(err))
    assert sass.count("HMMA.16816.F32.BF16") == 8


@needs_ptxas
def test_hopper_gemm_issues_warpgroup_mma(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    gemm = next(p.values for p in example_kernels() if p.id == "gemm_sm90:gemm_sm90")
    binary = compiler.build(specialize(*gemm), arch("sm_90a"), assemble=True)
    assert binary.ptx.count("wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16") == 4
    assert binary.ptx.count("wgmma.wait_group.sync.aligned 0") == 1  # the four form one group
    try:
        sass = toolchain.disassemble(binary.cubin or b"")
    except toolchain.ToolchainError as err:
        pytest.skip(str(err))
    assert sass.count("HGMMA.64x128x16.F32.BF16") == 4


@needs_ptxas
def test_the_fp8_gemm_issues_fp8_warpgroup_mma(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    gemm = next(p.values for p in example_kernels() if p.id == "gemm_tma:gemm_tma_fp8")
    binary = compiler.build(specialize(*gemm), arch("sm_90a"), assemble=True)
    assert binary.ptx.count("wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3") == 16  # 4 stages × 4 K steps
    assert binary.resources is not None and binary.resources.spill_stores == 0
    try:
        sass = toolchain.disassemble(binary.cubin or b"")
    except toolchain.ToolchainError as err:
        pytest.skip(str(err))
    assert "QGMMA.64x128x32.F32.E4M3.E4M3" in sass


def test_fp8_values_stay_in_memory() -> None:
    @kernel(block=(32,))
    def widen(x: Tensor[f8e4m3, 32], out: Tensor[f32, 32]):
        out[thread_idx.x] = f32(x[thread_idx.x])

    with pytest.raises(CodegenError, match=r"test_compile\.py:\d+:\d+: f8e4m3 values are moved and multiplied by "
                                           r"tensor cores here"):
        compiler.build(widen.specialize(), arch("sm_90a"), assemble=False)


def test_a_shared_operand_without_a_descriptor_form_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    mma = warpgroup_mma_64xNx16(64, bf16, bf16, f32)

    @kernel(block=(128,), verify=False)
    def padded(c: Tensor[f32, 64, 64]):
        sA = make_shared(Layout((64, 16), (24, 1)), bf16)  # rows padded to 24: no descriptor says that
        sB = make_shared(Layout((64, 16), (24, 1)), bf16)
        acc = make_local((32,), f32)
        matmul(sA, sB, acc, mma)

    with pytest.raises(CodegenError, match=r"wgmma cannot read operand a .*element \(row 1, k 0\) sits at offset 24") as info:
        compiler.build(padded.specialize(), arch("sm_90a"), assemble=False)
    assert info.value.location is not None and info.value.location.line > 0


def test_unknown_architecture_lists_the_valid_ones() -> None:
    with pytest.raises(TargetError, match="nvptx:sm_80, nvptx:sm_90, nvptx:sm_90a"):
        arch("sm_75")


def test_an_atom_without_an_instruction_is_refused_with_its_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    # the 16x8x16 atom's A layout with two values swapped: the interpreter runs it, mma.sync would not
    odd = MMAAtom("odd_16x8x16", (16, 8, 16), 32, parse("((4,8),(2,2,2)):((32,1),(8,16,128))"),
                  parse("((4,8),(2,2)):((16,1),(8,64))"), parse("((4,8),(2,2)):((32,1),(16,8))"), bf16, bf16, f32)

    @kernel(block=(32,), verify=False)
    def product(c: Tensor[f32, 4]):
        a = make_local((8,), bf16)
        b = make_local((4,), bf16)
        acc = make_local((4,), f32)
        for i in range(8):
            a[i] = bf16(1.0)
        for i in range(4):
            b[i] = bf16(1.0)
            acc[i] = 0.0
        matmul(a, b, acc, odd)
        c[thread_idx.x % 4] = acc[0]

    with pytest.raises(CodegenError, match=r"odd_16x8x16") as info:
        compiler.build(product.specialize(), arch("sm_90a"), assemble=False)
    assert info.value.location is not None and info.value.location.line > 0


def test_cached_build_is_reused(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    vector_add = next(p.values for p in example_kernels() if p.id == "vector_add:vector_add")
    first = compiler.build(specialize(*vector_add), arch("sm_90a"), assemble=False)
    again = compiler.build(specialize(*vector_add), arch("sm_90a"), assemble=False)
    assert again.ptx == first.ptx and again.abi == first.abi
    assert list(tmp_path.rglob("*.ptx"))


@pytest.mark.parametrize("k", language_kernels())
def test_every_kernel_compiles_or_is_refused_with_its_line(k: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    try:
        compiled = k.specialize()
    except ArgusError:
        return  # a kernel those tests wrote to be refused by the front end
    try:
        binary = compiler.build(compiled, arch("sm_90a"), assemble=False)
    except CodegenError as err:
        assert err.location is not None or "warp" in str(err), str(err)
        return
    assert f".entry {binary.abi.name}(" in binary.ptx


@pytest.mark.parametrize("registers, shared, threads, blocks, limit", [
    (96, 4096, 128, 5, "registers"),  # 3072 registers a warp: 21 warps, 5 blocks of 4
    (24, 4096, 256, 8, "threads"),
    (32, 49152, 128, 4, "shared memory"),  # 48 KB + 1 KB reserved per block, of 228 KB
    (16, 0, 32, 32, "blocks"),
])
def test_occupancy_follows_the_allocation_rules(registers: int, shared: int, threads: int, blocks: int,
                                                limit: str) -> None:
    fit = occupancy(Resources(registers, 0, 0, 0, shared), arch("sm_90a"), threads)
    assert (fit.blocks_per_sm, fit.limit) == (blocks, limit)
    assert fit.warps_per_sm == blocks * threads // 32


def test_min_blocks_per_sm_caps_registers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    gemm = next(p.values for p in example_kernels() if p.id == "gemm_sm80:gemm_sm80")
    binary = compiler.build(specialize(*gemm), arch("sm_90a"), assemble=find_ptxas() is not None)
    assert ".minnctapersm 2" in binary.ptx
    if binary.resources is not None:
        assert occupancy(binary.resources, arch("sm_90a"), 256).blocks_per_sm >= 2


def test_min_blocks_per_sm_is_checked() -> None:
    with pytest.raises(ArgusError, match="min_blocks_per_sm is an int from 1 to 32"):
        kernel(block=(32,), min_blocks_per_sm=0)


def test_a_launch_breaking_an_assumption_is_refused_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    from argus.backends.nvptx import runtime
    from argus.dsl import launch_args

    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    gemm = next(p.values for p in example_kernels() if p.id == "gemm_tma:gemm_tma")
    binary = compiler.build(specialize(*gemm), arch("sm_90a"), assemble=False)
    texts = [c.text for c in binary.abi.conditions]
    assert texts == ["assume(M % BM == 0)", "assume(N % BN == 0)", "assume(K % (STAGES * BK) == 0)"]
    arrays = {i: runtime.DeviceArray(0, shape, "torch.bfloat16", 0, True) for i, shape in
              enumerate([(256, 1000), (256, 1000), (256, 256)])}
    args = [None, None, None, 256, 256, 1000]  # K = 1000: not a whole number of pipeline rounds
    for condition in binary.abi.conditions[:2]:
        launch_args.check_condition(binary.abi, condition, args, arrays, runtime.CudaError)
    with pytest.raises(runtime.CudaError, match=r"breaks the kernel's assumption at .*gemm_tma\.py:\d+:\d+: "
                                                r"assume\(K % \(STAGES \* BK\) == 0\) \(K = 1000\)"):
        launch_args.check_condition(binary.abi, binary.abi.conditions[2], args, arrays, runtime.CudaError)


def test_marshalling_checks_the_assumptions_once_per_launch_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    from argus.backends.nvptx import runtime

    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    gemm = next(p.values for p in example_kernels() if p.id == "gemm_sm90:gemm_sm90")
    abi = compiler.build(specialize(*gemm), arch("sm_90a"), assemble=False).abi

    def views(k: int) -> list[Any]:
        return [runtime.DeviceArray(1 << 20, (256, k), "torch.bfloat16", 0, True),
                runtime.DeviceArray(1 << 21, (256, k), "torch.bfloat16", 0, True),
                runtime.DeviceArray(1 << 22, (256, 256), "torch.float32", 0, True), None, None, None]

    args: list[Any] = [object(), object(), object(), 256, 256, 128]
    values, _ = runtime.marshal(abi, args, views(128))
    assert values[-3:] == [256, 256, 128]
    runtime.marshal(abi, args, views(128))  # the same shape again: already checked
    with pytest.raises(runtime.CudaError, match=r"assume\(K % BK == 0\) \(K = 100\)"):
        runtime.marshal(abi, [*args[:5], 100], views(100))


def test_parameters_are_packed_where_the_driver_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    import ctypes

    from argus.backends.nvptx import runtime

    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    gemm = next(p.values for p in example_kernels() if p.id == "gemm_tma:gemm_tma")
    abi = compiler.build(specialize(*gemm), arch("sm_90a"), assemble=False).abi
    kinds = [p.kind if p.kind != "scalar" else p.llvm_type for p in abi.params]
    values = [(1 << 40) + 64 * i if k in ("pointer", "tensormap") else 1000 + i for i, k in enumerate(kinds)]
    buffer = runtime.ParamBuffer(abi)
    pointers = buffer.pack(values)
    read = {"pointer": ctypes.c_uint64, "tensormap": ctypes.c_uint64, "dim": ctypes.c_int32, "i32": ctypes.c_int32}
    for i, (kind, value) in enumerate(zip(kinds, values)):
        assert pointers[i] % ctypes.sizeof(read[kind]) == 0
        assert read[kind].from_address(pointers[i]).value == value, (i, kind)


def test_the_binary_is_built_while_the_kernel_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first launch builds the binary on a worker thread during the tag check and loads that
    binary; a kernel whose check fails never reaches the GPU."""
    import threading

    from argus.backends.nvptx import runtime
    from argus.dsl import TagAssertionError, tag

    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    built_on, loaded = [], []
    build = compiler.build

    def recording_build(*args: Any, **kwargs: Any) -> Any:
        built_on.append(threading.current_thread().name)
        return build(*args, **kwargs, assemble=False)

    class Loaded:
        def __init__(self, binary: Any, device: int) -> None:
            loaded.append(binary)

        def launch(self, grid: Any, args: Any, **_: Any) -> None:
            pass

    monkeypatch.setattr(compiler, "build", recording_build)
    monkeypatch.setattr(runtime, "LoadedKernel", Loaded)

    def reader(shift: int) -> Any:
        @kernel(block=(32,))
        def read(x: Tensor[f32, 32], y: Tensor[f32, 32]):
            tag(x, lambda i: (i,))
            got = make_local((1,), f32)
            want = make_local((1,), f32)
            tag(want, lambda i: (thread_idx.x,))
            got[0] = x[(thread_idx.x + shift) % 32]
            y[thread_idx.x] = got[0]
            assert tag(got[...]) == tag(want[...])

        return read

    data = [np.zeros(32, np.float32), np.zeros(32, np.float32)]
    reader(0).launch((1,), data, {}, target="nvptx:sm_90a")
    assert built_on and built_on[0].startswith("argus-nvptx-build")
    assert len(loaded) == 1 and ".entry read" in loaded[0].ptx

    with pytest.raises(TagAssertionError):
        reader(1).launch((1,), data, {}, target="nvptx:sm_90a")
    assert len(loaded) == 1


@pytest.mark.parametrize("bits, mode", [(3, 1), (2, 2), (1, 3)])
def test_every_swizzle_width_has_its_descriptor(bits: int, mode: int) -> None:
    """128-, 64- and 32-byte swizzled K-major rows: the descriptor's mode, 8-row stride and the
    alignment the allocation needs follow the width; a swizzle of other parameters is refused."""
    from argus.backends.nvptx.warpgroup import NotDescribable, descriptor_form
    from argus.layout import ComposedLayout, Swizzle

    width = 16 << bits  # bytes per swizzled row
    row = width // 2  # bf16 elements
    tile = ComposedLayout(Swizzle(bits, 3, 3), 0, Layout((64, 16), (row, 1)))
    form = descriptor_form(tile, 64, 2)
    assert (form.mode, form.stride_bytes, form.alignment) == (mode, 8 * width, 8 * width)
    with pytest.raises(NotDescribable, match="neither none nor a 128-, 64- or 32-byte swizzle"):
        descriptor_form(ComposedLayout(Swizzle(bits, 2, 3), 0, Layout((64, 16), (row, 1))), 64, 2)
