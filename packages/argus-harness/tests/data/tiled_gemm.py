"""A small tiled f32 GEMM (C = A·Bᵀ) whose tile sizes are module constants: the template of the
test recipe. Each thread computes a 2×2 block of C from shared-memory slices of A and B."""

import numpy as np
from argus.dsl import (
    Problem,
    Tensor,
    assume,
    block_idx,
    f32,
    kernel,
    make_local,
    make_shared,
    static_range,
    syncthreads,
    tag,
    thread_idx,
)

BM, BN = 16, 16
BK = 4
THREADS = BM * BN // 4


@kernel(block=(THREADS,))
def gemm(a: Tensor[f32, "M", "K"], b: Tensor[f32, "N", "K"], c: Tensor[f32, "M", "N"], M: int, N: int, K: int):
    tag(a, lambda m, k: (k,))
    tag(b, lambda n, k: (k,))
    assume(M % BM == 0)
    assume(N % BN == 0)
    assume(K % BK == 0)
    sA = make_shared((BM, BK), f32)
    sB = make_shared((BN, BK), f32)
    acc = make_local((2, 2), f32)
    fa = make_local((2, BK), f32)
    fb = make_local((2, BK), f32)
    tid = thread_idx.x
    tm = tid // (BN // 2)
    tn = tid % (BN // 2)
    bm = block_idx.y * BM
    bn = block_idx.x * BN
    for i in static_range(2):
        for j in static_range(2):
            acc[i, j] = 0.0
    for k0 in range(0, K, BK):
        for e in static_range((BM * BK + THREADS - 1) // THREADS):
            idx = tid + e * THREADS
            if idx < BM * BK:
                sA[idx // BK, idx % BK] = a[bm + idx // BK, k0 + idx % BK]
        for e in static_range((BN * BK + THREADS - 1) // THREADS):
            idx = tid + e * THREADS
            if idx < BN * BK:
                sB[idx // BK, idx % BK] = b[bn + idx // BK, k0 + idx % BK]
        syncthreads()
        for i in static_range(2):
            for kk in static_range(BK):
                fa[i, kk] = sA[tm * 2 + i, kk]
                fb[i, kk] = sB[tn * 2 + i, kk]
        for i in static_range(2):
            for j in static_range(2):
                assert tag(fa[i, :][...]) == tag(fb[j, :][...]), "A and B meet along k"
                for kk in static_range(BK):
                    acc[i, j] = acc[i, j] + fa[i, kk] * fb[j, kk]
        syncthreads()
    for i in static_range(2):
        for j in static_range(2):
            c[bm + tm * 2 + i, bn + tn * 2 + j] = acc[i, j]


def grid(M, N, K):
    return (N // BN, M // BM)


def example_gemm(rng, m=32, n=32, k=16):
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((n, k)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: a.astype(np.float64) @ b.T.astype(np.float64)},
                   atol=1e-4, rtol=1e-4)
