"""The names entries may use: kinds, kernel families, and the language's names.

Conditions such as ``uses: cp_async`` must name something a kernel can actually contain, or a
typo would make a recipe silently never apply; the package's tests hold these lists to the
language and its backends.
"""

from __future__ import annotations

KINDS = ("hardware-fact", "dsl-reference", "recipe")

#: Kernel families; ``any`` in an entry's ``families`` means every family.
FAMILIES = ("gemm", "attention", "moe", "elementwise", "reduction", "softmax", "normalization", "transpose",
            "convolution")

#: Names of the core language (`argus.dsl`) a kernel may call or refer to, plus the Python
#: constructs it accepts that conditions care about (``range``: a runtime loop; ``view``: the
#: tensor and tile method).
CORE = frozenset({
    "assert_tags", "assume", "atomic_add", "atomic_exchange", "atomic_max", "atomic_min", "bitcast", "byte_perm", "concat",
    "copy", "copy_vector", "device", "exp2", "fma", "grid_dim", "hi", "lane_id", "lo", "local_tile", "log2",
    "make_local", "make_shared", "matmul", "matmul_async", "matmul_wait", "max", "min", "partition", "product", "range",
    "rcp", "reset_tags", "rsqrt", "select", "shfl_down", "shfl_idx", "shfl_up", "shfl_xor", "sqrt",
    "static_range", "syncthreads", "tag", "universal_fma", "view", "warp_id", "warp_max", "warp_min",
    "warp_mma_16x8x16", "warp_mma_16x8x32", "warp_sum", "warpgroup_mma_64xNx16", "warpgroup_mma_64xNx32",
    "wave_mma_16x16x16", "wave_mma_16x16x32", "wave_mma_32x32x16", "wave_mma_32x32x8",
})

#: Intrinsics of `argus.backends.nvptx.language`.
NVPTX = frozenset({
    "barrier_sync", "cluster_rank", "cluster_sync", "cp_async", "cp_async_commit", "cp_async_wait", "elect_one",
    "mbarrier_arrive", "mbarrier_arrive_cluster", "mbarrier_arrive_expect_tx", "mbarrier_init", "mbarrier_wait",
    "setmaxnreg", "tma_load", "tma_load_multicast", "LDMATRIX_X4", "LDMATRIX_X4_TRANS", "STMATRIX_X4",
    "STMATRIX_X4_TRANS",
})

#: Intrinsics of `argus.backends.amdgpu.language`.
AMDGPU = frozenset({
    "agprs", "buffer_load", "buffer_store", "readfirstlane", "row_rotate", "row_shift", "sched_barrier",
    "sched_group_barrier", "setprio", "waitcnt",
})

LANGUAGE = CORE | NVPTX | AMDGPU

#: Element types, as the language spells them.
DTYPES = frozenset({
    "bf16", "f16", "f32", "f64", "f8e4m3", "f8e5m2", "f8e4m3fnuz", "f8e5m2fnuz", "i8", "i16", "i32", "i64", "u8",
    "u16", "u32", "u64", "u128", "u256",
})
