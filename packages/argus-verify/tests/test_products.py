"""The product algebra (`argus.verify.products`): spans of pair tags, how products add up in an
accumulator, and how a product a tag function writes compares byte for byte with one a product
leaves."""

from __future__ import annotations

import numpy as np
import pytest
from argus.verify.products import (
    PRODUCT,
    PRODUCT_A,
    PRODUCT_B,
    ROW_PART,
    ROWS,
    _piece,
    along,
    canonical,
    joined,
    layout,
    parse_product,
    product_text,
    shifted,
    span_of,
)
from argus.verify.tags import BOTTOM, BYTES, TOP, TagTable, resize


# ---- spans ---------------------------------------------------------------------------------

@pytest.mark.parametrize("pairs, span", [
    ([(0,), (1,), (2,), (3,)], (0, 0, 4)),
    ([(3,), (1,), (0,), (2,)], (0, 0, 4)),  # any order
    ([(5, 7), (5, 8)], (1, 5, 7, 9)),  # the component that runs
    ([(9,)], (-1, 9, 0)),  # one pair: a point
])
def test_pairs_that_run_over_one_component_make_a_span(pairs, span):
    assert span_of(pairs) == span


@pytest.mark.parametrize("pairs", [
    [(0,), (2,), (3,)],  # a gap, then a run longer than the first
    [(0,), (1,), (3,), (6,)],  # runs not evenly apart
    [(0,), (0,)],  # a pair twice
    [(0, 0), (1, 1)],  # two components run
    [(0,), (1, 2)],  # different lengths
])
def test_pairs_that_are_not_one_run_make_no_span(pairs):
    assert span_of(pairs) is None


def test_a_span_of_one_value_is_that_point():
    assert canonical((0, 4, 5)) == (-1, 4, 0)
    assert canonical((0, 4, 6)) == (0, 4, 6)


@pytest.mark.parametrize("x, y, both", [
    ((0, 0, 16), (0, 16, 32), (0, 0, 32)),  # y right after x
    ((0, 16, 32), (0, 0, 16), (0, 0, 32)),  # x right after y
    ((-1, 3, 0), (-1, 4, 0), (0, 3, 5)),  # two points next to each other
    ((0, 3, 5), (-1, 5, 0), (0, 3, 6)),  # a point after a span
])
def test_spans_that_meet_join(x, y, both):
    assert joined(x, y) == both


@pytest.mark.parametrize("x, y", [
    ((0, 0, 16), (0, 32, 64)),  # a gap, then a longer run (no progression of runs)
    ((0, 0, 16), (0, 8, 24)),  # overlapping: a k summed twice
    ((1, 7, 0, 16), (1, 8, 16, 32)),  # another fixed component
    ((-1, 3, 0, 0), (-1, 5, 1, 0)),  # two components run
])
def test_spans_that_do_not_meet_do_not_join(x, y):
    assert joined(x, y) is None


def test_a_decider_joins_ends_equal_in_every_launch():
    """Ends equal only under what the caller knows (``min(n, k) + 8`` and ``k + 8`` where k ≤ n)
    join when its decider says so, and never otherwise."""
    end, start = (8, ((1, 1),)), (8, ((2, 1),))  # two forms of one value (symbols 1 and 2)
    x, y = (0, 0, end), (0, start, 32)
    assert joined(x, y) is None
    assert joined(x, y, lambda a, b: a == b or {a, b} == {end, start}) == (0, 0, 32)


# ---- progressions of runs ------------------------------------------------------------------

K0 = (0, ((7, 1),))  # a symbolic component (the loop index k0)


def _k(offset: int) -> object:
    return shifted(K0, offset)


def _points(span: tuple) -> set[int]:
    """The values a concrete span covers along the component it runs along."""
    pos = along(span)
    assert pos is not None
    if pos == -1:
        return {span[1]}
    piece = _piece(span, pos)
    return {piece.lo + v for v in piece.points()}


def _span(values, other: int = 5) -> tuple | None:
    return span_of([(v, other) for v in values])


@pytest.mark.parametrize("values, span", [
    ([k for k in range(32) if k // 4 % 2 == 0], (-2, 0, 5, 0, 8, 4, 4)),  # every other group of four
    ([k for k in range(32) if k // 4 % 2 == 1], (-2, 4, 5, 4, 8, 4, 4)),
    ([0, 2], (-2, 0, 5, 0, 2, 1, 2)),  # every other value
    ([0, 1, 2, 3, 4, 5, 12, 13], (-2, 0, 5, 4, 8, 2, 2)),  # a run, then runs of two: [0, 4) then 4, 5, 12, 13
    ([0, 1, 2, 3, 8, 9, 10, 11], (-2, 0, 5, 0, 8, 4, 2)),
])
def test_every_other_group_of_values_is_a_progression_of_runs(values, span):
    assert _span(values) == span
    assert _span(values[::-1]) == span  # any order
    assert _points(span) == set(values)


def test_a_progression_along_a_symbolic_component_keeps_its_first_value():
    assert span_of([(_k(k), 5) for k in range(32) if k // 4 % 2 == 0]) == (-2, K0, 5, K0, 8, 4, 4)


def test_each_set_has_one_span_and_the_span_is_that_set():
    """Canonical form: every subset of 0..11 that is a span maps to a span covering exactly it,
    whatever the order of its pairs, so two sets never share a span."""
    import itertools
    seen: dict[tuple, frozenset] = {}
    for n in range(1, 13):
        for values in itertools.combinations(range(12), n):
            span = _span(values)
            if span is None:
                continue
            assert _points(span) == set(values), (values, span)
            assert seen.setdefault(span, frozenset(values)) == frozenset(values)
            assert _span(values[::-1]) == span


def _spans_up_to(limit: int) -> list[tuple[frozenset, tuple]]:
    import itertools
    out = []
    for n in range(1, limit + 1):
        for values in itertools.combinations(range(limit), n):
            span = _span(values)
            if span is not None:
                out.append((frozenset(values), span))
    return out


@pytest.mark.parametrize("rules_only", [False, True])
def test_a_join_is_the_span_of_the_union_of_disjoint_sets_and_nothing_else(rules_only, monkeypatch):
    """For every two spans of values in 0..7: their join is defined only when they are disjoint,
    and is then the span of their union; it does not depend on the order. Without listing
    values (as spans of symbolic extent are joined), the rules alone never give another span."""
    from argus.verify import products
    if rules_only:
        monkeypatch.setattr(products, "_MAX_POINTS", 0)
    spans = _spans_up_to(8)
    for (vx, x), (vy, y) in ((x, y) for x in spans for y in spans):
        both = joined(x, y)
        assert both == joined(y, x), (x, y)
        if vx & vy:
            assert both is None, (x, y)  # a k summed twice
            continue
        union = _span(sorted(vx | vy))
        if both is not None or not rules_only:
            assert both == union, (x, y, both, union)


@pytest.mark.parametrize("x, y, both", [
    ((-2, 0, 0, 8, 4, 4), (-2, 4, 4, 8, 4, 4), (0, 0, 32)),  # the gaps filled: one run
    ((-2, 0, 0, 8, 2, 4), (-2, 2, 2, 8, 2, 4), (-2, 0, 0, 8, 4, 4)),  # half filled
    ((-2, 0, 0, 8, 4, 2), (-2, 16, 16, 8, 4, 2), (-2, 0, 0, 8, 4, 4)),  # more runs
    ((-2, 0, 0, 8, 4, 2), (0, 16, 20), (-2, 0, 0, 8, 4, 3)),  # one more run
    ((0, 0, 16), (-2, 16, 16, 8, 4, 4), (-2, 0, 16, 8, 4, 4)),  # a run, then a progression
])
def test_progressions_that_meet_join(x, y, both):
    assert joined(x, y) == both
    assert joined(y, x) == both


def test_progressions_join_after_a_run_of_symbolic_extent():
    """The CDNA attention's accumulator: ``[0, k0)`` (what the tiles before summed), then keys
    k0 + 8·j + i (i < 4), then the gaps: ``[0, k0 + 32)``. Only the run right after k0 joins."""
    held = (0, 0, 5, K0)
    first = span_of([(_k(k), 5) for k in range(32) if k // 4 % 2 == 0])
    second = span_of([(_k(k), 5) for k in range(32) if k // 4 % 2 == 1])
    part = joined(held, first)
    assert part == (-2, 0, 5, K0, 8, 4, 4)
    assert joined(part, second) == joined(second, part) == (0, 0, 5, _k(32))
    assert joined(held, second) is None  # k0 .. k0 + 4 missing
    assert joined(part, first) is None  # summed twice
    assert joined(part, span_of([(_k(k), 5) for k in range(32, 64) if k // 4 % 2 == 1])) is None  # a gap
    assert joined(part, span_of([(_k(k), 6) for k in range(32) if k // 4 % 2 == 1])) is None  # another component


@pytest.mark.parametrize("x, y", [
    ((-2, 0, 0, 8, 4, 4), (-2, 0, 0, 8, 4, 4)),  # the same keys twice
    ((-2, 0, 0, 8, 4, 4), (-2, 2, 2, 8, 4, 4)),  # overlapping runs
    ((-2, 0, 0, 8, 4, 4), (-2, 4, 4, 24, 4, 2)),  # another stride: 0..12, 16..20, 24..32
    ((-2, 0, 0, 8, 4, 4), (-2, 12, 12, 8, 4, 3)),  # the first gap left: 0..4, 8..32
    ((-2, 0, 0, 8, 4, 4), (-2, 6, 6, 8, 2, 4)),  # runs not right after x's: gaps of two
    ((-2, 0, 0, 8, 4, 4), (0, 0, 32)),  # a run over them
    ((-2, 0, 16, 8, 4, 4), (-2, 4, 4, 8, 4, 4)),  # inside the run before the progression
])
def test_progressions_that_overlap_or_leave_gaps_do_not_join(x, y):
    assert joined(x, y) is None
    assert joined(y, x) is None


def test_a_product_reads_a_progression_as_runs():
    assert product_text((PRODUCT_A, 1), (PRODUCT_B, 1, 2, -2, 0, 5, 0, 8, 4, 4), str) == \
        "product of A rows ('1',) and B rows ('2',), k over (0..4 every 8, 4 runs, 5)"
    assert product_text((PRODUCT_A, 1), (PRODUCT_B, 1, 2, -2, 0, 5, 16, 8, 4, 2), str) == \
        "product of A rows ('1',) and B rows ('2',), k over (0..16 then 16..20 every 8, 2 runs, 5)"


def test_a_claim_s_range_is_the_run_products_leave():
    """``product(a[m], b[n], (range(0, K),))`` reads as the canonical run, as a product leaves it."""
    tag = (PRODUCT, 1, 3, 1, 4, 0, 0, 32)
    assert parse_product(tag)[1] == (PRODUCT_B, 1, 4, *joined((-2, 0, 0, 8, 4, 4), (-2, 4, 4, 8, 4, 4)))


# ---- accumulators ---------------------------------------------------------------------------

def _claimed() -> TagTable:
    """The table of a kernel that asserts stored tags (``assert_tags``): only there are products
    followed (elsewhere an accumulator holds computed data)."""
    table = TagTable()
    table.asserted = True
    return table


def _ids(table: TagTable, tag: tuple, width: int) -> list[int]:
    e = table.element_id(tag)
    return [2 + e * BYTES + j for j in range(width)]


def _operands(table: TagTable, k0: int, a_row=lambda m: m, b_row=lambda n: 10 + n):
    """A 2×2×2 product's operands: A[m, k] and B[n, k] with pair (k0 + k) and their rows."""
    a = np.array([[[_ids(table, (ROWS, 1, k0 + k, a_row(m)), 2) for k in range(2)] for m in range(2)]])
    b = np.array([[[_ids(table, (ROWS, 1, k0 + k, b_row(n)), 2) for k in range(2)] for n in range(2)]])
    return a, b


C_INDEX = np.array([[0, 1, 2, 3]]).T  # four threads, one value each: m + 2·n


def _expected(table: TagTable, m: int, n: int, lo: int, hi: int, width: int = 4) -> np.ndarray:
    return table.bytes_of(np.array([table.element_id((PRODUCT, 1, m, 1, 10 + n, 0, lo, hi))]), width)[0]


def _zeroed(table: TagTable) -> np.ndarray:
    """Four threads' accumulators (one f32 value each) cleared by a stored zero: nothing summed."""
    return np.broadcast_to(table.products.zero_bytes(4), (1, 4, 1, 4)).copy()


def test_products_add_up_to_the_product_a_tag_function_writes():
    table = _claimed()
    c = _zeroed(table)
    for k0 in (0, 2, 4):
        c = table.products.accumulate(*_operands(table, k0), c, C_INDEX)
    for t in range(4):
        m, n = t % 2, t // 2
        assert np.array_equal(c[0, t, 0], _expected(table, m, n, 0, 6)), table.element_tag(c[0, t, 0])


def test_a_product_of_other_rows_or_a_slice_again_is_no_product():
    table = _claimed()
    start = table.products.accumulate(*_operands(table, 0), _zeroed(table), C_INDEX)
    again = table.products.accumulate(*_operands(table, 0), start, C_INDEX)  # k 0..2 summed twice
    assert (again == TOP).all()
    other_rows = table.products.accumulate(*_operands(table, 2, a_row=lambda m: 5 + m), start, C_INDEX)
    assert (other_rows == TOP).all()
    every_other = table.products.accumulate(*_operands(table, 4), start, C_INDEX)  # k 2..4 never summed
    assert table.element_tag(every_other[0, 0, 0]).endswith("k over (0..2 every 4, 2 runs)")
    gap = table.products.accumulate(*_operands(table, 10), every_other, C_INDEX)  # 0..2, 4..6, 10..12
    assert (gap == TOP).all()


def test_an_accumulator_holding_computed_data_or_a_narrow_element_holds_no_product():
    table = _claimed()
    computed = np.full((1, 4, 1, 4), TOP, np.int64)
    assert (table.products.accumulate(*_operands(table, 0), computed, C_INDEX) == TOP).all()
    narrow = np.zeros((1, 4, 1, 1), np.int64)
    assert (table.products.accumulate(*_operands(table, 0), narrow, C_INDEX) == TOP).all()


def test_an_accumulator_holding_a_constant_or_untagged_data_holds_no_product():
    """Only a cleared accumulator (`ZERO`) starts a product: ⊥ is any constant or untagged data
    (``acc = 1.0``, ``acc = bias[m]``), and the product added to it is not the product."""
    table = _claimed()
    assert (table.products.accumulate(*_operands(table, 0), np.zeros((1, 4, 1, 4), np.int64), C_INDEX) == TOP).all()
    mixed = _zeroed(table)
    mixed[0, 1, 0] = BOTTOM
    c = table.products.accumulate(*_operands(table, 0), mixed, C_INDEX)
    assert (c[0, 1, 0] == TOP).all() and np.array_equal(c[0, 0, 0], _expected(table, 0, 0, 0, 2))


def test_an_operand_read_in_part_is_no_product():
    """The first two bytes of an f32 element laid out at four bytes (a bf16 view of its low
    half) are no element: no product; the same element laid out at two bytes is one."""
    table = _claimed()
    a, b = _operands(table, 0)
    table.bytes_of(np.array([(i - 2) // BYTES for i in a[..., 0].reshape(-1).tolist()]), 2)
    assert not (table.products.accumulate(a, b, _zeroed(table), C_INDEX) == TOP).any()
    table.bytes_of(np.array([(a[0, 0, 0, 0] - 2) // BYTES]), 4)  # A[0, 0] is an f32 as well
    c = table.products.accumulate(a, b, _zeroed(table), C_INDEX)
    assert (c[0, 0, 0] == TOP).all() and (c[0, 1, 0] != TOP).all()  # (row 0 of A reads it, row 1 does not)


def test_no_run_of_a_wider_product_s_bytes_is_a_narrower_product():
    """An f32 accumulator's low or high two bytes (``lo``, a bf16 view of it) are not the product
    at two bytes; the accumulator rounded to bf16 (`resize`) is."""
    table = _claimed()
    c = table.products.accumulate(*_operands(table, 0), _zeroed(table), C_INDEX)[0, 0, 0]
    narrow = _expected(table, 0, 0, 0, 2, width=2)
    assert not np.array_equal(c[:2], narrow) and not np.array_equal(c[2:], narrow)
    assert np.array_equal(resize(c[None], 2, table)[0], narrow)
    assert (table.products.accumulate(*_operands(table, 2), c[None, None, None, :2].repeat(4, 1), C_INDEX) == TOP).all()


def test_untagged_operands_make_no_product():
    table = _claimed()
    a = np.zeros((1, 2, 2, 2), np.int64)
    _, b = _operands(table, 0)
    assert (table.products.accumulate(a, b, np.zeros((1, 4, 1, 4), np.int64), C_INDEX) == TOP).all()


def test_products_pair_their_operands_by_the_pair_part_alone():
    table = _claimed()
    a, b = _operands(table, 0)
    pa, pb = table.products.pair_bytes(a), table.products.pair_bytes(b)
    assert np.array_equal(pa[0, 0], pb[0, 1])  # A row 0 and B row 1 pair at every k
    assert not np.array_equal(a[0, 0], b[0, 1])  # (their whole tags differ by their rows)


def _laid_operands(table: TagTable, k0: int, width: int = 2):
    """`_operands` as memory holds them: through the table (`TagTable.bytes_of`), which lays an
    operand with rows out as its pair and its row part."""
    def matrix(row):
        tags = [[(ROWS, 1, k0 + k, row(i)) for k in range(2)] for i in range(2)]
        elements = np.array([[table.element_id(t) for t in line] for line in tags])
        return table.bytes_of(elements.reshape(-1), width).reshape(1, 2, 2, width)
    return matrix(lambda m: m), matrix(lambda n: 10 + n)


def test_an_operand_with_rows_is_laid_out_as_its_pair_and_its_row_part():
    """Even bytes carry the pair tag itself, odd bytes the row part: a tile of A holds rows + k
    elements, not rows × k; one byte wide, the element stays whole."""
    table = _claimed()
    ids = table.bytes_of(np.array([table.element_id((ROWS, 1, 7, 3))]), 2)[0]
    assert np.array_equal(ids, layout(table.element_id((7,)), table.element_id((ROW_PART, 3)), 2))
    assert np.array_equal(table.products.pair_bytes(ids[None])[0], _ids(table, (7,), 2))  # (as pairing-only tags)
    assert table.bytes_of(np.array([table.element_id((ROWS, 1, 7, 3))]), 1)[0, 0] == _ids(table, (ROWS, 1, 7, 3), 1)[0]
    a, _ = _laid_operands(table, 0)
    assert len(np.unique((a[a > TOP] - 2) // BYTES)) == 2 + 2  # (two k, two rows)


def test_laid_out_operands_add_up_as_whole_ones_do():
    table = _claimed()
    c = _zeroed(table)
    for k0 in (0, 2, 4):
        c = table.products.accumulate(*_laid_operands(table, k0), c, C_INDEX)
    for t in range(4):
        assert np.array_equal(c[0, t, 0], _expected(table, t % 2, t // 2, 0, 6)), table.element_tag(c[0, t, 0])
    a, b = _laid_operands(table, 0)
    assert table.element_tag(a[0, 1, 0]) == "pair (0,) rows (1,)"
    assert (table.products.accumulate(b, b, _zeroed(table), C_INDEX) != TOP).all()  # (B·Bᵀ: B's rows twice)
    assert not np.array_equal(table.products.accumulate(b, b, _zeroed(table), C_INDEX),
                              table.products.accumulate(a, b, _zeroed(table), C_INDEX))


def test_a_row_part_apart_from_its_pair_pairs_with_nothing():
    """Bytes of laid-out operands read at another width (two bf16 operands as one u32, the odd
    bytes of one alone) are no operand: they pair with nothing and make no product."""
    table = _claimed()
    a, b = _laid_operands(table, 0)
    wide = a.reshape(1, 2, 1, 4)  # (A's two k of a row read as one four-byte element)
    assert (table.products.pair_bytes(a[..., 1:])[..., 0] == TOP).all()
    c = np.broadcast_to(table.products.zero_bytes(4), (1, 4, 1, 4)).copy()
    assert (table.products.accumulate(wide, b.reshape(1, 2, 1, 4), c, C_INDEX) == TOP).all()


def test_a_product_converted_to_a_narrower_float_is_the_same_product():
    table = _claimed()
    c = table.products.accumulate(*_operands(table, 0), _zeroed(table), C_INDEX)
    narrow = resize(c[0, :, 0], 2, table)
    for t in range(4):
        assert np.array_equal(narrow[t], _expected(table, t % 2, t // 2, 0, 2, width=2))
    mixed = np.stack([c[0, 0, 0], np.full(4, TOP), np.zeros(4, np.int64)])
    assert np.array_equal(resize(mixed, 2, table)[1:], [[TOP, TOP], [BOTTOM, BOTTOM]])


def test_a_scaled_product_is_that_product_and_a_scaled_nothing_is_still_nothing_summed():
    table = _claimed()
    c = table.products.accumulate(*_operands(table, 0), _zeroed(table), C_INDEX)[0, :, 0]
    computed = np.full(c.shape, TOP, np.int64)
    scale = np.full(c.shape, TOP, np.int64)  # a correction factor: computed data
    assert np.array_equal(table.products.scaled(c, scale, computed, commutes=True), c)
    assert np.array_equal(table.products.scaled(scale, c, computed, commutes=True), c)
    assert table.products.scaled(scale, c, computed, commutes=False) is None  # (a divisor's product is no scale)
    assert table.products.scaled(c, c, computed, commutes=True) is None  # a product of products is computed data
    for known_zero in (_zeroed(table)[0, :, 0], table.products.empty_bytes(4)[None].repeat(4, axis=0)):
        # a cleared register or a scaled zero times a product is zero, and a product over one no number
        assert table.products.scaled(c, known_zero, computed, commutes=True) is None
        assert table.products.scaled(known_zero, c, computed, commutes=True) is None
        assert table.products.scaled(c, known_zero, computed, commutes=False) is None
    zero = _zeroed(table)[0, :, 0]
    empty = table.products.scaled(zero, scale, computed, commutes=True)
    assert table.products.is_empty(empty).all()
    # and an accumulator holding it sums products as from nothing
    again = table.products.accumulate(*_operands(table, 0), empty.reshape(1, 4, 1, 4), C_INDEX)[0, :, 0]
    assert np.array_equal(again, c)
    constant = np.zeros(c.shape, np.int64)
    assert table.products.scaled(constant, constant, constant, commutes=True) is None  # constants stay constants


@pytest.mark.parametrize("width", [1, 2, 4])
def test_rows_of_integers_are_laid_out_as_their_elements_are(width):
    """`TagTable.rows_to_ids` (whole tensors' tags, interned part by part) gives what each row's
    element gives through `bytes_of`: operands with rows, products (a span of one value being
    that point), and any other tag."""
    rows = {
        "operands": np.array([[ROWS, 1, k, 7, m] for m in range(3) for k in range(4)]),
        "products": np.array([[PRODUCT, 1, m, 1, n, 0, 0, hi] for m in range(2) for n in range(2) for hi in (1, 5)]),
        "points": np.array([[PRODUCT, 1, m, 1, 3, -1, 4, 0] for m in range(3)]),
        "plain": np.array([[k, 1] for k in range(5)]),
    }
    for name, block in rows.items():
        whole, parts = TagTable(), TagTable()
        expected = whole.bytes_of(np.array([whole.element_id(tuple(int(v) for v in r)) for r in block]), width)
        got = parts.rows_to_ids(block, width)
        assert [whole.element_tag(r) for r in expected] == [parts.element_tag(r) for r in got], name
        assert (got == TOP).all() == (expected == TOP).all(), name
