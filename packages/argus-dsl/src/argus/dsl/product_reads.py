"""What matrix products read from shared memory, as the static checker follows it for races.

A product whose atom reads an operand whole from a shared tile reads it for its group of
threads as a unit, so a later write to those bytes by a thread outside the group, with no
barrier between, is a data race (the interpreter's rule: the group's own threads may write
them once the product has finished). The checker takes a product's reads as made where it
starts; whether a write comes before the `matmul_wait` that finishes a product started with
`matmul_async` is the interpreter's to find.

The groups that read a shared memory's bytes since the last barrier are kept as the writers
of a memory of their own, `OperandMemory.readers`: the analysis lists it with its other
memories, so branches join it, loops carry it to the next iteration and barriers clear it as
they do writers. A backend's asynchronous copy into those bytes (a bulk tensor copy) is taken
as ordered after the reads, as its data is taken as landed and ordered for every reader: the
interpreter checks both on each launch it runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from argus.verify.memory import TagMemory
from xdsl.ir import Operation, SSAValue

from . import dialect as D

#: No group read the byte since the last barrier.
NONE = -1
#: More than one group (or groups of different sizes) read the byte since the last barrier.
SEVERAL = -2


@dataclass
class OperandMemory(TagMemory):
    """A shared memory some product reads an operand from, with the groups that read it."""

    readers: TagMemory | None = None
    """Per byte, as its `epoch_writer`: the first thread of the group whose product read it
    since the last barrier (`NONE`, `SEVERAL`)."""
    group: int = 0
    """Threads per group of the products that read it (0 until one has)."""
    checked: bool = False
    """Whether the next write is a thread's that the analysis has checked against the reads
    (`unordered`). A write it has not checked, a backend's asynchronous copy, is taken as
    ordered after them, and they are forgotten."""

    @classmethod
    def operands(cls, name: str, nbytes: int) -> OperandMemory:
        memory = cls.shared(name, nbytes)
        memory.readers = TagMemory.shared(f"{name}, as products read it", nbytes)
        return memory  # type: ignore[return-value]

    def write(self, idx: np.ndarray, ids: np.ndarray, threads: np.ndarray, site: int | np.ndarray) -> None:
        super().write(idx, ids, threads, site)
        if not self.checked:
            assert self.readers is not None
            self.readers.epoch_writer[idx.reshape(-1)] = NONE
        self.checked = False

    def note_reads(self, idx: np.ndarray, leaders: np.ndarray, group: int) -> None:
        """The group of `group` threads led by `leaders[r]` reads bytes `idx[r]`."""
        assert self.readers is not None
        flat = idx.reshape(leaders.size, -1)
        lead = np.broadcast_to(leaders[:, None], flat.shape).reshape(-1)
        flat = flat.reshape(-1)
        if flat.size == 0:
            return
        order = np.argsort(flat, kind="stable")
        flat, lead = flat[order], lead[order]
        starts = np.flatnonzero(np.r_[True, flat[1:] != flat[:-1]])  # each byte's readers, together
        first = np.minimum.reduceat(lead, starts)
        mixed = first != np.maximum.reduceat(lead, starts)
        flat = flat[starts]
        old = self.readers.epoch_writer[flat]
        alone = ~mixed & ((old == NONE) | (old == first)) & (self.group in (0, group))
        self.readers.epoch_writer[flat] = np.where(alone, first, SEVERAL)
        self.group = self.group or group

    def unordered(self, idx: np.ndarray, threads: np.ndarray) -> np.ndarray:
        """Where thread `threads[r]` writing bytes `idx[r]` races with a product that read them
        (a group the thread is not in)."""
        assert self.readers is not None
        first = self.readers.epoch_writer[idx]
        writer = threads[:, None]
        return (first != NONE) & ((first == SEVERAL) | (writer < first) | (writer >= first + self.group))  # type: ignore[no-any-return]


def operand_allocations(kernel: D.KernelOp) -> set[Operation]:
    """The shared allocations (`make_shared` ops) some product of `kernel` reads an operand
    from, through any views of them."""
    found: set[Operation] = set()
    for op in kernel.walk():
        if isinstance(op, D.MmaOp):
            for operand in (op.a, op.b):
                if isinstance(operand.type, D.TileType) and operand.type.space.data == "shared":
                    found.add(_allocation(operand))
    return found


def _allocation(value: SSAValue) -> Operation:
    owner = value.owner
    while isinstance(owner, (D.ViewOp, D.SliceOp, D.PartitionOp)):
        owner = owner.source.owner
    assert isinstance(owner, Operation)
    return owner
