"""Integer and index rules: the symbolic forms of integer ops (affine where they can be, exact on
numbers through the table `argus.dsl.ops.integers` defines, as the interpreter computes them),
casts, constants, thread, block, lane and warp indices, and tensor sizes. Tag functions use
`INT_RULES` too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from argus.verify import reductions, sums
from argus.verify.affine import Affine, Space
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Operation

from ..ir.types import dtype_of_mlir
from ..ops import integers
from .state import byte_width
from .state import by_type, is_int

if TYPE_CHECKING:
    from typing import Any
    from ..ir import dialect as D
    from .analysis import TagAnalysis
    from .rules import Rule
    from .state import GlobalRef


IntRule = Callable[[Space, Operation, list[Affine]], Affine]


def _shift_left(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    a, b = args
    if b.concrete and (b.const >= 0).all() and (b.const < 62).all():
        return sp.scale(a, np.left_shift(1, b.const))
    return sp.binary("shl", a, b, lambda x, y: np.left_shift(x, np.clip(y, 0, 62)))


def _shift_right(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    a, b = args
    if b.concrete and (b.const >= 0).all() and (b.const < 62).all():
        return sp.floordiv(a, sp.constant(np.left_shift(1, b.const), len(a)))
    return sp.binary("shr", a, b, lambda x, y: np.right_shift(x, np.clip(y, 0, 62)))


def _and(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    a, b = args
    for x, y in ((a, b), (b, a)):
        if not x.concrete and y.concrete and ((y.const & (y.const + 1)) == 0).all() and (y.const >= 0).all():
            return sp.mod(x, sp.constant(y.const + 1, len(a)))  # x & (2^k - 1) = x mod 2^k
    return sp.binary("and", a, b, np.bitwise_and)


def _compare(kind: str, swap: bool = False) -> IntRule:
    fn = {"lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal}[kind]

    def rule(sp: Space, op: Operation, args: list[Affine]) -> Affine:
        a, b = args[::-1] if swap else args
        if kind in ("eq", "ne"):
            d = sp.sub(a, b)
            if d.concrete:
                return Affine(fn(d.const, 0).astype(np.int64))
        return sp.binary(kind, a, b, lambda x, y: fn(x, y).astype(np.int64))

    return rule


_CMP_RULES = {0: _compare("eq"), 1: _compare("ne"), 2: _compare("lt"), 3: _compare("le"), 4: _compare("lt", True),
              5: _compare("le", True), 6: _compare("lt"), 7: _compare("le"), 8: _compare("lt", True),
              9: _compare("le", True)}


def _cmpi(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    return _CMP_RULES[op.predicate.value.data](sp, op, args)  # type: ignore[attr-defined]


def select_int(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    c, a, b = args
    if c.concrete:
        pick = c.const != 0
        terms = {t: np.where(pick, a.terms.get(t, 0), b.terms.get(t, 0)) for t in set(a.terms) | set(b.terms)}
        return Affine(np.where(pick, a.const, b.const), {t: v for t, v in terms.items() if v.any()})
    n = len(c)
    out_const = np.zeros(n, np.int64)
    out_terms: dict[int, np.ndarray] = {}
    for p in range(n):
        key = sp.atom_key("select", c.row(p), a.row(p), b.row(p))
        if c.row(p)[1] == ():
            key = a.row(p) if c.row(p)[0] else b.row(p)
        out_const[p] = key[0]
        for atom, coef in key[1]:
            out_terms.setdefault(atom, np.zeros(n, np.int64))[p] = coef
    return Affine(out_const, out_terms)


def _binary(kind: str) -> IntRule:
    """An op kept symbolic as an atom of `kind`, computed on numbers as the table defines it."""
    def rule(sp: Space, op: Operation, args: list[Affine]) -> Affine:
        return sp.binary(kind, args[0], args[1], numeric_rule(op))  # type: ignore[arg-type]

    return rule


def _method(name: str) -> IntRule:
    def rule(sp: Space, op: Operation, args: list[Affine]) -> Affine:
        return getattr(sp, name)(args[0], args[1])  # type: ignore[no-any-return]

    return rule


INT_RULES: dict[type, IntRule] = {
    arith.AddiOp: _method("add"), arith.SubiOp: _method("sub"), arith.MuliOp: _method("mul"),
    arith.FloorDivSIOp: _method("floordiv"), arith.DivUIOp: _method("floordiv"),
    arith.DivSIOp: _binary("tdiv"),  # truncates: the quotient's remainder has the dividend's sign
    arith.RemUIOp: _method("mod"),
    arith.RemSIOp: _binary("rem"),
    arith.AndIOp: _and, arith.OrIOp: _binary("or"), arith.XOrIOp: _binary("xor"),
    arith.ShLIOp: _shift_left, arith.ShRSIOp: _shift_right, arith.ShRUIOp: _shift_right,
    arith.MinSIOp: _binary("min"), arith.MaxSIOp: _binary("max"),
    arith.MinUIOp: _binary("min"), arith.MaxUIOp: _binary("max"),
    arith.CmpiOp: _cmpi, arith.SelectOp: select_int,
}
"""Symbolic forms: exact for the signed ops while nothing overflows (docs/verify.md); the
unsigned ones read their operands as the signed numbers held (exact while those are not
negative). Numbers are computed with `numeric_rule`, as `argus.dsl.ops.integers` defines them
(`_on_numbers`, below)."""


_BITS: dict[int, tuple[Any, Any]] = {}


def numeric_rule(op: Operation) -> Callable[..., np.ndarray] | None:
    """What an integer op computes on numbers (int64, as the checker holds them), from the one
    table the interpreter reads too: wrapping at the op's width, the table's answer where the
    op is undefined (a division by 0 divides by 1). None for `select`, which is not arithmetic.
    The table makes each op's function once per width (`IntegerOp.on_int64`)."""
    kind = integers.INTEGER_OPS.get(type(op))
    if kind is not None:
        result, = op.results  # (unpacked: xDSL's indexing runs Python)
        return kind.on_int64(by_type(_BITS, result.type, _bits_of_type))
    if isinstance(op, arith.CmpiOp):
        return integers.comparison_on_int64(op.predicate.value.data, by_type(_BITS, op.lhs.type, _bits_of_type))
    return None


def _bits_of_type(t: Any) -> int:
    return integers.width_of(t)


def _on_numbers(rule: IntRule) -> IntRule:
    """`rule`, except that numbers at every point are computed as `numeric_rule` says (the
    symbolic forms compute with unbounded integers, which a wrapped number is not)."""
    def exact(sp: Space, op: Operation, args: list[Affine]) -> Affine:
        for x in args:  # (a loop: a generator costs the walk more than the test)
            if not x.concrete:
                return rule(sp, op, args)
        numbers = numeric_rule(op)
        if numbers is not None:
            return Affine(numbers(*[x.const for x in args]))
        return rule(sp, op, args)

    return exact


INT_RULES = {kind: _on_numbers(rule) for kind, rule in INT_RULES.items()}


def int_op_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    operands, results = a.shape(op)
    if not is_int(results[0]):
        if isinstance(op, arith.SelectOp):
            return _select(a, op, mask)  # type: ignore[arg-type]
        return a.computed(op)
    values = a.values
    args = [values.get(v) for v in operands]
    numbers = a.preparation.read(op, numeric_rule)
    if numbers is not None and all(type(x) is Affine and not x.terms for x in args):
        # numbers for every thread: numpy alone, and ⊥ tags unless an operand carries some
        result = Affine(numbers(*(x.const for x in args)))  # type: ignore[union-attr]
        if any(v in a.tags for v in operands):
            a.set_int(op, result)
        else:
            values[results[0]] = result
            a.tags.pop(results[0], None)
        return
    args = [x if isinstance(x, Affine) else a.int_value(v, op) for x, v in zip(args, operands)]
    value = a.remembered(op, args, lambda: INT_RULES[type(op)](a.space, op, args))  # a later pass: the same operands
    if isinstance(op, arith.SelectOp):
        a.values[op.result] = value
        _select_tags(a, op, args[0])
        return
    a.set_int(op, value)


def _select(a: TagAnalysis, op: arith.SelectOp, mask: np.ndarray) -> None:
    cond = a.values.get(a.shape(op)[0][0])
    a.values[op.result] = None
    _select_tags(a, op, cond if isinstance(cond, Affine) else None)


def _select_tags(a: TagAnalysis, op: arith.SelectOp, cond: Affine | None) -> None:
    _, lhs_ssa, rhs_ssa = a.shape(op)[0]  # operands through `shape`: copies run together substitute them
    from .access import cleared  # (a float 0.0 chosen is a cleared zero, as one stored into registers)

    lhs, rhs = (cleared(a.table, v, a.tags_of(v), True) for v in (lhs_ssa, rhs_ssa))
    if cond is not None and cond.concrete:
        a.tags[op.result] = np.where((cond.const != 0)[:, None], lhs, rhs)
    else:
        a.tags[op.result] = a.joined(lhs, rhs)


def constant_rule(a: TagAnalysis, op: arith.ConstantOp, mask: np.ndarray) -> None:
    value = a.memo.get(op)
    result = a.shape(op)[1][0]
    if value is None:
        number = a.preparation.read(op, integer_constant)
        value = a.memo[op] = (None if number is None else Affine(np.full(a.n, number, np.int64)),)
    a.values[result] = value[0]
    a.tags.pop(result, None)


def integer_constant(op: arith.ConstantOp) -> int | None:
    """An integer constant's value (None for a float)."""
    return int(op.value.value.data) if is_int(op.result) else None  # type: ignore[union-attr]


def cast_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    source = a.shape(op)[0][0]
    value = a.values.get(source) if is_int(source) and is_int(op.results[0]) else None
    kind = integers.INTEGER_CASTS.get(type(op))
    if kind is not None and isinstance(value, Affine) and value.concrete:  # numbers: as the table converts them
        bits_in, bits_out = (by_type(_BITS, v.type, _bits_of_type) for v in (source, op.results[0]))
        value = Affine(kind(value.const, bits_in, bits_out).astype(np.int64))
    elif isinstance(op, arith.TruncIOp) and isinstance(value, Affine):  # wraps: exact for numbers only
        value = a.space.opaque(f"a narrowed integer at {a.where(op)}", a.n)
    elif isinstance(op, arith.ExtUIOp) and value is not None:  # a negative number changes
        value = None
    elif isinstance(op, arith.ExtSIOp) and isinstance(value, Affine) and by_type(_BITS, source.type, _bits_of_type) == 1:
        value = a.space.scale(value, -1)  # a condition held as 1 is -1 once widened with its sign
    a.values[op.results[0]] = value
    if isinstance(op, (arith.FPToSIOp, arith.FPToUIOp)):
        a.values[op.results[0]] = a.space.opaque(f"float converted at {a.where(op)}", a.n)
    a.computed(op, a.values[op.results[0]])
    if isinstance(op, (arith.ExtFOp, arith.TruncFOp)) and a.table.asserted:
        kept = product_cast(a.table, a.tags.get(source), op.results[0])
        if kept is not None:
            a.tags[op.results[0]] = kept


def product_cast(table: Any, tags: np.ndarray | None, result: Any) -> np.ndarray | None:
    """A float conversion of values that all hold products (an accumulator rounded to bf16 for
    its store): the same products, laid out at the new width (`argus.verify.products`)."""
    if tags is None:
        return None
    return table.products.resized(tags, byte_width(result))


def index_rule(kind: str) -> Rule:
    def rule(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
        axis = "xyz".index(op.dim.data)
        sp = a.space
        if kind == "thread" or kind == "block_dim":
            value = Affine(a.launch.numbers(op))  # type: ignore[arg-type]
        elif kind == "block":
            value = sp.of_symbol(a.block_symbols[axis], a.n)
            if a.cluster[axis] > 1:  # the cluster's first block, plus the block's place in it
                cx, cy, _ = a.cluster
                place = (a.ranks % cx, a.ranks // cx % cy, a.ranks // (cx * cy))[axis]
                value = sp.add(sp.scale(value, a.cluster[axis]), sp.constant(place, a.n))
        else:
            value = sp.scale(sp.of_symbol(a.grid_symbols[axis], a.n), a.cluster[axis])
        a.values[op.result] = value
        a.tags.pop(op.result, None)

    return rule


def lane_or_warp_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    a.values[op.results[0]] = Affine(a.launch.numbers(op))  # type: ignore[arg-type]
    a.tags.pop(op.results[0], None)


def dim_rule(a: TagAnalysis, op: D.DimOp, mask: np.ndarray) -> None:
    ref: GlobalRef = a.values[op.tensor]
    a.values[op.result] = ref.dims[op.index.data]
    a.tags.pop(op.result, None)


def _tagged_float(a: TagAnalysis, op: Operation) -> tuple[Any, Any, np.ndarray] | None:
    """A float op's result as computed data, and, where a claim may read what it holds (a
    kernel with `assert_tags`) and it holds data at all, its operands and those tags."""
    a.computed(op)
    if not a.table.asserted:
        return None
    computed = a.tags.get(op.results[0])
    if computed is None:
        return None
    lhs, rhs = a.shape(op)[0]
    return lhs, rhs, computed


def sum_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """A float sum: computed data, except that two values each a whole tagged element (or a sum)
    add up to their sum (`argus.verify.sums`), which a claim may name (``sum_of``)."""
    found = _tagged_float(a, op)
    if found is None:
        return
    lhs, rhs, computed = found
    number = dtype_of_mlir(op.results[0].type).name
    added = sums.added(a.table, a.tags.get(lhs), a.tags.get(rhs), number)
    if added is not None:
        computed = a.tags[op.results[0]] = np.where(added >= 0, added, computed)
    _kept(a, op, computed, reductions.added(a.table, a.tags.get(lhs), a.tags.get(rhs), number))


def _kept(a: TagAnalysis, op: Operation, computed: np.ndarray, found: np.ndarray | None) -> None:
    """`found` (a reduction rule's byte tags, -1 rows none) where it holds, `computed` elsewhere."""
    if found is not None:
        a.tags[op.results[0]] = np.where(found >= 0, found, computed)


def _reduction_pair(a: TagAnalysis, op: Operation, combine: Any) -> None:
    """A binary float op: computed data, except where `combine` (a rule of
    `argus.verify.reductions`, given both sides' tags and the result's type) finds more."""
    found = _tagged_float(a, op)
    if found is not None:
        lhs, rhs, computed = found
        _kept(a, op, computed, combine(a.table, a.tags.get(lhs), a.tags.get(rhs), dtype_of_mlir(op.results[0].type).name))


def max_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """A float maximum: computed data, except that a row's maximum over the columns it covers
    takes in an element of the row or another maximum of it (`argus.verify.reductions`)."""
    _reduction_pair(a, op, reductions.maximum)


def difference_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """A float difference: computed data, except an element of a row less a reduction, the start
    of a softmax's term (`argus.verify.reductions`)."""
    _reduction_pair(a, op, reductions.subtracted)


def exp2_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """``exp2``: computed data, except of a difference of an element and a reduction: a term."""
    a.computed(op)
    computed = a.tags.get(op.results[0])
    if a.table.asserted and computed is not None:
        _kept(a, op, computed, reductions.exponential(a.table, a.tags.get(a.shape(op)[0][0]),
                                                      dtype_of_mlir(op.results[0].type).name))


def float_constant(value: Any) -> float | None:
    """The value of a float constant (None for anything else, copies gathered over a loop too)."""
    owner = getattr(value, "owner", None)
    attr = getattr(owner, "value", None) if isinstance(owner, arith.ConstantOp) else None
    return float(attr.value.data) if isinstance(attr, FloatAttr) else None


def scale_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """A float product or quotient: computed data, except that a product (of matrices) scaled by
    a value holding none stays that product (`argus.verify.products.Products.scaled`)."""
    found = _tagged_float(a, op)
    if found is None:
        return
    lhs, rhs, computed = found
    if nonfinite(lhs, rhs):
        return
    if zeroes(op, lhs, rhs):
        a.tags[op.results[0]] = zeroed(a.table, computed)
        return
    if over_zero(op, rhs):
        return
    kept = a.table.products.scaled(a.tags.get(lhs), a.tags.get(rhs), computed, isinstance(op, arith.MulfOp))
    if kept is not None:
        computed = a.tags[op.results[0]] = kept
    _kept(a, op, computed, reductions.scaled(a.table, a.tags.get(lhs), a.tags.get(rhs),
                                             dtype_of_mlir(op.results[0].type).name, isinstance(op, arith.MulfOp),
                                             (float_constant(lhs), float_constant(rhs))))


def zeroes(op: Operation, lhs: Any, rhs: Any) -> bool:
    """Whether a float product or quotient is zero for being scaled by the constant zero
    (``acc * 0.0``, ``0.0 / x``): nothing summed (`argus.verify.products.ZERO`), not a product."""
    from .run_plan import float_zero

    return float_zero(lhs) or (isinstance(op, arith.MulfOp) and float_zero(rhs))


def nonfinite(lhs: Any, rhs: Any) -> bool:
    """Whether a float product or quotient has a constant NaN or infinity for an operand
    (``acc * float("nan")``, ``acc / float("inf")``): no number, or zero, not a scale of what the
    other operand holds (computed data)."""
    from .run_plan import float_nonfinite

    return float_nonfinite(lhs) or float_nonfinite(rhs)


def over_zero(op: Operation, rhs: Any) -> bool:
    """Whether a float quotient divides by the constant zero (``acc / 0.0``): no number, so no
    product and nothing summed either, whatever the dividend holds (computed data)."""
    from .run_plan import float_zero

    return isinstance(op, arith.DivfOp) and float_zero(rhs)


def zeroed(table: Any, computed: np.ndarray) -> np.ndarray:
    """`computed` (a scale's tags) where it is zero for a zero scale (`zeroes`): `ZERO`, except
    where every input is a constant (⊥ stays)."""
    constant = (computed == 0).all(axis=-1, keepdims=True)
    return np.where(constant, computed, table.products.zero_bytes(computed.shape[-1]))
