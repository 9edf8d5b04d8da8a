"""Mutation benchmark of the static tag checker over the example kernels.

Each mutant is a small edit of an example's source, of one of the kinds of mistake tag
assertions exist to catch (a wrong swizzle on one side, a dropped swizzle, a transposed read,
an off-by-one, a wrong thread→data mapping, a wrong MMA fragment mapping, a wrong pipeline
stage or a missing re-tag, bytes counted as elements), or an *equivalent* edit that changes
the code but not what it computes (the same swizzle change on both sides, another staging
order), which must not be flagged.

A mutant counts as caught only when the checker says `violated` and every witness it reports
replays on the interpreter with shadow tags (the checker only reports replayed witnesses).
The originals and the equivalent mutants must be `proved`: anything else is a false alarm
(violated) or an unknown. Times are the checker's alone (the kernel is compiled first; the
result caches are cold: every check is a fresh analysis).

    python benchmarks/verify_mutants.py [--repeat N] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"

WRONG_SWIZZLE = "WRONG = ComposedLayout(Swizzle(4, 0, 5), 0, Layout((TILE, TILE), (TILE, 1)))\n"
PLAIN = "PLAIN = Layout((TILE, TILE), (TILE, 1))\n"
SMEM_LINE = "SMEM = ComposedLayout(Swizzle(5, 0, 5), 0, Layout((TILE, TILE), (TILE, 1)))\n"
READ = "got[k] = tile[tx, ty + k * ROWS_PER_PASS]"
WRITE = "tile[ty + k * ROWS_PER_PASS, tx] = src[r, c]"


@dataclass(frozen=True)
class Mutant:
    example: str
    kernel: str
    operator: str
    edits: tuple[tuple[str, str], ...]
    equivalent: bool = False

    @property
    def name(self) -> str:
        return f"{self.example}:{self.operator}:{self.edits[-1][1].strip()[:60]}"


def _m(example: str, kernel: str, operator: str, *edits: tuple[str, str], equivalent: bool = False) -> Mutant:
    return Mutant(example, kernel, operator, edits, equivalent)


T, G, F = ("transpose", "transpose"), ("gemm", "gemm"), ("flash_attention", "attention")
S, P = ("gemm_sm90", "gemm_sm90"), ("gemm_tma", "gemm_tma")  # pipelined: checked across iterations
A = ("gemm_sm80", "gemm_sm80")  # cp.async stages and ldmatrix fragments
C = ("gemm_cdna", "gemm_cdna")  # AMD's wave-wide matrix atom
W = ("attention_cdna", "attention_cdna")  # products chained in registers, transposed
READ_A = "afv[q] = sAv[wm * 32 + lane % 32, 2 * q + lane // 32]"
PLACE_A = "sAh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[g]"
PLACE_B = "sBh[row, 4 * (part // 2) + 2 * g + part % 2] = halves[2 + g]"
COPY_A = "nv.cp_async(sAv, (1 - stage, e // 4, e % 4), av, (bm + e // 4, nxt + e % 4))"
COPY_B = "nv.cp_async(sBv, (1 - stage, e // 4, e % 4), bv, (bn + e // 4, nxt + e % 4))"
REFILL_A = "nv.tma_load(sA[PREVIOUS[s], :, :], a, (bm, refill), bars, PREVIOUS[s])"
REFILL_B = "nv.tma_load(sB[PREVIOUS[s], :, :], b, (bn, refill), bars, PREVIOUS[s])"
REFILLS = REFILL_A + "\n" + " " * 20 + REFILL_B

MUTANTS = [
    # pipelines: the register-staged Hopper GEMM and the TMA one
    _m(*S, "stage / re-tag", ("rb[i] = bv[bn + e // 8, nxt + e % 8]", "rb[i] = bv[bn + e // 8, kv + e % 8]")),
    _m(*S, "thread mapping", ("sBv[e // 8, e % 8] = rb[i]", "sBv[e // 8, (e + 1) % 8] = rb[i]")),
    _m(*S, "dropped swizzle", ("sB = make_shared(SWIZZLED, bf16)", "sB = make_shared(Layout((BN, BK), (BK, 1)), bf16)")),
    _m(*P, "stage / re-tag", (REFILL_B, REFILL_B.replace("(bn, refill)", "(bn, refill - BK)"))),
    _m(*A, "stage / re-tag", (COPY_B, COPY_B.replace("nxt + e % 4", "kv + e % 4"))),
    _m(*A, "fragment mapping", ("row + BM * (2 * ks + lane // 16)", "row + BM * (2 * ks + (lane // 8) % 2)")),
    _m(*A, "stage / re-tag", (COPY_A + "\n" + " " * 16 + COPY_B, COPY_B + "\n" + " " * 16 + COPY_A),
       equivalent=True),
    _m(*C, "fragment mapping", (READ_A, READ_A.replace("2 * q + lane // 32]", "2 * q + 1 - lane // 32]"))),
    _m(*C, "thread mapping", (PLACE_B, PLACE_B.replace("+ 2 * g +", "+ 2 * (1 - g) +"))),
    _m(*C, "thread mapping", (PLACE_A + "\n" + " " * 12 + PLACE_B, PLACE_B + "\n" + " " * 12 + PLACE_A),
       equivalent=True),
    _m(*W, "fragment mapping", ("kfv[0] = sK[key, 4 * j + g]", "kfv[0] = sK[key, 4 * j + (g + 1) % 4]")),
    _m(*W, "thread mapping", ("sVw[8 * (e // QUADS) + x, e % QUADS] = vtv[u, x]",
                              "sVw[8 * (e // QUADS) + x, (e + 1) % QUADS] = vtv[u, x]")),
    _m(*P, "fragment mapping", ("local_tile(sB[s, :, :], (BN, MMA.shape[2]), ks)",
                                    "local_tile(sB[s, :, :], (BN, MMA.shape[2]), (ks + 1) % (BK // MMA.shape[2]))")),
    _m(*P, "stage / re-tag", (REFILLS, REFILL_B + "\n" + " " * 20 + REFILL_A), equivalent=True),
    # wrong swizzle parameter on one side, and the same change on both sides (equivalent)
    _m(*T, "swizzle one side", (SMEM_LINE, SMEM_LINE + WRONG_SWIZZLE),
       (READ, "got[k] = tile.view(WRONG, f32)[tx, ty + k * ROWS_PER_PASS]")),
    _m(*T, "swizzle one side", (SMEM_LINE, SMEM_LINE + WRONG_SWIZZLE),
       (WRITE, "tile.view(WRONG, f32)[ty + k * ROWS_PER_PASS, tx] = src[r, c]")),
    _m(*T, "swizzle one side", (SMEM_LINE, SMEM_LINE.replace("Swizzle(5, 0, 5)", "Swizzle(4, 0, 5)")),
       equivalent=True),
    # dropped swizzle on one side, and on both (equivalent)
    _m(*T, "dropped swizzle", (SMEM_LINE, SMEM_LINE + PLAIN),
       (READ, "got[k] = tile.view(PLAIN, f32)[tx, ty + k * ROWS_PER_PASS]")),
    _m(*T, "dropped swizzle", (SMEM_LINE, SMEM_LINE + PLAIN),
       (WRITE, "tile.view(PLAIN, f32)[ty + k * ROWS_PER_PASS, tx] = src[r, c]")),
    _m(*T, "dropped swizzle", (SMEM_LINE, "SMEM = Layout((TILE, TILE), (TILE, 1))\n"), equivalent=True),
    # transposed read
    _m(*T, "transposed read", (READ, "got[k] = tile[ty + k * ROWS_PER_PASS, tx]")),
    _m(*G, "transposed read", ("afrag[mi, v] = sA[wm * 32 + mi * 16 + idx % 16, idx // 16]",
                               "afrag[mi, v] = sA[wm * 32 + mi * 16 + idx // 16, idx % 16]")),
    # off-by-one in an index or a loop bound
    _m(*F, "off-by-one", ("sVt[d, key] = v[kj * TILE + key, hk, d]", "sVt[d, key] = v[kj * TILE + key + 1, hk, d]")),
    _m(*F, "off-by-one", ("    for ks in static_range(D // 16):\n        for v2",
                          "    for ks in static_range(D // 16 - 1):\n        for v2")),
    _m(*G, "off-by-one", ("sB[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK]",
                          "sB[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK + 1]")),
    _m(*F, "off-by-one", ("vf[v0, v1] = sVt[n * 8 + t1, 2 * t0 + v0 + 8 * v1]",
                          "vf[v0, v1] = sVt[n * 8 + t1, 2 * t0 + v0 + 8 * v1 - 1 + 1]"), equivalent=True),
    # wrong thread -> data mapping, and a different but correct one (equivalent)
    _m(*F, "thread mapping", ("sK[key, d] = k[kj * TILE + key, hk, d]", "sK[key, d] = k[kj * TILE + key, hk, (d + 1) % D]")),
    _m(*G, "thread mapping", ("idx = MMA.a_layout(lane, v)", "idx = MMA.a_layout((lane + 1) % 32, v)")),
    _m(*F, "thread mapping", ("key = (lane + i * 32) // D\n            d = (lane + i * 32) % D",
                              "key = (lane + i * 32) % TILE\n            d = (lane + i * 32) // TILE"), equivalent=True),
    _m(*G, "thread mapping", ("wm = warp_id() // 2\n    wn = warp_id() % 2", "wm = warp_id() % 2\n    wn = warp_id() // 2"),
       equivalent=True),
    _m(*G, "thread mapping", ("e = tid + i * THREADS", "e = tid * (BM * BK // THREADS) + i"), equivalent=True),
    # wrong MMA fragment mapping
    _m(*F, "fragment mapping", ("kf[v0, v1, j] = sK[j * 8 + t1, ks * 16 + 2 * t0 + v0 + 8 * v1]",
                                "kf[v0, v1, j] = sK[j * 8 + t1, ks * 16 + 2 * t0 + v1 + 8 * v0]")),
    _m(*F, "fragment mapping", ("qf[v0, v1, v2, ks] = q[qi * TILE + t1 + 8 * v1, h, ks * 16 + 2 * t0 + v0 + 8 * v2]",
                                "qf[v0, v1, v2, ks] = q[qi * TILE + t1 + 8 * v2, h, ks * 16 + 2 * t0 + v0 + 8 * v1]")),
    _m(*G, "fragment mapping", ("idx = MMA.b_layout(lane, v)", "idx = MMA.b_layout(lane, (v + 2) % 4)")),
    # wrong pipeline stage, missing re-tag
    _m(*F, "stage / re-tag", ("sVt[d, key] = v[kj * TILE + key, hk, d]", "sVt[d, key] = v[(kj - 1) * TILE + key, hk, d]")),
    _m(*G, "stage / re-tag", ("sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]",
                              "sA[e // BK, e % BK] = a[bm + e // BK, k0 + BK + e % BK]")),
    _m(*F, "stage / re-tag", ("        tag(pf, lambda c, r, j: (kj * TILE + 8 * j + 2 * t0 + c, h // GQA),\n"
                             "            rows=lambda c, r, j: (qi * TILE + t1 + 8 * r, h))  # the query row each probability belongs to\n",
                             "")),
    # bytes counted as elements
    _m(*F, "bytes vs elements", ("qf[v0, v1, v2, ks] = q[qi * TILE + t1 + 8 * v1, h, ks * 16 + 2 * t0 + v0 + 8 * v2]",
                                 "qf[v0, v1, v2, ks] = q[qi * TILE + t1 + 8 * v1, h, ks * 32 + 2 * t0 + v0 + 8 * v2]")),
    _m(*G, "bytes vs elements", ("sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]",
                                 "sA[e // BK, e % BK] = a[bm + e // BK, 2 * k0 + e % BK]")),
    # hand-written, the same swap on both sides of the staging (equivalent)
    _m(*F, "thread mapping", ("sK[key, d] = k[kj * TILE + key, hk, d]", "sK[key, (d + 1) % D] = k[kj * TILE + key, hk, (d + 1) % D]"),
       equivalent=True),
]


def load(example: str, edits: tuple[tuple[str, str], ...], workdir: Path, tag: str) -> Any:
    source = (EXAMPLES / f"{example}.py").read_text()
    for old, new in edits:
        if old not in source:
            raise SystemExit(f"mutant edit does not apply to {example}.py: {old!r}")
        source = source.replace(old, new, 1)
    path = workdir / tag / f"{example}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"mutant_{tag}_{example}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(module: Any, kernel: str, *, first: bool = False) -> tuple[Any, float]:
    """Check a compiled kernel; `first`: as the first check of it (what every check of the
    kernel's IR shares — which ops matter, which are copies of one statement — found too)."""
    from argus.dsl.check.verification import verify_kernel

    k = getattr(module, kernel)
    constants = getattr(module, f"example_{kernel}")(np.random.default_rng(0)).constants
    compiled = k.specialize(**constants)
    if first:
        compiled = dataclasses.replace(compiled)  # the same IR, nothing kept from earlier checks
    start = time.perf_counter()
    result = verify_kernel(compiled, kernel)
    return result, time.perf_counter() - start


def clocks() -> dict[str, Any]:
    return {"machine": platform.machine(), "processor": platform.processor(), "python": platform.python_version()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="timed checks of each original kernel")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="argus-mutants-"))
    report: dict[str, Any] = {"host": clocks(), "originals": {}, "mutants": [], "operators": {}}

    print("originals (must be proved; time of the check alone, median of fresh analyses; 'first': a kernel's "
          "first check, which also finds what all its checks share):")
    for example, kernel in (T, G, F, S, P, A, C, W):
        module = load(example, (), workdir, "original")
        times, firsts, verdicts = [], [], set()
        for _ in range(args.repeat):  # alternated, so that both see the same machine
            result, seconds = check(module, kernel)
            times.append(seconds)
            verdicts.add(result.verdict.value)
            result, seconds = check(module, kernel, first=True)
            firsts.append(seconds)
            verdicts.add(result.verdict.value)
        median, first = statistics.median(times) * 1000, statistics.median(firsts) * 1000
        report["originals"][example] = {"verdicts": sorted(verdicts), "median_ms": round(median, 2),
                                        "min_ms": round(min(times) * 1000, 2), "first_median_ms": round(first, 2)}
        print(f"  {example:16s} {'/'.join(sorted(verdicts)):8s} median {median:7.1f} ms  min {min(times) * 1000:7.1f} ms"
              f"  first {first:7.1f} ms")

    print("mutants:")
    for i, m in enumerate(MUTANTS):
        module = load(m.example, m.edits, workdir, f"m{i}")
        result, seconds = check(module, m.kernel)
        verdict = result.verdict.value
        notes = [str(w.get("replayed", "")) for w in result.witnesses]
        # caught: every witness replays, and one was found statically (not only a fault the
        # interpreter met first while replaying, which measures the interpreter, not the checker)
        replayed = verdict == "violated" and all(n.startswith(("reproduced", "the interpreter")) for n in notes) \
            and any(n.startswith(("reproduced", "the interpreter faults the same way")) for n in notes)
        outcome = ("proved" if verdict == "proved" else "false alarm" if verdict == "violated" else "unknown") \
            if m.equivalent else ("caught" if replayed else "missed" if verdict == "proved" else verdict)
        row = {"example": m.example, "operator": m.operator, "equivalent": m.equivalent, "edit": m.edits[-1][1].strip(),
               "verdict": verdict, "outcome": outcome, "ms": round(seconds * 1000, 1),
               "reason": result.reason if verdict != "violated" else "",
               "witness": result.witnesses[0] if result.witnesses else None}
        report["mutants"].append(row)
        mark = "equiv " if m.equivalent else "      "
        print(f"  {mark}{m.example:16s} {m.operator:18s} {outcome:12s} {seconds * 1000:7.1f} ms  {row['edit'][:60]}")
        if outcome in ("unknown", "missed", "false alarm"):
            print(f"      {result.reason[:300]}")

    print("per operator:")
    operators: dict[str, dict[str, int]] = {}
    for row in report["mutants"]:
        o = operators.setdefault(row["operator"], {"mutants": 0, "caught": 0, "equivalent": 0, "false_alarms": 0,
                                                   "unknown": 0})
        if row["equivalent"]:
            o["equivalent"] += 1
            o["false_alarms"] += row["outcome"] == "false alarm"
        else:
            o["mutants"] += 1
            o["caught"] += row["outcome"] == "caught"
        o["unknown"] += row["verdict"] == "unknown"
    for name, o in operators.items():
        recall = o["caught"] / o["mutants"] if o["mutants"] else float("nan")
        print(f"  {name:18s} recall {o['caught']}/{o['mutants']} ({recall:.0%})  equivalent {o['equivalent']}, "
              f"false alarms {o['false_alarms']}, unknown {o['unknown']}")
    report["operators"] = operators
    caught = sum(o["caught"] for o in operators.values())
    total = sum(o["mutants"] for o in operators.values())
    false_alarms = sum(o["false_alarms"] for o in operators.values()) + sum(
        "violated" in v["verdicts"] for v in report["originals"].values())
    report["summary"] = {"recall": caught / total, "caught": caught, "mutants": total, "false_alarms": false_alarms}
    print(f"recall {caught}/{total} = {caught / total:.1%}; false alarms {false_alarms}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
