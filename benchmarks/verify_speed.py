"""How long the static tag checker takes on the GEMM and flash-attention examples.

Two figures per example, CPU time of `verify_kernel`, median of `--repeat`: a check of the
compiled kernel, and a kernel's first check (a fresh copy of the compiled kernel, so what every
check of its IR shares is found again). A full garbage collection before each check leaves
every check the same start (a collection walks the whole heap, so caches are cold). `--cold N`
adds a third: the first check in each of N new interpreters, right after compiling the kernel
there, when nothing the checker keeps per process (parsed layouts, offset tables, atoms) is
known yet — what `argus verify` or a build in a new process waits for. The kernel is compiled
there as any build compiles it: traced, or read back from the kernel cache where that holds it
(``ARGUS_CACHE_DIR=off`` always traces). `--parts`
times what a first check prepares; `--steps N` lists the analysis's N costliest steps (runs of
copies, products, single ops). To compare two versions of the checker side by side, run this
file with ``--against TREE`` (another checkout, or a revision of this repository): each round
times this tree's checker and TREE's (which goes first alternates), each in a new interpreter
whose ``PYTHONPATH`` names that tree's packages, and the table gives every round's medians side
by side and their ratio (this tree over TREE), so that a drift of the machine between rounds
shows as such rather than as a difference. Each interpreter also keeps its own speed for its
whole life, within about ±20%, so a median over one interpreter's checks says as much about
that interpreter as about the checker: ``--interpreters N`` takes the figures in N new
interpreters, one after another, and gives each interpreter's medians and the median over them:

    python benchmarks/verify_speed.py [--repeat N] [--cold N] [--json FILE] [--parts] [--steps N]
                                      [--instructions N] [--kernels EXAMPLE:KERNEL ...]
                                      [--against TREE [--rounds N] | --interpreters N]

Each run also times a fixed piece of plain Python (`machine_ms`): this container's speed moves
by up to 2.5× between sittings, and figures taken in different sittings compare only through it.
`--instructions N` also counts, under valgrind's callgrind, the instructions N checks of each
kind execute (inside the checks alone): a figure that does not move with the machine, to tell
a change of a few percent that timing here cannot; with `--parts`, also those of each part of N
preparations (the collector paused, as in a check); with `--cold`, also those of one first check
in a new interpreter.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import gc
import importlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
KERNELS = (("gemm", "gemm"), ("flash_attention", "attention"))
"""The examples the speed targets name; `--kernels` checks others (`gemm_tma:gemm_tma`)."""


def compiled(example: str, kernel: str) -> Any:
    from argus.dsl.cli import load_module

    module = load_module(EXAMPLES / f"{example}.py")
    constants = getattr(module, f"example_{kernel}")(np.random.default_rng(0)).constants
    return getattr(module, kernel).specialize(**constants)


def machine_ms(repeat: int = 5) -> float:
    """CPU time of a fixed loop of plain Python (least of `repeat`): how fast this machine runs
    the interpreter right now, to compare figures taken in different sittings."""
    def loop() -> None:
        total = 0
        for i in range(1_000_000):
            total += i & 7
    return round(min(cpu_ms(loop) for _ in range(repeat)), 1)


def kernel_pair(text: str) -> tuple[str, str]:
    """``EXAMPLE:KERNEL`` (an example file under examples/ and a kernel in it)."""
    example, _, kernel = text.partition(":")
    if not kernel or not (EXAMPLES / f"{example}.py").is_file():
        known = ", ".join(sorted(p.stem for p in EXAMPLES.glob("*.py")))
        raise argparse.ArgumentTypeError(f"expected EXAMPLE:KERNEL with EXAMPLE one of {known}; got {text!r}")
    return example, kernel


def cpu_ms(check: Any) -> float:
    gc.collect()  # every check starts alike: no garbage of the one before left to collect, caches cold
    start = time.process_time()
    check()
    return (time.process_time() - start) * 1000


def cold_check_ms(example: str, kernel: str) -> float:
    """CPU time of a kernel's first check in a new interpreter, after compiling it there."""
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import verify_speed; "
              f"print(verify_speed.first_check_here({example!r}, {kernel!r}))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"the cold check of {example}:{kernel} failed:\n{done.stderr}")
    return float(done.stdout.split()[-1])


def first_check_here(example: str, kernel: str) -> float:
    """CPU time of the first check of a kernel compiled in this interpreter (`cold_check_ms`)."""
    verify_kernel = checker_module("verification").verify_kernel

    ir = compiled(example, kernel)
    return cpu_ms(lambda: verify_kernel(ir, kernel))


def counted_checks(example: str, kernel: str, n: int, first: bool) -> None:
    """`n` checks of a compiled kernel (`first`: each of a fresh copy), each called through
    `sys.call_tracing`: the one call in which `instructions_per_check` has callgrind count."""
    verify_kernel = checker_module("verification").verify_kernel

    ir = compiled(example, kernel)
    verify_kernel(ir, kernel)
    for _ in range(n):
        target = dataclasses.replace(ir) if first else ir
        gc.collect()
        sys.call_tracing(verify_kernel, (target, kernel))


def counted_cold_check(example: str, kernel: str) -> None:
    """A kernel's first check in this interpreter, right after compiling it (`cold_check_ms`),
    called through `sys.call_tracing` (see `counted_checks`)."""
    verify_kernel = checker_module("verification").verify_kernel

    ir = compiled(example, kernel)
    gc.collect()
    sys.call_tracing(verify_kernel, (ir, kernel))


def instructions_of_cold_check(example: str, kernel: str) -> float:
    """Millions of instructions of a kernel's first check in a new interpreter (`counted_cold_check`):
    what a first check executes, plus what the checker keeps per process and the interpreter's
    first runs of its code (it specializes each instruction once it has run a few times)."""
    return round(_counted(f"verify_speed.counted_cold_check({example!r}, {kernel!r})",
                          f"the cold check of {example}:{kernel}") / 1e6, 3)


def instructions_per_check(example: str, kernel: str, n: int, first: bool) -> float:
    """Millions of instructions a check executes, counted by valgrind's callgrind inside the
    checks alone (`counted_checks` in a new interpreter, string hashing fixed): repeatable to
    about 0.1%, where this container's CPU time moves by tens of percent. Large copies count
    as many instructions as they move words, so this weighs copying above its time."""
    return round(_counted(f"verify_speed.counted_checks({example!r}, {kernel!r}, {n}, {first})",
                          f"{example}:{kernel}") / n / 1e6, 3)


def counted_part(example: str, kernel: str, n: int, counted: str) -> None:
    """What `n` first checks of a compiled kernel prepare, part by part as `preparation_parts`
    times it (the collector paused, as a check pauses it), part `counted` called through
    `sys.call_tracing` (see `counted_checks`)."""
    verify_kernel = checker_module("verification").verify_kernel

    Preparation = checker_module("analysis").Preparation

    ir = compiled(example, kernel)
    verify_kernel(ir, kernel)
    for _ in range(n):
        gc.collect()
        gc.disable()
        for name, part in preparation_steps(Preparation(ir.op, ir.locations)):
            if name == counted:
                sys.call_tracing(part, ())
            else:
                part()
        gc.enable()


def instructions_per_part(example: str, kernel: str, n: int) -> dict[str, float]:
    """Millions of instructions each part of a kernel's preparation executes (`counted_part`,
    one counting interpreter per part)."""
    Preparation = checker_module("analysis").Preparation

    # the parts the imported checker prepares (a checker from before `known` has none of those)
    names = [name for name, _ in preparation_steps(Preparation(compiled(example, kernel).op, {}))]
    return {name: round(_counted(f"verify_speed.counted_part({example!r}, {kernel!r}, {n}, {name!r})",
                                 f"the {name} of {example}:{kernel}") / n / 1e6, 3) for name in names}


def _counted(call: str, what: str) -> int:
    """Instructions executed inside `sys.call_tracing` while this module runs `call` in a new
    interpreter under valgrind's callgrind (string hashing fixed)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise RuntimeError("--instructions needs valgrind (its callgrind tool) on PATH")
    script = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import verify_speed; {call}"
    done = subprocess.run([valgrind, "--tool=callgrind", "--toggle-collect=sys_call_tracing",
                           "--callgrind-out-file=/dev/null", sys.executable, "-c", script],
                          capture_output=True, text=True, check=False, env={**os.environ, "PYTHONHASHSEED": "0"})
    counted = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode or counted is None:
        raise RuntimeError(f"counting the instructions of {what} failed:\n{done.stderr[-3000:]}")
    if int(counted.group(1)) == 0:
        raise RuntimeError("callgrind counted nothing inside sys.call_tracing: this Python's build names that "
                           "function otherwise, or hides it")
    return int(counted.group(1))


def checker_module(name: str) -> Any:
    """A module of the static checker, `argus.dsl.check.<name>`, or `argus.dsl.<name>` in a tree
    from before the checker had its own folder (so that `--against` reaches older revisions)."""
    return _module(f"check.{name}", name)


def _module(name: str, before: str) -> Any:
    """`argus.dsl.<name>`, or `argus.dsl.<before>` in a tree from before argus.dsl's folders."""
    try:
        return importlib.import_module(f"argus.dsl.{name}")
    except ModuleNotFoundError as err:
        if err.name is None or not f"argus.dsl.{name}".startswith(err.name):
            raise
        return importlib.import_module(f"argus.dsl.{before}")


def preparation_steps(prep: Any) -> Iterator[tuple[str, Callable[[], Any]]]:
    """What a kernel's first check prepares, part by part, in the order it prepares them: the op
    table, tag liveness, the values known before the walk, the batching plan (every block's
    steps, and one run per nest of static loops kept rolled). Each part is yielded once the
    parts before it are made (the caller runs it before asking for the next)."""
    from xdsl.dialects import scf

    yield "table", lambda: prep.table
    yield "liveness", lambda: prep.relevant
    if hasattr(type(prep), "known"):  # (a checker from before it computes what the walk does alike)
        yield "known", lambda: prep.known
    loops = prep.table.of_kind(scf.ForOp)
    rolled = [loop for loop in loops if _unrolled(loop)]  # static loops kept rolled: one run each
    inside = {id(op) for loop in rolled for op in loop.body.block.walk()}
    blocks = [prep.kernel.body.block] + [loop.body.block for loop in loops
                                         if loop not in rolled and id(loop) not in inside]
    yield "plan", lambda: ([prep.steps(block) for block in blocks],
                           [prep.rolled(loop) for loop in rolled if id(loop) not in inside])


def preparation_parts(ir: Any, repeat: int) -> dict[str, float]:
    """CPU time of each part of what a kernel's first check prepares, median of `repeat`."""
    Preparation = checker_module("analysis").Preparation

    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for name, part in preparation_steps(Preparation(ir.op, ir.locations)):
            times.setdefault(name, []).append(cpu_ms(part))
    return {name: round(statistics.median(ms), 2) for name, ms in times.items()}


def _unrolled(op: Any) -> bool:
    """Whether a loop is a static loop kept rolled (a checker from before them has none)."""
    dialect = _module("ir.dialect", "dialect")
    return bool(getattr(dialect, "is_unrolled", lambda _: False)(op))


def step_times(ir: Any, repeat: int, shown: int) -> list[tuple[str, float]]:
    """The analysis's costliest steps (wall time, ms, median of `repeat` walks of a prepared
    kernel): which runs of copies, products and single ops a check spends its time on."""
    try:
        plan = checker_module("run_plan")
    except ModuleNotFoundError:  # a tree from before the plan of runs had a module of its own
        plan = checker_module("batching")
    TagAnalysis = checker_module("analysis").TagAnalysis

    def label(step: Any) -> str:
        if isinstance(step, plan.Run):
            first = ir.locations.get(step.ops[0])
            return f"run of {len(step.ops)} ops in {len(step.groups)} groups from {first}"
        if isinstance(step, plan.Products):
            return f"{len(step.ops)} products and views from {ir.locations.get(step.ops[0])}"
        if isinstance(step, plan.Known):
            return f"{len(step.results)} values known before the check"
        if _unrolled(step):
            return f"static loop at {ir.locations.get(step)}"
        op = getattr(step, "op", step)  # (a tile access kept for its coordinates alone)
        return f"{op.name} at {ir.locations.get(op)}"

    walks: dict[str, list[float]] = {}
    for _ in range(repeat):
        analysis = TagAnalysis(ir.op, ir.locations, None, ir.preparation)
        analysis.step_times = {}
        gc.collect()
        analysis.run()
        for step, seconds in analysis.step_times.values():
            walks.setdefault(label(step), []).append(seconds * 1000)
    medians = {name: statistics.median(ms + [0.0] * (repeat - len(ms))) for name, ms in walks.items()}
    ranked = sorted(medians.items(), key=lambda item: -item[1])
    rest = sum(ms for _, ms in ranked[shown:])
    return [(name, round(ms, 3)) for name, ms in ranked[:shown]] + [("every other step", round(rest, 3))]


FIGURES = (("check_ms", "check"), ("first_check_ms", "first check"), ("cold_check_ms", "in a new process"),
           ("check_minstr", "check, instr."), ("first_check_minstr", "first, instr."),
           ("cold_check_minstr", "new process, instr."))
"""Each figure's key in a report and its name; ``*_minstr`` are millions of instructions."""


def tree_path(text: str) -> Path:
    """A checkout of Argus (a folder with the packages' sources under packages/*/src), or a
    revision of this repository, whose packages are then extracted into a temporary folder."""
    tree = Path(text).resolve()
    if list(tree.glob("packages/*/src")):
        return tree
    root = Path(__file__).resolve().parents[1]
    folder = Path(tempfile.mkdtemp(prefix="argus-against-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    archive = subprocess.run(["git", "-C", str(root), "archive", text, "packages"], capture_output=True, check=False)
    if archive.returncode or subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout,
                                            check=False).returncode:
        raise argparse.ArgumentTypeError(f"{text!r} is neither a checkout of Argus (no packages/*/src under it) nor "
                                         "a revision of this repository")
    return folder


def timed_in(tree: Path, argv: list[str]) -> dict[str, Any]:
    """This benchmark's report, run in a new interpreter on `tree`'s packages."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p) for p in sorted(tree.glob("packages/*/src")))}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.json"
        done = subprocess.run([sys.executable, __file__, *argv, "--json", str(out)], env=env, capture_output=True,
                              text=True, check=False)
        if done.returncode:
            raise RuntimeError(f"the benchmark failed on {tree}:\n{done.stderr}")
        return json.loads(out.read_text())  # type: ignore[no-any-return]


def side_by_side(args: argparse.Namespace, tree: Path, argv: list[str]) -> dict[str, Any]:
    """This tree's figures and those of `args.against`, round by round (which goes first
    alternates), printed as they come, then the median ratio of each figure."""
    here = Path(__file__).resolve().parents[1]
    rounds: list[dict[str, Any]] = []
    for r in range(args.rounds):
        pair: dict[str, Any] = {}
        for side in (("this", "against") if r % 2 == 0 else ("against", "this")):
            pair[side] = timed_in(here if side == "this" else tree, argv)
        rounds.append(pair)
        print(f"round {r + 1}: machine {pair['this']['machine_ms']} / {pair['against']['machine_ms']} ms", flush=True)
        for example, _ in args.kernels:
            for key, name in FIGURES:
                if key in pair["this"][example]:
                    new, old = pair["this"][example][key], pair["against"][example][key]
                    unit = "M " if key.endswith("_minstr") else "ms"
                    print(f"  {example:16s} {name:17s} {new:8.2f} {unit}  against {old:8.2f} {unit}  ({new / old:.3f})",
                          flush=True)
    print("median ratio over the rounds (this tree / the other):")
    for example, _ in args.kernels:
        ratios = {name: statistics.median(p["this"][example][key] / p["against"][example][key] for p in rounds)
                  for key, name in FIGURES if key in rounds[0]["this"][example]}
        for key, suffix in (("preparation_ms", ""), ("preparation_minstr", ", instr.")):
            parts = [part for part in rounds[0]["this"][example].get(key, {})
                     if part in rounds[0]["against"][example].get(key, {})]
            ratios.update({part + suffix: statistics.median(p["this"][example][key][part] /
                                                            p["against"][example][key][part] for p in rounds)
                           for part in parts})
        print(f"  {example:16s} " + "  ".join(f"{name} {ratio:.3f}" for name, ratio in ratios.items()), flush=True)
    return {"against": args.against, "rounds": rounds}  # (as given: a checkout, or a revision)


def over_interpreters(args: argparse.Namespace, argv: list[str]) -> dict[str, Any]:
    """This tree's figures in `args.interpreters` new interpreters, one after another, printed as
    they come, then each figure's median over the interpreters and its range."""
    here = Path(__file__).resolve().parents[1]
    runs: list[dict[str, Any]] = []
    for r in range(args.interpreters):
        runs.append(timed_in(here, argv))
        print(f"interpreter {r + 1}: machine {runs[-1]['machine_ms']} ms  " + "  ".join(
            f"{example} " + ", ".join(f"{name} {runs[-1][example][key]:.2f}" for key, name in FIGURES
                                      if key in runs[-1][example]) for example, _ in args.kernels), flush=True)
    summary: dict[str, Any] = {}
    print(f"median over {len(runs)} interpreters (least - most):")
    for example, _ in args.kernels:
        summary[example] = {}
        for key, name in FIGURES:
            if key in runs[0][example]:
                values = [run[example][key] for run in runs]
                summary[example][key] = {"median": round(statistics.median(values), 2),
                                         "least": min(values), "most": max(values)}
        print(f"  {example:16s} " + "  ".join(
            f"{name} {summary[example][key]['median']:.2f} ({summary[example][key]['least']:.2f} - "
            f"{summary[example][key]['most']:.2f})" for key, name in FIGURES if key in summary[example]), flush=True)
    return {"interpreters": runs, "summary": summary}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=20, help="checks of each kind per example")
    parser.add_argument("--cold", type=int, metavar="N", default=0,
                        help="also time the first check in each of N new interpreters (nothing kept per process)")
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument("--parts", action="store_true",
                        help="also time what a first check prepares: the op table, tag liveness, the values known "
                             "before the walk, the batching plan")
    parser.add_argument("--steps", type=int, metavar="N", default=0,
                        help="also list the N steps of the analysis that take longest (runs of copies, products, ops)")
    parser.add_argument("--kernels", nargs="+", type=kernel_pair, default=list(KERNELS), metavar="EXAMPLE:KERNEL",
                        help="the kernels to check (default: gemm:gemm flash_attention:attention)")
    parser.add_argument("--against", metavar="TREE",
                        help="time another checkout's checker (or a revision's) too, alternating with this "
                             "one's (each in a new interpreter)")
    parser.add_argument("--rounds", type=int, default=3, help="alternations with --against")
    parser.add_argument("--interpreters", type=int, metavar="N", default=0,
                        help="take the figures in N new interpreters, one after another, and give the median over "
                             "them (each interpreter runs at its own speed, within about ±20%%)")
    parser.add_argument("--instructions", type=int, metavar="N", default=0,
                        help="also count the instructions of N checks of each kind under valgrind's callgrind "
                             "(inside the checks only; repeatable to about 0.1%%, slow: about a minute a "
                             "kernel), with --parts those of each part of N preparations, and with --cold those of "
                             "one first check in a new interpreter")
    args = parser.parse_args(argv)
    if args.against is not None and args.interpreters:
        parser.error("--against and --interpreters each run interpreters of their own: give one of them")
    if args.interpreters < 0:
        parser.error(f"argument --interpreters: expected a count of 0 or more; got {args.interpreters}")
    if args.repeat < 1:
        parser.error(f"argument --repeat: expected a count of 1 or more; got {args.repeat}")
    inner = ["--repeat", str(args.repeat), "--cold", str(args.cold), "--steps", str(args.steps),
             "--instructions", str(args.instructions),
             *(["--parts"] if args.parts else []), "--kernels", *(f"{e}:{k}" for e, k in args.kernels)]
    if args.against is not None or args.interpreters:
        if args.against is not None:
            try:
                tree = tree_path(args.against)
            except argparse.ArgumentTypeError as err:
                parser.error(f"argument --against: {err}")
            report = side_by_side(args, tree, inner)
        else:
            report = over_interpreters(args, inner)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
        return 0
    verify_kernel = checker_module("verification").verify_kernel

    report: dict[str, Any] = {"machine_ms": machine_ms()}
    print(f"machine: {report['machine_ms']} ms for a fixed loop of plain Python (compare sittings through it)",
          flush=True)
    for example, kernel in args.kernels:
        ir = compiled(example, kernel)
        verdict = verify_kernel(ir, kernel).verdict.value
        later, first = [], []
        for _ in range(args.repeat):  # alternated, so that both see the same machine
            later.append(cpu_ms(lambda: verify_kernel(ir, kernel)))
            fresh = dataclasses.replace(ir)
            first.append(cpu_ms(lambda: verify_kernel(fresh, kernel)))
        report[example] = {"verdict": verdict, "check_ms": round(statistics.median(later), 2),
                           "first_check_ms": round(statistics.median(first), 2)}
        if args.cold:
            report[example]["cold_check_ms"] = round(statistics.median(
                cold_check_ms(example, kernel) for _ in range(args.cold)), 2)
        cold = f"  in a new process {report[example]['cold_check_ms']:7.2f} ms" if args.cold else ""
        print(f"{example:16s} {verdict:8s} check {report[example]['check_ms']:7.2f} ms  "
              f"first check {report[example]['first_check_ms']:7.2f} ms{cold}", flush=True)
        if args.instructions:
            for key, first in (("check_minstr", False), ("first_check_minstr", True)):
                report[example][key] = instructions_per_check(example, kernel, args.instructions, first)
            if args.cold:
                report[example]["cold_check_minstr"] = instructions_of_cold_check(example, kernel)
            cold = f"  in a new process {report[example]['cold_check_minstr']:7.2f} M" if args.cold else ""
            print(f"{' ' * 26}check {report[example]['check_minstr']:7.2f} M instructions  "
                  f"first check {report[example]['first_check_minstr']:7.2f} M instructions{cold}", flush=True)
        if args.parts:
            report[example]["preparation_ms"] = parts = preparation_parts(ir, args.repeat)
            print(" " * 26 + "  ".join(f"{name} {ms:.2f} ms" for name, ms in parts.items()), flush=True)
            if args.instructions:
                report[example]["preparation_minstr"] = counts = instructions_per_part(example, kernel,
                                                                                        args.instructions)
                print(" " * 26 + "  ".join(f"{name} {m:.2f} M" for name, m in counts.items()), flush=True)
        if args.steps:
            report[example]["steps_ms"] = steps = step_times(ir, args.repeat, args.steps)
            for name, ms in steps:
                print(f"{' ' * 26}{ms:7.3f} ms  {name}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
