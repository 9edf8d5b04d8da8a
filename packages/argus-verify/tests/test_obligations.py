"""Tag comparisons collected by an analysis: concrete differences are findings at once, ⊥ and ⊤
are reported as such, distinct symbolic tags are decided by a solver with a model as witness,
and a rolled-back pass leaves nothing behind."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.verify.affine import Affine, Key, Space
from argus.verify.assertions import check
from argus.verify.obligations import Obligations
from argus.verify.solvers import Answer, Query, Solver, solver
from argus.verify.tags import BOTTOM, TOP, TagTable

Tag = tuple[Any, ...]
NBYTES = 2


def describe(point: int, element: int, model: dict[int, int]) -> dict[str, Any]:
    return {"thread": point}


class NoSolver:
    """A solver that must not be asked."""

    name = "none"

    def solve(self, query: Query, timeout_ms: int) -> Answer:
        raise AssertionError(f"a solver was asked {query.alternatives}")


@pytest.fixture(scope="module")
def z3() -> Solver:
    return solver("z3")


class Setup:
    """A space with symbols h, g ∈ [0, 15] and kj ∈ [0, 7], and a tag table over it."""

    def __init__(self) -> None:
        self.space = sp = Space()
        self.table = TagTable(sp)
        bounds = (("h", 15), ("g", 15), ("kj", 7))
        self.h, self.g, self.kj = (sp.symbol(n, "block", 0, hi) for n, hi in bounds)
        self.obligations = Obligations(self.table, sp)

    def var(self, atom: int) -> Affine:
        return self.space.of_symbol(atom, 1)

    def key(self, a: Affine) -> Key:
        return a.row(0)

    def ids(self, rows: list[list[Tag]], nbytes: int = NBYTES) -> np.ndarray:
        """Byte ids (points, elements, bytes) of a grid of element tags."""
        return np.stack([self.table.byte_ids(row, nbytes) for row in rows])

    def compare(self, site: str, lhs: list[list[Tag]], rhs: list[list[Tag]], equal: bool = True) -> None:
        self.obligations.compare(site, self.ids(lhs), self.ids(rhs), equal, describe)

    def found(self) -> list[tuple[str, int, int]]:
        return [(c.kind, c.point, c.element) for c in self.obligations.candidates]

    def pairs(self) -> int:
        return sum(len(p.pairs) for p in self.obligations.pending.values())


concrete_tags = st.sampled_from([(0,), (1,), (0, 1), (1, 0), (3, 2, 1)])
grids = st.lists(st.lists(concrete_tags, min_size=2, max_size=2), min_size=2, max_size=2)
LAWS = settings(max_examples=40, deadline=None, derandomize=True, database=None)


@LAWS
@given(grids, st.booleans())
def test_equal_ids_are_never_findings(grid: list[list[Tag]], symbolic: bool) -> None:
    """tag == tag is never a finding, never pending, whether the tags are concrete or symbolic."""
    s = Setup()
    if symbolic:
        grid = [[(s.key(s.space.scale(s.var(s.h), t[0] + 1)), *t[1:]) for t in row] for row in grid]
    s.compare("same", grid, grid)
    s.obligations.compare("copy", s.ids(grid), s.ids(grid).copy(), True, describe)
    assert s.found() == [] and s.pairs() == 0
    assert s.obligations.decide(NoSolver(), []) == [] and s.found() == []


@LAWS
@given(grids, grids, st.booleans())
def test_concrete_tags_are_decided_without_a_solver(lhs: list[list[Tag]], rhs: list[list[Tag]],
                                                   equal: bool) -> None:
    """Integer tags: == is violated exactly where they differ, != exactly where they agree."""
    s = Setup()
    s.compare("site", lhs, rhs, equal)
    wrong = [(p, e) for p in range(2) for e in range(2) if (lhs[p][e] == rhs[p][e]) != equal]
    assert s.found() == [("violated", p, e) for p, e in wrong]
    assert [(c.lhs, c.rhs) for c in s.obligations.candidates] == [(lhs[p][e], rhs[p][e]) for p, e in wrong]
    assert s.pairs() == 0 and s.obligations.decide(NoSolver(), []) == []
    assert len(s.obligations.candidates) == len(wrong)


@pytest.mark.parametrize("equal", [True, False])
@pytest.mark.parametrize(("spoil", "kind"), [(BOTTOM, "unwritten"), (TOP, "conflicting")])
def test_bottom_is_unwritten_and_top_is_conflicting(spoil: int, kind: str, equal: bool) -> None:
    """A ⊥ byte makes the element "unwritten", a ⊤ byte "conflicting"; neither is "violated"."""
    s = Setup()
    lhs = s.ids([[(1,), (2,)], [(1,), (2,)]])
    rhs = lhs.copy()
    rhs[1, 0, :] = spoil
    s.obligations.compare("site", lhs, rhs, equal, describe)
    assert (kind, 1, 0) in s.found() and ("violated", 1, 0) not in s.found()
    others = [] if equal else [("violated", 0, 0), ("violated", 0, 1), ("violated", 1, 1)]
    assert sorted(s.found()) == sorted([(kind, 1, 0)] + others)
    (c,) = [c for c in s.obligations.candidates if c.kind == kind]
    assert c.lhs == (1,) and c.rhs == ("⊥" if spoil == BOTTOM else "⊤")
    assert c.witness(s.table, s.space) == {"thread": 1, "kind": kind, "lhs tag": (1,), "rhs tag": c.rhs}


def test_bottom_wins_over_top() -> None:
    """An element with ⊥ on one side and ⊤ on the other is reported as unwritten only."""
    s = Setup()
    lhs, rhs = s.ids([[(1,)]]), s.ids([[(1,)]])
    lhs[0, 0, :] = BOTTOM
    rhs[0, 0, 0] = TOP
    s.obligations.compare("site", lhs, rhs, True, describe)
    assert s.found() == [("unwritten", 0, 0)] and s.obligations.candidates[0].lhs == "⊥"


def test_equal_quantities_built_apart_are_one_tag() -> None:
    """(h // 2,) against hk = h // 2 built separately, and h % 2 + 2·(h // 2) against h: no pairs."""
    s = Setup()
    sp, two = s.space, s.space.constant(2, 1)
    hk = sp.floordiv(s.var(s.h), two)
    recombined = sp.add(sp.mod(s.var(s.h), two), sp.scale(sp.floordiv(s.var(s.h), two), 2))
    s.compare("site", [[(s.key(sp.floordiv(s.var(s.h), two)),), (s.key(recombined), 3)]],
              [[(s.key(hk),), (s.key(s.var(s.h)), 3)]])
    assert s.found() == [] and s.pairs() == 0


def test_tags_that_differ_by_a_constant_are_violated(z3: Solver) -> None:
    """(16·kj,) against (16·kj + 1,) is a violation for every kj, found where it happens."""
    s = Setup()
    k16 = s.space.scale(s.var(s.kj), 16)
    tile, off = s.key(k16), s.key(s.space.add(k16, s.space.constant(1, 1)))
    s.compare("site", [[(tile,)], [(tile,)]], [[(tile,)], [(off,)]])
    assert s.obligations.decide(z3, s.space.constraints) == []
    assert s.found() == [("violated", 1, 0)]
    (c,) = s.obligations.candidates
    assert (c.lhs, c.rhs) == ((tile,), (off,))
    w = c.witness(s.table, s.space)
    assert w["thread"] == 1 and w["lhs tag"][0] + 1 == w["rhs tag"][0]


def test_distinct_symbols_are_violated_only_where_the_facts_allow(z3: Solver) -> None:
    """(h,) against (g,): a model with h ≠ g is the witness, at the pair's first place; with the
    fact h = g, nothing."""
    s = Setup()
    h, g = s.key(s.var(s.h)), s.key(s.var(s.g))
    s.compare("site", [[(1,), (h,)], [(h,), (1,)]], [[(1,), (g,)], [(g,), (1,)]])
    assert s.found() == [] and s.pairs() == 1
    mark = s.obligations.mark()
    assert s.obligations.decide(z3, s.space.constraints) == []
    assert s.found() == [("violated", 0, 1)]
    (c,) = s.obligations.candidates
    assert s.space.evaluate(h, c.model) != s.space.evaluate(g, c.model)
    w = c.witness(s.table, s.space)
    assert w["thread"] == 0 and w["kind"] == "violated" and w["lhs tag"] != w["rhs tag"]
    s.obligations.rollback(mark)
    same = ("eq0", s.key(s.space.sub(s.var(s.h), s.var(s.g))))
    assert s.obligations.decide(z3, s.space.constraints + [same]) == [] and s.found() == []


def test_the_violation_names_the_pair_that_can_differ(z3: Solver) -> None:
    """Of (min(h, g),) vs (h,) and (1, h) vs (1, g) under h ≤ g, only the second can differ."""
    s = Setup()
    sp = s.space
    h, g = s.key(s.var(s.h)), s.key(s.var(s.g))
    low = s.key(sp.binary("min", s.var(s.h), s.var(s.g), np.minimum))
    s.compare("site", [[(low,)], [(1, h)]], [[(h,)], [(1, g)]])
    assert s.pairs() == 2
    ordered = ("ge0", s.key(sp.sub(s.var(s.g), s.var(s.h))))
    assert s.obligations.decide(z3, sp.constraints + [ordered]) == []
    assert s.found() == [("violated", 1, 0)]
    model = s.obligations.candidates[0].model
    assert sp.evaluate(h, model) < sp.evaluate(g, model)


def test_not_equal_assertions(z3: Solver) -> None:
    """!=: one id is violated at once, integer tags that differ hold, (h,) vs (g,) needs h = g."""
    s = Setup()
    h, g = s.key(s.var(s.h)), s.key(s.var(s.g))
    s.compare("ne", [[(4,), (4,), (h,)]], [[(4,), (5,), (g,)]], equal=False)
    assert s.found() == [("violated", 0, 0)] and s.pairs() == 1
    apart = ("ge0", s.key(s.space.sub(s.space.sub(s.var(s.h), s.var(s.g)), s.space.constant(1, 1))))
    assert s.obligations.decide(z3, s.space.constraints + [apart]) == [] and len(s.found()) == 1
    assert s.obligations.decide(z3, s.space.constraints) == []
    assert s.found() == [("violated", 0, 0), ("violated", 0, 2)]
    model = s.obligations.candidates[1].model
    assert s.space.evaluate(h, model) == s.space.evaluate(g, model)


def test_rollback_forgets_what_came_after_the_mark(z3: Solver) -> None:
    """Candidates, pending pairs and sites added after mark() are gone after rollback()."""
    s = Setup()
    h, g, kj = (s.key(s.var(a)) for a in (s.h, s.g, s.kj))
    s.compare("a", [[(1,), (h,)]], [[(2,), (g,)]])
    s.compare("quiet", [[(1,)]], [[(1,)]])
    before = s.found(), {site: list(p.pairs) for site, p in s.obligations.pending.items()}
    mark = s.obligations.mark()
    s.compare("a", [[(3,), (h,)]], [[(4,), (kj,)]])
    s.compare("quiet", [[(g,)]], [[(kj,)]])
    s.compare("b", [[(5,), (g,)]], [[(6,), (h,)]])
    assert len(s.found()) == 3 and s.pairs() == 4
    s.obligations.rollback(mark)
    assert (s.found(), {site: list(p.pairs) for site, p in s.obligations.pending.items()}) == before
    assert s.obligations.decide(z3, s.space.constraints) == []
    assert [c.site for c in s.obligations.candidates] == ["a", "a"]


def test_findings_are_capped_per_site_and_kind() -> None:
    """At most four findings of one kind are kept per site; other sites and kinds still count."""
    s = Setup()
    s.compare("site", [[(0,)] * 6], [[(1,)] * 6])
    s.compare("site", [[(0,)] * 2], [[(2,)] * 2])
    s.compare("other", [[(0,)]], [[(1,)]])
    unwritten = s.ids([[(0,)]])
    unwritten[..., 0] = BOTTOM
    s.obligations.compare("site", unwritten, unwritten, True, describe)
    assert [(c.site, c.kind) for c in s.obligations.candidates] == (
        [("site", "violated")] * 4 + [("other", "violated"), ("site", "unwritten")])


@pytest.mark.parametrize("equal", [True, False])
def test_every_byte_of_an_element_is_compared(z3: Solver, equal: bool) -> None:
    """Bytes [A0, A1] vs [A0, B1] differ: == is violated and != holds, as assertions.check says."""
    s = Setup()
    a, b = s.ids([[(1, 2)]]), s.ids([[(1, 3)]])
    mixed = np.concatenate([a[..., :1], b[..., 1:]], axis=-1)
    expected = [(f.kind, f.point, f.element) for f in check(a, mixed, equal)]
    assert expected == ([("violated", 0, 0)] if equal else [])
    s.obligations.compare("site", a, mixed, equal, describe)
    s.obligations.decide(z3, s.space.constraints)
    assert s.found() == expected


def test_tags_of_different_lengths_are_never_equal(z3: Solver) -> None:
    """(h,) != (h, 0) holds for every h, as it does for integer tags (1,) != (1, 0)."""
    s = Setup()
    h = s.key(s.var(s.h))
    s.compare("ints", [[(1,)]], [[(1, 0)]], equal=False)
    assert s.found() == []
    s.compare("symbolic", [[(h,)]], [[(h, 0)]], equal=False)
    assert s.obligations.decide(z3, s.space.constraints) == []
    assert s.found() == []


def _judged_point_by_point(s: Setup, lhs: np.ndarray, rhs: np.ndarray, equal: bool) -> tuple[Any, Any]:
    """What comparing `lhs` and `rhs` must give, every suspect point judged on its own: the
    violations found (in order, four at most) and the pairs left to the solver (first point each)."""
    from argus.verify.obligations import _definitely_different
    from argus.verify.tags import BYTES

    tags = s.table.tags
    concrete = ~(((lhs == BOTTOM) | (rhs == BOTTOM) | (lhs == TOP) | (rhs == TOP)).any(axis=-1))
    shifted = ((lhs - 2) % BYTES != (rhs - 2) % BYTES).any(axis=-1)
    suspect = concrete & (~(lhs == rhs).all(axis=-1) if equal else ~shifted)
    lhs_el, rhs_el = (lhs - 2) // BYTES, (rhs - 2) // BYTES
    violations: list[tuple[int, int, Any, Any]] = []
    pairs: dict[Any, tuple[int, int]] = {}
    for p, e in np.argwhere(suspect).tolist():
        unit = tuple(dict.fromkeys((a, b) for a, b in zip(lhs_el[p, e].tolist(), rhs_el[p, e].tolist()) if a != b))
        if equal:
            wrong = next(((a, b) for a, b in unit if _definitely_different(tags[a], tags[b])), None)
            if shifted[p, e] and wrong is None:
                wrong = (int(lhs_el[p, e, 0]), int(rhs_el[p, e, 0]))
            if wrong is not None:
                violations.append((p, e, tags[wrong[0]], tags[wrong[1]]))
            elif unit:
                pairs.setdefault(unit, (p, e))
            continue
        if any(_definitely_different(tags[a], tags[b]) for a, b in unit):
            continue
        if not unit:
            a = int(lhs_el[p, e, 0])
            violations.append((p, e, tags[a], tags[a]))
            continue
        pairs.setdefault(unit, (p, e))
    return violations[:4], pairs


@LAWS
@given(st.data(), st.booleans())
def test_alike_comparisons_judged_once_give_what_judging_each_gives(data: Any, equal: bool) -> None:
    """Comparisons are judged once per distinct pair of byte rows: the same violations, in the
    same order, and the same pairs left to the solver as judging every point on its own."""
    s = Setup()
    h, g = s.key(s.var(s.h)), s.key(s.var(s.g))
    pool = [(0,), (1,), (h,), (g,), (1, h), (h, 1), (g, g)]
    points = data.draw(st.integers(1, 40))  # past 64 rows, distinct rows are found by sorting
    elements = data.draw(st.integers(1, 3))
    lhs = s.ids([[data.draw(st.sampled_from(pool)) for _ in range(elements)] for _ in range(points)])
    rhs = s.ids([[data.draw(st.sampled_from(pool)) for _ in range(elements)] for _ in range(points)])
    if data.draw(st.booleans()):  # some elements read with their bytes swapped
        swap = np.array(data.draw(st.lists(st.booleans(), min_size=points * elements, max_size=points * elements)))
        rhs = rhs.reshape(-1, NBYTES)
        rhs[swap] = rhs[swap][:, ::-1]
        rhs = rhs.reshape(points, elements, NBYTES)
    s.obligations.compare("site", lhs, rhs, equal, describe)
    violations, pairs = _judged_point_by_point(s, lhs, rhs, equal)
    assert [(c.point, c.element, c.lhs, c.rhs) for c in s.obligations.candidates if c.kind == "violated"] == violations
    got = {unit: (p, e) for (_, unit), (p, e, _) in s.obligations.pending["site"].pairs.items()}
    assert got == pairs and list(got) == list(pairs)
