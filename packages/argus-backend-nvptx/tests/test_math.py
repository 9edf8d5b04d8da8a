"""The math builtins on NVIDIA GPUs: log2 goes through the GPU's lg2 instruction (LLVM's NVPTX
target has no lowering of its own and would abort the process), for every float type the
language computes in; an f64 log2 or exp2 is refused at its line."""

from __future__ import annotations

import pytest
from argus.dsl import Tensor, bf16, exp2, f16, f32, f64, kernel, log2, thread_idx
from argus.dsl.backends import backend_for, parse_target
from argus.dsl.errors import CodegenError

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
