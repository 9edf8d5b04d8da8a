"""What threads read from shared memory, as the static checker follows it for races.

A thread's read of a shared byte and another thread's later write of it, with no barrier
between, is a data race (write after read): a slow thread may read the new data. The walk takes
accesses in program order, every thread at once, so it would give the read the old data and
miss the race; each shared memory therefore keeps, per byte, the thread that read it since the
last barrier (`SharedMemory.reads`), and a write checks it (`unordered_reads`).

The readers are kept as the writers of a memory of their own, listed with the analysis's other
memories: branches join them, barriers clear them, and a loop carries the reads its body leaves
unordered into its next iteration (and past its end) as it carries unordered writes. A read
after a write is checked by the read (`AbstractMemory.check_read`); a write does not clear the
readers, since a read before it stays unordered with every later write.

A write no thread's rule checked (a backend's bulk tensor copy, whose data is taken as landed
and ordered by the barrier the readers wait on: the interpreter checks that protocol on each
launch it runs) is taken as ordered after the reads, and they are forgotten.

A named barrier (a backend's) orders accesses for the threads that meet it only: a byte it
ordered holds a code (`Orders`) in place of its writer or reader, naming that thread and the
threads the access is ordered before. Every check resolves a code against the thread that
accesses the byte now; joins keep a code where both paths have it (else the byte is accessed by
several), and a block barrier clears codes as it clears threads.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from argus.verify.affine import unique_inverse
from argus.verify.memory import TagMemory

#: No thread (no group) read the byte since the last barrier.
NONE = -1
#: More than one thread (or group) read the byte since the last barrier.
SEVERAL = -2
#: Codes at or below this stand for an access that a named barrier ordered for some threads only.
ORDERED = -3


class Orders:
    """The accesses named barriers ordered before the later accesses of some threads only:
    code `ORDERED - i` stands for entry i, the thread that made the access and the threads (a
    mask) it is ordered before. One per analysis; codes are interned, so that a loop's entry
    state settles."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.accessors: list[int] = []
        self.masks: list[np.ndarray] = []
        self._index: dict[tuple[int, bytes], int] = {}

    def code(self, accessor: int, ordered: np.ndarray) -> int:
        """The code of an access by `accessor` ordered before the threads of mask `ordered`
        (`NONE` when that is every thread)."""
        if ordered.all():
            return NONE
        key = (accessor, np.packbits(ordered).tobytes())
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = ORDERED - len(self.accessors)
            self.accessors.append(accessor)
            self.masks.append(ordered.copy())
        return found

    def resolve(self, values: np.ndarray, threads: np.ndarray | None) -> np.ndarray:
        """`values` (writers or readers) as the threads `threads` (broadcast against them) now
        see them: a code becomes `NONE` where its access is ordered before that thread and its
        accessing thread elsewhere (everywhere, with `threads` None: a group's access, which
        the checker takes as ordered by block barriers only)."""
        coded = values <= ORDERED
        if not coded.any():
            return values
        out = values.copy()
        entry = ORDERED - values[coded]
        accessors = np.asarray(self.accessors, np.int64)[entry]
        if threads is None:
            out[coded] = accessors
            return out
        reader = np.broadcast_to(threads, values.shape)[coded]
        masks = np.stack(self.masks)
        seen = (accessors == reader) | masks[entry, reader]
        out[coded] = np.where(seen, NONE, accessors)
        return out

    def meet(self, values: np.ndarray, participants: np.ndarray) -> np.ndarray:
        """`values` after a barrier that the threads of mask `participants` meet, each of them
        there at once: an access by one of them, or one ordered before one of them, is
        ordered before all of them after it (and before whom it was already)."""
        if not values.size:
            return values
        distinct, inverse = unique_inverse(values)
        changed = distinct.copy()
        for k, v in enumerate(distinct.tolist()):
            if 0 <= v < self.threads and participants[v]:
                changed[k] = self.code(v, participants)
            elif v <= ORDERED:
                accessor, ordered = self.accessors[ORDERED - v], self.masks[ORDERED - v]
                if participants[accessor] or (ordered & participants).any():
                    changed[k] = self.code(accessor, ordered | participants)
        return changed[inverse].reshape(values.shape)  # type: ignore[no-any-return]


@dataclass
class SharedMemory(TagMemory):
    """A shared memory with the threads that read each byte since the last barrier."""

    reads: TagMemory | None = None
    """Per byte, as its `epoch_writer`: the thread that read it since the last barrier (`NONE`,
    `SEVERAL`)."""
    orders: Orders | None = None
    """What the codes a named barrier left in this memory's writers and readers stand for
    (None while it left none)."""
    checked: bool = False
    """Whether the next write is a thread's that the analysis has checked against the reads
    (`AbstractMemory.check_overwrite`). A write it has not checked is taken as ordered after
    them, and they are forgotten."""

    @classmethod
    def of(cls, name: str, nbytes: int) -> SharedMemory:
        memory = cls.shared(name, nbytes)
        memory.reads = TagMemory.shared(f"{name}, as threads read it", nbytes)
        return memory  # type: ignore[return-value]

    def write(self, idx: np.ndarray, ids: np.ndarray, threads: np.ndarray, site: int | np.ndarray) -> None:
        if self.orders is not None and not self.per_thread:  # a named barrier's codes, as the writers see them
            rows = idx.reshape(threads.size, -1)
            self.epoch_writer[rows] = self.orders.resolve(self.epoch_writer[rows], threads[:, None])
        super().write(idx, ids, threads, site)
        if not self.checked:
            self.forget(idx)
        self.checked = False

    def forget(self, idx: np.ndarray) -> None:
        """An unchecked write of bytes `idx`: the reads before it are taken as ordered."""
        assert self.reads is not None
        self.reads.epoch_writer[idx.reshape(-1)] = NONE

    def note_thread_reads(self, idx: np.ndarray, threads: np.ndarray) -> None:
        """Thread `threads[r]` reads bytes `idx[r]`: a byte keeps its reader while one thread
        alone reads it, and is read by `SEVERAL` once another does."""
        assert self.reads is not None
        readers = self.reads.epoch_writer
        rows = idx.reshape(threads.size, -1)
        owners = np.broadcast_to(threads[:, None], rows.shape)
        old = readers[rows] if self.orders is None else self.orders.resolve(readers[rows], owners)
        new = np.where((old == NONE) | (old == owners), owners, SEVERAL)
        readers[rows] = new
        # two threads reading one byte in this access: one of them was stored, and the byte
        # is read by several
        clash = readers[rows] != new
        if clash.any():
            readers[rows[clash]] = SEVERAL

    def unordered_reads(self, idx: np.ndarray, threads: np.ndarray) -> np.ndarray:
        """Where thread `threads[r]` writing bytes `idx[r]` races with another thread's read
        since the last barrier."""
        assert self.reads is not None
        reader = self.reads.epoch_writer[idx]
        if self.orders is not None:
            reader = self.orders.resolve(reader, threads[:, None])
        return (reader != NONE) & (reader != threads[:, None])  # type: ignore[no-any-return]

    def reader(self, byte: int) -> int:
        """The thread that read `byte` since the last barrier (`SEVERAL`, `NONE`)."""
        assert self.reads is not None
        reader = self.reads.epoch_writer[byte:byte + 1]
        return int((reader if self.orders is None else self.orders.resolve(reader, None))[0])
