"""What a rule sees of copies of an op that run as one (`batching`), and how it declines them.

While copies of an unrolled loop's op run together, a rule runs once over ``copies × threads``
points; most operands are gathered into values over every point, but a tile operand may be
another tile in each copy. `TileCopies` is that operand: only the rules that know it take it
(`products.point_fragments`, `products.memory_of`, a view of it). A rule that cannot check its
copies together raises `CannotBatch` — the one exception that makes a run be walked again op by
op. Any other exception a rule raises is a bug of the rule, and it surfaces as one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..ir.layout_texts import moved_layout


class CannotBatch(Exception):
    """Copies of an op cannot run as one (they read different memories, tensors or tile shapes,
    or a rule does not take a tile per copy): the run they belong to is walked op by op, whose
    rules see one copy at a time. Raised on purpose, never for a bug."""


def moved_tile(tile: Any, start: int) -> Any:
    """A tile moved `start` elements on in its memory (its layout's offset, before any swizzle)."""
    return tile.derived(moved_layout(tile.layout, start), tile.dtype, tile.base)


class TileCopies:
    """An operand that is another tile in each copy of a group (a slice per iteration of an
    unrolled loop). Only the rules that know it take it (`products.point_fragments`); any other
    reads an attribute of a tile off it, which raises `CannotBatch`: the run is walked op by op.
    Copies of one tile moved on by a start per copy (`moved`) make their tiles only when asked:
    their fragments are the one tile's, shifted."""

    __slots__ = ("_tiles", "moved")

    def __init__(self, tiles: tuple[Any, ...] | None = None, moved: tuple[Any, np.ndarray] | None = None) -> None:
        assert tiles is not None or moved is not None
        self._tiles = tiles
        self.moved = moved
        """Where copy c's tile is one tile moved ``shifts[c]`` elements on, offsets and all (no
        swizzle after the move): that tile and the shifts."""

    @property
    def tiles(self) -> tuple[Any, ...]:
        """Each copy's tile."""
        if self._tiles is None:
            origin, shifts = self.moved  # type: ignore[misc]
            self._tiles = tuple(moved_tile(origin, int(s)) for s in shifts)
        return self._tiles

    def map(self, fn: Callable[[Any], Any]) -> TileCopies:
        return TileCopies(tuple(map(fn, self.tiles)))

    def __getattr__(self, name: str) -> Any:
        """A tile's attribute (its memory, layout, dtype...) asked of a tile per copy: the rule
        asking does not take copies together. Protocol lookups (``__*__``) and this class's own
        names (an `AttributeError` inside `tiles` is a bug) stay plain misses."""
        if name.startswith("__") or hasattr(TileCopies, name):
            raise AttributeError(name)
        raise CannotBatch(f"a rule reads .{name} of a tile that differs between copies")
