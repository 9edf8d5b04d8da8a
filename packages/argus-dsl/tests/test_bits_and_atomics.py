"""Views of global tensors as 16-byte vectors, bit rearrangements, and atomics."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    KernelFault,
    Tensor,
    atomic_add,
    atomic_max,
    bf16,
    bitcast,
    byte_perm,
    concat,
    f32,
    hi,
    i32,
    kernel,
    lo,
    thread_idx,
    to_storage,
    u32,
    u128,
)


@kernel(block=(32,))
def swap_halves(x: Tensor[bf16, "n", 64], out: Tensor[bf16, "n", 64], n: int):
    xv = x.view((n, 8), u128)
    ov = out.view((n, 8), u128)
    row = thread_idx.x // 8
    col = thread_idx.x % 8
    if row < n:
        v = xv[row, col]
        ov[row, col] = concat(hi(v), lo(v))


def test_vector_view_loads_and_half_swaps_move_exact_bytes():
    x = to_storage(np.random.default_rng(0).standard_normal((4, 64)), bf16)
    out = np.zeros_like(x)
    swap_halves[1](x, out, 4)
    assert np.array_equal(out.reshape(4, 8, 2, 4), x.reshape(4, 8, 2, 4)[:, :, ::-1, :])


@kernel(block=(32,))
def vector_rows(x: Tensor[bf16, "n", "m"], out: Tensor[bf16, "n", "m"], n: int):
    xv = x.view((n, 8), u128)
    out[0, 0] = x[0, 0]


def test_a_view_of_the_wrong_size_faults_at_run_time():
    x = np.zeros((4, 60), np.uint16)
    with pytest.raises(KernelFault) as info:
        vector_rows[1](x, np.zeros_like(x), 4)
    assert info.value.kind == "view-size"
    assert "covers 512 bytes; the tensor has 480" in str(info.value)


@kernel(block=(32,))
def static_bad_view(x: Tensor[bf16, 4, 60]):
    v = x.view((4, 8), u128)


def test_a_view_of_the_wrong_size_is_refused_when_sizes_are_known():
    with pytest.raises(ArgusTypeError, match="same memory"):
        static_bad_view.compile()


@kernel(block=(32,))
def float_bits(out: Tensor[u32, 32]):
    out[thread_idx.x] = bitcast(f32(thread_idx.x) * 1.5, u32)


def test_bitcast_keeps_the_bits():
    out = np.zeros(32, np.uint32)
    float_bits[1](out)
    assert np.array_equal(out, (np.arange(32, dtype=np.float32) * 1.5).view(np.uint32))


@kernel(block=(64,))
def histogram(x: Tensor[i32, "n"], bins: Tensor[i32, 4], peak: Tensor[i32, 1], n: int):
    if thread_idx.x < n:
        old = atomic_add(bins[x[thread_idx.x] % 4], 1)
        top = atomic_max(peak[0], x[thread_idx.x])


def test_atomics_from_many_threads_all_count():
    x = np.random.default_rng(1).integers(0, 100, 50).astype(np.int32)
    bins, peak = np.zeros(4, np.int32), np.zeros(1, np.int32)
    histogram[1](x, bins, peak, 50)
    assert np.array_equal(bins, np.bincount(x % 4, minlength=4))
    assert peak[0] == x.max()


@kernel(block=(32,))
def interleave(a: Tensor[u32, 32], b: Tensor[u32, 32], out: Tensor[u32, 32]):
    out[thread_idx.x] = byte_perm(a[thread_idx.x], b[thread_idx.x], (0, 4, 1, 5))


def test_byte_perm_picks_bytes_of_the_concatenation():
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(32, np.uint32)
    interleave[1](a, b, out)
    ab = np.concatenate([a.view(np.uint8).reshape(32, 4), b.view(np.uint8).reshape(32, 4)], axis=1)
    assert np.array_equal(out.view(np.uint8).reshape(32, 4), ab[:, [0, 4, 1, 5]])
