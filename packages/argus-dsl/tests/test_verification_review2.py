"""The static tag checker against concrete launches: tensor views and tag functions, loops
that may run no iteration, integer conversions, barriers and races.

Each `xfail` test builds a launch inside the documented domain (accesses in bounds, no
declared assumption broken) on which shadow tags (or the interpreter's race check) find a
problem, and asks the checker not to answer `proved` for the kernel."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    ArgusError,
    Tensor,
    assume,
    bf16,
    bitcast,
    block_idx,
    byte_perm,
    concat,
    f32,
    hi,
    i16,
    i32,
    kernel,
    lo,
    make_local,
    make_shared,
    shfl_down,
    shfl_idx,
    shfl_xor,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
    u32,
)
from argus.dsl import Kernel
from argus.dsl.check import TagAnalysis
from argus.dsl.machine.shadow import check_launch
from argus.verify.affine import key_constant
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")


# ---- tag functions of tensor views ------------------------------------------------------------


@kernel(block=(32,), verify=False)
def tag_on_reshaped_view(x: Tensor[bf16, 8, 8]):
    xv = x.view((4, 16), bf16)
    tag(xv, lambda r, c: (r, c))  # coordinates of the view, not of x
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda j: (thread_idx.x // 8, thread_idx.x % 8))
    got[0] = x[thread_idx.x // 8, thread_idx.x % 8]
    assert tag(got[...]) == tag(want[...])  # x[1, 0] is xv[0, 8]: fails from thread 8 on


def test_a_tag_function_set_on_a_reshaped_view_takes_the_views_coordinates(refuted):
    refuted(tag_on_reshaped_view, (1,), np.zeros((8, 8), np.uint16))


@kernel(block=(32,), verify=False)
def tag_on_wide_view(x: Tensor[bf16, 64]):
    xv = x.view((32,), u32)
    tag(xv, lambda i: (i,))  # one tag per 4-byte element of the view
    got = make_local((2,), bf16)
    want = make_local((2,), bf16)
    tag(want, lambda j: (2 * thread_idx.x + j,))
    gv = got.view((1,), u32)
    gv[0] = xv[thread_idx.x]
    assert tag(got[...]) == tag(want[...])


def test_a_tag_function_set_on_a_wider_view_tags_the_views_elements(refuted):
    refuted(tag_on_wide_view, (1,), to_storage(np.zeros(64), bf16))


@kernel(block=(32,), verify=False)
def reshaped_wide_view(x: Tensor[bf16, 8, 8]):
    tag(x, lambda i, j: (8 * i + j,))
    xv = x.view((16, 2), u32)  # rows of 8 bytes over rows of 16: coordinates go through the flat index
    got = make_local((2,), bf16)
    want = make_local((2,), bf16)
    tag(want, lambda j: (2 * thread_idx.x + j,))
    gv = got.view((1,), u32)
    gv[0] = xv[thread_idx.x // 2, thread_idx.x % 2]
    assert tag(got[...]) == tag(want[...])


@kernel(block=(32,), verify=False)
def narrow_view(x: Tensor[u32, 32]):
    tag(x, lambda i: (i,))
    xv = x.view((64,), bf16)  # the halves of each 4-byte element
    got = make_local((2,), bf16)
    want = make_local((1,), u32)
    tag(want, lambda i: (thread_idx.x,))
    got[0] = xv[2 * thread_idx.x]
    got[1] = xv[2 * thread_idx.x + 1]
    assert tag(got.view((1,), u32)[...]) == tag(want[...])


@pytest.mark.parametrize("k, data", [(reshaped_wide_view, to_storage(np.zeros((8, 8)), bf16)),
                                     (narrow_view, np.zeros(32, np.uint32))])
def test_views_of_another_width_take_each_bytes_tag_from_its_element(k, data):
    """Each byte of a view's element has the tag of the tensor element it lies in: proved, and
    so in a launch."""
    assert check_launch(k, (1,), data).verdict is Verdict.PROVED
    assert k.verify().verdict is Verdict.PROVED


def _runtime_sized_views(shift: int) -> Kernel:
    @kernel(block=(32,), verify=False)
    def runtime_sized_views(x: Tensor[f32, "n"], n: int):
        tag(x, lambda i: (i,))
        assume(n % 32 == 0)
        assume(block_idx.x * 32 + 32 <= n)  # the grid covers x
        rows = x.view((n // 4, 4), f32)  # the same elements in rows of 4
        words = x.view((n,), u32)  # the same bytes as words
        i = block_idx.x * 32 + thread_idx.x
        by_row = make_local((1,), f32)
        by_word = make_local((1,), u32)
        want = make_local((1,), f32)
        tag(want, lambda j: (i,))
        by_row[0] = rows[i // 4, (i + shift) % 4]
        by_word[0] = words[i]
        assert tag(by_row[...]) == tag(want[...])
        assert tag(by_word[...]) == tag(want[...])

    return runtime_sized_views


def test_a_view_of_a_runtime_sized_tensor_needs_no_division_by_its_size():
    """Element i of a view of an n-element tensor is element i of the tensor: its coordinate is
    its flat index, never reduced modulo n (a division by a runtime size, which the solver finds
    hard), and a view read at the wrong place is still caught."""
    compiled = _runtime_sized_views(0).specialize()
    analysis = TagAnalysis(compiled.op, compiled.locations, None, compiled.preparation).run()
    by_runtime_value = [a for a in analysis.space.atoms if a.kind in ("floordiv", "mod", "rem", "tdiv")
                        and key_constant(a.args[1]) is None]
    assert not by_runtime_value
    assert _runtime_sized_views(0).verify().verdict is Verdict.PROVED
    broken = _runtime_sized_views(1).verify()
    assert broken.verdict is Verdict.VIOLATED, broken.text()
    assert all(w["replayed"].startswith("reproduced") for w in broken.witnesses)


# ---- tag functions of tensors set in loops, or using per-thread variables ---------------------


@kernel(block=(32,), verify=False)
def retag_in_loop(x: Tensor[bf16, 64]):
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (thread_idx.x,))
    for k in range(2):
        tag(x, lambda i: (i + k,))
        got[0] = x[thread_idx.x]
        assert tag(got[...]) == tag(want[...])  # fails at k == 1


def test_retagging_a_tensor_between_two_runs_of_one_load(refuted):
    refuted(retag_in_loop, (1,), to_storage(np.zeros(64), bf16))


@kernel(block=(32,), verify=False)
def retag_in_runtime_loop(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    for k in range(n):
        tag(x, lambda i: (i + 1,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (thread_idx.x + 1,))
    got[0] = x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])  # fails when the loop runs no iteration


def test_retagging_a_tensor_in_a_loop_that_may_run_no_iteration(refuted):
    refuted(retag_in_runtime_loop, (1,), to_storage(np.zeros(64), bf16), 64, 0)


@kernel(block=(32,), verify=False)
def thread_var_in_tensor_tag(x: Tensor[bf16, 64]):
    v = 0
    if thread_idx.x < 64:
        v = thread_idx.x  # a per-thread variable
    tag(x, lambda i: (i - v,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (0,))
    got[0] = x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])


def test_a_tensor_tag_function_with_a_per_thread_variable(refuted):
    refuted(thread_var_in_tensor_tag, (1,), to_storage(np.zeros(64), bf16))


# ---- facts from code that a launch may never run ------------------------------------------------


@kernel(block=(32,), verify=False)
def assume_in_loop(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    for k in range(n):
        assume(m == 64)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (thread_idx.x + m - 64,))
    got[0] = x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])  # fails when m != 64, a launch with n == 0


def test_an_assumption_inside_a_loop_that_may_run_no_iteration(refuted):
    refuted(assume_in_loop, (1,), to_storage(np.zeros(96), bf16), 96, 0)


@kernel(block=(32,), verify=False)
def bounds_in_loop(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    acc = make_local((1,), bf16)
    for k in range(n):
        acc[0] = x[thread_idx.x + 64]  # in bounds only when m >= 96
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (thread_idx.x + min(m, 96) - 96,))
    got[0] = x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])  # fails when m < 96, a launch with n == 0


def test_in_bounds_facts_of_a_loop_that_may_run_no_iteration(refuted):
    refuted(bounds_in_loop, (1,), to_storage(np.zeros(64), bf16), 64, 0)


# ---- global tensors written and read back -----------------------------------------------------


@kernel(block=(32,), verify=False)
def read_then_write_loop(x: Tensor[bf16, m], y: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    tag(y, lambda i: (i + 1000,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    for k in range(n):
        got[0] = x[32 * k + thread_idx.x]  # from k == 1 on: what the previous iteration wrote
        tag(want, lambda j: (32 * k + thread_idx.x,))
        assert tag(got[...]) == tag(want[...])
        x[32 * k + 32 + thread_idx.x] = y[thread_idx.x]


def test_a_tensor_read_back_in_the_next_iteration(refuted):
    refuted(read_then_write_loop, (1,), to_storage(np.zeros(96), bf16), to_storage(np.zeros(96), bf16), 96, 2)


# ---- integers: conversions and 32-bit arithmetic ----------------------------------------------


@kernel(block=(32,), verify=False)
def narrowed_index(x: Tensor[bf16, m], m: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda j: (thread_idx.x + 65536,))
    got[0] = x[i32(i16(thread_idx.x + 65536))]  # i16 keeps the low 16 bits: x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])


def test_a_narrowing_conversion_of_an_index(refuted):
    refuted(narrowed_index, (1,), to_storage(np.zeros(64), bf16), 64)


@kernel(block=(32,), verify=False)
def wrapped_index(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda j: (thread_idx.x + n,))
    got[0] = x[thread_idx.x + n * 65536 * 65536]  # i32: n * 2^32 wraps to 0
    assert tag(got[...]) == tag(want[...])  # fails when n != 0


def test_an_index_that_wraps_around_in_32_bits(refuted):
    """i32 arithmetic is taken as unbounded; the index is out of bounds for every n ≠ 0 in that
    reading, which is a bounds obligation (never an in-bounds fact that would leave only n = 0
    in the domain), so no proof is given."""
    refuted(wrapped_index, (1,), to_storage(np.zeros(64), bf16), 64, 1)


# ---- barriers and races in shared memory ------------------------------------------------------


@kernel(block=(32,), verify=False)
def barrier_in_branch(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    s = make_shared((1,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (1,))
    if thread_idx.x == 0:
        s[0] = x[0]
    if block_idx.x < n:  # no barrier when block_idx.x >= n
        syncthreads()
    if thread_idx.x == 1:
        s[0] = x[1]
    syncthreads()
    got[0] = s[0]
    assert tag(got[...]) == tag(want[...])


def test_a_barrier_on_one_side_of_a_symbolic_branch_does_not_hide_a_race(races):
    races(barrier_in_branch, (1,), to_storage(np.zeros(64), bf16), 64, 0)


@kernel(block=(32,), verify=False)
def barrier_in_loop(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    s = make_shared((1,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (1,))
    if thread_idx.x == 0:
        s[0] = x[0]
    for k in range(n):  # no barrier when n == 0
        syncthreads()
    if thread_idx.x == 1:
        s[0] = x[1]
    syncthreads()
    got[0] = s[0]
    assert tag(got[...]) == tag(want[...])


def test_a_barrier_in_a_loop_that_may_run_no_iteration_does_not_hide_a_race(races):
    races(barrier_in_loop, (1,), to_storage(np.zeros(64), bf16), 64, 0)


# ---- errors -----------------------------------------------------------------------------------


@kernel(block=(32,), verify=False)
def per_block(x: Tensor[bf16, m], m: int):
    tag(x, lambda i: (i,))
    assume(32 * block_idx.x + 32 <= m)  # the grid covers x
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda j: (thread_idx.x,))
    got[0] = x[32 * block_idx.x + thread_idx.x]
    assert tag(got[...]) == tag(want[...])  # fails in every block but the first


def test_a_grid_given_as_a_list():
    try:
        result = per_block.verify(grid=[2, 1])
    except ArgusError:
        return
    assert result.verdict is Verdict.VIOLATED


# ---- behaviours that hold -----------------------------------------------------------------------


def test_an_explicit_grid_bounds_the_block_indices():
    assert per_block.verify(grid=(1,)).verdict is Verdict.PROVED
    result = per_block.verify(grid=(2, 1))
    assert result.verdict is Verdict.VIOLATED
    assert result.witnesses[0]["replayed"].startswith("reproduced")


@kernel(block=(32,), verify=False)
def halves_swapped(x: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    w = concat(x[2 * thread_idx.x], x[2 * thread_idx.x + 1])  # a in the low bytes
    p = byte_perm(w, w, (2, 3, 0, 1))
    got = make_local((2,), bf16)
    want = make_local((2,), bf16)
    tag(want, lambda j: (2 * thread_idx.x + 1 - j,))
    got[0] = bitcast(lo(p), bf16)
    got[1] = bitcast(hi(p), bf16)
    assert tag(got[...]) == tag(want[...])


@kernel(block=(32,), verify=False)
def bytes_swapped(x: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    w = concat(x[2 * thread_idx.x], x[2 * thread_idx.x + 1])
    p = byte_perm(w, w, (1, 0, 3, 2))  # bytes swapped inside each half
    got = make_local((2,), bf16)
    want = make_local((2,), bf16)
    tag(want, lambda j: (2 * thread_idx.x + j,))
    got[0] = bitcast(lo(p), bf16)
    got[1] = bitcast(hi(p), bf16)
    assert tag(got[...]) == tag(want[...])


def test_byte_rearrangements_follow_each_byte():
    assert halves_swapped.verify().verdict is Verdict.PROVED
    assert check_launch(bytes_swapped, (1,), to_storage(np.zeros(64), bf16)).verdict is Verdict.VIOLATED
    assert bytes_swapped.verify().verdict is Verdict.VIOLATED


@kernel(block=(64,), warp_size=64, verify=False)
def shuffles_64(x: Tensor[f32, 64]):
    tag(x, lambda i: (i,))
    v = x[thread_idx.x]
    got = make_local((2,), f32)
    want = make_local((2,), f32)
    tag(want, lambda j: ((thread_idx.x ^ 32) * (1 - j) + min(thread_idx.x + 1, 63) * j,))
    got[0] = shfl_xor(v, 32)
    got[1] = shfl_down(v, 1)  # the last lane reads itself
    assert tag(got[...]) == tag(want[...])


@kernel(block=(32, 4), verify=False)
def broadcast_lane_3(x: Tensor[f32, 128]):
    tag(x, lambda i: (i,))
    v = x[thread_idx.y * 32 + thread_idx.x]
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(want, lambda j: (thread_idx.y * 32 + 3,))
    got[0] = shfl_idx(v, 3)
    assert tag(got[...]) != tag(want[...])  # equal in every lane: violated


def test_shuffles_with_64_lanes_and_in_every_warp_of_a_2d_block():
    assert check_launch(shuffles_64, (1,), np.zeros(64, np.float32)).verdict is Verdict.PROVED
    assert shuffles_64.verify().verdict is Verdict.PROVED
    result = broadcast_lane_3.verify()
    assert result.verdict is Verdict.VIOLATED
    assert result.witnesses[0]["replayed"].startswith("reproduced")
