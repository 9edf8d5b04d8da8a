"""Checking the copies of an unrolled loop together.

A ``static_range`` body unrolls into copies of its statements: ops of one source location and
kind that differ in their constants (and in what common-subexpression elimination let them
share). The analysis enumerates threads, so each copy of an op costs a full rule over every
thread; a flash-attention check used to run its 96 global loads one after the other.

Here a straight run of arithmetic and memory ops is cut into *groups* — ops of one source
location, kind and types — and each group runs as one op over ``points = copies × threads``
(point ``c·n + t`` is thread t of copy c): its operands are gathered from the copies' values
(one `take` from their sources' concatenation, planned once), its results kept over all copies
for the groups that read them and set for each copy only where something else reads them.
Groups run in an order that keeps every value computed before its use; copies that depend on
each other (an index accumulated over the loop: a cycle between groups) run op by op.

Reordering can change what memory holds. A register write is kept with its place in the run
(`_Journal`), so a read sees what program order leaves there whatever order the groups ran in
— registers reused by every copy (a fragment loaded anew for each product) need that — and the
plan makes a read of a tile wait for the writes before it. Shared memory accesses are recorded:
when two accesses to one shared byte, one of them a write, ran in another order than the
program's, or a register read ran before a write it needed, the run is undone and walked again
op by op. So is a run in which anything was reported (a fault, a race) or a rule failed:
findings come from the plain walk, whose witnesses name one thread and one copy. The plan of
each block is made once per compiled kernel (`preparation.Preparation`). Two shortcuts skip the
journal where order cannot matter: copies of a product that read one register fragment alike
read it once while the run has not written that memory (`Footprint.read_alike`), and a run that
is one group of stores of a constant writes its registers directly.

A static loop the IR keeps rolled (`frontend.rolling`) runs the same way, with no copies to
find: `rolled_run` makes each op of its body (and of the rolled loops in it) one group over all
its iterations, placed where program order puts each iteration; walked again, it goes one
iteration at a time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np
from argus.verify.affine import Affine, Uniform, runs
from argus.verify.memory import TagMemory
from argus.verify.tags import BOTTOM
from xdsl.ir import Operation, SSAValue

from ..machine.interpreter import TileValue
from ..ir.layout_texts import moved_layout
from .op_table import OpTable

if TYPE_CHECKING:
    from .analysis import TagAnalysis


@dataclass
class Group:
    """Ops run as one: copies of one statement, in program order."""

    ops: list[Operation]
    positions: list[int]
    """Each op's place in its run (program order)."""
    operands: tuple[_Operand, ...] = ()
    """What the first op reads while it runs for every copy: its operands, over all copies."""
    gathers: list[Gather] = field(default_factory=list)
    """Per operand, where its copies' values come from."""
    scatter: list[bool] = field(default_factory=list)
    """Per result: whether something reads the copies' values one by one."""
    places: np.ndarray | None = None
    """`positions` as an array (made when the group first touches a tile)."""
    rule: Any = None
    """The rule the group runs, where it is not its op's own (a tile access kept for its
    coordinates alone)."""
    arithmetic: Callable[..., np.ndarray] | None = None
    """For integer arithmetic, its numpy function: on numbers without tags the group computes
    its result directly, without its op's rule (what that rule does with numbers)."""


@dataclass
class Gather:
    """An operand over every copy's points: the concatenation of its `sources` (an SSA value: one
    copy's worth of points; a (group, result): all that group's copies), then for copy c the
    `rows[c]`-th copy's worth of it. One value read by every copy is `shared` instead."""

    shared: SSAValue | None
    sources: tuple[Any, ...] = ()
    rows: tuple[int, ...] = ()
    in_order: bool = False
    """Whether the concatenation is the operand as it is (copy c is its c-th copy's worth)."""
    tags_only: bool = False
    """Whether the op only moves the operand's data (a store's value): its tags are gathered,
    not its value (unknown integer data gathered over copies is one unknown per point)."""
    indices: dict[int, np.ndarray] = field(default_factory=dict)
    """Per thread count, the points to take from the concatenation."""
    fixed: Affine | None = None
    """The operand over every copy's points where every copy's value is known before any check
    (`preparation.Preparation.known`: an element's coordinates in an unrolled loop)."""

    def index(self, n: int) -> np.ndarray | None:
        """The points to take from the concatenation (None: all of them, in order)."""
        if self.in_order:
            return None
        found = self.indices.get(n)
        if found is None:
            found = self.indices[n] = runs(np.asarray(self.rows, np.int64) * n, n).reshape(-1)
        return found


class _Operand:
    """An operand gathered over copies; it stands for an SSA value (rules read its type)."""

    __slots__ = ("type",)

    def __init__(self, type: Any) -> None:
        self.type = type


@dataclass
class Known:
    """Values every check computes alike (`preparation.Preparation.known`), set when it begins."""

    results: list[SSAValue]
    values: list[Any]


@dataclass
class Products:
    """Matrix products in a row, with only views and assertions between them, outside a run:
    their operands are read together (`products.products_rule`). Views and assertions write
    nothing, so reading every product's operands before any product writes its accumulator
    changes nothing when no product reads another's accumulator (checked as they run)."""

    ops: list[Operation]


def moved_tile(tile: Any, start: int) -> Any:
    """A tile moved `start` elements on in its memory (its layout's offset, before any swizzle)."""
    return tile.derived(moved_layout(tile.layout, start), tile.dtype, tile.base)


class TileCopies:
    """An operand that is another tile in each copy of a group (a slice per iteration of an
    unrolled loop). Only the rules that know it take it (`products.point_fragments`); on any
    other it fails, and the run is walked op by op. Copies of one tile moved on by a start per
    copy (`moved`) make their tiles only when asked: their fragments are the one tile's, shifted."""

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


@dataclass
class Run:
    """A straight run of ops and the order its groups run in."""

    ops: list[Operation]
    groups: list[Group]
    walked_again: int = 0
    """How often the run was undone and walked op by op (what a check of a kernel that keeps
    its copies apart costs; the tests hold the examples to none)."""
    places: int = 0
    """How many places program order has in the run (0: one per op of `ops`)."""


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
                      operands=tuple([_Operand(value.type) for value in values_of[j]]), arithmetic=function,
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


class Role(NamedTuple):
    """What the plan asks of an op, the same for every op of its kind."""

    runnable: bool
    """Whether it may be part of a run."""
    whole: bool
    """Whether it reads tiles whole (an assertion, a product)."""
    view: bool
    """Whether it is a view of a tile (it reads no tags)."""
    product: bool
    """Whether it is a matrix product."""
    tiles: bool
    """Whether it reads or writes tiles (`Planner.tiles` says which)."""
    moved: int = -1
    """The operand whose data it only moves, whose value it never reads (-1: none)."""


class Planner(Protocol):
    """What the plan asks of each op (by its number in the table)."""

    def roles(self, numbers: list[int]) -> tuple[list[Role], list[Any]]:
        """Per op, its `Role`, and the key its copies share where they may run as one group
        (ops of one source position and kind; None where the op runs alone)."""

    def tiles(self, numbers: list[int]) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        """Per op, what it reads and writes of tiles, as keys: a read waits for the writes of its
        keys before it in program order."""

    def fixed(self, values: tuple[int, ...]) -> Affine | None:
        """An operand over every copy's points (copy c's value is `values[c]`, by identity), if
        every copy's value is known before any check."""

    def arithmetic(self, number: int) -> Callable[..., np.ndarray] | None:
        """The numpy function computing the op's integer result from its operands' numbers, if it
        is integer arithmetic."""


def plan(table: OpTable, numbers: list[int], planner: Planner) -> list[Operation | Run]:
    """A block's ops (their `numbers` in `table`), with each straight run of runnable ops that
    has copies to run together replaced by its `Run`.

    Ops that read tiles whole (assertions, products) and the views between them make a
    cluster; a run holds the clusters between its stretches of other ops only if copies of one
    statement sit in two of its stretches (an unrolled loop whose every iteration loads a
    fragment and multiplies it: its fragment register is reused, which the run's registers sort
    out).
    Otherwise each stretch is a run of its own, and so is each cluster, or a `Products` step
    if it holds two products or more: it then reads what was written before it, directly."""
    roles, keys = planner.roles(numbers)
    ops = table.ops
    out: list[Operation | Run] = []

    def add(lo: int, hi: int) -> None:
        run = _plan_run(table, numbers[lo:hi], roles[lo:hi], keys[lo:hi], planner) if hi - lo > 1 else None
        out.extend([ops[j] for j in numbers[lo:hi]] if run is None else [run])

    def straight(lo: int, hi: int) -> None:
        pieces = _pieces(roles, lo, hi)
        if len(pieces) > 1 and _copies_apart([(a, b) for a, b, cluster in pieces if not cluster], keys):
            add(lo, hi)
            return
        for a, b, cluster in pieces:
            if cluster and sum(role.product for role in roles[a:b]) > 1:
                out.append(Products([ops[j] for j in numbers[a:b]]))
            else:
                add(a, b)

    start = 0
    for i, role in enumerate(roles):
        if not role.runnable:
            straight(start, i)
            out.append(ops[numbers[i]])
            start = i + 1
    straight(start, len(roles))
    return out


def _copies_apart(stretches: list[tuple[int, int]], keys: list[Any]) -> bool:
    """Whether copies of one statement (ops of one entry of `keys`) sit in two of the
    `stretches` (ranges of ops: an unrolled loop's body cut by its assertions or products)."""
    seen: dict[Any, int] = {}
    for s, (lo, hi) in enumerate(stretches):
        for key in keys[lo:hi]:
            if key is not None and seen.setdefault(key, s) != s:
                return True
    return False


def _pieces(roles: list[Role], lo: int, hi: int) -> list[tuple[int, int, bool]]:
    """The ops `lo:hi` cut into stretches and clusters (ops reading tiles whole, and the views
    between them), in order: (first, end, whether a cluster)."""
    pieces: list[tuple[int, int, bool]] = []
    start = lo  # of the piece being made
    cluster = False
    views = None  # after a cluster's last op: where the views begin (the cluster's if another follows)
    for i in range(lo, hi):
        role = roles[i]
        if role.whole:
            if not cluster:
                if i > start:
                    pieces.append((start, i, False))
                start, cluster = i, True
            views = None
        elif cluster and role.view:
            if views is None:
                views = i
        elif cluster:
            end = i if views is None else views
            pieces.append((start, end, True))
            start, cluster, views = end, False, None
    if start < hi:
        if cluster and views is not None:
            pieces.append((start, views, True))
            pieces.append((views, hi, False))
        else:
            pieces.append((start, hi, cluster))
    return pieces


def _plan_run(table: OpTable, numbers: list[int], roles: list[Role], keys: list[Any], planner: Planner) -> Run | None:
    """The run of `numbers` (ops of one entry of `keys` may run as one group), or None if no op
    has copies to run with."""
    ids: dict[Any, int] = {}
    named = [None if key is None else ids.setdefault(key, len(ids)) for key in keys]
    if len(ids) == len(keys) - named.count(None):  # every op is alone in its kind
        return None
    made: dict[int, int] = {}
    """Per value (by identity) made in the run, the place of the op making it."""
    results = table.results
    for i, j in enumerate(numbers):
        for r in results[j]:
            made[r] = i
    operands = [table.operands[j] for j in numbers]
    sources = [[p for v in vs if (p := made.get(v)) is not None] for vs in operands]
    by_key: dict[int, list[int]] = {}
    members: list[list[int]] = []
    levels = [0] * len(numbers)
    count = len(ids)
    for i, key in enumerate(named):
        if key is None:
            members.append([i])
            continue
        # one source location may hold several ops of a kind (``a + b + c``): they are told
        # apart by how many of them feed each other
        level = 0
        for s in sources[i]:
            if named[s] == key and levels[s] >= level:
                level = levels[s] + 1
        levels[i] = level
        found = by_key.get(key + level * count)
        if found is None:
            found = by_key[key + level * count] = []
            members.append(found)
        found.append(i)
    if len(members) == len(numbers):  # no op has a copy at its level
        return None
    accesses = [i for i, role in enumerate(roles) if role.tiles]
    _wait_for_writes(sources, list(zip(accesses, planner.tiles([numbers[i] for i in accesses]))))
    ops = [table.ops[j] for j in numbers]
    members = [piece for m in members for piece in _alike(ops, m)]
    groups = []
    produced: dict[int, tuple[tuple[int, int], tuple[int, int, int], int]] = {}
    """A result (by identity) of a copy of a group: ((group, result), (group, result, the group's
    copies), which copy) — the pairs shared by the group's copies."""
    taken: dict[Any, int] = {}
    """Per result of a group's copy, how many operands of later groups take it from there; per
    (group, result), how many take all its copies in order."""
    columns_of: dict[tuple[int, int], tuple[int, ...]] = {}
    """Per (group, result), the result's copies in order."""
    for m in _schedule(sources, members):
        group = Group([ops[i] for i in m], m)
        if len(m) > 1:
            columns = list(zip(*[operands[i] for i in m]))
            values = list(zip(*[table.operand_values[numbers[i]] for i in m]))
            group.gathers = [_gather_plan(column, produced, v, taken, columns_of, planner)
                             for column, v in zip(columns, values)]
            moved = roles[m[0]].moved
            if moved >= 0:
                group.gathers[moved].tags_only = True
            group.operands = tuple(_Operand(v[0].type) for v in values)
            group.arithmetic = planner.arithmetic(numbers[m[0]])
            g = len(groups)
            for r, column in enumerate(zip(*[results[numbers[i]] for i in m])):
                key, source = (g, r), (g, r, len(m))
                columns_of[key] = column
                for c, result in enumerate(column):
                    produced[result] = (key, source, c)
        groups.append(group)
    if all(len(g.ops) == 1 for g in groups):
        return None
    uses = table.uses
    for g, group in enumerate(groups):  # copies' own values are set for results read by anything but a later group
        if len(group.ops) > 1:
            copies = [results[numbers[i]] for i in group.positions]
            group.scatter = [any(uses.get(result[k], 0) > taken.get(result[k], 0) + taken.get((g, k), 0)
                                 for result in copies) for k in range(len(copies[0]))]
    return Run(ops, groups)


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
    ranked = _topological(edges, list(range(len(order))))
    return [order[p] for p in ranked] if len(ranked) == len(order) else order


def _wait_for_writes(sources: list[list[int]], tiles: list[tuple[int, tuple[tuple[Any, ...], tuple[Any, ...]]]]
                     ) -> None:
    """Make each op that reads tiles wait for the ops before it that write what it reads (`tiles`:
    the ops accessing tiles, in order, with the keys each reads and writes): its group then runs
    after theirs. (A run's registers give every read what program order leaves there, whatever
    order the groups run in, as long as each write program order puts before a read ran before
    it.)"""
    writers: dict[Any, list[int]] = {}
    for i, (reads, writes) in tiles:
        for key in reads:
            sources[i].extend(writers.get(key, ()))
        for key in writes:
            writers.setdefault(key, []).append(i)


def _alike(ops: list[Operation], positions: list[int]) -> list[list[int]]:
    """Ops of one location and kind, split where their types or properties differ (a helper
    function's lines, called on tiles of different types; extracts of different bytes)."""
    if len(positions) == 1:
        return [positions]
    signatures = [_signature(ops[i]) for i in positions]
    first = signatures[0]
    if signatures.count(first) == len(signatures):  # (a count compares in C)
        return [positions]
    parts: list[tuple[Any, list[int]]] = []
    for i, signature in zip(positions, signatures):
        for known, part in parts:
            if known == signature:
                part.append(i)
                break
        else:
            parts.append((signature, [i]))
    return [part for _, part in parts]


def _signature(op: Operation) -> tuple[Any, ...]:
    """What copies of one op must share besides their kind: their results' types and their
    properties (an operand's type follows from the op that makes it, and a tile or tensor
    operand's memory is compared when the copies run)."""
    results = op.results
    return tuple([r.type for r in results]) if results else (), op.properties, op.attributes


def _gather_plan(column: tuple[int, ...], produced: dict[int, tuple[tuple[int, int], tuple[int, int, int], int]],
                 values: tuple[SSAValue, ...], taken: dict[Any, int],
                 columns_of: dict[tuple[int, int], tuple[int, ...]], planner: Planner) -> Gather:
    """Where the `values` of an operand's copies (`column`: their identities) come from, counting
    in `taken` the results of groups' copies taken. `produced`: for a result of a group's copy,
    ((group, result), (group, result, copies of the group), which copy); `columns_of`: per
    (group, result), its copies in order."""
    first = column[0]
    found = produced.get(first)
    if found is None:
        if column.count(first) == len(column):
            return Gather(values[0])
        fixed = planner.fixed(column)
        if fixed is not None:
            return Gather(None, fixed=fixed)
    elif found[2] == 0 and columns_of[found[0]] == column:  # an earlier group's result, copy for copy
        taken[found[0]] = taken.get(found[0], 0) + 1
        return Gather(None, (found[1],), tuple(range(len(column))), True)
    sources: list[Any] = []
    slot_of: dict[Any, int] = {}
    slots = 0
    rows = []
    for v, value in zip(column, values):
        found = produced.get(v)
        if found is None:
            start = slot_of.get(v)
            if start is None:
                start = slot_of[v] = slots
                sources.append(value)
                slots += 1
            rows.append(start)
            continue
        taken[v] = taken.get(v, 0) + 1
        key, source, copy = found
        start = slot_of.get(key)
        if start is None:
            start = slot_of[key] = slots
            sources.append(source)
            slots += source[2]
        rows.append(start + copy)
    return Gather(None, tuple(sources), tuple(rows), slots == len(rows) and rows == list(range(slots)))


def _schedule(sources: list[list[int]], groups: list[list[int]]) -> list[list[int]]:
    """The groups in an order where each value is computed before its uses, the program's
    order where it is free; groups on a dependence cycle (copies that depend on each other)
    are run op by op. `sources[i]`: the ops (by place) whose values op i reads."""
    while True:
        group_of = [0] * len(sources)
        for g, members in enumerate(groups):
            for i in members:
                group_of[i] = g
        # each group waiting only for groups that begin before it (the common case): program order
        if all(groups[group_of[j]][0] < members[0] for members in groups for i in members for j in sources[i]):
            return sorted(groups)
        edges: list[set[int]] = [set() for _ in groups]
        for g, members in enumerate(groups):
            for i in members:
                for j in sources[i]:
                    edges[group_of[j]].add(g)
        ranked = _topological(edges, [members[0] for members in groups])
        if len(ranked) == len(groups):
            return [groups[g] for g in ranked]
        cyclic = _on_cycles(edges)  # what is left waits on a cycle: its groups run op by op
        groups = [piece for g, members in enumerate(groups)
                  for piece in ([[i] for i in members] if g in cyclic else [members])]


def _topological(edges: list[set[int]], first: list[int]) -> list[int]:
    """The nodes of a graph (`edges[n]`: the nodes that wait for n) in an order where each comes
    after those it waits for, the least `first` where several may come; the nodes on or after a
    cycle are left out."""
    needs = [0] * len(edges)
    for targets in edges:
        for n in targets:
            needs[n] += 1
    ready = [(first[n], n) for n in range(len(edges)) if not needs[n]]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        _, n = heapq.heappop(ready)
        out.append(n)
        for m in edges[n]:
            needs[m] -= 1
            if not needs[m]:
                heapq.heappush(ready, (first[m], m))
    return out


def _on_cycles(edges: list[set[int]]) -> set[int]:
    """The nodes on a cycle of the graph (a self-loop included), by Tarjan's algorithm."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    stack: list[int] = []
    on_stack: set[int] = set()
    out: set[int] = set()
    counter = 0
    for root in range(len(edges)):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(edges[nxt])))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1 or node in edges[node]:
                    out.update(component)
    return out


class Footprint:
    """The tile accesses of a run. A register memory's are kept in a `_Journal`, so that a read
    sees what program order leaves there however the copies ran; a shared memory's are recorded
    to tell whether running the copies in groups kept every byte's accesses in program order.
    The memories as they were are kept too, to undo the run if not."""

    def __init__(self, length: int) -> None:
        self.step = 0
        self.length = length
        """How many ops the run has (every place in the run is below)."""
        self.group: Group | None = None
        """The group running (its copies' places in the run)."""
        self.threads = 1
        """Threads per copy: point p belongs to copy p // threads."""
        self.memories: dict[int, list[tuple[np.ndarray, np.ndarray, int, bool]]] = {}
        """Per shared memory, its accesses: (bytes per point, each point's copy's place, step, write)."""
        self.journals: dict[int, _Journal] = {}
        """Per register memory, its accesses."""
        self.saved: list[tuple[TagMemory, _Saved]] = []
        self.alone = False
        """Whether the run is one group of stores (an op that only moves a value's data into a
        tile, reading none): no other access can come between its copies'."""

    def read(self, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray,
             sites: bool) -> tuple[np.ndarray, np.ndarray | None]:
        """The tags at `idx` (rows: `threads`, of `points`) as program order leaves them, and
        the sites that wrote them if asked."""
        if memory.per_thread:
            return self._journal(memory).read(idx, threads, self.place_of(points), self.step, sites)
        self._access(memory, idx, points, write=False)
        tags = memory.read(idx, threads)
        return tags, memory.site[idx] if sites else None

    def read_alike(self, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, copy_of: np.ndarray
                   ) -> np.ndarray | None:
        """The tags at `idx` (rows: `threads`) of registers several copies read alike, read once
        for all of them: rows `d·n` to `(d + 1)·n - 1` (n threads per copy) are what the copies
        `c` with `copy_of[c] = d` read. None once the run has written the memory (copies may then
        see different data). Each row's read is kept at the latest place of the copies sharing
        it: a write program order puts before any of them is before that one, so `complete`
        still finds a write that ran too late (and, at worst, one that did not)."""
        if not memory.per_thread:
            return None
        journal = self._journal(memory)
        if journal.writes:
            return None
        latest = np.full(threads.size // self.threads, -1, np.int64)
        np.maximum.at(latest, copy_of, self.place_of(np.arange(copy_of.size) * self.threads))
        rows = idx.reshape(threads.size, -1)
        journal.reads.append(((threads[:, None] * journal.width + rows).reshape(-1),
                              np.repeat(latest, self.threads * rows.shape[1]), self.step))
        if memory.fresh is not None:
            self._keep(memory)
        return memory.read(rows, threads).reshape(idx.shape)

    def write_status(self, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray
                     ) -> np.ndarray:
        """Whether bytes `idx` (rows: `threads`, of `points`) were written before the points in
        program order, as `TagAnalysis.write_status` says it (not a read of the data: see
        `_Journal.write_status`; a shared memory's accesses are recorded by the read of its data
        that goes with this)."""
        if memory.per_thread:
            return self._journal(memory).write_status(idx, threads, self.place_of(points))
        status = memory.site[idx]
        if memory.exposed is not None and memory.fresh is not None:  # (a read, for a loop's tracking)
            self._keep(memory)
            open_ = idx[status < 0]  # (bytes not written by a write with a site: their status may move)
            memory.exposed[open_] |= ~memory.fresh[open_]
        return status  # type: ignore[no-any-return]

    def write(self, memory: TagMemory, idx: np.ndarray, tags: np.ndarray, threads: np.ndarray, points: np.ndarray,
              site: int) -> None:
        if memory.per_thread:
            if self.alone and (tags == BOTTOM).all():  # copies of one op writing ⊥ (a constant): any order
                # of their writes leaves the same, and so does walking them again op by op after an undo
                memory.write(idx, tags, threads, site)
                return
            self._journal(memory).write(idx, tags, threads, self.place_of(points), self.step, site)
            return
        self._access(memory, idx, points, write=True)
        memory.write(idx, tags, threads, site)

    def place_of(self, points: np.ndarray) -> np.ndarray:
        """Each point's copy's place in the run."""
        group = self.group
        assert group is not None
        if group.places is None:
            group.places = np.asarray(group.positions, np.int64)
        return group.places[points // self.threads]  # type: ignore[no-any-return]

    def _keep(self, memory: TagMemory) -> _Saved:
        """The memory as it was before the run (saved at its first write, or its first read
        while a loop tracks which bytes are read before being written)."""
        for kept, saved in self.saved:
            if kept is memory:
                return saved
        saved = _save(memory)
        self.saved.append((memory, saved))
        return saved

    def _journal(self, memory: TagMemory) -> _Journal:
        journal = self.journals.get(id(memory))
        if journal is None:
            journal = self.journals[id(memory)] = _Journal(self, memory)
        return journal

    def _access(self, memory: TagMemory, idx: np.ndarray, points: np.ndarray, write: bool) -> None:
        records = self.memories.get(id(memory))
        if records is None:
            records = self.memories[id(memory)] = []
        if write or memory.fresh is not None:
            self._keep(memory)
        records.append((idx, self.place_of(points), self.step, write))

    def in_order(self) -> bool:
        """Whether every shared byte written in the run saw its accesses in program order, and
        every register read saw every write program order puts before it."""
        return all(_in_order(records) for records in self.memories.values()) and \
            all(journal.complete() for journal in self.journals.values())

    def finish(self) -> None:
        """Leave each register byte as its last write in program order left it."""
        for journal in self.journals.values():
            journal.finish()

    def undo(self) -> None:
        """The memories the run wrote (or tracked), as they were before it."""
        for memory, saved in self.saved:
            _restore(memory, saved)


class _Journal:
    """A register memory's accesses in a run. Copies run together out of program order, and a
    register is often reused by every copy (a fragment loaded anew per step of an unrolled
    loop), so each write is kept with its place in the run: a read takes, per byte, the write
    of the latest place before its own, or the byte as it was before the run. A read that ran
    before a write program order puts before it could not see it (`complete`): the run is then
    walked op by op. Writes also go through to the memory, which is left as program order
    leaves it (`finish`)."""

    def __init__(self, footprint: Footprint, memory: TagMemory) -> None:
        self.footprint = footprint
        self.memory = memory
        self.width = memory.tags.shape[1]
        self.writes: list[tuple[np.ndarray, np.ndarray, int, np.ndarray, int]] = []
        """(bytes by thread, place, step, tags, site) per write, flat."""
        self.reads: list[tuple[np.ndarray, np.ndarray, int]] = []
        """(bytes by thread, place, step) per read, flat."""
        self.pending: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
        """Writes not yet made (`write`)."""
        self.place: np.ndarray | None = None
        self.step = np.zeros(0, np.int64)
        self.indexed = 0
        """How many writes `place` and `step` hold (`_places`)."""
        self._rewritten: bool | None = False
        """Whether some byte was written twice (None: not known yet)."""
        self.last = -1
        """The latest place written."""
        self.first: np.ndarray | None = None
        self.firsts = 0
        """How many writes `first` holds (`_first`)."""
        self._sorted: tuple[np.ndarray, ...] | None = None

    def read(self, idx: np.ndarray, threads: np.ndarray, places: np.ndarray, step: int,
             sites: bool) -> tuple[np.ndarray, np.ndarray | None]:
        memory = self.memory
        rows = idx.reshape(threads.size, -1)
        keys = (threads[:, None] * self.width + rows).reshape(-1)
        at = np.repeat(places, rows.shape[1])
        self.reads.append((keys, at, step))
        if memory.fresh is not None:
            self.footprint._keep(memory)
        self._write_through()
        if self._as_it_is(at):
            tags = memory.read(rows, threads)
            return tags.reshape(idx.shape), memory.site.reshape(-1)[keys].reshape(idx.shape) if sites else None
        before = self.footprint._keep(memory)
        new_tags, new_sites, found, seen = self._latest(keys, at)
        if seen.all():
            return new_tags[found].reshape(idx.shape), new_sites[found].reshape(idx.shape) if sites else None
        tags = np.where(seen, new_tags[found], before.tags.reshape(-1)[keys])
        if memory.exposed is not None:  # bytes read before any write since the loop's tracking began
            missed = keys[~seen]
            memory.exposed.reshape(-1)[missed] |= ~before.fresh.reshape(-1)[missed]  # type: ignore[union-attr]
        written_at = np.where(seen, new_sites[found], before.site.reshape(-1)[keys]).reshape(idx.shape) if sites else None
        return tags.reshape(idx.shape), written_at

    def write_status(self, idx: np.ndarray, threads: np.ndarray, places: np.ndarray) -> np.ndarray:
        """Whether bytes `idx` (rows: `threads`, at `places`) were written before those places in
        program order, without counting as a read of their data: by a write of the run at an
        earlier place (which writes only ever make true, so the earliest write of each byte
        tells: site 0 stands for it), or else as before the run (`TagAnalysis.write_status`)."""
        memory = self.memory
        rows = idx.reshape(threads.size, -1)
        keys = (threads[:, None] * self.width + rows).reshape(-1)
        at = np.repeat(places, rows.shape[1])
        self._write_through()
        tracked = memory.exposed is not None and memory.fresh is not None  # (a read, for a loop's tracking)
        if self._as_it_is(at):
            status = memory.site.reshape(-1)[keys]
            if tracked:
                self.footprint._keep(memory)
                open_ = keys[status < 0]  # (bytes not written by a write with a site: their status may move)
                memory.exposed.reshape(-1)[open_] |= ~memory.fresh.reshape(-1)[open_]  # type: ignore[union-attr]
            return status.reshape(idx.shape)  # type: ignore[no-any-return]
        before = self.footprint._keep(memory)
        earlier = self._first()[keys] < at
        status = np.where(earlier, 0, before.site.reshape(-1)[keys])
        if tracked:
            open_ = keys[status < 0]
            memory.exposed.reshape(-1)[open_] |= ~before.fresh.reshape(-1)[open_]  # type: ignore[union-attr]
        return status.reshape(idx.shape)  # type: ignore[no-any-return]

    def _first(self) -> np.ndarray:
        """Per byte (by thread), the place of its earliest write in the run (past the run's last
        place: none)."""
        if self.first is None:
            self.first = np.full(self.memory.tags.size, self.footprint.length, np.int64)
        for keys, at, _, _, _ in self.writes[self.firsts:]:
            np.minimum.at(self.first, keys, at)
        self.firsts = len(self.writes)
        return self.first

    def _as_it_is(self, at: np.ndarray) -> bool:
        """Whether the memory holds what reads at places `at` are to see: nothing was written in
        the run, or each byte once and before them in program order."""
        return not self.writes or (self.last < at.min() and not self.rewritten())

    def _latest(self, keys: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any, np.ndarray]:
        """Per byte (`keys`, read at places `at`), its latest write in the run before the read:
        tags and sites to take at `found`, where `seen` (a byte not seen keeps its tag from before
        the run)."""
        if not self.rewritten():  # a byte's write, if any, is what the memory holds now
            written = self._places()[0][keys]  # type: ignore[index]
            return self.memory.tags.reshape(-1), self.memory.site.reshape(-1), keys, (written >= 0) & (written < at)
        composite, ordered_keys, new_tags, new_sites, _ = self._index()
        found = np.searchsorted(composite, keys * self.footprint.length + at) - 1
        return new_tags, new_sites, found, (found >= 0) & (ordered_keys[np.maximum(found, 0)] == keys)

    def write(self, idx: np.ndarray, tags: np.ndarray, threads: np.ndarray, places: np.ndarray, step: int,
              site: int) -> None:
        """Keep the write, and make it: at once once the memory has been read in the run, else
        when it is first read or the run ends (a memory only written needs no copy to undo)."""
        if self.reads:
            self.footprint._keep(self.memory)
            self.memory.write(idx, tags, threads, site)
        else:
            self.pending.append((idx, tags, threads, site))
        rows = idx.reshape(threads.size, -1)
        keys = (threads[:, None] * self.width + rows).reshape(-1)
        self.writes.append((keys, np.repeat(places, rows.shape[1]), step,
                            np.broadcast_to(tags, rows.shape).reshape(-1), site))
        self.last = max(self.last, int(places.max()))
        self._sorted = None
        if self._rewritten is False:
            self._rewritten = None

    def _write_through(self, undoable: bool = True) -> None:
        """Make the writes kept for later (`undoable`: keep the memory as it was, first)."""
        if self.pending:
            if undoable:
                self.footprint._keep(self.memory)
            for idx, tags, threads, site in self.pending:
                self.memory.write(idx, tags, threads, site)
            self.pending.clear()

    def rewritten(self) -> bool:
        """Whether some byte was written twice in the run (reads then search the writes by byte
        and place)."""
        if self._rewritten is None:
            if len(self.writes) == 1:  # one op's copies: whether two of them wrote one byte
                self._rewritten = bool(np.bincount(self.writes[0][0]).max() > 1)
            else:
                self._rewritten = self._places() is None
        return self._rewritten

    def _places(self) -> tuple[np.ndarray, np.ndarray] | None:
        """Per byte (by thread), the place of its write in the run (-1: none) and the write's
        step, if no byte was written twice."""
        if self.place is None:
            self.place = np.full(self.memory.tags.size, -1, np.int64)
            self.step = np.zeros(self.memory.tags.size, np.int64)
        for keys, at, step, _, _ in self.writes[self.indexed:]:
            if (self.place[keys] >= 0).any():
                return None
            self.place[keys] = at
            self.step[keys] = step
            if not (self.place[keys] == at).all():  # two copies of the op wrote one byte
                return None
        self.indexed = len(self.writes)
        return self.place, self.step

    def _index(self) -> tuple[np.ndarray, ...]:
        """The writes by byte, then place: (byte·places + place, byte, tags, site, step)."""
        if self._sorted is None:
            keys = np.concatenate([w[0] for w in self.writes])
            at = np.concatenate([w[1] for w in self.writes])
            composite = keys * self.footprint.length + at
            order = np.argsort(composite, kind="stable")
            tags = np.concatenate([w[3] for w in self.writes])
            sites = np.concatenate([np.full(w[0].size, w[4], np.int64) for w in self.writes])
            steps = np.concatenate([np.full(w[0].size, w[2], np.int64) for w in self.writes])
            self._sorted = (composite[order], keys[order], tags[order], sites[order], steps[order])
        return self._sorted

    def complete(self) -> bool:
        """Whether every read ran after every write program order puts before it (a rule reads
        before it writes: a write of the same step ran after)."""
        if not self.reads or not self.writes:
            return True
        if max(w[2] for w in self.writes) < min(r[2] for r in self.reads):
            return True  # every write ran before every read
        if not self.rewritten():
            place, steps = self._places()  # type: ignore[misc]
            return not any(((place[keys] >= 0) & (place[keys] < at) & (steps[keys] >= step)).any()
                           for keys, at, step in self.reads)
        composite, keys, _, _, steps = self._index()
        span = int(steps.max()) + 1
        latest = np.maximum.accumulate(keys * span + steps) - keys * span  # per byte, the latest step so far
        for read_keys, read_at, read_step in self.reads:
            wanted = read_keys * self.footprint.length + read_at
            found = np.maximum(np.searchsorted(composite, wanted) - 1, 0)
            if ((keys[found] == read_keys) & (composite[found] < wanted) & (latest[found] >= read_step)).any():
                return False
        return True

    def finish(self) -> None:
        """Each byte written more than once gets its last write in program order (the writes
        went through in the order the groups ran)."""
        self._write_through(undoable=False)  # (the run stands)
        if not self.writes or (len(self.writes) == 1 and self.writes[0][1][0] == self.writes[0][1][-1]):
            return  # (one copy of one op)
        if not self.rewritten():
            return
        memory = self.memory
        if self._sorted is not None:  # (reads sorted the writes already)
            _, keys, tags, sites, _ = self._sorted
            last = np.ones(keys.size, bool)
            last[:-1] = keys[1:] != keys[:-1]
            keys = keys[last]
            memory.tags.reshape(-1)[keys] = tags[last]
            memory.site.reshape(-1)[keys] = sites[last]
            return
        latest = np.full(memory.tags.size, -1, np.int64)  # per byte, the place of its last write
        np.maximum.at(latest, np.concatenate([w[0] for w in self.writes]), np.concatenate([w[1] for w in self.writes]))
        for keys, at, _, tags, site in self.writes:
            last = at == latest[keys]
            keys = keys[last]
            memory.tags.reshape(-1)[keys] = tags[last]
            memory.site.reshape(-1)[keys] = site


def _in_order(records: list[tuple[np.ndarray, np.ndarray, int, bool]]) -> bool:
    """Whether one memory's accesses kept program order on every byte written."""
    writes = [r for r in records if r[3]]
    if not writes:
        return True
    if len(records) == 1:  # one op's writes: in order unless two copies write one byte
        where, origin, _, _ = records[0]
        if origin[0] == origin[-1]:
            return True
        flat = where.reshape(-1)
        seen = np.zeros(int(flat.max()) + 1, bool)
        seen[flat] = True
        return int(np.count_nonzero(seen)) == flat.size
    keys = np.concatenate([r[0].reshape(-1) for r in records])
    origin = np.concatenate([np.broadcast_to(r[1][:, None], r[0].shape).reshape(-1) for r in records])
    step = np.concatenate([np.full(r[0].size, r[2]) for r in records])
    write = np.concatenate([np.full(r[0].size, r[3]) for r in records])
    written = np.isin(keys, np.concatenate([r[0].reshape(-1) for r in writes]))
    keys, origin, step, write = keys[written], origin[written], step[written], write[written]
    order = np.lexsort((origin, keys))
    keys, origin, step, write = keys[order], origin[order], step[order], write[order]
    same = (keys[1:] == keys[:-1]) & (origin[1:] != origin[:-1])
    later_first = step[1:] < step[:-1]
    together = (step[1:] == step[:-1]) & (write[1:] | write[:-1])  # two copies' writes of one byte in one op
    return not (same & (later_first | together)).any()


class _Saved(NamedTuple):
    """A memory as it was before a run (`Footprint.undo` puts it back)."""

    tags: np.ndarray
    site: np.ndarray
    epoch_writer: np.ndarray
    conflicts: int
    fresh: np.ndarray | None
    exposed: np.ndarray | None


def _save(memory: TagMemory) -> _Saved:
    # registers never race: their writers since the last barrier stay none, and need no copy
    writers = memory.epoch_writer if memory.per_thread else memory.epoch_writer.copy()
    return _Saved(memory.tags.copy(), memory.site.copy(), writers, len(memory.conflicts),
                  None if memory.fresh is None else memory.fresh.copy(),
                  None if memory.exposed is None else memory.exposed.copy())


def _restore(memory: TagMemory, saved: _Saved) -> None:
    memory.tags, memory.site, memory.epoch_writer = saved.tags, saved.site, saved.epoch_writer
    memory.fresh, memory.exposed = saved.fresh, saved.exposed
    del memory.conflicts[saved.conflicts:]


def execute(a: TagAnalysis, run: Run, mask: np.ndarray, rule_of: Callable[[Operation], Any],
            again: Callable[[], None] | None = None) -> None:
    """Run `run` group by group; walk it again op by op (or by `again`) if that changed any
    byte's order of accesses, reported anything, or failed."""
    footprint = Footprint(run.places or len(run.ops))
    footprint.alone = len(run.groups) == 1 and any(gather.tags_only for gather in run.groups[0].gathers)
    mark = a.obligations.mark()
    compared = a.obligations.compared
    faults = len(a.faults)
    a.footprint = footprint
    n = a.n
    results: list[list[tuple[Any, Any]]] = []
    try:
        for step, group in enumerate(run.groups):
            footprint.step = step
            if len(group.ops) == 1:
                footprint.group, footprint.threads = group, n
                rule_of(group.ops[0])(a, group.ops[0], mask)
                results.append([])
            else:
                results.append(_run_group(a, group, mask, rule_of, results))
        # findings come from the plain walk; comparisons left to decide are kept (their
        # witnesses are described per point, as the plain walk would)
        fine = footprint.in_order() and len(a.obligations.candidates) == mark[0] and len(a.faults) == faults
    except Exception:
        fine = False
    finally:
        a.footprint = None
    if fine:
        footprint.finish()
        return
    run.walked_again += 1
    footprint.undo()
    a.obligations.rollback(mark)
    a.obligations.compared = compared
    del a.faults[faults:]
    if again is not None:
        again()
        return
    for op in run.ops:
        rule_of(op)(a, op, mask)


def _run_group(a: TagAnalysis, group: Group, mask: np.ndarray, rule_of: Callable[[Operation], Any],
               earlier: list[list[tuple[Any, Any]]]) -> list[tuple[Any, Any]]:
    """Run a group's first op over every copy's points; its results over all copies."""
    ops = group.ops
    copies, n = len(ops), a.n
    values, tags = a.values, a.tags
    gathered = [_gather(a, gather, copies, earlier) for gather in group.gathers]
    if group.arithmetic is not None and all(type(x) is Affine and not x.terms and t is None for x, t in gathered):
        out = [(Affine(group.arithmetic(*(x.const for x, _ in gathered))), None)]
    else:
        out = _run_rule(a, group, mask, rule_of, gathered)
    for r, (value, t) in enumerate(out):
        if not group.scatter[r]:
            continue
        for c, op in enumerate(ops):
            part = slice(c * n, (c + 1) * n)
            result = op.results[r]
            values[result] = value.tiles[c] if isinstance(value, TileCopies) else _part(value, part)
            if t is None:
                tags.pop(result, None)
            else:
                tags[result] = t[part]
    return out


def _run_rule(a: TagAnalysis, group: Group, mask: np.ndarray, rule_of: Callable[[Operation], Any],
              gathered: list[tuple[Any, np.ndarray | None]]) -> list[tuple[Any, Any]]:
    """The group's first op's rule over every copy's points, its operands stand-ins holding what
    was gathered; its results over all copies."""
    first, copies, n = group.ops[0], len(group.ops), a.n
    results = tuple(first.results)
    values, tags = a.values, a.tags
    for stand_in, (value, t) in zip(group.operands, gathered):
        values[stand_in] = value
        if t is not None:
            tags[stand_in] = t
    a.shapes_of[first] = (group.operands, results)  # the rule reads the stand-ins
    a.op_parts.pop(first, None)
    a.footprint.group, a.footprint.threads = group, n  # type: ignore[union-attr]
    points = _points(a, copies)
    saved = a.points()
    full = mask is a.everyone
    a.set_points(points)
    try:
        (group.rule or rule_of(first))(a, first, points[2] if full else np.tile(mask, copies))
        out = [(values.get(r), tags.get(r)) for r in results]
    finally:
        a.set_points(saved)
        del a.shapes_of[first]
        a.op_parts.pop(first, None)
        for stand_in in group.operands:
            values.pop(stand_in, None)
            tags.pop(stand_in, None)
    return out


def _points(a: TagAnalysis, copies: int) -> tuple[Any, ...]:
    """The analysis's point arrays over `copies` × its threads (point p is thread p mod n): the
    count, the ids, the everyone mask, each point's thread, the zero tags by width."""
    found = a.copy_points.get(copies)
    if found is None:
        count = a.n * copies
        found = a.copy_points[copies] = (count, np.arange(count), np.ones(count, bool),
                                     np.concatenate([a.thread_ids] * copies), {})
    return found


def _gather(a: TagAnalysis, gather: Gather, copies: int, earlier: list[list[tuple[Any, Any]]]
            ) -> tuple[Any, np.ndarray | None]:
    """An operand's value and tags over every copy's points."""
    tiled = a.tiled_values
    if gather.shared is not None:  # one value for every copy
        tags = a.tags.get(gather.shared)
        value = None if gather.tags_only else _tile(a.values.get(gather.shared), copies, tiled)
        return value, None if tags is None else _tile(tags, copies, tiled)
    sources = gather.sources
    if gather.fixed is not None:  # known values: no tags
        return None if gather.tags_only else gather.fixed, None
    if gather.in_order and len(sources) == 1 and type(sources[0]) is tuple:
        return earlier[sources[0][0]][sources[0][1]]  # an earlier group's results, copy for copy
    n = a.n
    values, tags, sizes = [], [], []
    for source in sources:
        if type(source) is not tuple:  # an SSA value
            values.append(a.values.get(source))
            tags.append(a.tags.get(source))
            sizes.append(n)
        else:
            value, t = earlier[source[0]][source[1]]
            values.append(value)
            tags.append(t)
            sizes.append(source[2] * n)
    index = gather.index(n)
    if gather.tags_only:
        value = None
    elif all(type(x) is Affine and not x.terms for x in values):  # numbers only: one array to gather
        const = values[0].const if len(values) == 1 else np.concatenate([x.const for x in values])
        value = Affine(const if index is None else const[index])
    elif all(isinstance(x, Affine) for x in values):
        value = values[0] if len(values) == 1 else _concatenate(values)
        if index is not None:
            value = _without_zero_terms(value.take(index))
    elif all(x is values[0] for x in values) and not isinstance(values[0], TileCopies):
        value = values[0]
    else:
        value = _tiles(values, sizes, n, gather.rows)
    if all(t is None for t in tags):
        return value, None
    width = next(t for t in tags if t is not None).shape[1]
    both = np.concatenate([np.zeros((size, width), np.int64) if t is None else t for size, t in zip(sizes, tags)]) \
        if len(tags) > 1 else tags[0]
    return value, both if index is None else both[index]


def _tiles(values: list[Any], sizes: list[int], n: int, rows: tuple[int, ...]) -> Any:
    """Each copy's tile, from its sources' tiles (`sizes`: their points): one tile if all are
    the same, else a `TileCopies`."""
    from .state import GlobalRef  # (the state module imports this one)

    listed: list[Any] = []
    for value, size in zip(values, sizes):
        if isinstance(value, TileCopies):
            listed.extend(value.tiles)
        elif value is None or isinstance(value, (Affine, GlobalRef)):
            raise NotUniform()
        else:
            listed.extend([value] * (size // n))
    tiles = tuple(listed[r] for r in rows)
    return tiles[0] if all(tile is tiles[0] for tile in tiles) else TileCopies(tiles)


def _concatenate(values: list[Affine]) -> Affine:
    atoms = {t for x in values for t in x.terms}
    return Affine(np.concatenate([x.const for x in values]),
                  {t: np.concatenate([x.terms[t] if t in x.terms else np.zeros(len(x), np.int64) for x in values])
                   for t in atoms})


def _part(value: Any, part: slice) -> Any:
    """Some copies' share of a value over all copies."""
    return _without_zero_terms(Affine(value.const[part], {t: x[part] for t, x in value.terms.items()})) \
        if isinstance(value, Affine) else value


def _without_zero_terms(value: Affine) -> Affine:
    """The value without the symbols none of its points depends on (a form's terms are nonzero
    somewhere: a symbol with zero coefficients everywhere would make a number look symbolic)."""
    if all(x.any() for x in value.terms.values()):
        return value
    return Affine(value.const, {t: x for t, x in value.terms.items() if x.any()})


def _tile(value: Any, copies: int, tiled: dict[Any, Any]) -> Any:
    """A value (or tags) every copy reads, over every copy's points."""
    if copies == 1 or value is None or type(value) is TileValue:
        return value  # (a tile's per-thread parts are read per thread)
    known = tiled.get((id(value), copies))
    if known is not None and known[0] is value:
        return known[1]
    # (copies stacked by np.concatenate, which runs in C: np.tile is Python)
    if isinstance(value, np.ndarray):
        out: Any = np.concatenate([value] * copies) if value.ndim == 2 else np.tile(value, (copies, 1))
    elif type(value) is Uniform:  # one form at every point stays one (made into arrays only if read so)
        out = Uniform(value.key, len(value) * copies)
    elif isinstance(value, Affine):
        out = Affine(np.concatenate([value.const] * copies),
                     {t: np.concatenate([c] * copies) for t, c in value.terms.items()})
    else:
        from .state import GlobalRef  # (the state module imports this one)

        if not isinstance(value, GlobalRef):
            return value
        out = GlobalRef(value.name, value.dtype, [_tile(d, copies, tiled) for d in value.dims],
                        None if value.root is None else _tile(value.root, copies, tiled))
    tiled[(id(value), copies)] = (value, out)
    return out


class NotUniform(Exception):
    """Copies of one op read different memories or tensors: the run is walked op by op."""
