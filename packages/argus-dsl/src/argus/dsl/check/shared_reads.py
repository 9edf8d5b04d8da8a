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
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from argus.verify.memory import TagMemory

#: No thread (no group) read the byte since the last barrier.
NONE = -1
#: More than one thread (or group) read the byte since the last barrier.
SEVERAL = -2


@dataclass
class SharedMemory(TagMemory):
    """A shared memory with the threads that read each byte since the last barrier."""

    reads: TagMemory | None = None
    """Per byte, as its `epoch_writer`: the thread that read it since the last barrier (`NONE`,
    `SEVERAL`)."""
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
        old = readers[rows]
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
        return (reader != NONE) & (reader != threads[:, None])  # type: ignore[no-any-return]

    def reader(self, byte: int) -> int:
        """The thread that read `byte` since the last barrier (`SEVERAL`, `NONE`)."""
        assert self.reads is not None
        return int(self.reads.epoch_writer[byte])
