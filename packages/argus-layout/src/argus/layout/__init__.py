"""argus.layout: CuTe layouts computed exactly.

Every operation returns the mathematical answer or raises `LayoutError` saying why none
exists. Layouts evaluate on Python ints, numpy arrays (exact int64) and symbolic expressions,
print and parse CuTe notation, and draw themselves as SVG.

>>> from argus.layout import parse, composition
>>> str(composition(parse("(6,2):(8,2)"), parse("(4,3):(3,1)")))
'((2,2),3):((24,2),8)'
"""

from __future__ import annotations

from .algebra import (
    coalesce,
    complement,
    composition,
    downcast,
    filter,
    filter_zeros,
    left_inverse,
    max_common_layout,
    max_common_vector,
    right_inverse,
    same_function,
    upcast,
)
from .basis import ArithmeticTuple, E, ScaledBasis, make_identity_layout
from .checked import (
    ceil_div,
    compact_col_major,
    compact_row_major,
    congruent,
    crd2idx,
    depth,
    flatten,
    idx2crd,
    inner_product,
    prefix_product,
    product,
    rank,
)
from .errors import LayoutError, LayoutParseError
from .inttuple import IntTuple, as_int_tuple, shape_div
from .layout import (
    Layout,
    cosize,
    make_layout,
    make_layout_like,
    make_ordered_layout,
    slice_and_offset,
)
from .notation import parse, parse_int_tuple
from .svg import save_svg, to_svg
from .swizzle import ComposedLayout, Swizzle, make_composed_layout
from .tiling import (
    blocked_product,
    flat_divide,
    flat_product,
    logical_divide,
    logical_product,
    raked_product,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)


def size(x: object) -> int:
    """Number of elements of a layout (or product of an int-tuple shape)."""
    if isinstance(x, (Layout, ComposedLayout, Swizzle)):
        return x.size()
    return product(as_int_tuple(x, "size", "shape"))


__all__ = [
    "ArithmeticTuple",
    "ComposedLayout",
    "E",
    "IntTuple",
    "Layout",
    "LayoutError",
    "LayoutParseError",
    "ScaledBasis",
    "Swizzle",
    "blocked_product",
    "ceil_div",
    "coalesce",
    "compact_col_major",
    "compact_row_major",
    "complement",
    "composition",
    "congruent",
    "cosize",
    "crd2idx",
    "depth",
    "downcast",
    "filter",
    "filter_zeros",
    "flat_divide",
    "flat_product",
    "flatten",
    "idx2crd",
    "inner_product",
    "left_inverse",
    "logical_divide",
    "logical_product",
    "make_composed_layout",
    "make_identity_layout",
    "make_layout",
    "make_layout_like",
    "make_ordered_layout",
    "max_common_layout",
    "max_common_vector",
    "parse",
    "parse_int_tuple",
    "prefix_product",
    "product",
    "raked_product",
    "rank",
    "right_inverse",
    "same_function",
    "save_svg",
    "shape_div",
    "size",
    "slice_and_offset",
    "tile_to_shape",
    "tiled_divide",
    "tiled_product",
    "to_svg",
    "upcast",
    "zipped_divide",
    "zipped_product",
]
