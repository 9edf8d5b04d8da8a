"""Reduction tags (`argus.verify.reductions`): a row maximum or sum carries the row and the columns
it covers — through a walk of the row with a lane stride (``range(lane, cols, 32)``, trip counts
differing between lanes) and a warp butterfly — and ``exp2((x - m) * LOG2E)`` over the sum of the
same terms is the row's softmax, which ``softmax_of`` states. Each rule is checked both ways: the
kernel as written is proved, and each mistake a kernel engineer makes (a reduction over the wrong
lanes, a reduction dropped, a stride that double counts, a term and a sum of other references or
scales, a column left out) is not — statically violated with a witness the shadow tags replay, and
found by the shadow tags on a launch of their own, so the two agree."""

from __future__ import annotations

import linecache
import math
import re

import numpy as np
import pytest
from argus.dsl import (ArgusError, Tensor, assert_tags, assume, block_idx, exp2, f32, grid_dim, kernel, lane_id,
                       row_max, row_sum, shfl_xor, softmax_of, tag, thread_idx, warp_max, warp_sum)
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")

LOG2E = math.log2(math.e)

SOFTMAX = '''
@kernel(block=(32, 2), verify=False)
def softmax(x: Tensor[f32, "rows", "cols"], out: Tensor[f32, "rows", "cols"], rows: int, cols: int):
    assume(grid_dim.x * 2 >= rows)
    tag(x, lambda r, c: (c,), rows=lambda r, c: (r,))
    assert_tags(out, lambda r, c: softmax_of(x[r], (c,), (range(0, cols),)))
    row = block_idx.x * 2 + thread_idx.y
    lane = lane_id()
    if row < rows:
        peak = float("-inf")
        for c in range(lane, cols, 32):
            peak = max(peak, x[row, c])
        peak = warp_max(peak)
        total = 0.0
        for c in range(lane, cols, 32):
            total = total + exp2((x[row, c] - peak) * LOG2E)
        total = warp_sum(total)
        for c in range(lane, cols, 32):
            out[row, c] = exp2((x[row, c] - peak) * LOG2E) / total
'''

BUTTERFLY = "        peak = warp_max(peak)\n"
SUM_BUTTERFLY = "        total = warp_sum(total)\n"
TERM = "total = total + exp2((x[row, c] - peak) * LOG2E)"
STORE = "out[row, c] = exp2((x[row, c] - peak) * LOG2E) / total"


def compiled(source: str, name: str) -> object:
    """The kernel `name` that `source` defines (the front end reads its lines, kept for it)."""
    scope = dict(kernel=kernel, Tensor=Tensor, f32=f32, assume=assume, grid_dim=grid_dim, tag=tag,
                 assert_tags=assert_tags, softmax_of=softmax_of, row_max=row_max, row_sum=row_sum,
                 block_idx=block_idx, thread_idx=thread_idx, lane_id=lane_id, exp2=exp2, warp_max=warp_max,
                 warp_sum=warp_sum, shfl_xor=shfl_xor, LOG2E=LOG2E)
    where = f"<{name} {abs(hash(source))}>"
    linecache.cache[where] = (len(source), None, source.splitlines(True), where)
    exec(compile(source, where, "exec"), scope)
    return scope[name]


def softmax(*edits: tuple[str, str]) -> object:
    source = SOFTMAX
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return compiled(source, "softmax")


def shadow_verdict(k: object, rows: int = 3, cols: int = 70) -> Verdict:
    """The shadow tags' verdict on one launch (random data, a ragged last walk)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    return check_launch(k, ((rows + 1) // 2,), x, np.zeros_like(x), rows, cols).verdict


CORRECT = {
    "as written": (),
    "times the reciprocal of the sum": ((STORE, "out[row, c] = exp2((x[row, c] - peak) * LOG2E) * (1.0 / total)"),),
    "the scale on the left": ((TERM, "total = total + exp2(LOG2E * (x[row, c] - peak))"),
                              (STORE, "out[row, c] = exp2(LOG2E * (x[row, c] - peak)) / total")),
    "the sum's terms added on the left": ((TERM, "total = exp2((x[row, c] - peak) * LOG2E) + total"),),
    "the maximum reduced twice": ((BUTTERFLY, BUTTERFLY + BUTTERFLY),),
    "a butterfly of shuffles in another order": (
        (BUTTERFLY, "".join(f"        peak = max(peak, shfl_xor(peak, {m}))\n" for m in (1, 2, 4, 8, 16))),
        (SUM_BUTTERFLY, "".join(f"        total = total + shfl_xor(total, {m})\n" for m in (4, 16, 1, 8, 2)))),
}


@pytest.mark.parametrize("edits", list(CORRECT.values()), ids=list(CORRECT))
def test_a_softmax_over_the_row_is_proved_and_the_shadow_tags_agree(edits):
    k = softmax(*edits)
    result = k.verify()
    assert result.verdict is Verdict.PROVED, result.text()
    assert shadow_verdict(k) is Verdict.PROVED


WRONG = {
    "the sum's butterfly dropped": ((SUM_BUTTERFLY, ""),),
    "the maximum's butterfly dropped": ((BUTTERFLY, ""),),
    "a butterfly one round short": ((SUM_BUTTERFLY, "".join(f"        total = total + shfl_xor(total, {m})\n"
                                                          for m in (1, 2, 4, 8))),),
    "a round of the butterfly twice": ((SUM_BUTTERFLY, "".join(f"        total = total + shfl_xor(total, {m})\n"
                                                             for m in (1, 2, 4, 8, 8, 16))),),
    "the sum walks with a stride of 16": ((f"        for c in range(lane, cols, 32):\n            {TERM}",
                                           f"        for c in range(lane, cols, 16):\n            {TERM}"),),
    "the sum skips the last column": ((f"        for c in range(lane, cols, 32):\n            {TERM}",
                                       f"        for c in range(lane, cols - 1, 32):\n            {TERM}"),),
    "the sum starts a lane late": ((f"        for c in range(lane, cols, 32):\n            {TERM}",
                                    f"        for c in range(lane + 1, cols, 32):\n            {TERM}"),),
    "a term added twice": ((TERM, TERM + " + exp2((x[row, c] - peak) * LOG2E)"),),
    "the maximum overwritten, not accumulated": (("peak = max(peak, x[row, c])", "peak = x[row, c]"),),
    "the maximum restarted in each iteration": (("            peak = max(peak, x[row, c])\n",
                                                  "            peak = float(\"-inf\")\n"
                                                  "            peak = max(peak, x[row, c])\n"),),
    "the sum restarted in each iteration": ((f"            {TERM}\n", f"            total = 0.0\n            {TERM}\n"),),
    "the peak not scaled by log2(e)": ((STORE, "out[row, c] = exp2(x[row, c] * LOG2E - peak) / total"),),
    "exp2 of the difference unscaled": ((TERM, "total = total + exp2(x[row, c] - peak)"),
                                        (STORE, "out[row, c] = exp2(x[row, c] - peak) / total")),
    "another scale in the terms than in the sum": ((STORE, "out[row, c] = exp2((x[row, c] - peak) * 2.0) / total"),),
    "the numerator not exponentiated": ((STORE, "out[row, c] = (x[row, c] - peak) * LOG2E / total"),),
    "the sum of the other row": ((TERM, "total = total + exp2((x[(row + 1) % rows, c] - peak) * LOG2E)"),),
}


@pytest.mark.parametrize("edits", list(WRONG.values()), ids=list(WRONG))
def test_a_wrong_reduction_or_softmax_is_violated_and_the_shadow_tags_agree(edits):
    k = softmax(*edits)
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert result.witnesses[0]["replayed"].startswith("reproduced"), result.witnesses[0]
    assert shadow_verdict(k) is Verdict.VIOLATED


def test_a_witness_names_the_columns_a_lane_s_sum_covers():
    result = softmax((SUM_BUTTERFLY, "")).verify()
    witness = result.witnesses[0]
    assert "softmax of row" in str(witness["lhs tag"]) and "softmax of row" in str(witness["rhs tag"]), witness


REDUCTION = '''
@kernel(block=(32,), verify=False)
def reduce(x: Tensor[f32, "rows", "cols"], m: Tensor[f32, "rows"], rows: int, cols: int):
    assume(grid_dim.x >= rows)
    tag(x, lambda r, c: (c,), rows=lambda r, c: (r,))
    assert_tags(m, lambda r: CLAIM)
    row = block_idx.x
    lane = thread_idx.x
    if row < rows:
        acc = START
        for c in range(lane, cols, 32):
            acc = STEP
        acc = BUTTERFLY(acc)
        if lane == 0:
            m[row] = acc
'''

MAX = dict(CLAIM="row_max(x[r], (range(0, cols),))", START='float("-inf")', STEP="max(acc, x[row, c])",
           BUTTERFLY="warp_max")
SUM = dict(CLAIM="row_sum(x[r], (range(0, cols),))", START="0.0", STEP="acc + x[row, c]", BUTTERFLY="warp_sum")


def reduction(parts: dict[str, str]) -> object:
    source = REDUCTION
    for name, text in parts.items():
        source = source.replace(name, text)
    return compiled(source, "reduce")


def reduction_shadow(k: object, rows: int = 3, cols: int = 45) -> Verdict:
    x = np.random.default_rng(1).standard_normal((rows, cols)).astype(np.float32)
    return check_launch(k, (rows,), x, np.zeros(rows, np.float32), rows, cols).verdict


@pytest.mark.parametrize("parts", [MAX, SUM], ids=["max", "sum"])
def test_a_row_maximum_and_a_row_sum_are_proved(parts):
    k = reduction(parts)
    result = k.verify()
    assert result.verdict is Verdict.PROVED, result.text()
    assert reduction_shadow(k) is Verdict.PROVED


@pytest.mark.parametrize("parts", [
    {**MAX, "BUTTERFLY": ""},  # one lane's columns
    {**SUM, "BUTTERFLY": ""},
    {**SUM, "STEP": "acc + x[row, c] + x[row, c]"},  # a column twice
    {**MAX, "START": "0.0"},  # max(0, ...): no maximum of the row
    {**SUM, "START": "1.0"},  # 1 + the sum
    {**SUM, "CLAIM": "row_max(x[r], (range(0, cols),))"},  # a sum is no maximum
    {**MAX, "CLAIM": "row_max(x[r], (range(0, cols - 1),))"},
], ids=["max of a lane", "sum of a lane", "sum counts a column twice", "max starts at 0", "sum starts at 1",
        "a sum claimed a max", "a max over fewer columns"])
def test_a_wrong_row_reduction_is_not_proved_and_the_shadow_tags_agree(parts):
    k = reduction(parts)
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert reduction_shadow(k) is Verdict.VIOLATED


@pytest.mark.parametrize("claim, message", [
    ("softmax_of(x[r], (c,))", "softmax_of(x[r], (c,), k)"),
    ("softmax_of(x[r], (c, r), (range(0, cols),))", "one component"),
    ("row_max(x[r], (range(0, cols), 0))", "exactly one range"),
    ("row_sum(r, (range(0, cols),))", "row_sum(x[r], k)"),
])
def test_a_malformed_reduction_claim_is_an_error_naming_its_line(claim, message):
    source = SOFTMAX.replace("softmax_of(x[r], (c,), (range(0, cols),))", claim)
    with pytest.raises(ArgusError, match=re.escape(message)) as err:
        compiled(source, "softmax").compile()
    assert "softmax" in str(err.value) and ":6:" in str(err.value), str(err.value)


def test_a_reduction_is_a_claim_only():
    source = SOFTMAX.replace("tag(x, lambda r, c: (c,), rows=lambda r, c: (r,))",
                             "tag(x, lambda r, c: row_max(x[r], (range(0, cols),)))")
    with pytest.raises(ArgusError, match="not of an operand"):
        compiled(source, "softmax").compile()


def walked(parts: dict[str, str], loop: str, butterfly: bool = True, assumption: str = "") -> object:
    """The row reduction with its walk `loop` (the butterfly dropped where a lane walks the whole
    row, `assumption` added to the kernel's)."""
    source = REDUCTION.replace("for c in range(lane, cols, 32):", f"for c in {loop}:")
    if not butterfly:
        source = source.replace("        acc = BUTTERFLY(acc)\n", "")
    if assumption:
        source = source.replace("    assume(grid_dim.x >= rows)\n", f"    assume(grid_dim.x >= rows)\n    {assumption}\n")
    for name, text in parts.items():
        source = source.replace(name, text)
    return compiled(source, "reduce")


@pytest.mark.parametrize("parts", [MAX, SUM], ids=["max", "sum"])
@pytest.mark.parametrize("loop, butterfly, assumption, proved", [
    ("range(0, cols)", False, "", True),  # every lane walks the whole row: one trip count for all
    ("range(1, cols)", False, "", False),
    ("range(0, cols - 1)", False, "", False),
    ("range(lane, lane + cols, 32)", True, "assume(cols % 32 == 0)", True),  # every lane as many columns
    ("range(lane, lane + cols - 32, 32)", True, "assume(cols % 32 == 0)", False),
], ids=["whole row", "from column 1", "to cols - 1", "lanes of one trip count", "one trip short"])
def test_a_loop_whose_threads_run_one_trip_count_is_followed(parts, loop, butterfly, assumption, proved):
    k = walked(parts, loop, butterfly, assumption)
    result = k.verify()
    assert result.verdict is (Verdict.PROVED if proved else Verdict.VIOLATED), result.text()
    assert reduction_shadow(k, cols=64) is (Verdict.PROVED if proved else Verdict.VIOLATED)
