"""Kernels of two warpgroups, each multiplying its 64 rows of A by all of B, both staged in
shared memory: the device functions they share (zeroing the accumulators, staging a K slice,
storing C), their inputs, and a runtime loop of products. The tests of races with what a
product reads build their kernels from these, so that each kernel shows only where it
differs: what it writes, when, and what orders it."""

from __future__ import annotations

from typing import Any

import numpy as np
from argus.dsl import (
    Kernel,
    Tensor,
    assume,
    bf16,
    device,
    f32,
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

N = 16
MMA = warpgroup_mma_64xNx16(N, bf16, bf16, f32)


@device
def zero(acc: Any) -> None:
    for v in static_range(MMA.values("c")):
        acc[v] = 0.0


@device
def stage(a: Any, b: Any, sA: Any, sB: Any, t: Any, k0: Any) -> None:
    """Columns k0 … k0 + N - 1 of A (128 rows) and of B into sA and sB, by 256 threads."""
    for i in static_range(128 * N // 256):
        e = t + 256 * i
        sA[e // N, e % N] = a[e // N, k0 + e % N]
    sB[t // N, t % N] = b[t // N, k0 + t % N]


@device
def store(c: Any, acc: Any, t: Any) -> None:
    """Each warpgroup's 64 rows of C from its accumulators."""
    for v in static_range(MMA.values("c")):
        idx = MMA.c_layout(t % 128, v)
        c[64 * (t // 128) + idx % 64, idx // 64] = acc[v]


def operands(k: int = N) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random A (128×k) and B (N×k) in bf16 storage, and a zeroed C (128×N)."""
    rng = np.random.default_rng(0)
    return (to_storage(rng.standard_normal((128, k)), bf16), to_storage(rng.standard_normal((N, k)), bf16),
            np.zeros((128, N), np.float32))


def products_in_a_loop(started: bool) -> Kernel:
    """A runtime loop over K slices whose stores refill sA and sB after the previous
    iteration's products: `started` products (`matmul_async`, waited for after the loop, a
    barrier before and after each refill), else finished ones (`matmul`, a barrier after each
    refill only). Either way the next iteration's stores meet the products' reads unordered."""

    @kernel(block=(256,), verify=False)
    def products(a: Tensor[bf16, 128, "K"], b: Tensor[bf16, N, "K"], c: Tensor[f32, 128, N], K: int):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        assume(K % N == 0)
        sA = make_shared((128, N), bf16)
        sB = make_shared((N, N), bf16)
        acc = make_local((MMA.values("c"),), f32)
        t = thread_idx.x
        zero(acc)
        for k0 in range(0, K, N):
            if started:
                syncthreads()
            stage(a, b, sA, sB, t, k0)
            syncthreads()
            if started:
                matmul_async(local_tile(sA, (64, N), t // 128), sB, acc, MMA)
            else:
                matmul(local_tile(sA, (64, N), t // 128), sB, acc, MMA)
        if started:
            matmul_wait(0)
        store(c, acc, t)

    return products
