"""Integer ops: what each ``arith`` integer op, comparison and conversion computes, once.

Values are bit patterns of an explicit width, as numpy arrays of any shape. An N-bit value is
held as its signed reading (``int8`` … ``int64``), as the interpreter holds it, and a 1-bit
value (a condition) as a bool; inputs may be held in any integer dtype (the checker holds
int64) and only their low N bits count. Signedness lives in the op, not the value: ``divui``
reads the same bits as unsigned.

The meaning is MLIR's ``arith`` and LLVM's, as the LLVM lowering (`argus.dsl.llvm`) emits it:
addition, subtraction and multiplication wrap; ``divsi`` truncates toward zero and ``remsi``
takes the dividend's sign; ``floordivsi`` floors. Where the language leaves a result
undefined (docs/language.md, ``undefined-arithmetic``) — a division or remainder by zero, a
signed division of the most negative value by -1, a shift by a negative amount or by the width
or more — `IntegerOp.undefined` says so and the interpreter faults. The function still answers
there, so that a consumer evaluating without faulting (the checker) gets one answer: the
lowering's where it defines one (a divisor of 0 divides by 1, as the checker's ``x // 0 = x``;
a shift past the width shifts every bit out: 0, or the sign for ``shrsi``), the wrapped one
where LLVM does not (``INT_MIN / -1`` is ``INT_MIN``, its remainder 0).

Float-to-integer conversions saturate and send NaN to 0 (LLVM's ``fptosi.sat``, what the
lowering emits and what both GPU families' conversion instructions do).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects import arith, builtin
from xdsl.ir import Attribute

__all__ = ["INTEGER_CASTS", "INTEGER_OPS", "IntegerCast", "IntegerOp", "Numbers", "WIDTHS", "compare",
           "comparison_on_int64", "held", "signed", "unsigned", "width_of"]

#: The widths integer values have in the language (1: conditions).
WIDTHS = (1, 8, 16, 32, 64)

_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)


def width_of(t: Attribute) -> int:
    """The width of an MLIR integer type (1 for a condition, which the DSL holds as a bool)."""
    if not isinstance(t, builtin.IntegerType):
        raise TypeError(f"{t} is not an integer type")
    return t.width.data


def _mask(bits: int) -> np.uint64:
    if bits not in WIDTHS:
        raise ValueError(f"integer width {bits} is not one of {', '.join(map(str, WIDTHS))}")
    return _ALL_ONES if bits == 64 else np.uint64((1 << bits) - 1)


def _pattern(x: np.ndarray | int) -> np.ndarray:
    """Any integer array as uint64, modulo 2^64 (negative values as their two's complement)."""
    x = np.asarray(x)
    if x.dtype == bool:
        return x.astype(np.uint64)
    if x.dtype.kind not in "iu":
        raise TypeError(f"integer ops take integer arrays, got {x.dtype}")
    return x.astype(np.uint64)


def unsigned(x: np.ndarray | int, bits: int) -> np.ndarray:
    """The low `bits` bits of `x` read as an unsigned number (uint64)."""
    if bits in (32, 64) and isinstance(x, np.ndarray) and x.dtype.kind == "i":  # a cast keeps the low bits
        return x.astype(np.uint32 if bits == 32 else np.uint64).astype(np.uint64, copy=False)
    return _pattern(x) & _mask(bits)


def signed(x: np.ndarray | int, bits: int) -> np.ndarray:
    """The low `bits` bits of `x` read as a two's-complement number (int64)."""
    if bits in (32, 64) and isinstance(x, np.ndarray) and x.dtype.kind == "i":  # a cast keeps the low bits
        return x.astype(np.int32 if bits == 32 else np.int64, copy=False).astype(np.int64, copy=False)
    u = unsigned(x, bits)
    if bits == 64:
        return u.view(np.int64)
    sign = np.uint64(1 << (bits - 1))
    return (u ^ sign).astype(np.int64) - np.int64(1 << (bits - 1))


def held(x: np.ndarray | int, bits: int) -> np.ndarray:
    """How an N-bit result is held: its signed reading in ``intN`` (a bool for 1 bit)."""
    u = unsigned(x, bits)
    if bits == 1:
        return u.astype(bool)
    return u.astype(np.dtype(f"u{bits // 8}")).view(np.dtype(f"i{bits // 8}"))


# ---- binary ops ------------------------------------------------------------------------------

Binary = Callable[[np.ndarray, np.ndarray, int], np.ndarray]

Numbers = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""An op at one width on int64 arrays (the checker's numbers, `IntegerOp.on_int64`)."""
Fast = Callable[[int, Numbers], Numbers]
"""Given a width and the op's general function there, its fast function (`IntegerOp.fast`)."""

_INT64 = np.dtype(np.int64)


@dataclass(frozen=True)
class IntegerOp:
    """One binary integer op: `fn(a, b, bits)` is its result held as `held` holds it."""

    name: str
    fn: Binary
    divides: bool = False
    """A division or remainder: undefined for a divisor of 0."""
    shifts: bool = False
    """A shift: undefined for an amount (read unsigned) of the width or more."""
    unsigned: bool = False
    """Reads its operands as unsigned numbers."""
    overflows: bool = False
    """A signed division: also undefined for the most negative value divided by -1."""
    fast: Fast | None = field(default=None, compare=False, repr=False)
    """At 32 or 64 bits, the op on int64 arrays in straight numpy (`on_int64`): it leaves any
    case it does not cover to the general function, which defines the op and which it must
    agree with everywhere else (`test_integer_fast_paths`)."""
    _made: dict[int, Numbers] = field(default_factory=dict, init=False, compare=False, repr=False)
    """`on_int64`'s functions, by width."""

    def __call__(self, a: np.ndarray | int, b: np.ndarray | int, bits: int) -> np.ndarray:
        if not self.divides:  # integer array arithmetic raises no floating-point warnings
            return self.fn(np.asarray(a), np.asarray(b), bits)
        with np.errstate(all="ignore"):
            return self.fn(np.asarray(a), np.asarray(b), bits)

    def on_int64(self, bits: int) -> Numbers:
        """This op at width `bits` on int64 arrays whose low `bits` bits are the operands (the
        checker's numbers), its result as int64: the signed reading of the `bits`-bit result (a
        condition: 0 or 1). Made once per op and width; at 32 and 64 bits it runs the numpy
        function on int64 (or int32) arrays without the bit readings `__call__` makes, and any
        other operands (another dtype, or a case the fast path leaves out: a divisor that is not
        positive) take `__call__`."""
        made = self._made.get(bits)
        if made is None:
            made = self._made[bits] = _on_int64(self, bits)
        return made

    def undefined(self, a: np.ndarray | int, b: np.ndarray | int, bits: int) -> np.ndarray:
        """Where the result is undefined on the GPU (the interpreter's `undefined-arithmetic`)."""
        shape = np.broadcast_shapes(np.shape(a), np.shape(b))
        if self.divides:
            bad = unsigned(b, bits) == 0
            if self.overflows:
                bad = bad | ((signed(a, bits) == _lowest(bits)) & (signed(b, bits) == -1))
            return np.broadcast_to(bad, shape)
        if self.shifts:
            return np.broadcast_to(unsigned(b, bits) >= np.uint64(bits), shape)
        return np.zeros(shape, bool)


def _lowest(bits: int) -> int:
    return -(1 << (bits - 1))


_FAST = {32: np.dtype(np.int32), 64: np.dtype(np.int64)}
"""Widths whose results signed integer arrays compute directly: two's complement in int64 wraps
modulo 2^64, and a cast to int32 keeps the low 32 bits (the checker's numbers take this path)."""


def _wrapping(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Binary:
    """An op on bit patterns modulo 2^64, whose low bits are the N-bit result."""
    def op(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
        held_as = _FAST.get(bits)
        if held_as is not None and a.dtype.kind == "i" and b.dtype.kind == "i":
            return fn(a.astype(np.int64, copy=False), b.astype(np.int64, copy=False)).astype(held_as, copy=False)
        return held(fn(_pattern(a), _pattern(b)), bits)
    return op


def _signed_divisor(a: np.ndarray, b: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Both operands read signed, the divisor 1 where it is 0 or the quotient overflows."""
    x, y = signed(a, bits), signed(b, bits)
    return x, np.where((y == 0) | ((x == _lowest(bits)) & (y == -1)), np.int64(1), y)


def _divsi(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    x, y = _signed_divisor(a, b, bits)
    q = np.floor_divide(x, y)
    return held(q + ((x - q * y != 0) & ((x < 0) != (y < 0))), bits)  # floor to truncation


def _floordivsi(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    x, y = _signed_divisor(a, b, bits)
    return held(np.floor_divide(x, y), bits)


def _remsi(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    x, y = _signed_divisor(a, b, bits)
    return held(np.fmod(x, y), bits)  # the dividend's sign


def _unsigned_divisor(a: np.ndarray, b: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    x, y = unsigned(a, bits), unsigned(b, bits)
    return x, np.where(y == 0, np.uint64(1), y)


def _divui(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    return held(np.floor_divide(*_unsigned_divisor(a, b, bits)), bits)


def _remui(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    return held(np.remainder(*_unsigned_divisor(a, b, bits)), bits)


def _amount(b: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """A shift's amount read unsigned, and where it is inside the width (0 elsewhere)."""
    n = unsigned(b, bits)
    inside = n < np.uint64(bits)
    return np.where(inside, n, np.uint64(0)), inside


def _shli(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    n, inside = _amount(b, bits)
    return held(np.where(inside, np.left_shift(unsigned(a, bits), n), np.uint64(0)), bits)


def _shrui(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    n, inside = _amount(b, bits)
    return held(np.where(inside, np.right_shift(unsigned(a, bits), n), np.uint64(0)), bits)


def _shrsi(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    n, inside = _amount(b, bits)
    return held(np.right_shift(signed(a, bits), np.where(inside, n, np.uint64(bits - 1)).astype(np.int64)), bits)


def _by(read: Callable[[np.ndarray, int], np.ndarray], fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Binary:
    """An op on the operands read signed or unsigned (min and max)."""
    def op(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
        held_as = _FAST.get(bits)
        if read is signed and held_as is not None and a.dtype.kind == "i" and b.dtype.kind == "i":
            return fn(a.astype(held_as, copy=False), b.astype(held_as, copy=False))  # type: ignore[no-any-return]
        return held(fn(read(a, bits), read(b, bits)), bits)
    return op


# ---- the same ops on int64 arrays, for the checker ----------------------------------------------
#
# The checker holds every number as int64 and computes an op over a few hundred threads at a
# time, where the bit readings of the general functions (casts, masks, `np.errstate`) cost
# several times the arithmetic. At 32 and 64 bits an int64 array already holds the value (its
# low bits); these compute the same result with one numpy function and the casts that wrap it:
# int64 arithmetic wraps modulo 2^64, and a cast to int32 keeps the low 32 bits, read signed.

_HELD_AS = {32: np.dtype(np.int32), 64: _INT64}


def _on_int64(op: IntegerOp, bits: int) -> Numbers:
    """`IntegerOp.on_int64`: the fast function where the op has one at this width (each takes
    operands that are not both int64 arrays, and any case it leaves out, to the general one)."""
    def general(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return op(a, b, bits).astype(np.int64, copy=False)

    return op.fast(bits, general) if op.fast is not None and bits in _HELD_AS else general


def _both_int64(a: object, b: object) -> bool:
    return type(a) is np.ndarray and type(b) is np.ndarray and a.dtype is _INT64 and b.dtype is _INT64


def _wraps(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Fast:
    """Addition, subtraction, multiplication, bitwise ops: the low N bits of the int64 result
    are those of the N-bit one."""
    def at(bits: int, general: Numbers) -> Numbers:
        if bits == 64:
            def numbers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
                return fn(a, b) if _both_int64(a, b) else general(a, b)
        else:
            held_as = _HELD_AS[bits]

            def numbers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
                if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype is _INT64 and b.dtype is _INT64:
                    return fn(a, b).astype(held_as).astype(np.int64)
                return general(a, b)
        return numbers
    return at


def _signed_fast(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Fast:
    """Signed min and max: on the operands read signed at the width (a cast)."""
    def at(bits: int, general: Numbers) -> Numbers:
        held_as = _HELD_AS[bits]

        def numbers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            if not _both_int64(a, b):
                return general(a, b)
            return fn(a.astype(held_as, copy=False), b.astype(held_as, copy=False)).astype(np.int64, copy=False)
        return numbers
    return at


def _positive_divisor(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Fast:
    """`floordivsi`, `remsi` where every divisor (read signed) is positive: neither a division by
    0 nor the one overflowing quotient can occur, and the quotient or remainder is no larger in
    magnitude than the dividend, so it fits the width. Other divisors take the general function."""
    def at(bits: int, general: Numbers) -> Numbers:
        held_as = _HELD_AS[bits]

        def numbers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            if not _both_int64(a, b):
                return general(a, b)
            x, y = a, b  # (int64 divides faster than int32: the signed readings in int64)
            if bits != 64:
                x, y = a.astype(held_as).astype(np.int64), b.astype(held_as).astype(np.int64)
            if not y.size or np.minimum.reduce(y, axis=None) <= 0:
                return general(a, b)
            return fn(x, y)
        return numbers
    return at


def _shrsi_fast(bits: int, general: Numbers) -> Numbers:
    """An arithmetic right shift by the amount read unsigned, at most the width less 1 (an
    amount of the width or more shifts every bit out: the sign)."""
    held_as, top = _HELD_AS[bits], np.uint64(bits - 1)

    def numbers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if not _both_int64(a, b):
            return general(a, b)
        x = a.astype(held_as, copy=False).astype(np.int64, copy=False)
        n = b.astype(held_as, copy=False).astype(np.uint64)  # the signed reading's bits: a negative amount is huge
        return np.right_shift(x, np.minimum(n, top).view(np.int64))  # type: ignore[no-any-return]
    return numbers


#: Every binary integer op of the language, by its ``arith`` class.
INTEGER_OPS: dict[type, IntegerOp] = {
    arith.AddiOp: IntegerOp("addi", _wrapping(np.add), fast=_wraps(np.add)),
    arith.SubiOp: IntegerOp("subi", _wrapping(np.subtract), fast=_wraps(np.subtract)),
    arith.MuliOp: IntegerOp("muli", _wrapping(np.multiply), fast=_wraps(np.multiply)),
    arith.DivSIOp: IntegerOp("divsi", _divsi, divides=True, overflows=True),
    arith.FloorDivSIOp: IntegerOp("floordivsi", _floordivsi, divides=True, overflows=True,
                                  fast=_positive_divisor(np.floor_divide)),
    arith.RemSIOp: IntegerOp("remsi", _remsi, divides=True, overflows=True, fast=_positive_divisor(np.fmod)),
    arith.DivUIOp: IntegerOp("divui", _divui, divides=True, unsigned=True),
    arith.RemUIOp: IntegerOp("remui", _remui, divides=True, unsigned=True),
    arith.AndIOp: IntegerOp("andi", _wrapping(np.bitwise_and), fast=_wraps(np.bitwise_and)),
    arith.OrIOp: IntegerOp("ori", _wrapping(np.bitwise_or), fast=_wraps(np.bitwise_or)),
    arith.XOrIOp: IntegerOp("xori", _wrapping(np.bitwise_xor), fast=_wraps(np.bitwise_xor)),
    arith.ShLIOp: IntegerOp("shli", _shli, shifts=True),
    arith.ShRSIOp: IntegerOp("shrsi", _shrsi, shifts=True, fast=_shrsi_fast),
    arith.ShRUIOp: IntegerOp("shrui", _shrui, shifts=True, unsigned=True),
    arith.MinSIOp: IntegerOp("minsi", _by(signed, np.minimum), fast=_signed_fast(np.minimum)),
    arith.MaxSIOp: IntegerOp("maxsi", _by(signed, np.maximum), fast=_signed_fast(np.maximum)),
    arith.MinUIOp: IntegerOp("minui", _by(unsigned, np.minimum), unsigned=True),
    arith.MaxUIOp: IntegerOp("maxui", _by(unsigned, np.maximum), unsigned=True),
}


# ---- comparisons -------------------------------------------------------------------------------

_PREDICATES: dict[int, tuple[Callable[[np.ndarray, np.ndarray], np.ndarray], bool]] = {
    0: (np.equal, False), 1: (np.not_equal, False), 2: (np.less, False), 3: (np.less_equal, False),
    4: (np.greater, False), 5: (np.greater_equal, False),
    6: (np.less, True), 7: (np.less_equal, True), 8: (np.greater, True), 9: (np.greater_equal, True),
}


def compare(predicate: int, a: np.ndarray | int, b: np.ndarray | int, bits: int) -> np.ndarray:
    """``arith.cmpi`` with `predicate` (eq ne slt sle sgt sge ult ule ugt uge: 0 … 9) on
    `bits`-bit operands: a bool array."""
    if predicate not in _PREDICATES:
        raise ValueError(f"arith.cmpi has predicates 0 to 9, got {predicate}")
    fn, is_unsigned = _PREDICATES[predicate]
    read = unsigned if is_unsigned else signed
    return fn(read(a, bits), read(b, bits))  # type: ignore[no-any-return]


_COMPARISONS: dict[tuple[int, int], Numbers] = {}


def comparison_on_int64(predicate: int, bits: int) -> Numbers:
    """``arith.cmpi`` with `predicate` at width `bits` on int64 arrays (the checker's numbers,
    as `IntegerOp.on_int64`), its result 0 or 1 as int64. Made once per predicate and width; at
    32 and 64 bits the operands are read signed or unsigned by a cast or a view."""
    made = _COMPARISONS.get((predicate, bits))
    if made is None:
        if predicate not in _PREDICATES:
            raise ValueError(f"arith.cmpi has predicates 0 to 9, got {predicate}")
        made = _COMPARISONS[(predicate, bits)] = _comparison(predicate, bits)
    return made


def _comparison(predicate: int, bits: int) -> Numbers:
    fn, is_unsigned = _PREDICATES[predicate]

    def general(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return compare(predicate, a, b, bits).astype(np.int64)

    if bits not in _HELD_AS:
        return general
    read = np.dtype(f"u{bits // 8}") if is_unsigned else _HELD_AS[bits]  # a cast keeps the low bits

    def numbers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if type(a) is np.ndarray and type(b) is np.ndarray and a.dtype is _INT64 and b.dtype is _INT64:
            found = fn(a.astype(read, copy=False), b.astype(read, copy=False))
            return found.astype(np.int64)  # type: ignore[no-any-return]
        return general(a, b)

    return numbers


# ---- conversions -------------------------------------------------------------------------------

Target = int | np.dtype
"""A conversion's result: a width (an integer result) or the numpy dtype a float is held in."""


@dataclass(frozen=True)
class IntegerCast:
    """One conversion to or from integers: `fn(x, source_bits, target)`; an integer result is
    held as `held` holds it, a float one in the numpy dtype given (a narrower float type then
    rounds it, `DType.round`). `source_bits` is ignored for a float source."""

    name: str
    fn: Callable[[np.ndarray, int, Target], np.ndarray]
    to_float: bool = False
    from_float: bool = False

    def __call__(self, x: np.ndarray | int | float, source_bits: int, target: Target) -> np.ndarray:
        with np.errstate(all="ignore"):
            return self.fn(np.asarray(x), source_bits, target)


def _width(target: Target) -> int:
    if not isinstance(target, int):
        raise TypeError(f"an integer conversion's target is a width, got {target}")
    return target


def _float_to_int(is_unsigned: bool) -> Callable[[np.ndarray, int, Target], np.ndarray]:
    def fn(x: np.ndarray, source_bits: int, target: Target) -> np.ndarray:
        bits = _width(target)
        _mask(bits)
        t = np.trunc(np.where(np.isnan(x), 0.0, x.astype(np.float64)))
        lo, hi = (0.0, 2.0 ** bits) if is_unsigned else (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1))
        inside = (t >= lo) & (t < hi)
        kind = np.uint64 if is_unsigned else np.int64
        value = np.where(inside, t, 0.0).astype(kind)
        top = unsigned(-1, bits) if is_unsigned else np.int64((1 << (bits - 1)) - 1)
        bottom = kind(0) if is_unsigned else np.int64(_lowest(bits))
        return held(np.where(t >= hi, top, np.where(t < lo, bottom, value)), bits)
    return fn


def _int_to_float(read: Callable[[np.ndarray, int], np.ndarray]) -> Callable[[np.ndarray, int, Target], np.ndarray]:
    def fn(x: np.ndarray, source_bits: int, target: Target) -> np.ndarray:
        if isinstance(target, int) or np.dtype(target).kind != "f":
            raise TypeError(f"an integer-to-float conversion's target is a float dtype, got {target}")
        return read(x, source_bits).astype(target)
    return fn


#: Every conversion to or from integers, by its ``arith`` class.
INTEGER_CASTS: dict[type, IntegerCast] = {
    arith.TruncIOp: IntegerCast("trunci", lambda x, s, t: held(x, _width(t))),
    arith.ExtSIOp: IntegerCast("extsi", lambda x, s, t: held(signed(x, s), _width(t))),
    arith.ExtUIOp: IntegerCast("extui", lambda x, s, t: held(unsigned(x, s), _width(t))),
    arith.FPToSIOp: IntegerCast("fptosi", _float_to_int(False), from_float=True),
    arith.FPToUIOp: IntegerCast("fptoui", _float_to_int(True), from_float=True),
    arith.SIToFPOp: IntegerCast("sitofp", _int_to_float(signed), to_float=True),
    arith.UIToFPOp: IntegerCast("uitofp", _int_to_float(unsigned), to_float=True),
}
