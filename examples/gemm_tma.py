"""A bf16 GEMM fed by Hopper's tensor memory accelerator: C = A · Bᵀ with fp32 accumulation,
A M×K and B N×K (both K-major).

Each block of two warpgroups (256 threads) computes a BM×BN tile of C, BM/2 rows per warpgroup,
with the warpgroup MMA reading A and B straight from shared memory. The K slices flow through
STAGES shared-memory stages: one thread starts bulk tensor copies (TMA) of the next slices of A
and B into a free stage, and a memory barrier per stage says when its bytes have landed. The
block waits on a stage's barrier, multiplies it, and once every warpgroup is done with it (a
block barrier) the stage is refilled STAGES slices ahead (the last slice again near the end,
so that every round does the same and the checker follows the stages' contents from one round
to the next; the block waits for those copies before it exits). Stages hold the 128-byte swizzled
layout both the copy engine writes and the MMA reads. Phases of a stage's barrier alternate
with each round of STAGES slices.

M and N must be multiples of BM and BN, and K of STAGES·BK.
"""

import numpy as np
from argus.backends.nvptx import language as nv
from argus.dsl import (
    Kernel,
    Problem,
    Tensor,
    assume,
    bf16,
    block_idx,
    f32,
    from_storage,
    grid_dim,
    kernel,
    local_tile,
    make_local,
    make_shared,
    matmul,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
    u64,
    warp_id,
    warpgroup_mma_64xNx16,
)
from argus.layout import ComposedLayout, Layout, Swizzle

TARGETS = ("nvptx:sm_90a",)  # warpgroup MMA
THREADS = 256


def build(BM: int = 128, BN: int = 128, BK: int = 64, STAGES: int = 4, GROUP: int = 8, RELEASE: bool = True) -> Kernel:
    """The kernel for BM×BN tiles of C, K slices of BK (64 bf16: one 128-byte swizzle row),
    STAGES shared-memory stages and blocks ordered in groups of GROUP tile rows. With RELEASE a
    stage is handed back through an "empty" barrier every thread arrives on (only the thread
    that refills it waits), otherwise through a block barrier."""
    MMA = warpgroup_mma_64xNx16(BN, bf16, bf16, f32)
    STAGE_BYTES = (BM + BN) * BK * 2  # what lands on a stage's barrier per slice
    # a stage: rows of BK bf16 (128 bytes), 16-byte chunk c of row r at chunk c ^ (r % 8)
    A_STAGES = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((STAGES, BM, BK), (BM * BK, BK, 1)))
    B_STAGES = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((STAGES, BN, BK), (BN * BK, BK, 1)))

    def gemm_tma(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[f32, "M", "N"], M: int, N: int,
                 K: int):
        tag(a, lambda m, k: (k,))  # the product pairs A[m, k] with B[n, k]: the tags say which k
        tag(b, lambda n, k: (k,))
        assume(M % BM == 0)
        assume(N % BN == 0)
        assume(K % (STAGES * BK) == 0)
        sA = make_shared(A_STAGES, bf16)
        sB = make_shared(B_STAGES, bf16)
        bars = make_shared((STAGES,), u64)  # "full": a stage's slices have landed
        empty = make_shared((STAGES,), u64)  # "empty": every thread is done with a stage
        acc = make_local((MMA.values("c"), BM // 128), f32)  # per warpgroup: BM // 128 blocks of 64 rows
        tid = thread_idx.x
        wg = warp_id() // 4  # the warpgroup: rows 64·wg … of the block's tile
        # blocks take tiles in groups of GROUP tile rows, column by column, so that the blocks
        # running at once share rows of A and columns of B in the L2 cache
        tiles_n = grid_dim.x
        tiles_m = grid_dim.y
        pid = block_idx.y * tiles_n + block_idx.x
        first = (pid // (GROUP * tiles_n)) * GROUP
        rows = min(tiles_m - first, GROUP)
        bm = (first + (pid % (GROUP * tiles_n)) % rows) * BM
        bn = ((pid % (GROUP * tiles_n)) // rows) * BN
        for half in static_range(BM // 128):
            for v in static_range(MMA.values("c")):
                acc[v, half] = 0.0
        if tid == 0:
            for s in static_range(STAGES):
                nv.mbarrier_init(bars, s, 1)
                nv.mbarrier_init(empty, s, THREADS)
        syncthreads()
        if tid == 0:  # the first STAGES slices
            for s in static_range(STAGES):
                nv.mbarrier_arrive_expect_tx(bars, s, STAGE_BYTES)
                nv.tma_load(sA[s, :, :], a, (bm, s * BK), bars, s)
                nv.tma_load(sB[s, :, :], b, (bn, s * BK), bars, s)
        for k0 in range(0, K, STAGES * BK):
            phase = (k0 // (STAGES * BK)) % 2
            for s in static_range(STAGES):
                nv.mbarrier_wait(bars, s, phase)
                for ks in static_range(BK // 16):
                    for half in static_range(BM // 128):
                        matmul(local_tile(sA[s, :, :], (64, 16), wg + 2 * half + (BM // 64) * ks),
                               local_tile(sB[s, :, :], (BN, 16), ks), acc[:, half], MMA)
                # the slice STAGES ahead (past the end: the last one again, so that every round
                # is alike; those copies are waited for after the loop)
                refill = min(k0 + (s + STAGES) * BK, K - BK)
                if RELEASE:
                    nv.mbarrier_arrive(empty, s)  # this thread is done with stage s
                else:
                    syncthreads()  # every warpgroup is done with stage s
                if tid == 0:
                    if RELEASE:
                        nv.mbarrier_wait(empty, s, phase)  # … and so is every other
                    nv.mbarrier_arrive_expect_tx(bars, s, STAGE_BYTES)
                    nv.tma_load(sA[s, :, :], a, (bm, refill), bars, s)
                    nv.tma_load(sB[s, :, :], b, (bn, refill), bars, s)
        for s in static_range(STAGES):  # no copy may still be landing when the block exits
            nv.mbarrier_wait(bars, s, (K // (STAGES * BK)) % 2)
        t = tid % 128
        for half in static_range(BM // 128):
            for v in static_range(MMA.values("c")):
                idx = MMA.c_layout(t, v)
                c[bm + (wg + 2 * half) * 64 + idx % 64, bn + idx // 64] = acc[v, half]

    return kernel(block=(THREADS,))(gemm_tma)


BM, BN = 128, 128
gemm_tma = build(BM, BN)


def example_gemm_tma(rng: np.random.Generator, m: int = 128, n: int = 128, k: int = 512) -> Problem:
    a = to_storage(rng.standard_normal((m, k)), bf16)
    b = to_storage(rng.standard_normal((n, k)), bf16)
    c = np.zeros((m, n), np.float32)
    reference = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: reference}, atol=1e-3, rtol=1e-3)
