"""NVIDIA intrinsics of the language: memory barriers, the tensor memory accelerator, and the
warp's matrix loads and stores (copy atoms).

    from argus.backends.nvptx import language as nv

    bars = make_shared((STAGES,), u64)          # one 8-byte barrier per pipeline stage
    if thread_idx.x == 0:
        nv.mbarrier_init(bars, s, 1)             # completes when one thread has arrived …
    syncthreads()
    if thread_idx.x == 0:
        nv.mbarrier_arrive_expect_tx(bars, s, BYTES)  # … and BYTES have landed
        nv.tma_load(sA_stage, a, (row, col), bars, s)  # a box of `a` into the stage
    nv.mbarrier_wait(bars, s, phase)             # until the phase of that parity completes

Semantics (the interpreter's, which the GPU follows): a barrier counts arrivals and transaction
bytes; its current phase completes the moment every expected thread has arrived and every
announced byte has landed. A bulk copy (`tma_load`) lands its box — elements outside the tensor
read as zero — at a moment the interpreter's schedule picks between its issue and the phase it
counts on (`argus run --schedule delay-async` lands every copy as late as the kernel allows); a
read of the destination not ordered after that phase is a data race. A phase announced short
completes part-way through a copy, whose rest lands afterwards. Waiting for a phase that can
never complete (too few arrivals, announced bytes that no copy brings) is a deadlock fault
naming the barrier and every waiting thread. `mbarrier_wait(bars, i, parity)` returns once the
phase of that parity has completed: phases alternate 0, 1, 0, … so a pipeline waits with
parity ``(round % 2)``. Leaving a wait orders what every arrival (and every landed copy) of the
phase did before it before what the waiter does next: a stage is free for the next copy once
everyone has arrived on its "empty" barrier.

The static checker takes a bulk copy's tags as landing when issued; `verify` runs a kernel with
memory barriers on the interpreter under several schedules before it proves anything.

Clusters (``@kernel(..., cluster=(2, 1, 1))``, sm_90): the blocks of a cluster run at once;
`cluster_rank()` is a block's rank in its cluster, `cluster_sync()` a barrier for every thread
of the cluster, `tma_load_multicast` lands one box in the same place of several blocks' tiles
(each counting the bytes on its own copy of the barrier), and `mbarrier_arrive_cluster`
arrives on another block's copy of a barrier — how a block says that a stage a partner fills
for it is free again. The interpreter runs a cluster's blocks together (see
`argus.dsl.machine.interpreter`), so all of this has its exact meaning there, races between blocks
included; the checker follows the tags across the blocks the same way.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from argus.dsl.ir import dialect as D
from argus.dsl.machine import interpreter as I
from argus.dsl.atoms import CopyAtom
from argus.dsl.dtypes import u64
from argus.dsl.intrinsics import Intrinsic, IntrinsicBuilder, Language, Meaning
from argus.dsl.machine import Agent
from argus.dsl.machine.barriers import rendezvous
from argus.layout import Layout
from . import handoffs, protocol
from xdsl.dialects import builtin
from xdsl.ir import Dialect
from xdsl.irdl import (
    IRDLOperation,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    var_operand_def,
)

# ---- ops ------------------------------------------------------------------------------------------


@irdl_op_definition
class MbarrierInitOp(IRDLOperation):
    """Barrier `index` of `barriers` expects `count` arrivals per phase; it starts at phase 0."""

    name = "nvptx.mbarrier_init"
    barriers = operand_def(D.TileType)
    index = operand_def(builtin.i32)
    count = operand_def(builtin.i32)


@irdl_op_definition
class MbarrierArriveOp(IRDLOperation):
    """One arrival on a barrier; with `nbytes`, it also announces that many bytes to land."""

    name = "nvptx.mbarrier_arrive"
    barriers = operand_def(D.TileType)
    index = operand_def(builtin.i32)
    nbytes = var_operand_def(builtin.i32)


@irdl_op_definition
class MbarrierWaitOp(IRDLOperation):
    """Wait until the barrier's phase of parity `parity` has completed."""

    name = "nvptx.mbarrier_wait"
    barriers = operand_def(D.TileType)
    index = operand_def(builtin.i32)
    parity = operand_def(builtin.i32)


@irdl_op_definition
class TmaLoadOp(IRDLOperation):
    """A box of `tensor` starting at `coords`, shaped like `tile`, copied into `tile`; its bytes
    count on barrier `index` of `barriers`."""

    name = "nvptx.tma_load"
    tile = operand_def(D.TileType)
    tensor = operand_def(D.TensorType)
    barriers = operand_def(D.TileType)
    index = operand_def(builtin.i32)
    coords = var_operand_def(builtin.i32)
    multicast = opt_prop_def(builtin.IntAttr)
    """The blocks of the cluster (bit r: rank r) the box lands in; without it, the issuer's."""


@irdl_op_definition
class ClusterRankOp(IRDLOperation):
    """The rank of the calling thread's block in its cluster (0 in a kernel without clusters)."""

    name = "nvptx.cluster_rank"
    result = result_def(builtin.i32)


@irdl_op_definition
class ClusterSyncOp(IRDLOperation):
    """Every thread of every block of the cluster arrives, then waits for all the others."""

    name = "nvptx.cluster_sync"


@irdl_op_definition
class MbarrierArriveClusterOp(IRDLOperation):
    """One arrival on barrier `index` of block `rank`'s copy of `barriers`."""

    name = "nvptx.mbarrier_arrive_cluster"
    barriers = operand_def(D.TileType)
    index = operand_def(builtin.i32)
    rank = operand_def(builtin.i32)


@irdl_op_definition
class ElectOneOp(IRDLOperation):
    """True in one active lane of each warp, false elsewhere."""

    name = "nvptx.elect_one"
    result = result_def(builtin.i1)


@irdl_op_definition
class NamedBarrierOp(IRDLOperation):
    """Barrier `id` (1–15; 0 is syncthreads') for `threads` threads, whole warps."""

    name = "nvptx.barrier_sync"
    id = prop_def(builtin.IntAttr)
    threads = prop_def(builtin.IntAttr)


@irdl_op_definition
class SetMaxRegistersOp(IRDLOperation):
    """The calling warpgroup's threads now hold at most (`increase` false) or at least
    (`increase` true) `registers` registers each."""

    name = "nvptx.setmaxnreg"
    registers = prop_def(builtin.IntAttr)
    increase = prop_def(builtin.IntAttr)


@irdl_op_definition
class CpAsyncOp(IRDLOperation):
    """One element of `tensor` (4, 8 or 16 bytes) copied into one element of the shared `tile`
    without passing through registers; `coords` are the tile's coordinates, then the tensor's."""

    name = "nvptx.cp_async"
    tile = operand_def(D.TileType)
    tensor = operand_def(D.TensorType)
    coords = var_operand_def(builtin.i32)


@irdl_op_definition
class CpAsyncAtOp(IRDLOperation):
    """CpAsyncOp after layout lowering: element offsets into the tile's memory and the tensor."""

    name = "nvptx.cp_async_at"
    tile = operand_def(D.TileType)
    tensor = operand_def(D.TensorType)
    tile_offset = operand_def(builtin.i32)
    tensor_offset = operand_def(builtin.i32)


@irdl_op_definition
class CpAsyncCommitOp(IRDLOperation):
    """The calling thread's copies issued since its last commit become one group."""

    name = "nvptx.cp_async_commit"


@irdl_op_definition
class CpAsyncWaitOp(IRDLOperation):
    """The calling thread waits until at most `pending` of its committed groups are in flight."""

    name = "nvptx.cp_async_wait"
    pending = prop_def(builtin.IntAttr)


Nvptx = Dialect("nvptx", [MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp, TmaLoadOp, ElectOneOp, NamedBarrierOp,
                          SetMaxRegistersOp, CpAsyncOp, CpAsyncAtOp, CpAsyncCommitOp, CpAsyncWaitOp, ClusterRankOp,
                          ClusterSyncOp, MbarrierArriveClusterOp], [])

BARRIER_OPS = (MbarrierInitOp, MbarrierArriveOp, MbarrierWaitOp, MbarrierArriveClusterOp)


# ---- the stubs kernels call -------------------------------------------------------------------------


def _barriers(b: IntrinsicBuilder, value: Any, index: int) -> Any:
    tile = b.tile(value, index, "shared")
    if tile.type.dtype != u64:
        raise b.error(f"barriers live in a shared tile of u64 (8 bytes each), not {tile.type.dtype}", b.argument(index))
    return tile


def _build_init(b: IntrinsicBuilder, args: list[Any]) -> None:
    bars = _barriers(b, args[0], 0)
    b.emit(MbarrierInitOp.create(operands=[bars.ssa, b.scalar(args[1], index=1), b.scalar(args[2], index=2)]))


def _build_arrive(b: IntrinsicBuilder, args: list[Any]) -> None:
    bars = _barriers(b, args[0], 0)
    b.emit(MbarrierArriveOp.create(operands=[bars.ssa, b.scalar(args[1], index=1)]))


def _build_expect(b: IntrinsicBuilder, args: list[Any]) -> None:
    bars = _barriers(b, args[0], 0)
    b.emit(MbarrierArriveOp.create(operands=[bars.ssa, b.scalar(args[1], index=1), b.scalar(args[2], index=2)]))


def _build_wait(b: IntrinsicBuilder, args: list[Any]) -> None:
    bars = _barriers(b, args[0], 0)
    b.emit(MbarrierWaitOp.create(operands=[bars.ssa, b.scalar(args[1], index=1), b.scalar(args[2], index=2)]))


def _build_tma_load(b: IntrinsicBuilder, args: list[Any]) -> None:
    b.emit(_tma_load_op(b, args))


def _build_tma_multicast(b: IntrinsicBuilder, args: list[Any]) -> None:
    blocks = b.integer(args[5], 5)
    if not 0 < blocks < 1 << 16:
        raise b.error(f"the blocks a box lands in are a 16-bit mask of cluster ranks (bit r: rank r), with at least "
                      f"one bit set; got {blocks}", b.argument(5))
    op = _tma_load_op(b, args)
    op.properties["multicast"] = builtin.IntAttr(blocks)
    b.emit(op)


def _tma_load_op(b: IntrinsicBuilder, args: list[Any]) -> TmaLoadOp:
    tile = b.tile(args[0], 0, "shared")
    tensor = b.tensor(args[1], 1)
    coords = args[2] if isinstance(args[2], tuple) else (args[2],)
    rank = len(tensor.type.shape)
    if len(coords) != rank:
        raise b.error(f"tensor {tensor.name!r} has {rank} dims; give the box's first element as {rank} coordinates",
                      b.argument(2))
    if tile.type.layout.rank != rank:
        raise b.error(f"the destination tile has {tile.type.layout.rank} modes; a box of {tensor.name!r} has {rank}",
                      b.argument(0))
    b.same_elements(tile, tensor)
    if not 1 <= rank <= 5:
        raise b.error(f"bulk copies move boxes of 1 to 5 dims, not {rank}", b.argument(1))
    bars = _barriers(b, args[3], 3)
    return TmaLoadOp.create(operands=[tile.ssa, tensor.ssa, bars.ssa, b.scalar(args[4], index=4),
                                      *(b.scalar(c, index=2) for c in coords)])


def _build_cluster_rank(b: IntrinsicBuilder, args: list[Any]) -> Any:
    from argus.dsl.dtypes import i32

    return b.result(b.emit(ClusterRankOp.create(result_types=[builtin.i32])), i32)


def _build_cluster_sync(b: IntrinsicBuilder, args: list[Any]) -> None:
    b.emit(ClusterSyncOp.create())


def _build_arrive_cluster(b: IntrinsicBuilder, args: list[Any]) -> None:
    bars = _barriers(b, args[0], 0)
    b.emit(MbarrierArriveClusterOp.create(operands=[bars.ssa, b.scalar(args[1], index=1),
                                                    b.scalar(args[2], index=2)]))


def _build_elect(b: IntrinsicBuilder, args: list[Any]) -> Any:
    from argus.dsl.dtypes import boolean

    return b.result(b.emit(ElectOneOp.create(result_types=[builtin.i1])), boolean)


def _build_barrier(b: IntrinsicBuilder, args: list[Any]) -> None:
    ident, threads = b.integer(args[0], 0), b.integer(args[1], 1)
    if not 1 <= ident <= 15:
        raise b.error(f"named barriers are 1 to 15 (0 is syncthreads()'s), not {ident}", b.argument(0))
    if threads < 32 or threads % 32:
        raise b.error(f"a named barrier counts whole warps: a positive multiple of 32 threads, not {threads}",
                      b.argument(1))
    b.emit(NamedBarrierOp.create(properties={"id": builtin.IntAttr(ident), "threads": builtin.IntAttr(threads)}))


def _build_setmaxnreg(b: IntrinsicBuilder, args: list[Any]) -> None:
    registers = b.integer(args[0], 0)
    if not (24 <= registers <= 256 and registers % 8 == 0):
        raise b.error(f"a warpgroup's register count is a multiple of 8 from 24 to 256, not {registers}",
                      b.argument(0))
    if not isinstance(args[1], bool):
        raise b.error("the second argument says whether the count grows: True or False", b.argument(1))
    b.emit(SetMaxRegistersOp.create(properties={"registers": builtin.IntAttr(registers),
                                                "increase": builtin.IntAttr(int(args[1]))}))


def _build_cp_async(b: IntrinsicBuilder, args: list[Any]) -> None:
    tile, tensor, coords = b.element_copy(args)
    if tile.type.dtype.nbytes not in (4, 8, 16):
        raise b.error(f"an asynchronous copy moves one element of 4, 8 or 16 bytes (view the tensor and the tile "
                      f"as u32, u64 or u128), not {tile.type.dtype}", b.argument(0))
    b.emit(CpAsyncOp.create(operands=[tile.ssa, tensor.ssa, *coords]))


def _build_commit(b: IntrinsicBuilder, args: list[Any]) -> None:
    b.emit(CpAsyncCommitOp.create())


def _build_cp_wait(b: IntrinsicBuilder, args: list[Any]) -> None:
    pending = b.integer(args[0], 0)
    if not 0 <= pending <= 7:
        raise b.error(f"a thread waits until 0 to 7 of its groups are in flight, not {pending}", b.argument(0))
    b.emit(CpAsyncWaitOp.create(properties={"pending": builtin.IntAttr(pending)}))


cp_async = Intrinsic(
    "cp_async", "cp_async(tile, tile_coords, tensor, tensor_coords): copy one element of `tensor` (4, 8 or 16 bytes: "
    "view it as u32, u64 or u128) into the shared `tile` without passing through registers. The copy is in flight "
    "until the thread commits it (cp_async_commit) and waits for its group (cp_async_wait); other threads see it "
    "after a barrier that follows the wait.", _build_cp_async, 4)
cp_async_commit = Intrinsic(
    "cp_async_commit", "cp_async_commit(): the calling thread's copies since its last commit form one group.",
    _build_commit, 0)
cp_async_wait = Intrinsic(
    "cp_async_wait", "cp_async_wait(n): wait until at most n of the calling thread's committed groups are still in "
    "flight (their copies have landed).", _build_cp_wait, 1)
setmaxnreg = Intrinsic(
    "setmaxnreg", "setmaxnreg(registers, grow): the calling warpgroup (all its 128 threads) takes (grow=True) or "
    "gives back registers so that each thread holds `registers`; the kernel declares its count at entry with "
    "@kernel(max_registers=N). Used where warpgroups do different work (one moving data, others multiplying).",
    _build_setmaxnreg, 2)
elect_one = Intrinsic(
    "elect_one", "elect_one(): true in one active lane of each warp (the interpreter picks the lowest), false in "
    "the others; the elected lane is not otherwise specified.", _build_elect, 0)
barrier_sync = Intrinsic(
    "barrier_sync", "barrier_sync(id, threads): named barrier `id` (1–15) for `threads` threads (whole warps): "
    "each waits until that many have arrived, and their shared-memory accesses before it are ordered before "
    "those after it.", _build_barrier, 2)
mbarrier_init = Intrinsic(
    "mbarrier_init", "mbarrier_init(barriers, i, count): barrier i of a shared u64 tile expects `count` arrivals "
    "per phase (call it from one thread, then syncthreads()).", _build_init, 3)
mbarrier_arrive = Intrinsic(
    "mbarrier_arrive", "mbarrier_arrive(barriers, i): the calling thread arrives on barrier i.", _build_arrive, 2)
mbarrier_arrive_expect_tx = Intrinsic(
    "mbarrier_arrive_expect_tx", "mbarrier_arrive_expect_tx(barriers, i, nbytes): arrive on barrier i and announce "
    "that `nbytes` will land on it (from bulk copies) before its phase completes.", _build_expect, 3)
mbarrier_wait = Intrinsic(
    "mbarrier_wait", "mbarrier_wait(barriers, i, parity): wait until barrier i's phase of that parity (0 or 1) "
    "has completed.", _build_wait, 3)
tma_load = Intrinsic(
    "tma_load", "tma_load(tile, tensor, coords, barriers, i): copy the box of `tensor` that starts at element "
    "`coords` and has the tile's shape into the shared `tile` (elements outside the tensor read as zero); its bytes "
    "land on barrier i.", _build_tma_load, 5)
tma_load_multicast = Intrinsic(
    "tma_load_multicast", "tma_load_multicast(tile, tensor, coords, barriers, i, blocks): as tma_load, but the box "
    "lands in the same place of the tile of every block of the cluster whose rank's bit is set in the compile-time "
    "mask `blocks`, and each of those blocks counts its bytes on its own barrier i.", _build_tma_multicast, 6)
cluster_rank = Intrinsic(
    "cluster_rank", "cluster_rank(): the rank of the calling thread's block in its cluster (x fastest; 0 in a "
    "kernel without clusters).", _build_cluster_rank, 0)
cluster_sync = Intrinsic(
    "cluster_sync", "cluster_sync(): every thread of every block of the cluster arrives and waits for the others; "
    "their shared-memory accesses before it (to any block of the cluster) are ordered before those after it.",
    _build_cluster_sync, 0)
mbarrier_arrive_cluster = Intrinsic(
    "mbarrier_arrive_cluster", "mbarrier_arrive_cluster(barriers, i, rank): the calling thread arrives on barrier i "
    "of the block of rank `rank` in the cluster (its own block's, when rank is its own).", _build_arrive_cluster, 3)


# ---- warp matrix loads and stores (copy atoms) ---------------------------------------------------


def _matrix_atom(name: str, trans: bool, store: bool) -> CopyAtom:
    """Four 8×8 matrices of 16-bit elements between shared memory and a warp's registers.
    Atom tile element c + 8·r + 64·j is column c of row r of matrix j. In shared memory, lane l
    names row l % 8 of matrix l // 8: eight contiguous elements, 16-byte aligned. In registers,
    lane l holds values 2j and 2j + 1 of matrix j: row l // 4, columns 2·(l % 4) and the next
    (transposed: column l // 4 of rows 2·(l % 4) and the next) — the fragment layout of the
    16×8×16 tensor-core operands."""
    rows = Layout((32, 8), (8, 1))
    fragment = Layout(((4, 8), (2, 4)), ((16, 1), (8, 64)) if trans else ((2, 8), (1, 64)))
    return CopyAtom(name, 16, 32, fragment, rows) if store else CopyAtom(name, 16, 32, rows, fragment)


#: ``copy(rows, regs, LDMATRIX_X4)``: each lane passes its row (8 contiguous 16-bit elements of a
#: shared tile) and receives 8 values, two of each matrix (ldmatrix.sync.aligned.m8n8.x4).
LDMATRIX_X4 = _matrix_atom("ldmatrix_x4", trans=False, store=False)
#: The same, each matrix transposed on the way (ldmatrix … .trans): for operands stored the other way.
LDMATRIX_X4_TRANS = _matrix_atom("ldmatrix_x4_trans", trans=True, store=False)
#: ``copy(regs, rows, STMATRIX_X4)``: the inverse of LDMATRIX_X4 (stmatrix, sm_90 and later).
STMATRIX_X4 = _matrix_atom("stmatrix_x4", trans=False, store=True)
#: The inverse of LDMATRIX_X4_TRANS (stmatrix … .trans, sm_90 and later).
STMATRIX_X4_TRANS = _matrix_atom("stmatrix_x4_trans", trans=True, store=True)


# ---- interpreter semantics ----------------------------------------------------------------------


@dataclass(eq=False)
class _Copy:
    """A copy in flight: its bytes (read from the tensor when it was issued) land in the tile
    when the schedule picks, as an agent with its own clock."""

    tile: I.TileValue
    target: np.ndarray
    """Byte indices in the tile's memory."""
    data: np.ndarray
    """The bytes to land there."""
    source: np.ndarray
    """Byte indices in the tensor of each landing byte (-1: outside the tensor, zero)."""
    tensor: I.TensorValue
    issuer: int
    op: Any = None
    frame: Any = None
    unit: int = -1
    tick: int = 0
    vc: np.ndarray | None = None
    """The clock the copy's writes are ordered after: its issuer's when it issued it."""
    issued_sync: int = 0
    """The sync count of the issuer's warp when it issued the copy: its other lanes' accesses
    since that warp's last sync are not ordered before the landing (the clock covers them)."""
    agent: Any = None
    stream: Any = None
    """The stream of the memory barrier a bulk copy counts on. Landings are stamped with its ticks
    in the order they happen (not issue order), so that a phase covers exactly what landed before
    it completed: the rest of a copy announced short, or a copy issued earlier that lands after
    another completed the phase, is not covered."""

    def released(self, clocks: Any) -> np.ndarray:
        """What the landing publishes: the issuer's clock and the landing's own tick."""
        vc = clocks.widen(self.vc).copy()
        vc[self.unit] = self.tick
        return vc  # type: ignore[no-any-return]

    def land(self, interp: Any, part: slice = slice(None)) -> None:
        """The copy's bytes (or the `part` of them) are written, by the copy's agent."""
        if self.stream is not None:
            self.tick = self.stream.tick()
        target = self.target[part]
        _write_landing(interp, self.op, self.frame, self.tile, target, self.data[part], self.unit, self.tick, self.vc,
                       self.issuer, self.issued_sync, f"the bulk copy issued by thread {self.issuer}",
                       interp.point(self.op))
        interp.landed(self.op, self.frame, self.tile, target, self.tensor, self.source[part], self.issuer)


def _write_landing(interp: Any, op: Any, frame: Any, tile: I.TileValue, target: np.ndarray, data: np.ndarray,
                   unit: int | np.ndarray, tick: int | np.ndarray, vc: np.ndarray, issuer: int | np.ndarray,
                   issued_sync: int | np.ndarray, what: str, site: int, per_thread: bool = False) -> None:
    """Asynchronous copies' bytes land in the tile's memory: the access history checks the
    write of their agent (`what`, in a race's report; ``{thread}`` names the issuer) against
    what the threads did — the issuer's own warp included: its clock at the issue covers
    all its lanes, so `issued_sync` (the warp's sync count then) tells which of the other
    lanes' accesses were not ordered before — then the bytes are stored. `unit`, `tick`,
    `vc`, `issuer` and `issued_sync` are the copy's, or one per byte (`per_thread`: several
    threads' copies, each retired by its own thread's wait); bulk copies and cp.async copies
    land through here alike."""
    memory = tile.memory
    flat = target.reshape(-1)
    try:
        frame.machine.tracker.agent_write(I.history(frame, memory), flat, unit, tick, vc, issuer, what, site,
                                          per_thread=per_thread, issued_sync=issued_sync)
    except I.Race as race:
        raise I.race(interp, op, frame, memory, race) from None
    memory.data[flat] = data.reshape(-1)
    memory.written[flat] = True  # type: ignore[index]


@dataclass
class _Barrier:
    """A memory barrier: the arrivals its current phase still expects, the transaction bytes it
    still expects (announced minus landed; it may go below zero until the announcement comes),
    and the clock the phase's releases built up."""

    name: str
    count: int
    pending: int
    stream: Any
    tx: int = 0
    phase: int = 0
    vc: np.ndarray | None = None
    completed_vc: np.ndarray | None = None
    copies: list[_Copy] = field(default_factory=list)
    """Copies counted on this barrier that have not landed yet."""
    init: tuple[int, int, int, Any] = (-1, 0, -1, None)
    """Who initialized it: the warp, its clock then, the thread and the op. Another warp's use
    must be ordered after that (a syncthreads() between them)."""

    def release(self, clocks: Any, vc: np.ndarray) -> None:
        self.vc = vc if self.vc is None else np.maximum(clocks.widen(self.vc), clocks.widen(vc))

    def settle(self, interp: Any, frame: Any) -> None:
        """The phase completes once every arrival is in and no transaction byte is missing."""
        if self.pending == 0 and self.tx == 0:
            self.completed_vc = self.vc if self.vc is not None else np.zeros(frame.machine.clocks.units, np.int64)
            self.vc = None
            self.pending = self.count
            self.phase += 1


def _state(frame: Any) -> dict[Any, _Barrier]:
    return frame.state.setdefault("nvptx.mbarriers", {})  # type: ignore[no-any-return]


def _barrier_keys(interp: Any, op: Any, frame: Any, mask: np.ndarray,
                  ranks: np.ndarray | None = None) -> list[tuple[int, tuple[int, int]]]:
    """(thread, barrier key) for each active thread: the barrier's memory and element offset
    (in block `ranks[thread]`'s copy, when given, instead of the thread's own block's)."""
    tile = I.value_of(frame, op.barriers)
    index = I.scalars(frame, op.index)[mask].astype(np.int64)
    offsets = I.element_offsets(interp, op, frame, tile, [index], mask)
    if ranks is not None:
        offsets = offsets + _block_shift(tile, frame, np.flatnonzero(mask), ranks) // 8
    return [(int(t), (id(tile.memory), int(o))) for t, o in zip(np.flatnonzero(mask), offsets)]


def _block_shift(tile: Any, frame: Any, threads: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """Bytes from each thread's own block's segment of `tile`'s memory to block `ranks`'s."""
    if tile.segment is None:
        return np.zeros(threads.size, np.int64)
    return (ranks - frame.ranks[threads]) * frame.segment_bytes(tile.memory.data)  # type: ignore[no-any-return]


def _cluster_ranks(interp: Any, op: Any, frame: Any, threads: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """`ranks`, checked to name blocks of the cluster."""
    size = frame.blocks
    bad = (ranks < 0) | (ranks >= size)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise interp.fault("out-of-bounds", f"thread {int(threads[row])} names block rank {int(ranks[row])} of a "
                           f"cluster of {size} block(s)", op, frame, thread=int(threads[row]))
    return ranks


def _find(interp: Any, op: Any, frame: Any, key: tuple[int, int], thread: int) -> _Barrier:
    barrier = _state(frame).get(key)
    if barrier is None:
        raise interp.fault("uninitialized-barrier", f"thread {thread} uses a barrier no thread initialized "
                           "(mbarrier_init) in this block", op, frame, thread=thread)
    warp, clock, initializer, site = barrier.init
    clocks = frame.machine.clocks
    user = thread // clocks.warp_size
    if user != warp and clocks.matrix[user, warp] < clock:
        raise interp.fault("data-race", f"thread {thread} uses the {barrier.name} and thread {initializer} initialized "
                           f"it at {interp.where(site)}, with nothing ordering the two (schedule {interp.schedule}); "
                           "other warps may use a barrier once a syncthreads() follows its mbarrier_init", op, frame,
                           thread=thread, threads=[thread, initializer], earlier=interp.where(site),
                           schedule=str(interp.schedule))
    return barrier


def _init(interp: Any, op: MbarrierInitOp, frame: Any, mask: np.ndarray) -> None:
    counts = I.scalars(frame, op.count)[mask]
    clocks = frame.machine.clocks
    for (thread, key), count in zip(_barrier_keys(interp, op, frame, mask), counts.tolist()):
        if count < 1:
            raise interp.fault("barrier", f"thread {thread} initializes a barrier for {count} arrivals; it needs "
                               "at least one", op, frame, thread=thread)
        name = f"barrier at offset {key[1]}"
        warp = thread // clocks.warp_size
        _state(frame)[key] = _Barrier(name, int(count), int(count), clocks.stream(("mbarrier", key), f"the copies "
                                                                                   f"counted on the {name}"),
                                      init=(warp, int(clocks.matrix[warp, warp]), thread, op))


def _arrive(interp: Any, op: MbarrierArriveOp, frame: Any, mask: np.ndarray) -> None:
    nbytes = I.scalars(frame, op.nbytes[0])[mask].tolist() if op.nbytes else None
    for i, (thread, key) in enumerate(_barrier_keys(interp, op, frame, mask)):
        _arrive_on(interp, op, frame, key, thread, 0 if nbytes is None else int(nbytes[i]))


def _arrive_on(interp: Any, op: Any, frame: Any, key: tuple[int, int], thread: int, nbytes: int) -> None:
    """`thread` arrives on the barrier at `key` (releasing what it did), announcing `nbytes`
    more to land."""
    barrier = _find(interp, op, frame, key, thread)
    if barrier.pending == 0:
        raise interp.fault("barrier", f"thread {thread} arrives on a barrier whose phase already has its "
                           f"{barrier.count} arrival(s)", op, frame, thread=thread)
    clocks = frame.machine.clocks
    barrier.release(clocks, clocks.release(clocks.warp_of(np.array([thread]))))
    barrier.pending -= 1
    barrier.tx += nbytes
    barrier.settle(interp, frame)


class _PhaseWait:
    """`mbarrier_wait(bars, i, parity)`: until the phase of that parity has completed."""

    def _each(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> list[tuple[int, _Barrier, int]]:
        parities = I.scalars(frame, op.parity)[mask].tolist()
        return [(thread, _find(interp, op, frame, key, thread), int(parity) % 2)
                for (thread, key), parity in zip(_barrier_keys(interp, op, frame, mask), parities)]

    def arrive(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
        self._each(interp, op, frame, mask)  # a barrier no one initialized is a fault at once

    def ready(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> np.ndarray:
        out = np.zeros(mask.size, bool)
        for thread, barrier, parity in self._each(interp, op, frame, mask):
            out[thread] = barrier.phase % 2 != parity
        return out

    def leave(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
        """The waiters acquire the phase. Only a wait every lane of a warp met orders the warp's
        lanes among themselves (a wait by one elected lane does not)."""
        clocks = frame.machine.clocks
        w = interp.warp_size
        for thread, barrier, _ in self._each(interp, op, frame, mask):
            if barrier.completed_vc is not None:
                start = thread - thread % w
                clocks.acquire(clocks.warp_of(np.array([thread])), barrier.completed_vc,
                               lanes=bool(mask[start:start + w].all()))

    def waiting_for(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> tuple[str, str, None]:
        thread, barrier, parity = self._each(interp, op, frame, mask)[0]
        done = (f"; {barrier.phase} of its phases completed, the last of parity {1 - parity} (a wait for that one "
                f"passes parity {1 - parity})" if barrier.phase else "")
        return ("deadlock", f"the phase of parity {parity} of the {barrier.name}, which cannot complete: "
                f"{barrier.pending} of {barrier.count} arrival(s) missing, {barrier.tx} transaction byte(s) still "
                f"expected, {len(barrier.copies)} copies in flight{done}", None)


def _multicast_ranks(interp: Any, op: TmaLoadOp, frame: Any) -> list[int] | None:
    """The ranks a multicast copy lands in (None: the issuer's block only)."""
    if op.multicast is None:
        return None
    blocks = op.multicast.data
    ranks = [r for r in range(16) if blocks >> r & 1]
    size = frame.blocks
    if ranks[-1] >= size:
        raise interp.fault("out-of-bounds", f"a multicast copy lands in block rank {ranks[-1]} of a cluster of {size} "
                           "block(s)", op, frame)
    return ranks


def _tma_load(interp: Any, op: TmaLoadOp, frame: Any, mask: np.ndarray) -> None:
    ranks = _multicast_ranks(interp, op, frame)
    if ranks is None:
        _tma_copy(interp, op, frame, mask, None)
        return
    for rank in ranks:  # one landing per block, each counted on that block's barrier
        _tma_copy(interp, op, frame, mask, np.full(mask.size, rank))


def _tma_copy(interp: Any, op: TmaLoadOp, frame: Any, mask: np.ndarray, ranks: np.ndarray | None) -> None:
    """The box each active thread issues goes in flight toward its block's tile (block `ranks`'
    instead, if given), counted on the barrier."""
    tile: I.TileValue = I.value_of(frame, op.tile)
    tensor: I.TensorValue = I.value_of(frame, op.tensor)
    coords = [I.scalars(frame, c)[mask].astype(np.int64) for c in op.coords]
    box = tuple(int(tile.layout[i].size()) for i in range(tile.layout.rank))
    grid = np.meshgrid(*(np.arange(n) for n in box), indexing="ij")
    within = [g.reshape(-1, order="F") for g in grid]  # colexicographic: the tile's element order
    nbytes = tensor.dtype.nbytes
    threads = np.flatnonzero(mask)
    keys = _barrier_keys(interp, op, frame, mask, None if ranks is None else ranks[mask])
    shifts = np.zeros(threads.size, np.int64) if ranks is None else _block_shift(tile, frame, threads, ranks[mask])
    clocks = frame.machine.clocks
    for row, (thread, key) in enumerate(keys):
        barrier = _find(interp, op, frame, key, thread)
        at = [c[row] + w for c, w in zip(coords, within)]
        inside = np.ones(at[0].shape, bool)
        flat = np.zeros(at[0].shape, np.int64)
        for a, extent in zip(at, tensor.array.shape):
            inside &= (a >= 0) & (a < extent)
            flat = flat * extent + np.clip(a, 0, extent - 1)
        source = np.where(inside[:, None], flat[:, None] * nbytes + np.arange(nbytes), -1).reshape(-1)
        data = np.where(source >= 0, tensor.bytes[np.maximum(source, 0)], 0).astype(np.uint8)
        offsets = tile.offsets(np.arange(within[0].size), np.full(within[0].size, thread))
        target = I.byte_indices(offsets, nbytes).reshape(-1) + shifts[row]
        memory = tile.memory
        if target.min() < 0 or target.max() >= memory.data.size:
            raise interp.fault("out-of-bounds", f"the box reaches outside its {memory.data.size}-byte shared tile",
                               op, frame, array=memory.name, thread=thread)
        warp = clocks.warp_of(np.array([thread]))
        tick, vc = clocks.agent_clock(warp, barrier.stream)
        vc[barrier.stream.unit] = clocks.matrix[warp[0], barrier.stream.unit]  # landings on it the issuer saw
        copy = _Copy(tile, target, data, source, tensor, thread, op, frame, barrier.stream.unit, tick, vc,
                     int(clocks.syncs[warp[0]]), stream=barrier.stream)
        barrier.copies.append(copy)
        copy.agent = Agent(f"bulk copy by thread {thread}", functools.partial(_complete, interp, barrier, copy))
        frame.machine.scheduler.start(copy.agent)


def _complete(interp: Any, barrier: _Barrier, copy: _Copy) -> None:
    """A bulk copy lands and counts its bytes on the barrier. If the barrier's phase has every
    arrival and expects fewer bytes than the copy brings, the phase completes part-way: the
    copy's remaining bytes land afterwards, as the hardware's would, into a stage the waiters
    already read."""
    frame = copy.frame
    clocks = frame.machine.clocks
    size = copy.target.size
    if barrier.pending == 0 and 0 < barrier.tx < size:
        first = barrier.tx
        copy.land(interp, slice(0, first))
        barrier.tx = 0
        barrier.release(clocks, copy.released(clocks))
        barrier.settle(interp, frame)
        rest = _Copy(copy.tile, copy.target[first:], copy.data[first:], copy.source[first:], copy.tensor, copy.issuer,
                     copy.op, frame, copy.unit, copy.tick, copy.vc, copy.issued_sync, stream=copy.stream)
        barrier.copies[barrier.copies.index(copy)] = rest
        rest.agent = Agent(f"the rest of the bulk copy by thread {copy.issuer}",
                           functools.partial(_complete, interp, barrier, rest))
        frame.machine.scheduler.start(rest.agent)
        return
    copy.land(interp)
    barrier.copies.remove(copy)
    barrier.tx -= size
    barrier.release(clocks, copy.released(clocks))
    barrier.settle(interp, frame)


@dataclass
class _Groups:
    """One thread's asynchronous copies: those not yet committed, then its committed groups."""

    open: list[_Copy] = field(default_factory=list)
    committed: list[list[_Copy]] = field(default_factory=list)


def _groups(frame: Any, thread: int) -> _Groups:
    return frame.state.setdefault("nvptx.cp_async", {}).setdefault(thread, _Groups())  # type: ignore[no-any-return]


def _cp_async(interp: Any, op: CpAsyncOp, frame: Any, mask: np.ndarray) -> None:
    tile: I.TileValue = I.value_of(frame, op.tile)
    tensor: I.TensorValue = I.value_of(frame, op.tensor)
    rank = tile.layout.rank
    coords = [I.scalars(frame, c)[mask].astype(np.int64) for c in op.coords]
    _start_copies(interp, op, frame, mask, tile, tensor, I.element_offsets(interp, op, frame, tile, coords[:rank], mask),
                  I.element_offsets(interp, op, frame, tensor, coords[rank:], mask))


def _cp_async_at(interp: Any, op: CpAsyncAtOp, frame: Any, mask: np.ndarray) -> None:
    """The same after layout lowering, from element offsets."""
    tile: I.TileValue = I.value_of(frame, op.tile)
    tensor: I.TensorValue = I.value_of(frame, op.tensor)
    offsets = [I.scalars(frame, v)[mask].astype(np.int64) for v in (op.tile_offset, op.tensor_offset)]
    _start_copies(interp, op, frame, mask, tile, tensor, I.checked_offsets(interp, op, frame, tile, offsets[0], mask),
                  I.checked_offsets(interp, op, frame, tensor, offsets[1], mask))


def _start_copies(interp: Any, op: Any, frame: Any, mask: np.ndarray, tile: Any, tensor: Any, tile_offsets: np.ndarray,
                  tensor_offsets: np.ndarray) -> None:
    """Each active thread's copy goes in flight: its bytes are read now and land at a moment the
    schedule picks before the thread's wait, each thread's copies a stream of their own (a
    thread's wait orders its own copies, not its neighbours')."""
    nbytes = tile.dtype.nbytes
    target = I.byte_indices(tile_offsets, nbytes)
    source = I.byte_indices(tensor_offsets, nbytes)
    threads = np.flatnonzero(mask)
    data = tensor.bytes[source]
    clocks = frame.machine.clocks
    streams = [clocks.stream(("cp.async", t), f"the cp.async copy of thread {t}") for t in threads.tolist()]
    syncs = clocks.syncs[clocks.warp_of(threads)]  # before the release
    issued = clocks.release(clocks.warp_of(threads))
    units = np.array([st.unit for st in streams], np.int64)
    ticks = np.array([st.tick() for st in streams], np.int64)
    vcs = np.repeat(clocks.widen(issued)[None], threads.size, axis=0)
    vcs[np.arange(threads.size), units] = ticks
    copies = [_Copy(tile, target[r], data[r], source[r], tensor, int(t), op, frame, int(units[r]), int(ticks[r]),
                    vcs[r], int(syncs[r])) for r, t in enumerate(threads.tolist())]
    site = interp.point(op)
    per = target.shape[1]

    def land() -> None:
        _write_landing(interp, op, frame, tile, target, data, np.repeat(units, per), np.repeat(ticks, per),
                       np.repeat(vcs, per, axis=0), np.repeat(threads, per), np.repeat(syncs, per),
                       "the cp.async copy of thread {thread}", site, per_thread=True)
        for c in copies:
            interp.landed(op, frame, tile, c.target, tensor, c.source, c.issuer)

    agent = Agent(f"cp.async copies of threads {threads[0]}–{threads[-1]}", land)
    frame.machine.scheduler.start(agent)
    for c in copies:
        c.agent = agent
        _groups(frame, c.issuer).open.append(c)


def _cp_commit(interp: Any, op: CpAsyncCommitOp, frame: Any, mask: np.ndarray) -> None:
    for thread in np.flatnonzero(mask).tolist():
        groups = _groups(frame, thread)
        groups.committed.append(groups.open)
        groups.open = []


def _cp_wait(interp: Any, op: CpAsyncWaitOp, frame: Any, mask: np.ndarray) -> None:
    """The thread's oldest groups have landed (at the latest now), ordered before what it does
    next (other threads see them after a barrier that follows)."""
    clocks = frame.machine.clocks
    for thread in np.flatnonzero(mask).tolist():
        groups = _groups(frame, thread)
        while len(groups.committed) > op.pending.data:
            for copy in groups.committed.pop(0):
                copy.agent.finish()
                clocks.acquire(clocks.warp_of(np.array([thread])), copy.vc, lanes=False)
                frame.machine.tracker.retired(I.history(frame, copy.tile.memory), copy.target, copy.unit, copy.tick)


def _arrive_cluster(interp: Any, op: MbarrierArriveClusterOp, frame: Any, mask: np.ndarray) -> None:
    threads = np.flatnonzero(mask)
    ranks = _cluster_ranks(interp, op, frame, threads, I.scalars(frame, op.rank)[mask].astype(np.int64))
    for thread, key in _barrier_keys(interp, op, frame, mask, ranks):
        _arrive_on(interp, op, frame, key, thread, 0)


def _cluster_rank(interp: Any, op: ClusterRankOp, frame: Any, mask: np.ndarray) -> None:
    I.set_value(frame, op, frame.ranks.astype(np.int32))


class _ClusterSync:
    """`cluster_sync()`: every thread of every block of the cluster."""

    def _bar(self, interp: Any, frame: Any) -> Any:
        return rendezvous(interp, frame, "cluster_sync", "cluster_sync()", frame.threads)

    def arrive(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
        threads = np.flatnonzero(mask)
        if self._bar(interp, frame).arrive(frame.machine.clocks, threads, op):
            interp.barrier_passed(op, frame, np.arange(frame.threads))

    def ready(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> np.ndarray:
        out = np.zeros(mask.size, bool)
        threads = np.flatnonzero(mask)
        out[threads] = self._bar(interp, frame).passed(threads)
        return out

    def leave(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
        self._bar(interp, frame).leave(frame.machine.clocks, np.flatnonzero(mask))

    def waiting_for(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> tuple[str, str, np.ndarray]:
        bar = self._bar(interp, frame)
        missing = np.flatnonzero(bar.arrival != bar.generation)
        return ("divergent-barrier", f"the rest of the cluster at cluster_sync(): threads {missing[:8].tolist()} "
                f"({missing.size} of {frame.threads}) never get there", missing)


def register_shortfall(kernel: D.KernelOp, op: SetMaxRegistersOp) -> str:
    """Why this setmaxnreg can never run as written, or "". It needs whole warpgroups (a block of
    a multiple of 128 threads). A warpgroup growing its registers waits until the block's pool
    (its threads × the count at entry) has them free; when even the other warpgroups at the
    least any setmaxnreg of the kernel gives back to cannot free enough, the GPU waits forever."""
    threads = math.prod(kernel.block_dims)
    if threads % 128:
        return (f"setmaxnreg needs whole warpgroups (128 threads each); the block has {threads} threads, not a "
                "multiple of 128")
    if not op.increase.data or kernel.max_registers is None:
        return ""
    entry = kernel.max_registers.data
    groups = threads // 128
    least = min((*_given_back(kernel), entry))
    wanted = op.registers.data
    room = groups * entry - (groups - 1) * least
    if wanted <= room:
        return ""
    return (f"setmaxnreg({wanted}, True) can never get its registers: the block's {groups} warpgroup(s) hold "
            f"{groups} × 128 × {entry} (max_registers) in all, and with the other(s) at the least this kernel gives "
            f"back to ({least}) at most {room} per thread remain for this one; the GPU would wait forever")


@functools.lru_cache(maxsize=64)
def _given_back(kernel: D.KernelOp) -> tuple[int, ...]:
    """The counts the kernel's shrinking setmaxnreg calls go down to (walked once per kernel)."""
    return tuple(o.registers.data for o in kernel.walk() if isinstance(o, SetMaxRegistersOp) and not o.increase.data)


def _setmaxnreg(interp: Any, op: SetMaxRegistersOp, frame: Any, mask: np.ndarray) -> None:
    """Registers are modelled as far as the pool goes: whole warpgroups must call it, and the
    warpgroups of a block must not hold more than the block got at launch once every one that
    has not called setmaxnreg yet gives back all it may (more: the GPU waits forever)."""
    kernel = interp.kernel
    shortfall = register_shortfall(kernel, op)
    if shortfall and math.prod(kernel.block_dims) % 128:
        raise interp.fault("divergent-setmaxnreg", shortfall, op, frame)
    for start in range(0, mask.size, 128):
        group = mask[start:start + 128]
        if group.any() and not group.all():
            raise interp.fault("divergent-setmaxnreg", f"setmaxnreg is called by {int(group.sum())} of the 128 "
                               f"threads of warpgroup {start // 128}; the whole warpgroup must call it", op, frame)
    if shortfall:
        raise interp.fault("deadlock", shortfall, op, frame)
    if kernel.max_registers is None:
        return  # the code generator refuses it; the interpreter has no pool to model
    entry, per_block = kernel.max_registers.data, frame.block_threads // 128
    held = frame.state.setdefault("nvptx.registers", {})  # (block, warpgroup) -> registers per thread
    calling = [start // 128 for start in range(0, mask.size, 128) if mask[start]]
    for g in calling:
        held[g] = op.registers.data
    if not op.increase.data:
        return
    least = min((*_given_back(kernel), entry))
    for block in sorted({g // per_block for g in calling}):
        groups = range(block * per_block, (block + 1) * per_block)
        total = sum(held.get(g, least) for g in groups)
        if total > per_block * entry:
            counts = ", ".join(f"{g % per_block}: {held.get(g, f'≥ {least}')}" for g in groups)
            raise interp.fault("deadlock", f"setmaxnreg({op.registers.data}, True): the block's warpgroups would hold "
                               f"{total} registers per thread in all ({counts}) and it has {per_block} × {entry} "
                               "(max_registers); the GPU would wait forever for them", op, frame)


def _elect(interp: Any, op: ElectOneOp, frame: Any, mask: np.ndarray) -> None:
    I.set_value(frame, op, _elected(mask, interp.warp_size))


def _elected(mask: np.ndarray, warp: int) -> np.ndarray:
    """The lowest active lane of each warp."""
    out = np.zeros(mask.size, bool)
    for start in range(0, mask.size, warp):
        lanes = np.flatnonzero(mask[start:start + warp])
        if lanes.size:
            out[start + lanes[0]] = True
    return out


class _NamedBarrier:
    """`barrier_sync(id, threads)`: named barrier `id` of the thread's block completes when
    `threads` threads (whole warps) have arrived, at any op naming it."""

    def _each(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> list[tuple[Any, np.ndarray]]:
        out = []
        for threads in frame.block_threads_of(np.flatnonzero(mask)):
            rank = int(threads[0]) // frame.block_threads
            bar = rendezvous(interp, frame, ("named", rank, op.id.data), f"named barrier {op.id.data}",
                             op.threads.data)
            if bar.count != op.threads.data:
                raise interp.fault("barrier", f"named barrier {op.id.data} is used for {bar.count} threads elsewhere "
                                   f"and for {op.threads.data} here", op, frame)
            out.append((bar, threads))
        return out

    def arrive(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
        w = interp.warp_size
        partial = [t for t in range(0, mask.size, w) if mask[t:t + w].any() and not mask[t:t + w].all()]
        if partial:
            raise interp.fault("barrier", f"named barrier {op.id.data} counts whole warps; warp {partial[0] // w} "
                               "arrives with only some of its lanes", op, frame)
        for bar, threads in self._each(interp, op, frame, mask):
            fresh = int((bar.arrival[threads] != bar.generation).sum())
            if bar.arrived + fresh > bar.count:
                raise interp.fault("barrier", f"{bar.arrived + fresh} threads meet named barrier {op.id.data} at once "
                                   f"and it counts {bar.count}: which of them it orders depends on the timing "
                                   "(the others wait for a later use)", op, frame)
            if bar.arrive(frame.machine.clocks, threads, op):
                interp.barrier_passed(op, frame, np.flatnonzero(bar.arrival == bar.generation - 1))

    def ready(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> np.ndarray:
        out = np.zeros(mask.size, bool)
        for bar, threads in self._each(interp, op, frame, mask):
            out[threads] = bar.passed(threads)
        return out

    def leave(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
        for bar, threads in self._each(interp, op, frame, mask):
            bar.leave(frame.machine.clocks, threads)

    def waiting_for(self, interp: Any, op: Any, frame: Any, mask: np.ndarray) -> tuple[str, str, None]:
        bar, _ = self._each(interp, op, frame, mask)[0]
        return ("deadlock", f"named barrier {op.id.data}: {bar.arrived} of {bar.count} threads arrived", None)


# ---- the static checker -------------------------------------------------------------------------


def _no_tags(a: Any, op: Any, mask: np.ndarray) -> None:
    """Barriers order memory; they move no data."""


def _recorder(a: Any) -> protocol.Recorder:
    """The walk's record of the kernel's pipeline protocol (`protocol`), made at its first use."""
    found = a.extensions.get(protocol.KEY)
    if found is None:
        found = a.extensions[protocol.KEY] = protocol.Recorder(a)
        a.observers.append(found)
    return found  # type: ignore[no-any-return]


def _uniform(a: Any, op: Any, value: Any, threads: np.ndarray) -> Any:
    """The form `value` (an operand) has at every thread of `threads`, None where they differ."""
    v = a.int_value(value, op)
    forms = {v.row(int(t)) for t in threads}
    return forms.pop() if len(forms) == 1 else None


def _analyze_init(a: Any, op: MbarrierInitOp, mask: np.ndarray) -> None:
    """An initialization moves no data; the protocol's model counts the arrivals it expects."""
    threads = a.thread_of(a.active(mask))
    key, count = handoffs.barrier_key(a, op, op.barriers, op.index), _uniform(a, op, op.count, threads)
    recorder = _recorder(a)
    if key is None or count is None or count[1]:
        recorder.unsupported.append(f"{a.where(op)}: a barrier initialized at an index or for a count not known "
                                    "as one number")
        return
    recorder.note(a, op, "init", threads, barrier=key, count=count[0])


def _analyze_wait(a: Any, op: MbarrierWaitOp, mask: np.ndarray) -> None:
    """A wait moves no data, but the copies another loop landed on the barrier hold, for a
    waiting loop's iteration, what that loop's iteration of the same index wrote (`handoffs`)."""
    threads = a.thread_of(a.active(mask))
    key, parity = handoffs.barrier_key(a, op, op.barriers, op.index), _uniform(a, op, op.parity, threads)
    recorder = _recorder(a)
    record = None
    if key is None:
        recorder.unsupported.append(f"{a.where(op)}: a wait whose barrier is not one element for all its threads")
    elif parity is None:
        recorder.unsupported.append(f"{a.where(op)}: a wait whose parity is not one form of the loop indices for all "
                                    "its threads (a parity carried from one iteration to the next, `phase ^= 1`, is "
                                    "not followed: compute it from the loop's index, `(k0 // STEP) % 2`)")
    else:
        record = recorder.note(a, op, "wait", threads, barrier=key, parity=parity)
    handoffs.rebind(a, op, key, record)


def _analyze_arrive(a: Any, op: Any, mask: np.ndarray) -> None:
    """An arrival moves no data; where it is made tells the hand-offs whose phases a barrier
    counts (`handoffs`), and the protocol's model its phases. One on another block's barrier
    counts on none this block follows."""
    key = handoffs.barrier_key(a, op, op.barriers, op.index)
    handoffs.arrived(a, key, followed=not isinstance(op, MbarrierArriveClusterOp))
    threads = a.thread_of(a.active(mask))
    recorder = _recorder(a)
    nbytes = _uniform(a, op, op.nbytes[0], threads) if getattr(op, "nbytes", None) else (0, ())
    if isinstance(op, MbarrierArriveClusterOp) or key is None or nbytes is None or nbytes[1]:
        recorder.unsupported.append(f"{a.where(op)}: an arrival on another block's barrier, or one whose barrier "
                                    "or bytes are not one number")
        return
    recorder.note(a, op, "arrive", threads, barrier=key, nbytes=nbytes[0])


def _analyze_tma_load(a: Any, op: TmaLoadOp, mask: np.ndarray) -> None:
    """The box's tags are the tensor's tag function at each element's coordinates. A box may
    reach outside the tensor (the copy fills those elements with zeros, as the hardware does:
    how a ragged edge is read, and what a persistent block with no tile left copies), so it
    states no in-bounds fact and is no bounds obligation: the zeros' tags (⊥) pair with
    anything. A multicast box lands in each of its blocks' tiles."""
    ref = a.values[op.tensor]
    tile = a.values[op.tile]
    name = ref.name
    if name in a.written_globals:
        raise a.undecidable(op, f"the kernel copies from tensor {name!r}, which it also writes; the checker takes "
                                "global tensors as read-only or write-only")
    a.read_globals.add(name)
    coords = [a.int_value(c, op) for c in op.coords]
    box = [int(tile.layout[i].size()) for i in range(tile.layout.rank)]
    threads = tuple(a.active(mask).tolist())

    def boxes() -> list[tuple[int, np.ndarray, np.ndarray]]:
        within = [g.reshape(-1, order="F") for g in np.meshgrid(*(np.arange(n) for n in box), indexing="ij")]
        return [_tma_box(a, ref, tile, coords, within, p) for p in threads]

    landing = handoffs.barrier_key(a, op, op.barriers, op.index)
    for p, idx, ids in a.remembered(op, [ref, tile, *coords, *a.tag_function_inputs(name)], boxes, equal=threads):
        for shift in a.block_shifts(op, tile, p, None if op.multicast is None else op.multicast.data):
            at = idx + shift
            if at.min() < 0 or at.max() >= tile.memory.tags.shape[-1]:
                raise a.undecidable(op, "the box reaches outside its shared tile (the interpreter reports where)")
            a.check_in_flight(op, tile.memory, at, np.array([p]))  # a running product may still read it
            tile.memory.write(at, ids, np.array([p]), a.site(op))
            tile.memory.epoch_writer[at] = -1  # the barrier wait orders it for every reader
            record = None
            if op.multicast is not None or landing is None:
                _recorder(a).unsupported.append(f"{a.where(op)}: a bulk copy multicast to a cluster's blocks, or "
                                                "landing on a barrier not known as one")
            else:
                record = _recorder(a).note(a, op, "copy", np.array([p]), part=p, barrier=landing, nbytes=int(at.size),
                                           memory=tile.memory, bytes=frozenset(np.unique(at).tolist()))
            handoffs.record(a, op, landing, tile.memory, at, ids, p, protocol_record=record)


def _tma_box(a: Any, ref: Any, tile: Any, coords: list[Any], within: list[np.ndarray],
             p: int) -> tuple[int, np.ndarray, np.ndarray]:
    """Thread `p`'s box (`within`: each element's offset from the box's corner, per mode): the
    bytes of the tile it fills (a row) and their tags."""
    count = within[0].size
    nbytes = tile.dtype.nbytes
    entry = a.tag_functions.get(ref.name)
    elements = [a.space.constant(0, count) for _ in coords]
    for i, (c, w) in enumerate(zip(coords, within)):
        elements[i].const = c.const[p] + w
        elements[i].terms = {t: np.full(count, v[p], np.int64) for t, v in c.terms.items() if v[p]}
    if entry is None:
        ids = np.zeros((count, nbytes), np.int64)
    else:
        comps = a.evaluate_tag_function(entry[0], elements, np.full(count, p), frozen=entry[1])
        ids = a.intern(comps, nbytes)
        a.table.note_format(ids, ref.dtype.name)
    own = I.byte_indices(tile.offsets(np.arange(count), np.full(count, p)), nbytes).reshape(1, -1)
    return p, own, ids.reshape(1, -1)


def _analyze_cp_async(a: Any, op: CpAsyncOp, mask: np.ndarray) -> None:
    """The element's tags move as a load and a store by the issuing thread would move them
    (whether the thread waits before the data is read is the interpreter's check)."""
    tile = a.values[op.tile]
    rank = tile.layout.rank
    coords = [a.int_value(c, op) for c in op.coords]
    tags = a.global_tags(op, a.values[op.tensor], coords[rank:], mask)
    idx = a.tile_bytes(op, tile, coords[:rank], None, mask)
    active = a.active(mask)
    a.check_overwrite(op, tile.memory, idx, active)  # another thread's read, a running product's
    tile.memory.write(idx, tags if active is a.tid else tags[active], active, a.site(op))


def _lower_cp_async(op: CpAsyncOp, offset_of: Any) -> CpAsyncAtOp:
    rank = op.tile.type.layout.rank  # type: ignore[attr-defined]
    coords = list(op.coords)
    return CpAsyncAtOp.create(operands=[op.tile, op.tensor, offset_of(op.tile, coords[:rank]),
                                        offset_of(op.tensor, coords[rank:])])


def _analyze_elect(a: Any, op: ElectOneOp, mask: np.ndarray) -> None:
    a.values[op.result] = a.space.constant(_elected(mask, a.warp).astype(np.int64), a.n)
    a.tags.pop(op.result, None)


def _analyze_cluster_rank(a: Any, op: ClusterRankOp, mask: np.ndarray) -> None:
    a.values[op.result] = a.space.constant(a.ranks, a.n)
    a.tags.pop(op.result, None)


def _analyze_cluster_sync(a: Any, op: ClusterSyncOp, mask: np.ndarray) -> None:
    for memory in a.memories:
        if not memory.per_thread:
            memory.barrier()


@dataclass
class _NamedUse:
    """How the walk met one named barrier of one block: the count it was first met with and
    where, every thread that meets it anywhere, and the threads that meet it all at once at a
    site (None while none do; `split`: threads met it at a site with fewer than it counts)."""

    count: int
    op: NamedBarrierOp
    met: np.ndarray
    together: np.ndarray | None = None
    split: bool = False


class _NamedBarriers:
    """The static checker's named barriers (`_analyze_named_barrier`), one per analysis."""

    def __init__(self, a: Any) -> None:
        from argus.dsl.check.shared_reads import Orders

        self.orders = Orders(a.threads)
        self.uses: dict[tuple[int, int], _NamedUse] = {}
        a.at_end.append(lambda: self.never_met(a))

    def fault(self, a: Any, op: Any, kind: str, thread: int, why: str) -> None:
        from argus.dsl.check.reports import describer

        if a.checking:
            site = str(a.where(op))
            a.obligations.fault(site, kind, thread, describer(a, op, site, np.arange(a.n)),
                                {"barrier": op.id.data, "why": why})

    def meet(self, a: Any, op: NamedBarrierOp, rank: int, threads: np.ndarray) -> np.ndarray | None:
        """Block `rank`'s `threads` meet the barrier: the mask of the threads it orders for one
        another (None: it orders nothing here)."""
        ident, count = op.id.data, op.threads.data
        local = a.local_ids[threads]
        warps, lanes = np.unique(local // a.warp, return_counts=True)
        if (lanes != a.warp).any():
            self.fault(a, op, "barrier", int(threads[0]), f"named barrier {ident} counts whole warps; warp "
                       f"{int(warps[lanes != a.warp][0])} meets it with only some of its lanes")
            return None
        if threads.size > count:
            self.fault(a, op, "barrier", int(threads[0]), f"{threads.size} threads meet named barrier {ident} at "
                       f"once and it counts {count}: which of them it orders depends on the timing")
            return None
        use = self.uses.get((rank, ident))
        if use is None:
            use = self.uses[(rank, ident)] = _NamedUse(count, op, np.zeros(a.threads, bool))
        if use.count != count:
            self.fault(a, op, "barrier", int(threads[0]), f"named barrier {ident} is used for {use.count} threads at "
                       f"{a.where(use.op)} and for {count} here")
            return None
        use.met[threads] = True
        here = np.zeros(a.threads, bool)
        here[threads] = True
        if threads.size < count:  # the others meet it elsewhere: the interpreter follows that hand-off
            use.split = True
        elif use.together is None:
            use.together = here
        if count > a.warp and use.together is not None and (use.split or not np.array_equal(use.together, here)):
            # (a barrier counting one warp completes for each warp alone, wherever it meets it)
            self.fault(a, op, "barrier", int(threads[0]), f"named barrier {ident} counts {count} threads and "
                       "different threads meet it at different sites, so which threads each use orders depends on "
                       "the timing; the checker orders the accesses of a named barrier that the same threads, as many "
                       "as it counts, meet at once wherever it is used")
            return None
        return here if threads.size == count else None

    def never_met(self, a: Any) -> None:
        """A named barrier that fewer threads than it counts ever meet never completes."""
        for (rank, ident), use in self.uses.items():
            met = int(use.met.sum())
            if met < use.count:
                first = int(np.flatnonzero(use.met)[0])
                self.fault(a, use.op, "deadlock", first, f"named barrier {ident} counts {use.count} threads and only "
                           f"{met} of block {rank}'s threads ever meet it: those wait forever")


def _analyze_named_barrier(a: Any, op: NamedBarrierOp, mask: np.ndarray) -> None:
    """A named barrier orders the shared accesses of the threads that meet it before their
    own later accesses, and nobody else's: a write before it by one of them and a read after
    it by a thread that does not meet it still race. The walk runs the threads of a site
    together, so it orders a site where as many threads as the barrier counts meet it at once
    (the same threads wherever it is used); threads meeting it at several sites (a producer's
    branch and a consumer's) are a hand-off whose timing the interpreter follows, and the walk
    orders nothing there."""
    from argus.dsl.check.shared_reads import SharedMemory

    if a.n != a.threads:
        raise a.undecidable(op, "a named barrier inside copies of a loop run together; the checker follows named "
                                "barriers one iteration at a time")
    named = a.extensions.get("nvptx.named_barriers")
    if named is None:
        named = a.extensions["nvptx.named_barriers"] = _NamedBarriers(a)
    active = np.flatnonzero(mask)
    ranks = active // a.block_threads
    for rank in np.unique(ranks).tolist():
        participants = named.meet(a, op, rank, active[ranks == rank])
        if participants is None:
            continue
        for memory in a.memories:
            if isinstance(memory, SharedMemory) and memory.reads is not None:
                memory.orders = named.orders
                memory.epoch_writer[...] = named.orders.meet(memory.epoch_writer, participants)
                memory.reads.epoch_writer[...] = named.orders.meet(memory.reads.epoch_writer, participants)


#: The NVIDIA intrinsics' dialect and meanings, installed through the backend's spec.
LANGUAGE = Language(Nvptx, (
    Meaning(ElectOneOp, interpret=_elect, analyze=_analyze_elect),
    Meaning(SetMaxRegistersOp, interpret=_setmaxnreg, analyze=_no_tags, collective=128),  # a warpgroup's registers
    Meaning(NamedBarrierOp, wait=_NamedBarrier(), analyze=_analyze_named_barrier),
    Meaning(MbarrierInitOp, interpret=_init, analyze=_analyze_init, sync=True),
    Meaning(MbarrierArriveOp, interpret=_arrive, analyze=_analyze_arrive, sync=True),
    Meaning(MbarrierWaitOp, wait=_PhaseWait(), analyze=_analyze_wait),
    Meaning(TmaLoadOp, interpret=_tma_load, analyze=_analyze_tma_load, sync=True),
    Meaning(MbarrierArriveClusterOp, interpret=_arrive_cluster, analyze=_analyze_arrive, sync=True),
    Meaning(ClusterRankOp, interpret=_cluster_rank, analyze=_analyze_cluster_rank),
    Meaning(ClusterSyncOp, wait=_ClusterSync(), analyze=_analyze_cluster_sync),
    Meaning(CpAsyncOp, interpret=_cp_async, analyze=_analyze_cp_async, lower=_lower_cp_async, sync=True),
    Meaning(CpAsyncAtOp, interpret=_cp_async_at, sync=True),
    Meaning(CpAsyncCommitOp, interpret=_cp_commit, analyze=_no_tags),
    Meaning(CpAsyncWaitOp, interpret=_cp_wait, analyze=_no_tags, sync=True),
))

__all__ = ["LDMATRIX_X4", "LDMATRIX_X4_TRANS", "STMATRIX_X4", "STMATRIX_X4_TRANS", "barrier_sync", "cluster_rank",
           "cluster_sync", "cp_async", "cp_async_commit", "cp_async_wait", "elect_one", "mbarrier_arrive",
           "mbarrier_arrive_cluster", "mbarrier_arrive_expect_tx", "mbarrier_init", "mbarrier_wait", "setmaxnreg",
           "tma_load", "tma_load_multicast"]
