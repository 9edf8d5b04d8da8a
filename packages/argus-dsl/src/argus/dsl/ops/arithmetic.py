"""Arithmetic: constants, integer and float ops, comparisons, `select`, conversions between
number types, and the math builtins ``exp2``, ``log2``, ``sqrt``, ``rsqrt``, ``rcp`` and ``fma``.

Integer ops and integer conversions mean what `argus.dsl.ops.integers` defines, the one table
the interpreter, the checker and the LLVM lowering's tests read: they wrap at their width, and
where the GPU's result would be undefined (a division by zero, the most negative value divided
by -1, a shift by the width or more) the interpreter faults, while the LLVM lowering still gives
that table's answer. Float ops are computed in numpy and rounded to the result type. A float
converted to an integer saturates, NaN giving 0.

Tags: a constant's result is ⊥ (it is the same data everywhere), a select takes the tags of the
side it chose, and every other result is computed data (⊤ unless every input is ⊥) — in the
shadow interpreter and in the checker alike. The checker's rules (symbolic integers through
`argus.dsl.check.arithmetic`) stay there; they are only declared here.

Python's operators on runtime values (``a + b``, ``a < b``, ``x if c else y``, ``min``/``max``)
and conversions (``f32(x)``) are built by the front end's expressions
(`argus.dsl.frontend.expressions`), which every family's builders share; the builtins below are
this family's own.
"""

from __future__ import annotations

import ast
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify import reductions, sums
from xdsl.dialects import arith, math
from xdsl.ir import Operation

from ..check.arithmetic import (
    INT_RULES,
    cast_rule,
    constant_rule,
    difference_rule,
    exp2_rule,
    float_constant,
    int_op_rule,
    max_rule,
    nonfinite,
    over_zero,
    product_cast,
    scale_rule,
    sum_rule,
    zeroed,
    zeroes,
)
from ..check.access import cleared
from ..check.rules import float_op_rule
from ..dtypes import DTYPES, DType, boolean
from ..errors import KernelFault
from ..frontend.values import Value
from ..ir.registry import builtin, define
from ..ir.types import dtype_of_mlir
from ..llvm.translate import arith_type, bit_width, element_type, intrinsic_suffix, llvm_type
from ..machine.interpreter import Frame, Interpreter, scalars, set_value
from ..machine.shadow import width
from . import integers
from .integers import IntegerCast, IntegerOp

if TYPE_CHECKING:
    from ..llvm import Translator
    from ..machine.shadow import ShadowInterpreter

Rule = Callable[[Interpreter, Any, Frame, np.ndarray], None]


# ---- the front end ------------------------------------------------------------------------

@builtin("select")
def _build_select(fe: Any, node: ast.Call, args: list[Any]) -> Any:
    if len(args) != 3:
        raise fe.type_error(node, "select(cond, a, b)")
    return fe.select(node, *args)


_MATH_BUILTINS: dict[str, type] = {"exp2": math.Exp2Op, "log2": math.Log2Op, "rsqrt": math.RsqrtOp,
                                   "sqrt": math.SqrtOp}


def float_operand(fe: Any, node: ast.Call, args: list[Any], name: str) -> Value:
    """The one runtime float argument of `name`, or an error at the call's line."""
    if len(args) != 1:
        raise fe.type_error(node, f"{name}(x) takes one argument, got {len(args)}")
    x = args[0]
    if not isinstance(x, Value):
        raise fe.type_error(node, f"{name} of a compile-time value: compute it in Python before the kernel")
    if not x.dtype.is_float:
        raise fe.type_error(node, f"{name} takes a float, got {x.dtype}; convert it, e.g. f32(x)")
    return x



def _build_math(name: str) -> Callable[..., Value]:
    def build(fe: Any, node: ast.Call, args: list[Any]) -> Value:
        x = float_operand(fe, node, args, name)
        return Value(fe.emit(_MATH_BUILTINS[name](x.ssa)).results[0], x.dtype)

    return build


for _name in _MATH_BUILTINS:
    builtin(_name)(_build_math(_name))


@builtin("rcp")
def _build_rcp(fe: Any, node: ast.Call, args: list[Any]) -> Value:
    if len(args) != 1 or not isinstance(args[0], Value) or not args[0].dtype.is_float:
        raise fe.type_error(node, "rcp(x) of a runtime float")
    return fe.arith(node, ast.Div(), fe.constant(1.0, args[0].dtype), args[0])  # type: ignore[no-any-return]


@builtin("fma")
def _build_fma(fe: Any, node: ast.Call, args: list[Any]) -> Value:
    if len(args) != 3:
        raise fe.type_error(node, "fma(a, b, c)")
    typed = [a for a in args if isinstance(a, Value)]
    if not typed or not typed[0].dtype.is_float:
        raise fe.type_error(node, "fma takes floats, at least one of them a runtime value")
    dt = typed[0].dtype
    a, b, c = (fe.runtime(v, dt, node) for v in args)
    return Value(fe.emit(math.FmaOp(a.ssa, b.ssa, c.ssa)).results[0], dt)


# ---- the interpreter ----------------------------------------------------------------------

def _result_dtype(op: Operation) -> DType:
    return dtype_of_mlir(op.results[0].type)


def _interpret_constant(interp: Interpreter, op: arith.ConstantOp, frame: Frame, mask: np.ndarray) -> None:
    value = interp.constants.get(op)
    if value is None:  # the same in every block and thread: built once (values are never mutated)
        dtype = _result_dtype(op)
        raw = op.value.value.data  # type: ignore[union-attr]
        value = np.full(frame.threads, dtype.round(np.asarray(raw, dtype=dtype.numpy if dtype is not boolean else bool)))
        interp.constants[op] = value
    set_value(frame, op, value)


def _interpret_float(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Rule:
    """A float op: computed in numpy, rounded to the result type."""
    def rule(interp: Interpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
        set_value(frame, op, _result_dtype(op).round(fn(scalars(frame, op.operands[0]), scalars(frame, op.operands[1]))))

    return rule


def _interpret_unary(fn: Callable[[np.ndarray], np.ndarray]) -> Rule:
    """A float function of one operand, computed in double precision and rounded."""
    def rule(interp: Interpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
        dtype = _result_dtype(op)
        set_value(frame, op, dtype.round(fn(scalars(frame, op.operands[0]).astype(np.float64))))

    return rule


def _interpret_fma(interp: Interpreter, op: math.FmaOp, frame: Frame, mask: np.ndarray) -> None:
    a, b, c = (scalars(frame, v).astype(np.float64) for v in op.operands)
    set_value(frame, op, _result_dtype(op).round(a * b + c))


def _interpret_integer(kind: IntegerOp) -> Rule:
    """An integer op as `argus.dsl.ops.integers` defines it, faulting where it is undefined."""
    def rule(interp: Interpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
        dtype = _result_dtype(op)
        a, b = scalars(frame, op.operands[0]), scalars(frame, op.operands[1])
        bits = integers.width_of(op.results[0].type)
        bad = mask & kind.undefined(a, b, bits)
        if bad.any():
            thread = int(np.flatnonzero(bad)[0])
            raise interp.fault("undefined-arithmetic", f"thread {thread} {_undefined(kind, a[thread], b[thread], dtype)}",
                               op, frame, thread=thread)
        set_value(frame, op, kind(a, b, bits))

    return rule


def _undefined(kind: IntegerOp, a: Any, b: Any, dtype: DType) -> str:
    """What a thread did that the GPU leaves undefined, in words."""
    if kind.shifts:
        return f"shifts a {dtype} by {int(b)} bits (0 to {dtype.bits - 1} are defined)"
    if int(b) == 0:
        return "divides by zero"
    return f"divides {int(a)} by -1 (the quotient {-int(a)} does not fit in {dtype})"


def _interpret_integer_cast(kind: IntegerCast) -> Rule:
    """A conversion to or from integers as `argus.dsl.ops.integers` defines it."""
    def rule(interp: Interpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
        source, dtype = op.operands[0], _result_dtype(op)
        bits = 0 if kind.from_float else integers.width_of(source.type)
        target = dtype.numpy if kind.to_float else integers.width_of(op.results[0].type)
        set_value(frame, op, dtype.round(kind(scalars(frame, source), bits, target)))

    return rule


def _interpret_float_cast(interp: Interpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
    """A float widened or narrowed (rounded to the result type)."""
    dtype = _result_dtype(op)
    set_value(frame, op, dtype.round(np.asarray(scalars(frame, op.operands[0])).astype(dtype.numpy)))


def _interpret_cmpi(interp: Interpreter, op: arith.CmpiOp, frame: Frame, mask: np.ndarray) -> None:
    a, b = scalars(frame, op.lhs), scalars(frame, op.rhs)
    set_value(frame, op, integers.compare(op.predicate.value.data, a, b, integers.width_of(op.lhs.type)))


#: The float predicates the language builds (ordered comparisons, and != as unordered).
_CMPF = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal, 6: np.not_equal, 13: np.not_equal}


def _interpret_cmpf(interp: Interpreter, op: arith.CmpfOp, frame: Frame, mask: np.ndarray) -> None:
    pred = op.predicate.value.data
    if pred not in _CMPF:
        raise KernelFault("unsupported", f"float predicate {pred}", interp.locations.get(op), {})
    set_value(frame, op, _CMPF[pred](scalars(frame, op.lhs), scalars(frame, op.rhs)))


def _interpret_select(interp: Interpreter, op: arith.SelectOp, frame: Frame, mask: np.ndarray) -> None:
    set_value(frame, op, np.where(scalars(frame, op.cond), scalars(frame, op.lhs), scalars(frame, op.rhs)))


# ---- shadow tags --------------------------------------------------------------------------

def _shadow_constant(s: ShadowInterpreter, op: arith.ConstantOp, frame: Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = np.zeros((frame.threads, width(op.result)), np.int64)


def _shadow_select(s: ShadowInterpreter, op: arith.SelectOp, frame: Frame, mask: np.ndarray) -> None:
    cond = scalars(frame, op.cond).astype(bool)[:, None]
    sides = [cleared(s.table, v, s.value_tags(frame, v), True) for v in (op.lhs, op.rhs)]  # (a 0.0 chosen: cleared)
    s.tags[op.result] = np.where(cond, sides[0], sides[1])


# ---- LLVM ---------------------------------------------------------------------------------

#: The LLVM type of a 128-bit value: four 32-bit words, the lowest first.
_WORDS = element_type(DTYPES["u128"])


def float_literal(value: float, llvm: str) -> str:
    """A float constant as LLVM writes it: the exact double for float and double, the bits for
    half and bfloat (bfloat rounded to nearest even)."""
    if llvm == "double" or llvm == "float":
        if llvm == "float":
            value = struct.unpack("<f", struct.pack("<f", value))[0]
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if llvm == "half":
        return "0xH%04X" % struct.unpack("<H", struct.pack("<e", value))[0]
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    if value != value:
        return "0xR7FC0"
    return "0xR%04X" % (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)


def _translate_constant(t: Translator, op: arith.ConstantOp) -> None:
    ty = arith_type(op.result.type, t.where(op))
    attr = op.value
    if ty == "i1":
        t.names[op.result] = "true" if attr.value.data else "false"  # type: ignore[union-attr]
    elif ty.startswith("i"):
        t.names[op.result] = str(attr.value.data)  # type: ignore[union-attr]
    elif ty == _WORDS:
        bits = int(attr.value.data) % (1 << 128)  # type: ignore[union-attr]
        t.names[op.result] = "<" + ", ".join(f"i32 {(bits >> (32 * i)) & 0xFFFFFFFF}" for i in range(4)) + ">"
    else:
        t.names[op.result] = float_literal(float(attr.value.data), ty)  # type: ignore[union-attr]


_BINARY = {arith.AddiOp: "add", arith.SubiOp: "sub", arith.MuliOp: "mul", arith.AndIOp: "and", arith.OrIOp: "or",
           arith.XOrIOp: "xor", arith.AddfOp: "fadd", arith.SubfOp: "fsub", arith.MulfOp: "fmul", arith.DivfOp: "fdiv"}
_MINMAX = {arith.MinSIOp: "smin", arith.MaxSIOp: "smax", arith.MinUIOp: "umin", arith.MaxUIOp: "umax",
           arith.MinimumfOp: "minimum", arith.MaximumfOp: "maximum"}


def _translate_binary(t: Translator, op: Any) -> None:
    ty = arith_type(op.result.type, t.where(op))
    t.define(op.result, f"{_BINARY[type(op)]} {ty} {t.value(op.lhs)}, {t.value(op.rhs)}")


def _translate_minmax(t: Translator, op: Any) -> None:
    ty = arith_type(op.result.type, t.where(op))
    t.names[op.result] = t.call(ty, f"llvm.{_MINMAX[type(op)]}.{intrinsic_suffix(ty)}",
                                [(ty, t.value(op.lhs)), (ty, t.value(op.rhs))])


def _nonzero(t: Translator, ty: str, b: str) -> str:
    """The divisor, with 0 replaced by 1 (the table's answer for a division by zero)."""
    if b.lstrip("-").isdigit():
        return b if int(b) != 0 else "1"
    zero = t.let(f"icmp eq {ty} {b}, 0")
    return t.let(f"select i1 {zero}, {ty} 1, {ty} {b}")


def _translate_floordiv(t: Translator, op: arith.FloorDivSIOp) -> None:
    ty = arith_type(op.result.type, t.where(op))
    a, b = t.value(op.lhs), _nonzero(t, ty, t.value(op.rhs))
    q = t.let(f"sdiv {ty} {a}, {b}")
    r = t.let(f"srem {ty} {a}, {b}")
    # floor: one less when the remainder is nonzero and its sign differs from the divisor's
    nonzero = t.let(f"icmp ne {ty} {r}, 0")
    signs = t.let(f"xor {ty} {r}, {b}")
    differ = t.let(f"icmp slt {ty} {signs}, 0")
    fix = t.let(f"zext i1 {t.let(f'and i1 {nonzero}, {differ}')} to {ty}")
    t.names[op.result] = t.let(f"sub {ty} {q}, {fix}")


_DIVISIONS = {arith.DivSIOp: "sdiv", arith.DivUIOp: "udiv", arith.RemUIOp: "urem", arith.RemSIOp: "srem"}


def _translate_division(t: Translator, op: Any) -> None:
    ty = arith_type(op.result.type, t.where(op))
    t.define(op.result, f"{_DIVISIONS[type(op)]} {ty} {t.value(op.lhs)}, {_nonzero(t, ty, t.value(op.rhs))}")


_SHIFTS = {arith.ShLIOp: "shl", arith.ShRSIOp: "ashr", arith.ShRUIOp: "lshr"}


def _translate_shift(t: Translator, op: Any) -> None:
    ty = arith_type(op.result.type, t.where(op))
    bits = bit_width(ty)
    a, b = t.value(op.lhs), t.value(op.rhs)
    instr = _SHIFTS[type(op)]
    if b.lstrip("-").isdigit() and 0 <= int(b) < bits:
        t.define(op.result, f"{instr} {ty} {a}, {b}")
        return
    # amounts of the width or more (read unsigned) shift every bit out: 0, or the sign (ashr)
    inside = t.let(f"icmp ult {ty} {b}, {bits}")
    if instr == "ashr":
        amount = t.let(f"select i1 {inside}, {ty} {b}, {ty} {bits - 1}")
        t.define(op.result, f"ashr {ty} {a}, {amount}")
        return
    shifted = t.let(f"{instr} {ty} {a}, {b}")  # poison past the width, but then not selected
    t.define(op.result, f"select i1 {inside}, {ty} {shifted}, {ty} 0")


_ICMP = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult", 7: "ule", 8: "ugt", 9: "uge"}
_FCMP = {0: "false", 1: "oeq", 2: "ogt", 3: "oge", 4: "olt", 5: "ole", 6: "one", 7: "ord", 8: "ueq", 9: "ugt",
         10: "uge", 11: "ult", 12: "ule", 13: "une", 14: "uno", 15: "true"}


def _translate_compare(t: Translator, op: arith.CmpiOp | arith.CmpfOp) -> None:
    ty = arith_type(op.lhs.type, t.where(op))
    instr, predicates = ("icmp", _ICMP) if isinstance(op, arith.CmpiOp) else ("fcmp", _FCMP)
    t.define(op.result, f"{instr} {predicates[op.predicate.value.data]} {ty} {t.value(op.lhs)}, {t.value(op.rhs)}")


def _translate_select(t: Translator, op: arith.SelectOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    t.define(op.result, f"select i1 {t.value(op.cond)}, {ty} {t.value(op.lhs)}, {ty} {t.value(op.rhs)}")


def _translate_negf(t: Translator, op: arith.NegfOp) -> None:
    ty = arith_type(op.result.type, t.where(op))
    t.define(op.result, f"fneg {ty} {t.value(op.operand)}")


_CASTS = {arith.ExtFOp: "fpext", arith.TruncFOp: "fptrunc", arith.SIToFPOp: "sitofp", arith.UIToFPOp: "uitofp",
          arith.TruncIOp: "trunc", arith.ExtSIOp: "sext", arith.ExtUIOp: "zext", arith.FPToSIOp: "fptosi",
          arith.FPToUIOp: "fptoui"}


def _translate_cast(t: Translator, op: Any) -> None:
    src = arith_type(op.operands[0].type, t.where(op))
    dst = arith_type(op.result.type, t.where(op))
    x = t.value(op.operands[0])
    instr = _CASTS[type(op)]
    if isinstance(op, (arith.FPToSIOp, arith.FPToUIOp)):  # saturating, NaN -> 0, like the interpreter
        t.names[op.result] = t.call(dst, f"llvm.{instr}.sat.{dst}.{intrinsic_suffix(src)}", [(src, x)])
        return
    t.define(op.result, f"{instr} {src} {x} to {dst}")


_MATH = {math.Exp2Op: "exp2", math.Log2Op: "log2", math.SqrtOp: "sqrt"}


def _translate_math(t: Translator, op: Any) -> None:
    ty = arith_type(op.result.type, t.where(op))
    if ty == "double" and type(op) in (math.Exp2Op, math.Log2Op):  # LLVM would abort, with no line
        raise t.unsupported(op, f"{_MATH[type(op)]} of an f64 value (LLVM's GPU targets have no instruction or "
                                "library call for it; convert to f32)")
    x = t.value(op.operands[0])
    if isinstance(op, math.RsqrtOp):
        root = t.call(ty, f"llvm.sqrt.{intrinsic_suffix(ty)}", [(ty, x)])
        t.define(op.result, f"fdiv {ty} {float_literal(1.0, ty)}, {root}")
        return
    t.names[op.result] = t.call(ty, f"llvm.{_MATH[type(op)]}.{intrinsic_suffix(ty)}", [(ty, x)])


def _translate_fma(t: Translator, op: math.FmaOp) -> None:
    ty = arith_type(op.result.type, t.where(op))
    a, b, c = (t.value(v) for v in op.operands)
    t.names[op.result] = t.call(ty, f"llvm.fma.{intrinsic_suffix(ty)}", [(ty, a), (ty, b), (ty, c)])


# ---- the ops ------------------------------------------------------------------------------

define(arith.ConstantOp, interpret=_interpret_constant, analyze=constant_rule, shadow=_shadow_constant,
       translate=_translate_constant)

_INTEGER_TRANSLATIONS: dict[type, Callable[..., None]] = {
    **dict.fromkeys((arith.AddiOp, arith.SubiOp, arith.MuliOp, arith.AndIOp, arith.OrIOp, arith.XOrIOp),
                    _translate_binary),
    **dict.fromkeys((arith.MinSIOp, arith.MaxSIOp, arith.MinUIOp, arith.MaxUIOp), _translate_minmax),
    arith.FloorDivSIOp: _translate_floordiv,
    **dict.fromkeys(_DIVISIONS, _translate_division),
    **dict.fromkeys(_SHIFTS, _translate_shift),
}
for _op_type, _kind in integers.INTEGER_OPS.items():  # each op of the table, with its symbolic form
    if _op_type not in INT_RULES or _op_type not in _INTEGER_TRANSLATIONS:
        raise TypeError(f"{_op_type.__name__}: an integer op of argus.dsl.ops.integers needs a checker rule "
                        "(argus.dsl.check.arithmetic.INT_RULES) and an LLVM rule")
    define(_op_type, interpret=_interpret_integer(_kind), analyze=int_op_rule, translate=_INTEGER_TRANSLATIONS[_op_type])

for _op_type, _cast in integers.INTEGER_CASTS.items():
    define(_op_type, interpret=_interpret_integer_cast(_cast), analyze=cast_rule, translate=_translate_cast)
def _shadow_float_cast(s: Any, op: Any, frame: Frame, mask: np.ndarray) -> None:
    """A float conversion is computed data, except that products stay products (`product_cast`)."""
    s.computed(op, frame)
    kept = product_cast(s.table, s.value_tags(frame, op.operands[0]), op.results[0]) \
        if s.table.asserted else None
    if kept is not None:
        s.tags[op.results[0]] = kept


for _op_type in (arith.ExtFOp, arith.TruncFOp):
    define(_op_type, interpret=_interpret_float_cast, analyze=cast_rule, shadow=_shadow_float_cast,
           translate=_translate_cast)

# float results are computed data: the checker's default rule (⊤ unless every input is ⊥)
def _shadow_scale(s: Any, op: Any, frame: Frame, mask: np.ndarray) -> None:
    """A float product or quotient: computed data, or a scaled product (`scale_rule`)."""
    s.computed(op, frame)
    if not s.table.asserted:
        return
    result = op.results[0]
    if nonfinite(op.lhs, op.rhs):
        return
    if zeroes(op, op.lhs, op.rhs):
        s.tags[result] = zeroed(s.table, s.tags[result])
        return
    if over_zero(op, op.rhs):
        return
    kept = s.table.products.scaled(s.value_tags(frame, op.lhs), s.value_tags(frame, op.rhs), s.tags[result],
                                   isinstance(op, arith.MulfOp))
    if kept is not None:
        s.tags[result] = kept
    _shadow_kept(s, result, reductions.scaled(s.table, s.value_tags(frame, op.lhs), s.value_tags(frame, op.rhs),
                                              dtype_of_mlir(result.type).name, isinstance(op, arith.MulfOp),
                                              (float_constant(op.lhs), float_constant(op.rhs))))


def _shadow_kept(s: Any, result: Any, found: np.ndarray | None) -> None:
    """A reduction rule's byte tags where it holds (`argus.verify.reductions`), as the checker keeps them."""
    if found is not None:
        s.tags[result] = np.where(found >= 0, found, s.tags[result])


def _shadow_reduction(rule: Callable[..., np.ndarray | None]) -> Callable[..., None]:
    """The shadow rule of a float op that may reduce a row (`max_rule`, `difference_rule`, `exp2_rule`)."""
    def shadow(s: Any, op: Any, frame: Frame, mask: np.ndarray) -> None:
        s.computed(op, frame)
        if s.table.asserted:
            result = op.results[0]
            _shadow_kept(s, result, rule(s.table, *(s.value_tags(frame, v) for v in op.operands),
                                         dtype_of_mlir(result.type).name))
    return shadow


def _shadow_sum(s: Any, op: Any, frame: Frame, mask: np.ndarray) -> None:
    """A float sum: computed data, or the sum of two tagged elements (`sum_rule`)."""
    s.computed(op, frame)
    if not s.table.asserted:
        return
    result = op.results[0]
    found = sums.added(s.table, s.value_tags(frame, op.lhs), s.value_tags(frame, op.rhs),
                       dtype_of_mlir(result.type).name)
    if found is not None:
        s.tags[result] = np.where(found >= 0, found, s.tags[result])
    _shadow_kept(s, result, reductions.added(s.table, s.value_tags(frame, op.lhs), s.value_tags(frame, op.rhs),
                                             dtype_of_mlir(result.type).name))


define(arith.AddfOp, interpret=_interpret_float(np.add), analyze=sum_rule, shadow=_shadow_sum,
       translate=_translate_binary)
define(arith.SubfOp, interpret=_interpret_float(np.subtract), analyze=difference_rule,
       shadow=_shadow_reduction(reductions.subtracted), translate=_translate_binary)
for _op_type, _fn in ((arith.MulfOp, np.multiply), (arith.DivfOp, np.divide)):
    define(_op_type, interpret=_interpret_float(_fn), analyze=scale_rule, shadow=_shadow_scale,
           translate=_translate_binary)
define(arith.MinimumfOp, interpret=_interpret_float(np.minimum), translate=_translate_minmax)
define(arith.MaximumfOp, interpret=_interpret_float(np.maximum), analyze=max_rule,
       shadow=_shadow_reduction(reductions.maximum), translate=_translate_minmax)
define(arith.NegfOp, interpret=_interpret_unary(np.negative), translate=_translate_negf)

define(arith.CmpiOp, interpret=_interpret_cmpi, analyze=int_op_rule, translate=_translate_compare)
define(arith.CmpfOp, interpret=_interpret_cmpf, translate=_translate_compare)
define(arith.SelectOp, interpret=_interpret_select, analyze=int_op_rule, shadow=_shadow_select,
       translate=_translate_select)

define(math.Exp2Op, interpret=_interpret_unary(np.exp2), analyze=exp2_rule,
       shadow=_shadow_reduction(reductions.exponential), translate=_translate_math)
for _op_type, _fn in ((math.Log2Op, np.log2), (math.SqrtOp, np.sqrt), (math.RsqrtOp, lambda x: 1.0 / np.sqrt(x))):
    define(_op_type, interpret=_interpret_unary(_fn), translate=_translate_math)
define(math.FmaOp, interpret=_interpret_fma, analyze=float_op_rule, translate=_translate_fma)
