"""`Layout`: a shape and a stride, the function from coordinates (or indices) to offsets.

Evaluation is one generic code path: a layout applied to Python ints gives an int, applied to
numpy index or coordinate arrays gives an int64 array (exact, or an error), applied to
symbolic expressions gives an expression.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from .basis import ScaledBasis, as_coordinate, require_integer_strides
from .errors import LayoutError
from .limits import MAX_NESTING, check_nesting
from .inttuple import (
    IntTuple,
    as_int_tuple,
    congruent,
    crd2idx,
    depth,
    fits,
    flatten,
    is_int,
    is_tuple,
    leaves,
    prefix_product,
    product,
    rank,
    unflatten,
)
from .symbolic import Expr

__all__ = [
    "Layout",
    "compact_col_major",
    "compact_row_major",
    "cosize",
    "make_layout",
    "make_layout_like",
    "make_ordered_layout",
    "slice_and_offset",
]


class Layout:
    """A CuTe layout ``shape:stride``.

    Shapes are nested tuples of positive ints, strides have the same nesting and may be
    zero or negative. With no stride the layout is compact column-major (CuTe's default).
    Layouts are values: treat them as immutable (they hash by shape and stride).
    """

    __slots__ = ("_basis_modes", "_index_terms", "_modes", "shape", "stride")

    shape: IntTuple
    stride: IntTuple
    _index_terms: Any  # cached: (prefix, size or None, stride) per evaluated mode
    _modes: Any  # cached: flat (shape, stride) pairs
    _basis_modes: Any  # cached: codomain modes of basis strides

    def __init__(self, shape: Any, stride: Any = None) -> None:
        if _is_plain(shape, stride):  # the common case, validated cheaply
            self.shape = shape
            self.stride = compact_col_major(shape) if stride is None else stride
            self._index_terms = None
            self._modes = None
            self._basis_modes = None
            return
        shape = as_int_tuple(shape, "Layout", "shape")
        _check_positive(shape, shape)
        if stride is None:
            stride = compact_col_major(shape)
        else:
            stride = as_int_tuple(stride, "Layout", "stride", allow_basis=True)
            if not congruent(shape, stride):
                raise LayoutError(
                    "Layout", "shape and stride must have the same nesting profile", shape, stride
                )
        self.shape = shape
        self.stride = stride
        self._index_terms = None
        self._modes = None
        self._basis_modes = None

    @classmethod
    def _make(cls, shape: IntTuple, stride: IntTuple) -> Layout:
        """Construct without validation, for results of operations on valid layouts."""
        self = object.__new__(cls)
        self.shape = shape
        self.stride = stride
        self._index_terms = None
        self._modes = None
        self._basis_modes = None
        return self

    # ---- structure -------------------------------------------------------------------
    def size(self) -> int:
        return product(self.shape)

    def cosize(self) -> int:
        """Length of the offset range touched: max offset - min offset + 1 (see docs)."""
        lo, hi = self.codomain()
        return hi - lo + 1

    def codomain(self) -> tuple[int, int]:
        """Smallest and largest offset on the domain (inclusive)."""
        require_integer_strides(self, "cosize", self)
        lo = hi = 0
        for s, d in zip(flatten(self.shape), flatten(self.stride)):
            span = (s - 1) * d
            if span < 0:
                lo += span
            else:
                hi += span
        return lo, hi

    @property
    def rank(self) -> int:
        return rank(self.shape)

    @property
    def depth(self) -> int:
        return depth(self.shape)

    def __len__(self) -> int:
        return rank(self.shape)

    def __getitem__(self, i: int) -> Layout:
        """Mode `i` (negative counts from the end); a rank-1 int layout is its own mode 0."""
        shape = self.shape
        if type(i) is int and isinstance(shape, tuple) and -len(shape) <= i < len(shape):
            return Layout._make(shape[i], self.stride[i])  # type: ignore[index]
        if not isinstance(i, int) or isinstance(i, bool):
            raise LayoutError("mode", f"mode index must be an int, got {i!r}", self)
        if is_tuple(shape) or i not in (0, -1):
            raise LayoutError("mode", f"mode {i} out of range for rank {self.rank}", self)
        return self

    def __iter__(self) -> Iterator[Layout]:
        for i in range(self.rank):
            yield self[i]

    def flat(self) -> Layout:
        """The same function with every nesting removed."""
        s, d = flatten(self.shape), flatten(self.stride)
        return Layout._make(s, d) if len(s) > 1 else Layout._make(s[0], d[0])

    def modes(self) -> tuple[tuple[int, Any], ...]:
        """Flat (shape, stride) pairs in colexicographic order (strides are ints or bases)."""
        if self._modes is None:
            self._modes = tuple(zip(flatten(self.shape), flatten(self.stride)))
        return self._modes  # type: ignore[no-any-return]

    # ---- evaluation ------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        """Offset of an index or coordinate; a coordinate holding ``None`` slices instead.

        ``L(i)`` takes an index, ``L(i, j)`` or ``L((i, j))`` a coordinate. numpy arrays
        evaluate element-wise in int64; symbolic expressions give an expression.
        """
        crd = args[0] if len(args) == 1 else args
        if type(crd) is int and crd >= 0:
            return self._as_result(self._at_index(crd))
        check_nesting(crd, "evaluate", "coordinate")
        if crd is None or (is_tuple(crd) and any(c is None for c in leaves(crd))):
            return slice_and_offset(crd, self)[0]
        if any(isinstance(c, np.ndarray) for c in leaves(crd)):
            from .vectorized import evaluate_array

            return evaluate_array(self, crd)
        crd = _checked_coordinate(crd, self)
        if is_tuple(crd) and not fits(crd, self.shape):
            raise LayoutError(
                "evaluate", f"coordinate {crd} does not match the shape {self.shape}", self
            )
        return self._as_result(crd2idx(crd, self.shape, self.stride))

    def _as_result(self, value: Any) -> Any:
        """An offset, or for a layout with basis strides, the full coordinate tuple."""
        modes = self._basis_modes
        if modes is None:
            modes = frozenset(d.mode for _, d in self.modes() if isinstance(d, ScaledBasis))
            self._basis_modes = modes
        return as_coordinate(value, modes) if modes else value

    def _at_index(self, idx: Any) -> Any:
        """Offset of an index (int or int64 array) through the flattened modes."""
        terms = self._index_terms
        if terms is None:
            shapes, strides = flatten(self.shape), flatten(self.stride)
            prefixes = flatten(prefix_product(self.shape))
            modes = list(zip(prefixes, shapes, strides))
            terms = tuple((p, s, d) for p, s, d in modes[:-1] if d != 0 and s != 1)
            p_last, _, d_last = modes[-1] if modes else (1, None, 0)
            if d_last != 0:  # the last mode is unbounded: indices past the size continue along it
                terms += ((p_last, None, d_last),)
            self._index_terms = terms
        total = 0
        for p, s, d in terms:
            c = idx // p if p != 1 else idx
            total = total + (c % s if s is not None else c) * d
        return total

    def offsets(self) -> np.ndarray:
        """All offsets in index order, as int64 (exact, or a LayoutError)."""
        from .vectorized import all_offsets

        return all_offsets(self)

    # ---- comparison and printing -----------------------------------------------------
    def __eq__(self, other: object) -> bool:
        """Structural equality (same shape and stride); use `same_function` for semantics."""
        if not isinstance(other, Layout):
            return NotImplemented
        return self.shape == other.shape and self.stride == other.stride

    def __hash__(self) -> int:
        return hash((self.shape, self.stride))

    def __str__(self) -> str:
        from .notation import format_int_tuple

        return f"{format_int_tuple(self.shape)}:{format_int_tuple(self.stride)}"

    def __repr__(self) -> str:
        return f"Layout({self.shape!r}, {self.stride!r})"

    def _repr_svg_(self) -> str | None:
        """Notebook picture; None (so the text form shows) when the layout is not drawable."""
        from .svg import to_svg

        try:
            return to_svg(self)
        except LayoutError:
            return None


def _checked_coordinate(crd: Any, layout: Layout, op: str = "evaluate") -> Any:
    """Scalar indices and coordinates: non-negative ints (numpy integers too) or symbolic values."""
    if is_tuple(crd):
        return tuple(_checked_coordinate(c, layout, op) for c in crd)
    if isinstance(crd, np.integer):
        crd = int(crd)
    if is_int(crd):
        if crd < 0:
            raise LayoutError(op, f"index or coordinate {crd} is negative", layout)
        return crd
    if isinstance(crd, Expr):
        return crd
    raise LayoutError(
        op,
        f"expected an int, a tuple coordinate, an integer numpy array or a symbolic expression, "
        f"got {type(crd).__name__} {crd!r}",
        layout,
    )


def _is_plain(shape: Any, stride: Any, depth: int = 0) -> bool:
    """Already a valid shape (positive int leaves, no empty sub-tuples, not too deep) with a
    congruent int stride, or with no stride at all."""
    if stride is None:
        return _is_plain_shape(shape, depth)
    if type(shape) is int:
        return shape >= 1 and type(stride) is int
    return (
        type(shape) is tuple
        and type(stride) is tuple
        and len(shape) == len(stride) > 0
        and depth < MAX_NESTING
        and all(_is_plain(s, d, depth + 1) if d is not None else False for s, d in zip(shape, stride))
    )


def _is_plain_shape(shape: Any, depth: int = 0) -> bool:
    if type(shape) is int:
        return shape >= 1
    return (
        type(shape) is tuple
        and len(shape) > 0
        and depth < MAX_NESTING
        and all(_is_plain_shape(s, depth + 1) for s in shape)
    )


def _check_positive(shape: IntTuple, whole: IntTuple, path: tuple[int, ...] = ()) -> None:
    if is_tuple(shape):
        if len(shape) == 0 and path:
            raise LayoutError("Layout", f"empty tuple at mode {_fmt_path(path)}", whole)
        for i, s in enumerate(shape):  # type: ignore[arg-type]
            _check_positive(s, whole, path + (i,))
    elif shape < 1:  # type: ignore[operator]
        where = f"mode {_fmt_path(path)}" if path else "the shape"
        raise LayoutError("Layout", f"{where} is {shape}; shapes must be positive", whole)


def _fmt_path(path: tuple[int, ...]) -> str:
    return "".join(f"[{i}]" for i in path)


# ---- constructors ----------------------------------------------------------------------


def compact_col_major(shape: IntTuple, current: int = 1) -> IntTuple:
    """Strides of the compact column-major (left-most fastest) layout of `shape`."""
    return prefix_product(shape, current)


def compact_row_major(shape: IntTuple, current: int = 1) -> IntTuple:
    """Strides of the compact row-major (right-most fastest) layout, nesting included."""
    flat = flatten(shape)
    strides = [0] * len(flat)
    for i in reversed(range(len(flat))):
        strides[i] = current
        current *= flat[i]
    return unflatten(tuple(strides), shape)


def make_ordered_layout(shape: Any, order: Any) -> Layout:
    """Compact layout whose modes are laid out by increasing `order` (ties keep position)."""
    shape = as_int_tuple(shape, "make_ordered_layout", "shape")
    order = as_int_tuple(order, "make_ordered_layout", "order")
    flat_shape, flat_order = flatten(shape), flatten(order)
    if len(flat_order) != len(flat_shape):
        raise LayoutError(
            "make_ordered_layout", "order must have one entry per shape mode", shape, order
        )
    strides = [0] * len(flat_shape)
    current = 1
    for i in sorted(range(len(flat_shape)), key=lambda k: (flat_order[k], k)):
        strides[i] = current
        current *= flat_shape[i]
    return Layout._make(shape, unflatten(tuple(strides), shape))


def make_layout(*args: Any) -> Layout:
    """``make_layout(shape[, stride])``, or ``make_layout(L0, L1, ...)`` to stack layouts as modes."""
    if args and all(isinstance(a, Layout) for a in args):
        return Layout._make(tuple(a.shape for a in args), tuple(a.stride for a in args))
    if len(args) == 1:
        return Layout(args[0])
    if len(args) == 2:
        return Layout(args[0], args[1])
    raise LayoutError("make_layout", "expected (shape), (shape, stride) or layouts", *args)


def make_layout_like(layout: Layout) -> Layout:
    """Compact layout with the same shape, modes ordered like `layout`'s strides."""
    if not isinstance(layout, Layout):
        raise LayoutError("make_layout_like", f"expected a Layout, got {type(layout).__name__}", layout)
    require_integer_strides(layout, "make_layout_like", layout)
    order = tuple(abs(d) for d in flatten(layout.stride))
    return make_ordered_layout(layout.shape, unflatten(order, layout.shape))


def slice_and_offset(crd: Any, layout: Layout) -> tuple[Layout, int]:
    """Split a coordinate with ``None`` entries into the kept sub-layout and the fixed offset.

    As in CuTe, the kept modes (one per ``None``) become the modes of the result, in order.
    """
    kept_shape: list[IntTuple] = []
    kept_stride: list[IntTuple] = []
    offset = 0

    def walk(c: Any, s: IntTuple, d: IntTuple) -> None:
        nonlocal offset
        if c is None:
            kept_shape.append(s)
            kept_stride.append(d)
        elif is_tuple(c):
            if not is_tuple(s) or len(c) != len(s):  # type: ignore[arg-type]
                raise LayoutError("slice", f"coordinate {c} does not match shape {s}", crd, layout)
            for ci, si, di in zip(c, s, d):  # type: ignore[arg-type]
                walk(ci, si, di)
        else:
            offset += crd2idx(_checked_coordinate(c, layout, "slice"), s, d)

    if not isinstance(layout, Layout):
        raise LayoutError("slice", f"expected a Layout to slice, got {type(layout).__name__}", crd, layout)
    if crd is None:
        return layout, 0
    check_nesting(crd, "slice", "coordinate")
    walk(crd, layout.shape, layout.stride)
    return Layout._make(tuple(kept_shape), tuple(kept_stride)), offset


def cosize(layout: Any) -> int:
    """Length of the offset range a layout touches (max - min + 1)."""
    if not hasattr(layout, "cosize") or isinstance(layout, type):
        raise LayoutError("cosize", f"expected a layout, got {type(layout).__name__} {layout!r}", layout)
    return layout.cosize()  # type: ignore[no-any-return]
