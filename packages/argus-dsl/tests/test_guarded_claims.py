"""Comparisons under guards: a store into a tensor with asserted tags (``assert_tags``), or a tag
assertion, inside ``if``s on runtime conditions binds only where its thread takes the sides
that get there. A thread whose guard holds stores the element the claim names; one the guard
stops stores nothing, and what it holds (a clamped coordinate's element) is not compared.

Using a guard as a fact is sound only where the comparison runs under it for that thread, so
each correct kernel here has wrong neighbours, each of which must be violated with a witness
that replays on the interpreter (and that `check_launch` finds again on the witness's sizes):
a guard off by one, a store after its guard closed, the other side of a branch, a guard on
another thread's coordinate, a guard on data the checker cannot read. The transpose example
states what it stores this way and its store bugs are found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.dsl import Tensor, assert_tags, assume, block_idx, f32, kernel, make_local, make_shared, select, \
    shfl_xor, static_range, syncthreads, tag, thread_idx
from argus.dsl.cli import load_module
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

pytestmark = pytest.mark.usefixtures("no_result_cache")


def _violated_and_replayed(k: Any, tensor: str, launch: Any) -> dict[str, Any]:
    """The kernel's check is violated at a store into `tensor` with a replayed witness, and the
    witness's launch (`launch(sizes)`: grid and arguments), run with shadow tags, is violated too."""
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "violated", witness
    assert witness["message"].startswith(f"stored into {tensor!r} at "), witness
    assert witness["replayed"].startswith("reproduced in block"), witness
    grid, *args = launch(witness.get("sizes", {}))
    assert check_launch(k, grid, *args).verdict is Verdict.VIOLATED
    return witness


# ---- one block: an element staged at a clamped coordinate, stored under a guard ---------------

def _clamped_launch(sizes: dict[str, int]) -> tuple[Any, ...]:
    n = sizes.get("n", 20)
    return 1, np.arange(32, dtype=np.float32), np.zeros(32, np.float32), n


@kernel(block=(32,), verify=False)
def guarded(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    if t < n:
        out[t] = v


@kernel(block=(32,), verify=False)
def guard_off_by_one(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    if t <= n:
        out[t] = v


@kernel(block=(32,), verify=False)
def stored_after_the_guard(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    w = x[0]
    if t < n:
        w = v
    out[t] = v


@kernel(block=(32,), verify=False)
def stored_on_the_else_side(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    if t < n:
        v = x[t]
    else:
        out[t] = v


@kernel(block=(32,), verify=False)
def stored_on_the_right_else_side(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    if t >= n:
        v = x[0]
    else:
        out[t] = v


@kernel(block=(32,), verify=False)
def guard_on_the_next_thread(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    if (t + 1) % 32 < n:
        out[t] = v


@kernel(block=(32,), verify=False)
def nested_guards(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int, m: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    if t < m:
        if t >= n:
            v = x[0]
        else:
            out[t] = v


@kernel(block=(32,), verify=False)
def nested_guards_inner_side_wrong(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int, m: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    if t < n:
        if t >= m:
            v = x[0]
        else:
            v = x[0]
    out[t] = v


@kernel(block=(32,), verify=False)
def select_clamped(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[select(t < n, t, n - 1)]  # the clamp as a select: the guard decides it too
    if t < n:
        out[t] = v


@kernel(block=(32,), verify=False)
def select_clamped_guard_off_by_one(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[select(t < n, t, n - 1)]
    if t <= n:
        out[t] = v


def test_a_store_under_its_guard_is_compared_where_the_guard_holds():
    assert guarded.verify().verdict is Verdict.PROVED, guarded.verify().text()
    assert stored_on_the_right_else_side.verify().verdict is Verdict.PROVED
    assert nested_guards.verify().verdict is Verdict.PROVED, nested_guards.verify().text()
    assert select_clamped.verify().verdict is Verdict.PROVED, select_clamped.verify().text()
    # and on launches: the threads the guard stops store nothing, the others the right element
    for n in (1, 7, 32):
        assert check_launch(guarded, *_clamped_launch({"n": n})).verdict is Verdict.PROVED


@pytest.mark.parametrize("k", [guard_off_by_one, stored_after_the_guard, stored_on_the_else_side,
                               guard_on_the_next_thread, nested_guards_inner_side_wrong,
                               select_clamped_guard_off_by_one],
                         ids=lambda k: k.name)
def test_a_store_its_guard_does_not_cover_is_violated_with_a_replayed_witness(k):
    witness = _violated_and_replayed(k, "out", _clamped_launch if k is not nested_guards_inner_side_wrong
                                     else lambda s: (*_clamped_launch(s), s.get("m", 0)))
    t, n = witness["thread"], witness["sizes"]["n"]
    assert witness["element"] == (t,) and witness["lhs tag"] == (n - 1,) and t > n - 1, witness


@kernel(block=(32,), verify=False)
def computed_under_a_guard(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    if t < n:
        out[t] = x[t] * x[0]  # computed data: conflicting tags, wherever it is stored


def test_conflicting_data_stored_under_a_guard_is_found_where_the_guard_holds():
    result = computed_under_a_guard.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "conflicting" and witness["replayed"].startswith("reproduced in block"), witness
    assert witness["thread"] < witness["sizes"]["n"], witness


# ---- a guard the checker cannot read, and a guard every thread shares ------------------------

@kernel(block=(32,), verify=False)
def guard_on_data(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    lanes = make_shared((32,), f32)
    lanes[t] = f32(t)
    syncthreads()
    v = x[min(t, n - 1)]
    if lanes[t] < f32(n):  # t < n, as data: no fact the checker can use
        out[t] = v


def test_a_guard_on_data_is_no_fact_and_gives_no_proof():
    result = guard_on_data.verify()
    assert result.verdict is not Verdict.PROVED, result.text()
    for n in (1, 7, 32):  # the kernel is right: no launch shows a violation
        assert check_launch(guard_on_data, *_clamped_launch({"n": n})).verdict is Verdict.PROVED


@kernel(block=(32,), verify=False)
def shared_guard(x: Tensor[f32, "n"], out: Tensor[f32, 32], n: int):
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    if n >= 32:
        out[t] = x[min(t, n - 1)]


@kernel(block=(32,), verify=False)
def shared_guard_too_weak(x: Tensor[f32, "n"], out: Tensor[f32, 32], n: int):
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    if n >= 16:
        out[t] = x[min(t, n - 1)]


def test_a_guard_every_thread_shares_is_a_fact_of_the_launch():
    assert shared_guard.verify().verdict is Verdict.PROVED, shared_guard.verify().text()
    witness = _violated_and_replayed(
        shared_guard_too_weak, "out",
        lambda s: (1, np.arange(s["n"], dtype=np.float32), np.zeros(32, np.float32), s["n"]))
    assert 16 <= witness["sizes"]["n"] < 32 and witness["thread"] >= witness["sizes"]["n"], witness


# ---- many blocks, a runtime loop: the guard's facts are per thread and per iteration ---------

@kernel(block=(32,), verify=False)
def rows_in_a_loop(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, passes: int):
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    for p in range(0, passes):
        i = (block_idx.x * passes + p) * 32 + thread_idx.x
        v = x[min(i, n - 1)]
        if i < n:
            out[i] = v


@kernel(block=(32,), verify=False)
def rows_in_a_loop_guarded_by_the_pass(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, passes: int):
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    for p in range(0, passes):
        i = (block_idx.x * passes + p) * 32 + thread_idx.x
        v = x[min(i, n - 1)]
        if (block_idx.x * passes + p) * 32 < n:  # the pass's first row, not the thread's
            if i < n:
                out[i] = v
            else:
                out[(block_idx.x * passes + p) * 32] = v  # the clamped element, at the pass's first row


def test_guards_in_a_runtime_loop_over_many_blocks():
    assert rows_in_a_loop.verify().verdict is Verdict.PROVED, rows_in_a_loop.verify().text()

    def launch(s: dict[str, int]) -> tuple[Any, ...]:
        n, passes = s["n"], s["passes"]
        blocks = max(1, -(-n // (32 * passes)))
        return blocks, np.arange(n, dtype=np.float32), np.zeros(n, np.float32), n, passes

    witness = _violated_and_replayed(rows_in_a_loop_guarded_by_the_pass, "out", launch)
    assert witness["lhs tag"] == (witness["sizes"]["n"] - 1,) and witness["element"][0] % 32 == 0, witness


@kernel(block=(32,), verify=False)
def strided_rows(x: Tensor[f32, "n"], out: Tensor[f32, "m"], n: int, m: int):
    assume(m >= n + 1)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    for c in range(thread_idx.x, n, 32):  # each lane its own trip count: iteration under c < n
        out[c] = x[min(c, n - 1)]


@kernel(block=(32,), verify=False)
def strided_rows_one_too_far(x: Tensor[f32, "n"], out: Tensor[f32, "m"], n: int, m: int):
    assume(m >= n + 1)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    for c in range(thread_idx.x, n + 1, 32):
        out[c] = x[min(c, n - 1)]


@kernel(block=(32,), verify=False)
def guard_shuffled_from_the_neighbour(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    t = thread_idx.x
    v = x[min(t, n - 1)]
    if shfl_xor(t, 1) < n:  # the neighbour's index, not this thread's
        out[t] = v


def test_the_iterations_of_a_loop_whose_lanes_run_different_counts_are_guarded():
    assert strided_rows.verify().verdict is Verdict.PROVED, strided_rows.verify().text()

    def launch(s: dict[str, int]) -> tuple[Any, ...]:
        return 1, np.arange(s["n"], dtype=np.float32), np.zeros(s["m"], np.float32), s["n"], s["m"]

    witness = _violated_and_replayed(strided_rows_one_too_far, "out", launch)
    assert witness["element"] == (witness["sizes"]["n"],), witness


def test_a_guard_on_a_value_shuffled_from_another_lane_is_that_lane_s():
    witness = _violated_and_replayed(guard_shuffled_from_the_neighbour, "out", _clamped_launch)
    t, n = witness["thread"], witness["sizes"]["n"]
    assert t == n and t % 2 == 1 and witness["lhs tag"] == (n - 1,), witness


@kernel(block=(8,), verify=False)
def quads(x: Tensor[f32, "n"], out: Tensor[f32, "m"], n: int, m: int):
    assume(m >= n + 3)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    base = (block_idx.x * 8 + thread_idx.x) * 4
    if base + 3 < n:
        for j in static_range(4):  # copies of one store under the guard, checked together
            out[base + j] = x[min(base + j, n - 1)]


@kernel(block=(8,), verify=False)
def quads_guarded_by_their_first(x: Tensor[f32, "n"], out: Tensor[f32, "m"], n: int, m: int):
    assume(m >= n + 3)
    tag(x, lambda i: (i,))
    assert_tags(out, lambda i: (i,))
    base = (block_idx.x * 8 + thread_idx.x) * 4
    if base < n:
        for j in static_range(4):
            out[base + j] = x[min(base + j, n - 1)]


def test_copies_of_a_store_under_one_guard():
    assert quads.verify().verdict is Verdict.PROVED, quads.verify().text()

    def launch(s: dict[str, int]) -> tuple[Any, ...]:
        blocks = max(1, -(-s["n"] // 32))
        return blocks, np.arange(s["n"], dtype=np.float32), np.zeros(s["m"], np.float32), s["n"], s["m"]

    witness = _violated_and_replayed(quads_guarded_by_their_first, "out", launch)
    n = witness["sizes"]["n"]
    assert witness["element"][0] >= n and witness["lhs tag"] == (n - 1,), witness


# ---- a tag assertion under a guard -------------------------------------------------------------

@kernel(block=(32,), verify=False)
def asserted_under_a_guard(x: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    t = thread_idx.x
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(want, lambda e: (t,))
    got[0] = x[min(t, n - 1)]
    if t < n:
        assert tag(got[...]) == tag(want[...]), "the thread's own element"


@kernel(block=(32,), verify=False)
def asserted_under_a_wrong_guard(x: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    t = thread_idx.x
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(want, lambda e: (t,))
    got[0] = x[min(t, n - 1)]
    if t <= n:
        assert tag(got[...]) == tag(want[...]), "the thread's own element"


@kernel(block=(32,), verify=False)
def differs_under_a_guard(x: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    t = thread_idx.x
    got = make_local((1,), f32)
    last = make_local((1,), f32)
    tag(last, lambda e: (n - 1,))
    got[0] = x[min(t, n - 1)]
    if t < n - 1:
        assert tag(got[...]) != tag(last[...]), "not the last element"


@kernel(block=(32,), verify=False)
def differs_under_a_wrong_guard(x: Tensor[f32, 32], n: int):
    assume(n >= 1)
    assume(n <= 32)
    tag(x, lambda i: (i,))
    t = thread_idx.x
    got = make_local((1,), f32)
    last = make_local((1,), f32)
    tag(last, lambda e: (n - 1,))
    got[0] = x[min(t, n - 1)]
    if t < n:
        assert tag(got[...]) != tag(last[...]), "not the last element"


def test_a_tag_assertion_under_a_guard_is_compared_where_the_guard_holds():
    for right in (asserted_under_a_guard, differs_under_a_guard):
        assert right.verify().verdict is Verdict.PROVED, right.verify().text()
    for wrong, message in ((asserted_under_a_wrong_guard, "the thread's own element"),
                           (differs_under_a_wrong_guard, "not the last element")):
        result = wrong.verify()
        assert result.verdict is Verdict.VIOLATED, result.text()
        witness = result.witnesses[0]
        assert witness["message"] == message and witness["replayed"].startswith("reproduced in block"), witness
        n = witness["sizes"]["n"]
        assert check_launch(wrong, 1, np.arange(32, dtype=np.float32), n).verdict is Verdict.VIOLATED


# ---- the transpose example ---------------------------------------------------------------------

def _transpose(tmp_path: Path, *edits: tuple[str, str]) -> Any:
    source = (EXAMPLES / "transpose.py").read_text()
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / "transpose_edited.py"
    path.write_text(source.replace("@kernel(block=(TILE, ROWS_PER_PASS))",
                                   "@kernel(block=(TILE, ROWS_PER_PASS), verify=False)"))
    return load_module(path)


def test_the_transpose_example_proves_what_it_stores(tmp_path):
    module = _transpose(tmp_path)
    assert "assert_tags(dst" in (EXAMPLES / "transpose.py").read_text()
    result = module.transpose.verify()
    assert result.verdict is Verdict.PROVED, result.text()


TRANSPOSE_BUGS = [
    pytest.param(("        r = col0 + ty + k * ROWS_PER_PASS\n        c = row0 + tx",
                  "        r = row0 + ty + k * ROWS_PER_PASS\n        c = col0 + tx"), id="stored at the source's block"),
    pytest.param(("        r = col0 + ty + k * ROWS_PER_PASS\n        c = row0 + tx",
                  "        r = col0 + ty + k * ROWS_PER_PASS\n        c = row0 + (tx + 1) % TILE"),
                 id="stored at the next thread's column"),
    pytest.param(("c = min(col0 + tx, cols - 1)", "c = max(min(col0 + tx, cols - 2), 0)"), id="clamped one column short"),
]

#: The register assertion, left out so that the claim on what is stored finds the bug alone.
IN_REGISTERS = ('    assert tag(got[...]) == tag(want[...]), "each thread holds the source elements of its transposed '
                'positions"\n', "")


@pytest.mark.parametrize("edit", TRANSPOSE_BUGS)
def test_a_transpose_storing_the_wrong_elements_is_violated_with_a_replayed_witness(tmp_path, edit):
    module = _transpose(tmp_path, IN_REGISTERS, edit)

    def launch(s: dict[str, int]) -> tuple[Any, ...]:
        problem = module.example_transpose(np.random.default_rng(0), rows=s["rows"], cols=s["cols"])
        return problem.grid, *problem.args

    _violated_and_replayed(module.transpose, "dst", launch)
