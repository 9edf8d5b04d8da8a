"""The math builtins on NVIDIA GPUs: log2 goes through the GPU's lg2 instruction (LLVM's NVPTX
target has no lowering of its own and would abort the process), for every float type the
language computes in; an f64 log2 or exp2 is refused at its line. On a GPU, each function of
`argus.dsl.ops.math` is within the bound docs/language.md gives for NVIDIA of the exact value,
on the same inputs the interpreter's accuracy test uses, and agrees with the interpreter on
every NaN, infinity and signed zero."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from argus.dsl import Tensor, bf16, exp2, f16, f32, f64, kernel, log2, thread_idx
from argus.dsl.backends import backend_for, parse_target
from argus.dsl.cli import load_module
from argus.dsl.errors import CodegenError

from .conftest import cuda_available

TARGET = parse_target("nvptx:sm_90a")


@kernel(block=(32,), verify=False)
def logs_f32(x: Tensor[f32, 32]):
    x[thread_idx.x] = log2(x[thread_idx.x]) + exp2(x[thread_idx.x])


@kernel(block=(32,), verify=False)
def logs_f16(x: Tensor[f16, 32]):
    x[thread_idx.x] = log2(x[thread_idx.x]) + exp2(x[thread_idx.x])


@kernel(block=(32,), verify=False)
def logs_bf16(x: Tensor[bf16, 32]):
    x[thread_idx.x] = log2(x[thread_idx.x]) + exp2(x[thread_idx.x])


@kernel(block=(32,), verify=False)
def logs_f64(x: Tensor[f64, 32]):
    x[thread_idx.x] = log2(x[thread_idx.x])


KERNELS = {f32: logs_f32, f16: logs_f16, bf16: logs_bf16, f64: logs_f64}


def _kernel(dtype):
    return KERNELS[dtype]


@pytest.mark.parametrize("dtype", [f32, f16, bf16], ids=str)
def test_log2_and_exp2_compile_to_the_gpus_instructions(dtype):
    ptx = backend_for(TARGET).compiler(TARGET).emit(_kernel(dtype).specialize(), "ptx")
    assert "lg2.approx" in ptx and "ex2.approx" in ptx


def test_an_f64_log2_is_refused_at_its_line():
    with pytest.raises(CodegenError, match="log2 of an f64 value") as err:
        backend_for(TARGET).compiler(TARGET).emit(_kernel(f64).specialize(), "ptx")
    assert err.value.location is not None and err.value.location.line > 0


# ---- accuracy on the GPU --------------------------------------------------------------------

#: The accuracy test of the language's math (its kernels, inputs and comparison).
ACCURACY = load_module(Path(__file__).resolve().parents[2] / "argus-dsl" / "tests" / "test_ops_math.py")

#: On NVIDIA, each function's bound of the exact value, in f32 ulps or an absolute error where
#: that is larger (docs/language.md's table): the composition's own bound, plus what ex2.approx
#: (2 ulps) and sin.approx / cos.approx (2^-20.9 absolute on [-pi, pi]) add.
NVIDIA = {"exp": (3.0, 0.0), "log": (2.0, 0.0), "log1p": (3.0, 0.0), "expm1": (5.0, 0.0), "tanh": (6.0, 0.0),
          "erf": (4.0, 3e-7), "sin": (1.0, 1e-6), "cos": (1.0, 1e-6), "abs": (0.0, 0.0), "floor": (0.0, 0.0),
          "ceil": (0.0, 0.0), "sigmoid": (5.0, 0.0)}


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU")
def test_each_function_on_the_gpu_is_within_its_documented_bound():
    import torch

    x = ACCURACY._inputs()
    out = torch.zeros((12, ACCURACY.N), dtype=torch.float32, device="cuda")
    ACCURACY.unary_f32[4](torch.from_numpy(x).cuda(), out)
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    interpreted = np.zeros((12, ACCURACY.N), np.float32)
    ACCURACY.unary_f32[4](x, interpreted)
    for k, name in enumerate(ACCURACY.NAMES):
        keep = np.ones_like(x, dtype=bool)
        if name in ("sin", "cos"):  # the bound holds for |x| up to 10^4
            keep = ~np.isfinite(x) | (np.abs(x) <= 1e4)
        with np.errstate(all="ignore"):
            exact = ACCURACY.REFERENCE[name](x[keep].astype(np.float64))
        ACCURACY.assert_within(name, x[keep], got[k][keep], exact, *NVIDIA[name])
        # NaN, infinity and zero (with its sign) as the interpreter gives them
        special = ~np.isfinite(interpreted[k][keep]) | (interpreted[k][keep] == 0)
        np.testing.assert_array_equal(got[k][keep][special], interpreted[k][keep][special], err_msg=name)


@pytest.mark.gpu
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU")
def test_pow_on_the_gpu_is_within_its_documented_bound():
    import torch

    x, y = ACCURACY._pow_inputs()
    out = torch.zeros(1024, dtype=torch.float32, device="cuda")
    ACCURACY.powers[4](torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda(), out)
    torch.cuda.synchronize()
    got = out.cpu().numpy()
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
        scale = np.nan_to_num(np.abs(y.astype(np.float64) * np.log(np.abs(x.astype(np.float64)))))
    for k in range(len(x)):  # 4 + |y ln|x|| ulps on NVIDIA
        ACCURACY.assert_within("pow", x[k:k + 1], got[k:k + 1], exact[k:k + 1], 4.0 + scale[k])
