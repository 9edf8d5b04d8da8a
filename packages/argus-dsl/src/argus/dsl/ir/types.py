"""How DSL element types appear in MLIR, and back."""

from __future__ import annotations

from functools import lru_cache

from xdsl.dialects import builtin
from xdsl.ir import Attribute

from ..dtypes import DType, boolean, dtype_named

_FLOATS: dict[str, Attribute] = {
    "f16": builtin.f16,
    "bf16": builtin.bf16,
    "f32": builtin.f32,
    "f64": builtin.f64,
    "f8e4m3": builtin.Float8E4M3FNType(),
    "f8e5m2": builtin.Float8E5M2Type(),
    "f8e4m3fnuz": builtin.Float8E4M3FNUZType(),
    "f8e5m2fnuz": builtin.Float8E5M2FNUZType(),
}


def mlir_type(dtype: DType) -> Attribute:
    """Integers (signed or not) become signless ``iN``; signedness lives in the ops chosen.
    One object per type: ops of one type then share it, and comparing their types (the checker
    compares the copies of an unrolled statement) is an identity test."""
    if dtype is boolean:
        return builtin.i1
    if dtype.kind == "float":
        return _FLOATS[dtype.name]
    return _integer_type(dtype.bits)


@lru_cache(maxsize=None)
def _integer_type(bits: int) -> Attribute:
    return builtin.IntegerType(bits)


_FLOAT_NAMES: dict[type, str] = {type(ft): name for name, ft in _FLOATS.items()}
"""Each float type's name by its class (a class per float type: no attribute compared)."""


def dtype_of_mlir(t: Attribute, signed: bool = True) -> DType:
    """The DSL type an interpreter holds an MLIR value as (integers as signed unless told)."""
    name = _FLOAT_NAMES.get(type(t))
    if name is not None:
        return dtype_named(name)  # type: ignore[return-value]
    if isinstance(t, builtin.IntegerType):
        width = t.width.data
        if width == 1 and t == builtin.i1:
            return boolean
        if width > 64:
            return dtype_named(f"u{width}")  # type: ignore[return-value]
        return dtype_named(f"{'i' if signed else 'u'}{width}")  # type: ignore[return-value]
    raise TypeError(f"no DSL type for MLIR type {t}")
