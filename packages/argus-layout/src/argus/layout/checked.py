"""The int-tuple helpers as `argus.layout` exports them: each checks its arguments first.

The algebra calls the plain versions (in `inttuple` and `layout`) on values it has already
checked, so they stay fast there. A caller may pass anything, so these refuse a wrong kind of
argument (a Layout given as a shape, None, a string, a float, mismatched nesting, a zero
divisor) with a `LayoutError` naming the argument and what it accepts, instead of letting a
`TypeError` escape from deep inside or returning a wrong answer.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from . import inttuple, layout
from .errors import LayoutError
from .inttuple import IntTuple, as_int_tuple, fits, is_tuple, leaves
from .limits import MAX_NESTING, check_nesting
from .symbolic import Expr
from .vectorized import INT64_MAX, evaluate_array

__all__ = [
    "ceil_div",
    "compact_col_major",
    "compact_row_major",
    "congruent",
    "crd2idx",
    "depth",
    "flatten",
    "idx2crd",
    "inner_product",
    "prefix_product",
    "product",
    "rank",
]


def product(t: Any) -> int:
    """The product of the leaves of int-tuple `t` (1 for ``()``)."""
    return inttuple.product(_int_tuple(t, "product", "the int-tuple"))


def prefix_product(t: Any, init: Any = 1) -> IntTuple:
    """Exclusive colexicographic prefix products with `t`'s nesting, from `init`:
    ``(2,(3,4))`` -> ``(1,(2,6))``."""
    return inttuple.prefix_product(_int_tuple(t, "prefix_product", "the int-tuple"),
                                   _integer(init, "prefix_product", "init", t, init))


def inner_product(a: Any, b: Any) -> int:
    """The sum of the products of the leaves of two int-tuples of one nesting profile."""
    a, b = _int_tuple(a, "inner_product", "a"), _int_tuple(b, "inner_product", "b")
    if not inttuple.congruent(a, b):
        raise LayoutError("inner_product", "a and b must have the same nesting profile", a, b)
    return inttuple.inner_product(a, b)


def ceil_div(a: Any, b: Any) -> int:
    """``a / b`` rounded up, for ints; `b` may not be 0."""
    a, b = _integer(a, "ceil_div", "the dividend", a, b), _integer(b, "ceil_div", "the divisor", a, b)
    if b == 0:
        raise LayoutError("ceil_div", "the divisor is 0", a, b)
    return inttuple.ceil_div(a, b)


def flatten(t: Any) -> tuple[Any, ...]:
    """The leaves of int-tuple `t` in order (strides may hold basis elements)."""
    return inttuple.flatten(_int_tuple(t, "flatten", "the int-tuple", allow_basis=True))


def rank(t: Any) -> int:
    """The number of top-level modes of int-tuple `t` (1 for an int)."""
    return inttuple.rank(_int_tuple(t, "rank", "the int-tuple", allow_basis=True))


def depth(t: Any) -> int:
    """How deeply int-tuple `t` nests (0 for an int)."""
    return inttuple.depth(_int_tuple(t, "depth", "the int-tuple", allow_basis=True))


def congruent(a: Any, b: Any) -> bool:
    """Whether int-tuples `a` and `b` have the same nesting profile."""
    return inttuple.congruent(_int_tuple(a, "congruent", "a", allow_basis=True),
                              _int_tuple(b, "congruent", "b", allow_basis=True))


def crd2idx(crd: Any, shape: Any, stride: Any) -> Any:
    """The offset of coordinate `crd` in a layout ``shape:stride``: the inner product of the
    coordinate and the stride. A coordinate may be less nested than the shape (an int for a
    tuple mode is split colexicographically within that mode, as CuTe does); its leaves are
    ints ≥ 0, integer numpy arrays or symbolic expressions."""
    shape = _shape(shape, "crd2idx")
    stride = _int_tuple(stride, "crd2idx", "the stride", allow_basis=True)
    if not inttuple.congruent(shape, stride):
        raise LayoutError("crd2idx", "the shape and the stride must have the same nesting profile", shape, stride)
    crd = _coordinate(crd, "crd2idx", "the coordinate", shape)
    if not fits(crd, shape):
        raise LayoutError("crd2idx", f"the coordinate does not match the shape {shape}: it may nest as the shape "
                                     "does, or less, never more or with other lengths", crd)
    if any(isinstance(c, np.ndarray) for c in leaves(crd)):  # in int64, exactly or refused
        return evaluate_array(layout.Layout._make(shape, stride), crd)
    return inttuple.crd2idx(crd, shape, stride)


def idx2crd(idx: Any, shape: Any) -> Any:
    """The colexicographic coordinate of index `idx` (an int ≥ 0, an integer numpy array or a
    symbolic expression) in `shape`; the last mode is unbounded."""
    shape = _shape(shape, "idx2crd")
    idx = _coordinate(idx, "idx2crd", "the index", shape, scalar=True)
    if isinstance(idx, np.ndarray) and inttuple.product(shape) > INT64_MAX:  # sizes numpy cannot divide by
        exact = inttuple.idx2crd(idx.astype(object), shape)
        return inttuple.zip_transform(lambda digits: digits.astype(idx.dtype), exact)
    return inttuple.idx2crd(idx, shape)


def compact_col_major(shape: Any, current: Any = 1) -> IntTuple:
    """Strides of the compact column-major (left-most fastest) layout of `shape`, from `current`."""
    return layout.compact_col_major(_shape(shape, "compact_col_major"),
                                    _integer(current, "compact_col_major", "current", shape, current))


def compact_row_major(shape: Any, current: Any = 1) -> IntTuple:
    """Strides of the compact row-major (right-most fastest) layout of `shape`, from `current`."""
    return layout.compact_row_major(_shape(shape, "compact_row_major"),
                                    _integer(current, "compact_row_major", "current", shape, current))


def _integer(value: Any, op: str, what: str, *operands: Any) -> int:
    """`value` as an int (numpy integers too, never a bool), or a `LayoutError` naming `what`."""
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return int(value)
    raise LayoutError(op, f"{what} must be an int, got {type(value).__name__} {inttuple.shown(value)}", *operands)


def _plain(value: Any, least: int | None, depth: int = 0) -> bool:
    """Already an int-tuple of Python ints (each at least `least`, unless None), not too deep:
    the common case, recognized without building anything."""
    if type(value) is int:
        return least is None or value >= least
    return type(value) is tuple and depth < MAX_NESTING and all(_plain(e, least, depth + 1) for e in value)


def _int_tuple(value: Any, op: str, what: str, allow_basis: bool = False) -> IntTuple:
    """`value` as an int-tuple (lists become tuples, numpy integers ints), or a `LayoutError`."""
    return value if _plain(value, None) else as_int_tuple(value, op, what, allow_basis)  # type: ignore[no-any-return]


def _shape(value: Any, op: str) -> IntTuple:
    """`value` as a shape: an int-tuple of positive ints."""
    if _plain(value, 1):
        return value  # type: ignore[no-any-return]
    shape = as_int_tuple(value, op, "the shape")
    for i, s in enumerate(inttuple.flatten(shape)):
        if s < 1:
            where = f"leaf {i} of the shape" if is_tuple(shape) else "the shape"
            raise LayoutError(op, f"{where} is {s}; shapes are positive ints", shape)
    return shape


def _coordinate(value: Any, op: str, what: str, shape: IntTuple, scalar: bool = False) -> Any:
    """`value` as a coordinate (or, `scalar`, an index): ints ≥ 0 (numpy integers become ints),
    integer numpy arrays of values ≥ 0, or symbolic expressions, nested as tuples unless
    `scalar`."""
    if _plain(value, 0) and (type(value) is int or not scalar):
        return value
    check_nesting(value, op, what)
    arrays: list[np.ndarray] = []

    def leaf(v: Any) -> Any:
        if isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)):
            if v < 0:
                raise LayoutError(op, f"{what} holds {v}; coordinates and indices are ≥ 0", value, shape)
            return int(v)
        if isinstance(v, np.ndarray) and v.dtype.kind in "iu":
            if v.size and v.min() < 0:
                raise LayoutError(op, f"{what} holds {int(v.min())}; coordinates and indices are ≥ 0", shape)
            arrays.append(v)
            return v
        if isinstance(v, Expr):
            return v
        if not scalar and isinstance(v, (tuple, list)):
            return tuple(leaf(e) for e in v)
        accepted = "an int ≥ 0, an integer numpy array or a symbolic expression"
        if not scalar:
            accepted += ", or a tuple of them"
        raise LayoutError(op, f"{what} must be {accepted}, got {type(v).__name__} {inttuple.shown(v)}",
                          value, shape)

    checked = leaf(value)
    try:
        np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        raise LayoutError(op, f"the arrays of {what} have shapes {', '.join(str(a.shape) for a in arrays)}, which "
                              "do not broadcast together", shape) from None
    return checked
