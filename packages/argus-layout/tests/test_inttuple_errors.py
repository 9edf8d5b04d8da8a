"""Every function `argus.layout` exports refuses a wrong kind of argument with `LayoutError`.

A Layout given as a shape, None, a string, a float, a bool, a numpy array where an int belongs,
mismatched nesting, a zero divisor: the only exception that may leave the package is
`LayoutError`, whose message names the argument and what it accepts, and no wrong kind of input
gives an answer as if it were right.
"""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import argus.layout as al
import numpy as np
import pytest
from argus.layout import E, Layout, LayoutError, Swizzle
from argus.layout.symbolic import Var
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

L42 = Layout((4, 2), (1, 4))


def nested(levels: int) -> Any:
    """4 inside `levels` one-element tuples: deeper than an int-tuple may nest."""
    value: Any = 4
    for _ in range(levels):
        value = (value,)
    return value


#: Arguments of the wrong kind for (almost) any parameter; some are right for a few.
WRONG: list[Any] = [
    None, "abc", "4", b"4", 2.5, float("nan"), 1j, True, np.bool_(True), [], (), {}, {1: 2}, object(), -3, 0,
    1 << 70, -(1 << 70), np.int64(3), np.array([1, 2]), np.array([[1], [2, 3]], dtype=object), np.array([0.5]),
    L42, Swizzle(2, 2, 3), al.make_composed_layout(Swizzle(1, 1, 1), 0, Layout(4)), E(0), al.ArithmeticTuple({(0,): 1}),
    (4, "x"), (4, (2, None)), (4, 2.0), (0,), (4, -2), ((4,), 2), (4, (2, 3)), ((1 << 64), 3), (L42, 2), [4, [2, "y"]],
    nested(40), Var("x"), (Var("x"), 1), print, Layout, range(3),
]


def valid_calls(tmp: Path) -> dict[str, tuple[Any, ...]]:
    """One valid positional call of every callable `argus.layout` exports."""
    return {
        "ArithmeticTuple": ({(0,): 1},),
        "ComposedLayout": (Swizzle(1, 1, 1), 0, L42),
        "E": (0,),
        "Layout": ((4, 2), (1, 4)),
        "ScaledBasis": (2, (0,)),
        "Swizzle": (2, 2, 3),
        "blocked_product": (L42, Layout((2, 2))),
        "ceil_div": (7, 2),
        "coalesce": (L42,),
        "compact_col_major": ((4, (2, 3)), 1),
        "compact_row_major": ((4, (2, 3)), 1),
        "complement": (Layout(4), 16),
        "composition": (L42, Layout(4)),
        "congruent": ((4, (2, 3)), (1, (4, 8))),
        "cosize": (L42,),
        "crd2idx": ((1, (1, 2)), (4, (2, 3)), (1, (4, 8))),
        "depth": ((4, (2, 3)),),
        "downcast": (L42, 2),
        "filter": (L42,),
        "filter_zeros": (L42,),
        "flat_divide": (Layout((8, 4)), (2, 2)),
        "flat_product": (L42, (2, 2)),
        "flatten": ((4, (2, 3)),),
        "idx2crd": (11, (4, (2, 3))),
        "inner_product": ((1, (2, 3)), (4, (5, 6))),
        "left_inverse": (L42,),
        "logical_divide": (Layout((8, 4)), (2, 2)),
        "logical_product": (L42, Layout(2)),
        "make_composed_layout": (Swizzle(1, 1, 1), 0, L42),
        "make_identity_layout": ((4, 2),),
        "make_layout": ((4, 2), (1, 4)),
        "make_layout_like": (L42,),
        "make_ordered_layout": ((4, 2), (1, 0)),
        "max_common_layout": (L42, L42),
        "max_common_vector": (L42, L42),
        "parse": ("(4,2):(1,4)",),
        "parse_int_tuple": ("((2,2),8)",),
        "prefix_product": ((4, (2, 3)), 1),
        "product": ((4, (2, 3)),),
        "raked_product": (L42, Layout((2, 2))),
        "rank": ((4, (2, 3)),),
        "right_inverse": (L42,),
        "same_function": (L42, L42),
        "save_svg": (L42, tmp / "layout.svg"),
        "shape_div": ((4, 6), 2),
        "size": ((4, 2),),
        "slice_and_offset": ((None, 1), L42),
        "tile_to_shape": (Layout(2), 8, None),
        "tiled_divide": (Layout((8, 4)), (2, 2)),
        "tiled_product": (L42, (2, 2)),
        "to_svg": (L42,),
        "upcast": (L42, 2),
        "zipped_divide": (Layout((8, 4)), (2, 2)),
        "zipped_product": (L42, (2, 2)),
    }


EXPORTED = sorted(name for name in al.__all__ if callable(getattr(al, name))
                  and not (inspect.isclass(getattr(al, name)) and issubclass(getattr(al, name), BaseException)))


def only_layout_errors(function: Any, *args: Any) -> None:
    """Call `function`; an answer or a LayoutError is fine, any other exception fails the test."""
    try:
        function(*args)
    except LayoutError as err:
        assert "\n" not in err.reason, f"a one-line reason, got {err.reason!r}"


def test_every_export_has_a_valid_call_here_and_it_works(tmp_path: Path) -> None:
    calls = valid_calls(tmp_path)
    assert sorted(calls) == EXPORTED, "each export needs a valid call in valid_calls"
    for name, args in calls.items():
        getattr(al, name)(*args)


@pytest.mark.parametrize("name", EXPORTED)
def test_a_wrong_kind_of_argument_is_a_layout_error(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    """Each argument in turn takes each wrong kind, the others staying valid (a string is a
    file name to save_svg: it lands in a scratch folder)."""
    monkeypatch.chdir(tmp_path)
    function, args = getattr(al, name), valid_calls(tmp_path)[name]
    for position in range(len(args)):
        for wrong in WRONG:
            only_layout_errors(function, *args[:position], wrong, *args[position + 1:])


def malformed_int_tuples() -> st.SearchStrategy[Any]:
    """Nested tuples and lists whose leaves are ints (zero and negative too) or anything else."""
    leaves = st.one_of(st.integers(-4, 9), st.sampled_from([None, "a", 2.5, True, L42, E(1), np.int32(2),
                                                            np.array([1, 2]), 1 << 65, b"", Swizzle(1, 1, 1)]))
    return st.recursive(leaves, lambda inner: st.one_of(st.tuples(inner, inner), st.lists(inner, max_size=3),
                                                        st.tuples(inner)), max_leaves=8)


INT_TUPLE_HELPERS = ["ceil_div", "compact_col_major", "compact_row_major", "congruent", "crd2idx", "depth", "flatten",
                     "idx2crd", "inner_product", "prefix_product", "product", "rank", "shape_div", "size"]


@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(INT_TUPLE_HELPERS), replaced=st.lists(st.booleans(), min_size=3, max_size=3),
       values=st.lists(malformed_int_tuples(), min_size=3, max_size=3))
def test_malformed_int_tuples_are_layout_errors(name: str, replaced: list[bool], values: list[Any]) -> None:
    valid = valid_calls(Path("unused"))[name]
    only_layout_errors(getattr(al, name), *(v if r else a for a, v, r in zip(valid, values, replaced)))


# ---- what used to escape, or to answer as if the input were right -------------------------------

@pytest.mark.parametrize("call, says", [
    (lambda: al.product(None), r"product\(None\): the int-tuple must be an int or a tuple of int-tuples, got NoneType"),
    (lambda: al.product(L42), r"the int-tuple must be an int or a tuple of int-tuples, got Layout"),
    (lambda: al.prefix_product((4, (2, None))), r"the int-tuple at mode \[1\]\[1\] must be an int"),
    (lambda: al.prefix_product((4, 2), "1"), r"init must be an int, got str"),
    (lambda: al.inner_product((1, 2), (3, (4, 5))), r"a and b must have the same nesting profile"),
    (lambda: al.inner_product((1, 2), "ab"), r"b must be an int or a tuple of int-tuples, got str"),
    (lambda: al.ceil_div(7, 0), r"ceil_div\(7, 0\): the divisor is 0"),
    (lambda: al.ceil_div(None, 2), r"the dividend must be an int, got NoneType"),
    (lambda: al.crd2idx(None, (4, 2), (1, 4)), r"the coordinate must be an int ≥ 0, an integer numpy array or a "
                                               r"symbolic expression, or a tuple of them, got NoneType"),
    (lambda: al.crd2idx((1, 1), L42, (1, 4)), r"the shape must be an int or a tuple of int-tuples, got Layout"),
    (lambda: al.crd2idx((1, 1, 1), (4, 2), (1, 4)), r"the coordinate does not match the shape \(4, 2\)"),
    (lambda: al.crd2idx((1, 1), (4, 2), 1), r"the shape and the stride must have the same nesting profile"),
    (lambda: al.crd2idx((np.array([1, 2]), np.array([1, 2, 3])), (4, 4), (1, 4)), r"do not broadcast together"),
    (lambda: al.idx2crd("3", (4, 2)), r"the index must be an int ≥ 0, an integer numpy array or a symbolic "
                                      r"expression, got str"),
    (lambda: al.idx2crd(np.array([1, -1]), (4, 2)), r"the index holds -1; coordinates and indices are ≥ 0"),
    (lambda: al.idx2crd(3, (4, 0)), r"leaf 1 of the shape is 0; shapes are positive ints"),
    (lambda: al.compact_row_major(None), r"compact_row_major\(None\): the shape must be an int or a tuple"),
    (lambda: al.compact_col_major((4, 2), 1.5), r"current must be an int, got float"),
    (lambda: al.flatten("abc"), r"flatten\(abc\): the int-tuple must be an int or a tuple of int-tuples, got str"),
    (lambda: al.congruent((1, 2), None), r"b must be an int or a tuple of int-tuples, got NoneType"),
    (lambda: al.size(np.array([4, 2])), r"size\(\[4 2\]\): shape must be an int or a tuple of int-tuples, got ndarray"),
    (lambda: Layout(np.array([4, 2])), r"shape must be an int or a tuple of int-tuples, got ndarray"),
    (lambda: al.parse_int_tuple(None), r"parse_int_tuple\(None\): expected a string, got NoneType"),
    (lambda: al.to_svg(L42, title=3), r"title must be a string"),
    (lambda: al.save_svg(L42, None), r"path must be a file name"),
    (lambda: L42((np.array([1, 2]), np.array([1, 2, 3]))), r"do not broadcast together"),
    (lambda: L42((np.array([1, 2]), "x")), r"takes integer arrays and ints ≥ 0, got str"),
])
def test_the_error_names_the_argument_and_what_it_accepts(call: Any, says: str) -> None:
    with pytest.raises(LayoutError, match=says):
        call()


@pytest.mark.parametrize("call", [
    lambda: al.product((4, 2.5)),  # was 10.0
    lambda: al.product(True),  # was True
    lambda: al.ceil_div(2.5, 1),  # was 3.0
    lambda: al.rank("abc"),  # was 1
    lambda: al.depth(None),  # was 0
    lambda: al.congruent("ab", "cd"),  # was True
    lambda: al.crd2idx((1, 2), (4, 4), (1,)),  # was 1: the stride's missing mode dropped
    lambda: al.crd2idx(-1, (4, 4), (1, 4)),  # was -1
    lambda: al.inner_product((2, 3), (1, (1,))),  # was 5: the nesting ignored
    lambda: al.compact_row_major((4, 0)),  # was (0, 1)
    lambda: al.prefix_product((4, 2), True),  # was (True, 4)
    lambda: E(0) * 2.5,  # was 2.5@0
    lambda: "ab" * E(0),  # was ab@0
    lambda: E(0) * (1, 2),  # was (1, 2)@0
    lambda: al.ArithmeticTuple({(0,): 0.5}),  # was accepted
    lambda: al.ArithmeticTuple({}),  # was accepted, and failed when printed
])
def test_a_wrong_kind_never_gets_an_answer(call: Any) -> None:
    with pytest.raises(LayoutError):
        call()


def test_the_checked_helpers_answer_right_input() -> None:
    assert al.product((4, (2, 3))) == 24 and al.product(()) == 1
    assert al.prefix_product((2, (3, 4))) == (1, (2, 6)) and al.prefix_product(4, 3) == 3
    assert al.inner_product((1, (2, 3)), (4, (5, 6))) == 32
    assert (al.ceil_div(7, 2), al.ceil_div(-7, 2), al.ceil_div(np.int64(8), 3)) == (4, -3, 3)
    assert al.crd2idx((1, (1, 2)), (4, (2, 3)), (1, (4, 8))) == 21
    assert al.crd2idx(5, (4, 2), (1, 4)) == L42(5)
    np.testing.assert_array_equal(al.crd2idx((np.arange(4), 1), (4, 2), (1, 4)), [4, 5, 6, 7])
    assert al.idx2crd(11, (4, (2, 3))) == (3, (0, 1))
    assert al.idx2crd(Var("i", 0, 8), (4, 2)) == (Var("i", 0, 8) % 4, Var("i", 0, 8) // 4)
    rows, cols = al.idx2crd(np.array([1, 5]), (1 << 64, 3))  # sizes beyond int64 still divide exactly
    assert rows.tolist() == [1, 5] and cols.tolist() == [0, 0]
    assert al.compact_col_major((4, (2, 3))) == (1, (4, 8))
    assert al.compact_row_major((4, (2, 3))) == (6, (3, 1))
    assert al.flatten((4, (E(0), 3))) == (4, E(0), 3) and al.rank([4, [2, 3]]) == 2 and al.depth(4) == 0


def test_a_nested_tiler_keeps_mode_0_the_tile() -> None:
    """zipped_divide by ((2, 4), 2): mode 0 is the whole 2×4×2 tile, mode 1 says which tile, as
    for a flat tiler; a tiler entry (4,) for a mode of rank 1 is no IndexError."""
    a = Layout(((4, 8), 2))
    for divide in (al.zipped_divide, al.tiled_divide):
        tiled = divide(a, ((2, 4), 2))
        assert tiled[0].size() == 16
        assert tiled[0].shape == ((2, 4), 2)
    assert al.zipped_divide(L42, ((4,), 2))[0].size() == 8
    assert al.same_function(al.zipped_product(L42, ((2,), 2))[0], L42)
