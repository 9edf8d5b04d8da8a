"""The static tag checker against concrete launches: tag functions that cover part of a
memory, joins of shared writers and of variables, masked assignments, assertions on written
tensors and assertion sites reached in several loop scopes.

Each `xfail` test builds a launch inside the documented domain (accesses in bounds, no
declared assumption broken) on which shadow tags (or the interpreter's race check) find a
problem, and asks the checker not to answer `proved` for the kernel."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    Tensor,
    bf16,
    bitcast,
    block_idx,
    device,
    f32,
    i32,
    kernel,
    make_local,
    make_shared,
    static_range,
    tag,
    thread_idx,
    to_storage,
)
from argus.layout import Layout

pytestmark = pytest.mark.usefixtures("no_result_cache")


# ---- a tile tag function that covers only part of the tile's memory -------------------------


@kernel(block=(32,), verify=False)
def strided_retag(x: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    r = make_local(Layout((4,), (2,)), bf16)  # elements at offsets 0, 2, 4, 6
    rv = r.view((7,), bf16)  # every offset, 1, 3 and 5 too
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (0,))
    rv[1] = x[0]
    got[0] = rv[1]
    assert tag(got[...]) == tag(want[...])
    rv[1] = x[1]  # offset 1 is not retagged below: this store is what the next check reads
    tag(r, lambda i: (i,))
    got[0] = rv[1]
    assert tag(got[...]) == tag(want[...])  # (1) against (0)


def test_a_tag_function_on_a_strided_tile_keeps_the_bytes_it_does_not_cover(refuted):
    refuted(strided_retag, (1,), to_storage(np.zeros(64), bf16))


# ---- the writers of a shared byte joined from two paths ---------------------------------------


@kernel(block=(32,), verify=False)
def writer_per_path(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    s = make_shared((1,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (0,))
    if block_idx.x < n:
        if thread_idx.x == 0:
            s[0] = x[0]
    else:
        if thread_idx.x == 1:
            s[0] = x[0]
    if thread_idx.x == 1:
        got[0] = s[0]  # written by thread 0 when block_idx.x < n, no barrier between
        assert tag(got[...]) == tag(want[...])


def test_a_read_after_another_threads_write_on_one_path_of_a_symbolic_branch(races):
    races(writer_per_path, (1,), to_storage(np.zeros(64), bf16), 64, 1)


# ---- integer variables joined after a branch on data ------------------------------------------


@kernel(block=(32,), verify=False)
def data_join(x: Tensor[f32, 32]):
    tag(x, lambda i: (i,))
    u = 0
    v = 0
    if x[thread_idx.x] > 0.0:
        u = 1
        v = 2
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(got, lambda i: (u,))
    tag(want, lambda i: (v,))
    assert tag(got[...]) == tag(want[...])  # (1) against (2) where x > 0


def test_two_variables_joined_after_a_branch_on_data_are_not_one_value(refuted):
    refuted(data_join, (1,), np.ones(32, np.float32))


# ---- an integer variable assigned by some threads only ----------------------------------------


@kernel(block=(32,), verify=False)
def masked_assignment(x: Tensor[f32, 32]):
    v = bitcast(x[thread_idx.x], i32)  # a value the checker does not follow
    if thread_idx.x < 16:
        v = 5
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(got, lambda e: (5,))
    tag(want, lambda e: (v,))
    assert tag(got[...]) == tag(want[...])  # threads 16 on keep the bits of x


def test_a_variable_assigned_by_some_threads_keeps_its_value_in_the_others(refuted):
    refuted(masked_assignment, (1,), np.zeros(32, np.float32))


# ---- a whole tensor as a side of an assertion after the kernel writes it ---------------------


@kernel(block=(32,), verify=False)
def written_then_asserted(x: Tensor[bf16, 32], y: Tensor[bf16, 32], z: Tensor[bf16, 32]):
    tag(x, lambda i: (i + 1,))
    tag(y, lambda i: (i,))
    tag(z, lambda i: (i,))
    y[thread_idx.x] = x[thread_idx.x]
    assert tag(y[...]) == tag(z[...])  # y now holds x's data


def test_a_tensor_asserted_on_after_the_kernel_writes_it(refuted):
    refuted(written_then_asserted, (1,), to_storage(np.zeros(32), bf16), to_storage(np.zeros(32), bf16), to_storage(np.zeros(32), bf16))


# ---- one assertion site reached inside and outside a runtime loop -----------------------------


@kernel(block=(32,), verify=False)
def site_in_two_scopes(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    for j in static_range(2):
        for k in range(n * (1 - j) + j):  # j == 0: n iterations; j == 1: one
            got[0] = x[0]
            tag(want, lambda e: (max(n, 1) - n,))
            assert tag(got[...]) == tag(want[...])  # fails at j == 1 when n == 0


@device
def same_tags(got, want):
    assert tag(got[...]) == tag(want[...])


@kernel(block=(32,), verify=False)
def helper_in_two_scopes(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    for k in range(n):
        got[0] = x[0]
        tag(want, lambda e: (0,))
        same_tags(got, want)
    got[0] = x[0]
    tag(want, lambda e: (max(n, 1) - n,))
    same_tags(got, want)  # fails when n == 0


def test_an_assertion_unrolled_inside_and_outside_a_runtime_loop(refuted):
    refuted(site_in_two_scopes, (1,), to_storage(np.zeros(32), bf16), 32, 0)


def test_a_helper_asserting_inside_and_outside_a_runtime_loop(refuted):
    refuted(helper_in_two_scopes, (1,), to_storage(np.zeros(32), bf16), 32, 0)
