"""The bit-rearrangement family (argus.dsl.ops.bits): bitcast, concat, lo/hi and byte_perm are
declared once, and each consumer — the interpreter, the shadow tags, the static checker, the
LLVM translation, the front end — reads its part from that declaration."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    Tensor,
    bitcast,
    byte_perm,
    concat,
    f32,
    hi,
    kernel,
    lo,
    make_shared,
    syncthreads,
    tag,
    thread_idx,
    u16,
    u32,
)
from argus.dsl.check import rules as check_rules
from argus.dsl.check.access import byte_perm_rule, concat_rule, extract_rule, same_bytes_rule
from argus.dsl.check.verification import verify_kernel
from argus.dsl.frontend.calls import BUILDERS
from argus.dsl.ir import dialect as D
from argus.dsl.ir.registry import meaning
from argus.dsl.llvm import translate
from argus.dsl.machine import interpreter, shadow
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

OPS = {D.BitcastOp: same_bytes_rule, D.ConcatOp: concat_rule, D.ExtractOp: extract_rule, D.BytePermOp: byte_perm_rule}


@pytest.mark.parametrize("op_type", list(OPS), ids=lambda t: t.__name__)
def test_each_op_is_declared_once_with_every_consumers_part(op_type):
    m = meaning(op_type)
    assert m is not None and m.analyze is OPS[op_type]
    assert m.interpret is not None and m.shadow is not None and m.translate is not None
    assert m.liveness is None  # pure: kept only when a check needs its result
    # each consumer dispatches to the declared part (no second, older rule beside it)
    assert interpreter.RULES[op_type] is m.interpret and shadow.RULES[op_type] is m.shadow
    assert translate.RULES[op_type] is m.translate and check_rules.RULES[op_type] is m.analyze


@pytest.mark.parametrize("name", ["bitcast", "concat", "byte_perm", "lo", "hi"])
def test_each_builtin_is_built_by_the_family(name):
    assert BUILDERS[name].__module__ == "argus.dsl.ops.bits"


@kernel(block=(32,))
def rearranged(x: Tensor[u32, 32], y: Tensor[u32, 32], f: Tensor[f32, 32], swapped: Tensor[u32, 32],
               picked: Tensor[u32, 32], bits: Tensor[u32, 32]):
    t = thread_idx.x
    v = x[t]
    swapped[t] = concat(hi(v), lo(v))
    picked[t] = byte_perm(v, y[t], (0, 4, 1, 5))
    bits[t] = bitcast(f[t] * 1.5, u32)


def test_the_ops_move_exact_bytes_on_the_interpreter():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    y = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    f = rng.standard_normal(32).astype(np.float32)
    swapped, picked, bits = (np.zeros(32, np.uint32) for _ in range(3))
    rearranged[1](x, y, f, swapped, picked, bits)
    assert np.array_equal(swapped, (x >> 16) | (x << 16))
    xy = np.concatenate([x.view(np.uint8).reshape(32, 4), y.view(np.uint8).reshape(32, 4)], axis=1)
    assert np.array_equal(picked.view(np.uint8).reshape(32, 4), xy[:, [0, 4, 1, 5]])
    assert np.array_equal(bits, (f * np.float32(1.5)).view(np.uint32))


def test_the_ops_become_integer_shifts_in_llvm(llvm_text):
    text = llvm_text(rearranged)
    assert "bitcast float" in text and " to i32" in text  # bitcast
    assert "lshr i32" in text and "trunc i32" in text and "to i16" in text  # hi, lo
    assert "zext i16" in text and "shl i32" in text  # concat of two halves
    assert "zext i32" in text and "to i64" in text and "trunc i64" in text and "to i8" in text  # byte_perm


@kernel(block=(32,))
def halves(x: Tensor[u32, 32], k: Tensor[u32, 32]):
    tag(x, lambda i: i)
    tag(k, lambda i: i)
    s = make_shared((32,), u32)
    v = x[thread_idx.x]
    s[thread_idx.x] = concat(lo(v), hi(v))
    syncthreads()
    assert tag(s[...]) == tag(k[...])


@kernel(block=(32,), verify=False)
def mixed_halves(x: Tensor[u32, 32], k: Tensor[u32, 32]):
    tag(x, lambda i: i)
    tag(k, lambda i: i)
    s = make_shared((32,), u32)
    s[thread_idx.x] = byte_perm(x[thread_idx.x], x[(thread_idx.x + 1) % 32], (0, 1, 6, 7))
    syncthreads()
    assert tag(s[...]) == tag(k[...])


def test_tags_follow_the_bytes_in_the_shadow_run_and_the_checker():
    x = np.arange(32, dtype=np.uint32)
    assert check_launch(halves, 1, x, x.copy()).verdict is Verdict.PROVED
    assert verify_kernel(halves.specialize(), "halves").verdict is Verdict.PROVED
    result = check_launch(mixed_halves, 1, x, x.copy())  # the high half comes from the next element
    assert result.verdict is Verdict.VIOLATED
    assert result.witnesses[0]["rhs tag"] != result.witnesses[0]["lhs tag"]
    assert verify_kernel(mixed_halves.specialize(), "mixed_halves").verdict is Verdict.VIOLATED


@kernel(block=(32,))
def odd_selector(x: Tensor[u32, 32], out: Tensor[u32, 32]):
    out[thread_idx.x] = byte_perm(x[thread_idx.x], x[thread_idx.x], (0, 1, 9, 2))


@kernel(block=(32,))
def half_of_a_byte(x: Tensor[u16, 32], out: Tensor[u16, 32]):
    out[thread_idx.x] = u16(lo(lo(x[thread_idx.x])))


@kernel(block=(32,))
def resized_bitcast(x: Tensor[u32, 32], out: Tensor[u32, 32]):
    out[thread_idx.x] = u32(bitcast(x[thread_idx.x], u16))


@pytest.mark.parametrize(("k", "message", "text"), [
    (odd_selector, "byte indices below 8", "(0, 1, 9, 2)"),
    (half_of_a_byte, "u8 has no lo half", "lo(lo("),
    (resized_bitcast, "bitcast keeps the size", "u32(bitcast(x"),
], ids=["byte_perm", "lo", "bitcast"])
def test_a_bad_call_is_refused_at_its_line(k, message, text):
    with pytest.raises(ArgusTypeError, match=message) as info:
        k.compile()
    lines, first = inspect.getsourcelines(k.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if text in s)
