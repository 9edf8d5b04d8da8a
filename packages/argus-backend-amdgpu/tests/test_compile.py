"""Every example kernel compiles for gfx942 and gfx950, or is refused naming its line; the code
uses the chip's instructions for the language's operations; bad targets and missing tools get
clear errors. (No AMD GPU runs here: the assembly and its metadata are what is checked.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.backends.amdgpu import compiler, runtime, toolchain
from argus.backends.amdgpu.targets import CHIPS, chip
from argus.dsl import ArgusError, CodegenError, Kernel, Tensor, f32, kernel, make_shared, syncthreads, thread_idx
from argus.dsl.backends import TargetError
from argus.dsl.cli import load_module

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def examples() -> list[Any]:
    out = []
    for path in sorted(EXAMPLES.glob("*.py")):
        module = load_module(path)
        for name, value in vars(module).items():
            if isinstance(value, Kernel) and hasattr(module, f"example_{name}"):
                out.append(pytest.param(module, name, id=f"{path.stem}:{name}"))
    return out


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    monkeypatch.setenv("ARGUS_VERIFY", "0")


def build(k: Any, name: str = "gfx942", **constants: Any) -> compiler.Binary:
    return compiler.build(k.specialize(**constants), chip(name))


@pytest.mark.parametrize("target", sorted(CHIPS))
@pytest.mark.parametrize("module, name", examples())
def test_an_example_compiles_or_is_refused_with_its_line(module: Any, name: str, target: str) -> None:
    problem = getattr(module, f"example_{name}")(np.random.default_rng(0))
    try:
        binary = build(getattr(module, name), target, **problem.constants)
    except CodegenError as err:
        assert err.location is not None, f"refused without a line: {err}"
        assert Path(err.location.file).parent == EXAMPLES, err
        return
    assert f".amdhsa_kernel {binary.abi.name}" in binary.assembly
    assert binary.resources.scratch_bytes == 0 and binary.resources.vgpr_spills == 0


def test_the_portable_examples_compile() -> None:
    """The examples that use no matrix atom and no NVIDIA intrinsic are the ones that must build."""
    for stem in ("vector_add", "transpose", "softmax"):
        module = load_module(EXAMPLES / f"{stem}.py")
        problem = getattr(module, f"example_{stem}")(np.random.default_rng(0))
        assert build(getattr(module, stem), **problem.constants).resources.vgprs > 0


def test_shared_tiles_and_barriers_use_lds_and_s_barrier() -> None:
    module = load_module(EXAMPLES / "transpose.py")
    problem = module.example_transpose(np.random.default_rng(0))
    binary = build(module.transpose, **problem.constants)
    assert "s_barrier" in binary.assembly
    assert "ds_write" in binary.assembly and "ds_read" in binary.assembly
    assert binary.resources.lds_bytes > 0


def test_shuffles_use_ds_bpermute_within_the_declared_warp() -> None:
    module = load_module(EXAMPLES / "softmax.py")
    problem = module.example_softmax(np.random.default_rng(0))
    binary = build(module.softmax, **problem.constants)
    assert "ds_bpermute_b32" in binary.assembly


@pytest.mark.parametrize("target", sorted(CHIPS))
def test_the_cdna_gemm_runs_on_mfma_with_128_bit_loads(target: str) -> None:
    module = load_module(EXAMPLES / "gemm_cdna.py")
    problem = module.example_gemm_cdna(np.random.default_rng(0))
    binary = build(module.gemm_cdna, target, **problem.constants)
    assert binary.assembly.count("v_mfma_f32_32x32x8_bf16") == 4  # per K step of 32
    assert binary.assembly.count("ds_read_b128") == 4  # each lane's fragments for two products at once
    assert binary.assembly.count("buffer_load_dwordx4") == 2  # 16 bytes of A and of B per thread
    assert binary.resources.scratch_bytes == 0 and binary.resources.lds_bytes == 8192


@pytest.mark.parametrize("target", sorted(CHIPS))
def test_the_cdna_attention_chains_its_products_in_registers(target: str) -> None:
    module = load_module(EXAMPLES / "attention_cdna.py")
    problem = module.example_attention_cdna(np.random.default_rng(0))
    d = problem.constants["D"]
    binary = build(module.attention_cdna, target, **problem.constants)
    products = 2 * (module.KT // 16) * (d // 16)  # Sᵀ and Oᵀ over one tile of keys
    assert binary.assembly.count("v_mfma_f32_16x16x16_bf16") == products
    assert "ds_bpermute_b32" in binary.assembly  # the per-query reductions over the four lane groups
    assert binary.resources.scratch_bytes == 0
    assert binary.resources.lds_bytes == 2 * module.KT * d * 2  # the tiles of K and of Vᵀ


@pytest.mark.parametrize("target", sorted(CHIPS))
def test_the_cdna_attention_stages_its_tiles_in_lds_with_128_bit_accesses(target: str) -> None:
    module = load_module(EXAMPLES / "attention_cdna.py")
    problem = module.example_attention_cdna(np.random.default_rng(0))
    d = problem.constants["D"]
    binary = build(module.attention_cdna, target, **problem.constants)
    asm = binary.assembly
    per_tile = 2 * module.KT * d * 2 // 16 // module.THREADS  # 16-byte pieces of K and V per thread
    assert asm.count("buffer_load_dwordx4") == 2 * per_tile  # the first tile's, then each next one's
    assert not re.search(r"buffer_load_(dword|dwordx2|dwordx3|short|ushort)\b", asm)
    assert asm.count("ds_write_b128") == per_tile // 2  # K as loaded
    assert asm.count("ds_write_b64") == per_tile  # V transposed, four keys (half a piece) per store
    # every fragment one 128-bit read for two products: K's for Sᵀ, Vᵀ's for Oᵀ
    assert asm.count("ds_read_b128") == (module.KT // 16) * (d // 16) and "ds_read_b64" not in asm
    assert asm.count("s_barrier") == 2  # the tiles are written, then read, then free again
    assert binary.resources.scratch_bytes == 0 and binary.resources.vgpr_spills == 0


def test_a_kernel_that_asks_for_agprs_accumulates_there(tmp_path: Path) -> None:
    source = (EXAMPLES / "gemm_cdna.py").read_text()
    edit = "    tag(b, lambda n, k: (k,), rows=lambda n, k: (n,))\n"
    assert edit in source
    path = tmp_path / "gemm_cdna_agprs.py"
    path.write_text(source.replace(edit, edit + "    amd.agprs(32)\n", 1))
    module = load_module(path)
    problem = module.example_gemm_cdna(np.random.default_rng(0))
    binary = build(module.gemm_cdna, **problem.constants)
    assert binary.resources.agprs == 32
    assert re.search(r"v_mfma_f32_32x32x8_bf16 a\[\d+:\d+\]", binary.assembly)  # the accumulators are AGPRs
    plain = build(load_module(EXAMPLES / "gemm_cdna.py").gemm_cdna, **problem.constants)
    assert plain.resources.agprs == 0


def test_a_wave_atom_with_other_layouts_is_refused_with_its_line() -> None:
    from argus.dsl import MMAAtom, bf16, make_local, matmul, wave_mma_16x16x16
    from argus.layout import parse

    real = wave_mma_16x16x16(bf16, bf16, f32)
    shuffled = MMAAtom("mma_16x16x16_shuffled", real.shape, 64, parse("((4,16),4):((64,1),16)"), real.b_layout,
                       real.c_layout, bf16, bf16, f32)

    @kernel(block=(64,), warp_size=64)
    def other(out: Tensor[f32, 64, 4]):
        fa = make_local((4,), bf16)
        fb = make_local((4,), bf16)
        acc = make_local((4,), f32)
        for v in range(4):
            fa[v] = 1.0
            fb[v] = 1.0
            acc[v] = 0.0
        matmul(fa, fb, acc, shuffled)
        for v in range(4):
            out[thread_idx.x, v] = acc[v]

    with pytest.raises(CodegenError, match=r"test_compile\.py:\d+:\d+: no gfx942 instruction runs the "
                                           r"matrix-multiply atom mma_16x16x16_shuffled"):
        build(other)


def test_a_workgroup_past_the_chips_lds_is_refused() -> None:
    @kernel(block=(64,))
    def big(out: Tensor[f32, 64]):
        s = make_shared((20000,), f32)  # 80 000 bytes
        s[thread_idx.x] = 1.0
        syncthreads()
        out[thread_idx.x] = s[thread_idx.x]

    with pytest.raises(CodegenError, match=r"test_compile\.py:\d+:\d+: with this tile the kernel's shared memory reaches 80000 bytes of LDS; a gfx942 "
                                           r"workgroup has 65536"):
        build(big, "gfx942")
    assert build(big, "gfx950").resources.lds_bytes >= 80000


def test_an_unknown_chip_lists_the_valid_ones() -> None:
    with pytest.raises(TargetError, match=r"unknown AMD chip 'gfx1100'.*amdgpu:gfx942 .*amdgpu:gfx950"):
        chip("gfx1100")


def test_linking_without_ld_lld_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain, "find_linker", lambda: None)
    module = load_module(EXAMPLES / "vector_add.py")
    with pytest.raises(toolchain.ToolchainError, match="needs ld.lld"):
        build(module.vector_add).hsaco()


def test_a_launch_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(toolchain, "find_linker", lambda: None)
    module = load_module(EXAMPLES / "vector_add.py")
    problem = module.example_vector_add(np.random.default_rng(0))
    with pytest.raises(ArgusError, match=r"vector_add: launching on amdgpu:gfx942 needs .*ld\.lld"):
        module.vector_add.launch(problem.grid, problem.args, {}, target="amdgpu:gfx942")
    assert runtime.availability() is not None


def test_a_kernel_with_clusters_is_refused_at_its_line() -> None:
    @kernel(block=(64,), warp_size=64, cluster=(2, 1, 1))
    def clustered(x: Tensor[f32, 64]):
        x[thread_idx.x] = 1.0

    with pytest.raises(CodegenError, match=r"test_compile\.py:\d+:\d+: thread-block clusters are an NVIDIA"):
        build(clustered)


def test_a_second_build_comes_from_the_disk_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel built once loads from the cache, in this process or another, without its IR
    being lowered or LLVM run again; another chip is another entry."""
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    module = load_module(EXAMPLES / "vector_add.py")
    compiled = module.vector_add.specialize()
    first = compiler.build(compiled, chip("gfx942"), key="vector-add-test")

    def no_lowering(*args: Any) -> None:
        raise AssertionError("the cached build was lowered again")

    monkeypatch.setattr(compiler, "lowered", no_lowering)
    again = compiler.build(compiled, chip("gfx942"), key="vector-add-test")
    assert (again.abi, again.llvm, again.assembly, again.resources) == (first.abi, first.llvm, first.assembly,
                                                                         first.resources)
    assert compiler.cached("vector-add-test", chip("gfx942")) is not None
    assert compiler.cached("vector-add-test", chip("gfx950")) is None
    assert compiler.cached("another-kernel", chip("gfx942")) is None
    # the linked code object is kept with it: linking runs once
    links = []
    monkeypatch.setattr(toolchain, "link", lambda obj: links.append(obj) or b"HSACO" + obj[:8])
    code = again.hsaco()
    assert compiler.cached("vector-add-test", chip("gfx942")).hsaco() == code and len(links) == 1  # type: ignore[union-attr]
