"""A warp-specialized bf16 GEMM for Hopper: C = A · Bᵀ with fp32 accumulation and C in bf16,
A M×K and B N×K (both K-major), as in gemm_tma.py, with the copying and the multiplying done by
different warpgroups.

Each block of three warpgroups (384 threads) computes a BM×BN tile of C. Warpgroup 0 is the
producer: it gives back most of its registers (setmaxnreg), and one elected thread of it runs
ahead through the K slices, copying each slice of A and B with bulk tensor copies (TMA) into
one of STAGES shared-memory stages as soon as the consumers have handed that stage back.
Warpgroups 1 and 2 are the consumers: they take the registers the producer gave back (their
accumulators live there) and each multiplies half of the tile's rows (every other block of 64
rows, as in gemm_tma.py, whose stage layouts, products and store of C this kernel shares). Per
stage there are two memory barriers: "full" completes when a slice's bytes have landed (one
arrival, the producer's, with the bytes it announces), "empty" when every consumer thread is
done with the stage (256 arrivals). A consumer waits for "full", starts the stage's products
without waiting for them (matmul_async), waits for the previous stage's products only
(matmul_wait), and then hands that previous stage back on its "empty" barrier; so the tensor
cores always have products queued while the producer refills a stage. Neither side waits for
the other except through these barriers, and the producer's thread never issues a product: its
copies go out while the consumers multiply.

Phases: in round r (STAGES slices) the consumers wait for phase r of "full" (parity r % 2) and
the producer for phase r - 1 of "empty" (parity (r + 1) % 2, which a fresh barrier counts as
completed, so the first round fills every stage at once).

Tags state what C is: A and B are tagged with their k (which a product pairs) and their row
(which it carries), and every element of C must be the product of A's row m and B's row n over
every k. The checker follows the hand-off: what a consumer reads from a stage after waiting on
its "full" barrier is what the producer copied there in the iteration of the same index.

M and N must be multiples of BM and BN, and K of STAGES·BK.
"""

import numpy as np
from argus.backends.nvptx import language as nv
from argus.dsl import (
    Kernel,
    Problem,
    Tensor,
    assert_tags,
    assume,
    bf16,
    block_idx,
    f32,
    from_storage,
    kernel,
    make_local,
    make_shared,
    matmul_wait,
    product,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
    u32,
    u64,
    warp_id,
)
from gemm_tma import helpers, pipeline  # the same stages, products and store of C

TARGETS = ("nvptx:sm_90a",)  # warpgroup MMA and setmaxnreg
C_TYPE = "bf16"  # the element type of C
CONSUMERS = 2  # warpgroups multiplying (gemm_tma's two); one more copies
THREADS = 128 * (CONSUMERS + 1)
# Registers per thread: 65536 / 384 = 170 at launch, rounded down to 168; the producer keeps 40,
# so each consumer may grow to 232 (40 + 2 · 232 = 3 · 168: the block's whole pool).
REGISTERS, PRODUCER_REGISTERS, CONSUMER_REGISTERS = 168, 40, 232


def build(BM: int = 128, BN: int = 128, BK: int = 64, STAGES: int = 4) -> Kernel:
    """The kernel for BM×BN tiles of C (BM a multiple of 128: each consumer takes BM/2 rows, in
    blocks of 64, every other one), K slices of BK (64 bf16: one 128-byte swizzled row; 32 and
    16 work too) and STAGES shared-memory stages."""
    if BM % (64 * CONSUMERS) or BN % 8 or not 8 <= BN <= 256 or BK not in (16, 32, 64) or STAGES < 1:
        raise ValueError(f"gemm_ws tiles: BM a multiple of {64 * CONSUMERS}, BN a multiple of 8 up to 256, "
                         f"BK 16, 32 or 64, one stage or more; got {BM}×{BN}×{BK}, {STAGES} stages")
    # STAGE_BYTES: what lands on a stage's "full" barrier; PRODUCTS: what a consumer thread
    # starts per stage
    MMA, STAGE_BYTES, PRODUCTS, PREVIOUS, A_STAGES, B_STAGES = pipeline(BM, BN, BK, STAGES, bf16)
    _, _, _, multiply, store, _ = helpers(BM, BN, BK, STAGES, 1, MMA, bf16)
    HALVES = BM // (64 * CONSUMERS)  # blocks of 64 rows per consumer

    def gemm_ws(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"], c: Tensor[bf16, "M", "N"], M: int, N: int,
                K: int):
        tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))  # the product pairs A[m, k] with B[n, k]
        tag(b, lambda n, k: (k,), rows=lambda n, k: (n,))
        assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))  # C = A · Bᵀ over all of K
        assume(M % BM == 0)
        assume(N % BN == 0)
        assume(K % (STAGES * BK) == 0)
        sA = make_shared(A_STAGES, bf16)
        sB = make_shared(B_STAGES, bf16)
        full = make_shared((STAGES,), u64)  # a stage's slices have landed
        empty = make_shared((STAGES,), u64)  # every consumer thread is done with a stage
        acc = make_local((MMA.values("c"), HALVES), f32)  # a consumer's rows, in blocks of 64
        tid = thread_idx.x
        wg = warp_id() // 4  # 0: the producer; 1, 2: the consumers
        consumer = wg - 1  # a consumer's rows: BM / CONSUMERS from bm + consumer · BM / CONSUMERS
        bm = block_idx.y * BM
        bn = block_idx.x * BN
        if tid == 0:
            for s in static_range(STAGES):
                nv.mbarrier_init(full, s, 1)  # the producer's arrival, with the bytes it announces
                nv.mbarrier_init(empty, s, 128 * CONSUMERS)  # each consumer thread hands the stage back
        syncthreads()
        if wg == 0:
            nv.setmaxnreg(PRODUCER_REGISTERS, False)
            if warp_id() == 0 and nv.elect_one():
                for k0 in range(0, K, STAGES * BK):
                    phase = (k0 // (STAGES * BK)) % 2
                    for s in static_range(STAGES):
                        nv.mbarrier_wait(empty, s, phase ^ 1)  # the consumers are done with the last round's slice
                        nv.mbarrier_arrive_expect_tx(full, s, STAGE_BYTES)
                        nv.tma_load(sA[s, :, :], a, (bm, k0 + s * BK), full, s)
                        nv.tma_load(sB[s, :, :], b, (bn, k0 + s * BK), full, s)
        else:
            nv.setmaxnreg(CONSUMER_REGISTERS, True)
            for half in static_range(HALVES):
                for v in static_range(MMA.values("c")):
                    acc[v, half] = 0.0
            for k0 in range(0, K, STAGES * BK):
                phase = (k0 // (STAGES * BK)) % 2
                for s in static_range(STAGES):
                    nv.mbarrier_wait(full, s, phase)
                    multiply(sA, sB, s, acc, consumer)
                    matmul_wait(PRODUCTS)  # the previous stage's products have finished, this stage's run on
                    if k0 + s > 0:  # the very first stage has no previous one
                        nv.mbarrier_arrive(empty, PREVIOUS[s])
            matmul_wait(0)
            nv.mbarrier_arrive(empty, STAGES - 1)  # the last stage, so that every round ends alike
            store(c.view((M, N // 2), u32), acc, bm, bn, consumer, tid % 128)

    return kernel(block=(THREADS,), max_registers=REGISTERS)(gemm_ws)


BM, BN = 128, 128
gemm_ws = build(BM, BN)


def example_gemm_ws(rng: np.random.Generator, m: int = 128, n: int = 128, k: int = 512) -> Problem:
    """Random A and B in bf16, C in bf16, and the float64 product of the rounded inputs."""
    a = to_storage(rng.standard_normal((m, k)), bf16)
    b = to_storage(rng.standard_normal((n, k)), bf16)
    c = to_storage(np.zeros((m, n)), bf16)
    reference = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    return Problem(grid=(n // BN, m // BM), args=(a, b, c, m, n, k), expected={2: reference}, atol=0.1, rtol=1e-2,
                   decode={2: lambda x: from_storage(x, bf16)})
