"""What a check prepares once per kernel: the op table read off the IR, and the ops tag
liveness lets the analysis skip. The table must say what the IR says; skipping must not change
any finding."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.dsl import Tensor, assume, bf16, f32, kernel, make_local, matmul, static_range, tag, thread_idx, warp_mma_16x8x16
from argus.dsl.check import Preparation, TagAnalysis, control
from argus.dsl.check.control import Renamer
from argus.dsl.ir.dialect import StoreOp, is_unrolled
from argus.dsl.cli import load_module
from argus.dsl.check.op_table import OpTable
from argus.dsl.check.tag_liveness import Liveness
from argus.dsl.check.verification import verify_kernel
from argus.verify import Verdict
from xdsl.dialects import arith, scf

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
KERNELS = {"transpose": "transpose", "gemm": "gemm", "flash_attention": "attention", "gemm_sm90": "gemm_sm90",
           "gemm_cdna": "gemm_cdna", "attention_cdna": "attention_cdna"}
PIPELINES = {"gemm_sm80": "gemm_sm80"}
"""Examples whose main loop is checked with its first iteration peeled (not walked by the
tests of every example above: their compile takes longest)."""


def _compiled(name: str) -> Any:
    module = load_module(EXAMPLES / f"{name}.py")
    kernel_name = {**KERNELS, **PIPELINES}[name]
    constants = getattr(module, f"example_{kernel_name}")(np.random.default_rng(0)).constants
    return getattr(module, kernel_name).specialize(**constants)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_op_table_says_what_the_ir_says(name):
    kernel = _compiled(name).op
    table = OpTable(kernel)
    walked = [op for op in kernel.walk() if op is not kernel]
    assert table.ops == walked  # numbered in program order, an op before the ops of its regions
    assert table.kinds == [type(op) for op in walked]
    for number, op in enumerate(walked):
        assert table.operands[number] == tuple(id(v) for v in op.operands)
        assert table.operand_values[number] == tuple(op.operands)
        assert table.results[number] == tuple(id(r) for r in op.results)
        assert all(table.maker[id(r)] == number for r in op.results)
        inside = [o for o in op.walk() if o is not op]
        assert table.ops[number + 1:table.ends[number]] == inside
    values = {id(v): v for op in walked for v in (*op.operands, *op.results)}
    for ident, value in values.items():
        assert table.uses.get(ident, 0) == len(list(value.uses)), value
    for op in [kernel, *walked]:
        for region in op.regions:
            for block in region.blocks:
                assert [table.ops[j] for j in table.block(block)] == list(block.ops)
                assert table.holds(block, scf.ForOp) == any(isinstance(o, scf.ForOp) for b in [block]
                                                            for top in b.ops for o in top.walk())


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_skipping_the_ops_no_check_depends_on_changes_no_finding(name):
    """The analysis of the relevant ops only and of every op: the same verdict, the same domain
    (the least constant of each bound) and the same obligations."""
    compiled = _compiled(name)
    everything = dataclasses.replace(compiled)
    preparation = Preparation(compiled.op, compiled.locations)
    preparation.__dict__["liveness"] = Liveness(set(range(len(preparation.table.ops))), set())
    everything.__dict__["preparation"] = preparation
    assert len(compiled.preparation.relevant) < len(preparation.relevant)  # there is something to skip
    assert verify_kernel(compiled, name).verdict == verify_kernel(everything, name).verdict

    def analysed(kernel: Any) -> tuple[Any, ...]:
        analysis = TagAnalysis(kernel.op, kernel.locations, None, kernel.preparation).run()
        least: dict[tuple[str, str], int] = {}
        for kind, (k, part), *rest in analysis.facts:
            key = (kind + "".join(map(str, rest)), analysis.space.describe((0, part)))
            least[key] = min(k, least.get(key, k)) if kind == "ge0" else k
        return least, sorted(analysis.obligations.pending)

    assert analysed(compiled) == analysed(everything)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_values_known_before_a_check_are_what_the_walk_computes(name):
    """Integer constants, thread indices and integer arithmetic on those alone are computed once
    per kernel: each is what an op-by-op walk computes, and none depends on anything else (a
    block or loop index, a parameter, data)."""
    compiled = _compiled(name)
    known, table = compiled.preparation.known, compiled.preparation.table
    assert any(value is not None and table.kinds[number] is not arith.ConstantOp for number, value in known.items())
    made = {r: j for j in known for r in table.results[j]}
    for number in known:
        assert all(v in made for v in table.operands[number]), table.ops[number]
    walk = TagAnalysis(compiled.op, compiled.locations, None, Preparation(compiled.op, compiled.locations, batch=False))
    walk.run()
    for number, value in known.items():
        walked = walk.values.get(table.ops[number].results[0])
        if value is None:  # a float constant
            assert walked is None
        else:
            assert walked.concrete and np.array_equal(walked.const, value.const), table.ops[number]


def test_renaming_a_loops_state_leaves_the_tags_made_before_the_loop_as_they_are(monkeypatch):
    """What a loop iteration leaves is renamed to the iteration before; tags made before the
    loop's index existed cannot mention it, and renaming them is skipped: the state comes out as
    renaming every tag makes it."""
    compiled = _compiled("flash_attention")
    renamed: list[tuple[Any, Any, Any]] = []
    rename = Renamer.state

    def recorded(self: Renamer, state: Any) -> Any:
        out = rename(self, state)
        renamed.append((self, state, out))
        return out

    monkeypatch.setattr(Renamer, "state", recorded)
    monkeypatch.setattr(control, "reads_carried_cheaply", lambda *args: True)  # the whole entry state, renamed
    TagAnalysis(compiled.op, compiled.locations, None, compiled.preparation).run()
    assert renamed  # its loop carries its softmax state to the next iteration
    for renamer, state, out in renamed:
        assert renamer.kept > 0  # Q's fragments were tagged before the loop
        reading_all = Renamer(renamer.a, renamer.symbol, renamer.replacement)
        reading_all.kept = 0
        expected = rename(reading_all, state)
        assert any(not np.array_equal(a[0], b[0]) for a, b in zip(state.memories, expected.memories))  # it renames
        for a, b in zip(out.memories, expected.memories):
            assert np.array_equal(a[0], b[0])
        for a, b in zip(out.slots, expected.slots):
            assert np.array_equal(a[0], b[0])


@pytest.mark.parametrize("name", sorted(set(KERNELS) - {"transpose"} | set(PIPELINES)))  # (those with a runtime loop)
def test_a_loop_settles_as_it_does_when_its_whole_entry_state_is_built(name, monkeypatch):
    """A runtime loop's first pass stands when what later iterations see at its entry differs
    nowhere the pass read before writing: found from the bytes it read so, it is what building
    the whole entry state (every memory renamed and joined) finds."""
    compiled = _compiled(name)
    kernel_name = {**KERNELS, **PIPELINES}[name]
    answers: list[bool] = []
    carried = control.reads_carried_cheaply
    monkeypatch.setattr(control, "reads_carried_cheaply", lambda *args: answers.append(carried(*args)) or answers[-1])
    cheap = verify_kernel(dataclasses.replace(compiled), kernel_name)
    walked = TagAnalysis(compiled.op, compiled.locations, None, compiled.preparation).run()
    monkeypatch.setattr(control, "reads_carried_cheaply", lambda *args: True)
    whole = verify_kernel(dataclasses.replace(compiled), kernel_name)
    built = TagAnalysis(compiled.op, compiled.locations, None, compiled.preparation).run()
    assert cheap.verdict is whole.verdict is Verdict.PROVED, cheap.text()
    assert sorted(walked.obligations.pending) == sorted(built.obligations.pending)
    assert walked.facts == built.facts and walked.replay_facts == built.replay_facts
    # (the other loops' first pass reads nothing before writing it, `_carries_nothing`, or carries
    # an accumulator's product, a k span the next iteration continues: flash attention's O, the
    # GEMMs' C; gemm_sm90's pipeline is peeled at once)
    assert (False in answers) == (name in {"gemm_sm80"})


@kernel(block=(32,), verify=False)
def carried_through_the_back_edge(x: Tensor[f32, "n"], n: int):
    tag(x, lambda i: (i,))
    assume(n >= 32)
    held = make_local((1,), f32)
    want = make_local((1,), f32)
    held[0] = x[thread_idx.x]
    for it in range(1, n // 32):
        tag(want, lambda i: (it * 32 - 32 + thread_idx.x,))
        assert tag(held[...]) == tag(want[...])
        held[0] = x[it * 32 + thread_idx.x]  # matters only to the next iteration's assertion


def test_a_write_that_only_the_next_iteration_reads_is_kept():
    compiled = carried_through_the_back_edge.specialize()
    table = compiled.preparation.table
    stores = [j for j, op in enumerate(table.ops) if isinstance(op, StoreOp)]
    assert stores and all(j in compiled.preparation.relevant for j in stores)
    assert verify_kernel(compiled, "carried").verdict is Verdict.PROVED


def _accumulator_carried(shift: int) -> Any:
    """A product after a loop makes its accumulator's bytes matter as writes before the loop's
    first pass finds that the loop's own assertion reads their data in the next iteration."""
    mma = warp_mma_16x8x16(bf16, bf16, f32)

    @kernel(block=(32,), verify=False)
    def accumulator_carried(x: Tensor[f32, "n"], n: int):
        tag(x, lambda i: (i,))
        assume(n >= 8)
        acc = make_local((4,), f32)
        staged = make_local((4,), f32)
        want = make_local((4,), f32)
        a = make_local((8,), bf16)
        b = make_local((4,), bf16)
        for v in static_range(4):
            acc[v] = x[v]
        for it in range(n // 8):
            tag(want, lambda v: (v + it,))
            assert tag(acc[...]) == tag(want[...])
            for v in static_range(4):
                staged[v] = x[v + it + shift]
            for v in static_range(4):
                acc[v] = staged[v]  # written here, read by the next iteration's assertion
        for v in static_range(8):
            a[v] = 0.0
        for v in static_range(4):
            b[v] = 0.0
        matmul(a, b, acc, mma)

    return accumulator_carried


@pytest.mark.parametrize(("shift", "verdict"), [(1, Verdict.PROVED), (2, Verdict.VIOLATED)])
def test_a_write_kept_only_as_a_write_is_kept_whole_when_the_next_iteration_reads_its_data(shift, verdict,
                                                                                            no_result_cache):
    compiled = _accumulator_carried(shift).specialize()
    table = compiled.preparation.table
    stores = [j for j, op in enumerate(table.ops) if isinstance(op, StoreOp)]
    assert all(j in compiled.preparation.relevant for j in stores)
    assert verify_kernel(compiled, "accumulator_carried").verdict is verdict


@pytest.mark.parametrize("name", ["gemm", "flash_attention"])
def test_a_timed_walk_times_every_step_of_the_plan_and_finds_the_same(name):
    compiled = _compiled(name)
    preparation = compiled.preparation
    timed = TagAnalysis(compiled.op, compiled.locations, None, preparation)
    timed.step_times = {}
    found = timed.run()
    loops = [loop for loop in preparation.table.of_kind(scf.ForOp) if not is_unrolled(loop)]
    blocks = [compiled.op.body.block] + [loop.body.block for loop in loops]
    steps = [s for block in blocks for s in preparation.steps(block) if not isinstance(s, scf.ForOp) or is_unrolled(s)]
    # each step once: a runtime loop's steps inside it, a static loop kept rolled as one step;
    # the ops of a run walked again op by op (its copies read tiles of another layout each: the
    # loads of flash attention's O for its asserted store) are timed as steps too
    assert {id(s) for s in steps} <= set(timed.step_times)
    assert all(step is s for s in steps for step, _ in [timed.step_times[id(s)]])
    assert all(seconds > 0 for _, seconds in timed.step_times.values())
    plain = TagAnalysis(compiled.op, compiled.locations, None, preparation).run()
    assert sorted(found.obligations.pending) == sorted(plain.obligations.pending)
    assert found.facts == plain.facts


def _checked_loop(monkeypatch, name: str) -> tuple[bool, int]:
    """Whether the preparation takes an example's outermost runtime loop for a pipeline
    (`fills_before`), and how many times checking the example walks that loop's body."""
    compiled = _compiled(name)
    (loop,) = [op for op in compiled.preparation.table.of_kind(scf.ForOp)
               if op.parent_op() is compiled.op and not is_unrolled(op)]
    walks = []
    run_block = TagAnalysis.run_block

    def counted(self, block, mask):
        walks.append(block is loop.body.block)
        return run_block(self, block, mask)

    monkeypatch.setattr(TagAnalysis, "run_block", counted)
    assert verify_kernel(compiled, name).verdict is Verdict.PROVED
    return compiled.preparation.fills_before(loop), sum(walks)


def test_a_pipeline_is_peeled_at_once_and_walked_once_for_its_first_iteration_and_once_for_the_rest(monkeypatch):
    """Its prologue fills the stage buffers the iterations refill: the first iteration is
    checked on its own with no walk to find that out, and the walk of the others, tracking what
    it reads before writing, is final when the entry state later iterations see changes none
    of that."""
    assert _checked_loop(monkeypatch, "gemm_sm80") == (True, 2)


@pytest.mark.parametrize("name, walks", [("gemm", 2), ("attention_cdna", 2)])
def test_a_loop_whose_shared_tiles_nothing_fills_before_it_is_not_peeled(monkeypatch, name, walks):
    """GEMM zeroes its accumulators before its loop (constants) and loads its tiles only in it;
    `attention_cdna` prefetches K and V into registers before its loop and in it, with tags the
    loop index does not change: peeling would only cost. Each loop settles in two walks (GEMM's
    first finds the general form of the k span its accumulators hold, the product it claims)."""
    assert _checked_loop(monkeypatch, name) == (False, walks)
