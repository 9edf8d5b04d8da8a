"""The control family (argus.dsl.ops.control): runtime loops, branches and their yields are
declared once; each consumer walks their regions itself, and the LLVM translation emits their
basic blocks."""

from __future__ import annotations

import re

import numpy as np
from argus.dsl import Tensor, bf16, f32, kernel, make_shared, syncthreads, tag, thread_idx
from argus.dsl.check import tag_liveness
from argus.dsl.check.control import for_rule, if_rule
from argus.dsl.check.rules import nothing_rule
from argus.dsl.ir.registry import meaning
from argus.dsl.machine.interpreter import RULES as INTERPRETER_RULES
from argus.verify import Verdict
from xdsl.dialects import scf


def test_loops_branches_and_yields_are_walked_and_declared_once():
    for op_type, analyze, liveness in ((scf.ForOp, for_rule, tag_liveness.loop), (scf.IfOp, if_rule, tag_liveness.branch),
                                       (scf.YieldOp, nothing_rule, tag_liveness.always)):
        m = meaning(op_type)
        assert m is not None and m.walked and m.interpret is None and m.wait is None
        assert op_type not in INTERPRETER_RULES  # the scheduler runs their regions
        assert m.analyze is analyze and m.liveness is liveness and m.translate is not None


@kernel(block=(32,))
def prefix_counts(out: Tensor[f32, 32], n: int):
    acc = 0.0
    for i in range(n):
        if thread_idx.x < 16:
            acc = acc + 1.0
        else:
            acc = acc + 2.0
    out[thread_idx.x] = acc


def test_a_runtime_loop_and_branch_run_on_the_interpreter():
    out = np.zeros(32, np.float32)
    prefix_counts[1](out, 5)
    assert np.array_equal(out, np.where(np.arange(32) < 16, 5.0, 10.0))
    prefix_counts[1](out, 0)
    assert not out.any()


def _stages(wrong_half: bool):
    @kernel(block=(32,), verify=False)
    def stages(q: Tensor[bf16, 32], n: int):
        tag(q, lambda s: s)
        sq = make_shared((32,), bf16)
        for i in range(n):
            if thread_idx.x < 16:
                sq[thread_idx.x] = q[thread_idx.x]
            else:
                sq[thread_idx.x] = q[31 - thread_idx.x if wrong_half else thread_idx.x]
            syncthreads()
            assert tag(sq[...]) == tag(q[...])
            syncthreads()

    return stages


def test_a_claim_inside_a_runtime_loop_and_branch_is_proved_or_refuted(no_result_cache):
    assert _stages(wrong_half=False).verify().verdict is Verdict.PROVED
    assert _stages(wrong_half=True).verify().verdict is Verdict.VIOLATED


def test_a_runtime_loop_becomes_a_counted_loop_with_a_branch_inside(llvm_text):
    text = llvm_text(prefix_counts)
    phi = re.search(r"(%i\d+) = phi i32 \[ 0, %entry \], \[ (%i\d+), %(endif\d+) \]", text)
    assert phi is not None, text
    assert f"icmp slt i32 {phi.group(1)}, %n" in text and f"{phi.group(2)} = add i32 {phi.group(1)}, 1" in text
    assert re.search(r"br i1 %v\d+, label %then\d+, label %else\d+", text), text
