"""AMD intrinsics of the language: scheduling hints and wave-uniform values.

    from argus.backends.amdgpu import language as amd

    amd.sched_group_barrier(amd.MFMA, 1, 0)    # the scheduler interleaves: one MFMA …
    amd.sched_group_barrier(amd.DS_READ, 2, 0)  # … then two LDS reads, in sync group 0
    amd.setprio(1)                               # this wave's issue priority (0–3)
    amd.waitcnt(0, 0)                            # no memory operation of the wave outstanding
    first = amd.readfirstlane(x)                 # x of the wave's first active lane, in an SGPR

Scheduling hints change where the compiler places instructions, never what the kernel
computes: the interpreter runs them as nothing and the checker moves no tags through them.
`readfirstlane` reads the hardware wave (64 lanes), whatever warp size the kernel declares.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from argus.dsl import interpreter as I
from argus.dsl.dtypes import i32
from argus.dsl.intrinsics import Intrinsic, IntrinsicBuilder, define, register_dialect
from xdsl.dialects import builtin
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, prop_def, result_def

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
class WaitCountOp(IRDLOperation):
    """Wait until at most `vm` vector-memory and `lgkm` LDS/scalar-memory operations of the
    wave are outstanding."""

    name = "amdgpu.waitcnt"
    vm = prop_def(builtin.IntAttr)
    lgkm = prop_def(builtin.IntAttr)


@irdl_op_definition
class ReadFirstLaneOp(IRDLOperation):
    """`value` as the wave's first active lane holds it."""

    name = "amdgpu.readfirstlane"
    value = operand_def(builtin.i32)
    result = result_def(builtin.i32)


Amdgpu = Dialect("amdgpu", [SchedBarrierOp, SchedGroupBarrierOp, SetPrioOp, WaitCountOp, ReadFirstLaneOp], [])
register_dialect(Amdgpu)
HINTS = (SchedBarrierOp, SchedGroupBarrierOp, SetPrioOp, WaitCountOp)
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
waitcnt = Intrinsic(
    "waitcnt", "waitcnt(vm, lgkm): wait until at most vm vector-memory (0–63) and lgkm LDS and scalar-memory (0–15) "
    "operations of the wave are outstanding (s_waitcnt); the compiler inserts the waits correctness needs, so "
    "this only places one earlier.", _build_waitcnt, 2)
readfirstlane = Intrinsic(
    "readfirstlane", "readfirstlane(x): x (an i32) as the first active lane of the thread's hardware wave of 64 "
    "lanes holds it; the same in every lane of the wave.", _build_readfirstlane, 1)


def _first_lanes(mask: np.ndarray) -> np.ndarray:
    """For each thread, the lowest active thread of its 64-lane wave."""
    source = np.arange(mask.size)
    for start in range(0, mask.size, WAVE):
        lanes = np.flatnonzero(mask[start:start + WAVE])
        if lanes.size:
            source[start:start + WAVE] = start + lanes[0]
    return source


def _interpret_hint(interp: Any, op: Any, frame: Any, mask: np.ndarray) -> None:
    """A scheduling hint computes nothing."""


def _interpret_readfirstlane(interp: Any, op: ReadFirstLaneOp, frame: Any, mask: np.ndarray) -> None:
    values = I.scalars(frame, op.value)
    I.set_value(frame, op, values[_first_lanes(mask)])


def _no_tags(a: Any, op: Any, mask: np.ndarray) -> None:
    """Hints move no data."""


def _analyze_readfirstlane(a: Any, op: ReadFirstLaneOp, mask: np.ndarray) -> None:
    source = _first_lanes(mask)
    value = a.values.get(op.value)
    a.values[op.result] = value.take(source) if value is not None and hasattr(value, "take") else None
    a.tags[op.result] = a.tags_of(op.value)[source].copy()


for _hint in HINTS:
    define(_hint, interpret=_interpret_hint, analyze=_no_tags)
define(ReadFirstLaneOp, interpret=_interpret_readfirstlane, analyze=_analyze_readfirstlane)

__all__ = ["ALL_ALU", "ALL_DS", "ALL_VMEM", "DS_READ", "DS_WRITE", "MFMA", "NOTHING", "SALU", "VALU", "VMEM_READ",
           "VMEM_WRITE", "readfirstlane", "sched_barrier", "sched_group_barrier", "setprio", "waitcnt"]
