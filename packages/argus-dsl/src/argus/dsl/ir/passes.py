"""Target-independent passes over the argus dialect.

The front-end already folds everything known at compile time (constexpr values, layouts,
``static_range`` bodies, which it unrolls). What remains is cleaning the IR it builds:

- promotion of per-thread variables: a name assigned inside a runtime ``if`` or ``for`` is a
  variable (``argus.var``) so that its value can flow across the region's boundary, but most
  of its reads follow a write in the same block and can use the written value directly, and a
  variable nobody reads is dead;
- whole steps out of divisions: ``(x + k·d) // d`` is ``x // d + k`` and ``(x + k·d) % d`` is
  ``x % d`` (floor division, index arithmetic that does not wrap), so the copies of an unrolled
  loop over ``t + 128·i`` share one division of ``t`` (after promotion, which shows the sums);
- canonicalization (constant folding and MLIR's algebraic rewrites);
- common-subexpression elimination of pure ops, so each thread index, constant and repeated
  index computation appears once (promotion first: a load hides its equal value from it).

Every later consumer (the tag checker, the interpreter, the backends) walks fewer ops.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.context import Context
from xdsl.dialects import arith, builtin, scf
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from . import dialect as D
from .dialect import context
from .layout_texts import with_start


@dataclass(frozen=True)
class PromoteVariables(ModulePass):
    """Forward each variable's last write in a block to the reads after it in that block (and in
    the static loops kept rolled after it that do not write it), reuse one read for the reads
    after it, then drop writes nobody can read and variables nobody reads."""

    name = "argus-promote-variables"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for inner in list(op.walk()):
            for region in inner.regions:
                for block in region.blocks:
                    _forward(block)
        _drop_dead(op)


def _forward(block: Block) -> None:
    known: dict[SSAValue, SSAValue] = {}  # variable -> its value at this point of the block
    pending: dict[SSAValue, D.VarStoreOp] = {}  # variable -> its last write, not yet read
    for op in list(block.ops):
        if isinstance(op, D.VarLoadOp):
            var = op.var
            pending.pop(var, None)
            value = known.get(var)
            if value is None:
                known[var] = op.result
            else:
                op.result.replace_all_uses_with(value)
                block.erase_op(op)
        elif isinstance(op, D.VarStoreOp):
            var = op.var
            dead = pending.get(var)
            if dead is not None:  # overwritten in this block before anything read it
                block.erase_op(dead)
            known[var] = op.value
            pending[var] = op
        elif op.regions:
            # a nested region may read any variable and write those it stores to
            pending.clear()
            stored = {nested.var for nested in op.walk() if isinstance(nested, D.VarStoreOp)}
            if D.is_unrolled(op):  # a static loop kept rolled reads, of a variable it never writes, its value here
                for nested in list(op.walk()):
                    if isinstance(nested, D.VarLoadOp) and nested.var not in stored and nested.var in known:
                        nested.result.replace_all_uses_with(known[nested.var])
                        nested.detach()
                        nested.erase()
            for var in stored:
                known.pop(var, None)


def _drop_dead(module: builtin.ModuleOp) -> None:
    for var in [o for o in module.walk() if isinstance(o, D.VarOp)]:
        users = list(var.result.uses)
        if any(isinstance(use.operation, D.VarLoadOp) for use in users):
            continue
        for use in users:
            use.operation.detach()
            use.operation.erase()
        var.detach()
        var.erase()


@dataclass(frozen=True)
class SplitWholeSteps(ModulePass):
    """``(x ± k·d) // d`` → ``x // d ± k`` and ``(x ± k·d) % d`` → ``x % d`` for signed ints and a
    positive constant d. (The front end spells ``a % d`` as ``a - (a // d) * d``; both forms are
    rewritten, the remainder first, while its division still reads ``a``.)"""

    name = "argus-split-whole-steps"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for inner in list(op.walk()):
            if isinstance(inner, arith.SubiOp):
                _remainder_of_steps(inner)
        for inner in list(op.walk()):
            if isinstance(inner, arith.FloorDivSIOp):
                _quotient_of_steps(inner)


def _whole_steps(value: SSAValue, d: int) -> tuple[SSAValue, int] | None:
    """(x, k) when `value` is x plus or minus whole multiples of d, added by ops with constants
    (``(t - 16) + 32`` is t + 1·16), x being no such sum itself; None when nothing is peeled."""
    x, k = value, 0
    while True:
        maker = x.owner
        step = None
        if isinstance(maker, arith.AddiOp):
            for rest, c in ((maker.lhs, maker.rhs), (maker.rhs, maker.lhs)):
                constant = int_constant(c)
                if constant is not None and constant % d == 0:
                    step = rest, constant // d
                    break
        elif isinstance(maker, arith.SubiOp):
            constant = int_constant(maker.rhs)
            if constant is not None and constant % d == 0:
                step = maker.lhs, -(constant // d)
        if step is None:
            return None if x is value else (x, k)
        x, k = step[0], k + step[1]


def _positive_constant(value: SSAValue) -> int | None:
    constant = int_constant(value)
    return constant if constant is not None and constant > 0 else None


def int_constant(value: SSAValue) -> int | None:
    """The integer an ``arith.constant`` makes, else None (the lowering reads indices with it too)."""
    maker = value.owner
    if isinstance(maker, arith.ConstantOp) and isinstance(maker.value, builtin.IntegerAttr):
        return int(maker.value.value.data)
    return None


def _quotient_of_steps(op: arith.FloorDivSIOp) -> None:
    d = _positive_constant(op.rhs)
    split = None if d is None else _whole_steps(op.lhs, d)
    if split is None:
        return
    x, k = split
    quotient = arith.FloorDivSIOp(x, op.rhs)
    steps = arith.ConstantOp(builtin.IntegerAttr(k, op.result.type))
    _replace(op, [quotient, steps, arith.AddiOp(quotient.result, steps.result)])


def _remainder_of_steps(op: arith.SubiOp) -> None:
    """``a - (a // d) * d`` with a = x + k·d: ``x - (x // d) * d``."""
    a, product = op.lhs, op.rhs.owner
    if not isinstance(product, arith.MuliOp):
        return
    quotient = product.lhs.owner
    if not isinstance(quotient, arith.FloorDivSIOp) or quotient.lhs is not a:
        return
    d = _positive_constant(quotient.rhs)
    if d is None or int_constant(product.rhs) != d:
        return
    split = _whole_steps(a, d)
    if split is None:
        return
    x = split[0]
    new_quotient = arith.FloorDivSIOp(x, quotient.rhs)
    new_product = arith.MuliOp(new_quotient.result, product.rhs)
    _replace(op, [new_quotient, new_product, arith.SubiOp(x, new_product.result)])


def _replace(op: Operation, new_ops: list[Operation]) -> None:
    """`op` replaced by `new_ops` (the last one's result takes its uses); what only `op` used
    is left to canonicalization, which drops dead pure ops."""
    block = op.parent
    assert block is not None
    block.insert_ops_before(new_ops, op)
    op.results[0].replace_all_uses_with(new_ops[-1].results[0])
    block.erase_op(op)


_INDEX_ARITHMETIC: dict[type, Callable[[int, int], int]] = {
    arith.AddiOp: operator.add, arith.SubiOp: operator.sub, arith.MuliOp: operator.mul,
    arith.ShRSIOp: operator.rshift, arith.AndIOp: operator.and_}
"""What a rolled loop's body computes from its index (`frontend.rolling`)."""


def unroll(loop: scf.ForOp, located: dict[Operation, Any] | None = None) -> None:
    """Unroll a static loop kept rolled in place: its body once per index value, the index a
    constant (and the rolled loops in it unrolled too). `located` (op -> source location) gets
    an entry for every new op whose original had one."""
    parent = loop.parent
    assert parent is not None
    _expand(loop, {}, loop, located)
    parent.erase_op(loop)


def _expand(loop: scf.ForOp, mapping: dict[SSAValue, SSAValue], before: Operation,
            located: dict[Operation, Any] | None) -> None:
    """Copies of `loop`'s body, one per index value, before `before` (`mapping`: the values the
    copies read in place of those of the loops around it)."""
    lb, ub, step = (int_constant(mapping.get(v, v)) for v in (loop.lb, loop.ub, loop.step))
    parent = before.parent
    assert parent is not None and lb is not None and ub is not None and step
    where = None if located is None else located.get(loop)
    for value in range(lb, ub, step):
        index = arith.ConstantOp(builtin.IntegerAttr(value, builtin.i32))
        parent.insert_op_before(index, before)
        if where is not None:
            located[index] = where  # type: ignore[index]
        mapping[loop.body.block.args[0]] = index.result
        for op in loop.body.block.ops:
            if isinstance(op, scf.YieldOp):
                continue
            if D.is_unrolled(op):
                _expand(op, mapping, before, located)  # type: ignore[arg-type]
                continue
            copy = _copy(op, mapping)
            parent.insert_op_before(copy, before)
            if located is not None:
                for old, new in zip(op.walk(), copy.walk()):
                    if old in located:
                        located[new] = located[old]


def _copy(op: Operation, mapping: dict[SSAValue, SSAValue]) -> Operation:
    """A copy of a rolled body's op for one iteration (`mapping` holds its index as a constant):
    the index's arithmetic computed, a sub-tile's start folded into its type, as the unrolled
    code has them; any other op cloned."""
    if isinstance(op, D.SliceOp) and op.start is not None:
        t = op.result.type
        moved = with_start(t.layout, int_constant(mapping.get(op.start, op.start)))  # type: ignore[arg-type]
        copy = D.SliceOp.create(operands=[mapping.get(op.source, op.source)],
                                result_types=[D.TileType.of(t.space.data, t.dtype, moved)])
        mapping[op.result] = copy.results[0]
        return copy
    fold = _INDEX_ARITHMETIC.get(type(op))
    numbers = [int_constant(mapping.get(v, v)) for v in op.operands] if fold is not None else [None]
    if None in numbers:
        return op.clone(value_mapper=mapping)
    copy = arith.ConstantOp(builtin.IntegerAttr(fold(*numbers), op.results[0].type))  # type: ignore[misc]
    mapping[op.results[0]] = copy.result
    return copy


def unroll_static_loops(module: builtin.ModuleOp, located: dict[Operation, Any] | None = None) -> None:
    """Unroll every static loop the front-end kept rolled (`frontend.rolling`), in place: the code
    a target runs is the unrolled code (registers indexed by constants); `located` (op ->
    source location) gets the new ops' locations."""
    for loop in [op for op in module.walk() if D.is_unrolled(op) and not _inside_unrolled(op)]:
        unroll(loop, located)  # type: ignore[arg-type]


def _inside_unrolled(op: Operation) -> bool:
    parent = op.parent_op()
    while parent is not None:
        if D.is_unrolled(parent):
            return True
        parent = parent.parent_op()
    return False


PIPELINE: tuple[ModulePass, ...] = (PromoteVariables(), SplitWholeSteps(), CanonicalizePass(),
                                    CommonSubexpressionElimination())


def canonicalize(module: builtin.ModuleOp) -> builtin.ModuleOp:
    """Run the pipeline in place and return the module."""
    ctx = context()
    for p in PIPELINE:
        p.apply(ctx, module)
    return module
