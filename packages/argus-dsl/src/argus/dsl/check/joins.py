"""Snapshots and joins of the walk's state: what branches and loops save, restore and join (the
lattice join of tags, values joined into symbolic choices), and the tracking of bytes a loop
body reads before it writes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Affine
from argus.verify.affine import add_keys, among, sub_keys, unique_inverse, unique_sorted
from argus.verify.products import EMPTY, PRODUCT_A, PRODUCT_B, along, canonical, pair_length, same_syntax
from argus.verify.products import ZERO
from argus.verify import reductions as red
from argus.verify.tags import BYTES, PLACE, SHIFT, TOP, join

from .arithmetic import select_int
from .initialization import UNKNOWN_PATHS, written
from .state import Slot, State, key_component, same_values

if TYPE_CHECKING:
    from argus.verify.affine import Key
    from .initialization import Paths


EQUALITY_MS = 2_000
"""The solver's time for one `Joins.always_equal` question (unknown: not equal)."""
EQUALITY_BUDGET_S = 10.0
"""The solver's time for all of one check's `Joins.always_equal` questions: past it, each is
unknown (not equal) at once."""


class Joins:
    """The snapshots and joins part of `TagAnalysis` (a mixin: its state is set in `TagAnalysis.__init__`)."""

    walk: Walk | None = None
    """While the body of a loop whose threads walk their own bounds runs under its guard: the walk
    (`Walk`), whose reductions the join of the guard's two sides continues."""

    def track(self, scope: tuple[int, int]) -> None:
        """Record, for the memories and variables of `scope`, what is read before being written."""
        for m in self.memories[:scope[0]]:
            m.track()
        for slot in self.slots[:scope[1]]:
            slot.stored = slot.exposed = False
            slot.tracked = True

    def tracking(self) -> list[tuple[Any, ...]]:
        """What a loop pass has recorded so far (written and read-first bytes and variables)."""
        out: list[tuple[Any, ...]] = []
        for m in self.memories:
            if m.fresh is not None and m.exposed is not None:
                out.append((m, m.fresh.copy(), m.exposed.copy()))
        for slot in self.slots:
            if slot.tracked:
                out.append((slot, slot.stored, slot.exposed))
        return out

    def set_tracking(self, recorded: list[tuple[Any, ...]]) -> None:
        for owner, written, read in recorded:
            if isinstance(owner, Slot):
                owner.stored, owner.exposed = written, read
            else:
                owner.fresh, owner.exposed = written.copy(), read.copy()

    def join_tracking(self, other: list[tuple[Any, ...]]) -> None:
        """After two sides of a branch: written only where both sides wrote, read-first where
        either side read first."""
        for owner, written, read in other:
            if isinstance(owner, Slot):
                owner.stored, owner.exposed = owner.stored and written, owner.exposed or read
            elif owner.fresh is not None and owner.exposed is not None:
                owner.fresh &= written
                owner.exposed |= read

    def untrack(self, scope: tuple[int, int]) -> tuple[list[np.ndarray], list[bool]]:
        memories = [m.untrack() for m in self.memories[:scope[0]]]
        slots = []
        for slot in self.slots[:scope[1]]:
            slots.append(slot.exposed)
            slot.tracked = False
        return memories, slots

    # ---- state snapshots for joins ----------------------------------------------------
    def snapshot(self, scope: tuple[int, int] | None = None) -> State:
        """The tags of every memory and variable that exists (or the first `scope` of them)."""
        k, v = scope or (len(self.memories), len(self.slots))
        # registers never race: their writers since the last barrier are not part of the state
        return State([(m.tags.copy(), m.site.copy(), None if m.per_thread else m.epoch_writer.copy())
                      for m in self.memories[:k]],
                      [(s.tags.copy(), s.value) for s in self.slots[:v]])

    def restore(self, state: State) -> None:
        for m, (tags, site, writers) in zip(self.memories, state.memories):
            m.tags[...] = tags
            m.site[...] = site
            if writers is not None:
                m.epoch_writer[...] = writers
        for s, (tags, value) in zip(self.slots, state.slots):
            s.tags, s.value = tags.copy(), value

    def join_into(self, other: State, condition: Affine | None, carried: str = "", loop: int | None = None,
                  origin: str = "", first: Key | None = None, paths: Paths = UNKNOWN_PATHS, step: int = 1
                  ) -> None:
        """The current state becomes its join with `other`. Integer variables that differ become
        a select on `condition` or, across loop iterations (`carried`), a value the checker
        does not follow. At a loop's entry (`other` the back edge, renamed to iteration `loop`,
        which starts at `first`), a tag that is the current one at the first iteration is the
        loop's own: the join keeps it (what a pipeline stage holds, as a function of the index).
        A byte written on one path only is written in the launches that take that path, as
        `paths` says when `other` and the current state's path are taken; at a loop's entry
        (whose index moves by `step`), in the iterations after one that wrote it
        (`initialization`)."""
        for m, (tags, site, writers) in zip(self.memories, other.memories):
            if loop is not None and first is not None:
                m.tags[...] = self.inductive_join(m.tags, tags, loop, first)
            else:
                differ = m.tags != tags  # `join`, in place
                if differ.any():
                    if self.table.asserted:  # (a cleared zero on one side: may be zero)
                        m.tags[...] = self.table.products.zero_joined(np.where(differ, TOP, m.tags), m.tags, tags)
                    else:
                        m.tags[differ] = TOP
            if first is not None and loop is not None:  # (a loop's entry: the first iteration starts from
                self.initialization.enter(m, m.site, site, loop, first, step)  # the current state)
            else:
                self.initialization.join(m, m.site, site, paths)
            if writers is not None:
                m.epoch_writer[...] = m.join_writers(m.epoch_writer, writers)
        walking = self.walk is not None and condition is self.walk.below and self.table.asserted
        for i, (s, (tags, value)) in enumerate(zip(self.slots, other.slots)):
            walked = self.walk.joined(self, i, s.tags, tags) if walking else None  # type: ignore[union-attr]
            s.tags = self.joined(s.tags, tags) if walked is None else walked
            label = f"{carried or f'a value joined from two paths at {origin}'} (variable {i})"
            scope = self.obligations.scope
            s.value = self.join_values(condition, value, s.value, label,
                                       loop if loop is not None else (scope[-1] if scope else None),
                                       select=not carried)

    def joined(self, ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
        """`join`, where a cleared zero met something else: a value that may be zero
        (`argus.verify.products.Products.zero_joined`)."""
        out = join(ours, theirs)
        return self.table.products.zero_joined(out, ours, theirs) if self.table.asserted else out

    def inductive_join(self, ours: np.ndarray, theirs: np.ndarray, loop: int, first: Key) -> np.ndarray:
        """`join(ours, theirs)`, except where `theirs` (a tag of loop iteration `loop`) equals
        `ours` when the index takes its `first` value: there it is `theirs`."""
        if np.array_equal(ours, theirs):  # (most memories at a loop's entry: nothing differs, nothing to join)
            return ours.copy()
        out = self.joined(ours, theirs)
        if self.table.asserted:
            self.product_entry(out, ours, theirs, loop, first)
        where = np.flatnonzero((ours > TOP) & (theirs > TOP) & (ours != theirs))
        if where.size == 0:
            return out
        before, back = ours.reshape(-1)[where], theirs.reshape(-1)[where]
        aligned = ((before - 2) & PLACE) == ((back - 2) & PLACE)  # the same byte of two elements
        where, before, back = where[aligned], (before[aligned] - 2) >> SHIFT, back[aligned]
        if where.size == 0:
            return out
        width = int(((back - 2) >> SHIFT).max()) + 1
        pairs = before * width + ((back - 2) >> SHIFT)  # (element before, element in the loop) as one key
        accepted = []
        parts: dict[Any, Any] = {}  # per symbolic part of a component, substituted (elements differ in constants)

        def substituted(v: Any) -> Any:
            if not isinstance(v, tuple):
                return v
            part = parts.get(v[1])
            if part is None:
                part = parts[v[1]] = self.space.substitute((0, v[1]), loop, first)
            return key_component(add_keys((v[0], ()), part))

        tags, element_id = self.table.tags, self.table.element_id
        memo = self.first_memo.setdefault((loop, first), {})  # (per element: it at the first iteration)
        for key in unique_sorted(pairs).tolist():
            was, now = divmod(key, width)
            at_first = memo.get(now)
            if at_first is None:
                at_first = memo[now] = element_id(tuple(map(substituted, tags[now])))
            if at_first == was:
                accepted.append(key)
        if accepted:
            hit = among(pairs, accepted)
            out[np.unravel_index(where[hit], out.shape)] = back[hit]
        return out

    def product_entry(self, out: np.ndarray, ours: np.ndarray, theirs: np.ndarray, loop: int, first: Key) -> None:
        """`inductive_join` of the accumulators of products: where the back edge holds a product
        whose k span grows with the loop (``[lo, hi(i))``), its entry at iteration i is the span
        from what the first iteration starts with — nothing summed (⊥: a constant) or a span
        ending at ``hi(first)`` — to ``hi(i)``. Set in `out` where that holds; the loop's passes
        then confirm it (an entry that does not settle is no proof)."""
        if not self.table.product_parts:
            return
        flat_out, flat_ours, flat_theirs = out.reshape(-1), ours.reshape(-1), theirs.reshape(-1)
        parts = self._product_parts()
        now_all = np.clip((flat_theirs - 2) >> SHIFT, 0, parts.size - 1)  # (⊥ and ⊤ land on 0: filtered next)
        where = np.flatnonzero(parts[now_all] & (flat_theirs > TOP) & (flat_ours != flat_theirs) & (flat_ours > TOP))
        if where.size == 0:
            return
        was, now = flat_ours[where], flat_theirs[where]
        at = (now - 2) & PLACE
        now_element = (now - 2) >> SHIFT
        was_element = (was - 2) >> SHIFT  # (⊥ before the loop is no zero: no entry)
        aligned = ((was - 2) & PLACE) == at
        if not aligned.any():
            return
        width = int(now_element.max()) + 1
        keys = was_element[aligned] * width + now_element[aligned]  # (element before, element in the loop) as one
        unique, inverse = unique_inverse(keys)
        memo = self.entry_memo.setdefault((loop, first, self.equality_context()), {})
        made = np.array([self._remembered_entry(memo, *divmod(key, width), loop, first) for key in unique.tolist()],
                        np.int64)
        found = made[np.reshape(inverse, -1)]
        hit = found >= 0
        chosen = where[aligned][hit]
        flat_out[chosen] = 2 + found[hit] * BYTES + at[aligned][hit]

    def _product_parts(self) -> np.ndarray:
        """Per element of the table, whether an accumulator's bytes carry it (a mask, made again
        only when products made new elements)."""
        parts = self.table.product_parts
        held = self.part_mask
        if held is None or held[0] != len(parts):
            mask = np.zeros(len(self.table.tags) + 1, bool)
            mask[parts] = True
            self.part_mask = held = (len(parts), mask)
        return held[1]

    def _remembered_entry(self, memo: dict[tuple[int, int], int], was: int, now: int, loop: int, first: Key) -> int:
        """`_entry_element`, remembered in `memo` (per loop, first index and `equality_context`:
        what its answer depends on besides the two elements) — a loop's passes join the same
        elements again."""
        found = memo.get((was, now))
        if found is None:
            found = memo[(was, now)] = self._entry_element(was, now, loop, first)
        return found

    def _entry_element(self, was: int, now: int, loop: int, first: Key) -> int:
        """The element a loop's entry holds where the state before it holds element `was` (−1:
        nothing summed) and the back edge element `now` (`product_entry`); −1 if none."""
        tags = self.table.tags
        theirs = tags[now]
        if not theirs or theirs[0] not in (PRODUCT_A, PRODUCT_B):
            return -1
        if was >= 0 and tags[was][:1] == (ZERO,):
            was = -1  # (cleared: nothing summed)
        ours = tags[was] if was >= 0 and tags[was][:1] != (EMPTY,) else None  # (nothing summed yet, scaled)
        if theirs[0] == PRODUCT_A:
            return now if ours is None else -1  # (an empty sum has any rows: the loop's own hold)
        if ours is not None and (ours[:2] != theirs[:2] or len(ours) != len(theirs)):
            return -1
        lb = theirs[1]
        head, span = theirs[:2 + lb], theirs[2 + lb:]
        pos = span[0]
        if not isinstance(pos, int) or pos < 0:
            return -1
        at_first = self._at_first(loop, first)
        if ours is None:
            start = at_first(span[-1])
        else:
            mine = ours[2 + lb:]
            same = self.always_equal
            if mine[0] != pos or not same(at_first(mine[-1]), at_first(span[-1])) or \
                    any(not same(at_first(x), at_first(y)) for j, (x, y) in enumerate(zip(ours[:2 + lb], head)) if j > 1) or \
                    any(not same(at_first(x), at_first(y)) for j, (x, y) in enumerate(zip(mine[1:-1], span[1:-1]))
                        if j != pos):
                return -1
            start = at_first(mine[1 + pos])
        entry = (*head, pos, *span[1:1 + pos], start, *span[2 + pos:-1], span[-1])
        return self.table.element_id(entry)

    def spans_entry(self, base: State, loop: int, first: Key) -> State | None:
        """A loop's entry state in which each product the first pass could not add up (its entry
        held a span ``[lo, hi)`` fixed at the first iteration, the body added ``[c(i), d(i))``
        with ``c(first) = hi``) holds ``[lo, c(i))`` instead: what it holds at iteration i, if
        the loop's passes confirm it (they start again from this state). None when there is
        none such."""
        tags = self.table.tags
        at_first = self._at_first(loop, first)
        replaced: dict[int, int] = {}
        for old, span in self.table.products.take_unjoined():
            held = tags[old]
            lb = held[1]
            mine, added = held[2 + lb:], tags[span]
            pos = mine[0]  # (the run held; what is added may be a run or a progression of runs)
            if not isinstance(pos, int) or pos < 0 or along(added) != pos or pair_length(added) != len(mine) - 2:
                continue
            start = added[1 + pos]
            same = self.always_equal
            if not same(at_first(start), at_first(mine[-1])) or \
                    any(not same(at_first(x), at_first(y)) for j, (x, y) in enumerate(zip(mine[1:-1], added[1:-1]))
                        if j != pos):
                continue
            replaced[old] = self.table.element_id((*held[:2 + lb], *canonical((*mine[:-1], start))))
        if not replaced:
            return None
        olds = np.array(list(replaced), np.int64)
        news = np.array(list(replaced.values()), np.int64)
        memories = []
        for tags_, site, writers in base.memories:
            element = (tags_ - 2) >> SHIFT
            hit = (tags_ > TOP) & among(element, olds)
            if hit.any():
                tags_ = tags_.copy()
                tags_[hit] = _relabelled(tags_[hit], olds, news)
            memories.append((tags_, site, writers))
        return State(memories, base.slots)

    def first_iteration_span(self, loop: int, first: Key) -> Any:
        """`argus.verify.products.Products.first_pass` for the first pass over `loop` (from
        `first`): of two spans equal in every component at the first iteration, the one that
        names the loop's index (the other, data brought before the loop, holds its first value)."""
        at_first = self._at_first(loop, first)

        def moves(span: tuple[Any, ...]) -> bool:
            return any(isinstance(v, tuple) and not same_syntax(at_first(v), v) for v in span)

        def chosen(x: tuple[Any, ...], y: tuple[Any, ...]) -> tuple[Any, ...] | None:
            if len(x) != len(y) or moves(x) == moves(y) or \
                    not all(self.always_equal(at_first(u), at_first(v)) for u, v in zip(x, y)):
                return None
            return x if moves(x) else y
        return chosen

    def always_equal(self, x: Any, y: Any) -> bool:
        """Whether two tag components are equal in every launch of the domain where the walk is
        (the kernel's facts and those of the loops around it): as written, or by the solver
        (remembered per scope and facts: a pipeline's slices are ``min(k + s, last)``)."""
        if same_syntax(x, y):
            return True
        if not isinstance(x, tuple) and not isinstance(y, tuple):
            return False
        key = (x, y, self.equality_context())
        found = self.equal_memo.get(key)
        if found is None:
            from argus.verify.solvers import Budgeted, Query, solver
            scope = self.obligations.scope
            facts = sorted(self.facts) + [f for s in scope for f in self.loop_facts.get(s, [])]
            difference = sub_keys(x if isinstance(x, tuple) else (int(x), ()), y if isinstance(y, tuple) else (int(y), ()))
            if self.equal_engine is None:
                self.equal_engine = Budgeted(solver(None), EQUALITY_BUDGET_S)
            answer = self.equal_engine.solve(Query(self.space, facts, [[("ne0", difference)]]), EQUALITY_MS)
            found = self.equal_memo[key] = answer.status == "unsat"
        return found

    def always_nonnegative(self, key: Key) -> bool:
        """Whether ``key ≥ 0`` in every launch of the domain where the walk is (by the solver,
        remembered as `always_equal` is)."""
        memo_key = ("ge0", key, self.equality_context())
        found = self.equal_memo.get(memo_key)
        if found is None:
            from argus.verify.solvers import Budgeted, Query, solver
            scope = self.obligations.scope
            facts = sorted(self.facts) + [f for s in scope for f in self.loop_facts.get(s, [])]
            if self.equal_engine is None:
                self.equal_engine = Budgeted(solver(None), EQUALITY_BUDGET_S)
            negated = ("ge0", sub_keys((-1, ()), key))
            answer = self.equal_engine.solve(Query(self.space, facts, [[negated]]), EQUALITY_MS)
            found = self.equal_memo[memo_key] = answer.status == "unsat"
        return found

    def equality_context(self) -> Any:
        """What `always_equal` depends on besides its arguments: the loops around, their facts."""
        scope = self.obligations.scope
        return (scope, len(self.facts), tuple(len(self.loop_facts.get(s, ())) for s in scope))

    def _at_first(self, loop: int, first: Key) -> Any:
        if len(first[1]) == 1 and first[0] == 0 and first[1][0][1] == 1:  # a symbol pinned to one value
            pinned = self.space.symbols.get(first[1][0][0])
            if pinned is not None and pinned.lo is not None and pinned.lo == pinned.hi:
                first = pinned.lo

        def value(v: Any) -> Any:
            return key_component(self.space.substitute(v, loop, first)) if isinstance(v, tuple) else v
        return value

    def join_values(self, condition: Affine | None, a: Affine | None, b: Affine | None, label: str,
                    loop: int | None = None, select: bool = True) -> Affine | None:
        """Two paths' values of a variable: equal, a select on the branch condition, or a value
        the checker does not follow (one per point, and per iteration of `loop`: renaming the
        loop index to the previous iteration makes it another value)."""
        if a is None or b is None:
            return None
        if same_values([a], [b]):
            return a
        sp = self.space
        if condition is not None and select:
            return select_int(sp, None, [condition, a, b])  # type: ignore[arg-type]
        const = np.zeros(len(a), np.int64)
        terms: dict[int, np.ndarray] = {}
        for p in range(len(a)):
            ra, rb = a.row(p), b.row(p)
            iteration = () if loop is None else ((0, ((loop, 1),)),)
            key = ra if ra == rb else (0, ((sp.atom("opaque", label, p, *iteration), 1),))
            const[p] = key[0]
            for t, c in key[1]:
                terms.setdefault(t, np.zeros(len(a), np.int64))[p] = c
        return Affine(const, terms)


def _relabelled(ids: np.ndarray, olds: np.ndarray, news: np.ndarray) -> np.ndarray:
    """Byte ids of elements `olds` as the same bytes of elements `news` (in order)."""
    order = np.argsort(olds)
    at = order[np.searchsorted(olds, (ids - 2) >> SHIFT, sorter=order)]
    return 2 + news[at] * BYTES + ((ids - 2) & PLACE)  # type: ignore[no-any-return]


class Walk:
    """A runtime loop whose threads walk bounds of their own, ``range(lane, cols, 32)``
    (`argus.dsl.check.control.Counter`), followed for the row reductions it accumulates in
    variables (`argus.verify.reductions`). In iteration n of the trip counter, thread t's index is
    ``start_t + step·n`` and the body runs under ``index < stop_t`` (`below`, where the trip counts
    differ). A reduction that holds the walk's first n columns below stop (`red.WALK`, count n)
    and takes in the index's column holds them and the next one (`red.STEP`); on the side of the
    guard where the index is past stop, it kept the first n, which are then the first n + 1 below
    stop too: so the join of the guard's two sides is ``WALK(n + 1)`` — for that thread, exactly
    what it holds. The first pass, from what the variable held before the loop (-inf for a max,
    0.0 for a sum: nothing reduced, the walk's first 0 columns), proposes that entry (`seeds`),
    which the passes after it confirm as every loop entry is (an entry that does not settle is
    no proof). After the loop, in the last iteration, ``WALK(last + 1)`` is every column the
    thread's walk visits (`done`)."""

    def __init__(self, a: Any, start: Affine, stop: Affine, step: int, symbol: int, below: Any,
                 origin: Key = (0, ()), trips: Key | None = None) -> None:
        self.a, self.start, self.stop, self.step, self.symbol, self.below = a, start, stop, step, symbol, below
        self.trips = trips
        """How many iterations every thread runs, where they all run as many (None: not known so)."""
        self.origin = origin
        """The symbol's value at the first iteration: 0 for a trip counter; for a loop of step 1
        whose threads run one trip count (`range(0, cols)`), whose symbol is the index, its start."""
        self.seeds: dict[int, dict[int, tuple[Any, ...]]] = {}
        """Per variable, per thread: the reduction (head, rows) whose entry the first pass proposes."""

    def _bounds(self, p: int) -> tuple[Any, Any, Any]:
        """Thread p's start, stop and index (components as tags hold them)."""
        start, stop = key_component(self.start.row(p)), key_component(self.stop.row(p))
        count = sub_keys((0, ((self.symbol, 1),)), self.origin)
        index = key_component(add_keys(self.start.row(p), (count[0] * self.step,
                                                             tuple((t, c * self.step) for t, c in count[1]))))
        return start, stop, index

    def count(self, plus: int = 0) -> Any:
        """How many iterations ran before this one, plus `plus`."""
        return key_component(sub_keys((plus, ((self.symbol, 1),)), self.origin))

    def continued(self, a: Any, entry: list[np.ndarray]) -> None:
        """At the end of an iteration of a loop whose threads all run every iteration (no guard:
        the index is below stop in each), a reduction that took in the walk's next column holds
        the walk's first n + 1 columns; one that took in the first column from nothing reduced
        (`entry`: the variables' tags when the iteration began) proposes the entry (`seeds`)."""
        if not a.table.asserted:
            return
        for i, (s, before) in enumerate(zip(a.slots, entry)):
            if s.tags is before:
                continue
            made = self.joined(a, i, before, s.tags, guarded=False)
            if made is not None:
                s.tags = made

    def joined(self, a: Any, slot: int, ours: np.ndarray, theirs: np.ndarray, guarded: bool = True
               ) -> np.ndarray | None:
        """The join of a variable's tags on the guard's two sides (`ours` where the index is past
        stop, `theirs` where it is below), where a reduction continues the walk: None elsewhere.
        Not `guarded`: `ours` what the iteration began with, `theirs` what it ended with, the
        index below stop (`continued`)."""
        table = a.table
        out = None
        for p in range(ours.shape[0]):
            t, o = _whole(table, theirs[p]), _whole(table, ours[p])
            if t is None:
                continue
            found = red.parse_reduced(table.tags[t])
            if found is None:
                continue
            head, rows, columns = found
            start, stop, index = self._bounds(p)
            result = None
            if columns[:1] == (red.STEP,) and o is not None and \
                    self._on_walk(columns, start, stop, self.count()) and \
                    table.tags[o] == red.reduced(head, rows, (red.WALK, *columns[1:])):
                result = red.reduced(head, rows, (red.WALK, start, self.step, stop, self.count(1)))
            elif columns[:1] == (-1,) and len(columns) == 3 and same_syntax(columns[1], index) and \
                    red.is_start(table, head[0], ours[p][None])[0]:
                self.seeds.setdefault(slot, {})[p] = (head, rows)
            if result is not None:
                if out is None:
                    out = a.joined(ours, theirs) if guarded else theirs.copy()
                out[p] = 2 + table.element_id(result) * BYTES + np.arange(ours.shape[-1])
                table._laid_at(np.array([table.element_id(result)]), ours.shape[-1])
        return out

    def _on_walk(self, columns: tuple[Any, ...], start: Any, stop: Any, count: Any) -> bool:
        return len(columns) == 5 and same_syntax(columns[1], start) and columns[2] == self.step and \
            same_syntax(columns[3], stop) and same_syntax(columns[4], count)

    def seeded(self, base: State) -> State | None:
        """`base` (the state before the loop) with each variable the first pass saw take in the
        walk's first column from nothing reduced holding the walk's first n columns instead (n
        the trip counter: none at the first iteration, which is what it held). None: no such."""
        if not self.seeds:
            return None
        table = self.a.table
        slots = list(base.slots)
        changed = False
        for i, rows_of in self.seeds.items():
            if i >= len(slots):
                continue
            tags, value = slots[i]
            tags = tags.copy()
            for p, (head, rows) in rows_of.items():
                if not red.is_start(table, head[0], tags[p][None])[0]:
                    continue
                start, stop, _ = self._bounds(p)
                e = table.element_id(red.reduced(head, rows, (red.WALK, start, self.step, stop, self.count())))
                table._laid_at(np.array([e]), tags.shape[-1])
                tags[p] = 2 + e * BYTES + np.arange(tags.shape[-1])
                changed = True
            slots[i] = (tags, value)
        self.seeds = {}
        return State(base.memories, slots) if changed else None

    def done(self, a: Any, before: State) -> list[tuple[int, np.ndarray, np.ndarray]]:
        """After the loop, in its last iteration (the trip counter's largest value, past every
        thread's own last): each variable's reductions of the walk's first n + 1 columns as every
        column the walk visits, where the variable held nothing reduced before the loop (a launch
        in which a thread walks no column: nothing, which those columns are then too). Per
        variable, the threads whose tags are so and its tags (to set after the loop's join)."""
        table = a.table
        out = []
        for i, (s, (old, _)) in enumerate(zip(a.slots, before.slots)):
            tags, changed = s.tags.copy(), np.zeros(s.tags.shape[0], bool)
            for p in range(tags.shape[0]):
                e = _whole(table, tags[p])
                found = None if e is None else red.parse_reduced(table.tags[e])
                if found is None or found[2][:1] != (red.WALK,):
                    continue
                head, rows, columns = found
                start, stop, _ = self._bounds(p)
                if not self._on_walk(columns, start, stop, self.count(1)) or \
                        not red.is_start(table, head[0], old[p][None])[0]:
                    continue
                visited = red.walk_done(start, self.step, stop,
                                        None if self.trips is None else key_component(self.trips))
                if visited is None:
                    continue
                made = table.element_id(red.reduced(head, rows, visited))
                table._laid_at(np.array([made]), tags.shape[-1])
                tags[p] = 2 + made * BYTES + np.arange(tags.shape[-1])
                changed[p] = True
            if changed.any():
                out.append((i, changed, tags))
        return out


def _whole(table: Any, row: np.ndarray) -> int | None:
    """The element whose bytes a row of byte tags is, whole and in order (None: no such)."""
    first = int(row[0])
    if first <= TOP or (first - 2) % BYTES or not (row == first + np.arange(row.size)).all():
        return None
    return (first - 2) // BYTES
