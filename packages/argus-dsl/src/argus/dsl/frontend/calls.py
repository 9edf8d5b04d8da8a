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
    composition,
    product,
    zipped_divide,
)
from xdsl.dialects import arith, builtin, math
from xdsl.ir import SSAValue

from ..ir import dialect as D
from .. import lang
from ..atoms import CopyAtom, MMAAtom
from ..dtypes import DTYPES, DType, boolean, i32
from ..errors import ArgusError, ArgusSyntaxError, ArgusTypeError, SourceLocation
from ..ir.types import mlir_type
from .expressions import is_static_callable
from .limits import MAX_LOCAL_BYTES, MAX_SHARED_BYTES
from .values import BoundMethod, TensorRef, TileRef, Value, describe, snippet
from ..intrinsics import Intrinsic
from ..intrinsics import call as intrinsic_call
from ..ir.layout_texts import text_of



Builder = Callable[[Any, ast.Call, list[Any]], Any]

BUILDERS: dict[str, Builder] = {}
"""Each builtin's builder, by name: ``build(frontend, call, arguments)`` checks the evaluated
arguments (errors at the call's line: ``frontend.type_error(node, message)``), emits the op(s)
(``frontend.emit(op)``) and returns the call's value (None for a statement). An op family
declares its builtins' builders with `argus.dsl.ir.registry.builtin`."""

class Calls:
    def expr_Call(self, node: ast.Call) -> Any:
        fn = self.expr(node.func)
        if node.keywords and not is_static_callable(fn):
            raise self.syntax_error(node, "keyword arguments are only accepted by compile-time functions")
        if isinstance(fn, BoundMethod):
            return self.view(node, fn.base)
        if isinstance(fn, lang.DeviceFunction):
            return self.inline(node, fn)
        if isinstance(fn, Intrinsic):
            return intrinsic_call(self, node, fn)
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
        build = BUILDERS.get(name)
        if build is not None:
            return build(self, node, args)
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
            if inner.size() * dtype.nbytes > limit or \
                    (int(self.element_offsets(node.args[0], layout).max(initial=-1)) + 1) * dtype.nbytes > limit:
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
        if name == "rcp":
            if len(args) != 1 or not isinstance(args[0], Value) or not args[0].dtype.is_float:
                raise self.type_error(node, "rcp(x) of a runtime float")
            return self.arith(node, ast.Div(), self.constant(1.0, args[0].dtype), args[0])
        if name == "fma":
            if len(args) != 3:
                raise self.type_error(node, "fma(a, b, c)")
            typed = [a for a in args if isinstance(a, Value)]
            if not typed or not typed[0].dtype.is_float:
                raise self.type_error(node, "fma takes floats, at least one of them a runtime value")
            dt = typed[0].dtype
            a, b, c = (self.materialize(self.convert(v, dt, node), node) for v in args)
            return Value(self.emit(math.FmaOp(a.ssa, b.ssa, c.ssa)).results[0], dt)
        if name == "copy":
            if len(args) != 3 or not isinstance(args[2], CopyAtom):
                raise self.type_error(node, "copy(src, dst, atom) with two tiles and a CopyAtom such as copy_vector(16)")
            src, dst, atom = args
            for label, t in (("source", src), ("target", dst)):
                if not isinstance(t, TileRef):
                    raise self.type_error(node, f"copy's {label} must be a tile, got {describe(t)}")
            if src.type.dtype != dst.type.dtype or src.type.layout.size() != dst.type.layout.size():
                raise self.type_error(node, f"copy needs tiles of one size and type: {src.type.layout.size()} {src.type.dtype} "
                                            f"and {dst.type.layout.size()} {dst.type.dtype}")
            count, nbytes = src.type.layout.size(), src.type.dtype.nbytes
            if atom.vector_bytes % nbytes or (count * nbytes) % atom.vector_bytes:
                raise self.type_error(node, f"{atom.name} moves {atom.vector_bytes}-byte vectors; a fragment of "
                                            f"{count} {src.type.dtype} is not a whole number of them")
            if atom.values() is not None and count % atom.values():  # type: ignore[operator]
                raise self.type_error(node, f"{atom.name} moves {atom.values()} values per thread; the fragment holds {count}")
            props = builtin.DictionaryAttr({k: builtin.StringAttr(v) for k, v in atom.as_properties().items()})
            self.emit(D.CopyOp.create(operands=[src.ssa, dst.ssa], properties={"atom": props}))
            return None
        if name in ("partition", "local_tile"):
            return self.partition(node, name, args)
        if name == "matmul":
            return self.matmul(node, args)
        if name == "matmul_async":
            return self.matmul(node, args, asynchronous=True)
        if name == "matmul_wait":
            if len(args) != 1 or not isinstance(args[0], int) or isinstance(args[0], bool) or args[0] < 0:
                raise self.type_error(node, "matmul_wait(pending): a compile-time int ≥ 0, the products that may "
                                            "still be running")
            self.emit(D.MmaWaitOp.create(properties={"pending": builtin.IntAttr(args[0])}))
            return None
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
        if name == "byte_perm":
            if len(args) != 3 or not all(isinstance(a, Value) for a in args[:2]):
                raise self.type_error(node, "byte_perm(a, b, selector) of two runtime values and a tuple of byte indices")
            selector = args[2]
            total = args[0].dtype.nbytes + args[1].dtype.nbytes
            if (not isinstance(selector, tuple) or not all(isinstance(i, int) and 0 <= i < total for i in selector)
                    or _bits_type(8 * len(selector)) is None):
                raise self.type_error(node.args[2], f"the selector is a compile-time tuple of 2, 4, 8, 16 or 32 byte indices below {total}")
            out = _bits_type(8 * len(selector))
            op = D.BytePermOp.create(operands=[args[0].ssa, args[1].ssa],
                                     properties={"selector": builtin.ArrayAttr([builtin.IntAttr(i) for i in selector])},
                                     result_types=[mlir_type(out)])  # type: ignore[arg-type]
            return Value(self.emit(op).results[0], out)  # type: ignore[arg-type]
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
        if name == "assume":
            if len(args) != 1 or not isinstance(args[0], Value) or args[0].dtype is not boolean:
                raise self.type_error(node, "assume(condition) takes one runtime condition, e.g. assume(n % 64 == 0)")
            self.emit(D.AssumeOp.create(operands=[args[0].ssa]))
            return None
        if name == "reset_tags":
            if len(args) != 1 or not isinstance(args[0], TileRef) or args[0].type.space.data != "shared":
                raise self.type_error(node, "reset_tags(t) takes one shared tile")
            self.emit(D.ResetTagsOp.create(operands=[args[0].ssa]))
            return None
        if name.startswith("shfl_"):
            if len(args) != 2 or not isinstance(args[0], Value):
                raise self.type_error(node, f"{name}(value, lane_or_offset) with a runtime value")
            return self.shuffle(node, args[0], args[1], name[len("shfl_"):])
        if name in ("warp_sum", "warp_max", "warp_min"):
            if len(args) != 1 or not isinstance(args[0], Value):
                raise self.type_error(node, f"{name}(value) with a runtime value")
            return self.warp_reduce(node, args[0], name)
        raise self.syntax_error(node, f"{name}() is not available yet")

    def partition(self, node: ast.Call, name: str, args: list[Any]) -> TileRef:
        """A part of a tile picked by a runtime index: see lang.partition and lang.local_tile."""
        usage = f"{name}(tile, {'tv_layout' if name == 'partition' else 'tiler'}, index)"
        if len(args) != 3 or not isinstance(args[0], TileRef):
            raise self.type_error(node, usage)
        tile, how, index = args
        layout = tile.type.layout
        inner = layout.inner if isinstance(layout, ComposedLayout) else layout
        if name == "partition" and (not isinstance(how, Layout) or how.rank != 2):
            raise self.type_error(node.args[1], "a TV layout is a rank-2 Layout: (threads, values) -> index")
        if name == "local_tile" and not (isinstance(how, Layout) or (
                isinstance(how, tuple) and len(how) == inner.rank
                and all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in how))):
            raise self.type_error(node.args[1], f"a tiler is a Layout or a tuple of {inner.rank} positive ints, one "
                                                f"per mode of the tile, got {describe(how)}")
        try:
            if name == "partition":
                split = composition(inner, how)
                selector, values = split[0], split[1]
            else:
                split = zipped_divide(inner, how)
                selector, values = split[1], split[0]
        except LayoutError as err:
            raise self.type_error(node, f"{name}: {err}") from None
        if split.size() != inner.size() or not np.isin(split.offsets(), inner.offsets()).all():
            what = "TV layout" if name == "partition" else "tiler"
            raise self.type_error(node.args[1], f"{name}: the {what} {how} does not divide this tile of shape "
                                                f"{inner.shape} into parts of its own elements (its parts reach "
                                                f"{split.size()} elements of {inner.size()})")
        if isinstance(layout, ComposedLayout):
            part: Layout | ComposedLayout = ComposedLayout(layout.outer, layout.offset, values)
        else:
            part = values
        index_value = self.materialize(self.convert(index, i32, node), node)
        t = D.TileType.of(tile.type.space.data, tile.type.dtype, part)
        op = D.PartitionOp.create(
            operands=[tile.ssa, index_value.ssa], properties={"selector": builtin.StringAttr(text_of(selector))}, result_types=[t]
        )
        return TileRef(self.emit(op).results[0], t, partitioned=True)

    def matmul(self, node: ast.Call, args: list[Any], asynchronous: bool = False) -> None:
        if len(args) != 4 or not isinstance(args[3], MMAAtom):
            raise self.type_error(node, "matmul(a, b, acc, atom): three fragments (local tiles) and an MMAAtom")
        atom: MMAAtom = args[3]
        for label, frag, dtype in (("a", args[0], atom.a_dtype), ("b", args[1], atom.b_dtype), ("c", args[2], atom.c_dtype)):
            whole = atom.shared_shape(label) if label != "c" else None
            if whole is not None:
                self.shared_operand(node, atom, label, frag, dtype, whole)
                continue
            if not isinstance(frag, TileRef) or frag.type.space.data != "local":
                raise self.type_error(node, f"matmul's {label} must be a local tile (registers), got {describe(frag)}")
            if frag.type.dtype != dtype:
                raise self.type_error(node, f"atom {atom.name} takes {label} as {dtype}, got {frag.type.dtype}")
            want = atom.values(label)
            if frag.type.layout.size() != want:
                raise self.type_error(node, f"atom {atom.name} gives each thread {want} {label} values; this fragment holds {frag.type.layout.size()}")
        props: dict[str, Any] = {"atom": builtin.DictionaryAttr({k: builtin.StringAttr(v)
                                                                 for k, v in atom.as_properties().items()})}
        if asynchronous:
            props["asynchronous"] = builtin.UnitAttr()
        self.emit(D.MmaOp.create(operands=[args[0].ssa, args[1].ssa, args[2].ssa], properties=props))

    def shared_operand(self, node: ast.Call, atom: MMAAtom, label: str, tile: Any, dtype: Any,
                       shape: tuple[int, int]) -> None:
        """An operand the atom reads whole from shared memory: a shared tile of its shape."""
        rows = "M" if label == "a" else "N"
        if not isinstance(tile, TileRef) or tile.type.space.data != "shared":
            raise self.type_error(node, f"atom {atom.name} reads {label} from shared memory: pass a shared tile of "
                                        f"shape {shape} ({rows}×K), got {describe(tile)}")
        if tile.type.dtype != dtype:
            raise self.type_error(node, f"atom {atom.name} takes {label} as {dtype}, got {tile.type.dtype}")
        layout = tile.type.layout
        got = tuple(layout.shape) if layout.rank == 2 else None
        if got is None or tuple(_extent(s) for s in got) != shape:
            raise self.type_error(node, f"atom {atom.name} reads {label} as a {shape[0]}×{shape[1]} ({rows}×K) shared "
                                        f"tile; this one is {layout.shape}")

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
                raise self.type_error(node.args[0], f"view dims are positive ints or runtime i32 values, got {describe(dim)}")
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
        if base.partitioned:
            raise self.type_error(node, "a view of a partitioned tile is not supported yet; view the tile, then partition the view")
        if len(node.args) != 2:
            raise self.type_error(node, "t.view(layout_or_shape, dtype)")
        layout = self.static_layout(node.args[0], self.expr(node.args[0]))
        dtype = self.expr(node.args[1])
        if not isinstance(dtype, DType):
            raise self.type_error(node.args[1], "the second argument of view is a dtype")
        old = base.type
        if layout.size() > old.layout.size() * old.dtype.nbytes:
            raise self.type_error(node, f"a view of {layout.size()} elements cannot fit in the {old.layout.size()} "
                                        f"{old.dtype} elements of this tile")
        self.element_offsets(node.args[0], layout)
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


def _bits_type(bits: int) -> DType | None:
    """The unsigned (or vector) type of `bits` bits."""
    return DTYPES.get(f"u{bits}")


def _extent(mode: Any) -> int:
    """The number of elements of one mode (a nested mode counts all of its own)."""
    if isinstance(mode, int):
        return mode
    out = 1
    for m in mode:
        out *= _extent(m)
    return out
