"""Element types encode and decode exactly as the hardware stores them."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import bf16, f8e4m3, f8e4m3fnuz, f8e5m2, f8e5m2fnuz, from_storage, i32, to_storage, u32
from argus.dsl.dtypes import DTYPES
from hypothesis import given, settings
from hypothesis import strategies as st


def test_bf16_is_the_upper_half_of_f32_rounded_to_nearest_even():
    x = np.array([1.0, 1.00390625, 1.01171875, -2.5, 3.0e38], np.float32)
    bits = to_storage(x, bf16)
    assert bits.dtype == np.uint16
    assert bits.tolist() == [0x3F80, 0x3F80, 0x3F82, 0xC020, 0x7F62]
    expected = (bits.astype(np.uint32) << 16).view(np.float32)
    assert np.array_equal(from_storage(bits, bf16), expected)
    assert from_storage(bits, bf16)[:4].tolist() == [1.0, 1.0, 1.015625, -2.5]


@pytest.mark.parametrize("dtype, largest", [(f8e4m3, 448.0), (f8e5m2, 57344.0), (f8e4m3fnuz, 240.0), (f8e5m2fnuz, 57344.0)])
def test_fp8_round_trips_every_finite_code_and_saturates(dtype, largest):
    table = dtype.decode_codes(np.arange(256))
    finite = np.flatnonzero(np.isfinite(table))
    codes = dtype.encode_codes(table[finite])
    zero_codes = {0, 0x80}
    for code, back in zip(finite, codes):
        assert back == code or {int(code), int(back)} <= zero_codes
    assert np.nanmax(table[np.isfinite(table)]) == largest
    assert dtype.decode_codes(dtype.encode_codes(np.array([1e9])))[0] == largest


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-500, 500, allow_nan=False, width=32), min_size=1, max_size=16))
def test_fp8_e4m3_rounds_to_the_nearest_representable(values):
    x = np.array(values, np.float64)
    table = f8e4m3.decode_codes(np.arange(256)).astype(np.float64)
    finite = table[np.isfinite(table)]
    got = f8e4m3.decode_codes(f8e4m3.encode_codes(x))
    for v, g in zip(np.clip(x, -448, 448), got):
        assert abs(g - v) <= np.min(np.abs(finite - v)) + 1e-12


def test_integers_keep_their_bits():
    x = np.array([-1, 2**31 - 1, -(2**31)], np.int32)
    assert np.array_equal(i32.decode(i32.encode(x)), x)
    assert u32.decode(u32.encode(np.array([2**32 - 1], np.uint32)))[0] == 2**32 - 1


def test_every_storable_dtype_has_a_byte_size():
    for d in DTYPES.values():
        if d.kind != "bool":
            assert d.bits % 8 == 0 and d.nbytes * 8 == d.bits


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(st.lists(st.tuples(st.integers(1, 5), st.integers(-6, 6)), min_size=1, max_size=3), st.booleans())
def test_a_tiles_footprint_is_one_past_its_largest_offset(modes, swizzled):
    """The memory a tile needs, from its layout's strides (or its offsets, when swizzled)."""
    from argus.dsl.ir.dialect import TileType
    from argus.layout import ComposedLayout, Layout, Swizzle

    shape = tuple(s for s, _ in modes)
    stride = tuple(abs(d) if swizzled else d for _, d in modes)  # a swizzle takes offsets from 0 up
    layout = Layout(shape, stride)
    if swizzled:
        layout = ComposedLayout(Swizzle(1, 0, 1), 0, layout)
    t = TileType.of("shared", bf16, layout)
    assert t.footprint == int(np.max(layout.offsets())) + 1



@given(st.lists(st.tuples(st.integers(1, 5), st.integers(-6, 6)), min_size=1, max_size=3), st.booleans())
def test_a_tile_types_layout_reads_back_as_the_layout_it_was_made_from(modes, swizzled):
    """The layout a tile type gives back equals the one it was made from, and what parsing
    the type's text gives (printed IR read in another process)."""
    from argus.dsl.ir.dialect import TileType
    from argus.layout import ComposedLayout, Layout, Swizzle, parse

    layout = Layout(tuple(s for s, _ in modes), tuple(abs(d) if swizzled else d for _, d in modes))
    if swizzled:
        layout = ComposedLayout(Swizzle(1, 0, 1), 0, layout)
    t = TileType.of("shared", bf16, layout)
    assert t.layout == layout and type(t.layout) is type(layout)
    assert parse(t.layout_text.data) == layout


def test_a_layout_the_front_end_printed_is_not_parsed_again_in_its_process():
    from argus.dsl.ir.dialect import TileType
    from argus.layout import Layout

    layout = Layout((7, 11, 13), (1, 7001, 77))  # a text no other test makes
    assert TileType.of("local", bf16, layout).layout is layout


def test_equal_types_are_one_object():
    """Copies of an unrolled statement are compared by their types: equal types are the same
    object, so that comparison is an identity test."""
    from argus.dsl.ir.dialect import TileType
    from argus.dsl.dtypes import u16
    from argus.dsl.ir.types import mlir_type
    from argus.layout import Layout

    assert mlir_type(i32) is mlir_type(i32) and mlir_type(u16) is mlir_type(u16)
    layout = Layout((4, 8), (8, 1))
    assert TileType.of("shared", bf16, layout) is TileType.of("shared", bf16, Layout((4, 8), (8, 1)))
    assert TileType.of("shared", bf16, layout) is not TileType.of("local", bf16, layout)
