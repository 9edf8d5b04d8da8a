"""Tiled bf16 GEMM for AMD CDNA (MI300X, MI350X): C = A · Bᵀ with fp32 accumulation, A M×K and
B N×K (both K-major), on the wave-wide 32×32×8 matrix atom (MFMA).

Each workgroup of four 64-lane waves computes a 64×64 tile of C, 32×32 per wave, K advancing 32
at a time. Every thread brings 16 bytes of A and 16 of B per step (128-bit buffer loads, which
the hardware bounds-checks against each tensor) and writes them to LDS in an order chosen for
the reads: in each 16-wide block of K, the four columns that lane group g (g = lane // 32)
needs for one 32×32×8 product sit next to the four it needs for the next, so each lane reads
its fragments for two products with one 128-bit LDS read. The
atom's layouts (`wave_mma_32x32x8`: lane l holds row l % 32 at K columns 4·(l // 32) … +3) and
the tag assertions it carries (A's and B's K coordinates pair up) let the checker prove that
reordering right for every launch.

M and N must be multiples of 64 and K of 32.
"""

import numpy as np
from argus.backends.amdgpu import language as amd
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
    u128,
    u64,
    warp_id,
    wave_mma_32x32x8,
)

TARGETS = ("amdgpu:gfx942", "amdgpu:gfx950")  # MFMA
MMA = wave_mma_32x32x8(bf16, bf16, f32)
BM, BN, BK = 64, 64, 32
THREADS = 256


@kernel(block=(THREADS,), warp_size=64)
def gemm_cdna(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[f32, "M", "N"], M: int, N: int,
              K: int):
    tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))  # A[m, k] pairs with B[n, k] by k; row m goes to C
    tag(b, lambda n, k: (k,), rows=lambda n, k: (n,))
    assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))  # c[m, n]: A row m · B row n, every k
    assume(M % BM == 0)
    assume(N % BN == 0)
    assume(K % BK == 0)
    av = a.view((M, K // 8), u128)
    bv = b.view((N, K // 8), u128)
    sA = make_shared((BM, BK), bf16)
    sB = make_shared((BN, BK), bf16)
    sAh, sBh = sA.view((BM, BK // 4), u64), sB.view((BN, BK // 4), u64)  # 4 bf16 per u64
    sAv, sBv = sA.view((BM, BK // 8), u128), sB.view((BN, BK // 8), u128)  # 8 bf16 per u128
    chunk = make_local((2,), u128)  # this thread's 16 bytes of A and of B
    halves = chunk.view((4,), u64)
    acc = make_local((16,), f32)
    afrag = make_local((2, 2, 4), bf16)  # per 16-wide block of K: two products' fragments
    bfrag = make_local((2, 2, 4), bf16)
    afv, bfv = afrag.view((2,), u128), bfrag.view((2,), u128)
    tid = thread_idx.x
    lane = lane_id()
    wm = warp_id() // 2  # the wave's 32×32 quarter of the tile
    wn = warp_id() % 2
    bm = block_idx.y * BM
    bn = block_idx.x * BN
    row = tid // 4  # the thread's row and 8-column chunk of each 64×32 slice
    part = tid % 4
    for v in static_range(16):
        acc[v] = 0.0
    for k0 in range(0, K, BK):
        chunk[0] = amd.buffer_load(av, (bm + row, k0 // 8 + part))  # 128-bit buffer loads
        chunk[1] = amd.buffer_load(bv, (bn + row, k0 // 8 + part))
        for g in static_range(2):  # columns 8p + 4g … +3 go where lane group g reads them
            sAh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[g]
            sBh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[2 + g]
        syncthreads()
        for q in static_range(BK // 16):
            afv[q] = sAv[wm * 32 + lane % 32, 2 * q + lane // 32]
            bfv[q] = sBv[wn * 32 + lane % 32, 2 * q + lane // 32]
        for q in static_range(BK // 16):
            for h in static_range(2):
                matmul(afrag[q, h, :], bfrag[q, h, :], acc, MMA)
        syncthreads()
    for v in static_range(16):
        idx = MMA.c_layout(lane, v)
        c[bm + wm * 32 + idx % 32, bn + wn * 32 + idx // 32] = acc[v]


def example_gemm_cdna(rng: np.random.Generator, m: int = 128, n: int = 64, k: int = 64) -> Problem:
    a = to_storage(rng.standard_normal((m, k)), bf16)
    b = to_storage(rng.standard_normal((n, k)), bf16)
    c = np.zeros((m, n), np.float32)
    reference = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: reference}, atol=1e-3, rtol=1e-3)
