"""`assert_written(t)`: the launch writes every element of tensor t. Verification tests it on a
whole launch of the interpreter, as small as the kernel's assumptions allow, and reports the
first element left as it was, with that launch as the witness."""

from __future__ import annotations

import ast
import time

import numpy as np
import pytest
from argus.dsl import (Tensor, assert_written, assume, atomic_add, block_idx, f32, grid_dim, kernel, make_shared,
                       thread_idx, u128)
from argus.dsl.errors import ArgusError
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")


@kernel(block=(32,), verify=False)
def scaled(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)  # enough blocks for every element
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n:
        out[i] = x[i] * 2.0


@kernel(block=(32,), verify=False)
def swapped(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    assert_written(out)
    i = thread_idx.x * 32 + block_idx.x  # block and thread swapped: only a few elements per block
    if i < n:
        out[i] = x[i] * 2.0


@kernel(block=(32,), verify=False)
def one_short(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n - 1:  # the last element is never written
        out[i] = x[i] * 2.0


def test_an_output_every_element_of_which_is_written_has_nothing_found():
    result = scaled.verify()
    assert result.verdict is Verdict.NOTHING_TO_PROVE, result.text()
    assert "every element of out was written" in result.text() and "tested, not proved" in result.text()


@pytest.mark.parametrize("k", [swapped, one_short])
def test_an_output_left_in_part_unwritten_is_violated_with_the_launch_as_witness(k):
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "unwritten-output" and witness["tensor"] == "out"
    n = witness["sizes"]["n"]
    assert 0 <= witness["element"][0] < n
    data = np.zeros(n, np.float32)
    grid = -(-n // 32)
    again = check_launch(k, (grid,), data, np.zeros(n, np.float32), n)
    assert again.verdict is Verdict.VIOLATED and again.witnesses[0]["element"] == witness["element"]


@kernel(block=(32,), verify=False)
def blocks_of_half_the_assumed_width(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 64 >= n)  # says a block covers 64 elements, but it has 32 threads
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n:
        out[i] = x[i]


@kernel(block=(32,), verify=False)
def first_elements_only(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n and i < 64:  # right for launches of up to 64 elements
        out[i] = x[i]


@kernel(block=(8, 8), verify=False)
def rows_bounded_by_the_columns(x: Tensor[f32, "m", "n"], out: Tensor[f32, "m", "n"], m: int, n: int):
    assume(grid_dim.x * 8 >= n)
    assume(grid_dim.y * 8 >= m)
    assert_written(out)
    i = block_idx.y * 8 + thread_idx.y
    j = block_idx.x * 8 + thread_idx.x
    if i < n and j < n:  # the row bound should be m: right only where m == n
        out[i, j] = x[i, j]


@pytest.mark.parametrize("k", [blocks_of_half_the_assumed_width, first_elements_only, rows_bounded_by_the_columns])
def test_outputs_written_only_in_launches_of_some_shapes_are_violated(k):
    """A grid the assumptions allow to be too small, a bound right only for small sizes, a bound
    on the wrong one of two sizes: the launches that test `assert_written` have sizes as large
    as the assumptions allow, the fewest blocks they allow, and sizes that differ, so each leaves
    elements unwritten in one of them (the wrong row bound also reads past x's rows where m < n:
    an access out of bounds, found statically)."""
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "left as they were" in result.text() or k is rows_bounded_by_the_columns, result.text()


def test_assert_written_takes_a_tensor():
    with pytest.raises(ArgusError, match=r"assert_written\(t\) takes one tensor"):
        @kernel(block=(32,), verify=False)
        def bad(x: Tensor[f32, "n"], n: int):
            assert_written(n)
            x[0] = 1.0

        bad.specialize()


# ---- outputs written whole in other ways: no false alarm ----------------------------------------

@kernel(block=(32,), verify=False)
def through_u128_view(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(n % 4 == 0)
    assume(grid_dim.x * 128 >= n)
    assert_written(out)
    ov = out.view((n // 4,), u128)
    xv = x.view((n // 4,), u128)
    i = block_idx.x * 32 + thread_idx.x
    if i < n // 4:
        ov[i] = xv[i]


@kernel(block=(32,), verify=False)
def by_atomics(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n:
        atomic_add(out[i], x[i])


@kernel(block=(1,), verify=False)
def by_one_thread(x: Tensor[f32, "m", "n"], out: Tensor[f32, "m", "n"], m: int, n: int):
    assume(grid_dim.x == 1)
    assert_written(out)
    for i in range(m):
        for j in range(n):
            out[i, j] = x[i, j]


@kernel(block=(4, 2, 2), verify=False)
def over_a_3d_grid(x: Tensor[f32, "a", "b", "c"], out: Tensor[f32, "a", "b", "c"], a: int, b: int, c: int):
    assume(grid_dim.x * 4 >= c)
    assume(grid_dim.y * 2 >= b)
    assume(grid_dim.z * 2 >= a)
    assert_written(out)
    assert_written(out)  # (stated twice: one claim)
    k = block_idx.x * 4 + thread_idx.x
    j = block_idx.y * 2 + thread_idx.y
    i = block_idx.z * 2 + thread_idx.z
    if i < a and j < b and k < c:
        out[i, j, k] = x[i, j, k]


@kernel(block=(32,), verify=False)
def persistent(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x == 16)  # more blocks than the small launch has
    assert_written(out)
    for b in range(block_idx.x * 32, n, 16 * 32):
        i = b + thread_idx.x
        if i < n:
            out[i] = x[i]


@pytest.mark.parametrize("k", [through_u128_view, by_atomics, by_one_thread, over_a_3d_grid, persistent])
def test_outputs_written_whole_by_views_atomics_loops_and_any_grid_have_nothing_found(k):
    result = k.verify()
    assert result.verdict is Verdict.NOTHING_TO_PROVE, result.text()
    assert "every element of out was written" in result.text(), result.text()


def test_a_grid_pinned_past_the_small_launch_is_tested_on_that_grid():
    assert "grid (16, 1, 1)" in persistent.verify().text()


# ---- outputs left in part: found ---------------------------------------------------------------

@kernel(block=(32,), verify=False)
def every_other(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n and i % 2 == 0:
        out[i] = x[i]


@kernel(block=(32,), verify=False)
def claimed_where_no_thread_goes(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    i = block_idx.x * 32 + thread_idx.x
    if i < 0:
        assert_written(out)  # a claim about the launch, wherever it stands
    if i < n - 1:
        out[i] = x[i]


@kernel(block=(32,), verify=False)
def large_sizes_only(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(n % 1024 == 0)  # no launch with sizes of at most 256
    assume(grid_dim.x * 32 == n)
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n - 1:
        out[i] = x[i]


@pytest.mark.parametrize("k, element", [(every_other, 1), (claimed_where_no_thread_goes, None),
                                        (large_sizes_only, None)])
def test_an_output_left_in_part_is_violated_whatever_the_claim_or_sizes(k, element):
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "unwritten-output" and witness["tensor"] == "out"
    n = witness["sizes"]["n"]
    assert witness["element"] == ((element,) if element is not None else (n - 1,))


def test_a_claim_no_thread_reaches_holds_a_launch_checked_by_hand():
    n = 40
    again = check_launch(claimed_where_no_thread_goes, (2,), np.zeros(n, np.float32), np.zeros(n, np.float32), n)
    assert again.verdict is Verdict.VIOLATED and again.witnesses[0]["element"] == (n - 1,)


@kernel(block=(32,), verify=False)
def in_place(x: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    assert_written(x)
    i = block_idx.x * 32 + thread_idx.x
    if i < n - 1:
        x[i] = x[i] * 2.0


def test_a_claim_the_checker_cannot_test_is_not_nothing_to_prove():
    result = in_place.verify()  # (the checker does not follow a tensor both read and written)
    assert result.verdict is Verdict.UNKNOWN, result.text()
    assert "assert_written" in result.text() and "not tested" in result.text()


# ---- bad use -----------------------------------------------------------------------------------

def _given_element(x: Tensor[f32, "n"], n: int):
    assert_written(x[0])
    x[0] = 1.0


def _given_tile(x: Tensor[f32, "n"], n: int):
    s = make_shared((32,), f32)
    assert_written(s)
    x[0] = 1.0


def _given_nothing(x: Tensor[f32, "n"], n: int):
    assert_written()
    x[0] = 1.0


@pytest.mark.parametrize("fn, given", [(_given_element, "a f32 value"), (_given_tile, "a tile"),
                                       (_given_nothing, "0 arguments")])
def test_assert_written_of_other_than_one_tensor_says_what_it_was_given(fn, given):
    with pytest.raises(ArgusError, match=rf"assert_written\(t\) takes one tensor.*; got {given}") as err:
        kernel(block=(32,), verify=False)(fn).specialize()
    assert "test_assert_written.py" in str(err.value)


# ---- cost ----------------------------------------------------------------------------------------

@kernel(block=(1,), verify=False)
def by_one_thread_3d(x: Tensor[f32, "a", "b", "c"], out: Tensor[f32, "a", "b", "c"], a: int, b: int, c: int):
    assume(grid_dim.x == 1)
    assert_written(out)
    for i in range(a):
        for j in range(b):
            for k in range(c):
                out[i, j, k] = x[i, j, k]


def test_the_tested_launch_of_a_loop_nest_over_three_sizes_stays_small():
    started = time.perf_counter()
    result = by_one_thread_3d.verify()  # (three sizes of 64 each took over a minute)
    assert result.verdict is Verdict.NOTHING_TO_PROVE, result.text()
    assert time.perf_counter() - started < 20, result.text()
    sizes = ast.literal_eval(result.text().split(" with ")[-1].split(" (tested")[0])
    assert all(1 < sizes[s] for s in "abc"), sizes  # each size still more than one
