"""Warp collectives: ``shfl_xor``, ``shfl_idx``, ``shfl_down``, ``shfl_up`` (`D.ShuffleOp`) and
the reductions built from them, ``warp_sum``, ``warp_max`` and ``warp_min``.

A shuffle gives each thread a value of another lane of its warp: lane ^ mask, the given lane,
lane + delta or lane - delta; a lane outside the warp reads its own value (and a lane past the
block's last thread reads the last thread's). Every lane a shuffle reads must take part in it:
the interpreter faults otherwise, as the hardware's result would be undefined. Tags move with the
values (the shadow interpreter reads the source lane's tags; the checker's `shuffle_rule` in
`argus.dsl.check.access`). The LLVM rule moves the value as one 32-bit word through the target's
`Translator.shuffle_word`. A reduction is a butterfly of ``shfl_xor`` in the IR: log2(warp)
steps, each combining a lane with its partner, so it has no op of its own.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects.builtin import StringAttr

from ..check.access import shuffle_rule
from ..dtypes import i32
from ..frontend.values import Value
from ..ir import dialect as D
from ..ir.registry import builtin, define
from ..ir.types import mlir_type
from ..llvm.translate import bit_width, llvm_type
from ..machine.interpreter import Frame, Interpreter, scalars, set_value
from ..machine.shadow import ShadowInterpreter

if TYPE_CHECKING:
    from ..llvm import Translator

MODES = ("xor", "idx", "down", "up")
"""The shuffles, each a builtin ``shfl_<mode>``."""


# ---- the front end ------------------------------------------------------------------------

def shuffle(fe: Any, node: ast.AST, value: Value, lane: Any, mode: str) -> Value:
    """Emit a shuffle of `value` (`lane`: the mask, lane or distance `mode` takes)."""
    if value.dtype.kind in ("bits", "bool"):
        raise fe.type_error(node, f"shuffles move numbers, not {value.dtype}")
    lane_value = fe.materialize(fe.convert(lane, i32, node), node)
    op = D.ShuffleOp.create(operands=[value.ssa, lane_value.ssa], properties={"mode": StringAttr(mode)},
                            result_types=[mlir_type(value.dtype)])
    return Value(fe.emit(op).results[0], value.dtype)


def _build_shuffle(mode: str) -> Any:
    def build(fe: Any, node: ast.Call, args: list[Any]) -> Value:
        if len(args) != 2 or not isinstance(args[0], Value):
            raise fe.type_error(node, f"shfl_{mode}(value, lane_or_offset) with a runtime value")
        return shuffle(fe, node, args[0], args[1], mode)

    return build


def _build_reduction(name: str) -> Any:
    def build(fe: Any, node: ast.Call, args: list[Any]) -> Value:
        if len(args) != 1 or not isinstance(args[0], Value):
            raise fe.type_error(node, f"{name}(value) with a runtime value")
        result = args[0]
        step = fe.warp_size // 2
        while step:
            other = shuffle(fe, node, result, step, "xor")
            if name == "warp_sum":
                result = fe.arith(node, ast.Add(), result, other)
            else:
                result = fe.minmax_values(node, result, other, name == "warp_min")
            step //= 2
        return result

    return build


for _mode in MODES:
    builtin(f"shfl_{_mode}")(_build_shuffle(_mode))
for _name in ("warp_sum", "warp_max", "warp_min"):
    builtin(_name)(_build_reduction(_name))


# ---- the interpreter and shadow tags ------------------------------------------------------

def shuffle_sources(interp: Interpreter, op: D.ShuffleOp, frame: Frame) -> np.ndarray:
    """The thread each thread reads in a shuffle (itself when the lane is outside the warp)."""
    w = interp.warp_size
    t = frame.thread_ids
    lane = frame.local_ids % w
    base = t - lane
    last = t - frame.local_ids + frame.block_threads - 1  # the block's last thread
    arg = scalars(frame, op.lane).astype(np.int64)
    src = {"xor": lane ^ arg, "idx": arg, "down": lane + arg, "up": lane - arg}[op.mode.data]
    outside = (src < 0) | (src >= w)
    return np.minimum(np.where(outside, t, base + np.clip(src, 0, w - 1)), last)


def _interpret_shuffle(interp: Interpreter, op: D.ShuffleOp, frame: Frame, mask: np.ndarray) -> None:
    w = interp.warp_size
    source = shuffle_sources(interp, op, frame)
    idle = mask & ~mask[source]
    if idle.any():
        k = int(np.flatnonzero(idle)[0])
        raise interp.fault(
            "inactive-lane", f"thread {k} shuffles from lane {int(source[k] % w)}, which is not active here "
            "(every lane a shuffle reads must take part in it)", op, frame, thread=k, threads=[k, int(source[k])],
        )
    set_value(frame, op, scalars(frame, op.value)[source].copy())


def _shadow_shuffle(s: ShadowInterpreter, op: D.ShuffleOp, frame: Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = s.value_tags(frame, op.value)[shuffle_sources(s, op, frame)].copy()


# ---- LLVM ---------------------------------------------------------------------------------

def _translate_shuffle(t: Translator, op: D.ShuffleOp) -> None:
    """Widen the value to an i32 word (a float's bits), move it, and narrow it back."""
    ty = llvm_type(op.value.type, t.where(op))
    width = bit_width(ty)
    if width > 32:
        raise t.unsupported(op, f"a shuffle of a {width}-bit value")
    x = t.value(op.value)
    word = x
    if ty != "i32":
        raw = x
        if ty in ("half", "bfloat", "float"):
            raw = t.let(f"bitcast {ty} {x} to i{width}")
        word = t.let(f"zext i{width} {raw} to i32") if width < 32 else raw
    got = t.shuffle_word(op, op.mode.data, word, t.value(op.lane))
    if ty == "i32":
        t.names[op.result] = got
        return
    narrow = t.let(f"trunc i32 {got} to i{width}") if width < 32 else got
    if ty in ("half", "bfloat", "float"):
        t.define(op.result, f"bitcast i{width} {narrow} to {ty}")
    else:
        t.names[op.result] = narrow


# ---- the ops ------------------------------------------------------------------------------

define(D.ShuffleOp, interpret=_interpret_shuffle, analyze=shuffle_rule, shadow=_shadow_shuffle,
       translate=_translate_shuffle)
