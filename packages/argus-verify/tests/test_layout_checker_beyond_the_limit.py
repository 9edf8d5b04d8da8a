"""Every verdict of the layout checker against brute force, with the enumeration limit lowered.

Below the limit the checker enumerates; above it, it must reason about the whole function
(swizzle and outer layout included) or say unknown. Lowering the limit to a few points puts
small layouts, whose truth is computed here by brute force, on the structural path: a
"proved" must then be true, a "violated" false with a counterexample that holds, and at the
full limit the checker must decide.
"""

from __future__ import annotations

from math import prod

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.layout import ComposedLayout, Layout, LayoutError, Swizzle, parse
from argus.layout import composition as compose
from argus.verify import Verdict, bijective, composition, equal, injective, partition

CHECKS = settings(max_examples=300, deadline=None, derandomize=True)
P = parse


# ---- brute force, with plain ints --------------------------------------------------------


def flat(t):
    return [x for e in t for x in flat(e)] if isinstance(t, tuple) else [t]


def layout_at(shape, stride, i):
    """Offset of index i: colexicographic digits, the last mode unbounded."""
    total = 0
    modes = list(zip(flat(shape), flat(stride)))
    for k, (s, d) in enumerate(modes):
        digit = i if k == len(modes) - 1 else i % s
        total += digit * d
        i //= s
    return total


def swizzle_at(bits, base, shift, x):
    out = x
    for k in range(bits):
        if (x >> (base + k + max(0, shift))) & 1:
            out ^= 1 << (base + k - min(0, shift))
    return out


def at(x, i):
    if isinstance(x, Layout):
        return layout_at(x.shape, x.stride, i)
    y = x.offset + layout_at(x.inner.shape, x.inner.stride, i)
    if isinstance(x.outer, Swizzle):
        return swizzle_at(x.outer.bits, x.outer.base, x.outer.shift, y)
    return layout_at(x.outer.shape, x.outer.stride, y)


def offsets(x):
    return [at(x, i) for i in range(prod(flat(x.shape)))]


def size(x):
    return prod(flat(x.shape))


def coordinate(x, i):
    shape = x.shape
    if not isinstance(shape, tuple):
        return i
    out = []
    for k, s in enumerate(shape):
        n = prod(flat(s))
        out.append(coordinate_in(s, i if k == len(shape) - 1 else i % n))
        i //= n
    return tuple(out)


def coordinate_in(shape, i):
    return coordinate(Layout(shape), i) if isinstance(shape, tuple) else i


def index_of(x, crd):
    for i in range(size(x)):
        if coordinate(x, i) == crd:
            return i
    raise AssertionError(f"{crd} is no coordinate of {x}")


# ---- layouts -----------------------------------------------------------------------------


def plain_layouts(lo=-3, hi=12):
    modes = st.lists(st.tuples(st.integers(1, 5), st.integers(lo, hi)), min_size=1, max_size=3)
    return modes.map(lambda m: Layout(m[0][0], m[0][1]) if len(m) == 1 else
                     Layout(tuple(s for s, _ in m), tuple(d for _, d in m)))


@st.composite
def swizzles(draw):
    bits = draw(st.integers(0, 2))
    magnitude = draw(st.integers(max(bits, 1), 3))
    return Swizzle(bits, draw(st.integers(0, 2)), magnitude if draw(st.booleans()) else -magnitude)


@st.composite
def compact_layouts(draw):
    sizes = draw(st.lists(st.integers(1, 5), min_size=1, max_size=3))
    order = draw(st.permutations(range(len(sizes))))
    strides, step = [0] * len(sizes), 1
    for k in order:
        strides[k] = step
        step *= sizes[k]
    return Layout(sizes[0], strides[0]) if len(sizes) == 1 else Layout(tuple(sizes), tuple(strides))


def composed_layouts():
    return st.builds(
        ComposedLayout,
        st.one_of(swizzles(), plain_layouts(0, 8)),
        st.one_of(st.just(0), st.integers(0, 20)),
        st.one_of(plain_layouts(0, 12), compact_layouts()),
    )


def any_layouts():
    return st.one_of(plain_layouts(), compact_layouts(), composed_layouts())


def limits(x):
    n = size(x)
    return st.sampled_from(sorted({0, 1, 3, max(0, n - 1), n, 1 << 22}))


def decide(check, x, data):
    """The checker's verdict at a drawn limit, or None when the layout is not defined everywhere."""
    limit = data.draw(limits(x))
    try:
        return check(x, limit=limit), limit
    except LayoutError:
        assert isinstance(x, ComposedLayout) and min(x.offset + v for v in offsets(x.inner)) < 0
        return None, limit


# ---- the checks --------------------------------------------------------------------------


@CHECKS
@given(any_layouts(), st.data())
def test_injective_agrees_with_brute_force_at_any_limit(x, data):
    result, limit = decide(injective, x, data)
    if result is None:
        return
    values = offsets(x)
    truth = len(set(values)) == len(values)
    assert_sound(result, truth, limit)
    if result.verdict is Verdict.VIOLATED:
        (w,) = result.witnesses
        assert w["first"] != w["second"]
        assert at(x, index_of(x, w["first"])) == at(x, index_of(x, w["second"])) == w["offset"]


@CHECKS
@given(any_layouts(), st.data())
def test_bijective_agrees_with_brute_force_at_any_limit(x, data):
    result, limit = decide(bijective, x, data)
    if result is None:
        return
    values = offsets(x)
    truth = sorted(values) == list(range(len(values)))
    assert_sound(result, truth, limit)
    if result.verdict is Verdict.VIOLATED:
        w = result.witnesses[0] if result.witnesses else {}
        if "missing offset" in w:
            assert w["missing offset"] not in values and 0 <= w["missing offset"] < max(values) + 1
        if "offset" in w and "coordinate" in w:
            assert w["offset"] < 0 and at(x, index_of(x, w["coordinate"])) == w["offset"]


@CHECKS
@given(any_layouts(), any_layouts(), st.data())
def test_equal_agrees_with_brute_force_at_any_limit(a, b, data):
    limit = data.draw(limits(a))
    try:
        result = equal(a, b, limit=limit)
    except LayoutError:
        return
    truth = size(a) == size(b) and offsets(a) == offsets(b)
    assert_sound(result, truth, limit)
    if result.verdict is Verdict.VIOLATED and result.witnesses and "index" in result.witnesses[0]:
        w = result.witnesses[0]
        assert at(a, w["index"]) == w["first"] != w["second"] == at(b, w["index"])


@st.composite
def composition_cases(draw):
    a = draw(st.one_of(plain_layouts(-2, 8), compact_layouts(), composed_layouts()))
    b = draw(st.one_of(plain_layouts(0, 8), compact_layouts()))
    return a, b


def image(a, b):
    """A(B(i)) for every index of B, or None where B reaches below 0."""
    inner = [layout_at(b.shape, b.stride, i) for i in range(size(b))]
    return None if min(inner) < 0 else [at(a, y) for y in inner]


def one_mode_fits(values):
    """Is there a flat layout with exactly these offsets, in index order? Tries every ordered
    factorization of the size, each factor's stride read off the values."""
    n = len(values)

    def factorizations(m):
        if m == 1:
            yield ()
            return
        for f in range(2, m + 1):
            if m % f == 0:
                for rest in factorizations(m // f):
                    yield (f, *rest)

    for factors in factorizations(n):
        strides, position = [], 1
        for f in factors:
            strides.append(values[position] if position < n else 0)
            position *= f
        shape = factors or (1,)
        if all(layout_at(shape, tuple(strides) or (0,), i) == values[i] for i in range(n)):
            return True
    return False


def layout_exists(b, values):
    """Brute force: a layout refining B's shape has these offsets exactly when they add up over
    B's flat modes and each mode's line of offsets is itself a layout."""
    sizes = flat(b.shape)
    steps = [prod(sizes[:k]) for k in range(len(sizes))]
    lines = [[values[c * step] for c in range(s)] for s, step in zip(sizes, steps)]
    for i in range(len(values)):
        if values[i] != sum(line[(i // step) % s] for s, step, line in zip(sizes, steps, lines)):
            return False
    return all(one_mode_fits(line) for line in lines)


@CHECKS
@given(composition_cases(), st.data())
def test_composition_is_a_layout_agrees_with_brute_force_at_any_limit(case, data):
    a, b = case
    values = image(a, b)
    if values is None:
        return
    limit = data.draw(limits(b))
    try:
        result = composition(a, b, limit=limit)
    except LayoutError:
        return
    if not isinstance(a, Layout):  # the answer is composed too: it must be A∘B where it is proved
        assert result.verdict is not Verdict.PROVED or offsets(compose(a, b)) == values, result.text()
        return
    if result.verdict is Verdict.PROVED:
        assert layout_exists(b, values), result.text()
    elif result.verdict is Verdict.VIOLATED:
        assert not layout_exists(b, values), result.text()
    elif isinstance(a, Layout) and limit >= size(b):
        assert layout_exists(b, values) and "refuses" in result.reason, result.text()


@CHECKS
@given(composition_cases(), st.one_of(plain_layouts(0, 24), st.just("the algebra's")), st.data())
def test_composition_with_a_result_agrees_with_brute_force_at_any_limit(case, r, data):
    a, b = case
    values = image(a, b)
    if values is None:
        return
    if r == "the algebra's":
        try:
            r = compose(a, b)
        except LayoutError:
            return
    limit = data.draw(limits(b))
    try:
        result = composition(a, b, r, limit=limit)
    except LayoutError:
        return
    truth = size(r) == size(b) and offsets(r) == values
    assert_sound(result, truth, limit)


@CHECKS
@given(plain_layouts(-2, 12), plain_layouts(-2, 12), st.integers(1, 40), st.data())
def test_partition_agrees_with_brute_force_at_any_limit(threads, values, tile, data):
    tv = Layout((threads.shape, values.shape), (threads.stride, values.stride))
    limit = data.draw(limits(tv))
    result = partition(tv, tile, limit=limit)
    truth = sorted(offsets(tv)) == list(range(tile))
    assert_sound(result, truth, limit)


def assert_sound(result, truth, limit):
    if result.verdict is Verdict.PROVED:
        assert truth, result.text()
    elif result.verdict is Verdict.VIOLATED:
        assert not truth, result.text()
    else:
        assert limit < 1 << 22, f"undecided with the full enumeration limit: {result.text()}"


# ---- the cases that were proved falsely --------------------------------------------------


@pytest.mark.parametrize(
    ("check", "text", "limit", "verdict"),
    [
        (bijective, "Sw<3,4,3> o 5000000:1", 1 << 22, Verdict.VIOLATED),
        (injective, "8388608:0 o 0 o 8388608:1", 1 << 22, Verdict.VIOLATED),
        (bijective, "Sw<1,0,2> o 0 o 5:1", 2, Verdict.UNKNOWN),
        (bijective, "Sw<1,0,2> o 0 o 13:1", 8, Verdict.VIOLATED),
        (injective, "1:0 o 0 o 5:1", 2, Verdict.VIOLATED),
        (bijective, "Sw<3,4,3> o 0 o 5000064:1", 1 << 22, Verdict.PROVED),
        (injective, "(8,4):(1,2) o 0 o 8388608:1", 1 << 22, Verdict.VIOLATED),
        (bijective, "Sw<3,4,3> o 3 o 8388608:1", 1 << 22, Verdict.VIOLATED),
    ],
)
def test_beyond_the_limit_the_outer_function_counts(check, text, limit, verdict):
    assert check(P(text), limit=limit).verdict is verdict


def test_a_swizzle_whose_last_block_is_too_large_to_check_is_unknown():
    result = bijective(P("Sw<3,4,3> o 0 o 1000:1"), limit=4)
    assert result.verdict is Verdict.UNKNOWN and "exceeds the enumeration limit" in result.reason
