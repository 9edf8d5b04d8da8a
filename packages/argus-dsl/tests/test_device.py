"""@device helpers are inlined where kernels call them."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from argus.dsl import ArgusSyntaxError, ArgusTypeError, Tensor, assume, device, f32, kernel, rcp, thread_idx


@device
def scaled_sum(a, b, scale):
    """a*scale + b; `scale` may be a compile-time value."""
    total = a * scale + b
    return total


@device
def clamp_index(i, n):
    j = i
    if j >= n:
        j = n - 1
    return j


@kernel(block=(32,))
def use_helpers(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)  # the clamp's n - 1 is an index of x
    i = clamp_index(thread_idx.x, n)
    out[thread_idx.x] = rcp(scaled_sum(x[i], 1.0, 2.0))


def test_helpers_are_inlined_and_compute_what_they_say():
    x = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    use_helpers[1](x, out, 20)
    i = np.minimum(np.arange(32), 19)
    np.testing.assert_allclose(out, 1.0 / (x[i] * 2.0 + 1.0), rtol=1e-6)
    assert "scaled_sum" not in use_helpers.mlir()


@device
def early_exit(a):
    if a > 0.0:
        return a
    return -a


@kernel(block=(32,))
def calls_early_exit(x: Tensor[f32, 32]):
    x[thread_idx.x] = early_exit(x[thread_idx.x])


@device
def forever(a):
    return forever(a)


@kernel(block=(32,))
def calls_forever(x: Tensor[f32, 32]):
    x[thread_idx.x] = forever(x[thread_idx.x])


def test_a_return_before_the_end_is_refused_at_its_line():
    with pytest.raises(ArgusSyntaxError, match="returns once") as info:
        calls_early_exit.compile()
    lines, first = inspect.getsourcelines(early_exit.fn)
    assert info.value.location.line == first + next(i for i, t in enumerate(lines) if "if a > 0.0" in t)


def test_recursion_is_refused():
    with pytest.raises(ArgusTypeError, match="recursion"):
        calls_forever.compile()


def test_calling_a_helper_outside_a_kernel_says_how_to_use_it():
    with pytest.raises(ArgusSyntaxError, match="inside an @kernel"):
        scaled_sum(1, 2, 3)
