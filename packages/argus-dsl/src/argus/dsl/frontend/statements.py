"""Statements: assignments, runtime and unrolled control flow, per-thread variables, tags.

Part of `FrontEnd` (see core.py), which mixes this class in.
"""

from __future__ import annotations

import ast
import builtins
import zlib
from collections.abc import Iterator
from typing import Any

from argus.verify import products, reductions, sums
from xdsl.dialects import arith, builtin, scf
from xdsl.ir import Block, Region

from ..ir import dialect as D
from .. import lang
from ..dtypes import DType, boolean, f32, i32, i64
from .limits import MAX_UNROLL, MAX_UNROLLED
from ..ir.passes import unroll
from .rolling import defined_in, rolled
from .values import BoundMethod, MustUnroll, PendingSlot, RolledAway, Slot, TensorRef, TileRef, Value, describe, truth


def operand_identity(name: str) -> int:
    """The number a row tag carries for its operand, from the operand's name: the rows of two
    operands never meet (A's row m is not B's row m), and `product(a[m], b[n], k)` names them."""
    return zlib.crc32(name.encode())


_PRODUCT_MARK = products.PRODUCT
"""The first component of a product's flat form (`Statements.product_components`)."""


class Statements:
    def statement(self, node: ast.stmt) -> None:
        method = getattr(self, f"stmt_{type(node).__name__}", None)
        if method is None:
            raise self.syntax_error(node, f"'{type(node).__name__}' statements are not part of the Argus language")
        outer, self.node = self.node, node
        try:
            with self.deeper(node):
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
        if isinstance(current, PendingSlot):
            current = self.env[target.id] = self.new_slot(self.runtime_dtype(value, target))
        if isinstance(current, Slot):
            stored = self.convert(value, current.dtype, target)
            self.emit(D.VarStoreOp.create(operands=[self.materialize(stored, target).ssa, current.ssa]))
            return
        self.env[target.id] = value

    def stmt_If(self, node: ast.If) -> None:
        cond = self.expr(node.test)
        if not isinstance(cond, Value):
            chosen = node.body if truth(cond, node.test, self) else node.orelse
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
        try:
            iterations = range(*bounds)
            count = iterations.stop - iterations.start
            count = max(0, -(-count // iterations.step))  # len() overflows for huge ranges
        except ValueError as err:  # a zero step
            raise self.type_error(node.iter, f"static_range: {err}") from None
        if count > MAX_UNROLL:
            raise self.type_error(node.iter, f"static_range of {count} iterations exceeds {MAX_UNROLL}; use range(...) for long loops")
        if self.unrolling * count > MAX_UNROLLED:
            raise self.type_error(node.iter, f"this static_range unrolls its body {self.unrolling * count} times with the "
                                             f"static loops around it; at most {MAX_UNROLLED}: use range(...) for "
                                             "some of them")
        outer, self.unrolling = self.unrolling, self.unrolling * max(count, 1)
        try:
            self.unrolled_for(node, iterations, count)
        finally:
            self.unrolling = outer

    def unrolled_for(self, node: ast.For, iterations: range, count: int) -> None:
        """A static loop's iterations, read one after another (each with the loop variable
        bound to its value), then rolled where they allow it."""
        assert isinstance(node.target, ast.Name)
        if count < 2 or node in self.unrolled or not self.rolls:
            for i in iterations:
                self.env[node.target.id] = i
                for stmt in node.body:
                    self.statement(stmt)
            return
        blocks = []
        self.iterating += 1
        try:
            for i in iterations:  # each iteration read apart, to tell whether they differ in constants only
                self.env[node.target.id] = i
                blocks.append(Block())
                with self.into(blocks[-1]):
                    for stmt in node.body:
                        self.statement(stmt)
        finally:
            self.iterating -= 1
        self.roll(node, blocks, iterations.start, iterations.step)

    def roll(self, node: ast.For, blocks: list[Block], start: int, step: int) -> None:
        """Emit a static loop's iterations (`blocks`) as one rolled loop where they allow it
        (`rolling`), else one after the other. Names the iterations bound to their values are
        then out of reach: reading one later reads the kernel again with this loop unrolled."""
        inside = defined_in(blocks)
        escaped = {name: value for name, value in self.env.items() if _holds(value, inside)}
        made = rolled(blocks, start, step, node.target.id, self.locations)  # type: ignore[attr-defined]
        if made is None:  # (a rolled loop inside stays rolled only inside another: copies of it run best together)
            for block in blocks:
                for op in list(block.ops):
                    op.detach()
                    self.block.add_op(op)
                    if D.is_unrolled(op):
                        unroll(op, self.locations)  # type: ignore[arg-type]
            return
        loop, bounds = made
        outer, self.node = self.node, node
        try:
            for op in [*bounds, loop]:
                self.emit(op)
            for op in loop.body.block.walk():
                self.locations.setdefault(op, self.loc(node))
        finally:
            self.node = outer
        for name in escaped:
            self.env[name] = RolledAway(node)

    def runtime_for(self, node: ast.For) -> None:
        call: ast.Call = node.iter  # type: ignore[assignment]
        if not 1 <= len(call.args) <= 3 or call.keywords:
            raise self.type_error(call, "range takes 1 to 3 positional arguments")
        raw = [self.expr(a) for a in call.args]
        if len(raw) == 3 and not (isinstance(raw[2], int) and not isinstance(raw[2], bool) and raw[2] > 0):
            raise self.type_error(call.args[2], "a runtime loop's step must be a positive compile-time int")
        args = [self.materialize(self.convert(v, i32, a), a) for v, a in zip(raw, call.args)]
        start, stop, step = (
            (self.constant(0, i32), args[0], self.constant(1, i32)) if len(args) == 1
            else (args[0], args[1], self.constant(1, i32)) if len(args) == 2
            else tuple(args)
        )
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

    def make_slots(self, body: list[ast.stmt]) -> None:
        """Turn the names assigned inside a runtime region into per-thread variables."""
        for name, node in _assigned_names(body):
            current = self.env.get(name)
            if isinstance(current, (Slot, PendingSlot)):
                continue
            if isinstance(current, RolledAway):
                raise MustUnroll(current.loop)
            if current is None:
                if name in self.constants:
                    raise self.type_error(node, f"{name!r} is a constexpr and cannot be reassigned at run time")
                self.env[name] = PendingSlot(name)
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
        raise self.type_error(node, f"only scalars can be reassigned inside runtime control flow, not {describe(value)}")

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
            raise self.type_error(arg.value, f"tags belong to tensors and tiles, not {describe(base)}")
        return base

    def attach_tag(self, node: ast.Call, args: list[ast.expr], stores: bool = False) -> None:
        """``tag(t, fn)`` or ``tag(t, fn, rows=fn2)`` (an operand's pair tags and row tags), and
        ``assert_tags(t, fn)`` (`stores`: what every store into tensor t carries)."""
        call = "assert_tags" if stores else "tag"
        usage = (f"{call}(t, lambda i, j, ...: (tag components)) with one parameter per mode of t"
                 + ("" if stores else "; an operand of matmul may add rows=lambda i, j, ...: (row components)"))
        if len(args) != 2 or not isinstance(args[1], ast.Lambda):
            raise self.syntax_error(node, usage)
        rows_fn = None
        for keyword in node.keywords:
            if keyword.arg != "rows" or stores or rows_fn is not None or not isinstance(keyword.value, ast.Lambda):
                raise self.syntax_error(keyword.value, f"{call} takes no keyword {keyword.arg!r}: {usage}")
            rows_fn = keyword.value
        target = self.expr(args[0])
        if not isinstance(target, (TensorRef, TileRef)):
            raise self.type_error(args[0], f"tags belong to tensors and tiles, not {describe(target)}")
        if rows_fn is not None and not isinstance(args[0], ast.Name):
            raise self.type_error(args[0], "rows= names its operand: tag a tensor or tile by its name "
                                           "(product(a[m], b[n], ...) refers to the rows by it)")
        if stores and not isinstance(target, TensorRef):
            raise self.type_error(args[0], f"assert_tags states what is stored into a tensor argument, not {describe(target)}")
        rank = len(target.type.shape) if isinstance(target, TensorRef) else target.type.layout.rank
        functions = [args[1]] if rows_fn is None else [args[1], rows_fn]
        params = [a.arg for a in args[1].args.args]
        for fn in functions:
            names = [a.arg for a in fn.args.args]
            if len(names) != rank or fn.args.vararg or fn.args.kwarg or fn.args.kwonlyargs:
                raise self.type_error(fn, f"the tag function takes one coordinate per mode: {rank} parameter(s)")
        body = Block(arg_types=[builtin.i32] * rank)
        saved = {p: self.env.get(p) for fn in functions for p in (a.arg for a in fn.args.args)}
        with self.into(body):
            for p, arg in zip(params, body.args):
                arg.name_hint = p
            parts = []
            for number, fn in enumerate(functions):
                for p, arg in zip((a.arg for a in fn.args.args), body.args):
                    self.env[p] = Value(arg, i32)
                found = self.tag_components(fn.body, allow_product=stores)
                if number == 0 and rows_fn is not None:
                    if found and found[0] is _PRODUCT_MARK:
                        raise self.type_error(fn.body, "an operand with rows pairs by plain tag components, not a product")
                    parts = [self.constant_tag(fn.body, products.ROWS), self.constant_tag(fn.body, len(found))]
                if number == 1:  # a row names its operand too: B's row m is not A's row m
                    parts.append(self.constant_tag(fn.body, operand_identity(args[0].id)))  # type: ignore[attr-defined]
                parts += found
            values = [p if isinstance(p, Value) else self.constant_tag(node, p) for p in parts]
            self.emit(D.YieldTagOp.create(operands=[self.materialize(v, node).ssa for v in values]))
        for p, old in saved.items():
            if old is None:
                self.env.pop(p, None)
            else:
                self.env[p] = old
        op_type = D.StoreTagsOp if stores else D.TagOp
        self.emit(op_type.create(operands=[target.ssa], regions=[Region(body)]))
        self.tagged = True

    def tag_components(self, expr: ast.expr, allow_product: bool) -> list[Any]:
        """A tag function's result as its components (integer values); ``product(...)`` as the
        flat form `argus.verify.products` reads, its first component `_PRODUCT_MARK`."""
        if isinstance(expr, ast.Call) and self.resolve_callee(expr.func) is lang.product:
            if not allow_product:
                raise self.type_error(expr, "product(...) states what an accumulator holds: it is a tag of "
                                            "assert_tags(c, lambda m, n: product(...)), not of an operand")
            return self.product_components(expr)
        reduction = {lang.row_max: "row_max", lang.row_sum: "row_sum", lang.softmax_of: "softmax_of"}.get(
            self.resolve_callee(expr.func)) if isinstance(expr, ast.Call) else None
        if reduction is not None:
            if not allow_product:
                raise self.type_error(expr, f"{reduction}(...) states what a stored reduction holds: it is a tag of "
                                            f"assert_tags(out, lambda r, c: {reduction}(...)), not of an operand")
            return self.reduction_components(expr, reduction)  # type: ignore[arg-type]
        if isinstance(expr, ast.Call) and self.resolve_callee(expr.func) is lang.sum_of:
            if not allow_product:
                raise self.type_error(expr, "sum_of(...) states what a stored sum holds: it is a tag of "
                                            "assert_tags(out, lambda i: sum_of(...)), not of an operand")
            return self.sum_components(expr)
        result = self.expr(expr)
        parts = result if isinstance(result, tuple) else (result,)
        if not parts:
            raise self.type_error(expr, "a tag function returns at least one component, e.g. lambda i: (i,)")
        return [self.integer_component(part, expr) for part in parts]

    def integer_component(self, part: Any, node: ast.expr) -> Value:
        v = self.materialize(part, node)
        if not v.dtype.is_integer:
            raise self.type_error(node, f"tag components are integers, got {v.dtype}")
        return v

    def product_components(self, call: ast.Call) -> list[Any]:
        """``product(a_rows, b_rows, k)``: (PRODUCT, len(a_rows), *a_rows, len(b_rows), *b_rows,
        pos, *k with range(lo, hi)'s lo at pos, hi)."""
        usage = ("product(a[rows], b[rows], k) takes A's row and B's row, each named by its operand (as tagged "
                 "with rows=), and the pair components summed over, one of them a range: "
                 "product(a[m], b[n], (range(0, K),))")
        if len(call.args) != 3 or call.keywords:
            raise self.type_error(call, usage)
        out: list[Any] = [_PRODUCT_MARK]
        for rows in call.args[:2]:
            part = self.operand_rows(rows, usage)
            out += [len(part), *part]
        return [*out, *self.span_components(call.args[2], usage)]

    def span_components(self, k: ast.expr, usage: str, one: bool = False) -> list[Any]:
        """The pair tags a product sums over, or a reduction reduces over (`one`: a tuple of one
        component), as a span: (pos, *k with range(lo, hi)'s lo at pos, hi)."""
        elements = k.elts if isinstance(k, ast.Tuple) else [k]
        ranges = [j for j, e in enumerate(elements) if isinstance(e, ast.Call) and isinstance(e.func, ast.Name)
                  and e.func.id == "range"]
        if len(ranges) != 1 or (one and len(elements) != 1):
            raise self.type_error(k, f"the pairs summed over hold exactly one range(lo, hi); {usage}")
        pos = ranges[0]
        bounds = elements[pos]
        assert isinstance(bounds, ast.Call)
        if len(bounds.args) != 2 or bounds.keywords:
            raise self.type_error(bounds, "the summed pairs' range is range(lo, hi) (step 1)")
        lo, hi = (self.integer_component(self.expr(b), b) for b in bounds.args)
        comps = [lo if j == pos else self.integer_component(self.expr(e), e) for j, e in enumerate(elements)]
        return [pos, *comps, hi]

    def operand_rows(self, rows: ast.expr, usage: str) -> list[Any]:
        """``x[r]``: an operand's row part as its tags carry it (its identity, then r's components)."""
        if not (isinstance(rows, ast.Subscript) and isinstance(rows.value, ast.Name)):
            raise self.type_error(rows, usage)
        value = self.expr(rows.slice)
        comps = value if isinstance(value, tuple) else (value,)
        return [self.constant_tag(rows, operand_identity(rows.value.id)), *(self.integer_component(c, rows) for c in comps)]

    def reduction_components(self, call: ast.Call, name: str) -> list[Any]:
        """``row_max(x[r], k)``, ``row_sum(x[r], k)``: (REDUCED, 1, kind, len(rows), *rows, *span);
        ``softmax_of(x[r], (c,), k)``: (SOFTMAX, len(pair), *pair, len(rows), *rows, log2(e)'s
        bits, *span) — the tags `argus.verify.reductions` gives what a kernel computes."""
        if name == "softmax_of":
            usage = ("softmax_of(x[r], (c,), k) takes operand x's row (x tagged with rows=), the pair tag of the "
                     "element, and the one pair component reduced over, as a range: "
                     "softmax_of(x[r], (c,), (range(0, cols),))")
            if len(call.args) != 3 or call.keywords:
                raise self.type_error(call, usage)
            rows = self.operand_rows(call.args[0], usage)
            value = self.expr(call.args[1])
            pair = [self.integer_component(c, call.args[1]) for c in (value if isinstance(value, tuple) else (value,))]
            if len(pair) != 1:
                raise self.type_error(call.args[1], f"the element's pair tag has one component; {usage}")
            span = self.span_components(call.args[2], usage, one=True)
            return [self.constant_tag(call, reductions.SOFTMAX), self.constant_tag(call, len(pair)), *pair,
                    self.constant_tag(call, len(rows)), *rows, self.constant_tag(call, reductions.LOG2E), *span]
        usage = (f"{name}(x[r], k) takes operand x's row (x tagged with rows=) and the one pair component "
                 f"reduced over, as a range: {name}(x[r], (range(0, cols),))")
        if len(call.args) != 2 or call.keywords:
            raise self.type_error(call, usage)
        rows = self.operand_rows(call.args[0], usage)
        span = self.span_components(call.args[1], usage, one=True)
        kind = reductions.MAX if name == "row_max" else reductions.SUM
        return [self.constant_tag(call, reductions.REDUCED), self.constant_tag(call, 1), self.constant_tag(call, kind),
                self.constant_tag(call, len(rows)), *rows, *span]

    def sum_components(self, call: ast.Call) -> list[Any]:
        """``sum_of(t1, t2, ...)``: (SUM, n, len(t1), *t1, ...), the terms in any order (the tag
        table keeps one order, `argus.verify.sums`)."""
        usage = "sum_of(t1, t2, ...) takes the tags of the elements added, two or more, each a tuple of " \
                "integer components: sum_of((0, i), (1, i))"
        if len(call.args) < 2 or call.keywords:
            raise self.type_error(call, usage)
        out: list[Any] = [self.constant_tag(call, sums.SUM), self.constant_tag(call, len(call.args))]
        for term in call.args:
            value = self.expr(term)
            comps = value if isinstance(value, tuple) else (value,)
            if not comps:
                raise self.type_error(term, usage)
            out += [self.constant_tag(term, len(comps)), *(self.integer_component(c, term) for c in comps)]
        return out

    def constant_tag(self, node: ast.AST, value: int) -> Value:
        """An i64 constant of a tag function (a mark or a length)."""
        op = arith.ConstantOp(builtin.IntegerAttr(value, builtin.i64))
        self.emit(op)
        return Value(op.result, i64)

    # ---- expressions -----------------------------------------------------------------

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


def _holds(value: Any, values: set[Any]) -> bool:
    """Whether a front-end value refers to one of `values` (SSA values), at any depth."""
    if isinstance(value, (Value, TileRef)):
        return value.ssa in values
    if isinstance(value, BoundMethod):
        return _holds(value.base, values)
    if isinstance(value, (tuple, list, set)):
        return any(_holds(v, values) for v in value)
    if isinstance(value, dict):
        return any(_holds(v, values) for v in value.values())
    return False
