"""Layouts over numpy arrays: exact int64 evaluation, or a `LayoutError` if it cannot be exact.

Before computing, the largest offset magnitude the inputs can produce is bounded with Python
ints; past ``2**63 - 1`` the call refuses instead of wrapping around silently.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .basis import ScaledBasis, has_basis, nest_coordinate
from .errors import LayoutError
from .inttuple import crd2idx, fits, flatten, is_tuple, leaves, prefix_product, shown, unflatten
from .limits import number_text

if TYPE_CHECKING:
    from .layout import Layout

__all__ = ["all_offsets", "evaluate_array"]

INT64_MAX = (1 << 63) - 1


def _index_bound(max_index: int, shape: Any, stride: Any) -> int:
    """Largest |offset| that indices in [0, max_index] reach on `shape:stride`."""
    shapes, strides = flatten(shape), flatten(stride)
    prefixes = flatten(prefix_product(shape))
    bound = 0
    for k, (s, d, p) in enumerate(zip(shapes, strides, prefixes)):
        coord_max = max_index // p if k == len(shapes) - 1 else min(s - 1, max_index // p)
        bound += coord_max * abs(d)
    return bound


def _as_int64(a: Any, layout: Layout) -> Any:
    if isinstance(a, np.ndarray):
        if a.dtype.kind not in "iu":
            raise LayoutError("evaluate", f"index arrays must have an integer dtype, got {a.dtype}", layout)
        if a.size and int(a.min()) < 0:
            raise LayoutError("evaluate", "index and coordinate arrays must be non-negative", layout)
        if a.dtype.kind == "u" and a.size and int(a.max()) > INT64_MAX:
            raise LayoutError("evaluate", "index values exceed int64", layout)
        return a.astype(np.int64, copy=False)
    if isinstance(a, (int, np.integer)) and not isinstance(a, (bool, np.bool_)) and a >= 0:
        return int(a)
    raise LayoutError("evaluate", f"a coordinate holding arrays takes integer arrays and ints ≥ 0, got "
                                  f"{type(a).__name__} {shown(a)}", layout)


def _leaf_max(a: Any) -> int:
    return int(a.max()) if isinstance(a, np.ndarray) and a.size else int(a) if not isinstance(a, np.ndarray) else 0


def _coordinate_bound(crd: Any, shape: Any, stride: Any) -> int:
    if is_tuple(crd):
        return sum(_coordinate_bound(c, s, d) for c, s, d in zip(crd, shape, stride))
    return _index_bound(_leaf_max(crd), shape, stride)


def evaluate_array(layout: Layout, crd: Any) -> Any:
    """`layout` at an index array, or at a coordinate whose leaves are arrays or ints (broadcast).

    A layout with basis strides gives a coordinate: a nested tuple of arrays.
    """
    if has_basis(layout):
        return _per_coordinate(layout, lambda part: evaluate_array(part, crd))
    if is_tuple(crd):
        crd = _map_leaves(crd, lambda a: _as_int64(a, layout))
        if not fits(crd, layout.shape):
            raise LayoutError("evaluate", f"coordinate rank does not match the shape {layout.shape}", layout)
        try:
            np.broadcast_shapes(*(np.shape(x) for x in leaves(crd)))
        except ValueError:
            raise LayoutError("evaluate", "the coordinate's arrays have shapes "
                              f"{', '.join(str(np.shape(x)) for x in leaves(crd))}, which do not broadcast "
                              "together", layout) from None
        bound = _coordinate_bound(crd, layout.shape, layout.stride)
    else:
        crd = _as_int64(crd, layout)
        bound = _index_bound(_leaf_max(crd), layout.shape, layout.stride)
    if bound > INT64_MAX:
        raise LayoutError(
            "evaluate", f"offsets reach {number_text(bound)}, beyond int64; evaluate with Python ints", layout
        )
    try:
        result = crd2idx(crd, layout.shape, layout.stride) if is_tuple(crd) else _at_indices(layout, crd)
    except OverflowError:  # a stride beyond int64 that the inputs only ever multiply by 0
        return _evaluate_exactly(layout, crd)
    if not isinstance(result, np.ndarray):
        result = np.broadcast_to(np.int64(result), np.broadcast_shapes(*(np.shape(x) for x in leaves(crd))))
    return result.astype(np.int64, copy=False)


def _at_indices(layout: Layout, indices: Any) -> Any:
    """Offsets of an int64 index array, the caller having bounded them within int64. Modes
    that begin past the largest index add nothing, nor do strides beyond int64 (the bound says
    their digits are all 0), so sizes, places and strides far beyond int64 stay out of numpy."""
    top = _leaf_max(indices)
    modes = list(zip(flatten(prefix_product(layout.shape)), flatten(layout.shape), flatten(layout.stride)))
    total: Any = 0
    for k, (p, s, d) in enumerate(modes):
        if p > top:
            break
        if d == 0 or abs(d) > INT64_MAX:
            continue
        digit = indices // p if p != 1 else indices
        if k < len(modes) - 1 and s <= top:
            digit = digit % s
        total = total + digit * d
    return total


def _evaluate_exactly(layout: Layout, crd: Any) -> np.ndarray:
    """Point by point with Python ints; the caller has bounded every result within int64."""
    if is_tuple(crd):
        arrays = np.broadcast_arrays(*leaves(crd))
        points = zip(*(a.ravel().tolist() for a in arrays))
        values = [layout(unflatten(p, crd)) for p in points]
        shape = arrays[0].shape
    else:
        values = [layout(i) for i in crd.ravel().tolist()]
        shape = crd.shape
    return np.array(values, dtype=np.int64).reshape(shape)


def all_offsets(layout: Layout) -> Any:
    """Offsets of every index 0..size-1, in index order (a tuple of arrays for basis strides)."""
    if has_basis(layout):
        return _per_coordinate(layout, all_offsets)
    modes = list(zip(flatten(layout.shape), flatten(layout.stride)))
    bound = sum((s - 1) * abs(d) for s, d in modes)
    if bound > INT64_MAX:
        raise LayoutError("offsets", f"offsets reach {number_text(bound)}, beyond int64", layout)
    out = np.zeros(1, dtype=np.int64)
    for s, d in modes:
        if s > 1:
            out = (out[None, :] + (np.arange(s, dtype=np.int64) * d)[:, None]).reshape(-1)
    return out


def _map_leaves(t: Any, f: Any) -> Any:
    return tuple(_map_leaves(e, f) for e in t) if is_tuple(t) else f(t)



def _per_coordinate(layout: Layout, evaluate: Any) -> Any:
    """Evaluate a basis-strided layout one codomain coordinate at a time, as integer layouts."""
    from .layout import Layout

    if any(not isinstance(d, ScaledBasis) and d != 0 for _, d in layout.modes()):
        raise LayoutError("evaluate", "mixes integer and basis strides; its offsets are not defined", layout)
    modes = {d.mode for _, d in layout.modes() if isinstance(d, ScaledBasis)}
    parts = {}
    for mode in modes:
        strides = tuple(d.scale if isinstance(d, ScaledBasis) and d.mode == mode else 0 for _, d in layout.modes())
        parts[mode] = evaluate(Layout._make(layout.shape, unflatten(strides, layout.shape)))
    return nest_coordinate(parts)
