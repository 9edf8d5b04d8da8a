"""AMD intrinsics of the language: buffer loads and stores, scheduling hints, wave-uniform values.

    from argus.backends.amdgpu import language as amd

    amd.sched_group_barrier(amd.MFMA, 1, 0)    # the scheduler interleaves: one MFMA …
    amd.sched_group_barrier(amd.DS_READ, 2, 0)  # … then two LDS reads, in sync group 0
    amd.setprio(1)                               # this wave's issue priority (0–3)
    amd.waitcnt(0, 0)                            # no memory operation of the wave outstanding
    amd.agprs(64)                                # products accumulate in up to 64 AGPRs
    first = amd.readfirstlane(x)                 # x of the wave's first active lane, in an SGPR
    v = amd.buffer_load(av, (row, col))          # av[row, col], or zero outside the tensor
    amd.buffer_store(cv, (row, col), v)          # dropped outside the tensor
    amd.buffer_load_lds(sa, (i,), av, (row, col))  # av[row, col] (or zero) into sa[i], past the registers
    w = amd.buffer_load_agpr(av, (row, col))     # as buffer_load, the data landing in AGPRs

A buffer access goes through a buffer resource that knows the tensor's size in bytes: the
hardware returns zero for a load, and drops a store, whose byte offset (the coordinates
linearized row-major, as for any access) falls outside it. So, unlike an ordinary access, an
out-of-range one is defined: the interpreter follows the hardware, and the checker adds no
in-bounds fact for it (the zeros it reads pair with anything).

`buffer_load_lds` is such a load whose data goes straight into a shared tile (LDS DMA). The
instruction takes one LDS address per wave and writes lane l's element at that address plus
l elements, so the lanes of each 64-lane hardware wave must write consecutive elements of the
tile, in lane order: the interpreter reports a wave that does not, and the checker refuses it
naming the line. For the language the element is in the tile once the thread has issued the
load (the compiler waits for it before the thread's own LDS accesses and before a barrier).
`buffer_load_agpr` is `buffer_load` with an explicit register class for the data: the
accumulation registers. Its semantics and tag rules are buffer_load's; only the code differs.

Scheduling hints change where the compiler places instructions, never what the kernel
computes: the interpreter runs them as nothing and the checker moves no tags through them.
`readfirstlane` reads the hardware wave (64 lanes), whatever warp size the kernel declares.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from argus.dsl.ir import dialect as D
from argus.dsl.check.tags import stored_rule
from argus.dsl.machine import interpreter as I
from argus.dsl.ops.tags import check_stored
from argus.verify.tags import resize
from argus.dsl.dtypes import i32
from argus.dsl.errors import VerificationError
from argus.dsl.intrinsics import Intrinsic, IntrinsicBuilder, Language, Meaning
from xdsl.dialects import builtin
from xdsl.ir import Dialect
from argus.dsl.ir.types import mlir_type
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def, var_operand_def

#: Instruction classes of `sched_barrier` and `sched_group_barrier` masks (LLVM's encoding).
ALL_ALU, VALU, SALU, MFMA, ALL_VMEM, VMEM_READ, VMEM_WRITE, ALL_DS, DS_READ, DS_WRITE = (
    0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x100, 0x200)
#: The mask of `sched_barrier(NOTHING)`: no instruction may cross it.
NOTHING = 0


@irdl_op_definition
class SchedBarrierOp(IRDLOperation):
    """Only the instruction classes in `mask` may be scheduled across this point."""

    name = "amdgpu.sched_barrier"
    mask = prop_def(builtin.IntAttr)


@irdl_op_definition
class SchedGroupBarrierOp(IRDLOperation):
    """`size` instructions of the classes in `mask` form the next group of sync group `sync`."""

    name = "amdgpu.sched_group_barrier"
    mask = prop_def(builtin.IntAttr)
    size = prop_def(builtin.IntAttr)
    sync = prop_def(builtin.IntAttr)


@irdl_op_definition
class SetPrioOp(IRDLOperation):
    """The wave's instruction issue priority from here on (0 lowest, 3 highest)."""

    name = "amdgpu.setprio"
    priority = prop_def(builtin.IntAttr)


@irdl_op_definition
class BufferLoadOp(IRDLOperation):
    """The element of `tensor` at `coords`, or zero when its bytes fall outside the tensor."""

    name = "amdgpu.buffer_load"
    tensor = operand_def(D.TensorType)
    coords = var_operand_def(builtin.i32)
    result = result_def()


@irdl_op_definition
class BufferStoreOp(IRDLOperation):
    """`value` into the element of `tensor` at `coords`, unless its bytes fall outside."""

    name = "amdgpu.buffer_store"
    value = operand_def()
    tensor = operand_def(D.TensorType)
    coords = var_operand_def(builtin.i32)


@irdl_op_definition
class BufferLoadAtOp(IRDLOperation):
    """BufferLoadOp after layout lowering: at an element offset."""

    name = "amdgpu.buffer_load_at"
    tensor = operand_def(D.TensorType)
    offset = operand_def(builtin.i32)
    result = result_def()


@irdl_op_definition
class BufferStoreAtOp(IRDLOperation):
    """BufferStoreOp after layout lowering: at an element offset."""

    name = "amdgpu.buffer_store_at"
    value = operand_def()
    tensor = operand_def(D.TensorType)
    offset = operand_def(builtin.i32)


@irdl_op_definition
class BufferLoadAgprOp(IRDLOperation):
    """BufferLoadOp whose data the hardware writes into AGPRs."""

    name = "amdgpu.buffer_load_agpr"
    tensor = operand_def(D.TensorType)
    coords = var_operand_def(builtin.i32)
    result = result_def()


@irdl_op_definition
class BufferLoadAgprAtOp(IRDLOperation):
    """BufferLoadAgprOp after layout lowering: at an element offset."""

    name = "amdgpu.buffer_load_agpr_at"
    tensor = operand_def(D.TensorType)
    offset = operand_def(builtin.i32)
    result = result_def()


@irdl_op_definition
class BufferLoadLdsOp(IRDLOperation):
    """The element of `tensor` (zero when its bytes fall outside it) written into the shared
    `tile` without passing through registers; `coords` are the tile's, then the tensor's."""

    name = "amdgpu.buffer_load_lds"
    tile = operand_def(D.TileType)
    tensor = operand_def(D.TensorType)
    coords = var_operand_def(builtin.i32)


@irdl_op_definition
class BufferLoadLdsAtOp(IRDLOperation):
    """BufferLoadLdsOp after layout lowering: element offsets into the tile's memory and the tensor."""

    name = "amdgpu.buffer_load_lds_at"
    tile = operand_def(D.TileType)
    tensor = operand_def(D.TensorType)
    tile_offset = operand_def(builtin.i32)
    tensor_offset = operand_def(builtin.i32)


@irdl_op_definition
class WaitCountOp(IRDLOperation):
    """Wait until at most `vm` vector-memory and `lgkm` LDS/scalar-memory operations of the
    wave are outstanding."""

    name = "amdgpu.waitcnt"
    vm = prop_def(builtin.IntAttr)
    lgkm = prop_def(builtin.IntAttr)


@irdl_op_definition
class AgprBudgetOp(IRDLOperation):
    """The kernel may keep up to `registers` values in accumulation registers (AGPRs)."""

    name = "amdgpu.agprs"
    registers = prop_def(builtin.IntAttr)


@irdl_op_definition
class RowMoveOp(IRDLOperation):
    """`value` from another lane of the same 16-lane row (DPP): shifted right by `amount`
    (lanes with no source keep their own value) or rotated right by `amount`."""

    name = "amdgpu.row_move"
    value = operand_def(builtin.i32)
    kind = prop_def(builtin.StringAttr)
    amount = prop_def(builtin.IntAttr)
    result = result_def(builtin.i32)


@irdl_op_definition
class ReadFirstLaneOp(IRDLOperation):
    """`value` as the wave's first active lane holds it."""

    name = "amdgpu.readfirstlane"
    value = operand_def(builtin.i32)
    result = result_def(builtin.i32)


Amdgpu = Dialect("amdgpu", [SchedBarrierOp, SchedGroupBarrierOp, SetPrioOp, WaitCountOp, AgprBudgetOp, ReadFirstLaneOp,
                            RowMoveOp, BufferLoadOp, BufferStoreOp, BufferLoadAtOp, BufferStoreAtOp, BufferLoadLdsOp,
                            BufferLoadLdsAtOp, BufferLoadAgprOp, BufferLoadAgprAtOp], [])
HINTS = (SchedBarrierOp, SchedGroupBarrierOp, SetPrioOp, WaitCountOp, AgprBudgetOp)
WAVE = 64


def _mask(b: IntrinsicBuilder, value: Any, index: int) -> int:
    mask = b.integer(value, index)
    if not 0 <= mask <= 0x3FF:
        raise b.error(f"a mask is a sum of the classes ALL_ALU … DS_WRITE (0 to 0x3ff), not {mask:#x}", b.argument(index))
    return mask


def _build_sched_barrier(b: IntrinsicBuilder, args: list[Any]) -> None:
    b.emit(SchedBarrierOp.create(properties={"mask": builtin.IntAttr(_mask(b, args[0], 0))}))


def _build_sched_group_barrier(b: IntrinsicBuilder, args: list[Any]) -> None:
    size, sync = b.integer(args[1], 1), b.integer(args[2], 2)
    if size < 1:
        raise b.error(f"a group holds at least one instruction, not {size}", b.argument(1))
    if sync < 0:
        raise b.error(f"sync groups are numbered from 0, not {sync}", b.argument(2))
    b.emit(SchedGroupBarrierOp.create(properties={"mask": builtin.IntAttr(_mask(b, args[0], 0)),
                                                  "size": builtin.IntAttr(size), "sync": builtin.IntAttr(sync)}))


def _build_setprio(b: IntrinsicBuilder, args: list[Any]) -> None:
    priority = b.integer(args[0], 0)
    if not 0 <= priority <= 3:
        raise b.error(f"a wave's priority is 0 to 3, not {priority}", b.argument(0))
    b.emit(SetPrioOp.create(properties={"priority": builtin.IntAttr(priority)}))


def _build_waitcnt(b: IntrinsicBuilder, args: list[Any]) -> None:
    vm, lgkm = b.integer(args[0], 0), b.integer(args[1], 1)
    if not 0 <= vm <= 63:
        raise b.error(f"the vector-memory count is 0 to 63, not {vm}", b.argument(0))
    if not 0 <= lgkm <= 15:
        raise b.error(f"the LDS/scalar-memory count is 0 to 15, not {lgkm}", b.argument(1))
    b.emit(WaitCountOp.create(properties={"vm": builtin.IntAttr(vm), "lgkm": builtin.IntAttr(lgkm)}))


def _buffer_coords(b: IntrinsicBuilder, tensor: Any, value: Any, index: int) -> list[Any]:
    coords = list(value) if isinstance(value, tuple) else [value]
    if len(coords) != len(tensor.type.shape):
        raise b.error(f"tensor {tensor.name!r} has {len(tensor.type.shape)} dims; give as many coordinates",
                      b.argument(index))
    if tensor.type.dtype.nbytes not in (2, 4, 8, 16):
        raise b.error(f"a buffer access moves 2, 4, 8 or 16 bytes (view the tensor as such), not "
                      f"{tensor.type.dtype}", b.argument(0))
    return [b.scalar(c, index=index) for c in coords]


def _build_buffer_load(b: IntrinsicBuilder, args: list[Any]) -> Any:
    tensor = b.tensor(args[0], 0)
    coords = _buffer_coords(b, tensor, args[1], 1)
    dtype = tensor.type.dtype
    op = b.emit(BufferLoadOp.create(operands=[tensor.ssa, *coords], result_types=[mlir_type(dtype)]))
    return b.result(op, dtype)


def _build_buffer_load_agpr(b: IntrinsicBuilder, args: list[Any]) -> Any:
    tensor = b.tensor(args[0], 0)
    coords = _buffer_coords(b, tensor, args[1], 1)
    dtype = tensor.type.dtype
    if dtype.nbytes not in AGPR_LOAD_BYTES:
        raise b.error(f"a buffer load into AGPRs moves 4, 8 or 16 bytes (whole registers), not {dtype}", b.argument(0))
    op = b.emit(BufferLoadAgprOp.create(operands=[tensor.ssa, *coords], result_types=[mlir_type(dtype)]))
    return b.result(op, dtype)


def _build_buffer_store(b: IntrinsicBuilder, args: list[Any]) -> None:
    tensor = b.tensor(args[0], 0)
    coords = _buffer_coords(b, tensor, args[1], 1)
    b.emit(BufferStoreOp.create(operands=[b.scalar(args[2], tensor.type.dtype, index=2), tensor.ssa, *coords]))


#: The bytes per lane a buffer load into LDS moves (16 on CDNA4 only: the code generator checks).
LDS_LOAD_BYTES = (4, 16)
#: The bytes a buffer load into AGPRs moves: one, two or four whole registers.
AGPR_LOAD_BYTES = (4, 8, 16)


def _build_buffer_load_lds(b: IntrinsicBuilder, args: list[Any]) -> None:
    tile, tensor, coords = b.element_copy(args)
    if tile.type.dtype.nbytes not in LDS_LOAD_BYTES:
        raise b.error(f"a buffer load into LDS moves 4 bytes per lane, or 16 on gfx950 (view the tensor and the tile "
                      f"as u32, i32 or f32, or u128), not {tile.type.dtype}", b.argument(0))
    b.emit(BufferLoadLdsOp.create(operands=[tile.ssa, tensor.ssa, *coords]))


def _build_agprs(b: IntrinsicBuilder, args: list[Any]) -> None:
    registers = b.integer(args[0], 0)
    if not 0 <= registers <= 256:
        raise b.error(f"a wave has 0 to 256 AGPRs, not {registers}", b.argument(0))
    b.emit(AgprBudgetOp.create(properties={"registers": builtin.IntAttr(registers)}))


def _row_move(kind: str) -> Any:
    def build(b: IntrinsicBuilder, args: list[Any]) -> Any:
        amount = b.integer(args[1], 1)
        if not 1 <= amount <= 15:
            raise b.error(f"a row of 16 lanes moves by 1 to 15, not {amount}", b.argument(1))
        op = b.emit(RowMoveOp.create(operands=[b.scalar(args[0], i32, index=0)], result_types=[builtin.i32],
                                     properties={"kind": builtin.StringAttr(kind), "amount": builtin.IntAttr(amount)}))
        return b.result(op, i32)

    return build


def _build_readfirstlane(b: IntrinsicBuilder, args: list[Any]) -> Any:
    op = b.emit(ReadFirstLaneOp.create(operands=[b.scalar(args[0], i32, index=0)], result_types=[builtin.i32]))
    return b.result(op, i32)


sched_barrier = Intrinsic(
    "sched_barrier", "sched_barrier(mask): only instructions of the classes in mask (ALL_ALU, VALU, SALU, MFMA, "
    "ALL_VMEM, VMEM_READ, VMEM_WRITE, ALL_DS, DS_READ, DS_WRITE, summed; NOTHING for none) may be scheduled across "
    "this point.", _build_sched_barrier, 1)
sched_group_barrier = Intrinsic(
    "sched_group_barrier", "sched_group_barrier(mask, size, sync): the next `size` instructions of the classes in "
    "mask form a group of sync group `sync`; the groups of one sync group are scheduled in the order written.",
    _build_sched_group_barrier, 3)
setprio = Intrinsic("setprio", "setprio(p): this wave's issue priority from here on, 0 (lowest) to 3.",
                    _build_setprio, 1)
buffer_load = Intrinsic(
    "buffer_load", "buffer_load(tensor, coords): the element of `tensor` at `coords` (2, 4, 8 or 16 bytes) through "
    "a buffer resource: zero when its bytes fall outside the tensor.", _build_buffer_load, 2)
buffer_load_agpr = Intrinsic(
    "buffer_load_agpr", "buffer_load_agpr(tensor, coords): buffer_load(tensor, coords) (4, 8 or 16 bytes) with the "
    "data loaded into accumulation registers (AGPRs), leaving the VGPRs free; the load completes before the next "
    "instruction.", _build_buffer_load_agpr, 2)
buffer_store = Intrinsic(
    "buffer_store", "buffer_store(tensor, coords, value): `value` into the element at `coords` through a buffer "
    "resource; dropped when its bytes fall outside the tensor.", _build_buffer_store, 3)
buffer_load_lds = Intrinsic(
    "buffer_load_lds", "buffer_load_lds(tile, tile_coords, tensor, tensor_coords): the element of `tensor` at "
    "tensor_coords (4 bytes, or 16 on gfx950; zero when its bytes fall outside the tensor) written into the shared "
    "`tile` at tile_coords without passing through registers. The lanes of each 64-lane wave write consecutive "
    "elements of the tile, in lane order.", _build_buffer_load_lds, 4)
waitcnt = Intrinsic(
    "waitcnt", "waitcnt(vm, lgkm): wait until at most vm vector-memory (0–63) and lgkm LDS and scalar-memory (0–15) "
    "operations of the wave are outstanding (s_waitcnt); the compiler inserts the waits correctness needs, so "
    "this only places one earlier.", _build_waitcnt, 2)
agprs = Intrinsic(
    "agprs", "agprs(n): the kernel keeps up to n values (per lane) in the accumulation registers; with n > 0 the "
    "matrix products accumulate there (AGPRs), leaving the VGPRs to the rest. Call it once, at the kernel's top "
    "level: it is a property of the whole kernel.", _build_agprs, 1)
row_shift = Intrinsic(
    "row_shift", "row_shift(x, n): x (an i32) of the lane n to the left in the same 16-lane row of the hardware "
    "wave; the first n lanes of each row keep their own (DPP row_shr).", _row_move("shift"), 2)
row_rotate = Intrinsic(
    "row_rotate", "row_rotate(x, n): x (an i32) of the lane n to the left in the same 16-lane row, wrapping around "
    "the row (DPP row_ror).", _row_move("rotate"), 2)
readfirstlane = Intrinsic(
    "readfirstlane", "readfirstlane(x): x (an i32) as the first active lane of the thread's hardware wave of 64 "
    "lanes holds it; the same in every lane of the wave.", _build_readfirstlane, 1)


def _first_lanes(op: Any, mask: np.ndarray) -> np.ndarray:
    """For each thread, the lowest active thread of its 64-lane wave."""
    source = np.arange(mask.size)
    for start in range(0, mask.size, WAVE):
        lanes = np.flatnonzero(mask[start:start + WAVE])
        if lanes.size:
            source[start:start + WAVE] = start + lanes[0]
    return source


def _row_sources(op: RowMoveOp, mask: np.ndarray) -> np.ndarray:
    """The lane each thread reads: n to the left within its row of 16 (wrapping for a rotation;
    a shift without a source, or an inactive source, reads the thread's own value)."""
    threads = mask.size
    t = np.arange(threads)
    row, within = t - t % 16, t % 16
    n = op.amount.data
    if op.kind.data == "rotate":
        source = row + (within - n) % 16
    else:
        source = np.where(within >= n, t - n, t)
    return np.where(mask[np.minimum(source, threads - 1)], source, t)


def _lane_move(op_type: type, sources: Any, lockstep: int = 0) -> Meaning:
    """The meaning of an op giving each thread `value` as another lane holds it: `sources(op,
    mask)` is the lane each thread reads. Values, static tags and shadow tags all move so."""

    def interpret(interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
        I.set_value(frame, op, I.scalars(frame, op.value)[sources(op, mask)])

    def analyze(a: Any, op: Any, mask: np.ndarray) -> None:
        source = sources(op, mask)
        value = a.values.get(op.value)
        a.values[op.result] = value.take(source) if value is not None and hasattr(value, "take") else None
        a.tags[op.result] = a.tags_of(op.value)[source].copy()

    def shadow(s: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
        s.tags[op.result] = s.value_tags(frame, op.value)[sources(op, mask)].copy()

    return Meaning(op_type, interpret=interpret, analyze=analyze, shadow=shadow, lockstep=lockstep)


def _interpret_hint(interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
    """A scheduling hint computes nothing."""


def _no_tags(a: Any, op: Any, mask: np.ndarray) -> None:
    """Hints move no data."""


def _linear(frame: Any, tensor: Any, coords: Any, mask: np.ndarray) -> np.ndarray:
    """Row-major element offsets of the active threads' coordinates, unchecked."""
    offset = np.zeros(int(mask.sum()), np.int64)
    for c, n in zip(coords, tensor.array.shape):
        offset = offset * n + I.scalars(frame, c)[mask].astype(np.int64)
    return offset


def _inside(tensor: Any, offsets: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The threads of `mask` whose element lies inside the tensor, and their offsets."""
    ok = (offsets >= 0) & (offsets < tensor.array.size)
    inside = mask.copy()
    inside[np.flatnonzero(mask)[~ok]] = False
    return inside, offsets[ok]


def _interpret_buffer_load(interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
    tensor = I.value_of(frame, op.tensor)
    inside, offsets = _inside(tensor, _offsets(op, frame, tensor, mask), mask)
    I.read(interp, op, frame, inside, tensor, offsets, lambda row: (int(offsets[row]),))  # zero elsewhere


def _interpret_buffer_store(interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
    tensor = I.value_of(frame, op.tensor)
    inside, offsets = _inside(tensor, _offsets(op, frame, tensor, mask), mask)
    I.write(interp, op, frame, inside, tensor, offsets, I.scalars(frame, op.value))


def _shadow_buffer_load(s: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
    """Shadow tags: the tensor's where the element is inside it; outside (zero data), those its
    tag function gives there, as the static checker takes them."""
    tensor = I.value_of(frame, op.tensor)
    every = _offsets(op, frame, tensor, mask)
    inside, offsets = _inside(tensor, every, mask)
    threads = np.flatnonzero(inside)
    nbytes = tensor.dtype.nbytes
    tags = np.zeros((frame.threads, nbytes), np.int64)
    if threads.size:
        tags[threads] = s.memory_tags(tensor, frame).read(I.byte_indices(offsets, nbytes), threads)
    outside = np.flatnonzero(mask & ~inside)
    if outside.size:
        beyond = every[~inside[np.flatnonzero(mask)]]
        tags[outside] = s.tags_past_the_end(tensor, I.byte_indices(beyond, nbytes), outside, frame)
    s.tags[op.result] = tags


def _offsets(op: Any, frame: Any, tensor: Any, mask: np.ndarray) -> np.ndarray:
    """The active threads' element offsets, from coordinates or (lowered) given."""
    if isinstance(op, (BufferLoadOp, BufferStoreOp, BufferLoadAgprOp)):
        return _linear(frame, tensor, op.coords, mask)
    return I.scalars(frame, op.offset)[mask].astype(np.int64)  # type: ignore[no-any-return]


def _analyze_buffer_load(a: Any, op: BufferLoadOp, mask: np.ndarray) -> None:
    integer = isinstance(op.result.type, builtin.IntegerType)
    a.values[op.result] = a.space.opaque(f"load at {a.where(op)}", a.n) if integer else None
    a.tags[op.result] = a.global_tags(op, a.values[op.tensor], [a.int_value(c, op) for c in op.coords], mask,
                                      bounded=False)


def _analyze_buffer_store(a: Any, op: BufferStoreOp, mask: np.ndarray) -> None:
    target = a.values[op.tensor]
    name = (target.root or target).name
    if name in a.read_globals:
        raise a.undecidable(op, f"the kernel writes tensor {name!r}, which it also reads; the checker takes global "
                                "tensors as read-only or write-only")
    a.written_globals.add(name)
    if name in a.store_functions:  # (held to the tensor's asserted tags as any store is)
        stored_rule(a, op, target, [a.int_value(c, op) for c in op.coords], a.tags_of(op.value), mask)


def _shadow_buffer_store(s: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
    """Shadow tags: a buffer store writes its value's tags where the element is inside the
    tensor (outside, the hardware drops the store), held to the tensor's asserted tags as any
    store is, and recorded as written (``assert_written``)."""
    tensor = I.value_of(frame, op.tensor)
    inside, offsets = _inside(tensor, _offsets(op, frame, tensor, mask), mask)
    threads = np.flatnonzero(inside)
    if threads.size == 0:
        return
    idx = I.byte_indices(offsets, tensor.dtype.nbytes)
    tags = resize(s.value_tags(frame, op.value)[threads], tensor.dtype.nbytes, s.table)
    if s.store_functions:
        check_stored(s, op, frame, tensor, idx, tags, threads)
    s.memory_tags(tensor, frame).write(idx, tags, threads, s.site(op))


def _lds_offsets(interp: Any, op: Any, frame: Any, tile: Any, tensor: Any, mask: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The active threads' element offsets into the tile's memory (checked) and into the
    tensor (not: outside it the load reads zero), from coordinates or (lowered) given."""
    if isinstance(op, BufferLoadLdsOp):
        rank = tile.layout.rank
        coords = [I.scalars(frame, c)[mask].astype(np.int64) for c in op.coords[:rank]]
        return (I.element_offsets(interp, op, frame, tile, coords, mask),
                _linear(frame, tensor, op.coords[rank:], mask))
    within = I.scalars(frame, op.tile_offset)[mask].astype(np.int64)
    return (I.checked_offsets(interp, op, frame, tile, within, mask),
            I.scalars(frame, op.tensor_offset)[mask].astype(np.int64))


def _wave_order_breach(offsets: np.ndarray, threads: np.ndarray) -> str | None:
    """Why the active `threads` (with their tile element `offsets`) break the rule of a load
    into LDS — lane l of a 64-lane wave writes the element l after lane 0's — or None."""
    start = offsets - threads % WAVE  # where each thread's wave would start
    for wave in np.unique(threads // WAVE):
        rows = np.flatnonzero(threads // WAVE == wave)
        wrong = rows[start[rows] != start[rows[0]]]
        if wrong.size:
            row, first = int(wrong[0]), int(rows[0])
            thread, lane, lead = int(threads[row]), int(threads[row]) % WAVE, int(threads[first]) % WAVE
            return (f"thread {thread} writes element {int(offsets[row])} of the tile, but the lanes of a 64-lane wave "
                    f"write consecutive elements in lane order: after lane {lead}'s element {int(offsets[first])}, "
                    f"lane {lane} writes element {int(start[first]) + lane}")
    return None


def _interpret_lds_load(interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
    tile: I.TileValue = I.value_of(frame, op.tile)
    tensor: I.TensorValue = I.value_of(frame, op.tensor)
    targets, sources = _lds_offsets(interp, op, frame, tile, tensor, mask)
    threads = np.flatnonzero(mask)
    breach = _wave_order_breach(targets, threads)
    if breach is not None:
        raise interp.fault("lds-load-order", f"buffer_load_lds into {tile.memory.name}: {breach}", op, frame,
                           array=tile.memory.name)
    nbytes = tile.dtype.nbytes
    inside = (sources >= 0) & (sources < tensor.array.size)
    data = np.zeros((threads.size, nbytes), np.uint8)
    data[inside] = tensor.bytes[I.byte_indices(sources[inside], nbytes)]
    target = I.byte_indices(targets, nbytes)
    memory = tile.memory
    I.check_write_race(interp, op, frame, memory, target, threads)
    memory.data[target] = data
    memory.written[target] = True  # type: ignore[index]


def _shadow_lds_load(s: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
    """Shadow tags: the tensor's where the element is inside it, none (⊥: zeros) outside."""
    tile = I.value_of(frame, op.tile)
    tensor = I.value_of(frame, op.tensor)
    targets, sources = _lds_offsets(s, op, frame, tile, tensor, mask)
    threads = np.flatnonzero(mask)
    nbytes = tile.dtype.nbytes
    inside = (sources >= 0) & (sources < tensor.array.size)
    tags = np.zeros((threads.size, nbytes), np.int64)
    if inside.any():
        tags[inside] = s.memory_tags(tensor, frame).read(I.byte_indices(sources[inside], nbytes), threads[inside])
    s.memory_tags(tile, frame).write(I.byte_indices(targets, nbytes), tags, threads, s.site(op))


def _analyze_lds_load(a: Any, op: BufferLoadLdsOp, mask: np.ndarray) -> None:
    """The element's tags move as a buffer load and a store by the thread would move them (no
    in-bounds fact: outside the tensor the zeros pair with anything); the tile's addresses are
    known for every launch, so the lanes' order is checked here for all of them."""
    tile = a.values[op.tile]
    rank = tile.layout.rank
    coords = [a.int_value(c, op) for c in op.coords]
    tags = a.global_tags(op, a.values[op.tensor], coords[rank:], mask, bounded=False)
    idx = a.tile_bytes(op, tile, coords[:rank], None, mask)
    active = a.active(mask)
    breach = _wave_order_breach(idx[:, 0] // tile.dtype.nbytes, active)
    if breach is not None:
        raise VerificationError(f"buffer_load_lds: {breach}", a.where(op))
    a.check_overwrite(op, tile.memory, idx, active)  # another thread's read since the last barrier
    tile.memory.write(idx, tags if active is a.tid else tags[active], active, a.site(op))


def _lower_lds_load(op: BufferLoadLdsOp, offset_of: Any) -> BufferLoadLdsAtOp:
    rank = op.tile.type.layout.rank  # type: ignore[attr-defined]
    coords = list(op.coords)
    return BufferLoadLdsAtOp.create(operands=[op.tile, op.tensor, offset_of(op.tile, coords[:rank]),
                                              offset_of(op.tensor, coords[rank:])])


def _lower_buffer_load(op: BufferLoadOp, offset_of: Any) -> BufferLoadAtOp:
    return BufferLoadAtOp.create(operands=[op.tensor, offset_of(op.tensor, list(op.coords))],
                                 result_types=[op.result.type])


def _lower_buffer_load_agpr(op: BufferLoadAgprOp, offset_of: Any) -> BufferLoadAgprAtOp:
    return BufferLoadAgprAtOp.create(operands=[op.tensor, offset_of(op.tensor, list(op.coords))],
                                     result_types=[op.result.type])


def _lower_buffer_store(op: BufferStoreOp, offset_of: Any) -> BufferStoreAtOp:
    return BufferStoreAtOp.create(operands=[op.value, op.tensor, offset_of(op.tensor, list(op.coords))])


#: The AMD intrinsics' dialect and meanings, installed through the backend's spec.
LANGUAGE = Language(Amdgpu, (
    Meaning(BufferLoadOp, interpret=_interpret_buffer_load, analyze=_analyze_buffer_load, lower=_lower_buffer_load,
            shadow=_shadow_buffer_load),
    Meaning(BufferStoreOp, interpret=_interpret_buffer_store, analyze=_analyze_buffer_store,
            lower=_lower_buffer_store, shadow=_shadow_buffer_store),
    Meaning(BufferLoadAtOp, interpret=_interpret_buffer_load),
    Meaning(BufferStoreAtOp, interpret=_interpret_buffer_store, shadow=_shadow_buffer_store),
    Meaning(BufferLoadAgprOp, interpret=_interpret_buffer_load, analyze=_analyze_buffer_load,
            lower=_lower_buffer_load_agpr, shadow=_shadow_buffer_load),
    Meaning(BufferLoadAgprAtOp, interpret=_interpret_buffer_load, shadow=_shadow_buffer_load),
    Meaning(BufferLoadLdsOp, interpret=_interpret_lds_load, analyze=_analyze_lds_load, lower=_lower_lds_load,
            shadow=_shadow_lds_load),
    Meaning(BufferLoadLdsAtOp, interpret=_interpret_lds_load, shadow=_shadow_lds_load),
    *(Meaning(hint, interpret=_interpret_hint, analyze=_no_tags) for hint in HINTS),
    _lane_move(ReadFirstLaneOp, _first_lanes, lockstep=64),  # it reads across the hardware wave of 64
    _lane_move(RowMoveOp, _row_sources),
))

__all__ = ["ALL_ALU", "ALL_DS", "ALL_VMEM", "DS_READ", "DS_WRITE", "MFMA", "NOTHING", "SALU", "VALU", "VMEM_READ",
           "VMEM_WRITE", "agprs", "buffer_load", "buffer_load_agpr", "buffer_load_lds", "buffer_store", "readfirstlane", "row_rotate", "row_shift", "sched_barrier", "sched_group_barrier", "setprio", "waitcnt"]
