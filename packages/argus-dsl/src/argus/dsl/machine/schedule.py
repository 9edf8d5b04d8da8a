"""How the warps of a block take turns: groups of warps run as independent strands, and a
deterministic schedule (a policy and a seed) picks which strand or asynchronous agent moves
next.

A *group* is a set of warps at one program point, run in lockstep (each op computed for all of
its threads at once under a mask, as SIMT hardware runs a warp). A block starts as one group.
A runtime `if` whose condition differs between warps splits it (warps taking one side, warps
taking the other, and warps whose lanes disagree, which run both sides in turn under masks); a
loop that some warps leave before others splits off the warps that left; a wait that some warps
pass before others splits off those. Groups meet again where the split happened (after the `if`
or the loop) when the schedule lets them: a group that gets there first waits for its siblings
while anything else can run, and goes on alone when nothing else can.

An *agent* is an asynchronous operation in flight (a bulk copy landing, a product reading its
operands): it runs at a moment the schedule picks between its start and the wait that needs it.

Policies: `round-robin` (agents as early as allowed, groups in turn at each synchronization),
`random` (a seeded random choice of group or agent at each synchronization), `delay-async`
(agents as late as the program allows: only when a wait needs them or nothing else can move).
"""

from __future__ import annotations

import dataclasses
import os
import random
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from xdsl.dialects import scf
from xdsl.ir import Block, Operation

if TYPE_CHECKING:
    from .interpreter import Frame, Interpreter

POLICIES = ("round-robin", "random", "delay-async")

#: Ops a group's turn ends after (besides waits), by type; targets add theirs.
_SYNC_POINTS: set[type] = set()
#: Ops that may block, by type.
_WAITS: dict[type, WaitRule] = {}
#: Ops run by groups of threads larger than a warp (a warpgroup's product), by type: how many.
_COLLECTIVES: dict[type, Callable[[Any, Operation], int]] = {}
#: Iterations after which the interpreter calls a runtime loop runaway.
MAX_ITERATIONS = 1 << 20
#: Scheduler steps after which a block is called runaway (a livelock).
MAX_STEPS = 1 << 24


@dataclass(frozen=True)
class Schedule:
    """Which interleaving to run: a policy and, for `random`, its seed."""

    policy: str = "round-robin"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"unknown schedule policy {self.policy!r}; the policies are {', '.join(POLICIES)}")

    def __str__(self) -> str:
        return self.policy if self.policy != "random" else f"random:{self.seed}"

    @classmethod
    def parse(cls, text: str) -> Schedule:
        """`round-robin`, `delay-async`, `random` or `random:SEED`."""
        policy, _, seed = text.partition(":")
        if seed and policy != "random":
            raise ValueError(f"only the random schedule takes a seed, got {text!r}")
        try:
            return cls(policy, int(seed) if seed else 0)
        except ValueError as err:
            if seed and not seed.lstrip("-").isdigit():
                raise ValueError(f"a schedule's seed is an integer, got {seed!r}") from None
            raise err


_ACTIVE: ContextVar[Schedule | None] = ContextVar("argus_schedule", default=None)


def active() -> Schedule:
    """The schedule interpreter launches use now: the innermost `using`, else the environment's
    ARGUS_SCHEDULE (`round-robin`, `delay-async`, `random:SEED`), else round-robin."""
    found = _ACTIVE.get()
    if found is not None:
        return found
    text = os.environ.get("ARGUS_SCHEDULE", "")
    return Schedule.parse(text) if text else Schedule()


@contextmanager
def using(schedule: Schedule | str) -> Iterator[Schedule]:
    """Interpreter launches inside the block run under `schedule`."""
    chosen = Schedule.parse(schedule) if isinstance(schedule, str) else schedule
    token = _ACTIVE.set(chosen)
    try:
        yield chosen
    finally:
        _ACTIVE.reset(token)


def schedules(count: int, seed: int = 0) -> list[Schedule]:
    """`count` schedules to explore: round-robin, delay-async, then random ones."""
    out = [Schedule("round-robin"), Schedule("delay-async")]
    out += [Schedule("random", seed + i) for i in range(max(0, count - 2))]
    return out[:count]


class WaitRule(Protocol):
    """An op that may block: arrive once, then wait until `ready` lets threads go."""

    def arrive(self, interp: Interpreter, op: Operation, frame: Frame, mask: np.ndarray) -> None: ...

    def ready(self, interp: Interpreter, op: Operation, frame: Frame, mask: np.ndarray) -> np.ndarray:
        """Which of `mask`'s threads may go on now (no side effect)."""
        ...

    def leave(self, interp: Interpreter, op: Operation, frame: Frame, mask: np.ndarray) -> None:
        """`mask`'s threads go on: they acquire what the wait orders before them."""
        ...

    def waiting_for(self, interp: Interpreter, op: Operation, frame: Frame,
                    mask: np.ndarray) -> tuple[str, str, np.ndarray | None]:
        """The fault kind if the wait is never satisfied, what the threads wait for, in words,
        and the threads to name (None: the waiting ones)."""
        ...


def register_wait(op_type: type, rule: WaitRule) -> None:
    """Make `op_type` an op that may block (a barrier, a wait on a memory barrier)."""
    _WAITS[op_type] = rule


def register_collective(op_type: type, size: Callable[[Any, Operation], int]) -> None:
    """`op_type` is run together by groups of `size(interp, op)` threads (whole warps, more than
    one): a warp that gets there first waits for the rest of its group."""
    _COLLECTIVES[op_type] = size


#: Ops that read across more lanes than a warp (a hardware wave of 64), by type: how many.
_LOCKSTEP: dict[type, int] = {}


def register_lockstep(op_type: type, lanes: int) -> None:
    """A kernel using `op_type` runs groups of `lanes` threads in lockstep (the hardware wave its
    op reads across), whatever warp size it declares."""
    _LOCKSTEP[op_type] = lanes


def lockstep(kernel: Operation, warp: int) -> int:
    """The lanes a kernel's threads run in lockstep by: its warp, or the widest wave an op of it reads."""
    wide = [_LOCKSTEP[type(op)] for op in kernel.walk() if type(op) in _LOCKSTEP] if _LOCKSTEP else []
    return max([warp, *wide])


#: `lockstep` of each interpreter's kernel, with the warp size it was found for.
_LOCKSTEP_OF: weakref.WeakKeyDictionary[Any, tuple[int, int]] = weakref.WeakKeyDictionary()


def _lockstep_of(interp: Interpreter) -> int:
    """`lockstep` of the interpreter's kernel, found once per interpreter (a block's scheduler
    would otherwise walk the whole kernel again for every block of the grid)."""
    found = _LOCKSTEP_OF.get(interp)
    if found is None or found[0] != interp.warp_size:
        found = _LOCKSTEP_OF[interp] = (interp.warp_size, lockstep(interp.kernel, interp.warp_size))
    return found[1]


def register_sync_point(op_type: type) -> None:
    """End a group's turn after `op_type` (it orders memory or starts an asynchronous agent)."""
    _SYNC_POINTS.add(op_type)


def is_wait(op: Operation) -> bool:
    """Whether `op` may block (a barrier, a wait on a memory barrier)."""
    return type(op) in _WAITS


def is_sync_point(op: Operation) -> bool:
    """Whether other warps' order around `op` matters (it orders memory or starts an agent)."""
    return type(op) in _SYNC_POINTS


# ---- agents --------------------------------------------------------------------------------


@dataclass(eq=False)
class Agent:
    """An asynchronous operation in flight. `run` performs its accesses (once)."""

    name: str
    run: Callable[[], None]
    done: bool = False

    def finish(self) -> None:
        if not self.done:
            self.done = True
            self.run()


# ---- cursors -------------------------------------------------------------------------------


@dataclass
class _Run:
    """The ops of a block, run under `mask`."""

    ops: list[Operation]
    index: int
    mask: np.ndarray


@dataclass
class _Loop:
    op: scf.ForOp
    i: np.ndarray
    ub: np.ndarray
    step: np.ndarray
    mask: np.ndarray
    iterations: int = 0
    entered: bool = False


@dataclass
class _Branches:
    """An `if` whose regions run one after another (lanes of a warp disagree)."""

    op: scf.IfOp
    pending: list[tuple[Block, np.ndarray]]
    mask: np.ndarray


_Cursor = Any  # _Run | _Loop | _Branches


def _restricted(cursor: _Cursor, keep: np.ndarray) -> _Cursor:
    return dataclasses.replace(cursor, mask=cursor.mask & keep,
                               **({"pending": [(b, m & keep) for b, m in cursor.pending]}
                                  if isinstance(cursor, _Branches) else {}))


@dataclass(eq=False)
class Group:
    """Warps at one program point, run in lockstep."""

    frame: Any
    threads: np.ndarray
    """Every thread the group owns (bool per thread), active or not."""
    stack: list[_Cursor]
    joins: list[tuple[int, int]] = field(default_factory=list)
    """Where this group meets its siblings: (family, stack depth), innermost last."""
    waiting: Operation | None = None
    converging: bool = False
    """Waiting at a collective op for the rest of its threads' groups."""
    arrived: bool = False
    parked: bool = False
    ident: int = 0

    @property
    def mask(self) -> np.ndarray:
        return self.stack[-1].mask if self.stack else self.threads


class Deadlock(Exception):
    pass


class Scheduler:
    """Runs one block (or cluster) of `interp`'s kernel under `schedule`."""

    def __init__(self, interp: Interpreter, frame: Frame, schedule: Schedule) -> None:
        self.interp = interp
        self.schedule = schedule
        self.random = random.Random(schedule.seed)
        self.warp = _lockstep_of(interp)
        self.groups: list[Group] = []
        self.agents: list[Agent] = []
        self.families: dict[int, set[int]] = {}
        self._next = 0
        self.frame = frame
        self.turn = 0
        self.current: Group | None = None
        self._block_ops: dict[Block, list[Operation]] = {}

    def _ops(self, block: Block) -> list[Operation]:
        """The ops of `block`, listed once (a loop body is entered every iteration; cursors only
        read the list)."""
        found = self._block_ops.get(block)
        if found is None:
            found = self._block_ops[block] = list(block.ops)
        return found

    def loops(self) -> list[scf.ForOp]:
        """The runtime loops around the group running now, outermost first."""
        g = self.current
        return [c.op for c in g.stack if isinstance(c, _Loop)] if g is not None else []

    # ---- groups --------------------------------------------------------------------------
    def _group(self, frame: Any, threads: np.ndarray, stack: list[_Cursor], joins: list[tuple[int, int]]) -> Group:
        self._next += 1
        g = Group(frame, threads, stack, list(joins), ident=self._next)
        self.groups.append(g)
        for family, _ in g.joins:
            self.families.setdefault(family, set()).add(g.ident)
        return g

    def _split(self, g: Group, keep: np.ndarray, family: int | None, depth: int) -> Group:
        """A new group of `g`'s threads in `keep` (whole warps), at the same place; `g` keeps the rest."""
        frame = dataclasses.replace(g.frame, values=dict(g.frame.values))
        stack = [_restricted(c, keep) for c in g.stack]
        g.stack = [_restricted(c, ~keep) for c in g.stack]
        threads = g.threads & keep
        g.threads = g.threads & ~keep
        if family is not None and (not g.joins or g.joins[-1] != (family, depth)):
            g.joins.append((family, depth))
            self.families.setdefault(family, set()).add(g.ident)
        child = self._group(frame, threads, stack, g.joins)
        child.waiting, child.arrived = g.waiting, g.arrived
        return child

    def _family(self) -> int:
        self._next += 1
        return self._next

    def _by_warp(self, per_thread: np.ndarray) -> np.ndarray:
        """(warps, lanes) view of a per-thread bool array (the last warp padded with False)."""
        w = self.warp
        pad = -per_thread.size % w
        return (np.concatenate([per_thread, np.zeros(pad, bool)]) if pad else per_thread).reshape(-1, w)

    def _per_thread(self, per_warp: np.ndarray, n: int) -> np.ndarray:
        return np.repeat(per_warp, self.warp)[:n]  # type: ignore[no-any-return]

    def _warps_where(self, mask: np.ndarray, cond: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per thread: whether its warp's active lanes all have `cond`, none, or some."""
        n = mask.size
        active = self._by_warp(mask)
        yes = (active & self._by_warp(cond)).any(axis=1)
        no = (active & ~self._by_warp(cond)).any(axis=1)
        return (self._per_thread(yes & ~no, n), self._per_thread(no & ~yes, n), self._per_thread(yes & no, n))

    # ---- running -------------------------------------------------------------------------
    def run(self, block: Block, mask: np.ndarray) -> None:
        self._group(self.frame, mask.copy(), [_Run(list(block.ops), 0, mask.copy())], [])
        steps = 0
        with np.errstate(all="ignore"):
            while self.groups or any(not a.done for a in self.agents):
                steps += 1
                if steps > MAX_STEPS:
                    raise self.interp.fault("runaway-loop", "the block's warps kept waiting on each other without end",
                                            None, self.frame)
                if not self._move():
                    self._stuck()

    def _runnable(self) -> list[Group]:
        out = []
        for g in self.groups:
            if g.parked:
                continue
            if g.converging:
                if not self._converged(g):
                    continue
            elif g.waiting is not None and not self._passes(g):
                continue
            out.append(g)
        return out

    def _move(self) -> bool:
        """One step of the schedule; False when nothing can move."""
        agents = [a for a in self.agents if not a.done]
        self.agents = agents
        policy = self.schedule.policy
        if agents and policy == "round-robin":
            agents[0].finish()
            return True
        runnable = self._runnable()
        if policy == "random" and agents and (not runnable or self.random.random() < 0.5):
            self.random.choice(agents).finish()
            return True
        if not runnable:
            if agents:  # delay-async: an agent only when nothing else can move
                agents[0].finish()
                return True
            return self._unpark() or self._diverged()
        if policy == "random":
            g = self.random.choice(runnable)
        else:
            self.turn += 1
            g = runnable[self.turn % len(runnable)]
        self._advance(g)
        return True

    def _unpark(self) -> bool:
        """Nothing else can move: groups waiting for their siblings go on alone."""
        parked = [g for g in self.groups if g.parked]
        for g in parked:
            family, _ = g.joins.pop()
            self.families.get(family, set()).discard(g.ident)
            g.parked = False
        return bool(parked)

    def _diverged(self) -> bool:
        """Warps wait to run a collective op with warps that wait at another collective op: they
        never meet. The op runs for the warps there (its rule reports what is missing)."""
        for g in self.groups:
            if not g.converging:
                continue
            missing = self._missing(g, g.waiting, g.mask)  # type: ignore[arg-type]
            elsewhere = [o for o in self.groups if o is not g and o.threads[missing].any()]
            if all(o.converging and o.waiting is not g.waiting for o in elsewhere):
                g.waiting, g.converging = None, False
                self._advance(g, alone=True)
                return True
        return False

    def _passes(self, g: Group) -> bool:
        """Whether a waiting group may go on (part of it may: it splits)."""
        op = g.waiting
        assert op is not None
        rule = _WAITS[type(op)]
        mask = g.mask
        if not g.arrived:
            rule.arrive(self.interp, op, g.frame, mask)
            g.arrived = True
        ready = rule.ready(self.interp, op, g.frame, mask) & mask
        if not ready.any():
            return False
        whole, _, _ = self._warps_where(mask, ready)
        whole &= g.threads
        if not whole.any():
            return False
        if (whole & mask).sum() != mask.sum():
            self._split(g, ~whole & g.threads, None, 0).arrived = True  # the warps still waiting
        rule.leave(self.interp, op, g.frame, g.mask)
        g.waiting, g.arrived = None, False
        return True

    def _missing(self, g: Group, op: Operation, mask: np.ndarray) -> np.ndarray:
        """Threads of the collective groups `g` runs `op` for that are elsewhere, still running."""
        size = _COLLECTIVES[type(op)](self.interp, op)
        if size <= self.warp or mask.size % size:
            return np.zeros(0, np.int64)
        active = mask.reshape(-1, size)
        partial = active.any(axis=1) & ~active.all(axis=1)
        if not partial.any():
            return np.zeros(0, np.int64)
        wanted = np.zeros(mask.size, bool)
        wanted.reshape(-1, size)[partial] = True
        wanted &= ~mask
        alive = np.zeros(mask.size, bool)
        for other in self.groups:
            if other is not g:
                alive |= other.threads
        return np.flatnonzero(wanted & alive)

    def _converged(self, g: Group) -> bool:
        """Whether the rest of `g`'s collective groups wait at the same op: they join `g` and it runs."""
        op = g.waiting
        missing = self._missing(g, op, g.mask)  # type: ignore[arg-type]
        if missing.size == 0:
            g.waiting, g.converging = None, False
            return True
        partners = [o for o in self.groups if o is not g and o.converging and o.waiting is op
                    and (o.threads[missing]).any()]
        covered = np.zeros(g.mask.size, bool)
        for o in partners:
            covered |= o.mask
        if not covered[missing].all() or any(len(o.stack) != len(g.stack) for o in partners):
            return False
        for o in partners:
            self._absorb(g, o)
        g.waiting, g.converging = None, False
        return True

    def _stuck(self) -> None:
        """No group can move and no agent is in flight: a deadlock, described."""
        waits = []
        for g in self.groups:
            op = g.waiting
            if op is None:
                continue
            waiting = np.flatnonzero(g.mask)
            if g.converging:
                missing = self._missing(g, op, g.mask)
                kind, what, named = "deadlock", f"threads {_span(missing)} to run {op.name} with them", None
            else:
                kind, what, named = _WAITS[type(op)].waiting_for(self.interp, op, g.frame, g.mask)
            waits.append((g.converging, op, waiting, waiting if named is None else named, kind, what))
        waits.sort(key=lambda w: w[0])  # what cannot complete first; warps waiting for their warpgroup after
        _, op, _, named, kind, _ = waits[0] if waits else (False, None, None, np.zeros(0, int), "deadlock", "")
        described = "; ".join(f"threads {_span(t)} at {self.interp.where(o)} wait for {w}" for _, o, t, _, _, w in waits)
        raise self.interp.fault(kind, f"no thread can go on: {described} (schedule {self.schedule})", op, self.frame,
                                thread=int(named[0]) if named.size else None, threads=named.tolist())

    def _advance(self, g: Group, alone: bool = False) -> None:
        """Run `g` until its turn ends: a sync point, a wait, a split, or its end. `alone`: `g`
        stands at a collective op the rest of its threads never reach; it runs that op without
        them (the op's rule reports who is missing) and its turn ends there."""
        interp = self.interp
        self.current = g
        while True:
            if not g.stack:
                self._finished(g)
                return
            top = g.stack[-1]
            if isinstance(top, _Run):
                if top.index >= len(top.ops):
                    g.stack.pop()
                    if self._region_done(g):
                        return
                    continue
                op = top.ops[top.index]
                top.index += 1
                kind = type(op)
                if kind is scf.IfOp:
                    if self._enter_if(g, op, top.mask):  # type: ignore[arg-type]
                        return
                    continue
                if kind is scf.ForOp:
                    self._enter_for(g, op, top.mask)  # type: ignore[arg-type]
                    continue
                if kind is scf.YieldOp:
                    continue
                if kind in _WAITS:
                    g.waiting = op
                    return
                if kind in _COLLECTIVES and not alone and self._missing(g, op, top.mask).any():
                    top.index -= 1
                    g.waiting, g.converging = op, True
                    return
                interp.run_op(op, g.frame, top.mask)
                if alone or kind in _SYNC_POINTS:
                    return
            elif isinstance(top, _Loop):
                if self._next_iteration(g, top):
                    return
            else:
                if top.pending:
                    block, sub = top.pending.pop(0)
                    g.stack.append(_Run(self._ops(block), 0, sub))
                else:
                    g.stack.pop()
                    if self._region_done(g):
                        return

    def _finished(self, g: Group) -> None:
        self.groups.remove(g)
        for family, _ in g.joins:
            self.families.get(family, set()).discard(g.ident)
        self._merge_parked()

    def _enter_if(self, g: Group, op: scf.IfOp, mask: np.ndarray) -> bool:
        """Enter the `if`; True when the group split (its turn ends)."""
        cond = np.broadcast_to(self.interp.scalars(g.frame, op.cond).astype(bool), mask.shape)
        yes, no, both = self._warps_where(mask, cond)
        regions = [(op.true_region, mask & cond), (op.false_region, mask & ~cond)]
        parts = [p for p in (yes, no, both) if (p & mask).any()]
        if len(parts) > 1:  # warps go different ways: a group per way, meeting after the if
            family = self._family()
            depth = len(g.stack)
            children = [self._split(g, p, family, depth) for p in parts[1:]]
            for member in (g, *children):
                member_mask = member.mask
                todo = [(r.block, m & member_mask) for r, m in regions if r.blocks and (m & member_mask).any()]
                member.stack.append(_Branches(op, todo, member_mask))
            return True
        todo = [(r.block, m) for r, m in regions if r.blocks and m.any()]
        if todo:
            g.stack.append(_Branches(op, todo, mask))
        return False

    def _enter_for(self, g: Group, op: scf.ForOp, mask: np.ndarray) -> None:
        s = self.interp.scalars
        frame = g.frame
        g.stack.append(_Loop(op, s(frame, op.lb).astype(np.int64), s(frame, op.ub).astype(np.int64),
                             s(frame, op.step).astype(np.int64), mask))

    def _next_iteration(self, g: Group, loop: _Loop) -> bool:
        """Start the loop's next iteration, or leave it; True when the group split."""
        if loop.entered:
            loop.i = loop.i + loop.step
        loop.entered = True
        active = loop.mask & (loop.i < loop.ub)
        if not active.any():
            g.stack.pop()
            return self._region_done(g)
        loop.iterations += 1
        if loop.iterations > MAX_ITERATIONS:
            raise self.interp.fault("runaway-loop", f"a loop ran more than {MAX_ITERATIONS} iterations in one block",
                                    loop.op, g.frame)
        leaving = loop.mask & ~active
        done = self._per_thread(~self._by_warp(active).any(axis=1), active.size) & loop.mask if leaving.any() \
            else leaving  # every thread of the loop goes on: no warp leaves
        if done.any():  # these warps have left the loop: they go on without the others
            family = self._family() if not g.joins or g.joins[-1][1] != len(g.stack) - 1 else g.joins[-1][0]
            depth = len(g.stack) - 1
            child = self._split(g, done, family, depth)
            child.stack.pop()
            child.parked = self._park(child)
            loop.mask = loop.mask & ~done
        body = loop.op.body.block
        g.frame.values[body.args[0]] = loop.i.astype(np.int32)
        g.stack.append(_Run(self._ops(body), 0, active & ~done))
        return False

    def _region_done(self, g: Group) -> bool:
        """`g` finished an `if` or a loop: it waits there for siblings split off inside it."""
        if g.joins and g.joins[-1][1] == len(g.stack):
            if self._park(g):
                g.parked = True
                return True
        return False

    def _park(self, g: Group) -> bool:
        """Wait for siblings (True), or — every sibling here already — merge with them."""
        family, depth = g.joins[-1]
        members = self.families.get(family, set())
        here = [o for o in self.groups if o.ident in members and o is not g and o.parked
                and o.joins and o.joins[-1] == (family, depth)]
        for other in here:
            self._absorb(g, other)
        if len(self.families.get(family, set()) - {g.ident}) == 0:
            g.joins.pop()
            self.families.pop(family, None)
            return False
        return True

    def _merge_parked(self) -> None:
        """A group ended: parked siblings it left alone may all be here now."""
        for g in list(self.groups):
            if g.parked and g in self.groups:
                family, _ = g.joins[-1]
                if self.families.get(family, set()) <= {o.ident for o in self.groups if o.parked}:
                    g.parked = self._park(g)

    def _absorb(self, g: Group, other: Group) -> None:
        """`other` (at the same place) joins `g`."""
        keep = other.threads
        g.threads = g.threads | keep
        for mine, theirs in zip(g.stack, other.stack):
            mine.mask = mine.mask | theirs.mask
            if isinstance(mine, _Loop):
                mine.i = np.where(keep, theirs.i, mine.i)
        values, others = g.frame.values, other.frame.values
        for key, value in others.items():
            if values.get(key) is not value:
                values[key] = _merged(values.get(key), value, keep)
        self.groups.remove(other)
        for family, _ in other.joins:
            self.families.get(family, set()).discard(other.ident)

    # ---- agents --------------------------------------------------------------------------
    def start(self, agent: Agent) -> None:
        """An asynchronous operation is in flight from now."""
        self.agents.append(agent)

    def force(self, agents: list[Agent]) -> None:
        """A wait needs these agents done: they run now, at the latest."""
        for a in agents:
            a.finish()


def _merged(mine: Any, theirs: Any, keep: np.ndarray) -> Any:
    """A value both groups computed, each for its own threads."""
    if mine is None:
        return theirs
    if isinstance(mine, np.ndarray) and isinstance(theirs, np.ndarray):
        n = keep.size
        a = np.broadcast_to(mine, (n, *mine.shape[1:])) if mine.ndim == 0 or mine.shape[0] != n else mine
        b = np.broadcast_to(theirs, (n, *theirs.shape[1:])) if theirs.ndim == 0 or theirs.shape[0] != n else theirs
        if a.shape != b.shape:
            return theirs if keep.any() else mine
        return np.where(keep.reshape(-1, *([1] * (a.ndim - 1))), b, a)
    base_a, base_b = getattr(mine, "base", None), getattr(theirs, "base", None)
    if isinstance(base_a, np.ndarray) and isinstance(base_b, np.ndarray) and base_a.shape == base_b.shape:
        return dataclasses.replace(mine, base=np.where(keep, base_b, base_a))
    return mine


def _span(threads: np.ndarray) -> str:
    t = threads.tolist()
    if not t:
        return "[]"
    if t == list(range(t[0], t[-1] + 1)) and len(t) > 2:
        return f"{t[0]}–{t[-1]}"
    return str(t[:8]) + (" ..." if len(t) > 8 else "")
