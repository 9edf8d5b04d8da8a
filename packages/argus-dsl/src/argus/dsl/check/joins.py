"""Snapshots and joins of the walk's state: what branches and loops save, restore and join (the
lattice join of tags, values joined into symbolic choices), and the tracking of bytes a loop
body reads before it writes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Affine
from argus.verify.tags import BYTES, TOP, join

from .arithmetic import select_int
from .initialization import UNKNOWN_PATHS, written
from .state import Slot, State, key_component, same_values

if TYPE_CHECKING:
    from argus.verify.affine import Key
    from .initialization import Paths


class Joins:
    """The snapshots and joins part of `TagAnalysis` (a mixin: its state is set in `TagAnalysis.__init__`)."""

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
                    m.tags[differ] = TOP
            if first is not None and loop is not None:  # (a loop's entry: the first iteration starts from
                self.initialization.enter(m, m.site, site, loop, first, step)  # the current state)
            else:
                self.initialization.join(m, m.site, site, paths)
            if writers is not None:
                m.epoch_writer[...] = m.join_writers(m.epoch_writer, writers)
        for i, (s, (tags, value)) in enumerate(zip(self.slots, other.slots)):
            s.tags = join(s.tags, tags)
            label = f"{carried or f'a value joined from two paths at {origin}'} (variable {i})"
            scope = self.obligations.scope
            s.value = self.join_values(condition, value, s.value, label,
                                       loop if loop is not None else (scope[-1] if scope else None),
                                       select=not carried)

    def inductive_join(self, ours: np.ndarray, theirs: np.ndarray, loop: int, first: Key) -> np.ndarray:
        """`join(ours, theirs)`, except where `theirs` (a tag of loop iteration `loop`) equals
        `ours` when the index takes its `first` value: there it is `theirs`."""
        out = join(ours, theirs)
        where = np.flatnonzero((ours > TOP) & (theirs > TOP) & (ours != theirs))
        if where.size == 0:
            return out
        before, back = ours.reshape(-1)[where], theirs.reshape(-1)[where]
        aligned = (before - 2) % BYTES == (back - 2) % BYTES  # the same byte of two elements
        where, before, back = where[aligned], (before[aligned] - 2) // BYTES, back[aligned]
        if where.size == 0:
            return out
        width = int(((back - 2) // BYTES).max()) + 1
        pairs = before * width + (back - 2) // BYTES  # (element before, element in the loop) as one key
        accepted = []
        for key in np.unique(pairs).tolist():
            was, now = divmod(key, width)
            at_first = tuple(key_component(self.space.substitute(v, loop, first)) if isinstance(v, tuple) else v
                             for v in self.table.tags[now])
            if self.table.element_id(at_first) == was:
                accepted.append(key)
        if accepted:
            hit = np.isin(pairs, accepted)
            out[np.unravel_index(where[hit], out.shape)] = back[hit]
        return out

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
