"""The run of a static loop the IR keeps rolled (`frontend.rolling`), and of the rolled loops in it.

Such a loop runs the way copies of an unrolled one do (`run_plan`, `batching`), with no copies
to find: `rolled_run` makes each op of its body one group over all its iterations, placed where
program order puts each iteration. Integer arithmetic on the loop indices and on values known
before any check is computed here, once, while the run is made. Walked again (`batching.execute`
with the loop's own walk), it goes one iteration at a time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from argus.verify.affine import Affine

from .op_table import OpTable
from .run_plan import Gather, Group, Planner, Run, StandIn, topological


class Nest(NamedTuple):
    """What `rolled_run` asks of a static loop kept rolled (`frontend.rolling`)."""

    body: Callable[[int], list[int]]
    """The ops a check walks in the body of a loop (by number), in program order."""
    indices: Callable[[int], np.ndarray | None]
    """The index values of a loop kept rolled, in order (None: another kind of op)."""
    alone: Callable[[int], bool]
    """Whether an op must run on its own (its copies cannot run over all their points at once)."""
    index_of: Callable[[int], int]
    """The identity of a loop's index (its body's argument)."""
    rule: Callable[[int], Any]
    """The rule an op runs where it is not its own (None: its own)."""
    known: Callable[[int], np.ndarray | None]
    """The numbers of a value known before any check (by identity), one per thread, or one for
    all threads (a constant)."""
    moved: Callable[[int], int]
    """The operand whose data an op only moves (`Role.moved`)."""


def rolled_run(table: OpTable, loop: int, nest: Nest, planner: Planner, threads: int) -> Run | None:
    """The iterations of a static loop kept rolled (and of the rolled loops in its body) as one
    run: a group per op over all its iterations, in program order; None if an op must run
    alone. Copy c of an op is its iterations' c-th in lexicographic order of the indices
    (outermost first); its place is where program order puts that execution. Integer
    arithmetic on the indices and on values known before any check is computed here, once:
    its ops need no group."""
    shape = _Nest(nest, loop)
    if shape.order is None:
        return None
    order = _carried_first(table, shape.order, planner)
    made: dict[int, tuple[int, int]] = {}  # per result (by identity): (its group, which result)
    # Numbers known here are arrays of shape (trip of each loop around their op..., thread), of
    # extent 1 along what they do not depend on: arithmetic on loop indices alone stays small,
    # and only an operand of a group is spread over every point.
    numbers: dict[int, np.ndarray] = {}  # per value computed here
    spreads: dict[tuple[int, tuple[int, ...]], Affine] = {}  # per value and loops, over every point
    index_depth = {owner: chain.index(owner) for chain in shape.trips for owner in chain}
    depth_of: list[int] = []  # per group, how many loops hold its op
    groups: list[Group] = []
    operands_of, values_of, results_of = table.operands, table.operand_values, table.results

    def known(v: int, loops: int) -> np.ndarray | None:
        """The numbers of value `v` for an op inside `loops` loops, if known before any check:
        shaped (loops..., thread) to broadcast."""
        found = numbers.get(v)
        if found is None:
            owner = shape.index_at.get(v)
            if owner is not None:  # a loop's index: along its own axis
                at = index_depth[owner]
                found = shape.indices[owner].reshape((1,) * at + (-1,) + (1,) * (loops - at))
            else:
                outside = nest.known(v)
                if outside is None:
                    return None
                found = outside.reshape((1,) * loops + (-1,))
        elif found.ndim <= loops:  # made in fewer loops than the op using it
            found = found.reshape(found.shape[:-1] + (1,) * (loops + 1 - found.ndim) + found.shape[-1:])
        return found

    def spread(v: int, chain: tuple[int, ...]) -> Affine:
        """Value `v` over every point of the copies of an op in loops `chain`, copy by copy (each
        its threads)."""
        key = (v, chain)
        found = spreads.get(key)
        if found is None:
            numbers_here = known(v, len(chain))
            assert numbers_here is not None
            every = np.empty((*shape.trips[chain], threads), np.int64)
            every[...] = numbers_here  # (a broadcast assignment: cheaper than numpy's broadcast_to)
            found = spreads[key] = Affine(every.reshape(-1))
        return found

    for j in order:
        chain = shape.chains[j]
        depth = len(chain)
        function = planner.arithmetic(j)
        operands = operands_of[j]
        if function is not None:
            args = []
            for v in operands:
                arg = known(v, depth)
                if arg is None:
                    break
                args.append(arg)
            else:
                numbers[results_of[j][0]] = function(*args)
                continue
        trips = shape.trips[chain]
        copies = math.prod(trips)  # (arithmetic computed here needs no count of its copies)
        gathers = []
        for v, value in zip(operands, values_of[j]):
            found = made.get(v)
            if found is not None:  # an earlier group's copies: those of the iterations of its own loops
                below = math.prod(trips[depth_of[found[0]]:])
                rows = tuple(range(copies)) if below == 1 else tuple(c // below for c in range(copies))
                gathers.append(Gather(None, ((found[0], found[1], copies // below),), rows, below == 1))
            elif v in numbers or v in shape.index_at:
                gathers.append(Gather(None, fixed=spread(v, chain)))
            else:  # a value from before the loops (or known before any check)
                gathers.append(Gather(value))
        moved = nest.moved(j)
        if moved >= 0:
            gathers[moved].tags_only = True
        places = shape.places_of(j)
        group = Group([table.ops[j]] * copies, places, gathers=gathers, places=places,
                      operands=tuple([StandIn.of(value.type, [value]) for value in values_of[j]]),
                      arithmetic=function,
                      rule=nest.rule(j), scatter=[False] * len(results_of[j]))  # (body values stay in the body)
        for r, result in enumerate(results_of[j]):
            made[result] = (len(groups), r)
        depth_of.append(len(chain))
        groups.append(group)
    return Run([table.ops[j] for j in order], groups, places=shape.size)


class _Nest:
    """The shape of a nest of static loops kept rolled: its ops in program order (None if one
    must run alone), each op's loops, each loop's index values, and each op's copies' places."""

    def __init__(self, nest: Nest, loop: int) -> None:
        self.order: list[int] | None = []
        self.chains: dict[int, tuple[int, ...]] = {}
        self.trips: dict[tuple[int, ...], list[int]] = {}
        """Per chain of loops, each one's trip count."""
        self.indices: dict[int, np.ndarray] = {}
        self.index_at: dict[int, int] = {}
        self.size = 0
        self._nest = nest
        self._bodies: dict[int, list[int]] = {}
        self._sizes: dict[int, int] = {}
        self._at: dict[int, tuple[tuple[int, ...], int]] = {}
        """Per op, its loops and its place in one iteration of the innermost."""
        self._starts: dict[tuple[int, ...], np.ndarray] = {}
        """Per chain of loops, where each iteration of the innermost begins (`places_of`)."""
        outermost = nest.indices(loop)
        if outermost is None or not self._collect(loop, outermost, (loop,)) or not self.order:
            self.order = None
            return
        self.index_at = {nest.index_of(j): j for j in self.indices}
        self.size = len(outermost) * self._sizes[loop]

    def _collect(self, loop: int, indices: np.ndarray, chain: tuple[int, ...]) -> bool:
        """Read a loop's body (its ops' loops, the loops' indices, one iteration's size)."""
        self.indices[loop] = indices
        self.trips[chain] = [len(self.indices[k]) for k in chain]
        body = self._bodies[loop] = self._nest.body(loop)
        size = 0
        for j in body:
            inner = self._nest.indices(j)
            if inner is not None:
                if not self._collect(j, inner, (*chain, j)):
                    return False
                self._at[j] = (chain, size)
                size += len(inner) * self._sizes[j]
            elif self._nest.alone(j):
                return False
            else:
                self.order.append(j)  # type: ignore[union-attr]
                self.chains[j] = chain
                self._at[j] = (chain, size)
                size += 1
        self._sizes[loop] = size
        return True

    def places_of(self, j: int) -> np.ndarray:
        """Where program order puts each copy of op `j` in the run: its place in one iteration
        of each loop around it, plus the index times the size of that loop's iteration."""
        chain, at = self._at[j]
        return self._begun(chain) + at

    def _begun(self, chain: tuple[int, ...]) -> np.ndarray:
        """Where each iteration of the innermost loop of `chain` begins, in lexicographic order."""
        found = self._starts.get(chain)
        if found is None:
            loop = chain[-1]
            steps = np.arange(len(self.indices[loop])) * self._sizes[loop]
            found = self._starts[chain] = steps if len(chain) == 1 else \
                np.add.outer(self._begun(chain[:-1]) + self._at[loop][1], steps).ravel()
        return found


def _carried_first(table: OpTable, order: list[int], planner: Planner) -> list[int]:
    """The ops of a rolled run (`order`: program order of the body) in the order their groups
    run. An op that writes a tile a body op before it reads writes what that op reads in the
    next iteration: it runs first where nothing it needs comes from the reader (otherwise the
    groups run in program order, and the run's registers tell whether that was right)."""
    tiles = planner.tiles(order)
    readers: dict[Any, list[int]] = {}
    carried: list[tuple[int, int]] = []  # (writer, reader), by place in `order`
    for p, (reads, _) in enumerate(tiles):
        for key in reads:
            readers.setdefault(key, []).append(p)
    for p, (_, writes) in enumerate(tiles):
        carried += [(p, r) for key in writes for r in readers.get(key, ()) if r <= p]
    if not carried:
        return order
    place = {result: p for p, j in enumerate(order) for result in table.results[j]}
    edges: list[set[int]] = [set() for _ in order]
    for p, j in enumerate(order):
        for v in table.operands[j]:
            maker = place.get(v)
            if maker is not None:
                edges[maker].add(p)
    for writer, reader in carried:
        if writer == reader:
            return order
        edges[writer].add(reader)
    ranked = topological(edges, list(range(len(order))))
    return [order[p] for p in ranked] if len(ranked) == len(order) else order
