"""Solver plugins: answers agree with exact Python evaluation of the same keys (unsat means no
values exist, a model satisfies the facts and the alternative it names), and plugins are chosen
by name or by ``ARGUS_SOLVER``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.verify.affine import Affine, Key, Space, sub_keys
from argus.verify.plugins import PluginError
from argus.verify.solvers import Comparison, Query, Solver, solver

TIMEOUT_MS = 10_000
LAWS = settings(max_examples=15, deadline=None, derandomize=True, database=None)

Op = Callable[[Space, Affine, Affine], Affine]
OPS: dict[str, tuple[Op, Callable[[int, int], int]]] = {
    "floordiv": (lambda sp, a, b: sp.floordiv(a, b), lambda x, y: x // y),
    "mod": (lambda sp, a, b: sp.mod(a, b), lambda x, y: x % y),
    "min": (lambda sp, a, b: sp.binary("min", a, b, np.minimum), min),
    "max": (lambda sp, a, b: sp.binary("max", a, b, np.maximum), max),
    "mul": (lambda sp, a, b: sp.mul(a, b), lambda x, y: x * y),
    "xor": (lambda sp, a, b: sp.binary("xor", a, b, np.bitwise_xor), lambda x, y: x ^ y),
    "and": (lambda sp, a, b: sp.binary("and", a, b, np.bitwise_and), lambda x, y: x & y),
    "or": (lambda sp, a, b: sp.binary("or", a, b, np.bitwise_or), lambda x, y: x | y),
}
BIT_OPS = {"xor", "and", "or"}


@pytest.fixture(scope="module", params=["z3", "pysmt"])
def engine(request: pytest.FixtureRequest) -> Solver:
    """Each solver plugin that can run here."""
    if request.param == "pysmt":
        pytest.importorskip("pysmt")
    try:
        return solver(request.param)
    except PluginError as err:
        pytest.skip(str(err))


def _symbol(sp: Space, name: str, lo: int | None = None, hi: int | None = None) -> Affine:
    return sp.of_symbol(sp.symbol(name, "block", lo, hi), 1)


def _key(a: Affine) -> Key:
    return a.row(0)


def _minus(key: Key, n: int) -> Key:
    return sub_keys(key, (n, ()))


def _holds(sp: Space, c: Comparison, values: dict[int, int]) -> bool:
    v = sp.evaluate(c[1], values)
    return {"ge0": v >= 0, "eq0": v == 0, "ne0": v != 0}[c[0]]


def _solve(engine: Solver, sp: Space, facts: list[Comparison],
           alternatives: list[list[Comparison]]) -> str:
    answer = engine.solve(Query(sp, facts, alternatives), TIMEOUT_MS)
    assert answer.status in ("sat", "unsat"), answer.reason
    if answer.status == "sat":
        assert answer.alternative is not None
        assert all(_holds(sp, c, answer.model) for c in facts)
        assert all(_holds(sp, c, answer.model) for c in alternatives[answer.alternative])
    return answer.status


def test_contradictory_facts_are_unsat(engine: Solver) -> None:
    """x ∈ [0, 10] with x ≥ 11, or with x // 4 ≥ 3, has no solution."""
    sp = Space()
    x = _symbol(sp, "x", 0, 10)
    anything = [[("ge0", _key(x))], [("ne0", _key(x))]]
    assert _solve(engine, sp, sp.constraints + [("ge0", _minus(_key(x), 11))], anything) == "unsat"
    quarter = _key(sp.floordiv(x, sp.constant(4, 1)))
    assert _solve(engine, sp, sp.constraints + [("ge0", _minus(quarter, 3))], anything) == "unsat"
    assert _solve(engine, sp, sp.constraints, [[("ge0", _minus(quarter, 3))]]) == "unsat"


def test_a_model_satisfies_the_facts_and_the_alternative_it_names(engine: Solver) -> None:
    """A sat answer's model, evaluated in Python, meets every fact and answer.alternative."""
    sp = Space()
    x, y = _symbol(sp, "x", -20, 20), _symbol(sp, "y", -20, 20)
    seven = sp.constant(7, 1)
    facts = sp.constraints + [("ge0", _minus(_key(sp.sub(x, y)), 3)),
                              ("eq0", _minus(_key(sp.mod(x, seven)), 2))]
    impossible = [("ge0", _minus(_key(y), 30))]
    possible = [("eq0", _minus(_key(sp.floordiv(x, sp.constant(3, 1))), 3)), ("ne0", _key(y))]
    answer = engine.solve(Query(sp, facts, [impossible, possible]), TIMEOUT_MS)
    assert answer.status == "sat" and answer.alternative == 1
    assert all(_holds(sp, c, answer.model) for c in facts + possible)


def test_floor_division_by_a_constant_is_exact(engine: Solver) -> None:
    """With x = 37, x // 5 ≠ 7 is unsat and x // 5 ≠ 8 is sat."""
    sp = Space()
    x = _symbol(sp, "x")
    q = _key(sp.floordiv(x, sp.constant(5, 1)))
    facts: list[Comparison] = [("eq0", _minus(_key(x), 37))]
    assert _solve(engine, sp, facts, [[("ne0", _minus(q, 7))]]) == "unsat"
    assert _solve(engine, sp, facts, [[("ne0", _minus(q, 8))]]) == "sat"


def _encoding_agrees(engine: Solver, kind: str, vx: int, vy: int, symbolic: bool) -> None:
    """With x and y fixed, op(x, y) equals Python's value and nothing else."""
    sp = Space()
    x, y = _symbol(sp, "x"), _symbol(sp, "y")
    rhs = y if symbolic else sp.constant(vy, 1)
    build, reference = OPS[kind]
    r, expected = _key(build(sp, x, rhs)), reference(vx, vy)
    facts: list[Comparison] = [("eq0", _minus(_key(x), vx)), ("eq0", _minus(_key(y), vy))]
    assert _solve(engine, sp, facts, [[("ne0", _minus(r, expected))]]) == "unsat", (kind, vx, vy)
    assert _solve(engine, sp, facts, [[("eq0", _minus(r, expected))]]) == "sat", (kind, vx, vy)


values = st.integers(-60, 60)
divisors = st.integers(-9, 9).filter(bool)


@pytest.mark.parametrize("kind", ["floordiv", "mod"])
@LAWS
@given(vx=values, vy=divisors, symbolic=st.booleans())
def test_division_encoding_agrees_with_python(engine: Solver, kind: str, vx: int, vy: int,
                                              symbolic: bool) -> None:
    """Floor quotient and remainder by constant and symbolic nonzero divisors, as Python's."""
    _encoding_agrees(engine, kind, vx, vy, symbolic)


@pytest.mark.parametrize("kind", ["min", "max", "mul"])
@LAWS
@given(vx=values, vy=values)
def test_arithmetic_encoding_agrees_with_python(engine: Solver, kind: str, vx: int, vy: int) -> None:
    """min, max and products of symbols, as Python's."""
    _encoding_agrees(engine, kind, vx, vy, True)


@pytest.mark.parametrize("kind", sorted(BIT_OPS))
@LAWS
@given(vx=values, vy=values)
def test_z3_bit_operations_agree_with_python(kind: str, vx: int, vy: int) -> None:
    """xor/and/or of (negative too) integers through 32-bit vectors, as Python's."""
    _encoding_agrees(solver("z3"), kind, vx, vy, True)


def test_pysmt_reports_bit_operations_as_unknown() -> None:
    """The pysmt adapter has no bit operations: it answers unknown, never a wrong sat/unsat."""
    pytest.importorskip("pysmt")
    try:
        engine = solver("pysmt")
    except PluginError as err:
        pytest.skip(str(err))
    sp = Space()
    x, y = _symbol(sp, "x"), _symbol(sp, "y")
    answer = engine.solve(Query(sp, [], [[("ne0", _key(OPS["xor"][0](sp, x, y)))]]), TIMEOUT_MS)
    assert answer.status == "unknown" and "pysmt" in answer.reason


@LAWS
@given(vx=values, offsets=st.lists(st.integers(-70, 70), min_size=1, max_size=4), c=st.integers(1, 9))
def test_quotients_of_one_expression_at_several_offsets_are_exact(engine: Solver, vx: int, offsets: list[int],
                                                                   c: int) -> None:
    """(x + k) // c for several k in one space (they share the solver's quotient of x), as Python's."""
    sp = Space()
    x = _symbol(sp, "x")
    facts: list[Comparison] = [("eq0", _minus(_key(x), vx))]
    for k in offsets:
        q = _key(sp.floordiv(sp.add(x, sp.constant(k, 1)), sp.constant(c, 1)))
        assert _solve(engine, sp, facts, [[("ne0", _minus(q, (vx + k) // c))]]) == "unsat", (vx, k, c)
        assert _solve(engine, sp, facts, [[("eq0", _minus(q, (vx + k) // c))]]) == "sat", (vx, k, c)


def _lane_tail_query() -> Query:
    """Lane t of 32 reads element n - 32 + t, tagged by its index mod 32: is the tag ever not t?"""
    sp = Space()
    n = _symbol(sp, "n", 32)
    alternatives = [[("ne0", _minus(_key(sp.mod(sp.add(n, sp.constant(t - 32, 1)), sp.constant(32, 1))), t))]
                    for t in range(32)]
    return Query(sp, list(sp.constraints), alternatives)


def test_quotients_at_several_offsets_are_easy_under_every_random_seed() -> None:
    """z3 settles the lane-tail query at once under 80 random seeds (with one quotient variable
    per offset, some seeds ran past the timeout)."""
    z3 = pytest.importorskip("z3")
    from argus.verify.solvers.encoding import encode
    from argus.verify.solvers.z3_solver import _Z3Encoder

    query = _lane_tail_query()
    encoder = _Z3Encoder(query.space, z3)
    facts, alternatives = encode(encoder, query)
    for seed in range(80):
        s = z3.Solver()
        s.set("random_seed", seed)
        s.set("timeout", 2_000)
        s.add(*facts, encoder.disj(alternatives))
        assert s.check() == z3.sat, (seed, s.reason_unknown())


def test_z3_restarts_a_query_that_runs_out_of_time_with_the_next_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first attempt that times out is not the answer: the next seed, given more time, settles it."""
    z3 = pytest.importorskip("z3")
    from argus.verify.solvers import z3_solver

    tried: list[tuple[int, int]] = []

    class FirstSeedTimesOut:
        """z3's solver, except that under seed 0 it runs out of time."""

        def __init__(self, solver: Any) -> None:
            self.solver, self.options = solver, {}

        def set(self, name: str, value: Any) -> None:
            self.options[name] = value
            self.solver.set(name, value)

        def check(self) -> Any:
            tried.append((self.options["random_seed"], self.options["timeout"]))
            return z3.unknown if self.options["random_seed"] == 0 else self.solver.check()

        def reason_unknown(self) -> str:
            return "timeout" if self.options["random_seed"] == 0 else self.solver.reason_unknown()

        def __getattr__(self, name: str) -> Any:
            return getattr(self.solver, name)

    real = z3_solver._solver
    monkeypatch.setattr(z3_solver, "_solver", lambda z3: FirstSeedTimesOut(real(z3)))
    answer = solver("z3").solve(_lane_tail_query(), 10_000)
    assert answer.status == "sat" and answer.alternative is not None
    assert tried == [(0, z3_solver.FIRST_ATTEMPT_MS), (1, 2 * z3_solver.FIRST_ATTEMPT_MS)]
    tried.clear()
    assert solver("z3").solve(_lane_tail_query(), 100).status == "unknown"  # no time left for a second seed
    assert [seed for seed, _ in tried] == [0]


# ---- random queries against brute force over a small box --------------------------------------

BOX = {"x": (-4, 4), "y": (-4, 4), "d": (1, 3), "n": (-3, -1)}


def _pool(sp: Space, s: dict[str, Affine]) -> list[Key]:
    """Keys over the box's symbols with the integer atoms a solver must encode (bit operations,
    slow for z3 on free values, are checked on fixed values above)."""
    x, y, d, n = s["x"], s["y"], s["d"], s["n"]
    c = sp.constant
    out = [sp.add(x, y), sp.sub(x, sp.scale(y, 2)), sp.floordiv(sp.add(x, c(1, 1)), c(3, 1)),
           sp.mod(sp.sub(x, y), c(4, 1)), sp.floordiv(x, d), sp.mod(y, n), sp.floordiv(sp.add(x, y), n),
           sp.mod(x, d), sp.mul(x, y), sp.binary("min", x, y, np.minimum),
           sp.binary("max", x, sp.scale(y, -1), np.maximum)]
    return [_key(a) for a in out]


comparisons = st.tuples(st.sampled_from(["ge0", "eq0", "ne0"]), st.integers(0, 12), st.integers(-4, 4))


queries = st.tuples(st.lists(comparisons, min_size=1, max_size=2),
                    st.lists(st.lists(comparisons, min_size=1, max_size=2), min_size=1, max_size=2))


@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(asked=st.lists(queries, min_size=1, max_size=3))
def test_answers_agree_with_brute_force(engine: Solver,
                                        asked: list[tuple[list[tuple[str, int, int]], list[list[Any]]]]) -> None:
    """sat exactly when some point of the box meets every fact and some alternative — for each
    of several queries over one space, in turn (what earlier queries encoded changes nothing)."""
    sp = Space()
    s = {name: _symbol(sp, name, lo, hi) for name, (lo, hi) in BOX.items()}
    pool = _pool(sp, s)
    atoms = {name: next(iter(a.terms)) for name, a in s.items()}

    def comparison(c: tuple[str, int, int]) -> Comparison:
        return (c[0], _minus(pool[c[1] % len(pool)], c[2]))

    for facts, alternatives in asked:
        fs = sp.constraints + [comparison(c) for c in facts]
        alts = [[comparison(c) for c in alt] for alt in alternatives]
        exists = False
        for point in itertools.product(*(range(lo, hi + 1) for lo, hi in BOX.values())):
            v = {atoms[name]: value for name, value in zip(BOX, point, strict=True)}
            if all(_holds(sp, c, v) for c in fs) and any(all(_holds(sp, c, v) for c in alt) for alt in alts):
                exists = True
                break
        assert _solve(engine, sp, fs, alts) == ("sat" if exists else "unsat")


# ---- choosing a plugin ---------------------------------------------------------------------------


def test_an_unknown_solver_name_lists_the_installed_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """solver("nope") raises PluginError naming the wanted plugin and the available ones."""
    monkeypatch.delenv("ARGUS_DISABLE_PLUGINS", raising=False)
    with pytest.raises(PluginError, match=r"'nope'.*installed: .*pysmt.*z3"):
        solver("nope")


def test_argus_solver_selects_the_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """$ARGUS_SOLVER picks the plugin when no name is given; z3 is the default; a name wins."""
    monkeypatch.delenv("ARGUS_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("ARGUS_SOLVER", raising=False)
    assert solver().name == "z3"
    monkeypatch.setenv("ARGUS_SOLVER", "nope")
    with pytest.raises(PluginError, match="'nope'"):
        solver()
    assert solver("z3").name == "z3"
    try:
        solver("pysmt")
    except PluginError:
        return
    monkeypatch.setenv("ARGUS_SOLVER", "pysmt")
    assert solver().name == "pysmt"


def test_a_disabled_solver_cannot_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    """ARGUS_DISABLE_PLUGINS=z3 removes z3 from the choice."""
    monkeypatch.setenv("ARGUS_DISABLE_PLUGINS", "argus.solvers:z3")
    with pytest.raises(PluginError, match="'z3'"):
        solver("z3")
