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
