"""A bf16 GEMM on Hopper's warpgroup MMA: C = A · Bᵀ with fp32 accumulation, A M×K and B N×K
(both K-major).

Each block of two warpgroups (256 threads) computes a 128×128 tile of C, 64 rows per warpgroup.
K advances 64 at a time. A and B slices sit in shared memory in the 128-byte swizzled layout
(16-byte chunks of each 128-byte row XOR-ed with the row index within 8 rows), which the
64×128×16 atom reads directly: no thread loads a fragment. While the atoms run, each thread
already holds its part of the next slice in registers (16-byte loads); after a barrier it
writes them to shared memory through a u128 view with the same swizzle.

M and N must be multiples of 128 and K of 64.
"""

import numpy as np
from argus.dsl import (
    Problem,
    Tensor,
    assert_tags,
    assume,
    bf16,
    block_idx,
    f32,
    from_storage,
    kernel,
    local_tile,
    make_local,
    make_shared,
    matmul,
    product,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
    u128,
    warp_id,
    warpgroup_mma_64xNx16,
)
from argus.layout import ComposedLayout, Layout, Swizzle

TARGETS = ("nvptx:sm_90a",)  # warpgroup MMA
BM, BN, BK = 128, 128, 64
THREADS = 256
MMA = warpgroup_mma_64xNx16(BN, bf16, bf16, f32)
VEC = 8  # bf16 per 16-byte vector
CHUNKS = BM * BK // VEC // THREADS  # 16-byte vectors each thread moves per operand per slice
#: BM rows of BK bf16 (128 bytes): chunk c of row r sits at chunk c ^ (r % 8)
SWIZZLED = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((BM, BK), (BK, 1)))
SWIZZLED_VECTORS = ComposedLayout(Swizzle(3, 0, 3), 0, Layout((BM, BK // VEC), (BK // VEC, 1)))


@kernel(block=(THREADS,), min_blocks_per_sm=2)
def gemm_sm90(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[f32, "M", "N"], M: int, N: int, K: int):
    tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))  # A[m, k] pairs with B[n, k] by k; row m goes to C
    tag(b, lambda n, k: (k,), rows=lambda n, k: (n,))
    assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))  # c[m, n]: A row m · B row n, every k
    assume(M % BM == 0)
    assume(N % BN == 0)
    assume(K % BK == 0)
    av = a.view((M, K // VEC), u128)
    bv = b.view((N, K // VEC), u128)
    sA = make_shared(SWIZZLED, bf16)
    sB = make_shared(SWIZZLED, bf16)
    sAv = sA.view(SWIZZLED_VECTORS, u128)
    sBv = sB.view(SWIZZLED_VECTORS, u128)
    acc = make_local((MMA.values("c"),), f32)
    ra = make_local((CHUNKS,), u128)
    rb = make_local((CHUNKS,), u128)
    tid = thread_idx.x
    wg = warp_id() // 4  # the warpgroup: rows 64·wg … of the block's tile
    bm = block_idx.y * BM
    bn = block_idx.x * BN
    for v in static_range(MMA.values("c")):
        acc[v] = 0.0
    for i in static_range(CHUNKS):  # the first K slice goes straight to shared memory
        e = tid + i * THREADS  # vector e of the slice: row e // 8, vector e % 8 of the row
        sAv[e // 8, e % 8] = av[bm + e // 8, e % 8]
        sBv[e // 8, e % 8] = bv[bn + e // 8, e % 8]
    syncthreads()
    for kv in range(0, K // VEC, BK // VEC):  # K in 16-byte vectors
        # the next slice (the last one again at the end: no branch, the copy goes unused)
        nxt = min(kv + BK // VEC, K // VEC - BK // VEC)
        for i in static_range(CHUNKS):
            e = tid + i * THREADS
            ra[i] = av[bm + e // 8, nxt + e % 8]
            rb[i] = bv[bn + e // 8, nxt + e % 8]
        for ks in static_range(BK // 16):
            matmul(local_tile(sA, (64, 16), wg + 2 * ks), local_tile(sB, (BN, 16), ks), acc, MMA)
        syncthreads()
        for i in static_range(CHUNKS):
            e = tid + i * THREADS
            sAv[e // 8, e % 8] = ra[i]
            sBv[e // 8, e % 8] = rb[i]
        syncthreads()
    t = tid % 128
    for v in static_range(MMA.values("c")):
        idx = MMA.c_layout(t, v)
        c[bm + wg * 64 + idx % 64, bn + idx // 64] = acc[v]


def example_gemm_sm90(rng: np.random.Generator, m: int = 128, n: int = 128, k: int = 128) -> Problem:
    a = to_storage(rng.standard_normal((m, k)), bf16)
    b = to_storage(rng.standard_normal((n, k)), bf16)
    c = np.zeros((m, n), np.float32)
    reference = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: reference}, atol=1e-3, rtol=1e-3)
