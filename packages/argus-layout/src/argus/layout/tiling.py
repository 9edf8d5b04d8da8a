"""Divides and products: tiling a layout by a tiler, and repeating a layout by another.

A tiler is a Layout, an int n (meaning n:1), or a tuple of tilers applied mode by mode.
The four spellings of each family hold the same function and differ only in how the modes
are grouped::

    logical  ((t0, r0), (t1, r1))      zipped ((t0, t1), (r0, r1))
    tiled    ((t0, t1), r0, r1)        flat   (t0, t1, r0, r1)
"""

from __future__ import annotations

from typing import Any

from .algebra import as_layout, coalesce, complement, composition
from .basis import require_integer_strides
from .errors import LayoutError
from .inttuple import as_int_tuple, is_tuple, product
from .layout import Layout, make_layout, make_ordered_layout
from .limits import check_nesting
from .swizzle import ComposedLayout

__all__ = [
    "blocked_product",
    "flat_divide",
    "flat_product",
    "logical_divide",
    "logical_product",
    "raked_product",
    "tile_to_shape",
    "tiled_divide",
    "tiled_product",
    "zipped_divide",
    "zipped_product",
]

_ONE = Layout(1, 0)


def _stack(parts: list[Layout]) -> Layout:
    return Layout._make(tuple(p.shape for p in parts), tuple(p.stride for p in parts))


def _by_mode(op: str, a: Layout, tiler: tuple[Any, ...], f: Any) -> Layout:
    check_nesting(tiler, op, "tiler")
    if len(tiler) > a.rank:
        raise LayoutError(op, f"tiler rank {len(tiler)} exceeds the layout rank {a.rank}", a, tiler)
    return _stack([f(a[i], t) for i, t in enumerate(tiler)] + [a[i] for i in range(len(tiler), a.rank)])


def _lift(op: str, f: Any) -> Any:
    """Make a Layout operation accept a ComposedLayout on the left (acting on its inner layout)."""

    def lifted(a: Any, tiler: Any) -> Any:
        if isinstance(a, ComposedLayout):
            return a.with_inner(lifted(a.inner, tiler)).check_defined(op, a, tiler)
        if not isinstance(a, Layout):
            raise LayoutError(op, f"expected a Layout, got {type(a).__name__} {a!r}", a, tiler)
        return f(a, tiler)

    lifted.__name__ = op
    lifted.__doc__ = f.__doc__
    return lifted


# ---- divides -------------------------------------------------------------------------------


def _logical_divide(a: Layout, tiler: Any) -> Layout:
    """``A ∘ (B, complement(B, size(A)))``: mode 0 is the tile, mode 1 walks over the tiles."""
    if tiler is None:
        return a
    if is_tuple(tiler):
        return _by_mode("logical_divide", a, tiler, _logical_divide)
    b = as_layout(tiler, "logical_divide")
    try:
        rest = complement(b, a.size())
    except LayoutError as err:
        raise LayoutError("logical_divide", f"the tiler has no complement: {err.reason}", a, b) from None
    return composition(a, make_layout(b, rest))


def _zip(op: str, grouped: Layout, tiler: Any) -> Layout:
    """((t0, r0), (t1, r1), extra...) -> ((t0, t1), (r0, r1, extra...)) for a tuple tiler."""
    if not is_tuple(tiler):
        return grouped
    (tile_shape, tile_stride), (rest_shape, rest_stride) = _unzip(op, grouped.shape, grouped.stride, tiler, tiler)
    return Layout._make((tile_shape, rest_shape), (tile_stride, rest_stride))


def _unzip(op: str, shape: Any, stride: Any, tiler: Any, whole: Any) -> tuple[tuple[Any, Any], tuple[Any, Any]]:
    """The (shape, stride) of the tile modes and of the rest modes of a layout divided (or
    multiplied) by `tiler` (part of the tiler `whole`), whose modes follow the tiler's nesting:
    a tiler entry that is a tuple itself left a mode of (tile, rest) pairs, unzipped in turn
    (CuTe's zip2_by)."""
    if tiler is None:
        raise LayoutError(op, "a tuple tiler entry may not be None here; use the mode's size", whole)
    if not is_tuple(tiler):
        return (shape[0], stride[0]), (shape[1], stride[1])
    pairs = [_unzip(op, shape[i], stride[i], t, whole) for i, t in enumerate(tiler)]
    k = len(tiler)
    tile = (tuple(t[0] for t, _ in pairs), tuple(t[1] for t, _ in pairs))
    rest = (tuple(r[0] for _, r in pairs) + shape[k:], tuple(r[1] for _, r in pairs) + stride[k:])
    return tile, rest


def _zipped_divide(a: Layout, tiler: Any) -> Layout:
    """((tile modes), (rest modes)): index a tile with mode 0, pick the tile with mode 1."""
    return _zip("zipped_divide", _logical_divide(a, tiler), tiler)


def _unpack(layout: Layout) -> list[Layout]:
    return list(layout) if is_tuple(layout.shape) else [layout]


def _tiled(zipped: Layout) -> Layout:
    """((tile modes), (rest modes)) -> ((tile modes), rest0, rest1, ...)."""
    return _stack([zipped[0], *_unpack(zipped[1])])


def _flat(zipped: Layout) -> Layout:
    """((tile modes), (rest modes)) -> (tile0, tile1, ..., rest0, rest1, ...)."""
    return _stack([*_unpack(zipped[0]), *_unpack(zipped[1])])


def _tiled_divide(a: Layout, tiler: Any) -> Layout:
    return _tiled(_zipped_divide(a, tiler))


def _flat_divide(a: Layout, tiler: Any) -> Layout:
    return _flat(_zipped_divide(a, tiler))


logical_divide = _lift("logical_divide", _logical_divide)
zipped_divide = _lift("zipped_divide", _zipped_divide)
tiled_divide = _lift("tiled_divide", _tiled_divide)
flat_divide = _lift("flat_divide", _flat_divide)


# ---- products ------------------------------------------------------------------------------


def _logical_product(a: Layout, tiler: Any) -> Layout:
    """(A, complement(A, size(A)·cosize(B)) ∘ B): mode 0 is A, mode 1 repeats it as B says."""
    if tiler is None:
        return a
    if is_tuple(tiler):
        return _by_mode("logical_product", a, tiler, _logical_product)
    b = as_layout(tiler, "logical_product")
    require_integer_strides(b, "logical_product", a, b)
    if any(d < 0 for _, d in b.modes()):
        raise LayoutError("logical_product", "the tiler may not have negative strides", a, b)
    try:
        rest = complement(a, a.size() * b.cosize())
    except LayoutError as err:
        raise LayoutError("logical_product", f"A has no complement: {err.reason}", a, b) from None
    return make_layout(a, composition(rest, b))


def _zipped_product(a: Layout, tiler: Any) -> Layout:
    return _zip("zipped_product", _logical_product(a, tiler), tiler)


def _tiled_product(a: Layout, tiler: Any) -> Layout:
    return _tiled(_zipped_product(a, tiler))


def _flat_product(a: Layout, tiler: Any) -> Layout:
    return _flat(_zipped_product(a, tiler))


logical_product = _lift("logical_product", _logical_product)
zipped_product = _lift("zipped_product", _zipped_product)
tiled_product = _lift("tiled_product", _tiled_product)
flat_product = _lift("flat_product", _flat_product)


def _padded(layout: Layout, r: int) -> Layout:
    return _stack(_unpack(layout) + [_ONE] * (r - layout.rank)) if r > 1 else layout


def _interleaved_product(op: str, a: Layout, b: Any, block_first: bool) -> Layout:
    b = as_layout(b, op)
    r = max(a.rank, b.rank)
    a, b = _padded(a, r), _padded(b, r)
    block, repeat = _logical_product(a, b)
    blocks, repeats = (_unpack(block), _unpack(repeat)) if r > 1 else ([block], [repeat])
    pairs = [make_layout(x, y) if block_first else make_layout(y, x) for x, y in zip(blocks, repeats)]
    if r == 1:
        return coalesce(pairs[0])
    return coalesce(_stack(pairs), (1,) * r)


def _blocked_product(a: Layout, b: Any) -> Layout:
    """Repeat A as a block over the grid B, mode by mode: ((A0, B0'), (A1, B1'), ...)."""
    return _interleaved_product("blocked_product", a, b, block_first=True)


def _raked_product(a: Layout, b: Any) -> Layout:
    """Interleave copies of A at B's granularity, mode by mode: ((B0', A0), (B1', A1), ...)."""
    return _interleaved_product("raked_product", a, b, block_first=False)


blocked_product = _lift("blocked_product", _blocked_product)
raked_product = _lift("raked_product", _raked_product)


def _tile_to_shape(block: Layout, target: Any, order: Any = None) -> Layout:
    """Repeat `block` (blocked, in `order`, column-major by default) until it has shape `target`."""
    target = as_int_tuple(target, "tile_to_shape", "target shape")
    modes = list(target) if is_tuple(target) else [target]
    r = len(modes)
    if r == 0 and block.rank == 0:
        return block  # the empty shape holds one element, as the empty block does
    if block.rank > r:
        raise LayoutError("tile_to_shape", f"block rank {block.rank} exceeds target rank {r}", block, target)
    padded = _padded(block, r)
    blocks = _unpack(padded) if r > 1 else [padded]
    counts = []
    for i, (t, blk) in enumerate(zip(modes, blocks)):
        if product(t) % blk.size():
            raise LayoutError(
                "tile_to_shape", f"target mode {i} ({product(t)}) is not a multiple of the block's ({blk.size()})",
                block, target,
            )
        counts.append(product(t) // blk.size())
    grid_shape = tuple(counts) if r > 1 else counts[0]
    grid = make_ordered_layout(grid_shape, order) if order is not None else Layout(grid_shape)
    return coalesce(_blocked_product(padded, grid), grid_shape)


def tile_to_shape(block: Any, target: Any, order: Any = None) -> Any:
    if isinstance(block, ComposedLayout):
        tiled = block.with_inner(_tile_to_shape(block.inner, target, order))
        return tiled.check_defined("tile_to_shape", block, target)
    return _tile_to_shape(as_layout(block, "tile_to_shape"), target, order)


tile_to_shape.__doc__ = _tile_to_shape.__doc__
