"""Static loops kept rolled: a ``static_range`` loop whose iterations differ only in constants.

The front-end reads a ``static_range`` body once per iteration, as Python would run it. When
every iteration built the same ops — same kinds, properties and types, reading the same values
from before the loop or the same results of their own iteration — and differ only in integer
constants that are affine in the loop index, the iterations are one loop body: the first
iteration's ops, with each such constant computed from the index. The loop is then an
``scf.for`` marked `dialect.UNROLLED`, which every consumer treats as the unrolled code it stands for:
the checker walks its iterations together, the interpreter runs them in order, and the
backends unroll it before lowering (`passes.unroll_static_loops`). Fewer ops make every
consumer faster; nothing changes what the kernel computes.
"""

from __future__ import annotations

from typing import Any

from xdsl.dialects import arith, builtin, scf
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.traits import is_side_effect_free

from ..dialect import UNROLLED

def defined_in(blocks: list[Block]) -> set[SSAValue]:
    """Every value the ops of `blocks` define, at any depth (results and block arguments)."""
    found: set[SSAValue] = set()
    for block in blocks:
        for op in block.walk():
            found.update(op.results)
            for region in op.regions:
                for inner in region.blocks:
                    found.update(inner.args)
    return found


class _Positions:
    """Where each value an iteration defines sits: (op number, result) or (block number, arg)."""

    def __init__(self, block: Block) -> None:
        self.ops = list(block.walk())
        self.blocks: list[Block] = [inner for op in self.ops for region in op.regions for inner in region.blocks]
        self.of: dict[SSAValue, tuple[int, ...]] = {}
        for n, op in enumerate(self.ops):
            for r, result in enumerate(op.results):
                self.of[result] = (0, n, r)
        for n, inner in enumerate(self.blocks):
            for k, arg in enumerate(inner.args):
                self.of[arg] = (1, n, k)


def rolled(blocks: list[Block], start: int, step: int, name: str) -> tuple[scf.ForOp, list[Operation]] | None:
    """The loop standing for `blocks` (iteration i's ops, for the index value start + i·step),
    and the ops it needs before it (its bounds); None if the iterations differ otherwise than in
    integer constants affine in the index. The first block's ops move into the loop's body."""
    if len(blocks) < 2:
        return None
    positions = [_Positions(b) for b in blocks]
    first = positions[0]
    count = len(first.ops)
    if count == 0 or any(len(p.ops) != count or len(p.blocks) != len(first.blocks) for p in positions):
        return None
    varying: dict[int, tuple[int, int, tuple[int, ...]]] = {}  # op number -> its `_index_form`
    for n in range(count):
        ops = [p.ops[n] for p in positions]
        model = ops[0]
        if any(not _same_shape(model, op) for op in ops[1:]):
            return None
        for k, operand in enumerate(model.operands):
            where = first.of.get(operand)
            for p, op in zip(positions[1:], ops[1:]):
                other = op.operands[k]
                if where is None:
                    if other is not operand:  # a value from before the loop: the same in every iteration
                        return None
                elif p.of.get(other) != where:  # a value of its own iteration, from the same place
                    return None
        if isinstance(model, arith.ConstantOp) and any(op.value != model.value for op in ops[1:]):
            form = _index_form([op.value for op in ops], start, step)
            if form is None:
                return None
            varying[n] = form
        elif any(op.properties != model.properties or op.attributes != model.attributes for op in ops[1:]):
            return None
    return _build(blocks, first, varying, start, step, name)


def _same_shape(a: Operation, b: Operation) -> bool:
    """Same kind, operand count, result types and regions (blocks and their arguments' types)."""
    return type(a) is type(b) and len(a.operands) == len(b.operands) and \
        [r.type for r in a.results] == [r.type for r in b.results] and \
        [[[x.type for x in block.args] for block in region.blocks] for region in a.regions] == \
        [[[x.type for x in block.args] for block in region.blocks] for region in b.regions]


def _index_form(values: list[Any], start: int, step: int) -> tuple[int, int, tuple[int, ...]] | None:
    """(c, s, bits) with value i = c + s·(start + i·step) + Σ_k bits[k]·(bit k of i) for every
    iteration i, if the values are 32-bit integers of that form: affine in the index (s), or,
    over a power-of-two count of iterations, affine in the index's bits (an element's offset
    in a tile whose modes each take one bit of the index, as the modes of an MMA atom's
    fragments do)."""
    if any(not isinstance(v, builtin.IntegerAttr) or v.type != builtin.i32 for v in values):
        return None
    numbers = [v.value.data for v in values]
    delta = numbers[1] - numbers[0]
    if all(b - a == delta for a, b in zip(numbers, numbers[1:])) and delta % step == 0:
        return numbers[0] - delta // step * start, delta // step, ()
    count = len(numbers)
    if count & (count - 1) or start != 0 or step != 1:
        return None
    bits = tuple(numbers[1 << k] - numbers[0] for k in range(count.bit_length() - 1))
    if any(numbers[i] != numbers[0] + sum(b for k, b in enumerate(bits) if i >> k & 1) for i in range(count)):
        return None
    return numbers[0], 0, bits


def _build(blocks: list[Block], first: _Positions, varying: dict[int, tuple[int, int, tuple[int, ...]]],
           start: int, step: int,
           name: str) -> tuple[scf.ForOp, list[Operation]]:
    body = Block(arg_types=[builtin.i32])
    index = body.args[0]
    index.name_hint = name
    own = blocks[0]
    for op in list(own.ops):
        op.detach()
        body.add_op(op)
    for n, form in varying.items():
        constant = first.ops[n]
        assert isinstance(constant, arith.ConstantOp)
        parent = constant.parent
        assert parent is not None
        made = _index_expression(index, *form)
        parent.insert_ops_before(made, constant)
        constant.results[0].replace_all_uses_with(made[-1].results[0])
        parent.erase_op(constant)
    hoisted = _invariant(body)
    body.add_op(scf.YieldOp())
    for block in blocks[1:]:
        for op in reversed(list(block.ops)):
            block.erase_op(op, safe_erase=False)
    bounds = [arith.ConstantOp(builtin.IntegerAttr(v, builtin.i32))
              for v in (start, start + len(blocks) * step, step)]
    loop = scf.ForOp(bounds[0].result, bounds[1].result, bounds[2].result, [], Region(body))
    loop.attributes[UNROLLED] = builtin.UnitAttr()
    return loop, [*bounds, *hoisted]


def _invariant(body: Block) -> list[Operation]:
    """The ops of `body` that compute the same value in every iteration (pure, reading only
    values from before the loop or of other such ops), taken out of it, in order: computed once
    before the loop, as common-subexpression elimination leaves them in the unrolled code."""
    inside: set[SSAValue] = set(body.args)
    out: list[Operation] = []
    for op in list(body.ops):
        if op.regions or not is_side_effect_free(op) or any(v in inside for v in op.operands):
            inside.update(op.results)
            continue
        op.detach()
        out.append(op)
    return out


def _index_expression(index: BlockArgument, offset: int, slope: int, bits: tuple[int, ...]) -> list[Operation]:
    """Ops computing offset + slope·index + Σ_k bits[k]·(bit k of index) (the last one's result)."""
    made: list[Operation] = []

    def constant(value: int) -> SSAValue:
        made.append(arith.ConstantOp(builtin.IntegerAttr(value, builtin.i32)))
        return made[-1].results[0]

    def add(term: SSAValue | None, value: SSAValue) -> SSAValue:
        if term is None:
            return value
        made.append(arith.AddiOp(term, value))
        return made[-1].results[0]

    total: SSAValue | None = None
    if slope:
        total = index
        if slope != 1:
            made.append(arith.MuliOp(index, constant(slope)))
            total = made[-1].results[0]
    for k, weight in enumerate(bits):
        if weight:
            bit: SSAValue = index
            if k:
                made.append(arith.ShRSIOp(index, constant(k)))
                bit = made[-1].results[0]
            made.append(arith.AndIOp(bit, constant(1)))
            made.append(arith.MuliOp(made[-1].results[0], constant(weight)))
            total = add(total, made[-1].results[0])
    if offset or total is None:
        total = add(total, constant(offset))
    if not made:  # the index itself: its value is the constant's
        made.append(arith.AddiOp(index, constant(0)))
    return made

