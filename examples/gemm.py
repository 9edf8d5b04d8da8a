"""Tiled bf16 GEMM with fp32 accumulation: C = A · Bᵀ, A is M×K, B is N×K (both K-major).

Each block computes a 64×64 tile of C with 4 warps in a 2×2 arrangement, 32×32 per warp.
Per 16-wide step of K, the block stages a 64×16 slice of A and of B in shared memory, each
warp loads its fragments from there in the order the matrix-multiply atom wants them, and
issues 2×4 atom operations of 16×8×16. The atom, `warp_mma_16x8x16`, is described by
thread/value layouts only (see argus.dsl.atoms).

M and N must be multiples of 64 and K of 16 (the interpreter reports any access outside).
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
    lane_id,
    make_local,
    make_shared,
    matmul,
    product,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
    warp_id,
    warp_mma_16x8x16,
)

MMA = warp_mma_16x8x16(bf16, bf16, f32)
BM, BN, BK = 64, 64, 16
THREADS = 128


@kernel(block=(THREADS,))
def gemm(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[f32, "M", "N"], M: int, N: int, K: int):
    # the product pairs A[m, k] with B[n, k] (the pair tags say which k), and every element of C
    # is the product of A's row m and B's row n over all of K
    tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))
    tag(b, lambda n, k: (k,), rows=lambda n, k: (n,))
    assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))
    assume(M % BM == 0)  # whole tiles only (the interpreter faults a launch that breaks these)
    assume(N % BN == 0)
    assume(K % BK == 0)
    sA = make_shared((BM, BK), bf16)
    sB = make_shared((BN, BK), bf16)
    acc = make_local((2, 4, 4), f32)
    afrag = make_local((2, 8), bf16)
    bfrag = make_local((4, 4), bf16)
    tid = thread_idx.x
    lane = lane_id()
    wm = warp_id() // 2
    wn = warp_id() % 2
    bm = block_idx.y * BM
    bn = block_idx.x * BN
    for mi in static_range(2):
        for ni in static_range(4):
            for v in static_range(4):
                acc[mi, ni, v] = 0.0
    for k0 in range(0, K, BK):
        for i in static_range(BM * BK // THREADS):
            e = tid + i * THREADS
            sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]
            sB[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK]
        syncthreads()
        for mi in static_range(2):
            for v in static_range(8):
                idx = MMA.a_layout(lane, v)
                afrag[mi, v] = sA[wm * 32 + mi * 16 + idx % 16, idx // 16]
        for ni in static_range(4):
            for v in static_range(4):
                idx = MMA.b_layout(lane, v)
                bfrag[ni, v] = sB[wn * 32 + ni * 8 + idx % 8, idx // 8]
        for mi in static_range(2):
            for ni in static_range(4):
                matmul(afrag[mi, :], bfrag[ni, :], acc[mi, ni, :], MMA)
        syncthreads()
    for mi in static_range(2):
        for ni in static_range(4):
            for v in static_range(4):
                idx = MMA.c_layout(lane, v)
                c[bm + wm * 32 + mi * 16 + idx % 16, bn + wn * 32 + ni * 8 + idx // 16] = acc[mi, ni, v]


def example_gemm(rng: np.random.Generator, m: int = 128, n: int = 64, k: int = 48) -> Problem:
    a = to_storage(rng.standard_normal((m, k)), bf16)
    b = to_storage(rng.standard_normal((n, k)), bf16)
    c = np.zeros((m, n), np.float32)
    reference = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: reference}, atol=1e-3, rtol=1e-3)
