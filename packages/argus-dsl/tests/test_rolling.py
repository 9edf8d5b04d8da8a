"""Static loops kept rolled: a ``static_range`` loop whose iterations differ only in constants is
one ``scf.for`` (`frontend.rolling`) that computes, checks and compiles as the unrolled code."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.dsl import Tensor, assume, bf16, block_idx, constexpr, f32, kernel, make_local, static_range, tag, thread_idx
from argus.dsl.ir.dialect import is_unrolled
from argus.dsl.frontend import FrontEnd
from argus.dsl.ir.lowering import lowered
from argus.dsl.check.verification import verify_kernel
from argus.verify import Verdict
from xdsl.dialects import arith, scf


@kernel(block=(32,), verify=False)
def scaled(x: Tensor[f32, 32, 8], out: Tensor[f32, 32, 8]):
    t = thread_idx.x
    for i in static_range(8):
        out[t, i] = x[t, i] * 2.0


@kernel(block=(32,), verify=False)
def swizzled(x: Tensor[f32, 32, 8], out: Tensor[f32, 32, 8]):
    t = thread_idx.x
    for i in static_range(8):
        out[t, i] = x[t, i ^ 5]  # the column's bits flipped: affine in the bits of the index


@kernel(block=(32,), verify=False)
def rotated(x: Tensor[f32, 32, 4], out: Tensor[f32, 32, 4]):
    t = thread_idx.x
    for i in static_range(4):
        out[t, i] = x[t, (i + 1) % 4]  # 1, 2, 3, 0: neither affine in the index nor in its bits


@kernel(block=(32,), verify=False)
def summed(x: Tensor[f32, 32, 4], out: Tensor[f32, 32]):
    t = thread_idx.x
    total = x[t, 0]
    for i in static_range(1, 4):
        total = total + x[t, i]  # each iteration reads what the one before made
    out[t] = total


@kernel(block=(32,), verify=False)
def last_of(x: Tensor[f32, 32, 4], out: Tensor[f32, 32]):
    t = thread_idx.x
    for i in static_range(4):
        value = x[t, i] * 3.0
    out[t] = value  # the last iteration's value, read after the loop


@kernel(block=(32,), verify=False)
def picked_after(x: Tensor[f32, 32, 4], out: Tensor[f32, 32]):
    t = thread_idx.x
    for i in static_range(4):
        column = x[t, i]
    out[t] = (column, column * 2.0)[1]  # read after the loop, inside a compile-time index


@kernel(block=(32,), verify=False)
def by_block(x: Tensor[f32, 64, 4], out: Tensor[f32, 64, 4]):
    for i in static_range(4):
        out[block_idx.x * 32 + thread_idx.x, i] = x[block_idx.x * 32 + thread_idx.x, 3 - i]


@kernel(block=(32,), verify=False)
def through_a_variable(x: Tensor[f32, 32, 4], out: Tensor[f32, 32, 4], n: int):
    for r in range(n):  # a name assigned in a runtime loop is a variable
        row = thread_idx.x
        for i in static_range(4):
            out[row, i] = x[row, i] * 2.0


@kernel(block=(32,), verify=False)
def branching(x: Tensor[f32, 32, 4], out: Tensor[f32, 32, 4]):
    t = thread_idx.x
    for i in static_range(4):
        if t < 16:  # a runtime branch in every iteration
            out[t, i] = x[t, i]


def _loops(module: Any) -> list[Any]:
    return [op for op in module.walk() if isinstance(op, scf.ForOp)]


def _count(module: Any, name: str) -> int:
    return sum(op.name == name for op in module.walk())


def _run(fn: Any, *shapes: tuple[int, ...], grid: tuple[int, ...] = (1,)) -> tuple[np.ndarray, np.ndarray]:
    x = np.random.default_rng(0).standard_normal(shapes[0]).astype(np.float32)
    out = np.zeros(shapes[1], np.float32)
    fn[grid](x, out)
    return x, out


def test_iterations_differing_in_constants_are_one_rolled_loop_that_runs_and_compiles_as_unrolled_code():
    compiled = scaled.specialize()
    (loop,) = _loops(compiled.module)
    assert is_unrolled(loop) and _count(compiled.module, "argus.store") == 1
    x, out = _run(scaled, (32, 8), (32, 8))
    np.testing.assert_array_equal(out, x * 2)
    module, _ = lowered(compiled)  # what a target compiles: the loop unrolled, every index a constant
    assert not _loops(module) and _count(module, "argus.store_at") == 8


def test_constants_affine_in_the_bits_of_the_index_stay_rolled():
    assert [is_unrolled(op) for op in _loops(swizzled.specialize().module)] == [True]
    x, out = _run(swizzled, (32, 8), (32, 8))
    np.testing.assert_array_equal(out, x[:, [i ^ 5 for i in range(8)]])


@pytest.mark.parametrize("fn, expected", [(rotated, lambda x: x[:, [1, 2, 3, 0]]),
                                          (summed, lambda x: x.sum(axis=1)),
                                          (last_of, lambda x: x[:, 3] * 3),
                                          (picked_after, lambda x: x[:, 3] * 2)])
def test_iterations_that_differ_otherwise_or_whose_values_outlive_the_loop_are_unrolled(fn: Any, expected: Any):
    compiled = fn.specialize()
    assert not _loops(compiled.module)
    shapes = ((32, 4), (32, 4)) if fn is rotated else ((32, 4), (32,))
    x, out = _run(fn, *shapes)
    np.testing.assert_allclose(out, expected(x), rtol=1e-6)


def test_what_every_iteration_computes_alike_is_computed_once_before_the_loop():
    compiled = by_block.specialize()
    (loop,) = _loops(compiled.module)
    inside = {op.name for op in loop.body.block.walk()}
    assert not inside & {"argus.thread_idx", "argus.block_idx"}, inside
    x, out = _run(by_block, (64, 4), (64, 4), grid=(2,))
    np.testing.assert_array_equal(out, x[:, ::-1])


@kernel(block=(32,), verify=False)
def columns(x: Tensor[bf16, "n", 8], out: Tensor[bf16, "n", 8], n: int, SWAP: constexpr):
    tag(x, lambda r, c: (r, c))
    assume(n % 32 == 0)  # whole blocks of rows
    row = block_idx.x * 32 + thread_idx.x
    got = make_local((8,), bf16)
    want = make_local((8,), bf16)
    tag(want, lambda c: (row, c))
    for i in static_range(8):
        got[i] = x[row, i ^ SWAP]  # SWAP = 1: neighbouring columns swapped
    assert tag(got[...]) == tag(want[...]), "each column lands in its place"
    out[row, 0] = got[0]


def _unrolled(fn: Any, monkeypatch: pytest.MonkeyPatch, **constants: Any) -> Any:
    """The same kernel traced with every static loop unrolled."""
    with monkeypatch.context() as patch:
        patch.setattr(FrontEnd, "rolls", False)
        return kernel(block=(32,), verify=False)(fn.fn).specialize(**constants)


def _findings(result: Any) -> list[tuple[str, ...]]:
    return sorted(tuple(str(w.get(k)) for k in ("kind", "thread", "block", "element", "lhs tag", "rhs tag",
                                                "lhs written at")) for w in result.witnesses)


@pytest.mark.parametrize("swap, verdict", [(0, Verdict.PROVED), (1, Verdict.VIOLATED)])
def test_a_rolled_loop_is_checked_with_its_iterations_together_and_finds_what_the_unrolled_code_finds(
        swap: int, verdict: Verdict, monkeypatch: pytest.MonkeyPatch):
    fn = columns
    rolled = fn.specialize(SWAP=swap)
    assert [is_unrolled(op) for op in _loops(rolled.module)] == [True]
    unrolled = _unrolled(fn, monkeypatch, SWAP=swap)
    assert not _loops(unrolled.module)
    together, apart = verify_kernel(rolled, fn.name), verify_kernel(unrolled, fn.name)
    assert together.verdict is apart.verdict is verdict, together.text()
    assert _findings(together) == _findings(apart)
    loop = _loops(rolled.module)[0]
    run = rolled.preparation.rolled(loop)
    assert run is not None and not run.walked_again  # (the assertion after the loop finds the swap)
    assert max(len(group.ops) for group in run.groups) == 8


def test_a_variable_read_in_a_rolled_loop_that_does_not_write_it_is_the_value_before_the_loop():
    compiled = through_a_variable.specialize()
    rolled = [op for op in _loops(compiled.module) if is_unrolled(op)]
    assert len(rolled) == 1
    assert not {"argus.var_load", "argus.var_store", "argus.var"} & {op.name for op in compiled.module.walk()}
    x = np.random.default_rng(0).standard_normal((32, 4)).astype(np.float32)
    out = np.zeros((32, 4), np.float32)
    through_a_variable[(1,)](x, out, 1)
    np.testing.assert_array_equal(out, x * 2)


def test_a_body_with_a_runtime_branch_stays_unrolled():
    compiled = branching.specialize()
    assert not _loops(compiled.module) and _count(compiled.module, "scf.if") == 4
    x, out = _run(branching, (32, 4), (32, 4))
    np.testing.assert_array_equal(out[:16], x[:16])
    assert not out[16:].any()


@kernel(block=(32,), verify=False)
def scratch(x: Tensor[bf16, 32, 4], ROTATE: constexpr):
    tag(x, lambda r, c: (r, c))
    got = make_local((4,), bf16)
    spare = make_local((4,), f32)
    for i in static_range(4):
        got[i] = x[thread_idx.x, i]
        if ROTATE:
            spare[(thread_idx.x + i) % 4] = 1.0  # a coordinate known only at run time
        else:
            spare[i] = 1.0  # a number when traced, checked against the tile then
    assert tag(got[...]) == tag(got[...])


@pytest.mark.parametrize("rotate", [0, 1])
def test_an_access_no_check_reads_is_walked_for_its_coordinates_only_where_tracing_left_them(rotate: int):
    compiled = scratch.specialize(ROTATE=rotate)
    (loop,) = _loops(compiled.module)
    assert is_unrolled(loop)
    preparation = compiled.preparation
    table = preparation.table
    (spare,) = [j for j, op in enumerate(table.ops)
                if op.name == "argus.store" and isinstance(op.operands[0].owner, arith.ConstantOp)]
    assert (spare in preparation.liveness.bounds_only) == bool(rotate)
    assert (spare in preparation.relevant) == bool(rotate)
    # the store of `got` at the loop's index matters: walked, its coordinate known to be inside
    (kept,) = [op for op in table.ops if op.name == "argus.store" and op.operands[1].type.dtype == bf16]
    assert id(kept) in preparation.traced_accesses
    assert (id(table.ops[spare]) in preparation.traced_accesses) is False
    assert verify_kernel(compiled, scratch.name).verdict is Verdict.PROVED


@kernel(block=(32,), verify=False)
def cleared(x: Tensor[bf16, 32, 4]):
    tag(x, lambda r, c: (r, c))
    got = make_local((4,), bf16)
    spare = make_local((4,), f32)
    for i in static_range(4):
        spare[i] = 0.0  # nothing reads it: nothing in this loop to walk
    for i in static_range(4):
        got[i] = x[thread_idx.x, i]
    assert tag(got[...]) == tag(got[...])


def test_a_rolled_loop_with_nothing_a_check_needs_is_not_walked():
    compiled = cleared.specialize()
    first, second = _loops(compiled.module)
    numbers = {op: j for j, op in enumerate(compiled.preparation.table.ops)}
    assert numbers[first] not in compiled.preparation.relevant
    assert numbers[second] in compiled.preparation.relevant
    assert verify_kernel(compiled, cleared.name).verdict is Verdict.PROVED
