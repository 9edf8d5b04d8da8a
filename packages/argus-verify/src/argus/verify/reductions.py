"""Reduction tags: what a row reduction holds — the row it reduces and the set of columns it
covers — and the softmax built from them, so that a kernel can state, where it stores, that
``out[r, c]`` is the softmax of row r of x over ``[0, cols)`` at column c:

    tag(x, lambda r, c: (c,), rows=lambda r, c: (r,))
    assert_tags(out, lambda r, c: softmax_of(x[r], (c,), (range(0, cols),)))

x's elements are operands with rows (`argus.verify.products`): the pair part is the column a
reduction runs over, the row part the row it keeps. Every tag below is one whole element of
the ordinary `TagTable`:

- ``-inf`` stored into a variable is `START_MAX` (a max of nothing); a float ``0.0`` stored
  into registers is products' `ZERO` (a sum of nothing).
- A reduction is ``(REDUCED, len(head), *head, len(rows), *rows, *set)``. Its head says what
  it reduces: ``(MAX,)`` the elements' maximum, ``(SUM,)`` their sum, ``(EXP, scale,
  len(m), *m)`` the sum of the terms ``exp2((x - m) · scale)`` (`TERM`), ``m`` the tag of the
  reference the terms subtract (itself a reduction). ``max(acc, x[r, c])`` and ``acc + x[r, c]``
  add column c to the set; two reductions of one head and row combine (a warp shuffle's
  butterfly) into the union of their sets — for a sum only where they are disjoint (a column
  summed twice is no sum of the row), for a max in any case (a max is idempotent).
- A set of columns is one of products' spans of one component (a point, a run ``[lo, hi)``, a
  progression of runs) — the forms a claim writes — or, where none fits, the columns listed
  (`LISTED`, concrete only), or one of the forms the static checker follows a loop with, whose
  bounds are symbolic: `WALK` (the columns a thread's walk ``range(lo, stop, step)`` has visited
  after ``count`` iterations, those below stop), `STEP` (a walk and its next column, which the
  walk's guard decides) and `RESIDUES` (the columns of ``[base, stop)`` whose offset from base
  modulo ``modulus`` is one of a set: what the lanes of a warp walking a row with a stride
  cover between them). Residues that cover every offset are the run ``[base, stop)``. Each set
  has one form where every bound is a number (`canonical`), so equal sets compare equal.
- ``x[r, c] - m`` (m a reduction) is a `DIFF`; scaled once by a float constant it keeps the
  constant's f32 bits; ``exp2`` of it is a `TERM`. A term divided by the sum of terms of the
  same reference and scale over row r — or multiplied by ``1.0 /`` that sum (`RECIPROCAL`) —
  is `SOFTMAX`: ``(SOFTMAX, len(pair), *pair, len(rows), *rows, scale, *set)``, which is what
  ``softmax_of`` writes with the scale of ``exp2(x · log2(e))``, i.e. ``exp``. Which
  reference the terms subtract does not change the quotient (it cancels), so the softmax does
  not name it; that the numerator's and the sums' are the same is what is checked.

Anything else these ops compute is computed data (⊤), as before. The marks are 64-bit
integers near -2**62, as products' are.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .products import canonical as canonical_span, component_key, difference, plain_component, span_of

if TYPE_CHECKING:
    from .tags import TagTable

_BASE = -(1 << 62)
START_MAX = _BASE - 20
"""The tag of ``-inf`` stored into a variable: the maximum of no element."""
REDUCED = _BASE - 21
"""First component of a reduction."""
DIFF = _BASE - 22
"""First component of ``x[r, c] - m`` (scaled or not)."""
TERM = _BASE - 23
"""First component of ``exp2((x[r, c] - m) · scale)``."""
RECIPROCAL = _BASE - 24
"""First component of ``1.0 / s``, s a sum of terms."""
SOFTMAX = _BASE - 25
"""First component of a softmax element (what ``softmax_of`` writes)."""
MARKS = (START_MAX, REDUCED, DIFF, TERM, RECIPROCAL, SOFTMAX)

MAX, SUM, EXP = 0, 1, 2
"""Heads of a reduction: a maximum, a sum of elements, a sum of exp2 terms."""

WALK, STEP, RESIDUES, LISTED = -100, -101, -102, -103
"""Set forms besides products' spans (see the module docstring)."""

UNSCALED = int(np.float32(1.0).view(np.int32))
"""The scale of a difference not yet scaled."""
LOG2E = int(np.float32(math.log2(math.e)).view(np.int32))
"""The scale that makes ``exp2((x - m) · scale)`` the exponential: what ``softmax_of`` names."""

_MAX_POINTS = 1 << 16
"""The most columns a concrete set lists."""
_MAX_MODULUS = 64
"""The largest stride whose residues a set keeps (as bits of one integer)."""

_BYTES = 64  # (argus.verify.tags.BYTES)


def scale_bits(value: float) -> int:
    """A float constant as the f32 bits a tag keeps."""
    return int(np.float32(value).view(np.int32))


# ---- sets of columns -------------------------------------------------------------------------

def _ints(*vs: Any) -> bool:
    return all(not isinstance(v, tuple) for v in vs)


def points(s: tuple[Any, ...]) -> list[int] | None:
    """The columns of set `s` when every bound is a number (None: symbolic, too many, or no set)."""
    if not s or not _ints(*s):
        return None
    kind = s[0]
    if kind == -1 and len(s) == 3:
        return [int(s[1])]
    if kind == 0 and len(s) == 3:
        lo, hi = int(s[1]), int(s[2])
        return list(range(lo, hi)) if hi - lo <= _MAX_POINTS else None
    if kind == -2 and len(s) == 6:
        lo, mid, stride, length, count = (int(v) for v in s[1:])
        if mid - lo + count * length > _MAX_POINTS:
            return None
        return list(range(lo, mid)) + [mid + stride * j + i for j in range(count) for i in range(length)]
    if kind == LISTED and len(s) >= 2 and s[1] == len(s) - 2:
        return [int(v) for v in s[2:]]
    if kind in (WALK, STEP) and len(s) == 5:
        lo, step, stop, count = (int(v) for v in s[1:])
        if step <= 0 or count > _MAX_POINTS:
            return None
        found = [lo + step * j for j in range(max(count, 0)) if lo + step * j < stop]
        return found + [lo + step * count] if kind == STEP else found
    if kind == RESIDUES and len(s) == 5:
        base, stop, modulus, mask = (int(v) for v in s[1:])
        if stop - base > _MAX_POINTS:
            return None
        return [c for c in range(base, stop) if mask >> ((c - base) % modulus) & 1]
    return None


def of_points(values: list[int]) -> tuple[Any, ...] | None:
    """The one form of a non-empty set of distinct columns (None: empty or repeated)."""
    if not values or len(set(values)) != len(values) or len(values) > _MAX_POINTS:
        return None
    span = span_of([(v,) for v in values])
    return span if span is not None else (LISTED, len(values), *sorted(values))


def canonical(s: tuple[Any, ...]) -> tuple[Any, ...]:
    """The one form of a set as a tag function writes it (a run of one column is that point)."""
    return canonical_span(s) if s and s[0] == 0 and len(s) == 3 else s


def add_point(head: tuple[Any, ...], s: tuple[Any, ...] | None, column: Any) -> tuple[Any, ...] | None:
    """The set `s` (None: nothing reduced yet) with `column` reduced into it; None where the
    result is no reduction (a column summed twice) or has no form here."""
    if s is None:
        return (-1, column, 0)
    grown = _grown(s, column)
    if grown is not None:
        return grown
    got = points(s)
    if got is not None and _ints(column):
        if int(column) in got:
            return s if head[0] == MAX else None
        return of_points(got + [int(column)])
    if s[0] == WALK and len(s) == 5:  # the walk's next column (the walk's guard decides whether it is one)
        _, lo, step, stop, count = s
        if isinstance(step, int) and difference(column, _add(lo, _times(count, step))) == 0:
            return (STEP, lo, step, stop, count)
    return None


def _grown(s: tuple[Any, ...], column: Any) -> tuple[Any, ...] | None:
    """`s` with the column just past its end where that keeps its form (a run one longer, a walk's
    progression one run more): what `of_points` makes of it, without listing it (None: another
    case)."""
    if not _ints(column, *s):
        return None
    c = int(column)
    if s[0] == 0 and len(s) == 3 and c == s[2]:
        return (0, s[1], c + 1)
    if s[0] == -2 and len(s) == 6 and s[1] == s[2] and s[4] == 1 and c == s[2] + s[3] * s[5]:
        return (-2, s[1], s[2], s[3], 1, s[5] + 1)
    return None


def union(head: tuple[Any, ...], s: tuple[Any, ...], t: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Two reductions of one head and row combined: the union of their sets (for a sum, only of
    disjoint sets); None where that has no form here."""
    idempotent = head[0] == MAX
    ps, pt = points(s), points(t)
    if ps is not None and pt is not None:
        if set(ps) & set(pt):
            if not idempotent:
                return None
            return of_points(sorted(set(ps) | set(pt)))
        return of_points(ps + pt)
    rs, rt = _as_residues(s), _as_residues(t)
    if rs is not None and rt is not None and _same(rs[1], rt[1]) and _same(rs[2], rt[2]) and rs[3] == rt[3]:
        if rs[4] & rt[4] and not idempotent:
            return None
        return residues(rs[1], rs[2], rs[3], rs[4] | rt[4])
    if idempotent and s == t:
        return s
    return None


def residues(base: Any, stop: Any, modulus: int, mask: int) -> tuple[Any, ...]:
    """The columns of ``[base, stop)`` whose offset from base modulo `modulus` is in `mask`:
    the run itself where every offset is."""
    if mask == (1 << modulus) - 1:
        return canonical((0, base, stop))
    return (RESIDUES, base, stop, modulus, mask)


def _as_residues(s: tuple[Any, ...]) -> tuple[Any, ...] | None:
    if s[0] == RESIDUES and len(s) == 5:
        return s
    if s[0] == 0 and len(s) == 3:  # a run: every residue modulo 1
        return (RESIDUES, s[1], s[2], 1, 1)
    return None


def walk_done(lo: Any, step: int, stop: Any, trips: Any = None) -> tuple[Any, ...] | None:
    """The set a whole walk ``range(lo, stop, step)`` covers, as residues of a base that lanes
    walking with the same stride share (lo's constant part modulo the stride gone). Given its
    number of iterations `trips` (the same for every lane), the residues end at base + step·trips
    rather than at stop: lanes whose stops differ by their starts (``range(lane, lane + n, 32)``)
    then share the end."""
    if step <= 0 or step > _MAX_MODULUS:
        return None
    key = component_key(lo)
    r = key[0] % step
    base = plain_component((key[0] - r, key[1]))
    return residues(base, stop if trips is None else _add(base, _times(trips, step)), step, 1 << r)


def _same(x: Any, y: Any) -> bool:
    return x == y or difference(x, y) == 0


def _add(x: Any, y: Any) -> Any:
    if _ints(x, y):
        return int(x) + int(y)
    kx, ky = component_key(x), component_key(y)
    terms = dict(kx[1])
    for a, c in ky[1]:
        terms[a] = terms.get(a, 0) + c
    return plain_component((kx[0] + ky[0], tuple(sorted((a, c) for a, c in terms.items() if c))))


def _times(x: Any, k: int) -> Any:
    if _ints(x):
        return int(x) * k
    key = component_key(x)
    return plain_component((key[0] * k, tuple((a, c * k) for a, c in key[1] if c * k)))


# ---- tags -------------------------------------------------------------------------------------

def reduced(head: tuple[Any, ...], rows: tuple[Any, ...], s: tuple[Any, ...]) -> tuple[Any, ...]:
    return (REDUCED, len(head), *head, len(rows), *rows, *s)


def parse_reduced(tag: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]] | None:
    """A reduction's head, rows and set (None: no reduction)."""
    if len(tag) < 3 or tag[0] != REDUCED or not isinstance(tag[1], int):
        return None
    lh = tag[1]
    if len(tag) < 3 + lh or not isinstance(tag[2 + lh], int):
        return None
    lr = tag[2 + lh]
    s = tag[3 + lh + lr:]
    return (tag[2:2 + lh], tag[3 + lh:3 + lh + lr], s) if s and isinstance(s[0], int) else None


def _parts(tag: tuple[Any, ...], mark: int) -> list[tuple[Any, ...]] | None:
    """The length-prefixed parts of a tag of `mark` after the mark (None: another tag)."""
    if not tag or tag[0] != mark:
        return None
    out, at = [], 1
    while at < len(tag):
        n = tag[at]
        if not isinstance(n, int) or n < 0 or at + 1 + n > len(tag):
            return None
        out.append(tuple(tag[at + 1:at + 1 + n]))
        at += 1 + n
    return out


def _flat(*parts: tuple[Any, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for p in parts:
        out += [len(p), *p]
    return tuple(out)


def diff(pair: tuple[Any, ...], rows: tuple[Any, ...], m: tuple[Any, ...], scale: int) -> tuple[Any, ...]:
    return (DIFF, *_flat(pair, rows, m, (scale,)))


def term(pair: tuple[Any, ...], rows: tuple[Any, ...], m: tuple[Any, ...], scale: int) -> tuple[Any, ...]:
    return (TERM, *_flat(pair, rows, m, (scale,)))


def softmax(pair: tuple[Any, ...], rows: tuple[Any, ...], scale: int, s: tuple[Any, ...]) -> tuple[Any, ...]:
    return (SOFTMAX, len(pair), *pair, len(rows), *rows, scale, *canonical(s))


def canonical_tag(tag: tuple[Any, ...]) -> tuple[Any, ...]:
    """The one form of a reduction or softmax as a tag function may write it."""
    if tag[0] == REDUCED:
        found = parse_reduced(tag)
        return tag if found is None else reduced(found[0], found[1], canonical(found[2]))
    if tag[0] == SOFTMAX and len(tag) > 1 and isinstance(tag[1], int):
        lp = tag[1]
        if len(tag) > 2 + lp and isinstance(tag[2 + lp], int):
            at = 4 + lp + tag[2 + lp]
            return (*tag[:at], *canonical(tag[at:]))
    return tag


def text(tag: tuple[Any, ...], show: Any) -> str | None:
    """A reduction's or a softmax's tag for people; None for any other."""
    if not tag or tag[0] not in MARKS:
        return None

    def shown(xs: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(show(v) for v in xs)

    def columns(s: tuple[Any, ...]) -> str:
        if s[0] == 0 and len(s) == 3:
            return f"{show(s[1])}..{show(s[2])}"
        if s[0] == -1 and len(s) == 3:
            return f"{show(s[1])}"
        if s[0] == WALK:
            return f"the first {show(s[4])} of range({show(s[1])}, {show(s[3])}, {s[2]})"
        if s[0] == STEP:
            return f"the first {show(s[4])} + 1 of range({show(s[1])}, {show(s[3])}, {s[2]})"
        if s[0] == RESIDUES:
            kept = [r for r in range(s[3]) if s[4] >> r & 1]
            return f"{show(s[1])}..{show(s[2])} at offsets {kept} modulo {s[3]}"
        got = points(s)
        return str(got) if got is not None else str(shown(s))

    if tag[0] == START_MAX:
        return "-inf (the maximum of nothing)"
    if tag[0] == REDUCED:
        found = parse_reduced(tag)
        if found is None:
            return None
        head, rows, s = found
        what = {MAX: "maximum", SUM: "sum"}.get(head[0], "sum of exp2 terms")
        return f"{what} of row {shown(rows[1:])} over columns {columns(s)}"
    if tag[0] == SOFTMAX:
        lp = tag[1]
        pair, lr = tag[2:2 + lp], tag[2 + lp]
        rows, scale, s = tag[3 + lp:3 + lp + lr], tag[3 + lp + lr], tag[4 + lp + lr:]
        base = "" if scale == LOG2E else f" (exp2 scaled by {float(np.int32(scale).view(np.float32))!r})"
        return f"softmax of row {shown(rows[1:])} over columns {columns(s)} at {shown(pair)}{base}"
    names = {DIFF: "difference", TERM: "exp2 term", RECIPROCAL: "reciprocal of a sum"}
    return names.get(tag[0])


# ---- the rules over byte tags ------------------------------------------------------------------

class _Values:
    """What each row of byte tags (rows, width) holds, for the rules: an operand element with
    rows (its pair and row part), a whole element of ours, a cleared zero, or nothing known."""

    def __init__(self, table: TagTable, tags: np.ndarray | None, number: str) -> None:
        self.table = table
        n = 0 if tags is None else tags.shape[0]
        self.kind = np.zeros(n, np.int64)  # 0 none, 1 operand, 2 ours, 3 zero
        self.a = np.full(n, -1, np.int64)
        self.b = np.full(n, -1, np.int64)
        if tags is None or tags.ndim != 2 or tags.shape[-1] < 1 or (tags <= 1).all():
            return
        width = tags.shape[-1]
        products = table.products
        zero = products.is_zero(tags) if width >= 2 else np.zeros(n, bool)
        first = tags[:, 0]
        whole = (first > 1) & ((first - 2) % _BYTES == 0) & (tags == first[:, None] + np.arange(width)).all(axis=1)
        element = np.where(whole, (first - 2) // _BYTES, -1)
        ours = np.zeros(n, bool)
        for e in np.unique(element[whole]).tolist():
            tag = table.tags[e]
            if tag and type(tag[0]) is int and tag[0] in MARKS:
                ours |= element == e
        if table.widths.size:  # (a part of a wider element is no element)
            inside = ours & (element < table.widths.size)
            at = table.widths[np.where(inside, element, 0)]
            ours &= ~inside | (at == 0) | (at == width)
        self.kind[zero] = 3
        self.kind[ours] = 2
        self.a[ours] = element[ours]
        if table.rowed and width >= 2:
            pairs, row_parts = products._operand_parts(tags)
            operand = (pairs >= 0) & (row_parts >= 0) & ~zero & ~ours
            if operand.any():
                formats = table.formats
                for e in np.unique(row_parts[operand]).tolist():  # (read as the numbers they are)
                    tag = table.tags[e]
                    if len(tag) < 2 or formats.get(e, number) != number:
                        operand &= row_parts != e
                self.kind[operand] = 1
                self.a[operand] = pairs[operand]
                self.b[operand] = row_parts[operand]

    def key(self) -> np.ndarray:
        return np.stack([self.kind, self.a, self.b], axis=1)

    def describe(self, kind: int, a: int, b: int) -> tuple[str, Any, Any] | None:
        tags = self.table.tags
        if kind == 1:
            return ("operand", tags[a], tags[b][1:])
        if kind == 2:
            return ("ours", tags[a], None)
        if kind == 3:
            return ("zero", None, None)
        return None


def _apply(table: TagTable, width: int, xs: list[_Values], rule: Any) -> np.ndarray | None:
    """Byte tags (rows, width) of `rule` over the rows' operands (-1 rows: no result)."""
    keys = np.concatenate([v.key() for v in xs], axis=1)
    known = (keys[:, 0::3] > 0).any(axis=1)
    if not known.any():
        return None
    distinct, inverse = np.unique(keys, axis=0, return_inverse=True)
    made = []
    for row in distinct.tolist():
        parts = [v.describe(*row[3 * i:3 * i + 3]) for i, v in enumerate(xs)]
        result = rule(*parts)
        made.append(-1 if result is None else table.element_id(result))
    made_a = np.array(made, np.int64)
    chosen = made_a[np.reshape(inverse, -1)]
    if (chosen < 0).all():
        return None
    hit = np.unique(chosen[chosen >= 0])
    table._laid_at(hit, width)
    out = np.full((keys.shape[0], width), -1, np.int64)
    good = chosen >= 0
    out[good] = 2 + chosen[good][:, None] * _BYTES + np.arange(width)
    return out


def _one_column(pair: tuple[Any, ...]) -> Any:
    return pair[0] if len(pair) == 1 else None


def _start_max(what: tuple[str, Any, Any] | None) -> bool:
    return what is not None and what[0] == "ours" and what[1][:1] == (START_MAX,)


def _reduction(what: tuple[str, Any, Any] | None) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]] | None:
    return parse_reduced(what[1]) if what is not None and what[0] == "ours" else None


def _into(head: tuple[Any, ...], acc: tuple[str, Any, Any] | None, rows: tuple[Any, ...], column: Any,
          empty: bool) -> tuple[Any, ...] | None:
    """A reduction `acc` (or nothing reduced yet: `empty`) with one more column of row `rows`."""
    if column is None:
        return None
    if empty:
        s = add_point(head, None, column)
        return None if s is None else reduced(head, rows, s)
    found = _reduction(acc)
    if found is None or found[0] != head or found[1] != rows:
        return None
    s = add_point(head, found[2], column)
    return None if s is None else reduced(head, rows, s)


def _combined(head_kind: int, x: Any, y: Any) -> tuple[Any, ...] | None:
    fx, fy = _reduction(x), _reduction(y)
    if fx is None or fy is None or fx[0] != fy[0] or fx[1] != fy[1] or fx[0][0] != head_kind:
        return None
    s = union(fx[0], fx[2], fy[2])
    return None if s is None else reduced(fx[0], fx[1], s)


def maximum(table: TagTable, x: np.ndarray | None, y: np.ndarray | None, number: str) -> np.ndarray | None:
    """The byte tags of ``max(x, y)`` where it is a row maximum (-1 rows: computed data)."""
    if x is None or y is None or x.shape != y.shape or x.ndim != 2:
        return None

    def rule(p: Any, q: Any) -> tuple[Any, ...] | None:
        for acc, other in ((p, q), (q, p)):
            if other is not None and other[0] == "operand":
                return _into((MAX,), acc, other[2], _one_column(other[1]), _start_max(acc))
            if _start_max(acc) and (_start_max(other) or _reduction(other) is not None and _reduction(other)[0] == (MAX,)):
                return other[1]  # (the maximum of nothing and m is m)
        return _combined(MAX, p, q)

    return _apply(table, x.shape[-1], [_Values(table, x, number), _Values(table, y, number)], rule)


def added(table: TagTable, x: np.ndarray | None, y: np.ndarray | None, number: str) -> np.ndarray | None:
    """The byte tags of ``x + y`` where it is a row sum (of elements, or of exp2 terms)."""
    if x is None or y is None or x.shape != y.shape or x.ndim != 2:
        return None

    def rule(p: Any, q: Any) -> tuple[Any, ...] | None:
        for acc, other in ((p, q), (q, p)):
            if other is None or acc is None:
                continue
            empty = acc[0] == "zero"
            if other[0] == "operand":
                return _into((SUM,), acc, other[2], _one_column(other[1]), empty)
            if other[0] == "ours" and other[1][:1] == (TERM,):
                parts = _parts(other[1], TERM)
                if parts is None or len(parts) != 4:
                    return None
                pair, rows, m, (scale,) = parts
                return _into((EXP, scale, len(m), *m), acc, rows, _one_column(pair), empty)
            if empty and _reduction(other) is not None and other[1][:1] == (REDUCED,) and \
                    _reduction(other)[0][0] in (SUM, EXP):
                return other[1]  # (nothing and a sum: the sum)
        fx = _reduction(p)
        return None if fx is None or fx[0][0] == MAX else _combined(fx[0][0], p, q)

    out = _apply(table, x.shape[-1], [_Values(table, x, number), _Values(table, y, number)], rule)
    if x.shape[-1] >= 2:  # (nothing and nothing: nothing, the sum of the lanes that walked no column)
        both = table.products.is_zero(x) & table.products.is_zero(y)
        if both.any():
            out = np.full(x.shape, -1, np.int64) if out is None else out
            out[both] = table.products.zero_bytes(x.shape[-1])
    return out


def subtracted(table: TagTable, x: np.ndarray | None, m: np.ndarray | None, number: str) -> np.ndarray | None:
    """The byte tags of ``x - m``, x an element of a row and m a reduction: a `DIFF`."""
    if x is None or m is None or x.shape != m.shape or x.ndim != 2:
        return None

    def rule(p: Any, q: Any) -> tuple[Any, ...] | None:
        if p is None or p[0] != "operand" or _reduction(q) is None:
            return None
        return diff(p[1], p[2], q[1], UNSCALED)

    return _apply(table, x.shape[-1], [_Values(table, x, number), _Values(table, m, number)], rule)


def scaled(table: TagTable, x: np.ndarray | None, y: np.ndarray | None, number: str, multiply: bool,
           constants: tuple[float | None, float | None]) -> np.ndarray | None:
    """The byte tags of ``x · y`` (`multiply`) or ``x / y``: a difference scaled once by a float
    constant (`constants`: the operands' values where they are float constants), a term over the
    sum of the same terms, or times its reciprocal (a softmax), ``1.0 / s`` of such a sum."""
    if x is None and y is not None:  # (a constant has no tags: ⊥)
        x = np.zeros_like(y)
    elif y is None and x is not None:
        y = np.zeros_like(x)
    if x is None or y is None or x.shape != y.shape or x.ndim != 2:
        return None
    cx, cy = constants

    def over(t: Any, s: Any) -> tuple[Any, ...] | None:
        if t is None or t[0] != "ours" or t[1][:1] != (TERM,):
            return None
        parts = _parts(t[1], TERM)
        found = _reduction(s)
        if parts is None or len(parts) != 4 or found is None:
            return None
        pair, rows, m, (scale,) = parts
        head, s_rows, columns = found
        if head != (EXP, scale, len(m), *m) or s_rows != rows:
            return None
        return softmax(pair, rows, scale, columns)

    def rule(p: Any, q: Any) -> tuple[Any, ...] | None:
        if multiply:
            for d, c in ((p, cy), (q, cx)):
                if d is not None and d[0] == "ours" and d[1][:1] == (DIFF,) and c is not None and math.isfinite(c):
                    parts = _parts(d[1], DIFF)
                    if parts is None or len(parts) != 4 or parts[3] != (UNSCALED,):
                        return None
                    return diff(parts[0], parts[1], parts[2], scale_bits(c))
            for t, r in ((p, q), (q, p)):
                if r is not None and r[0] == "ours" and r[1][:1] == (RECIPROCAL,):
                    return over(t, ("ours", r[1][1:], None))
            return None
        if cx == 1.0 and p is None:
            found = _reduction(q)
            return (RECIPROCAL, *q[1]) if found is not None and found[0][0] == EXP else None
        return over(p, q)

    return _apply(table, x.shape[-1], [_Values(table, x, number), _Values(table, y, number)], rule)


def exponential(table: TagTable, x: np.ndarray | None, number: str) -> np.ndarray | None:
    """The byte tags of ``exp2(x)``, x a difference: a `TERM`."""
    if x is None or x.ndim != 2:
        return None

    def rule(p: Any) -> tuple[Any, ...] | None:
        if p is None or p[0] != "ours" or p[1][:1] != (DIFF,):
            return None
        parts = _parts(p[1], DIFF)
        return None if parts is None or len(parts) != 4 else term(parts[0], parts[1], parts[2], parts[3][0])

    return _apply(table, x.shape[-1], [_Values(table, x, number)], rule)


def start_bytes(table: TagTable, width: int) -> np.ndarray:
    """The byte tags of `START_MAX` at an element width."""
    e = table.element_id((START_MAX,))
    table._laid_at(np.array([e]), width)
    return 2 + e * _BYTES + np.arange(width)  # type: ignore[no-any-return]


def is_start(table: TagTable, head_kind: int, tags: np.ndarray) -> np.ndarray:
    """Per row of byte tags, whether it is what a reduction of `head_kind` starts from."""
    if head_kind == MAX:
        found = table._ids.get((START_MAX,))
        if found is None:
            return np.zeros(tags.shape[:-1], bool)
        return (tags == 2 + found * _BYTES + np.arange(tags.shape[-1])).all(axis=-1)  # type: ignore[no-any-return]
    return table.products.is_zero(tags) if tags.shape[-1] >= 2 else np.zeros(tags.shape[:-1], bool)

