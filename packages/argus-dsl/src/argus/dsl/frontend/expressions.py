"""Expressions: names, operators, comparisons, element loads, sub-tiles and conversions,
folded at compile time wherever every input is known.

Part of `FrontEnd` (see core.py), which mixes this class in.
"""

from __future__ import annotations

import ast
import builtins
import math
import operator
from collections.abc import Callable
from typing import Any

from argus.layout import (
    ComposedLayout,
    Layout,
    LayoutError,
    Swizzle,
    product,
    slice_and_offset,
)
from xdsl.dialects import arith, builtin
from xdsl.ir import Operation, SSAValue

from ..ir import dialect as D
from .. import lang
from ..dtypes import DType, boolean, f32, i32
from ..ir.types import mlir_type
from .limits import MAX_CONSTANT_BITS, MAX_CONSTANT_LENGTH
from .values import BoundMethod, MustUnroll, PendingSlot, RolledAway, Slot, TensorRef, TileRef, Value, describe, truth

_STATIC_BINOPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Div: operator.truediv,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.Pow: operator.pow,
}
_STATIC_CMP: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_INT_CMP = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}
_CMP_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_FLOAT_CMP = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq", ast.NotEq: "une"}
_UNARY_SYMBOL = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
_OP_SYMBOL = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%", ast.Div: "/",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.Pow: "**",
}





class Expressions:
    def expr(self, node: ast.expr) -> Any:
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            raise self.syntax_error(node, f"'{type(node).__name__}' expressions are not part of the Argus language")
        with self.deeper(node):
            return method(node)

    def expr_Constant(self, node: ast.Constant) -> Any:
        if isinstance(node.value, (bool, int, float, str)):
            return node.value
        raise self.syntax_error(node, f"constants of type {type(node.value).__name__} are not supported")

    def expr_Tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        return tuple(self.expr(e) for e in node.elts)

    def expr_Name(self, node: ast.Name) -> Any:
        return self.lookup(node)

    def lookup(self, node: ast.Name) -> Any:
        name = node.id
        if name in self.env:
            value = self.env[name]
            if isinstance(value, PendingSlot):
                raise self.type_error(node, f"{name!r} is used before it is assigned on every path")
            if isinstance(value, Slot):
                load = self.emit(D.VarLoadOp.create(operands=[value.ssa], result_types=[mlir_type(value.dtype)]))
                return Value(load.results[0], value.dtype)
            if isinstance(value, RolledAway):
                raise MustUnroll(value.loop)
            return value
        if name in self.constants:
            return self.constants[name]
        if name in self.src.globals:
            return self.src.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.type_error(node, f"name {name!r} is not defined")

    def expr_Attribute(self, node: ast.Attribute) -> Any:
        base = self.expr(node.value)
        if isinstance(base, lang.IndexSpace):
            if node.attr not in ("x", "y", "z"):
                raise self.type_error(node, f"{base.name} has .x, .y and .z")
            return self.index_value(base.name, node.attr, node)
        if isinstance(base, (TileRef, TensorRef)):
            if node.attr == "view":
                return BoundMethod(base, "view")
            if node.attr == "shape" and isinstance(base, TensorRef):
                return tuple(self.tensor_dim(base, i, node) for i in range(len(base.type.shape)))
            raise self.type_error(node, f"tiles have .view(...) (and tensors .shape); not .{node.attr}")
        if isinstance(base, Value):
            raise self.type_error(node, f"a {base.dtype} value has no attribute {node.attr!r}")
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.type_error(node, f"{describe(base)} has no attribute {node.attr!r}") from None

    def index_value(self, space: str, dim: str, node: ast.AST) -> Any:
        if space == "block_dim":
            axis = "xyz".index(dim)
            dims = self.block_dims()
            return dims[axis] if axis < len(dims) else 1
        op_class = {"thread_idx": D.ThreadIdxOp, "block_idx": D.BlockIdxOp, "grid_dim": D.GridDimOp}[space]
        return Value(self.emit(op_class(dim)).results[0], i32)

    def tensor_dim(self, tensor: TensorRef, index: int, node: ast.AST) -> Any:
        dim = tensor.type.shape[index]
        if isinstance(dim, int):
            return dim
        op = D.DimOp.create(operands=[tensor.ssa], properties={"index": builtin.IntAttr(index)}, result_types=[builtin.i32])
        return Value(self.emit(op).results[0], i32)

    def expr_BinOp(self, node: ast.BinOp) -> Any:
        return self.binop(node, node.op, self.expr(node.left), self.expr(node.right))

    def binop(self, node: ast.AST, op: ast.operator, left: Any, right: Any) -> Any:
        if not isinstance(left, Value) and not isinstance(right, Value):
            fn = _STATIC_BINOPS.get(type(op))
            if fn is None:
                raise self.syntax_error(node, f"operator {type(op).__name__} is not supported")
            symbol = _OP_SYMBOL.get(type(op), "?")
            too_large = _too_large(op, left, right)
            if too_large:
                raise self.type_error(node, f"compile-time {symbol} {too_large}")
            try:
                result = fn(left, right)
            except Exception as err:  # user arithmetic on compile-time values
                raise self.type_error(node, f"compile-time {symbol} failed: {err}") from None
            return self.constant_within_limits(node, result)
        folded = _identity_fold(op, left, right)
        # in a static loop's iteration an integer constant may be the index's value there: the
        # op stays, so that every iteration builds the same ops (`rolling`; canonicalization
        # folds what is left unrolled)
        if folded is not None and not (self.iterating and folded.dtype.is_integer):
            return folded
        if isinstance(left, Value) and left.dtype.is_integer and isinstance(right, int) and not isinstance(right, bool):
            if isinstance(op, (ast.FloorDiv, ast.Mod)) and right == 0:
                raise self.type_error(node, f"integer {_OP_SYMBOL[type(op)]} by zero")
            if isinstance(op, (ast.LShift, ast.RShift)) and not 0 <= right < left.dtype.bits:
                raise self.type_error(node, f"a shift of a {left.dtype} moves it 0 to {left.dtype.bits - 1} bits, not "
                                            f"{right}")
        left, right = self.unify(node, left, right)
        return self.arith(node, op, left, right)

    def unify(self, node: ast.AST, left: Any, right: Any) -> tuple[Value, Value]:
        """Bring two operands to one dtype: a compile-time number takes the runtime side's type."""
        if not isinstance(left, Value):
            left = self.runtime(left, right.dtype, node)
        if not isinstance(right, Value):
            right = self.runtime(right, left.dtype, node)
        if left.dtype != right.dtype:
            raise self.type_error(node, f"operands have different types ({left.dtype} and {right.dtype}); convert one explicitly, e.g. f32(x)")
        return left, right

    def arith(self, node: ast.AST, op: ast.operator, a: Value, b: Value) -> Value:
        t = a.dtype
        sym = _OP_SYMBOL.get(type(op), type(op).__name__)
        if t.kind in ("bits", "bool") and not isinstance(op, (ast.BitAnd, ast.BitOr, ast.BitXor)):
            raise self.type_error(node, f"{sym} is not defined on {t}")
        if t.is_float:
            table: dict[type, Any] = {ast.Add: arith.AddfOp, ast.Sub: arith.SubfOp, ast.Mult: arith.MulfOp, ast.Div: arith.DivfOp}
            cls = table.get(type(op))
            if cls is None:
                raise self.type_error(node, f"{sym} is not defined on {t}; floats have + - * /")
            return Value(self.emit(cls(a.ssa, b.ssa)).results[0], t)
        signed = t.kind == "int"
        if isinstance(op, ast.Div):
            raise self.type_error(node, "'/' divides floats; use '//' for integers")
        if isinstance(op, ast.Mod):
            quotient = self.arith(node, ast.FloorDiv(), a, b)
            product = self.arith(node, ast.Mult(), quotient, b)
            return self.arith(node, ast.Sub(), a, product)
        table = {
            ast.Add: arith.AddiOp, ast.Sub: arith.SubiOp, ast.Mult: arith.MuliOp,
            ast.FloorDiv: arith.FloorDivSIOp if signed else arith.DivUIOp,
            ast.BitAnd: arith.AndIOp, ast.BitOr: arith.OrIOp, ast.BitXor: arith.XOrIOp,
            ast.LShift: arith.ShLIOp, ast.RShift: arith.ShRSIOp if signed else arith.ShRUIOp,
        }
        cls = table.get(type(op))
        if cls is None:
            raise self.type_error(node, f"{sym} is not defined on {t}")
        return Value(self.emit(cls(a.ssa, b.ssa)).results[0], t)

    def constant_within_limits(self, node: ast.AST, value: Any) -> Any:
        """A compile-time result, refused past the limits on constants (`limits`)."""
        if isinstance(value, int) and value.bit_length() > MAX_CONSTANT_BITS:
            raise self.type_error(node, f"this compile-time integer has {value.bit_length()} bits; constants have at "
                                        f"most {MAX_CONSTANT_BITS}")
        if isinstance(value, (str, tuple)) and len(value) > MAX_CONSTANT_LENGTH:
            raise self.type_error(node, f"this compile-time {type(value).__name__} has {len(value)} items; at most "
                                        f"{MAX_CONSTANT_LENGTH}")
        return value

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.expr(node.operand)
        if not isinstance(operand, Value):
            fn = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}[type(node.op)]
            try:
                return fn(operand)
            except Exception as err:  # user arithmetic on compile-time values
                raise self.type_error(node, f"compile-time {_UNARY_SYMBOL[type(node.op)]} failed: {err}") from None
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.USub):
            if operand.dtype.is_float:
                return Value(self.emit(arith.NegfOp(operand.ssa)).results[0], operand.dtype)
            return self.binop(node, ast.Sub(), 0, operand)
        if isinstance(node.op, ast.Not):
            if operand.dtype is not boolean:
                raise self.type_error(node, "'not' applies to bools (comparisons)")
            return self.binop(node, ast.BitXor(), operand, True)
        if operand.dtype.is_integer:
            return self.binop(node, ast.BitXor(), operand, -1)
        raise self.type_error(node, f"~ is not defined on {operand.dtype}")

    def expr_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.syntax_error(node, "chained comparisons are not supported; combine with 'and'")
        left, right = self.expr(node.left), self.expr(node.comparators[0])
        op = node.ops[0]
        if not isinstance(left, Value) and not isinstance(right, Value):
            fn = _STATIC_CMP.get(type(op))
            if fn is None:
                raise self.syntax_error(node, f"comparison {type(op).__name__} is not supported")
            try:
                return fn(left, right)
            except Exception as err:  # user comparisons of compile-time values
                raise self.type_error(node, f"compile-time {_CMP_SYMBOL[type(op)]} failed: {err}") from None
        left, right = self.unify(node, left, right)
        if type(op) not in _INT_CMP:
            raise self.syntax_error(node, f"comparison {type(op).__name__} is not supported")
        if left.dtype.is_float:
            cmp: Operation = arith.CmpfOp(left.ssa, right.ssa, _FLOAT_CMP[type(op)])
        elif left.dtype.is_integer or left.dtype is boolean:
            pred = _INT_CMP[type(op)]
            if pred not in ("eq", "ne"):
                pred = ("s" if left.dtype.kind == "int" else "u") + pred
            cmp = arith.CmpiOp(left.ssa, right.ssa, pred)
        else:
            raise self.type_error(node, f"values of {left.dtype} cannot be compared")
        return Value(self.emit(cmp).results[0], boolean)

    def expr_BoolOp(self, node: ast.BoolOp) -> Any:
        values = [self.expr(v) for v in node.values]
        if not any(isinstance(v, Value) for v in values):
            truths = [truth(v, n, self) for v, n in zip(values, node.values)]
            return all(truths) if isinstance(node.op, ast.And) else any(truths)
        result = values[0]
        for v in values[1:]:
            for side in (result, v):
                if isinstance(side, Value) and side.dtype is not boolean:
                    raise self.type_error(node, "'and'/'or' combine comparisons (bools)")
            result = self.binop(node, ast.BitAnd() if isinstance(node.op, ast.And) else ast.BitOr(), result, v)
        return result

    def expr_IfExp(self, node: ast.IfExp) -> Any:
        cond = self.expr(node.test)
        if not isinstance(cond, Value):
            return self.expr(node.body) if truth(cond, node.test, self) else self.expr(node.orelse)
        return self.select(node, cond, self.expr(node.body), self.expr(node.orelse))

    def select(self, node: ast.AST, cond: Any, a: Any, b: Any) -> Any:
        if not isinstance(cond, Value):
            return a if truth(cond, node, self) else b
        if cond.dtype is not boolean:
            raise self.type_error(node, "select's condition must be a bool (a comparison)")
        if not isinstance(a, Value) and not isinstance(b, Value):
            a = self.materialize(a, node)
        a, b = self.unify(node, a, b)
        return Value(self.emit(arith.SelectOp(cond.ssa, a.ssa, b.ssa)).results[0], a.dtype)

    def expr_Subscript(self, node: ast.Subscript) -> Any:
        base = self.expr(node.value)
        if not isinstance(base, (TensorRef, TileRef)):
            if isinstance(base, Value):
                raise self.type_error(node, f"a {base.dtype} value cannot be indexed")
            index = self.expr(node.slice)
            try:
                return base[index]
            except Exception as err:
                raise self.type_error(node, f"compile-time indexing failed: {err}") from None
        items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if isinstance(base, TileRef) and any(isinstance(i, ast.Slice) for i in items):
            return self.subtile(node, base, items)
        coords = self.coordinates(node, base)
        element = base.type.dtype
        load = D.LoadOp.create(operands=[base.ssa, *coords], result_types=[mlir_type(element)])
        return Value(self.emit(load).results[0], element)

    def store(self, target: ast.Subscript, value: Any) -> None:
        base = self.expr(target.value)
        if not isinstance(base, (TensorRef, TileRef)):
            raise self.type_error(target, "only tensors and tiles can be assigned element-wise")
        coords = self.coordinates(target, base)
        stored = self.runtime(value, base.type.dtype, target)
        self.emit(D.StoreOp.create(operands=[stored.ssa, base.ssa, *coords]))

    def subtile(self, node: ast.Subscript, base: TileRef, items: list[ast.expr]) -> TileRef:
        """``t[i, :]``: the modes written ``:`` stay open; the others are fixed at compile time."""
        layout = base.type.layout
        if len(items) != layout.rank:
            raise self.type_error(node, f"this tile has rank {layout.rank}; a sub-tile names every mode (use ':' to keep one)")
        crd: list[Any] = []
        for item in items:
            if isinstance(item, ast.Slice):
                if item.lower or item.upper or item.step:
                    raise self.syntax_error(item, "only ':' (a whole mode) is accepted in a sub-tile")
                crd.append(None)
                continue
            c = self.expr(item)
            if not isinstance(c, int) or isinstance(c, bool):
                raise self.type_error(item, "the fixed coordinates of a sub-tile must be compile-time ints")
            self.check_constant_coordinate(item, base, len(crd), len(items), c)
            crd.append(c)
        try:
            if isinstance(layout, ComposedLayout):
                sub: Layout | ComposedLayout = layout(tuple(crd))
            else:
                sub_layout, offset = slice_and_offset(tuple(crd), layout)
                sub = ComposedLayout(Swizzle(0, 0, 0), offset, sub_layout) if offset else sub_layout
        except LayoutError as err:
            raise self.type_error(node, err.reason) from None
        tile = D.TileType.of(base.type.space.data, base.type.dtype, sub)
        op = D.SliceOp.create(operands=[base.ssa], result_types=[tile])
        return TileRef(self.emit(op).results[0], tile, base.partitioned)

    def coordinates(self, node: ast.Subscript, base: TensorRef | TileRef) -> list[SSAValue]:
        index = node.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        if any(isinstance(i, ast.Slice) for i in items):
            raise self.syntax_error(node, "slices of tiles are not supported yet; index one element per mode")
        rank = len(base.type.shape) if isinstance(base, TensorRef) else base.type.layout.rank
        if len(items) not in (rank, 1) or (isinstance(base, TensorRef) and len(items) != rank):
            kind = "tensor" if isinstance(base, TensorRef) else "tile"
            raise self.type_error(node, f"this {kind} has rank {rank}; index it with {rank} coordinate(s)" + ("" if kind == "tensor" else " or one flat index"))
        coords = []
        for mode, item in enumerate(items):
            c = self.expr(item)
            if isinstance(c, Value) and not c.dtype.is_integer:
                raise self.type_error(item, f"coordinates are integers, got {c.dtype}")
            if isinstance(c, Value) and c.dtype != i32:
                raise self.type_error(item, f"coordinates are i32, got {c.dtype}; convert with i32(x)")
            if not isinstance(c, Value):
                if not isinstance(c, int) or isinstance(c, bool):
                    raise self.type_error(item, f"a coordinate must be an integer, got {describe(c)}")
                self.check_constant_coordinate(item, base, mode, len(items), c)
            coords.append(self.materialize(c, item).ssa)
        return coords

    def check_constant_coordinate(self, item: ast.expr, base: TensorRef | TileRef, mode: int, count: int,
                                  c: int) -> None:
        """A compile-time coordinate must lie inside its mode (of a tile, or a tensor's dim known
        at compile time): outside, the access faults in every launch."""
        if isinstance(base, TileRef):
            shape = base.type.layout.shape
            extent, what = (product(shape[mode]), f"mode {mode} of this tile") if count > 1 else \
                (product(shape), "this tile")
        else:
            extent, what = base.type.shape[mode], f"dim {mode} of this tensor"
            if not isinstance(extent, int):  # a size known at launch: only a negative coordinate is out in every launch
                if c < 0:
                    raise self.type_error(item, f"coordinate {c} is negative: {what} ({extent}) starts at 0")
                return
        if not 0 <= c < extent:
            raise self.type_error(item, f"coordinate {c} is outside {what}, which has {extent} element(s) "
                                        f"(0 to {extent - 1})")

    def convert(self, value: Any, dtype: DType, node: ast.AST, explicit: bool = False) -> Any:
        """Convert to `dtype`: compile-time numbers always; runtime values only when `explicit`
        (a dtype call such as f32(x)), except that a value already of `dtype` passes."""
        if isinstance(value, Value):
            if value.dtype == dtype:
                return value
            if not explicit:
                raise self.type_error(node, f"expected {dtype}, got {value.dtype}; convert explicitly, e.g. {dtype}(x)")
            return self.convert_value(node, value, dtype)
        if isinstance(value, bool) and dtype is boolean:
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            if dtype.is_integer:
                if isinstance(value, float) and not explicit:
                    raise self.type_error(node, f"a float constant cannot become {dtype} implicitly")
                if isinstance(value, float) and not math.isfinite(value):
                    raise self.type_error(node, f"{value} is no integer: it has no {dtype} value")
                return int(value)
            if dtype.is_float:
                return float(value)
        raise self.type_error(node, f"cannot use {describe(value)} as {dtype}")

    def convert_value(self, node: ast.AST, v: Value, dtype: DType) -> Value:
        src = v.dtype
        target = mlir_type(dtype)
        if src.is_float and dtype.is_float:
            cls: Any = arith.ExtFOp if dtype.bits > src.bits or (dtype.bits == src.bits) else arith.TruncFOp
            if dtype.bits == src.bits:  # f16 <-> bf16 go through f32
                wide = Value(self.emit(arith.ExtFOp(v.ssa, builtin.f32)).results[0], f32)
                return Value(self.emit(arith.TruncFOp(wide.ssa, target)).results[0], dtype)
            return Value(self.emit(cls(v.ssa, target)).results[0], dtype)
        if src.is_integer and dtype.is_float:
            cls = arith.SIToFPOp if src.kind == "int" else arith.UIToFPOp
            return Value(self.emit(cls(v.ssa, target)).results[0], dtype)
        if src.is_float and dtype.is_integer:
            cls = arith.FPToSIOp if dtype.kind == "int" else arith.FPToUIOp
            return Value(self.emit(cls(v.ssa, target)).results[0], dtype)
        if src.is_integer and dtype.is_integer:
            if dtype.bits == src.bits:
                return Value(v.ssa, dtype)  # same bits, other signedness
            if dtype.bits < src.bits:
                return Value(self.emit(arith.TruncIOp(v.ssa, target)).results[0], dtype)
            cls = arith.ExtSIOp if src.kind == "int" else arith.ExtUIOp
            return Value(self.emit(cls(v.ssa, target)).results[0], dtype)
        raise self.type_error(node, f"no conversion from {src} to {dtype}")

    def runtime(self, value: Any, dtype: DType, node: ast.AST) -> Value:
        """`value` as a runtime value of `dtype`: a runtime value must already have it (or the
        error says how to convert); a compile-time number becomes a constant of `dtype`, refused
        where `dtype` cannot hold it (an integer outside its range, a finite float past its
        largest value)."""
        converted = self.convert(value, dtype, node)
        if isinstance(converted, Value):
            return converted
        if isinstance(converted, bool) or dtype is boolean:
            return self.materialize(converted, node)
        if dtype.is_integer:
            # a signed type also takes the bit patterns of its width written as unsigned (0xFFFFFFFF)
            low, high = (-(1 << (dtype.bits - 1)) if dtype.kind == "int" else 0), 1 << dtype.bits
            if not low <= converted < high:
                raise self.type_error(node, f"{converted} is not a {dtype} value (give {low} to {high - 1})")
        elif dtype.is_float and dtype.minifloat is None:
            largest = _LARGEST.get(dtype.name)
            if largest is not None and math.isfinite(converted) and abs(converted) > largest:
                raise self.type_error(node, f"{converted} is past the largest {dtype} value ({largest:g})")
        else:  # an 8-bit float: constants are f32, converted where they are stored
            return self.materialize(converted, node)
        return self.constant(converted, dtype)

    def materialize(self, value: Any, node: ast.AST) -> Value:
        """A runtime value for `value` (compile-time ints become i32, floats f32, bools bool)."""
        if isinstance(value, Value):
            return value
        if isinstance(value, bool):
            return self.constant(value, boolean)
        if isinstance(value, int):
            if not -(2**31) <= value < 2**32:
                raise self.type_error(node, f"integer constant {value} does not fit in 32 bits")
            return self.constant(value, i32)
        if isinstance(value, float):
            return self.constant(value, f32)
        raise self.type_error(node, f"{describe(value)} is not a runtime value")



_LARGEST = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38}
"""The largest finite value of each float type narrower than Python's (a constant past it would
round to infinity)."""


def _too_large(op: ast.operator, left: Any, right: Any) -> str:
    """Why a compile-time operation would make a constant past the limits (`limits`), found
    before it runs: ``10 ** 10 ** 10`` would take the compiler's time and memory first."""
    ints = all(isinstance(v, int) for v in (left, right))
    if ints and isinstance(op, ast.Pow) and right > 0 and abs(left) > 1 and \
            right * (abs(left).bit_length() - 1) > MAX_CONSTANT_BITS:
        return f"makes an integer of more than {MAX_CONSTANT_BITS} bits, the most a constant may have"
    if ints and isinstance(op, ast.LShift) and left and right > MAX_CONSTANT_BITS:
        return f"makes an integer of more than {MAX_CONSTANT_BITS} bits, the most a constant may have"
    if isinstance(op, ast.Mult):
        for seq, times in ((left, right), (right, left)):
            if isinstance(seq, (str, tuple, list)) and isinstance(times, int) and len(seq) * times > MAX_CONSTANT_LENGTH:
                return f"makes a sequence of more than {MAX_CONSTANT_LENGTH} items, the most a constant may have"
    return ""


def _identity_fold(op: ast.operator, left: Any, right: Any) -> Value | None:
    """x + 0, 0 + x, x - 0, x * 1, 1 * x: the runtime side, without an op (x keeps its type)."""
    def is_(v: Any, k: int) -> bool:
        return not isinstance(v, (Value, bool)) and isinstance(v, (int, float)) and v == k

    if isinstance(op, ast.Add):
        return left if is_(right, 0) else right if is_(left, 0) else None
    if isinstance(op, ast.Sub):
        return left if is_(right, 0) else None
    if isinstance(op, ast.Mult):
        return left if is_(right, 1) else right if is_(left, 1) else None
    return None


def is_static_callable(fn: Any) -> bool:
    """Whether a call of `fn` runs at compile time, as Python (a helper or a closure), rather
    than being built into the kernel: a callable that is no builtin, dtype or tile method."""
    return callable(fn) and not lang.is_builtin(fn) and not isinstance(fn, (DType, BoundMethod))
