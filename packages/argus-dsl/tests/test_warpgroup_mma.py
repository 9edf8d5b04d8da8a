"""Matrix-multiply atoms that read their operands whole from shared memory (warpgroup MMA):
what they compute, how the checker pairs their operands, and what the front end refuses."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    ArgusError,
    KernelFault,
    Tensor,
    assume,
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
    static_range,
    syncthreads,
    tag,
    thread_idx,
    to_storage,
    warpgroup_mma_64xNx16,
)
from argus.layout import ComposedLayout, Layout, Swizzle
from argus.verify import Verdict

N = 64
MMA = warpgroup_mma_64xNx16(N, bf16, bf16, f32)
#: 64 rows of 64 bf16 (128 bytes each), 16-byte chunks XOR-swizzled by the row within 8 rows
ROWS = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((64, 64), (64, 1)))


def _gemm(shift: int = 0, sync: bool = True, started: bool = False, wait: int = 0):
    @kernel(block=(128,))
    def wg_gemm(a: Tensor[bf16, 64, "K"], b: Tensor[bf16, N, "K"], c: Tensor[f32, 64, N], K: int):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        assume(K % 64 == 0)
        sA = make_shared(ROWS, bf16)
        sB = make_shared(ROWS, bf16)
        acc = make_local((MMA.values("c"),), f32)
        t = thread_idx.x
        for v in static_range(MMA.values("c")):
            acc[v] = 0.0
        for k0 in range(0, K, 64):
            for i in static_range(64 * 64 // 128):
                e = t + 128 * i
                sA[e // 64, e % 64] = a[e // 64, k0 + e % 64]
                sB[e // 64, e % 64] = b[e // 64, k0 + (e % 64 + shift) % 64]
            if sync:
                syncthreads()
            for kk in static_range(4):
                if started:
                    matmul_async(local_tile(sA, (64, 16), kk), local_tile(sB, (N, 16), kk), acc, MMA)
                else:
                    matmul(local_tile(sA, (64, 16), kk), local_tile(sB, (N, 16), kk), acc, MMA)
            if started and wait >= 0:  # wait < 0: never
                matmul_wait(wait)
            syncthreads()
        for v in static_range(MMA.values("c")):
            idx = MMA.c_layout(t, v)
            c[idx % 64, idx // 64] = acc[v]

    return wg_gemm


def _problem(k: int = 128, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = to_storage(rng.standard_normal((64, k)), bf16)
    b = to_storage(rng.standard_normal((N, k)), bf16)
    expected = from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T
    return a, b, np.zeros((64, N), np.float32), expected


def test_the_atom_multiplies_swizzled_shared_tiles():
    a, b, c, expected = _problem()
    _gemm()[(1,)](a, b, c, a.shape[1])
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-3)


def test_operand_pairing_is_proved():
    assert _gemm().verify().verdict is Verdict.PROVED


def test_misaligned_operands_are_refuted_with_a_witness(no_result_cache):
    result = _gemm(shift=16).verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "must pair up" in result.text()


def test_a_missing_barrier_before_the_product_is_a_race(no_result_cache, monkeypatch):
    racy = _gemm(sync=False)
    result = racy.verify()
    assert result.verdict is Verdict.VIOLATED and "data-race" in result.text(), result.text()
    monkeypatch.setenv("ARGUS_VERIFY", "0")  # and the interpreter, unchecked, faults on it
    a, b, c, _ = _problem()
    with pytest.raises(KernelFault, match="data-race: the matrix product of threads 0–127 reads byte 0 of shared#0 and thread 0 wrote it"):
        racy[(1,)](a, b, c, a.shape[1])


def test_an_operand_in_registers_is_refused_with_its_line():
    @kernel(block=(128,))
    def wrong(a: Tensor[bf16, 64, 16], c: Tensor[f32, 64, N]):
        fa = make_local((8,), bf16)
        sB = make_shared((N, 16), bf16)
        acc = make_local((MMA.values("c"),), f32)
        matmul(fa, sB, acc, MMA)

    with pytest.raises(ArgusError, match=r"reads a from shared memory.*shape \(64, 16\)") as err:
        wrong.compile()
    assert "test_warpgroup_mma.py" in str(err.value)


def test_an_operand_of_the_wrong_shape_is_refused():
    @kernel(block=(128,))
    def wrong(c: Tensor[f32, 64, N]):
        sA = make_shared((64, 32), bf16)
        sB = make_shared((N, 16), bf16)
        acc = make_local((MMA.values("c"),), f32)
        matmul(sA, sB, acc, MMA)

    with pytest.raises(ArgusError, match=r"64×16 \(M×K\) shared tile; this one is \(64, 32\)"):
        wrong.compile()


def test_the_atom_rejects_an_impossible_width():
    with pytest.raises(ArgusError, match="multiple of 8 from 8 to 256"):
        warpgroup_mma_64xNx16(12, bf16, bf16, f32)


def test_each_atom_takes_inputs_of_its_width():
    """32 bytes of K per operand row: 16 elements of 16 bits, or 32 of 8 (fp8)."""
    from argus.dsl import f8e4m3, f8e5m2, warpgroup_mma_64xNx32

    assert warpgroup_mma_64xNx32(128, f8e4m3, f8e5m2, f32).shape == (64, 128, 32)
    with pytest.raises(ArgusError, match="multiplies 16-bit inputs .* not f8e4m3; use warpgroup_mma_64xNx32"):
        warpgroup_mma_64xNx16(128, f8e4m3, f8e4m3, f32)
    with pytest.raises(ArgusError, match="multiplies 8-bit inputs .* not bf16"):
        warpgroup_mma_64xNx32(128, bf16, bf16, f32)


def test_a_product_started_asynchronously_computes_the_same_once_waited_for():
    a, b, c, expected = _problem()
    _gemm(started=True)[(1,)](a, b, c, a.shape[1])
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-3)


def test_overwriting_an_operand_before_the_wait_is_a_race(monkeypatch):
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    a, b, c, _ = _problem()
    with pytest.raises(KernelFault, match="data-race: thread 0 writes byte 0 of shared#0 and the matrix product of threads 0–127 read it"):
        _gemm(started=True, wait=4)[(1,)](a, b, c, a.shape[1])  # the next slice's stores hit running products


def test_a_product_never_waited_for_is_reported(monkeypatch):
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    a, b, c, _ = _problem(k=64)
    with pytest.raises(KernelFault, match="in-flight"):
        _gemm(started=True, wait=-1)[(1,)](a, b, c, a.shape[1])
