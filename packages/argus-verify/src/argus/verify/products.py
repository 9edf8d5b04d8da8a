"""Product tags: what a matrix product's accumulator holds — the rows of A and of B it combines
and the set of k it has summed — so that a kernel can state, where it stores C, that
``c[m, n]`` is the full product of A's row m and B's row n over every k in ``[0, K)``.

Everything lives in the ordinary `TagTable`, so memories stay integer arrays:

- An operand tag with a row part, ``tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))``, is the
  element ``(ROWS, npair, *pair, *rows)``. A product pairs A and B by the pair part only; the
  row part travels to the accumulator. In memory its bytes alternate, as an accumulator's do
  (`layout`), between the pair tag itself (even bytes) and ``(ROW_PART, *rows)`` (odd bytes):
  a tile of A holds as many elements as rows plus k values, not rows times k, which is what
  a loop's renaming and joins pay for. A one-byte operand keeps the whole element.
- A *span* is a set of pair tags: ``(pos, *pair_at_lo, hi)``, the tags equal to ``pair_at_lo``
  except at component `pos`, which runs over ``[lo, hi)`` (``lo`` sits at `pos`). A single pair
  tag is the point ``(-1, *pair, 0)`` (its running component is not known yet). A product
  whose k are every other group of values (a 16×16×16 atom fed four keys of each eight), and an
  accumulator part way through filling the gaps, hold a *progression of runs*:
  ``(-2 - pos, *pair_at_lo, mid, stride, length, count)``, the values ``[lo, mid)`` then
  ``mid + stride·j + i`` for ``j < count``, ``i < length`` (count ≥ 2, 0 < length < stride; ints),
  so ``{0..3, 8..11}`` is ``(-2, 0, 0, 8, 4, 2)`` and ``[0, k0)`` then that, ``(-2, 0, k0, 8, 4, 2)``.
  Each set has one form (`span_of`, `joined` make no other), so equal sets compare equal.
- An accumulator element's bytes alternate between two elements: even bytes carry
  ``(PRODUCT_A, *rows_a)``, odd bytes ``(PRODUCT_B, len(rows_b), *rows_b, *span)``. An element
  must be two bytes wide at least to carry a product (a one-byte accumulator holds ⊤).
- ``product(rows_a, rows_b, k)`` in a tag function gives the element
  ``(PRODUCT, len(rows_a), *rows_a, len(rows_b), *rows_b, *span)``, which the table lays out
  in bytes as an accumulator's (`TagTable.bytes_of`), so that the two compare byte for byte.

The marks are 64-bit integers near -2**62, which tag functions do not compute in practice; a
tag that held one would be read the same way by the checker and by the interpreter's shadow
tags, so the two never disagree about it. Components are ints or, in the static checker, symbolic keys (`argus.verify.affine`);
two components are the same when equal as stored (the checker keeps keys canonical) and spans
join only where their ends are equal that way — anything else is ⊤, never a guess.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .affine import add_keys, all_along, any_along, sub_keys, unique_inverse, unique_rows, unique_sorted

if TYPE_CHECKING:
    from .tags import TagTable

_BASE = -(1 << 62)
PRODUCT = _BASE - 1
"""First component of a product as a tag function writes it (`product(...)`)."""
PRODUCT_A = _BASE - 2
"""First component of the element an accumulator's even bytes carry: A's rows."""
PRODUCT_B = _BASE - 3
"""First component of the element an accumulator's odd bytes carry: B's rows and the k span."""
ROWS = _BASE - 4
"""First component of an operand tag with a row part."""
EMPTY = _BASE - 5
"""The tag of nothing summed yet, scaled (``0.0 · correction``): an accumulator as a constant
leaves it (⊥), which a scale would otherwise make computed data."""
ROW_PART = _BASE - 7
"""First component of the element an operand's odd bytes carry: its row part (`ROWS`)."""
MAYBE_ZERO = _BASE - 8
"""The tag of a value that is a cleared zero (`ZERO`) on some path and something else on
another (``z = 1.0; if c: z = 0.0``): no product starts from it, and none survives a scale by
it (a product times a value that may be zero may be zero)."""
MARKS = (PRODUCT, PRODUCT_A, PRODUCT_B, ROWS, EMPTY, ROW_PART, MAYBE_ZERO)
ZERO = _BASE - 6
"""The tag of a float zero stored into registers where products are in play: an accumulator
cleared, from which a product starts. Any other constant, and untagged data, are ⊥, which no
product starts from (``acc = 1.0`` or ``acc = bias[m]`` then summing A·B is not A·B)."""

_BYTES = 64  # (argus.verify.tags.BYTES: byte k of element e has id 2 + e·BYTES + k)
_PLACE, _SHIFT = _BYTES - 1, 6  # (argus.verify.tags.PLACE, SHIFT: a byte's place, its element)
TOP_ID = 1  # (argus.verify.tags.TOP)
_LAST = _BYTES - 1
"""Where a product's last byte sits in its element (`layout`)."""


def layout(a: np.ndarray, b: np.ndarray, width: int) -> np.ndarray:
    """Byte ids (..., width) of products whose bytes carry elements `a` (even bytes) and `b` (odd
    bytes): byte k at its place k, except the last, at `_LAST` — so that no run of a wider
    product's bytes (its low half, a narrower view of it) reads as a product of that width."""
    a, b = np.asarray(a), np.asarray(b)
    if width > 8 or a.shape != b.shape:
        byte = np.arange(width)
        place = np.where(byte == width - 1, _LAST, byte)
        return 2 + np.where(byte % 2 == 0, a[..., None], b[..., None]) * _BYTES + place
    # a column at a time: numpy broadcasts a short last axis row by row, a call each
    out = np.empty((*a.shape, width), np.int64)
    first, second = 2 + a * _BYTES, 2 + b * _BYTES
    for k in range(width):
        out[..., k] = (first if k % 2 == 0 else second) + (_LAST if k == width - 1 else k)
    return out


# ---- components ---------------------------------------------------------------------------

def component_key(v: Any) -> Any:
    """A tag component (an int, or a symbolic key) as a key."""
    return v if isinstance(v, tuple) else (int(v), ())


def plain_component(key: Any) -> Any:
    """A key as a tag component holds it: an int where it is constant."""
    return key[0] if not key[1] else key


def difference(x: Any, y: Any) -> int | None:
    """``x - y`` when it is the same number in every launch, else None."""
    if not isinstance(x, tuple) and not isinstance(y, tuple):
        return int(x) - int(y)
    d = sub_keys(component_key(x), component_key(y))
    return None if d[1] else d[0]


def shifted(x: Any, by: int) -> Any:
    return int(x) + by if not isinstance(x, tuple) else plain_component(add_keys(x, (by, ())))


# ---- spans --------------------------------------------------------------------------------

_MAX_POINTS = 4096
"""The most pair tags `joined` lists one by one (spans of concrete extent that its rules do not
join); larger ones are joined by the rules alone."""


def along(span: tuple[Any, ...]) -> int | None:
    """The component a span runs along: -1 for a point, None where the span is malformed."""
    pos = span[0] if span else None
    if not isinstance(pos, int) or isinstance(pos, bool):
        return None
    if pos >= -1:
        return pos if pos < len(span) - 2 else None
    pos, tail = -2 - pos, span[-3:]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in tail) or len(tail) < 3:
        return None
    stride, length, count = tail
    return pos if pos < len(span) - 5 and 0 < length < stride and count >= 2 else None


def pair_length(span: tuple[Any, ...]) -> int:
    """How many components a span's pair tags have."""
    return len(span) - (5 if isinstance(span[0], int) and span[0] < -1 else 2)


class _Piece:
    """A span apart, along one component: the values ``[lo, mid)`` then, when ``count`` ≥ 2,
    ``{mid + stride·j + i : j < count, i < length}`` (a run alone has count 0: ``[lo, mid)``)."""

    __slots__ = ("lo", "mid", "stride", "length", "count")

    def __init__(self, lo: Any, mid: Any, stride: int = 0, length: int = 0, count: int = 0) -> None:
        self.lo, self.mid, self.stride, self.length, self.count = lo, mid, stride, length, count

    def end(self) -> Any:
        """One past the last value."""
        return self.mid if not self.count else shifted(self.mid, self.stride * (self.count - 1) + self.length)

    def pure(self) -> bool:
        """Whether it has no run before its progression (a run: always)."""
        return not self.count or difference(self.mid, self.lo) == 0

    def points(self) -> list[int] | None:
        """Its values as offsets from ``lo`` (None: not of concrete extent, or too many)."""
        n = difference(self.mid, self.lo)
        if n is None or n < 0 or n + self.count * self.length > _MAX_POINTS:
            return None
        return list(range(n)) + [n + self.stride * j + i for j in range(self.count) for i in range(self.length)]


def _piece(span: tuple[Any, ...], pos: int) -> _Piece:
    at = 1 + pos
    if span[0] == -1:
        return _Piece(span[at], shifted(span[at], 1))
    if span[0] >= 0:
        return _Piece(span[at], span[-1])
    return _Piece(span[at], *span[-4:])


def _made(piece: _Piece, pos: int, pair: tuple[Any, ...]) -> tuple[Any, ...]:
    """The canonical span of `piece` along `pos`, its other components those of `pair`."""
    at_lo = (*pair[:pos], piece.lo, *pair[pos + 1:])
    if piece.count == 1:  # (one run: no progression)
        piece = _Piece(piece.lo, shifted(piece.mid, piece.length))
    if piece.count and piece.length == piece.stride:  # (runs that meet: one run)
        piece = _Piece(piece.lo, piece.end())
    if not piece.count:
        return (-1, *at_lo, 0) if difference(piece.mid, piece.lo) == 1 else (pos, *at_lo, piece.mid)
    return (-2 - pos, *at_lo, piece.mid, piece.stride, piece.length, piece.count)


def _from_offsets(offsets: list[int]) -> _Piece | None:
    """The piece of values ``offsets`` (distinct, in any order; lo is the first's offset), or
    None when they are no run and no progression of runs."""
    values = sorted(offsets)
    if len(set(values)) != len(values):
        return None
    runs: list[list[int]] = []
    for v in values:
        if runs and runs[-1][1] == v:
            runs[-1][1] = v + 1
        else:
            runs.append([v, v + 1])
    if len(runs) == 1:
        return _Piece(runs[0][0], runs[0][1])
    length = runs[1][1] - runs[1][0]
    mid = runs[0][1] - length
    stride = runs[1][0] - mid
    if runs[0][1] - runs[0][0] < length or \
            any(e - s != length or s != mid + stride * j for j, (s, e) in enumerate(runs[1:], 1)):
        return None
    return _Piece(runs[0][0], mid, stride, length, len(runs))


def span_of(pairs: list[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    """The span the pair tags `pairs` (one per k of a product, in any order) cover exactly, or
    None when they are not one run, or one progression of runs, of values of one component."""
    first = pairs[0]
    if any(len(p) != len(first) for p in pairs):
        return None
    if len(pairs) == 1:
        return (-1, *first, 0)
    varying = [j for j in range(len(first)) if any(p[j] != first[j] for p in pairs)]
    if len(varying) != 1:
        return None
    j = varying[0]
    offsets = [difference(p[j], first[j]) for p in pairs]
    if any(o is None for o in offsets):
        return None
    piece = _from_offsets(offsets)  # type: ignore[arg-type]
    if piece is None:
        return None
    return _made(_Piece(shifted(first[j], piece.lo), shifted(first[j], piece.mid), piece.stride, piece.length,
                        piece.count), j, first)


def canonical(span: tuple[Any, ...]) -> tuple[Any, ...]:
    """One form per set: a span of one value is that point."""
    pos = span[0]
    if isinstance(pos, int) and 0 <= pos < len(span) - 2 and difference(span[-1], span[1 + pos]) == 1:
        return (-1, *span[1:-1], 0)
    return span


def same_syntax(x: Any, y: Any) -> bool:
    """Whether two components are equal as written (the same form, or numbers equal)."""
    return x == y or difference(x, y) == 0


def _after(x: _Piece, y: _Piece, same: Any) -> _Piece | None:
    """`x` and `y` together when every value of `y` lies past those of `x` and the two make one
    piece (by the rules that hold whatever the symbolic ends are), else None."""
    if not x.count:  # x a run
        if same(y.lo, x.mid):  # y starts where x ends
            return _Piece(x.lo, y.mid, y.stride, y.length, y.count)
        extent = difference(x.mid, x.lo)
        if not y.pure() or extent is None:
            return None
        if y.count:  # a run of x's last `length` values, then y's progression
            if extent >= y.length and same(y.mid, shifted(x.mid, y.stride - y.length)):
                return _Piece(x.lo, shifted(x.mid, -y.length), y.stride, y.length, y.count + 1)
            return None
        gap, length = difference(y.lo, x.mid), difference(y.mid, y.lo)
        if gap is None or length is None or gap <= 0 or not 0 < length <= extent:
            return None
        return _Piece(x.lo, shifted(x.mid, -length), gap + length, length, 2)
    if not y.pure():
        return None
    if y.count == x.count and y.stride == x.stride and x.length + y.length <= x.stride and \
            same(y.mid, shifted(x.mid, x.length)):  # y's runs right after x's, in x's gaps
        return _Piece(x.lo, x.mid, x.stride, x.length + y.length, x.count)
    more = y.count if y.count else 1
    runs_like = (y.stride == x.stride and y.length == x.length) if y.count else difference(y.mid, y.lo) == x.length
    if runs_like and same(y.lo, shifted(x.mid, x.stride * x.count)):  # y's runs continue x's
        return _Piece(x.lo, x.mid, x.stride, x.length, x.count + more)
    return None


def joined(x: tuple[Any, ...], y: tuple[Any, ...], same: Any = same_syntax) -> tuple[Any, ...] | None:
    """The span of the pairs of `x` and of `y` when they are disjoint and together one run or
    one progression of runs, else None. `same` decides whether two components are equal in
    every launch considered (by default: as written)."""
    px, py = along(x), along(y)
    if px is None or py is None or pair_length(x) != pair_length(y):
        return None
    pos = px if px != -1 else py
    if pos == -1:  # two points: the one component they differ in runs
        differ = [j for j in range(1, len(x) - 1) if x[j] != y[j]]
        if len(differ) != 1:
            return None
        pos = differ[0] - 1
    if px not in (-1, pos) or py not in (-1, pos):
        return None
    at, n = 1 + pos, pair_length(x)
    if any(x[j] != y[j] and not same(x[j], y[j]) for j in range(1, 1 + n) if j != at):
        return None
    a, b = _piece(x, pos), _piece(y, pos)
    both = _after(a, b, same) or _after(b, a, same)
    if both is None:  # (of concrete extent, apart a concrete distance: listed)
        d, pa, pb = difference(b.lo, a.lo), a.points(), b.points()
        if d is None or pa is None or pb is None or len(pa) + len(pb) > _MAX_POINTS:
            return None
        both = _from_offsets(pa + [d + v for v in pb])
        if both is None:
            return None
        both = _Piece(shifted(a.lo, both.lo), shifted(a.lo, both.mid), both.stride, both.length, both.count)
    return _made(both, pos, x[1:1 + n])


# ---- parsing what a tag function writes ------------------------------------------------------

def parse_product(tag: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]] | None:
    """The two elements (A's, B's) a `PRODUCT` tag lays out in bytes, or None if malformed."""
    try:
        la = tag[1]
        rows_a = tag[2:2 + la]
        lb = tag[2 + la]
        rows_b = tag[3 + la:3 + la + lb]
        span = tag[3 + la + lb:]
    except (IndexError, TypeError):
        return None
    if not isinstance(la, int) or not isinstance(lb, int) or len(span) < 2 or not isinstance(span[0], int):
        return None
    return (PRODUCT_A, *rows_a), (PRODUCT_B, lb, *rows_b, *canonical(span))


def split_rows(tag: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """An operand tag's pair part and row part (no row part: the tag itself and ())."""
    if tag and tag[0] == ROWS and len(tag) > 1 and isinstance(tag[1], int):
        return tag[2:2 + tag[1]], tag[2 + tag[1]:]
    return tag, ()


def text(tag: tuple[Any, ...], describe: Any = None) -> Any:
    """A product or an operand with rows, for people; None for any other tag."""
    show = (lambda v: describe(v) if isinstance(v, tuple) else v) if describe is not None else (lambda v: v)
    if not tag:
        return None
    if tag[0] == ROWS:
        pair, rows = split_rows(tag)
        return f"pair {tuple(map(show, pair))} rows {tuple(map(show, rows))}"
    if tag[0] == PRODUCT:
        parts = parse_product(tag)
        return None if parts is None else product_text(parts[0], parts[1], show)
    if tag[0] == EMPTY:
        return "nothing summed yet (scaled)"
    if tag[0] == ZERO:
        return "zero (nothing summed)"
    if tag[0] == ROW_PART:  # (an operand's odd bytes: its even bytes carry the pair)
        return f"rows {tuple(map(show, tag[1:]))}"
    if tag[0] == PRODUCT_A:  # (one byte's element of a product: its other bytes tell the rest)
        return f"product of A rows {tuple(map(show, tag[1:]))}"
    if tag[0] == PRODUCT_B and len(tag) > 2 and isinstance(tag[1], int):
        return product_text((PRODUCT_A,), tag, show).replace("product of A rows () and ", "product of ")
    return None


def product_text(a: tuple[Any, ...], b: tuple[Any, ...], show: Any) -> str:
    rows_a = tuple(map(show, a[1:]))
    lb = b[1]
    rows_b, span = tuple(map(show, b[2:2 + lb])), b[2 + lb:]
    pos = along(span)
    if pos is None:
        k = f"k in the malformed span {tuple(map(show, span))}"
    elif pos == -1:
        k = f"k = {tuple(map(show, span[1:-1]))}"
    else:
        comps = [show(v) for v in span[1:1 + pair_length(span)]]
        piece = _piece(span, pos)
        if not piece.count:
            comps[pos] = f"{show(piece.lo)}..{show(piece.mid)}"
        else:  # e.g. "0..4 every 8, 4 runs" (0..4, 8..12, 16..20, 24..28)
            runs = f"{show(piece.mid)}..{show(shifted(piece.mid, piece.length))} every {piece.stride}, {piece.count} runs"
            comps[pos] = runs if piece.pure() else f"{show(piece.lo)}..{show(piece.mid)} then {runs}"
        k = f"k over {'(' + ', '.join(map(str, comps)) + ')'}"
    return f"product of A rows {rows_a} and B rows {rows_b}, {k}"


# ---- the accumulator rule -------------------------------------------------------------------

class Products:
    """The product algebra over one `TagTable`: what the operands of a product contribute and
    what its accumulator then holds. Results are remembered per element, so that a loop's
    passes over the same products cost array operations only."""

    def __init__(self, table: TagTable) -> None:
        self.table = table
        self._split: dict[int, tuple[int, int]] = {}
        """Per operand element: its pair part's element and its row part's (−1: no rows)."""
        self._spans: dict[tuple[int, ...], int] = {}
        """Per k-tuple of pair elements: the element of the span they cover (−1: none)."""
        self._a: dict[int, int] = {}
        """Per row element: its `PRODUCT_A` element."""
        self._b: dict[tuple[int, int, int, Any], int] = {}
        """Per (old B element or −1, row element of B, span element, the table's context): the new
        `PRODUCT_B` element."""
        self._mask: tuple[int, np.ndarray] = (-1, np.zeros(0, bool))
        """`_part_mask`, with the number of product parts it was made for."""
        self.unjoined: set[tuple[int, int]] = set()
        """(old B element, span element) pairs a product could not add up since last taken: the
        span it held and the one added did not meet (`take_unjoined`)."""
        self.first_pass: Callable[[tuple[Any, ...], tuple[Any, ...]], tuple[Any, ...] | None] | None = None
        """Set while the static checker walks a loop's first pass (its entry the state before
        the first iteration): given A's and B's spans where they differ as written, the one to
        sum if they are one set at the first iteration (data brought before the loop, as
        ``0..16``, against tags of the loop's index, as ``k0..k0 + 16``), else None. Such a pass
        only proposes the loop's entry, which later passes confirm (`used`)."""
        self.used: set[Any] = set()
        """The `first_pass` functions products took a span from (a pass whose function is here
        is no final one; a loop inside it sets its own for its first pass)."""

    # -- operands
    def pair_bytes(self, ids: np.ndarray) -> np.ndarray:
        """Byte ids with every operand element that has a row part replaced by its pair part:
        what a product compares of A and B."""
        if not self.table.rowed and not self.table.asserted:
            return ids
        ids = self.as_joined(ids)  # (zero on one path, data on another: no pair)
        elements, inverse = unique_inverse(ids)
        concrete = elements > 1
        e = (elements[concrete] - 2) >> _SHIFT
        parts = np.array([self._parts(x) for x in e.tolist()], np.int64).reshape(-1, 2)
        pairs = np.where(parts[:, 0] >= 0, parts[:, 0], 0)
        mapped = elements.copy()
        mapped[concrete] = np.where(e == self.table._ids.get((ZERO,), -1), 0,  # (a zero pairs with anything, as ⊥)
                                    np.where(parts[:, 0] >= 0, 2 + pairs * _BYTES + ((elements[concrete] - 2) & _PLACE),
                                             TOP_ID))  # (a row part apart from its pair: no pair)
        out = mapped[inverse].reshape(ids.shape)
        if ids.ndim and ids.shape[-1] >= 2 and self.table.rowed:  # operands laid out: their pair at every byte
            laid, pair, _ = self.operand_laid_out(ids)
            if laid.any():
                out = np.where(laid[..., None], 2 + pair[..., None] * _BYTES + np.arange(ids.shape[-1]), out)
        return out  # type: ignore[no-any-return]

    def _parts(self, e: int) -> tuple[int, int]:
        """An element's pair part and its row part (a `ROW_PART` element); (−1, −1) for a row
        part itself, which is no operand element."""
        found = self._split.get(e)
        if found is None:
            tag = self.table.tags[e]
            if tag[:1] == (ROW_PART,):
                found = (-1, -1)
            else:
                pair, rows = split_rows(tag)
                found = (self.table.element_id(pair) if pair is not tag else e, self.table.element_id((ROW_PART, *rows)))
            self._split[e] = found
        return found

    def operand_laid_out(self, tags: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per element (rows of byte tags, at least two bytes), whether it is an operand with
        rows laid out (pair tag in its even bytes, row part in its odd ones), its pair element
        and its row part element."""
        laid, pair, rows = self.laid_out(tags)
        if laid.any():
            found = unique_sorted(rows[laid])
            marked = np.array([self.table.tags[x][:1] == (ROW_PART,) for x in found.tolist()], bool)
            laid[laid] = marked[np.searchsorted(found, rows[laid])]
        return laid, pair, rows

    def _agreed(self, sa: np.ndarray, sb: np.ndarray, apart: np.ndarray) -> np.ndarray:
        """Per product whose A and B spans differ (`apart`), the span `first_pass` takes for
        both (−1: none, and always without it)."""
        out = np.full(sa.shape, -1, np.int64)
        if self.first_pass is None:
            return out
        distinct, where = unique_rows(np.stack([sa[apart], sb[apart]], axis=1))
        tags, made = self.table.tags, []
        for x, y in distinct.tolist():
            span = self.first_pass(tags[x], tags[y])
            made.append(-1 if span is None else self.table.element_id(span))
        chosen = np.array(made, np.int64).reshape(-1)
        if (chosen >= 0).any():
            self.used.add(self.first_pass)
        out[apart] = chosen[np.reshape(where, -1)]
        return out

    def _span(self, pairs: tuple[int, ...]) -> int:
        found = self._spans.get(pairs)
        if found is None:
            span = span_of([self.table.tags[p] for p in pairs])
            found = self._spans[pairs] = -1 if span is None else self.table.element_id(span)
        return found

    def _product_a(self, rows: int) -> int:
        found = self._a.get(rows)
        if found is None:
            found = self._a[rows] = self.table.element_id((PRODUCT_A, *self.table.tags[rows][1:]))
        return found

    def _product_b(self, old: int, rows: int, span: int, context: Any = None) -> int:
        """The B element of an accumulator that held `old` (−1: nothing summed yet) after
        adding the products of B's row `rows` over the pairs of `span`: −1 when the sums do
        not make one product."""
        key = (old, rows, span, context)
        found = self._b.get(key)
        if found is None:
            table = self.table
            b_rows, new = table.tags[rows][1:], table.tags[span]
            if old >= 0:
                tag = table.tags[old]
                lb = tag[1] if len(tag) > 1 and tag[0] == PRODUCT_B else None
                if lb is None or tuple(tag[2:2 + lb]) != tuple(b_rows):
                    new = None
                else:
                    new = joined(tuple(tag[2 + lb:]), tuple(new), table.same)
            found = self._b[key] = -1 if new is None else table.element_id((PRODUCT_B, len(b_rows), *b_rows, *new))
        return found

    def _operand(self, matrix: np.ndarray, number: str | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Per group and row of an operand matrix (groups, rows, k, bytes): its row element
        (−1 where the row's elements disagree, are not whole tagged elements, have no rows, or
        were described as numbers of another type than `number`, the atom's: bits of one type
        multiplied as another's are no product of the data) and its span element (−1 where its
        pairs are no span)."""
        groups, rows, k, width = matrix.shape
        pairs, row_parts = self._operand_parts(matrix)
        if number is not None and row_parts.size:
            formats = self.table.formats
            found, inverse = unique_inverse(row_parts)
            kinds = np.array([formats.get(e, number) == number for e in found.tolist()], bool)
            row_parts = np.where(kinds[inverse], row_parts, -1)
        row = np.where(all_along(row_parts == row_parts[..., :1]), row_parts[..., 0], -1)
        row[row == self.table._ids.get((ROW_PART,), -1)] = -1  # (no rows: no claim can name such a product)
        if (row < 0).all():
            return row, row
        distinct, where = unique_rows(pairs.reshape(-1, k))
        spans = np.array([self._span(tuple(r)) if min(r) >= 0 else -1 for r in distinct.tolist()], np.int64)
        span = spans[np.reshape(where, -1)].reshape(groups, rows)
        return np.where(span >= 0, row, -1), span

    def _operand_parts(self, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per element of an operand matrix (..., bytes): its pair element and its row part
        element, laid out or whole (−1 where it is neither: no whole tagged element)."""
        width = matrix.shape[-1]
        first = matrix[..., 0]
        whole = (first > 1) & (((first - 2) & _PLACE) == 0) & \
            all_along(matrix == first[..., None] + np.arange(width))
        elements = np.where(whole, (first - 2) >> _SHIFT, -1)
        # (an element's first bytes are no element where it is laid out wider: a part of it)
        laid = self.table.widths
        if laid.size:
            inside = (elements >= 0) & (elements < laid.size)
            at = laid[np.where(inside, elements, 0)]
            elements = np.where(inside & (at != 0) & (at != width), -1, elements)
        unique, inverse = unique_inverse(elements)
        parts = np.array([self._parts(int(x)) if x >= 0 else (-1, -1) for x in unique.tolist()],
                         np.int64).reshape(-1, 2)
        pairs = parts[inverse, 0].reshape(elements.shape)
        row_parts = parts[inverse, 1].reshape(elements.shape)
        if width >= 2 and self.table.rowed:
            laid, pair, rows = self.operand_laid_out(matrix)
            pairs, row_parts = np.where(laid, pair, pairs), np.where(laid, rows, row_parts)
        return pairs, row_parts

    # -- the accumulator
    def accumulate(self, a: np.ndarray, b: np.ndarray, c: np.ndarray, c_index: np.ndarray,
                   numbers: tuple[str, str] | None = None) -> np.ndarray:
        """The accumulator's byte ids after a product: `a` (groups, M, K, bytes) and `b`
        (groups, N, K, bytes) the operands' byte ids as matrices, `c` (groups, T, V, bytes)
        the accumulator's (thread of the group, value), `c_index` (T, V) the atom's C layout
        (m + n·M). An accumulator that held nothing summed (⊥: a constant) or a product of
        the same rows whose k span this product's continues holds the product over both;
        anything else is ⊤ (computed data)."""
        groups, m_size = a.shape[0], a.shape[1]
        width = c.shape[-1]
        if width < 2 or not self.table.asserted:  # (no claim reads products: computed data, as any result)
            return np.full(c.shape, 1, np.int64)
        rows_a, span_a = self._operand(a, numbers and numbers[0])  # (groups, M)
        if (rows_a < 0).all():  # (operands without rows: a product no claim names, computed data)
            return np.full(c.shape, 1, np.int64)
        rows_b, span_b = self._operand(b, numbers and numbers[1])  # (groups, N)
        g = np.arange(groups)[:, None, None]
        mi, ni = c_index % m_size, c_index // m_size  # (T, V)
        ra, sa = rows_a[g, mi[None]], span_a[g, mi[None]]  # (groups, T, V)
        rb, sb = rows_b[g, ni[None]], span_b[g, ni[None]]
        ok = (ra >= 0) & (rb >= 0) & (sa >= 0) & (sb >= 0)
        apart = ok & (sa != sb)
        if apart.any():  # A's and B's pairs: one set, or none
            sa = np.where(apart, self._agreed(sa, sb, apart), sa)
            ok &= sa >= 0
        # what the accumulator held: nothing summed (`ZERO`, scaled: `EMPTY`), or a product in whole bytes
        empty = self.is_zero(c) | self.is_empty(c)
        laid, old_a, old_b = self.laid_out(c)
        laid &= ~empty  # (a zero's bytes alternate no elements)
        old_a, old_b = np.where(laid, old_a, -1), np.where(laid, old_b, -1)
        ok &= empty | laid
        new_a = np.full(ra.shape, -1, np.int64)
        new_b = np.full(ra.shape, -1, np.int64)
        if ok.any():
            # A's part and B's part apart: a tile of C has rows × columns elements, but few rows
            # and few columns
            distinct, where = unique_rows(np.stack([ra[ok], old_a[ok]], axis=1))
            made_a = np.array([self._product_a(r_a) for r_a, _ in distinct.tolist()], np.int64).reshape(-1)
            made_a = np.where((distinct[:, 1] < 0) | (distinct[:, 1] == made_a), made_a, -1)  # (other rows of A before)
            new_a[ok] = made_a[np.reshape(where, -1)]
            context = self.table.context()  # (what deciding where spans meet depends on, here)
            distinct, where = unique_rows(np.stack([rb[ok], sa[ok], old_b[ok]], axis=1))
            made_b = np.array([self._product_b(o_b, r_b, s, context) for r_b, s, o_b in distinct.tolist()],
                              np.int64).reshape(-1)
            new_b[ok] = made_b[np.reshape(where, -1)]
            missed = ok & (new_a >= 0) & (new_b < 0) & (old_b >= 0)
            if missed.any():  # (a span added that does not meet the one held)
                self.unjoined.update(map(tuple, unique_rows(np.stack([old_b[missed], sa[missed]], axis=1))[0].tolist()))
        good = (new_a >= 0) & (new_b >= 0)
        return np.where(good[..., None], layout(new_a, new_b, width), 1)  # type: ignore[no-any-return]

    def held(self, tags: np.ndarray) -> np.ndarray:
        """Per element (rows of byte tags, at least two bytes), whether it holds a product."""
        if tags.shape[-1] < 2 or not tags.size:
            return np.zeros(tags.shape[:-1], bool)
        if (tags <= 1).all():  # (⊥ and ⊤ only: the common case of computed data)
            return np.zeros(tags.shape[:-1], bool)
        laid, e_a, _ = self.laid_out(tags)
        if laid.any():
            parts = self._part_mask()
            laid &= parts[np.clip(e_a, 0, parts.size - 1)]
            if laid.any():
                marks = {x: self.table.tags[x][:1] == (PRODUCT_A,) for x in unique_sorted(e_a[laid]).tolist()}
                laid[laid] = [marks[x] for x in e_a[laid].tolist()]
        return laid  # type: ignore[no-any-return]

    def _part_mask(self) -> np.ndarray:
        """Per element of the table, whether an accumulator's bytes carry it (remade only when
        products made new elements)."""
        parts = self.table.product_parts
        if self._mask[0] != len(parts) or self._mask[1].size <= len(self.table.tags):
            mask = np.zeros(len(self.table.tags) + 1, bool)
            mask[parts] = True
            self._mask = (len(parts), mask)
        return self._mask[1]

    def scaled(self, x: np.ndarray | None, y: np.ndarray | None, computed: np.ndarray, commutes: bool
               ) -> np.ndarray | None:
        """The tags of ``x · y`` (`commutes`) or ``x / y`` (rows of byte tags; None: untagged)
        where one side holds a product and the other none — a scale (``alpha · acc``, a
        softmax's correction, a row's normalization) leaves the product, whose terms are the
        same — or nothing summed yet (⊥ or `EMPTY`) scaled by data: `EMPTY`. A scale known to
        be zero (`ZERO`, `EMPTY`: a cleared register, ``acc * 0.0``) leaves no product (the
        product is zero, the quotient no number): computed data. Elsewhere `computed` (what
        computed data gets). None where no element is either."""
        if (x is None or (x <= 1).all()) and (y is None or (y <= 1).all()):
            return None  # (⊥ and ⊤ only: no product, no zero)
        none = np.zeros(computed.shape[:-1], bool)
        fits_x, fits_y = x is not None and x.shape == computed.shape, y is not None and y.shape == computed.shape
        px = self.held(x) if fits_x else none
        py = self.held(y) if fits_y else none
        ex = (self.is_zero(x) | self.is_empty(x)) if fits_x else none  # (⊥: a constant, not known zero)
        ey = (self.is_zero(y) | self.is_empty(y)) if fits_y else none
        mx = (ex | self.may_be_zero(x)) if fits_x else none  # (zero on some path: no product either)
        my = (ey | self.may_be_zero(y)) if fits_y else none
        keep_x, keep_y = px & ~py & ~my, (py & ~px & ~mx) if commutes else none  # (× or ÷ a zero: none)
        empty = (ex & ~py) | ((ey & ~px) if commutes else none)
        empty &= ~all_along(computed == 0)  # (constants times constants stay constants: ⊥)
        if not (keep_x.any() or keep_y.any() or empty.any()):
            return None
        out = np.where(keep_x[..., None], x, computed) if keep_x.any() else computed
        out = np.where(keep_y[..., None], y, out) if keep_y.any() else out
        return np.where(empty[..., None], self.empty_bytes(computed.shape[-1]), out)  # type: ignore[no-any-return]

    def empty_bytes(self, width: int) -> np.ndarray:
        """The byte tags of `EMPTY` at an element width."""
        return layout(self.table.element_id((EMPTY,)), self.table.element_id((EMPTY,)), width)

    def is_empty(self, tags: np.ndarray | None) -> np.ndarray:
        """Per element (rows of byte tags), whether it is `EMPTY`."""
        if tags is None:
            return np.zeros((), bool)
        found = self.table._ids.get((EMPTY,))
        if found is None:
            return np.zeros(tags.shape[:-1], bool)
        return all_along(tags == layout(found, found, tags.shape[-1]))

    def may_be_zero(self, tags: np.ndarray) -> np.ndarray:
        """Per element (rows of byte tags), whether some byte of it is a cleared zero's, or one
        that may be (`MAYBE_ZERO`): a value that is zero on some path."""
        return any_along(self._zero_like(tags))

    def _zero_like(self, tags: np.ndarray) -> np.ndarray:
        """Per byte, whether it is a byte of `ZERO` or of `MAYBE_ZERO`."""
        ids = self.table._ids
        tags = np.asarray(tags)
        hit = np.zeros(tags.shape, bool)
        for element in (ids.get((ZERO,)), ids.get((MAYBE_ZERO,))):
            if element is not None:  # (an element's bytes are the ids 2 + e·64 … 2 + e·64 + 63)
                first = 2 + element * _BYTES
                hit |= (tags >= first) & (tags < first + _BYTES)
        return hit

    def maybe_zero_bytes(self) -> np.ndarray:
        """Every byte id of `MAYBE_ZERO` (at each place), none while no join has made one."""
        found = self.table._ids.get((MAYBE_ZERO,))
        return np.zeros(0, np.int64) if found is None else 2 + found * _BYTES + np.arange(_BYTES)

    def as_joined(self, tags: np.ndarray) -> np.ndarray:
        """`tags` with every byte of `MAYBE_ZERO` the ⊤ of the join that made it: what two paths
        left apart, when tags are compared (only scales tell it apart from other computed data)."""
        maybe = self.table._ids.get((MAYBE_ZERO,))
        if maybe is None:
            return tags
        hit = (((tags - 2) >> _SHIFT) == maybe) & (tags > TOP_ID)
        return np.where(hit, TOP_ID, tags) if hit.any() else tags  # type: ignore[no-any-return]

    def zero_joined(self, joined: np.ndarray, ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
        """`joined` (the join of two paths' byte tags, ⊤ where they differ) with `MAYBE_ZERO`
        where one path held a cleared zero (or a value that may be one) and the other something
        else: ⊤ would be taken for computed data, which a product may be scaled by."""
        if self.table._ids.get((ZERO,)) is None:
            return joined
        top = joined == TOP_ID
        if not top.any():
            return joined
        ours, theirs = np.broadcast_to(ours, joined.shape)[top], np.broadcast_to(theirs, joined.shape)[top]
        mine = self._zero_like(ours)
        hit = mine | self._zero_like(theirs)
        if not hit.any():
            return joined
        maybe = self.table.element_id((MAYBE_ZERO,))
        place = np.where(mine, ours - 2, theirs - 2) & _PLACE
        out = joined.copy()
        out[top] = np.where(hit, 2 + maybe * _BYTES + place, TOP_ID)
        return out

    def laid_out(self, tags: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per element (rows of byte tags, at least two bytes), whether its bytes are a product's
        at their width (`layout`), and the elements its even and odd bytes carry."""
        first, second = tags[..., 0], tags[..., 1]
        a, b = (first - 2) >> _SHIFT, (second - 2) >> _SHIFT
        laid = (first > 1) & (second > 1) & (((first - 2) & _PLACE) == 0)
        laid &= all_along(tags == layout(a, b, tags.shape[-1]))
        return laid, a, b

    def maybe_zero_element(self, width: int) -> np.ndarray:
        """The byte tags of `MAYBE_ZERO` at an element width, as a join makes them (a register
        holding a constant NaN or infinity: no scale of a product by it leaves the product)."""
        maybe = self.table.element_id((MAYBE_ZERO,))
        return layout(maybe, maybe, width)

    def zero_bytes(self, width: int) -> np.ndarray:
        """The byte tags of `ZERO` at an element width (laid out as a product's bytes are: a
        zero's low half is then no zero, as a product's is no product)."""
        return layout(self.table.element_id((ZERO,)), self.table.element_id((ZERO,)), width)

    def is_zero(self, tags: np.ndarray) -> np.ndarray:
        """Per element (rows of byte tags), whether it is `ZERO`."""
        found = self.table._ids.get((ZERO,))
        if found is None:
            return np.zeros(tags.shape[:-1], bool)
        return all_along(tags == layout(found, found, tags.shape[-1]))

    def take_unjoined(self) -> set[tuple[int, int]]:
        """The pairs of spans products could not add up since the last call (a loop whose entry
        is not yet in its general form: `argus.dsl.check.joins.Joins.spans_entry`)."""
        found, self.unjoined = self.unjoined, set()
        return found

    def resized(self, tags: np.ndarray, width: int) -> np.ndarray | None:
        """Tags (elements, bytes) of values converted to another element `width` (an
        accumulator rounded to bf16 for its store) where some element holds a product: each
        product laid out at the new width, constants (⊥) kept, anything else ⊤. None where no
        element holds a product (or a width holds none)."""
        if tags.shape[-1] < 2 or width < 2 or not tags.size:
            return None
        laid, e_a, e_b = self.laid_out(tags)
        if not laid.any():
            return None
        e_a = np.where(laid, e_a, -1)
        found, inverse = unique_inverse(e_a)
        laid &= np.array([x >= 0 and self.table.tags[x][:1] == (PRODUCT_A,) for x in found.tolist()], bool)[inverse]
        if not laid.any():
            return None
        out = layout(e_a, e_b, width)
        constant = all_along(tags == 0)
        return np.where(laid[..., None], out, np.where(constant[..., None], 0, 1))  # type: ignore[no-any-return]
