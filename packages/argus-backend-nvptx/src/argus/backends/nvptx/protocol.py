"""The timing of memory-barrier pipelines, proved for every launch.

A warp-specialized kernel hands shared stages between a producer (bulk tensor copies that land
on a "full" barrier) and consumers (reads, or asynchronous products, released on an "empty"
barrier). The static walk records each barrier event, bulk copy and shared read with its place:
its op and the static iterations around it, the runtime loop around it and the symbol of that
loop's index, the threads that run it and the branches it runs under. Once the walk is done,
`Recorder.prove` states the protocol's obligations over the loops' trip numbers and lets the
solver decide each for every launch.

The model counts. A barrier initialized for N arrivals completes a phase each time its arriving
threads (one set of N, each arriving once per phase) have all arrived again and the bytes their
arrivals announced have landed; so the phase an arrival completes is the number of earlier
arrivals of its threads on that barrier. A thread's k-th wait on a barrier is taken to wait for
phase k + o (o is 0, or -1 where the first wait passes at once on a fresh barrier, parity 1). Then:

- **parity** — each wait's parity is that phase's parity;
- **not two phases ahead** — the phase after the awaited one cannot complete before the wait:
  the wait comes before an arrival of its threads on some barrier that the threads completing
  that next phase wait for first (one hop);
- **no arrival too early** — an arrival for phase p comes after phase p - 1 completed (its
  threads waited for it, or waited on a barrier that threads waiting for it arrive on);
- **initialized first** — threads other than the one that initialized a barrier use it only
  after a syncthreads() that follows the initialization;
- **bytes** — the copies a thread issues after announcing bytes on a barrier, up to its next
  arrival there, bring exactly the bytes announced, and it makes no wait in between (the phase
  completes where its last copy is issued, not at the arrival);
- **block barriers** — each syncthreads() is met by every thread once (none under a branch or
  in a loop), and no wait before one waits for a phase that an arrival or copy after it completes;
- **read after the copy** — a read of a stage waits, on the barrier its copies land on, for a
  phase no earlier than the first copy's;
- **write after the read** — a copy into bytes a thread read (for an asynchronous product: until
  the `matmul_wait` that retires it) of a phase later than the one that read awaited comes after
  that read, through a barrier the reader arrives on and the copier waits on;
- **copies in order** — a copy into bytes an earlier phase's copy wrote comes after that phase
  completed; two copies into the same bytes never count on one phase, nor on different barriers;
- **landed before the exit** — some threads wait for the phase of every copy;
- **hand-offs** — where the tags followed a consumer's wait to the copy of the producer's
  iteration of the same index (`handoffs`), that copy's phase is the phase the wait awaits.

The induction behind the one-hop arguments is on time: the first wait in a run to see a wrong
phase would need an earlier one that did. What the model does not cover (nested runtime loops,
branches other than "every iteration" or "every iteration but the first", clusters, multicast,
runs of copies batched together, arrivals by differing threads) is not proved: the verdict then
rests on the interpreter's schedules, as it says.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from argus.verify.affine import Key, add_keys, scale_key, sub_keys
from argus.verify.solvers import Query

KEY = "nvptx.protocol"
"""The analysis extension holding the recorder (`TagAnalysis.extensions`)."""

ZERO: Key = (0, ())
ONE: Key = (1, ())

BUDGET_S = 60.0
"""The most seconds the solver may spend on one kernel's protocol; past it, not proved (and said)."""


@dataclass(eq=False)
class Record:
    """One op of the protocol, as the walk met it: `kind` is "init", "arrive", "wait", "copy",
    "read" or "retire"."""

    kind: str
    op: Any
    site: tuple[Any, ...]
    """The op and the static iterations around it: one place of the program."""
    order: tuple[int, ...]
    """Its place in a thread's program order (comparable between records)."""
    threads: frozenset[int]
    loop: Any
    """The runtime loop around it (its op), None outside every runtime loop."""
    symbol: int | None
    conditions: tuple[tuple[str, Key], ...]
    barrier: tuple[int, int] | None = None
    parity: Key | None = None
    nbytes: int = 0
    """Bytes announced (an arrival) or brought (a copy)."""
    count: int = 0
    """Arrivals per phase (an init); products left running (a retire)."""
    memory: Any = None
    bytes: frozenset[int] = frozenset()
    asynchronous: bool = False
    late: bool = False
    """A thread's write, or a read in a batched run: it may touch bytes copies bring only once
    every such copy has landed and its threads waited for that."""
    part: Any = None
    """Which of its op's records it is (a copy's thread, a read's memory), None if the only one."""
    # set by `prove`: the trip numbers it runs at, [first, trips) or the first only
    first: int = 0
    pinned: bool = False


@dataclass
class Verdict:
    """What `prove` found: proved, with the obligations decided; or why not, and a launch (the
    solver's model, by symbol) where the failing obligation fails, to test on the interpreter."""

    proved: bool
    obligations: int = 0
    why: str = ""
    model: dict[int, int] = field(default_factory=dict)
    failed: bool = False
    """Whether an obligation fails in the launch `model` gives (else the model does not follow
    the kernel there, and `model`, if any, exercises what it does not follow)."""


class Recorder:
    """The protocol's records of one walk."""

    def __init__(self, a: Any) -> None:
        self.records: dict[tuple[Any, ...], Record] = {}
        self.unsupported: list[str] = []
        self.rebound: set[tuple[tuple[Any, ...], tuple[Any, ...]]] = set()
        """(a wait's record key, a copy's record key) whose tags `handoffs` followed."""
        self.numbers = {id(op): i for i, op in enumerate(a.preparation.table.ops)}
        self.ops = a.preparation.table.ops

    def numbers_of(self, kinds: tuple[type, ...]) -> list[tuple[Any, int]]:
        """The kernel's ops of the given kinds, with their numbers in program order."""
        return [(op, i) for i, op in enumerate(self.ops) if isinstance(op, kinds)]

    def read(self, a: Any, op: Any, memory: Any, idx: np.ndarray, threads: np.ndarray, asynchronous: bool) -> None:
        """Threads `threads` read bytes `idx` (a row per thread) of shared `memory`."""
        self.note(a, op, "read", threads, part=id(memory), memory=memory,
                  bytes=frozenset(np.unique(idx).tolist()), asynchronous=asynchronous)

    def write(self, a: Any, op: Any, memory: Any, idx: np.ndarray, threads: np.ndarray) -> None:
        """Threads write shared bytes: where copies bring those bytes, only once every copy has
        landed and the writers have waited for it (`prove`)."""
        self.note(a, op, "write", threads, part=id(memory), memory=memory, bytes=frozenset(np.unique(idx).tolist()),
                  late=True)

    def retire(self, a: Any, op: Any, threads: np.ndarray, pending: int) -> None:
        """Threads `threads` wait until at most `pending` of their products run."""
        self.note(a, op, "retire", threads, count=pending)

    # ---- recording --------------------------------------------------------------------------
    def note(self, a: Any, op: Any, kind: str, threads: np.ndarray, part: Any = None,
             **fields: Any) -> tuple[Any, ...] | None:
        """Record `op` run by `threads` where the walk is (`part`: which of the op's records, where
        it makes several); the record's key (None: not followed)."""
        batched = a.thread_ids is not a.tid
        if batched:  # (a run of an unrolled loop's copies at once: reads and writes only)
            if kind not in ("read", "write"):
                return self._unsupported(a, op, "it runs in a batched run of an unrolled loop's copies")
            threads = np.unique(threads)
        if threads.size == 0:
            return None
        first = int(threads[0])
        static: list[int] = []
        order: list[int] = []
        loop, symbol = None, None
        for context in a.loops:
            number = self.numbers.get(id(context.op), -1)
            if context.symbol is None:
                values = context.values
                if values is None or (values[threads] != values[first]).any():
                    return self._unsupported(a, op, "the threads running it are in different iterations of a loop")
                static.append(int(values[first]))
                order += [number, int(values[first])]
                continue
            if context.index is not None or loop is not None:
                return self._unsupported(a, op, "it runs in nested runtime loops, or one whose threads have bounds "
                                                "of their own")
            loop, symbol = context.op, context.symbol
            order += [number, 0]
        if batched:  # placed where the outermost loop run at once starts; only its writes and reads
            anchor = self._anchor(a, op)
            if anchor is None:
                return self._unsupported(a, op, "it runs in a batched run whose loop is not known")
            order.append(anchor)
            fields["late"] = True
        else:
            order.append(self.numbers.get(id(op), -1))
        conditions = []
        for condition, how in a.branches:
            rows = {condition.row(int(t)) for t in threads}
            if len(rows) != 1:
                return self._unsupported(a, op, "its threads run it under branches on conditions of their own")
            conditions.append((how, rows.pop()))
        record = Record(kind, op, (id(op), *static), tuple(order), frozenset(int(t) for t in threads), loop, symbol,
                        tuple(conditions), part=part, **fields)
        key = (record.site, symbol, part)
        old = self.records.get(key)
        if old is not None and kind in ("read", "write"):  # (an op reading one memory twice: both operands)
            record.bytes = record.bytes | old.bytes
        self.records[key] = record
        return key

    def _anchor(self, a: Any, op: Any) -> int | None:
        """The number of the outermost static loop around `op` that the walk runs at once (not
        one of `a.loops`), None where there is none."""
        from argus.dsl.ir import dialect as D
        from xdsl.dialects import scf

        walked = {id(context.op) for context in a.loops}
        found = None
        parent = op.parent_op()
        while parent is not None:
            if isinstance(parent, scf.ForOp) and D.is_unrolled(parent) and id(parent) not in walked:
                found = parent
            parent = parent.parent_op()
        return None if found is None else self.numbers.get(id(found))

    def _unsupported(self, a: Any, op: Any, why: str) -> None:
        self.unsupported.append(f"{a.where(op)}: {why}")
        return None

    # ---- deciding ---------------------------------------------------------------------------
    def covers(self, op: Any) -> bool:
        """Whether the model follows the timing of `op`: memory barriers (not a cluster's),
        bulk tensor copies (not multicast) and asynchronous products with their waits."""
        from argus.dsl.ir import dialect as D

        from .language import MbarrierArriveOp, MbarrierInitOp, MbarrierWaitOp, TmaLoadOp

        if isinstance(op, TmaLoadOp):
            return op.multicast is None
        return isinstance(op, (MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp, D.MmaOp, D.MmaWaitOp))

    def prove(self, a: Any, engine: Any, facts: list[Any], timeout_ms: int) -> Verdict:
        """Decide every obligation of the module's docstring over the records of the walk."""
        if self.unsupported:
            return Verdict(False, why=f"the protocol's model does not follow an op at {self.unsupported[0]}")
        try:
            return _Proof(self, a, engine, facts, timeout_ms).run()
        except _NotFollowed as err:
            return Verdict(False, why=str(err))


class _NotFollowed(Exception):
    """The kernel's protocol is outside what the model follows; `query` (premises, alternatives),
    where given, picks a launch that exercises what it does not follow, for the interpreter."""

    def __init__(self, why: str, premises: list[Any] | None = None, alternatives: list[Any] | None = None) -> None:
        super().__init__(why)
        self.query = None if premises is None else (premises, alternatives or [[]])


class _Failed(Exception):
    """An obligation that fails in some launch: the query (premises, alternatives) that shows it."""

    def __init__(self, why: str, premises: list[Any], alternatives: list[Any]) -> None:
        super().__init__(why)
        self.query = (premises, alternatives)


@dataclass
class _Loop:
    start: Key
    step: int
    trips: Key


@dataclass
class _Position:
    """A record's execution at trip number `trip` (None outside loops)."""

    record: Record
    trip: Key | None


class _Proof:
    def __init__(self, recorder: Recorder, a: Any, engine: Any, facts: list[Any], timeout_ms: int) -> None:
        self.recorder, self.a, self.space = recorder, a, a.space
        self.engine, self.facts, self.timeout_ms = engine, list(facts), timeout_ms
        self.loops: dict[int, _Loop] = {}
        self.decided = 0
        self.trip_symbols = 0
        self.positions: dict[int, Record] = {}
        """The record each trip number made by `_position` places (for witnesses)."""
        self.deadline = time.perf_counter() + BUDGET_S
        # set by `_obligations`
        self.records: list[Record] = []
        """The live records (`_live`)."""
        self.merged: dict[int, Record] = {}
        """Per record of a peeled first iteration (by identity), the record of every iteration it
        was merged into."""
        self.inits: dict[Any, Record] = {}
        self.offsets: dict[tuple[Any, frozenset[int]], int] = {}
        """Per barrier and set of waiters, the offset o of the module's docstring."""
        self.syncs: list[tuple[int]] = []

    # ---- set-up ----------------------------------------------------------------------------
    def run(self) -> Verdict:
        try:
            self._obligations()
        except _Failed as failure:
            model = self._small(*failure.query)
            return Verdict(False, self.decided, str(failure) + self._iterations(model, failure.query), model,
                           failed=True)
        except _NotFollowed as outside:
            return Verdict(False, self.decided, str(outside), self._small(*outside.query) if outside.query else {})
        return Verdict(True, self.decided)

    def _obligations(self) -> None:
        """State and decide every obligation; `_Failed` or `_NotFollowed` where one is not proved."""
        records = self._live()
        self.records = records
        first: dict[Any, tuple[int, ...]] = {}
        for r in records:
            if r.barrier is not None and (r.barrier not in first or r.order < first[r.barrier]):
                first[r.barrier] = r.order
        barriers = sorted(first, key=lambda b: (first[b], b[1]))  # (program order: the same every run)
        self.syncs = self._block_barriers()
        for b in barriers:
            inits = [r for r in records if r.kind == "init" and r.barrier == b]
            if len(inits) != 1 or inits[0].loop is not None or len(inits[0].threads) != 1:
                raise _NotFollowed(f"barrier {b[1]} is not initialized exactly once, by one thread, outside loops")
            self.inits[b] = inits[0]
            if any(r.order <= inits[0].order for r in records if r.barrier == b and r is not inits[0]):
                raise _NotFollowed(f"barrier {b[1]} is used before, or where, it is initialized")
            self._initialized_first(b, inits[0])
        for b in barriers:
            self._phases(b)
        for b in barriers:
            arrivers = self._arrivers(b)
            for w in self._of("wait", b):
                self._not_ahead(b, w, arrivers)
                self._completes(b, w, arrivers)
            for x in self._of("arrive", b):
                self._not_early(b, x, arrivers)
        self._copies()
        self._reads()
        self._late()
        self._landed()
        self._handoffs()

    def _block_barriers(self) -> list[tuple[int]]:
        """The places of the kernel's block barriers (syncthreads(), cluster_sync()), each met by
        every thread once: a thread blocked on a memory barrier before one holds up every other
        thread there (`_completes`). One under a branch or in a loop is not followed."""
        from argus.dsl.ir import dialect as D

        from .language import ClusterSyncOp

        out = []
        for o, n in self.recorder.numbers_of((D.SyncThreadsOp, ClusterSyncOp)):
            if not isinstance(o.parent_op(), D.KernelOp):
                raise _NotFollowed(f"{self.a.where(o)}: a block barrier under a branch or in a loop (the model "
                                   "follows those every thread meets once, outside branches and loops)")
            out.append((n,))
        return out

    def _initialized_first(self, b: Any, init: Record) -> None:
        """Threads other than the initializing one use barrier `b` only after a block barrier that
        every thread meets (a syncthreads() or cluster_sync() outside branches and loops)
        follows its initialization: nothing else orders the initialization before their use."""
        for r in self.records:
            if r.barrier == b and r is not init and not r.threads <= init.threads and \
                    not any(init.order < n < r.order for n in self.syncs):
                raise _NotFollowed(f"{self.a.where(r.op)}: threads other than the one that initialized barrier "
                                   f"{b[1]} use it with no syncthreads() between its initialization and this use")

    def _live(self) -> list[Record]:
        """The records of the walk's final passes, with the trip numbers each runs at."""
        sp = self.space
        pinned_loops = {id(r.loop) for r in self.recorder.records.values()
                        if r.symbol is not None and sp.symbols[r.symbol].lo == sp.symbols[r.symbol].hi}
        live = []
        for r in self.recorder.records.values():
            if r.symbol is None:
                if not self._settle_straight(r):
                    continue
                live.append(r)
                continue
            symbol = sp.symbols[r.symbol]
            start = self.a.loop_starts.get(r.symbol)
            if start is None:
                raise _NotFollowed(f"{self.a.where(r.op)}: its loop's first index is not known")
            r.pinned = symbol.lo == symbol.hi
            if id(r.loop) in pinned_loops and not r.pinned and symbol.lo == start:
                continue  # (a walk of every iteration at once, given up for one that peels the first)
            if not self._settle_loop(r, start):
                continue
            live.append(r)
        return self._merged(live)

    def _merged(self, live: list[Record]) -> list[Record]:
        """A loop's first iteration walked on its own and the others, as one record of every
        iteration where the two agree (fewer and simpler counts for the solver)."""
        sp = self.space
        rest = {(r.kind, r.site, r.part, id(r.loop)): r for r in live if r.loop is not None and not r.pinned
                and r.first == 1}
        out = []
        for r in live:
            other = rest.get((r.kind, r.site, r.part, id(r.loop))) if r.pinned else None
            if other is None or (r.barrier, r.nbytes, r.count, r.threads, r.bytes, r.asynchronous, r.memory) != \
                    (other.barrier, other.nbytes, other.count, other.threads, other.bytes, other.asynchronous,
                     other.memory):
                out.append(r)
                continue
            if r.parity is not None:
                start = self.loops[id(r.loop)].start
                assert other.parity is not None and r.symbol is not None and other.symbol is not None
                if sp.substitute(r.parity, r.symbol, start) != sp.substitute(other.parity, other.symbol, start):
                    out.append(r)
                    continue
            other.first = 0  # (it now stands for every iteration)
            self.merged[id(r)] = other
        return out

    def _loop(self, r: Record, start: Key) -> _Loop:
        found = self.loops.get(id(r.loop))
        if found is None:
            sp = self.space
            step = int(self._step(r))
            last = [sp.symbols[q.symbol].hi for q in self.recorder.records.values()
                    if q.loop is r.loop and q.symbol is not None and sp.symbols[q.symbol].lo != sp.symbols[q.symbol].hi]
            if not last or last[0] is None:
                raise _NotFollowed(f"{self.a.where(r.op)}: its loop's last index is not known")
            span = sp.floordiv(sp.of_key(sub_keys(last[0], start), 1), sp.constant(step, 1)).row(0)
            always = self._valid([], [[("ge0", sub_keys(sub_keys(start, last[0]), ONE))]])  # (it runs in every launch)
            trips = add_keys(span, ONE) if always else sp.atom_key("max", ZERO, add_keys(span, ONE))
            found = self.loops[id(r.loop)] = _Loop(start, step, trips)
        return found

    def _step(self, r: Record) -> int:
        step = self.a.int_value(r.loop.step, r.loop)
        if not step.concrete:
            raise _NotFollowed(f"{self.a.where(r.loop)}: the loop's step is not a constant")
        return int(step.const[0])

    def _index(self, r: Record, trip: Key) -> Key:
        """The loop's index at trip number `trip`."""
        loop = self.loops[id(r.loop)]
        return add_keys(loop.start, scale_key(trip, loop.step))

    def _at(self, r: Record, key: Key, trip: Key) -> Key:
        """A form of the record's loop symbol, at trip number `trip`."""
        return key if r.symbol is None else self.space.substitute(key, r.symbol, self._index(r, trip))

    def _trip(self, name: str) -> Key:
        """A fresh trip number (its bounds go into each query's facts, not the domain's)."""
        self.trip_symbols += 1
        return (0, ((self.space.atom("symbol", f"protocol trip {name}#{self.trip_symbols}"), 1),))

    def _settle_straight(self, r: Record) -> bool:
        """Whether a record outside loops runs (its branches hold in every launch); not followed
        where they hold in some launches only."""
        if not r.conditions:
            return True
        if self._valid([], [self._negated(r.conditions)]):
            return True
        if self._valid([], [list(r.conditions)]):
            return False
        raise _NotFollowed(f"{self.a.where(r.op)}: it runs in some launches only (under a branch on the launch)")

    def _settle_loop(self, r: Record, start: Key) -> bool:
        """The trip numbers a record in a loop runs at: every one its symbol stands for, or every
        one but the first; False where it never runs."""
        loop = self._loop(r, start)
        sp = self.space
        lo = sp.symbols[r.symbol].lo
        offset = sub_keys(lo, start) if lo is not None else None
        if offset is None or offset[1] or offset[0] % loop.step:
            raise _NotFollowed(f"{self.a.where(r.op)}: its iterations do not start on its loop's grid")
        r.first = offset[0] // loop.step
        if r.pinned and r.first != 0:
            raise _NotFollowed(f"{self.a.where(r.op)}: it stands for one iteration other than the first")
        if not r.conditions:
            return True
        t = self._trip("condition")
        conditions = [(how, self._at(r, key, t)) for how, key in r.conditions]
        inside = self._runs(r, t)
        if self._valid(inside, [self._negated(conditions)]):
            return True
        if self._valid(inside, [conditions]):
            return False
        if r.first == 0 and not r.pinned:  # every iteration but the first?
            later = inside + [("ge0", sub_keys(t, ONE))]
            at_first = [(how, self.space.substitute(key, t[1][0][0], ZERO)) for how, key in conditions]
            if self._valid(later, [self._negated(conditions)]) and self._valid([], [at_first]):
                r.first = 1
                return True
        other = self._trip("condition")
        raise _NotFollowed(f"{self.a.where(r.op)}: it runs in some iterations of its loop only, not every one or every "
                           "one but the first",
                           inside + self._runs(r, other) + conditions,  # (a launch where it runs in some, not all)
                           self._negated([(how, self._at(r, key, other)) for how, key in r.conditions]))

    def _runs(self, r: Record, t: Key) -> list[Any]:
        """Facts: trip number `t` is one the record runs at."""
        if r.pinned:
            return [("eq0", t), ("ge0", sub_keys(self.loops[id(r.loop)].trips, ONE))]
        return [("ge0", sub_keys(t, (r.first, ()))), ("ge0", sub_keys(sub_keys(self.loops[id(r.loop)].trips, ONE), t))]

    @staticmethod
    def _negated(conditions: Iterable[tuple[str, Key]]) -> list[Any]:
        """Alternatives: some condition fails (a list of one-comparison conjunctions)."""
        out = []
        for how, key in conditions:
            if how == "ne0":
                out.append([("eq0", key)])
            elif how == "eq0":
                out.append([("ne0", key)])
            elif how == "ge0":
                out.append([("ge0", sub_keys((-1, ()), key))])
            else:
                raise _NotFollowed(f"a branch condition of kind {how!r}")
        return out

    # ---- the solver ----------------------------------------------------------------------------
    def _valid(self, premises: list[Any], alternatives: list[Any]) -> bool:
        """Whether no launch satisfies `premises` and one of the `alternatives` (each a list of
        comparisons, or a list of such lists from `_negated`)."""
        return self._counterexample(premises, alternatives) is None

    def _counterexample(self, premises: list[Any], alternatives: list[Any]) -> dict[int, int] | None:
        flat: list[list[Any]] = []
        for alternative in alternatives:
            if alternative and isinstance(alternative[0], list):
                flat += alternative
            else:
                flat.append(alternative)
        if not flat:
            return None
        self.decided += 1
        if time.perf_counter() > self.deadline:
            raise _NotFollowed(f"its obligations took the solver more than {BUDGET_S:.0f} s")
        answer = self.engine.solve(Query(self.space, self.facts + premises, flat), self.timeout_ms)
        if answer.status == "unsat":
            return None
        if answer.status != "sat":
            raise _NotFollowed(f"the solver could not decide an obligation of the protocol ({answer.reason})")
        return answer.model

    def _small(self, premises: list[Any], alternatives: list[Any]) -> dict[int, int]:
        """A launch where the failing obligation fails, small enough to run on the interpreter
        where there is one."""
        sizes = [s for s, symbol in self.space.symbols.items() if symbol.role in ("size", "grid")]
        for limit in (256, 1024, 4096, None):
            bounds = [] if limit is None else [("ge0", (limit, ((s, -1),))) for s in sizes]
            try:
                model = self._counterexample(premises + bounds, alternatives)
            except _NotFollowed:
                continue
            if model is not None:
                return model
        return {}

    def _require(self, premises: list[Any], alternatives: list[Any], why: str) -> None:
        if self._counterexample(premises, alternatives) is not None:
            raise _Failed(why, premises, alternatives)

    # ---- counting ------------------------------------------------------------------------------
    def _count(self, records: list[Record], at: _Position, inclusive: bool = False) -> Key:
        """How many times `records` run before `at` in its threads' program order (and at it,
        where `inclusive` and it is one of them)."""
        total = ZERO
        r = at.record
        for q in records:
            before = q.order < r.order or (inclusive and q.site == r.site)
            if q.loop is None:
                total = add_keys(total, ONE if before else ZERO)
            elif r.loop is not None and q.loop is r.loop:
                assert at.trip is not None
                total = add_keys(total, self._runs_before(q, at.trip, before))
            elif before:
                total = add_keys(total, self._all_runs(q))
        return total

    def _runs_before(self, q: Record, trip: Key, including: bool) -> Key:
        """Runs of `q` at trip numbers below `trip` (and at it, where `including`)."""
        sp = self.space
        if q.pinned:
            return ONE if including else sp.atom_key("min", trip, ONE)
        runs = sub_keys(add_keys(trip, ONE if including else ZERO), (q.first, ()))
        # (trip numbers are never negative: from a first iteration on, the count is the difference)
        return runs if q.first == 0 or (q.first == 1 and including) else sp.atom_key("max", ZERO, runs)

    def _all_runs(self, q: Record) -> Key:
        trips = self.loops[id(q.loop)].trips
        if q.pinned:
            return self.space.atom_key("min", trips, ONE)
        return trips if q.first == 0 else self.space.atom_key("max", ZERO, sub_keys(trips, (q.first, ())))

    def _of(self, kind: str, barrier: Any, threads: frozenset[int] | None = None) -> list[Record]:
        return [r for r in self.records if r.kind == kind and r.barrier == barrier
                and (threads is None or r.threads == threads)]

    def _total(self, records: list[Record]) -> Key:
        total = ZERO
        for q in records:
            total = add_keys(total, ONE if q.loop is None else self._all_runs(q))
        return total

    def _position(self, r: Record, name: str) -> tuple[_Position, list[Any]]:
        """A position of `r` at a fresh trip number, and the facts that it runs there."""
        if r.loop is None:
            return _Position(r, None), []
        t = self._trip(name)
        self.positions[t[1][0][0]] = r
        return _Position(r, t), self._runs(r, t)

    def _iterations(self, model: dict[int, int], query: tuple[list[Any], list[Any]]) -> str:
        """Where a failing obligation's events are in the launch `model` gives: each one's
        iteration of its loop (numbered from 0) and its first thread."""
        keys: list[Any] = []
        for part in [query[0], *query[1]]:
            for item in part:
                keys += [c[1] for c in (item if isinstance(item, list) else [item]) if isinstance(c, tuple)]
        used = set().union(*(self.space.atoms_of(k) for k in keys if isinstance(k, tuple))) if keys else set()
        found = [f"{self.a.where(r.op)} in iteration {model[atom]} by thread {min(r.threads)}"
                 for atom, r in self.positions.items() if atom in model and atom in used]
        return f" (in that launch: {'; '.join(dict.fromkeys(found))})" if found else ""

    # ---- barriers ------------------------------------------------------------------------------
    def _arrivers(self, b: Any) -> frozenset[int]:
        arrivals = self._of("arrive", b)
        sets = {r.threads for r in arrivals}
        if len(sets) > 1:
            raise _NotFollowed(f"barrier {b[1]} has arrivals by different sets of threads")
        return sets.pop() if sets else frozenset()

    def _waiters(self, b: Any) -> list[frozenset[int]]:
        sets = list(dict.fromkeys(r.threads for r in self._of("wait", b)))
        for i, s in enumerate(sets):
            for other in sets[i + 1:]:
                if s & other:
                    raise _NotFollowed(f"barrier {b[1]} is waited on by overlapping sets of threads")
        return sets

    def _phases(self, b: Any) -> None:
        """Each phase of `b` is one arrival of each of its arriving threads; each set of waiters
        waits for its phases in turn, with the parity of each."""
        init = self.inits[b]
        arrivers = self._arrivers(b)
        if arrivers and len(arrivers) != init.count:
            raise _NotFollowed(f"barrier {b[1]} expects {init.count} arrivals per phase, and {len(arrivers)} threads "
                               "arrive on it each time (the model counts one arrival per thread per phase)")
        for waiters in self._waiters(b):
            self.offsets[(b, waiters)] = self._parity(b, waiters)

    def _awaited(self, b: Any, waiters: frozenset[int], at: _Position, inclusive: bool = True) -> Key:
        """The phase the last wait of `waiters` on `b` at or before `at` waits for."""
        count = self._count(self._of("wait", b, waiters), at, inclusive)
        return add_keys(count, (self.offsets[(b, waiters)] - 1, ()))

    def _awaited_by(self, b: Any, threads: frozenset[int], at: _Position) -> Key | None:
        """The phase the last wait on `b` by the threads `threads` (at or before `at`) waits for,
        None where they do not all wait on it as one set of waiters."""
        for waiters in self._waiters(b):
            if threads <= waiters and (b, waiters) in self.offsets:
                return self._awaited(b, waiters, at)
        return None

    def _parity(self, b: Any, waiters: frozenset[int]) -> int:
        """The offset o of the module's docstring with which every wait's parity is its phase's."""
        failure: _Failed | None = None
        for offset in (0, -1):
            self.offsets[(b, waiters)] = offset
            try:
                for w in self._of("wait", b, waiters):
                    at, runs = self._position(w, "wait")
                    phase = self._awaited(b, waiters, at)
                    parity = w.parity if at.trip is None else self._at(w, w.parity, at.trip)
                    self._require(runs, [[("ne0", self.space.mod_key(sub_keys(parity, phase), (2, ())))]],
                                  f"the wait at {self.a.where(w.op)} waits for a parity that is not its phase's: "
                                  f"each wait on barrier {b[1]} by the same threads waits for the phase after the "
                                  "one their previous wait did")
                return offset
            except _Failed as err:
                failure = failure or err
        assert failure is not None
        raise failure

    def _chains(self, source: tuple[frozenset[int], _Position], target: tuple[frozenset[int], _Position],
                near: Any = None) -> list[tuple[Any, list[Any]]]:
        """Per barrier e that could order `source` before `target`: the conditions (alternatives
        of failure) — the source's threads arrive on e after it, and the target's threads wait
        on e, before it, for a phase that arrival completes or a later one."""
        found = []
        threads, at = source
        # (a pipeline's barriers pair up by index — stage s's "full" with its "empty" —: tried first)
        for e in sorted(self.inits, key=lambda e: near is None or e[1] != near[1]):
            arrivers = self._arrivers(e)
            if not threads <= arrivers:
                continue
            awaited = self._awaited_by(e, target[0], target[1])
            if awaited is None:
                continue
            arrival = self._count(self._of("arrive", e), at)
            total = self._total(self._of("arrive", e))
            found.append((e, [[("ge0", sub_keys(sub_keys(arrival, awaited), ONE))],
                              [("ge0", sub_keys(arrival, total))]]))
        return found

    def _ordered(self, premises: list[Any], source: tuple[frozenset[int], _Position],
                 target: tuple[frozenset[int], _Position], why: str, near: Any = None) -> None:
        """`source` comes before `target` in every launch where `premises` hold, through one
        barrier (the first that orders them in every such launch; those with `near`'s index first)."""
        chains = self._chains(source, target, near)
        if not chains:
            self._require(premises, [[]], why + ": no barrier the first's threads arrive on is one the second's "
                                                "wait on")
            return
        for _, failing in chains:
            if self._counterexample(premises, failing) is None:
                return
        raise _Failed(why, premises, chains[0][1])

    def _not_ahead(self, b: Any, w: Record, arrivers: frozenset[int]) -> None:
        """The phase after the one `w` awaits cannot complete before `w`."""
        wait, wait_runs = self._position(w, "wait")
        phase = self._awaited(b, w.threads, wait)
        for x in self._of("arrive", b):
            arrival, arrival_runs = self._position(x, "arrival")
            ordinal = self._count(self._of("arrive", b), arrival)
            link = [("eq0", sub_keys(ordinal, add_keys(phase, ONE)))]
            why = (f"the phase after the one the wait at {self.a.where(w.op)} waits for may complete before it "
                   f"(the arrival at {self.a.where(x.op)} is not ordered after the wait): the wait would wait for the "
                   "wrong phase")
            self._ordered(wait_runs + arrival_runs + link, (w.threads, wait), (arrivers, arrival), why, near=b)

    def _completes(self, b: Any, w: Record, arrivers: frozenset[int]) -> None:
        """The phase `w` awaits does complete: an arrival of that phase exists, and each wait its
        arriving threads make before it is for a phase the waiting threads completed before `w`
        (by induction on the waits of `w`'s threads, none of them waits forever)."""
        wait, wait_runs = self._position(w, "wait")
        phase = self._awaited(b, w.threads, wait)
        self._require(wait_runs, [[("ge0", sub_keys(phase, self._total(self._of("arrive", b))))]],
                      f"the wait at {self.a.where(w.op)} waits for a phase of barrier {b[1]} that no arrival completes "
                      "(it would wait forever)")
        for x in self._of("arrive", b):
            arrival, arrival_runs = self._position(x, "arrival")
            link = [("eq0", sub_keys(self._count(self._of("arrive", b), arrival), phase))]
            completion = max([x.order] + [c.order for c in self._window(x)])
            for n in self.syncs:
                if w.order < n < completion:  # (every thread meets it: the arriving ones only once w returned)
                    self._require(wait_runs + arrival_runs + link, [[]],
                                  f"the wait at {self.a.where(w.op)} may wait forever: the arrival at "
                                  f"{self.a.where(x.op)} (or a copy bringing its bytes) that completes its phase comes "
                                  f"after a block barrier its threads meet only once the wait has returned")
            for e in self.inits:
                needed = self._awaited_by(e, arrivers, arrival)
                if needed is None:
                    continue
                why = (f"the wait at {self.a.where(w.op)} may wait forever: the arrival at {self.a.where(x.op)} that "
                       f"completes its phase comes after a wait on barrier {e[1]} for a phase the waiting threads "
                       "have not completed by then")
                if not self._arrivers(e) <= w.threads:
                    self._require(wait_runs + arrival_runs + link + [("ge0", needed)], [[]], why)
                    continue
                done = self._count(self._of("arrive", e), wait)
                self._require(wait_runs + arrival_runs + link, [[("ge0", sub_keys(needed, done))]], why)

    def _not_early(self, b: Any, x: Record, arrivers: frozenset[int]) -> None:
        """An arrival for phase p comes after phase p - 1 completed."""
        arrival, arrival_runs = self._position(x, "arrival")
        ordinal = self._count(self._of("arrive", b), arrival)
        later = arrival_runs + [("ge0", sub_keys(ordinal, ONE))]
        if self._valid(later, [[]]):
            return  # (only the first phase's arrivals)
        own = self._awaited_by(b, arrivers, arrival)
        if own is not None and self._valid(later, [[("ge0", sub_keys(sub_keys(ordinal, own), (2, ())))]]):
            return  # its threads waited for the phase before
        self._completed_before(b, sub_keys(ordinal, ONE), later, (arrivers, arrival),
                               f"the arrival at {self.a.where(x.op)} may come before the barrier's previous phase "
                               "completed (it would count towards that phase)")

    def _completed_before(self, b: Any, phase: Key, premises: list[Any], target: tuple[frozenset[int], _Position],
                          why: str) -> None:
        """Phase `phase` of `b` completes before `target`: some threads wait for it on `b`, then
        arrive on a barrier the target's threads wait on."""
        failure: _Failed | None = None
        for waiters in self._waiters(b):
            total = self._total(self._of("wait", b, waiters))
            offset = self.offsets[(b, waiters)]
            try:  # some wait of theirs waits for that phase (their waits wait for offset, offset + 1, ...)
                self._require(premises, [[("ge0", sub_keys(sub_keys(phase, total), (offset, ())))]],
                              why + f" (no wait on barrier {b[1]} waits for that phase)")
                for w in self._of("wait", b, waiters):
                    wait, wait_runs = self._position(w, "wait")
                    link = [("eq0", sub_keys(self._awaited(b, waiters, wait), phase))]
                    self._ordered(premises + wait_runs + link, (waiters, wait), target, why, near=b)
                return
            except _Failed as err:
                failure = failure or err
        if failure is not None:
            raise failure
        self._require(premises, [[]], why + f" (no thread waits on barrier {b[1]})")

    # ---- copies ----------------------------------------------------------------------------
    def _phase_of_copy(self, c: Record, at: _Position) -> Key:
        """The phase a copy's bytes count on: the one its issuer's last arrival on the barrier
        announced them for."""
        return sub_keys(self._count(self._of("arrive", c.barrier), at), ONE)

    def _copies(self) -> None:
        """Each announcement of bytes is met by the copies after it (up to its thread's next
        arrival on the barrier); copies into the same bytes land in order."""
        copies = [r for r in self.records if r.kind == "copy"]
        for c in copies:
            if c.barrier not in self.inits:
                raise _NotFollowed(f"{self.a.where(c.op)}: the copy lands on a barrier no thread initialized")
            arrivals = sorted(self._of("arrive", c.barrier), key=lambda r: r.order)
            before = [x for x in arrivals if x.order < c.order and x.loop is c.loop and x.symbol == c.symbol]
            if not before or before[-1].threads != c.threads or (before[-1].first, before[-1].pinned) != \
                    (c.first, c.pinned):
                raise _NotFollowed(f"{self.a.where(c.op)}: the copy does not follow its thread's own announcement of "
                                   "bytes on the barrier in the same iteration")
        for x in (r for r in self.records if r.kind == "arrive"):
            window = self._window(x)
            if window:
                end = max(c.order for c in window)
                for w in self.records:
                    if w.kind == "wait" and w.threads & x.threads and w.loop is x.loop and x.order < w.order < end:
                        raise _NotFollowed(f"{self.a.where(w.op)}: a wait between the announcement of bytes at "
                                           f"{self.a.where(x.op)} and a copy that brings them (the phase cannot "
                                           "complete while its copying thread waits)")
            brought = sum(c.nbytes for c in window)
            if brought != x.nbytes:
                at, runs = self._position(x, "arrival")
                raise _Failed(f"the arrival at {self.a.where(x.op)} announces {x.nbytes} bytes on barrier "
                              f"{x.barrier[1]}, and the copies after it bring {brought}: the phase completes "
                              f"{'before its data has landed' if brought > x.nbytes else 'never, or with bytes of the next one'}",
                              runs, [[]])
        for i, c1 in enumerate(copies):
            for c2 in copies[i:]:
                if c1.memory is not c2.memory or not c1.bytes & c2.bytes:
                    continue
                if c1.barrier != c2.barrier:  # (their phases count on different barriers: not comparable)
                    raise _NotFollowed(f"the copies at {self.a.where(c1.op)} and {self.a.where(c2.op)} write the same "
                                       "bytes and land on different barriers")
                if c1 is not c2:  # two copies of one phase into the same bytes land in either order
                    p1, runs1 = self._position(c1, "copy")
                    p2, runs2 = self._position(c2, "copy")
                    self._require(runs1 + runs2,
                                  [[("eq0", sub_keys(self._phase_of_copy(c1, p1), self._phase_of_copy(c2, p2)))]],
                                  f"the copies at {self.a.where(c1.op)} and {self.a.where(c2.op)} write the same bytes "
                                  "in the same phase of their barrier: nothing orders one after the other")
                for first, second in ((c1, c2), (c2, c1)) if c1 is not c2 else ((c1, c1),):
                    p1, runs1 = self._position(first, "copy")
                    p2, runs2 = self._position(second, "later copy")
                    phase1, phase2 = self._phase_of_copy(first, p1), self._phase_of_copy(second, p2)
                    premises = runs1 + runs2 + [("ge0", sub_keys(sub_keys(phase2, phase1), ONE))]
                    self._completed_before(first.barrier, phase1, premises, (second.threads, p2),
                                           f"the copy at {self.a.where(second.op)} may start before an earlier phase's "
                                           f"copy into the same bytes (at {self.a.where(first.op)}) has landed")

    def _landed(self) -> None:
        """Every copy has landed before the block exits: some threads wait for its phase (a block
        that exits with a copy still landing in its shared memory is undefined)."""
        for c in (r for r in self.records if r.kind == "copy"):
            at, runs = self._position(c, "copy")
            phase = self._phase_of_copy(c, at)
            beyond = [[("ge0", sub_keys(sub_keys(phase, self._total(self._of("wait", c.barrier, waiters))),
                                        (self.offsets[(c.barrier, waiters)], ())))]
                      for waiters in self._waiters(c.barrier)]  # (its phase is past their last wait's)
            if not any(self._valid(runs, [way]) for way in beyond):
                raise _Failed(f"the copy at {self.a.where(c.op)} may still be landing when the block exits: no "
                              f"thread waits for its phase of barrier {c.barrier[1]}", runs, beyond[:1] or [[]])

    def _window(self, x: Record) -> list[Record]:
        """The copies that bring the bytes arrival `x` announces: those on its barrier after it in
        the same iteration, up to the next arrival there."""
        later = [y.order for y in self._of("arrive", x.barrier) if y.loop is x.loop and y.symbol == x.symbol
                 and y.order > x.order]
        return [c for c in self.records if c.kind == "copy" and c.barrier == x.barrier and c.loop is x.loop and
                c.symbol == x.symbol and c.order > x.order and not any(o < c.order for o in later)]

    # ---- reads -----------------------------------------------------------------------------
    def _reads(self) -> None:
        """A read of bytes copies bring waits for the first copy's phase or a later one, and a
        copy of a later phase than the read awaited comes after the read has ended."""
        copies = [r for r in self.records if r.kind == "copy"]
        for r in (q for q in self.records if q.kind == "read" and not q.late):
            fills = [c for c in copies if c.memory is r.memory and c.bytes & r.bytes]
            if not fills:
                continue
            at, runs = self._position(r, "read")
            unfilled: list[list[Any]] = [[]]
            """Alternatives: each copy record's first copy comes after the phase awaited, or never."""
            for c in fills:  # the read waits for the phase of some copy into its bytes, or a later one
                awaited = self._awaited_by(c.barrier, r.threads, at)
                if awaited is None:
                    raise _Failed(f"the read at {self.a.where(r.op)} of bytes the copy at {self.a.where(c.op)} "
                                  f"brings does not wait on that copy's barrier {c.barrier[1]}", runs, [[]])
                first = _Position(c, None if c.loop is None else (c.first, ()))
                late = [("ge0", sub_keys(sub_keys(self._phase_of_copy(c, first), awaited), ONE))]
                ways = [late] if c.loop is None else \
                    [late, [("ge0", sub_keys((c.first, ()), self.loops[id(c.loop)].trips))]]
                unfilled = [old + way for old in unfilled for way in ways]
            self._require(runs, unfilled, f"the read at {self.a.where(r.op)} may come before any copy into its "
                                          f"bytes (at {self.a.where(fills[0].op)}) has landed")
            for c in fills:
                awaited = self._awaited_by(c.barrier, r.threads, at)
                assert awaited is not None
                for how, retire in self._ends(r):
                    end, premises = self._end(r, at, how, retire)
                    fill, fill_runs = self._position(c, "copy")
                    later = [("ge0", sub_keys(sub_keys(self._phase_of_copy(c, fill), awaited), ONE))]
                    why = (f"the copy at {self.a.where(c.op)} may overwrite bytes the read at {self.a.where(r.op)} "
                           "has not finished reading (a stage refilled before its readers released it)")
                    self._ordered(runs + premises + fill_runs + later, (r.threads, end), (c.threads, fill), why,
                                  near=c.barrier)

    def _late(self) -> None:
        """Threads' writes (and reads in batched runs) of bytes copies bring come after every
        such copy landed, each phase awaited by those threads."""
        copies = [r for r in self.records if r.kind == "copy"]
        for r in (q for q in self.records if q.late):
            fills = [c for c in copies if c.memory is r.memory and c.bytes & r.bytes]
            if not fills:
                continue
            what = "write" if r.kind == "write" else "read"
            if r.loop is not None:
                raise _NotFollowed(f"{self.a.where(r.op)}: threads {what} bytes bulk copies bring inside a runtime loop"
                                   + (" (a batched run)" if r.kind == "read" else ""))
            at = _Position(r, None)
            for c in fills:
                awaited = self._awaited_by(c.barrier, r.threads, at)
                fill, fill_runs = self._position(c, "copy")
                why = (f"the {what} at {self.a.where(r.op)} may touch bytes the copy at {self.a.where(c.op)} brings "
                       "before that copy has landed and been waited for")
                if awaited is None:
                    self._require(fill_runs, [[]], why + f" (its threads do not wait on barrier {c.barrier[1]})")
                    continue
                self._require(fill_runs, [[("ge0", sub_keys(sub_keys(self._phase_of_copy(c, fill), awaited), ONE))]],
                              why)

    def _end(self, r: Record, at: _Position, how: str, retire: Record | None) -> tuple[_Position, list[Any]]:
        """Where the read at `at` ends (`_ends`), and the facts under which it ends there."""
        if how == "here":
            return at, []
        assert retire is not None
        if how == "same":
            return _Position(retire, at.trip), []
        assert at.trip is not None
        trips = self.loops[id(r.loop)].trips
        if how == "next":
            return _Position(retire, add_keys(at.trip, ONE)), [("ge0", sub_keys(sub_keys(trips, (2, ())), at.trip))]
        return _Position(retire, None), [("eq0", sub_keys(sub_keys(trips, ONE), at.trip))]

    def _ends(self, r: Record) -> list[tuple[str, Record | None]]:
        """Where a read ends: where it is made ("here"), or for an asynchronous product, at the
        `matmul_wait` that retires it — later in its iteration ("same"), in the next iteration
        ("next"), or after the loop once its last iteration is done ("last")."""
        if not r.asynchronous:
            return [("here", None)]

        def retiring(sequence: list[Record], started: int) -> tuple[Record | None, int]:
            seen: set[Any] = set()
            for q in sequence:
                if q.kind == "read":
                    if q.site not in seen:
                        seen.add(q.site)
                        started += 1
                elif started >= q.count:
                    return q, started
            return None, started

        def products(records: Iterable[Record]) -> list[Record]:
            chosen = [q for q in records if q.threads & r.threads and (q.kind == "retire" or
                                                                      (q.kind == "read" and q.asynchronous))]
            for q in chosen:
                if not r.threads <= q.threads:
                    raise _NotFollowed(f"{self.a.where(q.op)}: products are started or retired by part of the "
                                       f"threads of the product at {self.a.where(r.op)}")
            return sorted(chosen, key=lambda q: q.order)

        # (in its own iteration only products and waits that run at every trip number it runs at:
        # one that skips the first iteration neither starts nor retires anything there)
        here = products(q for q in self.records if q.loop is r.loop and q.symbol == r.symbol and q.order > r.order
                        and self._alongside(q, r))
        found, started = retiring(here, 0)
        if found is not None:
            return [("same", found)]
        if r.loop is None:
            raise _NotFollowed(f"{self.a.where(r.op)}: no matmul_wait retires the product")
        body = products(q for q in self.records if q.loop is r.loop and not q.pinned)
        following, _ = retiring(body, started)
        after = products(q for q in self.records if q.loop is None and q.order > r.order)
        last, _ = retiring(after, started)
        if following is None or last is None:
            raise _NotFollowed(f"{self.a.where(r.op)}: no matmul_wait retires the product in the next iteration or "
                               "after the loop")
        return [("next", following), ("last", last)]

    @staticmethod
    def _alongside(q: Record, r: Record) -> bool:
        """Whether `q`, of `r`'s loop, runs at every trip number `r` runs at."""
        if q.pinned:
            return r.pinned
        return q.first <= (0 if r.pinned else r.first)

    # ---- hand-offs -------------------------------------------------------------------------
    def _handoffs(self) -> None:
        """Where the tags followed a wait to a copy of the same iteration, that copy's phase is
        the one the wait awaits."""
        live = {id(r) for r in self.records}
        by_key = {key: self.merged.get(id(r), r) for key, r in self.recorder.records.items()
                  if id(r) in live or id(r) in self.merged}
        for wait_key, copy_key in sorted(self.recorder.rebound, key=repr):
            w, c = by_key.get(wait_key), by_key.get(copy_key)
            if w is None or c is None:
                raise _NotFollowed("a hand-off the tags followed has no record of its wait or its copy")
            t = self._trip("hand-off")
            runs = self._runs(w, t) + self._runs(c, t)
            phase = self._phase_of_copy(c, _Position(c, t))
            awaited = self._awaited(w.barrier, w.threads, _Position(w, t))
            self._require(runs, [[("ne0", sub_keys(phase, awaited))]],
                          f"the wait at {self.a.where(w.op)} waits for a phase other than the one the copy at "
                          f"{self.a.where(c.op)} of the same iteration lands in, yet the tags take its data as that "
                          "copy's")
