"""What the walk holds and hands back: the values it tracks (global tensor references, variable
slots, loop contexts), snapshots of its state to join at branches and loops, the result of a
run (`Analysis`), and small type helpers every rule module shares (widths, integer types,
fingerprints of affine values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..ir import dialect as D
from ..ir.types import dtype_of_mlir

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from argus.verify.affine import Affine, Key, Space
    from argus.verify.memory import TagMemory
    from argus.verify.obligations import Obligations
    from argus.verify.tags import TagTable
    from xdsl.ir import Operation, SSAValue
    from ..dtypes import DType
    from ..errors import SourceLocation
    from .analysis import TagAnalysis


#: Iterations up to which a runtime loop with concrete bounds is unrolled by the analysis.
CONCRETE_TRIPS = 64


#: Passes over a symbolic loop's body before its entry state is widened to ⊤ where it moves.
MAX_PASSES = 4


INT32 = (-(2**31), 2**31 - 1)


class Undecidable(Exception):
    """The analysis cannot follow the kernel here (the result is `unknown`, never a pass)."""

    def __init__(self, reason: str, location: SourceLocation | None) -> None:
        self.reason = reason
        self.location = location
        super().__init__(f"{location}: {reason}" if location else reason)


@dataclass
class GlobalRef:
    """A global tensor: its dims (uniform forms) and, for views, the tensor its tags come from."""

    name: str
    dtype: DType
    dims: list[Affine]
    root: GlobalRef | None = None


@dataclass
class Slot:
    """A per-thread variable: its value (None for floats) and its byte tags."""

    value: Affine | None
    tags: np.ndarray
    tracked: bool = False
    stored: bool = False
    """While tracked: assigned by every thread since tracking began."""
    exposed: bool = False
    """While tracked: read before being assigned."""
    assigned: TagMemory | None = None
    """Which threads assigned it, on which paths: a byte per thread whose site says so, as a
    register's does (`initialization`)."""


@dataclass
class LoopContext:
    name: str
    symbol: int | None
    values: np.ndarray | None = None
    step: int = 1
    index: Affine | None = None
    """Each thread's index as a form of `symbol`, where the symbol counts iterations instead
    (a loop whose threads start at bounds of their own: `control.Counter`)."""
    ends: tuple[Key, Key] | None = None
    """A runtime loop's first and last index (`TagAnalysis.every_iteration`), once asked for."""
    op: Any = None
    """The loop's op (what places an op inside it in program order)."""


@dataclass
class TileBounds:
    """A step of a block's plan: a tile access no check depends on, walked only to check that
    its coordinates lie inside the tile (`tag_liveness.Liveness.bounds_only`)."""

    op: Operation


@dataclass
class Analysis:
    """What a walk found: the symbol space, domain facts, obligations and the sites of stores."""

    space: Space
    table: TagTable
    obligations: Obligations
    facts: set[tuple[str, Key]]
    replay_facts: set[tuple[str, Key]]
    """Facts that keep a witness's launch in bounds in every iteration (not part of the domain)."""
    block_symbols: tuple[int, int, int]
    """The block's index — the cluster's, in a kernel with clusters."""
    grid_symbols: tuple[int, int, int]
    """The grid's size in blocks — in clusters, in a kernel with clusters."""
    parameters: dict[str, int]
    """Runtime scalar parameters and symbolic tensor dims, by name, to their symbols."""
    walk: TagAnalysis
    """The analysis itself (where each fact came from)."""


UNREAD = object()


@dataclass
class State:
    memories: list[tuple[np.ndarray, ...]]
    """Per memory: its tags, the sites that wrote them, the writers since the last barrier (shared
    memories only: None for registers)."""
    slots: list[tuple[np.ndarray, Affine | None]]

    def same_as(self, other: State) -> bool:
        """Whether the tags, write status and unordered accesses (a loop's entry carries them to
        its next iteration) of every memory, and the variables, are the same."""
        return (all(np.array_equal(p[0], q[0]) and np.array_equal(p[1], q[1])
                    and (p[2] is None or np.array_equal(p[2], q[2])) for p, q in zip(self.memories, other.memories))
                and all(np.array_equal(p[0], q[0]) for p, q in zip(self.slots, other.slots))
                and same_values([v for _, v in self.slots], [v for _, v in other.slots]))


_WIDTHS: dict[int, tuple[Any, Any]] = {}


_INTS: dict[int, tuple[Any, Any]] = {}


_TYPES_KEPT = 1 << 16


def by_type(table: dict[int, tuple[Any, Any]], t: Any, compute: Callable[[Any], Any]) -> Any:
    """`compute(t)`, remembered by the type object's identity (an attribute hashes slowly; each
    entry keeps its type alive, so a table starts over past `_TYPES_KEPT` entries)."""
    known = table.get(id(t))
    if known is not None and known[0] is t:
        return known[1]
    if len(table) > _TYPES_KEPT:
        table.clear()
    value = compute(t)
    table[id(t)] = (t, value)
    return value


def byte_width(ssa: SSAValue) -> int:
    return by_type(_WIDTHS, ssa.type, _bytes_of_type)  # type: ignore[no-any-return]


def _bytes_of_type(t: Any) -> int:
    if isinstance(t, D.VarType):
        return max(1, t.dtype.nbytes)
    try:
        return max(1, dtype_of_mlir(t).nbytes)
    except TypeError:
        return 1


def same_objects(xs: list[Any], ys: list[Any]) -> bool:
    return len(xs) == len(ys) and all(x is y for x, y in zip(xs, ys))


def _fingerprint(v: Affine) -> tuple[Any, ...]:
    return (v.const.tobytes(), *((a, t.tobytes()) for a, t in sorted(v.terms.items())))


def address_fingerprint(inputs: list[Any]) -> tuple[Any, ...]:
    """What an access's addresses depend on: the tile's layout and base, the threads, the coordinates."""
    tile, mask, *values = inputs
    return (mask.tobytes(), id(tile.layout), None if tile.base is None else tile.base.tobytes(),
            None if tile.segment is None else tile.segment.tobytes(), *(_fingerprint(c) for c in values))


def key_component(key: Key) -> Any:
    return key[0] if not key[1] else key


def is_int(ssa: SSAValue) -> bool:
    return by_type(_INTS, ssa.type, _integer_type)  # type: ignore[no-any-return]


def _integer_type(t: Any) -> bool:
    try:
        dtype = dtype_of_mlir(t)
    except TypeError:
        return False
    return dtype.is_integer or dtype.kind == "bool"  # conditions are integers 0 and 1


def same_values(x: list[Affine | None], y: list[Affine | None]) -> bool:
    for p, q in zip(x, y):
        if (p is None) != (q is None):
            return False
        if p is not None and q is not None and not (np.array_equal(p.const, q.const) and p.terms.keys() == q.terms.keys()
                                                    and all(np.array_equal(p.terms[t], q.terms[t]) for t in p.terms)):
            return False
    return True
