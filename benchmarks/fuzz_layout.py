"""A long fuzz run of the two layout commands, ``argus-layout`` and ``argus-verify layout``.

Each case is a command line drawn by `argus.layout.fuzzing` (valid, large and mutated
layouts and expressions: deep nesting, huge integers, negative and zero sizes, swizzles out
of range, unbalanced parentheses, unicode, empty text; and usage mistakes: command lines cut
short, unknown options and words) and run in this process. A case fails when its run ends in
anything but the documented statuses (a traceback, an internal error, a verdict's status
without its verdict, an error of more than one line). The continuous tests run a few hundred cases; this
runs as many as asked and prints a summary, with every failing command line.

Run:  python benchmarks/fuzz_layout.py --cases 20000 [--seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import time
from collections import Counter
from collections.abc import Callable

from argus.layout import cli as layout_cli
from argus.layout.fuzzing import LayoutTexts, layout_command_problem, verify_command_problem
from argus.verify import cli as verify_cli

Problem = Callable[[int, str, str], "str | None"]


def run(main: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str, str, float]:
    """Run a command in this process: its status, stdout, stderr and seconds."""
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except BaseException as escaped:  # noqa: BLE001 - a case that escapes is what we look for
            code = -1
            err.write(f"Traceback: {type(escaped).__name__}: {escaped}")
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=5000, metavar="N", help="command lines per command (default 5000)")
    parser.add_argument("--seed", type=int, default=1, help="the first seed (default 1)")
    args = parser.parse_args(argv)
    if args.cases < 1:
        parser.error("--cases must be a positive number")
    texts = LayoutTexts(args.seed)
    functions = sorted(layout_cli.FUNCTIONS)
    commands: list[tuple[str, Callable[[list[str]], int], Callable[[], list[str]], Problem]] = [
        ("argus-layout", layout_cli.main, lambda: texts.layout_command(functions), layout_command_problem),
        ("argus-verify", verify_cli.main, texts.verify_command, verify_command_problem),
    ]
    failures: list[str] = []
    for name, command, draw, problem in commands:
        statuses: Counter[int] = Counter()
        slowest, slowest_argv = 0.0, ["-"]
        started = time.perf_counter()
        for _ in range(args.cases):
            case = draw()
            code, out, err, seconds = run(command, case)
            statuses[code] += 1
            if seconds > slowest:
                slowest, slowest_argv = seconds, case
            found = problem(code, out, err)
            if found is not None:
                failures.append(f"{name} {case!r}: {found}\n    {(err or out)[:400]}")
        total = time.perf_counter() - started
        shown = ", ".join(f"{count} with status {code}" for code, count in sorted(statuses.items()))
        print(f"{name}: {args.cases} cases in {total:.1f} s ({shown}); slowest {slowest:.2f} s: "
              f"{' '.join(slowest_argv)[:120]!r}")
    print(f"{len(failures)} failing case(s)")
    for failure in failures:
        print("  " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
