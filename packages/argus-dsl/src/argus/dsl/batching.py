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

Reordering can change what memory holds, so every tile access of a run is recorded; when two
accesses to one byte, one of them a write, ran in another order than the program's, the run
is undone and walked again op by op. So is a run in which anything was reported (a fault, a
race) or a rule failed: findings come from the plain walk, whose witnesses name one thread and
one copy. The plan of each block is made once per compiled kernel (`analysis.Preparation`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Affine
from argus.verify.memory import TagMemory
from xdsl.ir import Operation, SSAValue

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
    origins: dict[int, np.ndarray] = field(default_factory=dict)
    """Per thread count, each point's copy's place in the run."""


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
    indices: dict[int, np.ndarray] = field(default_factory=dict)
    """Per thread count, the points to take from the concatenation."""

    def index(self, n: int) -> np.ndarray | None:
        """The points to take from the concatenation (None: all of them, in order)."""
        if self.in_order:
            return None
        found = self.indices.get(n)
        if found is None:
            found = self.indices[n] = (np.asarray(self.rows, np.int64)[:, None] * n + np.arange(n)).reshape(-1)
        return found


class _Operand:
    """An operand gathered over copies; it stands for an SSA value (rules read its type)."""

    __slots__ = ("type",)

    def __init__(self, type: Any) -> None:
        self.type = type


@dataclass
class Run:
    """A straight run of ops and the order its groups run in."""

    ops: list[Operation]
    groups: list[Group]
    walked_again: int = 0
    """How often the run was undone and walked op by op (what a check of a kernel that keeps
    its copies apart costs; the tests hold the examples to none)."""


def plan(table: OpTable, numbers: list[int], runnable: Callable[[int], bool], batchable: Callable[[int], bool],
         location: Callable[[Operation], Any]) -> list[Operation | Run]:
    """A block's ops (their `numbers` in `table`), with each straight run of `runnable` ops that
    has copies to run together replaced by its `Run`. `batchable` ops with one `location` (a
    source position: file, line, column) may run as one group."""
    out: list[Operation | Run] = []
    current: list[int] = []

    def flush() -> None:
        run = _plan_run(table, current, batchable, location) if len(current) > 1 else None
        out.extend([table.ops[j] for j in current] if run is None else [run])
        current.clear()

    for j in numbers:
        if runnable(j):
            current.append(j)
        else:
            flush()
            out.append(table.ops[j])
    flush()
    return out


@dataclass
class Products:
    """Matrix products in a row, with only views and assertions between them: their operands
    are read together (`analysis._products`). Neither reads what a product writes unless it
    reads an accumulator; reading every product's operands before any product writes its
    accumulator changes nothing when no product reads another's (checked as they run)."""

    ops: list[Operation]


def products(steps: list[Any], product: Callable[[Any], bool], between: Callable[[Any], bool]) -> list[Any]:
    """`steps` with each row of two or more `product` ops, and the ops that may stand `between`
    them, as one `Products` step (those after the row's last product stay steps of their own)."""
    out: list[Any] = []
    row: list[Any] = []
    count = 0

    def flush() -> None:
        nonlocal count
        last = max((i for i, step in enumerate(row) if product(step)), default=-1)
        if count > 1:
            out.append(Products(row[:last + 1]))
            out.extend(row[last + 1:])
        else:
            out.extend(row)
        row.clear()
        count = 0

    for step in steps:
        if product(step):
            row.append(step)
            count += 1
        elif between(step) and row:
            row.append(step)
        else:
            flush()
            (row if between(step) else out).append(step)
    flush()
    return out


def _plan_run(table: OpTable, numbers: list[int], batchable: Callable[[int], bool],
              location: Callable[[Operation], Any]) -> Run | None:
    ops = [table.ops[j] for j in numbers]
    kinds = [(where.line, where.col, where.file, table.kinds[j])  # (a location object hashes slowly)
             if batchable(j) and (where := location(op)) is not None else None for j, op in zip(numbers, ops)]
    named = [k for k in kinds if k is not None]
    if len(set(named)) == len(named):  # every op is alone in its kind
        return None
    place = {j: i for i, j in enumerate(numbers)}
    operands = [table.operands[j] for j in numbers]
    maker = table.maker
    sources = [[p for v in vs if (m := maker.get(v)) is not None and (p := place.get(m)) is not None]
               for vs in operands]
    by_key: dict[Any, list[int]] = {}
    members: list[list[int]] = []
    levels = [0] * len(ops)
    for i, kind in enumerate(kinds):
        if kind is None:
            members.append([i])
            continue
        # one source location may hold several ops of a kind (``a + b + c``): they are told
        # apart by how many of them feed each other
        level = levels[i] = max((levels[j] + 1 for j in sources[i] if kinds[j] == kind), default=0)
        found = by_key.get((kind, level))
        if found is None:
            found = by_key[(kind, level)] = []
            members.append(found)
        found.append(i)
    if all(len(m) == 1 for m in members):
        return None
    members = [piece for m in members for piece in _alike(ops, m)]
    groups = []
    produced: dict[int, tuple[tuple[int, int], tuple[int, int, int], int]] = {}
    """A result (by identity) of a copy of a group: ((group, result), (group, result, the group's
    copies), which copy) — the pairs shared by the group's copies."""
    gathered: dict[int, int] = {}
    """Per result of a group's copy, how many operands of later groups take it from there."""
    for m in _schedule(sources, members):
        group = Group([ops[i] for i in m], m)
        if len(m) > 1:
            columns = list(zip(*(operands[i] for i in m)))
            values = list(zip(*(table.operand_values[numbers[i]] for i in m)))
            group.gathers = [_gather_plan(column, produced, v, gathered) for column, v in zip(columns, values)]
            group.operands = tuple(_Operand(v[0].type) for v in values)
            g = len(groups)
            results = [table.results[numbers[i]] for i in m]
            for r in range(len(results[0])):
                key, source = (g, r), (g, r, len(m))
                for c, result in enumerate(results):
                    produced[result[r]] = (key, source, c)
        groups.append(group)
    if all(len(g.ops) == 1 for g in groups):
        return None
    uses = table.uses
    for group in groups:  # copies' own values are set for results read by anything but a later group
        if len(group.ops) > 1:
            results = [table.results[numbers[i]] for i in group.positions]
            group.scatter = [any(uses.get(result[k], 0) > gathered.get(result[k], 0) for result in results)
                             for k in range(len(results[0]))]
    return Run(list(ops), groups)


def _signature(op: Operation) -> tuple[Any, ...]:
    """What copies of one op must share besides their kind: their results' types and their
    properties (an operand's type follows from the op that makes it, and a tile or tensor
    operand's memory is compared when the copies run)."""
    return tuple(r.type for r in op.results), op.properties, op.attributes


def _alike(ops: list[Operation], positions: list[int]) -> list[list[int]]:
    """Ops of one location and kind, split where their types or properties differ (a helper
    function's lines, called on tiles of different types; extracts of different bytes)."""
    if len(positions) == 1:
        return [positions]
    first = _signature(ops[positions[0]])
    if all(_signature(ops[i]) == first for i in positions[1:]):
        return [positions]
    parts: list[tuple[tuple[Any, ...], list[int]]] = []
    for i in positions:
        signature = _signature(ops[i])
        for known, part in parts:
            if known == signature:
                part.append(i)
                break
        else:
            parts.append((signature, [i]))
    return [part for _, part in parts]


def _gather_plan(column: tuple[int, ...], produced: dict[int, tuple[tuple[int, int], tuple[int, int, int], int]],
                 values: tuple[SSAValue, ...], gathered: dict[int, int]) -> Gather:
    """Where the `values` of an operand's copies (`column`: their identities) come from, counting
    in `gathered` the results of groups' copies taken. `produced`: for a result of a group's
    copy, ((group, result), (group, result, copies of the group), which copy)."""
    first = column[0]
    if first not in produced and column.count(first) == len(column):
        return Gather(values[0])
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
        gathered[v] = gathered.get(v, 0) + 1
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
        group_of = {i: g for g, members in enumerate(groups) for i in members}
        edges: list[set[int]] = [set() for _ in groups]
        for g, members in enumerate(groups):
            for i in members:
                for j in sources[i]:
                    edges[group_of[j]].add(g)
        needs = [0] * len(groups)
        for targets in edges:
            for g in targets:
                needs[g] += 1
        ready = [(groups[g][0], g) for g in range(len(groups)) if needs[g] == 0]
        heapq.heapify(ready)
        order = []
        while ready:
            _, g = heapq.heappop(ready)
            order.append(groups[g])
            for h in edges[g]:
                needs[h] -= 1
                if needs[h] == 0:
                    heapq.heappush(ready, (groups[h][0], h))
        if len(order) == len(groups):
            return order
        cyclic = _on_cycles(edges)  # what is left waits on a cycle: its groups run op by op
        groups = [piece for g, members in enumerate(groups)
                  for piece in ([[i] for i in members] if g in cyclic else [members])]


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
    """The tile accesses of a run, to tell whether running it in groups kept every byte's
    accesses in program order; and the memories as they were, to undo the run if not."""

    def __init__(self) -> None:
        self.step = 0
        self.origin: np.ndarray = np.zeros(0, np.int64)
        """Per point of the op running: the place in the run of the copy it belongs to."""
        self.memories: dict[int, list[tuple[np.ndarray, np.ndarray, int, bool]]] = {}
        """Per memory, its accesses: (bytes per point, each point's copy's place, step, write)."""
        self.saved: list[tuple[TagMemory, tuple[Any, ...]]] = []

    def access(self, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray, write: bool) -> None:
        """Record an access (before it happens: a memory is saved on its first write)."""
        records = self.memories.get(id(memory))
        if records is None:
            records = self.memories[id(memory)] = []
        if (write or memory.fresh is not None) and not any(m is memory for m, _ in self.saved):
            self.saved.append((memory, _save(memory)))
        where = threads[:, None] * memory.tags.shape[-1] + idx if memory.per_thread else idx
        origin = self.origin[points]
        records.append((where, origin, self.step, write))

    def in_order(self) -> bool:
        """Whether every byte written in the run saw its accesses in program order."""
        return all(_in_order(records) for records in self.memories.values())

    def undo(self) -> None:
        """The memories the run wrote (or tracked), as they were before it."""
        for memory, saved in self.saved:
            _restore(memory, saved)


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


def _save(memory: TagMemory) -> tuple[Any, ...]:
    return (memory.tags.copy(), memory.site.copy(), memory.writer.copy(), memory.epoch_writer.copy(),
            len(memory.conflicts), None if memory.fresh is None else memory.fresh.copy(),
            None if memory.exposed is None else memory.exposed.copy())


def _restore(memory: TagMemory, saved: tuple[Any, ...]) -> None:
    memory.tags, memory.site, memory.writer, memory.epoch_writer, conflicts, memory.fresh, memory.exposed = saved
    del memory.conflicts[conflicts:]


def execute(a: TagAnalysis, run: Run, mask: np.ndarray, rule_of: Callable[[Operation], Any]) -> None:
    """Run `run` group by group; walk it again op by op if that changed any byte's order of
    accesses, reported anything, or failed."""
    footprint = Footprint()
    mark = a.obligations.mark()
    faults = len(a._faults)
    a.footprint = footprint
    n = a.n
    results: list[list[tuple[Any, Any]]] = []
    try:
        for step, group in enumerate(run.groups):
            footprint.step = step
            if len(group.ops) == 1:
                footprint.origin = _origin(group, n)
                rule_of(group.ops[0])(a, group.ops[0], mask)
                results.append([])
            else:
                results.append(_run_group(a, group, mask, rule_of, results))
        fine = footprint.in_order() and a.obligations.mark() == mark and len(a._faults) == faults
    except Exception:
        fine = False
    finally:
        a.footprint = None
    if fine:
        return
    run.walked_again += 1
    footprint.undo()
    a.obligations.rollback(mark)
    del a._faults[faults:]
    for op in run.ops:
        rule_of(op)(a, op, mask)


def _run_group(a: TagAnalysis, group: Group, mask: np.ndarray, rule_of: Callable[[Operation], Any],
               earlier: list[list[tuple[Any, Any]]]) -> list[tuple[Any, Any]]:
    """Run a group's first op over every copy's points; its results over all copies."""
    ops = group.ops
    copies, n = len(ops), a.n
    first = ops[0]
    results = tuple(first.results)
    values, tags = a.values, a.tags
    for stand_in, gather in zip(group.operands, group.gathers):
        value, t = _gather(a, gather, copies, earlier)
        values[stand_in] = value
        if t is not None:
            tags[stand_in] = t
    a._shapes_of[first] = (group.operands, results)  # the rule reads the stand-ins
    a._ops.pop(first, None)
    a.footprint.origin = _origin(group, n)  # type: ignore[union-attr]
    points = _points(a, copies)
    saved = (a.n, a.tid, a.everyone, a.thread_ids, a._zeros)
    full = mask is a.everyone
    a.n, a.tid, a.everyone, a.thread_ids, a._zeros = points
    try:
        rule_of(first)(a, first, points[2] if full else np.tile(mask, copies))
        out = [(values.get(r), tags.get(r)) for r in results]
    finally:
        a.n, a.tid, a.everyone, a.thread_ids, a._zeros = saved
        del a._shapes_of[first]
        a._ops.pop(first, None)
        for stand_in in group.operands:
            values.pop(stand_in, None)
            tags.pop(stand_in, None)
    for r, (value, t) in enumerate(out):
        if not group.scatter[r]:
            continue
        for c, op in enumerate(ops):
            part = slice(c * n, (c + 1) * n)
            result = op.results[r]
            values[result] = _part(value, part)
            if t is None:
                tags.pop(result, None)
            else:
                tags[result] = t[part]
    return out


def _origin(group: Group, n: int) -> np.ndarray:
    """Each point's copy's place in the run, for `n` threads."""
    found = group.origins.get(n)
    if found is None:
        found = group.origins[n] = np.repeat(np.asarray(group.positions, np.int64), n)
    return found


def _points(a: TagAnalysis, copies: int) -> tuple[Any, ...]:
    """The analysis's point arrays over `copies` × its threads (point p is thread p mod n): the
    count, the ids, the everyone mask, each point's thread, the zero tags by width."""
    found = a._points.get(copies)
    if found is None:
        count = a.n * copies
        found = a._points[copies] = (count, np.arange(count), np.ones(count, bool), np.tile(a.thread_ids, copies), {})
    return found


def _gather(a: TagAnalysis, gather: Gather, copies: int, earlier: list[list[tuple[Any, Any]]]
            ) -> tuple[Any, np.ndarray | None]:
    """An operand's value and tags over every copy's points."""
    tiled = a._tiled
    if gather.shared is not None:  # one value for every copy
        tags = a.tags.get(gather.shared)
        return _tile(a.values.get(gather.shared), copies, tiled), None if tags is None else _tile(tags, copies, tiled)
    sources = gather.sources
    if gather.in_order and len(sources) == 1 and not isinstance(sources[0], SSAValue):
        return earlier[sources[0][0]][sources[0][1]]  # an earlier group's results, copy for copy
    n = a.n
    values, tags, sizes = [], [], []
    for source in sources:
        if isinstance(source, SSAValue):
            values.append(a.values.get(source))
            tags.append(a.tags.get(source))
            sizes.append(n)
        else:
            value, t = earlier[source[0]][source[1]]
            values.append(value)
            tags.append(t)
            sizes.append(source[2] * n)
    index = gather.index(n)
    if all(isinstance(x, Affine) for x in values):
        value = values[0] if len(values) == 1 else _concatenate(values)
        if index is not None:
            value = _without_zero_terms(value.take(index))
    elif all(x is values[0] for x in values):
        value = values[0]
    else:
        raise _NotUniform()
    if all(t is None for t in tags):
        return value, None
    width = next(t for t in tags if t is not None).shape[1]
    both = np.concatenate([np.zeros((size, width), np.int64) if t is None else t for size, t in zip(sizes, tags)]) \
        if len(tags) > 1 else tags[0]
    return value, both if index is None else both[index]


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
    if copies == 1 or value is None:
        return value
    known = tiled.get((id(value), copies))
    if known is not None and known[0] is value:
        return known[1]
    if isinstance(value, np.ndarray):
        out: Any = np.tile(value, (copies, 1))
    elif isinstance(value, Affine):
        out = Affine(np.tile(value.const, copies), {t: np.tile(c, copies) for t, c in value.terms.items()})
    else:
        from .analysis import GlobalRef  # the analysis imports this module

        if not isinstance(value, GlobalRef):
            return value  # tiles (their per-thread parts are read per thread)
        out = GlobalRef(value.name, value.dtype, [_tile(d, copies, tiled) for d in value.dims],
                        None if value.root is None else _tile(value.root, copies, tiled))
    tiled[(id(value), copies)] = (value, out)
    return out


class _NotUniform(Exception):
    """Copies of one op read different memories or tensors: the run is walked op by op."""
