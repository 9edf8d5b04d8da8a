"""``argus optimize TASK --target T [--planner search|llm] [--rounds N] --out DIR``.

A plugin of the ``argus.commands`` group: installing argus-harness adds the verb to ``argus``
without argus-dsl knowing about it. Progress is one line per round; the report is written to
``DIR/report.md`` (and ``DIR/report.html``, the same with the trajectory drawn). Running the
same command again with the same ``--out`` resumes the run.

Paths on the command line are taken relative to where the command runs and made absolute at
once: the sandboxed worker runs inside each candidate's folder, where a relative path would
name another file. SIGTERM stops the run as an interrupt does: the round under way is done
again when the run is taken up again.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from argus.dsl.cli import Command, CommandError, load_module
from argus.dsl.errors import ArgusError

from . import isolation, prompts, report
from .kb import RecipeBook
from .loop import Optimizer
from .planning import PlannerConfig, default_planner, planner_plugin
from .sandbox import Limits
from .store import RunStore
from .task import load_task
from .validator import Validator


def parse_shape(text: str) -> dict[str, int]:
    """``m=128,n=64,k=48`` -> {"m": 128, "n": 64, "k": 48}."""
    shape = {}
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or not name.strip().isidentifier() or not value.strip().isdigit() or int(value) < 1:
            raise CommandError(f"a shape is NAME=INT[,NAME=INT...] with positive ints, got {text!r}")
        shape[name.strip()] = int(value)
    return shape


def absolute_path(text: str) -> Path:
    """A path option, absolute (see the module's docstring)."""
    return Path(text).expanduser().absolute()


def load_recipes(path: Path) -> list[Any]:
    """The RECIPES list of a Python file (the user's own code, like a task file)."""
    try:
        module = load_module(path)
    except ArgusError as err:
        raise CommandError(f"--recipes: {err}") from None
    recipes = getattr(module, "RECIPES", None)
    if not isinstance(recipes, (list, tuple)) or not all(hasattr(r, "instantiate") for r in recipes):
        raise CommandError(f"--recipes: {path} must define RECIPES, a list of argus.harness.TemplateRecipe")
    return list(recipes)


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="TASK", help="a task file: FILE.py (KernelBench or numpy form) or FILE.py:KERNEL")
    p.add_argument("--target", help="where the kernel must run: interp, nvptx:sm_90a, ... (default: the task's, "
                                    "else interp)")
    p.add_argument("--planner", help="search (offline) or llm (default: llm when OPENAI_BASE_URL is set, else search)")
    p.add_argument("--rounds", type=int, default=10, help="optimization rounds after the baseline (default 10)")
    p.add_argument("--out", required=True, type=absolute_path, help="the run directory (an existing one is resumed)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=INT,...",
                   help="a test shape (repeat for several; default: the task's)")
    p.add_argument("--bench-shape", metavar="NAME=INT,...", help="the shape timed on the GPU (default: the largest test)")
    p.add_argument("--family", help="the kernel family (gemm, attention, ...; default: from the task)")
    p.add_argument("--model", help="the model name for --planner llm (default: $ARGUS_LLM_MODEL)")
    p.add_argument("--seed", type=int, default=0, help="seed of the selector and the test inputs")
    p.add_argument("--seeds", type=int, default=2, help="random inputs per test shape (default 2)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds one candidate may take (default 300)")
    p.add_argument("--memory-mb", type=int, default=8192, help="memory one candidate may use (default 8192)")
    p.add_argument("--device", choices=("auto", "gpu", "cpu"), default="auto",
                   help="run candidates on the GPU, or on the interpreter (cpu); default: the GPU when there is one")
    p.add_argument("--recipes", type=absolute_path, metavar="FILE.py",
                   help="extra recipes: a Python file defining RECIPES, a list of argus.harness.TemplateRecipe")
    p.add_argument("--no-kb", action="store_true", help="use only the --recipes, not the knowledge base")
    p.add_argument("--policy", type=absolute_path, help="the search planner's policy file (default: "
                                               "~/.cache/argus/harness-policy.json, shared across runs)")


def _run(args: argparse.Namespace) -> int:
    for option, value, least in (("--rounds", args.rounds, 0), ("--seeds", args.seeds, 1),
                                 ("--timeout", args.timeout, 1), ("--memory-mb", args.memory_mb, 64)):
        if value < least:
            raise CommandError(f"{option} takes a number >= {least}, got {value}")
    task = load_task(args.task, target=args.target, family=args.family,
                     shapes=[parse_shape(s) for s in args.shape] or None,
                     bench_shape=parse_shape(args.bench_shape) if args.bench_shape else None)
    task = dataclasses.replace(task, path=task.path.absolute())  # the worker reads it from a candidate's folder
    name = args.planner or default_planner()
    plugin = planner_plugin(name)
    store = RunStore(args.out)
    meta = store.open({"task": str(task.path.resolve()) + (f":{task.example}" if task.example else ""),
                       "planner": name, "target": task.target, "rounds": args.rounds, "run_id": uuid.uuid4().hex[:12],
                       "started": time.strftime("%Y-%m-%d %H:%M:%S"), "task_description": task.describe(),
                       **({"prompts": prompts.VERSION} if name == "llm" else {})})
    validator = Validator(task, args.out, device=args.device, seeds=args.seeds,
                          limits=Limits(seconds=args.timeout, memory_mb=args.memory_mb))
    print(f"argus optimize: {task.name} ({task.form}, family {task.family}) for {task.target} with the {name} "
          f"planner, {args.rounds} round(s); candidates run on {validator.device}", flush=True)
    _say_isolation()
    validator.probe()
    book = RecipeBook(load_recipes(args.recipes) if args.recipes else (), use_kb=not args.no_kb)
    offered = book.recipes(task.target, task.family)
    if book.unavailable:
        print(f"warning: {book.unavailable}", file=sys.stderr, flush=True)
    if not offered and name == "search":
        print(f"warning: no recipe serves {task.target}/{task.family}: the search planner has nothing to propose",
              file=sys.stderr, flush=True)
    planner = plugin.create(PlannerConfig(task, args.out, book, seed=args.seed, policy_path=args.policy,
                                          model=args.model, options={"run_id": meta["run_id"]}))
    optimizer = Optimizer(task, planner, validator, store, args.rounds, seed=args.seed,
                          progress=lambda line: print(line, flush=True))
    with _terminated_as_interrupt():
        records = optimizer.run()
    meta = {**meta, "rounds": max(args.rounds, meta.get("rounds", 0)), "device": validator.device}
    (args.out / "report.md").write_text(report.render(task, meta, records))
    (args.out / "report.html").write_text(report.render_html(task, meta, records))
    best = optimizer.best
    print(f"best kernel: round {best.round if best else '-'}; report: {args.out / 'report.md'}", flush=True)
    return 0


def _say_isolation() -> None:
    """What confines the workers on this machine, and each mechanism it lacks, with why (a
    warning: a candidate that gets code execution is then less confined)."""
    offered, missing = isolation.summary()
    print("worker isolation: " + ("; ".join(offered) or "only what the harness sets up itself")
          + " (each round's record is in rounds.jsonl and the report)", flush=True)
    if missing:
        print("warning: worker isolation lacks " + "; ".join(f"{name} ({why})" for name, why in missing.items()),
              file=sys.stderr, flush=True)


@contextmanager
def _terminated_as_interrupt() -> Iterator[None]:
    """SIGTERM (a job's time limit, a shutdown) raises `SystemExit` here rather than ending the
    process where it stands, so the run withdraws the mark of its round under way."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


OPTIMIZE = Command("optimize", "optimize a kernel for a task: planner, selector, lowering, sandboxed validation, "
                               "keep the fastest verified kernel", _configure, _run)


def main(argv: list[str] | None = None) -> int:
    """``python -m argus.harness.cli TASK ...``: the command without the ``argus`` front."""
    parser = argparse.ArgumentParser(prog="argus optimize", description=OPTIMIZE.help)
    _configure(parser)
    args = parser.parse_args(argv)
    try:
        return _run(args)
    except ArgusError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
