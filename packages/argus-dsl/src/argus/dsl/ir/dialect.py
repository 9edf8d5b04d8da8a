"""The ``argus`` MLIR dialect (built with xDSL): tiles, thread indices, memory and barriers.

Scalar arithmetic, comparisons and control flow use MLIR's own ``arith``, ``math`` and
``scf`` dialects; this dialect adds what they lack. Types:

- ``!argus.tensor<f32, [n, 128]>``: a global tensor parameter, row-major, dims may be named
  (sizes known only at launch);
- ``!argus.tile<shared, bf16, "Sw<3,4,3> o 0 o (8,64):(64,1)">``: memory plus an
  `argus.layout` layout, in the memory space named first (``shared``, ``local``, ``global``);
- ``!argus.var<f32>``: a per-thread variable (a Python name assigned in several places).

Every op prints in MLIR's generic form and parses back to an equal module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from argus.layout import ComposedLayout, Layout
from xdsl.dialects import arith, builtin, math, scf
from xdsl.dialects.builtin import ArrayAttr, IntAttr, StringAttr
from xdsl.ir import Attribute, Block, Dialect, ParametrizedAttribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.traits import IsTerminator, NoTerminator, Pure

from ..dtypes import DType, dtype_named
from .layout_texts import layout_from_text, text_of

MEMORY_SPACES = ("global", "shared", "local")

UNROLLED = "argus.unrolled"
"""The attribute marking an ``scf.for`` that stands for an unrolled ``static_range`` loop, kept
rolled by the front-end (`frontend.rolling`): it runs as the unrolled code would."""


def is_unrolled(op: Any) -> bool:
    """Whether `op` is a static loop kept rolled."""
    return isinstance(op, scf.ForOp) and UNROLLED in op.attributes


def _parse_dtype(parser: AttrParser) -> StringAttr:
    name = parser.parse_identifier()
    if dtype_named(name) is None:
        parser.raise_error(f"unknown element type {name!r}")
    return StringAttr(name)


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A row-major global tensor; each dim is an int or the name of a size given at launch."""

    name = "argus.tensor"
    element: StringAttr
    dims: ArrayAttr[Attribute]

    @classmethod
    def of(cls, dtype: DType, dims: Sequence[int | str]) -> TensorType:
        return cls(StringAttr(dtype.name), ArrayAttr([IntAttr(d) if isinstance(d, int) else StringAttr(d) for d in dims]))

    @property
    def dtype(self) -> DType:
        return dtype_named(self.element.data)  # type: ignore[return-value]

    @property
    def shape(self) -> tuple[int | str, ...]:
        return tuple(d.data if isinstance(d, (IntAttr, StringAttr)) else str(d) for d in self.dims)

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.element.data}, [{', '.join(str(d) for d in self.shape)}]>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            element = _parse_dtype(parser)
            parser.parse_punctuation(",")
            dims = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE,
                lambda: IntAttr(v) if (v := parser.parse_optional_integer()) is not None else StringAttr(parser.parse_identifier()),
            )
        return [element, ArrayAttr(dims)]


@irdl_attr_definition
class TileType(ParametrizedAttribute, TypeAttribute):
    """Memory in a space, holding `element`s at the offsets of a layout (CuTe notation)."""

    name = "argus.tile"
    space: StringAttr
    element: StringAttr
    layout_text: StringAttr

    @classmethod
    def of(cls, space: str, dtype: DType, layout: Layout | ComposedLayout) -> TileType:
        """The tile type (one object per type: see `types.mlir_type`)."""
        key = (space, dtype.name, text_of(layout))
        found = _TILE_TYPES.get(key)
        if found is None:
            found = _TILE_TYPES[key] = cls(StringAttr(space), StringAttr(dtype.name), StringAttr(key[2]))
        return found

    @property
    def dtype(self) -> DType:
        return dtype_named(self.element.data)  # type: ignore[return-value]

    @property
    def layout(self) -> Layout | ComposedLayout:
        return layout_from_text(self.layout_text.data)

    @property
    def footprint(self) -> int:
        """Elements of memory a tile of this type needs: one past its largest offset."""
        layout = self.layout
        if not layout.size():
            return 0
        if isinstance(layout, Layout):  # an affine map: its largest offset from the strides alone
            return layout.codomain()[1] + 1
        return int(np.max(layout.offsets())) + 1

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.space.data}, {self.element.data}, ")
        printer.print_string_literal(self.layout_text.data)
        printer.print_string(">")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            space = parser.parse_identifier()
            if space not in MEMORY_SPACES:
                parser.raise_error(f"memory space must be one of {MEMORY_SPACES}, got {space!r}")
            parser.parse_punctuation(",")
            element = _parse_dtype(parser)
            parser.parse_punctuation(",")
            text = parser.parse_str_literal()
        return [StringAttr(space), element, StringAttr(text)]


_TILE_TYPES: dict[tuple[str, str, str], TileType] = {}


@irdl_attr_definition
class VarType(ParametrizedAttribute, TypeAttribute):
    """A per-thread variable holding one value of `element`."""

    name = "argus.var"
    element: StringAttr

    @classmethod
    def of(cls, dtype: DType) -> VarType:
        return cls(StringAttr(dtype.name))

    @property
    def dtype(self) -> DType:
        return dtype_named(self.element.data)  # type: ignore[return-value]

    def print_parameters(self, printer: Printer) -> None:
        printer.print_string(f"<{self.element.data}>")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> list[Attribute]:
        with parser.in_angle_brackets():
            return [_parse_dtype(parser)]


# ---- ops -----------------------------------------------------------------------------------


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A kernel: its body's block arguments are the runtime parameters, in order."""

    name = "argus.kernel"
    sym_name = prop_def(StringAttr)
    block = prop_def(ArrayAttr[IntAttr])
    warp_size = prop_def(IntAttr)
    arg_names = prop_def(ArrayAttr[StringAttr])
    min_blocks_per_sm = opt_prop_def(IntAttr)
    max_registers = opt_prop_def(IntAttr)
    """A compiler control: blocks that must fit on one multiprocessor together (backends cap
    registers so that they do)."""
    cluster = opt_prop_def(ArrayAttr[IntAttr])
    """Blocks per cluster along x, y, z: the blocks of a cluster run at once and may reach each
    other's shared memory (a target without clusters refuses the kernel)."""
    body = region_def("single_block")
    traits = traits_def(NoTerminator())

    @property
    def block_dims(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.block.data)

    @property
    def cluster_dims(self) -> tuple[int, int, int]:
        """Blocks per cluster along x, y and z; (1, 1, 1) for a kernel without clusters."""
        if self.cluster is None:
            return (1, 1, 1)
        dims = [d.data for d in self.cluster.data]
        return (dims + [1, 1, 1])[:3]  # type: ignore[return-value]


def pad3(dims: tuple[int, ...]) -> tuple[int, int, int]:
    """Dims along x, y and z, those not given being 1 (a block or grid given in fewer dims)."""
    padded = tuple(dims) + (1,) * (3 - len(dims))
    return padded[0], padded[1], padded[2]


class _IndexOp(IRDLOperation):
    dim = prop_def(StringAttr)
    result = result_def(builtin.i32)
    traits = traits_def(Pure())

    def __init__(self, dim: str) -> None:
        super().__init__(properties={"dim": StringAttr(dim)}, result_types=[builtin.i32])


@irdl_op_definition
class ThreadIdxOp(_IndexOp):
    """The thread's index in its block along x, y or z."""

    name = "argus.thread_idx"


@irdl_op_definition
class BlockIdxOp(_IndexOp):
    """The block's index in the grid along x, y or z."""

    name = "argus.block_idx"


@irdl_op_definition
class BlockDimOp(_IndexOp):
    """The number of threads of a block along x, y or z."""

    name = "argus.block_dim"


@irdl_op_definition
class GridDimOp(_IndexOp):
    """The number of blocks of the grid along x, y or z."""

    name = "argus.grid_dim"


@irdl_op_definition
class DimOp(IRDLOperation):
    """The launch-time size of a global tensor's dimension."""

    name = "argus.dim"
    tensor = operand_def(TensorType)
    index = prop_def(IntAttr)
    result = result_def(builtin.i32)
    traits = traits_def(Pure())


class _AllocOp(IRDLOperation):
    result = result_def(TileType)

    def __init__(self, tile: TileType) -> None:
        super().__init__(result_types=[tile])


@irdl_op_definition
class MakeSharedOp(_AllocOp):
    """A block's shared-memory buffer, laid out as the result type says."""

    name = "argus.make_shared"


@irdl_op_definition
class MakeLocalOp(_AllocOp):
    """Per-thread registers, laid out as the result type says."""

    name = "argus.make_local"


@irdl_op_definition
class ViewOp(IRDLOperation):
    """The same bytes under another layout and element type (same total size, checked)."""

    name = "argus.view"
    source = operand_def(TileType)
    result = result_def(TileType)


@irdl_op_definition
class TensorViewOp(IRDLOperation):
    """A global tensor's bytes as another row-major shape and element type. The result type's
    named dims take, in order, the values of `dims`; the total size is checked at run time."""

    name = "argus.tensor_view"
    source = operand_def(TensorType)
    dims = var_operand_def(builtin.i32)
    result = result_def(TensorType)


@irdl_op_definition
class BitcastOp(IRDLOperation):
    """The same bytes as a value of another type of the same size."""

    name = "argus.bitcast"
    value = operand_def()
    result = result_def()
    traits = traits_def(Pure())


@irdl_op_definition
class ConcatOp(IRDLOperation):
    """The bytes of the operands one after another, the first one lowest."""

    name = "argus.concat"
    values = var_operand_def()
    result = result_def()
    traits = traits_def(Pure())


@irdl_op_definition
class ExtractOp(IRDLOperation):
    """The bytes of `value` from `byte` on, as the result type (e.g. the low or high half)."""

    name = "argus.extract"
    value = operand_def()
    byte = prop_def(IntAttr)
    result = result_def()
    traits = traits_def(Pure())


@irdl_op_definition
class BytePermOp(IRDLOperation):
    """Pick bytes of ``concat(a, b)``: result byte k is byte ``selector[k]`` (a compile-time list)."""

    name = "argus.byte_perm"
    a = operand_def()
    b = operand_def()
    selector = prop_def(ArrayAttr[IntAttr])
    result = result_def()
    traits = traits_def(Pure())


@irdl_op_definition
class AtomicOp(IRDLOperation):
    """Read-modify-write of one element (`kind`: add, max, min, exchange); returns the old value."""

    name = "argus.atomic"
    value = operand_def()
    target = operand_def()
    coords = var_operand_def(builtin.i32)
    kind = prop_def(StringAttr)
    result = result_def()


@irdl_op_definition
class LoadOp(IRDLOperation):
    """Read one element of a tile or tensor at a coordinate (one index per top-level mode)."""

    name = "argus.load"
    source = operand_def()
    coords = var_operand_def(builtin.i32)
    result = result_def()


@irdl_op_definition
class LoadAtOp(IRDLOperation):
    """Read the element at an element offset of a tile or tensor (layouts lowered away)."""

    name = "argus.load_at"
    source = operand_def()
    offset = operand_def(builtin.i32)
    result = result_def()


@irdl_op_definition
class StoreAtOp(IRDLOperation):
    """Write the element at an element offset of a tile or tensor (layouts lowered away)."""

    name = "argus.store_at"
    value = operand_def()
    target = operand_def()
    offset = operand_def(builtin.i32)


@irdl_op_definition
class StoreOp(IRDLOperation):
    """Write one element of a tile or tensor at a coordinate."""

    name = "argus.store"
    value = operand_def()
    target = operand_def()
    coords = var_operand_def(builtin.i32)


@irdl_op_definition
class VarOp(IRDLOperation):
    """Declare a per-thread variable."""

    name = "argus.var"
    result = result_def(VarType)


@irdl_op_definition
class VarLoadOp(IRDLOperation):
    name = "argus.var_load"
    var = operand_def(VarType)
    result = result_def()


@irdl_op_definition
class VarStoreOp(IRDLOperation):
    name = "argus.var_store"
    value = operand_def()
    var = operand_def(VarType)


@irdl_op_definition
class ShuffleOp(IRDLOperation):
    """Read `value` from another lane of the warp: lane ``l ^ arg`` (xor), ``arg`` (idx),
    ``l + arg`` (down) or ``l - arg`` (up); a lane outside the warp reads its own value."""

    name = "argus.shuffle"
    value = operand_def()
    lane = operand_def(builtin.i32)
    mode = prop_def(StringAttr)
    result = result_def()


@irdl_op_definition
class LaneIdOp(IRDLOperation):
    """The thread's lane within its warp (linear thread index modulo the warp size)."""

    name = "argus.lane_id"
    result = result_def(builtin.i32)
    traits = traits_def(Pure())

    def __init__(self) -> None:
        super().__init__(result_types=[builtin.i32])


@irdl_op_definition
class WarpIdOp(IRDLOperation):
    """The thread's warp within its block (linear thread index divided by the warp size)."""

    name = "argus.warp_id"
    result = result_def(builtin.i32)
    traits = traits_def(Pure())

    def __init__(self) -> None:
        super().__init__(result_types=[builtin.i32])


@irdl_op_definition
class MmaOp(IRDLOperation):
    """``c += a · bᵀ`` by a matrix-multiply atom over the fragments a, b, c (local tiles, in the
    atom's value order); the atom's full description is in `atom` (see argus.dsl.atoms)."""

    name = "argus.mma"
    a = operand_def(TileType)
    b = operand_def(TileType)
    c = operand_def(TileType)
    starts = var_operand_def(builtin.i32)
    """After layout lowering: for each operand the atom reads whole from shared memory (a, then
    b), the offset of its first element before swizzling (where the operand starts)."""
    atom = prop_def(builtin.DictionaryAttr)
    asynchronous = opt_prop_def(builtin.UnitAttr)
    """Started without waiting (matmul_async): finished by a later `MmaWaitOp`."""


@irdl_op_definition
class MmaWaitOp(IRDLOperation):
    """Wait until at most `pending` of the thread's asynchronous products are still running."""

    name = "argus.mma_wait"
    pending = prop_def(builtin.IntAttr)


@irdl_op_definition
class CopyOp(IRDLOperation):
    """Each thread copies its `source` fragment into its `target` fragment (same size and type)
    with a copy atom, whose full description is in `atom` (see argus.dsl.atoms)."""

    name = "argus.copy"
    source = operand_def(TileType)
    target = operand_def(TileType)
    starts = var_operand_def(builtin.i32)
    """Empty until layout lowering gives a cooperative copy (one that redistributes values, a
    warp's matrix load) the element offsets of its source's and target's first elements."""
    atom = prop_def(builtin.DictionaryAttr)


@irdl_op_definition
class PartitionOp(IRDLOperation):
    """One part of a tile chosen at run time: `selector` (a layout in the tile's unswizzled
    offset space) maps `index` to where the part starts; the result type's layout says how the
    part's elements lie from there (partitioning among threads by a TV layout, or tiling)."""

    name = "argus.partition"
    source = operand_def(TileType)
    index = operand_def(builtin.i32)
    selector = prop_def(StringAttr)
    result = result_def(TileType)


@irdl_op_definition
class SliceOp(IRDLOperation):
    """A sub-tile: the modes of `source` left open, at a fixed position of the others (the
    result type's layout carries the offset). In a static loop kept rolled, where the position
    follows the loop's index, `start` adds the elements the sub-tile starts after the offset
    (`frontend.rolling`; unrolling folds it into the type again)."""

    name = "argus.slice"
    source = operand_def(TileType)
    start = opt_operand_def(builtin.i32)
    result = result_def(TileType)


def captured_by(block: Block) -> list[SSAValue]:
    """The values a tag function's body uses from outside it."""
    inside = set(block.args)
    out = []
    for inner in block.ops:
        inside.update(inner.results)
        out.extend(v for v in inner.operands if v not in inside)
    return out


@irdl_op_definition
class TagOp(IRDLOperation):
    """Attach a tag function to a tensor or tile: the body maps an element's coordinates (its
    block arguments, one per mode) to the tag it yields. Checked at compile time only."""

    name = "argus.tag"
    target = operand_def()
    body = region_def("single_block")

    def captured(self) -> list[SSAValue]:
        """The values the body uses from outside it (loop indices, sizes, variables' loads)."""
        return captured_by(self.body.block)


@irdl_op_definition
class StoreTagsOp(IRDLOperation):
    """What every element stored into tensor `target` carries: the body maps the element's
    coordinates to its tag, as a tag function does. Checked at compile time, at each store."""

    name = "argus.store_tags"
    target = operand_def(TensorType)
    body = region_def("single_block")

    def captured(self) -> list[SSAValue]:
        """The values the body uses from outside it (loop indices, sizes, variables' loads)."""
        return captured_by(self.body.block)


@irdl_op_definition
class YieldTagOp(IRDLOperation):
    """The tag of the element the enclosing `argus.tag` body was given."""

    name = "argus.yield_tag"
    values = var_operand_def()
    traits = traits_def(IsTerminator())


@irdl_op_definition
class TagAssertOp(IRDLOperation):
    """Every element of `lhs` carries the same tag as the element of `rhs` at the same
    coordinate (``kind = "eq"``), or a different one (``"ne"``)."""

    name = "argus.tag_assert"
    lhs = operand_def()
    rhs = operand_def()
    kind = prop_def(StringAttr)
    message = prop_def(StringAttr)


@irdl_op_definition
class ResetTagsOp(IRDLOperation):
    """Forget the tags of a shared tile (its memory is reused for other data)."""

    name = "argus.reset_tags"
    target = operand_def(TileType)


@irdl_op_definition
class AssertWrittenOp(IRDLOperation):
    """Every element of a tensor is written by the launch (``assert_written(t)``)."""

    name = "argus.assert_written"
    target = operand_def(TensorType)


@irdl_op_definition
class AssumeOp(IRDLOperation):
    """A fact every launch satisfies (``assume(n % 64 == 0)``): the checker's domain includes it,
    the interpreter checks it."""

    name = "argus.assume"
    cond = operand_def(builtin.i1)


@irdl_op_definition
class SyncThreadsOp(IRDLOperation):
    """A barrier every thread of the block must reach; orders shared-memory accesses."""

    name = "argus.syncthreads"

    def __init__(self) -> None:
        super().__init__()


#: Ops giving a thread's position: usable in tag functions, evaluated per thread.
INDEX_OPS = (ThreadIdxOp, BlockIdxOp, BlockDimOp, GridDimOp, LaneIdOp, WarpIdOp)

OPERATIONS: list[type[IRDLOperation]] = [
    KernelOp,
    MmaWaitOp,
    ThreadIdxOp,
    BlockIdxOp,
    BlockDimOp,
    GridDimOp,
    DimOp,
    MakeSharedOp,
    MakeLocalOp,
    ViewOp,
    TensorViewOp,
    BitcastOp,
    ConcatOp,
    ExtractOp,
    BytePermOp,
    AtomicOp,
    LoadOp,
    StoreOp,
    LoadAtOp,
    StoreAtOp,
    VarOp,
    VarLoadOp,
    VarStoreOp,
    ShuffleOp,
    LaneIdOp,
    WarpIdOp,
    MmaOp,
    CopyOp,
    PartitionOp,
    SliceOp,
    TagOp,
    YieldTagOp,
    StoreTagsOp,
    TagAssertOp,
    ResetTagsOp,
    SyncThreadsOp,
    AssumeOp,
    AssertWrittenOp,
]

Argus = Dialect("argus", OPERATIONS, [TensorType, TileType, VarType])


def context() -> Any:
    """An xDSL context that can parse every dialect Argus prints."""
    from xdsl.context import Context

    from ..intrinsics import dialects

    ctx = Context()
    for dialect in (builtin.Builtin, arith.Arith, math.Math, scf.Scf, Argus, *dialects()):
        ctx.load_dialect(dialect)
    return ctx


def parse_module(text: str) -> builtin.ModuleOp:
    from xdsl.parser import Parser

    return Parser(context(), text).parse_module()


__all__ = [
    "Argus",
    "AtomicOp",
    "BitcastOp",
    "BytePermOp",
    "ConcatOp",
    "CopyOp",
    "ExtractOp",
    "TensorViewOp",
    "BlockDimOp",
    "BlockIdxOp",
    "DimOp",
    "GridDimOp",
    "KernelOp",
    "LoadAtOp",
    "LoadOp",
    "MakeLocalOp",
    "LaneIdOp",
    "MakeSharedOp",
    "MmaOp",
    "MmaWaitOp",
    "PartitionOp",
    "SliceOp",
    "ShuffleOp",
    "ResetTagsOp",
    "AssumeOp",
    "AssertWrittenOp",
    "StoreAtOp",
    "StoreOp",
    "TagAssertOp",
    "StoreTagsOp",
    "TagOp",
    "YieldTagOp",
    "SyncThreadsOp",
    "TensorType",
    "ThreadIdxOp",
    "TileType",
    "VarLoadOp",
    "VarOp",
    "VarStoreOp",
    "VarType",
    "ViewOp",
    "WarpIdOp",
    "context",
    "parse_module",
]
