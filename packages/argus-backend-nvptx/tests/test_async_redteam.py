"""Memory barriers, bulk copies, cp.async and named barriers under every schedule: a correct
hand-off runs clean and computes the right answer whatever the interleaving; a wrong one faults
under every schedule with a message that names both accesses (or what the waiters wait for)
and the schedule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import language as nv
from argus.dsl import (
    KernelFault,
    Tensor,
    assume,
    block_idx,
    kernel,
    make_shared,
    syncthreads,
    thread_idx,
    u32,
    u64,
)
from argus.dsl.machine import using
from argus.verify import Verdict

SCHEDULES = ["round-robin", "delay-async", *(f"random:{seed}" for seed in range(6))]


@pytest.fixture(autouse=True)
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Launches run on the interpreter alone: its schedules are what is tested."""
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def producer_consumer(announced: int, parity: int = 0, synced: bool = True) -> Any:
    """Thread 0 initializes a barrier and (`synced`) the block meets at syncthreads(); thread 0
    loads 64 words with one bulk copy counted on the barrier, announcing `announced` bytes;
    warp 1 waits for the phase of `parity` and copies the words out."""

    @kernel(block=(64,), verify=False)
    def handoff(x: Tensor[u32, 64], out: Tensor[u32, 64]):
        s = make_shared((64,), u32)
        bars = make_shared((1,), u64)
        t = thread_idx.x
        if t == 0:
            nv.mbarrier_init(bars, 0, 1)
        if synced:
            syncthreads()
        if t == 0:
            nv.mbarrier_arrive_expect_tx(bars, 0, announced)
            nv.tma_load(s, x, (0,), bars, 0)
        if t >= 32:
            nv.mbarrier_wait(bars, 0, parity)
            out[t - 32] = s[t - 32]
            out[t] = s[t]

    return handoff


def launch(k: Any, schedule: str, words: int = 64) -> np.ndarray:
    out = np.zeros(64, np.uint32)
    with using(schedule):
        k[1](np.arange(words, dtype=np.uint32) * 7, out)
    return out


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_right_handoff_runs_clean_under_every_schedule(schedule: str) -> None:
    np.testing.assert_array_equal(launch(producer_consumer(256), schedule), np.arange(64) * 7)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_bytes_announced_short_are_read_before_they_land_under_every_schedule(schedule: str) -> None:
    """The phase completes after 128 of the copy's 256 bytes; the rest lands afterwards, not
    ordered before the consumers' reads. Round-robin lands the rest at once, before the reads:
    the rest was stamped as part of the completed phase, so the reads looked ordered after it."""
    with pytest.raises(KernelFault, match=rf"(data-race: thread 32 reads byte 128 of shared#0 and the copies counted "
                                          rf"on the barrier at offset 0 wrote it|uninitialized-read: thread 32 reads "
                                          rf"shared tile).*schedule {schedule}"):
        launch(producer_consumer(128), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_bytes_announced_long_deadlock_naming_what_is_missing(schedule: str) -> None:
    with pytest.raises(KernelFault, match=rf"deadlock: no thread can go on: threads 32–63 at .* wait for the phase of "
                                          rf"parity 0 of the barrier at offset 0, which cannot complete: 0 of 1 "
                                          rf"arrival\(s\) missing, 256 transaction byte\(s\) still expected.*"
                                          rf"\(schedule {schedule}\)"):
        launch(producer_consumer(512), schedule)


@kernel(block=(64,), verify=False)
def two_copies_one_announced(x: Tensor[u32, 64], out: Tensor[u32, 64]):
    """Two copies counted on one barrier whose phase announces the bytes of one: whichever lands
    first completes the phase, the other lands after it."""
    s1 = make_shared((32,), u32)
    s2 = make_shared((32,), u32)
    bars = make_shared((1,), u64)
    t = thread_idx.x
    if t == 0:
        nv.mbarrier_init(bars, 0, 1)
    syncthreads()
    if t == 0:
        nv.mbarrier_arrive_expect_tx(bars, 0, 128)
        nv.tma_load(s1, x, (0,), bars, 0)
        nv.tma_load(s2, x, (32,), bars, 0)
    if t >= 32:
        nv.mbarrier_wait(bars, 0, 0)
        out[t - 32] = s1[t - 32]
        out[t] = s2[t - 32]


@pytest.mark.parametrize("schedule", [*SCHEDULES, "random:7", "random:15"])
def test_a_copy_issued_first_that_lands_after_the_phase_is_not_covered_by_it(schedule: str) -> None:
    """Under random:7 and random:15 the second copy completes the phase and the first lands just
    after, before the reads: its bytes carried an older tick of the barrier's stream than the
    completing copy's, so the phase seemed to cover them."""
    with pytest.raises(KernelFault, match=rf"(data-race|uninitialized-read).*schedule {schedule}"):
        launch(two_copies_one_announced, schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_second_copy_into_a_tile_still_landing_races_with_the_first(schedule: str) -> None:
    """Two copies into the same tile, both announced, neither waited for before the other:
    whatever lands second writes bytes the first wrote, unordered (or a reader meets them)."""

    @kernel(block=(64,), verify=False)
    def twice(x: Tensor[u32, 128], out: Tensor[u32, 64]):
        s = make_shared((64,), u32)
        bars = make_shared((1,), u64)
        t = thread_idx.x
        if t == 0:
            nv.mbarrier_init(bars, 0, 1)
        syncthreads()
        if t == 0:
            nv.mbarrier_arrive_expect_tx(bars, 0, 512)
            nv.tma_load(s, x, (0,), bars, 0)
            nv.tma_load(s, x, (64,), bars, 0)
        if t >= 32:
            nv.mbarrier_wait(bars, 0, 0)
            out[t - 32] = s[t - 32]
            out[t] = s[t]

    with pytest.raises(KernelFault, match=rf"data-race: the bulk copy issued by thread 0 writes byte \d+ of shared#0 "
                                          rf"and the copies counted on the barrier at offset 0 wrote it.*"
                                          rf"schedule {schedule}"):
        launch(twice, schedule, words=128)


def cp_async_stage(wait: int, second: bool) -> Any:
    """Each thread of two warps copies two words (two groups), waits until `wait` groups are in
    flight, meets the block at a barrier and reads a word another warp's thread copied, from the
    first or the `second` group."""

    @kernel(block=(64,), verify=False)
    def stage(x: Tensor[u32, 128], out: Tensor[u32, 64]):
        s = make_shared((128,), u32)
        t = thread_idx.x
        nv.cp_async(s, t, x, t)
        nv.cp_async_commit()
        nv.cp_async(s, 64 + t, x, 64 + t)
        nv.cp_async_commit()
        nv.cp_async_wait(wait)
        syncthreads()
        out[t] = s[127 - t] if second else s[63 - t]

    return stage


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_cp_async_groups_waited_for_are_seen_by_every_warp_after_a_barrier(schedule: str) -> None:
    expected = np.arange(128, dtype=np.uint32)
    with using(schedule):
        for wait, second in ((0, True), (1, False)):
            out = np.zeros(64, np.uint32)
            cp_async_stage(wait, second)[1](expected.copy(), out)
            np.testing.assert_array_equal(out, expected[127 - np.arange(64)] if second else expected[63 - np.arange(64)])


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_cp_async_reading_a_group_still_in_flight_faults_under_every_schedule(schedule: str) -> None:
    with pytest.raises(KernelFault, match=rf"(data-race: thread 0 reads byte 508 of shared#0 and the cp.async copy of "
                                          rf"thread 63 wrote it|uninitialized-read).*schedule {schedule}"):
        with using(schedule):
            cp_async_stage(1, True)[1](np.arange(128, dtype=np.uint32), np.zeros(64, np.uint32))


def named(first: int, second: int) -> Any:
    """Warp 0 fills 64 words and meets named barrier 1 counting `first` threads; warp 1 meets it
    counting `second` and reads them."""

    @kernel(block=(64,), verify=False)
    def meet(x: Tensor[u32, 64], out: Tensor[u32, 64]):
        s = make_shared((64,), u32)
        t = thread_idx.x
        if t < 32:
            s[t] = x[t]
            s[t + 32] = x[t + 32]
            nv.barrier_sync(1, first)
        else:
            nv.barrier_sync(1, second)
            out[t - 32] = s[t - 32]
            out[t] = s[t]

    return meet


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_named_barriers_order_what_they_count_and_nothing_else(schedule: str) -> None:
    x = np.arange(64, dtype=np.uint32) + 5
    out = np.zeros(64, np.uint32)
    with using(schedule):
        named(64, 64)[1](x, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(KernelFault, match=rf"data-race: thread 32 reads byte 0 of shared#0 and thread 0 wrote it"
                                          rf".*schedule {schedule}"):
        with using(schedule):
            named(32, 32)[1](x, out)  # each warp passes alone: nothing orders the fill before the reads
    with pytest.raises(KernelFault, match=r"barrier: named barrier 1 is used for (64|32) threads elsewhere and for "
                                          r"(32|64) here"):
        with using(schedule):
            named(64, 32)[1](x, out)


def blocked(announced: int = 256, least: int = 0, skipping: int = -1) -> Any:
    """The hand-off above on a tensor of n words (`least` or more, an assumption), 64 a block;
    warp 1 of block `skipping` (-1: none) reads without waiting."""

    @kernel(block=(64,))
    def handoff(x: Tensor[u32, "n"], out: Tensor[u32, "n"]):
        if least > 0:
            assume(x.shape[0] >= least)
        assume(x.shape[0] % 64 == 0)
        s = make_shared((64,), u32)
        bars = make_shared((1,), u64)
        t = thread_idx.x
        base = block_idx.x * 64
        if t == 0:
            nv.mbarrier_init(bars, 0, 1)
        syncthreads()
        if t == 0:
            nv.mbarrier_arrive_expect_tx(bars, 0, announced)
            nv.tma_load(s, x, (base,), bars, 0)
        if t >= 32:
            if block_idx.x != skipping:
                nv.mbarrier_wait(bars, 0, 0)
            out[base + t - 32] = s[t - 32]
            out[base + t] = s[t]

    return handoff


def test_verify_runs_the_handoffs_of_a_kernel_assumed_larger_than_usual(monkeypatch: pytest.MonkeyPatch) -> None:
    """No launch of a few thousand words satisfies n >= 100000: verify used to run nothing and
    still say that the hand-offs had run without fault under three schedules."""
    monkeypatch.setenv("ARGUS_VERIFY", "1")
    right = blocked(256, 100_000).verify()
    assert right.verdict is Verdict.NOTHING_TO_PROVE, right.text()
    assert "ran without fault on the interpreter under schedules round-robin, delay-async, random:1" in right.text()
    wrong = blocked(128, 100_000).verify()
    assert wrong.verdict is Verdict.VIOLATED, wrong.text()
    assert "data-race" in wrong.text() and "under schedule round-robin" in wrong.text()


def test_verify_does_not_vouch_for_handoffs_it_could_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "1")
    result = blocked(128, 1 << 27).verify()  # 512 MiB a tensor: more than a replay allocates
    assert result.verdict is Verdict.UNKNOWN, result.text()
    assert "could not run it under any schedule" in result.text() and "bytes" in result.text(), result.text()


@kernel(block=(32,), verify=False)
def elected_wait(x: Tensor[u32, 32], out: Tensor[u32, 32]):
    """Every lane writes a word; lane 0 alone arrives, waits on a memory barrier and reads
    lane 5's word: nothing synchronized the warp's lanes."""
    s = make_shared((32,), u32)
    bars = make_shared((1,), u64)
    t = thread_idx.x
    if t == 0:
        nv.mbarrier_init(bars, 0, 1)
    syncthreads()
    s[t] = x[t]
    if t == 0:
        nv.mbarrier_arrive(bars, 0)
        nv.mbarrier_wait(bars, 0, 0)
        out[0] = s[5]


@pytest.mark.parametrize("schedule", SCHEDULES[:3])
def test_a_wait_by_one_lane_does_not_synchronize_its_warp(schedule: str) -> None:
    with pytest.raises(KernelFault, match=rf"data-race: thread 0 reads byte 20 of shared#0 and thread 5 wrote it at "
                                          rf".*schedule {schedule}"):
        with using(schedule):
            elected_wait[1](np.arange(32, dtype=np.uint32), np.zeros(32, np.uint32))


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_another_warp_may_use_a_barrier_only_after_a_syncthreads_follows_its_init(schedule: str) -> None:
    """Warp 1 waits on the barrier with nothing ordering thread 0's mbarrier_init before: the
    warps meeting after `if t == 0` made every schedule run the init first, and the wait passed."""
    np.testing.assert_array_equal(launch(producer_consumer(256), schedule), np.arange(64) * 7)
    with pytest.raises(KernelFault, match=rf"data-race: thread 32 uses the barrier at offset 0 and thread 0 "
                                          rf"initialized it at .*:\d+:\d+, with nothing ordering the two \(schedule "
                                          rf"{schedule}\); other warps may use a barrier once a syncthreads\(\) "
                                          rf"follows its mbarrier_init"):
        launch(producer_consumer(256, synced=False), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_wait_with_the_wrong_parity_faults_under_every_schedule(schedule: str) -> None:
    """Parity 1 on a fresh barrier passes at once while phase 0 is incomplete (the reads then
    meet the copy), and waits forever once phase 0 has completed: the deadlock says which
    parity the completed phase had."""
    with pytest.raises(KernelFault, match=rf"(deadlock: .*wait for the phase of parity 1 of the barrier at offset 0, "
                                          rf"which cannot complete: 1 of 1 arrival\(s\) missing, 0 transaction "
                                          rf"byte\(s\) still expected, 0 copies in flight; 1 of its phases completed, "
                                          rf"the last of parity 0 \(a wait for that one passes parity 0\)"
                                          rf"|uninitialized-read|data-race).*schedule {schedule}"):
        launch(producer_consumer(256, parity=1), schedule)
    if schedule == "round-robin":
        with pytest.raises(KernelFault, match="the last of parity 0"):
            launch(producer_consumer(256, parity=1), schedule)


def test_verify_runs_blocks_besides_the_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only block 1 skips the wait: verify ran block 0 of a one-block grid and said the hand-offs
    ran without fault."""
    monkeypatch.setenv("ARGUS_VERIFY", "1")
    right = blocked().verify()
    assert right.verdict is Verdict.NOTHING_TO_PROVE, right.text()
    assert "round-robin in block (1, 0, 0)" in right.text(), right.text()
    wrong = blocked(skipping=1).verify()
    assert wrong.verdict is Verdict.VIOLATED, wrong.text()
    assert wrong.witnesses[0]["block"] == (1, 0, 0) and wrong.witnesses[0]["kind"] == "data-race", wrong.text()
    assert "under schedule round-robin, in block (1, 0, 0) of grid" in wrong.text(), wrong.text()
