"""Elementwise math: ``exp``, ``log``, ``log1p``, ``expm1``, ``tanh``, ``erf``, ``sin``, ``cos``,
``pow``, ``abs``, ``floor``, ``ceil`` and ``sigmoid`` (``exp2``, ``log2``, ``sqrt`` and the rest
are `argus.dsl.ops.arithmetic`'s).

Meaning: the function's value computed in double precision (numpy) and rounded to the value's
type, as for every float op; f16 and bf16 are computed the same way. ``abs`` of an integer wraps
(``abs`` of the most negative value is itself) and is built from the integer ops, so the checker
reasons about it symbolically; ``sigmoid(x)`` is ``1 / (1 + exp(-x))``, built from ``exp``.

The GPUs compute the transcendental functions in f32 (f16 and bf16 widened, then rounded back),
from the few instructions both targets' LLVM lowers: ``llvm.exp2.f32`` (the hardware's exp2),
``llvm.sin``/``llvm.cos`` with ``afn`` on an argument reduced to [-pi, pi] first (the hardware's
sine), ``llvm.fma``, ``llvm.rint``, ``llvm.minimum``/``maximum``, ``llvm.copysign``, and integer
bit operations. ``log`` is computed without the hardware's log (whose absolute error near 1
ruins ``log1p`` and ``expm1``): a reduction to [sqrt(1/2), sqrt(2)) and an atanh series.
``docs/language.md`` gives each function's error bound. f64 has no exp2, log or sine on either
GPU: only ``abs``, ``floor`` and ``ceil`` take f64 there; the rest are refused at their line.

Tags: every result is computed data (the checker's default float rule).
"""

from __future__ import annotations

import ast
import builtins
import math as pymath
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import arith, math
from xdsl.ir import Operation

from ..frontend.values import Value
from ..ir.registry import builtin, define
from ..ir.types import dtype_of_mlir
from ..llvm.translate import arith_type, intrinsic_suffix
from ..machine.interpreter import Frame, Interpreter, scalars, set_value
from .arithmetic import float_literal, float_operand

if TYPE_CHECKING:
    from ..llvm import Translator


# ---- the front end ------------------------------------------------------------------------

_erf = np.vectorize(pymath.erf, otypes=[np.float64])

#: Each one-operand function: its op and its meaning (numpy, in double precision).
UNARY: dict[str, tuple[type[Operation], Callable[[np.ndarray], np.ndarray]]] = {
    "exp": (math.ExpOp, np.exp), "log": (math.LogOp, np.log), "log1p": (math.Log1pOp, np.log1p),
    "expm1": (math.ExpM1Op, np.expm1), "tanh": (math.TanhOp, np.tanh), "erf": (math.ErfOp, _erf),
    "sin": (math.SinOp, np.sin), "cos": (math.CosOp, np.cos), "floor": (math.FloorOp, np.floor),
    "ceil": (math.CeilOp, np.ceil),
}


def _build_unary(name: str) -> Callable[..., Value]:
    def build(fe: Any, node: ast.Call, args: list[Any]) -> Value:
        x = float_operand(fe, node, args, name)
        return Value(fe.emit(UNARY[name][0](x.ssa)).results[0], x.dtype)

    return build


for _name in UNARY:
    builtin(_name)(_build_unary(_name))


@builtin("abs")
def _build_abs(fe: Any, node: ast.Call, args: list[Any]) -> Value:
    if len(args) != 1:
        raise fe.type_error(node, f"abs(x) takes one argument, got {len(args)}")
    x = args[0]
    if not isinstance(x, Value):  # a compile-time number: Python's abs
        return fe.constant_within_limits(node, builtins.abs(x))  # type: ignore[no-any-return]
    if x.dtype.is_float:
        return Value(fe.emit(math.AbsFOp(x.ssa)).results[0], x.dtype)
    if not x.dtype.is_integer:
        raise fe.type_error(node, f"abs takes a number, got {x.dtype}")
    if x.dtype.kind != "int":  # unsigned: its own magnitude
        return x
    zero = fe.constant(0, x.dtype)
    negative = fe.emit(arith.CmpiOp(x.ssa, zero.ssa, "slt")).results[0]
    negated = fe.emit(arith.SubiOp(zero.ssa, x.ssa)).results[0]
    return Value(fe.emit(arith.SelectOp(negative, negated, x.ssa)).results[0], x.dtype)


@builtin("pow")
def _build_pow(fe: Any, node: ast.Call, args: list[Any]) -> Value:
    if len(args) != 2:
        raise fe.type_error(node, f"pow(x, y) takes two arguments, got {len(args)}")
    typed = [a for a in args if isinstance(a, Value)]
    if not typed:  # compile-time numbers: Python's pow
        try:
            return fe.constant_within_limits(node, builtins.pow(*args))  # type: ignore[no-any-return]
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as err:
            raise fe.type_error(node, f"pow of compile-time values failed: {err}") from None
    dt = typed[0].dtype
    if not dt.is_float:
        raise fe.type_error(node, f"pow takes floats, got {dt}; convert it, e.g. f32(x)")
    x, y = (fe.runtime(v, dt, node) for v in args)
    if x.dtype != y.dtype:
        raise fe.type_error(node, f"pow's operands have different types ({x.dtype} and {y.dtype}); convert one")
    return Value(fe.emit(math.PowFOp(x.ssa, y.ssa)).results[0], dt)


@builtin("sigmoid")
def _build_sigmoid(fe: Any, node: ast.Call, args: list[Any]) -> Value:
    x = float_operand(fe, node, args, "sigmoid")
    negated = Value(fe.emit(arith.NegfOp(x.ssa)).results[0], x.dtype)
    e = Value(fe.emit(math.ExpOp(negated.ssa)).results[0], x.dtype)
    one = fe.constant(1.0, x.dtype)
    return fe.arith(node, ast.Div(), one, fe.arith(node, ast.Add(), one, e))  # type: ignore[no-any-return]


# ---- the interpreter ----------------------------------------------------------------------

def _interpret(fn: Callable[..., np.ndarray]) -> Callable[..., None]:
    """`fn` of the operands in double precision, rounded to the result type (no warnings: an
    infinity or a NaN is the value the GPU gives too)."""
    def rule(interp: Interpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
        operands = [scalars(frame, v).astype(np.float64) for v in op.operands]
        with np.errstate(all="ignore"):
            result = fn(*operands)
        set_value(frame, op, dtype_of_mlir(op.results[0].type).round(result))

    return rule


# ---- LLVM ---------------------------------------------------------------------------------

class _F32:
    """Emits f32 arithmetic: the building blocks of the composed functions."""

    def __init__(self, t: Translator) -> None:
        self.t = t

    @staticmethod
    def c(value: float) -> str:
        return float_literal(value, "float")

    def bin(self, instr: str, a: str, b: str) -> str:
        return self.t.let(f"{instr} float {a}, {b}")

    def add(self, a: str, b: str) -> str:
        return self.bin("fadd", a, b)

    def sub(self, a: str, b: str) -> str:
        return self.bin("fsub", a, b)

    def mul(self, a: str, b: str) -> str:
        return self.bin("fmul", a, b)

    def div(self, a: str, b: str) -> str:
        return self.bin("fdiv", a, b)

    def fn(self, name: str, *args: str) -> str:
        return self.t.call("float", f"llvm.{name}.f32", [("float", a) for a in args])

    def fma(self, a: str, b: str, c: str) -> str:
        return self.fn("fma", a, b, c)

    def cmp(self, predicate: str, a: str, b: str) -> str:
        return self.t.let(f"fcmp {predicate} float {a}, {b}")

    def neg(self, a: str) -> str:
        return self.t.let(f"fneg float {a}")

    def select(self, cond: str, a: str, b: str) -> str:
        return self.t.let(f"select i1 {cond}, float {a}, float {b}")

    def clamp(self, x: str, low: float, high: float) -> str:
        """x within [low, high]; NaN stays NaN."""
        return self.fn("minimum", self.fn("maximum", x, self.c(low)), self.c(high))

    def horner(self, x: str, coefficients: Sequence[float]) -> str:
        """The polynomial with `coefficients` (highest power first) at x."""
        acc = self.c(coefficients[0])
        for k in coefficients[1:]:
            acc = self.fma(acc, x, self.c(k))
        return acc

    def hardware(self, name: str, x: str) -> str:
        """The hardware's approximate sine or cosine (``afn``: NVPTX lowers only that form)."""
        self.t.declare(f"float @llvm.{name}.f32(float)")
        return self.t.let(f"call afn float @llvm.{name}.f32(float {x})")


_LOG2E_HI = float(np.float32(1.4426950408889634))
_LOG2E_LO = 1.4426950408889634 - _LOG2E_HI
_LN2_HI = 0.693145751953125  # ln 2 with 8 trailing zero bits: k * _LN2_HI is exact for |k| < 256
_LN2_LO = 1.4286068203094173e-06
_TWO_PI_HI = float(np.float32(2 * pymath.pi))
_TWO_PI_LO = 2 * pymath.pi - _TWO_PI_HI
_INF, _NAN = float("inf"), float("nan")


def _exp(f: _F32, x: str) -> str:
    """exp(x) = 2^(x log2 e), the product's rounding error carried separately (exact by fma) and
    applied to the hardware's exp2 to first order."""
    x = f.clamp(x, -104.0, 89.0)  # past these exp is 0 or inf; the error term stays finite
    p = f.mul(x, f.c(_LOG2E_HI))
    err = f.fma(x, f.c(_LOG2E_LO), f.fma(x, f.c(_LOG2E_HI), f.neg(p)))
    r = f.fn("exp2", p)
    corrected = f.fma(r, f.mul(err, f.c(pymath.log(2.0))), r)
    return f.select(f.cmp("oeq", r, f.c(_INF)), r, corrected)


def _log(f: _F32, x: str) -> str:
    """log(x) = k ln 2 + log(m), m in [sqrt(1/2), sqrt(2)): log(m) = 2 atanh(s), s = (m-1)/(m+1)."""
    t = f.t
    tiny = f.cmp("olt", x, f.c(2.0 ** -126))  # subnormal: scaled into the normal range first
    scaled = f.select(tiny, f.mul(x, f.c(2.0 ** 24)), x)
    bits = t.let(f"bitcast float {scaled} to i32")
    shifted = t.let(f"sub i32 {bits}, 1060439283")  # 0x3F3504F3, the bits of sqrt(1/2)
    k = t.let(f"ashr i32 {shifted}, 23")
    mantissa = t.let(f"and i32 {shifted}, 8388607")
    m = t.let(f"bitcast i32 {t.let(f'add i32 {mantissa}, 1060439283')} to float")
    kf = f.sub(t.let(f"sitofp i32 {k} to float"), f.select(tiny, f.c(24.0), f.c(0.0)))
    g = f.sub(m, f.c(1.0))
    s = f.div(g, f.add(g, f.c(2.0)))
    z = f.mul(s, s)
    series = f.mul(f.mul(s, z), f.horner(z, (2 / 9, 2 / 7, 2 / 5, 2 / 3)))  # 2s^3/3 + 2s^5/5 + ...
    log_m = f.fma(s, f.c(2.0), series)
    r = f.fma(kf, f.c(_LN2_HI), f.fma(kf, f.c(_LN2_LO), log_m))
    r = f.select(f.cmp("oeq", x, f.c(_INF)), x, r)
    r = f.select(f.cmp("oeq", x, f.c(0.0)), f.c(-_INF), r)
    return f.select(f.cmp("ult", x, f.c(0.0)), f.c(_NAN), r)  # negative or NaN


def _log1p(f: _F32, x: str) -> str:
    """log(u) x / (u - 1) with u = 1 + x: exact to the accuracy of log (Goldberg's construction)."""
    u = f.add(x, f.c(1.0))
    d = f.sub(u, f.c(1.0))
    r = f.mul(_log(f, u), f.div(x, d))
    r = f.select(f.cmp("oeq", d, f.c(0.0)), x, r)
    return f.select(f.cmp("oeq", u, f.c(_INF)), u, r)


def _expm1(f: _F32, x: str) -> str:
    """(u - 1) x / log(u) with u = exp(x) (Kahan's construction)."""
    u = _exp(f, x)
    d = f.sub(u, f.c(1.0))
    r = f.mul(d, f.div(x, _log(f, u)))
    r = f.select(f.cmp("oeq", d, f.c(-1.0)), d, r)
    r = f.select(f.cmp("oeq", u, f.c(_INF)), u, r)
    return f.select(f.cmp("oeq", d, f.c(0.0)), x, r)


def _tanh(f: _F32, x: str) -> str:
    """e / (e + 2) with e = expm1(2|x|), the sign of x restored; |x| beyond 10 gives 1 exactly."""
    a = f.fn("minimum", f.fn("fabs", x), f.c(10.0))
    e = _expm1(f, f.add(a, a))
    return f.fn("copysign", f.div(e, f.add(e, f.c(2.0))), x)


#: erf(x) / x on [0, 1] as a polynomial of x^2 (a least-squares fit to the double-precision erf
#: on Chebyshev nodes; absolute error below 1e-7).
_ERF_SMALL = (-0.0005696591688320041, 0.004934489261358976, -0.026726964861154556, 0.11280787736177444,
              -0.37612414360046387, 1.1283791065216064)
#: erfc(x) exp(x^2) on [1, 4] as a polynomial of x - 2.5 (the same fit; erf's absolute error below 1e-7).
_ERF_LARGE = (-6.3862098613753915e-06, 2.3758033421472646e-05, -5.358525231713429e-05, 0.00019445626821834594,
              -0.0007389984093606472, 0.0024808619637042284, -0.007999344728887081, 0.024934018030762672,
              -0.0743476003408432, 0.21080654859542847)


def _erf(f: _F32, x: str) -> str:
    """x P(x^2) below 1; 1 - exp(-x^2) Q(x) from 1 to 4; 1 beyond (erf(4) rounds to 1)."""
    a = f.fn("fabs", x)
    small = f.mul(a, f.horner(f.mul(a, a), _ERF_SMALL))
    b = f.fn("minimum", a, f.c(4.0))
    tail = f.mul(_exp(f, f.neg(f.mul(b, b))), f.horner(f.sub(b, f.c(2.5)), _ERF_LARGE))
    r = f.select(f.cmp("olt", a, f.c(1.0)), small, f.sub(f.c(1.0), tail))
    return f.fn("copysign", r, x)


def _reduced(f: _F32, x: str) -> str:
    """x less the nearest multiple of 2 pi (Cody and Waite: 2 pi in two parts, exact products)."""
    k = f.neg(f.fn("rint", f.mul(x, f.c(1 / (2 * pymath.pi)))))
    reduced = f.fma(k, f.c(_TWO_PI_LO), f.fma(k, f.c(_TWO_PI_HI), x))
    return f.select(f.cmp("oeq", k, f.c(0.0)), x, reduced)  # already there: x itself (-0 stays -0)


def _sin(f: _F32, x: str) -> str:
    """Below 2^-12, sin x rounds to x (the hardware's absolute error would be all of it)."""
    tiny = f.cmp("olt", f.fn("fabs", x), f.c(2.0 ** -12))
    return f.select(tiny, x, f.hardware("sin", _reduced(f, x)))


def _cos(f: _F32, x: str) -> str:
    return f.hardware("cos", _reduced(f, x))


def _pow(f: _F32, x: str, y: str) -> str:
    """exp(y log|x|), the product's rounding error carried to first order; the sign and the
    special cases as C's pow (and numpy's) give them."""
    t = f.t
    a = f.fn("fabs", x)
    l = _log(f, a)
    p = f.mul(y, l)
    err = f.fma(y, l, f.neg(p))  # NaN where the product is infinite: then exp(p) is 0 or inf already
    err = f.select(f.cmp("uno", err, err), f.c(0.0), err)
    e = _exp(f, p)
    r = f.select(f.cmp("oeq", e, f.c(_INF)), e, f.fma(e, err, e))
    whole = f.cmp("oeq", f.fn("floor", y), y)
    half = f.mul(y, f.c(0.5))
    odd = t.let(f"and i1 {whole}, {f.cmp('one', f.fn('floor', half), half)}")
    negative = f.cmp("olt", f.fn("copysign", f.c(1.0), x), f.c(0.0))
    r = f.select(t.let(f"and i1 {negative}, {odd}"), f.neg(r), r)
    finite_negative = t.let(f"and i1 {f.cmp('olt', x, f.c(0.0))}, {f.cmp('one', x, f.c(-_INF))}")
    r = f.select(t.let(f"and i1 {finite_negative}, {t.let(f'xor i1 {whole}, true')}"), f.c(_NAN), r)
    unit_to_infinity = t.let(f"and i1 {f.cmp('oeq', a, f.c(1.0))}, {f.cmp('oeq', f.fn('fabs', y), f.c(_INF))}")
    trivial = t.let(f"or i1 {f.cmp('oeq', y, f.c(0.0))}, {f.cmp('oeq', x, f.c(1.0))}")
    one = t.let(f"or i1 {unit_to_infinity}, {trivial}")
    return f.select(one, f.c(1.0), r)


#: Each function's composition in f32, by op.
_FORMS: dict[type[Operation], tuple[str, Callable[..., str]]] = {
    math.ExpOp: ("exp", _exp), math.LogOp: ("log", _log), math.Log1pOp: ("log1p", _log1p),
    math.ExpM1Op: ("expm1", _expm1), math.TanhOp: ("tanh", _tanh), math.ErfOp: ("erf", _erf),
    math.SinOp: ("sin", _sin), math.CosOp: ("cos", _cos), math.PowFOp: ("pow", _pow),
}


def _translate_composed(t: Translator, op: Any) -> None:
    """The function computed in f32 (a narrower float widened, the result rounded back)."""
    name, form = _FORMS[type(op)]
    ty = arith_type(op.results[0].type, t.where(op))
    if ty == "double":
        raise t.unsupported(op, f"{name} of an f64 value (neither GPU has f64 instructions to build it from; "
                                "convert to f32)")
    operands = [t.value(v) for v in op.operands]
    if ty != "float":
        operands = [t.let(f"fpext {ty} {v} to float") for v in operands]
    result = form(_F32(t), *operands)
    if ty == "float":
        t.names[op.results[0]] = result
    else:
        t.define(op.results[0], f"fptrunc float {result} to {ty}")


_INTRINSICS = {math.AbsFOp: "fabs", math.FloorOp: "floor", math.CeilOp: "ceil"}


def _translate_intrinsic(t: Translator, op: Any) -> None:
    """An LLVM intrinsic both GPU targets lower in every float type, f64 included."""
    ty = arith_type(op.results[0].type, t.where(op))
    t.names[op.results[0]] = t.call(ty, f"llvm.{_INTRINSICS[type(op)]}.{intrinsic_suffix(ty)}",
                                    [(ty, t.value(op.operands[0]))])


# ---- the ops ------------------------------------------------------------------------------

for _op_type, _fn in UNARY.values():
    define(_op_type, interpret=_interpret(_fn),
           translate=_translate_intrinsic if _op_type in _INTRINSICS else _translate_composed)
define(math.AbsFOp, interpret=_interpret(np.abs), translate=_translate_intrinsic)
define(math.PowFOp, interpret=_interpret(np.power), translate=_translate_composed)
