"""Held-out bug benchmark of the static checker: realistic bugs injected into every example.

The cases (benchmarks/bug_bench_cases.py) are edits a kernel engineer makes by mistake, of kinds
kept apart from benchmarks/verify_mutants.py's: barriers, pipeline stages and phases, the bytes a
barrier expects, copy coordinates, bounds masks, loop bounds, the causal mask, fragment and store
rows, operand swaps, softmax rescales, reduction widths, GQA head mappings. Each case is first
confirmed on the interpreter (the mutated kernel on random inputs of the example's problem,
under the round-robin, delay-async and random:1 schedules): a bug must give a wrong output or a
fault under one of them, an equivalent rewrite the right output and no fault under all of them.
A candidate that fails its confirmation is reported and left out of the figures.

Then the static checker checks each confirmed case, as benchmarks/verify_mutants.py does (the
kernel compiled first, a fresh analysis, only the checker timed). A bug counts as flagged when
the checker says `violated` and every witness replays on the interpreter, and as caught
statically when one of them was found by the static analysis (not only by running the launch
the checker explores hand-off timings with); both recalls are reported. An equivalent rewrite
must not be `violated` (a false alarm) and should be `proved` (or `nothing to prove` for an
example that states no claim).

    python benchmarks/bug_bench.py [--json FILE] [--only KIND] [--example NAME] [--jobs N]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "examples")]  # the cases, verify_mutants, and gemm_ws's import of gemm_tma

from bug_bench_cases import CASES, Case  # noqa: E402

SCHEDULES = ("round-robin", "delay-async", "random:1")
#: Seconds one case may take (its interpreter runs and its check) before it is called a timeout.
CASE_SECONDS = 600


def misapplied(case: Case) -> str | None:
    """Why the case's edits do not apply to its example (each search text must occur once, in
    turn), or None."""
    source = (HERE.parent / "examples" / f"{case.example}.py").read_text()
    for old, new in case.edits:
        if source.count(old) != 1:
            return (f"{case.name}: the edit's search text occurs {source.count(old)} times in "
                    f"examples/{case.example}.py, not once: {old!r}")
        source = source.replace(old, new, 1)
    return None


def mutated(case: Case, workdir: Path, tag: str) -> Any:
    """The example module with the case's edits applied (each search text must occur once)."""
    from verify_mutants import load

    why = misapplied(case)
    if why is not None:
        raise ValueError(why)
    return load(case.example, case.edits, workdir, tag)


def run_once(module: Any, case: Case, schedule: str) -> str:
    """One interpreter launch of the case's problem: '' when the output matches the reference,
    else what went wrong (a fault's kind and message, or the first mismatch)."""
    from argus.dsl import ArgusError, KernelFault
    from argus.dsl.machine.schedule import using

    problem = getattr(module, f"example_{case.kernel}")(np.random.default_rng(0), **dict(case.sizes))
    try:
        with using(schedule):
            getattr(module, case.kernel)[problem.grid](*problem.args, **problem.constants)
    except KernelFault as fault:
        return f"fault {fault.kind}: {str(fault)[:200]}"
    except ArgusError as err:
        return f"error {type(err).__name__}: {str(err)[:200]}"
    try:
        problem.check()
    except AssertionError as err:
        return f"wrong output: {str(err)[:200]}"
    return ""


def confirm(module: Any, case: Case) -> tuple[bool, str, float]:
    """Whether the interpreter agrees with the case's label (a bug: wrong under some schedule;
    equivalent: right under all), what it saw, and the seconds it took."""
    start = time.perf_counter()
    seen = ""
    for schedule in SCHEDULES:
        got = run_once(module, case, schedule)
        if got.startswith("error"):  # the edit does not even compile or launch: no bug of the kind meant
            return False, f"{schedule}: {got}", time.perf_counter() - start
        if got:
            seen = f"{schedule}: {got}"
            break
    return (not seen) == case.equivalent, seen or "right output, no fault under " + ", ".join(SCHEDULES), \
        time.perf_counter() - start


#: How the checker's replay notes begin: a static finding the interpreter reproduced, or a fault
#: the interpreter met (first while replaying a static finding, or running the launch the checker
#: explores the hand-off timing with), or a shadow-tag finding of such a run.
STATIC = ("reproduced", "the interpreter faults the same way")
REPLAYED = ("reproduced", "the interpreter", "shadow tags show it")


def outcome(case: Case, result: Any) -> str:
    """A bug: `caught` (violated, every witness replayed, one found statically), `caught by
    exploration` (violated, every witness replayed, none found statically: the checker ran the
    launch it explores schedules with and met the fault), `missed` (proved or nothing to prove),
    or the verdict. An equivalent: `false alarm` (violated), `unknown`, or `ok`."""
    verdict = result.verdict.value
    notes = [str(w.get("replayed", "")) for w in result.witnesses]
    if case.equivalent:
        return "false alarm" if verdict == "violated" else "unknown" if verdict == "unknown" else "ok"
    if verdict == "violated" and notes and all(n.startswith(REPLAYED) for n in notes):
        return "caught" if any(n.startswith(STATIC) for n in notes) else "caught by exploration"
    return "missed" if verdict in ("proved", "nothing to prove") else verdict


def _timeout(signum: int, frame: Any) -> None:
    raise TimeoutError(f"the case ran past {CASE_SECONDS} s")


def run_case(index: int, check: bool = True) -> dict[str, Any]:
    """Confirm case `index` on the interpreter, then (if confirmed) check it: one row of the report."""
    from argus.dsl import ArgusError
    from verify_mutants import check as verify

    case = CASES[index]
    row: dict[str, Any] = {"index": index, "example": case.example, "kind": case.kind, "note": case.note,
                           "equivalent": case.equivalent, "edit": case.edits[-1][1].strip()[:160]}
    signal.signal(signal.SIGALRM, _timeout)
    signal.alarm(CASE_SECONDS)
    try:
        with tempfile.TemporaryDirectory(prefix="argus-bug-bench-") as tmp:
            module = mutated(case, Path(tmp), f"c{index}")
            ok, seen, seconds = confirm(module, case)
            row.update(confirmed=ok, interpreter=seen, interpreter_s=round(seconds, 2))
            if not (ok and check):
                return row
            try:
                result, seconds = verify(module, case.kernel)
            except ArgusError as err:  # the checker refuses the kernel: no verdict
                row.update(verdict="refused", outcome="unknown" if case.equivalent else "refused",
                           check_ms=None, reason=str(err)[:400], witness=None)
                return row
            row.update(verdict=result.verdict.value, outcome=outcome(case, result), check_ms=round(seconds * 1000, 1),
                       reason=result.reason[:400] if result.verdict.value != "violated" else "",
                       witness=result.witnesses[0] if result.witnesses else None)
    except TimeoutError as err:
        row.update(confirmed=row.get("confirmed", False), verdict="timeout", outcome="timeout", reason=str(err))
    finally:
        signal.alarm(0)
    return row


def tally(rows: Iterable[dict[str, Any]], key: str) -> dict[str, dict[str, int]]:
    """Per value of `key` (the kind or the example): bugs, caught (statically), flagged (caught
statically or by exploration), equivalents, false alarms, unknowns."""
    out: dict[str, dict[str, int]] = {}
    for row in rows:
        if not row.get("confirmed"):
            continue
        t = out.setdefault(row[key], {"bugs": 0, "caught": 0, "flagged": 0, "equivalents": 0, "false_alarms": 0,
                                      "unknown": 0})
        if row["equivalent"]:
            t["equivalents"] += 1
            t["false_alarms"] += row.get("outcome") == "false alarm"
        else:
            t["bugs"] += 1
            t["caught"] += row.get("outcome") == "caught"
            t["flagged"] += row.get("outcome") in ("caught", "caught by exploration")
        t["unknown"] += row.get("verdict") in ("unknown", "refused", "timeout")
    return out


def _print_tally(title: str, table: dict[str, dict[str, int]]) -> None:
    print(title)
    for name, t in sorted(table.items(), key=lambda item: (-item[1]["bugs"], item[0])):
        recall = f"{t['flagged']}/{t['bugs']} ({t['flagged'] / t['bugs']:.0%})" if t["bugs"] else "-"
        static = f"{t['caught']}/{t['bugs']}" if t["bugs"] else "-"
        print(f"  {name:18s} flagged {recall:14s} statically {static:7s} equivalents {t['equivalents']}, "
              f"false alarms {t['false_alarms']}, unknown {t['unknown']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--only", help="only the cases of this kind (e.g. 'barrier', 'phase parity')")
    parser.add_argument("--example", help="only the cases of this example (e.g. gemm_ws)")
    parser.add_argument("--jobs", type=int, default=2, help="cases run at once, each in its own process")
    parser.add_argument("--confirm-only", action="store_true", help="confirm the cases on the interpreter, no checks")
    args = parser.parse_args(argv)
    kinds = {c.kind for c in CASES}
    if args.only and args.only not in kinds:
        parser.error(f"no cases of kind {args.only!r}; the kinds are: {', '.join(sorted(kinds))}")
    chosen = [i for i, c in enumerate(CASES) if (not args.only or c.kind == args.only)
              and (not args.example or c.example == args.example)]
    if not chosen:
        parser.error(f"no cases of example {args.example!r}")
    os.environ["ARGUS_VERIFY"] = "0"  # launches run on the interpreter alone; the checker is asked separately
    os.environ["ARGUS_CACHE_DIR"] = "off"  # every check a fresh analysis
    wrong = [why for why in (misapplied(CASES[i]) for i in chosen) if why is not None]
    if wrong:  # (before any worker starts: one that raises would leave the pool waiting)
        parser.error("; ".join(wrong))
    print(f"{len(chosen)} cases ({sum(not CASES[i].equivalent for i in chosen)} bugs), {args.jobs} at a time:")
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_case, i, not args.confirm_only) for i in chosen]
        for n, future in enumerate(futures, 1):
            row = future.result()
            rows.append(row)
            mark = "equiv" if row["equivalent"] else "bug  "
            status = row.get("outcome", "") if row.get("confirmed") else "NOT CONFIRMED"
            ms = f"{row['check_ms']:8.1f} ms" if row.get("check_ms") is not None else " " * 11
            print(f"  [{n:3d}/{len(chosen)}] {mark} {row['example']:15s} {row['kind']:17s} {status:20s} {ms}  "
                  f"{row['note'][:55]}", flush=True)
            if not row.get("confirmed") or row.get("outcome") not in ("caught", "caught by exploration", "ok"):
                print(f"        interpreter: {row.get('interpreter', '')[:160]}")
                if row.get("reason"):
                    print(f"        checker: {row['reason'][:200]}")
    by_kind, by_example = tally(rows, "kind"), tally(rows, "example")
    if not args.confirm_only:
        _print_tally("per bug kind:", by_kind)
        _print_tally("per example:", by_example)
    bugs = [r for r in rows if r.get("confirmed") and not r["equivalent"]]
    equivalents = [r for r in rows if r.get("confirmed") and r["equivalent"]]
    caught = sum(r.get("outcome") == "caught" for r in bugs)
    flagged = sum(r.get("outcome") in ("caught", "caught by exploration") for r in bugs)
    summary = {
        "bugs": len(bugs), "flagged": flagged, "recall": flagged / len(bugs) if bugs else None,
        "caught_statically": caught, "static_recall": caught / len(bugs) if bugs else None,
        "equivalents": len(equivalents), "false_alarms": sum(r.get("outcome") == "false alarm" for r in equivalents),
        "equivalents_proved": sum(r.get("verdict") == "proved" for r in equivalents),
        "unknown": sum(r.get("verdict") in ("unknown", "refused", "timeout") for r in rows if r.get("confirmed")),
        "unconfirmed": [f"{CASES[r['index']].name}: {r.get('interpreter', '')}" for r in rows if not r.get("confirmed")],
        "seconds": round(time.perf_counter() - start, 1),
        "check_seconds": round(sum(r.get("check_ms") or 0 for r in rows) / 1000, 1),
    }
    print(f"confirmed bugs {len(bugs)}, equivalents {len(equivalents)}, unconfirmed {len(summary['unconfirmed'])}")
    if not args.confirm_only and bugs:
        print(f"recall {flagged}/{len(bugs)} = {flagged / len(bugs):.1%} flagged with replayed witnesses, "
              f"{caught}/{len(bugs)} = {caught / len(bugs):.1%} found statically; false alarms {summary['false_alarms']} of "
              f"{len(equivalents)} equivalents ({summary['equivalents_proved']} proved); unknown {summary['unknown']}; "
              f"checker {summary['check_seconds']} s, all {summary['seconds']} s")
    if args.json:
        args.json.write_text(json.dumps({"summary": summary, "kinds": by_kind, "examples": by_example, "cases": rows},
                                        indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
