"""Block barriers, loops that warps leave at different iterations, exchanges inside a warp and
products started asynchronously, under every schedule: a correct kernel runs clean and computes
the right answer; a wrong one faults under each schedule, naming both accesses (or the threads
that never arrive) and the schedule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.dsl import (
    KernelFault,
    Tensor,
    bf16,
    f32,
    from_storage,
    i32,
    kernel,
    local_tile,
    make_local,
    make_shared,
    matmul_async,
    matmul_wait,
    static_range,
    syncthreads,
    thread_idx,
    to_storage,
    u32,
    warpgroup_mma_64xNx16,
)
from argus.dsl.machine import using

SCHEDULES = ["round-robin", "delay-async", *(f"random:{seed}" for seed in range(4))]
N = 16
MMA = warpgroup_mma_64xNx16(N, bf16, bf16, f32)


@pytest.fixture(autouse=True)
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Launches run on the interpreter alone: its schedules are what is tested."""
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def products(mode: str) -> Any:
    """One warpgroup loads the first half of A and B, meets at a barrier, then starts two
    products: the first half of A, then the second half, both times B. `mode` says where the
    second half of A is written: "before" the barrier, "after" it (still before the product
    that reads it is started), or "wait1" (before the barrier, and after matmul_wait(1) the
    threads overwrite the second half while its product may still read it)."""

    @kernel(block=(128,), verify=False)
    def two_products(a: Tensor[bf16, 128, N], b: Tensor[bf16, N, N], c: Tensor[f32, 64, N]):
        sA = make_shared((128, N), bf16)
        sB = make_shared((N, N), bf16)
        acc = make_local((MMA.values("c"),), f32)
        t = thread_idx.x
        for v in static_range(MMA.values("c")):
            acc[v] = 0.0
        for i in static_range(64 * N // 128):
            e = t + 128 * i
            sA[e // N, e % N] = a[e // N, e % N]
        for i in static_range(2):
            e = t + 128 * i
            sB[e // N, e % N] = b[e // N, e % N]
        if mode != "after":
            for i in static_range(64 * N // 128):
                e = t + 128 * i
                sA[64 + e // N, e % N] = a[64 + e // N, e % N]
        syncthreads()
        if mode == "after":
            for i in static_range(64 * N // 128):
                e = t + 128 * i
                sA[64 + e // N, e % N] = a[64 + e // N, e % N]
        matmul_async(local_tile(sA, (64, N), 0), sB, acc, MMA)
        matmul_async(local_tile(sA, (64, N), 1), sB, acc, MMA)
        if mode == "wait1":
            matmul_wait(1)
            syncthreads()
            sA[64 + t // 2, t % 2] = bf16(0.0)
        matmul_wait(0)
        for v in static_range(MMA.values("c")):
            idx = MMA.c_layout(t, v)
            c[idx % 64, idx // 64] = acc[v]

    return two_products


def run_products(k: Any, schedule: str) -> None:
    rng = np.random.default_rng(0)
    a = to_storage(rng.standard_normal((128, N)), bf16)
    b = to_storage(rng.standard_normal((N, N)), bf16)
    c = np.zeros((64, N), np.float32)
    with using(schedule):
        k[1](a, b, c)
    A, B = (from_storage(x, bf16).astype(np.float64) for x in (a, b))
    np.testing.assert_allclose(c, (A[:64] + A[64:]) @ B.T, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_products_read_what_their_warpgroup_wrote_before_a_barrier(schedule: str) -> None:
    run_products(products("before"), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_product_does_not_see_its_warpgroups_writes_since_the_last_barrier(schedule: str) -> None:
    """The second half of A is written after the barrier; starting the first product published
    the warps' clocks, which the second product took as the point up to which it sees their
    writes."""
    with pytest.raises(KernelFault, match=rf"data-race: the matrix product of threads 0–127 reads byte 2048 of "
                                          rf"shared#0 and thread 0 wrote it at .*, with nothing ordering the two "
                                          rf"\(schedule {schedule}\)"):
        run_products(products("after"), schedule)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_overwriting_the_operand_of_a_product_matmul_wait_1_left_running_races(schedule: str) -> None:
    with pytest.raises(KernelFault, match=rf"data-race: .*byte 2048 of shared#0.*schedule {schedule}"):
        run_products(products("wait1"), schedule)


@kernel(block=(32,), verify=False)
def rotate(x: Tensor[u32, 32], out: Tensor[u32, 32]):
    """Lanes of one warp hand words to each other through shared memory, with no barrier."""
    s = make_shared((32,), u32)
    t = thread_idx.x
    s[t] = x[t]
    out[t] = s[(t + 1) % 32]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_lanes_of_a_warp_exchanging_through_shared_memory_need_a_barrier(schedule: str) -> None:
    with pytest.raises(KernelFault, match=rf"data-race: thread 0 reads byte 4 of shared#0 and thread 1 wrote it at "
                                          rf".*schedule {schedule}"):
        with using(schedule):
            rotate[1](np.arange(32, dtype=np.uint32), np.zeros(32, np.uint32))


def uneven(sync_inside: bool) -> Any:
    """Warp 0 runs n0 iterations, warp 1 n1, each writing its words every iteration; the block
    then meets at syncthreads() (or, with `sync_inside`, only in the first iteration) and reads
    the other warp's words."""

    @kernel(block=(64,), verify=False)
    def loops(x: Tensor[u32, 64], out: Tensor[u32, 64], n0: i32, n1: i32):
        s = make_shared((64,), u32)
        t = thread_idx.x
        n = n0 if t < 32 else n1
        for i in range(n):
            s[t] = x[t] + u32(i)
            if sync_inside and i == 0:
                syncthreads()
        if not sync_inside:
            syncthreads()
        out[t] = s[63 - t]

    return loops


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_warps_leaving_a_loop_at_different_iterations_meet_at_the_barrier_after_it(schedule: str) -> None:
    x = np.arange(64, dtype=np.uint32) * 3
    out = np.zeros(64, np.uint32)
    with using(schedule):
        uneven(False)[1](x, out, 2, 5)
    last = x + np.where(np.arange(64) < 32, 1, 4).astype(np.uint32)
    np.testing.assert_array_equal(out, last[63 - np.arange(64)])
    with pytest.raises(KernelFault, match=rf"data-race: thread 0 reads byte 252 of shared#0 and thread 63 wrote it "
                                          rf".*schedule {schedule}"):
        with using(schedule):
            uneven(True)[1](x, out, 2, 5)


@kernel(block=(64,), verify=False)
def barrier_per_iteration(x: Tensor[u32, 64], out: Tensor[u32, 64], n0: i32, n1: i32):
    t = thread_idx.x
    n = n0 if t < 32 else n1
    for i in range(n):
        syncthreads()
    out[t] = x[t]


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_a_barrier_in_a_loop_warps_run_different_times_names_who_never_arrives(schedule: str) -> None:
    with pytest.raises(KernelFault, match=rf"divergent-barrier: no thread can go on: threads 32–63 at .* wait for the "
                                          rf"rest of the block at syncthreads\(\): threads \[0, 1, 2, 3, 4, 5, 6, 7\] "
                                          rf"\.\.\. \(32 of 64\) never get there \(schedule {schedule}\)"):
        with using(schedule):
            barrier_per_iteration[1](np.arange(64, dtype=np.uint32), np.zeros(64, np.uint32), 2, 3)
