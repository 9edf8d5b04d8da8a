"""The matrix-product family (argus.dsl.ops.products): matmul, matmul_async and matmul_wait are
declared once, and each consumer — the scheduler, the interpreter, the shadow tags, the static
checker and tag liveness, the LLVM translation, the front end — reads its part from there."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    KernelFault,
    Tensor,
    bf16,
    f32,
    from_storage,
    kernel,
    lane_id,
    make_local,
    matmul,
    matmul_async,
    matmul_wait,
    static_range,
    tag,
    thread_idx,
    to_storage,
    universal_fma,
    warp_mma_16x8x16,
)
from argus.dsl.check import rules as check_rules
from argus.dsl.check import tag_liveness
from argus.dsl.check.products import mma_rule, mma_wait_rule
from argus.dsl.frontend.calls import BUILDERS
from argus.dsl.ir import dialect as D
from argus.dsl.ir.registry import meaning
from argus.dsl.llvm import translate
from argus.dsl.machine import interpreter, shadow
from argus.dsl.machine.schedule import is_sync_point, is_wait
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict
from xdsl.dialects.builtin import IntAttr

FMA = universal_fma(f32)
MMA = warp_mma_16x8x16(bf16, bf16, f32)


def test_a_product_is_a_collective_declared_with_every_consumers_part():
    m = meaning(D.MmaOp)
    assert m is not None and m.analyze is mma_rule and m.liveness is tag_liveness.always
    assert m.interpret is not None and m.shadow is not None and m.translate is not None
    assert callable(m.collective) and not m.sync and m.lower is None  # (its starts: ir/lowering.py's _LowerMma)
    assert interpreter.RULES[D.MmaOp] is m.interpret and shadow.RULES[D.MmaOp] is m.shadow
    assert translate.RULES[D.MmaOp] is m.translate and check_rules.RULES[D.MmaOp] is mma_rule
    assert tag_liveness.RULES[D.MmaOp] is tag_liveness.always


def test_the_wait_is_a_sync_point_whose_llvm_rule_is_each_backends():
    m = meaning(D.MmaWaitOp)
    assert m is not None and m.sync and m.interpret is not None and m.wait is None
    assert m.analyze is mma_wait_rule and m.liveness is tag_liveness.always and m.translate is None
    assert interpreter.RULES[D.MmaWaitOp] is m.interpret and D.MmaWaitOp not in translate.RULES
    op = D.MmaWaitOp.create(properties={"pending": IntAttr(0)})
    assert is_sync_point(op) and not is_wait(op)  # a group's turn ends after it; it never blocks


@pytest.mark.parametrize("name", ["matmul", "matmul_async", "matmul_wait"])
def test_each_builtin_is_built_by_the_family(name):
    assert BUILDERS[name].__module__ == "argus.dsl.ops.products"


# ---- the scalar multiply-add: every target's atom -------------------------------------------

@kernel(block=(32,))
def fused(x: Tensor[f32, 32], y: Tensor[f32, 32], out: Tensor[f32, 32]):
    a = make_local((1,), f32)
    b = make_local((1,), f32)
    c = make_local((1,), f32)
    t = thread_idx.x
    a[0] = x[t]
    b[0] = y[t]
    c[0] = 1.0
    matmul(a, b, c, FMA)
    out[t] = c[0]


def test_the_scalar_product_runs_on_the_interpreter():
    x = np.arange(32, dtype=np.float32)
    y = np.full(32, 0.5, np.float32)
    out = np.zeros(32, np.float32)
    fused[1](x, y, out)
    assert np.array_equal(out, x * y + 1)


def test_the_scalar_product_is_an_fma_in_llvm(llvm_text):
    text = llvm_text(fused)
    assert text.count("call float @llvm.fma.f32(") == 1


# ---- a warp's product, started and waited for ------------------------------------------------

def _warp_product(wait: bool):
    @kernel(block=(32,), verify=False)
    def warp_product(a: Tensor[bf16, 16, 16], b: Tensor[bf16, 8, 16], c: Tensor[f32, 16, 8]):
        lane = lane_id()
        af = make_local((8,), bf16)
        bf = make_local((4,), bf16)
        acc = make_local((4,), f32)
        for v in static_range(8):
            idx = MMA.a_layout(lane, v)
            af[v] = a[idx % 16, idx // 16]
        for v in static_range(4):
            idx = MMA.b_layout(lane, v)
            bf[v] = b[idx % 8, idx // 8]
            acc[v] = 0.0
        matmul_async(af, bf, acc, MMA)
        if wait:
            matmul_wait(0)
        for v in static_range(4):
            idx = MMA.c_layout(lane, v)
            c[idx % 16, idx // 16] = acc[v]

    return warp_product


def _operands():
    rng = np.random.default_rng(0)
    a = to_storage(rng.standard_normal((16, 16)), bf16)
    b = to_storage(rng.standard_normal((8, 16)), bf16)
    return a, b, from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T


def test_a_started_product_finishes_at_its_wait():
    a, b, expected = _operands()
    c = np.zeros((16, 8), np.float32)
    _warp_product(wait=True)[1](a, b, c)
    assert np.allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_reading_the_accumulator_of_a_product_never_waited_for_is_a_fault():
    a, b, _ = _operands()
    with pytest.raises(KernelFault) as info:
        _warp_product(wait=False)[1](a, b, np.zeros((16, 8), np.float32))
    assert info.value.kind == "in-flight" and "matmul_wait" in str(info.value)


# ---- shadow tags: the operands of a product pair up ------------------------------------------

def _paired(shift: int):
    @kernel(block=(32,), verify=False)
    def paired(a: Tensor[bf16, 16, 16], b: Tensor[bf16, 8, 16]):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        lane = lane_id()
        af = make_local((8,), bf16)
        bf = make_local((4,), bf16)
        acc = make_local((4,), f32)
        for v in static_range(8):
            idx = MMA.a_layout(lane, v)
            af[v] = a[idx % 16, idx // 16]
        for v in static_range(4):
            idx = MMA.b_layout(lane, v)
            bf[v] = b[idx % 8, (idx // 8 + shift) % 16]
            acc[v] = 0.0
        matmul(af, bf, acc, MMA)

    return paired


def test_a_launch_whose_operands_pair_up_keeps_the_products_claim():
    a, b, _ = _operands()
    assert check_launch(_paired(0), 1, a, b).verdict is Verdict.PROVED


def test_a_launch_whose_b_columns_are_shifted_names_the_unpaired_element():
    a, b, _ = _operands()
    result = check_launch(_paired(1), 1, a, b)
    assert result.verdict is Verdict.VIOLATED
    w = result.witnesses[0]
    assert "must pair up" in w["assertion"] and set(w["element"]) == {"m", "n", "k"}
    assert w["lhs tag"] != w["rhs tag"]


# ---- the front end ---------------------------------------------------------------------------

@kernel(block=(32,))
def waits_for_a_negative_count(out: Tensor[f32, 32]):
    matmul_wait(-1)


@kernel(block=(32,))
def multiplies_without_an_atom(out: Tensor[f32, 32]):
    a = make_local((1,), f32)
    matmul(a, a, a)


@pytest.mark.parametrize("k, call, message", [
    (waits_for_a_negative_count, "matmul_wait(-1)", r"matmul_wait\(pending\): a compile-time int ≥ 0"),
    (multiplies_without_an_atom, "matmul(a, a, a)", r"matmul\(a, b, acc, atom\): three fragments"),
], ids=["wait", "atom"])
def test_a_bad_call_is_refused_at_its_line(k, call, message):
    with pytest.raises(ArgusTypeError, match=message) as info:
        k.compile()
    lines, first = inspect.getsourcelines(k.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if call in s)
