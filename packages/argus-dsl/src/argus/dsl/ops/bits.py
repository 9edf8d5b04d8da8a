"""Bit rearrangements: a value's bytes seen as another type (`bitcast`), several values' bytes
joined into one wider value (`concat`), a run of a value's bytes (`lo`, `hi`), and bytes
picked from two values (`byte_perm`).

Each moves bytes and computes nothing: the interpreter encodes its operands to their bytes
(little-endian, the first operand lowest) and decodes the picked bytes as the result type; the
shadow interpreter and the checker move the tags byte for byte the same way; the LLVM
translation reads every value as an integer of its width, shifts and masks, and reads the
result back as its type.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import builtin as mlir
from xdsl.ir import SSAValue

from argus.verify.byte_moves import concatenated, extracted, permuted

from ..check.access import byte_perm_rule, concat_rule, extract_rule, same_bytes_rule
from ..dtypes import DTYPES, DType
from ..frontend.values import Value
from ..ir import dialect as D
from ..ir.registry import builtin, define
from ..ir.types import dtype_of_mlir, mlir_type
from ..llvm.translate import bit_width, llvm_type
from ..machine.interpreter import Frame, Interpreter, set_value
from ..machine.shadow import width

if TYPE_CHECKING:
    from ..llvm import Translator
    from ..machine.shadow import ShadowInterpreter


def _unsigned_of(bits: int) -> DType | None:
    """The unsigned (or vector) type of `bits` bits, if the language has one."""
    return DTYPES.get(f"u{bits}")


# ---- the front end ------------------------------------------------------------------------

@builtin("bitcast")
def _build_bitcast(fe: Any, node: ast.Call, args: list[Any]) -> Value:
    if len(args) != 2 or not isinstance(args[0], Value) or not isinstance(args[1], DType):
        raise fe.type_error(node, "bitcast(value, dtype) of a runtime value")
    value, dtype = args
    if dtype.bits != value.dtype.bits or dtype.kind == "bool":
        raise fe.type_error(node, f"bitcast keeps the size: {value.dtype} has {value.dtype.bits} bits, {dtype} has {dtype.bits}")
    op = D.BitcastOp.create(operands=[value.ssa], result_types=[mlir_type(dtype)])
    return Value(fe.emit(op).results[0], dtype)


@builtin("concat")
def _build_concat(fe: Any, node: ast.Call, args: list[Any]) -> Value:
    if len(args) < 2 or not all(isinstance(a, Value) and a.dtype.kind != "bool" for a in args):
        raise fe.type_error(node, "concat(a, b, ...) of two or more runtime values")
    total = sum(a.dtype.bits for a in args)
    wide = _unsigned_of(total)
    if wide is None:
        raise fe.type_error(node, f"concat makes {total} bits; results of 16, 32, 64, 128 or 256 bits exist")
    op = D.ConcatOp.create(operands=[a.ssa for a in args], result_types=[mlir_type(wide)])
    return Value(fe.emit(op).results[0], wide)


@builtin("byte_perm")
def _build_byte_perm(fe: Any, node: ast.Call, args: list[Any]) -> Value:
    if len(args) != 3 or not all(isinstance(a, Value) for a in args[:2]):
        raise fe.type_error(node, "byte_perm(a, b, selector) of two runtime values and a tuple of byte indices")
    selector = args[2]
    total = args[0].dtype.nbytes + args[1].dtype.nbytes
    out = _unsigned_of(8 * len(selector)) if isinstance(selector, tuple) else None
    if out is None or not all(isinstance(i, int) and 0 <= i < total for i in selector):
        raise fe.type_error(node.args[2], f"the selector is a compile-time tuple of 2, 4, 8, 16 or 32 byte indices below {total}")
    op = D.BytePermOp.create(operands=[args[0].ssa, args[1].ssa],
                             properties={"selector": mlir.ArrayAttr([mlir.IntAttr(i) for i in selector])},
                             result_types=[mlir_type(out)])
    return Value(fe.emit(op).results[0], out)


def _build_half(name: str) -> Any:
    def build(fe: Any, node: ast.Call, args: list[Any]) -> Value:
        if len(args) != 1 or not isinstance(args[0], Value) or args[0].dtype.kind == "bool":
            raise fe.type_error(node, f"{name}(value) of a runtime value")
        value = args[0]
        half = _unsigned_of(value.dtype.bits // 2)
        if half is None or value.dtype.bits < 16:
            raise fe.type_error(node, f"{value.dtype} has no {name} half")
        byte = 0 if name == "lo" else value.dtype.nbytes // 2
        op = D.ExtractOp.create(operands=[value.ssa], properties={"byte": mlir.IntAttr(byte)},
                                result_types=[mlir_type(half)])
        return Value(fe.emit(op).results[0], half)

    return build


builtin("lo")(_build_half("lo"))
builtin("hi")(_build_half("hi"))


# ---- the interpreter ----------------------------------------------------------------------

def _bytes_of(frame: Frame, ssa: SSAValue) -> np.ndarray:
    """A value's bytes, one row per thread (a kernel argument, held once, broadcast)."""
    v = frame.values[ssa]
    v = np.broadcast_to(v, (frame.threads, *v.shape)) if v.ndim == 0 else v
    return dtype_of_mlir(ssa.type).encode(v)  # type: ignore[no-any-return]


def _set_bytes(frame: Frame, op: Any, raw: np.ndarray) -> None:
    set_value(frame, op, dtype_of_mlir(op.result.type).decode(raw))


def _interpret_bitcast(interp: Interpreter, op: D.BitcastOp, frame: Frame, mask: np.ndarray) -> None:
    _set_bytes(frame, op, _bytes_of(frame, op.value))


def _interpret_concat(interp: Interpreter, op: D.ConcatOp, frame: Frame, mask: np.ndarray) -> None:
    _set_bytes(frame, op, np.concatenate([_bytes_of(frame, v) for v in op.values], axis=-1))


def _interpret_byte_perm(interp: Interpreter, op: D.BytePermOp, frame: Frame, mask: np.ndarray) -> None:
    both = np.concatenate([_bytes_of(frame, v) for v in (op.a, op.b)], axis=-1)
    _set_bytes(frame, op, both[..., [i.data for i in op.selector.data]])


def _interpret_extract(interp: Interpreter, op: D.ExtractOp, frame: Frame, mask: np.ndarray) -> None:
    start = op.byte.data
    _set_bytes(frame, op, _bytes_of(frame, op.value)[..., start:start + dtype_of_mlir(op.result.type).nbytes])


# ---- shadow tags: a byte's tag goes where the byte goes -------------------------------------

def _shadow_bitcast(s: ShadowInterpreter, op: D.BitcastOp, frame: Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = s.value_tags(frame, op.value).copy()


def _shadow_concat(s: ShadowInterpreter, op: D.ConcatOp, frame: Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = concatenated([s.value_tags(frame, v) for v in op.values])


def _shadow_extract(s: ShadowInterpreter, op: D.ExtractOp, frame: Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = extracted(s.value_tags(frame, op.value), op.byte.data, width(op.result))


def _shadow_byte_perm(s: ShadowInterpreter, op: D.BytePermOp, frame: Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = permuted([s.value_tags(frame, op.a), s.value_tags(frame, op.b)],
                                 [i.data for i in op.selector.data])


# ---- LLVM ---------------------------------------------------------------------------------

def _as_int(t: Translator, x: str, ty: str) -> str:
    """`x` of LLVM type `ty` as the integer of its bits."""
    return x if ty.startswith("i") else t.let(f"bitcast {ty} {x} to i{bit_width(ty)}")


def _from_int(t: Translator, x: str, ty: str, result: SSAValue) -> None:
    """`result` is the integer `x` read as LLVM type `ty`."""
    if ty.startswith("i"):
        t.names[result] = x
    else:
        t.define(result, f"bitcast i{bit_width(ty)} {x} to {ty}")


def _translate_bitcast(t: Translator, op: D.BitcastOp) -> None:
    src, dst = llvm_type(op.value.type, t.where(op)), llvm_type(op.result.type, t.where(op))
    t.define(op.result, f"bitcast {src} {t.value(op.value)} to {dst}")


def _translate_concat(t: Translator, op: D.ConcatOp) -> None:
    dst = llvm_type(op.result.type, t.where(op))
    bits = bit_width(dst)
    total, shift = "0", 0
    for v in op.values:
        ty = llvm_type(v.type, t.where(op))
        part = _as_int(t, t.value(v), ty)
        wide = t.let(f"zext i{bit_width(ty)} {part} to i{bits}") if bit_width(ty) < bits else part
        if shift:
            wide = t.let(f"shl i{bits} {wide}, {shift}")
        total, shift = t.let(f"or i{bits} {total}, {wide}"), shift + bit_width(ty)
    _from_int(t, total, dst, op.result)


def _translate_extract(t: Translator, op: D.ExtractOp) -> None:
    src, dst = llvm_type(op.value.type, t.where(op)), llvm_type(op.result.type, t.where(op))
    word = _as_int(t, t.value(op.value), src)
    shift = 8 * op.byte.data
    if shift:
        word = t.let(f"lshr i{bit_width(src)} {word}, {shift}")
    if bit_width(dst) < bit_width(src):
        word = t.let(f"trunc i{bit_width(src)} {word} to i{bit_width(dst)}")
    _from_int(t, word, dst, op.result)


def _translate_byte_perm(t: Translator, op: D.BytePermOp) -> None:
    a_ty, b_ty = llvm_type(op.a.type, t.where(op)), llvm_type(op.b.type, t.where(op))
    dst = llvm_type(op.result.type, t.where(op))
    wa, wb, bits = bit_width(a_ty), bit_width(b_ty), bit_width(dst)
    both = wa + wb
    wide_a = t.let(f"zext i{wa} {_as_int(t, t.value(op.a), a_ty)} to i{both}")
    wide_b = t.let(f"zext i{wb} {_as_int(t, t.value(op.b), b_ty)} to i{both}")
    high = t.let(f"shl i{both} {wide_b}, {wa}")
    joined = t.let(f"or i{both} {wide_a}, {high}")
    total = "0"
    for k, pick in enumerate(i.data for i in op.selector.data):
        byte = t.let(f"lshr i{both} {joined}, {8 * pick}")
        low = t.let(f"trunc i{both} {byte} to i8")
        wide = t.let(f"zext i8 {low} to i{bits}")
        placed = t.let(f"shl i{bits} {wide}, {8 * k}")
        total = t.let(f"or i{bits} {total}, {placed}")
    _from_int(t, total, dst, op.result)


# ---- the ops ------------------------------------------------------------------------------

define(D.BitcastOp, interpret=_interpret_bitcast, analyze=same_bytes_rule, shadow=_shadow_bitcast,
       translate=_translate_bitcast)
define(D.ConcatOp, interpret=_interpret_concat, analyze=concat_rule, shadow=_shadow_concat,
       translate=_translate_concat)
define(D.ExtractOp, interpret=_interpret_extract, analyze=extract_rule, shadow=_shadow_extract,
       translate=_translate_extract)
define(D.BytePermOp, interpret=_interpret_byte_perm, analyze=byte_perm_rule, shadow=_shadow_byte_perm,
       translate=_translate_byte_perm)
