"""From a kernel's Python syntax tree to the ``argus`` dialect.

The kernel is never run. Expressions whose inputs are all known at compile time (literals,
constexpr parameters, layouts, module-level names) are evaluated here and folded; everything
else becomes IR. A Python name is rebound freely in straight-line code (including unrolled
``static_range`` bodies); a name assigned inside a runtime ``if`` or ``for`` becomes a
per-thread variable (``argus.var``), which is how the values of both paths meet.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import operator
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects import arith, builtin, math, scf
from xdsl.ir import Block, Operation, Region, SSAValue

from argus.layout import ComposedLayout, Layout, LayoutError, Swizzle, compact_row_major, product, slice_and_offset

from . import dialect as D
from . import lang
from .atoms import MMAAtom
from .dtypes import DType, boolean, f32, i32
from .errors import ArgusSyntaxError, ArgusTypeError, SourceLocation
from .types import mlir_type

# ---- values the front-end juggles ----------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """A runtime scalar: one per thread."""

    ssa: SSAValue
    dtype: DType


@dataclass(frozen=True)
class TensorRef:
    """A global tensor parameter."""

    ssa: SSAValue
    type: D.TensorType
    name: str


@dataclass(frozen=True)
class TileRef:
    """A tile: shared or local memory (or a view of it) under a layout."""

    ssa: SSAValue
    type: D.TileType


@dataclass(frozen=True)
class Slot:
    """A per-thread variable behind a Python name assigned under runtime control flow."""

    ssa: SSAValue
    dtype: DType


@dataclass(frozen=True)
class KernelSource:
    """What the front-end needs of a decorated Python function."""

    name: str
    tree: ast.FunctionDef
    file: str
    line_offset: int
    globals: dict[str, Any]
    block: tuple[Any, ...]
    warp_size: int

    @classmethod
    def of(cls, fn: Callable[..., Any], block: tuple[Any, ...], warp_size: int = 32) -> KernelSource:
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as err:
            raise ArgusSyntaxError(f"cannot read the source of {fn.__name__}: {err}") from None
        source = textwrap.dedent("".join(lines))
        tree = ast.parse(source)
        fdef = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        if isinstance(fdef, ast.AsyncFunctionDef):
            raise ArgusSyntaxError("a kernel cannot be async", SourceLocation(inspect.getfile(fn), first, 1))
        globals_ = dict(fn.__globals__)
        if fn.__closure__:
            globals_.update(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
        return cls(fn.__name__, fdef, inspect.getfile(fn), first - 1, globals_, block, warp_size)


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
_FLOAT_CMP = {ast.Lt: "olt", ast.LtE: "ole", ast.Gt: "ogt", ast.GtE: "oge", ast.Eq: "oeq", ast.NotEq: "une"}
_OP_SYMBOL = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%", ast.Div: "/",
    ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.Pow: "**",
}


#: Most iterations a static_range may unroll into.
MAX_UNROLL = 4096
#: Largest shared tile (bytes per block) and local tile (bytes per thread) the language accepts;
#: each backend checks its own, smaller, hardware limits.
MAX_SHARED_BYTES = 256 * 1024
MAX_LOCAL_BYTES = 16 * 1024


class FrontEnd:
    """Builds one ``argus.kernel`` op from a `KernelSource` and its constexpr values."""

    def __init__(self, source: KernelSource, constants: dict[str, Any]) -> None:
        self.src = source
        self.warp_size = source.warp_size
        self.constants = dict(constants)
        self.env: dict[str, Any] = {}
        self.block: Block = Block()
        self.entry: Block = self.block
        self.node: ast.AST | None = None
        self.locations: dict[Operation, SourceLocation] = {}
        self.tagged = False
        """Where each op came from: the interpreter names the line of a fault with it."""

    # ---- errors ----------------------------------------------------------------------
    def loc(self, node: ast.AST) -> SourceLocation:
        return SourceLocation.of(node, self.src.file, self.src.line_offset)

    def syntax_error(self, node: ast.AST, message: str) -> ArgusSyntaxError:
        return ArgusSyntaxError(message, self.loc(node), _snippet(node))

    def type_error(self, node: ast.AST, message: str) -> ArgusTypeError:
        return ArgusTypeError(message, self.loc(node), _snippet(node))

    # ---- entry point -----------------------------------------------------------------
    def build(self) -> D.KernelOp:
        fdef = self.src.tree
        if fdef.args.vararg or fdef.args.kwarg or fdef.args.kwonlyargs or fdef.args.posonlyargs:
            raise self.syntax_error(fdef, "kernel parameters must be plain positional parameters")
        if fdef.args.defaults:
            raise self.syntax_error(fdef.args.defaults[0], "kernel parameters cannot have default values")
        runtime_names: list[str] = []
        for arg in fdef.args.args:
            kind = self.parameter(arg)
            if kind is not None:
                runtime_names.append(arg.arg)
                self.entry.insert_arg(kind, len(self.entry.args))
        for name, arg in zip(runtime_names, self.entry.args):
            arg.name_hint = name
            t = arg.type
            if isinstance(t, D.TensorType):
                self.env[name] = TensorRef(arg, t, name)
            else:
                self.env[name] = Value(arg, self.param_dtypes[name])
        block = self.block_dims()
        for stmt in fdef.body:
            self.statement(stmt)
        return D.KernelOp.create(
            properties={
                "sym_name": builtin.StringAttr(self.src.name),
                "block": builtin.ArrayAttr([builtin.IntAttr(d) for d in block]),
                "warp_size": builtin.IntAttr(self.warp_size),
                "arg_names": builtin.ArrayAttr([builtin.StringAttr(n) for n in runtime_names]),
            },
            regions=[Region(self.entry)],
        )

    param_dtypes: dict[str, DType]

    def parameter(self, arg: ast.arg) -> Any:
        """Bind one parameter; returns the MLIR type of a runtime parameter, None for constexpr."""
        if not hasattr(self, "param_dtypes"):
            self.param_dtypes = {}
        ann = arg.annotation
        if ann is None:
            raise self.type_error(arg, f"parameter {arg.arg!r} needs an annotation: Tensor[dtype, dims...], constexpr, or a scalar dtype")
        target = self.static_annotation(ann)
        if target is lang.constexpr:
            if arg.arg not in self.constants:
                raise self.type_error(arg, f"constexpr parameter {arg.arg!r} was not given a value at launch or compile time")
            return None
        if target == "tensor":
            assert isinstance(ann, ast.Subscript)
            return self.tensor_type(arg, ann)
        dtype = target if isinstance(target, DType) else {int: i32, float: f32}.get(target)  # type: ignore[call-overload]
        if dtype is None or dtype.kind in ("bits", "bool"):
            raise self.type_error(ann, f"unsupported annotation for {arg.arg!r}; use Tensor[dtype, dims...], constexpr, int, float or a scalar dtype such as i32 or f32")
        self.param_dtypes[arg.arg] = dtype
        return mlir_type(dtype)

    def static_annotation(self, ann: ast.expr) -> Any:
        if isinstance(ann, ast.Subscript) and self.resolve_global(ann.value) is lang.Tensor:
            return "tensor"
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            try:
                return self.static_annotation(ast.parse(ann.value, mode="eval").body)
            except SyntaxError:
                raise self.syntax_error(ann, "unreadable string annotation") from None
        value = self.resolve_global(ann)
        if value is None:
            raise self.type_error(ann, "unknown annotation; use Tensor[dtype, dims...], constexpr, int, float or a dtype")
        return value

    def resolve_global(self, node: ast.expr) -> Any:
        """A name or dotted attribute looked up in the kernel's module (None if not there)."""
        if isinstance(node, ast.Name):
            if node.id in self.src.globals:
                return self.src.globals[node.id]
            return getattr(builtins, node.id, None)
        if isinstance(node, ast.Attribute):
            base = self.resolve_global(node.value)
            return getattr(base, node.attr, None) if base is not None else None
        return None

    def tensor_type(self, arg: ast.arg, ann: ast.Subscript) -> D.TensorType:
        items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        dtype = self.resolve_global(items[0])
        if not isinstance(dtype, DType):
            raise self.type_error(items[0], "the first entry of Tensor[...] must be a dtype such as f32 or bf16")
        if dtype.kind == "bool":
            raise self.type_error(items[0], "tensors of bool are not supported; use u8")
        dims: list[int | str] = []
        for item in items[1:]:
            name = item.value if isinstance(item, ast.Constant) and isinstance(item.value, str) else item.id if isinstance(item, ast.Name) else None
            if isinstance(item, ast.Constant) and isinstance(item.value, int) and not isinstance(item.value, bool):
                dims.append(item.value)
            elif name is not None and isinstance(self.constants.get(name), int):
                dims.append(self.constants[name])
            elif name is not None and name.isidentifier():
                dims.append(name)
            else:
                raise self.type_error(item, "a tensor dim is an int, a constexpr name, or a name for a size known at launch")
        if not dims:
            raise self.type_error(ann, "a tensor needs at least one dim: Tensor[dtype, dim0, ...]")
        return D.TensorType.of(dtype, dims)

    def block_dims(self) -> tuple[int, ...]:
        dims = []
        for d in self.src.block:
            value = self.constants.get(d) if isinstance(d, str) else d
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ArgusTypeError(
                    f"block dims must be positive ints or names of constexpr parameters, got {d!r}",
                    SourceLocation(self.src.file, self.src.line_offset + self.src.tree.lineno, 1),
                )
            dims.append(value)
        if not 1 <= len(dims) <= 3:
            raise ArgusTypeError("a block has 1 to 3 dims", SourceLocation(self.src.file, self.src.line_offset + self.src.tree.lineno, 1))
        return tuple(dims)

    # ---- emission helpers --------------------------------------------------------------
    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        if self.node is not None:
            self.locations[op] = self.loc(self.node)
        return op

    def constant(self, value: Any, dtype: DType) -> Value:
        if dtype.kind == "float":
            attr: Any = builtin.FloatAttr(float(value), mlir_type(dtype))
        elif dtype is boolean:
            attr = builtin.IntegerAttr(int(bool(value)), builtin.i1)
        else:
            attr = builtin.IntegerAttr(int(value), mlir_type(dtype))
        return Value(self.emit(arith.ConstantOp(attr)).results[0], dtype)

    @contextmanager
    def into(self, block: Block) -> Iterator[None]:
        saved, self.block = self.block, block
        try:
            yield
        finally:
            self.block = saved

    # ---- statements ------------------------------------------------------------------
    def statement(self, node: ast.stmt) -> None:
        method = getattr(self, f"stmt_{type(node).__name__}", None)
        if method is None:
            raise self.syntax_error(node, f"'{type(node).__name__}' statements are not part of the Argus language")
        outer, self.node = self.node, node
        try:
            method(node)
        finally:
            self.node = outer

    def stmt_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.expr(node.value)

    def stmt_Pass(self, node: ast.Pass) -> None:
        pass

    def stmt_Return(self, node: ast.Return) -> None:
        if node.value is not None:
            raise self.syntax_error(node, "a kernel returns nothing; write results to a tensor")
        raise self.syntax_error(node, "'return' is not supported; guard the rest of the kernel with 'if' instead")

    def stmt_Assign(self, node: ast.Assign) -> None:
        value = self.expr(node.value)
        for target in node.targets:
            self.assign(target, value, node.value)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is None:
            raise self.syntax_error(node, "a declaration needs a value: x: f32 = 0.0")
        dtype = self.resolve_global(node.annotation)
        if not isinstance(dtype, DType):
            raise self.type_error(node.annotation, "annotate a local with a dtype, e.g. x: f32 = 0.0")
        self.assign(node.target, self.convert(self.expr(node.value), dtype, node.value), node.value)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Subscript):
            current = self.expr(node.target)
        elif isinstance(node.target, ast.Name):
            current = self.lookup(node.target)
        else:
            raise self.syntax_error(node.target, "augmented assignment to this target is not supported")
        value = self.binop(node, node.op, current, self.expr(node.value))
        self.assign(node.target, value, node.value)

    def assign(self, target: ast.expr, value: Any, value_node: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.bind(target, value)
        elif isinstance(target, ast.Tuple):
            if not isinstance(value, tuple) or len(value) != len(target.elts):
                raise self.type_error(target, "unpacking needs a tuple of the same length on the right")
            for t, v in zip(target.elts, value):
                self.assign(t, v, value_node)
        elif isinstance(target, ast.Subscript):
            self.store(target, value)
        else:
            raise self.syntax_error(target, "assign to a name, a tuple of names, or an element t[...]")

    def bind(self, target: ast.Name, value: Any) -> None:
        current = self.env.get(target.id)
        if isinstance(current, _PendingSlot):
            current = self.env[target.id] = self.new_slot(self.runtime_dtype(value, target))
        if isinstance(current, Slot):
            stored = self.convert(value, current.dtype, target)
            self.emit(D.VarStoreOp.create(operands=[self.materialize(stored, target).ssa, current.ssa]))
            return
        self.env[target.id] = value

    def stmt_If(self, node: ast.If) -> None:
        cond = self.expr(node.test)
        if not isinstance(cond, Value):
            chosen = node.body if _truth(cond, node.test, self) else node.orelse
            for stmt in chosen:
                self.statement(stmt)
            return
        if cond.dtype is not boolean:
            raise self.type_error(node.test, f"an 'if' condition must be a comparison (bool), got {cond.dtype}")
        self.make_slots(node.body + node.orelse)
        then_block, else_block = Block(), Block()
        for block, body in ((then_block, node.body), (else_block, node.orelse)):
            with self.into(block):
                for stmt in body:
                    self.statement(stmt)
                self.emit(scf.YieldOp())
        self.emit(scf.IfOp(cond.ssa, [], Region(then_block), Region(else_block)))

    def stmt_For(self, node: ast.For) -> None:
        if node.orelse:
            raise self.syntax_error(node, "'for ... else' is not supported")
        if not isinstance(node.iter, ast.Call):
            raise self.syntax_error(node.iter, "loop over range(...) (runtime) or static_range(...) (unrolled)")
        fn = self.resolve_callee(node.iter.func)
        if fn is lang.static_range:
            self.static_for(node)
        elif fn is builtins.range:
            self.runtime_for(node)
        else:
            raise self.syntax_error(node.iter, "loop over range(...) (runtime) or static_range(...) (unrolled)")

    def static_for(self, node: ast.For) -> None:
        bounds = [self.expr(a) for a in node.iter.args]  # type: ignore[attr-defined]
        if any(isinstance(b, Value) for b in bounds) or not all(isinstance(b, int) for b in bounds):
            raise self.type_error(node.iter, "static_range bounds must be compile-time ints")
        if not 1 <= len(bounds) <= 3:
            raise self.type_error(node.iter, "static_range takes 1 to 3 arguments")
        if not isinstance(node.target, ast.Name):
            raise self.syntax_error(node.target, "the loop variable must be a name")
        if len(range(*bounds)) > MAX_UNROLL:
            raise self.type_error(node.iter, f"static_range of {len(range(*bounds))} iterations exceeds {MAX_UNROLL}; use range(...) for long loops")
        for i in range(*bounds):
            self.env[node.target.id] = i
            for stmt in node.body:
                self.statement(stmt)

    def runtime_for(self, node: ast.For) -> None:
        call: ast.Call = node.iter  # type: ignore[assignment]
        if not 1 <= len(call.args) <= 3 or call.keywords:
            raise self.type_error(call, "range takes 1 to 3 positional arguments")
        args = [self.materialize(self.convert(self.expr(a), i32, a), a) for a in call.args]
        start, stop, step = (
            (self.constant(0, i32), args[0], self.constant(1, i32)) if len(args) == 1
            else (args[0], args[1], self.constant(1, i32)) if len(args) == 2
            else tuple(args)
        )
        if len(args) == 3 and not (isinstance(self.static_value(call.args[2]), int) and self.static_value(call.args[2]) > 0):
            raise self.type_error(call.args[2], "a runtime loop's step must be a positive compile-time int")
        if not isinstance(node.target, ast.Name):
            raise self.syntax_error(node.target, "the loop variable must be a name")
        self.make_slots(node.body)
        body = Block(arg_types=[builtin.i32])
        body.args[0].name_hint = node.target.id
        saved = self.env.get(node.target.id)
        with self.into(body):
            self.env[node.target.id] = Value(body.args[0], i32)
            for stmt in node.body:
                self.statement(stmt)
            self.emit(scf.YieldOp())
        if saved is None:
            self.env.pop(node.target.id, None)
        else:
            self.env[node.target.id] = saved
        self.emit(scf.ForOp(start.ssa, stop.ssa, step.ssa, [], Region(body)))

    def static_value(self, node: ast.expr) -> Any:
        try:
            return self.expr(node)
        except (ArgusSyntaxError, ArgusTypeError):
            return None

    def make_slots(self, body: list[ast.stmt]) -> None:
        """Turn the names assigned inside a runtime region into per-thread variables."""
        for name, node in _assigned_names(body):
            current = self.env.get(name)
            if isinstance(current, (Slot, _PendingSlot)):
                continue
            if current is None:
                if name in self.constants:
                    raise self.type_error(node, f"{name!r} is a constexpr and cannot be reassigned at run time")
                self.env[name] = _PendingSlot(name)
                continue
            slot = self.new_slot(self.runtime_dtype(current, node))
            with self.into(self.block):
                self.emit(D.VarStoreOp.create(operands=[self.materialize(current, node).ssa, slot.ssa]))
            self.env[name] = slot

    def runtime_dtype(self, value: Any, node: ast.AST) -> DType:
        """The type a per-thread variable takes from its first value."""
        if isinstance(value, Value):
            return value.dtype
        if isinstance(value, bool):
            return boolean
        if isinstance(value, int):
            return i32
        if isinstance(value, float):
            return f32
        raise self.type_error(node, f"only scalars can be reassigned inside runtime control flow, not {_describe(value)}")

    def new_slot(self, dtype: DType) -> Slot:
        op = D.VarOp.create(result_types=[D.VarType.of(dtype)])
        if self.entry.first_op is None:
            self.entry.add_op(op)
        else:
            self.entry.insert_op_before(op, self.entry.first_op)
        return Slot(op.results[0], dtype)

    def stmt_Assert(self, node: ast.Assert) -> None:
        """``assert tag(a[...]) == tag(b[...])`` (or ``!=``), with an optional message."""
        test = node.test
        shape = "write a tag assertion as: assert tag(a[...]) == tag(b[...])  (or !=)"
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
            raise self.syntax_error(node, f"only tag assertions are accepted; {shape}")
        sides = [self.tagged_operand(side, shape) for side in (test.left, test.comparators[0])]
        if not self.tagged:
            raise self.type_error(node, "this kernel attaches no tag function before the assertion; use tag(t, lambda ...: ...) first")
        message = self.expr(node.msg) if node.msg is not None else ""
        if not isinstance(message, str):
            raise self.type_error(node.msg, "an assertion's message must be a string literal")
        kind = "eq" if isinstance(test.ops[0], ast.Eq) else "ne"
        self.emit(D.TagAssertOp.create(
            operands=[sides[0].ssa, sides[1].ssa],
            properties={"kind": builtin.StringAttr(kind), "message": builtin.StringAttr(message)},
        ))

    def tagged_operand(self, node: ast.expr, shape: str) -> TensorRef | TileRef:
        if not (isinstance(node, ast.Call) and self.resolve_callee(node.func) is lang.tag and len(node.args) == 1):
            raise self.syntax_error(node, shape)
        arg = node.args[0]
        if not (isinstance(arg, ast.Subscript) and isinstance(arg.slice, ast.Constant) and arg.slice.value is Ellipsis):
            raise self.syntax_error(arg, f"name all elements with [...]: {shape}")
        base = self.expr(arg.value)
        if not isinstance(base, (TensorRef, TileRef)):
            raise self.type_error(arg.value, f"tags belong to tensors and tiles, not {_describe(base)}")
        return base

    def attach_tag(self, node: ast.Call, args: list[ast.expr]) -> None:
        if len(args) != 2 or not isinstance(args[1], ast.Lambda):
            raise self.syntax_error(node, "tag(t, lambda i, j, ...: (tag components)) with one parameter per mode of t")
        target = self.expr(args[0])
        if not isinstance(target, (TensorRef, TileRef)):
            raise self.type_error(args[0], f"tags belong to tensors and tiles, not {_describe(target)}")
        fn = args[1]
        rank = len(target.type.shape) if isinstance(target, TensorRef) else target.type.layout.rank
        params = [a.arg for a in fn.args.args]
        if len(params) != rank or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
            raise self.type_error(fn, f"the tag function takes one coordinate per mode: {rank} parameter(s)")
        body = Block(arg_types=[builtin.i32] * rank)
        saved = {p: self.env.get(p) for p in params}
        with self.into(body):
            for p, arg in zip(params, body.args):
                arg.name_hint = p
                self.env[p] = Value(arg, i32)
            result = self.expr(fn.body)
            parts = result if isinstance(result, tuple) else (result,)
            values = []
            for part in parts:
                v = self.materialize(part, fn.body)
                if not v.dtype.is_integer:
                    raise self.type_error(fn.body, f"tag components are integers, got {v.dtype}")
                values.append(v.ssa)
            self.emit(D.YieldTagOp.create(operands=values))
        for p, old in saved.items():
            if old is None:
                self.env.pop(p, None)
            else:
                self.env[p] = old
        self.emit(D.TagOp.create(operands=[target.ssa], regions=[Region(body)]))
        self.tagged = True

    # ---- expressions -----------------------------------------------------------------
    def expr(self, node: ast.expr) -> Any:
        method = getattr(self, f"expr_{type(node).__name__}", None)
        if method is None:
            raise self.syntax_error(node, f"'{type(node).__name__}' expressions are not part of the Argus language")
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
            if isinstance(value, _PendingSlot):
                raise self.type_error(node, f"{name!r} is used before it is assigned on every path")
            if isinstance(value, Slot):
                load = self.emit(D.VarLoadOp.create(operands=[value.ssa], result_types=[mlir_type(value.dtype)]))
                return Value(load.results[0], value.dtype)
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
                return _BoundMethod(base, "view")
            if node.attr == "shape" and isinstance(base, TensorRef):
                return tuple(self.tensor_dim(base, i, node) for i in range(len(base.type.shape)))
            raise self.type_error(node, f"tiles have .view(...) (and tensors .shape); not .{node.attr}")
        if isinstance(base, Value):
            raise self.type_error(node, f"a {base.dtype} value has no attribute {node.attr!r}")
        try:
            return getattr(base, node.attr)
        except AttributeError:
            raise self.type_error(node, f"{_describe(base)} has no attribute {node.attr!r}") from None

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
            try:
                return fn(left, right)
            except Exception as err:  # user arithmetic on compile-time values
                raise self.type_error(node, f"compile-time {_OP_SYMBOL.get(type(op), '?')} failed: {err}") from None
        folded = _identity_fold(op, left, right)
        if folded is not None:
            return folded
        left, right = self.unify(node, left, right)
        return self.arith(node, op, left, right)

    def unify(self, node: ast.AST, left: Any, right: Any) -> tuple[Value, Value]:
        """Bring two operands to one dtype: a compile-time number takes the runtime side's type."""
        if not isinstance(left, Value):
            left = self.materialize(self.convert(left, right.dtype, node), node)
        if not isinstance(right, Value):
            right = self.materialize(self.convert(right, left.dtype, node), node)
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

    def expr_UnaryOp(self, node: ast.UnaryOp) -> Any:
        operand = self.expr(node.operand)
        if not isinstance(operand, Value):
            fn = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}[type(node.op)]
            return fn(operand)
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
            return fn(left, right)
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
            return all(values) if isinstance(node.op, ast.And) else any(values)
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
            return self.expr(node.body) if _truth(cond, node.test, self) else self.expr(node.orelse)
        return self.select(node, cond, self.expr(node.body), self.expr(node.orelse))

    def select(self, node: ast.AST, cond: Any, a: Any, b: Any) -> Any:
        if not isinstance(cond, Value):
            return a if cond else b
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
            try:
                return base[self.expr(node.slice)]
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
        stored = self.materialize(self.convert(value, base.type.dtype, target), target)
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
        return TileRef(self.emit(op).results[0], tile)

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
        for item in items:
            c = self.expr(item)
            if isinstance(c, Value) and not c.dtype.is_integer:
                raise self.type_error(item, f"coordinates are integers, got {c.dtype}")
            if isinstance(c, Value) and c.dtype != i32:
                raise self.type_error(item, f"coordinates are i32, got {c.dtype}; convert with i32(x)")
            if not isinstance(c, Value) and (not isinstance(c, int) or isinstance(c, bool)):
                raise self.type_error(item, f"a coordinate must be an integer, got {_describe(c)}")
            coords.append(self.materialize(c, item).ssa)
        return coords

    def expr_Call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        if node.keywords and not _is_static_callable(fn):
            raise self.syntax_error(node, "keyword arguments are only accepted by compile-time functions")
        if isinstance(fn, _BoundMethod):
            return self.view(node, fn.base)
        if isinstance(fn, lang.Builtin):
            return self.builtin_call(node, fn)
        if isinstance(fn, DType):
            if len(node.args) != 1:
                raise self.type_error(node, f"{fn}(x) converts one value")
            return self.convert(self.expr(node.args[0]), fn, node, explicit=True)
        if isinstance(fn, (Layout, ComposedLayout, Swizzle)):
            args = [self.expr(a) for a in node.args]
            if any(isinstance(a, Value) for a in args):
                return self.apply_layout(node, fn, args)
        if fn in (builtins.min, builtins.max):
            return self.minmax(node, fn is builtins.min)
        if fn is builtins.range:
            raise self.syntax_error(node, "range(...) is only valid as a for loop's iterable")
        if _is_static_callable(fn):
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
            if any(isinstance(v, (Value, TileRef, TensorRef)) for v in [*args, *kwargs.values()]):
                raise self.type_error(node, f"{_describe(fn)} runs at compile time; its arguments must be compile-time values")
            try:
                return fn(*args, **kwargs)
            except (LayoutError, ValueError, TypeError, ArithmeticError) as err:
                raise self.type_error(node, f"{_describe(fn)} failed at compile time: {err}") from None
        raise self.type_error(node, f"{_describe(fn)} is not callable in a kernel")

    def resolve_callee(self, node: ast.expr) -> Any:
        try:
            return self.expr(node)
        except (ArgusSyntaxError, ArgusTypeError):
            return None

    def atomic(self, node: ast.Call, kind: str) -> Value:
        """``atomic_add(t[i, j], v)``: returns the element's value before the update."""
        if len(node.args) != 2 or not isinstance(node.args[0], ast.Subscript):
            raise self.type_error(node, f"atomic_{kind}(t[coords...], value)")
        target_node = node.args[0]
        base = self.expr(target_node.value)
        if not isinstance(base, (TensorRef, TileRef)) or (isinstance(base, TileRef) and base.type.space.data != "shared"):
            raise self.type_error(target_node, "atomics update a global tensor or a shared tile")
        dtype = base.type.dtype
        if kind in ("add", "max", "min") and not (dtype.is_integer or dtype.is_float):
            raise self.type_error(node, f"atomic_{kind} needs numbers, not {dtype}")
        coords = self.coordinates(target_node, base)
        value = self.materialize(self.convert(self.expr(node.args[1]), dtype, node.args[1]), node.args[1])
        op = D.AtomicOp.create(operands=[value.ssa, base.ssa, *coords], properties={"kind": builtin.StringAttr(kind)},
                               result_types=[mlir_type(dtype)])
        return Value(self.emit(op).results[0], dtype)

    def builtin_call(self, node: ast.Call, fn: lang.Builtin) -> Any:
        if fn.name.startswith("atomic_"):
            return self.atomic(node, fn.name[len("atomic_"):])
        if fn is lang.tag:
            if len(node.args) == 1:
                raise self.syntax_error(node, "tag(t[...]) only appears in an assertion: assert tag(a[...]) == tag(b[...])")
            self.attach_tag(node, node.args)
            return None
        args = [self.expr(a) for a in node.args]
        name = fn.name
        if name == "syncthreads":
            if args:
                raise self.type_error(node, "syncthreads() takes no arguments")
            self.emit(D.SyncThreadsOp())
            return None
        if name in ("make_shared", "make_local"):
            if len(args) != 2 or not isinstance(args[1], DType):
                raise self.type_error(node, f"{name}(layout_or_shape, dtype)")
            layout = self.static_layout(node.args[0], args[0])
            dtype: DType = args[1]
            if dtype.kind == "bool":
                raise self.type_error(node.args[1], "tiles of bool are not supported; use u8")
            space = "shared" if name == "make_shared" else "local"
            limit = MAX_SHARED_BYTES if space == "shared" else MAX_LOCAL_BYTES
            inner = layout.inner if isinstance(layout, ComposedLayout) else layout
            if inner.size() * dtype.nbytes > limit or _footprint_bytes(layout, dtype) > limit:
                raise self.type_error(
                    node, f"a {space} tile of {inner.size()} {dtype} elements spans more than the {limit} bytes "
                    f"a {'block' if space == 'shared' else 'thread'} may hold",
                )
            if space == "local" and isinstance(layout, ComposedLayout):
                raise self.type_error(node.args[0], "registers are not swizzled; give make_local a shape or a Layout")
            op_class = D.MakeSharedOp if space == "shared" else D.MakeLocalOp
            return TileRef(self.emit(op_class(D.TileType.of(space, dtype, layout))).results[0], D.TileType.of(space, dtype, layout))
        if name == "static_range":
            raise self.syntax_error(node, "static_range(...) is only valid as a for loop's iterable")
        if name == "select":
            if len(args) != 3:
                raise self.type_error(node, "select(cond, a, b)")
            return self.select(node, *args)
        if name in ("exp2", "log2", "rsqrt", "sqrt"):
            if len(args) != 1:
                raise self.type_error(node, f"{name}(x)")
            x = args[0]
            if not isinstance(x, Value):
                raise self.type_error(node, f"{name} of a compile-time value: compute it in Python before the kernel")
            if not x.dtype.is_float:
                raise self.type_error(node, f"{name} takes a float, got {x.dtype}")
            cls = {"exp2": math.Exp2Op, "log2": math.Log2Op, "rsqrt": math.RsqrtOp, "sqrt": math.SqrtOp}[name]
            return Value(self.emit(cls(x.ssa)).results[0], x.dtype)
        if name == "fma":
            if len(args) != 3:
                raise self.type_error(node, "fma(a, b, c)")
            typed = [a for a in args if isinstance(a, Value)]
            if not typed or not typed[0].dtype.is_float:
                raise self.type_error(node, "fma takes floats, at least one of them a runtime value")
            dt = typed[0].dtype
            a, b, c = (self.materialize(self.convert(v, dt, node), node) for v in args)
            return Value(self.emit(math.FmaOp(a.ssa, b.ssa, c.ssa)).results[0], dt)
        if name == "matmul":
            return self.matmul(node, args)
        if name == "bitcast":
            if len(args) != 2 or not isinstance(args[0], Value) or not isinstance(args[1], DType):
                raise self.type_error(node, "bitcast(value, dtype) of a runtime value")
            if args[1].bits != args[0].dtype.bits or args[1].kind == "bool":
                raise self.type_error(node, f"bitcast keeps the size: {args[0].dtype} has {args[0].dtype.bits} bits, {args[1]} has {args[1].bits}")
            op = D.BitcastOp.create(operands=[args[0].ssa], result_types=[mlir_type(args[1])])
            return Value(self.emit(op).results[0], args[1])
        if name == "concat":
            if len(args) < 2 or not all(isinstance(a, Value) and a.dtype.kind != "bool" for a in args):
                raise self.type_error(node, "concat(a, b, ...) of two or more runtime values")
            total = sum(a.dtype.bits for a in args)
            wide = _bits_type(total)
            if wide is None:
                raise self.type_error(node, f"concat makes {total} bits; results of 16, 32, 64, 128 or 256 bits exist")
            op = D.ConcatOp.create(operands=[a.ssa for a in args], result_types=[mlir_type(wide)])
            return Value(self.emit(op).results[0], wide)
        if name in ("lo", "hi"):
            if len(args) != 1 or not isinstance(args[0], Value) or args[0].dtype.kind == "bool":
                raise self.type_error(node, f"{name}(value) of a runtime value")
            half = _bits_type(args[0].dtype.bits // 2)
            if half is None or args[0].dtype.bits < 16:
                raise self.type_error(node, f"{args[0].dtype} has no {name} half")
            byte = 0 if name == "lo" else args[0].dtype.nbytes // 2
            op = D.ExtractOp.create(operands=[args[0].ssa], properties={"byte": builtin.IntAttr(byte)},
                                    result_types=[mlir_type(half)])
            return Value(self.emit(op).results[0], half)
        if name == "reset_tags":
            if len(args) != 1 or not isinstance(args[0], TileRef) or args[0].type.space.data != "shared":
                raise self.type_error(node, "reset_tags(t) takes one shared tile")
            self.emit(D.ResetTagsOp.create(operands=[args[0].ssa]))
            return None
        if name in ("lane_id", "warp_id"):
            if args:
                raise self.type_error(node, f"{name}() takes no arguments")
            op_class = D.LaneIdOp if name == "lane_id" else D.WarpIdOp
            return Value(self.emit(op_class()).results[0], i32)
        if name.startswith("shfl_"):
            if len(args) != 2 or not isinstance(args[0], Value):
                raise self.type_error(node, f"{name}(value, lane_or_offset) with a runtime value")
            return self.shuffle(node, args[0], args[1], name[len("shfl_"):])
        if name in ("warp_sum", "warp_max", "warp_min"):
            if len(args) != 1 or not isinstance(args[0], Value):
                raise self.type_error(node, f"{name}(value) with a runtime value")
            return self.warp_reduce(node, args[0], name)
        raise self.syntax_error(node, f"{name}() is not available yet")

    def matmul(self, node: ast.Call, args: list[Any]) -> None:
        if len(args) != 4 or not isinstance(args[3], MMAAtom):
            raise self.type_error(node, "matmul(a, b, acc, atom): three fragments (local tiles) and an MMAAtom")
        atom: MMAAtom = args[3]
        for label, frag, dtype in (("a", args[0], atom.a_dtype), ("b", args[1], atom.b_dtype), ("c", args[2], atom.c_dtype)):
            if not isinstance(frag, TileRef) or frag.type.space.data != "local":
                raise self.type_error(node, f"matmul's {label} must be a local tile (registers), got {_describe(frag)}")
            if frag.type.dtype != dtype:
                raise self.type_error(node, f"atom {atom.name} takes {label} as {dtype}, got {frag.type.dtype}")
            want = atom.values(label)
            if frag.type.layout.size() != want:
                raise self.type_error(node, f"atom {atom.name} gives each thread {want} {label} values; this fragment holds {frag.type.layout.size()}")
        props = builtin.DictionaryAttr({k: builtin.StringAttr(v) for k, v in atom.as_properties().items()})
        self.emit(D.MmaOp.create(operands=[args[0].ssa, args[1].ssa, args[2].ssa], properties={"atom": props}))

    def shuffle(self, node: ast.AST, value: Value, lane: Any, mode: str) -> Value:
        if value.dtype.kind in ("bits", "bool"):
            raise self.type_error(node, f"shuffles move numbers, not {value.dtype}")
        lane_value = self.materialize(self.convert(lane, i32, node), node)
        op = D.ShuffleOp.create(
            operands=[value.ssa, lane_value.ssa], properties={"mode": builtin.StringAttr(mode)},
            result_types=[mlir_type(value.dtype)],
        )
        return Value(self.emit(op).results[0], value.dtype)

    def warp_reduce(self, node: ast.AST, value: Value, name: str) -> Value:
        """A butterfly: log2(warp) steps of shfl_xor, each combining a lane with its partner."""
        result = value
        step = self.warp_size // 2
        while step:
            other = self.shuffle(node, result, step, "xor")
            if name == "warp_sum":
                result = self.arith(node, ast.Add(), result, other)
            else:
                result = self.minmax_values(node, result, other, name == "warp_min")
            step //= 2
        return result

    def apply_layout(self, node: ast.AST, layout: Any, args: list[Any]) -> Any:
        """A compile-time layout evaluated at runtime coordinates: index arithmetic in the IR."""
        if isinstance(layout, Swizzle):
            (x,) = args
            picked = self.binop(node, ast.BitAnd(), x, layout.source_mask)
            moved = (self.binop(node, ast.RShift(), picked, layout.shift) if layout.shift >= 0
                     else self.binop(node, ast.LShift(), picked, -layout.shift))
            return self.binop(node, ast.BitXor(), x, moved)
        if isinstance(layout, ComposedLayout):
            inner = self.apply_layout(node, layout.inner, args)
            return self.apply_layout(node, layout.outer, [self.binop(node, ast.Add(), inner, layout.offset)])
        crd = args[0] if len(args) == 1 else tuple(args)
        if isinstance(crd, tuple) and len(crd) != layout.rank:
            raise self.type_error(node, f"layout {layout} has rank {layout.rank}; give {layout.rank} coordinates or one index")

        def offset(c: Any, shape: Any, stride: Any) -> Any:
            if isinstance(c, tuple):
                total: Any = 0
                for ci, s, d in zip(c, shape, stride):
                    total = self.binop(node, ast.Add(), total, offset(ci, s, d))
                return total
            if isinstance(shape, tuple):
                total = 0
                for i, (s, d) in enumerate(zip(shape, stride)):
                    if i == len(shape) - 1:
                        part = offset(c, s, d)
                    else:
                        n = product(s)
                        part = offset(self.binop(node, ast.Mod(), c, n), s, d)
                        c = self.binop(node, ast.FloorDiv(), c, n)
                    total = self.binop(node, ast.Add(), total, part)
                return total
            return self.binop(node, ast.Mult(), c, stride)

        return offset(crd, layout.shape, layout.stride)

    def minmax(self, node: ast.Call, is_min: bool) -> Any:
        args = [self.expr(a) for a in node.args]
        if len(args) != 2:
            raise self.type_error(node, "min/max take two values in a kernel")
        if not any(isinstance(a, Value) for a in args):
            return (min if is_min else max)(*args)
        return self.minmax_values(node, *args, is_min)

    def minmax_values(self, node: ast.AST, a: Any, b: Any, is_min: bool) -> Value:
        a, b = self.unify(node, a, b)
        if a.dtype.is_float:
            cls: Any = arith.MinimumfOp if is_min else arith.MaximumfOp
        elif a.dtype.kind == "int":
            cls = arith.MinSIOp if is_min else arith.MaxSIOp
        elif a.dtype.kind == "uint":
            cls = arith.MinUIOp if is_min else arith.MaxUIOp
        else:
            raise self.type_error(node, f"min/max are not defined on {a.dtype}")
        return Value(self.emit(cls(a.ssa, b.ssa)).results[0], a.dtype)

    def tensor_view(self, node: ast.Call, base: TensorRef) -> TensorRef:
        """``T.view((d0, d1, ...), dtype)``: row-major, dims compile-time ints or runtime i32."""
        if len(node.args) != 2:
            raise self.type_error(node, "T.view((dims...), dtype)")
        shape = self.expr(node.args[0])
        dtype = self.expr(node.args[1])
        shape = shape if isinstance(shape, tuple) else (shape,)
        if not isinstance(dtype, DType) or dtype.kind == "bool":
            raise self.type_error(node.args[1], "the second argument of view is a storable dtype")
        dims: list[int | str] = []
        runtime: list[SSAValue] = []
        for k, dim in enumerate(shape):
            if isinstance(dim, Value) and dim.dtype == i32:
                dims.append(f"{base.name}_v{k}")
                runtime.append(dim.ssa)
            elif isinstance(dim, int) and not isinstance(dim, bool) and dim >= 1:
                dims.append(dim)
            else:
                raise self.type_error(node.args[0], f"view dims are positive ints or runtime i32 values, got {_describe(dim)}")
        old_dims = base.type.shape
        if all(isinstance(d, int) for d in (*old_dims, *dims)):
            old_bytes = int(np.prod(old_dims)) * base.type.dtype.nbytes  # type: ignore[arg-type]
            new_bytes = int(np.prod(dims)) * dtype.nbytes  # type: ignore[arg-type]
            if old_bytes != new_bytes:
                raise self.type_error(node, f"a view must cover the same memory: {old_bytes} bytes as {tuple(old_dims)} of "
                                            f"{base.type.dtype}, {new_bytes} as {tuple(dims)} of {dtype}")
        t = D.TensorType.of(dtype, dims)
        op = D.TensorViewOp.create(operands=[base.ssa, *runtime], result_types=[t])
        return TensorRef(self.emit(op).results[0], t, f"{base.name}.view")

    def view(self, node: ast.Call, base: TileRef | TensorRef) -> TileRef | TensorRef:
        if isinstance(base, TensorRef):
            return self.tensor_view(node, base)
        if len(node.args) != 2:
            raise self.type_error(node, "t.view(layout_or_shape, dtype)")
        layout = self.static_layout(node.args[0], self.expr(node.args[0]))
        dtype = self.expr(node.args[1])
        if not isinstance(dtype, DType):
            raise self.type_error(node.args[1], "the second argument of view is a dtype")
        old = base.type
        old_bytes = old.layout.cosize() * old.dtype.nbytes
        new_bytes = layout.cosize() * dtype.nbytes
        if old_bytes != new_bytes:
            raise self.type_error(
                node, f"a view must cover the same memory: {old.layout} of {old.dtype} spans {old_bytes} bytes, "
                f"{layout} of {dtype} spans {new_bytes}",
            )
        tile = D.TileType.of(old.space.data, dtype, layout)
        op = D.ViewOp.create(operands=[base.ssa], result_types=[tile])
        return TileRef(self.emit(op).results[0], tile)

    def static_layout(self, node: ast.expr, value: Any) -> Layout | ComposedLayout:
        """A layout argument: a Layout, a ComposedLayout, or a shape tuple (compact, row-major)."""
        if isinstance(value, (Layout, ComposedLayout)):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            value = (value,)
        if isinstance(value, tuple) and value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            try:
                return Layout(value, compact_row_major(value))
            except LayoutError as err:
                raise self.type_error(node, err.reason) from None
        raise self.type_error(node, f"expected a compile-time layout or shape tuple, got {_describe(value)}")

    # ---- conversions -----------------------------------------------------------------
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
                return int(value)
            if dtype.is_float:
                return float(value)
        raise self.type_error(node, f"cannot use {_describe(value)} as {dtype}")

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
        raise self.type_error(node, f"{_describe(value)} is not a runtime value")


# ---- helpers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _BoundMethod:
    base: TileRef | TensorRef
    name: str


@dataclass(frozen=True)
class _PendingSlot:
    """A name first assigned inside runtime control flow; it becomes a slot on assignment."""

    name: str


def _assigned_names(body: list[ast.stmt]) -> Iterator[tuple[str, ast.AST]]:
    for stmt in body:
        for node in ast.walk(stmt):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for t in targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                        yield n.id, n


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


def _bits_type(bits: int) -> DType | None:
    """The unsigned (or vector) type of `bits` bits."""
    from .dtypes import DTYPES

    return DTYPES.get(f"u{bits}")


def _footprint_bytes(layout: Layout | ComposedLayout, dtype: DType) -> int:
    """Bytes from offset 0 to the end of the tile's last element."""
    return (int(np.max(layout.offsets())) + 1) * dtype.nbytes if layout.size() else 0


def _truth(value: Any, node: ast.AST, fe: FrontEnd) -> bool:
    if isinstance(value, (bool, int, float)):
        return bool(value)
    raise fe.type_error(node, f"a condition must be a comparison or a compile-time bool, got {_describe(value)}")


def _is_static_callable(fn: Any) -> bool:
    return callable(fn) and not lang.is_builtin(fn) and not isinstance(fn, (DType, _BoundMethod))


def _describe(value: Any) -> str:
    if isinstance(value, Value):
        return f"a runtime {value.dtype} value"
    if isinstance(value, TileRef):
        return f"a {value.type.space.data} tile"
    if isinstance(value, TensorRef):
        return f"tensor {value.name}"
    if callable(value):
        return getattr(value, "__name__", repr(value))
    return f"{type(value).__name__} {value!r}"


def _snippet(node: ast.AST) -> str:
    try:
        return ast.unparse(node)[:120]
    except Exception:  # pragma: no cover - unparse of exotic nodes
        return ""


__all__ = ["FrontEnd", "KernelSource"]
