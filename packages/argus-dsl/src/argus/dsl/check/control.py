"""Control flow and loops: branches (masked where the condition is concrete, both sides joined
where it is symbolic), loops with concrete bounds unrolled, loops with symbolic bounds run with
a fresh index symbol until their entry state is stable (`fixpoint`, renaming the previous
iteration with `Renamer`). A loop whose bounds differ from thread to thread is run the same way
over a trip counter the threads share, each thread's index its own start plus the step times it,
and the body under each thread's own condition where the trip counts differ (`Counter`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Affine, add_keys, among, sub_keys, unique_sorted
from argus.verify.memory import RESET
from argus.verify.tags import BYTES, SHIFT, TOP, join

from ..ir import dialect as D
from ..ir.registry import meaning
from . import batching, rules
from .initialization import Paths, conditional, written
from .joins import Walk
from .state import CONCRETE_TRIPS, LoopContext, MAX_PASSES, State, key_component, same_values

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from argus.verify.affine import Key
    from xdsl.dialects import scf
    from xdsl.ir import Operation
    from .analysis import TagAnalysis
    from .initialization import Conjunction


def if_rule(a: TagAnalysis, op: scf.IfOp, mask: np.ndarray) -> None:
    cond = a.values.get(op.cond)
    if isinstance(cond, Affine) and cond.concrete:
        c = cond.const != 0
        for region, sub in ((op.true_region, mask & c), (op.false_region, mask & ~c)):
            if sub.any() and region.blocks:
                a.run_block(region.block, sub)
        return
    # a symbolic (or data-dependent) condition: both sides, joined
    false = op.false_region.block if op.false_region.blocks else None
    both_sides(a, op, cond, mask, lambda: a.run_block(op.true_region.block, mask),
               None if false is None else lambda: a.run_block(false, mask))


def both_sides(a: TagAnalysis, op: Operation, cond: Any, mask: np.ndarray, true: Callable[[], None],
               false: Callable[[], None] | None) -> None:
    """A branch on a symbolic (or data-dependent) condition `cond`: each side run for every thread
    of `mask`, under the comparison it makes of the condition, and the two states joined."""
    before = a.snapshot()
    tracked = a.tracking()
    paths = Paths.branch(cond if isinstance(cond, Affine) else None)
    outside = a.path
    shared = cond.row(int(np.flatnonzero(mask)[0])) if isinstance(cond, Affine) and \
        _uniform_over(cond, np.flatnonzero(mask)) else None
    known = isinstance(cond, Affine)
    if known:
        a.branches.append((cond, "ne0"))
    a.guards += 1
    try:
        a.path = outside + _path_of(a, shared, "ne0")
        true()
        after_true = a.snapshot(scope=(len(before.memories), len(before.slots)))
        tracked_true = a.tracking()
        a.restore(before)
        a.set_tracking(tracked)
        if false is not None:
            a.path = outside + _path_of(a, shared, "eq0")
            if known:
                a.branches[-1] = (cond, "eq0")
            false()
    finally:
        a.guards -= 1
        a.path = outside
        if known:
            a.branches.pop()
    a.join_into(after_true, cond if isinstance(cond, Affine) else None, origin=str(a.where(op)), paths=paths)
    a.join_tracking(tracked_true)


def _path_of(a: TagAnalysis, condition: Key | None, kind: str) -> Conjunction:
    """When a side of a branch runs, for `TagAnalysis.path`: the comparison `kind` of the
    condition the threads running it share (none where they do not share one: a read there is
    then taken to run whenever its block does)."""
    return (a.initialization.simplified(((kind, condition),)) or ()) if condition is not None else ()


def for_rule(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray) -> None:
    lb, ub, step = (a.int_value(v, op) for v in (op.lb, op.ub, op.step))
    body = op.body.block
    name = body.args[0].name_hint or "i"
    if not step.concrete or (step.const[mask] <= 0).any():
        raise a.undecidable(op, "the checker needs loops with a positive constant step")
    if not mask.any():
        return
    if lb.concrete and ub.concrete:
        if D.is_unrolled(op):  # a static loop kept rolled: its iterations at once where they can be
            run = a.preparation.rolled(op)
            if run is None:
                return _for_concrete(a, op, mask, lb.const, ub.const, step.const, name)
            return batching.execute(a, run, mask, rules.rule_of,
                                    lambda: _for_concrete(a, op, mask, lb.const, ub.const, step.const, name))
        trips = np.maximum(0, -(-(ub.const - lb.const) // np.maximum(step.const, 1)))
        if trips[mask].max(initial=0) <= CONCRETE_TRIPS:
            return _for_concrete(a, op, mask, lb.const, ub.const, step.const, name)
    active = np.flatnonzero(mask)
    s = int(step.const[active[0]])
    if (step.const[mask] != s).any():
        raise a.undecidable(op, "the threads of a block disagree on the step of this runtime loop; the checker "
                                "needs one constant step")
    first = int(active[0])
    if _uniform_over(lb, active) and _uniform_over(ub, active):
        return _for_symbolic(a, op, mask, lb.row(first), ub.row(first), s, name)
    counter = Counter.of(a, op, mask, lb, ub, s)
    _for_symbolic(a, op, mask, (0, ()), add_keys(counter.last, (1, ())), 1, name + TRIPS, counter)


TRIPS = "_trip"
"""What a trip counter's symbol adds to its loop's name (`c_trip` counts the iterations of `c`)."""


@dataclass
class Counter:
    """A runtime loop whose threads start (or stop) at bounds of their own, `range(lane, n, 32)`:
    its iterations are numbered by a trip counter n every thread shares, from 0 to `last` (the
    most iterations a thread runs, less one), and thread t's index in iteration n is
    ``start_t + step·n``. Where the threads' trip counts differ, `guarded`: iteration n runs
    the body as under ``if start_t + step·n < stop_t`` (a branch on the thread's own condition),
    which is what the loop is — so every fact, race and write the body makes is the branch's."""

    start: Affine
    stop: Affine
    step: int
    last: Key
    guarded: bool
    walks: dict[int, Walk] = field(default_factory=dict)
    """Per trip counter symbol, the reductions its iterations follow (`argus.dsl.check.joins.Walk`)."""

    @classmethod
    def of(cls, a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, lb: Affine, ub: Affine, step: int) -> Counter:
        """The counter of a loop from `lb` to `ub` by `step` (thread t's bounds at row t), or the
        reason it cannot be followed (`Undecidable`)."""
        sp, active = a.space, np.flatnonzero(mask)
        span = sp.sub(ub, lb)
        if not all(bool((x[active] == x[active[0]]).all()) for x in span.terms.values()):
            raise a.undecidable(op, "the threads of a block disagree on the bounds of this runtime loop, and its "
                                    "trip count is not one form for all of them (a size plus a constant per "
                                    "thread, as in range(lane, n, 32)); the checker cannot number its iterations")
        extent = span.row(int(active[0]))
        longest = int(span.const[active].max())
        last = sp.floordiv(sp.of_key((longest - 1, extent[1]), 1), sp.constant(step, 1)).row(0)
        guarded = bool((span.const[active] != longest).any())
        if guarded:
            blocking = _needs_every_thread(op)
            if blocking is not None:
                raise a.undecidable(op, f"the threads of a block run different numbers of iterations of this loop, "
                                        f"and its body holds {blocking.name.rsplit('.', 1)[-1]} at "
                                        f"{a.where(blocking)}, which needs the "
                                        "threads together: some threads may reach it more often than others")
        return cls(lb, ub, step, last, guarded)

    def index(self, a: TagAnalysis, symbol: int) -> Affine:
        """Each thread's index in iteration `symbol` of the counter."""
        return a.space.add(self.start, a.space.scale(a.space.of_symbol(symbol, a.n), self.step))

    def run(self, a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, symbol: int) -> None:
        """The body once, in iteration `symbol`: under each thread's condition where guarded."""
        if not self.guarded:
            return _walked_block(a, op, mask, self.walk(a, symbol))
        index = a.values[op.body.block.args[0]]
        below = a.space.binary("lt", index, self.stop, lambda x, y: np.less(x, y).astype(np.int64))
        walk, outer = self.walk(a, symbol, below), a.walk
        a.walk = walk  # (the guard's join continues the walk's reductions: `Walk`)
        try:
            both_sides(a, op, below, mask, lambda: a.run_block(op.body.block, mask), None)
        finally:
            a.walk = outer

    def walk(self, a: TagAnalysis, symbol: int, below: Any = None) -> Walk:
        """The walk of iteration `symbol`, its reductions' seeds kept from pass to pass."""
        found = self.walks.get(symbol)
        if found is None:
            trips = None if self.guarded else add_keys(self.last, (1, ()))  # (every thread runs them all)
            found = self.walks[symbol] = Walk(a, self.start, self.stop, self.step, symbol, below, trips=trips)
        found.below = below
        return found


def _needs_every_thread(op: scf.ForOp) -> Operation | None:
    """The first op of the loop's body (at any depth) that its threads must run together: a
    barrier, a wait, a warp shuffle, a collective (a product, a copy atom): under a condition of
    the thread's own, some threads skip it."""
    for inner in op.body.walk():
        if isinstance(inner, D.ShuffleOp):
            return inner
        meant = meaning(type(inner))
        if meant is not None and (meant.wait is not None or meant.sync or meant.collective or meant.lockstep):
            return inner
    return None


def _uniform_over(value: Affine, points: np.ndarray) -> bool:
    """Whether `value` has one form at all of `points`."""
    return all(bool((x[points] == x[points[0]]).all()) for x in (value.const, *value.terms.values()))


def _for_concrete(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, lb: np.ndarray, ub: np.ndarray, step: np.ndarray,
                  name: str) -> None:
    i = lb.copy()
    body = op.body.block
    context = LoopContext(name, None, op=op)
    a.loops.append(context)
    try:
        while True:
            active = mask & (i < ub)
            if not active.any():
                return
            context.values = i.copy()
            a.values[body.args[0]] = a.space.constant(i, a.n)
            a.tags.pop(body.args[0], None)
            a.run_block(body, active)
            i = i + step
    finally:
        a.loops.pop()


def _for_symbolic(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, lb: Key, ub: Key, step: int, name: str,
                  counter: Counter | None = None) -> None:
    """Every iteration at once, from the join of the state before the loop and the state an
    iteration leaves (see the module docstring). When that join loses tags both sides have
    (a pipeline's prologue fills a stage with what iteration i then refills for i + 1, in
    another form), the first iteration is analysed on its own and the others from what it
    leaves; their first walk records what it reads before writing, so that it is final when
    the entry state later iterations see changes none of that. A loop whose shared tiles
    receive data both before it and in it is peeled at once (`Preparation.fills_before`): a
    pipeline is walked twice, once for its first iteration and once for the others. With a
    `counter`, the symbol is its trip counter (`lb` 0, `ub` past its last, `step` 1), not the index."""
    before = a.snapshot()
    scope = (len(before.memories), len(before.slots))
    last = add_keys(ub, (-1, ()))
    nested = a.preparation.holds_a_loop(op)
    symbol = _loop_symbol(a, name, lb, last, step, lb)
    ends = {symbol: [lb, last]}
    walk = _uniform_walk(a, lb, ub, step, symbol) if counter is None else None
    settled = not a.preparation.fills_before(op) and \
        _fixpoint(a, op, mask, symbol, before, step, scope, track=not nested, peelable=True, counter=counter,
                  walk=walk)
    if not settled:  # peel the first iteration
        first = _loop_symbol(a, name, lb, lb, 1, lb, runs_until=last)
        a.restore(before)
        _one_pass(a, op, mask, first, step, counter)
        after_first = a.snapshot(scope)
        rest = _loop_symbol(a, name, add_keys(lb, (step, ())), last, step, lb)
        ends = {first: [lb], rest: [add_keys(lb, (step, ())), last]}
        me: Key = (0, ((rest, 1),))
        base = Renamer(a, first, add_keys(me, (-step, ()))).state(after_first)
        a.restore(before)
        _fixpoint(a, op, mask, rest, base, step, scope, track=not nested, peelable=False,  # (not peelable: settles)
                  counter=counter)
        # a tag the first iteration leaves as the others do (theirs at the first index) is the
        # last iteration's, whichever that is
        kept = [a.inductive_join(tags, m.tags, rest, (0, ((first, 1),)))
                for m, (tags, _, _) in zip(a.memories, after_first.memories)]
        a.join_into(after_first, None, f"a value carried from one iteration to the next of the loop at {a.where(op)}",
                    rest, paths=_after_loop(a, add_keys(lb, (step, ())), ub))
        for m, tags in zip(a.memories, kept):
            m.tags[...] = tags
    # after the loop: it ran (the state it leaves) or it did not (the state before it). A loop
    # that runs in every launch leaves the tags of its last iteration, as functions of its index
    # symbol, which is free outside the loop: what is proved of them holds whichever iteration
    # was the last (a producer's stages, read by consumers in a loop of their own)
    left = [m.tags.copy() for m in a.memories]
    walking = walk if counter is None else counter.walk(a, symbol)
    walked = walking.done(a, before) if walking is not None and settled and a.table.asserted else []
    paths = _after_loop(a, lb, ub)
    a.join_into(before, None, f"a value carried from one iteration to the next of the loop at {a.where(op)}", symbol,
                paths=paths)
    for i, threads, tags in walked:  # (a reduction over the walk: every column each thread's walk visits, none if none)
        a.slots[i].tags = np.where(threads[:, None], tags, a.slots[i].tags)
    runs = paths.theirs == (None,) or (counter is None and a.table.asserted
                                        and a.always_nonnegative(sub_keys(add_keys(ub, (-1, ())), lb)))
    if runs:  # (the solver asked only where products' spans are at stake)
        for m, tags in zip(a.memories, left):
            m.tags[...] = tags
        if counter is None and a.table.asserted:  # (what products hold at the end: the claims on stores)
            _to_the_last_iteration(a, symbol if settled else rest, lb, ub, step, name)
    if counter is not None:
        _written_by_the_end(a, scope[0], ends)


def _known_zero(a: TagAnalysis, key: Key) -> bool:
    """Whether a fact of the kernel says ``key = 0``, itself or as an assumption ``key == 0``."""
    for kind, fact in a.facts:
        if kind != "eq0":
            continue
        if fact == key:
            return True
        if fact[0] == -1 and len(fact[1]) == 1 and fact[1][0][1] == 1:
            atom = a.space.atoms[fact[1][0][0]]
            if atom.kind == "eq" and sorted(atom.args) == sorted((key, (0, ()))):
                return True
    return False


def _to_the_last_iteration(a: TagAnalysis, symbol: int, lb: Key, ub: Key, step: int, name: str) -> None:
    """After a loop that runs in every launch, the tags it leaves are those of its last
    iteration: its index symbol in them becomes a new symbol for the last index (at least
    ``ub - step``, below ``ub``, on the loop's grid), whose bounds join the domain. So what
    holds only at the end (an accumulator that has summed every k slice) is provable."""
    sp = a.space
    if step == 1 or _known_zero(a, sp.mod_key(sub_keys(ub, lb), (step, ()))):
        # the last index is known: ub − step (the loop runs ub − lb, a multiple of step, in steps)
        a.restore(Renamer(a, symbol, add_keys(ub, (-step, ()))).state(a.snapshot()))
        return
    known = len(sp.constraints)
    last = sp.symbol(f"{name}_last", "loop", add_keys(ub, (-step, ())), add_keys(ub, (-1, ())))
    me: Key = (0, ((last, 1),))
    sp.require_nonnegative(sub_keys(me, lb))
    if step > 1:
        sp.require_zero(sp.mod_key(sub_keys(me, lb), (step, ())))
    facts = sp.constraints[known:]
    del sp.constraints[known:]
    for fact in facts:
        a.add_fact(fact)
    a.elements_before[last] = len(a.table.tags)
    a.restore(Renamer(a, symbol, me).state(a.snapshot()))


def _written_by_the_end(a: TagAnalysis, memories: int, ends: dict[int, list[Key]]) -> None:
    """After a loop, the launches in which a byte is unwritten as those in which it is unwritten
    after each of the iterations `ends` names (per symbol of the loop, iterations it has in every
    launch where it runs), not after some iteration or other. Sound because a written byte stays
    written: unwritten after the loop, it was unwritten after every iteration. Where threads run
    different numbers of iterations, the counter's first says whether a thread ran at all and its
    last whether it ran to the end (`Counter`)."""
    codes = a.initialization
    for m in a.memories[:memories]:
        coded = conditional(m.site)
        if not coded.any():
            continue
        site = m.site.copy()
        for code in unique_sorted(m.site[coded]).tolist():
            condition = codes.condition(code)
            for symbol, iterations in ends.items():
                condition = functools.reduce(codes.both, [codes.substituted(condition, symbol, at)
                                                          for at in iterations])
            site[m.site == code] = codes.code(condition) if condition else RESET
        m.site[...] = site


def _after_loop(a: TagAnalysis, lb: Key, ub: Key) -> Paths:
    """The paths joining after a loop from `lb` to `ub` (exclusive): the state before it joined in
    ("theirs") where it runs no iteration, the state it leaves ("ours") where it runs (a loop
    from 0 to a tensor's size: only ours)."""
    return a.initialization.paths((("ge0", sub_keys(lb, ub)),), (("ge0", sub_keys(ub, add_keys(lb, (1, ())))),))


def _loop_symbol(a: TagAnalysis, name: str, lo: Key, hi: Key, step: int, start: Key,
                 runs_until: Key | None = None) -> int:
    """The symbol of a loop's index over [lo, hi], on the grid start + step·n; its bounds are
    facts inside the loop only (a launch where it runs no iteration stays in the domain of
    everything outside it). `runs_until`: the last index the loop reaches (for a symbol that
    stands for one iteration, which exists only if the loop runs that far)."""
    sp = a.space
    known = len(sp.constraints)
    symbol = sp.symbol(name, "loop", lo, hi)
    a.elements_before[symbol] = len(a.table.tags)
    a.loop_starts[symbol] = start
    me: Key = (0, ((symbol, 1),))
    if step > 1:
        sp.require_zero(sp.mod_key(sub_keys(me, start), (step, ())))
    if runs_until is not None:
        sp.require_nonnegative(sub_keys(runs_until, me))
    a.loop_facts[symbol] = sp.constraints[known:]
    del sp.constraints[known:]
    return symbol


def _one_pass(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, symbol: int, step: int,
              counter: Counter | None = None) -> None:
    """The body once, its assertions checked, with the index `symbol` (or `counter`'s index in
    its iteration `symbol`)."""
    a.loops.append(_enter(a, op, symbol, step, counter))
    a.obligations.scope = a.obligations.scope + (symbol,)
    try:
        _run_body(a, op, mask, symbol, counter)
    finally:
        a.loops.pop()
        a.obligations.scope = a.obligations.scope[:-1]


def _enter(a: TagAnalysis, op: scf.ForOp, symbol: int, step: int, counter: Counter | None) -> LoopContext:
    """The body's index set for iteration `symbol`, and the loop's context for witnesses."""
    body = op.body.block
    index = a.space.of_symbol(symbol, a.n) if counter is None else counter.index(a, symbol)
    a.values[body.args[0]] = index
    a.tags.pop(body.args[0], None)
    label = a.space.symbols[symbol].name
    if counter is not None:  # (witnesses name the loop's index, which `index` gives)
        label = label.replace(TRIPS, "", 1)
    return LoopContext(label, symbol, step=step, index=None if counter is None else index, op=op)


def _run_body(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, symbol: int, counter: Counter | None,
              walk: Walk | None = None) -> None:
    if counter is not None:
        counter.run(a, op, mask, symbol)
    elif walk is not None:
        _walked_block(a, op, mask, walk)
    else:
        a.run_block(op.body.block, mask)


def _walked_block(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, walk: Walk) -> None:
    """The body of a loop whose threads run every iteration, its row reductions continuing the
    walk (`argus.dsl.check.joins.Walk.continued`)."""
    entry = [s.tags for s in a.slots]  # (tag arrays of values are never changed in place)
    a.run_block(op.body.block, mask)
    walk.continued(a, entry)


def _uniform_walk(a: TagAnalysis, lb: Key, ub: Key, step: int, symbol: int) -> Walk | None:
    """The walk of a loop of step 1 whose threads share its bounds (`range(0, cols)`), whose
    symbol is the index, for the row reductions it accumulates (None: another step, or no claim
    that could name one)."""
    if step != 1 or not a.table.asserted:
        return None
    return Walk(a, a.space.of_key(lb, a.n), a.space.of_key(ub, a.n), 1, symbol, None, origin=lb)


def _fixpoint(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, symbol: int, base: State, step: int,
              scope: tuple[int, int], track: bool, peelable: bool, counter: Counter | None = None,
              walk: Walk | None = None) -> bool:
    """Run the body from the join of `base` (what flows into the iterations of `symbol`) and
    what an iteration leaves, renamed to the next, until that entry settles: True, the state
    being what the final pass left; False when `peelable` and the join loses tags both sides
    have."""
    sp = a.space
    me: Key = (0, ((symbol, 1),))
    lo = sp.symbols[symbol].lo
    context = _enter(a, op, symbol, step, counter)
    entry = base
    frozen: list[np.ndarray] = []
    """Per memory, the bytes whose write status at the entry no longer moves from pass to pass
    once widened: the status before the loop (what the first iteration sees, and no less)."""
    rename = Renamer(a, symbol, add_keys(me, (-step, ())))
    carried = f"a value carried from one iteration to the next of the loop at {a.where(op)}"
    checking = a.checking
    # Under claims on products, an accumulator's k span grows with the index: a first pass from
    # the state before the loop (`peelable`) then only proposes the entry, and is walked without
    # its checks. Should it settle after all, the next pass walks the same entry with them (below:
    # a pass that did not check is never final), so this costs a pass, never a check.
    proposes = peelable and a.table.asserted and a.preparation.holds_a_product(op)
    a.loops.append(context)
    a.obligations.scope = a.obligations.scope + (symbol,)
    try:
        # Assertions are checked on a pass whose entry state is final. The first pass starts
        # from `base`; it is final when what the iteration carries to the next (the entry state
        # changes) is never read before being overwritten, which the first pass records.
        # Otherwise the passes go on until the entry state settles.
        for attempt in range(MAX_PASSES + 1):
            mark = a.obligations.mark()
            facts_mark = (set(a.facts), set(a.replay_facts), {k: list(v) for k, v in a.loop_facts.items()})
            a.restore(entry)
            tracking = attempt == 0 and track
            a.checking = checking and (attempt > 0 or (tracking and not proposes))
            if tracking:
                a.track(scope)
            products, first_pass = a.table.products, None
            outer = products.first_pass
            if a.table.asserted:
                products.take_unjoined()
                if attempt == 0:  # (A's and B's spans may differ as written only at the first iteration)
                    products.first_pass = first_pass = a.first_iteration_span(symbol, lo)
            try:
                _run_body(a, op, mask, symbol, counter, walk)
            finally:
                products.first_pass = outer
            proposed = first_pass is not None and first_pass in products.used  # (it only proposes an entry)
            products.used.discard(first_pass)
            exposed = a.untrack(scope) if tracking else None
            exposed = None if proposed else exposed
            respanned = a.spans_entry(base, symbol, lo) if attempt == 0 and a.table.asserted else None
            if respanned is not None:  # products' entry in its general form: the passes start again from it
                _forget_pass(a, mark, facts_mark)
                base = entry = respanned
                continue
            walking = walk if counter is None else counter.walk(a, symbol)
            walked = walking.seeded(base) if walking is not None and attempt == 0 and a.table.asserted else None
            if walked is not None:  # reductions' entry in its general form: the walk's first n columns
                _forget_pass(a, mark, facts_mark)
                base = entry = walked
                continue
            if exposed is not None and (a.checking or not checking) and _carries_nothing(a, entry, exposed):
                return True  # the entry state of later iterations changes nothing this pass saw
            after = a.snapshot(scope)
            if exposed is not None and (a.checking or not checking) and \
                    not reads_carried_cheaply(a, base, after, entry, exposed, rename, symbol, lo, step):
                return True  # (what the pass left is the state now)
            # the entry of a later iteration: what this iteration leaves, seen one step later
            a.restore(base)
            back = rename.state(after)
            a.join_into(back, None, carried, symbol, first=lo, step=step)
            for m, still, (_, site, _) in zip(a.memories, frozen, base.memories):
                m.site[still] = site[still]  # (widened: the write status before the loop, in every iteration)
            new_entry = a.snapshot(scope)
            if not proposed and (new_entry.same_as(entry) or
                                 (exposed is not None and not _reads_carried(entry, new_entry, exposed))):
                if a.checking or not checking:
                    if peelable and _races_carried(a, mark, base, entry):
                        _forget_pass(a, mark, facts_mark)
                        return False
                    a.restore(after)
                    return True
                continue
            _forget_pass(a, mark, facts_mark)
            if peelable and attempt == 0 and _loses_tags(a, base, back, new_entry):
                return False
            if attempt == MAX_PASSES - 2:  # widen what still moves
                frozen = [n[1] != e[1] for n, e in zip(new_entry.memories, entry.memories)]
                new_entry = State([(np.where(n[0] != e[0], TOP, n[0]), np.where(still, b[1], n[1]), n[2]) for
                                   n, e, b, still in zip(new_entry.memories, entry.memories, base.memories, frozen)],
                                  new_entry.slots)
            entry = new_entry
        raise a.undecidable(op, "the tags this loop carries from one iteration to the next do not settle")
    finally:
        a.loops.pop()
        a.obligations.scope = a.obligations.scope[:-1]
        a.checking = checking


def _forget_pass(a: TagAnalysis, mark: tuple[Any, ...], facts_mark: tuple[Any, ...]) -> None:
    """Drop what a pass over a loop's body found: its entry state was not final."""
    a.obligations.rollback(mark)  # type: ignore[arg-type]
    a.facts, a.replay_facts = set(facts_mark[0]), set(facts_mark[1])  # the pass's facts go too
    a.loop_facts = {k: list(v) for k, v in facts_mark[2].items()}
    a.floors = {}  # some of the bounds it knew are gone
    a.bounded = {}


def _races_carried(a: TagAnalysis, mark: tuple[Any, ...], base: State, entry: State) -> bool:
    """Whether the pass since `mark` found a race while its entry held shared accesses that the
    back edge leaves unordered (writes, or reads, at the end of the body with no barrier after
    them): such a race may need an iteration before it, and the first iteration is walked on
    its own so that a witness of the others has one (`_for_symbolic`)."""
    if not any(c.kind == "data-race" for c in a.obligations.candidates[mark[0]:]):
        return False
    return any(ours is not None and not np.array_equal(ours, theirs)
               for (_, _, ours), (_, _, theirs) in zip(entry.memories, base.memories))


def _loses_tags(a: TagAnalysis, base: State, back: State, joined: State) -> bool:
    """Whether a loop-entry join made conflicting bytes (⊤, or a value that may be a cleared
    zero) that both sides had tags for."""
    maybe = a.table.products.maybe_zero_bytes() if a.table.asserted else np.zeros(0, np.int64)
    for (ours, *_), (theirs, *_), (both, *_) in zip(base.memories, back.memories, joined.memories):
        if ((ours > TOP) & (theirs > TOP) & ((both == TOP) | among(both, maybe))).any():
            return True
    return False


def _carries_nothing(a: TagAnalysis, entry: State, exposed: tuple[list[np.ndarray], list[bool]]) -> bool:
    """Whether a pass read nothing before overwriting it and leaves no shared write unordered
    that the pass's entry did not have: then no entry state of a later iteration can change
    what it saw (`_reads_carried` without building that state)."""
    memories, slots = exposed
    if any(slots) or any(read.any() for read in memories):
        return False
    return all(old is None or np.array_equal(old, m.join_writers(old, m.epoch_writer))
               for (_, _, old), m in zip(entry.memories, a.memories))


def reads_carried_cheaply(a: TagAnalysis, base: State, after: State, entry: State,
                           exposed: tuple[list[np.ndarray], list[bool]], rename: Renamer, symbol: int,
                           first: Key | None, step: int) -> bool:
    """`_reads_carried` of the entry state a later iteration sees (`base` joined with `after`
    renamed one step back), built only where the pass read before writing: the tags and the
    write status of the memories it read so, the writers of shared memories. (A variable it
    read so: True, and the whole state is built.)"""
    memories, slots = exposed
    if any(slots):
        return True
    for (ours, our_sites, our_writers), (theirs, their_sites, their_writers), (old, old_sites, old_writers), m, read \
            in zip(base.memories, after.memories, entry.memories, a.memories, memories):
        if read.any():
            back = rename.ids(theirs)
            joined = join(ours, back) if first is None else a.inductive_join(ours, back, symbol, first)
            if (read & (old != joined)).any():
                return True
            if first is not None and (read & ~written(old_sites)).any():
                sites = our_sites.copy()
                a.initialization.enter(m, sites, a.initialization.renamed(their_sites, symbol, rename.replacement),
                                       symbol, first, step)
                if (read & (old_sites != sites)).any():
                    return True
        if old_writers is not None and \
                not np.array_equal(old_writers, m.join_writers(our_writers, their_writers)):
            return True
    return False


def _reads_carried(entry: State, new_entry: State, exposed: tuple[list[np.ndarray], list[bool]]) -> bool:
    """Whether a pass read, before overwriting it, anything the entry state changes — or left
    shared writes unordered by a barrier at the end of the body (they race with the next
    iteration's accesses)."""
    memories, slots = exposed
    for (old, old_sites, old_writers), (new, new_sites, new_writers), read in \
            zip(entry.memories, new_entry.memories, memories):
        if (read & ((old != new) | (old_sites != new_sites))).any() or \
                (old_writers is not None and not np.array_equal(old_writers, new_writers)):
            return True
    for (old_tags, old_value), (new_tags, new_value), read in zip(entry.slots, new_entry.slots, slots):
        if read and (not np.array_equal(old_tags, new_tags) or not same_values([old_value], [new_value])):
            return True
    return False


class Renamer:
    """Rewrites tags and values from iteration `symbol` to the iteration before it."""

    def __init__(self, a: TagAnalysis, symbol: int, replacement: Key) -> None:
        self.a = a
        self.symbol = symbol
        self.replacement = replacement
        self.memo: dict[int, int] = {}
        self.components: dict[tuple[Any, ...], Key] = {}
        """Per symbolic part of a component, the part renamed."""
        self.shift = np.zeros(0, np.int64)
        """Per element id: what renaming adds to it (where `done`)."""
        self.done = np.zeros(0, bool)
        self.kept = a.elements_before.get(symbol, 0)
        """Elements below this id were made before the symbol: renaming leaves them as they are."""

    def state(self, state: State) -> State:
        codes = self.a.initialization
        return State([(self.ids(t), codes.renamed(site, self.symbol, self.replacement), writers)
                      for t, site, writers in state.memories],
                     [(self.ids(t), self.value(v)) for t, v in state.slots])

    def ids(self, tags: np.ndarray) -> np.ndarray:
        concrete = tags > TOP
        if not concrete.any():
            return tags
        known = tags[concrete]
        element = (known - 2) >> SHIFT
        size = int(element.max()) + 1
        if size > len(self.shift):  # element ids are small: a table of shifts, filled as needed
            grown = np.zeros(max(size, 2 * len(self.shift)), np.int64)
            grown[:len(self.shift)] = self.shift
            done = np.zeros(len(grown), bool)
            done[:len(self.done)] = self.done
            done[:self.kept] = True
            self.shift, self.done = grown, done
        present = np.zeros(size, bool)
        present[element] = True
        for e in np.flatnonzero(present & ~self.done[:size]).tolist():
            self.shift[e] = self.element(e) - e
            self.done[e] = True
        shift = self.shift[element]
        if not shift.any():
            return tags
        out = tags.copy()
        out[concrete] = known + shift * BYTES
        return out

    def element(self, e: int) -> int:
        new = self.memo.get(e)
        if new is None:
            tag = self.a.table.tags[e]
            renamed = tuple(self.component(v) if isinstance(v, tuple) else v for v in tag)
            new = self.memo[e] = e if renamed == tag else self.a.table.element_id(renamed)
        return new

    def component(self, key: Key) -> Any:
        """A symbolic component of a tag, renamed. Renaming adds to the constant what it makes
        of the symbolic part, which components share (the elements of a tile differ in their
        constants)."""
        part = self.components.get(key[1])
        if part is None:
            part = self.components[key[1]] = self.a.space.substitute((0, key[1]), self.symbol, self.replacement)
        if part[0] == 0 and part[1] == key[1]:  # the symbol does not appear in it
            return key
        return key_component(add_keys((key[0], ()), part))

    def value(self, v: Affine | None) -> Affine | None:
        if v is None or self.symbol not in self.a.space.atoms_of((0, tuple((t, 1) for t in v.terms))) | set(v.terms):
            return v
        forms, inverse = v.forms()
        const = np.zeros(len(forms), np.int64)
        terms: dict[int, np.ndarray] = {}
        for p, form in enumerate(forms):
            key = self.a.space.substitute(form, self.symbol, self.replacement)
            const[p] = key[0]
            for t, c in key[1]:
                terms.setdefault(t, np.zeros(len(forms), np.int64))[p] = c
        return Affine(const[inverse], {t: column[inverse] for t, column in terms.items()})
