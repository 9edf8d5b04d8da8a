"""Barriers threads meet at: a generation completes when its count of threads has arrived,
and every thread that arrived leaves having seen what all of them did before arriving."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.ir import Operation

from .clocks import Clocks

if TYPE_CHECKING:
    from .interpreter import Interpreter


@dataclass
class Rendezvous:
    """One barrier (block barrier 0, a named barrier, the cluster barrier)."""

    name: str
    count: int
    threads: int
    generation: int = 0
    arrived: int = 0
    op: Operation | None = None
    """The op the current generation's threads arrive at (a block barrier: one op for all)."""
    vc: np.ndarray | None = None
    released: dict[int, np.ndarray] = field(default_factory=dict)
    arrival: np.ndarray = field(init=False)
    """Per thread: the generation it last arrived at (-1: none)."""

    def __post_init__(self) -> None:
        self.arrival = np.full(self.threads, -1, np.int64)

    def arrive(self, clocks: Clocks, threads: np.ndarray, op: Operation) -> bool:
        """`threads` arrive (releasing what they did); True when the generation completes."""
        fresh = threads[self.arrival[threads] != self.generation]
        if fresh.size == 0:
            return False
        self.arrival[fresh] = self.generation
        self.arrived += fresh.size
        vc = clocks.release(clocks.warp_of(fresh))
        self.vc = vc if self.vc is None else np.maximum(clocks.widen(self.vc), clocks.widen(vc))
        if self.op is None:
            self.op = op
        if self.arrived < self.count:
            return False
        self.released[self.generation] = self.vc
        self.released.pop(self.generation - 2, None)
        self.generation += 1
        self.arrived, self.vc, self.op = 0, None, None
        return True

    def passed(self, threads: np.ndarray) -> np.ndarray:
        """Which of `threads` arrived at a generation that has completed."""
        gen = self.arrival[threads]
        return (gen >= 0) & (gen < self.generation)  # type: ignore[no-any-return]

    def leave(self, clocks: Clocks, threads: np.ndarray) -> None:
        for gen in np.unique(self.arrival[threads]).tolist():
            if gen in self.released:
                clocks.acquire(clocks.warp_of(threads[self.arrival[threads] == gen]), self.released[gen])
        self.arrival[threads] = -1


def rendezvous(interp: Interpreter, frame: Any, key: object, name: str, count: int) -> Rendezvous:
    """The barrier `key` of this block (cluster), made on first use."""
    table = frame.machine.barriers
    found = table.get(key)
    if found is None:
        found = table[key] = Rendezvous(name, count, frame.threads)
    return found  # type: ignore[no-any-return]


class BlockBarrier:
    """`syncthreads()`: every thread of the block, at the same op."""

    def _blocks(self, frame: Any, mask: np.ndarray) -> list[tuple[int, np.ndarray]]:
        threads = np.flatnonzero(mask)
        ranks = threads // frame.block_threads
        return [(int(r), threads[ranks == r]) for r in np.unique(ranks)]

    def arrive(self, interp: Interpreter, op: Operation, frame: Any, mask: np.ndarray) -> None:
        for rank, threads in self._blocks(frame, mask):
            bar = rendezvous(interp, frame, ("syncthreads", rank), "syncthreads()", frame.block_threads)
            if bar.op is not None and bar.op is not op:
                waiting = np.flatnonzero(bar.arrival == bar.generation)
                raise interp.fault(
                    "divergent-barrier",
                    f"threads {_few(threads)} reach syncthreads() here while threads {_few(waiting)} wait at another "
                    f"syncthreads() ({interp.where(bar.op)}); every thread of the block must reach the same one",
                    op, frame, thread=int(threads[0]), threads=threads.tolist())
            if bar.arrive(frame.machine.clocks, threads, op):
                interp.barrier_passed(op, frame, np.arange(rank * frame.block_threads, (rank + 1) * frame.block_threads))

    def ready(self, interp: Interpreter, op: Operation, frame: Any, mask: np.ndarray) -> np.ndarray:
        out = np.zeros(mask.size, bool)
        for rank, threads in self._blocks(frame, mask):
            bar = rendezvous(interp, frame, ("syncthreads", rank), "syncthreads()", frame.block_threads)
            out[threads] = bar.passed(threads)
        return out

    def leave(self, interp: Interpreter, op: Operation, frame: Any, mask: np.ndarray) -> None:
        for rank, threads in self._blocks(frame, mask):
            rendezvous(interp, frame, ("syncthreads", rank), "syncthreads()", frame.block_threads).leave(
                frame.machine.clocks, threads)

    def waiting_for(self, interp: Interpreter, op: Operation, frame: Any,
                    mask: np.ndarray) -> tuple[str, str, np.ndarray | None]:
        rank = int(np.flatnonzero(mask)[0]) // frame.block_threads
        bar = rendezvous(interp, frame, ("syncthreads", rank), "syncthreads()", frame.block_threads)
        block = np.arange(rank * frame.block_threads, (rank + 1) * frame.block_threads)
        missing = block[bar.arrival[block] != bar.generation]
        return ("divergent-barrier", f"the rest of the block at syncthreads(): threads {_few(missing)} "
                f"({missing.size} of {frame.block_threads}) never get there", missing)


def _few(threads: np.ndarray) -> str:
    t = [int(x) for x in threads[:8]]
    return f"{t}{' ...' if threads.size > 8 else ''}"
