"""The tags of a memory, byte by byte, and who put them there.

Shared buffers hold one tag per byte; registers one per byte per thread. Writes replace tags
(a later write ordered after an earlier one is a new datum) except when two threads write
different data to one shared byte with no barrier between them: that byte becomes ⊤ and the
conflict is recorded. Each byte also remembers the program point (a caller-chosen integer,
typically the index of a store's source location) of its last write, so a violation can name
the line that wrote the wrong data; `NEVER` marks a byte nothing wrote (a read of it is a
fault) and `RESET` one whose tag was reset since.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .byte_moves import cut_after, runs_of_rows, whole_parts
from .products import _LAST, _PLACE
from .tags import BOTTOM, TOP

NEVER = -1
"""The site of a byte nothing has written."""
RESET = -2
"""The site of a byte whose tag was reset: written, but no write since put a tag there."""


@dataclass
class WriteConflict:
    byte: int
    threads: tuple[int, int]
    sites: tuple[int, int]


@dataclass
class TagMemory:
    name: str
    tags: np.ndarray
    site: np.ndarray
    epoch_writer: np.ndarray
    """Per byte, the thread that wrote it since the last barrier (-1: none)."""
    conflicts: list[WriteConflict] = field(default_factory=list)
    fresh: np.ndarray | None = None
    """While tracking (`track`): bytes written since tracking began."""
    exposed: np.ndarray | None = None
    """While tracking: bytes read before any write since tracking began."""
    tagged_unwritten: bool = False
    """Whether a tag function ever tagged bytes nothing had written (expected tags, say): then a
    byte with a tag is not known to be written."""
    parts: bool = False
    """Whether an element laid out in parts (`products.layout`) was ever written here: each write
    then cuts the elements it covers in part (`byte_moves.cut_after`)."""
    cuts: int = 0
    """How many bytes writes have cut (`_cut`): reads of a run of copies checked out of program
    order may have seen those bytes whole, so a run that cut any is walked again op by op
    (`argus.dsl.check.footprint`)."""

    @classmethod
    def shared(cls, name: str, nbytes: int) -> TagMemory:
        return cls(name, np.zeros(nbytes, np.int64), np.full(nbytes, -1, np.int64), np.full(nbytes, -1, np.int64))

    @classmethod
    def registers(cls, name: str, threads: int, nbytes: int) -> TagMemory:
        shape = (threads, nbytes)
        return cls(name, np.zeros(shape, np.int64), np.full(shape, -1, np.int64), np.full(shape, -1, np.int64))

    @property
    def per_thread(self) -> bool:
        return self.tags.ndim == 2

    def read(self, idx: np.ndarray, threads: np.ndarray) -> np.ndarray:
        """Tags at byte indices `idx` (rows: one per thread in `threads`)."""
        if self.per_thread:  # one flat index per (thread, byte): cheaper than a 2-D gather
            flat = threads[:, None] * self.tags.shape[1] + idx
            if self.fresh is not None and self.exposed is not None:
                self.exposed.reshape(-1)[flat] |= ~self.fresh.reshape(-1)[flat]
            return self.tags.reshape(-1)[flat]  # type: ignore[no-any-return]
        if self.fresh is not None and self.exposed is not None:
            self.exposed[idx] |= ~self.fresh[idx]
        return self.tags[idx]  # type: ignore[no-any-return]

    def track(self) -> None:
        """Start recording which bytes are written, and which are read before being written
        (what a loop body reads of what the previous iteration left)."""
        self.fresh = np.zeros(self.tags.shape, bool)
        self.exposed = np.zeros(self.tags.shape, bool)

    def untrack(self) -> np.ndarray:
        """Stop recording; the bytes read before being written."""
        exposed = self.exposed if self.exposed is not None else np.zeros(self.tags.shape, bool)
        self.fresh = self.exposed = None
        return exposed

    def write(self, idx: np.ndarray, ids: np.ndarray, threads: np.ndarray, site: int | np.ndarray) -> None:
        """Thread `threads[r]` writes tags `ids[r]` at bytes `idx[r]`, at program point `site` (in
        registers, `site[r]`: a program point per row, when several ops' writes are made at once).
        Elements laid out in parts are written whole or not at all: a written last byte without
        its element's first bytes before it, and one left behind a write over those, is ⊤."""
        ids = self.whole(idx, ids)
        self._write(idx, ids, threads, site)
        if self.parts:
            self._cut(idx, threads)

    def whole(self, idx: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Tags `ids` as a write at bytes `idx` leaves them: the last byte of an element laid out
        in parts is ⊤ unless its first byte is written with it, in one run of bytes
        (`byte_moves.whole_parts`). A run of copies checked out of program order keeps its writes
        so (`argus.dsl.check.footprint`), as reads in program order would see them."""
        if not ((ids > TOP) & (((ids - 2) & _PLACE) == _LAST)).any():
            return ids
        self.parts = True
        rows = idx.reshape(-1, idx.shape[-1]) if idx.ndim else idx.reshape(1, -1)
        laid = np.broadcast_to(ids, idx.shape).reshape(rows.shape)
        starts = laid[:, 0]
        if ((starts > TOP) & (((starts - 2) & _PLACE) == 0)).all() and (rows[:, 1:] - rows[:, :-1] == 1).all():
            return ids  # (each row one run from an element's first byte: every last byte is whole)
        whole = whole_parts(laid, runs_of_rows(rows))
        return whole.reshape(idx.shape)  # type: ignore[no-any-return]

    def _cut(self, idx: np.ndarray, threads: np.ndarray) -> None:
        """The last bytes of elements laid out in parts that a write just made ends at `idx` (rows:
        `threads`, in registers) cut from their first bytes: ⊤."""
        rows = idx.reshape(-1, idx.shape[-1]) if idx.ndim else idx.reshape(1, -1)
        ending = np.ones(rows.shape, bool)
        ending[:, :-1] = rows[:, 1:] != rows[:, :-1] + 1
        ends = rows[ending] + 1
        if self.per_thread:
            owner = np.broadcast_to(threads.reshape(-1, 1), rows.shape)[ending]
            width = self.tags.shape[1]
            limit = (owner + 1) * width
            ends = owner * width + np.minimum(ends, width)
        else:
            limit = np.full(ends.shape, self.tags.size)
        cut = cut_after(self.tags.reshape(-1), ends, limit)
        if cut.size:
            self.tags.reshape(-1)[cut] = TOP
            self.cuts += int(cut.size)

    def _write(self, idx: np.ndarray, ids: np.ndarray, threads: np.ndarray, site: int | np.ndarray) -> None:
        if self.per_thread:
            if threads.size == self.tags.shape[0] and _one_range(idx) and threads[-1] == threads.size - 1:
                # every thread (in order) writes the same run of its bytes: slices, not gathers
                span = slice(int(idx[0, 0]), int(idx[0, -1]) + 1)
                if self.fresh is not None:
                    self.fresh[:, span] = True
                self.tags[:, span] = ids
                self.site[:, span] = site
                return
            # one flat index per (thread, byte), cheaper than 2-D scatters (the arrays are contiguous)
            flat = threads[:, None] * self.tags.shape[1] + idx
            if self.fresh is not None:
                self.fresh.reshape(-1)[flat] = True
            self.tags.reshape(-1)[flat] = ids
            self.site.reshape(-1)[flat] = site
            return
        owners = np.repeat(threads, idx.shape[1]) if idx.ndim == 2 else \
            np.broadcast_to(threads[:, None], idx.shape).reshape(-1)  # (np.repeat runs in C)
        flat, new = idx.reshape(-1), ids.reshape(-1)
        span = _span(flat)
        at: slice | np.ndarray = flat if span is None else span  # a run of bytes (a whole tile): slices
        if self.fresh is not None:
            self.fresh[at] = True
        old_writer = self.epoch_writer[at]
        written = old_writer != -1
        # different data: different tags, or computed data (⊤) on both sides
        # two threads write one byte with no barrier between: a race, unless both write the same
        # tagged datum (the same element of the same source)
        if written.any():
            old_tag, old_site = self.tags[at], self.site[at]
            clash = written & (old_writer != owners) & ((old_tag != new) | (new <= TOP))
        else:  # nothing written since the last barrier (the common case): nothing to clash with
            clash = written
        same = np.zeros(0, np.int64)
        if span is None and np.bincount(flat).max(initial=0) > 1:  # a byte written twice (sorting finds which)
            order = np.argsort(flat, kind="stable")
            ordered = new[order]
            same = np.flatnonzero((flat[order][1:] == flat[order][:-1])
                                  & ((ordered[1:] != ordered[:-1]) | (ordered[1:] <= TOP)))
        result = new.copy() if same.size or clash.any() else new
        for k in same:
            a, b = order[k], order[k + 1]
            result[a] = result[b] = TOP
            self.conflicts.append(WriteConflict(int(flat[a]), (int(owners[a]), int(owners[b])), (site, site)))
        for k in np.flatnonzero(clash):
            result[k] = TOP
            self.conflicts.append(WriteConflict(int(flat[k]), (int(old_writer[k]), int(owners[k])), (int(old_site[k]), site)))
        self.tags[at] = result
        self.site[at] = site
        self.epoch_writer[at] = owners

    @staticmethod
    def join_writers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Writers since the last barrier on either of two paths: one thread, or -2 for several
        (a later access by any thread may race), -1 for none."""
        return np.where(a == b, a, np.where(a == -1, b, np.where(b == -1, a, -2)))

    def barrier(self) -> None:
        """Writes before a barrier are ordered before writes after it."""
        self.epoch_writer.fill(-1)

    def reset(self) -> None:
        """Forget every tag (the buffer is about to hold other data). Not a barrier: the writes
        since the last barrier still race with later ones."""
        if self.fresh is not None:
            self.fresh.fill(True)
        self.tags.fill(BOTTOM)
        self.site[self.site != NEVER] = RESET  # (reading a byte never written stays a fault)

    def relabel(self, idx: np.ndarray, ids: np.ndarray, site: int, threads: np.ndarray | None = None) -> None:
        """Set the tags of bytes (a tag function): the data do not change, so nothing is written
        and nothing races, and bytes nothing wrote stay unwritten. Registers: `idx` holds a row
        of bytes per thread of `threads`."""
        flat = idx.reshape(-1) if threads is None else (threads[:, None] * self.tags.shape[1] + idx).reshape(-1)
        self.parts |= bool(((ids > TOP) & (((ids - 2) & _PLACE) == _LAST)).any())
        if self.fresh is not None:
            self.fresh.reshape(-1)[flat] = True
        self.tags.reshape(-1)[flat] = ids.reshape(-1)
        sites = self.site.reshape(-1)
        never = sites[flat] == NEVER
        sites[flat] = np.where(never, NEVER, site)
        self.tagged_unwritten |= bool(never.any())


def _one_range(idx: np.ndarray) -> bool:
    """Whether every row of `idx` is the same run of consecutive indices."""
    return _span(idx[0]) is not None and bool((idx == idx[0]).all())


def _span(flat: np.ndarray) -> slice | None:
    """The slice of `flat` when it is one run of consecutive indices."""
    if not flat.size or int(flat[-1]) - int(flat[0]) != flat.size - 1 or not (np.diff(flat) == 1).all():
        return None
    return slice(int(flat[0]), int(flat[-1]) + 1)
