"""The plan of a block's runs of copies: which ops run together, in what order, reading what.

A ``static_range`` body unrolls into copies of its statements: ops of one source location and
kind that differ in their constants (and in what common-subexpression elimination let them
share). The analysis enumerates threads, so each copy of an op costs a full rule over every
thread; a flash-attention check used to run its 96 global loads one after the other.

Here a straight run of arithmetic and memory ops is cut into *groups* — ops of one source
location, kind and types — and each group runs as one op over ``points = copies × threads``
(point ``c·n + t`` is thread t of copy c): its operands are gathered from the copies' values
(one `take` from their sources' concatenation, planned once: `Gather`), its results kept over
all copies for the groups that read them and set for each copy only where something else reads
them. Groups run in an order that keeps every value computed before its use; copies that depend
on each other (an index accumulated over the loop: a cycle between groups) run op by op. A read
of a tile waits for the writes of that tile before it in program order. The plan of each block
is made once per compiled kernel (`preparation.Preparation`), which answers what the plan asks
of each op (`Planner`); `batching` runs it, `rolled_loops` makes the run of a static loop kept rolled.
"""

from __future__ import annotations


import heapq
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

import numpy as np
from argus.verify.affine import Affine, runs
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Operation, SSAValue

from .op_table import OpTable


@dataclass
class Group:
    """Ops run as one: copies of one statement, in program order."""

    ops: list[Operation]
    positions: list[int]
    """Each op's place in its run (program order)."""
    operands: tuple[StandIn, ...] = ()
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


class StandIn:
    """An operand gathered over copies; it stands for an SSA value (rules read its type, whether
    every copy's is a float zero: `float_zero`, and whether some copy's is a float constant that
    is no number or infinite: `float_nonfinite`)."""

    __slots__ = ("type", "zero", "nonfinite")

    def __init__(self, type: Any, zero: bool = False, nonfinite: bool = False) -> None:
        self.type = type
        self.zero = zero
        self.nonfinite = nonfinite

    @classmethod
    def of(cls, type: Any, values: Any) -> StandIn:
        """The stand-in for `values`, one SSA value per copy."""
        values = list(values)
        return cls(type, all(map(float_zero, values)), any(map(float_nonfinite, values)))


def float_zero(value: Any) -> bool:
    """Whether `value` is the float constant zero (a stored one clears an accumulator)."""
    if isinstance(value, StandIn):
        return value.zero
    owner = getattr(value, "owner", None)
    attr = getattr(owner, "value", None) if isinstance(owner, arith.ConstantOp) else None
    return isinstance(attr, FloatAttr) and attr.value.data == 0.0


def float_nonfinite(value: Any) -> bool:
    """Whether `value` is a float constant that is NaN or infinite: a product scaled by it (or
    divided by an infinity) is no number, or zero, rather than the product."""
    if isinstance(value, StandIn):
        return value.nonfinite
    owner = getattr(value, "owner", None)
    attr = getattr(owner, "value", None) if isinstance(owner, arith.ConstantOp) else None
    return isinstance(attr, FloatAttr) and not math.isfinite(attr.value.data)


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
            group.operands = tuple(StandIn.of(v[0].type, v) for v in values)
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
        ranked = topological(edges, [members[0] for members in groups])
        if len(ranked) == len(groups):
            return [groups[g] for g in ranked]
        cyclic = _on_cycles(edges)  # what is left waits on a cycle: its groups run op by op
        groups = [piece for g, members in enumerate(groups)
                  for piece in ([[i] for i in members] if g in cyclic else [members])]


def topological(edges: list[set[int]], first: list[int]) -> list[int]:
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
