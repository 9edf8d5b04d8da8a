"""CuTe notation: printing exactly as CuTe prints static layouts, and parsing it back.

Grammar (spaces allowed between tokens; a leading ``_`` on an integer, as CuTe C++ prints
static integers, is accepted and ignored)::

    layout   := outer " o " offset " o " plain | outer " o " plain | swizzle | plain
    outer    := swizzle | plain
    swizzle  := "Sw<" int "," int "," int ">"
    plain    := inttuple [ ":" stride ]          (no stride: compact column-major)
    inttuple := int | "(" [ inttuple { "," inttuple } ] ")"
    stride   := like inttuple, whose leaves may also be bases ``k@m[@m...]`` (k steps along
                coordinate m, as in identity layouts ``(4,8):(1@0,1@1)``)
"""

from __future__ import annotations

import re
from typing import Any

from .errors import LayoutError, LayoutParseError
from .inttuple import IntTuple, congruent, is_tuple
from .limits import MAX_DIGITS, MAX_MODES, MAX_NESTING, int_text

__all__ = ["format_int_tuple", "parse", "parse_int_tuple"]


def format_int_tuple(t: IntTuple) -> str:
    """CuTe text of an int-tuple (strides may hold basis elements); refuses an integer too long
    to print (`MAX_DIGITS`) with a `LayoutError`."""
    if is_tuple(t):
        return "(" + ",".join(format_int_tuple(e) for e in t) + ")"  # type: ignore[union-attr]
    return int_text(t) if isinstance(t, int) else str(t)


_DIGITS = frozenset("0123456789")


class NotationParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.leaves = 0  # integers read in the current int-tuple, against MAX_MODES

    def fail(self, reason: str, at: int | None = None) -> LayoutParseError:
        return LayoutParseError(self.text, self.pos if at is None else at, reason)

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self, token: str) -> bool:
        self.skip_spaces()
        return self.text.startswith(token, self.pos)

    def expect(self, token: str) -> None:
        if not self.peek(token):
            found = self.text[self.pos] if self.pos < len(self.text) else "end of input"
            raise self.fail(f"expected {token!r}, found {found!r}")
        self.pos += len(token)

    def at_end(self) -> bool:
        self.skip_spaces()
        return self.pos >= len(self.text)

    def integer(self) -> int:
        self.skip_spaces()
        if self.peek("_"):
            self.pos += 1
        sign = 1
        if self.peek("-"):
            self.pos += 1
            sign = -1
        digits = self.pos
        while self.pos < len(self.text) and self.text[self.pos] in _DIGITS:
            self.pos += 1
        if self.pos == digits:
            found = self.text[self.pos] if self.pos < len(self.text) else "end of input"
            raise self.fail(f"expected an integer, found {found!r}")
        if self.pos - digits > MAX_DIGITS:
            too_long = f"an integer of {self.pos - digits} digits is too long (at most {MAX_DIGITS})"
            raise self.fail(too_long, at=digits)
        return sign * int(self.text[digits : self.pos])

    def leaf(self, allow_basis: bool) -> Any:
        """An integer, or in a stride ``k@m[@m2...]``, a scaled basis element."""
        start = self.pos
        value = self.integer()
        if not self.peek("@"):
            return value
        if not allow_basis:
            raise self.fail("a basis element 'k@m' is only allowed in a stride")
        path = []
        while self.peek("@"):
            self.pos += 1
            path.append(self.integer())
        from .basis import ScaledBasis

        try:
            return ScaledBasis(value, tuple(path))
        except LayoutError as err:
            raise self.fail(err.reason, at=start) from None

    def int_tuple(self, allow_basis: bool = False, shape: bool = False, path: tuple[int, ...] = ()) -> IntTuple:
        """An int-tuple; as a `shape`, every leaf must be positive and no inner tuple empty."""
        self.skip_spaces()
        start = self.pos
        if not path:
            self.leaves = 0
        if self.peek("("):
            if len(path) >= MAX_NESTING:
                raise self.fail(f"tuples nested more than {MAX_NESTING} levels deep")
            self.pos += 1
            items: list[IntTuple] = []
            if self.peek(")"):
                if shape and path:
                    raise self.fail(f"mode {_path(path)} is an empty tuple", at=start)
                self.pos += 1
                return ()
            while True:
                items.append(self.int_tuple(allow_basis, shape, path + (len(items),)))
                if self.peek(","):
                    self.pos += 1
                    continue
                if self.peek(")"):
                    self.pos += 1
                    return tuple(items)
                found = self.text[self.pos] if self.pos < len(self.text) else "end of input"
                raise self.fail(f"expected ',' or ')', found {found!r}")
        self.leaves += 1
        if self.leaves > MAX_MODES:
            raise self.fail(f"more than {MAX_MODES} integers in one int-tuple")
        value = self.leaf(allow_basis)
        if shape and value < 1:  # type: ignore[operator]
            where = f"mode {_path(path)}" if path else "the shape"
            raise self.fail(f"{where} is {value}; shapes must be positive", at=start)
        return value

    def plain(self) -> Any:
        from .layout import Layout

        start = self.pos
        shape = self.int_tuple(shape=True)
        stride = None
        if self.peek(":"):
            self.pos += 1
            stride_at = self.pos
            stride = self.int_tuple(allow_basis=True)
            from .inttuple import congruent

            if not congruent(shape, stride):
                raise self.fail("stride does not have the shape's nesting profile", at=stride_at)
        try:
            return Layout(shape, stride)
        except LayoutError as err:
            raise self.fail(err.reason, at=start) from None

    def swizzle(self) -> Any:
        from .swizzle import Swizzle

        start = self.pos
        self.expect("Sw<")
        b = self.integer()
        self.expect(",")
        m = self.integer()
        self.expect(",")
        s = self.integer()
        self.expect(">")
        try:
            return Swizzle(b, m, s)
        except LayoutError as err:
            raise self.fail(err.reason, at=start) from None

    def layout(self) -> Any:
        from .swizzle import ComposedLayout

        outer = self.swizzle() if self.peek("Sw<") else self.plain()
        if not self.peek("o"):
            return outer
        self.pos += 1
        offset = self._offset_then_compose()
        inner = self.plain()
        return ComposedLayout(outer, offset, inner)

    def term(self) -> Any:
        """A layout, or a bare int-tuple (a shape or tiler) when no ``:`` or `` o `` follows it."""
        self.skip_spaces()
        if self.peek("Sw<"):
            return self.layout()
        start = self.pos
        value = self.int_tuple()
        if self.peek(":") or self.peek("o"):
            self.pos = start
            return self.layout()
        return value

    def _offset_then_compose(self) -> int:
        """The optional ``off o`` of ``outer o off o inner``; 0 when absent."""
        saved = self.pos
        try:
            offset = self.integer()
        except LayoutParseError:
            self.pos = saved  # no offset: the inner layout starts here
            return 0
        if self.peek("o"):
            self.pos += 1
            return offset
        self.pos = saved
        return 0


_PRINTED = re.compile(
    r"(?:Sw<(-?\d{1,3}),(-?\d{1,3}),(-?\d{1,3})> o (-?\d{1,%d}) o )?([-\d(),]+)(?::([-\d(),]+))?" % MAX_DIGITS,
    re.ASCII,
)
"""The forms this package prints: a plain layout, or a swizzle composed with one."""
_TOKENS = re.compile(r"-?\d+|[(),]", re.ASCII)


def _as_printed(text: str) -> Any:
    """The layout of `text` if it is spelled exactly as this package prints layouts (no spaces
    inside tuples, integer strides), read token by token; None for anything else, which the
    general parser reads — or rejects, saying where. Layout texts in IR are all printed ones, and
    they are read far more often than any other: this is several times faster."""
    from .layout import Layout
    from .swizzle import ComposedLayout, Swizzle

    found = _PRINTED.fullmatch(text)
    if found is None:
        return None
    b, m, s, offset, shape_text, stride_text = found.groups()
    shape = _printed_int_tuple(shape_text)
    stride = None if stride_text is None else _printed_int_tuple(stride_text)
    if shape is None or (stride_text is not None and (stride is None or not congruent(shape, stride))) \
            or not _all_positive(shape):
        return None
    try:
        inner = Layout(shape, stride)
        return inner if b is None else ComposedLayout(Swizzle(int(b), int(m), int(s)), int(offset), inner)
    except LayoutError:
        return None  # the general parser says where and why


def _printed_int_tuple(text: str) -> IntTuple | None:
    """An int-tuple with no spaces and no empty tuples (``((2,2),8)``), or None."""
    tokens = _TOKENS.findall(text)
    if sum(map(len, tokens)) != len(text):  # a character no token takes
        return None
    if sum(1 for t in tokens if t not in "(),") > MAX_MODES:
        return None
    stack: list[list[IntTuple]] = [[]]
    want_item = True  # after '(' or ',' (or at the start): an integer or '('
    for token in tokens:
        if token == "(":
            if not want_item or len(stack) > MAX_NESTING:
                return None
            stack.append([])
            continue
        elif token == ")":
            if want_item or len(stack) < 2:
                return None
            items = stack.pop()
            stack[-1].append(tuple(items))
        elif token == ",":
            if want_item or len(stack) < 2:
                return None
            want_item = True
            continue
        else:
            if not want_item or (len(token) > 1 and token.lstrip("-").startswith("0")) or len(token) > MAX_DIGITS:
                return None  # leading zeros, long numbers: left to the general parser
            stack[-1].append(int(token))
        want_item = False
    if len(stack) != 1 or len(stack[0]) != 1:
        return None
    return stack[0][0]


def _all_positive(shape: IntTuple) -> bool:
    return all(map(_all_positive, shape)) if is_tuple(shape) else shape >= 1  # type: ignore[arg-type, operator]


def _path(path: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in path)


def parse_int_tuple(text: str) -> IntTuple:
    """Read an int-tuple such as ``((2,2),8)``."""
    if not isinstance(text, str):
        raise LayoutError("parse_int_tuple", f"expected a string, got {type(text).__name__}", text)
    p = NotationParser(text)
    value = p.int_tuple()
    if not p.at_end():
        raise p.fail(f"unexpected {text[p.pos]!r} after the int-tuple")
    return value


def parse(text: str) -> Any:
    """Read CuTe notation: ``((2,2),8):((1,4),16)``, ``Sw<3,4,3> o 0 o (8,64):(64,1)``, ``Sw<2,3,3>``."""
    if not isinstance(text, str):
        raise LayoutError("parse", f"expected a string, got {type(text).__name__}", text)
    printed = _as_printed(text)
    if printed is not None:
        return printed
    p = NotationParser(text)
    if p.at_end():
        raise p.fail("empty layout text")
    value = p.layout()
    if not p.at_end():
        raise p.fail(f"unexpected {text[p.pos]!r}")
    return value
