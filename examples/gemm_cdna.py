"""Tiled bf16 GEMM for AMD CDNA (MI300X, MI350X): C = A · Bᵀ with fp32 accumulation, A M×K and
B N×K (both K-major), on the wave-wide 32×32×8 matrix atom (MFMA).

Each workgroup of four 64-lane waves computes a 64×64 tile of C, 32×32 per wave. Per 16-wide
step of K it stages a 64×16 slice of A and of B in LDS; each wave loads its fragments in the
order the atom's layouts give (`wave_mma_32x32x8`: lane l holds row l % 32 at K columns
4·(l // 32) … +3) and issues two 32×32×8 products. The tag assertions the atom carries (A's and
B's K coordinates pair up) are proved for every launch like on any other target.

M and N must be multiples of 64 and K of 16.
"""

import numpy as np
from argus.dsl import (
    Problem,
    Tensor,
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
    static_range,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
    warp_id,
    wave_mma_32x32x8,
)

TARGETS = ("amdgpu:gfx942", "amdgpu:gfx950")  # MFMA
MMA = wave_mma_32x32x8(bf16, bf16, f32)
BM, BN, BK = 64, 64, 16
THREADS = 256


@kernel(block=(THREADS,), warp_size=64)
def gemm_cdna(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[f32, "M", "N"], M: int, N: int,
              K: int):
    tag(a, lambda m, k: (k,))  # the product pairs A[m, k] with B[n, k]: the tags say which k
    tag(b, lambda n, k: (k,))
    assume(M % BM == 0)
    assume(N % BN == 0)
    assume(K % BK == 0)
    sA = make_shared((BM, BK), bf16)
    sB = make_shared((BN, BK), bf16)
    acc = make_local((16,), f32)
    afrag = make_local((BK // 8, 4), bf16)
    bfrag = make_local((BK // 8, 4), bf16)
    tid = thread_idx.x
    lane = lane_id()
    wm = warp_id() // 2  # the wave's 32×32 quarter of the tile
    wn = warp_id() % 2
    bm = block_idx.y * BM
    bn = block_idx.x * BN
    for v in static_range(16):
        acc[v] = 0.0
    for k0 in range(0, K, BK):
        for i in static_range(BM * BK // THREADS):
            e = tid + i * THREADS
            sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]
            sB[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK]
        syncthreads()
        for ks in static_range(BK // 8):
            for v in static_range(4):
                idx = MMA.a_layout(lane, v)
                afrag[ks, v] = sA[wm * 32 + idx % 32, ks * 8 + idx // 32]
                idx = MMA.b_layout(lane, v)
                bfrag[ks, v] = sB[wn * 32 + idx % 32, ks * 8 + idx // 32]
        for ks in static_range(BK // 8):
            matmul(afrag[ks, :], bfrag[ks, :], acc, MMA)
        syncthreads()
    for v in static_range(16):
        idx = MMA.c_layout(lane, v)
        c[bm + wm * 32 + idx % 32, bn + wn * 32 + idx // 32] = acc[v]


def example_gemm_cdna(rng: np.random.Generator, m: int = 128, n: int = 64, k: int = 48) -> Problem:
    a = to_storage(rng.standard_normal((m, k)), bf16)
    b = to_storage(rng.standard_normal((n, k)), bf16)
    c = np.zeros((m, n), np.float32)
    reference = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: reference}, atol=1e-3, rtol=1e-3)
