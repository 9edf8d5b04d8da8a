"""Pipelines whose timing is wrong, yet close to one the protocol's model
(`argus.backends.nvptx.protocol`) proves: each is an edit of an example at a small tile, or a
small pipeline of 32-word stages; the interpreter shows its fault under every kind of schedule,
and the model must not say proved (each was proved before the model was fixed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import language as nv
from argus.backends.nvptx import protocol
from argus.dsl import (
    Kernel,
    KernelFault,
    TagAssertionError,
    Tensor,
    assume,
    bf16,
    from_storage,
    kernel,
    make_shared,
    static_range,
    syncthreads,
    thread_idx,
    to_storage,
    u32,
    u64,
)
from argus.dsl.check import Preparation, TagAnalysis
from argus.dsl.check.verification import _tightest
from argus.dsl.machine import using
from argus.verify.solvers import solver

from .conftest import example_variant
from .test_protocol import timing

TILE = (128, 16, 16, 2)  # BM, BN, BK, STAGES: what `timing` builds
SCHEDULES = ("round-robin", "delay-async", "random:1")
RETIRE = "matmul_wait(PRODUCTS)  # the previous stage's products have finished, this stage's run on"
MULTIPLY = "multiply(sA, sB, s, acc, consumer)\n"

WRONG = {  # an edit of an example, the K it shows at, and what the interpreter says of it
    # stage 1's products are not retired before stage 0 is handed back in the first round: the
    # retiring wait skips the first iteration, so it retires nothing there
    "retire-skipped-in-the-first-round": ("gemm_ws", ((RETIRE, "if s == 0 or k0 > 0:\n"
                                                               "                        matmul_wait(PRODUCTS)"),),
                                          64, "data-race"),
    # a second product per stage from the second round on, and a wait that leaves two running:
    # in the first round only one was started, so the previous stage's product still runs
    "wait-counts-a-product-the-first-round-does-not-start": (
        "gemm_ws", ((MULTIPLY, MULTIPLY + "                    if k0 > 0:\n"
                                          "                        multiply(sA, sB, s, acc, consumer)\n"),
                    (RETIRE, "matmul_wait(PRODUCTS + 1)")), 64, "data-race"),
    # the consumers wait on a view of the barriers whose layout puts index 1 on barrier 2, which
    # no thread initialized: a barrier is where its view's layout puts it, not its index
    "wait-through-a-view-that-moves-the-barrier": (
        "gemm_ws", (("from gemm_tma import helpers, pipeline",
                     "from gemm_tma import helpers, pipeline\nfrom argus.layout import Layout"),
                    ("full = make_shared((STAGES,), u64)  # a stage's slices have landed",
                     "full = make_shared((2 * STAGES,), u64)\n"
                     "        moved = full.view(Layout((2, STAGES), (STAGES, 1)), u64)"),
                    ("nv.mbarrier_wait(full, s, phase)", "nv.mbarrier_wait(moved, s, phase)")),
        64, "uninitialized-barrier"),
}


@pytest.fixture(autouse=True)
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Launching runs no check (the test calls the model itself) and keeps no verdict."""
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def outcome(module: Any, k: int, schedule: str) -> str:
    """What the interpreter says of a TILE-sized launch of the variant with K = k under
    `schedule`: its fault, "wrong C", or "" where C is the product."""
    bm, bn, _, _ = TILE
    rng = np.random.default_rng(1)
    a, b = (to_storage(rng.standard_normal((rows, k)), bf16) for rows in (bm, bn))
    c = to_storage(np.zeros((bm, bn)), bf16)
    expected = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    try:
        with using(schedule):
            module.build(*TILE)[(1, 1)](a, b, c, bm, bn, k)
    except (KernelFault, TagAssertionError) as err:
        return str(err)
    return "" if np.allclose(from_storage(c, bf16), expected, atol=0.1, rtol=1e-2) else "wrong C"


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_wrong_pipeline_fails_on_the_interpreter_and_is_not_proved(tmp_path: Path, name: str) -> None:
    example, edits, k, shown = WRONG[name]
    module = example_variant(tmp_path, example, *edits)
    for schedule in SCHEDULES:
        assert shown in outcome(module, k, schedule), schedule
    verdict = timing(module)
    assert not verdict.proved, "the model proves a pipeline the interpreter shows wrong"


def pipe(synced: bool = True, announce_first: bool = False, sync_between: bool = False,
         sync_in_consumer: bool = False, one_round_more: bool = False) -> Kernel:
    """A two-stage pipeline of 32 words a stage: thread 0 copies x in (waiting for a stage's
    "empty" barrier, announcing its bytes on its "full" one), warp 1 waits for "full", copies the
    stage to `out` and hands it back on "empty". `synced`: a syncthreads() orders the barriers'
    initialization before the other warp uses them. The mistakes: `announce_first`, thread 0
    announces a stage's bytes before it waits for the stage's release in this round, and copies
    after; `sync_between`, a syncthreads() between the producer's loop and the consumers' one;
    `sync_in_consumer`, a syncthreads() in the consumers' loop; `one_round_more`, thread 0 copies
    a round more than the consumers take, and no thread waits for it to land."""

    @kernel(block=(64,), verify=False)
    def pipeline(x: Tensor[u32, "K"], out: Tensor[u32, "K"], K: int):
        assume(K % 64 == 0)
        s = make_shared((32, 2), u32)
        full = make_shared((2,), u64)
        empty = make_shared((2,), u64)
        t = thread_idx.x
        if t == 0:
            for i in static_range(2):
                nv.mbarrier_init(full, i, 1)
                nv.mbarrier_init(empty, i, 32)
        if synced:
            syncthreads()
        if t == 0:
            for k0 in range(0, K + 64 if one_round_more else K, 64):
                for i in static_range(2):
                    if announce_first:
                        nv.mbarrier_arrive_expect_tx(full, i, 128)
                        nv.mbarrier_wait(empty, i, (k0 // 64) % 2)
                    else:
                        nv.mbarrier_wait(empty, i, (k0 // 64) % 2 ^ 1)
                        nv.mbarrier_arrive_expect_tx(full, i, 128)
                    nv.tma_load(s[:, i], x, (k0 + 32 * i,), full, i)
        if sync_between:
            syncthreads()
        if t >= 32:
            for k0 in range(0, K, 64):
                for i in static_range(2):
                    nv.mbarrier_wait(full, i, (k0 // 64) % 2)
                    out[k0 + 32 * i + t - 32] = s[t - 32, i]
                    nv.mbarrier_arrive(empty, i)
                    if sync_in_consumer:
                        syncthreads()

    return pipeline


def kernel_timing(k: Kernel) -> protocol.Verdict:
    """The protocol's verdict on kernel `k`."""
    compiled = k.compile()
    analysis = TagAnalysis(compiled.op, compiled.locations, None, Preparation(compiled.op, compiled.locations)).run()
    recorder = analysis.walk.extensions[protocol.KEY]
    return recorder.prove(analysis.walk, solver(None), _tightest(analysis.facts), 10_000)  # type: ignore[no-any-return]


def piped(k: Kernel, words: int, schedule: str) -> str:
    """What the interpreter says of `k` copying `words` words under `schedule`: its fault,
    "wrong out", or "" where out is x."""
    x = np.arange(words, dtype=np.uint32) * 7 + 1
    out = np.zeros(words, np.uint32)
    try:
        with using(schedule):
            k[1](x, out, words)
    except KernelFault as err:
        return str(err)
    return "" if (out == x).all() else "wrong out"


@kernel(block=(96,), verify=False)
def two_producers(x: Tensor[u32, "K"], out: Tensor[u32, "K"], K: int):
    """Threads 0 and 32 each copy 32 words into the same tile, each counted on a barrier of its
    own; warp 2 waits for both and reads the tile: the two copies land in either order."""
    assume(K == 64)
    s = make_shared((32,), u32)
    full = make_shared((2,), u64)
    t = thread_idx.x
    if t == 0:
        for i in static_range(2):
            nv.mbarrier_init(full, i, 1)
    syncthreads()
    if t == 0:
        nv.mbarrier_arrive_expect_tx(full, 0, 128)
        nv.tma_load(s, x, (0,), full, 0)
    if t == 32:
        nv.mbarrier_arrive_expect_tx(full, 1, 128)
        nv.tma_load(s, x, (32,), full, 1)
    if t >= 64:
        nv.mbarrier_wait(full, 0, 0)
        nv.mbarrier_wait(full, 1, 0)
        out[t - 64] = s[t - 64]


@kernel(block=(64,), verify=False)
def one_phase_twice(x: Tensor[u32, "K"], out: Tensor[u32, "K"], K: int):
    """Thread 0 announces 256 bytes and copies 32 words twice into the same tile: both copies
    count on one phase, and land in either order."""
    assume(K == 64)
    s = make_shared((32,), u32)
    bars = make_shared((1,), u64)
    t = thread_idx.x
    if t == 0:
        nv.mbarrier_init(bars, 0, 1)
    syncthreads()
    if t == 0:
        nv.mbarrier_arrive_expect_tx(bars, 0, 256)
        nv.tma_load(s, x, (0,), bars, 0)
        nv.tma_load(s, x, (32,), bars, 0)
    if t >= 32:
        nv.mbarrier_wait(bars, 0, 0)
        out[t - 32] = s[t - 32]


WRONG_PIPES = {  # the kernel, the words it copies, and what the interpreter says of it
    # no syncthreads() between thread 0's initialization of the barriers and warp 1's waits
    "barriers-used-by-other-warps-before-a-block-barrier": (lambda: pipe(synced=False), 256,
                                                            "uses the barrier at offset 0 and thread 0 initialized it"),
    # the phase of "full" completes once the copy lands, and thread 0 copies only after a wait
    # for the consumers' release of this round, which comes after they waited for that phase
    "bytes-announced-before-a-wait-that-needs-them": (lambda: pipe(announce_first=True), 256, "deadlock"),
    # thread 0 waits for the consumers' first release before the syncthreads(), which they meet
    # only before their loop
    "block-barrier-between-producer-and-consumers": (lambda: pipe(sync_between=True), 256, "divergent-barrier"),
    # a syncthreads() only the consumers meet
    "block-barrier-in-the-consumers-loop": (lambda: pipe(sync_in_consumer=True), 256, "divergent-barrier"),
    "two-producers-copy-into-the-same-bytes-on-two-barriers": (lambda: two_producers, 64, "data-race: the bulk copy"),
    "two-copies-into-the-same-bytes-in-one-phase": (lambda: one_phase_twice, 64, "data-race: the bulk copy"),
}


def test_the_pipe_runs_clean_and_is_proved() -> None:
    k = pipe()
    for schedule in SCHEDULES:
        assert piped(k, 256, schedule) == "", schedule
    verdict = kernel_timing(k)
    assert verdict.proved, verdict.why


@pytest.mark.parametrize("name", sorted(WRONG_PIPES))
def test_each_wrong_pipe_fails_on_the_interpreter_and_is_not_proved(name: str) -> None:
    make, words, shown = WRONG_PIPES[name]
    k = make()
    for schedule in SCHEDULES:
        assert shown in piped(k, words, schedule), schedule
    assert not kernel_timing(k).proved, "the model proves a pipeline the interpreter shows wrong"


def test_a_copy_no_thread_waits_for_is_not_proved() -> None:
    """A block may not exit while a bulk copy still lands in its shared memory; the interpreter
    does not look for it, the model must: no thread waits for the extra round's phases."""
    k = pipe(one_round_more=True)
    assert piped(k, 256, "round-robin") == ""
    verdict = kernel_timing(k)
    assert not verdict.proved and "may still be landing when the block exits" in verdict.why, verdict.why
