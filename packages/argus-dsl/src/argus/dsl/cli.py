"""The ``argus`` command. Its subcommands are plugins of the ``argus.commands`` group.

    argus compile FILE:KERNEL [--target T] [--emit STAGE] [-D NAME=VALUE ...]
    argus run FILE:KERNEL [--seed N] [--repeat N]

Every failure prints one line starting with ``error:`` (with file:line:col when it is about a
kernel) and exits with status 2.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .backends import backend_for, parse_target
from .errors import ArgusError
from .kernel import Kernel
from .plugins import discover


class CommandError(ArgusError):
    """A command line that cannot be carried out."""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


# ---- shared helpers ---------------------------------------------------------------------------


def load_kernel(spec: str) -> tuple[Any, Kernel, str]:
    """``FILE:KERNEL`` -> (module, kernel object, kernel name)."""
    path_text, sep, name = spec.rpartition(":")
    if not sep or not path_text or not name:
        raise CommandError(f"expected FILE:KERNEL, got {spec!r}")
    path = Path(path_text)
    if not path.is_file():
        raise CommandError(f"no such file: {path}")
    module_name = f"argus_user_{path.stem}"
    loader_spec = importlib.util.spec_from_file_location(module_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise CommandError(f"cannot import {path}")
    module = importlib.util.module_from_spec(loader_spec)
    sys.path.insert(0, str(path.resolve().parent))
    try:
        loader_spec.loader.exec_module(module)
    except ArgusError:
        raise
    except Exception as err:
        raise CommandError(f"importing {path} failed: {type(err).__name__}: {err}") from None
    finally:
        sys.path.pop(0)
    k = getattr(module, name, None)
    if not isinstance(k, Kernel):
        kernels = sorted(n for n, v in vars(module).items() if isinstance(v, Kernel))
        raise CommandError(f"{path} has no kernel named {name!r}; its kernels: {', '.join(kernels) or 'none'}")
    return module, k, name


def parse_defines(items: Sequence[str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.isidentifier():
            raise CommandError(f"-D takes NAME=VALUE, got {item!r}")
        try:
            values[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise CommandError(f"-D {key}: {text!r} is not a Python literal") from None
    return values


def example_problem(module: Any, name: str, seed: int) -> Any:
    make = getattr(module, f"example_{name}", None)
    if make is None:
        raise CommandError(f"no example problem: define example_{name}(rng) returning argus.dsl.Problem")
    return make(np.random.default_rng(seed))


# ---- argus compile ---------------------------------------------------------------------------


def _configure_compile(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", metavar="FILE:KERNEL")
    p.add_argument("--target", default="interp", help="kind[:arch], e.g. interp (default), nvptx:sm_90a")
    p.add_argument("--emit", default="mlir", help="the stage to print (mlir for every target)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr value (default: those of the file's example problem)")


def _run_compile(args: argparse.Namespace) -> int:
    module, k, name = load_kernel(args.kernel)
    constants = parse_defines(args.defines)
    if not constants and k.constexpr_names and hasattr(module, f"example_{name}"):
        constants = example_problem(module, name, 0).constants
    target = parse_target(args.target)
    backend = backend_for(target)
    if args.emit not in backend.stages:
        raise CommandError(f"target {target} emits {', '.join(backend.stages)}, not {args.emit!r}")
    compiled = k.compile(**constants)
    print(backend.compiler(target).emit(compiled.module, args.emit))
    return 0


COMPILE = Command("compile", "compile a kernel and print a stage (MLIR, ...)", _configure_compile, _run_compile)


# ---- argus run -------------------------------------------------------------------------------


def _configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", metavar="FILE:KERNEL")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--repeat", type=int, default=1, help="launches to time")


def _run_run(args: argparse.Namespace) -> int:
    module, k, name = load_kernel(args.kernel)
    problem = example_problem(module, name, args.seed)
    times = []
    for _ in range(max(1, args.repeat)):
        start = time.perf_counter()
        k[problem.grid](*problem.args, **problem.constants)
        times.append(time.perf_counter() - start)
    try:
        errors = problem.check()
    except AssertionError as err:
        raise CommandError(f"{name} does not match the reference: {err}") from None
    worst = max(errors.values(), default=0.0)
    print(f"{name}: grid {problem.grid}, block {k.block}: matches the reference (max abs error {worst:.3g}); "
          f"interpreter {min(times):.3f} s")
    return 0


RUN = Command("run", "run a kernel's example problem in the interpreter and check it", _configure_run, _run_run)


# ---- entry point -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    commands = discover("argus.commands", {"compile": COMPILE, "run": RUN})
    parser = argparse.ArgumentParser(prog="argus", description="Write, check and run Argus kernels.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    loaded: dict[str, Command] = {}
    for name, plugin in sorted(commands.items()):
        try:
            command: Command = plugin.load()
        except ArgusError as err:
            print(f"warning: {err}", file=sys.stderr)
            continue
        command.configure(sub.add_parser(name, help=command.help, description=command.help))
        loaded[name] = command
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0) and 2
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return loaded[args.command].run(args)
    except ArgusError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
