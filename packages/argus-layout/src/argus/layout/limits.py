"""The bounds on what layouts are read from text, built and printed.

Layouts in kernels are a few levels deep with a handful of modes and numbers of a few digits.
Far past that, Python itself gives out (its recursion limit, the 4,300 digits it converts
between an int and its text), so these bounds refuse such input up front with a
`LayoutError` that names the bound, instead of failing somewhere inside.
"""

from __future__ import annotations

from typing import Any

from .errors import LayoutError

__all__ = ["MAX_DIGITS", "MAX_MODES", "MAX_NESTING", "check_nesting", "digits_text", "int_text", "number_text"]

#: Deepest nesting of an int-tuple (shape, stride, coordinate, tiler) or an expression.
MAX_NESTING = 32

#: Most integers (leaves) in one int-tuple read from text.
MAX_MODES = 1024

#: Most decimal digits of an integer read from text or printed.
MAX_DIGITS = 4000

_MAX_BITS = 13287  # 10**MAX_DIGITS < 2**_MAX_BITS: below it, an int has at most MAX_DIGITS digits


def check_nesting(value: Any, op: str, what: str) -> None:
    """Refuse a tuple nested deeper than `MAX_NESTING` (walked without recursion)."""
    level: list[Any] = [value]
    for _ in range(MAX_NESTING + 1):
        level = [e for t in level if isinstance(t, (tuple, list)) for e in t]
        if not level:
            return
    raise LayoutError(op, f"the {what} is nested more than {MAX_NESTING} levels deep")


def int_text(n: int, op: str = "print") -> str:
    """`str(n)`, or a `LayoutError` for an integer of more than `MAX_DIGITS` digits."""
    if n.bit_length() <= _MAX_BITS:
        return str(n)
    raise LayoutError(op, f"a number of {digits_text(n)} digits is too long to print (at most {MAX_DIGITS})")


def digits_text(n: int) -> str:
    """How many decimal digits `n` has, exactly when that is cheap, else roughly (never raises)."""
    if n.bit_length() <= _MAX_BITS:
        return str(len(str(abs(n))))
    return f"about {int(n.bit_length() * 0.30103)}"


def number_text(n: int) -> str:
    """`n` for a message: its digits, or how many digits it has when that is too many to print."""
    return str(n) if n.bit_length() <= _MAX_BITS else f"a number of {digits_text(n)} digits"
