"""On an NVIDIA GPU: every example kernel runs and matches both the interpreter and its float64
numpy reference, on fresh random inputs; arguments are checked before launch."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx.bench import measure, to_gpu, to_numpy
from argus.dsl import ArgusError, Tensor, f32, kernel, thread_idx

from .conftest import cuda_available, example_kernels

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
