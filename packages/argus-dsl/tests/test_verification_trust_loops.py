"""A read of shared memory and another thread's later write of it, with no barrier between, is a
race (write after read) — in straight-line code, and across the iterations of a loop whose body
leaves its reads unordered at the end. The checker never says "proved" for such a kernel: it
finds the race, with a witness (thread, byte, iteration) the interpreter replays, and keeps
proving the kernel once the barrier is there."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    KernelFault,
    Tensor,
    assume,
    f32,
    kernel,
    make_local,
    make_shared,
    static_range,
    syncthreads,
    tag,
    thread_idx,
)
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")

SRC = np.arange(256, dtype=np.float32)


def _line(k, text: str) -> int:
    """The source line of kernel `k` holding `text`."""
    import inspect

    lines, start = inspect.getsourcelines(k.fn)
    found = [start + i for i, line in enumerate(lines) if text in line]
    assert len(found) == 1, (text, found)
    return found[0]


def _race(k, text: str, iteration: dict | None = None) -> dict:
    """`k` is violated by a data race at the line holding `text`, replayed on the interpreter;
    the witness (its loop indices `iteration`, where given)."""
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    races = [w for w in result.witnesses if w["kind"] == "data-race"]
    assert races, result.text()
    w = races[0]
    assert w["assertion"].endswith(f":{_line(k, text)}:{w['assertion'].rsplit(':', 1)[1]}"), w
    assert w["replayed"].startswith("the interpreter faults the same way"), w
    assert isinstance(w["thread"], int) and isinstance(w["byte"], int), w
    if iteration is not None:
        assert {name.split("#")[0]: value for name, value in w["loops"].items()} == iteration, w
    return w


def _faults(k, *args) -> None:
    """The interpreter reports the race too (the kernel run on `args`)."""
    with pytest.raises(KernelFault, match="data-race"):
        k[(1,)](*args)


# ---- the minimal case: a runtime loop with no barrier at the end of its body -------------------


@kernel(block=(64,), verify=False)
def staged_without_closing_barrier(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]  # races with the neighbour's read of the iteration before
        syncthreads()
        got[0] = s[(tid + 1) % 64]
        tag(want, lambda j: (it * 64 + (tid + 1) % 64,))
        assert tag(got[...]) == tag(want[...]), "neighbour's element"
        dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def staged_with_closing_barrier(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]
        syncthreads()
        got[0] = s[(tid + 1) % 64]
        tag(want, lambda j: (it * 64 + (tid + 1) % 64,))
        assert tag(got[...]) == tag(want[...]), "neighbour's element"
        dst[it * 64 + tid] = got[0]
        syncthreads()


def test_a_read_left_unordered_at_the_end_of_a_runtime_loop_races_with_the_next_iterations_write():
    _faults(staged_without_closing_barrier, SRC[:192], np.zeros(192, np.float32), 192, 3)
    w = _race(staged_without_closing_barrier, "s[tid] = src[it * 64 + tid]", {"it": 1})
    # thread t writes element t, which thread t - 1 read in the iteration before
    assert w["threads"] == ((w["thread"] - 1) % 64, w["thread"]) and w["byte"] == 4 * w["thread"], w
    assert w["sizes"]["steps"] >= 2, w


def test_the_same_loop_with_its_closing_barrier_is_proved():
    assert staged_with_closing_barrier.verify().verdict is Verdict.PROVED
    dst = np.zeros(192, np.float32)
    staged_with_closing_barrier[(1,)](SRC[:192], dst, 192, 3)
    assert (dst == np.roll(SRC[:192].reshape(3, 64), -1, axis=1).reshape(-1)).all()


@kernel(block=(64,), verify=False)
def reread_in_straight_line(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    s[tid] = src[tid]
    syncthreads()
    got[0] = s[(tid + 1) % 64]
    s[tid] = src[64 + tid]  # the neighbour may not have read the old element yet
    tag(want, lambda j: ((tid + 1) % 64,))
    assert tag(got[...]) == tag(want[...])
    dst[tid] = got[0]


def test_a_write_after_another_threads_read_with_no_barrier_between_races():
    _faults(reread_in_straight_line, SRC[:128], np.zeros(128, np.float32), 128)
    _race(reread_in_straight_line, "s[tid] = src[64 + tid]")


@kernel(block=(64,), verify=False)
def own_element_rewritten(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]
        got[0] = s[tid]  # each thread reads back its own element: no barrier needed
        tag(want, lambda j: (it * 64 + tid,))
        assert tag(got[...]) == tag(want[...])
        dst[it * 64 + tid] = got[0]


def test_a_thread_rewriting_what_it_alone_read_needs_no_barrier():
    assert own_element_rewritten.verify().verdict is Verdict.PROVED
    dst = np.zeros(192, np.float32)
    own_element_rewritten[(1,)](SRC[:192], dst, 192, 3)
    assert (dst == SRC[:192]).all()


# ---- siblings: where the read and the write are, and what stands between them ---------------


@kernel(block=(64,), verify=False)
def inner_loop_reads(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int, inner: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]  # races with the inner loop's reads of the outer iteration before
        syncthreads()
        for j in range(0, inner):
            got[0] = s[(tid + 1) % 64]
            dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def inner_loop_without_closing_barrier(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int,
                                       inner: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        for j in range(0, inner):
            s[tid] = src[j * 64 + tid]  # races with the read of the inner iteration before
            syncthreads()
            got[0] = s[(tid + 1) % 64]
            dst[j * 64 + tid] = got[0]
        syncthreads()


@kernel(block=(64,), verify=False)
def read_under_a_runtime_branch(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int, flag: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]
        syncthreads()
        if flag > 0:
            got[0] = s[(tid + 1) % 64]
            dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def read_by_some_threads(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]
        syncthreads()
        if tid < 8:
            got[0] = s[(tid + 1) % 64]
            dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def static_loop(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    for it in static_range(3):
        s[tid] = src[it * 64 + tid]
        syncthreads()
        got[0] = s[(tid + 1) % 64]
        dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def static_loop_unrolled(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    for it in static_range(3):
        s[tid] = src[it * 64 + tid]
        syncthreads()
        if it == 1:  # a branch in Python: the iterations differ, and the loop is unrolled
            got[0] = s[(tid + 2) % 64]
        else:
            got[0] = s[(tid + 1) % 64]
        dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def runtime_loop_with_constant_bounds(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    for it in range(0, 3):
        s[tid] = src[it * 64 + tid]
        syncthreads()
        got[0] = s[(tid + 1) % 64]
        dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def written_early_in_the_next_iteration(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int):
    a = make_shared((64,), f32)
    b = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        b[tid] = src[it * 64 + tid]  # before any barrier: races with the last read of b
        a[tid] = src[it * 64 + tid]
        syncthreads()
        got[0] = a[(tid + 1) % 64]
        dst[it * 64 + tid] = got[0]
        syncthreads()
        got[0] = b[(tid + 7) % 64]
        dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def written_after_a_barrier_in_the_next_iteration(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int,
                                                  steps: int):
    a = make_shared((64,), f32)
    b = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        a[tid] = src[it * 64 + tid]
        syncthreads()  # orders the last read of b before the write below
        got[0] = a[(tid + 1) % 64]
        b[tid] = got[0]
        syncthreads()
        got[0] = b[(tid + 5) % 64]
        dst[it * 64 + tid] = got[0]


@kernel(block=(64,), verify=False)
def two_loops_sharing_a_buffer(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    s[tid] = src[tid]
    syncthreads()
    for it in range(0, steps):
        got[0] = s[(tid + 1) % 64]
        dst[it * 64 + tid] = got[0]
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]  # the first loop's reads are unordered with it
        syncthreads()
        got[0] = s[(tid + 1) % 64]
        dst[it * 64 + tid] = got[0]
        syncthreads()


@kernel(block=(64,), verify=False)
def barrier_some_warps_reach(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]
        syncthreads()
        got[0] = s[(tid + 1) % 64]
        dst[it * 64 + tid] = got[0]
        if tid < 32:  # the second warp never gets to it: it orders nothing
            syncthreads()


@kernel(block=(64,), verify=False)
def barrier_every_thread_reaches(src: Tensor[f32, "n"], dst: Tensor[f32, "n"], n: int, steps: int):
    s = make_shared((64,), f32)
    got = make_local((1,), f32)
    tid = thread_idx.x
    tag(src, lambda i: (i,))
    assume(n >= 64 * steps)  # steps tiles of 64
    for it in range(0, steps):
        s[tid] = src[it * 64 + tid]
        syncthreads()
        got[0] = s[(tid + 1) % 64]
        dst[it * 64 + tid] = got[0]
        if tid < 64:  # every thread of the block
            syncthreads()


def _run(k, *sizes: int) -> None:
    k[(1,)](SRC, np.zeros(SRC.size, np.float32), SRC.size, *sizes)


@pytest.mark.parametrize("k, sizes, text, iteration", [
    (inner_loop_without_closing_barrier, (2, 3), "s[tid] = src[j * 64 + tid]", {"it": 0, "j": 1}),
    (read_by_some_threads, (3,), "s[tid] = src[it * 64 + tid]", {"it": 1}),
    (static_loop, (), "s[tid] = src[it * 64 + tid]", {"it": 1}),
    (static_loop_unrolled, (), "s[tid] = src[it * 64 + tid]", None),
    (runtime_loop_with_constant_bounds, (), "s[tid] = src[it * 64 + tid]", {"it": 1}),
    (written_early_in_the_next_iteration, (3,), "b[tid] = src[it * 64 + tid]", {"it": 1}),
    (two_loops_sharing_a_buffer, (3,), "s[tid] = src[it * 64 + tid]  # the first", None),
    (barrier_some_warps_reach, (3,), "s[tid] = src[it * 64 + tid]", {"it": 1}),
], ids=lambda v: getattr(v, "name", None))
def test_a_read_unordered_with_a_later_write_is_found_wherever_they_are(k, sizes, text, iteration):
    with pytest.raises(KernelFault, match="data-race"):
        _run(k, *sizes)
    _race(k, text, iteration)


@pytest.mark.parametrize("k, sizes", [(inner_loop_reads, (3, 2)), (read_under_a_runtime_branch, (3, 1))],
                         ids=lambda v: getattr(v, "name", None))
def test_a_race_after_reads_on_some_paths_only_is_never_proved_absent(k, sizes):
    """The reads happen where an inner loop runs or a runtime branch is taken: the race is
    reported where the witness replays, and the kernel is never said to be free of it."""
    with pytest.raises(KernelFault, match="data-race"):
        _run(k, *sizes)
    result = k.verify()
    assert result.verdict in (Verdict.VIOLATED, Verdict.UNKNOWN), result.text()
    assert "data-race" in result.text(), result.text()


@pytest.mark.parametrize("k", [written_after_a_barrier_in_the_next_iteration, barrier_every_thread_reaches],
                         ids=lambda v: v.name)
def test_a_barrier_every_thread_reaches_orders_the_reads_before_it(k):
    _run(k, 3)
    assert k.verify().verdict is Verdict.NOTHING_TO_PROVE
