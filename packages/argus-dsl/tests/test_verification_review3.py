"""The static tag checker against concrete launches: tag functions of shared tiles under
per-thread conditions, variables read by tag functions, and cooperative copy atoms.

Each `xfail` test builds a launch inside the documented domain (accesses in bounds, no
declared assumption broken) on which shadow tags find a violation, and asks the checker not
to answer `proved` for the kernel (or not to crash with anything but an `ArgusError`)."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    ArgusError,
    CopyAtom,
    Tensor,
    bf16,
    copy,
    copy_vector,
    f32,
    kernel,
    local_tile,
    make_local,
    make_shared,
    partition,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
)
from argus.dsl.machine.shadow import check_launch
from argus.layout import ComposedLayout, Layout, Swizzle
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")


# ---- a shared tile's tag function under a per-thread symbolic condition -------------------------


@kernel(block=(32,), verify=False)
def shared_retag_by_some_threads(y: Tensor[bf16, 32], n: int):
    tag(y, lambda i: (i,))
    s = make_shared((32,), bf16)
    s[thread_idx.x] = y[thread_idx.x]
    syncthreads()
    if thread_idx.x >= n:  # the first thread that retags is thread n
        tag(s, lambda i: (i + thread_idx.x,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    got[0] = s[thread_idx.x]
    tag(want, lambda i: (thread_idx.x,))
    assert tag(got[...]) == tag(want[...])  # fails whenever 0 < n < 32


def test_a_shared_tile_retagged_under_a_per_thread_symbolic_condition(refuted):
    refuted(shared_retag_by_some_threads, (1,), to_storage(np.zeros(32), bf16), 3)


# ---- variables read by tag functions ----------------------------------------------------------


@kernel(block=(32,), verify=False)
def variable_in_tile_tag(x: Tensor[bf16, m], m: int, n: int):
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    v = 0
    for k in range(n):
        tag(want, lambda e: (v,))  # v is k here, carried from the previous iteration
        got[0] = x[0]
        assert tag(got[...]) == tag(want[...])  # fails from k == 1 on
        v = k + 1


def test_a_variable_read_by_a_tile_tag_function_is_carried_by_the_loop(refuted):
    refuted(variable_in_tile_tag, (1,), to_storage(np.zeros(8), bf16), 8, 2)


@kernel(block=(32,), verify=False)
def variable_in_tensor_tag(x: Tensor[bf16, 64]):
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    v = 0
    for k in range(1):
        v = 0
    tag(x, lambda i: (i + v,))  # x's tags are set here, with v == 0
    for k in range(1):
        v = 7
    got[0] = x[thread_idx.x]
    tag(want, lambda i: (thread_idx.x + v,))
    assert tag(got[...]) == tag(want[...])


def test_a_tensor_tag_function_takes_its_variables_when_it_is_set(refuted):
    refuted(variable_in_tensor_tag, (1,), to_storage(np.zeros(64), bf16))


# ---- cooperative copy atoms -------------------------------------------------------------------

EXCHANGE = CopyAtom("exchange_4x8", vector_bytes=4, threads=32,
                    src_layout=Layout((32, 1), (1, 0)), dst_layout=Layout(((4, 8), 1), ((8, 1), 0)))


@kernel(block=(48,), verify=False)
def exchange_in_partial_warp(x: Tensor[f32, 64]):
    tag(x, lambda i: (i,))
    a = make_local((1,), f32)
    b = make_local((1,), f32)
    a[0] = x[thread_idx.x]
    copy(a, b, EXCHANGE)  # 48 threads: not whole groups of 32
    assert tag(b[...]) == tag(a[...])


def test_a_cooperative_copy_over_a_partial_group_is_not_a_crash():
    try:
        result = exchange_in_partial_warp.verify()
    except ArgusError:
        return
    assert result.verdict is not Verdict.PROVED


# ---- behaviours that hold -----------------------------------------------------------------------

ROWS = Layout((32, 8), (8, 1))  # thread t holds elements 8t .. 8t+7
SWIZZLED = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((32, 8), (8, 1)))


def _staged(shift: int):
    @kernel(block=(32,), verify=False)
    def staged(x: Tensor[bf16, 256]):
        tag(x, lambda i: (i,))
        s = make_shared((256,), bf16)
        r = make_local((8,), bf16)
        want = make_local((8,), bf16)
        t = thread_idx.x
        for v in static_range(8):
            s[t * 8 + v] = x[t * 8 + v]
        syncthreads()
        copy(partition(s, ROWS, (t + shift) % 32), r, copy_vector(16))
        tag(want, lambda v: (8 * t + v,))
        assert tag(r[...]) == tag(want[...])

    return staged


def _tiled(shift: int):
    @kernel(block=(32,), verify=False)
    def tiled(x: Tensor[bf16, 32, 8]):
        tag(x, lambda i, j: (i, j))
        s = make_shared(SWIZZLED, bf16)
        r = make_local((8,), bf16)
        want = make_local((8,), bf16)
        t = thread_idx.x
        for v in static_range(8):
            s[t, v] = x[t, v]
        syncthreads()
        copy(local_tile(s, (1, 8), (t + shift) % 32), r.view((1, 8), bf16), copy_vector(16))
        tag(want, lambda v: (t, v))
        assert tag(r[...]) == tag(want[...])

    return tiled


def test_copies_from_partitioned_and_tiled_shared_memory_follow_the_data():
    assert _staged(0).verify().verdict is Verdict.PROVED
    assert _tiled(0).verify().verdict is Verdict.PROVED
    for wrong, x in ((_staged(1), to_storage(np.zeros(256), bf16)), (_tiled(1), np.zeros((32, 8), np.uint16))):
        assert check_launch(wrong, (1,), x).verdict is Verdict.VIOLATED
        result = wrong.verify()
        assert result.verdict is Verdict.VIOLATED
        assert result.witnesses[0]["replayed"].startswith("reproduced")
