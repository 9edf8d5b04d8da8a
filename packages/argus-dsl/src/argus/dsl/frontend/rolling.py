"""Static loops kept rolled: a ``static_range`` loop whose iterations differ only in constants.

The front-end reads a ``static_range`` body once per iteration, as Python would run it. When
every iteration built the same ops — same kinds, properties and types, reading the same values
from before the loop or the same results of their own iteration — and they differ only in
integer constants and sub-tile offsets of one index form (affine in the index, or in its bits),
the iterations are one loop body: the first iteration's ops, each such constant computed from
the index. The loop is then an ``scf.for`` marked `dialect.UNROLLED`, which every consumer
treats as the unrolled code it stands for: the checker walks its iterations together, the
interpreter runs them in order, and the backends unroll it before lowering
(`passes.unroll_static_loops`). Fewer ops make every consumer faster; nothing changes what the
kernel computes.
"""

from __future__ import annotations

from typing import Any

from argus.layout import ComposedLayout, Swizzle
from xdsl.dialects import arith, builtin, scf
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.traits import is_side_effect_free

from ..ir import dialect as D
from ..ir.dialect import UNROLLED
from ..ir.layout_texts import unswizzled


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


def rolled(blocks: list[Block], start: int, step: int, name: str, located: dict[Operation, Any]
           ) -> tuple[scf.ForOp, list[Operation]] | None:
    """The loop standing for `blocks` (iteration i's ops, for the index value start + i·step),
    and the ops it needs before it (its bounds, what every iteration computes alike); None if
    the iterations differ otherwise than in integer constants and sub-tile offsets of an index
    form (`_index_form`). The first block's ops move into the loop's body; the ops made in
    place of others take their source locations (`located`)."""
    if len(blocks) < 2:
        return None
    positions = [_Positions(b) for b in blocks]
    first = positions[0]
    count = len(first.ops)
    if count == 0 or any(len(p.ops) != count or len(p.blocks) != len(first.blocks) for p in positions):
        return None
    if not all(map(_rolls, first.ops)):
        return None
    varying: dict[int, tuple[int, int, tuple[int, ...]]] = {}  # constant's op number -> its `_index_form`
    sliding: dict[int, tuple[D.TileType, tuple[int, int, tuple[int, ...]]]] = {}  # sub-tiles: base type, form
    for n in range(count):
        ops = [p.ops[n] for p in positions]
        model = ops[0]
        if isinstance(model, D.SliceOp) and any(op.result.type != model.result.type for op in ops[1:]):
            found = _slice_form(ops, start, step)
            if found is None or any(len(op.operands) != len(model.operands) for op in ops[1:]):
                return None
            sliding[n] = found
        elif any(not _same_shape(model, op) for op in ops[1:]):
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
            form = _index_form([_integer(op.value) for op in ops], start, step)
            if form is None:
                return None
            varying[n] = form
        elif any(op.properties != model.properties or op.attributes != model.attributes for op in ops[1:]):
            return None
    return _build(blocks, first, varying, sliding, start, step, name, located)


_ROLLING_DIALECTS = frozenset(("arith", "math", "argus"))
"""The dialects whose ops a rolled loop may hold (a target's intrinsics keep theirs unrolled)."""


def _rolls(op: Operation) -> bool:
    """Whether a loop body may hold `op` and stay rolled: ops of the kernel's own dialects, and
    static loops kept rolled; not runtime branches or loops, which a check would walk one
    iteration at a time."""
    if isinstance(op, scf.ForOp):
        return D.is_unrolled(op)
    return isinstance(op, scf.YieldOp) or op.name.partition(".")[0] in _ROLLING_DIALECTS


def _integer(value: Any) -> int | None:
    """A 32-bit integer constant's value (None: another kind of constant)."""
    return value.value.data if isinstance(value, builtin.IntegerAttr) and value.type == builtin.i32 else None


def _slice_form(ops: list[D.SliceOp], start: int, step: int) -> tuple[D.TileType, tuple[int, int, tuple[int, ...]]] | None:
    """The type of a sub-tile that starts where the loop's index says, and the index form of
    where (`_index_form`), if the iterations' sub-tiles differ only in their offsets."""
    parts = [(op.result.type, *_offset_apart(op.result.type.layout)) for op in ops]
    kinds = {(t.space.data, t.dtype, str(outer), str(inner)) for t, outer, _, inner in parts}
    form = _index_form([offset for _, _, offset, _ in parts], start, step) if len(kinds) == 1 else None
    if form is None:
        return None
    t, outer, _, inner = parts[0]
    base = inner if unswizzled(t.layout) else ComposedLayout(outer, 0, inner)
    return D.TileType.of(t.space.data, t.dtype, base), form


def _offset_apart(layout: Any) -> tuple[Any, int, Any]:
    """A sub-tile's layout as (outer, offset, inner): its swizzle, where it starts, its shape."""
    if isinstance(layout, ComposedLayout):
        return layout.outer, layout.offset, layout.inner
    return Swizzle(0, 0, 0), 0, layout


def _same_shape(a: Operation, b: Operation) -> bool:
    """Same kind, operand count, result types and regions (blocks and their arguments' types)."""
    return type(a) is type(b) and len(a.operands) == len(b.operands) and \
        [r.type for r in a.results] == [r.type for r in b.results] and \
        [[[x.type for x in block.args] for block in region.blocks] for region in a.regions] == \
        [[[x.type for x in block.args] for block in region.blocks] for region in b.regions]


def _index_form(values: list[int | None], start: int, step: int) -> tuple[int, int, tuple[int, ...]] | None:
    """(c, s, bits) with value i = c + s·(start + i·step) + Σ_k bits[k]·(bit k of i) for every
    iteration i, if the values are integers of that form: affine in the index (s), or, over a
    power-of-two count of iterations, affine in the index's bits (an element's offset in a
    tile whose modes each take one bit of the index, as the modes of an MMA atom's fragments
    do)."""
    if any(v is None for v in values):
        return None
    numbers: list[int] = values  # type: ignore[assignment]
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
           sliding: dict[int, tuple[D.TileType, tuple[int, int, tuple[int, ...]]]], start: int, step: int, name: str,
           located: dict[Operation, Any]) -> tuple[scf.ForOp, list[Operation]]:
    body = Block(arg_types=[builtin.i32])
    index = body.args[0]
    index.name_hint = name
    own = blocks[0]
    for op in list(own.ops):
        op.detach()
        body.add_op(op)
    replaced: list[tuple[Operation, list[Operation]]] = []
    for n, form in varying.items():
        replaced.append((first.ops[n], _index_expression(index, *form)))
    for n, (base, form) in sliding.items():
        sub = first.ops[n]
        made = _index_expression(index, *form)
        if sub.operands[1:]:  # (a sub-tile of a rolled loop inside: its start grows by this loop's part)
            made.append(arith.AddiOp(sub.operands[1], made[-1].results[0]))
        made.append(D.SliceOp.create(operands=[sub.operands[0], made[-1].results[0]], result_types=[base]))
        replaced.append((sub, made))
    for old, made in replaced:
        parent = old.parent
        assert parent is not None
        parent.insert_ops_before(made, old)
        old.results[0].replace_all_uses_with(made[-1].results[0])
        if old in located:
            for op in made:
                located[op] = located[old]
        parent.erase_op(old)
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
    """Ops computing offset + slope·index + Σ_k bits[k]·(bit k of index) (the last one's result).
    Their shape depends on which terms the form has, not on its numbers: the same expression
    in every iteration of a loop around this one differs in constants only, so that loop can
    roll too (canonicalization drops a product by one and a sum with zero)."""
    made: list[Operation] = []

    def constant(value: int) -> SSAValue:
        made.append(arith.ConstantOp(builtin.IntegerAttr(value, builtin.i32)))
        return made[-1].results[0]

    terms: list[SSAValue] = []
    if slope:
        made.append(arith.MuliOp(index, constant(slope)))
        terms.append(made[-1].results[0])
    for k, weight in enumerate(bits):
        if weight:
            made.append(arith.ShRSIOp(index, constant(k)))
            made.append(arith.AndIOp(made[-1].results[0], constant(1)))
            made.append(arith.MuliOp(made[-1].results[0], constant(weight)))
            terms.append(made[-1].results[0])
    total = constant(offset)
    for term in terms:
        made.append(arith.AddiOp(term, total))
        total = made[-1].results[0]
    return made
