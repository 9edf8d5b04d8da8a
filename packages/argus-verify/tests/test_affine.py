"""Laws of symbolic affine integers: every operation, evaluated at any symbol values, agrees with
the same operation on the evaluated operands (Python floor semantics); substitution agrees with
evaluation; canonical forms give equal quantities equal keys."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.verify.affine import Affine, Key, Space, Uniform, distinct_rows, runs, unique_rows

N = 4
"""Points per value: enough for concrete and symbolic points to mix in one `Affine`."""

Draw = Callable[[st.SearchStrategy[Any]], Any]

LAWS = settings(max_examples=40, deadline=None, derandomize=True, database=None)

BINARY: dict[str, tuple[Callable[[Space, Affine, Affine], Affine], Callable[[int, int], int]]] = {
    "add": (lambda sp, a, b: sp.add(a, b), lambda x, y: x + y),
    "sub": (lambda sp, a, b: sp.sub(a, b), lambda x, y: x - y),
    "mul": (lambda sp, a, b: sp.mul(a, b), lambda x, y: x * y),
    "min": (lambda sp, a, b: sp.binary("min", a, b, np.minimum), min),
    "max": (lambda sp, a, b: sp.binary("max", a, b, np.maximum), max),
    "xor": (lambda sp, a, b: sp.binary("xor", a, b, np.bitwise_xor), lambda x, y: x ^ y),
    "and": (lambda sp, a, b: sp.binary("and", a, b, np.bitwise_and), lambda x, y: x & y),
    "or": (lambda sp, a, b: sp.binary("or", a, b, np.bitwise_or), lambda x, y: x | y),
}
DIVISION: dict[str, tuple[Callable[[Space, Affine, Affine], Affine], Callable[[int, int], int]]] = {
    "floordiv": (lambda sp, a, b: sp.floordiv(a, b), lambda x, y: x // y),
    "mod": (lambda sp, a, b: sp.mod(a, b), lambda x, y: x % y),
}


@dataclass
class Program:
    """A space with symbols x, y (free) and d (a positive divisor), values built from them."""

    space: Space
    symbols: list[int]
    pool: list[Affine]
    values: dict[int, int]

    def value(self, a: Affine, p: int) -> int:
        return self.space.evaluate(a.row(p), self.values)


def _linear(draw: Draw, prog: Program, coef: st.SearchStrategy[int], uniform: bool = False) -> Affine:
    """A per-point affine combination of the symbols; some points may come out concrete. A
    `uniform` one has the same form at every point (a size, a block index)."""
    sp = prog.space
    size = 1 if uniform else N
    consts = draw(st.lists(st.integers(-12, 12), min_size=size, max_size=size)) * (N // size)
    out = sp.constant(consts, N)
    for s in prog.symbols:
        cs = np.array(draw(st.lists(coef, min_size=size, max_size=size)) * (N // size), np.int64)
        out = sp.add(out, sp.scale(sp.of_symbol(s, N), cs))
    return out


def _uniform(draw: Draw, prog: Program) -> Uniform:
    """One symbolic form at every point, kept as its key (what sizes and block indices are)."""
    coefs = [(s, c) for s in prog.symbols if (c := draw(st.integers(-2, 2)))] or [(prog.symbols[0], 1)]
    return Uniform((draw(st.integers(-12, 12)), tuple(coefs)), N)


def _arrays(value: Affine) -> Affine:
    """The same value as arrays of every point's form."""
    return Affine(value.const.copy(), {t: c.copy() for t, c in value.terms.items()})


def _divisor(draw: Draw, prog: Program, mode: str) -> Affine:
    """A divisor nonzero for every value of d ≥ 1: constants, or ±(d + c) per point."""
    if mode == "one constant":  # the same positive divisor at every point
        return prog.space.constant(draw(st.integers(1, 9)), N)
    consts, coefs = [], []
    for _ in range(N):
        kind = mode if mode != "mixed" else draw(st.sampled_from(["positive", "constant", "symbolic"]))
        if kind == "positive":
            consts.append(draw(st.integers(1, 9)))
            coefs.append(0)
        elif kind == "constant":
            consts.append(draw(st.integers(1, 9)) * draw(st.sampled_from([-1, 1])))
            coefs.append(0)
        else:
            sign = draw(st.sampled_from([-1, 1]))
            consts.append(sign * draw(st.integers(0, 3)))
            coefs.append(sign)
    sp = prog.space
    d = sp.of_symbol(prog.symbols[2], N)
    return sp.add(sp.constant(consts, N), sp.scale(d, np.array(coefs, np.int64)))


def _program(draw: st.DrawFn) -> Program:
    """Random leaves, then a few random operations on them (so operands hold derived atoms)."""
    sp = Space()
    x = sp.symbol("x", "block", -20, 20)
    y = sp.symbol("y", "loop", -20, 20)
    d = sp.symbol("d", "size", 1, 7)
    values = {x: draw(st.integers(-20, 20)), y: draw(st.integers(-20, 20)), d: draw(st.integers(1, 7))}
    prog = Program(sp, [x, y, d], [], values)
    prog.pool = [_linear(draw, prog, st.integers(-2, 2)) for _ in range(3)]
    prog.pool.append(_linear(draw, prog, st.just(0)))  # a concrete operand
    prog.pool.append(_linear(draw, prog, st.integers(-2, 2), uniform=True))  # one form at every point
    prog.pool.append(_uniform(draw, prog))  # the same, kept as its key
    for _ in range(draw(st.integers(0, 3))):
        a, b = (draw(st.sampled_from(prog.pool)) for _ in range(2))
        kind = draw(st.sampled_from(sorted(BINARY) + sorted(DIVISION)))
        if kind in DIVISION:
            prog.pool.append(DIVISION[kind][0](sp, a, _divisor(draw, prog, "mixed")))
        else:
            prog.pool.append(BINARY[kind][0](sp, a, b))
    return prog


programs = st.composite(_program)()


def _check(prog: Program, result: Affine, a: Affine, b: Affine,
           reference: Callable[[int, int], int]) -> None:
    assert len(result) == N
    for p in range(N):
        assert prog.value(result, p) == reference(prog.value(a, p), prog.value(b, p)), f"point {p}"


def test_leaves_evaluate_to_their_affine_combination() -> None:
    """const + Σ coef·symbol, per point, evaluates to exactly that."""
    sp = Space()
    x, y = sp.symbol("x", "block"), sp.symbol("y", "block")
    v = sp.add(sp.constant([1, 2, 3], 3), sp.add(sp.scale(sp.of_symbol(x, 3), np.array([0, 2, -1])),
                                                sp.scale(sp.of_symbol(y, 3), 5)))
    assert v.row(0) == (1, ((y, 5),)) and not v.concrete
    assert [sp.evaluate(v.row(p), {x: 7, y: -2}) for p in range(3)] == [-9, 6, -14]
    assert sp.constant(4, 3).concrete and sp.constant(4, 3).row(2) == (4, ())


@pytest.mark.parametrize("kind", sorted(BINARY))
@LAWS
@given(st.data())
def test_binary_operation_agrees_with_python_on_evaluated_operands(kind: str,
                                                                   data: st.DataObject) -> None:
    """eval(op(a, b)) == op(eval(a), eval(b)) at every point, for add/sub/mul/min/max/xor/and/or."""
    prog = data.draw(programs)
    a, b = data.draw(st.sampled_from(prog.pool)), data.draw(st.sampled_from(prog.pool))
    build, reference = BINARY[kind]
    _check(prog, build(prog.space, a, b), a, b, reference)


@pytest.mark.parametrize("mode", ["positive", "constant", "symbolic", "mixed", "one constant"])
@pytest.mark.parametrize("kind", sorted(DIVISION))
@LAWS
@given(st.data())
def test_division_agrees_with_python_floor_semantics(kind: str, mode: str, data: st.DataObject) -> None:
    """eval(a // b) == eval(a) // eval(b) and likewise `%`, for constant and symbolic divisors."""
    prog = data.draw(programs)
    a = data.draw(st.sampled_from(prog.pool))
    b = _divisor(data.draw, prog, mode)
    build, reference = DIVISION[kind]
    _check(prog, build(prog.space, a, b), a, b, reference)


@pytest.mark.parametrize("kind", sorted(BINARY) + sorted(DIVISION))
@LAWS
@given(st.data())
def test_a_value_kept_as_one_key_computes_as_its_arrays_do(kind: str, data: st.DataObject) -> None:
    """Arithmetic on `Uniform` values (one form at every point, computed once on keys) gives every
    point the form the same arithmetic on their arrays gives, and stays one key."""
    prog = data.draw(programs)
    a = _uniform(data.draw, prog)
    if kind in DIVISION:
        b: Affine = data.draw(st.sampled_from([_divisor(data.draw, prog, "one constant"),
                                               Uniform((data.draw(st.integers(0, 3)), ((prog.symbols[2], 1),)), N)]))
        build, reference = DIVISION[kind]
    else:
        b = data.draw(st.sampled_from([_uniform(data.draw, prog), prog.space.constant(data.draw(st.integers(-5, 5)), N)]))
        build, reference = BINARY[kind]
    kept, spread = build(prog.space, a, b), build(prog.space, _arrays(a), _arrays(b))
    assert [kept.row(p) for p in range(N)] == [spread.row(p) for p in range(N)]
    assert type(kept) is Uniform or kept.concrete
    _check(prog, kept, a, b, reference)


@LAWS
@given(st.data())
def test_scale_multiplies_every_point(data: st.DataObject) -> None:
    """eval(scale(a, k)) == k·eval(a), for a scalar k and for one factor per point."""
    prog = data.draw(programs)
    a = data.draw(st.sampled_from(prog.pool))
    k = data.draw(st.integers(-5, 5))
    ks = np.array(data.draw(st.lists(st.integers(-5, 5), min_size=N, max_size=N)), np.int64)
    for p in range(N):
        assert prog.value(prog.space.scale(a, k), p) == k * prog.value(a, p)
        assert prog.value(prog.space.scale(a, ks), p) == int(ks[p]) * prog.value(a, p)


@LAWS
@given(st.data())
def test_substitution_agrees_with_evaluation(data: st.DataObject) -> None:
    """eval(substitute(e, s, r), V) == eval(e, V with s := eval(r, V)); s is gone unless r has it."""
    prog = data.draw(programs)
    sp, d = prog.space, prog.symbols[2]
    key = data.draw(st.sampled_from(prog.pool)).row(data.draw(st.integers(0, N - 1)))
    symbol = data.draw(st.sampled_from(prog.symbols))
    replacement: Key
    if symbol == d:  # keep the divisor positive
        replacement = (data.draw(st.integers(1, 7)), ()) if data.draw(st.booleans()) else (
            data.draw(st.integers(0, 3)), ((d, 1),))
    else:
        replacement = data.draw(st.sampled_from(prog.pool)).row(data.draw(st.integers(0, N - 1)))
    substituted = sp.substitute(key, symbol, replacement)
    moved = dict(prog.values)
    moved[symbol] = sp.evaluate(replacement, prog.values)
    assert sp.evaluate(substituted, prog.values) == sp.evaluate(key, moved)
    if symbol not in sp.atoms_of(replacement):
        assert symbol not in sp.atoms_of(substituted)


def test_substituting_a_constant_folds_derived_atoms() -> None:
    """A floor quotient whose operands become constant is a plain integer again."""
    sp = Space()
    h = sp.symbol("h", "block", 0, 31)
    half = sp.floordiv(sp.of_symbol(h, 1), sp.constant(2, 1)).row(0)
    assert sp.substitute(half, h, (9, ())) == (4, ())
    assert sp.substitute(half, h, (5, ((h, 2),))) == (2, ((h, 1),))  # (2h + 5) // 2 = h + 2


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.integers(1, 32), st.integers(-3, 3), st.integers(-100, 100))
def test_floor_division_splits_off_what_divides_exactly(c: int, m: int, r: int) -> None:
    """(c·m·k + r) // c has the key of m·k + r // c, and (c·m·k + r) % c that of r % c."""
    sp = Space()
    k = sp.symbol("k", "block", 0, 100)
    kk = sp.of_symbol(k, 1)
    e = sp.add(sp.scale(kk, c * m), sp.constant(r, 1))
    assert sp.floordiv(e, sp.constant(c, 1)).row(0) == sp.add(sp.scale(kk, m), sp.constant(r // c, 1)).row(0)
    assert sp.mod(e, sp.constant(c, 1)).row(0) == (r % c, ())


@pytest.mark.parametrize("r", [0, 3, 15])
def test_tile_offset_quotient_and_remainder_are_canonical(r: int) -> None:
    """(16·k + r) // 16 has k's key and (16·k + r) % 16 is the integer r, for 0 ≤ r < 16."""
    sp = Space()
    k = sp.symbol("kj", "block", 0, 63)
    kk = sp.of_symbol(k, 2)
    e = sp.add(sp.scale(kk, 16), sp.constant(r, 2))
    q, rem = sp.floordiv(e, sp.constant(16, 2)), sp.mod(e, sp.constant(16, 2))
    assert q.row(0) == q.row(1) == kk.row(0)
    assert rem.concrete and rem.const.tolist() == [r, r]


def test_a_remainder_by_a_constant_is_affine_in_the_quotient() -> None:
    """x % 5 == x - 5·(x // 5) as keys: no remainder atom for a solver to encode."""
    sp = Space()
    x = sp.symbol("x", "block", -50, 50)
    xx, five = sp.of_symbol(x, 1), sp.constant(5, 1)
    rem = sp.mod(xx, five).row(0)
    assert rem == sp.sub(xx, sp.scale(sp.floordiv(xx, five), 5)).row(0)
    assert {sp.atoms[a].kind for a in sp.atoms_of(rem)} == {"symbol", "floordiv"}


@pytest.mark.parametrize("kind", ["mul", "min", "max", "xor", "and", "or"])
def test_commutative_operations_do_not_depend_on_operand_order(kind: str) -> None:
    """op(a, b) and op(b, a) get the same key, and building it twice reuses the atom."""
    sp = Space()
    x, y = sp.symbol("x", "block"), sp.symbol("y", "block")
    a = sp.add(sp.of_symbol(x, 1), sp.constant(1, 1))
    b = sp.scale(sp.of_symbol(y, 1), 3)
    build = BINARY[kind][0]
    atoms = len(sp.atoms)
    assert build(sp, a, b).row(0) == build(sp, b, a).row(0) == build(sp, a, b).row(0)
    assert len(sp.atoms) == atoms + 1


def test_concrete_points_are_computed_exactly_beside_symbolic_ones() -> None:
    """Where both operands are concrete the result is an integer, even if other points are not."""
    sp = Space()
    x = sp.symbol("x", "block", 0, 9)
    a = sp.add(sp.constant([7, -7, 7], 3), sp.scale(sp.of_symbol(x, 3), np.array([0, 0, 1])))
    q = sp.floordiv(a, sp.constant(2, 3))
    assert q.row(0) == (3, ()) and q.row(1) == (-4, ()) and q.row(2)[1]
    assert q.symbolic_points().tolist() == [False, False, True]


def test_describe_writes_keys_as_people_do() -> None:
    """Coefficients as `16*kj`, unit coefficients bare, negative terms subtracted."""
    sp = Space()
    kj = sp.symbol("kj", "block", 0, 7)
    t = sp.symbol("t", "thread", 0, 127)
    k = sp.of_symbol(kj, 1)
    assert sp.describe(sp.add(sp.scale(k, 16), sp.constant(3, 1)).row(0)) == "16*kj + 3"
    assert sp.describe(sp.sub(sp.scale(k, 16), sp.constant(3, 1)).row(0)) == "16*kj - 3"
    assert sp.describe(sp.scale(k, -1).row(0)) == "-kj"
    assert sp.describe(sp.sub(k, sp.scale(sp.of_symbol(t, 1), 2)).row(0)) == "kj - 2*t"
    assert sp.describe((0, ())) == "0" and sp.describe(5) == "5"
    quarter = sp.floordiv(sp.of_symbol(t, 1), sp.constant(4, 1)).row(0)
    assert "t // 4" in sp.describe(quarter)


def test_symbol_names_are_made_unique() -> None:
    """Two symbols asked for under one name are told apart when described."""
    sp = Space()
    a, b = sp.symbol("k", "loop"), sp.symbol("k", "loop")
    assert a != b and sp.describe((0, ((a, 1),))) != sp.describe((0, ((b, 1),)))


def test_symbol_bounds_become_constraints() -> None:
    """lo ≤ s ≤ hi are the facts s - lo ≥ 0 and hi - s ≥ 0."""
    sp = Space()
    s = sp.symbol("s", "size", 2, 9)
    assert ("ge0", (-2, ((s, 1),))) in sp.constraints and ("ge0", (9, ((s, -1),))) in sp.constraints


@LAWS
@given(st.integers(1, 3), st.integers(0, 3000), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_distinct_rows_and_their_inverse_rebuild_the_rows(width: int, count: int, spread: int, seed: int) -> None:
    rows = np.random.default_rng(seed).integers(-spread, spread + 1, (count, width))
    unique, inverse = unique_rows(rows)
    assert (unique[inverse] == rows).all()
    assert len({tuple(r) for r in unique.tolist()}) == len(unique) == len({tuple(r) for r in rows.tolist()})


@LAWS
@given(st.integers(1, 3), st.integers(0, 3000), st.integers(0, 40), st.integers(0, 2**32 - 1))
def test_distinct_rows_come_in_order_of_first_appearance(width: int, count: int, spread: int, seed: int) -> None:
    rows = np.random.default_rng(seed).integers(-spread, spread + 1, (count, width))
    forms, inverse, first = distinct_rows(rows)
    assert (forms[inverse] == rows).all() and (rows[first] == forms).all()
    appearance: dict[tuple[int, ...], int] = {}
    for i, r in enumerate(rows.tolist()):
        appearance.setdefault(tuple(r), i)
    assert [tuple(r) for r in forms.tolist()] == list(appearance)
    assert first.tolist() == list(appearance.values())


def test_an_opaque_value_is_one_fresh_atom_per_point_made_when_first_read():
    sp = Space()
    x = sp.opaque("load", 3)
    assert len(sp.atoms) == 0 and not x.concrete and x.symbolic_points().all()  # nothing made yet
    y = sp.add(x, sp.constant(1, 3))
    assert len(sp.atoms) == 3 and len(x.terms) == 3  # made once, on first use
    assert [x.row(p) for p in range(3)] == [(0, ((a, 1),)) for a in sorted(x.terms)]
    assert [y.row(p)[0] for p in range(3)] == [1, 1, 1]
    assert len(sp.opaque("load", 3).terms.keys() & x.terms.keys()) == 0  # another value: other atoms


@LAWS
@given(st.lists(st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2)), min_size=1, max_size=40))
def test_the_forms_of_a_value_are_its_points_rows_once_each_in_order(points: list[tuple[int, int, int]]) -> None:
    sp = Space()
    a, b = (sp.symbol(name, "block", 0, 9) for name in "ab")
    value = Affine(np.array([p[0] for p in points]), {a: np.array([p[1] for p in points]),
                                                      b: np.array([p[2] for p in points])})
    forms, inverse = value.forms()
    assert [forms[i] for i in inverse.tolist()] == [value.row(p) for p in range(len(points))]
    assert forms == list(dict.fromkeys(value.row(p) for p in range(len(points))))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-2**40, 2**40), max_size=300), st.integers(1, 9), st.sampled_from([(-1,), (-1, 3)]))
def test_runs_count_up_from_each_start(starts: list[int], length: int, shape: tuple[int, ...]) -> None:
    array = np.asarray(starts[:len(starts) // 3 * 3] if len(shape) == 2 else starts, np.int64).reshape(shape)
    out = runs(array, length)
    assert out.shape == (*array.shape, length) and out.dtype == np.int64
    assert np.array_equal(out, array[..., None] + np.arange(length))  # the law: start + j at place j
    out += 1  # a new array each time: the counter the runs share is not written through
    assert np.array_equal(runs(array, length), array[..., None] + np.arange(length))
