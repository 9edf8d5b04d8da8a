"""argus.dsl: write GPU kernels over tiles, run them anywhere in the reference interpreter.

>>> from argus.dsl import kernel, Tensor, f32, thread_idx, block_idx
>>> @kernel(block=(128,))
... def add(x: Tensor[f32, "n"], y: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
...     i = block_idx.x * 128 + thread_idx.x
...     if i < n:
...         out[i] = x[i] + y[i]
"""

from __future__ import annotations

import numpy as np

from .atoms import (
    CopyAtom,
    MMAAtom,
    copy_vector,
    universal_fma,
    warp_mma_16x8x16,
    warpgroup_mma_64xNx16,
    warpgroup_mma_64xNx32,
)
from .dtypes import (
    DType,
    bf16,
    boolean,
    f8e4m3,
    f8e4m3fnuz,
    f8e5m2,
    f8e5m2fnuz,
    f16,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    u8,
    u16,
    u32,
    u64,
    u128,
    u256,
)
from .errors import (
    ArgusError,
    ArgusLaunchError,
    ArgusSyntaxError,
    ArgusTypeError,
    ArgusVerificationWarning,
    CodegenError,
    KernelFault,
    SourceLocation,
    TagAssertionError,
    VerificationError,
)
from .kernel import CompiledKernel, Kernel, kernel
from .lang import (
    DeviceFunction,
    Tensor,
    atomic_add,
    atomic_exchange,
    atomic_max,
    atomic_min,
    bitcast,
    block_dim,
    block_idx,
    byte_perm,
    concat,
    constexpr,
    copy,
    device,
    exp2,
    fma,
    grid_dim,
    hi,
    lane_id,
    lo,
    local_tile,
    log2,
    make_local,
    make_shared,
    matmul,
    matmul_async,
    matmul_wait,
    partition,
    rcp,
    reset_tags,
    assume,
    rsqrt,
    select,
    shfl_down,
    shfl_idx,
    shfl_up,
    shfl_xor,
    sqrt,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    warp_id,
    warp_max,
    warp_min,
    warp_sum,
)
from .problem import Problem


def to_storage(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Host values as the array a kernel parameter of `dtype` takes (bf16 as uint16 bits, fp8 as uint8)."""
    from .interpreter import storage_dtype

    raw = dtype.encode(np.asarray(values))
    return np.ascontiguousarray(raw).view(storage_dtype(dtype)).reshape(np.shape(values))


def from_storage(array: np.ndarray, dtype: DType) -> np.ndarray:
    """The values held in a kernel tensor of `dtype` (as float32 for the narrow floats)."""
    raw = np.ascontiguousarray(array).view(np.uint8).reshape(array.shape + (dtype.nbytes,))
    return dtype.decode(raw)


__all__ = [
    "ArgusError",
    "ArgusLaunchError",
    "ArgusSyntaxError",
    "ArgusTypeError",
    "ArgusVerificationWarning",
    "CodegenError",
    "CompiledKernel",
    "TagAssertionError",
    "VerificationError",
    "CopyAtom",
    "DType",
    "DeviceFunction",
    "Kernel",
    "KernelFault",
    "MMAAtom",
    "Problem",
    "SourceLocation",
    "Tensor",
    "atomic_add",
    "atomic_exchange",
    "atomic_max",
    "atomic_min",
    "bf16",
    "bitcast",
    "block_dim",
    "block_idx",
    "boolean",
    "byte_perm",
    "concat",
    "constexpr",
    "copy",
    "copy_vector",
    "device",
    "exp2",
    "f16",
    "f32",
    "f64",
    "f8e4m3",
    "f8e4m3fnuz",
    "f8e5m2",
    "f8e5m2fnuz",
    "fma",
    "from_storage",
    "grid_dim",
    "hi",
    "i16",
    "i32",
    "i64",
    "i8",
    "kernel",
    "lane_id",
    "lo",
    "local_tile",
    "log2",
    "make_local",
    "make_shared",
    "matmul",
    "matmul_async",
    "matmul_wait",
    "partition",
    "rcp",
    "reset_tags",
    "assume",
    "rsqrt",
    "select",
    "shfl_down",
    "shfl_idx",
    "shfl_up",
    "shfl_xor",
    "sqrt",
    "static_range",
    "syncthreads",
    "tag",
    "thread_idx",
    "to_storage",
    "u128",
    "u16",
    "u256",
    "u32",
    "u64",
    "u8",
    "universal_fma",
    "warp_id",
    "warp_mma_16x8x16",
    "warpgroup_mma_64xNx16",
    "warpgroup_mma_64xNx32",
    "warp_max",
    "warp_min",
    "warp_sum",
]
