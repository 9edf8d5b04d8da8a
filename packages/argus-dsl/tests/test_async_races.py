"""Races with what matrix products read from shared memory: a product's shared operands count
as read by its whole group once it has finished (at once for `matmul`, at the `matmul_wait`
that finishes it for `matmul_async`), so another thread's write needs a barrier after that;
while it may still run, no thread may write them at all."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.dsl import (
    KernelFault,
    Tensor,
    bf16,
    f32,
    from_storage,
    kernel,
    local_tile,
    make_local,
    make_shared,
    matmul,
    matmul_async,
    matmul_wait,
    syncthreads,
    tag,
    thread_idx,
)
from argus.verify import Verdict
from warpgroup_products import MMA, N, operands, products_in_a_loop, stage, store, zero

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

pytestmark = pytest.mark.usefixtures("interpreter_only")


def _two_groups(after: str, started: bool = True) -> Any:
    """Two warpgroups, each multiplying its 64 rows of A (shared) by all of B (shared), then
    doing `after` with no barrier in between, and after a barrier, multiplying again what is
    there: "own" (each thread zeroes an element of the first two columns, in the rows its own
    group's product read), "other" (in the rows the other group's product read),
    "synced" (the same as "other", after a barrier), "early" (every thread reads the first
    element of A, the product of the first group still running; then, after a barrier, a thread
    of the second group writes it back)."""

    @kernel(block=(256,))
    def two_groups(a: Tensor[bf16, 128, N], b: Tensor[bf16, N, N], c: Tensor[f32, 128, N]):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        sA = make_shared((128, N), bf16)
        sB = make_shared((N, N), bf16)
        acc = make_local((MMA.values("c"),), f32)
        t = thread_idx.x
        wg = t // 128
        zero(acc)
        stage(a, b, sA, sB, t, 0)
        syncthreads()
        row = (t % 128) // 2
        if started:
            matmul_async(local_tile(sA, (64, N), wg), sB, acc, MMA)
            if after == "early":
                x = sA[0, 0]
                syncthreads()
                if t == 128:
                    sA[0, 0] = x
            matmul_wait(0)
        else:
            matmul(local_tile(sA, (64, N), wg), sB, acc, MMA)
        if after == "own":
            sA[row + 64 * wg, t % 2] = bf16(0.0)
        if after == "synced":
            syncthreads()
        if after == "other" or after == "synced":
            sA[row + 64 * (1 - wg), t % 2] = bf16(0.0)
        syncthreads()
        matmul(local_tile(sA, (64, N), wg), sB, acc, MMA)
        store(c, acc, t)

    return two_groups


def _launch(k: Any) -> np.ndarray:
    a, b, c = operands()
    k[(1,)](a, b, c)
    first = from_storage(a, bf16).astype(np.float64)
    second = first.copy()
    second[:, :2] = 0.0  # what the threads wrote
    expected = (first + second) @ from_storage(b, bf16).astype(np.float64).T
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-3)
    return c


def test_another_group_overwriting_what_a_waited_product_read_is_a_race():
    with pytest.raises(KernelFault, match=r"data-race: thread 0 writes byte \d+ of shared#0 and the matrix "
                                          r"product of threads 128–255 read it at .*with nothing ordering the two"):
        _launch(_two_groups("other"))


def test_a_finished_synchronous_product_is_read_by_its_group_too():
    with pytest.raises(KernelFault, match="data-race.*the matrix product of threads 128–255 read it"):
        _launch(_two_groups("other", started=False))


@pytest.mark.parametrize("started", [True, False], ids=["matmul_async", "matmul"])
def test_a_group_may_overwrite_what_its_own_finished_product_read(started: bool):
    _launch(_two_groups("own", started=started))


def test_a_barrier_after_the_wait_orders_the_reads_before_other_writes():
    _launch(_two_groups("synced"))


def test_a_barrier_before_the_wait_does_not_order_a_running_product():
    """Plain reads of the operands while the product runs must not hide it: a barrier orders
    those reads, not the product's."""
    with pytest.raises(KernelFault, match="data-race: thread 128 writes byte 0 of shared#0 and the matrix product of threads 0–127 "
                                          "read it"):
        _launch(_two_groups("early"))


def test_every_thread_that_read_a_byte_in_one_load_counts():
    """All 32 threads read element 0 in one load; a write by the last of them races with the
    other 31 reads."""

    @kernel(block=(32,))
    def broadcast(x: Tensor[f32, 32]):
        s = make_shared((32,), f32)
        t = thread_idx.x
        s[t] = x[t]
        syncthreads()
        v = s[0]
        if t == 31:
            s[0] = v + 1.0
        x[t] = v

    with pytest.raises(KernelFault, match=r"data-race: thread 31 writes byte 0 of shared#0 and another thread of its "
                                          r"warp read it"):
        broadcast[(1,)](np.arange(32, dtype=np.float32))


def _gemm_sm90_racy(tmp_path: Path) -> Any:
    """examples/gemm_sm90.py with its products started asynchronously and waited for, and the
    barrier between them and the stores of the next slice dropped: the threads of one
    warpgroup then overwrite rows of A the other warpgroup's products read."""
    source = (EXAMPLES / "gemm_sm90.py").read_text()
    edits = (("    matmul,\n", "    matmul,\n    matmul_async,\n    matmul_wait,\n"),
             ("            matmul(local_tile(sA, (64, 16), wg + 2 * ks), local_tile(sB, (BN, 16), ks), acc, MMA)\n"
              "        syncthreads()\n",
              "            matmul_async(local_tile(sA, (64, 16), wg + 2 * ks), local_tile(sB, (BN, 16), ks), acc, MMA)\n"
              "        matmul_wait(0)\n"))
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / "gemm_sm90_racy.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("gemm_sm90_racy", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_gemm_without_the_barrier_after_its_products_races(tmp_path: Path):
    module = _gemm_sm90_racy(tmp_path)
    problem = module.example_gemm_sm90(np.random.default_rng(0))
    with pytest.raises(KernelFault, match="data-race.*the matrix product of threads 0–127 read it at .*with nothing "
                                          "ordering the two"):
        module.gemm_sm90[problem.grid](*problem.args)


def test_the_checker_finds_the_example_gemm_race_and_replays_it(tmp_path: Path):
    result = _gemm_sm90_racy(tmp_path).gemm_sm90.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "data-race" in result.text() and "written before a barrier orders a matrix product that read it" in \
        result.text() and "the interpreter faults the same way" in result.text()


@pytest.mark.parametrize("started", [True, False], ids=["matmul_async", "matmul"])
def test_the_checker_finds_another_group_overwriting_what_a_product_read(started: bool):
    result = _two_groups("other", started=started).verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "written before a barrier orders a matrix product that read it" in result.text()


@pytest.mark.parametrize("after", ["own", "synced"])
def test_the_checker_proves_writes_the_products_reads_are_ordered_before(after: str):
    assert _two_groups(after).verify().verdict is Verdict.PROVED


def test_the_checker_carries_a_products_reads_into_the_next_iteration():
    """The products of one iteration read A; the next iteration's stores overwrite it before
    any barrier: no proof (the witness needs two iterations)."""

    carried = products_in_a_loop(started=False)
    assert carried.verify().verdict is not Verdict.PROVED
