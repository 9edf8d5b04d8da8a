"""A long differential fuzz of what kernels mean: the static tag checker against the interpreter
with shadow tags, on random well-formed kernels (`argus.dsl.fuzzing`).

Kernel i is drawn from `random.Random(seed + i)`, so any case reruns alone with
``--seed SEED+i --kernels 1``. For each the checker's verdict is held to the interpreter's
runs: a proof that a launch refutes (or faults in a way the checker looks for), a witness that
was not replayed or does not reproduce, runners that disagree, and crashes of Argus itself are
disagreements, printed with the kernel's source and its launch. The continuous tests run about
two hundred kernels; this runs as many as asked.

With `--schedules N`, each launch also runs under N schedules of the interpreter's warps
(delay-async, then random ones; the default run is round-robin), held to the same rules: a
proof must hold under every schedule, and fault-free runs must leave the same outputs.

With `--gpu`, each launch also runs compiled for the NVIDIA GPU (`GpuRunner`, the NVPTX
backend), where the interpreter ran it without a fault: the GPU must run it and leave the
interpreter's outputs (integers bit for bit, floating-point values within 1e-4). The summary
gives, per oracle, the launches it ran and the disagreements it had.

Run:  python benchmarks/fuzz_semantics.py --kernels 2000 [--seed 0] [--family tile|mma] [--schedules N] [--gpu]
                                          [--solver-ms MS] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import time
from collections import Counter
from typing import Any

from argus.dsl.errors import ArgusError
from argus.dsl.fuzzing import FAMILIES, GpuRunner, check_case, draw_kernel, runner_within, shadow_runner
from argus.dsl.machine import schedules, using


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", type=int, default=500, metavar="N", help="kernels to draw (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first kernel (default 0)")
    parser.add_argument("--family", choices=FAMILIES, help="draw only this kind of kernel")
    parser.add_argument("--schedules", type=int, default=0, metavar="N",
                        help="also run each launch under N more schedules of the warps (default 0)")
    parser.add_argument("--gpu", action="store_true",
                        help="also run each launch the interpreter ran without a fault on the NVIDIA GPU")
    parser.add_argument("--solver-ms", type=int, metavar="MS",
                        help="bound each of the checker's solver queries (an answer that runs out is unknown)")
    parser.add_argument("--json", metavar="FILE", help="also write the summary and every disagreement as JSON")
    args = parser.parse_args(argv)
    if args.kernels < 1:
        parser.error("--kernels must be a positive number")
    if args.schedules < 0:
        parser.error("--schedules must be 0 or more")
    if args.solver_ms is not None and args.solver_ms < 1:
        parser.error("--solver-ms must be a positive number")
    extra = schedules(args.schedules + 1, args.seed)[1:]  # round-robin is the default run's
    runners: list[Any] = [shadow_runner, *(runner_within(lambda s=s: using(s)) for s in extra)]
    names = ["interpreter round-robin", *(f"interpreter {s}" for s in extra)]
    gpu = None
    if args.gpu:
        try:
            gpu = GpuRunner()
        except ArgusError as err:
            parser.error(str(err))
        runners.append(gpu)
        names.append(f"GPU {_gpu_name()} ({gpu.target.name})")
    launches = [0] * len(runners)
    faulted = [0] * len(runners)
    gpu_counts: Counter[str] = Counter()
    by_oracle: Counter[str] = Counter()
    verdicts: Counter[str] = Counter()
    by_mutation: dict[str, Counter[str]] = {}
    kinds: Counter[str] = Counter()
    disagreements: list[dict[str, Any]] = []
    slowest = (0.0, args.seed)
    started = time.perf_counter()
    for i in range(args.kernels):
        seed = args.seed + i
        case = draw_kernel(random.Random(seed), args.family)
        report = check_case(case, runners, solver_timeout_ms=args.solver_ms)
        verdict = report.verdict or "not checked"
        verdicts[verdict] += 1
        for outcomes in report.runs:
            for index, outcome in enumerate(outcomes):
                launches[index] += outcome.skipped is None
                faulted[index] += outcome.fault is not None
        gpu_counts.update(compared=report.device_runs, exact=report.device_exact, skipped=report.device_skipped)
        for mutation in case.mutations or ("none",):
            by_mutation.setdefault(mutation, Counter())[verdict] += 1
        slowest = max(slowest, (report.seconds, seed))
        for finding in report.findings:
            kinds[finding.kind] += 1
            by_oracle[_oracle(finding.kind)] += 1
            disagreements.append({"seed": seed, "kind": finding.kind, "message": finding.message,
                                  "source": case.source, "launches": [launch.text() for launch in case.launches],
                                  "mutations": list(case.mutations)})
            print(f"--- seed {seed}: {finding.text()}\n", flush=True)
        if gpu is not None and gpu.broken is not None:
            print(f"the GPU takes no more work after seed {seed}: {gpu.broken}", file=sys.stderr)
            args.kernels = i + 1
            break
        if (i + 1) % 100 == 0:
            print(f"{i + 1} kernels, {len(disagreements)} disagreement(s), {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    print(f"kernels run: {args.kernels} (seeds {args.seed}..{args.seed + args.kernels - 1}) in {seconds:.1f} s "
          f"({1000 * seconds / args.kernels:.0f} ms each, slowest {1000 * slowest[0]:.0f} ms: seed {slowest[1]})")
    print("verdicts: " + ", ".join(f"{v} {n}" for v, n in verdicts.most_common()))
    for mutation, counts in sorted(by_mutation.items()):
        print(f"  {mutation:24} " + ", ".join(f"{v} {n}" for v, n in counts.most_common()))
    print(f"disagreements: {len(disagreements)}" + (" (" + ", ".join(f"{k} {n}" for k, n in kinds.items()) + ")"
                                                   if kinds else ""))
    checked = sum(verdicts[v] for v in verdicts if v not in ("refused", "not checked"))
    print(f"oracles ({args.kernels} kernels):")
    print(f"  {'checker':34} {checked} verdicts; disagreements with the runs: {by_oracle['checker']}")
    for index, name in enumerate(names):
        if index == len(names) - 1 and gpu is not None:
            print(f"  {name:34} {launches[index]} launches run ({gpu_counts['skipped']} not run: the interpreter "
                  f"faulted), {gpu_counts['compared']} compared, {gpu_counts['exact']} bit for bit; "
                  f"disagreements {by_oracle['gpu']}")
        else:
            print(f"  {name:34} {launches[index]} launches run, {faulted[index]} faulted")
    print(f"  {'interpreters among themselves':34} disagreements {by_oracle['interpreters']}")
    if args.json:
        summary = {"kernels": args.kernels, "seed": args.seed, "family": args.family, "seconds": round(seconds, 2),
                   "schedules": ["round-robin", *(str(s) for s in extra)],
                   "verdicts": dict(verdicts), "by_mutation": {m: dict(c) for m, c in by_mutation.items()},
                   "oracles": {"names": ["checker", *names], "launches": launches, "faulted": faulted,
                               "gpu": dict(gpu_counts), "disagreements": dict(by_oracle)},
                   "disagreements": disagreements,
                   "machine": {"python": platform.python_version(), "platform": platform.platform(),
                               "processor": platform.machine()}}
        with open(args.json, "w") as out:
            json.dump(summary, out, indent=2)
    return 1 if disagreements else 0


def _oracle(kind: str) -> str:
    """Which oracle a finding's kind holds to account."""
    if kind.startswith("device-"):
        return "gpu"
    if kind == "runner-disagreement":
        return "interpreters"
    if kind in ("crash", "refused"):
        return "argus"
    return "checker"


def _gpu_name() -> str:
    import torch

    return torch.cuda.get_device_name(torch.cuda.current_device())


if __name__ == "__main__":
    sys.exit(main())
