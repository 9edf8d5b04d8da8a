"""The tags family (argus.dsl.ops.tags): tag functions, tag assertions, tag resets and
assumptions are declared once, with what the interpreter, the shadow-tag interpreter, the
checker, tag liveness and the LLVM translation each read of them."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    KernelFault,
    Tensor,
    assume,
    bf16,
    f32,
    kernel,
    make_local,
    make_shared,
    reset_tags,
    syncthreads,
    tag,
    thread_idx,
)
from argus.dsl.check import tag_liveness
from argus.dsl.check.tags import assert_rule, assume_rule, reset_rule, tag_rule
from argus.dsl.ir import dialect as D
from argus.dsl.ir.registry import meaning
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict


def line_of(k, text: str) -> int:
    lines, first = inspect.getsourcelines(k.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def test_each_op_is_declared_with_every_part_its_readers_need():
    parts = {
        D.TagOp: (tag_rule, tag_liveness.tag_function),
        D.TagAssertOp: (assert_rule, tag_liveness.always),
        D.ResetTagsOp: (reset_rule, tag_liveness.reset),
    }
    for op_type, (analyze, liveness) in parts.items():
        m = meaning(op_type)
        assert m is not None and m.analyze is analyze and m.liveness is liveness
        assert m.interpret is not None and m.shadow is not None and m.translate is not None
    m = meaning(D.AssumeOp)
    assert m is not None and m.analyze is assume_rule and m.liveness is tag_liveness.always
    assert m.interpret is not None and m.translate is not None and m.shadow is None
    m = meaning(D.YieldTagOp)  # the end of a tag function's body: read where the function is evaluated
    assert m is not None and m.walked and m.interpret is None and m.translate is None


@kernel(block=(32,))
def staged(q: Tensor[bf16, 32, 8], out: Tensor[bf16, 32, 8]):
    tag(q, lambda s, d: (s, d))
    sq = make_shared((32, 8), bf16)
    for d in range(8):
        sq[thread_idx.x, d] = q[thread_idx.x, d]
    syncthreads()
    assert tag(sq[...]) == tag(q[...])
    for d in range(8):
        out[thread_idx.x, d] = sq[thread_idx.x, d]
    syncthreads()
    reset_tags(sq)


@kernel(block=(32,), verify=False)
def staged_shifted(q: Tensor[bf16, 32, 8]):
    tag(q, lambda s, d: (s, d))
    sq = make_shared((32, 8), bf16)
    for d in range(8):
        sq[thread_idx.x, d] = q[(thread_idx.x + 1) % 32, d]
    syncthreads()
    assert tag(sq[...]) == tag(q[...]), "staging keeps rows in place"


def test_tags_do_nothing_at_run_time():
    q = np.arange(32 * 8, dtype=np.uint16).reshape(32, 8)
    out = np.zeros_like(q)
    staged[1](q, out)
    assert np.array_equal(out, q)


def test_a_kept_claim_is_proved_statically_and_on_a_launch(no_result_cache):
    assert staged.verify().verdict is Verdict.PROVED
    q = np.zeros((32, 8), np.uint16)
    assert check_launch(staged, 1, q, np.zeros_like(q)).verdict is Verdict.PROVED


def test_a_broken_claim_is_refuted_with_the_element_and_the_store(no_result_cache):
    assert staged_shifted.verify().verdict is not Verdict.PROVED
    shadow = check_launch(staged_shifted, 1, np.zeros((32, 8), np.uint16))
    assert shadow.verdict is Verdict.VIOLATED
    witness = shadow.witnesses[0]
    assert witness["message"] == "staging keeps rows in place"
    assert witness["lhs written at"].endswith(f":{line_of(staged_shifted, 'sq[thread_idx.x, d] =')}:9")


def test_tag_functions_assertions_and_resets_emit_no_code(llvm_text):
    text = llvm_text(staged)
    assert text.count("call void @target.barrier()") == 2 and "assume" not in text


@kernel(block=(32,))
def assumes_a_multiple(x: Tensor[f32, "n"], n: int):
    assume(n % 32 == 0)
    x[thread_idx.x] = 1.0


def test_an_assumption_is_checked_on_every_launch():
    x = np.zeros(64, np.float32)
    assumes_a_multiple[1](x, 64)
    assert x[:32].all()
    with pytest.raises(KernelFault) as info:
        assumes_a_multiple[1](np.zeros(40, np.float32), 40)
    assert info.value.kind == "assumption"


def test_an_assumption_becomes_llvm_assume(llvm_text):
    assert "call void @llvm.assume(i1 " in llvm_text(assumes_a_multiple)


@kernel(block=(32,))
def assumes_a_number(x: Tensor[f32, 32]):
    assume(1)


@kernel(block=(32,))
def resets_registers(x: Tensor[f32, 32]):
    r = make_local((4,), f32)
    reset_tags(r)


@pytest.mark.parametrize("k, call, words", [
    (assumes_a_number, "assume(1)", "takes one runtime condition"),
    (resets_registers, "reset_tags(r)", "takes one shared tile"),
])
def test_a_bad_call_is_refused_at_its_line(k, call: str, words: str):
    with pytest.raises(ArgusTypeError, match=words) as info:
        k.compile()
    assert info.value.location.line == line_of(k, call)
