"""Sum tags: what an element-wise sum holds — the tagged elements it adds — so that a kernel can
state, where it stores, that ``out[i]`` is ``x[i] + y[i]``:

    tag(x, lambda i: (0, i))
    tag(y, lambda i: (1, i))
    assert_tags(out, lambda i: sum_of((0, i), (1, i)))

A sum is the element ``(SUM, n, len(t1), *t1, ..., len(tn), *tn)`` of its terms' tags, a whole
element like any tag (`argus.verify.tags.TagTable`). Its terms are a multiset: the table keeps
one form per sum (`canonical`: terms in one order, a sum of sums flattened), so ``y[i] + x[i]``
is ``x[i] + y[i]`` and ``x[i] + x[i]`` is not. Only a float addition of two values that are each a
whole tagged element (or a sum) makes one; anything else added (a constant, computed data, a
product or an operand laid out in parts) is computed data, as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .affine import unique_sorted

if TYPE_CHECKING:
    from .tags import TagTable

SUM = -(1 << 62) - 9
"""First component of a sum tag."""

_BYTES = 64  # (argus.verify.tags.BYTES)
_PLACE, _SHIFT = _BYTES - 1, 6  # (argus.verify.tags.PLACE, SHIFT)


def terms(tag: tuple[Any, ...]) -> list[tuple[Any, ...]] | None:
    """The terms of a sum tag (None when malformed)."""
    try:
        count, at, found = tag[1], 2, []
        for _ in range(count):
            size = tag[at]
            found.append(tuple(tag[at + 1:at + 1 + size]))
            at += 1 + size
    except (IndexError, TypeError):
        return None
    return found if at == len(tag) and isinstance(count, int) else None


def of(parts: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """The sum tag of terms `parts` (each a tag; a sum among them adds its own terms)."""
    flat: list[tuple[Any, ...]] = []
    for part in parts:
        inner = terms(part) if part and part[0] == SUM else None
        flat += inner if inner is not None else [part]
    flat.sort(key=repr)  # (one order: components as stored, the checker's keys kept canonical)
    out: list[Any] = [SUM, len(flat)]
    for t in flat:
        out += [len(t), *t]
    return tuple(out)


def canonical(tag: tuple[Any, ...]) -> tuple[Any, ...]:
    """The one form of a sum tag (as a tag function may write it, in any order)."""
    found = terms(tag)
    return tag if found is None else of(found)


def added(table: TagTable, x: np.ndarray | None, y: np.ndarray | None, number: str) -> np.ndarray | None:
    """The byte tags (rows, bytes) of ``x + y``, added as numbers of type `number`, where each
    side of a row is a whole tagged element of that width and type (or a sum of them): their
    sum; None where no row is (the caller's computed data stands). Rows that are not get -1
    (keep the caller's). Bits of one type added as another's (bf16 data through an f16 view)
    are no sum of the data."""
    if x is None or y is None or x.shape != y.shape or x.ndim != 2 or (x <= 1).all() or (y <= 1).all():
        return None
    width = x.shape[-1]
    place = np.arange(width)

    def whole(tags: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        first = tags[:, 0]
        element = (first - 2) >> _SHIFT
        ok = (first > 1) & (((first - 2) & _PLACE) == 0) & (tags == first[:, None] + place).all(axis=1)
        if table.widths.size:  # (an element laid out wider: this is a part of it, no element)
            inside = ok & (element < table.widths.size)
            at = table.widths[np.where(inside, element, 0)]
            ok &= ~inside | (at == 0) | (at == width)
        if ok.any():  # (read as the numbers they are)
            types = {e: table.formats.get(e) == number for e in unique_sorted(element[ok]).tolist()}
            ok[ok] = [types[e] for e in element[ok].tolist()]
        return ok, element

    ok_x, ex = whole(x)
    ok_y, ey = whole(y)
    ok = ok_x & ok_y
    if not ok.any():
        return None
    pairs, inverse = np.unique(np.stack([ex[ok], ey[ok]], axis=1), axis=0, return_inverse=True)
    tags = table.tags
    made = np.array([table.element_id(of([tags[a], tags[b]])) for a, b in pairs.tolist()], np.int64)
    table._laid_at(made, width)  # (its width: no part of it reads as a narrower element)
    for e in made.tolist():
        table.formats[e] = number
    out = np.full(x.shape, -1, np.int64)
    out[ok] = 2 + made[np.reshape(inverse, -1)][:, None] * _BYTES + place
    return out
