"""A copy landing on shared bytes another thread read (write after read by an asynchronous
agent): the landing is ordered after what its issuer's warp had seen when it issued the copy,
and lanes share their warp's clock, so another lane's read is ordered before it only by a sync
of the warp between that read and the issue — however late the copy lands. The interpreter
faults naming both accesses under every schedule, the checker's witness replays, and the
version with a barrier between the read and the issue runs clean."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import language as nv
from argus.dsl import KernelFault, Tensor, kernel, make_shared, syncthreads, thread_idx, u32, u64
from argus.dsl.machine import using
from argus.verify import Verdict

SCHEDULES = ["round-robin", "delay-async", "random:1", "random:2"]


@pytest.fixture(autouse=True)
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Launches run on the interpreter alone; the checker is asked explicitly."""
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def cp_async_over_neighbour(ordered: str) -> Any:
    """Each thread of one warp reads its neighbour's word s[t+1], then copies x[32+t] into its own
    s[t] with cp.async. `ordered`: "before" puts a barrier between the reads and the issue (right),
    "after" one between the issue and the wait (too late: the copy may land at once), "" none."""

    @kernel(block=(32,))
    def shift(x: Tensor[u32, 64], out: Tensor[u32, 32]):
        s = make_shared((32,), u32)
        t = thread_idx.x
        s[t] = x[t]
        syncthreads()
        v = s[(t + 1) % 32]
        if ordered == "before":
            syncthreads()
        nv.cp_async(s, t, x, 32 + t)
        nv.cp_async_commit()
        if ordered == "after":
            syncthreads()
        nv.cp_async_wait(0)
        syncthreads()
        out[t] = v + s[t]

    return shift


def bulk_copy_over_reads(ordered: bool) -> Any:
    """Each lane reads a word, then lane 0 alone loads the tile again with a bulk copy; every lane
    waits for it. `ordered`: a barrier between the reads and the issue."""

    @kernel(block=(32,))
    def reload(x: Tensor[u32, 64], out: Tensor[u32, 32]):
        s = make_shared((32,), u32)
        bars = make_shared((1,), u64)
        t = thread_idx.x
        if t == 0:
            nv.mbarrier_init(bars, 0, 1)
        s[t] = x[t]
        syncthreads()
        v = s[31 - t]
        if ordered:
            syncthreads()
        if t == 0:
            nv.mbarrier_arrive_expect_tx(bars, 0, 128)
            nv.tma_load(s, x, (32,), bars, 0)
        nv.mbarrier_wait(bars, 0, 0)
        out[t] = v + s[t]

    return reload


def line_of(code: str) -> int:
    """The line of this file that holds `code` (the read a race report names)."""
    with open(__file__) as source:
        return next(n for n, line in enumerate(source, 1) if code in line)


def run(k: Any, schedule: str) -> np.ndarray:
    out = np.zeros(32, np.uint32)
    with using(schedule):
        k[1](np.arange(64, dtype=np.uint32), out)
    return out


def race(writer: str, read_at: str, schedule: str) -> str:
    """The report of `writer`'s landing on byte 0, which thread 31 read at the line holding `read_at`."""
    return (rf"data-race: {writer} writes byte 0 of shared#0 and thread 31 read it at .*test_async_war.py:"
            rf"{line_of(read_at)}:\d+, with nothing ordering the two \(schedule {schedule}\)")


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_cp_async_landing_on_a_word_another_lane_read_races(schedule: str) -> None:
    for ordered in ("", "after"):
        with pytest.raises(KernelFault, match=race("the cp.async copy of thread 0", "v = s[(t + 1) % 32]", schedule)):
            run(cp_async_over_neighbour(ordered), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_barrier_between_the_reads_and_the_cp_async_issue_orders_them(schedule: str) -> None:
    t = np.arange(32)
    np.testing.assert_array_equal(run(cp_async_over_neighbour("before"), schedule), (t + 1) % 32 + 32 + t)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_bulk_copy_landing_on_words_other_lanes_read_races(schedule: str) -> None:
    with pytest.raises(KernelFault, match=race("the bulk copy issued by thread 0", "v = s[31 - t]", schedule)):
        run(bulk_copy_over_reads(False), schedule)
    t = np.arange(32)
    np.testing.assert_array_equal(run(bulk_copy_over_reads(True), schedule), 31 - t + 32 + t)


def test_the_checker_reports_the_cp_async_race_with_a_witness_that_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker found this race before the interpreter did: its witness did not replay, and
    the verdict was unknown."""
    monkeypatch.setenv("ARGUS_VERIFY", "1")
    wrong = cp_async_over_neighbour("").verify()
    assert wrong.verdict is Verdict.VIOLATED, wrong.text()
    assert wrong.witnesses[0]["kind"] == "data-race", wrong.text()
    assert "the interpreter faults the same way" in wrong.text(), wrong.text()
    right = cp_async_over_neighbour("before").verify()
    assert right.verdict is Verdict.NOTHING_TO_PROVE, right.text()
