"""The ``argus-layout`` command (also ``python -m argus.layout``): show, eval and demo.

Every failure is reported as one line on stderr starting with ``error:`` and exit status 2.
Expressions given to ``eval`` are read by a small recursive-descent parser, never by Python's
``eval``::

    expr  := arg
    call  := NAME "(" [ arg { "," arg } ] ")"          NAME from a fixed list of functions
    arg   := call | layout | inttuple | int | "(" arg { "," arg } ")"
    layout:= CuTe notation, e.g. 4:2, (4,8):(1,4), Sw<3,4,3> o 0 o (8,64):(64,1)

``(4,8)`` is an int-tuple (a tiler or a shape), ``(4,8):(1,4)`` a layout: the ``:`` after the
closing parenthesis decides. A parenthesised list holding layouts, such as ``(4:1, 8:2)``, is a
tuple of tilers.
"""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO, cast

import numpy as np

from . import (
    blocked_product,
    coalesce,
    complement,
    composition,
    cosize,
    downcast,
    filter,
    filter_zeros,
    flat_divide,
    flat_product,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    max_common_layout,
    max_common_vector,
    raked_product,
    right_inverse,
    size,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    upcast,
    zipped_divide,
    zipped_product,
)
from .errors import LayoutError, LayoutParseError, excerpt
from .layout import Layout
from .limits import MAX_NESTING, int_text
from .notation import NotationParser, parse
from .output import run_with_output
from .svg import MAX_CELLS, offset_grid, save_svg, tv_grid
from .swizzle import ComposedLayout, Swizzle

__all__ = ["FUNCTIONS", "CliError", "OneLineArgumentParser", "UsageError", "evaluate", "main"]

PROG = "argus-layout"


class CliError(Exception):
    """A user-facing failure: printed as ``error: <message>``, exit status 2."""


#: The functions `eval` may call, by their CuTe names.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "composition": composition,
    "complement": complement,
    "coalesce": coalesce,
    "filter": filter,
    "filter_zeros": filter_zeros,
    "right_inverse": right_inverse,
    "left_inverse": left_inverse,
    "logical_divide": logical_divide,
    "zipped_divide": zipped_divide,
    "tiled_divide": tiled_divide,
    "flat_divide": flat_divide,
    "logical_product": logical_product,
    "zipped_product": zipped_product,
    "tiled_product": tiled_product,
    "flat_product": flat_product,
    "blocked_product": blocked_product,
    "raked_product": raked_product,
    "tile_to_shape": tile_to_shape,
    "upcast": upcast,
    "downcast": downcast,
    "max_common_vector": max_common_vector,
    "max_common_layout": max_common_layout,
    "make_layout": make_layout,
    "size": size,
    "cosize": cosize,
}


# ---- the expression parser -----------------------------------------------------------------

_INT_CHARS = set("0123456789-_")
_INT_TUPLE_CHARS = _INT_CHARS | set("(), \t\n")


class _ExprParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.depth = 0  # calls and tuples open around the current position
        self.notation = NotationParser(text)

    # -- low level --
    def fail(self, reason: str, at: int | None = None) -> CliError:
        column = self.pos if at is None else at
        shown, _ = excerpt(self.text, column)
        return CliError(f"column {column + 1} of {shown!r}: {reason}")

    def skip(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def char(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def found(self) -> str:
        c = self.char()
        return repr(c) if c else "end of input"

    def enter(self, start: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(f"calls and tuples nested more than {MAX_NESTING} levels deep", start)

    def expect(self, token: str) -> None:
        if self.char() != token:
            raise self.fail(f"expected {token!r}, found {self.found()}")
        self.pos += 1

    def name_at(self, pos: int) -> str:
        end = pos
        if end < len(self.text) and (self.text[end].isalpha()):
            end += 1
            while end < len(self.text) and (self.text[end].isalnum() or self.text[end] == "_"):
                end += 1
        return self.text[pos:end]

    # -- grammar --
    def expression(self) -> Any:
        if not self.char():
            raise self.fail("empty expression")
        value = self.arg()
        if self.char():
            raise self.fail(f"unexpected {self.found()} after the expression")
        return value

    def arg(self) -> Any:
        c = self.char()
        start = self.pos
        if not c:
            raise self.fail("expected an argument, found end of input")
        if c.isalpha():
            name = self.name_at(start)
            if name == "Sw" and self.text.startswith("Sw<", start):
                return self.literal(start)
            return self.call(name, start)
        if c == "(" and self.int_tuple_end(start) is None:
            return self.arg_tuple()
        if c == "(" or c in _INT_CHARS:
            return self.literal(start)
        raise self.fail(f"expected a function call, a layout or an integer, found {c!r}")

    def call(self, name: str, start: int) -> Any:
        func = FUNCTIONS.get(name)
        if func is None:
            raise self.fail(f"unknown function {name!r} (known: {', '.join(sorted(FUNCTIONS))})", start)
        self.pos = start + len(name)
        self.expect("(")
        self.enter(start)
        args: list[Any] = []
        if self.char() == ")":
            self.pos += 1
        else:
            while True:
                args.append(self.arg())
                if self.char() == ",":
                    self.pos += 1
                    continue
                if self.char() == ")":
                    self.pos += 1
                    break
                raise self.fail(f"expected ',' or ')' in the arguments of {name}, found {self.found()}")
        self.depth -= 1
        return _apply(name, func, args)

    def arg_tuple(self) -> tuple[Any, ...]:
        """``(a, b, ...)`` whose entries are not all integers: a tuple of tilers."""
        start = self.pos
        self.expect("(")
        self.enter(start)
        items = []
        while True:
            items.append(self.arg())
            if self.char() == ",":
                self.pos += 1
                continue
            if self.char() == ")":
                self.pos += 1
                self.depth -= 1
                return tuple(items)
            raise self.fail(f"expected ',' or ')', found {self.found()}")

    def int_tuple_end(self, pos: int) -> int | None:
        """End of the balanced int-tuple starting at `pos`, or None if it holds anything else."""
        depth = 0
        for i in range(pos, len(self.text)):
            c = self.text[i]
            if c not in _INT_TUPLE_CHARS:
                return None
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
        return None  # unclosed: let the element-wise reader say where it stops

    def literal(self, start: int) -> Any:
        """A layout or int-tuple read by the notation parser from `start`."""
        self.notation.pos = start
        try:
            value = self.notation.term()
        except LayoutParseError as err:
            raise self.fail(err.reason, err.column) from None
        self.pos = self.notation.pos
        return value


def _apply(name: str, func: Callable[..., Any], args: list[Any]) -> Any:
    try:
        inspect.signature(func).bind(*args)
    except TypeError:
        params = ", ".join(
            p.name if p.default is inspect.Parameter.empty else f"{p.name}=..."
            for p in inspect.signature(func).parameters.values()
        )
        raise CliError(f"{name}({params}) does not take {len(args)} argument(s)") from None
    try:
        return func(*args)
    except LayoutError:
        raise
    except TypeError as err:  # arguments of the wrong kind; anything else would be a bug, reported as one
        shown = ", ".join(_show(a) for a in args)
        raise CliError(f"{name}({shown}): unsupported arguments ({type(err).__name__}: {err})") from None


def evaluate(text: str) -> Any:
    """Evaluate an expression such as ``composition((6,2):(8,2), (4,3):(3,1))``."""
    return _ExprParser(text).expression()


def _show(value: Any) -> str:
    """CuTe-style text of an argument or result: ints, int-tuples, layouts, tuples of them."""
    if isinstance(value, tuple):
        return "(" + ",".join(_show(v) for v in value) + ")"
    if isinstance(value, int):
        return int_text(value)
    return str(value)


# ---- text output ---------------------------------------------------------------------------


def _parse_layout(text: str) -> Any:
    try:
        return parse(text)
    except LayoutParseError as err:
        raise CliError(
            f"cannot parse {excerpt(text, err.column)[0]!r}: {err.reason} at column {err.column + 1}"
        ) from None


def _output_path(text: str) -> Path:
    """A path to write to; a NUL character (which no file name holds) is refused by name."""
    if "\0" in text:
        raise CliError(f"the output path {text!r} contains a NUL character")
    return Path(text)


def _parse_tile(text: str) -> tuple[int, int]:
    parts = text.replace("x", ",").split(",")
    try:
        rows, cols = (int(p) for p in parts)
    except ValueError:
        raise CliError(f"--tv expects M,N (two positive integers), got {text!r}") from None
    if rows < 1 or cols < 1:
        raise CliError(f"--tv expects M,N (two positive integers), got {text!r}")
    return rows, cols


def format_table(cells: list[list[str]], row_labels: bool = True) -> list[str]:
    """Aligned text columns with column indices on top and, optionally, row indices on the left."""
    if not cells:
        return []
    cols = len(cells[0])
    width = max(len(str(cols - 1)), *(len(c) for row in cells for c in row))
    lead = len(str(len(cells) - 1)) if row_labels else 0
    pad = " " * (lead + 3) if row_labels else " "
    lines = [pad + " ".join(str(n).rjust(width) for n in range(cols))]
    lines.append(pad + "-" * (cols * (width + 1) - 1))
    for m, row in enumerate(cells):
        prefix = f"{str(m).rjust(lead)} | " if row_labels else " "
        lines.append(prefix + " ".join(c.rjust(width) for c in row))
    return lines


def offset_table(layout: Any) -> list[str]:
    grid = offset_grid(layout, "show")
    return format_table([[str(int(v)) for v in row] for row in grid], row_labels=layout.rank == 2)


def tv_table(layout: Any, tile: tuple[int, int]) -> tuple[list[str], int, int]:
    """Rows ``T<t>V<v>`` per tile cell (``.`` for none, ``*`` suffix when shared), covered, shared."""
    grid = tv_grid(layout, tile, "show")
    covered = sum(1 for row in grid for owners in row if owners)
    shared = sum(1 for row in grid for owners in row if len(owners) > 1)
    cells = [
        [f"T{o[0][0]}V{o[0][1]}" + ("*" if len(o) > 1 else "") if o else "." for o in row] for row in grid
    ]
    return format_table(cells), covered, shared


def _describe(layout: Any, out: TextIO) -> None:
    print(f"layout  {layout}", file=out)
    if isinstance(layout, Swizzle):
        print(f"period  {int_text(layout.size())}", file=out)
        print(
            "a swizzle is a function on offsets; compose it with a layout to draw it, "
            f"e.g. '{layout} o 0 o (8,64):(64,1)'",
            file=out,
        )
        return
    print(f"size    {int_text(layout.size())}", file=out)
    try:
        print(f"cosize  {int_text(layout.cosize())}", file=out)
    except LayoutError as err:
        print(f"cosize  (not computed: {err.reason})", file=out)
    print(f"rank    {layout.rank}", file=out)


# ---- commands ------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace, out: TextIO) -> int:
    layout = _parse_layout(args.layout)
    tile = _parse_tile(args.tv) if args.tv is not None else None
    if isinstance(layout, Swizzle):
        if args.output or tile:
            raise CliError(
                f"a bare swizzle cannot be drawn; compose it with a layout, e.g. '{layout} o 0 o 8:1'"
            )
        _describe(layout, out)
        return 0
    if tile is not None:
        table, covered, shared = tv_table(layout, tile)
        lines = [
            f"tv tile {tile[0]}x{tile[1]}: {covered} of {tile[0] * tile[1]} elements owned, "
            f"{shared} by more than one (thread, value) (marked *)",
            *table,
        ]
    elif layout.rank > 2:
        lines = [f"(no grid for rank {layout.rank}: slice it to two modes, e.g. layout(None, None, 0))"]
    elif layout.size() > MAX_CELLS:
        lines = [f"(no grid: {int_text(layout.size())} cells, more than {MAX_CELLS})"]
    else:
        lines = offset_table(layout)
    _describe(layout, out)
    print("\n".join(lines), file=out)
    if args.output:
        path = save_svg(layout, _output_path(args.output), tv_tile=tile)
        print(f"wrote {path}", file=out)
    return 0


def _result_text(value: Any) -> str:
    if isinstance(value, (Layout, ComposedLayout, Swizzle)):
        return str(value)
    return _show(value)


def cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    print(_result_text(evaluate(args.expression)), file=out)
    return 0


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    outdir = _output_path(args.output)
    outdir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def say(text: str = "") -> None:
        print(text, file=out)

    def draw(name: str, layout: Any, **kw: Any) -> None:
        written.append(save_svg(layout, outdir / f"{name}.svg", **kw))

    def grid(layout: Any) -> None:
        for line in offset_table(layout):
            say("     " + line)

    say("argus.layout tour: CuTe layouts, computed exactly")
    say()
    say("1. A layout shape:stride maps a coordinate to an offset.")
    for name, text in (
        ("row_major_4x8", "(4,8):(8,1)"),
        ("col_major_4x8", "(4,8):(1,4)"),
        ("nested", "((2,2),8):((1,4),16)"),
    ):
        layout = parse(text)
        say(f"   {text}")
        grid(layout)
        draw(name, layout)
    say()
    comp = evaluate("composition((6,2):(8,2), (4,3):(3,1))")
    say(f"2. composition((6,2):(8,2), (4,3):(3,1)) = {comp}")
    draw("composition", comp)
    div = evaluate("logical_divide((4,2,3):(2,1,8), 4:2)")
    say(f"3. logical_divide((4,2,3):(2,1,8), 4:2) = {div}")
    draw("logical_divide", div)
    tile = parse("(128,64):(64,1)")
    tiles = zipped_divide(tile, (64, 16))
    say(f"4. a 128x64 bf16 tile {tile} cut into 64x16 tiles:")
    say(f"   zipped_divide(tile, (64,16)) = {tiles}")
    say(f"   mode 0 walks one tile ({tiles[0].size()} elements), mode 1 picks one of {tiles[1].size()} tiles")
    draw("zipped_divide_tile0", tiles[0], title=f"tile 0 of zipped_divide: {tiles[0]}")
    vec = upcast(tile, 8)
    say(f"5. upcast(tile, 8) = {vec}: the same tile as 16-byte vectors of 8 bf16")
    sw = parse("Sw<3,4,3> o 0 o (8,64):(64,1)")
    chunks = composition(sw, (8, Layout(4, 16)))
    say(f"6. swizzle {sw}; first element of each 16-element chunk, per row:")
    say(f"   composition(sw, (8, 4:16)) = {chunks}")
    grid(chunks)
    draw("swizzle", sw)
    say("7. refused: composition((3,4):(4,1), 8:2)")
    try:
        composition(parse("(3,4):(4,1)"), parse("8:2"))
        raise CliError("demo: the refused composition was accepted")
    except LayoutError as err:
        say(f"   LayoutError: {err.reason}")
    tv = parse("((4,8),(2,2)):((32,1),(16,8))")
    owned = np.sort(tv.offsets())
    if not np.array_equal(owned, np.arange(16 * 8)):
        raise CliError("demo: the TV layout does not cover its 16x8 tile exactly once")
    say(f"8. TV layout {tv}: 32 threads x 4 values on a 16x8 tile (column-major),")
    say("   every one of the 128 elements owned by exactly one (thread, value)")
    draw("tv_16x8", tv, tv_tile=(16, 8))
    say()
    say(f"wrote {len(written)} SVG files:")
    for path in written:
        say(f"   {path}")
    return 0


# ---- entry point ---------------------------------------------------------------------------

_DESCRIPTION = """\
Draw and compute CuTe layouts (also runnable as: python -m argus.layout).

commands:
  show LAYOUT   print a layout's size, cosize, rank and grid of offsets; -o writes an SVG
                  e.g. argus-layout show "(8,8):(8,1)" -o l.svg
  eval EXPR     evaluate a layout-algebra expression
                  e.g. argus-layout eval "composition((6,2):(8,2), (4,3):(3,1))"
  demo          a short tour of the algebra, writing SVG pictures
                  e.g. argus-layout demo -o layout-demo
"""


class UsageError(Exception):
    """A command line argparse cannot read: the message and, in parentheses, the usage."""


class OneLineArgumentParser(argparse.ArgumentParser):
    """Reports usage mistakes by raising `UsageError`, for the command to print as one
    ``error:`` line, instead of printing the usage and exiting from inside argparse. The
    parsers of its sub-commands are of this class too."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise UsageError(f"{message} ({self.format_usage().strip()})")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog=PROG,
        usage="%(prog)s [-h] COMMAND ...",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    # the description lists the commands with examples; argparse's own list would repeat it
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, help=argparse.SUPPRESS)

    show = sub.add_parser(
        "show",
        help="print a layout and its grid of offsets",
        description=(
            "Print a layout's notation, size, cosize, rank and grid of offsets, "
            'e.g. show "(8,8):(8,1)" -o l.svg, or show "((4,8),(2,2)):((32,1),(16,8))" --tv 16,8.'
        ),
    )
    show.add_argument(
        "layout",
        metavar="LAYOUT",
        help='CuTe notation, e.g. "(8,8):(8,1)" or "Sw<3,4,3> o 0 o (8,64):(64,1)"',
    )
    show.add_argument("-o", "--output", metavar="OUT.svg", help="also write an SVG picture")
    show.add_argument("--tv", metavar="M,N", help="read LAYOUT as a (thread, value) layout on an MxN tile")
    show.set_defaults(run=cmd_show)

    ev = sub.add_parser(
        "eval",
        help="evaluate a layout-algebra expression",
        description=(
            'Evaluate an expression of layout functions, e.g. eval "logical_divide((4,2,3):(2,1,8), 4:2)". '
            f"Functions: {', '.join(sorted(FUNCTIONS))}."
        ),
    )
    ev.add_argument("expression", metavar="EXPR", help='e.g. "composition((6,2):(8,2), (4,3):(3,1))"')
    ev.set_defaults(run=cmd_eval)

    demo = sub.add_parser(
        "demo",
        help="a short tour, writing SVG pictures",
        description="A short tour of layouts and their algebra; writes SVG pictures into DIR.",
    )
    demo.add_argument(
        "-o", "--output", metavar="DIR", default="layout-demo", help="where to write (default: ./layout-demo)"
    )
    demo.set_defaults(run=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 success, 2 error).

    Output to a reader that stops reading (``| head -1``) is dropped without changing the status.
    """
    return run_with_output(lambda out, err: _run(argv, out, err))


def _run(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help
        return exit_.code if isinstance(exit_.code, int) else 2
    except UsageError as usage:
        _error(str(usage), err)
        return 2
    try:
        return int(args.run(args, out))
    except (CliError, LayoutError) as failure:
        _error(str(failure), err)
    except OSError as failure:
        _error(f"{failure.strerror or failure}: {failure.filename}" if failure.filename else str(failure), err)
    except RecursionError:
        _error(f"{args.command}: the input is nested too deeply to evaluate", err)
    except MemoryError:
        _error(f"{args.command}: the input needs more memory than there is", err)
    except Exception as failure:  # noqa: BLE001 - a command line reports, it does not crash
        _error(f"internal error in {args.command}: {type(failure).__name__}: {failure}", err)
    return 2


def _error(message: str, err: TextIO) -> None:
    print("error: " + " ".join(message.split()), file=err)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
