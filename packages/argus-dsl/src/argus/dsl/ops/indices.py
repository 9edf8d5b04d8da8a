"""Index ops: a thread's, block's, lane's and warp's place in the launch, the launch's sizes,
and a global tensor's runtime sizes.

Each is a 32-bit integer per thread. The interpreter reads them off the frame it runs; the
checker gives them their symbolic form (`argus.dsl.check.arithmetic`: thread-dependent numbers
for threads, lanes and warps, a solver symbol per axis for block indices and grid sizes); the
LLVM translation reads the hardware's special registers through the translator's `index` (or a
constant where the block is one thread wide on that axis).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..check.arithmetic import dim_rule, index_rule, lane_or_warp_rule
from ..errors import CodegenError
from ..ir import dialect as D
from ..dtypes import i32
from ..frontend.values import Value
from ..ir.registry import builtin, define
from ..machine.interpreter import Frame, Interpreter, TensorValue, set_value, value_of

if TYPE_CHECKING:
    from ..llvm import Translator

AXES = "xyz"


# ---- the front end ------------------------------------------------------------------------

def _build_lane_or_warp(op_class: type) -> Callable[..., Value]:
    def build(fe: Any, node: ast.Call, args: list[Any]) -> Value:
        if args:
            raise fe.type_error(node, f"{'lane_id' if op_class is D.LaneIdOp else 'warp_id'}() takes no arguments")
        return Value(fe.emit(op_class()).results[0], i32)

    return build


builtin("lane_id")(_build_lane_or_warp(D.LaneIdOp))
builtin("warp_id")(_build_lane_or_warp(D.WarpIdOp))


# ---- the interpreter ----------------------------------------------------------------------

def _interpret_index(axis_of: Callable[[Interpreter, Frame], tuple[Any, Any, Any]]) -> Callable[..., None]:
    def rule(interp: Interpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
        value = axis_of(interp, frame)[AXES.index(op.dim.data)]
        set_value(frame, op, np.broadcast_to(np.asarray(value, dtype=np.int32), (frame.threads,)).copy())

    return rule


def _interpret_lane_or_warp(interp: Interpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
    w = interp.warp_size
    ids = frame.local_ids % w if isinstance(op, D.LaneIdOp) else frame.local_ids // w
    set_value(frame, op, ids.astype(np.int32))


def _interpret_dim(interp: Interpreter, op: D.DimOp, frame: Frame, mask: np.ndarray) -> None:
    tensor: TensorValue = value_of(frame, op.tensor)
    set_value(frame, op, np.full(frame.threads, tensor.array.shape[op.index.data], np.int32))


# ---- LLVM ---------------------------------------------------------------------------------

def _translate_index(t: Translator, op: Any) -> None:
    axis = AXES.index(op.dim.data)
    if isinstance(op, D.BlockDimOp):
        t.names[op.result] = str(t.block[axis])
        return
    if isinstance(op, D.ThreadIdxOp) and t.block[axis] == 1:
        t.names[op.result] = "0"
        return
    kind = {D.ThreadIdxOp: "thread", D.BlockIdxOp: "block", D.GridDimOp: "grid"}[type(op)]
    t.names[op.result] = t.index(kind, axis)


def _translate_lane_or_warp(t: Translator, op: Any) -> None:
    tid = t.linear_thread()
    if isinstance(op, D.LaneIdOp):
        t.define(op.result, f"and i32 {tid}, {t.warp_size - 1}")
    else:
        t.define(op.result, f"lshr i32 {tid}, {t.warp_size.bit_length() - 1}")


def _translate_dim(t: Translator, op: D.DimOp) -> None:
    found = t.dims.get((op.tensor, op.index.data))
    if found is None:
        raise CodegenError(f"internal: no size for dim {op.index.data}", t.where(op))
    t.names[op.result] = found


# ---- the ops ------------------------------------------------------------------------------

define(D.ThreadIdxOp, interpret=_interpret_index(lambda interp, frame: interp.thread_coordinates(frame)),
       analyze=index_rule("thread"), translate=_translate_index)
define(D.BlockIdxOp,
       interpret=_interpret_index(lambda interp, frame: frame.block_index if frame.blocks_of is None else frame.blocks_of),
       analyze=index_rule("block"), translate=_translate_index)
define(D.BlockDimOp, interpret=_interpret_index(lambda interp, frame: interp.block_dims),
       analyze=index_rule("block_dim"), translate=_translate_index)
define(D.GridDimOp, interpret=_interpret_index(lambda interp, frame: interp.grid),
       analyze=index_rule("grid"), translate=_translate_index)
define(D.LaneIdOp, interpret=_interpret_lane_or_warp, analyze=lane_or_warp_rule, translate=_translate_lane_or_warp)
define(D.WarpIdOp, interpret=_interpret_lane_or_warp, analyze=lane_or_warp_rule, translate=_translate_lane_or_warp)
define(D.DimOp, interpret=_interpret_dim, analyze=dim_rule, translate=_translate_dim)
