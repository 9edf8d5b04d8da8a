"""The static checker and writes to what an asynchronous product may still read.

A `matmul_async` reads its shared operands at any time until the `matmul_wait` that retires
it; a barrier does not retire it. So any thread's write to those bytes before that wait is a
race, whether or not anything reads the bytes afterwards, and whether or not a barrier comes
between (the interpreter's rule). The checker must find each such write and replay it; it must
still prove the kernels whose writes come after the wait that retires the product (`pending`
counts the newest products a wait leaves running)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.dsl import (
    KernelFault,
    Tensor,
    bf16,
    f32,
    kernel,
    local_tile,
    make_local,
    make_shared,
    matmul_async,
    matmul_wait,
    static_range,
    syncthreads,
    tag,
    thread_idx,
)
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict
from warpgroup_products import MMA, N, operands, products_in_a_loop, stage, store, zero

pytestmark = pytest.mark.usefixtures("no_result_cache")


def _overwrite(where: str, barrier: bool = False) -> Any:
    """Two warpgroups, each starting a product of its 64 rows of A (shared) with B (shared),
    then (after a barrier if `barrier`) each thread writing an element of A, then waiting with
    `matmul_wait(0)`; nothing reads A or B afterwards. `where` the write lands: "own" (the rows
    its own group's product reads), "other" (the other group's rows), "b" (an element of B,
    which both read), "none" (a third shared tile no product reads)."""

    @kernel(block=(256,), verify=False)
    def overwrite(a: Tensor[bf16, 128, N], b: Tensor[bf16, N, N], c: Tensor[f32, 128, N]):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        sA = make_shared((128, N), bf16)
        sB = make_shared((N, N), bf16)
        sC = make_shared((N, N), bf16)
        acc = make_local((MMA.values("c"),), f32)
        t = thread_idx.x
        wg = t // 128
        zero(acc)
        stage(a, b, sA, sB, t, 0)
        syncthreads()
        row = (t % 128) // 2
        matmul_async(local_tile(sA, (64, N), wg), sB, acc, MMA)
        if barrier:
            syncthreads()
        if where == "own":
            sA[row + 64 * wg, t % 2] = bf16(0.0)
        if where == "other":
            sA[row + 64 * (1 - wg), t % 2] = bf16(0.0)
        if where == "b":
            sB[t // N, t % N] = bf16(0.0)
        if where == "none":
            sC[t // N, t % N] = bf16(0.0)
        matmul_wait(0)
        store(c, acc, t)

    return overwrite


def _found(k: Any) -> str:
    """The checker's violation of `k`: a data race, found statically and replayed on the
    interpreter (which faults on the launch too)."""
    with pytest.raises(KernelFault, match="data-race"):
        k[(1,)](*operands())
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "data-race" and "replayed" in witness, result.text()
    return result.text()


@pytest.mark.parametrize("where", ["other", "own", "b"])
def test_a_write_to_operands_nothing_reads_afterwards_is_walked_and_found(where: str):
    """Before the wait, no barrier: the written bytes are never read again, yet the write
    races with the running product."""
    _found(_overwrite(where))


@pytest.mark.parametrize("where", ["other", "own", "b"])
def test_a_barrier_does_not_retire_a_running_product(where: str):
    assert "matmul_wait" in _found(_overwrite(where, barrier=True))


def test_writes_to_a_tile_no_product_reads_are_no_race():
    k = _overwrite("none", barrier=True)
    k[(1,)](*operands())
    assert k.verify().verdict is Verdict.PROVED


def _after_wait(where: str, pending: int, barrier: bool) -> Any:
    """Each group starts a product reading its rows of A and B, then one reading sD (its own
    rows) and B; waits with `matmul_wait(pending)`, then (after a barrier if `barrier`) writes
    `where`: "a" its own rows of A, "d" its own rows of sD."""

    @kernel(block=(256,), verify=False)
    def after_wait(a: Tensor[bf16, 128, N], b: Tensor[bf16, N, N], c: Tensor[f32, 128, N]):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        sA = make_shared((128, N), bf16)
        sD = make_shared((128, N), bf16)
        sB = make_shared((N, N), bf16)
        acc = make_local((MMA.values("c"),), f32)
        t = thread_idx.x
        wg = t // 128
        zero(acc)
        stage(a, b, sA, sB, t, 0)
        for i in static_range(128 * N // 256):
            e = t + 256 * i
            sD[e // N, e % N] = a[e // N, e % N]
        syncthreads()
        row = (t % 128) // 2
        matmul_async(local_tile(sA, (64, N), wg), sB, acc, MMA)
        matmul_async(local_tile(sD, (64, N), wg), sB, acc, MMA)
        matmul_wait(pending)
        if barrier:
            syncthreads()
        if where == "a":
            sA[row + 64 * wg, t % 2] = bf16(0.0)
        if where == "d":
            sD[row + 64 * wg, t % 2] = bf16(0.0)
        matmul_wait(0)
        store(c, acc, t)

    return after_wait


@pytest.mark.parametrize("barrier", [False, True])
def test_a_wait_retires_all_but_the_newest_pending_products(barrier: bool):
    """`matmul_wait(1)` retires the first product: its group may write what it read (the
    other group's product does not read those rows); the second still runs."""
    k = _after_wait("a", 1, barrier)
    k[(1,)](*operands())
    result = k.verify()
    assert result.verdict is Verdict.PROVED, result.text()
    _found(_after_wait("d", 1, barrier))


def test_a_wait_for_every_product_retires_them_all():
    k = _after_wait("d", 0, False)
    k[(1,)](*operands())
    assert k.verify().verdict is Verdict.PROVED


def test_a_write_in_the_next_iteration_of_a_runtime_loop_is_found():
    """A product started at the end of one iteration of a runtime loop is still running when
    the next iteration's stores refill its tile (the wait comes after the loop), barriers
    between or not."""

    next_iteration = products_in_a_loop(started=True)
    with pytest.raises(KernelFault, match="data-race"):
        next_iteration[(1,)](*operands(2 * N), 2 * N)
    result = next_iteration.verify()
    # the race needs a second iteration, which the witness a fixpoint over every iteration finds
    # need not run: no proof, at least
    assert result.verdict is not Verdict.PROVED, result.text()
    assert "data-race" in result.text(), result.text()


def test_check_launch_has_nothing_to_prove_without_assertions():
    """A launch of a kernel that makes no claim proves nothing, as `verify` says of it."""

    @kernel(block=(32,), verify=False)
    def copies(x: Tensor[f32, 32], out: Tensor[f32, 32]):
        out[thread_idx.x] = x[thread_idx.x]

    result = check_launch(copies, (1,), np.zeros(32, np.float32), np.zeros(32, np.float32))
    assert result.verdict is Verdict.NOTHING_TO_PROVE, result.text()
    assert not result
    assert copies.verify().verdict is Verdict.NOTHING_TO_PROVE


def test_check_launch_still_proves_a_kernel_with_an_assertion():
    @kernel(block=(32,), verify=False)
    def staged(q: Tensor[f32, 32], k: Tensor[f32, 32]):
        tag(q, lambda s: (s,))
        tag(k, lambda s: (s,))
        s = make_shared((32,), f32)
        s[thread_idx.x] = q[thread_idx.x]
        syncthreads()
        assert tag(s[...]) == tag(k[...]), "staged rows line up"

    result = check_launch(staged, (1,), np.zeros(32, np.float32), np.zeros(32, np.float32))
    assert result.verdict is Verdict.PROVED, result.text()
