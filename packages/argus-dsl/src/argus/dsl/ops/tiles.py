"""Tiles and views: allocating shared and register tiles, and naming part of a tile's or a
tensor's memory again — a view as another layout and type, a sub-tile, a part picked at run
time (`partition`, `local_tile`), a global tensor seen with another shape and type.

An allocation is memory; every other op of the family makes no memory and moves no data: its
result is its source's memory, addressed by the result's layout (from the start its source
gives, plus a start of its own for a sub-tile of a rolled loop or a part picked at run time).
So the interpreter derives a `TileValue` of the same memory, the shadow interpreter has no tags
to move (the memory holds them), tag liveness always keeps these ops (a check names a memory by
the value allocating it, and reaches it through its views), and the LLVM translation gives the
result its source's pointer. Sub-tiles (``t[i, :]``) are built by the subscript front end
(`argus.dsl.frontend.expressions`), not here.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.layout import ComposedLayout, Layout, LayoutError, composition, zipped_divide
from xdsl.dialects import builtin as mlir
from xdsl.ir import SSAValue

from ..check.access import alloc_rule, partition_rule, tensor_view_rule, view_rule
from ..check.tag_liveness import always
from ..dtypes import DType, i32
from ..frontend.limits import MAX_LOCAL_BYTES, MAX_SHARED_BYTES
from ..frontend.values import TensorRef, TileRef, Value, describe
from ..ir import dialect as D
from ..ir.layout_texts import layout_from_text, text_of
from ..ir.registry import builtin, define
from ..llvm.translate import Memory as LLVMMemory
from ..llvm.translate import element_type, shared_alignment
from ..machine.interpreter import (
    Frame,
    Interpreter,
    Memory,
    TensorValue,
    TileValue,
    scalars,
    segment_stride,
    storage_dtype,
    value_of,
)
from ..machine.tiles import offset_table

if TYPE_CHECKING:
    from ..llvm import Translator


# ---- the front end ------------------------------------------------------------------------

def _build_allocation(space: str) -> Any:
    name = f"make_{space}"

    def build(fe: Any, node: ast.Call, args: list[Any]) -> TileRef:
        if len(args) != 2 or not isinstance(args[1], DType):
            raise fe.type_error(node, f"{name}(layout_or_shape, dtype)")
        layout = fe.static_layout(node.args[0], args[0])
        dtype: DType = args[1]
        if dtype.kind == "bool":
            raise fe.type_error(node.args[1], "tiles of bool are not supported; use u8")
        limit = MAX_SHARED_BYTES if space == "shared" else MAX_LOCAL_BYTES
        inner = layout.inner if isinstance(layout, ComposedLayout) else layout
        if inner.size() * dtype.nbytes > limit or \
                (int(fe.element_offsets(node.args[0], layout).max(initial=-1)) + 1) * dtype.nbytes > limit:
            raise fe.type_error(
                node, f"a {space} tile of {inner.size()} {dtype} elements spans more than the {limit} bytes "
                f"a {'block' if space == 'shared' else 'thread'} may hold",
            )
        if space == "local" and isinstance(layout, ComposedLayout):
            raise fe.type_error(node.args[0], "registers are not swizzled; give make_local a shape or a Layout")
        t = D.TileType.of(space, dtype, layout)
        op_class = D.MakeSharedOp if space == "shared" else D.MakeLocalOp
        return TileRef(fe.emit(op_class(t)).results[0], t)

    return build


builtin("make_shared")(_build_allocation("shared"))
builtin("make_local")(_build_allocation("local"))


def _build_partition(name: str) -> Any:
    """A part of a tile picked by a runtime index: see `argus.dsl.lang.partition` and
    `argus.dsl.lang.local_tile`."""
    usage = f"{name}(tile, {'tv_layout' if name == 'partition' else 'tiler'}, index)"

    def build(fe: Any, node: ast.Call, args: list[Any]) -> TileRef:
        if len(args) != 3 or not isinstance(args[0], TileRef):
            raise fe.type_error(node, usage)
        tile, how, index = args
        layout = tile.type.layout
        inner = layout.inner if isinstance(layout, ComposedLayout) else layout
        if name == "partition" and (not isinstance(how, Layout) or how.rank != 2):
            raise fe.type_error(node.args[1], "a TV layout is a rank-2 Layout: (threads, values) -> index")
        if name == "local_tile" and not (isinstance(how, Layout) or (
                isinstance(how, tuple) and len(how) == inner.rank
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in how))):
            raise fe.type_error(node.args[1], f"a tiler is a Layout or a tuple of {inner.rank} positive ints, one "
                                              f"per mode of the tile, got {describe(how)}")
        try:
            if name == "partition":
                split = composition(inner, how)
                selector, values = split[0], split[1]
            else:
                split = zipped_divide(inner, how)
                selector, values = split[1], split[0]
        except LayoutError as err:
            raise fe.type_error(node, f"{name}: {err}") from None
        if split.size() != inner.size() or not np.isin(split.offsets(), inner.offsets()).all():
            what = "TV layout" if name == "partition" else "tiler"
            raise fe.type_error(node.args[1], f"{name}: the {what} {how} does not divide this tile of shape "
                                              f"{inner.shape} into parts of its own elements (its parts reach "
                                              f"{split.size()} elements of {inner.size()})")
        part: Layout | ComposedLayout = ComposedLayout(layout.outer, layout.offset, values) \
            if isinstance(layout, ComposedLayout) else values
        index_value = fe.materialize(fe.convert(index, i32, node), node)
        t = D.TileType.of(tile.type.space.data, tile.type.dtype, part)
        op = D.PartitionOp.create(operands=[tile.ssa, index_value.ssa],
                                  properties={"selector": mlir.StringAttr(text_of(selector))}, result_types=[t])
        return TileRef(fe.emit(op).results[0], t, partitioned=True)

    return build


builtin("partition")(_build_partition("partition"))
builtin("local_tile")(_build_partition("local_tile"))


@builtin("tile.view")
def _build_tile_view(fe: Any, node: ast.Call, args: list[Any]) -> TileRef:
    """``t.view(layout_or_shape, dtype)``: the same memory as another layout and type."""
    base: TileRef = args[0]
    if base.partitioned:
        raise fe.type_error(node, "a view of a partitioned tile is not supported yet; view the tile, then partition the view")
    if len(args) != 3:
        raise fe.type_error(node, "t.view(layout_or_shape, dtype)")
    layout = fe.static_layout(node.args[0], args[1])
    dtype = args[2]
    if not isinstance(dtype, DType):
        raise fe.type_error(node.args[1], "the second argument of view is a dtype")
    old = base.type
    if layout.size() > old.layout.size() * old.dtype.nbytes:
        raise fe.type_error(node, f"a view of {layout.size()} elements cannot fit in the {old.layout.size()} "
                                  f"{old.dtype} elements of this tile")
    fe.element_offsets(node.args[0], layout)
    old_bytes = old.layout.cosize() * old.dtype.nbytes
    new_bytes = layout.cosize() * dtype.nbytes
    if old_bytes != new_bytes:
        raise fe.type_error(node, f"a view must cover the same memory: {old.layout} of {old.dtype} spans {old_bytes} "
                                  f"bytes, {layout} of {dtype} spans {new_bytes}")
    tile = D.TileType.of(old.space.data, dtype, layout)
    return TileRef(fe.emit(D.ViewOp.create(operands=[base.ssa], result_types=[tile])).results[0], tile)


@builtin("tensor.view")
def _build_tensor_view(fe: Any, node: ast.Call, args: list[Any]) -> TensorRef:
    """``T.view((d0, d1, ...), dtype)``: row-major, dims compile-time ints or runtime i32."""
    base: TensorRef = args[0]
    if len(args) != 3:
        raise fe.type_error(node, "T.view((dims...), dtype)")
    shape, dtype = args[1], args[2]
    shape = shape if isinstance(shape, tuple) else (shape,)
    if not isinstance(dtype, DType) or dtype.kind == "bool":
        raise fe.type_error(node.args[1], "the second argument of view is a storable dtype")
    dims: list[int | str] = []
    runtime: list[SSAValue] = []
    for k, dim in enumerate(shape):
        if isinstance(dim, Value) and dim.dtype == i32:
            dims.append(f"{base.name}_v{k}")
            runtime.append(dim.ssa)
        elif isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1:
            dims.append(dim)
        else:
            raise fe.type_error(node.args[0], f"view dims are positive ints or runtime i32 values, got {describe(dim)}")
    old_dims = base.type.shape
    if all(isinstance(d, int) for d in (*old_dims, *dims)):
        old_bytes = int(np.prod(old_dims)) * base.type.dtype.nbytes  # type: ignore[arg-type]
        new_bytes = int(np.prod(dims)) * dtype.nbytes  # type: ignore[arg-type]
        if old_bytes != new_bytes:
            raise fe.type_error(node, f"a view must cover the same memory: {old_bytes} bytes as {tuple(old_dims)} of "
                                      f"{base.type.dtype}, {new_bytes} as {tuple(dims)} of {dtype}")
    t = D.TensorType.of(dtype, dims)
    op = D.TensorViewOp.create(operands=[base.ssa, *runtime], result_types=[t])
    return TensorRef(fe.emit(op).results[0], t, f"{base.name}.view")


# ---- the interpreter ----------------------------------------------------------------------

def _interpret_make_shared(interp: Interpreter, op: D.MakeSharedOp, frame: Frame, mask: np.ndarray) -> None:
    t: D.TileType = op.result.type  # type: ignore[assignment]
    nbytes = t.footprint * t.dtype.nbytes
    if frame.blocks_of is None:
        memory = Memory.shared(f"shared#{len(frame.shared)}", nbytes)
        frame.values[op.result] = TileValue(memory, t.layout, t.dtype)
    else:  # one segment per block of the cluster, each block's threads in their own
        stride = segment_stride(nbytes)
        memory = Memory.shared(f"shared#{len(frame.shared)}", stride * frame.blocks)
        frame.values[op.result] = TileValue(memory, t.layout, t.dtype, segment=frame.ranks * stride)
    frame.shared.append(memory)


def _interpret_make_local(interp: Interpreter, op: D.MakeLocalOp, frame: Frame, mask: np.ndarray) -> None:
    t: D.TileType = op.result.type  # type: ignore[assignment]
    memory = Memory.local(f"local#{op.result.name_hint or id(op)}", frame.threads, t.footprint * t.dtype.nbytes)
    frame.values[op.result] = TileValue(memory, t.layout, t.dtype)


def _interpret_view(interp: Interpreter, op: D.ViewOp, frame: Frame, mask: np.ndarray) -> None:
    source: TileValue = value_of(frame, op.source)
    t: D.TileType = op.result.type  # type: ignore[assignment]
    frame.values[op.result] = source.derived(t.layout, t.dtype, None)


def _interpret_slice(interp: Interpreter, op: D.SliceOp, frame: Frame, mask: np.ndarray) -> None:
    source: TileValue = value_of(frame, op.source)
    t: D.TileType = op.result.type  # type: ignore[assignment]
    base = source.base
    if op.start is not None:  # (a static loop kept rolled: the sub-tile starts where its index says)
        start = scalars(frame, op.start).astype(np.int64)
        base = start if base is None else base + start
    frame.values[op.result] = source.derived(t.layout, t.dtype, base)


def _interpret_partition(interp: Interpreter, op: D.PartitionOp, frame: Frame, mask: np.ndarray) -> None:
    source: TileValue = value_of(frame, op.source)
    t: D.TileType = op.result.type  # type: ignore[assignment]
    table = offset_table(layout_from_text(op.selector.data))[0]
    index = scalars(frame, op.index).astype(np.int64)
    bad = mask & ((index < 0) | (index >= table.size))
    if bad.any():
        thread = int(np.flatnonzero(bad)[0])
        raise interp.fault("out-of-bounds", f"thread {thread} asks for part {int(index[thread])} of a tile that has "
                           f"{table.size} parts", op, frame, array=source.memory.name, thread=thread,
                           index=(int(index[thread]),))
    base = table[np.clip(index, 0, table.size - 1)]
    if source.base is not None:
        base = base + source.base
    frame.values[op.result] = source.derived(t.layout, t.dtype, base)


def _interpret_tensor_view(interp: Interpreter, op: D.TensorViewOp, frame: Frame, mask: np.ndarray) -> None:
    source: TensorValue = value_of(frame, op.source)
    t: D.TensorType = op.result.type  # type: ignore[assignment]
    runtime = iter(op.dims)
    dims = []
    for d in t.shape:
        if isinstance(d, int):
            dims.append(d)
            continue
        values = scalars(frame, next(runtime))[mask]
        if values.size and (values != values[0]).any():
            raise interp.fault("view-size", f"threads disagree on the size of a view of {source.name!r}", op, frame)
        dims.append(int(values[0]) if values.size else 0)
    raw = source.array.reshape(-1).view(np.uint8)
    want = int(np.prod(dims)) * t.dtype.nbytes
    if want != raw.size or min(dims, default=1) < 1:
        raise interp.fault(
            "view-size", f"a view of {source.name!r} as {tuple(dims)} of {t.dtype} covers {want} bytes; the tensor has {raw.size}",
            op, frame, array=source.name,
        )
    frame.values[op.result] = TensorValue(f"{source.name}.view", raw.view(storage_dtype(t.dtype)).reshape(dims), t.dtype)


def _shadow_memory_only(*_: Any) -> None:
    """A tile or tensor value has no tags of its own (its memory's bytes carry them), so the
    shadow interpreter neither moves nor computes any for it."""


# ---- LLVM ---------------------------------------------------------------------------------

def _translate_make_shared(t: Translator, op: D.MakeSharedOp) -> None:
    tile: D.TileType = op.result.type  # type: ignore[assignment]
    ty = element_type(tile.dtype, t.where(op))
    if t.shared_bytes:  # the tiles share one dynamic allocation (`argus.dsl.llvm.translate.shared_layout`)
        offset = t.shared_offsets[op]
        t.memories[op.result] = LLVMMemory(f"getelementptr (i8, ptr addrspace(3) @argus_dynamic_shared, i32 {offset})", 3)
        return
    name = f"@smem{len(t.globals)}"
    t.globals.append(f"{name} = internal addrspace(3) global [{tile.footprint} x {ty}] undef, "
                     f"align {shared_alignment(tile)}")
    t.memories[op.result] = LLVMMemory(name, 3)


def _translate_make_local(t: Translator, op: D.MakeLocalOp) -> None:
    tile: D.TileType = op.result.type  # type: ignore[assignment]
    ty = element_type(tile.dtype, t.where(op))
    t.memories[op.result] = LLVMMemory(t.alloca(ty, tile.footprint), t.PRIVATE_SPACE)


def _translate_same_memory(t: Translator, op: Any) -> None:
    t.memories[op.result] = t.memory(op.source, op)


def _translate_tensor_view(t: Translator, op: D.TensorViewOp) -> None:
    memory = t.memories[op.result] = t.memory(op.source, op)
    t.alignment[memory.tensor] = max(t.alignment[memory.tensor], op.result.type.dtype.nbytes)  # type: ignore[attr-defined]
    runtime = iter(op.dims)
    shape = op.result.type.shape  # type: ignore[attr-defined]
    for axis, dim in enumerate(shape):
        t.dims[(op.result, axis)] = t.value(next(runtime)) if isinstance(dim, str) else str(dim)


# ---- the ops ------------------------------------------------------------------------------

_VIEW = dict(shadow=_shadow_memory_only, liveness=always, translate=_translate_same_memory)

define(D.MakeSharedOp, interpret=_interpret_make_shared, analyze=alloc_rule, liveness=always,
       shadow=_shadow_memory_only, translate=_translate_make_shared)
define(D.MakeLocalOp, interpret=_interpret_make_local, analyze=alloc_rule, liveness=always,
       shadow=_shadow_memory_only, translate=_translate_make_local)
define(D.ViewOp, interpret=_interpret_view, analyze=view_rule, **_VIEW)
define(D.SliceOp, interpret=_interpret_slice, analyze=view_rule, **_VIEW)
define(D.PartitionOp, interpret=_interpret_partition, analyze=partition_rule, **_VIEW)
define(D.TensorViewOp, interpret=_interpret_tensor_view, analyze=tensor_view_rule, liveness=always,
       shadow=_shadow_memory_only, translate=_translate_tensor_view)
