"""How long the reference interpreter takes on the example kernels (CPU only).

Targets (2-core machine): GEMM at 256^3 under 5 s, flash attention (batch 1, 2 heads, seq 256,
d 64) under 10 s; the TMA and warp-specialized GEMMs at 128x128x512 within 2x of the lockstep
interpreter's time on gemm_tma (the one before warps were scheduled independently, 8cc239a~1).
Each kernel is compiled first (timed apart), then launched on fresh random inputs and checked
against its float64 reference.

To compare two versions side by side, `--against REV` checks REV out into a temporary git
worktree and runs every case there and here: in each round, each case in two new interpreters
one right after the other (one whose PYTHONPATH names the worktree's packages, one naming this
tree's), alternating which goes first. The table gives each side's median launch time over the
rounds, wall clock and the process's CPU time (less moved by other work on a shared machine),
and the median of the rounds' ratios (here over REV). A case REV cannot run (gemm_ws needs
independently scheduled warps) is "n/a" there. `--schedule` picks the schedule of this tree's
launches (REV's interpreter may have none).

Run:  hatch run bench-interp       (writes benchmarks/results/interpreter-<date>.json)
      python benchmarks/interpreter_bench.py --against 8cc239a~1 --rounds 3 [--cases gemm_tma gemm_ws]
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

#: label -> (example file, kernel name, sizes passed to example_<kernel>).
CASES: dict[str, tuple[str, str, dict[str, int]]] = {
    "gemm 256x256x256 bf16->f32": ("gemm", "gemm", {"m": 256, "n": 256, "k": 256}),
    "flash attention causal GQA b1 h2 s256 d64": ("flash_attention", "attention", {"seq": 256, "heads": 2, "kv_heads": 1, "d": 64}),
    "softmax 256x1024 f32": ("softmax", "softmax", {"rows": 256, "cols": 1024}),
    "transpose 1024x1024 f32": ("transpose", "transpose", {"rows": 1024, "cols": 1024}),
    "gemm_tma 128x128x512": ("gemm_tma", "gemm_tma", {"m": 128, "n": 128, "k": 512}),
    "gemm_ws 128x128x512": ("gemm_ws", "gemm_ws", {"m": 128, "n": 128, "k": 512}),
}


def load(examples: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", examples / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(examples))  # an example may import another (gemm_ws: gemm_tma's pipeline)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(examples))
    return module


def run_case(examples: Path, label: str, schedule: str | None) -> dict[str, Any]:
    """Compile and launch one case; a failure is a row with its error, not an exception, so that
    an older tree that cannot run a kernel still times the others."""
    file, kernel_name, size = CASES[label]
    try:
        module = load(examples, file)
        k = getattr(module, kernel_name)
        problem = getattr(module, f"example_{kernel_name}")(np.random.default_rng(0), *size.values())
        t0 = time.perf_counter()
        k.compile(**problem.constants)
        compile_s = time.perf_counter() - t0
        if schedule is not None:
            from argus.dsl.machine import using
            scope = using(schedule)
        else:
            scope = nullcontext()
        with scope:
            t0, c0 = time.perf_counter(), time.process_time()
            k[problem.grid](*problem.args, **problem.constants)
            run_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
        error = max(problem.check().values())
    except Exception as err:  # noqa: BLE001 - reported as the case's result
        line = str(err).splitlines()[0] if str(err) else ""
        return {"case": label, "error": f"{type(err).__name__}: {line}"[:300],
                "traceback": traceback.format_exc(limit=3)}
    return {"case": label, "compile_s": compile_s, "run_s": run_s, "cpu_s": cpu_s, "max_abs_error": float(error)}


def machine() -> dict[str, Any]:
    return {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()}


def worker(args: argparse.Namespace) -> None:
    """One side of a side-by-side round: run the cases in this interpreter, print JSON."""
    import argus.dsl
    where = Path(argus.dsl.__file__).resolve()
    if args.expect_root is not None and args.expect_root.resolve() not in where.parents:
        raise SystemExit(f"--worker: argus.dsl was imported from {where}, not from {args.expect_root}")
    rows = [run_case(args.examples, label, args.schedule) for label in args.cases]
    print(json.dumps({"rows": rows, "argus_dsl": str(where)}))


def packages_path(tree: Path) -> str:
    return os.pathsep.join(str(p) for p in sorted((tree / "packages").glob("*/src")))


def side(tree: Path, cases: list[str], schedule: str | None) -> dict[str, Any]:
    """Run the cases in a new interpreter importing `tree`'s packages and examples."""
    env = {**os.environ, "PYTHONPATH": packages_path(tree), "ARGUS_CACHE_DIR": "off"}
    env.pop("ARGUS_SCHEDULE", None)
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", "--examples", str(tree / "examples"),
            "--expect-root", str(tree), "--cases", *cases]
    if schedule is not None:
        argv += ["--schedule", schedule]
    load_before = os.getloadavg()[0]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=tree)
    if done.returncode:
        raise SystemExit(f"the run in {tree} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out["load"] = load_before
    return out


def resolve(rev: str) -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise ValueError(f"--against: {rev!r} is not a revision of {ROOT}")
    return done.stdout.strip()


def against(rev: str, cases: list[str], rounds: int, schedule: str | None) -> dict[str, Any]:
    """Alternate rounds here and in a worktree of `rev`; the worktree is removed afterwards."""
    commit = resolve(rev)
    with tempfile.TemporaryDirectory(prefix="argus-bench-") as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), commit],
                       check=True, capture_output=True, text=True)
        try:
            history: list[dict[str, Any]] = []
            for r in range(rounds):
                order = [("here", ROOT, schedule), ("there", tree, None)]
                if r % 2:
                    order.reverse()
                print(f"round {r + 1}/{rounds} ({order[0][0]} first)", flush=True)
                got: dict[str, Any] = {"here": {"rows": [], "load": []}, "there": {"rows": [], "load": []}}
                for label in cases:  # the two sides of a case one right after the other
                    for name, path, sched in order:
                        one = side(path, [label], sched)
                        got[name]["rows"] += one["rows"]
                        got[name]["load"].append(one["load"])
                    print("  " + row_text(label, [got["here"]], [got["there"]]) +
                          f"   (load average {got['here']['load'][-1]:.1f})", flush=True)
                history.append(got)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)
            subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], check=False, capture_output=True)
    return {"against": rev, "commit": commit, "schedule": schedule or "round-robin", "rounds": history}


def runs(results: list[dict[str, Any]], label: str, key: str) -> tuple[list[float] | None, str | None]:
    """The case's `key` figure in each result (None and the error where it failed)."""
    rows = [next(row for row in res["rows"] if row["case"] == label) for res in results]
    failed = [row["error"] for row in rows if "error" in row]
    if failed:
        return None, failed[0]
    return [row[key] for row in rows], None


def median_run(results: list[dict[str, Any]], label: str) -> tuple[float | None, str | None]:
    got, err = runs(results, label, "run_s")
    return (None, err) if got is None else (statistics.median(got), None)


def row_text(label: str, here: list[dict[str, Any]], there: list[dict[str, Any]]) -> str:
    """Medians of wall-clock and CPU launch time on each side, and the median of the rounds'
    ratios (here over there), which pairs figures taken one right after the other: on a
    shared machine the load moves between rounds more than between the two sides of one."""
    a, a_err = runs(here, label, "run_s")
    if a is None:
        return f"{label:44s} here FAILED: {a_err}"
    a_cpu, _ = runs(here, label, "cpu_s")
    b, _ = runs(there, label, "run_s")
    b_cpu, _ = runs(there, label, "cpu_s")
    text = f"{label:44s} here {statistics.median(a):6.2f} s (cpu {statistics.median(a_cpu):6.2f})"
    if b is None:
        return text + "   there      n/a"
    wall = statistics.median(x / y for x, y in zip(a, b))
    cpu = statistics.median(x / y for x, y in zip(a_cpu, b_cpu))
    return text + (f"   there {statistics.median(b):6.2f} s (cpu {statistics.median(b_cpu):6.2f})"
                   f"   ratio {wall:4.2f} (cpu {cpu:4.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, default=None)
    parser.add_argument("--cases", nargs="+", default=None, metavar="NAME",
                        help="cases whose label starts with NAME (default: all)")
    parser.add_argument("--against", metavar="REV", help="a revision to compare with, side by side")
    parser.add_argument("--rounds", type=int, default=3, help="rounds with --against (default 3)")
    parser.add_argument("--schedule", default=None, help="this tree's schedule: round-robin, delay-async, random:SEED")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--examples", type=Path, default=ROOT / "examples", help=argparse.SUPPRESS)
    parser.add_argument("--expect-root", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    if args.rounds < 1:
        parser.error(f"--rounds: at least 1 round, got {args.rounds}")
    if args.cases is None:
        cases = list(CASES)
    else:
        cases = []
        for name in args.cases:
            matched = [label for label in CASES if label.startswith(name) and label not in cases]
            if not matched and not any(label.startswith(name) for label in CASES):
                parser.error(f"--cases: no case starts with {name!r}; the cases are: {', '.join(CASES)}")
            cases += matched
    if args.schedule is not None:
        from argus.dsl.machine import Schedule
        try:
            args.schedule = str(Schedule.parse(args.schedule))
        except ValueError as err:
            parser.error(f"--schedule: {err}")
    os.environ.setdefault("ARGUS_CACHE_DIR", "off")
    report: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "machine": machine()}
    failed = False
    if args.against is not None:
        try:
            compared = against(args.against, cases, args.rounds, args.schedule)
        except ValueError as err:
            parser.error(str(err))
        here = [got["here"] for got in compared["rounds"]]
        there = [got["there"] for got in compared["rounds"]]
        print(f"median of {args.rounds} round(s), launch time (wall clock, and the process's CPU time); ratio: median of "
              f"the rounds' ratios, here ({compared['schedule']}) over {args.against} ({compared['commit'][:10]})")
        for label in cases:
            print("  " + row_text(label, here, there))
            failed |= median_run(here, label)[1] is not None
        report.update(compared)
        name = f"interpreter-against-{dt.date.today().isoformat()}.json"
    else:
        rows = []
        for label in cases:
            row = run_case(ROOT / "examples", label, args.schedule)
            rows.append(row)
            if "error" in row:
                failed = True
                print(f"{label:44s} FAILED: {row['error']}", flush=True)
                continue
            print(f"{label:44s} compile {row['compile_s']:6.2f} s   run {row['run_s']:6.2f} s "
                  f"(cpu {row['cpu_s']:6.2f} s)   "
                  f"max error {row['max_abs_error']:.2g}", flush=True)
        report.update({"schedule": args.schedule or "round-robin", "cases": rows})
        name = f"interpreter-{dt.date.today().isoformat()}.json"
    out = args.output or Path(__file__).parent / "results" / name
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")
    if failed:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
