"""What a run of copies did to memory, so that running its groups out of program order is sound.

Reordering can change what memory holds. A register write is kept with its place in the run
(`_Journal`), so a read sees what program order leaves there whatever order the groups ran in
— registers reused by every copy (a fragment loaded anew for each product) need that. Shared
memory accesses are recorded: when two accesses to one shared byte, one of them a write, ran in
another order than the program's, or a register read ran before a write it needed, the run is
not in order (`Footprint.in_order`), and `batching` undoes it (`Footprint.undo`: the memories as
they were) and walks it again op by op. Two shortcuts skip the journal where order cannot
matter: copies of a product that read one register fragment alike read it once while the run
has not written that memory (`Footprint.read_alike`), and a run that is one group of stores of a
constant writes its registers directly.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from argus.verify.affine import among
from argus.verify.memory import TagMemory
from argus.verify.tags import BOTTOM, BYTES, PLACE, TOP

from .run_plan import Group


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

    def keep(self, memory: TagMemory) -> None:
        """Keep `memory` as it was before the run, for `undo` (a memory the run changes beside
        its accesses: the threads that read a shared memory, `shared_reads`)."""
        self._keep(memory)

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
        self.cuts = memory.cuts
        """How many bytes the memory's writes had cut before the run (`complete`)."""

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
        if self._as_it_is(places):
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
        self._write_through()
        tracked = memory.exposed is not None and memory.fresh is not None  # (a read, for a loop's tracking)
        if self._as_it_is(places):
            status = memory.site.reshape(-1)[keys]
            if tracked:
                self.footprint._keep(memory)
                open_ = keys[status < 0]  # (bytes not written by a write with a site: their status may move)
                memory.exposed.reshape(-1)[open_] |= ~memory.fresh.reshape(-1)[open_]  # type: ignore[union-attr]
            return status.reshape(idx.shape)  # type: ignore[no-any-return]
        before = self.footprint._keep(memory)
        earlier = self._first()[keys] < np.repeat(places, rows.shape[1])
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

    def _as_it_is(self, places: np.ndarray) -> bool:
        """Whether the memory holds what reads at places `places` (per thread read) are to see:
        nothing was written in the run, or each byte once and before them in program order."""
        return not self.writes or (self.last < places.min() and not self.rewritten())

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
        when it is first read or the run ends (a memory only written needs no copy to undo). Its
        tags are kept as the memory takes them (`TagMemory.whole`), which reads and `finish` see."""
        tags = self.memory.whole(idx, tags)
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
        before it writes: a write of the same step ran after), no write covered part of a run of
        bytes another wrote where elements laid out in parts are (`_whole_writes`), and, if the
        run read the memory, no write cut an element (`TagMemory.write`): a read takes the bytes
        the run did not write as they were before it, and the writes' places tell not which cut
        came before it."""
        if not self._whole_writes():
            return False
        if self.reads and self.memory.cuts != self.cuts:
            return False
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

    def _whole_writes(self) -> bool:
        """Whether the writes of the run that meet on a byte each wrote it in the same run of
        bytes, where the registers hold elements laid out in parts: a write over part of one
        makes its last byte ⊤ (`argus.verify.memory.TagMemory.write`), which only program order
        tells, so such a run is walked again op by op."""
        if len(self.writes) < 2 or not self.rewritten():
            return True
        if not self.memory.parts and not any(((w[3] > TOP) & (((w[3] - 2) & PLACE) == BYTES - 1)).any()
                                             for w in self.writes):
            return True
        keys, starts, ends = [], [], []
        for written, *_ in self.writes:
            new = np.ones(written.size, bool)
            new[1:] = written[1:] != written[:-1] + 1
            run = np.cumsum(new) - 1
            first = np.flatnonzero(new)
            last = np.append(first[1:], written.size) - 1
            keys.append(written)
            starts.append(written[first][run])
            ends.append(written[last][run])
        key, start, end = (np.concatenate(x) for x in (keys, starts, ends))
        order = np.lexsort((start, key))
        key, start, end = key[order], start[order], end[order]
        meet = key[1:] == key[:-1]
        return not (meet & ((start[1:] != start[:-1]) | (end[1:] != end[:-1]))).any()

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
    written = among(keys, np.concatenate([r[0].reshape(-1) for r in writes]))
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
