"""The ``argus`` command. Its subcommands are plugins of the ``argus.commands`` group.

    argus compile FILE:KERNEL [--target T] [--emit STAGE] [-D NAME=VALUE ...]
    argus run FILE:KERNEL [--seed N] [--repeat N] [-D NAME=VALUE ...]
    argus verify FILE[:KERNEL] [--json] [-D NAME=VALUE ...] [--grid X[,Y[,Z]]] [--solver NAME]

Every failure prints one line starting with ``error:`` (with file:line:col when it is about a
kernel) and exits with status 2, whichever subcommand fails and however. ``argus verify`` exits
0 when every assertion is proved (or a kernel has nothing to prove), 1 when one is violated (the
counterexample is printed), 2 when one is unknown; 130 when interrupted. A reader that stops
reading the output early (``argus verify ... | head -1``) changes none of this.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .backends import backend_for, parse_target
from .errors import ArgusError
from .kernel import Kernel
from .plugins import PluginError, discover


INTERRUPTED = 130
"""The exit status of a command stopped by an interrupt (Ctrl-C), as shells give it."""


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
    module = load_module(Path(path_text))
    k = getattr(module, name, None)
    if not isinstance(k, Kernel):
        kernels = sorted(n for n, v in vars(module).items() if isinstance(v, Kernel))
        raise CommandError(f"{path_text} has no kernel named {name!r}; its kernels: {', '.join(kernels) or 'none'}")
    return module, k, name


def load_kernels(spec: str) -> tuple[Any, list[tuple[str, Kernel]]]:
    """``FILE:KERNEL`` or ``FILE`` (every kernel it defines) -> (module, [(name, kernel)])."""
    if ":" in spec and not Path(spec).is_file():
        module, k, name = load_kernel(spec)
        return module, [(name, k)]
    module = load_module(Path(spec))
    kernels = [(n, v) for n, v in vars(module).items() if isinstance(v, Kernel)]
    if not kernels:
        raise CommandError(f"{spec} defines no kernel")
    return module, kernels


def load_module(path: Path) -> Any:
    """Import a kernel file as a fresh module."""
    if path.is_dir():
        raise CommandError(f"{path} is a directory; give a kernel file, FILE or FILE:KERNEL")
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
    return module


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


def problem_arguments(k: Kernel, name: str, problem: Any) -> dict[str, Any]:
    """Every argument of an example problem by parameter name, whether it passes a constexpr
    positionally or by keyword."""
    params = list(k.signature.parameters)
    if len(problem.args) > len(params):
        raise CommandError(f"example_{name} gives {len(problem.args)} arguments; {name} takes {len(params)}")
    given = dict(zip(params, problem.args))
    for key, value in problem.constants.items():
        if key not in params:
            raise CommandError(f"example_{name} gives constant {key!r}, which is not a parameter of {name}")
        if key in given:
            raise CommandError(f"example_{name} gives {key!r} both positionally and as a constant")
        given[key] = value
    return given


def checked_defines(k: Kernel, name: str, defines: dict[str, Any]) -> dict[str, Any]:
    """`defines` when each names a constexpr parameter of `k`: a runtime size or scalar is a
    symbol (checked for every value, launched with the example's), so -D cannot set one."""
    for key in defines:
        if key in k.constexpr_names:
            continue
        known = ", ".join(k.constexpr_names) or "none"
        if key in k.signature.parameters:
            raise CommandError(f"-D {key}: {key!r} is a runtime argument of {name}, not a constexpr (-D sets "
                               f"constexprs only; {name}'s: {known}); runtime sizes and scalars are checked for every "
                               "value")
        raise CommandError(f"-D {key}: {name} has no parameter {key!r} (its constexprs: {known})")
    return defines


def kernel_constants(module: Any, name: str, k: Kernel, defines: dict[str, Any]) -> dict[str, Any]:
    """The constexpr values a command specializes `k` with: those given with -D, the others
    from the file's example problem (passed there positionally or by keyword)."""
    constants = dict(checked_defines(k, name, defines))
    missing = [n for n in k.constexpr_names if n not in constants]
    if not missing:
        return constants
    if not hasattr(module, f"example_{name}"):
        raise CommandError(f"{name} has constexpr parameters {missing} without a value: give them with -D NAME=VALUE")
    given = problem_arguments(k, name, example_problem(module, name, 0))
    absent = [n for n in missing if n not in given]
    if absent:
        raise CommandError(f"example_{name} gives no value for the constexpr parameters {absent} of {name}: give "
                           "them with -D NAME=VALUE")
    return {**{n: given[n] for n in missing}, **constants}


def example_problem(module: Any, name: str, seed: int) -> Any:
    make = getattr(module, f"example_{name}", None)
    if make is None:
        raise CommandError(f"no example problem: define example_{name}(rng) returning argus.dsl.Problem")
    try:
        return make(np.random.default_rng(seed))
    except ArgusError:
        raise
    except Exception as err:
        raise CommandError(f"example_{name}(rng) failed: {type(err).__name__}: {err}") from None


# ---- argus compile ---------------------------------------------------------------------------


def _configure_compile(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", metavar="FILE:KERNEL")
    p.add_argument("--target", default="interp", help="kind[:arch], e.g. interp (default), nvptx:sm_90a")
    p.add_argument("--emit", default="mlir", help="the stage to print (mlir for every target)")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr value (default: those of the file's example problem)")


def _run_compile(args: argparse.Namespace) -> int:
    module, k, name = load_kernel(args.kernel)
    defines = parse_defines(args.defines)
    target = parse_target(args.target)
    backend = backend_for(target)
    if args.emit not in backend.stages:
        raise CommandError(f"target {target} emits {', '.join(backend.stages)}, not {args.emit!r}")
    compiled = k.compile(**kernel_constants(module, name, k, defines))
    print(backend.compiler(target).emit(compiled, args.emit))
    return 0


COMPILE = Command("compile", "compile a kernel and print a stage (MLIR, ...)", _configure_compile, _run_compile)


# ---- argus run -------------------------------------------------------------------------------


def _configure_run(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", metavar="FILE:KERNEL")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--repeat", type=int, default=1, help="launches to time")
    p.add_argument("--schedule", metavar="POLICY", default=None,
                   help="the interleaving of warps and asynchronous operations: round-robin (default), delay-async "
                        "(every asynchronous operation as late as the kernel allows) or random:SEED")
    p.add_argument("--schedules", metavar="N", type=int, default=None,
                   help="run N schedules (round-robin, delay-async, then random ones from --seed) and check each")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr value, in place of the example problem's")


def _run_run(args: argparse.Namespace) -> int:
    from .machine import Schedule, schedules, using

    module, k, name = load_kernel(args.kernel)
    defines = checked_defines(k, name, parse_defines(args.defines))
    if args.schedule is not None and args.schedules is not None:
        raise CommandError("give --schedule or --schedules, not both")
    try:
        chosen = [Schedule.parse(args.schedule)] if args.schedule is not None else None
    except ValueError as err:
        raise CommandError(f"--schedule: {err}") from None
    if args.schedules is not None:
        if args.schedules < 1:
            raise CommandError(f"--schedules takes a positive count, got {args.schedules}")
        chosen = schedules(args.schedules, args.seed)
    for schedule in chosen or [None]:
        problem = example_problem(module, name, args.seed)
        given = {**problem_arguments(k, name, problem), **defines}  # (by name: a -D replaces a positional value)
        times = []
        for _ in range(max(1, args.repeat)):
            start = time.perf_counter()
            if schedule is None:
                k[problem.grid](**given)
            else:
                with using(schedule):
                    k[problem.grid](**given)
            times.append(time.perf_counter() - start)
        under = f" under schedule {schedule}" if schedule is not None else ""
        try:
            errors = problem.check()
        except AssertionError as err:
            raise CommandError(f"{name} does not match the reference{under}: {err}") from None
        worst = max(errors.values(), default=0.0)
        print(f"{name}: grid {problem.grid}, block {k.block}: matches the reference (max abs error {worst:.3g})"
              f"{under}; interpreter {min(times):.3f} s")
    return 0


RUN = Command("run", "run a kernel's example problem in the interpreter and check it", _configure_run, _run_run)


# ---- argus verify ----------------------------------------------------------------------------


def _configure_verify(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", metavar="FILE[:KERNEL]", help="a kernel, or every kernel of a file")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr value (default: those of the file's example problem)")
    p.add_argument("--grid", help="check only launches of this grid, e.g. 4,2 (default: every grid)")
    p.add_argument("--solver", help="a solver plugin of argus.solvers (default: $ARGUS_SOLVER or z3)")


def _run_verify(args: argparse.Namespace) -> int:
    import json

    module, kernels = load_kernels(args.kernel)
    grid = _parse_grid(args.grid) if args.grid else None
    results = []
    defines = parse_defines(args.defines)
    if len(kernels) > 1:  # each -D goes to the kernels that have that constexpr
        unused = [key for key in defines if not any(key in k.constexpr_names for _, k in kernels)]
        if unused:
            raise CommandError(f"-D {unused[0]}: no kernel of {args.kernel} has a constexpr parameter {unused[0]!r}")
    for name, k in kernels:
        own = {key: v for key, v in defines.items() if key in k.constexpr_names} if len(kernels) > 1 else defines
        constants = kernel_constants(module, name, k, own)
        try:
            results.append((name, k.verify(grid=grid, solver=args.solver, **constants)))
        except PluginError as err:
            raise CommandError(str(err)) from None
    if args.json:
        data = [dict(kernel=name, **r.as_dict()) for name, r in results]
        print(json.dumps(data[0] if len(data) == 1 else data, indent=2))
    else:
        for _, r in results:
            print(r.text())
    return max(r.verdict.exit_status for _, r in results)


def _parse_grid(text: str) -> tuple[int, ...]:
    try:
        dims = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise CommandError(f"--grid takes 1 to 3 positive ints separated by commas, got {text!r}") from None
    if not 1 <= len(dims) <= 3 or min(dims) < 1:
        raise CommandError(f"--grid takes 1 to 3 positive ints separated by commas, got {text!r}")
    return dims


VERIFY = Command("verify", "prove a kernel's tag assertions for every launch, or print a counterexample",
                 _configure_verify, _run_verify)


# ---- entry point -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; its exit status. Whatever goes wrong ends as one ``error:`` line and
    status 2 (status 1 means "violated" to `argus verify`'s callers, so nothing else may exit 1),
    and a closed reader of the output changes no status."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ToReader(sys.stdout), _ToReader(sys.stderr)
    try:
        return _dispatch(argv)
    except KeyboardInterrupt:  # (no verdict: the shell's status for an interrupt, never 1)
        print("error: interrupted", file=sys.stderr)
        return INTERRUPTED
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = streams


def _dispatch(argv: Sequence[str] | None) -> int:
    try:
        commands = discover("argus.commands", {"compile": COMPILE, "run": RUN, "verify": VERIFY})
    except PluginError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="argus", description="Write, check and run Argus kernels.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    loaded: dict[str, Command] = {}
    for name, plugin in sorted(commands.items()):
        try:
            command: Command = plugin.load()
            command.configure(sub.add_parser(name, help=command.help, description=command.help))
        except (ArgusError, PluginError) as err:
            print(f"warning: {err}", file=sys.stderr)
            continue
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
    except Exception as err:  # a failure of Argus itself (or of a plugin's command), not a verdict
        frame = traceback.extract_tb(err.__traceback__)[-1]
        print(f"error: argus {args.command} failed: {type(err).__name__}: {err} "
              f"(at {frame.filename}:{frame.lineno}; a bug of Argus)", file=sys.stderr)
        return 2


class _ToReader:
    """A standard stream whose reader may stop reading (``argus verify ... | head -1``): once
    the pipe is closed, the rest of the output is dropped (the stream is pointed at the null
    device, so that no later flush fails either) and the command ends with its own status."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.gone = stream is None
        """Whether the reader is gone (or was never there: a stream closed before the start)."""

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(text)
            except OSError:  # a broken pipe, or a descriptor closed under the command
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except OSError:
                self._drop()

    def _drop(self) -> None:
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self.stream.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):  # (a stream without a file: nothing to redirect)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
