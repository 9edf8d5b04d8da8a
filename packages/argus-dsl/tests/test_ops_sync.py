"""The barrier family (argus.dsl.ops.sync): syncthreads() is declared once, with what the
scheduler, the checker, tag liveness and the LLVM translation each read of it."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import ArgusTypeError, KernelFault, Tensor, f32, kernel, make_shared, syncthreads, thread_idx
from argus.dsl.check import tag_liveness
from argus.dsl.check.tags import sync_rule
from argus.dsl.ir import dialect as D
from argus.dsl.ir.registry import meaning
from argus.dsl.machine.barriers import BlockBarrier
from argus.dsl.machine.schedule import is_wait


def test_syncthreads_is_a_wait_declared_with_its_checker_and_llvm_rules():
    m = meaning(D.SyncThreadsOp)
    assert m is not None and m.interpret is None and isinstance(m.wait, BlockBarrier)
    assert m.analyze is sync_rule and m.liveness is tag_liveness.always and m.translate is not None
    assert is_wait(D.SyncThreadsOp())


@kernel(block=(32,))
def rotate(out: Tensor[f32, 32]):
    buf = make_shared((32,), f32)
    t = thread_idx.x
    buf[t] = f32(t)
    syncthreads()
    out[t] = buf[(t + 1) % 32]


@kernel(block=(32,), verify=False)
def barrier_for_half_the_block(out: Tensor[f32, 32]):
    if thread_idx.x < 16:
        syncthreads()
    out[thread_idx.x] = 0.0


def test_the_barrier_orders_the_block_on_the_interpreter():
    out = np.zeros(32, np.float32)
    rotate[1](out)
    assert np.array_equal(out, (np.arange(32) + 1) % 32)


def test_a_barrier_half_the_block_reaches_is_a_fault():
    with pytest.raises(KernelFault) as info:
        barrier_for_half_the_block[1](np.zeros(32, np.float32))
    assert info.value.kind == "divergent-barrier" and "syncthreads()" in str(info.value)


def test_the_barrier_becomes_the_targets_block_barrier(llvm_text):
    assert llvm_text(rotate).count("call void @target.barrier()") == 1


@kernel(block=(32,))
def barrier_with_an_argument(out: Tensor[f32, 32]):
    syncthreads(1)


def test_syncthreads_with_an_argument_is_refused_at_its_line():
    with pytest.raises(ArgusTypeError, match=r"syncthreads\(\) takes no arguments") as info:
        barrier_with_an_argument.compile()
    lines, first = inspect.getsourcelines(barrier_with_an_argument.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if "syncthreads(1)" in s)
