"""Constructs outside the language, and misuse of the language, are reported with their
location, the construct, and what is accepted; never as an internal exception."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import (
    ArgusLaunchError,
    ArgusSyntaxError,
    ArgusTypeError,
    Tensor,
    constexpr,
    f32,
    i32,
    kernel,
    make_local,
    make_shared,
    static_range,
    thread_idx,
    u128,
)


def compile_error(k, **constants):
    with pytest.raises((ArgusSyntaxError, ArgusTypeError)) as info:
        k.compile(**constants)
    return info.value


def line_of(k, text: str) -> int:
    lines, first = inspect.getsourcelines(k.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@kernel(block=(32,))
def uses_while(out: Tensor[f32, 32]):
    i = 0
    while i < 3:
        i = i + 1


@kernel(block=(32,))
def mixes_types(x: Tensor[f32, 32], out: Tensor[f32, 32]):
    out[thread_idx.x] = x[thread_idx.x] + thread_idx.x


@kernel(block=(32,))
def wrong_rank(x: Tensor[f32, 4, 8], out: Tensor[f32, 32]):
    out[thread_idx.x] = x[thread_idx.x]


@kernel(block=(32,))
def bad_view(out: Tensor[f32, 32]):
    r = make_local((8,), f32)
    v = r.view((3,), u128)


@kernel(block=(32,))
def int_division(out: Tensor[f32, 32]):
    out[thread_idx.x / 2] = 1.0


@kernel(block=(32,))
def missing_annotation(out):
    pass


@kernel(block=(32,))
def uses_lambda(out: Tensor[f32, 32]):
    f = lambda v: v  # noqa: E731


@kernel(block=(32,))
def good_view(out: Tensor[f32, 32]):
    r = make_local((8,), f32)
    v = r.view((2,), u128)
    s = make_shared((32,), i32)


@kernel(block=(32,))
def sub_tile_outside(out: Tensor[f32, 32]):
    r = make_local((2, 4), f32)
    for k in static_range(5):
        v = r[:, k]  # k = 4 is past the last column


@kernel(block=(32,))
def register_outside(out: Tensor[f32, 32]):
    r = make_local((4,), f32)
    for k in static_range(5):
        r[k] = 1.0  # k = 4 is past the last register


@kernel(block=(32,))
def mode_outside(out: Tensor[f32, 32]):
    r = make_local((2, 4), f32)
    r[1, 3] = 0.0
    out[thread_idx.x] = r[1, 4]


@kernel(block=(32,))
def tensor_dim_outside(out: Tensor[f32, 32]):
    out[32] = 1.0


@kernel(block=(32,))
def compares_a_namespace(out: Tensor[f32, 32]):
    if print < thread_idx:  # two compile-time objects Python cannot order
        out[0] = 1.0


@kernel(block=(32,))
def negative_coordinate(x: Tensor[f32, "m"], m: int):
    x[-1] = 1.0  # no Python-style negative indexing: the interpreter faults


@pytest.mark.parametrize(
    "k, error, marker, words",
    [
        (uses_while, ArgusSyntaxError, "while i < 3", "'While' statements are not part of the Argus language"),
        (mixes_types, ArgusTypeError, "x[thread_idx.x] + thread_idx.x", "different types (f32 and i32)"),
        (wrong_rank, ArgusTypeError, "x[thread_idx.x]", "rank 2"),
        (bad_view, ArgusTypeError, "r.view((3,), u128)", "same memory"),
        (int_division, ArgusTypeError, "thread_idx.x / 2", "use '//'"),
        (uses_lambda, ArgusSyntaxError, "f = lambda", "'Lambda' expressions are not part of the Argus language"),
        (sub_tile_outside, ArgusTypeError, "r[:, k]", "coordinate 4 is outside mode 1 of this tile, which has 4"),
        (register_outside, ArgusTypeError, "r[k] = 1.0", "coordinate 4 is outside this tile, which has 4 element(s) (0 to 3)"),
        (mode_outside, ArgusTypeError, "r[1, 4]", "coordinate 4 is outside mode 1 of this tile, which has 4"),
        (tensor_dim_outside, ArgusTypeError, "out[32]", "coordinate 32 is outside dim 0 of this tensor, which has 32"),
        (negative_coordinate, ArgusTypeError, "x[-1]", "coordinate -1 is negative: dim 0 of this tensor (m) starts at 0"),
        (compares_a_namespace, ArgusTypeError, "print < thread_idx", "compile-time < failed: '<' not supported"),
    ],
    ids=lambda v: getattr(v, "name", None) if hasattr(v, "fn") else None,
)
def test_error_names_location_construct_and_rule(k, error, marker, words):
    err = compile_error(k)
    assert isinstance(err, error)
    assert words in str(err)
    assert err.location.file == inspect.getsourcefile(k.fn)
    assert err.location.line == line_of(k, marker)
    assert err.construct


def test_missing_annotation_is_a_type_error():
    err = compile_error(missing_annotation)
    assert "needs an annotation" in str(err)


def test_views_of_equal_size_compile():
    text = good_view.mlir()
    assert '!argus.tile<local, u128, "(2):(1)">' in text


def test_launch_checks_arguments():
    out = np.zeros(32, np.float32)
    with pytest.raises(ArgusLaunchError, match="float32"):
        good_view[1](np.zeros(32, np.float64))
    with pytest.raises(ArgusLaunchError, match="missing"):
        good_view[1]()
    with pytest.raises(ArgusLaunchError, match="grid"):
        good_view[0](out)
    with pytest.raises(ArgusSyntaxError, match="grid"):
        good_view(out)


@kernel(block=(32,))
def generic_copy(x: Tensor["T", 32], out: Tensor["T", 32], T: constexpr):
    out[thread_idx.x] = x[thread_idx.x]


def test_a_kernel_can_be_generic_over_a_constexpr_dtype():
    from argus.dsl import i32

    for dtype, host in ((f32, np.float32), (i32, np.int32)):
        x = np.arange(32).astype(host)
        out = np.zeros_like(x)
        generic_copy[1](x, out, T=dtype)
        assert np.array_equal(out, x)
    assert "!argus.tensor<i32, [32]>" in generic_copy.mlir(T=i32)


def _tile_rows(layout_name: str) -> int:
    """A compile-time helper with a bug: it asks for an attribute strings do not have."""
    return layout_name.rows  # type: ignore[attr-defined]


@kernel(block=(32,))
def helper_fails(out: Tensor[f32, 32]):
    out[thread_idx.x % _tile_rows("A")] = 1.0


def test_a_compile_time_helper_that_fails_is_reported_at_its_call() -> None:
    err = compile_error(helper_fails)
    assert err.location is not None and err.location.line == line_of(helper_fails, "_tile_rows(")
    assert "failed at compile time: AttributeError" in str(err)
