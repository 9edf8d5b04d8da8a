"""XOR swizzles and composed layouts (``outer o offset o inner``).

``Sw<B,M,S>`` keeps the low `M` bits of an offset and XORs the `B` bits found `S` places
higher into the `B` bits above them (for negative `S`, lower into higher). It is a bijection
and its own inverse, which is why a wrong swizzle never shows up as a lost or doubled element.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .basis import has_basis
from .errors import LayoutError
from .inttuple import is_int
from .layout import Layout
from .limits import number_text
from .symbolic import Expr

__all__ = ["MAX_SWIZZLE_BITS", "ComposedLayout", "Swizzle", "make_composed_layout"]

#: The bits a swizzle may read or flip: those of a non-negative int64 offset.
MAX_SWIZZLE_BITS = 63

#: Most elements of a composed layout whose cosize is computed (by enumerating its offsets).
COSIZE_ENUMERATION_LIMIT = 1 << 22

INT64_MAX = (1 << 63) - 1


class Swizzle:
    """The XOR function ``Sw<B,M,S>``; requires ``B >= 0``, ``M >= 0`` and ``|S| >= B``."""

    __slots__ = ("base", "bits", "shift")

    bits: int
    base: int
    shift: int

    def __init__(self, bits: int, base: int, shift: int) -> None:
        for name, v in (("B", bits), ("M", base), ("S", shift)):
            if not is_int(v):
                raise LayoutError("Swizzle", f"{name} must be an int, got {v!r}", bits, base, shift)
        if bits < 0 or base < 0:
            raise LayoutError("Swizzle", "B and M must be non-negative", bits, base, shift)
        if bits + base + abs(shift) > MAX_SWIZZLE_BITS:
            raise LayoutError(
                "Swizzle",
                f"B + M + |S| exceeds {MAX_SWIZZLE_BITS}: a swizzle acts on the low {MAX_SWIZZLE_BITS} bits "
                "of an offset",
                bits,
                base,
                shift,
            )
        if abs(shift) < bits:
            raise LayoutError(
                "Swizzle", f"|S| = {abs(shift)} < B = {bits}: source and target bits overlap", bits, base, shift
            )
        self.bits = bits
        self.base = base
        self.shift = shift

    @property
    def source_mask(self) -> int:
        """The bits that are read (CuTe's ``yyy_msk``)."""
        return ((1 << self.bits) - 1) << (self.base + max(0, self.shift))

    @property
    def target_mask(self) -> int:
        """The bits that are flipped (CuTe's ``zzz_msk``)."""
        return ((1 << self.bits) - 1) << (self.base - min(0, self.shift))

    def __call__(self, offset: Any) -> Any:
        offset = _checked_offset(offset, self)
        picked = offset & self.source_mask
        moved = picked >> self.shift if self.shift >= 0 else picked << -self.shift
        return offset ^ moved

    def size(self) -> int:
        """The period of the function: it permutes every aligned block of this many offsets."""
        return 1 << (self.base + self.bits + abs(self.shift))

    def cosize(self) -> int:
        return self.size()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Swizzle):
            return NotImplemented
        return (self.bits, self.base, self.shift) == (other.bits, other.base, other.shift)

    def __hash__(self) -> int:
        return hash(("Sw", self.bits, self.base, self.shift))

    def __str__(self) -> str:
        return f"Sw<{self.bits},{self.base},{self.shift}>"

    def __repr__(self) -> str:
        return f"Swizzle({self.bits}, {self.base}, {self.shift})"


def _checked_offset(offset: Any, sw: Swizzle) -> Any:
    """Swizzles act on non-negative offsets: ints, integer numpy arrays or symbolic values."""
    if isinstance(offset, np.integer):
        offset = int(offset)
    if is_int(offset):
        if offset < 0:
            raise LayoutError("swizzle", f"offset {offset} is negative", sw)
        return offset
    if isinstance(offset, np.ndarray):
        if offset.dtype.kind not in "iu":
            raise LayoutError("swizzle", f"offset arrays must have an integer dtype, got {offset.dtype}", sw)
        if offset.size and int(offset.min()) < 0:
            raise LayoutError("swizzle", "offsets must be non-negative", sw)
        return offset
    if isinstance(offset, Expr):
        return offset
    raise LayoutError("swizzle", f"expected an int offset, got {type(offset).__name__} {offset!r}", sw)


class ComposedLayout:
    """``outer o offset o inner``: coordinates go through `inner`, get `offset` added, then `outer`.

    `outer` is a `Swizzle` or a `Layout`. Shape-side operations (slicing, composition with a
    tiler, divides, products) act on `inner`; the outer function is carried along unchanged.
    """

    __slots__ = ("inner", "offset", "outer")

    outer: Swizzle | Layout
    offset: int
    inner: Layout

    def __init__(self, outer: Swizzle | Layout, offset: int, inner: Layout) -> None:
        if not isinstance(outer, (Swizzle, Layout)):
            raise LayoutError("ComposedLayout", f"outer must be a Swizzle or Layout, got {outer!r}", outer)
        if not is_int(offset):
            raise LayoutError("ComposedLayout", f"offset must be an int, got {offset!r}", offset)
        if not isinstance(inner, Layout):
            raise LayoutError("ComposedLayout", f"inner must be a Layout, got {inner!r}", inner)
        self.outer = outer
        self.offset = offset
        self.inner = inner

    @property
    def shape(self) -> Any:
        return self.inner.shape

    @property
    def rank(self) -> int:
        return self.inner.rank

    @property
    def depth(self) -> int:
        return self.inner.depth

    def __len__(self) -> int:
        return len(self.inner)

    def size(self) -> int:
        return self.inner.size()

    def cosize(self) -> int:
        """One past the largest offset reached on the domain (offsets are never negative).

        Found by enumerating the offsets, so refused past `COSIZE_ENUMERATION_LIMIT` elements.
        """
        if self.size() > COSIZE_ENUMERATION_LIMIT:
            raise LayoutError(
                "cosize",
                f"the cosize of a composed layout is found by enumerating its offsets, and this one has "
                f"{number_text(self.size())} (at most {COSIZE_ENUMERATION_LIMIT})",
                self,
            )
        return int(self.offsets().max()) + 1

    def with_inner(self, inner: Layout) -> ComposedLayout:
        return ComposedLayout(self.outer, self.offset, inner)

    def check_defined(self, op: str, *operands: Any) -> ComposedLayout:
        """This layout, if its outer function is defined wherever its domain leads: a swizzle and
        a layout take non-negative offsets only. An operation whose answer would leave that
        range (an inner layout read past its size, where it may run below 0) has no answer, and
        `op` refuses it with a `LayoutError`. Coordinate (basis) strides are not offsets: kept."""
        if has_basis(self.inner):
            return self
        lowest = self.offset + self.inner.codomain()[0]
        if lowest < 0:
            raise LayoutError(
                op,
                f"the composed layout's offset plus its inner layout reaches {number_text(lowest)}, where "
                "its outer function is not defined (it takes non-negative offsets only)",
                *operands,
            )
        return self

    def __getitem__(self, i: int) -> ComposedLayout:
        return self.with_inner(self.inner[i])

    def __call__(self, *args: Any) -> Any:
        crd = args[0] if len(args) == 1 else args
        from .inttuple import is_tuple, leaves
        from .layout import slice_and_offset

        if crd is None or (is_tuple(crd) and any(c is None for c in leaves(crd))):
            sub, off = slice_and_offset(crd, self.inner)
            return ComposedLayout(self.outer, self.offset + off, sub)
        return self.outer(self.offset + self.inner(*args))

    def offsets(self) -> np.ndarray:
        """All offsets in index order, as int64 (exact, or a LayoutError)."""
        inner = self.inner.offsets()
        if inner.size and not -INT64_MAX <= self.offset + int(inner.min()) <= self.offset + int(inner.max()) <= INT64_MAX:
            raise LayoutError("offsets", "the offset moves the inner layout's offsets beyond int64", self)
        return self.outer(inner + self.offset)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComposedLayout):
            return NotImplemented
        return (self.outer, self.offset, self.inner) == (other.outer, other.offset, other.inner)

    def __hash__(self) -> int:
        return hash((self.outer, self.offset, self.inner))

    def __str__(self) -> str:
        return f"{self.outer} o {self.offset} o {self.inner}"

    def __repr__(self) -> str:
        return f"ComposedLayout({self.outer!r}, {self.offset!r}, {self.inner!r})"

    def _repr_svg_(self) -> str | None:
        """Notebook picture; None (so the text form shows) when the layout is not drawable."""
        from .svg import to_svg

        try:
            return to_svg(self)
        except LayoutError:
            return None


def make_composed_layout(outer: Swizzle | Layout, offset: int, inner: Layout) -> ComposedLayout:
    return ComposedLayout(outer, offset, inner)
