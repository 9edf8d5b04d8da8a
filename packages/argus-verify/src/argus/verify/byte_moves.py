"""How byte tags move with the bytes of a value cut, joined or permuted (`concat`, `extract`,
`byte_perm`), copied in another order (`copy`) or written over in part, for the static checker and the interpreter's shadow tags
alike.

A byte's tag is its element and its place in it (`argus.verify.tags`), so a byte keeps its tag
wherever it goes, and an element is whole where its bytes sit together at their places. An
element laid out in parts (`argus.verify.products.layout`: an operand with rows, a product)
alternates two elements, told apart only by their places; its last byte sits at a place of its
own. So that bytes of two such elements never read as a third, the last byte of one keeps its
tag only where the element's first byte came with it, in one run of bytes copied in order.
"""

from __future__ import annotations

import numpy as np

from .products import _LAST, _PLACE, TOP_ID


def whole_parts(ids: np.ndarray, runs: np.ndarray | None = None) -> np.ndarray:
    """A value's byte tags `ids` (..., n), byte j taken in run `runs[j]` (bytes copied together,
    in order, from one place; None: one run), with the last byte (at `_LAST`) of every element
    laid out in parts made ⊤ unless its element's first byte, the nearest byte at place 0 before
    it, came in the same run. An element's parts are told apart by their places only, so bytes
    moved apart from their element (a byte_perm of B's low byte and A's high one, a high half
    alone) must not make an element with bytes of another (A[m, k] from them)."""
    last = (ids > TOP_ID) & (((ids - 2) & _PLACE) == _LAST)
    if not last.any():
        return ids
    width = ids.shape[-1]
    first = (ids > TOP_ID) & (((ids - 2) & _PLACE) == 0)
    # the nearest byte at place 0 so far in each row, by one running maximum over all rows at
    # once: row r's positions offset by r·width, each row's start below all of its own (numpy
    # runs an accumulation along a short last axis row by row, a call each)
    base = np.arange(ids.size // max(width, 1)).reshape(ids.shape[:-1] + (1,)) * width
    start = np.maximum.accumulate(np.where(first, base + np.arange(width), base - 1).reshape(-1)).reshape(ids.shape) - base
    whole = start >= 0
    if runs is not None:
        runs = np.broadcast_to(runs, ids.shape)
        whole &= np.take_along_axis(runs, np.maximum(start, 0), axis=-1) == runs
    return np.where(last & ~whole, TOP_ID, ids)  # type: ignore[no-any-return]


def runs_of_rows(rows: np.ndarray) -> np.ndarray:
    """Per byte of rows of byte indices, its run (`whole_parts`): a new run wherever a byte is
    not the one after the byte before it."""
    new = np.ones(rows.shape, bool)
    new[:, 1:] = rows[:, 1:] != rows[:, :-1] + 1
    # one running sum over all rows at once, less each row's start (numpy runs a sum along a
    # short last axis row by row, a call each)
    total = np.cumsum(new.reshape(-1)).reshape(rows.shape)
    return total - (total[:, :1] - 1)  # type: ignore[no-any-return]


def copied(tags: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """The byte tags (threads, ...) a copy writes, each thread's fragment in its order, byte j
    having come from source byte `origin[..., j]` (flat over the source memory): bytes are one
    run only where they were consecutive there, in order (`whole_parts`), so that a fragment
    gathering bytes of two elements side by side (a u8 view's elements in another order) makes
    neither, wherever it writes them."""
    if not ((tags > TOP_ID) & (((tags - 2) & _PLACE) == _LAST)).any():
        return tags
    rows = tags.reshape(tags.shape[0], -1)
    return whole_parts(rows, runs_of_rows(origin.reshape(rows.shape))).reshape(tags.shape)  # type: ignore[no-any-return]


LOOKAHEAD = 15
"""How far past a write `cut_after` looks for the last byte of an element it cut: the widest
element laid out in parts is 16 bytes."""


def cut_after(tags: np.ndarray, ends: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """The positions of `tags` (a memory's flat byte tags) whose last byte of an element laid out
    in parts lost its first bytes to a write ending at each of `ends` (the next byte not written;
    `limit`: where each end's row of bytes stops): the bytes after an end, up to the first at
    place 0, hold no whole element any more (`TagMemory.write` makes them ⊤)."""
    # most writes end where an element starts, or untagged bytes do, or their row: nothing to cut
    inside = ends < limit
    found = tags[np.minimum(ends, tags.size - 1)]
    at_end = inside & (found > TOP_ID) & (((found - 2) & _PLACE) != 0)
    if not at_end.any():
        return np.zeros(0, np.int64)
    ends, limit = ends[at_end], limit[at_end]
    ahead = ends[:, None] + np.arange(LOOKAHEAD)
    inside = ahead < limit[:, None]
    found = np.where(inside, tags[np.minimum(ahead, tags.size - 1)], 0)
    place = (found - 2) & _PLACE
    stops = (found <= TOP_ID) | (place == 0)
    stop = np.where(stops.any(axis=1), stops.argmax(axis=1), LOOKAHEAD)
    last = (found > TOP_ID) & (place == _LAST) & (np.arange(LOOKAHEAD) < stop[:, None])
    return ahead[last]  # type: ignore[no-any-return]


def concatenated(parts: list[np.ndarray]) -> np.ndarray:
    """The byte tags (rows, bytes) of values put side by side (`concat`), each a run of its own."""
    runs = np.repeat(np.arange(len(parts)), [p.shape[-1] for p in parts])
    return whole_parts(np.concatenate(parts, axis=-1), runs)


def extracted(tags: np.ndarray, start: int, width: int) -> np.ndarray:
    """The byte tags (rows, bytes) of `width` bytes of a value from byte `start` (`extract`)."""
    return whole_parts(tags[:, start:start + width].copy())


def permuted(sources: list[np.ndarray], selector: list[int]) -> np.ndarray:
    """The byte tags (rows, bytes) of `byte_perm`: byte j is byte `selector[j]` of the sources
    side by side."""
    widths = np.cumsum([0] + [s.shape[-1] for s in sources])
    chosen = np.asarray(selector, np.int64)
    source = np.searchsorted(widths, chosen, side="right") - 1
    # (each source's bytes one place further on than the last one's: its first byte never
    # follows the byte before it, the previous source's last)
    return whole_parts(np.concatenate(sources, axis=-1)[:, chosen], runs_of_rows((chosen + source)[None])[0])
