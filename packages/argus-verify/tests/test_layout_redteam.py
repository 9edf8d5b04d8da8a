"""The layout checker against brute force on layouts chosen to break its structural arguments.

Nested shapes, zero, negative and huge strides, size-1 modes of any stride, swizzles of every
parameter sign, offsets, layouts composed after layouts, and compositions with those: every
verdict, at enumeration limits low enough to force the structural (non-enumerating) path,
is compared with the truth computed here with plain ints. "proved" must be true, "violated"
false with a counterexample that replays, and a refusal (`LayoutError`) only where the
function is not defined. "unknown" is always allowed below the full limit.
"""

from __future__ import annotations

from math import prod

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.layout import ComposedLayout, Layout, LayoutError, Swizzle, parse
from argus.layout import composition as compose
from argus.verify import (
    ENUMERATION_LIMIT,
    Verdict,
    bank_conflict_free,
    bijective,
    composition,
    equal,
    injective,
    partition,
)
from argus.verify.cli import main

RED_TEAM = settings(max_examples=250, deadline=None, derandomize=True)
P = parse


# ---- the truth, with plain ints ----------------------------------------------------------


def flat(t):
    return [x for e in t for x in flat(e)] if isinstance(t, tuple) else [t]


def layout_at(layout: Layout, i: int) -> int | None:
    """Colexicographic digits, the last mode unbounded; below 0 only along a straight line
    ``i -> i·c`` (as the algebra reads a layout there), else None."""
    shapes, strides = flat(layout.shape), flat(layout.stride)
    if i < 0:
        c, below = layout_at(layout, 1), 1
        for k, (s, d) in enumerate(zip(shapes, strides)):
            if (s > 1 or k == len(shapes) - 1) and d != c * below:
                return None
            below *= s
        return i * c
    total = 0
    for k, (s, d) in enumerate(zip(shapes, strides)):
        total += (i if k == len(shapes) - 1 else i % s) * d
        i //= s
    return total


def swizzle_at(sw: Swizzle, y: int) -> int:
    out = y
    for k in range(sw.bits):
        if (y >> (sw.base + k + max(0, sw.shift))) & 1:
            out ^= 1 << (sw.base + k - min(0, sw.shift))
    return out


def at(x, i: int) -> int | None:
    """x at index i, or None where x is not defined (an outer function below 0)."""
    if isinstance(x, Layout):
        return layout_at(x, i)
    inner = layout_at(x.inner, i)
    if inner is None or x.offset + inner < 0:
        return None
    y = x.offset + inner
    return swizzle_at(x.outer, y) if isinstance(x.outer, Swizzle) else layout_at(x.outer, y)


def size(x) -> int:
    return prod(flat(x.shape))


def offsets(x) -> list[int]:
    return [at(x, i) for i in range(size(x))]


def coordinate(shape, i: int):
    if not isinstance(shape, tuple):
        return i
    out = []
    for k, s in enumerate(shape):
        n = prod(flat(s))
        out.append(coordinate(s, i if k == len(shape) - 1 else i % n))
        i //= n
    return tuple(out)


def index_of(x, crd) -> int:
    return next(i for i in range(size(x)) if coordinate(x.shape, i) == crd)


# ---- layouts meant to break shortcuts ----------------------------------------------------

STRIDES = st.one_of(st.integers(-6, 16), st.sampled_from([0, 1, 2, 4, 8, 32, -1, -8, 1 << 40, -(1 << 40), 1 << 62]))


@st.composite
def plain_layouts(draw, strides=STRIDES, max_modes=4, max_size=64):
    """Nested, with size-1 modes, zero, negative and huge strides."""
    sizes = draw(st.lists(st.sampled_from([1, 1, 2, 2, 3, 4, 5]), min_size=1, max_size=max_modes))
    while prod(sizes) > max_size:
        sizes[sizes.index(max(sizes))] = 1
    modes = [(s, draw(strides)) for s in sizes]
    if draw(st.booleans()):  # some are compact, possibly permuted or stretched
        order = draw(st.permutations(range(len(modes))))
        step = 1
        for k in order:
            modes[k] = (modes[k][0], step * draw(st.sampled_from([1, 1, 1, -1, 2, 0])))
            step *= modes[k][0]
    cut = draw(st.integers(0, len(modes)))
    if 0 < cut < len(modes) and draw(st.booleans()):  # nest the first modes
        shape = (tuple(s for s, _ in modes[:cut]), *(s for s, _ in modes[cut:]))
        stride = (tuple(d for _, d in modes[:cut]), *(d for _, d in modes[cut:]))
        return Layout(shape, stride)
    if len(modes) == 1 and draw(st.booleans()):
        return Layout(*modes[0])
    return Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))


@st.composite
def swizzles(draw):
    bits = draw(st.integers(0, 3))
    magnitude = draw(st.integers(bits, 5))
    return Swizzle(bits, draw(st.integers(0, 4)), magnitude if draw(st.booleans()) else -magnitude)


@st.composite
def composed_layouts(draw):
    """``outer o offset o inner``, defined on its domain; the offset makes up for negative
    strides of the inner layout, whose size-1 modes may step anywhere past its size."""
    outer = draw(st.one_of(swizzles(), plain_layouts(strides=st.integers(-4, 12), max_size=32)))
    inner = draw(plain_layouts(strides=st.integers(-8, 12), max_modes=3))
    lowest = min(offsets(inner))
    return ComposedLayout(outer, max(0, -lowest) + draw(st.sampled_from([0, 0, 1, 3, 16])), inner)


def any_layouts():
    return st.one_of(plain_layouts(), composed_layouts())


def limits(n: int):
    return st.sampled_from(sorted({0, 1, 3, 8, 64, max(0, n - 1), n, ENUMERATION_LIMIT}))


def assert_sound(result, truth: bool, limit: int, *shown) -> None:
    if result.verdict is Verdict.PROVED:
        assert truth, (result.text(), *shown)
    elif result.verdict is Verdict.VIOLATED:
        assert not truth, (result.text(), *shown)


# ---- every check, against the truth --------------------------------------------------------


@RED_TEAM
@given(any_layouts(), st.data())
def test_injective_and_bijective_verdicts_are_true(x, data):
    values = offsets(x)
    limit = data.draw(limits(size(x)))
    one_to_one = len(set(values)) == len(values)
    result = injective(x, limit=limit)
    assert_sound(result, one_to_one, limit, str(x))
    if result.verdict is Verdict.VIOLATED:
        (w,) = result.witnesses
        i, j = index_of(x, w["first"]), index_of(x, w["second"])
        assert i != j and at(x, i) == at(x, j) == w["offset"]
    result = bijective(x, limit=limit)
    assert_sound(result, sorted(values) == list(range(len(values))), limit, str(x))
    for w in result.witnesses if result.verdict is Verdict.VIOLATED else ():
        if "missing offset" in w:
            assert w["missing offset"] not in values and 0 <= w["missing offset"] <= max(values)
        if "first" in w:
            assert at(x, index_of(x, w["first"])) == at(x, index_of(x, w["second"]))
        if "coordinate" in w:
            assert at(x, index_of(x, w["coordinate"])) == w["offset"] < 0


@st.composite
def equal_pairs(draw):
    a = draw(any_layouts())
    kind = draw(st.sampled_from(["other", "same", "reshaped"]))
    if kind == "other":
        return a, draw(any_layouts())
    if kind == "same":
        return a, a
    inner = a if isinstance(a, Layout) else a.inner  # the same function, spelled flat
    flat_inner = Layout(tuple(flat(inner.shape)), tuple(flat(inner.stride)))
    return a, (flat_inner if isinstance(a, Layout) else a.with_inner(flat_inner))


@RED_TEAM
@given(equal_pairs(), st.data())
def test_equal_verdicts_are_true(pair, data):
    a, b = pair
    limit = data.draw(limits(size(a)))
    result = equal(a, b, limit=limit)
    assert_sound(result, size(a) == size(b) and offsets(a) == offsets(b), limit, str(a), str(b))
    if result.verdict is Verdict.VIOLATED and result.witnesses and "index" in result.witnesses[0]:
        w = result.witnesses[0]
        assert at(a, w["index"]) == w["first"] != w["second"] == at(b, w["index"])


def layout_exists(b: Layout, values: list[int]) -> bool:
    """A layout refining B's shape has these offsets: they add up over B's flat modes, and along
    each mode some flat layout (tried over every ordered factorization) gives them."""
    sizes = flat(b.shape)
    steps = [prod(sizes[:k]) for k in range(len(sizes))]
    lines = [[values[c * step] for c in range(s)] for s, step in zip(sizes, steps)]
    if any(values[i] != sum(line[(i // step) % s] for s, step, line in zip(sizes, steps, lines))
           for i in range(len(values))):
        return False
    return all(_one_mode_fits(line) for line in lines)


def _one_mode_fits(values: list[int]) -> bool:
    def factorizations(m):
        if m == 1:
            yield ()
        for f in range(2, m + 1):
            if m % f == 0:
                for rest in factorizations(m // f):
                    yield (f, *rest)

    for factors in factorizations(len(values)):
        shape = factors or (1,)
        stride = tuple(values[prod(shape[:k])] if prod(shape[:k]) < len(values) else 0 for k in range(len(shape)))
        if all(layout_at(Layout(shape, stride), i) == v for i, v in enumerate(values)):
            return True
    return False


@st.composite
def composition_cases(draw):
    a = draw(st.one_of(plain_layouts(strides=st.integers(-4, 12)), composed_layouts(), swizzles()))
    b = draw(plain_layouts(strides=st.integers(-6, 12), max_modes=3, max_size=32))
    return a, b


def images(a, b: Layout) -> list[int | None]:
    """A(B(i)) for every index of B, None where A is not defined there."""
    inner = [layout_at(b, i) for i in range(size(b))]
    if isinstance(a, Swizzle):
        return [None if y < 0 else swizzle_at(a, y) for y in inner]
    return [at(a, y) for y in inner]


@RED_TEAM
@given(composition_cases(), st.data())
def test_composition_verdicts_are_true(case, data):
    a, b = case
    values = images(a, b)
    limit = data.draw(limits(size(b)))
    try:
        result = composition(a, b, limit=limit)
    except LayoutError:
        assert not isinstance(a, Layout) and None in values, (str(a), str(b))  # refused: not defined
        return
    if result.verdict is Verdict.PROVED:
        assert None not in values, (result.text(), str(a), str(b))
        if isinstance(a, Layout):
            assert layout_exists(b, values), result.text()
        else:  # the answer is composed too: A∘B as the algebra gives it, exact at every index
            assert offsets(compose(a, b)) == values, result.text()
    elif result.verdict is Verdict.VIOLATED and None not in values and isinstance(a, Layout):
        assert not layout_exists(b, values), result.text()


@RED_TEAM
@given(composition_cases(), st.one_of(plain_layouts(strides=st.integers(-4, 40)), st.just("algebra")), st.data())
def test_composition_with_a_result_verdicts_are_true(case, r, data):
    a, b = case
    values = images(a, b)
    if r == "algebra":
        try:
            r = compose(a, b)
        except LayoutError:
            return
    limit = data.draw(limits(size(b)))
    try:
        result = composition(a, b, r, limit=limit)
    except LayoutError:
        assert not isinstance(a, Layout) and None in values, (str(a), str(b), str(r))
        return
    truth = None not in values and size(r) == size(b) and offsets(r) == values
    assert_sound(result, truth, limit, str(a), str(b), str(r))


@RED_TEAM
@given(plain_layouts(max_modes=2, max_size=16), plain_layouts(max_modes=2, max_size=16), st.data())
def test_partition_verdicts_are_true(threads, values, data):
    tv = Layout((threads.shape, values.shape), (threads.stride, values.stride))
    tile = data.draw(st.sampled_from([size(tv), max(1, size(tv) - 1), size(tv) + 1, 7]))
    limit = data.draw(limits(size(tv)))
    result = partition(tv, tile, limit=limit)
    assert_sound(result, sorted(offsets(tv)) == list(range(tile)), limit, str(tv), tile)


# ---- the cases found ---------------------------------------------------------------------


UNDEFINED = "Sw<3,4,3> o 0 o (64,1):(1,-64)"  # past its 64 elements, the inner layout goes below 0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (UNDEFINED, "8388608:1"),  # past the enumeration limit, this was "proved"
        (UNDEFINED, "128:1"),
        ("4:1 o 0 o (2,1):(1,-5)", "8388608:1"),  # an outer layout is not defined below 0 either
        ("Sw<1,0,1> o 2 o 8:1", "(2,4194304):(1,-3)"),  # B along the inner straight line, too far down
    ],
)
def test_a_composition_that_reaches_where_a_is_not_defined_is_refused(a, b):
    for r in (None, P(b)):
        with pytest.raises(LayoutError, match="not defined"):
            composition(P(a), P(b), r)


@pytest.mark.parametrize(
    ("a", "b", "r"),
    [
        ("(1,1):(5,3)", "2:-1", "2:0"),  # A is i -> 3i on all naturals, so A(-1) is -3, not 0
        ("(4,1):(1,0)", "2:-1", "2:-1"),  # past its size A stops being a line: A(-1) is not defined
    ],
)
def test_below_0_a_is_read_as_the_algebra_reads_it(a, b, r):
    """A straight line is decided with A's continuation, which plain coalescing drops."""
    result = composition(P(a), P(b), P(r))
    assert result.verdict is Verdict.VIOLATED, result.text()


def test_the_command_refuses_it_on_one_line(capsys):
    assert main(["layout", "composition", UNDEFINED, "8388608:1"]) == 2
    out, err = capsys.readouterr()
    assert not out and err.startswith("error: ") and len(err.splitlines()) == 1 and "not defined" in err


def test_bank_conflicts_need_an_address_for_every_thread():
    """Thread 8 of `8:4` has no address: reading the layout past its size is not the claim."""
    with pytest.raises(LayoutError, match="8 addresses for 32 threads"):
        bank_conflict_free(P("8:4"), 4, 4)
    assert bank_conflict_free(P("(8,4):(1,8)"), 4, 4).proved
    assert bank_conflict_free(P("8:4"), 4, 4, threads=8).proved
