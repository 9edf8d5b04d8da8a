"""``argus-verify``: prove or refute from a shell. Exit status 0 proved, 1 violated (the
counterexample is printed), 2 unknown or bad input (one ``error:`` line, with the position of
the error or the usage)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TextIO

from argus.layout import Layout, LayoutError, LayoutParseError, parse
from argus.layout.cli import OneLineArgumentParser, UsageError
from argus.layout.errors import excerpt
from argus.layout.output import run_with_output

from . import layouts
from .results import Result

#: The status of bad input, and of anything else that is neither a proof nor a refutation.
NOT_DECIDED = 2


class _BadInput(Exception):
    pass


def _layout(text: str) -> Any:
    try:
        return parse(text)
    except LayoutParseError as err:
        raise _BadInput(f"cannot read {excerpt(text, err.column)[0]!r}: {err.reason} at column {err.column + 1}") from None


def _plain(text: str, role: str) -> Layout:
    value = _layout(text)
    if not isinstance(value, Layout):
        raise _BadInput(f"{role} must be a plain layout shape:stride, got {excerpt(text, 0)[0]!r}")
    return value


def _positive(text: str, role: str) -> int:
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 100 or int(digits) < 1:
        raise _BadInput(f"{role} must be a positive integer (at most 100 digits), got {excerpt(text, 0)[0]!r}")
    return int(digits)


CHECKS = {
    "injective": ("LAYOUT", "no two coordinates share an offset",
                  lambda a: layouts.injective(_layout(a.layouts[0]))),
    "bijective": ("LAYOUT", "one-to-one onto [0, cosize)",
                  lambda a: layouts.bijective(_layout(a.layouts[0]))),
    "equal": ("A B", "the same function on the domain",
              lambda a: layouts.equal(_layout(a.layouts[0]), _layout(a.layouts[1]))),
    "composition": ("A B [R]", "A∘B is a layout (and equals R)",
                    lambda a: layouts.composition(_layout(a.layouts[0]), _plain(a.layouts[1], "B"),
                                                  _layout(a.layouts[2]) if len(a.layouts) > 2 else None)),
    "partition": ("TV TILE_SIZE", "a thread/value layout covers a tile exactly once",
                  lambda a: layouts.partition(_plain(a.layouts[0], "TV"), _positive(a.layouts[1], "TILE_SIZE"))),
    "banks": ("ADDRESSES ELEMENT_BYTES ACCESS_BYTES", "a warp's shared-memory access is bank-conflict free",
              lambda a: layouts.bank_conflict_free(_layout(a.layouts[0]), _positive(a.layouts[1], "ELEMENT_BYTES"),
                                                   _positive(a.layouts[2], "ACCESS_BYTES"))),
}
_ARITY = {"injective": (1, 1), "bijective": (1, 1), "equal": (2, 2), "composition": (2, 3), "partition": (2, 2), "banks": (3, 3)}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command; the exit status is the verdict's (0, 1, 2), or 2 for bad input.

    Output to a reader that stops reading (``| head -1``) is dropped without changing the status.
    """
    return run_with_output(lambda out, err: _run(argv, out, err))


def _run(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    parser = OneLineArgumentParser(prog="argus-verify", description=__doc__)
    sub = parser.add_subparsers(dest="domain", metavar="DOMAIN", required=True)
    layout = sub.add_parser("layout", help="properties of CuTe layouts", description="Prove or refute a property of layouts.")
    checks = layout.add_subparsers(dest="check", metavar="CHECK", required=True)
    for name, (usage, help_) in ((n, (c[0], c[1])) for n, c in CHECKS.items()):
        p = checks.add_parser(name, help=f"{help_}   ({usage})", description=help_)
        p.add_argument("layouts", nargs="+", metavar="ARG", help=usage)
        p.add_argument("--json", action="store_true", help="print the result as JSON")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help
        return NOT_DECIDED if exit_.code else 0
    except UsageError as usage:
        print("error: " + " ".join(str(usage).split()), file=err)
        return NOT_DECIDED
    low, high = _ARITY[args.check]
    if not low <= len(args.layouts) <= high:
        print(f"error: {args.check} takes {CHECKS[args.check][0]}", file=err)
        return NOT_DECIDED
    try:
        result: Result = CHECKS[args.check][2](args)
    except (_BadInput, LayoutError) as failure:
        print("error: " + " ".join(str(failure).split()), file=err)
        return NOT_DECIDED
    except RecursionError:
        print(f"error: {args.check}: the input is nested too deeply to check", file=err)
        return NOT_DECIDED
    except MemoryError:
        print(f"error: {args.check}: checking needs more memory than there is", file=err)
        return NOT_DECIDED
    except Exception as failure:  # noqa: BLE001 - never a traceback, and never a verdict's status
        print(f"error: internal error in {args.check}: {type(failure).__name__}: {failure}", file=err)
        return NOT_DECIDED
    try:
        text = result.json() if args.json else result.text()
    except ValueError:  # Python prints no integer of more than 4,300 digits
        print(f"error: {args.check}: the result holds a number too long to print", file=err)
        return NOT_DECIDED
    print(text, file=out)
    return result.verdict.exit_status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
