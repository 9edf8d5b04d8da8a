"""The static tag checker against concrete launches: whatever `verify()` proves must hold on
every launch of the documented domain, as the interpreter with shadow tags runs it.

Each test builds a launch inside the domain (accesses in bounds, no declared assumption
broken), checks that shadow tags find a violation on it, and asks the checker not to answer
`proved` for the kernel."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    ArgusError,
    Tensor,
    assume,
    bf16,
    block_idx,
    f32,
    kernel,
    make_local,
    matmul,
    select,
    tag,
    thread_idx,
    to_storage,
    u32,
    universal_fma,
)
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")


def _f32(n: int) -> np.ndarray:
    return np.zeros(n, np.float32)


# ---- loops that may run zero times ------------------------------------------------------------


@kernel(block=(32,), verify=False)
def zero_trip(x: Tensor[bf16, m], m: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    acc = make_local((1,), bf16)
    for k in range(block_idx.x):  # block 0 runs no iteration
        acc[0] = x[thread_idx.x]
    tag(want, lambda i: (max(block_idx.x, 1) * 32 + thread_idx.x,))
    got[0] = x[block_idx.x * 32 + thread_idx.x]
    assert tag(got[...]) == tag(want[...])  # fails in block 0 only


def test_a_loop_that_runs_no_iteration_does_not_shrink_the_domain(refuted):
    refuted(zero_trip, (2,), to_storage(np.zeros(64), bf16), 64)


@kernel(block=(32,), verify=False)
def triangular(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    for k in range(n):
        got[0] = x[32 * k + thread_idx.x]
        for j in range(k):  # empty when k == 0
            got[0] = got[0]
        tag(want, lambda i: (32 * max(k, 1) + thread_idx.x,))
        assert tag(got[...]) == tag(want[...])  # fails at k == 0 only


def test_a_triangular_inner_loop_keeps_the_first_outer_iteration(refuted):
    refuted(triangular, (1,), to_storage(np.zeros(64), bf16), 64, 2)


# ---- joins that hide the unwritten path -------------------------------------------------------


@kernel(block=(32,), verify=False)
def written_on_one_path(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (thread_idx.x,))
    if block_idx.x < n:
        got[0] = x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])  # unwritten when block_idx.x >= n


def test_a_tile_written_on_one_side_of_a_symbolic_branch_is_unwritten_on_the_other(refuted):
    refuted(written_on_one_path, (1,), to_storage(np.zeros(64), bf16), 64, 0)


@kernel(block=(32,), verify=False)
def select_constant(x: Tensor[f32, m], m: int, n: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(want, lambda i: (thread_idx.x,))
    got[0] = select(block_idx.x < n, x[thread_idx.x], 0.0)
    assert tag(got[...]) == tag(want[...])  # the constant (⊥) is taken when block_idx.x >= n


def test_a_select_on_a_symbolic_condition_keeps_its_constant_side(refuted):
    refuted(select_constant, (1,), _f32(64), 64, 0)


# ---- values carried from one iteration of a runtime loop to the next ---------------------------


@kernel(block=(32,), verify=False)
def prologue_in_loop(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    r = make_local((1,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    for k in range(n):
        if k == 0:
            r[0] = x[32 * k + thread_idx.x]
        got[0] = r[0]
        tag(want, lambda i: (32 * k + thread_idx.x,))
        assert tag(got[...]) == tag(want[...])
        r[0] = x[32 * (k + 2) + thread_idx.x]  # prefetches one tile too far


def test_a_prefetch_carried_past_a_symbolic_branch_is_checked(refuted):
    refuted(prologue_in_loop, (1,), to_storage(np.zeros(160), bf16), 160, 2)


@kernel(block=(32,), verify=False)
def carried_index(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    r = make_local((1,), bf16)
    want = make_local((1,), bf16)
    j = 0
    for k in range(n):
        if k > 0:
            want[0] = x[j + 1]
            assert tag(r[...]) == tag(want[...])
        j = j + 1
        r[0] = x[j]  # one element behind: x[j + 1] is meant


def test_a_tag_from_a_carried_variable_refers_to_its_own_iteration(refuted):
    refuted(carried_index, (1,), to_storage(np.zeros(32), bf16), 32, 2)


@kernel(block=(32,), verify=False)
def stale_fact(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    acc = make_local((1,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    j = 0
    for k in range(n):
        acc[0] = x[k - j]  # j == k in every iteration: always x[0]
        got[0] = x[0]
        tag(want, lambda i: (max(k - m + 1, 0),))
        assert tag(got[...]) == tag(want[...])  # fails at k >= m
        j = k + 1


def test_in_bounds_facts_of_a_discarded_loop_pass_do_not_shrink_the_domain(refuted):
    refuted(stale_fact, (1,), to_storage(np.zeros(4), bf16), 4, 5)


# ---- matmul operand pairing -------------------------------------------------------------------

FMA = universal_fma(f32)


@kernel(block=(32,), verify=False)
def pairing_after_branch(x: Tensor[f32, m], y: Tensor[f32, m], m: int, n: int):
    tag(x, lambda i: (i, 0))
    tag(y, lambda i: (i, 1))
    a = make_local((1,), f32)
    b = make_local((1,), f32)
    c = make_local((1,), f32)
    c[0] = 0.0
    if block_idx.x < n:
        a[0] = x[thread_idx.x]  # the wrong operand
    else:
        a[0] = y[thread_idx.x]
    b[0] = y[thread_idx.x]
    matmul(a, b, c, FMA)


def test_matmul_operands_joined_to_top_are_not_skipped(refuted):
    refuted(pairing_after_branch, (1,), _f32(32), _f32(32), 32, 1)


@kernel(block=(32,), verify=False)
def pipelined_pairing(x: Tensor[f32, m], m: int, n: int):
    tag(x, lambda i: (i,))
    a = make_local((1,), f32)
    b = make_local((1,), f32)
    c = make_local((1,), f32)
    c[0] = 0.0
    a[0] = x[thread_idx.x]
    for k in range(n):
        b[0] = x[32 * k + thread_idx.x]
        matmul(a, b, c, FMA)
        a[0] = x[32 * (k + 2) + thread_idx.x]  # the wrong stage: k + 1 is meant


def test_a_wrong_pipeline_stage_feeding_a_matmul_is_not_proved(refuted):
    refuted(pipelined_pairing, (1,), _f32(160), 160, 2)


# ---- tags of global tensors -------------------------------------------------------------------


@kernel(block=(32,), verify=False)
def wide_view(x: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    xv = x.view((32,), u32)
    got = make_local((1,), u32)
    want = make_local((1,), u32)
    tag(want, lambda i: (thread_idx.x,))
    got[0] = xv[thread_idx.x]  # two bf16 elements, 2t and 2t + 1
    assert tag(got[...]) == tag(want[...])


def test_a_tensor_view_of_another_width_keeps_the_tags_of_its_bytes(refuted):
    refuted(wide_view, (1,), to_storage(np.zeros(64), bf16))


@kernel(block=(32,), verify=False)
def thread_in_tensor_tag(x: Tensor[bf16, 64]):
    tag(x, lambda i: (i - thread_idx.x,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (0,))
    got[0] = x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])


def test_a_tensor_tag_function_with_a_thread_index_means_the_same_in_both(refuted):
    refuted(thread_in_tensor_tag, (1,), to_storage(np.zeros(64), bf16))


@kernel(block=(32,), verify=False)
def retag_in_branch(x: Tensor[bf16, 64], n: int):
    tag(x, lambda i: (i,))
    if block_idx.x < n:
        tag(x, lambda i: (i + 1,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (thread_idx.x + 1,))
    got[0] = x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])  # fails when block_idx.x >= n


def test_retagging_a_tensor_on_one_side_of_a_symbolic_branch(refuted):
    refuted(retag_in_branch, (1,), to_storage(np.zeros(64), bf16), 0)


# ---- errors -----------------------------------------------------------------------------------


@kernel(block=(32,), verify=False)
def empty_tag(x: Tensor[bf16, m], m: int):
    tag(x, lambda i: ())
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (thread_idx.x,))
    got[0] = x[thread_idx.x]
    assert tag(got[...]) == tag(want[...])


def test_a_tag_function_without_components_is_not_a_crash():
    try:
        result = empty_tag.verify()
    except ArgusError:
        return
    assert result.verdict is not Verdict.PROVED


# ---- behaviours that hold -----------------------------------------------------------------------


@kernel(block=(32,), verify=False)
def pipelined(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    r = make_local((1,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    r[0] = x[thread_idx.x]
    for k in range(n):
        got[0] = r[0]
        tag(want, lambda i: (32 * k + thread_idx.x,))
        assert tag(got[...]) == tag(want[...])
        r[0] = x[32 * (k + 2) + thread_idx.x]  # one tile too far


def test_a_wrong_prefetch_distance_is_never_proved(refuted):
    refuted(pipelined, (1,), to_storage(np.zeros(160), bf16), 160, 2)


@kernel(block=(32,), verify=False)
def symbolic_not_equal(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (select(i < n, i, 0), min(i, n)))
    assume(m >= 32)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (select(thread_idx.x < n, thread_idx.x, 0), min(n, thread_idx.x)))
    got[0] = x[thread_idx.x]
    assert tag(got[...]) != tag(want[...])  # the same tags: violated in every launch


def test_a_non_conformity_between_equal_symbolic_tags_is_violated():
    result = symbolic_not_equal.verify()
    assert result.verdict is Verdict.VIOLATED
    assert result.witnesses[0]["replayed"].startswith("reproduced")
