"""The reference interpreter: the executable definition of what an Argus kernel means.

All threads of a block run in lockstep, each op computed for every thread at once with numpy;
a mask says which threads are active (SIMT: both sides of a runtime ``if`` run, each under
its mask). Blocks run one after another — or, for a kernel with clusters, one cluster after
another: the blocks of a cluster run together in lockstep as one group of threads numbered
block after block (thread t is thread t % T of the cluster's block t // T, for blocks of T
threads), and each shared tile holds one segment per block, the thread's own block's unless
it reaches into another's. Memory is bytes, so views and vector loads mean
exactly what they mean on the GPU, and every byte of shared and local memory carries the
bookkeeping that turns undefined behaviour into a `KernelFault`: data races between
barriers, reads of bytes never written, out-of-bounds accesses, barriers not reached by
every thread of the block.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from argus.layout import ComposedLayout, Layout
from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from ..ir import dialect as D
from ..atoms import CopyAtom, MMAAtom
from ..dtypes import DType
from ..errors import ArgusLaunchError, KernelFault, SourceLocation
from ..ir.dialect import pad3 as _pad3
from . import Clocks, Machine, Race, Schedule, Scheduler, Tracker
from . import active as active_schedule
from .tiles import fragment_bytes as _fragment_bytes
from .tiles import offset_table as _offset_table
from ..ir.types import dtype_of_mlir
from ..launch_args import NamedDim, check_named_sizes, check_shape


# ---- memories --------------------------------------------------------------------------------


@dataclass
class Memory:
    """Bytes with per-byte bookkeeping. `threads` > 0 makes it per-thread (registers).

    `written` says which bytes were ever written (reads of others are faults). Who accessed a
    shared byte, and whether that is ordered with what comes next, is the block's `Tracker`'s
    (argus.dsl.machine.clocks)."""

    name: str
    space: str
    data: np.ndarray
    written: np.ndarray | None = None
    busy: np.ndarray | None = None
    """Registers a product started with matmul_async is still computing (made on first use)."""

    @classmethod
    def shared(cls, name: str, nbytes: int) -> Memory:
        return cls(name, "shared", np.zeros(nbytes, np.uint8), np.zeros(nbytes, bool))

    @classmethod
    def local(cls, name: str, threads: int, nbytes: int) -> Memory:
        return cls(name, "local", np.zeros((threads, nbytes), np.uint8), np.zeros((threads, nbytes), bool))


@dataclass(frozen=True)
class TileValue:
    """A tile at run time: which memory, and how its elements are laid out in it. A partitioned
    tile also has a per-thread `base`, added before the layout's swizzle (if any)."""

    memory: Memory
    layout: Layout | ComposedLayout
    dtype: DType
    base: np.ndarray | None = None
    segment: np.ndarray | None = None
    """In a cluster, per thread: where the segment of the block it reaches starts (bytes)."""

    def offsets(self, flat: np.ndarray, threads: np.ndarray) -> np.ndarray:
        """Element offsets of the elements at colexicographic indices `flat` for `threads`."""
        if self.base is None:
            found = _offset_table(self.layout)[0][flat]
        else:
            base = self.base[threads]
            layout = self.layout
            if isinstance(layout, ComposedLayout):
                pre = _offset_table(layout.inner)[0][flat] + layout.offset + base
                found = np.asarray(layout.outer(pre), dtype=np.int64)
            else:
                found = _offset_table(layout)[0][flat] + base
        if self.segment is not None:
            return found + self.segment[threads] // self.dtype.nbytes  # type: ignore[no-any-return]
        return found  # type: ignore[no-any-return]

    def derived(self, layout: Layout | ComposedLayout, dtype: DType, base: np.ndarray | None) -> TileValue:
        """A tile over the same memory (a view, slice or part), in the same block's segment."""
        return TileValue(self.memory, layout, dtype, base, self.segment)

    def in_block(self, segment: np.ndarray) -> TileValue:
        """The same tile in the segments `segment` (per thread, bytes) of a cluster's blocks."""
        return dataclasses.replace(self, segment=segment)


@dataclass(frozen=True)
class TensorValue:
    """A global tensor argument: the caller's array, viewed as bytes."""

    name: str
    array: np.ndarray
    dtype: DType

    @property
    def bytes(self) -> np.ndarray:
        return self.array.reshape(-1).view(np.uint8)


# ---- launch ----------------------------------------------------------------------------------


@dataclass
class _Frame:
    """What one block — or one cluster of blocks, run together — needs while it runs."""

    values: dict[SSAValue, Any]
    threads: int
    thread_ids: np.ndarray
    block_index: tuple[int, int, int]
    """The (first) block."""
    block_threads: int
    """Threads per block (all of them but in a cluster)."""
    shared: list[Memory] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    """Per-block (per-cluster) state of intrinsics (e.g. the phases of a target's memory barriers)."""
    blocks_of: np.ndarray | None = None
    """In a cluster: each thread's block, (3, threads)."""
    machine: Any = None
    """The block's clocks, access history, barriers and scheduler (argus.dsl.machine.Machine)."""

    @property
    def local_ids(self) -> np.ndarray:
        """Each thread's index within its block."""
        return self.thread_ids % self.block_threads if self.blocks_of is not None else self.thread_ids

    @property
    def blocks(self) -> int:
        """Blocks run together: the cluster's (1 without clusters)."""
        return self.threads // self.block_threads

    def segment_bytes(self, data: np.ndarray) -> int:
        """The bytes of each block's segment of a shared memory holding `data` (one per block)."""
        return int(data.shape[-1]) // self.blocks

    @property
    def ranks(self) -> np.ndarray:
        """Each thread's block's rank in its cluster (0 without clusters)."""
        return self.thread_ids // self.block_threads

    def block_of(self, thread: int) -> tuple[int, int, int]:
        if self.blocks_of is None:
            return self.block_index
        return tuple(int(b) for b in self.blocks_of[:, thread])  # type: ignore[return-value]

    def block_threads_of(self, threads: np.ndarray) -> list[np.ndarray]:
        """The threads of each block that has some of `threads` (one group without clusters)."""
        if self.blocks_of is None:
            return [threads]
        ranks = threads // self.block_threads
        return [threads[ranks == r] for r in np.unique(ranks)]


class Interpreter:
    """Runs an ``argus.kernel`` op over a grid, on numpy arrays, in place."""

    def __init__(self, kernel: D.KernelOp, locations: dict[Operation, SourceLocation] | None = None,
                 schedule: Schedule | None = None) -> None:
        from ..ir.registry import install

        install()  # every op family's meaning, the core language's and every backend's
        self.kernel = kernel
        self.locations = locations or {}
        self.block_dims = _pad3(kernel.block_dims)
        self.warp_size = kernel.warp_size.data
        self.handlers = RULES
        self._atoms: dict[Operation, MMAAtom | CopyAtom] = {}
        self.constants: dict[Operation, np.ndarray] = {}
        self.schedule = schedule or active_schedule()
        self.points: list[Operation] = []
        """Program points the access history names, by index (`point`)."""
        self._point_ids: dict[Operation, int] = {}

    def launch(self, grid: Sequence[int], args: Sequence[Any], blocks: Sequence[tuple[int, int, int]] | None = None) -> None:
        """Run every block of `grid` (or only `blocks`, e.g. to replay one block of a witness)."""
        grid3 = _pad3(tuple(grid))
        params = list(self.kernel.body.block.args)
        if len(args) != len(params):
            raise ArgusLaunchError(f"{self.kernel.sym_name.data} takes {len(params)} runtime argument(s), got {len(args)}")
        names = [n.data for n in self.kernel.arg_names.data]
        bound = [self.bind_argument(name, p, a) for name, p, a in zip(names, params, args)]
        self.check_sizes(names, params, bound)
        threads = int(np.prod(self.block_dims))
        cluster = self.kernel.cluster_dims
        size = int(np.prod(cluster))
        if any(g % c for g, c in zip(grid3, cluster)):
            raise ArgusLaunchError(f"{self.kernel.sym_name.data} runs in clusters of {cluster} blocks; its grid must "
                                   f"be whole clusters, got {grid3}")
        tid = np.arange(threads * size)
        self.grid = grid3
        if blocks is not None:  # the clusters holding them
            order = list(dict.fromkeys(tuple(b - b % c for b, c in zip(block, cluster)) for block in blocks))
        else:
            order = [(bx, by, bz) for bz, by, bx in itertools.product(range(grid3[2]), range(grid3[1]), range(grid3[0]))
                     if bx % cluster[0] == 0 and by % cluster[1] == 0 and bz % cluster[2] == 0]
        for bx, by, bz in order:
            frame = _Frame({p: v for p, v in zip(params, bound)}, threads * size, tid, (bx, by, bz), threads)
            if size > 1:
                ranks = tid // threads
                frame.blocks_of = np.stack([origin + (ranks // step) % extent for origin, step, extent in
                                            zip((bx, by, bz), (1, cluster[0], cluster[0] * cluster[1]), cluster)])
            self.run_block(self.kernel.body.block, frame, np.ones(threads * size, bool))
            if any(not p.retired for p in frame.state.get("matmul.pending", [])):
                raise KernelFault("in-flight", f"the block ends with products started by matmul_async that no "
                                  f"matmul_wait finished (block {(bx, by, bz)})", None, {"block": (bx, by, bz)})

    def check_sizes(self, names: Sequence[str], params: Sequence[SSAValue], bound: Sequence[Any]) -> None:
        """Dims named alike agree, and integer arguments named like them equal them (as each GPU
        runtime checks): the checker's proofs are about no other launch."""
        dims: list[NamedDim] = []
        integers: list[tuple[str, int]] = []
        for name, param, value in zip(names, params, bound):
            t = param.type
            if isinstance(t, D.TensorType):
                dims.extend((name, axis, dim, int(value.array.shape[axis]))
                            for axis, dim in enumerate(t.shape) if isinstance(dim, str))
            elif dtype_of_mlir(t).is_integer:
                integers.append((name, int(value)))
        check_named_sizes(self.kernel.sym_name.data, dims, integers)

    def bind_argument(self, name: str, param: SSAValue, arg: Any) -> Any:
        t = param.type
        if isinstance(t, D.TensorType):
            return self.bind_tensor(name, t, arg)
        dtype = dtype_of_mlir(t)
        if isinstance(arg, (bool, np.bool_)) or not isinstance(arg, (int, float, np.integer, np.floating)):
            raise ArgusLaunchError(f"argument {name!r} must be a {dtype} scalar, got {type(arg).__name__}")
        if dtype.is_integer and not isinstance(arg, (int, np.integer)):
            raise ArgusLaunchError(f"argument {name!r} must be an integer, got {arg!r}")
        return np.asarray(dtype.round(np.asarray(arg)))

    def bind_tensor(self, name: str, t: D.TensorType, arg: Any) -> TensorValue:
        dtype = t.dtype
        if not isinstance(arg, np.ndarray):
            raise ArgusLaunchError(f"argument {name!r} must be a numpy array for the interpreter, got {type(arg).__name__}")
        expected = storage_dtype(dtype)
        if arg.dtype != expected:
            raise ArgusLaunchError(
                f"argument {name!r} is declared {dtype} and must be held as numpy {expected} "
                f"(see argus.dsl.to_storage), got {arg.dtype}"
            )
        if not arg.flags.c_contiguous or not arg.flags.writeable:
            raise ArgusLaunchError(f"argument {name!r} must be a writeable C-contiguous array")
        check_shape(self.kernel.sym_name.data, name, tuple(t.shape), arg.shape)
        return TensorValue(name, arg, dtype)

    # ---- execution -------------------------------------------------------------------
    def run_block(self, block: Block, frame: _Frame, mask: np.ndarray) -> None:
        """Run a block (cluster) of threads from the start of `block`, under the schedule."""
        threads = frame.threads
        warps = -(-threads // self.warp_size)
        clocks = Clocks(warps, self.warp_size)
        frame.machine = Machine(clocks, Tracker(clocks), Scheduler(self, frame, self.schedule))
        self._running = frame.machine.scheduler
        frame.machine.scheduler.run(block, mask)

    _running: Scheduler | None = None

    @property
    def loops(self) -> list[scf.ForOp]:
        """The runtime loops around the op running now, outermost first."""
        return self._running.loops() if self._running is not None else []

    def point(self, op: Operation | None) -> int:
        """The index of a program point in `points` (for the access history)."""
        if op is None:
            return -1
        found = self._point_ids.get(op)
        if found is None:
            found = self._point_ids[op] = len(self.points)
            self.points.append(op)
        return found

    def where(self, op: Operation | int | None) -> str:
        """A program point in words: its source location, or the op's name."""
        if isinstance(op, int):
            op = self.points[op] if 0 <= op < len(self.points) else None
        if op is None:
            return "an unknown place"
        loc = self.locations.get(op)
        return str(loc) if loc is not None else op.name

    def barrier_passed(self, op: Operation, frame: _Frame, threads: np.ndarray) -> None:
        """Every thread of `threads` met at a barrier: what their warps wrote before it is visible
        to the products they start after it (subclasses follow what else it orders)."""
        clocks = frame.machine.clocks
        warps = np.unique(clocks.warp_of(threads))
        # each warp has waited since its arrival, which published its clock less one
        _fenced(frame)[warps] = clocks.matrix[warps, warps] - 1

    def landed(self, op: Operation, frame: _Frame, tile: TileValue, target: np.ndarray, tensor: TensorValue,
               source: np.ndarray, issuer: int) -> None:
        """An asynchronous copy issued by `op` wrote bytes `target` of `tile`'s memory from bytes
        `source` of `tensor` (-1: outside it, zero). Subclasses follow what moved."""

    def scalars(self, frame: _Frame, ssa: SSAValue) -> np.ndarray:
        return _scalar_array(frame, ssa)

    def run_op(self, op: Operation, frame: _Frame, mask: np.ndarray) -> None:
        """One op for every thread of `mask` (subclasses add what else they track)."""
        handler = self.handlers.get(type(op))
        if handler is None:
            raise KernelFault("unsupported", f"the interpreter has no rule for {op.name}", self.locations.get(op), {})
        handler(self, op, frame, mask)

    def copy_atom(self, op: D.CopyOp) -> CopyAtom:
        """The copy atom a copy op names, rebuilt once from its properties."""
        atom = self._atoms.get(op)
        if atom is None:
            atom = self._atoms[op] = CopyAtom.from_properties({k: v.data for k, v in op.atom.data.items()})  # type: ignore[attr-defined]
        return atom  # type: ignore[return-value]

    def atom(self, op: D.MmaOp) -> MMAAtom:
        """The atom an mma op names, rebuilt once from its properties."""
        atom = self._atoms.get(op)
        if atom is None:
            atom = self._atoms[op] = MMAAtom.from_properties({k: v.data for k, v in op.atom.data.items()})  # type: ignore[attr-defined]
        return atom

    def fault(self, kind: str, message: str, op: Operation, frame: _Frame, **details: Any) -> KernelFault:
        thread = details.get("thread")
        block = frame.block_of(thread) if isinstance(thread, int) else frame.block_index
        where = f"block {block}"
        if frame.blocks_of is not None:
            where += f" of the cluster from block {frame.block_index}"
            if isinstance(thread, int):
                where += f"; thread {thread} is thread {thread % frame.block_threads} of its block"
        if self.schedule != Schedule() and f"schedule {self.schedule}" not in message:
            where += f"; schedule {self.schedule}"
        details = {"block": block, "schedule": str(self.schedule), **details}
        return KernelFault(kind, f"{message} ({where})", self.locations.get(op), details)

    def thread_coordinates(self, frame: _Frame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        bx, by, _ = self.block_dims
        t = frame.local_ids
        return t % bx, (t // bx) % by, t // (bx * by)


def storage_dtype(dtype: DType) -> np.dtype:
    """The numpy dtype a host array of `dtype` elements is held in (bf16 as its uint16 bits)."""
    if dtype.name == "bf16":
        return np.dtype(np.uint16)
    if dtype.minifloat:
        return np.dtype(np.uint8)
    if dtype.kind == "bits":
        return np.dtype(f"V{dtype.nbytes}")
    return dtype.numpy


# ---- op rules --------------------------------------------------------------------------------

Rule = Callable[[Interpreter, Any, _Frame, np.ndarray], None]


def _value(frame: _Frame, ssa: SSAValue) -> Any:
    return frame.values[ssa]


def _scalar_array(frame: _Frame, ssa: SSAValue) -> np.ndarray:
    """A per-thread value; scalar kernel arguments are held once and broadcast here."""
    v = frame.values[ssa]
    return np.broadcast_to(v, (frame.threads,)) if v.ndim == 0 else v  # type: ignore[no-any-return]


def _set(frame: _Frame, op: Operation, value: np.ndarray) -> None:
    frame.values[op.results[0]] = value


def segment_stride(nbytes: int) -> int:
    """Bytes between the segments of a cluster's blocks in one shared tile's memory (aligned
    for every element size)."""
    return -(-max(nbytes, 1) // 128) * 128


_COORDINATES: dict[int, tuple[Any, list[np.ndarray]]] = {}


def tile_coordinates(layout: Layout | ComposedLayout) -> list[np.ndarray]:
    """Per-mode coordinates of every element of a tile, in its value order (mode 0 fastest);
    computed once per layout object (read-only)."""
    entry = _COORDINATES.get(id(layout))
    if entry is None:
        inner = layout.inner if isinstance(layout, ComposedLayout) else layout
        sizes = [m.size() for m in inner] if inner.rank > 1 else [inner.size()]
        flat = np.arange(int(np.prod(sizes)))
        out = []
        for n in sizes:
            mode = flat % n
            mode.flags.writeable = False
            out.append(mode)
            flat = flat // n
        entry = _COORDINATES[id(layout)] = (layout, out)
    return list(entry[1])


def _fragment_in_tile(interp: Interpreter, op: Operation, frame: _Frame, tile: TileValue, threads: np.ndarray,
                      role: str) -> np.ndarray:
    """A fragment's byte indices, after checking that they lie inside the tile's memory."""
    idx = _fragment_bytes(tile, threads)
    size = tile.memory.data.shape[-1]
    if idx.size and (idx.min() < 0 or idx.max() >= size):
        raise interp.fault("out-of-bounds", f"the {role} fragment reaches outside its {tile.memory.space} tile "
                           f"({size} bytes)", op, frame, array=tile.memory.name)
    return idx


def _atom_threads(interp: Interpreter, op: Operation, frame: _Frame, mask: np.ndarray, group: int, name: str) -> np.ndarray:
    """The active threads of an atom, which must come in whole groups of `group` threads."""
    if frame.block_threads % group:
        raise interp.fault("atom-threads", f"atom {name} needs the block size to be a multiple of {group} threads", op, frame)
    active = mask.reshape(-1, group)
    partial = active.any(axis=1) & ~active.all(axis=1)
    if partial.any():
        g = int(np.flatnonzero(partial)[0])
        idle = [int(t) for t in np.flatnonzero(~active[g]) + g * group]
        raise interp.fault("inactive-lane", f"atom {name} needs all {group} threads of group {g}; "
                           f"threads {idle[:8]} are not active here", op, frame, threads=idle)
    groups = np.flatnonzero(active.all(axis=1))
    return (groups[:, None] * group + np.arange(group)).reshape(-1)


def _fenced(frame: _Frame) -> np.ndarray:
    """Per warp: its clock as of the last barrier it passed, up to which its own shared-memory
    writes are visible to the products it starts (not merely up to its last release: starting
    a product, arriving on a memory barrier or issuing a copy publishes nothing to the
    asynchronous proxy)."""
    return frame.state.setdefault("matmul.fenced", np.zeros(frame.machine.clocks.warps, np.int64))  # type: ignore[no-any-return]


def _not_busy(interp: Interpreter, op: Operation, frame: _Frame, memory: Memory, threads: np.ndarray,
              idx: np.ndarray, what: str) -> None:
    """Registers a started product is still computing are not to be touched."""
    if memory.busy is None:
        return
    hit = memory.busy[threads.reshape(-1, *([1] * (idx.ndim - 1))), idx]
    if hit.any():
        thread = int(threads[int(np.flatnonzero(hit.reshape(threads.size, -1).any(axis=1))[0])])
        raise interp.fault("in-flight", f"thread {thread} {what} registers of {memory.name} that a matmul_async "
                           "is still computing; call matmul_wait first", op, frame, thread=thread, array=memory.name)


# ---- loads and stores ------------------------------------------------------------------------


def _element_offsets(interp: Interpreter, op: Operation, frame: _Frame, target: Any, coords: Sequence[np.ndarray],
                     active: np.ndarray) -> np.ndarray:
    """Element offsets of the active threads' coordinates, after the bounds checks."""
    if isinstance(target, TensorValue):
        shape = target.array.shape
        _check_bounds(interp, op, frame, coords, shape, active, target.name,
                      f"tensor {target.name!r}", f"its shape is {shape}")
        offset = np.zeros(len(coords[0]) if coords else 0, np.int64)
        for c, n in zip(coords, shape):
            offset = offset * n + c
        return offset
    layout = target.layout
    table, mode_sizes = _offset_table(layout)
    sizes = mode_sizes if len(coords) > 1 else [table.size]
    _check_bounds(interp, op, frame, coords, sizes, active, target.memory.name,
                  f"{target.memory.space} tile {layout}", f"its modes have sizes {tuple(sizes)}")
    flat = coords[0]
    if len(coords) > 1:
        flat = np.zeros_like(coords[0])
        for c, n in zip(reversed(coords), reversed(sizes)):
            flat = flat * n + c
    return target.offsets(flat, np.flatnonzero(active))


def _coordinate(coords: Sequence[np.ndarray], row: int) -> tuple[int, ...]:
    """The coordinate of the `row`-th active thread."""
    return tuple(int(c[row]) for c in coords)


def _check_bounds(interp: Interpreter, op: Operation, frame: _Frame, coords: Sequence[np.ndarray],
                  sizes: Sequence[int], active: np.ndarray, array: str, what: str, extent: str) -> None:
    """Every coordinate inside its mode; otherwise an out-of-bounds fault naming the first offender."""
    for axis, (c, n) in enumerate(zip(coords, sizes)):
        bad = (c < 0) | (c >= n)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            thread, index = int(np.flatnonzero(active)[row]), _coordinate(coords, row)
            raise interp.fault("out-of-bounds", f"{what} indexed at {index} by thread {thread}; {extent} "
                               f"(mode {axis} out of range)", op, frame, array=array, thread=thread, index=index)


def _byte_indices(offsets: np.ndarray, nbytes: int) -> np.ndarray:
    return offsets[:, None] * nbytes + np.arange(nbytes)


def _checked_offsets(interp: Interpreter, op: Operation, frame: _Frame, target: Any, offsets: np.ndarray,
                     mask: np.ndarray) -> np.ndarray:
    """Element offsets given directly (lowered IR): inside the tensor or the tile's footprint."""
    limit = target.array.size if isinstance(target, TensorValue) else target.memory.data.shape[-1] // target.dtype.nbytes
    if isinstance(target, TileValue) and target.segment is not None:  # in the thread's block's segment
        limit = frame.segment_bytes(target.memory.data) // target.dtype.nbytes
    bad = (offsets < 0) | (offsets >= limit)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        thread = int(np.flatnonzero(mask)[row])
        name = target.name if isinstance(target, TensorValue) else target.memory.name
        raise interp.fault("out-of-bounds", f"thread {thread} accesses element offset {int(offsets[row])} of {name}, "
                           f"which holds {limit} elements", op, frame, array=name, thread=thread, index=(int(offsets[row]),))
    if isinstance(target, TileValue) and target.segment is not None:
        return offsets + target.segment[np.flatnonzero(mask)] // target.dtype.nbytes  # type: ignore[no-any-return]
    return offsets



def _read(interp: Interpreter, op: Operation, frame: _Frame, mask: np.ndarray, source: Any, offsets: np.ndarray,
          where: Callable[[int], tuple[int, ...]]) -> None:
    """Gather one element per active thread at `offsets`, checking uninitialized bytes and races."""
    dtype: DType = source.dtype
    active = np.flatnonzero(mask)
    idx = _byte_indices(offsets, dtype.nbytes)
    shape = (frame.threads, dtype.nbytes) if dtype.kind == "bits" else (frame.threads,)
    result = np.zeros(shape, dtype.numpy)
    if isinstance(source, TensorValue):
        raw = source.bytes[idx]
    else:
        memory = source.memory
        if memory.space == "local":
            _not_busy(interp, op, frame, memory, active, idx, "reads")
            raw = memory.data[active[:, None], idx]
            unset = ~memory.written[active[:, None], idx]  # type: ignore[index]
        else:
            raw = memory.data[idx]
            unset = ~memory.written[idx]  # type: ignore[index]
            _check_read_race(interp, op, frame, memory, idx, active)
        if unset.any():
            row = int(np.flatnonzero(unset.any(axis=1))[0])
            raise interp.fault(
                "uninitialized-read", f"thread {int(active[row])} reads {memory.space} tile {source.layout} at "
                f"{where(row)}, which no thread has written",
                op, frame, array=memory.name, thread=int(active[row]), index=where(row),
            )
    result[active] = dtype.decode(raw)
    _set(frame, op, result)


def _write(interp: Interpreter, op: Operation, frame: _Frame, mask: np.ndarray, target: Any, offsets: np.ndarray,
           values: np.ndarray) -> None:
    """Scatter the active threads' values at `offsets`, checking races in shared memory."""
    dtype: DType = target.dtype
    active = np.flatnonzero(mask)
    idx = _byte_indices(offsets, dtype.nbytes)
    raw = dtype.encode(values[active])
    if isinstance(target, TensorValue):
        target.bytes[idx] = raw
        return
    memory = target.memory
    if memory.space == "local":
        _not_busy(interp, op, frame, memory, active, idx, "writes")
        memory.data[active[:, None], idx] = raw
        memory.written[active[:, None], idx] = True  # type: ignore[index]
        return
    _check_write_race(interp, op, frame, memory, idx, active)
    memory.data[idx] = raw
    memory.written[idx] = True  # type: ignore[index]


def _history(frame: _Frame, memory: Memory) -> Any:
    return frame.machine.tracker.history(id(memory), memory.data.size)


def _check_write_race(interp: Interpreter, op: Operation, frame: _Frame, memory: Memory, idx: np.ndarray,
                      active: np.ndarray) -> None:
    """Threads `active[r]` write shared bytes `idx[r]`: ordered after every access to them so far?"""
    try:
        frame.machine.tracker.thread_write(_history(frame, memory), idx, active, interp.point(op))
    except Race as race:
        raise _race(interp, op, frame, memory, race) from None


def _check_read_race(interp: Interpreter, op: Operation, frame: _Frame, memory: Memory, idx: np.ndarray,
                     active: np.ndarray) -> None:
    try:
        frame.machine.tracker.thread_read(_history(frame, memory), idx, active, interp.point(op))
    except Race as race:
        raise _race(interp, op, frame, memory, race) from None


def _race(interp: Interpreter, op: Operation, frame: _Frame, memory: Memory, race: Race) -> KernelFault:
    """A data race, naming both accesses and the schedule that shows it."""
    earlier, later = race.earlier, race.later
    verb, earlier_verb = race.verbs[1], race.verbs[0]
    where = "in the same instruction" if earlier.op == later.op and verb == earlier_verb == "writes" else \
        f"at {interp.where(earlier.op)}"
    if earlier_verb == "writes":
        earlier_verb = "writes it"
    else:
        earlier_verb = f"{earlier_verb} it"
    return interp.fault(
        "data-race", f"{later.who} {verb} byte {race.byte} of {memory.name} and {earlier.who} {earlier_verb} {where}, "
        f"with nothing ordering the two (schedule {interp.schedule})",
        op, frame, array=memory.name, byte=race.byte, threads=[later.thread, earlier.thread], thread=later.thread,
        earlier=interp.where(earlier.op), schedule=str(interp.schedule))


RULES: dict[type, Rule] = {}
"""Each op kind's interpreter rule; `argus.dsl.ir.registry.define` fills it."""


__all__ = ["Interpreter", "KernelFault", "storage_dtype"]


# ---- for intrinsics (argus.dsl.intrinsics) and the shadow interpreter: what their rules may use ----
Frame = _Frame
value_of = _value
scalars = _scalar_array
set_value = _set
element_offsets = _element_offsets
checked_offsets = _checked_offsets
read = _read
write = _write
check_write_race = _check_write_race
check_read_race = _check_read_race
race = _race
history = _history
byte_indices = _byte_indices
coordinate = _coordinate
atom_threads = _atom_threads
fragment_in_tile = _fragment_in_tile
not_busy = _not_busy
fenced = _fenced
