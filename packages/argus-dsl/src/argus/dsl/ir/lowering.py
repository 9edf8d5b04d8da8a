"""Lowering layouts to index arithmetic.

After this pass no access names a coordinate: each ``argus.load``/``argus.store`` becomes an
``argus.load_at``/``argus.store_at`` of an element offset computed with ``arith`` ops from the
coordinates and the tile's layout (divisions and remainders by mode sizes, multiplications by
strides, and the XOR, AND and shifts of a swizzle), or, for a global tensor, its row-major
linearization. This is the form backends translate. Coordinates are non-negative, so the
unsigned division and remainder are used.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from argus.layout import ComposedLayout, Layout, Swizzle, product
from xdsl.dialects import arith, builtin
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from . import dialect as D
from .layout_texts import layout_from_text
from .passes import int_constant

Index = SSAValue | int


class _IndexBuilder:
    """i32 arithmetic inserted before one op; ints stay ints until they meet a value."""

    def __init__(self, rewriter: PatternRewriter) -> None:
        self.rewriter = rewriter

    def value(self, x: Index) -> SSAValue:
        if isinstance(x, int):
            op = arith.ConstantOp(builtin.IntegerAttr(x, builtin.i32))
            self.rewriter.insert(op)
            return op.result
        return x

    def _binary(self, cls: Any, a: Index, b: Index) -> SSAValue:
        op = cls(self.value(a), self.value(b))
        self.rewriter.insert(op)
        return op.result  # type: ignore[no-any-return]

    def add(self, a: Index, b: Index) -> Index:
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if b == 0:
            return a
        if a == 0:
            return b
        return self._binary(arith.AddiOp, a, b)

    def mul(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a * b
        if b == 0:
            return 0
        return a if b == 1 else self._binary(arith.MuliOp, a, b)

    def div(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a // b
        return a if b == 1 else self._binary(arith.DivUIOp, a, b)

    def rem(self, a: Index, b: int) -> Index:
        if isinstance(a, int):
            return a % b
        return 0 if b == 1 else self._binary(arith.RemUIOp, a, b)

    def swizzle(self, x: Index, sw: Swizzle) -> Index:
        if isinstance(x, int):
            return sw(x)  # type: ignore[no-any-return]
        if sw.bits == 0:
            return x
        picked = self._binary(arith.AndIOp, x, sw.source_mask)
        moved = (self._binary(arith.ShRUIOp, picked, sw.shift) if sw.shift >= 0
                 else self._binary(arith.ShLIOp, picked, -sw.shift))
        return self._binary(arith.XOrIOp, x, moved)

    def layout(self, layout: Layout | ComposedLayout, coords: list[Index], base: Index = 0) -> Index:
        """Offset at `coords`; `base` (a partition's start) is added before any swizzle."""
        if isinstance(layout, ComposedLayout):
            inner = self.add(self.add(self.layout(layout.inner, coords), layout.offset), base)
            if isinstance(layout.outer, Swizzle):
                return self.swizzle(inner, layout.outer)
            return self.layout(layout.outer, [inner])
        if len(coords) == 1:
            return self.add(self._offset(coords[0], layout.shape, layout.stride), base)
        total: Index = base
        for c, s, d in zip(coords, layout.shape, layout.stride):  # type: ignore[call-overload]
            total = self.add(total, self._offset(c, s, d))
        return total

    def _offset(self, c: Index, shape: Any, stride: Any) -> Index:
        """An index into one (possibly nested) mode: colexicographic, the last sub-mode unbounded."""
        if not isinstance(shape, tuple):
            return self.mul(c, stride)
        total: Index = 0
        for i, (s, d) in enumerate(zip(shape, stride)):
            if i == len(shape) - 1:
                total = self.add(total, self._offset(c, s, d))
            else:
                n = product(s)
                total = self.add(total, self._offset(self.rem(c, n), s, d))
                c = self.div(c, n)
        return total

    def row_major(self, tensor: SSAValue, t: D.TensorType, coords: list[Index]) -> Index:
        total: Index = 0
        for i, (c, dim) in enumerate(zip(coords, t.shape)):
            if isinstance(dim, int):
                total = self.mul(total, dim)
            elif total != 0:
                op = D.DimOp.create(operands=[tensor], properties={"index": builtin.IntAttr(i)},
                                    result_types=[builtin.i32])
                self.rewriter.insert(op)
                total = self._binary(arith.MuliOp, total, op.result)
            total = self.add(total, c)
        return total


def _constant_or_value(v: SSAValue) -> Index:
    constant = int_constant(v)
    return v if constant is None else constant


def _partition_base(builder: _IndexBuilder, tile: SSAValue) -> Index:
    """Where a partitioned tile starts (before swizzling): its selectors at their indices."""
    owner = tile.owner
    if isinstance(owner, D.SliceOp):
        return _partition_base(builder, owner.source)
    if isinstance(owner, D.PartitionOp):
        selector = layout_from_text(owner.selector.data)
        start = builder.layout(selector, [_constant_or_value(owner.index)])
        return builder.add(start, _partition_base(builder, owner.source))
    return 0


def _element_offset(rewriter: PatternRewriter, source: SSAValue, coords: list[SSAValue]) -> SSAValue:
    builder = _IndexBuilder(rewriter)
    indices = [_constant_or_value(c) for c in coords]
    t = source.type
    if isinstance(t, D.TensorType):
        offset = builder.row_major(source, t, indices)
    else:
        offset = builder.layout(t.layout, indices, _partition_base(builder, source))  # type: ignore[attr-defined]
    return builder.value(offset)


class _Replacing(RewritePattern):
    """A pattern that replaces ops and says which op took each one's place (for its location)."""

    def __init__(self, moved: dict[Operation, Operation]) -> None:
        self.moved = moved

    def replace(self, rewriter: PatternRewriter, op: Operation, new: Operation) -> None:
        rewriter.replace(op, new)
        self.moved[op] = new


class _LowerMma(RewritePattern):
    """A matrix multiply reading operands whole from shared memory gets where each starts (the
    unswizzled offset of its first element, added to the op in place: not a `lower(op, offset_of)`
    rule of `argus.dsl.ops.products`, which replaces an access by coordinates)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: D.MmaOp, rewriter: PatternRewriter) -> None:
        if op.starts:
            return
        shared = [tile for tile, label in ((op.a, "a_layout"), (op.b, "b_layout"))
                  if op.atom.data[label].data == "shared"]  # type: ignore[attr-defined]
        if not shared:
            return
        builder = _IndexBuilder(rewriter)
        starts = []
        for tile in shared:
            layout = tile.type.layout  # type: ignore[attr-defined]
            static = layout.offset if isinstance(layout, ComposedLayout) else 0
            starts.append(builder.value(builder.add(_partition_base(builder, tile), static)))
        op.operands = (*op.operands, *starts)  # in place: the op keeps its source location


class _LowerCooperativeCopy(RewritePattern):
    """A copy that redistributes values among threads (an instruction that takes one address
    per thread) gets where each thread's source and target fragments start."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: D.CopyOp, rewriter: PatternRewriter) -> None:
        if op.starts or int(op.atom.data["threads"].data) == 1:  # type: ignore[attr-defined]
            return
        builder = _IndexBuilder(rewriter)
        starts = []
        for tile in (op.source, op.target):
            layout = tile.type.layout  # type: ignore[attr-defined]
            starts.append(builder.value(builder.layout(layout, [0] * layout.rank, _partition_base(builder, tile))))
        op.operands = (*op.operands, *starts)  # in place: the op keeps its source location


RULES: dict[type, Callable[[Any, Callable[[SSAValue, list[SSAValue]], SSAValue]], Operation]] = {}
"""How an op that names coordinates becomes one on element offsets, by op kind
(`argus.dsl.ir.registry.define(lower=...)` fills it)."""


class _LowerIntrinsic(_Replacing):
    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        lower = RULES.get(type(op))
        if lower is not None:
            self.replace(rewriter, op, lower(op, lambda source, coords: _element_offset(rewriter, source, coords)))


def lower_layouts(module: builtin.ModuleOp, moved: dict[Operation, Operation] | None = None) -> builtin.ModuleOp:
    """Rewrite every coordinate access of `module` into offset arithmetic, in place; `moved`
    receives the op that replaced each rewritten one."""
    from .registry import install

    install()  # every op family's lowering, the core language's and every backend's
    moved = {} if moved is None else moved
    PatternRewriteWalker(GreedyRewritePatternApplier([_LowerMma(),
                                                      _LowerCooperativeCopy(), _LowerIntrinsic(moved)]),
                         apply_recursively=False).rewrite_module(module)
    return module



def lowered(compiled: Any) -> tuple[builtin.ModuleOp, dict[Any, Any]]:
    """A copy of a compiled kernel's module with layouts lowered and the IR cleaned, and the
    source locations of the copy's ops (an op that replaces an access keeps its location)."""
    from .passes import canonicalize, unroll_static_loops

    module = compiled.module.clone()
    locations = {new: compiled.locations[old] for old, new in zip(compiled.module.walk(), module.walk())
                 if old in compiled.locations}
    unroll_static_loops(module, locations)
    moved: dict[Operation, Operation] = {}
    lower_layouts(module, moved)
    for old, new in moved.items():
        if old in locations:
            locations[new] = locations.pop(old)
    canonicalize(module)
    return module, locations
