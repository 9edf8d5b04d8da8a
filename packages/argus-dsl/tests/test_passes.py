"""The target-independent cleanup passes keep what a kernel computes and remove what the
front end built only to carry names through runtime regions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from argus.dsl import Tensor, constexpr, f32, i32, kernel, static_range, thread_idx
from argus.dsl.ir import dialect as D
from argus.dsl.ir.lowering import lowered


@kernel(block=(4,))
def running_sum(x: Tensor[f32, "n", 4], out: Tensor[f32, 4], scratch: Tensor[i32, 4], n: int):
    t = thread_idx.x
    total = 0.0  # carried from one iteration to the next: stays a variable
    for i in range(n):
        row = i  # assigned and read within one iteration: needs no variable
        col = t
        total = total + x[row, col]
        col = (t + 1) % 4  # reassigned before any read: the first write is dead
        scratch[col] = row
    out[t] = total


def _ops(kind: type) -> list:
    return [o for o in running_sum.compile().module.walk() if isinstance(o, kind)]


def test_only_the_carried_variable_remains():
    assert len(_ops(D.VarOp)) == 1
    # the loop reads `total` once per iteration, whatever the body does with it after
    assert len(_ops(D.VarLoadOp)) == 2  # inside the loop, and after it


def test_the_program_computes_the_same():
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    out, scratch = np.zeros(4, np.float32), np.zeros(4, np.int32)
    running_sum[(1,)](x, out, scratch, 5)
    np.testing.assert_allclose(out, x.sum(axis=0), rtol=1e-6)
    np.testing.assert_array_equal(scratch, [4, 4, 4, 4])


@kernel(block=(4,))
def folded_sums(x: Tensor[i32, 16], out: Tensor[i32, 16]):
    t = thread_idx.x
    for k in static_range(4):
        out[4 * k + t] = x[4 * k + t]  # the passes rewrite c + t as t + c: a new op


def test_an_op_the_passes_make_is_located_at_the_line_using_it():
    compiled = folded_sums.compile()
    line = 1 + next(i for i, text in enumerate(Path(__file__).read_text().splitlines()) if "the passes rewrite" in text)
    used = [op for op in compiled.module.walk() if any(r.uses for r in op.results)]
    assert all(op in compiled.locations for op in used), [op.name for op in used if op not in compiled.locations]
    sums = [op for op in compiled.module.walk() if op.name == "arith.addi"]
    assert sums and all(compiled.locations[op].line == line for op in sums)


@kernel(block=(32,))
def shifted_divisions(q: Tensor[i32, 5, 32], r: Tensor[i32, 5, 32], d: constexpr, k: constexpr):
    t = thread_idx.x - 16  # negative values too: floor division rounds down
    for i in static_range(4):
        a = t + (i - 1) * k * d  # whole multiples of d: -kd, 0, kd, 2kd
        q[i, thread_idx.x] = a // d
        r[i, thread_idx.x] = a % d
    b = t - k * d
    q[4, thread_idx.x] = b // d
    r[4, thread_idx.x] = b % d


def test_divisions_of_a_sum_with_whole_multiples_share_one_division_and_compute_the_same():
    t = np.arange(32) - 16
    for d, k in ((3, 1), (16, 2), (5, 7)):
        q, r = np.zeros((5, 32), np.int32), np.zeros((5, 32), np.int32)
        shifted_divisions[(1,)](q, r, d, k)
        shifted = np.stack([t + (i - 1) * k * d for i in range(4)] + [t - k * d])
        np.testing.assert_array_equal(q, shifted // d)  # numpy's // and % round down, as Argus's do
        np.testing.assert_array_equal(r, shifted % d)
        module, _ = lowered(shifted_divisions.specialize(d=d, k=k))  # (the unrolled code a target runs)
        assert sum(op.name == "arith.floordivsi" for op in module.walk()) == 1  # t // d, for every copy
