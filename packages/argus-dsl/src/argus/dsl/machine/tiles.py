"""Where a tile's elements and a fragment's bytes lie: the geometry every reader of tiles shares.

The interpreter, the shadow-tag interpreter and the static checker all turn a tile (a memory, a
layout, a dtype, perhaps a per-thread base) into element offsets and byte indices; they must
agree byte for byte, so they use these functions rather than each its own copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from argus.layout import ComposedLayout, Layout

if TYPE_CHECKING:
    from ..atoms import CopyAtom
    from .interpreter import TileValue

_TABLES: dict[int, tuple[Any, np.ndarray, list[int]]] = {}


def offset_table(layout: Layout | ComposedLayout) -> tuple[np.ndarray, list[int]]:
    """Every offset of a tile in index order, and the size of each top-level mode: a lookup
    replaces evaluating the layout at each access (tiles are small). Tile types share one
    layout object per layout text, so the object's identity is the key (kept alive here)."""
    entry = _TABLES.get(id(layout))
    if entry is None:
        inner = layout.inner if isinstance(layout, ComposedLayout) else layout
        entry = _TABLES[id(layout)] = (layout, np.asarray(layout.offsets(), dtype=np.int64), [m.size() for m in inner])
    return entry[1], entry[2]


def fragment_bytes(tile: TileValue, threads: np.ndarray) -> np.ndarray:
    """Byte indices (threads, values, nbytes) of each thread's fragment elements, in value order."""
    count = offset_table(tile.layout)[0].size
    offsets = tile.offsets(np.arange(count)[None, :], threads[:, None])  # (threads or 1, values)
    nbytes = tile.dtype.nbytes
    out = np.empty((threads.size, count, nbytes), np.int64)
    out[...] = offsets[..., None] * nbytes + np.arange(nbytes)  # (a broadcast in C)
    return out


def shared_operand_bytes(tile: TileValue, owners: np.ndarray, count: int) -> np.ndarray:
    """Byte indices (groups, count·nbytes) of a shared tile's elements in colexicographic order,
    for the group led by each of `owners` (a partitioned tile may differ per group)."""
    flat = np.broadcast_to(np.arange(count), (owners.size, count)).reshape(-1)
    offsets = tile.offsets(flat, np.repeat(owners, count)).reshape(owners.size, count)
    nbytes = tile.dtype.nbytes
    return (offsets[..., None] * nbytes + np.arange(nbytes)).reshape(owners.size, -1)


def redistribute(raw: np.ndarray, atom: CopyAtom, count: int) -> np.ndarray:
    """Per group of atom.threads threads and per repetition: the atom tile gathered through the
    source layout, handed out through the target layout. raw is (threads, values, bytes)."""
    group, per = atom.threads, atom.values()
    assert atom.src_layout is not None and atom.dst_layout is not None and per is not None
    values, nbytes = raw.shape[1], raw.shape[2]
    reps = values // per
    # (groups, threads, reps, per, bytes) -> atom-tile order (thread fastest, as layouts index)
    blocks = raw.reshape(count // group, group, reps, per, nbytes).transpose(0, 2, 3, 1, 4)
    tile = np.empty_like(blocks.reshape(count // group, reps, group * per, nbytes))
    tile[:, :, atom.src_layout.offsets()] = blocks.reshape(count // group, reps, group * per, nbytes)
    out = tile[:, :, atom.dst_layout.offsets()].reshape(count // group, reps, per, group, nbytes)
    return out.transpose(0, 3, 1, 2, 4).reshape(count, values, nbytes)
