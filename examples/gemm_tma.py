"""A bf16 (or fp8) GEMM fed by Hopper's tensor memory accelerator: C = A · Bᵀ with fp32
accumulation and C in bf16, A M×K and B N×K (both K-major).

Each block of two warpgroups (256 threads) computes a BM×BN tile of C, BM/2 rows per warpgroup,
with the warpgroup MMA reading A and B straight from shared memory. The K slices flow through
STAGES shared-memory stages, each in the 128-byte swizzled layout both the copy engine writes
and the MMA reads. A "full" memory barrier per stage says when a slice's bytes have landed, an
"empty" one when every thread is done with the stage. In each step the block waits for a stage
to be full and starts its products without waiting for them (matmul_async); it then waits for
the previous stage's products only (matmul_wait), hands that stage back, and one thread refills
it STAGES - 1 slices ahead with bulk tensor copies (TMA). So the tensor cores always have the
next products queued while a stage is recycled. Near the end the refills copy the last slice
again, so that every round does the same (the checker follows the stages' contents from one
round to the next); the block waits for those copies before it exits. Blocks take their tiles
in groups of GROUP tile rows for L2 reuse.

M and N must be multiples of BM and BN, and K of STAGES·BK.
"""

import dataclasses
import functools
from typing import Any

import numpy as np
from argus.backends.nvptx import language as nv
from argus.dsl import (
    Kernel,
    Problem,
    Tensor,
    assume,
    bf16,
    block_idx,
    concat,
    device,
    f8e4m3,
    f32,
    from_storage,
    grid_dim,
    kernel,
    local_tile,
    make_local,
    make_shared,
    matmul_async,
    matmul_wait,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
    u32,
    u64,
    u128,
    warp_id,
    warpgroup_mma_64xNx16,
    warpgroup_mma_64xNx32,
)
from argus.layout import ComposedLayout, Layout, Swizzle

TARGETS = ("nvptx:sm_90a",)  # warpgroup MMA
C_TYPE = "bf16"  # the element type of C
THREADS = 256


def pipeline(BM: int, BN: int, BK: int, STAGES: int, AB: Any) -> tuple[Any, ...]:
    """What every kernel of this pipeline (these and gemm_ws.py's) derives from the tile shape
    and the input type AB: the atom, the bytes that land per stage, the products a thread starts
    per stage (two warpgroups multiplying), the stage before each, and the stages' layouts."""
    atom = warpgroup_mma_64xNx16 if AB.nbytes == 2 else warpgroup_mma_64xNx32
    mma = atom(BN, AB, AB, f32)
    stage_bytes = (BM + BN) * BK * AB.nbytes
    products = (BK // mma.shape[2]) * (BM // 128)
    previous = tuple((s + STAGES - 1) % STAGES for s in range(STAGES))
    # a stage: rows of BK elements (128, 64 or 32 bytes), 16-byte chunk c of row r at chunk
    # c ^ (r % chunks per row): the copy engine's and the MMA's swizzle of that width
    swizzle = Swizzle((BK * AB.nbytes // 16).bit_length() - 1, (16 // AB.nbytes).bit_length() - 1, 3)
    a_stages = ComposedLayout(swizzle, 0, Layout((STAGES, BM, BK), (BM * BK, BK, 1)))
    b_stages = ComposedLayout(swizzle, 0, Layout((STAGES, BN, BK), (BN * BK, BK, 1)))
    return mma, stage_bytes, products, previous, a_stages, b_stages


def helpers(BM: int, BN: int, BK: int, STAGES: int, GROUP: int, MMA: Any, AB: Any) -> tuple[Any, ...]:
    """Device functions these kernels (and gemm_ws.py's) use, for two warpgroups multiplying,
    warpgroup wg taking the tile's blocks of 64 rows wg, wg + 2, …: where tile t starts (tiles in groups of GROUP tile
    rows, column by column, so that the blocks running at once share rows of A and columns of B
    in the L2 cache), the barriers' and accumulators' first state, a stage's products, and C."""

    @device
    def tile_row(t: Any, tiles_m: Any, tiles_n: Any) -> Any:
        first = (t // (GROUP * tiles_n)) * GROUP
        return (first + (t % (GROUP * tiles_n)) % min(tiles_m - first, GROUP)) * BM

    @device
    def tile_column(t: Any, tiles_m: Any, tiles_n: Any) -> Any:
        first = (t // (GROUP * tiles_n)) * GROUP
        return ((t % (GROUP * tiles_n)) // min(tiles_m - first, GROUP)) * BN

    @device
    def start(bars: Any, empty: Any, acc: Any, values: Any, tid: Any) -> None:
        for half in static_range(BM // 128):
            for v in static_range(values):
                acc[v, half] = 0.0
        if tid == 0:
            for s in static_range(STAGES):
                nv.mbarrier_init(bars, s, 1)  # "full": one thread announces the bytes
                nv.mbarrier_init(empty, s, THREADS)  # "empty": every thread hands the stage back
        syncthreads()

    @device
    def multiply(sA: Any, sB: Any, s: Any, acc: Any, wg: Any) -> None:
        """Start the products of stage s: this warpgroup's rows of A against all of B's."""
        for ks in static_range(BK // MMA.shape[2]):
            for half in static_range(BM // 128):
                matmul_async(local_tile(sA[s, :, :], (64, MMA.shape[2]), wg + 2 * half + (BM // 64) * ks),
                             local_tile(sB[s, :, :], (BN, MMA.shape[2]), ks), acc[:, half], MMA)

    @device
    def store(cw: Any, acc: Any, bm: Any, bn: Any, wg: Any, t: Any) -> None:
        """C in bf16, as cuBLAS gives it: a thread's values 2p and 2p + 1 are neighbours in a
        row, rounded and written as one 4-byte pair."""
        for half in static_range(BM // 128):
            for p in static_range(MMA.values("c") // 2):
                idx = MMA.c_layout(t, 2 * p)
                pair = concat(bf16(acc[2 * p, half]), bf16(acc[2 * p + 1, half]))
                cw[bm + (wg + 2 * half) * 64 + idx % 64, (bn + idx // 64) // 2] = pair

    @device
    def store_staged(c16: Any, acc: Any, sA: Any, bm: Any, bn: Any, wg: Any, tid: Any) -> None:
        """C in bf16 through shared memory: once the products are done the A stages are free,
        so each thread puts its pairs there (16-byte chunk j of row r at chunk j ^ (r % 8), so
        that a warp's pairs fall in distinct banks), and after a barrier the block writes whole
        rows of C in 16-byte pieces, 512 contiguous bytes per warp. The barrier first: a
        warpgroup's own products are done at its matmul_wait, the other's only at the barrier,
        and a pair may land on a stage row the other warpgroup's last products read."""
        syncthreads()
        pairs = sA.view((STAGES * BM * BK * AB.nbytes // (2 * BN), BN // 2), u32)
        for half in static_range(BM // 128):
            for p in static_range(MMA.values("c") // 2):
                idx = MMA.c_layout(tid % 128, 2 * p)
                row = (wg + 2 * half) * 64 + idx % 64
                pair = idx // 128  # the column is idx // 64, even
                pairs[row, ((pair // 4) ^ (row % 8)) * 4 + pair % 4] = concat(bf16(acc[2 * p, half]),
                                                                             bf16(acc[2 * p + 1, half]))
        syncthreads()
        chunks = sA.view((STAGES * BM * BK * AB.nbytes // (2 * BN), BN // 8), u128)
        for i in static_range(BM * BN // (8 * THREADS)):
            row = (i * THREADS + tid) // (BN // 8)
            chunk = (i * THREADS + tid) % (BN // 8)
            c16[bm + row, bn // 8 + chunk] = chunks[row, chunk ^ (row % 8)]

    return tile_row, tile_column, start, multiply, store, store_staged


def build(BM: int = 128, BN: int = 128, BK: int = 64, STAGES: int = 4, GROUP: int = 8, AB: Any = bf16) -> Kernel:
    """The kernel for BM×BN tiles of C, K slices of BK (one swizzled row of 128 bytes: 64 bf16
    or 128 fp8; 64- and 32-byte rows work too), STAGES shared-memory stages, blocks ordered in groups of GROUP tile rows, and A
    and B of type AB (bf16, f16, f8e4m3 or f8e5m2)."""
    MMA, STAGE_BYTES, PRODUCTS, PREVIOUS, A_STAGES, B_STAGES = pipeline(BM, BN, BK, STAGES, AB)
    tile_row, tile_column, start, multiply, _, store_staged = helpers(BM, BN, BK, STAGES, GROUP, MMA, AB)

    def gemm_tma(a: Tensor[AB, "M", "K"], b: Tensor[AB, "N", "K"], c: Tensor[bf16, "M", "N"], M: int, N: int,
                 K: int):
        tag(a, lambda m, k: (k,))  # the product pairs A[m, k] with B[n, k]: the tags say which k
        tag(b, lambda n, k: (k,))
        assume(M % BM == 0)
        assume(N % BN == 0)
        assume(K % (STAGES * BK) == 0)
        sA = make_shared(A_STAGES, AB)
        sB = make_shared(B_STAGES, AB)
        bars = make_shared((STAGES,), u64)  # "full": a stage's slices have landed
        empty = make_shared((STAGES,), u64)  # "empty": every thread is done with a stage
        acc = make_local((MMA.values("c"), BM // 128), f32)  # per warpgroup: BM // 128 blocks of 64 rows
        tid = thread_idx.x
        wg = warp_id() // 4  # the warpgroup: rows 64·wg … of the block's tile
        tiles_n = grid_dim.x
        tiles_m = grid_dim.y
        pid = block_idx.y * tiles_n + block_idx.x  # this block's tile
        bm = tile_row(pid, tiles_m, tiles_n)
        bn = tile_column(pid, tiles_m, tiles_n)
        start(bars, empty, acc, MMA.values("c"), tid)
        if tid == 0:  # the first STAGES - 1 slices (the last stage is filled in the first step)
            for s in static_range(STAGES - 1):
                nv.mbarrier_arrive_expect_tx(bars, s, STAGE_BYTES)
                nv.tma_load(sA[s, :, :], a, (bm, s * BK), bars, s)
                nv.tma_load(sB[s, :, :], b, (bn, s * BK), bars, s)
        for k0 in range(0, K, STAGES * BK):
            phase = (k0 // (STAGES * BK)) % 2  # each barrier completes one phase per round
            for s in static_range(STAGES):
                nv.mbarrier_wait(bars, s, phase)
                multiply(sA, sB, s, acc, wg)
                matmul_wait(PRODUCTS)  # the previous stage's products have finished, this stage's run on
                nv.mbarrier_arrive(empty, PREVIOUS[s])  # this thread is done with the previous stage
                if tid == 0:
                    nv.mbarrier_wait(empty, PREVIOUS[s], phase)  # … and so is every other
                    # the slice STAGES - 1 ahead (past the end: the last one again, so that every
                    # round is alike; those copies are waited for after the loop)
                    refill = min(k0 + (s + STAGES - 1) * BK, K - BK)
                    nv.mbarrier_arrive_expect_tx(bars, PREVIOUS[s], STAGE_BYTES)
                    nv.tma_load(sA[PREVIOUS[s], :, :], a, (bm, refill), bars, PREVIOUS[s])
                    nv.tma_load(sB[PREVIOUS[s], :, :], b, (bn, refill), bars, PREVIOUS[s])
        matmul_wait(0)
        for s in static_range(STAGES - 1):  # no copy may still be landing when the block exits
            nv.mbarrier_wait(bars, s, (K // (STAGES * BK)) % 2)
        store_staged(c.view((M, N // 8), u128), acc, sA, bm, bn, wg, tid)

    return kernel(block=(THREADS,))(gemm_tma)


def build_persistent(BM: int = 128, BN: int = 256, BK: int = 64, STAGES: int = 4, GROUP: int = 8) -> Kernel:
    """The same pipeline with persistent blocks: launched with one block per multiprocessor
    (or fewer), each block takes tiles block, block + blocks, … and runs their K slices as one
    stream through the stages, so the next tile's first slices are in flight while a tile's
    products finish and its C is written. Rounds never straddle two tiles (K is a whole number
    of rounds), and a tile's C is written after its last round."""
    MMA, STAGE_BYTES, PRODUCTS, PREVIOUS, A_STAGES, B_STAGES = pipeline(BM, BN, BK, STAGES, bf16)
    tile_row, tile_column, start, multiply, store, _ = helpers(BM, BN, BK, STAGES, GROUP, MMA, bf16)

    def gemm_persistent(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[bf16, "M", "N"], M: int,
                        N: int, K: int):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        assume(M % BM == 0)
        assume(N % BN == 0)
        assume(K % (STAGES * BK) == 0)
        sA = make_shared(A_STAGES, bf16)
        sB = make_shared(B_STAGES, bf16)
        bars = make_shared((STAGES,), u64)
        empty = make_shared((STAGES,), u64)
        acc = make_local((MMA.values("c"), BM // 128), f32)
        cw = c.view((M, N // 2), u32)
        tid = thread_idx.x
        wg = warp_id() // 4
        t = tid % 128
        tiles_m = M // BM
        tiles_n = N // BN
        slices = K // BK  # per tile
        mine = (tiles_m * tiles_n - block_idx.x + grid_dim.x - 1) // grid_dim.x  # tiles of this block
        stream = mine * slices  # the K slices of all of them, one after the other
        start(bars, empty, acc, MMA.values("c"), tid)
        if tid == 0:  # slice s of the first tile into stage s
            for s in static_range(STAGES - 1):
                nv.mbarrier_arrive_expect_tx(bars, s, STAGE_BYTES)
                nv.tma_load(sA[s, :, :], a, (tile_row(block_idx.x, tiles_m, tiles_n), s * BK), bars, s)
                nv.tma_load(sB[s, :, :], b, (tile_column(block_idx.x, tiles_m, tiles_n), s * BK), bars, s)
        for r in range(0, stream, STAGES):  # rounds of STAGES slices of one tile
            phase = (r // STAGES) % 2
            for s in static_range(STAGES):
                nv.mbarrier_wait(bars, s, phase)
                multiply(sA, sB, s, acc, wg)
                matmul_wait(PRODUCTS)
                nv.mbarrier_arrive(empty, PREVIOUS[s])
                if tid == 0:
                    nv.mbarrier_wait(empty, PREVIOUS[s], phase)
                    ahead = min(r + s + STAGES - 1, stream - 1)  # a slice of this tile or of the next
                    tile = block_idx.x + (ahead // slices) * grid_dim.x
                    nv.mbarrier_arrive_expect_tx(bars, PREVIOUS[s], STAGE_BYTES)
                    nv.tma_load(sA[PREVIOUS[s], :, :], a, (tile_row(tile, tiles_m, tiles_n), (ahead % slices) * BK),
                                bars, PREVIOUS[s])
                    nv.tma_load(sB[PREVIOUS[s], :, :], b,
                                (tile_column(tile, tiles_m, tiles_n), (ahead % slices) * BK), bars, PREVIOUS[s])
            if (r + STAGES) % slices == 0:  # the tile's last round: its C, then a fresh sum
                matmul_wait(0)
                done = block_idx.x + (r // slices) * grid_dim.x
                store(cw, acc, tile_row(done, tiles_m, tiles_n), tile_column(done, tiles_m, tiles_n), wg, t)
                for half in static_range(BM // 128):
                    for v in static_range(MMA.values("c")):
                        acc[v, half] = 0.0
        matmul_wait(0)
        for s in static_range(STAGES - 1):
            nv.mbarrier_wait(bars, s, (stream // STAGES) % 2)

    return kernel(block=(THREADS,))(gemm_persistent)


def build_cluster(BM: int = 128, BN: int = 128, BK: int = 64, STAGES: int = 4, GROUP: int = 8) -> Kernel:
    """The pipeline of `build` in clusters of two blocks that share B. The blocks of a cluster
    take two tiles of C one above the other (rows bm and bm + BM, the same columns), so they
    need the same slices of B: each block copies half of each slice and multicasts it into
    both blocks' stages, which halves the traffic for B. A stage is refilled only once both
    blocks are done with it: each block's copying thread waits until its own block is
    ("empty"), says so on the "free" barrier of both blocks, and waits on its own "free" until
    the partner has said so too. Launch it on a 1-D grid of (M / BM)·(N / BN) blocks."""
    MMA, STAGE_BYTES, PRODUCTS, PREVIOUS, A_STAGES, B_STAGES = pipeline(BM, BN, BK, STAGES, bf16)
    pair_row, pair_column, *_ = helpers(2 * BM, BN, BK, STAGES, GROUP, MMA, bf16)
    _, _, _, multiply, _, store_staged = helpers(BM, BN, BK, STAGES, GROUP, MMA, bf16)
    HALF = BN // 2
    B_HALVES = ComposedLayout(B_STAGES.outer, 0, Layout((STAGES, 2, HALF, BK), (BN * BK, HALF * BK, BK, 1)))

    @device
    def load(sA: Any, halves: Any, bars: Any, s: Any, a: Any, b: Any, bm: Any, bn: Any, k: Any, rank: Any) -> None:
        """Stage s: this block's slice of A, and this block's half of the slice of B for both."""
        nv.mbarrier_arrive_expect_tx(bars, s, STAGE_BYTES)  # A, and both halves of B
        nv.tma_load(sA[s, :, :], a, (bm, k), bars, s)
        for r in static_range(2):
            if rank == r:
                nv.tma_load_multicast(halves[s, r, :, :], b, (bn + r * HALF, k), bars, s, 0b11)

    def gemm_tma_cluster(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[bf16, "M", "N"], M: int,
                         N: int, K: int):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        assume(M % (2 * BM) == 0)
        assume(N % BN == 0)
        assume(K % (STAGES * BK) == 0)
        sA = make_shared(A_STAGES, bf16)
        sB = make_shared(B_STAGES, bf16)
        halves = sB.view(B_HALVES, bf16)  # the same stages, each as two halves of BN / 2 rows
        bars = make_shared((STAGES,), u64)  # "full": a stage's slices have landed
        empty = make_shared((STAGES,), u64)  # "empty": every thread of this block is done with a stage
        free = make_shared((STAGES,), u64)  # "free": both blocks of the cluster are
        acc = make_local((MMA.values("c"), BM // 128), f32)
        tid = thread_idx.x
        wg = warp_id() // 4
        rank = nv.cluster_rank()
        pair = block_idx.x // 2  # the cluster's two tiles
        bm = pair_row(pair, M // (2 * BM), N // BN) + rank * BM
        bn = pair_column(pair, M // (2 * BM), N // BN)
        for half in static_range(BM // 128):
            for v in static_range(MMA.values("c")):
                acc[v, half] = 0.0
        if tid == 0:
            for s in static_range(STAGES):
                nv.mbarrier_init(bars, s, 1)
                nv.mbarrier_init(empty, s, THREADS)
                nv.mbarrier_init(free, s, 2)  # one arrival from each block's copying thread
        nv.cluster_sync()  # the partner's barriers are ready before anything lands on them
        if tid == 0:
            for s in static_range(STAGES - 1):
                load(sA, halves, bars, s, a, b, bm, bn, s * BK, rank)
        for k0 in range(0, K, STAGES * BK):
            phase = (k0 // (STAGES * BK)) % 2
            for s in static_range(STAGES):
                nv.mbarrier_wait(bars, s, phase)
                multiply(sA, sB, s, acc, wg)
                matmul_wait(PRODUCTS)
                nv.mbarrier_arrive(empty, PREVIOUS[s])
                if tid == 0:
                    nv.mbarrier_wait(empty, PREVIOUS[s], phase)  # this block is done with the stage …
                    for r in static_range(2):
                        nv.mbarrier_arrive_cluster(free, PREVIOUS[s], r)  # … says so to both …
                    nv.mbarrier_wait(free, PREVIOUS[s], phase)  # … and waits for the partner to say so
                    load(sA, halves, bars, PREVIOUS[s], a, b, bm, bn, min(k0 + (s + STAGES - 1) * BK, K - BK), rank)
        matmul_wait(0)
        for s in static_range(STAGES - 1):
            nv.mbarrier_wait(bars, s, (K // (STAGES * BK)) % 2)
        store_staged(c.view((M, N // 8), u128), acc, sA, bm, bn, wg, tid)
        nv.cluster_sync()  # no block leaves while its partner may still arrive on its barriers

    return kernel(block=(THREADS,), cluster=(2, 1, 1))(gemm_tma_cluster)


BM, BN = 128, 128
gemm_tma = build(BM, BN)
gemm_tma_cluster = build_cluster(BM, BN)

#: The tile shape and stages per problem size: what the H200 ran fastest (benchmarks/README.md).
CHOICES = ((1024 * 1024, (128, 64, 4)), (4096 * 4096, (256, 128, 4)), (None, (128, 256, 4)))


@functools.lru_cache(maxsize=None)
def _built(bm: int, bn: int, stages: int) -> Kernel:
    return build(bm, bn, 64, stages)


def tuned(m: int, n: int, k: int) -> tuple[Kernel, tuple[int, ...]]:
    """The kernel for an M×N×K product and its grid."""
    for limit, (bm, bn, stages) in CHOICES:
        if limit is None or m * n <= limit:
            return _built(bm, bn, stages), (n // bn, m // bm)
    raise AssertionError("unreachable")


def _problem(rng: np.random.Generator, m: int, n: int, k: int, ab: Any) -> Problem:
    """Random A and B of type `ab`, C in bf16, and the float64 product of the rounded inputs."""
    a = to_storage(rng.standard_normal((m, k)), ab)
    b = to_storage(rng.standard_normal((n, k)), ab)
    c = to_storage(np.zeros((m, n)), bf16)
    reference = from_storage(a, ab).astype(np.float64) @ from_storage(b, ab).astype(np.float64).T
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: reference}, atol=0.1, rtol=1e-2,
                   decode={2: lambda x: from_storage(x, bf16)})


def example_gemm_tma(rng: np.random.Generator, m: int = 128, n: int = 128, k: int = 512) -> Problem:
    return _problem(rng, m, n, k, bf16)


#: The same pipeline on fp8 (e4m3) inputs: K slices of 128, products 64×128×32.
gemm_tma_fp8 = build(BM, BN, 128, AB=f8e4m3)


def example_gemm_tma_fp8(rng: np.random.Generator, m: int = 128, n: int = 128, k: int = 512) -> Problem:
    return _problem(rng, m, n, k, f8e4m3)


def example_gemm_tma_cluster(rng: np.random.Generator, m: int = 256, n: int = 128, k: int = 512) -> Problem:
    problem = _problem(rng, m, n, k, bf16)
    return dataclasses.replace(problem, grid=((m // BM) * (n // BN),))
