"""Known input/output facts about CuTe layouts, and where Argus deliberately departs from them.

Sources of the facts (NVIDIA/cutlass):
  [ALG]   media/docs/cpp/cute/02_layout_algebra.md
  [LAY]   media/docs/cpp/cute/01_layout.md
  [COMP]  test/unit/cute/core/composition.cpp
  [CPL]   test/unit/cute/core/complement.cpp
  [LDIV]  test/unit/cute/core/logical_divide.cpp
  [LPROD] test/unit/cute/core/logical_product.cpp
  [RINV]  test/unit/cute/core/inverse_right.cpp
  [LINV]  test/unit/cute/core/inverse_left.cpp
  [SWZ]   include/cute/swizzle.hpp (comments and make_swizzle examples)
  [GMMA]  include/cute/atom/mma_traits_sm90_gmma.hpp (bit-unit GMMA atoms, upcast to element units)
  [HPP]   include/cute/layout.hpp (definitions of upcast, max_common_vector, tile_to_shape)
and the project's field notes (/work/shared/design/FIELD-NOTES.md, "Layout algebra") for the
known wrong answers of pycute and of CuTe C++.

Rows marked "derived" apply a definition from [HPP] by hand; every other row is printed in, or
asserted by, the cited file.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from argus.layout import (
    Layout,
    LayoutError,
    Swizzle,
    blocked_product,
    coalesce,
    compact_col_major,
    compact_row_major,
    complement,
    composition,
    cosize,
    downcast,
    idx2crd,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    max_common_vector,
    parse,
    parse_int_tuple,
    raked_product,
    right_inverse,
    same_function,
    shape_div,
    tile_to_shape,
    upcast,
    zipped_divide,
)
from strategies import leaves, ref, ref_offsets, refines, shape_size

P = parse

A2D = "(9,(4,8)):(59,(13,1))"  # the 2-D divide example of [ALG]
T2D = (P("3:3"), P("(2,4):(1,8)"))


def _offsets(layout) -> str:
    return " ".join(str(layout(i)) for i in range(layout.size()))


def _mode_sizes(layout) -> str:
    return "(" + ",".join("(" + ",".join(str(m.size()) for m in mode) + ")" for mode in layout) + ")"


def _masks(sw: Swizzle) -> str:
    return f"{sw.source_mask:b},{sw.target_mask:b}"


# (description, computation, expected printed result)
KNOWN: list[tuple[str, Callable[[], Any], str]] = [
    # ---- coalesce [ALG], [LAY]
    ("ALG coalesce (2,(1,6)):(1,(6,2))", lambda: coalesce(P("(2,(1,6)):(1,(6,2))")), "12:1"),
    ("ALG coalesce by mode <1,1>", lambda: coalesce(P("(2,(1,6)):(1,(6,2))"), (1, 1)), "(2,6):(1,2)"),
    ("ALG column-major (2,4):(1,2) acts as 8:1", lambda: coalesce(P("(2,4):(1,2)")), "8:1"),
    ("LAY ((4,2)):((1,4)) is the identity 8:1", lambda: coalesce(P("((4,2)):((1,4))")), "8:1"),
    # ---- composition [ALG]
    (
        "ALG (6,2):(8,2) o (4,3):(3,1)",
        lambda: composition(P("(6,2):(8,2)"), P("(4,3):(3,1)")),
        "((2,2),3):((24,2),8)",
    ),
    ("ALG (6,2):(8,2) o 4:3", lambda: composition(P("(6,2):(8,2)"), P("4:3")), "(2,2):(24,2)"),
    ("ALG (6,2):(8,2) o 3:1, coalesced", lambda: composition(P("(6,2):(8,2)"), P("3:1")), "3:8"),
    ("ALG 20:2 o (5,4):(4,1)", lambda: composition(P("20:2"), P("(5,4):(4,1)")), "(5,4):(8,2)"),
    ("ALG 20:2 o 5:4", lambda: composition(P("20:2"), P("5:4")), "5:8"),
    ("ALG 20:2 o 4:1", lambda: composition(P("20:2"), P("4:1")), "4:2"),
    (
        "ALG (10,2):(16,4) o (5,4):(1,5), static print",
        lambda: composition(P("(10,2):(16,4)"), P("(5,4):(1,5)")),
        "(5,(2,2)):(16,(80,4))",
    ),
    ("ALG (10,2):(16,4) o 5:1, by-mode coalesced", lambda: composition(P("(10,2):(16,4)"), P("5:1")), "5:16"),
    ("ALG (10,2):(16,4) o 4:5", lambda: composition(P("(10,2):(16,4)"), P("4:5")), "(2,2):(80,4)"),
    (
        "ALG by-mode tiler <3:4, 8:2>",
        lambda: composition(P("(12,(4,8)):(59,(13,1))"), (P("3:4"), P("8:2"))),
        "(3,(2,4)):(236,(26,1))",
    ),
    (
        "ALG shape tiler (3,8)",
        lambda: composition(P("(12,(4,8)):(59,(13,1))"), (3, 8)),
        "(3,(4,2)):(59,(13,1))",
    ),
    # ---- shape division used by composition [ALG]
    ("ALG (6,2) / 2", lambda: shape_div((6, 2), 2), "(3,2)"),
    ("ALG (6,2) / 3", lambda: shape_div((6, 2), 3), "(2,2)"),
    ("ALG (6,2) / 6", lambda: shape_div((6, 2), 6), "(1,2)"),
    ("ALG (6,2) / 12", lambda: shape_div((6, 2), 12), "(1,1)"),
    ("ALG (3,6,2,8) / 3", lambda: shape_div((3, 6, 2, 8), 3), "(1,6,2,8)"),
    ("ALG (3,6,2,8) / 6", lambda: shape_div((3, 6, 2, 8), 6), "(1,3,2,8)"),
    ("ALG (3,6,2,8) / 9", lambda: shape_div((3, 6, 2, 8), 9), "(1,2,2,8)"),
    ("ALG (3,6,2,8) / 72", lambda: shape_div((3, 6, 2, 8), 72), "(1,1,1,4)"),
    # ---- complement [ALG]
    ("ALG complement(4:1, 24)", lambda: complement(P("4:1"), 24), "6:4"),
    ("ALG complement(6:4, 24)", lambda: complement(P("6:4"), 24), "4:1"),
    ("ALG complement(4:2, 24)", lambda: complement(P("4:2"), 24), "(2,3):(1,8)"),
    # [LDIV] asserts shape<0> == 32, stride<0> == 1, shape<1> == 1, stride<1> == 32: the rest
    # mode of a tiler that covers A continues to the next tile.
    ("LDIV logical_divide(2:1, 32:1)", lambda: logical_divide(P("2:1"), P("32:1")), "(32,1):(1,32)"),
    ("LDIV logical_divide(32:1, 48:1)", lambda: logical_divide(P("32:1"), P("48:1")), "(48,1):(1,48)"),
    ("ALG complement((2,4):(1,6), 24)", lambda: complement(P("(2,4):(1,6)"), 24), "3:2"),
    ("ALG complement((2,2):(1,6), 24)", lambda: complement(P("(2,2):(1,6)"), 24), "(3,2):(2,12)"),
    (
        "ALG complement((2,2):(4,1), 24) in the product example",
        lambda: complement(P("(2,2):(4,1)"), 24),
        "(2,3):(2,8)",
    ),
    # ---- divides [ALG], [LDIV]
    (
        "ALG logical_divide((4,2,3):(2,1,8), 4:2)",
        lambda: logical_divide(P("(4,2,3):(2,1,8)"), P("4:2")),
        "((2,2),(2,3)):((4,1),(2,8))",
    ),
    (
        "ALG 2-D divide: tile = first mode of each mode",
        lambda: zipped_divide(P(A2D), T2D)[0],
        "(3,(2,4)):(177,(13,2))",
    ),
    (
        "ALG 2-D divide: tile == composition(A, tiler)",
        lambda: composition(P(A2D), T2D),
        "(3,(2,4)):(177,(13,2))",
    ),
    (
        "ALG 2-D logical_divide shape ((3,3),(8,4))",
        lambda: _mode_sizes(logical_divide(P(A2D), T2D)),
        "((3,3),(8,4))",
    ),
    (
        "ALG 2-D zipped_divide shape ((3,8),(3,4))",
        lambda: _mode_sizes(zipped_divide(P(A2D), T2D)),
        "((3,8),(3,4))",
    ),
    ("LDIV logical_divide(48:1, 32:1)", lambda: logical_divide(P("48:1"), P("32:1")), "(32,2):(1,32)"),
    # ---- products [ALG]
    (
        "ALG logical_product((2,2):(4,1), 6:1)",
        lambda: logical_product(P("(2,2):(4,1)"), P("6:1")),
        "((2,2),(2,3)):((4,1),(2,8))",
    ),
    (
        "ALG by-mode logical_product((2,5):(5,1), <3:5,4:6>)",
        lambda: logical_product(P("(2,5):(5,1)"), (P("3:5"), P("4:6"))),
        "((2,3),(5,4)):((5,10),(1,30))",
    ),
    # the figure's blocked product is ((2,3),(5,4)):((5,10),(1,30)) "with mode-0 coalesced for us"
    (
        "ALG blocked_product((2,5):(5,1), (3,4):(1,3))",
        lambda: blocked_product(P("(2,5):(5,1)"), P("(3,4):(1,3)")),
        "(6,(5,4)):(5,(1,30))",
    ),
    (
        "ALG raked_product((2,5):(5,1), (3,4):(1,3))",
        lambda: raked_product(P("(2,5):(5,1)"), P("(3,4):(1,3)")),
        "((3,2),(4,5)):((10,5),(30,1))",
    ),
    # ---- layouts, coordinates and printing [LAY]
    ("LAY default strides of (4,(3,6))", lambda: Layout((4, (3, 6))), "(4,(3,6)):(1,(4,12))"),
    ("LAY sublayout 1 of (4,(3,6))", lambda: Layout((4, (3, 6)))[1], "(3,6):(4,12)"),
    ("LAY sublayout 1,0 of (4,(3,6))", lambda: Layout((4, (3, 6)))[1][0], "3:4"),
    ("LAY default strides of (2,3,5,7)", lambda: Layout((2, 3, 5, 7)), "(2,3,5,7):(1,2,6,30)"),
    ("LAY make_layout(3:1, 4:3)", lambda: make_layout(P("3:1"), P("4:3")), "(3,4):(1,3)"),
    ("LAY make_layout(4:3, 3:1)", lambda: make_layout(P("4:3"), P("3:1")), "(4,3):(3,1)"),
    (
        "LAY make_layout(row, col)",
        lambda: make_layout(P("(3,4):(1,3)"), P("(4,3):(3,1)")),
        "((3,4),(4,3)):((1,3),(3,1))",
    ),
    (
        "LAY LayoutRight strides of (2,(2,2))",
        lambda: Layout((2, (2, 2)), compact_row_major((2, (2, 2)))),
        "(2,(2,2)):(4,(2,1))",
    ),
    (
        "LAY LayoutLeft strides of (2,(2,2))",
        lambda: Layout((2, (2, 2)), compact_col_major((2, (2, 2)))),
        "(2,(2,2)):(1,(2,4))",
    ),
    ("LAY print1D (2,(2,2)):(4,(2,1))", lambda: _offsets(P("(2,(2,2)):(4,(2,1))")), "0 4 2 6 1 5 3 7"),
    ("LAY print1D (2,4):(12,1)", lambda: _offsets(P("(2,4):(12,1)")), "0 12 1 13 2 14 3 15"),
    ("LAY print1D ((4,2)):((2,1))", lambda: _offsets(P("((4,2)):((2,1))")), "0 2 4 6 1 3 5 7"),
    (
        "LAY print2D (2,(2,2)):(4,(2,1)) row 1",
        lambda: " ".join(str(P("(2,(2,2)):(4,(2,1))")(1, n)) for n in range(4)),
        "4 6 5 7",
    ),
    ("LAY idx2crd(16, (3,(2,3)))", lambda: idx2crd(16, (3, (2, 3))), "(1,(1,2))"),
    ("LAY crd2idx(16) on (3,(2,3)):(3,(12,1))", lambda: P("(3,(2,3)):(3,(12,1))")(16), "17"),
    ("LAY crd2idx((1,5)) on (3,(2,3)):(3,(12,1))", lambda: P("(3,(2,3)):(3,(12,1))")((1, 5)), "17"),
    ("LAY crd2idx((1,(1,2))) on (3,(2,3)):(3,(12,1))", lambda: P("(3,(2,3)):(3,(12,1))")((1, (1, 2))), "17"),
    # ---- swizzles [SWZ]
    ("SWZ make_swizzle<0b1000,0b0100> is Sw<1,2,1>", lambda: _masks(Swizzle(1, 2, 1)), "1000,100"),
    (
        "SWZ make_swizzle<0b11000000,0b00000110> is Sw<2,1,5>",
        lambda: _masks(Swizzle(2, 1, 5)),
        "11000000,110",
    ),
    ("SWZ ZZ ^= YY: Sw<1,2,1>(0b1000) = 0b1100", lambda: Swizzle(1, 2, 1)(0b1000), "12"),
    # bits 9 and 7 are read and XORed into bits 6 and 4: 512+128 -> 512+128+64+16
    ("SWZ Sw<3,4,3> XORs bits 7..9 into bits 4..6", lambda: Swizzle(3, 4, 3)(0b1010000000), "720"),
    ("SWZ print of Sw<3,4,3>", lambda: Swizzle(3, 4, 3), "Sw<3,4,3>"),
    # ---- upcast / downcast [GMMA], [HPP]
    ("GMMA K_INTER atom, 16-bit", lambda: upcast(P("(8,128):(128,1)"), 16), "(8,8):(8,1)"),
    ("GMMA K_SW32 atom, 16-bit", lambda: upcast(P("(8,256):(256,1)"), 16), "(8,16):(16,1)"),
    ("GMMA K_SW64 atom, 16-bit", lambda: upcast(P("(8,512):(512,1)"), 16), "(8,32):(32,1)"),
    ("GMMA K_SW128 atom, 16-bit", lambda: upcast(P("(8,1024):(1024,1)"), 16), "(8,64):(64,1)"),
    ("GMMA K_SW128 atom, 8-bit", lambda: upcast(P("(8,1024):(1024,1)"), 8), "(8,128):(128,1)"),
    ("GMMA K_SW128 atom, 32-bit", lambda: upcast(P("(8,1024):(1024,1)"), 32), "(8,32):(32,1)"),
    ("GMMA MN_SW128 atom, 16-bit", lambda: upcast(P("(1024,8):(1,1024)"), 16), "(64,8):(1,64)"),
    ("GMMA MN_INTER atom, 16-bit", lambda: upcast(P("(128,8):(1,128)"), 16), "(8,8):(1,8)"),
    ("HPP downcast undoes the K_SW128 upcast", lambda: downcast(P("(8,64):(64,1)"), 16), "(8,1024):(1024,1)"),
    # ---- derived from definitions in [HPP]
    ("HPP derived: max_common_vector(8:1, 8:1)", lambda: max_common_vector(P("8:1"), P("8:1")), "8"),
    (
        "HPP derived: max_common_vector((4,2):(2,1), 8:1)",
        lambda: max_common_vector(P("(4,2):(2,1)"), P("8:1")),
        "1",
    ),
    (
        "HPP derived: max_common_vector(8:1, (4,2):(1,4))",
        lambda: max_common_vector(P("8:1"), P("(4,2):(1,4)")),
        "8",
    ),
    (
        "HPP derived: max_common_vector((4,8):(1,4), (4,8):(1,8))",
        lambda: max_common_vector(P("(4,8):(1,4)"), P("(4,8):(1,8)")),
        "4",
    ),
    (
        "HPP derived: max_common_vector of row- and column-major 8x8",
        lambda: max_common_vector(P("(8,8):(8,1)"), P("(8,8):(1,8)")),
        "1",
    ),
    (
        "HPP derived: tile_to_shape((8,64):(64,1), (128,128))",
        lambda: tile_to_shape(P("(8,64):(64,1)"), (128, 128)),
        "(128,(64,2)):(64,(1,8192))",
    ),
    (
        "HPP derived: tile_to_shape((2,2):(1,2), (4,6))",
        lambda: tile_to_shape(P("(2,2):(1,2)"), (4, 6)),
        "((2,2),(2,3)):((1,4),(2,8))",
    ),
]


def _show(x: Any) -> str:
    """CuTe's printing of int-tuples: no spaces; layouts and swizzles print themselves."""
    if isinstance(x, tuple):
        return "(" + ",".join(_show(e) for e in x) + ")"
    return str(x)


@pytest.mark.parametrize("compute, expected", [(c, e) for _, c, e in KNOWN], ids=[d for d, _, _ in KNOWN])
def test_known_result(compute, expected):
    assert _show(compute()) == expected


def test_table_is_large_enough():
    assert len(KNOWN) >= 40


# Results where CuTe prints a different grouping or a different stride on a size-1 mode, but
# the function on the domain (and the shape that matters) is the same.
EQUIVALENT: list[tuple[str, Callable[[], Any], str]] = [
    # [ALG]: (3,6,2,8):(w,x,y,z) o 16:9 = (1,2,2,4):(9w,3x,y,z); Argus drops the size-1 mode.
    (
        "ALG (3,6,2,8) o 16:9 keeps (1,2,2,4)",
        lambda: composition(P("(3,6,2,8):(1,10,100,1000)"), P("16:9")),
        "(1,2,2,4):(9,30,100,1000)",
    ),
    # [ALG]: dynamic print ((5,1),(2,2)):((16,4),(80,4)) of Example 3
    (
        "ALG dynamic print of (10,2):(16,4) o (5,4):(1,5)",
        lambda: composition(P("(10,2):(16,4)"), P("(5,4):(1,5)")),
        "((5,1),(2,2)):((16,4),(80,4))",
    ),
    # [ALG] prints the static 1:0; Argus keeps how the single element continues (the next span).
    ("ALG complement((4,6):(1,4), 24)", lambda: complement(P("(4,6):(1,4)"), 24), "1:0"),
    # [ALG] the blocked product figure before mode-0 is coalesced
    (
        "ALG blocked product before coalescing",
        lambda: blocked_product(P("(2,5):(5,1)"), P("(3,4):(1,3)")),
        "((2,3),(5,4)):((5,10),(1,30))",
    ),
]


@pytest.mark.parametrize(
    "compute, expected", [(c, e) for _, c, e in EQUIVALENT], ids=[d for d, _, _ in EQUIVALENT]
)
def test_equivalent_to_known_result(compute, expected):
    got, want = compute(), P(expected)
    assert same_function(got, want)
    assert [m.size() for m in got if m.size() > 1] == [m.size() for m in want if m.size() > 1]
    assert str(got) != expected  # documents a real difference in print


# ---------------------------------------------------------------------------------------
# Post-conditions asserted by CuTe's unit tests, on the inputs those tests use
# ---------------------------------------------------------------------------------------

# [COMP]: every pair below is composed and checked R(c) == A(B(c)) with B compatible with R.
COMPOSITION_CASES = [
    ("1:0", "1:0"),
    ("1:0", "1:1"),
    ("1:1", "1:0"),
    ("1:1", "1:1"),
    ("4:1", "4:1"),
    ("4:2", "4:1"),
    ("4:0", "4:1"),
    ("4:1", "4:0"),
    ("4:1", "1:0"),
    ("4:1", "2:1"),
    ("4:2", "2:1"),
    ("4:1", "2:2"),
    ("4:2", "2:2"),
    ("(4,3)", "12"),
    ("12", "(4,3)"),
    ("12:2", "(4,3)"),
    ("12", "(4,3):(3,1)"),
    ("12:2", "(4,3):(3,1)"),
    ("12", "(2,3):(2,4)"),
    ("(4,3)", "(4,3)"),
    ("(4,3)", "6"),
    ("(4,3)", "6:2"),
    ("(4,3)", "(6,2):(2,1)"),
    ("(4,3)", "(4,3):(3,1)"),
    ("(4,3):(3,1)", "(4,3)"),
    ("(4,3):(3,1)", "12"),
    ("(4,3):(3,1)", "6:2"),
    ("(4,3):(3,1)", "(6,2):(2,1)"),
    ("(8,8)", "((2,2,2),(2,2,2)):((1,16,4),(8,2,32))"),
    ("(8,8):(8,1)", "((2,2,2),(2,2,2)):((1,16,4),(8,2,32))"),
    ("((4,2)):((1,16))", "(4,2):(2,1)"),
    ("(2,2):(2,1)", "(2,2):(2,1)"),
    ("(4,8,2)", "(2,2,2):(2,8,1)"),
    ("(4,8,2):(2,8,1)", "(2,2,2):(1,8,2)"),
    ("(4,8,2):(2,8,1)", "(4,2,2):(2,8,1)"),
    ("12:1", "4:1"),
    ("(12,3):(1,24)", "4:1"),
    ("16:2", "4:2"),
    ("(128,24,5):(1,128,3072)", "64:2"),
    ("(128,24,5):(1,128,3072)", "480:32"),
    ("1:0", "4:1"),
    ("1:1", "4:1"),
    ("4:1", "4:2"),
    ("(4,3):(3,1)", "24"),
    ("(4,3):(3,1)", "8"),
    ("(4,3,1):(3,1,0)", "24"),
    ("3:1", "4:1"),
    ("(48,24,5):(1,128,3072)", "32:1"),
    ("4:-1", "4:1"),
    ("4:-1", "4:-1"),
    ("4:1", "4:-1"),
    ("4:1", "4:-2"),
    ("(4,4):(-1,1)", "(2,4,2)"),
    ("(4,4):(-1,1)", "(2,4,2):(1,4,2)"),
]


def _ref_any(layout, i):
    # a single-mode A is a straight line, also at the negative indices a negative B reaches
    return ref(layout, i)


@pytest.mark.parametrize(
    "a_text, b_text", COMPOSITION_CASES, ids=[f"{a} o {b}" for a, b in COMPOSITION_CASES]
)
def test_cute_composition_cases_are_exact(a_text, b_text):
    a, b = P(a_text), P(b_text)
    r = composition(a, b)
    assert r.size() == b.size()
    assert refines(r.shape, b.shape)
    for i in range(b.size()):
        assert ref(r, i) == _ref_any(a, ref(b, i))


# [CPL]: (layout, cotarget) pairs; checked: ordered, disjoint, bounded, and that the
# completed layout leaves nothing over.
COMPLEMENT_CASES = [
    ("1:0", None),
    ("1:0", 2),
    ("1:0", 5),
    ("1:0", (2, 2)),
    ("1:1", None),
    ("1:1", 2),
    ("1:1", 5),
    ("1:1", (2, 2)),
    ("1:2", 1),
    ("1:2", 2),
    ("1:2", 8),
    ("1:2", 5),
    ("1:2", (2, 2)),
    ("4:0", 1),
    ("4:0", 2),
    ("4:0", 8),
    ("4:1", 1),
    ("4:1", 2),
    ("4:1", 8),
    ("4:2", 1),
    ("4:2", None),
    ("4:2", 16),
    ("4:2", 19),
    ("4:2", (2, 2)),
    ("4:4", 1),
    ("4:4", None),
    ("4:4", 17),
    ("4:4", (2, 2)),
    ("(2,4)", None),
    ("(2,3)", None),
    ("(2,4):(1,4)", None),
    ("(2,4):(1,6)", None),
    ("(2,4,8):(8,1,64)", None),
    ("(2,4,8):(8,1,0)", None),
    ("(2,4,8):(8,1,0)", 460),
    ("((2,2),(2,2)):((1,4),(8,32))", None),
    ("((2,2),(2,2)):((1,32),(8,4))", None),
    ("(4,2):(1,16)", None),
    ("12", 1),
    ("12", None),
    ("12", 53),
    ("12", 128),
    ("12:2", 1),
    ("12:2", None),
    ("12:2", 53),
    ("12:2", 128),
    ("(3,6):(1,3)", None),
    ("(3,6):(1,9)", None),
    ("64", (32, 4, 4)),
]


@pytest.mark.parametrize(
    "text, cotarget", COMPLEMENT_CASES, ids=[f"{t} wrt {c}" for t, c in COMPLEMENT_CASES]
)
def test_cute_complement_cases(text, cotarget):
    a = P(text)
    r = complement(a, cotarget)
    m = cosize(a) if cotarget is None else shape_size(cotarget)
    offs = ref_offsets(r)
    image = set(ref_offsets(a))
    assert all(x < y for x, y in itertools.pairwise(offs))  # ordered
    assert not image & set(offs[1:])  # disjoint
    completed = make_layout(a, r)
    assert max(ref_offsets(completed)) + 1 >= m  # cosize(completed) >= size(cotarget)
    rounded = -(-m // cosize(a)) * cosize(a)
    assert cosize(r) <= rounded
    assert complement(completed).size() == 1  # nothing left over


# Inputs of [COMP], [CPL], [LPROD], [RINV], [LINV] that CuTe accepts and Argus refuses on
# purpose: non-divisible strides are not complementable, negative strides of B may not reach
# a multi-mode A, and left inverses of negative strides would need negative indices.
REFUSED_ON_PURPOSE = [
    ("CPL complement((4,6):(1,6))", lambda: complement(P("(4,6):(1,6)"))),
    ("CPL complement((4,2):(1,10))", lambda: complement(P("(4,2):(1,10)"))),
    ("CPL complement((3,6):(1,10))", lambda: complement(P("(3,6):(1,10)"))),
    ("LPROD logical_product(((4,6)):((1,6)), 3:1)", lambda: logical_product(P("((4,6)):((1,6))"), P("3:1"))),
    (
        "COMP SM80 fp64 NT: (1,(2,4)):(0,(-1,512)) o 2:-1",
        lambda: composition(P("(1,(2,4)):(0,(-1,512))"), P("2:-1")),
    ),
    (
        "COMP SM80 fp64 NT: (1,(2,4)):(0,(-1,512)) o 4:-1",
        lambda: composition(P("(1,(2,4)):(0,(-1,512))"), P("4:-1")),
    ),
    ("LINV left_inverse(4:-1)", lambda: left_inverse(P("4:-1"))),
]


@pytest.mark.parametrize(
    "compute", [c for _, c in REFUSED_ON_PURPOSE], ids=[d for d, _ in REFUSED_ON_PURPOSE]
)
def test_refused_on_purpose(compute):
    with pytest.raises(LayoutError):
        compute()


# [RINV]: right inverses, checked L(R(i)) == i.
RIGHT_INVERSE_CASES = [
    "1:0",
    "1:1",
    "4:0",
    "((1,1)):((0,0))",
    "((3,7)):((0,0))",
    "1:1",
    "4:1",
    "4:2",
    "(2,4):(0,2)",
    "(8,4)",
    "(8,4):(4,1)",
    "(2,4,6)",
    "(2,4,6):(4,1,8)",
    "(2,4,4,6):(4,1,0,8)",
    "(4,2):(1,16)",
    "(4,2):(1,5)",
    "(4,2):(1,4)",
    "4:-1",
]


@pytest.mark.parametrize("text", RIGHT_INVERSE_CASES)
def test_cute_right_inverse_cases(text):
    layout = P(text)
    r = right_inverse(layout)
    for i in range(r.size()):
        assert layout(r(i)) == i


def test_right_inverse_of_a_negative_stride_is_trivial():
    # CuTe's beta support for negative strides returns a layout reaching negative indices;
    # Argus only inverts non-negative strides, so 4:-1 (which reaches offset 0 only) gives 1:0.
    assert right_inverse(P("4:-1")) == P("1:0")


# [LINV]: left inverses, checked Linv(L(i)) == i.
LEFT_INVERSE_CASES = [
    "1:0",
    "((1,1)):((0,0))",
    "1:1",
    "4:1",
    "4:2",
    "(8,4)",
    "(2,4,6)",
    "(2,4,6):(4,1,8)",
    "(4,2):(1,16)",
]


@pytest.mark.parametrize("text", LEFT_INVERSE_CASES)
def test_cute_left_inverse_cases(text):
    layout = P(text)
    linv = left_inverse(layout)
    for i in range(layout.size()):
        assert linv(layout(i)) == i


def test_cute_left_inverse_of_filtered_row_major():
    # [LINV] inverts filter((8,4):(4,1))
    from argus.layout import filter as filter_

    layout = filter_(P("(8,4):(4,1)"))
    linv = left_inverse(layout)
    assert [linv(layout(i)) for i in range(layout.size())] == list(range(layout.size()))


# [LPROD]: products whose mode 0 is A and whose mode 1 is compatible with B.
LOGICAL_PRODUCT_CASES = [
    ("1:0", "1:0"),
    ("1:1", "1:0"),
    ("1:0", "1:1"),
    ("1:1", "1:1"),
    ("3:1", "4:0"),
    ("3:0", "4:1"),
    ("3:0", "4:0"),
    ("3:2", "4:1"),
    ("3", "(2,4)"),
    ("(2,4)", "3"),
    ("(8,(2,2))", "4:2"),
    ("(2,2)", "(3,3):(3,1)"),
    ("3:32", "32"),
    ("3:2", "4"),
    ("3:32", "128"),
    ("3:32", "(8,8)"),
    ("3:32", "(8,8):(8,1)"),
    ("((4,2)):((1,16))", "(4,4)"),
    ("((4,2)):((1,16))", "(4,2):(2,1)"),
    ("((2,2),(2,2)):((1,4),(8,32))", "(2,2):(1,2)"),
    ("((2,2),(2,2)):((1,4),(8,32))", "(2,2):(2,1)"),
]


@pytest.mark.parametrize(
    "a_text, b_text", LOGICAL_PRODUCT_CASES, ids=[f"{a} x {b}" for a, b in LOGICAL_PRODUCT_CASES]
)
def test_cute_logical_product_cases(a_text, b_text):
    a, b = P(a_text), P(b_text)
    p = logical_product(a, b)
    assert p.rank == 2
    assert p[0] == a
    assert refines(p[1].shape, b.shape)
    c = complement(a, a.size() * cosize(b))
    assert [p[1](j) for j in range(b.size())] == [c(b(j)) for j in range(b.size())]


# [LDIV]: divides of rank 2 whose mode 0 is compatible with the tiler.
LOGICAL_DIVIDE_CASES = [
    ("1:0", "1:0"),
    ("1:0", "1:1"),
    ("1:1", "1:0"),
    ("1:1", "1:1"),
    ("6:1", "2:1"),
    ("6:1", "2:3"),
    ("6:1", "(2,3):(3,1)"),
    ("6:2", "2:1"),
    ("6:2", "2:3"),
    ("6:2", "(2,3):(3,1)"),
    ("(6,6):(1,12)", "(6,3):(3,1)"),
    ("(6,6):(12,1)", "(6,3):(3,1)"),
    ("32", "2:8"),
    ("(4,1):(1,1)", "2:1"),
    ("(4,1):(1,1)", "2:2"),
    ("(8,8):(1,8)", "32:2"),
    ("(8,8):(8,1)", "32:2"),
    ("2", "32"),
    ("48", "32"),
    ("96", "32:2"),
    ("32", "48"),
]


@pytest.mark.parametrize(
    "a_text, b_text", LOGICAL_DIVIDE_CASES, ids=[f"{a} / {b}" for a, b in LOGICAL_DIVIDE_CASES]
)
def test_cute_logical_divide_cases(a_text, b_text):
    a, b = P(a_text), P(b_text)
    d = logical_divide(a, b)
    assert d.rank == 2
    assert refines(d[0].shape, b.shape)
    whole = make_layout(b, complement(b, a.size()))
    assert [d(i) for i in range(d.size())] == [ref(a, whole(i)) for i in range(whole.size())]


# ---------------------------------------------------------------------------------------
# Known wrong answers elsewhere, which Argus must not reproduce (field notes)
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "a_text, b_text",
    [("(3,4):(4,1)", "8:2"), ("(6,2):(1,7)", "(3,2):(2,3)")],
    ids=["too-weak-stride-test", "carry-across-modes-cutlass-2955"],
)
def test_cute_cpp_wrong_compositions_are_refused(a_text, b_text):
    # CuTe C++ returns (2,4):(8,1) and (3,2):(2,3), wrong at index 2 and 5 respectively.
    with pytest.raises(LayoutError):
        composition(P(a_text), P(b_text))


def _exact_or_refused(a, b):
    try:
        r = composition(a, b)
    except LayoutError:
        return "LayoutError"
    assert all(ref(r, i) == ref(a, ref(b, i)) for i in range(b.size()))
    return str(r)


PYCUTE_WRONG = [
    # pycute: 4:1 (size 4 instead of 6)
    (
        "composition-has-no-shape-divisibility-check",
        lambda: _exact_or_refused(P("(4,3):(1,10)"), P("6:1")),
        "LayoutError",
    ),
    # pycute: 12:1 (coalesces A first and loses the extension by the size-1 mode)
    (
        "composition-coalesces-A-first",
        lambda: _exact_or_refused(P("(4,1):(1,42)"), P("12:1")),
        "(4,3):(1,42)",
    ),
    # pycute: 1:0 (stops at the first stride-0 mode)
    ("right-inverse-stops-at-stride-0", lambda: right_inverse(P("(32,128):(0,1)")), "128:32"),
    # pycute: 4:1, so L(Linv(L(4))) = L(0) != L(4)
    ("left-inverse-loses-the-gap", lambda: left_inverse(P("(4,2):(1,5)")), "(5,2):(1,4)"),
    # pycute: a size-0 layout
    ("complement-of-overlapping-modes", lambda: _raises(lambda: complement(P("(2,2):(2,3)"))), "LayoutError"),
    # pycute: -2 (A(size-1)+1)
    ("cosize-of-negative-stride", lambda: cosize(P("4:-1")), "4"),
    # pycute: (1,0) (wraps the last mode)
    ("idx2crd-wraps-past-the-size", lambda: idx2crd(7, (2, 3)), "(1,3)"),
    # pycute: logical_divide((2,2):(4,1), 4:1) = ((2,2),1):((4,1),0)
    (
        "logical-product-with-int-tiler-divides",
        lambda: logical_product(P("(2,2):(4,1)"), 4),
        "((2,2),(2,2)):((4,1),(2,8))",
    ),
]


def _raises(f):
    try:
        f()
    except LayoutError:
        return "LayoutError"
    return "no error"


@pytest.mark.parametrize(
    "compute, expected", [(c, e) for _, c, e in PYCUTE_WRONG], ids=[r for r, _, _ in PYCUTE_WRONG]
)
def test_differs_from_pycute(compute, expected):
    assert _show(compute()) == expected


def test_left_inverse_from_the_field_notes_keeps_the_image():
    layout = P("(4,2):(1,5)")
    linv = left_inverse(layout)
    assert all(layout(linv(layout(i))) == layout(i) for i in range(layout.size()))
    assert [linv(layout(i)) for i in range(layout.size())] == list(range(layout.size()))


def test_parse_int_tuple_of_known_shapes():
    # sanity of the notation used in the tables above
    assert parse_int_tuple("(3,(2,3))") == (3, (2, 3))
    assert leaves(parse_int_tuple("((2,2),(2,2))")) == [2, 2, 2, 2]
