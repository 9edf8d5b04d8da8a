"""The cases of the held-out bug benchmark (benchmarks/bug_bench.py).

Each case is a textual edit of one example kernel, written as a kernel engineer errs: a barrier
dropped or moved, a pipeline stage or phase parity wrong, the bytes a barrier expects wrong,
copy coordinates swapped or a tile off, a bounds mask dropped, a loop bound off by one, the
causal mask off by one, a fragment or store taking another warp's rows, an operand swapped, a
softmax rescale forgotten, a reduction over the wrong lanes, a GQA head mapped wrong. Each
*equivalent* case changes the code but not what it computes (a redundant barrier, another
order of a butterfly, an index written another way) and must not be flagged.

The vocabulary is kept apart from benchmarks/verify_mutants.py (which holds the kinds the tag
checker was built for): other edits, other kinds. Every bug is confirmed wrong on the
interpreter before it counts (a wrong output or a fault under one of the schedules), every
equivalent confirmed right under all of them; a candidate that fails its confirmation is
reported, not counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Case:
    """One edit of an example: `edits` are (search, replacement) pairs, each search text
    occurring exactly once in the example's source; `sizes` overrides the example problem's
    keyword arguments (small enough for the interpreter, large enough to show the bug)."""

    example: str
    kernel: str
    kind: str
    edits: tuple[tuple[str, str], ...]
    equivalent: bool = False
    note: str = ""
    sizes: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def name(self) -> str:
        return f"{self.example}:{self.kind}:{self.note or self.edits[-1][1].strip()[:50]}"


#: Problem sizes per example where the default would hide a class of bug (one block, one pass).
SIZES: dict[str, tuple[tuple[str, Any], ...]] = {
    "gemm_sm80": (("m", 256), ("n", 128), ("k", 128)),
}

EXAMPLES: dict[str, str] = {  # example file -> kernel
    "vector_add": "vector_add", "transpose": "transpose", "softmax": "softmax", "gemm": "gemm",
    "gemm_sm80": "gemm_sm80", "gemm_sm90": "gemm_sm90", "gemm_tma": "gemm_tma", "gemm_ws": "gemm_ws",
    "flash_attention": "attention", "gemm_cdna": "gemm_cdna", "attention_cdna": "attention_cdna",
}

CASES: list[Case] = []


def _case(example: str, kind: str, note: str, *edits: tuple[str, str], equivalent: bool = False) -> None:
    CASES.append(Case(example, EXAMPLES[example], kind, edits, equivalent, note, SIZES.get(example, ())))


def _bug(example: str, kind: str, note: str, *edits: tuple[str, str]) -> None:
    _case(example, kind, note, *edits)


def _same(example: str, kind: str, note: str, *edits: tuple[str, str]) -> None:
    _case(example, kind, note, *edits, equivalent=True)


# ---- vector_add ---------------------------------------------------------------------------------
VA_GUARD = "    if i < n:\n        out[i] = x[i] + y[i]"
_bug("vector_add", "bounds mask", "guard dropped", (VA_GUARD, "    out[i] = x[i] + y[i]"))
_bug("vector_add", "bounds mask", "guard i <= n", ("if i < n:", "if i <= n:"))
_bug("vector_add", "copy coordinates", "block and thread index swapped",
     ("i = block_idx.x * BLOCK + thread_idx.x", "i = thread_idx.x * BLOCK + block_idx.x"))
_bug("vector_add", "operand swap", "x added twice", ("out[i] = x[i] + y[i]", "out[i] = x[i] + x[i]"))
_same("vector_add", "operand swap", "y + x", ("out[i] = x[i] + y[i]", "out[i] = y[i] + x[i]"))
_same("vector_add", "bounds mask", "guard i <= n - 1", ("if i < n:", "if i <= n - 1:"))

# ---- transpose -------------------------------------------------------------------------------
T_SYNC = "    syncthreads()\n    for k in static_range(PASSES):\n        got[k]"
T_READ = "        got[k] = tile[tx, ty + k * ROWS_PER_PASS]\n"
_bug("transpose", "barrier", "barrier dropped", (T_SYNC, "    for k in static_range(PASSES):\n        got[k]"))
_bug("transpose", "barrier", "barrier after the reads",
     (T_SYNC, "    for k in static_range(PASSES):\n        got[k]"), (T_READ, T_READ + "    syncthreads()\n"))
_bug("transpose", "bounds mask", "row clamp to rows, not rows - 1",
     ("r = min(row0 + ty + k * ROWS_PER_PASS, rows - 1)", "r = min(row0 + ty + k * ROWS_PER_PASS, rows)"))
_bug("transpose", "bounds mask", "store guard dropped",
     ("        if r < cols and c < rows:\n            dst[r, c] = got[k]", "        dst[r, c] = got[k]"))
_bug("transpose", "bounds mask", "store guard with rows and cols swapped",
     ("if r < cols and c < rows:", "if r < rows and c < cols:"))
_bug("transpose", "store rows", "store at the source's block coordinates",
     ("        r = col0 + ty + k * ROWS_PER_PASS\n        c = row0 + tx",
      "        r = row0 + ty + k * ROWS_PER_PASS\n        c = col0 + tx"))
_bug("transpose", "copy coordinates", "load column from ty",
     ("c = min(col0 + tx, cols - 1)", "c = min(col0 + ty, cols - 1)"))
_bug("transpose", "loop bound", "one pass of reads short",
     ("    for k in static_range(PASSES):\n        got[k]", "    for k in static_range(PASSES - 1):\n        got[k]"))
_bug("transpose", "copy coordinates", "pass stride PASSES instead of ROWS_PER_PASS",
     ("r = min(row0 + ty + k * ROWS_PER_PASS, rows - 1)", "r = min(row0 + ty + k * PASSES, rows - 1)"))
_same("transpose", "barrier", "redundant second barrier", (T_SYNC, "    syncthreads()\n" + T_SYNC))
_same("transpose", "bounds mask", "clamp written as a select of max",
      ("c = min(col0 + tx, cols - 1)", "c = cols - 1 - max(cols - 1 - col0 - tx, 0)"))

# ---- softmax ---------------------------------------------------------------------------------
_bug("softmax", "reduction width", "sum reduction dropped", ("        total = warp_sum(total)\n", ""))
_bug("softmax", "reduction width", "max reduction dropped", ("        peak = warp_max(peak)\n", ""))
_bug("softmax", "loop bound", "sum strides 16 lanes",
     ("        for c in range(lane, cols, 32):\n            total =", "        for c in range(lane, cols, 16):\n            total ="))
_bug("softmax", "softmax rescale", "peak not scaled by log2(e)",
     ("out[row, c] = exp2((x[row, c] - peak) * LOG2E) / total", "out[row, c] = exp2(x[row, c] * LOG2E - peak) / total"))
_bug("softmax", "bounds mask", "row guard off by one", ("if row < rows:", "if row <= rows:"))
_bug("softmax", "loop bound", "output loop starts a lane late",
     ("        for c in range(lane, cols, 32):\n            out[", "        for c in range(lane + 1, cols, 32):\n            out["))
_bug("softmax", "store rows", "row from the block only",
     ("row = block_idx.x * ROWS_PER_BLOCK + thread_idx.y", "row = block_idx.x + thread_idx.y"))
_same("softmax", "softmax rescale", "multiply by the reciprocal",
      ("exp2((x[row, c] - peak) * LOG2E) / total", "exp2((x[row, c] - peak) * LOG2E) * (1.0 / total)"))
_same("softmax", "reduction width", "max reduced twice", ("        peak = warp_max(peak)\n",
                                                         "        peak = warp_max(peak)\n        peak = warp_max(peak)\n"))

# ---- gemm ------------------------------------------------------------------------------------
G_MM = "                matmul(afrag[mi, :], bfrag[ni, :], acc[mi, ni, :], MMA)\n"
G_STAGE_B = "            sB[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK]\n"
G_STAGE_A = "            sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]\n"
_bug("gemm", "barrier", "barrier after the products dropped", (G_MM + "        syncthreads()\n", G_MM))
_bug("gemm", "barrier", "barrier after the staging dropped", (G_STAGE_B + "        syncthreads()\n", G_STAGE_B))
_bug("gemm", "loop bound", "last K slice skipped", ("for k0 in range(0, K, BK):", "for k0 in range(0, K - BK, BK):"))
_bug("gemm", "loop bound", "extra K slice", ("for k0 in range(0, K, BK):", "for k0 in range(0, K + BK, BK):"))
_bug("gemm", "operand swap", "A staged from B", (G_STAGE_A, G_STAGE_A.replace("= a[bm + ", "= b[bn + ")))
_bug("gemm", "copy coordinates", "A's row and column swapped",
     (G_STAGE_A, G_STAGE_A.replace("a[bm + e // BK, k0 + e % BK]", "a[bm + e % BK, k0 + e // BK]")))
_bug("gemm", "copy coordinates", "B's tile from block_idx.y", ("bn = block_idx.x * BN", "bn = block_idx.y * BN"))
_bug("gemm", "fragment rows", "A fragment from wn's rows",
     ("afrag[mi, v] = sA[wm * 32 + mi * 16", "afrag[mi, v] = sA[wn * 32 + mi * 16"))
_bug("gemm", "fragment rows", "B fragment from wm's rows",
     ("bfrag[ni, v] = sB[wn * 32 + ni * 8", "bfrag[ni, v] = sB[wm * 32 + ni * 8"))
_bug("gemm", "store rows", "C rows from wn", ("c[bm + wm * 32 + mi * 16", "c[bm + wn * 32 + mi * 16"))
_bug("gemm", "accumulator init", "accumulator not zeroed",
     ("            for v in static_range(4):\n                acc[mi, ni, v] = 0.0\n", "            pass\n"))
_same("gemm", "barrier", "B staged before A", (G_STAGE_A + G_STAGE_B, G_STAGE_B + G_STAGE_A))
_same("gemm", "fragment rows", "products in column-major order",
      ("        for mi in static_range(2):\n            for ni in static_range(4):\n                matmul",
       "        for ni in static_range(4):\n            for mi in static_range(2):\n                matmul"))

# ---- gemm_sm80 -------------------------------------------------------------------------------
S8_WAIT = "            nv.cp_async_wait(0)\n            syncthreads()\n"
S8_COPY_A = "nv.cp_async(sAv, (1 - stage, e // 4, e % 4), av, (bm + e // 4, nxt + e % 4))"
S8_COPY_B = "nv.cp_async(sBv, (1 - stage, e // 4, e % 4), bv, (bn + e // 4, nxt + e % 4))"
_bug("gemm_sm80", "async wait", "no wait for the copies in the loop", (S8_WAIT, "            syncthreads()\n"))
_bug("gemm_sm80", "async wait", "no wait for the first slice",
     ("    nv.cp_async_wait(0)\n    syncthreads()\n    for kv", "    syncthreads()\n    for kv"))
_bug("gemm_sm80", "barrier", "barrier after the wait dropped", (S8_WAIT, "            nv.cp_async_wait(0)\n"))
_bug("gemm_sm80", "stage index", "fragments of A from the stage being filled",
     ("copy(local_tile(sA[stage, :, :]", "copy(local_tile(sA[1 - stage, :, :]"))
_bug("gemm_sm80", "stage index", "first slice of A into stage 1",
     ("nv.cp_async(sAv, (0, e // 4, e % 4)", "nv.cp_async(sAv, (1, e // 4, e % 4)"))
_bug("gemm_sm80", "copy coordinates", "next slice is this slice",
     ("nxt = min(kv + (stage + 1) * (BK // VEC)", "nxt = min(kv + stage * (BK // VEC)"))
_bug("gemm_sm80", "loop bound", "first pass skipped",
     ("for kv in range(0, K // VEC, 2 * BK // VEC):", "for kv in range(2 * BK // VEC, K // VEC, 2 * BK // VEC):"))
_bug("gemm_sm80", "copy coordinates", "B's rows at A's block", (S8_COPY_B, S8_COPY_B.replace("(bn + e // 4", "(bm + e // 4")))
_bug("gemm_sm80", "fragment rows", "A fragment rows at 8 per mi",
     ("row = wm * 64 + mi * 16 + lane % 8", "row = wm * 64 + mi * 8 + lane % 8"))
_bug("gemm_sm80", "store rows", "C columns from wm", ("bn + wn * 32 + ni * 8 + idx // 16]", "bn + wm * 32 + ni * 8 + idx // 16]"))
_bug("gemm_sm80", "async wait", "copies never committed in the loop",
     ("            nv.cp_async_commit()\n            for ks", "            for ks"))
_same("gemm_sm80", "fragment rows", "lane % 16 for the two 8-row halves",
      ("row = wm * 64 + mi * 16 + lane % 8 + 8 * ((lane // 8) % 2)", "row = wm * 64 + mi * 16 + lane % 16"))
_same("gemm_sm80", "stage index", "first slice's B before A",
      ("        nv.cp_async(sAv, (0, e // 4, e % 4), av, (bm + e // 4, e % 4))\n"
       "        nv.cp_async(sBv, (0, e // 4, e % 4), bv, (bn + e // 4, e % 4))\n",
       "        nv.cp_async(sBv, (0, e // 4, e % 4), bv, (bn + e // 4, e % 4))\n"
       "        nv.cp_async(sAv, (0, e // 4, e % 4), av, (bm + e // 4, e % 4))\n"))

# ---- gemm_sm90 -------------------------------------------------------------------------------
S9_MM = "            matmul(local_tile(sA, (64, 16), wg + 2 * ks), local_tile(sB, (BN, 16), ks), acc, MMA)\n"
S9_PUT = "            sBv[e // 8, e % 8] = rb[i]\n        syncthreads()\n    t = tid % 128"
_bug("gemm_sm90", "barrier", "barrier before the shared writes dropped", (S9_MM + "        syncthreads()\n", S9_MM))
_bug("gemm_sm90", "barrier", "barrier after the shared writes dropped",
     (S9_PUT, "            sBv[e // 8, e % 8] = rb[i]\n    t = tid % 128"))
_bug("gemm_sm90", "swizzle mismatch", "A's vector view unswizzled",
     ("sAv = sA.view(SWIZZLED_VECTORS, u128)", "sAv = sA.view(Layout((BM, BK // VEC), (BK // VEC, 1)), u128)"))
_bug("gemm_sm90", "swizzle mismatch", "vector swizzle over 4 rows",
     ("SWIZZLED_VECTORS = ComposedLayout(Swizzle(3, 0, 3)", "SWIZZLED_VECTORS = ComposedLayout(Swizzle(2, 0, 3)"))
_bug("gemm_sm90", "fragment rows", "both warpgroups multiply rows 0-63",
     ("local_tile(sA, (64, 16), wg + 2 * ks)", "local_tile(sA, (64, 16), 2 * ks)"))
_bug("gemm_sm90", "store rows", "both warpgroups store rows 0-63",
     ("c[bm + wg * 64 + idx % 64, bn + idx // 64]", "c[bm + idx % 64, bn + idx // 64]"))
_bug("gemm_sm90", "loop bound", "last K slice skipped",
     ("for kv in range(0, K // VEC, BK // VEC):", "for kv in range(0, K // VEC - BK // VEC, BK // VEC):"))
_bug("gemm_sm90", "copy coordinates", "first slice's row and vector swapped",
     ("sAv[e // 8, e % 8] = av[bm + e // 8, e % 8]", "sAv[e // 8, e % 8] = av[bm + e % 8, e // 8]"))
_bug("gemm_sm90", "operand swap", "next slice of B read from A",
     ("rb[i] = bv[bn + e // 8, nxt + e % 8]", "rb[i] = av[bm + e // 8, nxt + e % 8]"))
_same("gemm_sm90", "store rows", "thread in its warpgroup as tid - 128·wg", ("t = tid % 128", "t = tid - 128 * wg"))
_same("gemm_sm90", "operand swap", "next slice's B loaded before A",
      ("            ra[i] = av[bm + e // 8, nxt + e % 8]\n            rb[i] = bv[bn + e // 8, nxt + e % 8]\n",
       "            rb[i] = bv[bn + e // 8, nxt + e % 8]\n            ra[i] = av[bm + e // 8, nxt + e % 8]\n"))

# ---- gemm_tma --------------------------------------------------------------------------------
TM_PHASE = "phase = (k0 // (STAGES * BK)) % 2  # each barrier completes one phase per round"
TM_REFILL_X = "nv.mbarrier_arrive_expect_tx(bars, PREVIOUS[s], STAGE_BYTES)\n                    nv.tma_load(sA[PREVIOUS[s], :, :], a, (bm, refill)"
TM_REFILL_A = "nv.tma_load(sA[PREVIOUS[s], :, :], a, (bm, refill), bars, PREVIOUS[s])"
TM_FIRST = "                nv.mbarrier_arrive_expect_tx(bars, s, STAGE_BYTES)\n                nv.tma_load(sA[s, :, :], a, (bm, s * BK), bars, s)"
TM_EMPTY = "                    nv.mbarrier_wait(empty, PREVIOUS[s], phase)  # … and so is every other\n"
TM_DRAIN = "        matmul_wait(0)\n        for s in static_range(STAGES - 1):  # no copy may still be landing"
_bug("gemm_tma", "phase parity", "consumers wait for the other parity", (TM_PHASE, TM_PHASE.replace("% 2", "% 2 ^ 1")))
_bug("gemm_tma", "expect-tx bytes", "refill announces half the bytes",
     (TM_REFILL_X, TM_REFILL_X.replace("STAGE_BYTES)", "STAGE_BYTES // 2)")))
_bug("gemm_tma", "expect-tx bytes", "first slices announce A's bytes only",
     (TM_FIRST, TM_FIRST.replace("STAGE_BYTES)", "BM * BK * AB.nbytes)")))
_bug("gemm_tma", "stage index", "refill into the stage being read",
     (TM_REFILL_A, TM_REFILL_A.replace("sA[PREVIOUS[s], :, :]", "sA[s, :, :]")))
_bug("gemm_tma", "copy coordinates", "refill coordinates swapped",
     (TM_REFILL_A, TM_REFILL_A.replace("(bm, refill)", "(refill, bm)")))
_bug("gemm_tma", "copy coordinates", "first slices of B one slice ahead",
     ("nv.tma_load(sB[s, :, :], b, (bn, s * BK), bars, s)", "nv.tma_load(sB[s, :, :], b, (bn, (s + 1) * BK), bars, s)"))
_bug("gemm_tma", "barrier", "refill without waiting for the other threads", (TM_EMPTY, ""))
_bug("gemm_tma", "stage index", "hands back this stage, not the previous",
     ("nv.mbarrier_arrive(empty, PREVIOUS[s])  # this thread is done", "nv.mbarrier_arrive(empty, s)  # this thread is done"))
_bug("gemm_tma", "async wait", "waits for two stages' products less",
     ("matmul_wait(PRODUCTS)  # the previous stage's products have finished, this stage's run on\n"
      "                nv.mbarrier_arrive(empty, PREVIOUS[s])  # this",
      "matmul_wait(2 * PRODUCTS)  # the previous stage's products have finished, this stage's run on\n"
      "                nv.mbarrier_arrive(empty, PREVIOUS[s])  # this"))
_bug("gemm_tma", "async wait", "no wait for the last products", (TM_DRAIN, TM_DRAIN.replace("        matmul_wait(0)\n", "")))
_bug("gemm_tma", "loop bound", "last round skipped",
     ("for k0 in range(0, K, STAGES * BK):\n            " + TM_PHASE,
      "for k0 in range(0, K - STAGES * BK, STAGES * BK):\n            " + TM_PHASE))
_bug("gemm_tma", "barrier count", "empty barrier counts one warpgroup",
     ("nv.mbarrier_init(empty, s, THREADS)  # \"empty\": every thread", "nv.mbarrier_init(empty, s, 128)  # \"empty\": every thread"))
_same("gemm_tma", "phase parity", "parity as a bit and", (TM_PHASE, TM_PHASE.replace("% 2", "& 1")))
_same("gemm_tma", "copy coordinates", "first slices' B before A",
      ("                nv.tma_load(sA[s, :, :], a, (bm, s * BK), bars, s)\n"
       "                nv.tma_load(sB[s, :, :], b, (bn, s * BK), bars, s)\n",
       "                nv.tma_load(sB[s, :, :], b, (bn, s * BK), bars, s)\n"
       "                nv.tma_load(sA[s, :, :], a, (bm, s * BK), bars, s)\n"))
_same("gemm_tma", "async wait", "waits for every product each stage",
      ("matmul_wait(PRODUCTS)  # the previous stage's products have finished, this stage's run on\n"
       "                nv.mbarrier_arrive(empty, PREVIOUS[s])  # this",
       "matmul_wait(0)  # the previous stage's products have finished, this stage's run on\n"
       "                nv.mbarrier_arrive(empty, PREVIOUS[s])  # this"))

# ---- gemm_ws ---------------------------------------------------------------------------------
WS_FULL = "                    nv.mbarrier_wait(full, s, phase)\n"
WS_LOAD_A = "nv.tma_load(sA[s, :, :], a, (bm, k0 + s * BK), full, s)"
WS_LOAD_B = "nv.tma_load(sB[s, :, :], b, (bn, k0 + s * BK), full, s)"
_bug("gemm_ws", "phase parity", "producer waits for the current parity",
     ("nv.mbarrier_wait(empty, s, phase ^ 1)", "nv.mbarrier_wait(empty, s, phase)"))
_bug("gemm_ws", "phase parity", "consumers wait for the other parity", (WS_FULL, WS_FULL.replace("phase)", "phase ^ 1)")))
_bug("gemm_ws", "barrier count", "empty barrier counts one consumer",
     ("nv.mbarrier_init(empty, s, 128 * CONSUMERS)", "nv.mbarrier_init(empty, s, 128)"))
_bug("gemm_ws", "expect-tx bytes", "announces A's bytes only",
     ("nv.mbarrier_arrive_expect_tx(full, s, STAGE_BYTES)", "nv.mbarrier_arrive_expect_tx(full, s, BM * BK * 2)"))
_bug("gemm_ws", "copy coordinates", "B one slice ahead", (WS_LOAD_B, WS_LOAD_B.replace("k0 + s * BK)", "k0 + s * BK + BK)")))
_bug("gemm_ws", "operand swap", "A's stage loaded from B", (WS_LOAD_A, WS_LOAD_A.replace("a, (bm,", "b, (bn,")))
_bug("gemm_ws", "stage index", "consumer hands back this stage",
     ("                        nv.mbarrier_arrive(empty, PREVIOUS[s])\n", "                        nv.mbarrier_arrive(empty, s)\n"))
_bug("gemm_ws", "barrier count", "hands back a stage at the very first step too",
     ("if k0 + s > 0:  # the very first stage", "if k0 + s >= 0:  # the very first stage"))
_bug("gemm_ws", "fragment rows", "consumer index not offset by the producer",
     ("consumer = wg - 1  # a consumer's rows", "consumer = wg  # a consumer's rows"))
_bug("gemm_ws", "loop bound", "producer stops a round early",
     ("                for k0 in range(0, K, STAGES * BK):\n                    phase",
      "                for k0 in range(0, K - STAGES * BK, STAGES * BK):\n                    phase"))
_bug("gemm_ws", "predicate", "one producer per warp",
     ("if warp_id() == 0 and nv.elect_one():", "if nv.elect_one():"))
_same("gemm_ws", "fragment rows", "consumers take the halves the other way round",
      ("consumer = wg - 1  # a consumer's rows", "consumer = 2 - wg  # a consumer's rows"))
_same("gemm_ws", "async wait", "consumers wait for every product each stage",
      ("matmul_wait(PRODUCTS)  # the previous stage's products have finished, this stage's run on\n"
       "                    if k0 + s > 0:",
       "matmul_wait(0)  # the previous stage's products have finished, this stage's run on\n"
       "                    if k0 + s > 0:"))
_same("gemm_ws", "copy coordinates", "producer loads B before A",
      ("                        " + WS_LOAD_A + "\n                        " + WS_LOAD_B + "\n",
       "                        " + WS_LOAD_B + "\n                        " + WS_LOAD_A + "\n"))

# ---- flash_attention -------------------------------------------------------------------------
FA_PEAK2 = "            peak = max(peak, shfl_xor(peak, 2))\n"
FA_PEAK1 = "            peak = max(peak, shfl_xor(peak, 1))  # the 4 threads holding one row\n"
FA_STAGE_V = "            sVt[d, key] = v[kj * TILE + key, hk, d]  # V transposed on the fly\n"
FA_LAST = "            matmul(pf, vf, o_acc[:, :, n], MMA)\n        syncthreads()\n"
_bug("flash_attention", "causal mask", "diagonal masked out", ("select(key <= row,", "select(key < row,"))
_bug("flash_attention", "causal mask", "one key past the diagonal", ("select(key <= row,", "select(key <= row + 1,"))
_bug("flash_attention", "loop bound", "diagonal tile skipped", ("for kj in range(0, qi + 1):", "for kj in range(0, qi):"))
_bug("flash_attention", "softmax rescale", "running sum not rescaled",
     ("row_sum[v1] = row_sum[v1] * correction + total", "row_sum[v1] = row_sum[v1] + total"))
_bug("flash_attention", "softmax rescale", "output not rescaled",
     ("o_acc[v0, v1, n] = o_acc[v0, v1, n] * correction", "o_acc[v0, v1, n] = o_acc[v0, v1, n]"))
_bug("flash_attention", "softmax rescale", "correction inverted",
     ("correction = exp2(row_max[v1] - peak)", "correction = exp2(peak - row_max[v1])"))
_bug("flash_attention", "reduction width", "max over lanes 4 apart", (FA_PEAK2, FA_PEAK2.replace("peak, 2)", "peak, 4)")))
_bug("flash_attention", "reduction width", "sum over lanes 4 apart",
     ("            total = total + shfl_xor(total, 2)\n", "            total = total + shfl_xor(total, 4)\n"))
_bug("flash_attention", "GQA head mapping", "KV head h % GQA", ("    hk = h // GQA\n", "    hk = h % GQA\n"))
_bug("flash_attention", "GQA head mapping", "Q read at the KV head",
     ("qf[v0, v1, v2, ks] = q[qi * TILE + t1 + 8 * v1, h,", "qf[v0, v1, v2, ks] = q[qi * TILE + t1 + 8 * v1, hk,"))
_bug("flash_attention", "barrier", "barrier at the end of a key tile dropped", (FA_LAST, FA_LAST.replace("        syncthreads()\n", "")))
_bug("flash_attention", "barrier", "barrier after the staging dropped", (FA_STAGE_V + "        syncthreads()\n", FA_STAGE_V))
_bug("flash_attention", "store rows", "rows 8 apart stored 1 apart",
     ("o[qi * TILE + t1 + 8 * v1, h, n * 8 + 2 * t0 + v0]", "o[qi * TILE + t1 + v1, h, n * 8 + 2 * t0 + v0]"))
_bug("flash_attention", "fragment rows", "normalized by the other row's sum",
     ("= o_acc[v0, v1, n] / row_sum[v1]", "= o_acc[v0, v1, n] / row_sum[v0]"))
_same("flash_attention", "reduction width", "max butterfly in the other order",
      (FA_PEAK1 + FA_PEAK2, FA_PEAK2 + FA_PEAK1))
_same("flash_attention", "softmax rescale", "running maximum starts at the first tile's",
      ("    for v1 in static_range(2):\n        row_max[v1] = float(\"-inf\")",
       "    for v1 in static_range(2):\n        row_max[v1] = -1e30"))
_same("flash_attention", "barrier", "K and V staged by separate loops",
      ("            sK[key, d] = k[kj * TILE + key, hk, d]\n" + FA_STAGE_V,
       "            sK[key, d] = k[kj * TILE + key, hk, d]\n"
       "        for i in static_range(TILE * D // 32):\n"
       "            key = (lane + i * 32) // D\n            d = (lane + i * 32) % D\n" + FA_STAGE_V))

# ---- gemm_cdna -------------------------------------------------------------------------------
GC_PLACE_B = "            sBh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[2 + g]\n"
GC_MM = "                matmul(afrag[q, h, :], bfrag[q, h, :], acc, MMA)\n"
_bug("gemm_cdna", "barrier", "barrier after the LDS writes dropped", (GC_PLACE_B + "        syncthreads()\n", GC_PLACE_B))
_bug("gemm_cdna", "barrier", "barrier after the products dropped", (GC_MM + "        syncthreads()\n", GC_MM))
_bug("gemm_cdna", "copy coordinates", "B's rows at A's block",
     ("amd.buffer_load(bv, (bn + row, k0 // 8 + part))", "amd.buffer_load(bv, (bm + row, k0 // 8 + part))"))
_bug("gemm_cdna", "operand swap", "A's LDS tile gets B's bytes",
     ("sAh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[g]", "sAh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[2 + g]"))
_bug("gemm_cdna", "fragment rows", "B fragment from wm's rows",
     ("bfv[q] = sBv[wn * 32 + lane % 32,", "bfv[q] = sBv[wm * 32 + lane % 32,"))
_bug("gemm_cdna", "store rows", "C stored transposed within the wave's tile",
     ("c[bm + wm * 32 + idx % 32, bn + wn * 32 + idx // 32]", "c[bm + wm * 32 + idx // 32, bn + wn * 32 + idx % 32]"))
_bug("gemm_cdna", "loop bound", "last K slice skipped", ("for k0 in range(0, K, BK):", "for k0 in range(0, K - BK, BK):"))
_bug("gemm_cdna", "accumulator init", "half the accumulator zeroed",
     ("    for v in static_range(16):\n        acc[v] = 0.0", "    for v in static_range(8):\n        acc[v] = 0.0"))
_same("gemm_cdna", "copy coordinates", "row and part by shifts and masks",
      ("    row = tid // 4  # the thread's row", "    row = tid >> 2  # the thread's row"), ("    part = tid % 4\n", "    part = tid & 3\n"))
_same("gemm_cdna", "barrier", "B's LDS writes before A's",
      ("            sAh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[g]\n" + GC_PLACE_B,
       GC_PLACE_B + "            sAh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[g]\n"))

# ---- attention_cdna --------------------------------------------------------------------------
AC_MASK = "select(k0 + 32 * p + 8 * g + 4 * t + i <= query,"
AC_PEAK16 = "        peak = max(peak, shfl_xor(peak, 16))  # the four lanes holding one query\n"
AC_PEAK32 = "        peak = max(peak, shfl_xor(peak, 32))\n"
AC_VW = "                sVw[8 * (e // QUADS) + x, e % QUADS] = vtv[u, x]\n"
_bug("attention_cdna", "causal mask", "diagonal masked out", (AC_MASK, AC_MASK.replace("<= query", "< query")))
_bug("attention_cdna", "reduction width", "max over lanes 8 apart", (AC_PEAK32, AC_PEAK32.replace("peak, 32)", "peak, 8)")))
_bug("attention_cdna", "reduction width", "sum reduction half done",
     ("        total = total + shfl_xor(total, 32)\n", ""))
_bug("attention_cdna", "barrier", "barrier at the end of a key tile dropped",
     ("        syncthreads()  # both waves are done with the tiles", "        pass  # both waves are done with the tiles"))
_bug("attention_cdna", "barrier", "barrier after the LDS writes dropped", (AC_VW + "        syncthreads()\n", AC_VW))
_bug("attention_cdna", "copy coordinates", "prefetch of the same tile again",
     ("fetch(kv, vv, kr, vrv, k0 + KT, hk, tid, D)", "fetch(kv, vv, kr, vrv, k0, hk, tid, D)"))
_bug("attention_cdna", "GQA head mapping", "KV head h % GQA", ("    hk = h // GQA\n", "    hk = h % GQA\n"))
_bug("attention_cdna", "softmax rescale", "new sum rescaled instead of the old",
     ("stats[1] = stats[1] * correction + total", "stats[1] = stats[1] + total * correction"))
_bug("attention_cdna", "loop bound", "diagonal tile skipped",
     ("for k0 in range(0, qi * BQ + BQ, KT):", "for k0 in range(0, qi * BQ, KT):"))
_bug("attention_cdna", "store rows", "output stored at the KV head", ("ov[query, h, 4 * n + g] = outv[n]", "ov[query, hk, 4 * n + g] = outv[n]"))
_bug("attention_cdna", "fragment rows", "both waves take the same queries",
     ("query = qi * BQ + warp_id() * 16 + col", "query = qi * BQ + col"))
_bug("attention_cdna", "operand swap", "V prefetched from K",
     ("vr[u, j] = amd.buffer_load(vv, (k0 + 4 * (e % QUADS) + j", "vr[u, j] = amd.buffer_load(kv, (k0 + 4 * (e % QUADS) + j"))
_same("attention_cdna", "reduction width", "max butterfly in the other order", (AC_PEAK16 + AC_PEAK32, AC_PEAK32 + AC_PEAK16))
_same("attention_cdna", "reduction width", "sum butterfly in the other order",
      ("        total = total + shfl_xor(total, 16)\n        total = total + shfl_xor(total, 32)\n",
       "        total = total + shfl_xor(total, 32)\n        total = total + shfl_xor(total, 16)\n"))
_same("attention_cdna", "fragment rows", "query from the lane as lane & 15",
      ("col = lane % 16  # this lane's query", "col = lane & 15  # this lane's query"))

# ---- more of the kinds the lists above hold few of --------------------------------------------
TM_REFILL_IF = "                if tid == 0:\n                    nv.mbarrier_wait(empty, PREVIOUS[s], phase)  # … and so is every other"
_bug("gemm_tma", "predicate", "first slices issued by a thread of each warpgroup",
     ("if tid == 0:  # the first STAGES - 1 slices", "if tid % 128 == 0:  # the first STAGES - 1 slices"))
_bug("gemm_tma", "predicate", "refills issued by a thread of each warpgroup",
     (TM_REFILL_IF, TM_REFILL_IF.replace("if tid == 0:", "if tid % 128 == 0:")))
_bug("gemm_sm90", "accumulator init", "accumulator not zeroed",
     ("    for v in static_range(MMA.values(\"c\")):\n        acc[v] = 0.0\n", ""))
_same("flash_attention", "accumulator init", "running sum starts at 1 (the first correction, exp2(-inf), zeroes it)",
      ("        row_sum[v1] = 0.0\n", "        row_sum[v1] = 1.0\n"))
_bug("attention_cdna", "accumulator init", "running sum never set", ("    stats[1] = 0.0\n", ""))
_bug("attention_cdna", "swizzle mismatch", "Vᵀ written unswizzled, read swizzled",
     ("sVw = sVt.view(vt_tile(D, 4), u64)", "sVw = sVt.view(Layout((D, KT // 4), (KT // 4, 1)), u64)"))
_same("transpose", "swizzle mismatch", "tile stored column-major on both sides",
      ("SMEM = ComposedLayout(Swizzle(5, 0, 5), 0, Layout((TILE, TILE), (TILE, 1)))",
       "SMEM = ComposedLayout(Swizzle(5, 0, 5), 0, Layout((TILE, TILE), (1, TILE)))"))
_same("attention_cdna", "swizzle mismatch", "K tile swizzled over fewer rows on both sides",
      ("return ComposedLayout(Swizzle(3, 0, r.bit_length() - 1), 0, rows)",
       "return ComposedLayout(Swizzle(2, 0, r.bit_length() - 1), 0, rows)"))
