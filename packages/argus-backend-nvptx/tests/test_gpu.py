"""On an NVIDIA GPU: every example kernel runs and matches both the interpreter and its float64
numpy reference, on fresh random inputs; arguments are checked before launch."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx.bench import measure, to_gpu, to_numpy
from argus.dsl import ArgusError, Tensor, f32, kernel, thread_idx

from .conftest import cuda_available, example_kernels, language_kernels

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU")]


@pytest.mark.parametrize("module, name", example_kernels())
@pytest.mark.parametrize("seed", [11, 12])
def test_example_matches_interpreter_and_reference(module: Any, name: str, seed: int) -> None:
    import torch

    problem = getattr(module, f"example_{name}")(np.random.default_rng(seed))
    for index in problem.expected:  # poison the outputs: every element must be written
        problem.args[index].view(np.uint8)[...] = 0x7F
    host = [a.copy() if isinstance(a, np.ndarray) else a for a in problem.args]
    device = [to_gpu(a) for a in problem.args]
    k = getattr(module, name)
    k[problem.grid](*device, **problem.constants)
    torch.cuda.synchronize()
    k[problem.grid](*host, **problem.constants)  # numpy arrays: the interpreter
    problem.args = tuple(to_numpy(d, a) if i in problem.expected else a
                         for i, (d, a) in enumerate(zip(device, problem.args)))
    problem.check()  # the GPU against the float64 reference
    for index in problem.expected:
        got, want = problem.args[index], host[index]
        got_values = problem.decode[index](got) if index in problem.decode else got
        want_values = problem.decode[index](want) if index in problem.decode else want
        np.testing.assert_allclose(np.asarray(got_values, np.float64), np.asarray(want_values, np.float64),
                                   atol=problem.atol, rtol=problem.rtol)


@kernel(block=(32,))
def fill(out: Tensor[f32, "n"], n: int):
    i = thread_idx.x
    if i < n:
        out[i] = f32(i)


def test_wrong_dtype_is_refused_before_launch() -> None:
    import torch

    with pytest.raises(ArgusError, match=r"'out' is declared f32.*got torch.float16"):
        fill[1](torch.zeros(32, dtype=torch.float16, device="cuda"), 32)


def test_non_contiguous_tensor_is_refused() -> None:
    import torch

    with pytest.raises(ArgusError, match="C-contiguous"):
        fill[1](torch.zeros(64, device="cuda")[::2], 32)


def test_torch_and_cupy_tensors_run() -> None:
    import torch

    out = torch.zeros(32, device="cuda")
    fill[1](out, 32)
    torch.cuda.synchronize()
    assert out.cpu().tolist() == [float(i) for i in range(32)]
    cupy = pytest.importorskip("cupy")
    array = cupy.zeros(32, dtype=cupy.float32)
    fill[1](array, 32)
    cupy.cuda.get_current_stream().synchronize()
    assert array.get().tolist() == [float(i) for i in range(32)]


def test_a_loaded_kernel_launches_quickly() -> None:
    import torch

    out = torch.zeros(32, device="cuda")
    fill[1](out, 32)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(100):
        fill[1](out, 32)
    torch.cuda.synchronize()
    assert (time.perf_counter() - start) / 100 < 5e-3


def test_measure_times_with_clocks() -> None:
    import torch

    out = torch.zeros(32, device="cuda")
    timing = measure(lambda: fill[1](out, 32), warmup=2, repeat=5, flush_l2=True, graph=True)
    assert 0 < timing.min_s <= timing.median_s < 1e-2
    assert "MHz" in timing.text()


def random_arguments(k: Any, rng: np.random.Generator, size: int = 64) -> list[Any]:
    """Random arguments for any kernel: named dims and integer scalars of their name `size`,
    other integer scalars 3, tensors of random values in their host storage."""
    from argus.dsl.ir import dialect as D
    from argus.dsl import to_storage
    from argus.dsl.ir.types import dtype_of_mlir

    op = k.specialize().op
    names = [n.data for n in op.arg_names.data]
    dims = {d for a in op.body.block.args if isinstance(a.type, D.TensorType) for d in a.type.shape
            if isinstance(d, str)}
    out: list[Any] = []
    for name, arg in zip(names, op.body.block.args):
        if isinstance(arg.type, D.TensorType):
            dtype = arg.type.dtype
            shape = tuple(size if isinstance(d, str) else d for d in arg.type.shape)
            if dtype.is_integer:
                out.append(rng.integers(0, 4, shape).astype(dtype.numpy))
            else:
                out.append(to_storage(rng.standard_normal(shape), dtype))
        elif dtype_of_mlir(arg.type).is_integer:
            out.append(size if name in dims else 3)
        else:
            out.append(0.5)
    return out


@pytest.mark.parametrize("k", language_kernels())
def test_language_kernel_matches_interpreter(k: Any) -> None:
    """Every kernel of the language's tests that the interpreter runs without a fault gives the
    same outputs on the GPU, on random inputs."""
    import torch
    from argus.dsl import KernelFault, from_storage

    from argus.dsl.ir import dialect as D

    try:
        # two blocks, unless the kernel uses atomics: then the order in which the GPU runs its
        # blocks decides what each atomic returns, and one block is the only launch with one answer
        grid = (1,) if any(isinstance(o, D.AtomicOp) for o in k.specialize().op.walk()) else (2,)
        host = random_arguments(k, np.random.default_rng(5))
        device = [to_gpu(a) for a in host]
        k[grid](*host)
    except (ArgusError, KernelFault) as err:
        pytest.skip(f"not a clean interpreter run: {str(err).splitlines()[0]}")
    try:
        k[grid](*device)
        torch.cuda.synchronize()
    except ArgusError as err:
        pytest.skip(f"refused by the backend: {str(err).splitlines()[0]}")
    op = k.specialize().op
    for i, (want, got, arg) in enumerate(zip(host, device, op.body.block.args)):
        if not isinstance(want, np.ndarray):
            continue
        dtype = arg.type.dtype
        got = to_numpy(got, want)
        if dtype.is_integer:
            np.testing.assert_array_equal(got, want, err_msg=f"argument {i}")
        else:
            np.testing.assert_allclose(from_storage(got, dtype).astype(np.float64),
                                       from_storage(want, dtype).astype(np.float64), rtol=2e-2, atol=2e-2,
                                       err_msg=f"argument {i}")


@pytest.mark.parametrize("module, name", example_kernels())
def test_occupancy_estimate_matches_the_driver(module: Any, name: str) -> None:
    from argus.backends.nvptx import compiler, runtime
    from argus.backends.nvptx.occupancy import occupancy
    from cuda.bindings import driver

    problem = getattr(module, f"example_{name}")(np.random.default_rng(0))
    target = runtime.device_arch(0)
    binary = compiler.build(getattr(module, name).specialize(**problem.constants), target, assemble=True)
    loaded = runtime.LoadedKernel(binary, 0)
    threads = binary.abi.block[0] * binary.abi.block[1] * binary.abi.block[2]
    blocks = runtime.check(driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(loaded.function, threads, binary.abi.shared_bytes), "query")
    assert binary.resources is not None
    assert occupancy(binary.resources, target, threads).blocks_per_sm == blocks


@pytest.mark.parametrize("shape", [(128, 256, 4), (128, 128, 2)])
def test_persistent_gemm_matches_cublas(shape: tuple[int, int, int]) -> None:
    import torch
    from argus.dsl.cli import load_module

    from .conftest import EXAMPLES

    bm, bn, stages = shape
    gemm = load_module(EXAMPLES / "gemm_tma.py").build_persistent(bm, bn, 64, stages)
    m, n, k = 3 * bm, 5 * bn, 4 * 64 * stages  # 15 tiles on 4 blocks: uneven shares
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm[(4,)](a, b, c, m, n, k)
    reference = a.float() @ b.float().T
    assert float((c.float() - reference).norm() / reference.norm()) < 1e-2


@pytest.mark.parametrize("name, trans", [("LDMATRIX_X4", False), ("LDMATRIX_X4_TRANS", True), ("STMATRIX_X4", False),
                                         ("STMATRIX_X4_TRANS", True)])
def test_matrix_loads_and_stores_move_what_the_interpreter_moves(name: str, trans: bool) -> None:
    import torch
    from argus.backends.nvptx import language as nv

    from .test_matrices import fragments, loader, storer

    rows = np.random.default_rng(3).integers(0, 1 << 16, (32, 8)).astype(np.uint16)
    load = name.startswith("LD")
    given, expected = (rows, fragments(rows, trans)) if load else (fragments(rows, trans), rows)
    k = (loader if load else storer)(getattr(nv, name))
    src = torch.from_numpy(given.view(np.int16).copy()).cuda().view(torch.uint16)
    out = torch.zeros((32, 8), dtype=torch.uint16, device="cuda")
    k[1](src, out)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(out.view(torch.int16).cpu().numpy().view(np.uint16), expected)


@pytest.mark.parametrize("mixed", [False, True])
def test_fp8_warp_products_match_the_interpreter(mixed: bool) -> None:
    import torch
    from argus.dsl import f8e4m3, f8e5m2

    from .test_fp8 import E4M3, MIXED, inputs, product

    b_type = f8e5m2 if mixed else f8e4m3
    k = product(MIXED if mixed else E4M3, b_type)
    a, b = inputs(b_type, seed=5)
    host = np.zeros((16, 8), np.float32)
    k[1](a, b, host)
    device = torch.zeros((16, 8), device="cuda")
    k[1](to_gpu(a), to_gpu(b), device)
    torch.cuda.synchronize()
    np.testing.assert_allclose(device.cpu().numpy(), host, rtol=1e-5, atol=1e-5)


def test_the_tma_gemm_with_64_byte_swizzled_rows_matches_cublas() -> None:
    """K slices of 32 bf16: the copy engine and the warpgroup MMA both use the 64-byte swizzle."""
    import torch
    from argus.dsl.cli import load_module

    from .conftest import EXAMPLES

    gemm = load_module(EXAMPLES / "gemm_tma.py").build(128, 128, 32, 4)
    m, n, k = 256, 384, 512
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm[(n // 128, m // 128)](a, b, c, m, n, k)
    reference = a.float() @ b.float().T
    assert float((c.float() - reference).norm() / reference.norm()) < 1e-2


@pytest.mark.parametrize("shape", [(128, 128, 4), (128, 256, 4)])
def test_the_cluster_gemm_matches_cublas(shape: tuple[int, int, int]) -> None:
    """Two blocks per cluster share B through multicast copies; 12 clusters of 2 blocks."""
    import torch
    from argus.dsl.cli import load_module

    from .conftest import EXAMPLES

    bm, bn, stages = shape
    gemm = load_module(EXAMPLES / "gemm_tma.py").build_cluster(bm, bn, 64, stages)
    m, n, k = 4 * bm, 6 * bn, 64 * stages * 3
    a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm[((m // bm) * (n // bn),)](a, b, c, m, n, k)
    reference = a.float() @ b.float().T
    assert float((c.float() - reference).norm() / reference.norm()) < 1e-2
