"""Calls: the language's builtins, compile-time functions, layouts applied to runtime
coordinates, views, atoms, warp operations and atomics.

Part of `FrontEnd` (see core.py), which mixes this class in.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
from argus.layout import (
    ComposedLayout,
    Layout,
    LayoutError,
    Swizzle,
    compact_row_major,
    product,
)
from xdsl.dialects import arith, builtin

from ..ir import dialect as D
from .. import lang
from ..dtypes import DType
from ..errors import ArgusError, ArgusSyntaxError, ArgusTypeError, SourceLocation
from .expressions import is_static_callable
from .values import BoundMethod, TensorRef, TileRef, Value, describe, snippet
from ..intrinsics import Intrinsic
from ..intrinsics import call as intrinsic_call



Builder = Callable[[Any, ast.Call, list[Any]], Any]

BUILDERS: dict[str, Builder] = {}
"""Each builtin's builder, by name: ``build(frontend, call, arguments)`` checks the evaluated
arguments (errors at the call's line: ``frontend.type_error(node, message)``), emits the op(s)
(``frontend.emit(op)``) and returns the call's value (None for a statement). An op family
declares its builtins' builders with `argus.dsl.ir.registry.builtin`. A method of tiles or
tensors is built as the builtin ``"tile.<name>"`` or ``"tensor.<name>"``, its object the first
argument."""

SYNTAX_BUILDERS: dict[str, Builder] = {}
"""Builders given the call's argument nodes unevaluated (``registry.builtin(name, syntax=True)``):
an argument that names a place to update, such as an atomic's ``t[i]``, must not be loaded."""

class Calls:
    def expr_Call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        if node.keywords and not is_static_callable(fn) and fn not in (lang.tag, lang.assert_tags):  # (`attach_tag`)
            raise self.syntax_error(node, "keyword arguments are only accepted by compile-time functions")
        if isinstance(fn, BoundMethod):  # t.view(...): built as the builtin "tile.view" or "tensor.view"
            owner = "tensor" if isinstance(fn.base, TensorRef) else "tile"
            return BUILDERS[f"{owner}.{fn.name}"](self, node, [fn.base, *(self.expr(a) for a in node.args)])
        if isinstance(fn, lang.DeviceFunction):
            return self.inline(node, fn)
        if isinstance(fn, Intrinsic):
            return intrinsic_call(self, node, fn)
        if fn is builtins.abs or fn is builtins.pow:  # Python's: the language's (Python's on constants)
            fn = lang.abs if fn is builtins.abs else lang.pow
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
        if is_static_callable(fn):
            args = [self.expr(a) for a in node.args]
            kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg}
            if any(isinstance(v, (Value, TileRef, TensorRef)) for v in [*args, *kwargs.values()]):
                raise self.type_error(node, f"{describe(fn)} runs at compile time; its arguments must be compile-time values")
            try:
                return fn(*args, **kwargs)
            except ArgusError as err:  # (a constructor of the language's, an atom say, knows no line)
                if err.location is not None:
                    raise
                raise _located(err, self.loc(node), snippet(node)) from None
            except Exception as err:  # noqa: BLE001 - whatever a helper raises is the kernel's error at this line
                raise self.type_error(node, f"{describe(fn)} failed at compile time: {type(err).__name__}: {err}") from None
        raise self.type_error(node, f"{describe(fn)} is not callable in a kernel")

    def inline(self, node: ast.Call, fn: lang.DeviceFunction) -> Any:
        """Expand a device function in place: its parameters bound to the arguments, its
        statements read in its own module, its final ``return`` giving the call's value."""
        if fn in self.inlining:
            raise self.type_error(node, f"device function {fn.name} calls itself; recursion is not supported")
        fdef = fn.source.tree
        spec = fdef.args
        if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.posonlyargs or node.keywords:
            raise self.syntax_error(node, f"{fn.name}: device functions take plain positional parameters")
        params = [a.arg for a in spec.args]
        if len(node.args) != len(params):
            raise self.type_error(node, f"{fn.name} takes {len(params)} argument(s), got {len(node.args)}")
        args = [self.expr(a) for a in node.args]
        saved = (self.src, self.env, self.constants)
        self.src = dataclasses.replace(fn.source, block=self.src.block, warp_size=self.src.warp_size)
        self.env, self.constants = dict(zip(params, args)), {}
        self.inlining.append(fn)
        try:
            body = [s for s in fdef.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
            result = None
            for i, stmt in enumerate(body):
                if isinstance(stmt, ast.Return) and i == len(body) - 1:
                    outer, self.node = self.node, stmt
                    try:
                        result = self.expr(stmt.value) if stmt.value is not None else None
                    finally:
                        self.node = outer
                elif any(isinstance(n, ast.Return) for n in ast.walk(stmt)):
                    raise self.syntax_error(stmt, f"{fn.name}: a device function returns once, as its last statement")
                else:
                    self.statement(stmt)
            return result
        finally:
            self.inlining.pop()
            self.src, self.env, self.constants = saved

    def resolve_callee(self, node: ast.expr) -> Any:
        try:
            return self.expr(node)
        except (ArgusSyntaxError, ArgusTypeError):
            return None

    def builtin_call(self, node: ast.Call, fn: lang.Builtin) -> Any:
        build = SYNTAX_BUILDERS.get(fn.name)
        if build is not None:
            return build(self, node, list(node.args))
        if fn is lang.tag:
            if len(node.args) == 1:
                raise self.syntax_error(node, "tag(t[...]) only appears in an assertion: assert tag(a[...]) == tag(b[...])")
            self.attach_tag(node, node.args)
            return None
        if fn is lang.assert_tags:
            self.attach_tag(node, node.args, stores=True)
            return None
        if fn is lang.product:
            raise self.syntax_error(node, "product(a_rows, b_rows, k) only appears as what a tag function returns, "
                                          "e.g. assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))")
        args = [self.expr(a) for a in node.args]
        name = fn.name
        build = BUILDERS.get(name)
        if build is not None:
            return build(self, node, args)
        if name == "static_range":
            raise self.syntax_error(node, "static_range(...) is only valid as a for loop's iterable")
        raise self.syntax_error(node, f"{name}() is not available yet")

    def apply_layout(self, node: ast.AST, layout: Any, args: list[Any]) -> Any:
        """A compile-time layout evaluated at runtime coordinates: index arithmetic in the IR."""
        if isinstance(layout, Swizzle):
            if len(args) != 1:
                raise self.type_error(node, f"the swizzle {layout} takes one offset, got {len(args)} arguments")
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
            try:
                return (min if is_min else max)(*args)
            except Exception as err:  # user comparisons of compile-time values
                raise self.type_error(node, f"compile-time {'min' if is_min else 'max'} failed: {err}") from None
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

    def element_offsets(self, node: ast.expr, layout: Layout | ComposedLayout) -> np.ndarray:
        """Where a tile's elements lie in its memory: offsets ≥ 0, or a type error at `node`."""
        try:
            offsets = np.asarray(layout.offsets(), np.int64)
        except (LayoutError, OverflowError) as err:
            raise self.type_error(node, f"the layout {layout} cannot place a tile's elements ({err}); they lie at "
                                        "offsets ≥ 0: mind negative strides and offsets") from None
        if offsets.size and offsets.min() < 0:
            k = int(offsets.argmin())
            raise self.type_error(node, f"the layout {layout} places element {k} at offset {int(offsets[k])}; a "
                                        "tile's elements lie at offsets ≥ 0: mind negative strides and offsets")
        return offsets  # type: ignore[no-any-return]

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
        raise self.type_error(node, f"expected a compile-time layout or shape tuple, got {describe(value)}")

    # ---- conversions -----------------------------------------------------------------

def _located(err: ArgusError, where: SourceLocation, construct: str) -> ArgusError:
    """`err` at `where`: one of its class with its message (a type error if its class takes
    other arguments)."""
    if type(err).__init__ is ArgusError.__init__:
        return type(err)(err.message, where, err.construct or construct)
    return ArgusTypeError(err.message, where, construct)
