"""Input past the stated limits (nesting, digits, modes, swizzle bits, enumeration) is refused
with `LayoutError` naming the limit: never RecursionError, a ValueError from Python's
int/str conversion, MemoryError or IndexError."""

from __future__ import annotations

import pytest
from argus.layout import (
    ComposedLayout,
    Layout,
    LayoutError,
    LayoutParseError,
    ScaledBasis,
    Swizzle,
    coalesce,
    composition,
    cosize,
    logical_divide,
    max_common_vector,
    parse,
)
from argus.layout.limits import MAX_DIGITS, MAX_MODES, MAX_NESTING


def nested(depth, leaf=4):
    for _ in range(depth):
        leaf = (leaf,)
    return leaf


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("(" * 2000 + "4" + ")" * 2000 + ":1", f"nested more than {MAX_NESTING} levels"),
        ("(" * (MAX_NESTING + 1) + "4" + ")" * (MAX_NESTING + 1), f"nested more than {MAX_NESTING} levels"),
        ("9" * 5000 + ":1", f"at most {MAX_DIGITS}"),
        ("4:" + "7" * (MAX_DIGITS + 1), f"at most {MAX_DIGITS}"),
        ("Sw<1,2,3> o " + "1" * 5000 + " o 4:1", f"at most {MAX_DIGITS}"),
        ("(" + ",".join(["2"] * (MAX_MODES + 1)) + ")", f"more than {MAX_MODES} integers"),
        ("٣:1", "expected an integer"),
        ("4:²", "expected an integer"),
        ("Sw<100,0,100> o 0 o 4:1", "low 63 bits"),
        ("Sw<3," + "9" * 5000 + ",3> o 0 o 4:1", f"at most {MAX_DIGITS}"),
        ("4:1@" + "1@" * 40 + "0", f"longer than {MAX_NESTING}"),
        ("4:1@99999", f"[0, {MAX_MODES})"),
    ],
)
def test_notation_past_the_limits_is_a_parse_error(text, words):
    with pytest.raises(LayoutParseError) as err:
        parse(text)
    assert words in str(err.value)
    assert len(str(err.value)) < 500  # a long text is shown around the error, not whole


def test_the_deepest_nesting_allowed_still_parses():
    text = "(" * MAX_NESTING + "4" + ")" * MAX_NESTING
    assert parse(text + ":" + text.replace("4", "1")).size() == 4


@pytest.mark.parametrize(
    "build",
    [
        lambda: Layout(nested(2000)),
        lambda: Layout(nested(2000), nested(2000, 1)),
        lambda: Layout(nested(MAX_NESTING + 1)),
        lambda: composition(Layout(4, 1), nested(2000)),
        lambda: logical_divide(Layout(4, 1), nested(2000)),
        lambda: coalesce(Layout((4, 2), (1, 4)), nested(2000)),
        lambda: Layout(4, 1)(nested(2000, 0)),
        lambda: Layout(4, 1)(nested(2000, None)),
        lambda: Swizzle(100, 0, 100),
        lambda: Swizzle(10**5000, 0, 10**5000),
        lambda: ScaledBasis(1, (0,) * 100),
        lambda: ScaledBasis(1, (10**9,)),
    ],
)
def test_python_api_past_the_limits_raises_layout_error(build):
    with pytest.raises(LayoutError) as err:
        build()
    str(err.value)  # the message itself prints


def test_numbers_too_long_to_print_are_refused_when_printed_and_shown_in_messages():
    huge = Layout((10**5000, 2), (1, 10**5000))
    with pytest.raises(LayoutError, match="too long to print"):
        str(huge)
    with pytest.raises(LayoutError) as err:
        huge.offsets()
    assert "digits" in str(err.value) and "too large to print" in str(err.value)


def test_a_composed_layout_too_large_to_enumerate_has_no_cosize_and_no_overflowing_offsets():
    big = parse("Sw<3,4,3> o 0 o (4096,4096):(1,4096)")
    with pytest.raises(LayoutError, match="enumerating"):
        cosize(big)
    far = ComposedLayout(Swizzle(2, 2, 4), 10**30, Layout(8, 1))
    with pytest.raises(LayoutError, match="beyond int64"):
        far.offsets()


def test_the_empty_layout_composes():
    empty = parse("()")
    assert composition(empty, parse("2:3")) == Layout(2, 0)
    assert logical_divide(empty, 2).size() == 2
    assert max_common_vector(empty, empty) == 1
