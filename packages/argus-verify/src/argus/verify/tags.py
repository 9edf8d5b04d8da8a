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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

BOTTOM = 0
TOP = 1

Tag = tuple[int, ...]


class TagTable:
    """Interns (element tag, byte position) pairs as integer ids ≥ 2."""

    def __init__(self) -> None:
        self._ids: dict[tuple[Tag, int], int] = {}
        self._tags: list[tuple[Tag, int]] = []

    def byte_ids(self, element_tags: Sequence[Tag], nbytes: int) -> np.ndarray:
        """Ids of every byte of elements with these tags: shape (len(element_tags), nbytes)."""
        out = np.empty((len(element_tags), nbytes), dtype=np.int64)
        for row, tag in enumerate(element_tags):
            for k in range(nbytes):
                key = (tuple(int(v) for v in tag), k)
                ident = self._ids.get(key)
                if ident is None:
                    ident = self._ids[key] = len(self._tags) + 2
                    self._tags.append(key)
                out[row, k] = ident
        return out

    def describe(self, ident: int) -> Any:
        """A byte tag for people: ``⊥``, ``⊤`` or ``(tag..., byte k)``."""
        ident = int(ident)
        if ident == BOTTOM:
            return "⊥"
        if ident == TOP:
            return "⊤"
        tag, k = self._tags[ident - 2]
        return tag if k == 0 else (*tag, f"byte {k}")

    def element_tag(self, ids: Iterable[int]) -> Any:
        """The tag of an element from its bytes' ids: the common element tag, ⊥ or ⊤."""
        ids = [int(i) for i in ids]
        if all(i == BOTTOM for i in ids):
            return "⊥"
        if any(i in (BOTTOM, TOP) for i in ids):
            return "⊤"
        tags = {self._tags[i - 2][0] for i in ids}
        return next(iter(tags)) if len(tags) == 1 else "⊤"


def merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The lattice join, element-wise: ⊥ yields to anything, equal tags stay, others are ⊤."""
    a, b = np.asarray(a), np.asarray(b)
    return np.where(a == BOTTOM, b, np.where((b == BOTTOM) | (a == b), a, TOP))


def select(condition: np.ndarray, a: np.ndarray, b: np.ndarray, *, path_sensitive: bool) -> np.ndarray:
    """The tags of ``a if condition else b``: the chosen side when the condition is known for
    each point (replay), the join of both otherwise (the static, path-insensitive rule)."""
    if path_sensitive:
        cond = np.asarray(condition, dtype=bool).reshape(np.shape(condition) + (1,) * (np.ndim(a) - np.ndim(condition)))
        return np.where(cond, a, b)
    return merge(a, b)
