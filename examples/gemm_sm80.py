"""A faster bf16 GEMM on tensor cores through the warp-level 16×8×16 atom (mma.sync on
NVIDIA sm_80 and later): C = A · Bᵀ with fp32 accumulation, A M×K and B N×K (both K-major).

Each block computes a 128×128 tile of C with 8 warps in a 2×4 arrangement, 64×32 per warp.
K advances 32 at a time through two shared-memory stages: while the warps multiply one stage,
each thread's asynchronous copies (cp.async, 16 bytes each through u128 views of A and B) bring
the next K slice into the other stage; the thread waits for them before the barrier that ends
the slice, so one barrier per slice suffices. The warps load their operand fragments with the warp's matrix load (ldmatrix: four 8×8 matrices
per instruction, each lane naming one 16-byte row). Shared rows are padded from 32 to 40 bf16,
which puts the eight rows of one matrix in eight different groups of four banks.

M and N must be multiples of 128 and K of 64.
"""

import numpy as np
from argus.backends.nvptx import language as nv
from argus.dsl import (
    Problem,
    Tensor,
    assert_tags,
    assume,
    bf16,
    block_idx,
    copy,
    f32,
    from_storage,
    kernel,
    lane_id,
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
    warp_mma_16x8x16,
)

MMA = warp_mma_16x8x16(bf16, bf16, f32)
BM, BN, BK = 128, 128, 32
THREADS = 256
PAD = 40  # bf16 per shared row: BK and 8 of padding
VEC = 8  # bf16 per 16-byte vector
CHUNKS = BM * BK // VEC // THREADS  # 16-byte vectors each thread moves per operand per slice


@kernel(block=(THREADS,), min_blocks_per_sm=2)
def gemm_sm80(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[f32, "M", "N"], M: int, N: int, K: int):
    tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))  # A[m, k] pairs with B[n, k] by k; row m goes to C
    tag(b, lambda n, k: (k,), rows=lambda n, k: (n,))
    assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))  # c[m, n]: A row m · B row n, every k
    assume(M % BM == 0)
    assume(N % BN == 0)
    assume(K % (2 * BK) == 0)
    av = a.view((M, K // VEC), u128)
    bv = b.view((N, K // VEC), u128)
    sA = make_shared((2, BM, PAD), bf16)
    sB = make_shared((2, BN, PAD), bf16)
    sAv = sA.view((2, BM, PAD // VEC), u128)
    sBv = sB.view((2, BN, PAD // VEC), u128)
    acc = make_local((4, 4, 4), f32)
    afrag = make_local((4, 8), bf16)
    bfrag = make_local((4, 4), bf16)
    bpairs = bfrag.view((2, 8), bf16)  # fragments 2p and 2p + 1 of B, loaded together
    tid = thread_idx.x
    lane = lane_id()
    wm = warp_id() // 4
    wn = warp_id() % 4
    bm = block_idx.y * BM
    bn = block_idx.x * BN
    for mi in static_range(4):
        for ni in static_range(4):
            for v in static_range(4):
                acc[mi, ni, v] = 0.0
    for i in static_range(CHUNKS):  # the first K slice into stage 0
        e = tid + i * THREADS  # vector e of the slice: row e // 4, vector e % 4 of the row
        nv.cp_async(sAv, (0, e // 4, e % 4), av, (bm + e // 4, e % 4))
        nv.cp_async(sBv, (0, e // 4, e % 4), bv, (bn + e // 4, e % 4))
    nv.cp_async_commit()
    nv.cp_async_wait(0)
    syncthreads()
    for kv in range(0, K // VEC, 2 * BK // VEC):  # K in 16-byte vectors, two slices per pass
        for stage in static_range(2):
            # the next slice (the last one again at the end: no branch, the copy goes unused)
            nxt = min(kv + (stage + 1) * (BK // VEC), K // VEC - BK // VEC)
            for i in static_range(CHUNKS):
                e = tid + i * THREADS
                nv.cp_async(sAv, (1 - stage, e // 4, e % 4), av, (bm + e // 4, nxt + e % 4))
                nv.cp_async(sBv, (1 - stage, e // 4, e % 4), bv, (bn + e // 4, nxt + e % 4))
            nv.cp_async_commit()
            for ks in static_range(BK // 16):
                for mi in static_range(4):  # matrix j of A's 16×16 block: rows +8·(j % 2), k +8·(j // 2)
                    row = wm * 64 + mi * 16 + lane % 8 + 8 * ((lane // 8) % 2)
                    copy(local_tile(sA[stage, :, :], (1, 8), row + BM * (2 * ks + lane // 16)), afrag[mi, :],
                         nv.LDMATRIX_X4)
                for p in static_range(2):  # matrix j of B's two 8×16 blocks: rows +8·(j // 2), k +8·(j % 2)
                    row = wn * 32 + p * 16 + lane % 8 + 8 * (lane // 16)
                    copy(local_tile(sB[stage, :, :], (1, 8), row + BN * (2 * ks + (lane // 8) % 2)), bpairs[p, :],
                         nv.LDMATRIX_X4)
                for mi in static_range(4):
                    for ni in static_range(4):
                        matmul(afrag[mi, :], bfrag[ni, :], acc[mi, ni, :], MMA)
            nv.cp_async_wait(0)
            syncthreads()
    for mi in static_range(4):
        for ni in static_range(4):
            for v in static_range(4):
                idx = MMA.c_layout(lane, v)
                c[bm + wm * 64 + mi * 16 + idx % 16, bn + wn * 32 + ni * 8 + idx // 16] = acc[mi, ni, v]


def example_gemm_sm80(rng: np.random.Generator, m: int = 128, n: int = 128, k: int = 64) -> Problem:
    a = to_storage(rng.standard_normal((m, k)), bf16)
    b = to_storage(rng.standard_normal((n, k)), bf16)
    c = np.zeros((m, n), np.float32)
    reference = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: reference}, atol=1e-3, rtol=1e-3)
