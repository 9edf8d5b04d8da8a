"""Answers the algebra gave that broke their own law, and the laws that now hold for them.

Each operation either refuses with a `LayoutError` or answers; where it answers, the answer
is checked here against the operation's definition with the plain-int reference in
`strategies`, never with the operation under test. The random laws are derandomized and
bounded so that they run in seconds.
"""

from __future__ import annotations

import pytest
from argus.layout import (
    ComposedLayout,
    Layout,
    LayoutError,
    Swizzle,
    composition,
    downcast,
    logical_divide,
    make_layout_like,
    max_common_layout,
    max_common_vector,
    parse,
    same_function,
    shape_div,
    slice_and_offset,
    tile_to_shape,
    upcast,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import layouts, leaves, ref, ref_offsets, swizzle_ref, swizzles

RED_TEAM = settings(max_examples=300, deadline=None, derandomize=True)
P = parse


# ---- the plain-int reference, extended to a composed layout ------------------------------


def line_at(layout: Layout, i: int) -> int | None:
    """`layout` at index i; below 0 only a straight line ``i -> i·c`` is defined, as the
    algebra reads it (every mode's stride is c times the sizes below it, size-1 modes but the
    last aside). None where it is not defined."""
    if i >= 0:
        return ref(layout, i)
    shapes, strides = leaves(layout.shape), leaves(layout.stride)
    c, below = ref(layout, 1), 1
    for k, (s, d) in enumerate(zip(shapes, strides)):
        if (s > 1 or k == len(shapes) - 1) and d != c * below:
            return None
        below *= s
    return i * c


def composed_at(x: ComposedLayout, i: int) -> int | None:
    """outer(offset + inner(i)), or None where that is not defined (below 0 for the outer)."""
    inner = line_at(x.inner, i)
    if inner is None or x.offset + inner < 0:
        return None
    y = x.offset + inner
    if isinstance(x.outer, Swizzle):
        return swizzle_ref(x.outer.bits, x.outer.base, x.outer.shift, y)
    return ref(x.outer, y)


@st.composite
def defined_composed_layouts(draw):
    """``outer o offset o inner`` defined on its own domain; the inner layout may have negative
    strides and size-1 modes of any stride, which matter past its size."""
    outer = draw(st.one_of(swizzles(), layouts(max_stride=8)))
    inner = draw(layouts(max_rank=3, max_shape=4, max_stride=8, negative=True))
    lowest = min(ref_offsets(inner))
    offset = draw(st.integers(max(0, -lowest), max(0, -lowest) + 8))
    return ComposedLayout(outer, offset, inner)


# ---- composition after a composed layout stays where its outer function is defined -------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Sw<3,4,3> o 0 o (64,1):(1,-64)", "128:1"),  # past its size, A's inner layout goes below 0
        ("4:1 o 0 o (2,1):(1,-5)", "4:1"),  # an outer layout is not defined below 0 either
        ("Sw<1,0,1> o 0 o 8:1", "4:-1"),  # B goes below 0 along a straight line
        ("Sw<1,0,1> o 2 o 8:1", "(2,2):(1,-3)"),  # the offset does not make up for B
    ],
)
def test_composition_refuses_where_a_composed_a_is_not_defined(a, b):
    with pytest.raises(LayoutError, match="not defined"):
        composition(P(a), P(b))


def test_composition_after_a_bare_swizzle_refuses_negative_offsets_of_b():
    with pytest.raises(LayoutError, match="not defined"):
        composition(Swizzle(1, 1, 1), P("4:-1"))


def test_composition_keeps_what_is_defined():
    """Below 0 along a straight line is fine when the offset makes up for it."""
    r = composition(P("Sw<1,0,1> o 8 o 8:1"), P("4:-1"))
    assert [r(i) for i in range(4)] == [swizzle_ref(1, 0, 1, 8 - i) for i in range(4)]


@RED_TEAM
@given(defined_composed_layouts(), layouts(max_rank=3, max_shape=4, max_stride=12, negative=True))
def test_composition_after_a_composed_layout_is_a_defined_function(a, b):
    try:
        r = composition(a, b)
    except LayoutError:
        return
    assert (r.outer, r.offset) == (a.outer, a.offset)
    for i in range(b.size()):
        assert r.offset + ref(r.inner, i) >= 0, (str(a), str(b), str(r), i)  # defined
        want = composed_at(a, ref(b, i))
        assert want is not None, (str(a), str(b), str(r), i)  # A(B(i)) is defined too
        assert composed_at(r, i) == want, (str(a), str(b), str(r), i)


@RED_TEAM
@given(defined_composed_layouts(), st.integers(1, 12))
def test_a_divide_of_a_composed_layout_is_a_defined_function(a, n):
    try:
        r = logical_divide(a, n)
    except LayoutError:
        return
    for i in range(r.size()):
        assert r.offset + ref(r.inner, i) >= 0, (str(a), n, str(r), i)


def test_a_divide_that_reaches_where_a_composed_layout_is_not_defined_is_refused():
    with pytest.raises(LayoutError, match="not defined"):
        logical_divide(P("Sw<3,4,3> o 0 o (64,1):(1,-64)"), 128)


# ---- upcast and downcast cover the same memory --------------------------------------------


def narrow_elements(wide_offsets, n):
    """The narrow offsets that the given wide elements hold."""
    return sorted(n * w + r for w in wide_offsets for r in range(n))


@pytest.mark.parametrize(("layout", "n"), [("8:-1", 2), ("(2,4):(-1,-2)", 2), ("(4,2):(-1,-4)", 4)])
def test_upcast_refuses_a_reversed_unit_mode(layout, n):
    """Offsets 0, -1, ... start at the first element of the vector [0, n) and run into the
    previous one: they are never whole vectors."""
    with pytest.raises(LayoutError, match="stride -1"):
        upcast(P(layout), n)


def test_downcast_refuses_a_reversed_unit_mode_that_would_hold_the_narrow_elements():
    with pytest.raises(LayoutError, match="stride -1"):
        downcast(P("5:-1"), 2)


def test_downcast_of_a_reversed_layout_puts_the_narrow_elements_in_a_size_1_mode():
    narrow = downcast(P("(5,1):(-1,7)"), 2)
    assert narrow == P("(5,2):(-2,1)")
    assert sorted(ref_offsets(narrow)) == narrow_elements(ref_offsets(P("5:-1")), 2)


@RED_TEAM
@given(layouts(max_rank=3, max_shape=4, max_stride=8, negative=True), st.sampled_from([2, 4]))
def test_downcast_holds_exactly_the_narrow_elements_of_the_wide_ones(wide, n):
    try:
        narrow = downcast(wide, n)
    except LayoutError:
        return
    assert sorted(ref_offsets(narrow)) == narrow_elements(ref_offsets(wide), n), (str(wide), str(narrow))


@RED_TEAM
@given(layouts(max_rank=3, max_shape=8, max_stride=8, negative=True), st.sampled_from([2, 4]))
def test_upcast_touches_every_vector_of_the_narrow_elements(narrow, n):
    try:
        wide = upcast(narrow, n)
    except LayoutError:
        return
    covered = set(narrow_elements(ref_offsets(wide), n))
    assert set(ref_offsets(narrow)) <= covered, (str(narrow), str(wide))


# ---- max_common_layout: indices of both layouts ---------------------------------------------


@pytest.mark.parametrize(("a", "b", "n"), [("4:1", "8:1", 4), ("8:1", "4:1", 4), ("1:1", "(1,1,2):(0,6,1)", 1)])
def test_max_common_vector_counts_only_elements_of_both(a, b, n):
    assert max_common_vector(P(a), P(b)) == n


@RED_TEAM
@given(layouts(max_rank=3, max_shape=6, max_stride=12, negative=True),
       layouts(max_rank=3, max_shape=6, max_stride=12, negative=True))
def test_max_common_layout_indexes_both_layouts_contiguously(a, b):
    common = max_common_layout(a, b)
    for i in range(common.size()):
        j = ref(common, i)
        assert 0 <= j < min(a.size(), b.size()), (str(a), str(b), str(common), i)
        assert ref(a, j) == ref(b, j) == i, (str(a), str(b), str(common), i)


# ---- refusals instead of errors from inside ------------------------------------------------


def test_tile_to_shape_of_an_empty_shape_is_the_empty_block():
    assert tile_to_shape(Layout((), ()), ()) == Layout((), ())


@pytest.mark.parametrize(
    "call",
    [
        lambda: same_function(P("4:1"), None),
        lambda: slice_and_offset((None, P("4:1")), P("(4,4):(1,4)")),
        lambda: make_layout_like(Swizzle(1, 1, 1)),
        lambda: make_layout_like(P("(8,8):(1@0,1@1)")),
        lambda: slice_and_offset((None, 1), Swizzle(1, 1, 1)),
        lambda: shape_div(5, 0),
        lambda: shape_div(P("4:1"), 2),
        lambda: tile_to_shape(P("4:1"), ()),
    ],
)
def test_wrong_arguments_are_refused_with_a_layout_error(call):
    with pytest.raises(LayoutError):
        call()


# ---- printing and reading back --------------------------------------------------------------


@st.composite
def printable(draw):
    inner = draw(layouts(max_rank=4, max_shape=6, max_stride=1 << 40, negative=True))
    kind = draw(st.sampled_from(["plain", "swizzled", "composed"]))
    if kind == "plain":
        return inner
    outer = draw(swizzles()) if kind == "swizzled" else draw(layouts(negative=True))
    return ComposedLayout(outer, draw(st.integers(-(1 << 40), 1 << 40)), inner)


@RED_TEAM
@given(printable())
def test_parse_reads_back_what_is_printed(x):
    assert parse(str(x)) == x

