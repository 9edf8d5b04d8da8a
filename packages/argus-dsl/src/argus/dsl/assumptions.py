"""A kernel's assumptions about its launch, checked on the host before a launch.

``assume(K % 64 == 0)`` lets the checker and the compiler rely on the fact; on a GPU a launch
that breaks it is undefined (a pipeline may wait forever for data that never comes). When an
assumption, stated at the top level of the kernel, depends only on the runtime scalars and the
tensors' sizes, it is compiled into a `LaunchCondition`: a few integer operations a runtime
evaluates on the launch's arguments (with the interpreter's 32-bit semantics) before starting
the kernel, so a broken assumption is an error naming the line and the values, not a hang.
"""

from __future__ import annotations

import linecache
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from .ir import dialect as D
from .ops import integers

Step = tuple[str, tuple[int, ...], int, int]
"""(operation, the steps it reads, two integers: a constant's value, an argument's index, a
tensor argument's index and a dim's axis, a comparison's predicate, an integer op's width)."""

_BINARY = {cls: kind.name for cls, kind in integers.INTEGER_OPS.items()}
"""The step of each integer op: its name in `argus.dsl.ops.integers` (the interpreter's table)."""
_BY_NAME = {kind.name: kind for kind in integers.INTEGER_OPS.values()}
_FORMER_NAMES = {"add": "addi", "sub": "subi", "mul": "muli", "floordiv": "floordivsi", "div": "divsi", "rem": "remsi",
                 "and": "andi", "or": "ori", "xor": "xori", "min": "minsi", "max": "maxsi"}
"""Names of steps in conditions written before the table (read back from a cache)."""


@dataclass(frozen=True)
class LaunchCondition:
    """An assumption a launch must satisfy: `steps` compute it, the last step is the condition."""

    where: str
    text: str
    """The assumption as written (its source line)."""
    steps: tuple[Step, ...]

    def holds(self, scalar: Any, dim: Any) -> tuple[bool, list[tuple[int, int, int]]]:
        """Whether it holds when argument i is `scalar(i)` and dim a of tensor argument i is
        `dim(i, a)`; and what it read, as (argument, axis or -1, value)."""
        values: list[int] = []
        seen: list[tuple[int, int, int]] = []
        for kind, reads, number, axis in self.steps:
            args = [values[r] for r in reads]
            if kind == "const":
                value = number
            elif kind == "arg":
                value = int(scalar(number))
                seen.append((number, -1, value))
            elif kind == "dim":
                value = int(dim(number, axis))
                seen.append((number, axis, value))
            elif kind == "cmp":
                value = int(_compare(number, *args))
            elif kind == "select":
                value = args[1] if args[0] else args[2]
            else:
                value = _arith(kind, number or 32, *args)
            values.append(_i32(value))
        return bool(values[-1]), seen


def launch_conditions(kernel: D.KernelOp, locations: dict[Operation, Any]) -> list[LaunchCondition]:
    """The kernel's top-level assumptions that depend on runtime scalars and sizes alone."""
    params = list(kernel.body.block.args)
    out = []
    for op in kernel.body.block.ops:
        if isinstance(op, D.AssumeOp):
            steps: list[Step] = []
            if _compile(op.cond, params, steps, {}) is not None:
                where = locations.get(op)
                text = linecache.getline(where.file, where.line).strip() if where is not None else ""
                out.append(LaunchCondition(str(where or ""), text, tuple(steps)))
    return out


def _compile(value: SSAValue, params: list[SSAValue], steps: list[Step], done: dict[SSAValue, int]) -> int | None:
    """Append the steps computing `value` (once each); its step index, or None when it depends
    on anything but constants, scalar arguments and tensor sizes."""
    if value in done:
        return done[value]
    owner = value.owner
    step: Step | None = None
    if value in params:
        step = ("arg", (), params.index(value), 0)
    elif isinstance(owner, arith.ConstantOp) and hasattr(owner.value, "value"):
        step = ("const", (), int(owner.value.value.data), 0)  # type: ignore[union-attr]
    elif isinstance(owner, D.DimOp) and owner.tensor in params:
        step = ("dim", (), params.index(owner.tensor), owner.index.data)
    elif isinstance(owner, (arith.CmpiOp, arith.SelectOp, *_BINARY)):
        reads = []
        for operand in owner.operands:
            index = _compile(operand, params, steps, done)
            if index is None:
                return None
            reads.append(index)
        if isinstance(owner, arith.CmpiOp):
            step = ("cmp", tuple(reads), owner.predicate.value.data, 0)
        elif isinstance(owner, arith.SelectOp):
            step = ("select", tuple(reads), 0, 0)
        else:  # the op's width in the place of a number
            step = (_BINARY[type(owner)], tuple(reads), owner.results[0].type.width.data, 0)  # type: ignore[attr-defined]
    if step is None:
        return None
    steps.append(step)
    done[value] = len(steps) - 1
    return done[value]


def _i32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def _arith(kind: str, bits: int, a: int, b: int) -> int:
    """A step of integer arithmetic, as the interpreter computes it (a division by zero, which
    the interpreter faults, divides by one here: the table's answer)."""
    op = _BY_NAME[_FORMER_NAMES.get(kind, kind)]
    return int(op(np.int64(a), np.int64(b), bits))


def _compare(predicate: int, a: int, b: int) -> bool:
    signed = {0: a == b, 1: a != b, 2: a < b, 3: a <= b, 4: a > b, 5: a >= b}
    if predicate in signed:
        return signed[predicate]
    ua, ub = a % 2**32, b % 2**32
    return {6: ua < ub, 7: ua <= ub, 8: ua > ub, 9: ua >= ub}[predicate]


def to_json(conditions: tuple[LaunchCondition, ...]) -> list[dict[str, Any]]:
    return [{"where": c.where, "text": c.text, "steps": [list(step[:1]) + [list(step[1]), step[2], step[3]]
                                                         for step in c.steps]} for c in conditions]


def from_json(data: list[dict[str, Any]]) -> tuple[LaunchCondition, ...]:
    return tuple(LaunchCondition(d["where"], d["text"], tuple((k, tuple(r), n, a) for k, r, n, a in d["steps"]))
                 for d in data)
