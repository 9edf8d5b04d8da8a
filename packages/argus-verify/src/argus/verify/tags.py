"""Tags and their lattice, encoded as integers so that whole memories are numpy arrays.

A tag says where a datum came from: a tuple of integers computed by a tag function from the
element's coordinates (``(s % 32, h // gqa, d)``). Every byte carries one tag: the tag of its
element together with the byte's position in that element, so that data viewed at another
width (bf16 pairs as u32, 16-byte vectors) is still compared byte for byte.

The lattice (paper §5): ``⊥ < t < ⊤`` for every concrete tag t. ⊥ is "no tag yet" (constants,
never-written bytes), ⊤ is "conflicting data". Merging at control-flow joins and on
conflicting writes: ``merge(a, ⊥) = a``, ``merge(a, a) = a``, otherwise ⊤.

Integer encoding: ``BOTTOM = 0``, ``TOP = 1``, concrete byte tags ≥ 2, interned per
`TagTable` (one table per analysis, so the ids of two memories can be compared directly).
Equal ids mean equal tags; in the static checker, different ids may still denote equal tags
(``h // 2`` and ``hk`` where ``hk = h // 2``) and are compared by a solver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from .affine import among, runs, unique_rows, unique_sorted

BOTTOM = 0
TOP = 1

Tag = tuple[int, ...]


#: Bytes per element an id can address: byte k of element tag e has id ``2 + e·BYTES + k``.
BYTES = 64
#: A byte id's place as a mask, its element as a shift: ``(id - 2) & PLACE`` is ``(id - 2) %
#: BYTES`` and ``(id - 2) >> SHIFT`` is ``(id - 2) // BYTES`` (BYTES a power of two; floor
#: division and two's complement agree), which numpy computes many times faster on arrays.
PLACE = BYTES - 1
SHIFT = 6
assert 1 << SHIFT == BYTES


class TagTable:
    """Interns element tags; the id of byte k of an element is computed, not stored, so whole
    arrays of elements get their byte ids with numpy. A tag's components are ints or, in the
    static checker, symbolic expressions (`argus.verify.affine.Key`) that `space` can print."""

    def __init__(self, space: Any = None) -> None:
        self.space = space
        self._ids: dict[Tag, int] = {}
        self.tags: list[Tag] = []
        self.rowed = False
        """Whether some operand tag has a row part (`argus.verify.products`)."""
        self.product_parts: list[int] = []
        """The elements an accumulator's bytes carry (`PRODUCT_A`, `PRODUCT_B`), in the order made."""
        self._laid_out: dict[int, tuple[int, int]] = {}
        """Per product a tag function wrote, and per operand tag with rows: the elements its
        even and odd bytes carry."""
        self._operands: set[int] = set()
        """The operand tags with rows among `_laid_out` (one byte wide, they stay whole)."""
        self._products: Products | None = None
        self.same: Callable[[Any, Any], bool] = same_syntax
        """Whether two components are equal in every launch the owner considers where it is now
        (the static checker decides symbolic ones under its facts)."""
        self.context: Callable[[], Any] = lambda: None
        """What `same` depends on besides its arguments (the checker's loop scope and facts)."""
        self.asserted = False
        """Whether the kernel asserts some tensor's stored tags (``assert_tags``): a float zero
        stored into registers is then `argus.verify.products.ZERO`, from which products start."""
        self.formats: dict[int, str] = {}
        """Per element a tag function gave to data of one element type, that type's name ("" for
        several): a sum adds up only elements read as the numbers they are (`note_format`)."""
        self.widths = np.zeros(0, np.int64)
        """Per element, the width in bytes it is laid out at (0: not laid out yet, −1: several),
        so that a product can tell an element from a part of a wider one (`Products`)."""

    def element_id(self, tag: Tag) -> int:
        ident = self._ids.get(tag)
        if ident is None and tag and type(tag[0]) is int and tag[0] == SUM:  # (a sum's terms in one order)
            tag = canonical_sum(tag)
            ident = self._ids.get(tag)
        elif ident is None and tag and type(tag[0]) is int and tag[0] in REDUCTION_MARKS:  # (a run of one column: its point)
            tag = canonical_reduction(tag)
            ident = self._ids.get(tag)
        if ident is None:
            ident = self._ids[tag] = len(self.tags)
            self.tags.append(tag)
            if tag and type(tag[0]) is int and tag[0] in MARKS:
                self._marked(ident, tag)
        return ident

    def _marked(self, ident: int, tag: Tag) -> None:
        if tag[0] in (PRODUCT_A, PRODUCT_B):
            self.product_parts.append(ident)
        if tag[0] == ROWS:
            self.rowed = True
            pair, rows = split_rows(tag)
            self._laid_out[ident] = (self.element_id(pair), self.element_id((ROW_PART, *rows)))
            self._operands.add(ident)
        elif tag[0] == ROW_PART:
            self.rowed = True
        elif tag[0] == PRODUCT:
            parts = parse_product(tag)
            if parts is not None:
                self._laid_out[ident] = (self.element_id(parts[0]), self.element_id(parts[1]))

    @property
    def products(self) -> Products:
        """The product algebra over this table."""
        if self._products is None:
            self._products = Products(self)
        return self._products

    def byte_ids(self, element_tags: Sequence[Tag], nbytes: int) -> np.ndarray:
        """Ids of every byte of elements with these tags: shape (len(element_tags), nbytes)."""
        elements = np.fromiter((self.element_id(tuple(_plain(v) for v in t)) for t in element_tags), np.int64,
                               len(element_tags))
        return self.bytes_of(elements, nbytes)

    def rows_to_ids(self, rows: np.ndarray, nbytes: int) -> np.ndarray:
        """Byte ids of elements whose tags are the integer rows of `rows` (elements, components):
        each distinct row is interned once."""
        if rows.shape[0] == 0:
            return np.zeros((0, nbytes), np.int64)
        laid = self._laid_rows(rows) if nbytes >= 2 else None
        if laid is not None:
            return layout(self._elements(laid[0]), self._elements(laid[1]), nbytes)
        return self.bytes_of(self._elements(rows), nbytes)

    def _laid_rows(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """The rows of the elements the even and odd bytes carry where every row of `rows` is an
        operand with rows or a product of one form (`bytes_of` lays such elements out), so that
        they are interned apart: a tensor has rows × k elements (rows × columns for products),
        but few of each part. None for any other rows."""
        count, width = len(rows), rows.shape[1]

        def column(mark: int) -> np.ndarray:
            return np.full((count, 1), mark, np.int64)

        if width < 2 or not (rows[:, 1] == rows[0, 1]).all():
            return None
        if (rows[:, 0] == ROWS).all():
            npair = int(rows[0, 1])
            return rows[:, 2:2 + npair], np.concatenate([column(ROW_PART), rows[:, 2 + npair:]], axis=1)
        if not (rows[:, 0] == PRODUCT).all():
            return None
        la = int(rows[0, 1])
        if width < 4 + la or not (rows[:, 2 + la] == rows[0, 2 + la]).all():
            return None
        lb = int(rows[0, 2 + la])
        span = rows[:, 3 + la + lb:].copy()
        if span.shape[1] < 2 or la < 0 or lb < 0:
            return None  # (malformed: the table keeps it whole, as `parse_product` does)
        pos = span[:, 0]
        inside = (pos >= 0) & (pos < span.shape[1] - 2)
        lo = span[np.arange(count), np.where(inside, pos + 1, 0)]
        point = inside & (span[:, -1] - lo == 1)  # (a span of one value is that point: `canonical`)
        span[point, 0], span[point, -1] = -1, 0
        return (np.concatenate([column(PRODUCT_A), rows[:, 2:2 + la]], axis=1),
                np.concatenate([column(PRODUCT_B), column(lb), rows[:, 3 + la:3 + la + lb], span], axis=1))

    def _elements(self, rows: np.ndarray) -> np.ndarray:
        """Element ids of the integer rows of `rows` (elements, components), each distinct row
        interned once."""
        unique, inverse = unique_rows(rows)
        ids = np.fromiter((self.element_id(tuple(int(v) for v in r)) for r in unique), np.int64, len(unique))
        return ids[np.reshape(inverse, -1)]

    def bytes_of(self, elements: np.ndarray, nbytes: int) -> np.ndarray:
        """Byte ids (elements, nbytes); a product a tag function wrote is laid out as an
        accumulator holds one, and so is an operand tag with rows (`argus.verify.products`)."""
        out = runs(2 + np.asarray(elements) * BYTES, nbytes)
        self._laid_at(np.asarray(elements).reshape(-1), nbytes)
        if self._laid_out:
            elements = np.asarray(elements).reshape(-1)
            laid = among(elements, list(self._laid_out))
            if laid.any():
                out = out.reshape(elements.size, nbytes)
                if nbytes < 2:  # (a product needs two bytes; an operand stays whole)
                    out[laid & ~among(elements, list(self._operands))] = TOP
                else:
                    parts = np.array([self._laid_out[e] for e in elements[laid].tolist()], np.int64)
                    out[laid] = layout(parts[:, 0], parts[:, 1], nbytes)
        return out

    def note_format(self, ids: np.ndarray, name: str) -> None:
        """The elements whose byte ids are `ids` hold numbers of type `name` (a tensor's or tile's
        element type, where a tag function describes them): what arithmetic on them may count
        as adding them up (`argus.verify.sums`). An element of several types has none."""
        known = np.asarray(ids)[np.asarray(ids) > TOP]
        for e in unique_sorted((known - 2) >> SHIFT).tolist():
            was = self.formats.get(e)
            self.formats[e] = name if was is None or was == name else ""

    def at_width(self, tags: np.ndarray) -> np.ndarray:
        """Byte tags (..., width) as compared at their width: a byte of an element laid out at
        another width, or at several (an f32 element's low half read as an f16 one, a tag
        function giving one element to tensors of two widths), is ⊤ — no element of this width."""
        width = tags.shape[-1]
        known = tags > TOP
        if not known.any() or not self.widths.size:
            return tags
        element = np.where(known, (tags - 2) >> SHIFT, 0)
        inside = element < self.widths.size
        laid = np.where(inside, self.widths[np.where(inside, element, 0)], 0)
        other = known & (laid != 0) & (laid != width)
        return np.where(other, TOP, tags) if other.any() else tags  # type: ignore[no-any-return]

    def _laid_at(self, elements: np.ndarray, nbytes: int) -> None:
        if self.widths.size < len(self.tags):
            self.widths = np.concatenate([self.widths, np.zeros(len(self.tags) - self.widths.size + 64, np.int64)])
        now = self.widths[elements]
        self.widths[elements] = np.where((now == 0) | (now == nbytes), nbytes, -1)

    @staticmethod
    def element_of(ids: np.ndarray) -> np.ndarray:
        """Element tag ids of concrete byte ids (meaningless for ⊥ and ⊤)."""
        return (np.asarray(ids) - 2) >> SHIFT

    def text(self, tag: Tag) -> Any:
        special = products_text(tag, self.space.describe if self.space is not None else None)
        if special is not None:
            return special
        if tag and tag[0] in REDUCTION_MARKS:
            show = self.space.describe if self.space is not None else (lambda v: v)
            special = reduction_text(tag, lambda v: show(v) if isinstance(v, tuple) else v)
            if special is not None:
                return special
        parts = sum_terms(tag) if tag and tag[0] == SUM else None
        if parts is not None:
            return "sum of " + " and ".join(str(self.text(t)) for t in parts)
        if self.space is None:
            return tag
        return tuple(self.space.describe(v) if isinstance(v, tuple) else v for v in tag)

    def product_text(self, ids: Iterable[int]) -> str | None:
        """The product an element's bytes carry, for people (None: they carry none)."""
        ids = [int(i) for i in ids]
        if len(ids) < 2 or min(ids) <= TOP or ((ids[0] - 2) & PLACE) != 0:
            return None
        a, b = self.tags[(ids[0] - 2) >> SHIFT], self.tags[(ids[1] - 2) >> SHIFT]
        if a[:1] != (PRODUCT_A,) or b[:1] != (PRODUCT_B,):
            return None
        describe = self.space.describe if self.space is not None else None
        return product_text(a, b, (lambda v: describe(v) if isinstance(v, tuple) else v) if describe else (lambda v: v))

    def describe(self, ident: int) -> Any:
        """A byte tag for people: ``⊥``, ``⊤`` or ``(tag..., byte k)``."""
        ident = int(ident)
        if ident == BOTTOM:
            return "⊥"
        if ident == TOP:
            return "⊤"
        element, k = divmod(ident - 2, BYTES)
        tag = self.text(self.tags[element])
        return tag if k == 0 else (*tag, f"byte {k}")

    def element_tag(self, ids: Iterable[int]) -> Any:
        """The tag of an element from its bytes' ids: the common element tag, ⊥ or ⊤."""
        ids = [int(i) for i in ids]
        if all(i == BOTTOM for i in ids):
            return "⊥"
        if any(i in (BOTTOM, TOP) for i in ids):
            return "⊤"
        elements = {((i - 2) >> SHIFT) for i in ids}
        if len(elements) == 1:
            return self.text(self.tags[elements.pop()])
        return self.product_text(ids) or self._operand_text(ids) or "⊤"

    def _operand_text(self, ids: list[int]) -> str | None:
        """An operand's tag with rows from its bytes laid out (pair, row part), for people."""
        if len(ids) < 2 or ((ids[0] - 2) & PLACE) != 0:
            return None
        pair, rows = self.tags[(ids[0] - 2) >> SHIFT], self.tags[(ids[1] - 2) >> SHIFT]
        if rows[:1] != (ROW_PART,):
            return None
        show = self.space.describe if self.space is not None else (lambda v: v)
        shown = [tuple(show(v) if isinstance(v, tuple) else v for v in part) for part in (pair, rows[1:])]
        return f"pair {shown[0]} rows {shown[1]}"


from .products import (  # noqa: E402
    MARKS, PRODUCT, PRODUCT_A, PRODUCT_B, ROW_PART, ROWS, Products, layout, parse_product, product_text, same_syntax,
    split_rows,
)
from .products import text as products_text  # noqa: E402
from .reductions import MARKS as REDUCTION_MARKS  # noqa: E402
from .reductions import canonical_tag as canonical_reduction  # noqa: E402
from .reductions import text as reduction_text  # noqa: E402
from .sums import SUM  # noqa: E402
from .sums import canonical as canonical_sum  # noqa: E402
from .sums import terms as sum_terms  # noqa: E402


def _plain(v: Any) -> Any:
    return int(v) if isinstance(v, (int, np.integer)) else v


def merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The lattice join, element-wise: ⊥ yields to anything, equal tags stay, others are ⊤."""
    a, b = np.asarray(a), np.asarray(b)
    return np.where(a == BOTTOM, b, np.where((b == BOTTOM) | (a == b), a, TOP))


def resize(tags: np.ndarray, nbytes: int, table: TagTable | None = None) -> np.ndarray:
    """The byte tags (rows, nbytes) of values converted to another width (a constant stored
    into a narrower element, an accumulator converted to another float type): constants stay
    ⊥, a product stays that product (given the `table`), anything else is computed data (⊤)."""
    if tags.shape[-1] == nbytes:
        return tags
    if table is not None and table.asserted:
        laid = table.products.resized(tags, nbytes)
        if laid is not None:
            return laid
    constant = (tags == BOTTOM).all(axis=-1, keepdims=True)
    return np.broadcast_to(np.where(constant, BOTTOM, TOP), (*tags.shape[:-1], nbytes)).copy()


def join(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two paths' tags where either may have run: equal tags stay, anything else is ⊤ — also a
    byte written on one path only, whose other path leaves it unwritten (⊥), so that reading it
    is never taken for reading data both paths agree on."""
    a, b = np.asarray(a), np.asarray(b)
    return np.where(a == b, a, TOP)


def select(condition: np.ndarray, a: np.ndarray, b: np.ndarray, *, path_sensitive: bool) -> np.ndarray:
    """The tags of ``a if condition else b``: the chosen side when the condition is known for
    each point (replay), the join of both otherwise (the static, path-insensitive rule)."""
    if path_sensitive:
        cond = np.asarray(condition, dtype=bool).reshape(np.shape(condition) + (1,) * (np.ndim(a) - np.ndim(condition)))
        return np.where(cond, a, b)
    return merge(a, b)
