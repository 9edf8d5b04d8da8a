"""Time chosen points of knowledge-base recipes on a task, each side by side with the task's
reference, through the harness's validator: the same checks (format, invariants, tests on fresh
inputs) and the same GPU timing as `argus optimize`, without the search. It answers "how fast is
this recipe at this point" before a search is run, and gives the priors in the entries figures.

    python benchmarks/recipe_points.py examples/tasks/gemm_bf16.py \\
        --point async-warpgroup-gemm:BM=256,BN=128 --point async-warpgroup-gemm:BM=128,BN=256 \\
        --entry my-variant.md:BM=256,BN=128 --out runs/points --json runs/points.json

A point is RECIPE:NAME=VALUE,... (parameters left out take the entry's defaults); `--entry
FILE.md:...` instantiates an entry file that is not installed (a variant being tried).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any


def _parse_point(text: str) -> tuple[str, dict[str, int]]:
    ident, _, assignments = text.partition(":")
    point: dict[str, int] = {}
    for item in filter(None, assignments.split(",")):
        name, sep, value = item.partition("=")
        if not sep or not value.strip().lstrip("-").isdigit():
            raise SystemExit(f"bad point {text!r}: write RECIPE:NAME=INT,... ({item!r} is not NAME=INT)")
        point[name.strip()] = int(value)
    if not ident:
        raise SystemExit(f"bad point {text!r}: it names no recipe")
    return ident, point


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("task", help="a task file, as for argus optimize")
    p.add_argument("--point", action="append", default=[], metavar="RECIPE:NAME=INT,...")
    p.add_argument("--entry", action="append", default=[], metavar="FILE.md:NAME=INT,...",
                   help="a point of a knowledge-base entry read from a file")
    p.add_argument("--out", type=Path, default=Path("runs/recipe-points"), help="where the candidates' folders go")
    p.add_argument("--json", type=Path, help="write the results here as JSON")
    args = p.parse_args(argv)

    from argus.harness.kb import KbRecipe
    from argus.harness.task import load_task
    from argus.harness.validator import Validator
    from argus.kb import KnowledgeBase
    from argus.kb.entry import read_entry

    task = load_task(args.task)
    validator = Validator(task, args.out)
    validator.probe()
    kb = KnowledgeBase.load()
    jobs: list[tuple[str, Any, dict[str, int]]] = []
    for text in args.point:
        ident, point = _parse_point(text)
        jobs.append((text, KbRecipe(kb.get(ident)), point))
    for text in args.entry:
        path, point = _parse_point(text)
        jobs.append((text, KbRecipe(read_entry(path, Path(path).read_text())), point))
    if not jobs:
        raise SystemExit("nothing to time: give --point or --entry")

    results = []
    for number, (label, recipe, point) in enumerate(jobs):
        full = {**recipe.defaults(), **point}
        started = time.perf_counter()
        v = validator.validate(recipe.instantiate(full), f"point-{number}", seed_base=100 * number)
        row: dict[str, Any] = {"point": label, "parameters": full, "validated": v.validated, "stage": v.stage,
                               "seconds": round(time.perf_counter() - started, 1)}
        profile = v.profile or {}
        if v.validated and v.time_s:
            row["time_us"] = v.time_s * 1e6
            if profile.get("reference_time_s"):
                row["reference_us"] = profile["reference_time_s"] * 1e6
                row["speedup"] = profile["reference_time_s"] / v.time_s
        else:
            row["feedback"] = v.feedback()[:2000]
        results.append(row)
        shown = (f"{row['time_us']:.1f} us, reference {row.get('reference_us', float('nan')):.1f} us, "
                 f"{row.get('speedup', float('nan')):.3f}x" if "time_us" in row else f"not validated ({v.stage})")
        print(f"{label} {full}: {shown}", flush=True)
        if "feedback" in row:
            print("  " + row["feedback"][:600].replace("\n", "\n  "), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"task": args.task, "device": validator.device, "results": results}, indent=1))
    return 0 if all(r["validated"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
