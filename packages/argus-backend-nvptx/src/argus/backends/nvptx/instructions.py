"""Which NVIDIA instruction runs a matrix-multiply atom.

The language describes an atom by its thread/value layouts and types alone; an atom runs as an
``mma.sync`` only when its layouts are exactly the instruction's register fragments (PTX ISA,
"Matrix fragments for mma.m16n8k16" and "… mma.m16n8k32"), so a differently laid out atom can never be issued as the
instruction and silently compute something else.
"""

from __future__ import annotations

from dataclasses import dataclass

from argus.dsl.atoms import MMAAtom, warp_mma_16x8x16, warp_mma_16x8x32
from argus.dsl.dtypes import bf16, f8e4m3, f8e5m2, f16, f32

from .targets import Arch


@dataclass(frozen=True)
class Instruction:
    text: str
    """Inline PTX with $0… operands: the outputs (accumulators) first, then a, b, c registers."""
    per_register: dict[str, int]
    """Fragment values packed into one 32-bit register, per operand."""
    register_type: dict[str, str]
    feature: str


def _mma_sync(a: str) -> Instruction:
    # 4 outputs, 4 A registers, 2 B registers, 4 C registers
    outs = "{$0, $1, $2, $3}"
    return Instruction(
        f"mma.sync.aligned.m16n8k16.row.col.f32.{a}.{a}.f32 {outs}, {{$4, $5, $6, $7}}, {{$8, $9}}, "
        "{$10, $11, $12, $13};",
        {"a": 2, "b": 2, "c": 1}, {"a": "i32", "b": "i32", "c": "float"}, "mma.sync")


def _mma_sync_fp8(a: str, b: str) -> Instruction:
    # 4 outputs, 4 A registers (four fp8 each), 2 B registers, 4 C registers
    return Instruction(
        f"mma.sync.aligned.m16n8k32.row.col.f32.{a}.{b}.f32 {{$0, $1, $2, $3}}, {{$4, $5, $6, $7}}, {{$8, $9}}, "
        "{$10, $11, $12, $13};",
        {"a": 4, "b": 4, "c": 1}, {"a": "i32", "b": "i32", "c": "float"}, "mma.fp8")


_FP8 = {"e4m3": f8e4m3, "e5m2": f8e5m2}
_KNOWN = {
    warp_mma_16x8x16(bf16, bf16, f32): _mma_sync("bf16"),
    warp_mma_16x8x16(f16, f16, f32): _mma_sync("f16"),
    **{warp_mma_16x8x32(_FP8[a], _FP8[b], f32): _mma_sync_fp8(a, b) for a in _FP8 for b in _FP8},
}


def mma_instruction(atom: MMAAtom, arch: Arch) -> Instruction | None:
    """The instruction running `atom` on `arch`, or None when there is none."""
    for known, instruction in _KNOWN.items():
        if (known.shape, known.threads, known.a_dtype, known.b_dtype, known.c_dtype) == (
                atom.shape, atom.threads, atom.a_dtype, atom.b_dtype, atom.c_dtype) and all(
                str(getattr(known, f)) == str(getattr(atom, f)) for f in ("a_layout", "b_layout", "c_layout")):
            return instruction if arch.has(instruction.feature) else None
    return None
