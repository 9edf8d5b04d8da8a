"""The static tag checker against concrete launches: shared writes followed by a tag function
or by `reset_tags`, and constants stored into tiles of narrower elements.

Each `xfail` test builds a launch inside the documented domain (accesses in bounds, no
declared assumption broken) on which the interpreter finds a problem, and asks the checker not
to answer `proved` for the kernel and not to fail with anything but an `ArgusError`."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    ArgusError,
    Tensor,
    bf16,
    f32,
    kernel,
    make_local,
    make_shared,
    reset_tags,
    tag,
    thread_idx,
    to_storage,
)
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")


# ---- shared writes whose tags a later tag function or reset_tags replaces ---------------------


@kernel(block=(32,), verify=False)
def retag_after_store(x: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    s = make_shared((32,), bf16)
    s[thread_idx.x] = x[thread_idx.x]
    tag(s, lambda i: (i,))  # relabels the data; the writes above are still unordered
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    got[0] = s[(thread_idx.x + 1) % 32]  # written by thread + 1, no barrier between
    tag(want, lambda e: ((thread_idx.x + 1) % 32,))
    assert tag(got[...]) == tag(want[...])


def test_a_tag_function_on_a_shared_tile_does_not_hide_a_race_with_earlier_writes(races):
    races(retag_after_store, (1,), to_storage(np.zeros(64), bf16))


@kernel(block=(32,), verify=False)
def reset_after_store(x: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    s = make_shared((32,), bf16)
    s[(thread_idx.x + 1) % 32] = x[thread_idx.x]
    reset_tags(s)  # not a barrier
    s[thread_idx.x] = x[thread_idx.x]  # byte written by thread - 1 above
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    got[0] = s[thread_idx.x]
    tag(want, lambda e: (thread_idx.x,))
    assert tag(got[...]) == tag(want[...])


def test_reset_tags_does_not_hide_a_race_with_earlier_writes(races):
    races(reset_after_store, (1,), to_storage(np.zeros(64), bf16))


# ---- a shared byte written by two threads, first with a constant -------------------------------


@kernel(block=(32,), verify=False)
def constant_then_data(x: Tensor[f32, 64]):
    tag(x, lambda i: (i,))
    s = make_shared((32,), f32)
    s[(thread_idx.x + 1) % 32] = 0.0
    s[thread_idx.x] = x[thread_idx.x]  # byte written by thread - 1 above, no barrier between
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    got[0] = s[thread_idx.x]
    tag(want, lambda e: (thread_idx.x,))
    assert tag(got[...]) == tag(want[...])


def test_a_write_over_another_threads_constant_is_a_race(races):
    races(constant_then_data, (1,), np.zeros(64, np.float32))


# ---- a constant stored into a tile of narrower elements ---------------------------------------


@kernel(block=(32,), verify=False)
def constant_into_bf16(x: Tensor[f32, 64]):
    tag(x, lambda i: (i,))
    s = make_shared((32,), bf16)
    s[thread_idx.x] = 0.0  # an f32 constant stored into a bf16 tile
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    got[0] = f32(s[thread_idx.x])
    want[0] = x[0]
    assert tag(got[...]) == tag(want[...])


def test_a_float_constant_stored_into_a_bf16_tile_is_not_a_crash():
    constant_into_bf16[(1,)](np.zeros(64, np.float32))  # the interpreter runs it
    try:
        result = constant_into_bf16.verify()
    except ArgusError:
        return
    assert result.verdict is not Verdict.PROVED, result.text()
