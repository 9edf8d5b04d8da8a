"""What matrix products read from shared memory, as the static checker follows it for races.

A product whose atom reads an operand whole from a shared tile reads it for its group of
threads as a unit, so a later write to those bytes by a thread outside the group, with no
barrier between, is a data race (the interpreter's rule: the group's own threads may write
them once the product has finished). The checker takes a product's reads as made where it
starts, and a product started with `matmul_async` as reading until the `matmul_wait` that
retires it (below).

The groups that read a shared memory's bytes since the last barrier are kept as the writers
of a memory of their own, `OperandMemory.readers`: the analysis lists it with its other
memories, so branches join it, loops carry it to the next iteration and barriers clear it as
they do writers. A backend's asynchronous copy into those bytes (a bulk tensor copy) is taken
as ordered after the reads, as its data is taken as landed and ordered for every reader: the
interpreter checks both on each launch it runs.

A product started with `matmul_async` reads its operands at any time until the `matmul_wait`
that retires it, and a barrier does not retire it: until then a write to those bytes by any
thread (its own group's, a backend's bulk copy) is a race. `InFlight` keeps, per group and
byte, how many products the group started after the newest running product that reads the
byte; `matmul_wait(pending)` retires, in the groups of the threads that wait, every product
with `pending` or more started after it (the interpreter's rule: each thread's products but
the newest `pending`). It is listed with the other memories too, so branches and loops carry
it (a byte running on either path is running), and barriers leave it alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from argus.verify.memory import TagMemory
from xdsl.ir import Operation, SSAValue

from ..ir import dialect as D
from .shared_reads import NONE, SEVERAL, SharedMemory

@dataclass
class InFlight(TagMemory):
    """The asynchronous products still running that read a shared memory, per group and byte:
    `epoch_writer[slot · size + byte]` is how many products the group of `slot` (led by thread
    `slot · group`) started after the newest running one that reads the byte (`NONE`: none
    runs). Its tags and sites stay empty."""

    group: int = 1
    """Threads per group of the asynchronous products that read the memory."""
    size: int = 0
    """Bytes of the memory."""

    @classmethod
    def of(cls, name: str, threads: int, group: int, size: int) -> InFlight:
        memory = cls.shared(f"{name}, as running products read it", threads // group * size)
        memory.group, memory.size = group, size  # type: ignore[attr-defined]
        return memory  # type: ignore[return-value]

    @property
    def ages(self) -> np.ndarray:
        """The ages as (slots, bytes): a view."""
        return self.epoch_writer.reshape(-1, self.size)

    def barrier(self) -> None:
        """A barrier retires no product."""

    @staticmethod
    def join_writers(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Two paths' running products: a byte running on either runs, retired no sooner than
        the later of the two would retire it (the younger age)."""
        return np.where(a == NONE, b, np.where(b == NONE, a, np.minimum(a, b)))

    def started(self, slots: np.ndarray) -> None:
        """The groups of `slots` each start one more product: theirs running age by one."""
        ages = self.ages
        rows = ages[slots]
        ages[slots] = np.where(rows == NONE, NONE, rows + 1)

    def reads(self, idx: np.ndarray, slots: np.ndarray) -> None:
        """The product just started by the group of `slots[r]` reads bytes `idx[r]`."""
        self.ages[slots[:, None], idx.reshape(slots.size, -1)] = 0

    def retire(self, slots: np.ndarray, pending: int) -> None:
        """The groups of `slots` wait until at most `pending` of their products run."""
        ages = self.ages
        rows = ages[slots]
        ages[slots] = np.where(rows >= pending, NONE, rows)

    def running(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per byte of `idx` (any shape), whether a running product reads it, and the first
        thread of the group of one that does."""
        ages = self.ages[:, idx]
        hit = ages != NONE
        return hit.any(axis=0), hit.argmax(axis=0) * self.group


@dataclass
class OperandMemory(SharedMemory):
    """A shared memory some product reads an operand from, with the groups that read it (and,
    as every shared memory, the threads that read it). A write no thread's rule checked (a
    backend's asynchronous copy) forgets the groups' reads as it forgets the threads'."""

    readers: TagMemory | None = None
    """Per byte, as its `epoch_writer`: the first thread of the group whose product read it
    since the last barrier (`NONE`, `SEVERAL`)."""
    group: int = 0
    """Threads per group of the products that read it (0 until one has)."""
    pending: InFlight | None = None
    """The asynchronous products still running that read it (None: no `matmul_async` does)."""

    @classmethod
    def operands(cls, name: str, nbytes: int) -> OperandMemory:
        memory = cls.of(name, nbytes)
        memory.readers = TagMemory.shared(f"{name}, as products read it", nbytes)  # type: ignore[attr-defined]
        return memory  # type: ignore[return-value]

    def forget(self, idx: np.ndarray) -> None:
        super().forget(idx)
        assert self.readers is not None
        self.readers.epoch_writer[idx.reshape(-1)] = NONE

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


def operand_allocations(products: Iterable[D.MmaOp]) -> set[Operation]:
    """The shared allocations (`make_shared` ops) some of the kernel's `products` (its
    `matmul` ops, read off the op table rather than by walking the IR) reads an operand from,
    through any views of them."""
    found: set[Operation] = set()
    for op in products:
        for operand in (op.a, op.b):
            if isinstance(operand.type, D.TileType) and operand.type.space.data == "shared":
                found.add(_allocation(operand))
    return found


def asynchronous_groups(products: Iterable[D.MmaOp]) -> dict[Operation, set[int]]:
    """Per shared allocation some `matmul_async` of the kernel's `products` reads an operand
    from, the sizes of the groups of threads those products run in."""
    found: dict[Operation, set[int]] = {}
    for op in products:
        if op.asynchronous is not None:
            threads = int(op.atom.data["threads"].data)  # type: ignore[attr-defined]
            for operand in (op.a, op.b):
                if isinstance(operand.type, D.TileType) and operand.type.space.data == "shared":
                    found.setdefault(_allocation(operand), set()).add(threads)
    return found


def _allocation(value: SSAValue) -> Operation:
    owner = value.owner
    while isinstance(owner, (D.ViewOp, D.SliceOp, D.PartitionOp)):
        owner = owner.source.owner
    assert isinstance(owner, Operation)
    return owner
