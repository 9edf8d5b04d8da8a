"""The arithmetic family (argus.dsl.ops.arithmetic): constants, integer and float ops,
comparisons, select, conversions and the math builtins are declared once, and each consumer —
the interpreter, the shadow tags, the static checker, the LLVM translation, the front end —
reads its part from that declaration. Integer semantics themselves (every op at every width,
against the LLVM lowering run natively) are tested in test_integer_semantics.py."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    CodegenError,
    KernelFault,
    Tensor,
    exp2,
    f16,
    f32,
    f64,
    fma,
    i16,
    i32,
    i64,
    kernel,
    log2,
    make_local,
    rcp,
    rsqrt,
    select,
    sqrt,
    tag,
    thread_idx,
    u32,
    u64,
)
from argus.dsl.check import rules as check_rules
from argus.dsl.check.arithmetic import (INT_RULES, cast_rule, constant_rule, difference_rule, exp2_rule, int_op_rule,
                                        max_rule, scale_rule, sum_rule)
from argus.dsl.check.rules import float_op_rule
from argus.dsl.check.verification import verify_kernel
from argus.dsl.frontend.calls import BUILDERS
from argus.dsl.ir.registry import meaning
from argus.dsl.llvm import translate
from argus.dsl.machine import interpreter, shadow
from argus.dsl.machine.shadow import check_launch
from argus.dsl.ops.integers import INTEGER_CASTS, INTEGER_OPS
from argus.verify import Verdict
from xdsl.dialects import arith, math

FLOAT_OPS = (arith.AddfOp, arith.SubfOp, arith.MinimumfOp, arith.MaximumfOp, arith.NegfOp,
             arith.CmpfOp, math.Exp2Op, math.Log2Op, math.SqrtOp, math.RsqrtOp)
#: Each op of the family and its tag rule in the checker (None: computed data, the default).
OPS = {
    arith.ConstantOp: constant_rule, arith.CmpiOp: int_op_rule, arith.SelectOp: int_op_rule,
    **dict.fromkeys(INTEGER_OPS, int_op_rule),
    **dict.fromkeys((*INTEGER_CASTS, arith.ExtFOp, arith.TruncFOp), cast_rule),
    **dict.fromkeys(FLOAT_OPS, None),
    **dict.fromkeys((arith.MulfOp, arith.DivfOp), scale_rule),
    arith.AddfOp: sum_rule,
    arith.MaximumfOp: max_rule, arith.SubfOp: difference_rule, math.Exp2Op: exp2_rule,
    math.FmaOp: float_op_rule,
}
#: Ops with a shadow rule of their own: constants, selects, what keeps a product's tags (float
#: conversions, scales), what makes a sum's (float additions) and a reduction's or softmax's
#: (maxima, differences, exp2).
WITH_SHADOW = (arith.ConstantOp, arith.SelectOp, arith.ExtFOp, arith.TruncFOp, arith.MulfOp, arith.DivfOp,
               arith.AddfOp, arith.MaximumfOp, arith.SubfOp, math.Exp2Op)


@pytest.mark.parametrize("op_type", list(OPS), ids=lambda t: t.__name__)
def test_each_op_is_declared_once_with_every_consumers_part(op_type):
    m = meaning(op_type)
    assert m is not None and m.analyze is OPS[op_type]
    assert m.interpret is not None and m.translate is not None
    assert (m.shadow is not None) == (op_type in WITH_SHADOW)
    assert m.liveness is None and m.lower is None and not m.sync and not m.collective  # pure
    # each consumer dispatches to the declared part (no second, older rule beside it)
    assert interpreter.RULES[op_type] is m.interpret and translate.RULES[op_type] is m.translate
    assert check_rules.RULES.get(op_type) is m.analyze and shadow.RULES.get(op_type) is m.shadow


def test_every_integer_op_has_a_symbolic_form():
    assert set(INTEGER_OPS) | {arith.CmpiOp, arith.SelectOp} == set(INT_RULES)


@pytest.mark.parametrize("name", ["select", "exp2", "log2", "rsqrt", "sqrt", "rcp", "fma"])
def test_each_builtin_is_built_by_the_family(name):
    assert BUILDERS[name].__module__ == "argus.dsl.ops.arithmetic"


# ---- floats ---------------------------------------------------------------------------------

@kernel(block=(32,))
def floats(x: Tensor[f32, 32], y: Tensor[f32, 32], out: Tensor[f32, 8, 32], h: Tensor[f16, 32],
           n: Tensor[i32, 32], w: Tensor[u32, 32]):
    t = thread_idx.x
    a = x[t]
    b = y[t]
    out[0, t] = (a + b) * (a - b) / b
    out[1, t] = min(a, b) - max(a, -b)
    out[2, t] = exp2(a) + b
    out[3, t] = sqrt(b) * rsqrt(b) + rcp(b)
    out[4, t] = fma(a, b, 0.5)
    out[5, t] = select(a < b, a, b)
    h[t] = f16(a)
    out[6, t] = f32(h[t]) + f32(i32(a * 100.0))
    n[t] = i32(a * 100.0)
    w[t] = u32(b * 10.0)
    out[7, t] = f32(w[t])


def _floats_inputs():
    rng = np.random.default_rng(3)
    x = rng.uniform(-4, 4, 32).astype(np.float32)
    y = rng.uniform(0.25, 4, 32).astype(np.float32)
    return x, y


def test_float_ops_compute_in_numpy_rounded_to_their_type_on_the_interpreter():
    x, y = _floats_inputs()
    out, h = np.zeros((8, 32), np.float32), np.zeros(32, np.float16)
    n, w = np.zeros(32, np.int32), np.zeros(32, np.uint32)
    floats[1](x, y, out, h, n, w)
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    close = dict(rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(out[0], (x + y) * (x - y) / y, **close)
    np.testing.assert_array_equal(out[1], np.minimum(x, y) - np.maximum(x, -y))
    np.testing.assert_allclose(out[2], np.exp2(xd) + yd, **close)
    np.testing.assert_allclose(out[3], np.sqrt(yd) / np.sqrt(yd) + 1 / yd, **close)
    np.testing.assert_array_equal(out[4], (xd * yd + 0.5).astype(np.float32))  # one rounding
    np.testing.assert_array_equal(out[5], np.where(x < y, x, y))
    np.testing.assert_array_equal(h, x.astype(np.float16))
    np.testing.assert_array_equal(n, np.trunc(x * np.float32(100)).astype(np.int32))
    np.testing.assert_array_equal(w, np.trunc(y * np.float32(10)).astype(np.uint32))
    np.testing.assert_array_equal(out[6], h.astype(np.float32) + n.astype(np.float32))
    np.testing.assert_array_equal(out[7], w.astype(np.float32))


def _valid(text: str) -> str:
    """`text`, after LLVM parsed and verified it (where llvmlite is installed)."""
    binding = pytest.importorskip("llvmlite.binding")
    # the stand-in target has no kernel attributes, and LLVM refuses an empty group
    binding.parse_assembly(text.replace("attributes #0 = {  }", "attributes #0 = { nounwind }")).verify()
    return text


def test_float_ops_become_llvm_instructions_and_intrinsics(llvm_text):
    text = _valid(llvm_text(floats))
    for piece in ("fadd float", "fsub float", "fmul float", "fdiv float", "@llvm.minimum.f32", "@llvm.maximum.f32",
                  "fneg float", "@llvm.exp2.f32", "@llvm.sqrt.f32", "@llvm.fma.f32",
                  "fcmp olt float", "select i1", "fptrunc float", "fpext half", "@llvm.fptosi.sat.i32.f32",
                  "@llvm.fptoui.sat.i32.f32", "uitofp i32", "sitofp i32"):
        assert piece in text, piece
    assert "fdiv float 0x3FF0000000000000" in text  # rsqrt and rcp: 1.0 as LLVM writes a float
    assert "float 0x3FE0000000000000" in text  # the constant 0.5


def test_log2_is_computed_on_the_interpreter_and_becomes_llvms_intrinsic(llvm_text):
    # defined here, not at module level: the NVPTX backend's LLVM aborts on llvm.log2 (no libcall
    # for flog2), and its tests compile every module-level kernel of these tests
    @kernel(block=(32,))
    def logarithm(x: Tensor[f32, 32], out: Tensor[f32, 32]):
        out[thread_idx.x] = log2(x[thread_idx.x])

    x = np.linspace(0.25, 9, 32).astype(np.float32)
    out = np.zeros(32, np.float32)
    logarithm[1](x, out)
    np.testing.assert_array_equal(out, np.log2(x.astype(np.float64)).astype(np.float32))
    assert "call float @llvm.log2.f32(float" in _valid(llvm_text(logarithm))


@kernel(block=(32,))
def exp2_of_f64(x: Tensor[f64, 32], out: Tensor[f64, 32]):
    out[thread_idx.x] = exp2(x[thread_idx.x])


def test_exp2_of_f64_is_refused_by_the_llvm_translation_at_its_line(llvm_text):
    out = np.zeros(32, np.float64)
    exp2_of_f64[1](np.arange(32, dtype=np.float64), out)  # the interpreter computes it
    assert np.array_equal(out, np.exp2(np.arange(32.0)))
    with pytest.raises(CodegenError, match="exp2 of an f64 value") as info:
        llvm_text(exp2_of_f64)
    lines, first = inspect.getsourcelines(exp2_of_f64.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if "exp2(x" in s)


# ---- integers -------------------------------------------------------------------------------

@kernel(block=(32,))
def integers(a: Tensor[i32, 32], b: Tensor[i32, 32], out: Tensor[i32, 8, 32], wide: Tensor[i64, 32],
             ua: Tensor[u32, 32], ub: Tensor[u32, 32], uout: Tensor[u32, 4, 32], uwide: Tensor[u64, 32],
             narrow: Tensor[i16, 32]):
    t = thread_idx.x
    x = a[t]
    y = b[t]
    out[0, t] = (x + y) * (x - y)
    out[1, t] = x // y
    out[2, t] = x % y
    out[3, t] = (x & y) | (x ^ 12)
    out[4, t] = (x << 3) >> 2
    out[5, t] = min(x, y) + max(x, y)
    out[6, t] = select(x <= y, 1, 0) + select(x != y, 10, 0)
    out[7, t] = -x
    wide[t] = i64(x)
    narrow[t] = i16(x)
    u = ua[t]
    v = ub[t]  # unsigned operands come from tensors: a literal is an i32
    uout[0, t] = u // v
    uout[1, t] = u % v
    uout[2, t] = (u >> v) + min(u, v) + max(u, v)
    uout[3, t] = select(u > v, u, v)
    uwide[t] = u64(u)


def test_integer_ops_wrap_and_divide_as_the_table_defines_on_the_interpreter():
    rng = np.random.default_rng(5)
    a = rng.integers(-2**31, 2**31, 32, dtype=np.int64).astype(np.int32)
    b = rng.integers(-50, 50, 32).astype(np.int32)
    b[b == 0] = 3
    ua = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    ub = rng.integers(1, 32, 32).astype(np.uint32)
    out, wide, narrow = np.zeros((8, 32), np.int32), np.zeros(32, np.int64), np.zeros(32, np.int16)
    uout, uwide = np.zeros((4, 32), np.uint32), np.zeros(32, np.uint64)
    integers[1](a, b, out, wide, ua, ub, uout, uwide, narrow)
    x, y = a.astype(np.int64), b.astype(np.int64)

    def i32_of(v):
        return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)

    np.testing.assert_array_equal(out[0], i32_of((x + y) * (x - y)))
    np.testing.assert_array_equal(out[1], i32_of(x // y))  # floor division
    np.testing.assert_array_equal(out[2], i32_of(x - (x // y) * y))
    np.testing.assert_array_equal(out[3], (a & b) | (a ^ 12))
    np.testing.assert_array_equal(out[4], i32_of(x << 3) >> 2)
    np.testing.assert_array_equal(out[5], i32_of(np.minimum(x, y) + np.maximum(x, y)))
    np.testing.assert_array_equal(out[6], np.where(x <= y, 1, 0) + np.where(x != y, 10, 0))
    np.testing.assert_array_equal(out[7], i32_of(-x))
    np.testing.assert_array_equal(wide, x)
    np.testing.assert_array_equal(narrow, a.astype(np.int16))
    u, v = ua.astype(np.uint64), ub.astype(np.uint64)
    np.testing.assert_array_equal(uout[0], u // v)
    np.testing.assert_array_equal(uout[1], u % v)
    np.testing.assert_array_equal(uout[2], ((u >> v) + np.minimum(u, v) + np.maximum(u, v)) & 0xFFFFFFFF)
    np.testing.assert_array_equal(uout[3], np.where(u > v, u, v))
    np.testing.assert_array_equal(uwide, u)


def test_integer_ops_become_llvm_instructions(llvm_text):
    text = _valid(llvm_text(integers))
    for piece in ("add i32", "sub i32", "mul i32", "sdiv i32", "srem i32", "and i32", "or i32", "xor i32", "shl i32",
                  "ashr i32", "lshr i32", "udiv i32", "@llvm.smin.i32", "@llvm.smax.i32",
                  "@llvm.umin.i32", "@llvm.umax.i32", "icmp sle i32", "icmp ne i32", "icmp ugt i32", "sext i32",
                  "zext i32", "trunc i32"):
        assert piece in text, piece


@kernel(block=(32,))
def divides(a: Tensor[i32, 32], b: Tensor[i32, 32], out: Tensor[i32, 32]):
    out[thread_idx.x] = a[thread_idx.x] // b[thread_idx.x]


def test_a_division_by_zero_faults_at_its_line():
    b = np.ones(32, np.int32)
    b[9] = 0
    with pytest.raises(KernelFault, match="thread 9 divides by zero") as info:
        divides[1](np.arange(32, dtype=np.int32), b, np.zeros(32, np.int32))
    assert info.value.kind == "undefined-arithmetic"
    lines, first = inspect.getsourcelines(divides.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if "//" in s)


# ---- the builtins' errors -----------------------------------------------------------------

@kernel(block=(32,))
def exp2_of_an_integer(a: Tensor[i32, 32], out: Tensor[f32, 32]):
    out[thread_idx.x] = f32(exp2(a[thread_idx.x]))


@kernel(block=(32,))
def sqrt_of_a_constant(out: Tensor[f32, 32]):
    out[thread_idx.x] = sqrt(2.0)


@kernel(block=(32,))
def fma_of_constants(out: Tensor[f32, 32]):
    out[thread_idx.x] = fma(1.0, 2.0, 3.0)


@kernel(block=(32,))
def rcp_of_an_integer(a: Tensor[i32, 32], out: Tensor[f32, 32]):
    out[thread_idx.x] = f32(rcp(a[thread_idx.x]))


@kernel(block=(32,))
def select_of_two(a: Tensor[f32, 32], out: Tensor[f32, 32]):
    out[thread_idx.x] = select(a[thread_idx.x] > 0.0, a[thread_idx.x])


@kernel(block=(32,))
def log2_of_two(a: Tensor[f32, 32], out: Tensor[f32, 32]):
    out[thread_idx.x] = log2(a[thread_idx.x], a[thread_idx.x])


@pytest.mark.parametrize(("k", "message", "text"), [
    (exp2_of_an_integer, "exp2 takes a float, got i32", "exp2(a"),
    (sqrt_of_a_constant, "sqrt of a compile-time value", "sqrt(2.0)"),
    (fma_of_constants, "at least one of them a runtime value", "fma(1.0"),
    (rcp_of_an_integer, r"rcp\(x\) of a runtime float", "rcp(a"),
    (select_of_two, r"select\(cond, a, b\)", "select(a"),
    (log2_of_two, r"log2\(x\)", "log2(a"),
], ids=["exp2", "sqrt", "fma", "rcp", "select", "log2"])
def test_a_bad_call_is_refused_at_its_line(k, message, text):
    with pytest.raises(ArgusTypeError, match=message) as info:
        k.compile()
    lines, first = inspect.getsourcelines(k.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if text in s)


# ---- tags -----------------------------------------------------------------------------------

@kernel(block=(32,))
def selected(x: Tensor[f32, 64], k: Tensor[f32, 32]):
    tag(x, lambda i: (i % 32,))
    tag(k, lambda i: (i,))
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    t = thread_idx.x
    got[0] = select(t < 16, x[t], x[t + 32])  # either side carries the thread's tag
    want[0] = k[t]
    assert tag(got[...]) == tag(want[...])


@kernel(block=(32,), verify=False)
def computed(x: Tensor[f32, 32], k: Tensor[f32, 32]):
    tag(x, lambda i: (i,))
    tag(k, lambda i: (i,))
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    got[0] = x[thread_idx.x] * 2.0  # new data: ⊤
    want[0] = k[thread_idx.x]
    assert tag(got[...]) == tag(want[...])


def test_select_keeps_the_chosen_sides_tags_and_arithmetic_makes_new_data():
    x, k = np.zeros(64, np.float32), np.zeros(32, np.float32)
    assert check_launch(selected, 1, x, k).verdict is Verdict.PROVED
    assert verify_kernel(selected.specialize(), "selected").verdict is Verdict.PROVED
    assert check_launch(computed, 1, k.copy(), k).verdict is Verdict.VIOLATED
    assert verify_kernel(computed.specialize(), "computed").verdict is not Verdict.PROVED
