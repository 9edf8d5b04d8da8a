"""A named barrier orders the shared accesses of the threads that meet it, and nobody else's:
the checker never proves a kernel whose threads outside a named barrier rely on it, nor one
whose named barrier never completes, and the interpreter faults both on the launches it runs."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import language as nv
from argus.dsl import KernelFault, Tensor, i32, kernel, make_local, make_shared, syncthreads, tag, thread_idx, u32
from argus.dsl.machine import using
from argus.verify import Verdict

SCHEDULES = ["round-robin", "random:1"]
FAR = 1 << 20
"""A runtime size past what the interpreter's own launches use: a finding only there is the checker's to find."""


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def run(k: Any, schedule: str, *args: Any) -> None:
    """A launch on the interpreter alone."""
    with using(schedule):
        k[(1,)](np.arange(96, dtype=np.uint32), np.zeros(96, np.uint32), *args)


def outsider_reads(guarded: bool) -> Any:
    """Warps 0-1 fill s and meet named barrier 1 (64 threads); warp 2, which does not meet it,
    reads s (`guarded`: only when n is past `FAR`)."""

    @kernel(block=(96,), verify=False)
    def outsider(x: Tensor[u32, 96], out: Tensor[u32, 96], n: i32):
        tag(x, lambda i: (i,))
        s = make_shared((64,), u32)
        a = make_local((1,), u32)
        b = make_local((1,), u32)
        t = thread_idx.x
        if t < 64:
            s[t] = x[t]
            nv.barrier_sync(1, 64)
        if t >= 64:
            b[0] = x[t - 64]
            if guarded:
                if n > FAR:
                    a[0] = s[t - 64]
                else:
                    a[0] = x[t - 64]
            else:
                a[0] = s[t - 64]
            assert tag(a[...]) == tag(b[...]), "warp 2 copies what warps 0-1 stored"
            out[t] = a[0]

    return outsider


def test_a_write_before_a_named_barrier_is_not_ordered_before_a_thread_outside_it() -> None:
    result = outsider_reads(False).verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "data-race" in result.text() and "the interpreter faults the same way" in result.text()


def test_the_race_is_found_where_the_interpreter_does_not_run_it() -> None:
    result = outsider_reads(True).verify()
    assert result.verdict is not Verdict.PROVED, result.text()
    assert "data-race" in result.text()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_interpreter_faults_a_read_outside_the_named_barrier(schedule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with pytest.raises(KernelFault, match="data-race: thread 64 reads byte 0 of shared#0 and thread 0 wrote it"):
        run(outsider_reads(True), schedule, np.int32(FAR + 1))
    run(outsider_reads(True), schedule, np.int32(1))  # (the other side reads no shared memory)


def outsider_read_then_overwritten(guarded: bool) -> Any:
    """Warp 2 reads s after a block barrier; warps 0-1 meet named barrier 1, then warp 0
    overwrites s (`guarded`: only when n is past `FAR`)."""

    @kernel(block=(96,), verify=False)
    def overwrite(x: Tensor[u32, 96], out: Tensor[u32, 96], n: i32):
        s = make_shared((64,), u32)
        t = thread_idx.x
        if t < 64:
            s[t] = x[t]
        syncthreads()
        if t >= 64:
            out[t] = s[t - 64]
        if t < 64:
            nv.barrier_sync(1, 64)
        if t < 32:
            if guarded:
                if n > FAR:
                    s[t] = x[t] + 1
            else:
                s[t] = x[t] + 1

    return overwrite


@pytest.mark.parametrize("guarded", [False, True], ids=["always", "far"])
def test_a_read_outside_a_named_barrier_is_not_ordered_before_a_write_after_it(guarded: bool) -> None:
    result = outsider_read_then_overwritten(guarded).verify()
    assert result.verdict in (Verdict.VIOLATED, Verdict.UNKNOWN), result.text()
    assert "data-race" in result.text()
    if not guarded:
        assert result.verdict is Verdict.VIOLATED and "the interpreter faults the same way" in result.text()


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_interpreter_faults_a_write_after_a_read_outside_the_named_barrier(
        schedule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with pytest.raises(KernelFault, match="data-race: thread 0 writes byte 0 of shared#0 and thread 64 read it"):
        run(outsider_read_then_overwritten(False), schedule, np.int32(0))


def handoff(reader_warp: int) -> Any:
    """Warp 0 stores x into s; warps 0 and 1 meet named barrier 1 (64 threads) at one site;
    warp `reader_warp` then copies s (warp 2 meets no barrier)."""

    @kernel(block=(96,), verify=False)
    def produce_consume(x: Tensor[u32, 96], out: Tensor[u32, 96]):
        tag(x, lambda i: (i,))
        s = make_shared((32,), u32)
        a = make_local((1,), u32)
        b = make_local((1,), u32)
        t = thread_idx.x
        if t < 64:
            if t < 32:
                s[t] = x[t]
            nv.barrier_sync(1, 64)
        if t >= 32 * reader_warp:
            if t < 32 * reader_warp + 32:
                a[0] = s[t - 32 * reader_warp]
                b[0] = x[t - 32 * reader_warp]
                assert tag(a[...]) == tag(b[...]), "the reader copies what warp 0 stored"
                out[t] = a[0]

    return produce_consume


def test_a_named_barrier_met_by_exactly_the_writer_and_the_reader_proves_the_handoff() -> None:
    result = handoff(1).verify()
    assert result.verdict is Verdict.PROVED, result.text()
    out = np.zeros(96, np.uint32)
    for schedule in SCHEDULES:
        with using(schedule):
            handoff(1)[(1,)](np.arange(96, dtype=np.uint32) + 7, out)
        np.testing.assert_array_equal(out[32:64], np.arange(32) + 7)


def test_the_same_handoff_read_by_a_warp_outside_the_barrier_is_refuted() -> None:
    result = handoff(2).verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "data-race" in result.text()


def test_named_barriers_chain_through_a_thread_both_meet() -> None:
    """Warp 0 writes, warps 0-1 meet barrier 1, then warps 1-2 meet barrier 2: warp 2's read is
    ordered after the write through warp 1 (and warp 3's, which meets neither, is not)."""

    def chained(reader_warp: int) -> Any:
        @kernel(block=(128,), verify=False)
        def chain(x: Tensor[u32, 128], out: Tensor[u32, 128]):
            tag(x, lambda i: (i,))
            s = make_shared((32,), u32)
            a = make_local((1,), u32)
            b = make_local((1,), u32)
            t = thread_idx.x
            if t < 32:
                s[t] = x[t]
            if t < 64:
                nv.barrier_sync(1, 64)
            if t >= 32:
                if t < 96:
                    nv.barrier_sync(2, 64)
            if t >= 32 * reader_warp:
                if t < 32 * reader_warp + 32:
                    a[0] = s[t % 32]
                    b[0] = x[t % 32]
                    assert tag(a[...]) == tag(b[...]), "the reader copies what warp 0 stored"
                    out[t] = a[0]

        return chain

    assert chained(2).verify().verdict is Verdict.PROVED
    assert chained(3).verify().verdict is Verdict.VIOLATED


def reused(second: int) -> Any:
    """Named barrier 1 for warps 0-1 (64 threads), then, after a block barrier, for `second` threads."""

    @kernel(block=(96,), verify=False)
    def reuse(x: Tensor[u32, 96], out: Tensor[u32, 96]):
        s = make_shared((96,), u32)
        t = thread_idx.x
        if t < 64:
            s[t] = x[t]
            nv.barrier_sync(1, 64)
            out[t] = s[63 - t]
        syncthreads()
        if t < second:
            s[t] = x[t] + 1
            nv.barrier_sync(1, second)
            out[t] = s[second - 1 - t]

    return reuse


def test_a_named_barrier_reused_for_another_count_is_refuted_by_both() -> None:
    result = reused(96).verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "barrier" in result.text() and "for 64 threads" in result.text()
    assert reused(64).verify().verdict is Verdict.NOTHING_TO_PROVE


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_interpreter_faults_a_named_barrier_reused_for_another_count(
        schedule: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with pytest.raises(KernelFault, match="barrier: named barrier 1 is used for 64 threads elsewhere and for 96 here"):
        run(reused(96), schedule)


def partly_met(guarded: bool) -> Any:
    """Warp 0 alone meets named barrier 1, which counts all 96 threads (`guarded`: only when n
    is past `FAR`)."""

    @kernel(block=(96,), verify=False)
    def partial(x: Tensor[u32, 96], out: Tensor[u32, 96], n: i32):
        t = thread_idx.x
        if t < 32:
            if guarded:
                if n > FAR:
                    nv.barrier_sync(1, 96)
            else:
                nv.barrier_sync(1, 96)
        out[t] = x[t]

    return partial


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_the_interpreter_finds_a_named_barrier_too_few_threads_meet(schedule: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with pytest.raises(KernelFault, match="deadlock: .*wait for named barrier 1: 32 of 96 threads arrived"):
        run(partly_met(False), schedule, np.int32(0))


@pytest.mark.parametrize("guarded", [False, True], ids=["always", "far"])
def test_the_checker_never_passes_a_named_barrier_too_few_threads_meet(guarded: bool) -> None:
    result = partly_met(guarded).verify()
    assert result.verdict in (Verdict.VIOLATED, Verdict.UNKNOWN), result.text()
    assert "deadlock" in result.text()


def test_more_threads_at_once_than_a_named_barrier_counts_are_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    @kernel(block=(96,), verify=False)
    def crowd(x: Tensor[u32, 96], out: Tensor[u32, 96]):
        s = make_shared((96,), u32)
        t = thread_idx.x
        s[t] = x[t]
        nv.barrier_sync(1, 64)
        out[t] = s[95 - t]

    result = crowd.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "96 threads meet named barrier 1 at once and it counts 64" in result.text()
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with pytest.raises(KernelFault, match="barrier: 96 threads meet named barrier 1 at once and it counts 64"):
        run(crowd, "round-robin")


def meet_apart(count: int) -> Any:
    """Warp 0 stores 64 words and meets named barrier 1 at one site; warp 1 meets it at another
    and reads them. Counting 64 threads, the two warps meet each other (a hand-off whose timing
    the interpreter follows); counting 32, each passes alone and nothing orders the store
    before the reads."""

    @kernel(block=(64,), verify=False)
    def apart(x: Tensor[u32, 64], out: Tensor[u32, 64]):
        s = make_shared((64,), u32)
        t = thread_idx.x
        if t < 32:
            s[t] = x[t]
            s[t + 32] = x[t + 32]
            nv.barrier_sync(1, count)
        else:
            nv.barrier_sync(1, count)
            out[t - 32] = s[t - 32]
            out[t] = s[t]

    return apart


def test_a_named_barrier_met_at_several_sites_is_never_proved_from_the_walk_alone() -> None:
    alone = meet_apart(32).verify()
    assert alone.verdict is Verdict.VIOLATED, alone.text()
    assert "data-race" in alone.text() and "the interpreter faults the same way" in alone.text()
    assert meet_apart(64).verify().verdict is not Verdict.NOTHING_TO_PROVE  # (ordered on the GPU; not by the walk)


def test_threads_of_two_sites_meeting_one_named_barrier_for_more_than_a_warp_are_a_finding() -> None:
    @kernel(block=(128,), verify=False)
    def pairs(x: Tensor[u32, 128], out: Tensor[u32, 128]):
        s = make_shared((128,), u32)
        t = thread_idx.x
        s[t] = x[t]
        if t < 64:
            nv.barrier_sync(1, 64)
            out[t] = s[63 - t]
        else:
            nv.barrier_sync(1, 64)
            out[t] = s[191 - t]

    result = pairs.verify()
    assert result.verdict is not Verdict.PROVED and result.verdict is not Verdict.NOTHING_TO_PROVE, result.text()
