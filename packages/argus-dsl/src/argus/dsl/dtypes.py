"""Element types of the language, with their exact encoding in memory.

Every dtype knows how its values look in the interpreter (a numpy array) and as bytes in
memory (little-endian, as on both GPU families). Arithmetic in a narrow float type is rounded
back to that type after each operation, so the interpreter computes what the hardware does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

__all__ = [
    "DType",
    "boolean",
    "DTYPES",
    "bf16",
    "dtype_named",
    "f16",
    "f32",
    "f64",
    "f8e4m3",
    "f8e4m3fnuz",
    "f8e5m2",
    "f8e5m2fnuz",
    "i8",
    "i16",
    "i32",
    "i64",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "u256",
]


@dataclass(frozen=True)
class DType:
    """An element type: `kind` is ``int``, ``uint``, ``float`` or ``bits`` (an opaque vector)."""

    name: str
    bits: int
    kind: str
    numpy: np.dtype = field(compare=False, repr=False)
    """How one value is held in the interpreter (bits types: one uint8 row of `nbytes`)."""
    minifloat: tuple[int, int, int, bool] | None = field(default=None, compare=False, repr=False)
    """(exponent bits, mantissa bits, bias, fnuz) for the 8-bit floats."""

    @property
    def nbytes(self) -> int:
        return self.bits // 8

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_integer(self) -> bool:
        return self.kind in ("int", "uint")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"argus.dsl.{self.name}"

    # ---- values <-> bytes ----------------------------------------------------------------
    def round(self, values: np.ndarray) -> np.ndarray:
        """Round computed values to what this type can hold (narrow floats, wrapping ints)."""
        if self.kind == "bits":
            return values
        if self.name == "bf16":
            return _bf16_decode(_bf16_encode(np.asarray(values, dtype=np.float32)))
        if self.minifloat:
            return self.decode_codes(self.encode_codes(values))
        return np.asarray(values).astype(self.numpy, copy=False)

    def encode(self, values: np.ndarray) -> np.ndarray:
        """Values (shape S) to their bytes (shape S + (nbytes,))."""
        if self.kind == "bits":
            return np.asarray(values, dtype=np.uint8)
        if self.name == "bf16":
            raw = _bf16_encode(np.asarray(values, dtype=np.float32))
        elif self.minifloat:
            raw = self.encode_codes(values)
        else:
            raw = np.ascontiguousarray(np.asarray(values).astype(self.numpy.newbyteorder("<"), copy=False))
        raw = np.ascontiguousarray(raw)
        return raw.view(np.uint8).reshape(raw.shape + (self.nbytes,))

    def decode(self, raw: np.ndarray) -> np.ndarray:
        """Bytes (shape S + (nbytes,)) to values (shape S)."""
        raw = np.ascontiguousarray(raw, dtype=np.uint8)
        if self.kind == "bits":
            return raw
        if self.name == "bf16":
            return _bf16_decode(raw.view("<u2")[..., 0])
        if self.minifloat:
            return self.decode_codes(raw[..., 0])
        return raw.view(self.numpy.newbyteorder("<"))[..., 0].astype(self.numpy)

    # ---- 8-bit floats ------------------------------------------------------------------------
    @cached_property
    def _code_table(self) -> np.ndarray:
        """The float value of each of the 256 codes (NaN where the code is NaN)."""
        assert self.minifloat is not None
        e_bits, m_bits, bias, fnuz = self.minifloat
        codes = np.arange(256)
        sign = np.where(codes >> 7, -1.0, 1.0)
        exp = (codes >> m_bits) & ((1 << e_bits) - 1)
        man = codes & ((1 << m_bits) - 1)
        normal = (1 + man / (1 << m_bits)) * np.exp2(exp.astype(float) - bias)
        subnormal = (man / (1 << m_bits)) * np.exp2(1.0 - bias)
        values = sign * np.where(exp == 0, subnormal, normal)
        if fnuz:
            values[0x80] = np.nan  # the only NaN; there is no negative zero and no infinity
        elif e_bits == 4:
            values[[0x7F, 0xFF]] = np.nan  # e4m3fn: no infinity, S.1111.111 is NaN
        else:
            top = exp == (1 << e_bits) - 1  # e5m2: IEEE-like infinities and NaNs
            values[top & (man == 0)] = sign[top & (man == 0)] * np.inf
            values[top & (man != 0)] = np.nan
        return values

    def decode_codes(self, codes: np.ndarray) -> np.ndarray:
        return self._code_table[np.asarray(codes, dtype=np.uint8)].astype(np.float32)

    def encode_codes(self, values: np.ndarray) -> np.ndarray:
        """Round to nearest (ties to even code), saturating at the largest finite value."""
        table = self._code_table
        positive = np.flatnonzero((np.arange(256) < 0x80) & np.isfinite(table))
        order = positive[np.argsort(table[positive], kind="stable")]
        magnitudes = table[order]
        x = np.asarray(values, dtype=np.float64)
        mag = np.minimum(np.abs(x), magnitudes[-1])
        hi = np.clip(np.searchsorted(magnitudes, mag), 1, len(order) - 1)
        lo = hi - 1
        d_lo, d_hi = mag - magnitudes[lo], magnitudes[hi] - mag
        pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (order[hi] % 2 == 0))
        code = np.where(pick_hi, order[hi], order[lo]).astype(np.uint8)
        negative = (x < 0) & (code != 0)
        code = np.where(negative, code | 0x80, code)
        nan_code = 0x80 if self.minifloat and self.minifloat[3] else 0x7F
        return np.where(np.isnan(x), nan_code, code).astype(np.uint8)


def _bf16_encode(values: np.ndarray) -> np.ndarray:
    """float32 -> bf16 bit patterns, round to nearest even; NaN stays NaN."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    out = (rounded >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), out)


def _bf16_decode(codes: np.ndarray) -> np.ndarray:
    return (np.asarray(codes, dtype=np.uint32) << 16).view(np.float32)


def _int(name: str, bits: int, signed: bool) -> DType:
    return DType(name, bits, "int" if signed else "uint", np.dtype(f"{'i' if signed else 'u'}{bits // 8}"))


i8, i16, i32, i64 = (_int(f"i{b}", b, True) for b in (8, 16, 32, 64))
u8, u16, u32, u64 = (_int(f"u{b}", b, False) for b in (8, 16, 32, 64))
f16 = DType("f16", 16, "float", np.dtype(np.float16))
bf16 = DType("bf16", 16, "float", np.dtype(np.float32))
f32 = DType("f32", 32, "float", np.dtype(np.float32))
f64 = DType("f64", 64, "float", np.dtype(np.float64))
f8e4m3 = DType("f8e4m3", 8, "float", np.dtype(np.float32), (4, 3, 7, False))
f8e5m2 = DType("f8e5m2", 8, "float", np.dtype(np.float32), (5, 2, 15, False))
f8e4m3fnuz = DType("f8e4m3fnuz", 8, "float", np.dtype(np.float32), (4, 3, 8, True))
f8e5m2fnuz = DType("f8e5m2fnuz", 8, "float", np.dtype(np.float32), (5, 2, 16, True))
u128 = DType("u128", 128, "bits", np.dtype(np.uint8))
boolean = DType("bool", 8, "bool", np.dtype(np.bool_))
"""Truth values (comparisons, masks); held one per thread, never stored to memory."""
u256 = DType("u256", 256, "bits", np.dtype(np.uint8))

DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64,
        f8e4m3, f8e5m2, f8e4m3fnuz, f8e5m2fnuz, u128, u256, boolean,
    )
}


def dtype_named(name: str) -> DType | None:
    return DTYPES.get(name)
