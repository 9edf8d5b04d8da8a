"""A compile-time number meets a runtime value: it takes the runtime value's type (docs/language.md,
"Types"), for every integer and float type, and is refused at its line where that type cannot
hold it."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import Tensor, bf16, f16, from_storage, i8, i32, i64, kernel, thread_idx, to_storage, u8, u32
from argus.dsl.errors import ArgusTypeError


@kernel(block=(32,))
def scale_f16(x: Tensor[f16, 32]):
    x[thread_idx.x] = x[thread_idx.x] * 2.0 + 0.5


@kernel(block=(32,))
def scale_bf16(x: Tensor[bf16, 32]):
    x[thread_idx.x] = x[thread_idx.x] * 0.5 - 1.0


@kernel(block=(32,))
def wide_and_narrow(a: Tensor[i64, 32], b: Tensor[u8, 32], c: Tensor[u32, 32], d: Tensor[i8, 32]):
    i = thread_idx.x
    a[i] = a[i] * 3 + 5_000_000_000
    b[i] = b[i] + 200
    c[i] = c[i] & 0xFFFF0000
    d[i] = -128 + d[i]


@kernel(block=(32,))
def bit_pattern(x: Tensor[i32, 32]):
    x[thread_idx.x] = x[thread_idx.x] & 0xFFFFFFFF


def test_float_literals_take_the_narrow_float_type():
    x = np.linspace(-2, 2, 32).astype(np.float16)
    want = (x * np.float16(2) + np.float16(0.5)).astype(np.float16)
    scale_f16[(1,)](x)
    np.testing.assert_array_equal(x, want)
    y = np.linspace(-2, 2, 32, dtype=np.float32)
    stored = to_storage(y, bf16)
    scale_bf16[(1,)](stored)
    np.testing.assert_allclose(from_storage(stored, bf16), y * 0.5 - 1.0, rtol=1e-2, atol=1e-2)


def test_integer_literals_take_the_integer_type_and_wrap_as_it_does():
    a = np.arange(32, dtype=np.int64)
    b = np.arange(32, dtype=np.uint8) * 3
    c = np.full(32, 0x12345678, np.uint32)
    d = np.arange(32, dtype=np.int8)
    want_a, want_b = a * 3 + 5_000_000_000, (b.astype(np.int64) + 200) % 256
    wide_and_narrow[(1,)](a, b, c, d)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b.astype(np.uint8))
    np.testing.assert_array_equal(c, np.full(32, 0x12340000, np.uint32))
    np.testing.assert_array_equal(d, (np.arange(32) - 128).astype(np.int8))


def test_a_signed_type_takes_a_bit_pattern_of_its_width():
    x = np.arange(32, dtype=np.int32) - 16
    bit_pattern[(1,)](x)
    np.testing.assert_array_equal(x, np.arange(32, dtype=np.int32) - 16)


@pytest.mark.parametrize("body, message", [
    ("b[thread_idx.x] = b[thread_idx.x] + 300", "300 is not a u8 value"),
    ("c[thread_idx.x] = c[thread_idx.x] + -1", "-1 is not a u32 value"),
    ("d[thread_idx.x] = d[thread_idx.x] * 1000", "1000 is not a i8 value"),
    ("x[thread_idx.x] = x[thread_idx.x] * 1e6", "past the largest f16 value"),
    ("x[thread_idx.x] = 70000.0", "past the largest f16 value"),
])
def test_a_literal_the_type_cannot_hold_is_refused_at_its_line(tmp_path, body, message):
    from argus.dsl.cli import load_module

    source = tmp_path / "literal.py"
    source.write_text(
        "from argus.dsl import Tensor, f16, i8, kernel, thread_idx, u8, u32\n\n"
        "@kernel(block=(32,))\n"
        "def k(x: Tensor[f16, 32], b: Tensor[u8, 32], c: Tensor[u32, 32], d: Tensor[i8, 32]):\n"
        f"    {body}\n")
    with pytest.raises(ArgusTypeError, match=message) as err:
        load_module(source).k.compile()
    assert err.value.location.line == 5


def test_narrow_literals_reach_llvm_as_constants_of_their_type():
    from argus.dsl.backends import backend_for, parse_target

    target = parse_target("nvptx:sm_90a")
    text = backend_for(target).compiler(target).emit(scale_f16.specialize(), "llvm")
    assert "half" in text and "fmul" in text
