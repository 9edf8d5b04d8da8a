"""The set algebra of reduction tags (`argus.verify.reductions`): every set has one form where
its bounds are numbers, a sum combines only disjoint sets (a column summed twice is no sum of the
row), a maximum any, lanes' residues of one base and stop make the whole run, and a walk's
columns are the residue of its start."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from argus.verify import reductions as R
from argus.verify.tags import TagTable

SUM, MAX = (R.SUM,), (R.MAX,)
N = (0, ((7, 1),))  # a symbolic size: `cols`


@pytest.mark.parametrize("values", [[3], [0, 1, 2, 3], [0, 32, 64], [5, 1, 3], [0, 1, 8, 9, 16, 17]])
def test_a_concrete_set_has_one_form_whatever_the_order_of_its_columns(values):
    forms = {R.of_points(list(p)) for p in itertools.permutations(values)}
    assert len(forms) == 1
    form = forms.pop()
    assert sorted(R.points(form)) == sorted(values)


def test_columns_that_are_no_run_or_progression_are_listed():
    form = R.of_points([0, 1, 5, 6, 7])
    assert form[0] == R.LISTED and R.points(form) == [0, 1, 5, 6, 7]


def test_a_sum_takes_no_column_twice_and_a_maximum_does():
    s = R.of_points([0, 1])
    assert R.add_point(SUM, s, 1) is None
    assert R.add_point(MAX, s, 1) == s
    assert R.union(SUM, s, R.of_points([1, 2])) is None
    assert R.union(MAX, s, R.of_points([1, 2])) == (0, 0, 3)


def test_a_walk_of_each_lane_covers_its_residue_and_the_warp_the_whole_row():
    lanes = [R.walk_done(lane, 32, N) for lane in range(32)]
    assert lanes[5] == (R.RESIDUES, 0, N, 32, 1 << 5)
    for m in (16, 8, 4, 2, 1):  # a butterfly
        lanes = [R.union(SUM, lanes[lane], lanes[lane ^ m]) for lane in range(32)]
        assert all(s is not None for s in lanes)
    assert set(lanes) == {(0, 0, N)}


@pytest.mark.parametrize("masks", [(16, 8, 4, 2), (16, 8, 4, 2, 1, 1)])
def test_a_butterfly_short_of_a_round_or_with_one_twice_is_no_sum_of_the_row(masks):
    lanes = [R.walk_done(lane, 32, N) for lane in range(32)]
    for m in masks:
        lanes = [None if lanes[lane] is None or lanes[lane ^ m] is None else
                 R.union(SUM, lanes[lane], lanes[lane ^ m]) for lane in range(32)]
    assert (0, 0, N) not in lanes


def test_walks_with_another_stride_or_base_do_not_combine():
    assert R.union(SUM, R.walk_done(0, 16, N), R.walk_done(16, 16, N)) is None  # lanes 0 and 16 overlap
    assert R.union(SUM, R.walk_done(1, 32, N), R.walk_done(32, 32, N)) is None  # a walk started a lane late
    stop = (-1, ((7, 1),))
    assert R.union(SUM, R.walk_done(0, 32, N), R.walk_done(1, 32, stop)) is None


def test_the_concrete_columns_of_a_walk_are_its_residue():
    for lane, cols in itertools.product(range(4), (0, 1, 3, 9, 10)):
        assert R.points(R.walk_done(lane, 4, cols) or (R.LISTED, 0)) == list(range(lane, cols, 4))


def test_a_claim_of_one_column_is_its_point_in_the_table():
    table = TagTable()
    claimed = table.element_id(R.softmax((2,), (9, 0), R.LOG2E, (0, 2, 3)))
    computed = table.element_id(R.softmax((2,), (9, 0), R.LOG2E, R.of_points([2])))
    assert claimed == computed


def _whole(table: TagTable, tag: tuple) -> np.ndarray:
    e = table.element_id(tag)
    return (2 + e * 64 + np.arange(4))[None]


def test_a_term_over_the_sum_of_its_reference_is_a_softmax_and_over_another_s_is_not():
    table = TagTable()
    table.asserted = True
    m = R.reduced(MAX, (9, 0), (0, 0, 8))
    other = R.reduced(MAX, (9, 0), (0, 0, 7))
    t = _whole(table, R.term((2,), (9, 0), m, R.LOG2E))
    good = _whole(table, R.reduced((R.EXP, R.LOG2E, len(m), *m), (9, 0), (0, 0, 8)))
    bad = _whole(table, R.reduced((R.EXP, R.LOG2E, len(other), *other), (9, 0), (0, 0, 8)))
    scaled = _whole(table, R.reduced((R.EXP, R.UNSCALED, len(m), *m), (9, 0), (0, 0, 8)))
    out = R.scaled(table, t, good, "f32", False, (None, None))
    assert table.tags[(out[0, 0] - 2) // 64] == R.softmax((2,), (9, 0), R.LOG2E, (0, 0, 8))
    for s in (bad, scaled):
        found = R.scaled(table, t, s, "f32", False, (None, None))
        assert found is None or (found < 0).all()


@pytest.mark.parametrize("values", [list(range(5)), list(range(3, 200, 32)), [7, 8]])
def test_a_set_grown_one_column_at_a_time_has_the_form_of_its_columns(values):
    s = None
    for v in values:
        s = R.add_point(SUM, s, v)
    assert s == R.of_points(values)
