"""``argus-verify``: prove or refute from a shell. Exit status 0 proved, 1 refuted (the
counterexample is printed), 2 unknown or bad input (with the position of the error)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from argus.layout import Layout, LayoutError, LayoutParseError, parse

from . import layouts
from .results import Result


class _BadInput(Exception):
    pass


def _layout(text: str) -> Any:
    try:
        return parse(text)
    except LayoutParseError as err:
        raise _BadInput(f"cannot read {text!r}: {err.reason} at column {err.column + 1}") from None


def _plain(text: str, role: str) -> Layout:
    value = _layout(text)
    if not isinstance(value, Layout):
        raise _BadInput(f"{role} must be a plain layout shape:stride, got {text!r}")
    return value


def _positive(text: str, role: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise _BadInput(f"{role} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise _BadInput(f"{role} must be a positive integer, got {text!r}")
    return value


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
    parser = argparse.ArgumentParser(prog="argus-verify", description=__doc__)
    sub = parser.add_subparsers(dest="domain", metavar="DOMAIN")
    layout = sub.add_parser("layout", help="properties of CuTe layouts", description="Prove or refute a property of layouts.")
    checks = layout.add_subparsers(dest="check", metavar="CHECK")
    for name, (usage, help_) in ((n, (c[0], c[1])) for n, c in CHECKS.items()):
        p = checks.add_parser(name, help=f"{help_}   ({usage})", description=help_)
        p.add_argument("layouts", nargs="+", metavar="ARG", help=usage)
        p.add_argument("--json", action="store_true", help="print the result as JSON")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return 2 if exit_.code else 0
    if args.domain is None or getattr(args, "check", None) is None:
        parser.print_help()
        return 2
    low, high = _ARITY[args.check]
    if not low <= len(args.layouts) <= high:
        print(f"error: {args.check} takes {CHECKS[args.check][0]}", file=sys.stderr)
        return 2
    try:
        result: Result = CHECKS[args.check][2](args)
    except (_BadInput, LayoutError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(result.json() if args.json else result.text())
    return result.verdict.exit_status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
