"""Copies of an unrolled loop's ops checked together: the same findings as checking them one by
one, on every example and on kernels made to defeat the grouping."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.dsl import Tensor, assume, bf16, block_idx, f32, i32, kernel, lane_id, make_local, matmul, static_range, tag, warp_mma_16x8x16
from argus.dsl.check import footprint, rules, run_plan
from argus.dsl.check.copies import CannotBatch, TileCopies
from argus.dsl import make_shared, syncthreads, thread_idx, u32
from argus.dsl.check import Preparation, TagAnalysis
from argus.dsl.cli import load_module
from argus.dsl.ir.dialect import is_unrolled
from argus.dsl.frontend import FrontEnd
from argus.dsl.check.verification import verify_kernel
from argus.verify import Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
KERNELS = {"transpose": "transpose", "gemm": "gemm", "flash_attention": "attention", "gemm_sm90": "gemm_sm90",
           "gemm_tma": "gemm_tma", "gemm_sm80": "gemm_sm80", "gemm_cdna": "gemm_cdna",
           "attention_cdna": "attention_cdna"}


def _example(folder: Path, name: str, edits: tuple[tuple[str, str], ...] = ()) -> Any:
    source = (EXAMPLES / f"{name}.py").read_text()
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new, 1)
    path = folder / f"batching_{name}.py"
    path.write_text(source)
    module = load_module(path)
    kernel_name = KERNELS[name]
    constants = getattr(module, f"example_{kernel_name}")(np.random.default_rng(0)).constants
    return getattr(module, kernel_name).specialize(**constants)


def _one_by_one(compiled: Any) -> Any:
    """The same IR, checked op by op."""
    plain = dataclasses.replace(compiled)
    plain.__dict__["preparation"] = Preparation(compiled.op, compiled.locations, batch=False)
    return plain


def _findings(result: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(str(w.get(k)) for k in ("assertion", "kind", "thread", "block", "element", "lhs written at",
                                                "rhs written at")) for w in result.witnesses)


def _runs(compiled: Any) -> list[run_plan.Run]:
    """The runs of copies a check walks: in blocks, and static loops kept rolled."""
    prep = compiled.preparation
    return [step for op in compiled.op.walk() for region in op.regions for block in region.blocks
            for step in prep.steps(block) if isinstance(step, run_plan.Run)] + \
        [run for op in compiled.op.walk() if is_unrolled(op) and (run := prep.rolled(op)) is not None]


def _groups(compiled: Any) -> list[run_plan.Group]:
    return [g for run in _runs(compiled) for g in run.groups]


def _domain(compiled: Any) -> dict[tuple[str, str], int]:
    """The facts an analysis leaves, as the least constant per kind and symbolic part (a fact
    ``e + k ≥ 0`` with a larger k follows from one with a smaller)."""
    analysis = TagAnalysis(compiled.op, compiled.locations, None, compiled.preparation).run()
    least: dict[tuple[str, str], int] = {}
    for kind, (k, part), *rest in analysis.facts:
        key = (kind + "".join(map(str, rest)), analysis.space.describe((0, part)))
        least[key] = min(k, least.get(key, k)) if kind == "ge0" else k
    return least


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_example_checks_the_same_with_copies_together(name: str, tmp_path: Path) -> None:
    compiled = _example(tmp_path, name)
    together, alone = verify_kernel(compiled, name), verify_kernel(_one_by_one(compiled), name)
    assert together.verdict is alone.verdict is Verdict.PROVED
    assert _domain(compiled) == _domain(_one_by_one(compiled))  # the same launches considered
    assert max(len(g.ops) for g in _groups(compiled)) >= 4  # the unrolled loops did run together
    # and never had to be walked again (but flash attention's epilogue, `_walked_again_for_o`)
    assert not any(run.walked_again for run in _runs(compiled)) or \
        (name == "flash_attention" and _walked_again_for_o(compiled)) or \
        (name == "attention_cdna" and _walked_again_for_cleared_scores(compiled))


def _walked_again_for_o(compiled: Any) -> bool:
    """Whether the runs walked again are only flash attention's loads of O for its asserted
    store: slices of another layout per copy, which a rule cannot read together."""
    return all(op.name == "argus.load" for run in _runs(compiled) if run.walked_again for op in run.ops)


def _walked_again_for_cleared_scores(compiled: Any) -> bool:
    """Whether the runs walked again are only the CDNA attention's products of Sᵀ with the
    stores of 0.0 that clear their accumulators among them (it states what O sums, so a cleared
    register is laid out as a product is): element by element, then whole fragments, which
    only program order tells apart (`footprint._Journal._whole_writes`)."""
    from xdsl.dialects import arith

    def clears(op: Any) -> bool:
        value = op.value.owner if op.name == "argus.store" else None
        return isinstance(value, arith.ConstantOp) and getattr(value.value, "value", None) is not None \
            and value.value.value.data == 0.0
    return all(any(op.name == "argus.mma" for op in run.ops) and any(clears(op) for op in run.ops)
               for run in _runs(compiled) if run.walked_again)


FORGOTTEN_LOAD = (("for v in static_range(8):\n                idx = MMA.a_layout(lane, v)",
                   "for v in static_range(7):\n                idx = MMA.a_layout(lane, v)"),)
"""GEMM loading 7 of the 8 values of each A fragment: its products read a byte no store wrote."""

FORGOTTEN_ZERO = (("for v in static_range(4):\n                acc[mi, ni, v] = 0.0",
                   "for v in static_range(3):\n                acc[mi, ni, v] = 0.0"),)
"""GEMM zeroing 3 of the 4 values of each accumulator fragment: its products read the fourth."""

SCORES_NOT_ZEROED = (("for i in static_range(4):\n                    s_acc[p, t, i] = 0.0",
                      "for i in static_range(0):\n                    s_acc[p, t, i] = 0.0"),)
"""The CDNA attention no longer zeroing its scores in the loop: the first iteration's products add
to registers nothing wrote (later ones would find the last iteration's scores)."""

PROBABILITIES_PARTLY_STORED = (("for i in static_range(4):\n                    w = exp2(",
                                "for i in static_range(1):\n                    w = exp2("),)
"""The CDNA attention storing one of every four probabilities before its tag function tags them
all: the products read the other three, which a tag gave tags but nothing wrote."""

FORGOTTEN_STAGE = (("for i in static_range(BM * BK // THREADS):", "for i in static_range(BM * BK // THREADS - 1):"),)
"""GEMM staging all but the last rows of its slices in shared memory: fragments load the rest."""

MUTANTS = [
    ("flash_attention", ("sVt[d, key] = v[kj * TILE + key, hk, d]", "sVt[d, key] = v[kj * TILE + key + 1, hk, d]")),
    ("flash_attention", ("kf[v0, v1, j] = sK[j * 8 + t1, ks * 16 + 2 * t0 + v0 + 8 * v1]",
                         "kf[v0, v1, j] = sK[j * 8 + t1, ks * 16 + 2 * t0 + v1 + 8 * v0]")),
    ("gemm", ("sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]", "sA[e // BK, e % BK] = a[bm + e // BK, 2 * k0 + e % BK]")),
    ("gemm", ("idx = MMA.b_layout(lane, v)", "idx = MMA.b_layout(lane, (v + 2) % 4)")),
    ("gemm", *FORGOTTEN_LOAD),
    ("gemm", *FORGOTTEN_ZERO),
    ("gemm", *FORGOTTEN_STAGE),
]


@pytest.mark.parametrize("name, edit", MUTANTS)
def test_a_broken_example_gives_the_same_witnesses_with_copies_together(name: str, edit: tuple[str, str],
                                                                      tmp_path: Path) -> None:
    compiled = _example(tmp_path, name, (edit,))
    together, alone = verify_kernel(compiled, name), verify_kernel(_one_by_one(compiled), name)
    assert together.verdict is alone.verdict is Verdict.VIOLATED
    assert _findings(together) == _findings(alone)


UNWRITTEN = [
    pytest.param("gemm", FORGOTTEN_LOAD, {"operand": "a"}, "83:17", id="a fragment partly loaded"),
    pytest.param("gemm", FORGOTTEN_ZERO, {"operand": "c"}, "83:17", id="an accumulator partly zeroed"),
    pytest.param("attention_cdna", SCORES_NOT_ZEROED, {"operand": "c", "loops": {"k0": 0}}, None,
                 id="an accumulator a loop's first iteration reads"),
    pytest.param("gemm", FORGOTTEN_STAGE, {"why": "reads shared bytes that no thread has written"}, "76:17",
                 id="a shared stage partly filled"),
    pytest.param("attention_cdna", PROBABILITIES_PARTLY_STORED, {"operand": "b", "loops": {"k0": 0}}, None,
                 id="a fragment partly stored, then tagged"),
]


@pytest.mark.parametrize("name, edits, facts, line", UNWRITTEN)
def test_bytes_nothing_wrote_are_reported_where_they_are_read(name: str, edits: tuple[tuple[str, str], ...],
                                                              facts: dict[str, Any], line: str | None,
                                                              tmp_path: Path) -> None:
    """Bytes without a tag may hold a constant; bytes nothing wrote are a fault the interpreter
    reports, and so does the checker, with a witness that replays: once per line that reads them
    (however many products read a fragment), and in a loop's first iteration too (the writes of
    later iterations must not hide it)."""
    result = verify_kernel(_example(tmp_path, name, edits), KERNELS[name])
    assert result.verdict is Verdict.VIOLATED
    witness = result.witnesses[0]
    # (the loops a witness names: the runtime loops given, and the static loops kept rolled around it)
    loops = facts.get("loops", {})
    assert witness["kind"] == "uninitialized-read" and loops.items() <= witness["loops"].items()
    assert {k: v for k, v in facts.items() if k != "loops"}.items() <= witness.items()
    assert line is None or (witness["assertion"].endswith(f"batching_{name}.py:{line}")
                            and len({w["assertion"] for w in result.witnesses}) == 1)
    assert witness["replayed"].startswith("the interpreter faults the same way")


@kernel(block=(32,), verify=False)
def through_one_register(x: Tensor[bf16, "n", 4], out: Tensor[bf16, "n", 4], n: int):
    """Every copy of the unrolled loop passes its element through the same register byte."""
    tag(x, lambda r, c: (r, c))
    assume(n % 32 == 0)  # whole blocks of rows
    row = block_idx.x * 32 + thread_idx.x
    tmp = make_local((1,), bf16)
    got = make_local((4,), bf16)
    want = make_local((4,), bf16)
    tag(want, lambda c: (row, c))
    for i in static_range(4):
        tmp[0] = x[row, i]
        got[i] = tmp[0]
    assert tag(got[...]) == tag(want[...]), "each column lands in its place"
    out[row, 0] = got[0]


@kernel(block=(32,), verify=False)
def through_one_register_late(x: Tensor[bf16, "n", 4], out: Tensor[bf16, "n", 4], n: int):
    """The same with the register read before it is written: copy i gets copy i - 1's element."""
    tag(x, lambda r, c: (r, c))
    assume(n % 32 == 0)  # whole blocks of rows
    row = block_idx.x * 32 + thread_idx.x
    tmp = make_local((1,), bf16)
    got = make_local((4,), bf16)
    want = make_local((4,), bf16)
    tag(want, lambda c: (row, c))
    tmp[0] = x[row, 0]
    for i in static_range(4):
        got[i] = tmp[0]
        tmp[0] = x[row, i]
    assert tag(got[...]) == tag(want[...]), "each column lands in its place"
    out[row, 0] = got[0]


@kernel(block=(32,), verify=False)
def through_one_register_late_by_thread(x: Tensor[bf16, "n", 4], out: Tensor[bf16, "n", 4], n: int):
    """The same, the register byte picked by the thread's index (which picks byte 0)."""
    tag(x, lambda r, c: (r, c))
    assume(n % 32 == 0)  # whole blocks of rows
    row = block_idx.x * 32 + thread_idx.x
    zero = thread_idx.x // 32
    tmp = make_local((1,), bf16)
    got = make_local((4,), bf16)
    want = make_local((4,), bf16)
    tag(want, lambda c: (row, c))
    tmp[zero] = x[row, 0]
    for i in static_range(4):
        got[i] = tmp[zero]
        tmp[zero] = x[row, i]
    assert tag(got[...]) == tag(want[...]), "each column lands in its place"
    out[row, 0] = got[0]


@pytest.mark.parametrize("fn, verdict", [(through_one_register, Verdict.PROVED),
                                         (through_one_register_late, Verdict.VIOLATED)])
def test_copies_sharing_a_register_read_what_program_order_leaves_there(fn: Any, verdict: Verdict) -> None:
    compiled = fn.specialize()
    result = verify_kernel(compiled, fn.name)
    assert result.verdict is verdict, result.text()
    # the copies' writes of the one register byte are kept per place in the run, and a read at
    # constant coordinates waits for the writes before it: each read finds what program order
    # leaves there
    assert _largest_group(compiled, "argus.store") == 4
    assert not any(run.walked_again for run in _runs(compiled))
    assert _findings(result) == _findings(verify_kernel(_one_by_one(compiled), fn.name))


def test_a_register_read_before_the_write_it_needs_is_walked_again_op_by_op() -> None:
    compiled = through_one_register_late_by_thread.specialize()
    result = verify_kernel(compiled, "through_one_register_late_by_thread")
    assert result.verdict is Verdict.VIOLATED, result.text()
    # at coordinates computed from the thread's index, the reads of the register ran before
    # the writes program order puts before them: walked again, op by op
    assert any(run.walked_again for run in _runs(compiled))
    assert _findings(result) == _findings(verify_kernel(_one_by_one(compiled), "through_one_register_late_by_thread"))


@kernel(block=(32,), verify=False)
def chained(x: Tensor[i32, "n", 32], out: Tensor[i32, "n", 32], n: int):
    """An index accumulated over an unrolled loop: each copy reads the one before. (It starts
    from the block's index: arithmetic on thread indices alone is known before the walk.)"""
    at = thread_idx.x + block_idx.x
    for i in static_range(4):
        at = (at + 7) % 32
        out[block_idx.x, at] = x[block_idx.x, i]


@kernel(block=(32,), verify=False)
def unchained(x: Tensor[i32, "n", 32], out: Tensor[i32, "n", 32], n: int):
    """The same indices, each copy computing its own from the thread's and the block's index."""
    for i in static_range(4):
        at = (thread_idx.x + block_idx.x + 7 * (i + 1)) % 32  # (no copy adds a multiple of 32, which the passes drop)
        out[block_idx.x, at] = x[block_idx.x, i]


def _largest_group(compiled: Any, name: str) -> int:
    return max((len(g.ops) for g in _groups(compiled) if g.ops[0].name == name), default=1)


def test_copies_that_depend_on_each_other_run_one_by_one() -> None:
    assert _largest_group(unchained.specialize(), "arith.addi") >= 3
    assert _largest_group(unchained.specialize(), "argus.store") == 4
    assert _largest_group(chained.specialize(), "arith.addi") == 1  # copy i adds to copy i - 1's index
    assert _largest_group(chained.specialize(), "argus.store") == 4  # the stores do not depend on each other
    assert verify_kernel(chained.specialize(), "chained").verdict is Verdict.NOTHING_TO_PROVE


MMA = warp_mma_16x8x16(bf16, bf16, f32)


@kernel(block=(32,), verify=False)
def into_two_accumulators(a: Tensor[bf16, 16, 32], b: Tensor[bf16, 8, 32], c: Tensor[f32, 16, 8]):
    """Two products in a row into two accumulators, then an assertion on each (computed data)."""
    tag(a, lambda m, k: (k,))
    tag(b, lambda n, k: (k,))
    lane = lane_id()
    af = make_local((2, 8), bf16)
    bf = make_local((2, 4), bf16)
    acc = make_local((2, 4), f32)
    want = make_local((4,), f32)
    tag(want, lambda v: (v,))
    for s in static_range(2):
        for v in static_range(8):
            idx = MMA.a_layout(lane, v)
            af[s, v] = a[idx % 16, s * 16 + idx // 16]
        for v in static_range(4):
            idx = MMA.b_layout(lane, v)
            bf[s, v] = b[idx % 8, s * 16 + idx // 8]
            acc[s, v] = 0.0
    matmul(af[0, :], bf[0, :], acc[0, :], MMA)
    matmul(af[1, :], bf[1, :], acc[1, :], MMA)
    assert tag(acc[0, :][...]) == tag(want[...]), "the first accumulator holds the inputs"
    assert tag(acc[1, :][...]) == tag(want[...]), "the second accumulator holds the inputs"


@kernel(block=(32,), verify=False)
def one_row_against_two_columns(a: Tensor[bf16, 16, 16], b: Tensor[bf16, 16, 16], c: Tensor[f32, 16, 16]):
    """One A fragment against two B fragments (the second read from the wrong K columns), the
    accumulators zeroed before and checked after a barrier: the products alone make a step."""
    tag(a, lambda m, k: (k,))
    tag(b, lambda n, k: (k,))
    lane = lane_id()
    af = make_local((8,), bf16)
    bf = make_local((2, 4), bf16)
    acc = make_local((2, 4), f32)
    want = make_local((4,), f32)
    tag(want, lambda v: (v,))
    for v in static_range(8):
        idx = MMA.a_layout(lane, v)
        af[v] = a[idx % 16, idx // 16]
    for s in static_range(2):
        for v in static_range(4):
            idx = MMA.b_layout(lane, v)
            bf[s, v] = b[s * 8 + idx % 8, (idx // 8 + 8 * s) % 16]
            acc[s, v] = 0.0
    matmul(af[:], bf[0, :], acc[0, :], MMA)
    matmul(af[:], bf[1, :], acc[1, :], MMA)
    syncthreads()
    assert tag(acc[0, :][...]) == tag(want[...]), "the first accumulator holds the inputs"
    assert tag(acc[1, :][...]) == tag(want[...]), "the second accumulator holds the inputs"


def test_products_reading_one_fragment_and_writing_apart_find_what_one_by_one_finds() -> None:
    compiled = one_row_against_two_columns.specialize()
    rows = [step for step in compiled.preparation.steps(compiled.op.body.block) if isinstance(step, run_plan.Products)]
    assert [sum(op.name == "argus.mma" for op in row.ops) for row in rows] == [2]
    assert all(op.name in ("argus.mma", "argus.slice") for row in rows for op in row.ops)
    together = verify_kernel(compiled, "one_row_against_two_columns")
    alone = verify_kernel(_one_by_one(compiled), "one_row_against_two_columns")
    assert together.verdict is alone.verdict is Verdict.VIOLATED, together.text()
    assert _findings(together) == _findings(alone)
    second = str(compiled.locations[_mma_ops(compiled)[1]])
    pairings = {w["assertion"].split(" (")[0] for w in together.witnesses
                if w["kind"] == "violated" and "must pair up" in w["assertion"]}
    assert pairings == {second}  # the product that pairs wrongly, and only it
    # each accumulator names the product that wrote it
    first = str(compiled.locations[_mma_ops(compiled)[0]])
    written = {w["message"]: w["lhs written at"] for w in together.witnesses if "message" in w}
    assert written == {"the first accumulator holds the inputs": first, "the second accumulator holds the inputs": second}


@kernel(block=(32,), verify=False)
def row_against_columns_in_a_loop(a: Tensor[bf16, 16, 16], b: Tensor[bf16, 16, 16], c: Tensor[f32, 16, 16]):
    """One A fragment against four B fragments in a static loop kept rolled (the fourth read from
    the wrong K columns): every copy of the product reads the A fragment alike."""
    tag(a, lambda m, k: (k,))
    tag(b, lambda n, k: (k,))
    lane = lane_id()
    af = make_local((8,), bf16)
    bf = make_local((4, 4), bf16)
    acc = make_local((4, 4), f32)
    for v in static_range(8):
        idx = MMA.a_layout(lane, v)
        af[v] = a[idx % 16, idx // 16]
    for s in static_range(4):
        for v in static_range(4):
            idx = MMA.b_layout(lane, v)
            bf[s, v] = b[(s % 2) * 8 + idx % 8, (idx // 8 + 8 * (s // 2) * (s % 2)) % 16]
            acc[s, v] = 0.0
    for s in static_range(4):
        matmul(af[:], bf[s, :], acc[s, :], MMA)


@kernel(block=(32,), verify=False)
def row_reloaded_in_the_loop(a: Tensor[bf16, 16, 32], b: Tensor[bf16, 16, 32], c: Tensor[f32, 16, 16]):
    """The A fragment read alike by the products of a rolled loop, and reloaded after each
    product from other K columns: the second product must see the reloaded fragment (and pairs
    wrongly with it), not the one the first product read."""
    tag(a, lambda m, k: (k,))
    tag(b, lambda n, k: (k,))
    lane = lane_id()
    af = make_local((8,), bf16)
    bf = make_local((2, 4), bf16)
    acc = make_local((2, 4), f32)
    for v in static_range(8):
        idx = MMA.a_layout(lane, v)
        af[v] = a[idx % 16, idx // 16]
    for s in static_range(2):
        for v in static_range(4):
            idx = MMA.b_layout(lane, v)
            bf[s, v] = b[idx % 8, s * 16 + idx // 8]
            acc[s, v] = 0.0
    for s in static_range(2):
        matmul(af[:], bf[s, :], acc[s, :], MMA)
        for v in static_range(8):
            idx = MMA.a_layout(lane, v)
            af[v] = a[idx % 16, 8 + idx // 16]  # K columns 8 to 23: B's of the second product are 16 to 31


def _alike_reads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each read of a fragment for the copies of a product was made once for them all."""
    made: list[bool] = []
    read_alike = footprint.Footprint.read_alike

    def counted(self: Any, *args: Any) -> Any:
        found = read_alike(self, *args)
        made.append(found is not None)
        return found

    monkeypatch.setattr(footprint.Footprint, "read_alike", counted)
    return made


def test_products_reading_one_fragment_alike_read_it_once(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = row_against_columns_in_a_loop.specialize()
    made = _alike_reads(monkeypatch)
    together = verify_kernel(compiled, "row_against_columns_in_a_loop")
    assert True in made  # the A fragment (one for four copies) was read once
    assert _largest_group(compiled, "argus.mma") == 4
    alone = verify_kernel(_one_by_one(compiled), "row_against_columns_in_a_loop")
    assert together.verdict is alone.verdict is Verdict.VIOLATED, together.text()
    assert _findings(together) == _findings(alone)
    assert {w["loops"]["s"] for w in together.witnesses if w["kind"] == "violated"} == {3}  # the fourth product


def test_a_fragment_rewritten_in_the_loop_is_read_per_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = row_reloaded_in_the_loop.specialize()
    made = _alike_reads(monkeypatch)
    together = verify_kernel(compiled, "row_reloaded_in_the_loop")
    # the reload's group runs first (it writes what the next iteration's product reads), so the
    # products' group finds the fragment written in the run and reads it copy by copy
    assert made == [False]
    alone = verify_kernel(_one_by_one(compiled), "row_reloaded_in_the_loop")
    assert together.verdict is alone.verdict is Verdict.VIOLATED, together.text()
    assert _findings(together) == _findings(alone)
    assert {w["loops"]["s"] for w in together.witnesses if w["kind"] == "violated"} == {1}


PRODUCT_FEEDS_PRODUCT = """
from argus.dsl import Tensor, bf16, kernel, lane_id, make_local, matmul, static_range, tag, warp_mma_16x8x16

MMA = warp_mma_16x8x16(bf16, bf16, bf16)


@kernel(block=(32,), verify=False)
def product_feeds_product(a: Tensor[bf16, 16, 32], b: Tensor[bf16, 8, 32], c: Tensor[bf16, 16, 8]):
    tag(a, lambda m, k: (k,))
    tag(b, lambda n, k: (k,))
    lane = lane_id()
    bf = make_local((2, 4), bf16)
    both = make_local((2, 2, 4), bf16)
    out = make_local((4,), bf16)
    for v in static_range(8):
        idx = MMA.a_layout(lane, v)
        both[0, v // 4, v % 4] = a[idx % 16, idx // 16]
        both[1, v // 4, v % 4] = 0.0
    for s in static_range(2):
        for v in static_range(4):
            idx = MMA.b_layout(lane, v)
            bf[s, v] = b[idx % 8, s * 16 + idx // 8]
            out[v] = 0.0
    matmul(both[0, :, :], bf[0, :], both[1, 0, :], MMA)
    matmul(both[1, :, :], bf[1, :], out, MMA)
"""


def _product_feeds_product(folder: Path, stored: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A product's accumulator is part of the next product's operand, in one register tile: the
    next product must read it after the write. With nothing after them, the products make a
    `Products` step; with a stretch of loads and stores after them too, a run (whose registers
    sort out what each read sees). (The loops are traced unrolled: kept rolled, they are steps
    of their own.)"""
    path = folder / f"feeds_{stored}.py"
    path.write_text(PRODUCT_FEEDS_PRODUCT + ("    c[lane % 16, lane % 8] = out[0]\n" if stored else ""))
    monkeypatch.setattr(FrontEnd, "rolls", False)
    return load_module(path).product_feeds_product.specialize()


def _step_kinds(compiled: Any) -> set[type]:
    return {type(step) for block in [compiled.op.body.block] for step in compiled.preparation.steps(block)}


def test_products_between_loads_of_their_fragments_run_together(tmp_path: Path) -> None:
    # flash attention loads the K (V) fragment anew before each product: each product joins
    # two stretches of loads, so the products, their assertions and the loads run together
    compiled = _example(tmp_path, "flash_attention")
    verify_kernel(compiled, "attention")
    assert _largest_group(compiled, "argus.mma") == 8
    assert _largest_group(compiled, "argus.tag_assert") == 8
    assert _walked_again_for_o(compiled)


def test_products_after_their_fragments_are_one_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GEMM loads every fragment, then multiplies: kept rolled, the loop over the products runs
    # them as one group; traced unrolled, they make one `Products` step
    rolled = _example(tmp_path, "gemm")
    assert verify_kernel(rolled, "gemm").verdict is Verdict.PROVED
    assert _largest_group(rolled, "argus.mma") == 8
    monkeypatch.setattr(FrontEnd, "rolls", False)
    compiled = _example(tmp_path, "gemm")
    verify_kernel(compiled, "gemm")
    blocks = [block for op in compiled.op.walk() for region in op.regions for block in region.blocks]
    rows = [step for block in blocks for step in compiled.preparation.steps(block)
            if isinstance(step, run_plan.Products)]
    assert [sum(op.name == "argus.mma" for op in row.ops) for row in rows] == [8]
    assert _largest_group(compiled, "argus.mma") == 1


def test_products_side_by_side_find_what_one_by_one_finds() -> None:
    compiled = into_two_accumulators.specialize()
    assert run_plan.Products in _step_kinds(compiled)
    together = verify_kernel(compiled, "into_two_accumulators")
    alone = verify_kernel(_one_by_one(compiled), "into_two_accumulators")
    assert together.verdict is alone.verdict is Verdict.VIOLATED, together.text()
    assert _findings(together) == _findings(alone)
    # each accumulator names the product that wrote it
    first, second = (str(compiled.locations[op]) for op in _mma_ops(compiled))
    written = {w["message"]: w["lhs written at"] for w in together.witnesses}
    assert written == {"the first accumulator holds the inputs": first, "the second accumulator holds the inputs": second}


@pytest.mark.parametrize("stored, step", [(False, run_plan.Products), (True, run_plan.Run)])
def test_a_product_reads_what_the_product_before_it_wrote(stored: bool, step: type, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _product_feeds_product(tmp_path, stored, monkeypatch)
    assert step in _step_kinds(compiled)

    def candidates(prepared: Any) -> list[tuple[str, str, int, int]]:
        analysis = TagAnalysis(prepared.op, prepared.locations, None, prepared.preparation).run()
        return [(c.site, c.kind, c.point, c.element) for c in analysis.obligations.candidates]

    found = candidates(compiled)
    assert found == candidates(_one_by_one(compiled))
    # the second product's operand holds the first one's result (computed data), not unwritten bytes
    second = [kind for site, kind, _, _ in found if site.startswith(str(compiled.locations[_mma_ops(compiled)[1]]))]
    assert "conflicting" in second and "unwritten" not in second


def _mma_ops(compiled: Any) -> list[Any]:
    return [op for op in compiled.op.walk() if op.name == "argus.mma"]


@kernel(block=(32,), verify=False)
def moves_words(x: Tensor[u32, 32, 8], out: Tensor[u32, 32, 8]):
    """Integer data loaded word by word (each load its own unknown) and stored as it is."""
    tag(x, lambda r, c: (r, c))
    t = thread_idx.x
    words = make_local((8,), u32)
    staged = make_shared((32, 8), u32)
    got = make_local((8,), u32)
    want = make_local((8,), u32)
    tag(want, lambda c: (t, c))
    for i in static_range(8):
        words[i] = x[t, i]
    for i in static_range(8):
        staged[t, i] = words[i]
    syncthreads()
    for i in static_range(8):
        got[i] = staged[t, i]
    assert tag(got[...]) == tag(want[...]), "each word lands in its place"
    out[t, 0] = got[0]


def test_stores_of_copies_move_integer_data_without_knowing_it() -> None:
    """A store moves its value's tags: the copies' values, unknown data, are gathered by their
    tags alone (an unknown per point over every copy made a check of `attention_cdna` 30%
    slower)."""
    compiled = moves_words.specialize()
    assert _largest_group(compiled, "argus.store") == 8
    analysis = TagAnalysis(compiled.op, compiled.locations, None, compiled.preparation).run()
    assert not any(atom.kind == "opaque" for atom in analysis.space.atoms)
    result = verify_kernel(compiled, "moves_words")
    assert result.verdict is Verdict.PROVED, result.text()
    assert _findings(result) == _findings(verify_kernel(_one_by_one(compiled), "moves_words"))


def _random_groups(rng: np.random.Generator, size: int) -> tuple[list[list[int]], list[list[int]]]:
    """Ops 0..size-1 reading earlier ops (`sources`), grouped at random (each group in order)."""
    sources = [sorted({int(j) for j in rng.integers(0, i, rng.integers(0, 3))}) if i else [] for i in range(size)]
    label = rng.integers(0, max(1, size // 2), size)
    groups = [[i for i in range(size) if label[i] == g] for g in np.unique(label)]
    return sources, sorted(groups, key=lambda g: -len(g))  # not in program order


@pytest.mark.parametrize("seed", range(40))
def test_groups_run_after_the_groups_they_read_and_in_program_order_where_free(seed: int) -> None:
    rng = np.random.default_rng(seed)
    sources, groups = _random_groups(rng, int(rng.integers(1, 16)))
    order = run_plan._schedule(sources, groups)
    assert sorted(i for g in order for i in g) == list(range(len(sources)))  # every op, once
    assert all(g in groups or len(g) == 1 for g in order)  # a group runs whole, or op by op
    ran_at = {i: k for k, g in enumerate(order) for i in g}
    assert all(ran_at[j] < ran_at[i] for i in range(len(sources)) for j in sources[i])  # what it reads ran before
    assert run_plan._schedule(sources, groups[::-1]) == order  # whatever order the groups come in
    group_of = {i: g for g in groups for i in g}
    if all(group_of[j][0] < g[0] for g in groups for i in g for j in sources[i]):
        assert order == sorted(groups)  # nothing waits for a group beginning after it: program order


def test_a_group_waits_for_a_group_beginning_after_it() -> None:
    assert run_plan._schedule([[], [], [1]], [[0, 2], [1]]) == [[1], [0, 2]]
    assert run_plan._schedule([[], [0]], [[0, 1]]) == [[0], [1]]  # a copy reads another: op by op


def _role(whole: bool = False, view: bool = False) -> run_plan.Role:
    return run_plan.Role(runnable=True, whole=whole, view=view, product=whole, tiles=whole)


@pytest.mark.parametrize("seed", range(40))
def test_a_run_is_cut_into_alternating_stretches_and_clusters(seed: int) -> None:
    """Clusters begin and end with an op reading tiles whole and hold only such ops and views;
    stretches hold none; the pieces cover the ops in order."""
    rng = np.random.default_rng(seed)
    roles = [_role(*[(True, False), (False, True), (False, False)][int(k)]) for k in rng.integers(0, 3, 12)]
    lo, hi = sorted(int(x) for x in rng.integers(0, len(roles) + 1, 2))
    pieces = run_plan._pieces(roles, lo, hi)
    assert [i for a, b, _ in pieces for i in range(a, b)] == list(range(lo, hi))
    assert all(b > a for a, b, _ in pieces)
    for (a, b, cluster), after in zip(pieces, pieces[1:] + [None]):
        if cluster:
            assert roles[a].whole and roles[b - 1].whole and all(r.whole or r.view for r in roles[a:b])
        else:
            assert not any(r.whole for r in roles[a:b])
        assert after is None or after[2] != cluster


def _over_copies(compiled: Any, raised: Callable[[], Exception], monkeypatch: pytest.MonkeyPatch) -> type:
    """Make the rule of the kind of op with the most copies in a group raise `raised()` whenever
    it runs over copies' points together, as it would with a bug only copies meet (its plain
    walk, one copy at a time, stays right). The plan is made before, with the rule as it was."""
    verify_kernel(compiled, "gemm")  # (plans every block and rolled loop once, with the true rules)
    kind = type(max((g for g in _groups(compiled) if g.rule is None and type(g.ops[0]) in rules.RULES),
                    key=lambda g: len(g.ops)).ops[0])
    rule = rules.RULES[kind]

    def buggy(a: Any, op: Any, mask: np.ndarray) -> None:
        if a.n > a.threads:  # (over copies: points are threads × copies)
            raise raised()
        rule(a, op, mask)

    monkeypatch.setitem(rules.RULES, kind, buggy)
    return kind


def test_a_bug_a_rule_meets_over_copies_surfaces_instead_of_being_walked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule that fails with something other than `CannotBatch` has a bug: the check fails with
    it (the command exits 2, as for any failure of the checker), rather than walking the run again
    op by op, which here would prove the kernel and hide the bug."""
    compiled = _example(tmp_path, "gemm")
    _over_copies(compiled, lambda: ZeroDivisionError("a rule's bug"), monkeypatch)
    assert verify_kernel(_one_by_one(compiled), "gemm").verdict is Verdict.PROVED  # what a second walk would say
    with pytest.raises(ZeroDivisionError, match="a rule's bug"):
        verify_kernel(compiled, "gemm")


def test_a_rule_that_declines_copies_has_its_run_walked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`CannotBatch` is how a rule says its copies cannot run together: their runs are walked
    again op by op, with the verdict and findings of the plain walk."""
    compiled = _example(tmp_path, "gemm")
    _over_copies(compiled, lambda: CannotBatch("copies apart"), monkeypatch)
    assert verify_kernel(compiled, "gemm").verdict is Verdict.PROVED
    assert any(run.walked_again for run in _runs(compiled))


def test_a_rule_reading_a_tile_off_a_tile_per_copy_declines_the_copies() -> None:
    """A tile per copy has none of a tile's attributes: a rule that does not take copies
    together, reading one, raises `CannotBatch` (its run is walked again), not a bug's error."""
    copies = TileCopies((object(), object()))
    with pytest.raises(CannotBatch, match="memory"):
        copies.memory  # noqa: B018
    assert not hasattr(copies, "__array_interface__")  # (protocol lookups stay plain misses)
    assert len(copies.tiles) == 2
