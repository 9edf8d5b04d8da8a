"""The front-end: from a kernel's Python syntax tree to the ``argus`` dialect.

The kernel is never run. Expressions whose inputs are all known at compile time (literals,
constexpr parameters, layouts, module-level names) are evaluated here and folded; everything
else becomes IR. A Python name is rebound freely in straight-line code (including unrolled
``static_range`` bodies); a name assigned inside a runtime ``if`` or ``for`` becomes a
per-thread variable (``argus.var``), which is how the values of both paths meet.

`FrontEnd` is one class assembled from three parts: statements, expressions and calls.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from xdsl.dialects import arith, builtin
from xdsl.ir import Block, Operation, Region

from ..ir import dialect as D
from .. import lang
from ..dtypes import DType, boolean, f32, i32
from ..errors import ArgusSyntaxError, ArgusTypeError, SourceLocation
from ..ir.types import mlir_type
from .calls import Calls
from .expressions import Expressions
from .limits import MAX_BLOCK_THREADS, MAX_NESTING, MAX_OPS
from .statements import Statements
from .values import KernelSource, TensorRef, Value, snippet


class FrontEnd(Statements, Expressions, Calls):
    """Builds one ``argus.kernel`` op from a `KernelSource` and its constexpr values."""

    rolls: bool = True
    """Whether a ``static_range`` loop whose iterations differ only in constants stays one rolled
    loop (`rolling`); off, every static loop is traced unrolled, as the backends see it."""

    def __init__(self, source: KernelSource, constants: dict[str, Any], unrolled: frozenset[ast.For] = frozenset()
                 ) -> None:
        from ..ir.registry import install

        install()  # every op family's builtins (and every op's meaning)
        self.src = source
        self.unrolled = unrolled
        """The static loops to unroll even where their iterations could stay one rolled loop."""
        self.iterating = 0
        """How many static loops whose iterations may stay rolled are being read."""
        self.warp_size = source.warp_size
        self.constants = dict(constants)
        self.env: dict[str, Any] = {}
        self.block: Block = Block()
        self.entry: Block = self.block
        self.node: ast.AST | None = None
        self.locations: dict[Operation, SourceLocation] = {}
        self.tagged = False
        self.inlining: list[Any] = []  # the device functions being expanded, innermost last
        """Where each op came from: the interpreter names the line of a fault with it."""
        self.depth = 0
        """How deep the statement or expression being read is nested (`deeper`)."""
        self.unrolling = 1
        """How many times the static loops around the statement being read unroll it."""
        self.emitted = 0
        """How many ops the kernel has been traced into so far (at most `MAX_OPS`)."""

    # ---- errors ----------------------------------------------------------------------
    def loc(self, node: ast.AST) -> SourceLocation:
        return SourceLocation.of(node, self.src.file, self.src.line_offset)

    def syntax_error(self, node: ast.AST, message: str) -> ArgusSyntaxError:
        return ArgusSyntaxError(message, self.loc(node), snippet(node))

    def type_error(self, node: ast.AST, message: str) -> ArgusTypeError:
        return ArgusTypeError(message, self.loc(node), snippet(node))

    @contextmanager
    def deeper(self, node: ast.AST) -> Iterator[None]:
        """Read `node`, one level deeper than its parent: past `MAX_NESTING` the kernel is
        refused (reading it would exhaust the compiler's stack)."""
        if self.depth >= MAX_NESTING:
            raise self.syntax_error(node, f"the kernel nests statements and expressions (device functions "
                                          f"included) more than {MAX_NESTING} levels deep here; name intermediate "
                                          "values to flatten it")
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

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
        kernel = D.KernelOp.create(
            properties={
                "sym_name": builtin.StringAttr(self.src.name),
                "block": builtin.ArrayAttr([builtin.IntAttr(d) for d in block]),
                "warp_size": builtin.IntAttr(self.warp_size),
                "arg_names": builtin.ArrayAttr([builtin.StringAttr(n) for n in runtime_names]),
            },
            regions=[Region(self.entry)],
        )
        # the kernel's own line: where what it declares as a whole (block, cluster) is reported
        self.locations[kernel] = SourceLocation(self.src.file, self.src.line_offset + fdef.lineno, fdef.col_offset + 1)
        return kernel

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
        first = items[0]
        named = first.id if isinstance(first, ast.Name) else first.value if isinstance(first, ast.Constant) else None
        dtype = self.constants.get(named) if isinstance(named, str) and named in self.constants else self.resolve_global(first)
        if not isinstance(dtype, DType):
            raise self.type_error(first, "the first entry of Tensor[...] must be a dtype such as f32 or bf16, or a constexpr holding one")
        if dtype.kind == "bool":
            raise self.type_error(items[0], "tensors of bool are not supported; use u8")
        dims: list[int | str] = []
        for item in items[1:]:
            name = item.value if isinstance(item, ast.Constant) and isinstance(item.value, str) else item.id if isinstance(item, ast.Name) else None
            if isinstance(item, ast.Constant) and isinstance(item.value, int) and not isinstance(item.value, bool):
                dims.append(self.tensor_dim_size(item, item.value))
            elif name is not None and isinstance(self.constants.get(name), int):
                dims.append(self.tensor_dim_size(item, self.constants[name]))
            elif isinstance(item, ast.Name) and _is_int(known := self.resolve_global(item)):
                dims.append(self.tensor_dim_size(item, known))  # a module's int (TILE = 64): that size
            elif name is not None and name.isidentifier():
                dims.append(name)
            else:
                raise self.type_error(item, "a tensor dim is an int, a constexpr name, or a name for a size known at launch")
        if not dims:
            raise self.type_error(ann, "a tensor needs at least one dim: Tensor[dtype, dim0, ...]")
        return D.TensorType.of(dtype, dims)

    def tensor_dim_size(self, item: ast.expr, size: int) -> int:
        """A tensor dim known at compile time: at least 1, and an index into it fits in 32 bits."""
        if isinstance(size, bool) or not 1 <= size < 2**31:
            raise self.type_error(item, f"a tensor dim known at compile time is an int from 1 to 2**31 - 1, got {size}")
        return size

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
        threads = 1
        for d in dims:
            threads *= d
        if threads > MAX_BLOCK_THREADS:
            raise ArgusTypeError(f"a block has at most {MAX_BLOCK_THREADS} threads, got {threads} ({tuple(dims)})",
                                 SourceLocation(self.src.file, self.src.line_offset + self.src.tree.lineno, 1))
        return tuple(dims)

    # ---- emission helpers --------------------------------------------------------------
    def emit(self, op: Operation) -> Operation:
        self.emitted += 1
        if self.emitted > MAX_OPS:
            raise self.type_error(self.node or self.src.tree, f"the kernel traces into more than {MAX_OPS} operations "
                                                              "(static loops unrolled, device functions inlined); "
                                                              "use runtime loops (range) for long loops")
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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
