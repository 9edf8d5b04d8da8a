"""How results continue past their size: a layout is a function on all naturals.

Past its size a layout keeps stepping along its last mode with that mode's stride, and a
later composition (or a divide's rest mode) reads it there. These laws compare chains of
operations with the composed functions evaluated by brute force with the plain-int reference
in `strategies` (last flat mode unbounded), never with the operation under test.
"""

from __future__ import annotations

import pytest
from argus.layout import (
    E,
    Layout,
    LayoutError,
    complement,
    composition,
    filter,
    logical_divide,
    make_identity_layout,
    make_layout,
    parse,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import (
    _admissible_b,
    continuing_pairs,
    evaluate,
    layouts,
    leaves,
    ref,
    shape_size,
    tractable_layouts,
)

LAWS = settings(max_examples=300, deadline=None)
P = parse


@pytest.mark.parametrize(
    ("a", "b", "c", "want"),
    [
        ("1:0", "1:1", "4:1", "4:0"),
        ("8:2", "(4,1):(1,5)", "8:1", "(4,2):(2,10)"),
        ("(4,3):(1,10)", "(2,1):(1,4)", "6:1", "(2,3):(1,10)"),
        ("(4,1):(1,42)", "1:4", "3:1", "3:42"),
    ],
)
def test_a_size_1_mode_continues_as_a_does(a, b, c, want):
    inner = composition(P(a), P(b))
    assert composition(inner, P(c)) == P(want)


@LAWS
@given(st.integers(1, 6), st.integers(-4, 6), layouts(max_rank=4, negative=True))
def test_composition_with_a_straight_line_scales_b_everywhere(n, stride, b):
    """A single-mode A is ``i -> i·stride`` on all integers, so A∘B is B scaled, past its size too."""
    r = composition(Layout(n, stride), b)
    assert r.shape == b.shape
    for i in range(2 * b.size() + 3):
        assert ref(r, i) == stride * ref(b, i), (str(b), str(r), i)


@st.composite
def chains(draw):
    """(A, B, C): A∘B continues like A(B(i)), and C reaches past size(B) into that continuation."""
    a, b = draw(continuing_pairs())
    return a, b, _admissible_b(draw, composition(a, b))


@LAWS
@given(chains())
@example((P("1:0"), P("1:1"), P("4:1")))
@example((P("8:2"), P("(4,1):(1,5)"), P("8:1")))
@example((P("(4,3):(1,10)"), P("(2,1):(1,4)"), P("6:1")))
def test_chained_compositions_equal_the_composed_functions(chain):
    a, b, c = chain
    r = composition(a, b)
    for i in range(2 * b.size() + 3):
        assert ref(r, i) == evaluate(a.shape, a.stride, ref(b, i)), (str(a), str(b), str(r), i)
    t = composition(r, c)
    for i in range(c.size()):
        want = evaluate(a.shape, a.stride, ref(b, ref(c, i)))
        assert ref(t, i) == want, (str(a), str(b), str(c), str(t), i)


def test_size_1_modes_whose_continuation_is_no_stride_are_refused():
    with pytest.raises(LayoutError, match="negative indices"):
        composition(P("(4,3):(1,10)"), P("(2,1):(1,-1)"))
    with pytest.raises(LayoutError, match="more than one coordinate"):
        composition(make_identity_layout((4, 8)), P("(2,1):(1,5)"))
    assert composition(make_identity_layout((4, 8)), P("(2,1):(1,4)")) == Layout((2, 1), (E(0), E(1)))
    assert composition(P("4:3"), P("1:-2")) == P("1:-6")  # a straight line is defined below 0


@LAWS
@given(tractable_layouts(max_modes=3, max_shape=4), st.integers(1, 64))
def test_complement_that_is_one_element_continues_with_the_next_span(a, m):
    """A complement of one element says where A's next copy goes: (A, R) stays injective past R's size."""
    r = complement(a, m)
    if r.size() > 1:
        return
    both = make_layout(filter(a), r)
    offsets = [ref(both, i) for i in range(3 * both.size())]
    assert len(set(offsets)) == len(offsets), (str(a), m, str(r))


@st.composite
def covering_tilers(draw):
    """(A, B): B walks A's flat modes (its digits) in another order, so it covers A exactly."""
    a = draw(layouts(max_rank=3, negative=True))
    modes, position = [], 1
    for s in leaves(a.shape):
        modes.append((s, position))
        position *= s
    modes = draw(st.permutations(modes))
    if len(modes) == 1:
        return a, Layout(*modes[0])
    return a, Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes))


@LAWS
@given(covering_tilers())
@example((P("2:1"), P("32:1")))
def test_the_rest_mode_of_a_divide_steps_to_the_next_tile(pair):
    """logical_divide(A, B) is A∘(B, complement(B, size(A))); when B covers A, index k·size(A) + j
    is element j of tile k, which A reaches by continuing along its last mode."""
    a, b = pair
    ld = logical_divide(a, b)
    n = shape_size(b.shape)
    for i in range(3 * ld.size()):
        whole = ref(b, i % n) + n * (i // n)
        assert ref(ld, i) == evaluate(a.shape, a.stride, whole), (str(a), str(b), str(ld), i)
