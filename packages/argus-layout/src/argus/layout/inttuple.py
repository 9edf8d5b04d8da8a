"""Int-tuples: the nested integer tuples that shapes, strides and coordinates are made of.

An int-tuple is a Python ``int`` or a ``tuple`` of int-tuples. Shapes are positive, strides
and coordinates may be any integer. The coordinate functions here are written with plain
operators only, so they evaluate Python ints, numpy index arrays and symbolic expressions
alike.

These take well-formed int-tuples on trust: the algebra calls them on values it has checked.
What `argus.layout` exports are the versions of `checked`, which refuse anything else.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Iterator
from functools import reduce
from typing import Any, TypeAlias, TypeGuard

from .errors import LayoutError
from .limits import MAX_NESTING

IntTuple: TypeAlias = int | tuple["IntTuple", ...]

__all__ = [
    "IntTuple",
    "ceil_div",
    "congruent",
    "crd2idx",
    "depth",
    "flatten",
    "idx2crd",
    "inner_product",
    "is_int",
    "is_tuple",
    "prefix_product",
    "product",
    "rank",
    "repeat_like",
    "shape_div",
    "unflatten",
    "zip_transform",
]


def is_int(x: object) -> TypeGuard[int]:
    """A Python integer (``bool`` excluded: ``True`` is never a shape)."""
    return isinstance(x, int) and not isinstance(x, bool)


def is_tuple(x: object) -> TypeGuard[tuple[Any, ...]]:
    return isinstance(x, tuple)


def as_int_tuple(x: Any, op: str, what: str, allow_basis: bool = False) -> IntTuple:
    """Normalize user input to an int-tuple: numpy integers become ints, lists become tuples.

    With `allow_basis`, `ScaledBasis` leaves (coordinate strides) are accepted too.
    Anything else raises `LayoutError` naming `what` (e.g. "shape") and the mode path.
    """
    from .basis import ScaledBasis

    def walk(v: Any, path: tuple[int, ...]) -> IntTuple:
        if is_int(v) or (allow_basis and isinstance(v, ScaledBasis)):
            return v  # type: ignore[return-value]
        if isinstance(v, (tuple, list)):
            if len(path) >= MAX_NESTING:
                raise LayoutError(op, f"the {what} is nested more than {MAX_NESTING} levels deep")
            return tuple(walk(e, path + (i,)) for i, e in enumerate(v))
        if isinstance(v, numbers.Integral) and not isinstance(v, bool):  # numpy integers (never arrays)
            return operator.index(v)
        where = f" at mode {_path(path)}" if path else ""
        raise LayoutError(
            op, f"{what}{where} must be an int or a tuple of int-tuples, got {type(v).__name__} {shown(v)}", x
        )

    return walk(x, ())


def shown(v: Any) -> str:
    """repr of a rejected value, short, and never an error of its own."""
    try:
        text = repr(v)
    except (ValueError, RecursionError):
        return "(too large to show)"
    return text if len(text) <= 80 else text[:77] + "..."


def _path(path: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in path)


def rank(t: IntTuple) -> int:
    return len(t) if is_tuple(t) else 1


def depth(t: IntTuple) -> int:
    return 1 + max((depth(e) for e in t), default=0) if is_tuple(t) else 0


def flatten(t: IntTuple) -> tuple[int, ...]:
    if not isinstance(t, tuple):
        return (t,)
    out: list[int] = []
    for e in t:
        if isinstance(e, tuple):
            out.extend(flatten(e))
        else:
            out.append(e)
    return tuple(out)


def leaves(t: Any) -> Iterator[Any]:
    """Leaves of any nested tuple (coordinates may hold non-int leaves such as arrays)."""
    if is_tuple(t):
        for e in t:
            yield from leaves(e)
    else:
        yield t


def unflatten(flat: tuple[Any, ...], profile: IntTuple) -> Any:
    """Rebuild `profile`'s nesting from the flat sequence of its leaves."""
    if not isinstance(profile, tuple):
        return flat[0]
    if not any(isinstance(e, tuple) for e in profile):
        return tuple(flat)
    it = iter(flat)

    def build(p: IntTuple) -> Any:
        return tuple(build(e) for e in p) if is_tuple(p) else next(it)

    return build(profile)


def product(t: IntTuple) -> int:
    return reduce(operator.mul, flatten(t), 1)


def inner_product(a: IntTuple, b: IntTuple) -> int:
    return sum(x * y for x, y in zip(flatten(a), flatten(b), strict=True))


def prefix_product(t: IntTuple, init: int = 1) -> IntTuple:
    """Exclusive colexicographic prefix products with `t`'s nesting: (2,(3,4)) -> (1,(2,6))."""
    if not is_tuple(t):
        return init
    out = []
    for e in t:
        out.append(prefix_product(e, init))
        init *= product(e)
    return tuple(out)


def repeat_like(t: IntTuple, value: Any) -> Any:
    return tuple(repeat_like(e, value) for e in t) if is_tuple(t) else value


def zip_transform(f: Callable[..., Any], *ts: Any) -> Any:
    """Apply `f` leaf-wise over congruent int-tuples."""
    if is_tuple(ts[0]):
        return tuple(zip_transform(f, *es) for es in zip(*ts, strict=True))
    return f(*ts)


def congruent(a: Any, b: Any) -> bool:
    """Same nesting profile."""
    if is_tuple(a) and is_tuple(b):
        return len(a) == len(b) and all(congruent(x, y) for x, y in zip(a, b))
    return not is_tuple(a) and not is_tuple(b)


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def shape_div(a: IntTuple, b: int) -> IntTuple:
    """Divide `b` out of shape `a` from the left, mode by mode; each step must divide one way."""
    a = as_int_tuple(a, "shape_div", "shape")
    if not is_int(b) or b < 1 or any(s < 1 for s in flatten(a)):
        raise LayoutError("shape_div", "the shape and the divisor must be positive ints", a, b)
    return _shape_div(a, b)


def _shape_div(a: IntTuple, b: int) -> IntTuple:
    if isinstance(a, tuple):
        out = []
        for e in a:
            out.append(_shape_div(e, b))
            b = _shape_div(b, product(e))  # type: ignore[assignment]
        return tuple(out)
    if a % b == 0:
        return a // b
    if b % a == 0:
        return 1
    raise LayoutError("shape_div", f"neither {a} nor {b} divides the other", a, b)


def fits(crd: Any, shape: IntTuple) -> bool:
    """A coordinate may stop nesting early (an int for a tuple mode), never nest deeper."""
    if not is_tuple(crd):
        return True
    return is_tuple(shape) and len(crd) == len(shape) and all(fits(c, s) for c, s in zip(crd, shape))


def crd2idx(crd: Any, shape: IntTuple, stride: Any) -> Any:
    """Offset of a coordinate: the inner product of coordinate and stride.

    A coordinate may be less nested than the shape: an integer given for a tuple mode is
    first split colexicographically within that mode, the last sub-mode taking whatever
    remains (unbounded), as CuTe does.
    """
    if is_tuple(crd):
        if not is_tuple(shape) or len(crd) != len(shape):
            raise LayoutError("crd2idx", f"coordinate rank {rank(crd)} does not match shape {shape}", crd)
        return _sum(crd2idx(c, s, d) for c, s, d in zip(crd, shape, stride))
    if is_tuple(shape):
        terms = []
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == len(shape) - 1:
                terms.append(crd2idx(crd, s, d))
            else:
                n = product(s)
                terms.append(crd2idx(crd % n, s, d))
                crd = crd // n
        return _sum(terms)
    return crd * stride


def idx2crd(idx: Any, shape: IntTuple) -> Any:
    """Colexicographic coordinate of an index; the last mode is unbounded (never wraps)."""
    if is_int(idx) and idx < 0:
        raise LayoutError("idx2crd", f"index {idx} is negative", idx, shape)
    if not is_tuple(shape):
        return idx
    out = []
    for i, s in enumerate(shape):
        if i == len(shape) - 1:
            out.append(idx2crd(idx, s))
        else:
            n = product(s)
            out.append(idx2crd(idx % n, s))
            idx = idx // n
    return tuple(out)


def _sum(terms: Any) -> Any:
    total: Any = 0
    for t in terms:
        total = t if is_int(total) and total == 0 else total + t
    return total
