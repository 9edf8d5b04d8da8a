"""Bad input is refused with LayoutError (never IndexError, TypeError, KeyError, ...)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from argus.layout import (
    ComposedLayout,
    Layout,
    LayoutError,
    LayoutParseError,
    Swizzle,
    blocked_product,
    coalesce,
    complement,
    composition,
    cosize,
    downcast,
    filter,
    filter_zeros,
    flat_divide,
    flat_product,
    left_inverse,
    logical_divide,
    logical_product,
    make_identity_layout,
    make_layout,
    make_ordered_layout,
    max_common_layout,
    max_common_vector,
    parse,
    parse_int_tuple,
    raked_product,
    right_inverse,
    tile_to_shape,
    tiled_divide,
    tiled_product,
    upcast,
    zipped_divide,
    zipped_product,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import layouts, swizzles

L23 = Layout((2, 3), (1, 2))

# ---------------------------------------------------------------------------------------
# Notation
# ---------------------------------------------------------------------------------------

# (text, 0-based column of the offending character; the length of the text for "ends too early")
MALFORMED = [
    ("(2,3", 4),
    ("((2,3)", 6),
    ("(2,,3)", 3),
    ("(2;3)", 2),
    ("(2,3))", 5),
    ("(2,3):(1", 8),
    ("(2,3):(1,2", 10),
    ("(2,3):", 6),
    ("2:", 2),
    (":1", 0),
    ("2:1 x", 4),
    ("2:1:3", 3),
    ("-", 1),
    ("_", 1),
    ("", 0),
    ("(2,3):(1,2,3)", 6),  # stride profile differs: points at the stride
    ("(2,3):(1,(2,3))", 6),
    ("Sw<1,2>", 6),
    ("Sw<3,4,3> o", 11),
    ("2:1 o", 5),
    ("2:1 o 3 o", 9),
    ("Sw<3,4,3> o 0 o Sw<1,1,1>", 16),
]


@pytest.mark.parametrize("text, column", MALFORMED, ids=[repr(t) for t, _ in MALFORMED])
def test_malformed_notation_points_at_the_offending_character(text, column):
    with pytest.raises(LayoutParseError) as info:
        parse(text)
    assert info.value.column == column
    assert isinstance(info.value, LayoutError)
    # the message shows the text and a caret under the column
    assert text in str(info.value)
    assert " " * column + "^" in str(info.value)


# Semantically invalid values inside well-formed notation.
BAD_VALUES = [
    ("(2,0):(1,1)", 3, "[1]"),
    ("(2,-3):(1,2)", 3, "[1]"),
    ("(2,(3,0)):(1,(2,6))", 6, "[1][1]"),
    ("(())", 1, "[0]"),
]


@pytest.mark.parametrize("text, column, path", BAD_VALUES, ids=[t for t, _, _ in BAD_VALUES])
def test_invalid_values_in_notation_are_refused_with_their_mode_path(text, column, path):
    with pytest.raises(LayoutParseError) as info:
        parse(text)
    assert path in info.value.reason


@pytest.mark.parametrize("text, column, path", BAD_VALUES, ids=[t for t, _, _ in BAD_VALUES])
def test_invalid_values_in_notation_point_at_the_value(text, column, path):
    with pytest.raises(LayoutParseError) as info:
        parse(text)
    assert info.value.column == column


def test_invalid_swizzle_in_notation():
    for text in ("Sw<3,0,2>", "Sw<-1,0,0>", "Sw<1,-1,1>"):
        with pytest.raises(LayoutParseError):
            parse(text)


def test_parse_rejects_non_strings():
    for bad in (5, None, b"2:1", ["2:1"]):
        with pytest.raises(LayoutError):
            parse(bad)


def test_parse_int_tuple_errors():
    for bad in ("(2,", "2:1", "(2,3) 4", ""):
        with pytest.raises(LayoutParseError):
            parse_int_tuple(bad)


ALPHABET = "()_,:-0123456789 oSw<>"


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=24))
def test_parse_fuzz_parses_or_raises_layout_parse_error(text):
    try:
        value = parse(text)
    except LayoutParseError as err:
        assert 0 <= err.column <= len(text)
        return
    # whatever parses prints back to something that parses to the same value
    assert parse(str(value)) == value


@settings(max_examples=800, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["(", ")", ",", ":", "2", "3", "12", "-1", "0", " o ", "Sw<2,1,3>", "_4", "@", "1@0", "@1"]
        ),
        max_size=12,
    )
)
def test_parse_fuzz_with_tokens(tokens):
    text = "".join(tokens)
    try:
        value = parse(text)
    except LayoutParseError:
        return
    assert parse(str(value)) == value


# ---------------------------------------------------------------------------------------
# Constructing layouts
# ---------------------------------------------------------------------------------------

NON_INTEGERS: list[tuple[str, Callable[[], Any]]] = [
    ("float shape", lambda: Layout(2.0, 1)),
    ("str shape", lambda: Layout("4", 1)),
    ("bool shape", lambda: Layout(True, 1)),
    ("None shape", lambda: Layout(None)),
    ("dict shape", lambda: Layout({1: 2})),
    ("numpy float shape", lambda: Layout(np.float64(4), 1)),
    ("numpy bool shape", lambda: Layout(np.bool_(True), 1)),
    ("nested float shape", lambda: Layout((2, (3, 4.5)), (1, (2, 6)))),
    ("float stride", lambda: Layout(4, 1.0)),
    ("str stride", lambda: Layout(4, "1")),
    ("bool stride", lambda: Layout(4, True)),
    ("nested str stride", lambda: Layout((2, (3, 4)), (1, (2, "6")))),
]


@pytest.mark.parametrize("build", [b for _, b in NON_INTEGERS], ids=[d for d, _ in NON_INTEGERS])
def test_non_integer_shapes_and_strides(build):
    with pytest.raises(LayoutError):
        build()


def test_nested_non_integer_names_the_mode_path():
    with pytest.raises(LayoutError, match=r"\[1\]\[1\]"):
        Layout((2, (3, 4.5)), (1, (2, 6)))


def test_numpy_integers_and_lists_are_accepted():
    assert Layout(np.int64(4), np.int32(2)) == Layout(4, 2)
    assert Layout([2, 3], [1, 2]) == L23


@pytest.mark.parametrize(
    "shape, stride",
    [((2, 3), (1,)), ((2, 3), 1), (2, (1, 2)), ((2, (3, 4)), (1, (2, 6, 7))), ((2, (3, 4)), (1, 2, 6))],
)
def test_mismatched_profiles(shape, stride):
    with pytest.raises(LayoutError, match="nesting profile"):
        Layout(shape, stride)


@pytest.mark.parametrize(
    "shape, stride, where",
    [
        (0, 1, "the shape is 0"),
        (-2, 1, "the shape is -2"),
        ((2, 0), (1, 2), r"mode \[1\] is 0"),
        ((2, (0, 3)), (1, (2, 4)), r"mode \[1\]\[0\] is 0"),
        (((2, -1), 3), ((1, 2), 4), r"mode \[0\]\[1\] is -1"),
        ((2, ()), (1, ()), r"empty tuple at mode \[1\]"),
    ],
)
def test_zero_and_negative_shapes_name_the_mode(shape, stride, where):
    with pytest.raises(LayoutError, match=where):
        Layout(shape, stride)


# ---------------------------------------------------------------------------------------
# Modes and evaluation
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("index", [2, -3, 7, "a", 1.0, True, None])
def test_mode_index_out_of_range_or_not_an_int(index):
    with pytest.raises(LayoutError):
        L23[index]


def test_negative_index():
    with pytest.raises(LayoutError, match="negative"):
        L23(-1)
    with pytest.raises(LayoutError):
        L23(np.array([0, -1]))
    with pytest.raises(LayoutError):
        Swizzle(1, 1, 1)(-1)


@pytest.mark.parametrize("coord", [(1, 2, 3), (1, (2, 3)), ((0, 1), 2), (1,)])
def test_wrong_rank_coordinate(coord):
    with pytest.raises(LayoutError):
        L23(coord)


def test_wrong_rank_coordinate_arrays():
    with pytest.raises(LayoutError):
        L23((np.arange(2), np.arange(2), np.arange(2)))


def test_non_integer_index_arrays():
    with pytest.raises(LayoutError):
        L23(np.array([1.0]))
    with pytest.raises(LayoutError):
        L23(np.array(1.5))
    with pytest.raises(LayoutError):
        L23(np.array([2**63], dtype=np.uint64))


@pytest.mark.parametrize("index", ["a", [1, 2], 1.5, (1, -1), (1.5, 0), 1j], ids=repr)
def test_non_integer_or_negative_scalar_indices(index):
    with pytest.raises(LayoutError):
        L23(index)


@pytest.mark.parametrize("offset", [np.array([-1]), 1.5, "a", np.array([1.5])], ids=repr)
def test_swizzle_rejects_bad_offsets(offset):
    with pytest.raises(LayoutError):
        Swizzle(1, 1, 1)(offset)


def test_int64_overflow():
    with pytest.raises(LayoutError, match="int64"):
        Layout((2, 2), (2**62, 2**62)).offsets()
    with pytest.raises(LayoutError):
        Layout(3, 2**62)(np.arange(3))


# ---------------------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------------------

REFUSALS: list[tuple[str, Callable[[], Any]]] = [
    ("composition negative B on multi-mode A", lambda: composition(Layout((4, 4), (1, 5)), Layout(4, -1))),
    ("composition negative B, SM80 NT", lambda: composition(parse("(1,(2,4)):(0,(-1,512))"), Layout(2, -1))),
    ("composition A not a layout", lambda: composition("a", 1)),
    ("composition B a string", lambda: composition(L23, "x")),
    ("composition B a float", lambda: composition(L23, 2.0)),
    ("composition tiler rank > layout rank", lambda: composition(Layout(4, 1), (2, 2))),
    ("complement negative stride", lambda: complement(Layout(4, -1))),
    ("complement negative stride among others", lambda: complement(Layout((2, 4), (1, -2)))),
    ("complement not a layout", lambda: complement("x")),
    ("complement cotarget 0", lambda: complement(Layout(4, 1), 0)),
    ("complement cotarget negative", lambda: complement(Layout(4, 1), -3)),
    ("complement cotarget float", lambda: complement(Layout(4, 1), 2.5)),
    ("complement non-divisible strides", lambda: complement(Layout((2, 2), (2, 3)))),
    ("upcast non-dividing stride", lambda: upcast(Layout(4, 3), 2)),
    ("upcast partial vector", lambda: upcast(Layout(3, 1), 2)),
    ("upcast factor 0", lambda: upcast(Layout(4, 1), 0)),
    ("upcast factor float", lambda: upcast(Layout(4, 1), 2.0)),
    ("upcast swizzled layout by a non-power of two", lambda: upcast(parse("Sw<1,2,1> o 0 o 12:1"), 3)),
    ("upcast swizzled layout wider than its kept chunk", lambda: upcast(parse("Sw<1,1,1> o 0 o 8:1"), 4)),
    ("upcast swizzled layout with an unaligned offset", lambda: upcast(parse("Sw<1,2,1> o 2 o 8:1"), 4)),
    ("upcast of a layout composed with a layout", lambda: upcast(parse("4:2 o 0 o 4:1"), 2)),
    ("downcast of a layout composed with a layout", lambda: downcast(parse("4:2 o 0 o 4:1"), 2)),
    ("downcast factor 0", lambda: downcast(Layout(4, 1), 0)),
    ("logical_divide tiler rank > layout rank", lambda: logical_divide(Layout(4, 1), (2, 2))),
    ("zipped_divide tiler rank > layout rank", lambda: zipped_divide(Layout(4, 1), (2, 2))),
    ("tiled_divide tiler rank > layout rank", lambda: tiled_divide(Layout(4, 1), (2, 2))),
    ("flat_divide tiler rank > layout rank", lambda: flat_divide(Layout(4, 1), (2, 2))),
    ("logical_product tiler rank > layout rank", lambda: logical_product(Layout(4, 1), (2, 2))),
    ("zipped_product tiler rank > layout rank", lambda: zipped_product(Layout(4, 1), (2, 2))),
    ("tiled_product tiler rank > layout rank", lambda: tiled_product(Layout(4, 1), (2, 2))),
    ("flat_product tiler rank > layout rank", lambda: flat_product(Layout(4, 1), (2, 2))),
    ("coalesce profile rank > layout rank", lambda: coalesce(Layout(4, 1), (1, 1))),
    ("coalesce profile a string", lambda: coalesce(L23, "x")),
    ("zipped_divide None entry", lambda: zipped_divide(L23, (None, 2))),
    ("logical_divide tiler a string", lambda: logical_divide(L23, "x")),
    ("logical_product negative tiler stride", lambda: logical_product(L23, Layout(2, -1))),
    ("blocked_product tiler a string", lambda: blocked_product(L23, "x")),
    ("raked_product tiler None", lambda: raked_product(L23, None)),
    ("tile_to_shape not a multiple", lambda: tile_to_shape(Layout((2, 2)), (3, 4))),
    ("tile_to_shape block rank > target rank", lambda: tile_to_shape(Layout((2, 2, 2)), (4, 4))),
    ("tile_to_shape target a string", lambda: tile_to_shape(Layout(2), "x")),
    ("right_inverse of None", lambda: right_inverse(None)),
    ("left_inverse of a string", lambda: left_inverse("a")),
    ("left_inverse negative stride", lambda: left_inverse(Layout(4, -1))),
    ("filter of a string", lambda: filter("a")),
    ("filter_zeros of a tuple", lambda: filter_zeros((5, 2))),
    ("composition B a size-1 mode continuing to negative indices of A", lambda: composition(Layout((4, 4), (1, 5)), Layout((2, 1), (1, -1)))),
    ("max_common_vector with a string", lambda: max_common_vector(L23, "a")),
    ("Swizzle |S| < B", lambda: Swizzle(3, 0, 2)),
    ("Swizzle |S| < B, negative S", lambda: Swizzle(2, 1, -1)),
    ("Swizzle negative B", lambda: Swizzle(-1, 0, 0)),
    ("Swizzle negative M", lambda: Swizzle(1, -1, 1)),
    ("Swizzle float B", lambda: Swizzle(1.0, 0, 1)),
    ("ComposedLayout bad outer", lambda: ComposedLayout(3, 0, L23)),
    ("ComposedLayout float offset", lambda: ComposedLayout(Swizzle(1, 1, 1), 1.5, L23)),
    ("ComposedLayout bad inner", lambda: ComposedLayout(Swizzle(1, 1, 1), 0, 3)),
    ("make_layout three ints", lambda: make_layout(1, 2, 3)),
    ("make_ordered_layout short order", lambda: make_ordered_layout((2, 3), (1,))),
    ("slice with a wrong-rank coordinate", lambda: L23((None, 1, 2))),
]


@pytest.mark.parametrize("compute", [c for _, c in REFUSALS], ids=[d for d, _ in REFUSALS])
def test_refusals(compute):
    with pytest.raises(LayoutError):
        compute()


def test_cosize_of_a_non_layout():
    with pytest.raises(LayoutError):
        cosize("x")


def test_refusal_names_operation_and_reason():
    with pytest.raises(LayoutError) as info:
        composition(parse("(3,4):(4,1)"), parse("8:2"))
    err = info.value
    assert err.operation == "composition"
    assert err.reason and err.reason in str(err)
    assert len(err.operands) == 2


# ---------------------------------------------------------------------------------------
# Fuzz: every operation on random (also degenerate) inputs answers or raises LayoutError
# ---------------------------------------------------------------------------------------

OPERATIONS: list[Callable[[Layout, Layout, int], Any]] = [
    lambda a, b, n: coalesce(a),
    lambda a, b, n: filter(a),
    lambda a, b, n: composition(a, b),
    lambda a, b, n: composition(a, n),
    lambda a, b, n: complement(a, n),
    lambda a, b, n: complement(a),
    lambda a, b, n: right_inverse(a),
    lambda a, b, n: left_inverse(a),
    lambda a, b, n: logical_divide(a, b),
    lambda a, b, n: zipped_divide(a, b),
    lambda a, b, n: tiled_divide(a, b),
    lambda a, b, n: flat_divide(a, b),
    lambda a, b, n: logical_product(a, b),
    lambda a, b, n: zipped_product(a, b),
    lambda a, b, n: tiled_product(a, b),
    lambda a, b, n: flat_product(a, b),
    lambda a, b, n: blocked_product(a, b),
    lambda a, b, n: raked_product(a, b),
    lambda a, b, n: tile_to_shape(a, n),
    lambda a, b, n: upcast(a, n),
    lambda a, b, n: downcast(a, n),
    lambda a, b, n: max_common_vector(a, b),
    lambda a, b, n: max_common_layout(a, b),
    lambda a, b, n: cosize(a),
    lambda a, b, n: a.offsets(),
    lambda a, b, n: a(n),
    lambda a, b, n: composition(a, tuple(b for _ in range(a.rank))),
    lambda a, b, n: logical_divide(a, tuple(b for _ in range(a.rank))),
    lambda a, b, n: logical_product(a, tuple(b for _ in range(a.rank))),
]


@settings(max_examples=300, deadline=None)
@given(
    layouts(max_rank=3, negative=True, max_stride=2**63),
    layouts(max_rank=3, negative=True),
    st.integers(-3, 40),
)
def test_operations_answer_or_raise_layout_error(a, b, n):
    for op in OPERATIONS:
        try:
            op(a, b, n)
        except LayoutError:
            pass


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 4), min_size=1, max_size=3).map(lambda s: make_identity_layout(tuple(s))),
    layouts(max_rank=3, negative=True),
    st.integers(-3, 40),
)
@example(make_identity_layout((3, 1)), Layout((2, 2), (1, 2)), 0)
def test_operations_on_identity_layouts_answer_or_raise_layout_error(a, b, n):
    for op in OPERATIONS:
        try:
            op(a, b, n)
        except LayoutError:
            pass


JUNK = st.recursive(
    st.one_of(
        st.integers(-3, 8),
        st.floats(allow_nan=True),
        st.text(max_size=2),
        st.booleans(),
        st.none(),
    ),
    lambda children: st.one_of(st.lists(children, max_size=3), st.lists(children, max_size=3).map(tuple)),
    max_leaves=6,
)


@settings(max_examples=500, deadline=None)
@given(JUNK, st.one_of(st.none(), JUNK))
def test_layout_constructor_fuzz(shape, stride):
    try:
        layout = Layout(shape, stride)
    except LayoutError:
        return
    assert parse(str(layout)) == layout


@settings(max_examples=200, deadline=None)
@given(swizzles(), st.integers(0, 4096))
def test_swizzle_of_valid_offsets_never_raises(sw, x):
    assert 0 <= sw(x)
