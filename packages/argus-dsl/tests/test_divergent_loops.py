"""Runtime loops whose bounds differ per thread (`range(lane, n, 32)`, a row walked with a stride
of a warp) are followed: their iterations are numbered by a trip counter the threads share, each
thread's index is its own start plus the step times it, and where the trip counts differ each
iteration runs under the thread's own condition. Accesses are proved in bounds or found out of
bounds with replayed witnesses; races and unwritten reads across the threads' iterations are
found; a barrier (or a warp shuffle) inside such a loop is never taken as met by every thread."""

from __future__ import annotations

from pathlib import Path

import pytest
from argus.dsl import (
    Tensor,
    assume,
    block_idx,
    f32,
    kernel,
    make_local,
    make_shared,
    syncthreads,
    tag,
    thread_idx,
    warp_sum,
)
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _finding(result, kind: str) -> dict:
    """`result` is violated by a `kind` finding whose witness replayed on the interpreter."""
    assert result.verdict is Verdict.VIOLATED, result.text()
    found = [w for w in result.witnesses if w["kind"] == kind]
    assert found, result.text()
    assert "faults the same way" in found[0]["replayed"] or "reproduced" in found[0]["replayed"], found[0]
    return found[0]


def _followed(result) -> None:
    """No fault, and the checker followed the kernel (no refusal behind a clean answer)."""
    assert result.verdict in (Verdict.PROVED, Verdict.NOTHING_TO_PROVE), result.text()
    assert "cannot follow" not in result.text(), result.text()


def _not_proved(result, refused: str) -> None:
    """Never a clean answer that claims the kernel was followed: refused (with `refused` in the
    reason) or violated."""
    if result.verdict is Verdict.VIOLATED:
        return
    assert "cannot follow" in result.reason or result.verdict is Verdict.UNKNOWN, result.text()
    assert refused in result.reason, result.text()


# ---- a strided per-lane loop ------------------------------------------------------------------


@kernel(block=(32,), verify=False)
def strided(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    lane = thread_idx.x
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(x, lambda i: (i,))
    for c in range(lane, n, 32):
        got[0] = x[c]
        tag(want, lambda j: (c,))
        assert tag(got[...]) == tag(want[...]), "each lane loads its own element"
        out[c] = got[0]


@kernel(block=(32,), verify=False)
def strided_wrong_element(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    lane = thread_idx.x
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(x, lambda i: (i,))
    for c in range(lane, n, 32):
        got[0] = x[c]
        tag(want, lambda j: (c - lane,))
        assert tag(got[...]) == tag(want[...]), "each lane loads its own element"
        out[c] = got[0]


@kernel(block=(32,), verify=False)
def strided_off_by_one(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    lane = thread_idx.x
    for c in range(lane, n + 1, 32):
        out[c] = x[c]


def test_a_strided_per_lane_loop_is_proved_in_bounds_and_its_tags_followed() -> None:
    result = strided.verify()
    assert result.verdict is Verdict.PROVED, result.text()


def test_a_wrong_element_in_a_per_lane_loop_is_a_violation() -> None:
    witness = _finding(strided_wrong_element.verify(), "violated")
    assert witness["thread"] != 0, witness  # lane 0 loads c - 0: the others do not


def test_a_per_lane_loop_one_past_the_end_is_found_with_its_lane_and_index() -> None:
    witness = _finding(strided_off_by_one.verify(), "out-of-bounds")
    n = witness["sizes"]["n"]
    assert witness["index"] == (n,), witness
    assert witness["loops"] == {"c": n}, witness  # the thread's own index, not the trip counter
    assert witness["thread"] == n % 32, witness  # the lane whose stride reaches n


# ---- barriers and warp collectives: the threads must meet them together ----------------------


@kernel(block=(32,), verify=False)
def barrier_in_divergent_loop(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    s = make_shared((32,), f32)
    lane = thread_idx.x
    for c in range(lane, n, 32):
        s[lane] = x[c]
        syncthreads()  # lanes with one iteration fewer never meet the others' last barrier
        out[c] = s[(lane + 1) % 32]
        syncthreads()


@kernel(block=(32,), verify=False)
def shuffle_in_divergent_loop(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    lane = thread_idx.x
    for c in range(lane, n, 32):
        out[c] = warp_sum(x[c])


@kernel(block=(32,), verify=False)
def barrier_with_equal_trip_counts(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, tiles: int):
    s = make_shared((32,), f32)
    lane = thread_idx.x
    assume(n == 32 * tiles)
    for c in range(lane, lane + 32 * tiles, 32):  # bounds of its own, as many iterations as the others
        s[lane] = x[c]
        syncthreads()
        out[c] = s[(lane + 1) % 32]
        syncthreads()


@kernel(block=(32,), verify=False)
def equal_trip_counts_without_closing_barrier(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, tiles: int):
    s = make_shared((32,), f32)
    lane = thread_idx.x
    assume(n == 32 * tiles)
    for c in range(lane, lane + 32 * tiles, 32):
        s[lane] = x[c]  # the neighbour may still be reading the previous iteration's
        syncthreads()
        out[c] = s[(lane + 1) % 32]


def test_a_barrier_in_a_loop_whose_trip_counts_differ_is_refused_never_proved() -> None:
    _not_proved(barrier_in_divergent_loop.verify(), "syncthreads")


def test_a_warp_shuffle_in_a_loop_whose_trip_counts_differ_is_refused_never_proved() -> None:
    _not_proved(shuffle_in_divergent_loop.verify(), "shuffle")


def test_a_barrier_in_a_loop_whose_threads_run_as_many_iterations_is_followed() -> None:
    _followed(barrier_with_equal_trip_counts.verify())
    witness = _finding(equal_trip_counts_without_closing_barrier.verify(), "data-race")
    first, second = witness["threads"]
    assert (first - second) % 32 in (1, 31), witness  # neighbours, one iteration apart


# ---- races between the threads' iterations ----------------------------------------------------


@kernel(block=(32,), verify=False)
def read_after_write(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    s = make_shared((32,), f32)
    lane = thread_idx.x
    for c in range(lane, n, 32):
        s[lane] = x[c]
        out[c] = s[(lane + 1) % 32]  # the neighbour's write, no barrier between


@kernel(block=(32,), verify=False)
def write_after_read(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    s = make_shared((32,), f32)
    lane = thread_idx.x
    s[lane] = 0.0
    syncthreads()
    for c in range(lane, n, 32):
        out[c] = s[(lane + 1) % 32]
        s[lane] = x[c]  # overwrites what the lane before reads, no barrier between


@kernel(block=(32,), verify=False)
def own_slots(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    s = make_shared((32,), f32)
    lane = thread_idx.x
    for c in range(lane, n, 32):
        s[lane] = x[c]
        out[c] = s[lane]  # each lane its own byte: no race


def test_a_race_between_two_lanes_iterations_is_found() -> None:
    witness = _finding(read_after_write.verify(), "data-race")
    writer, reader = witness["threads"]
    assert writer == (reader + 1) % 32, witness


def test_a_write_after_another_lanes_read_in_such_a_loop_is_found() -> None:
    witness = _finding(write_after_read.verify(), "data-race")
    assert "read" in witness["why"], witness


def test_lanes_on_their_own_bytes_do_not_race() -> None:
    _followed(own_slots.verify())


# ---- red team: where a per-thread loop could be taken for more than it does -----------------


@kernel(block=(32,), verify=False)
def read_after_the_loop(x: Tensor[f32, "n"], out: Tensor[f32, "k"], n: int, k: int):
    lane = thread_idx.x
    acc = make_local((1,), f32)
    assume(k == 32)
    for c in range(lane, n, 32):  # lanes at or past n run no iteration
        acc[0] = x[c]
    out[lane] = acc[0]


@kernel(block=(32,), verify=False)
def read_after_the_loop_every_lane_runs(x: Tensor[f32, "n"], out: Tensor[f32, "k"], n: int, k: int):
    lane = thread_idx.x
    acc = make_local((1,), f32)
    assume(k == 32)
    assume(n >= 32)
    for c in range(lane, n, 32):
        acc[0] = x[c]
    out[lane] = acc[0]


@kernel(block=(32,), verify=False)
def written_in_a_later_iteration_only(x: Tensor[f32, "n"], out: Tensor[f32, "k"], n: int, k: int):
    lane = thread_idx.x
    acc = make_local((1,), f32)
    assume(k == 32)
    for c in range(lane, n, 32):
        if c >= 32:  # a lane's second iteration: lanes with one iteration never write it
            acc[0] = x[c]
    out[lane] = acc[0]


@kernel(block=(32,), verify=False)
def shared_filled_by_a_per_lane_loop(x: Tensor[f32, "n"], out: Tensor[f32, "k"], n: int, k: int):
    s = make_shared((32,), f32)
    lane = thread_idx.x
    assume(k == 32)
    for c in range(lane, n, 32):
        s[lane] = x[c]
    syncthreads()
    out[lane] = s[(lane + 1) % 32]  # the neighbour may have run no iteration


@kernel(block=(32,), verify=False)
def longest_lane_overruns(y: Tensor[f32, "m"], n: int, m: int):
    lane = thread_idx.x
    assume(32 * m >= n)
    for c in range(0, n + 32 * lane, 32):  # lane 31 runs 31 iterations more than lane 0
        y[c // 32] = 1.0


@kernel(block=(32,), verify=False)
def inner_loop_bound_grows(x: Tensor[f32, "rows", "cols"], out: Tensor[f32, "rows", "cols"], rows: int, cols: int):
    lane = thread_idx.x
    for r in range(0, rows):
        for c in range(lane, cols + r, 32):  # one column more per row
            out[r, c] = x[r, c]


@kernel(block=(32,), verify=False)
def inner_loop_start_moves(x: Tensor[f32, "rows", "cols"], out: Tensor[f32, "rows", "cols"], rows: int, cols: int):
    lane = thread_idx.x
    for r in range(0, rows):
        for c in range(lane + r, cols, 32):
            out[r, c] = x[r, c]


@kernel(block=(32,), verify=False)
def clamped_bound(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    lane = thread_idx.x
    for c in range(lane, min(n, 32 * lane + 64), 32):  # a trip count of no one form
        out[c] = x[c]


@kernel(block=(32,), verify=False)
def read_before_the_first_write(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    lane = thread_idx.x
    acc = make_local((1,), f32)
    for c in range(lane, n, 32):
        if c >= 16:  # lanes 16 to 31 get here in their first iteration, before any write
            out[c] = acc[0]
        acc[0] = x[c]


@kernel(block=(32,), verify=False)
def barrier_between_per_lane_loops(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, tiles: int):
    s = make_shared((32,), f32)
    lane = thread_idx.x
    for t in range(0, tiles):
        for c in range(lane, n, 32):
            out[c] = x[c]
        s[lane] = x[0]
        syncthreads()  # outside the per-lane loop: every thread meets it
        out[0] = s[(lane + 1) % 32]
        syncthreads()


@kernel(block=(32,), verify=False)
def claims_the_first_element_after_the_loop(x: Tensor[f32, "n"], out: Tensor[f32, "k"], n: int, k: int):
    lane = thread_idx.x
    assume(k == 32)
    assume(n >= 32)  # every lane runs an iteration; those with two or more end on another element
    tag(x, lambda i: (i,))
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    for c in range(lane, n, 32):
        got[0] = x[c]
    tag(want, lambda j: (lane,))
    assert tag(got[...]) == tag(want[...]), "the lane's first element"
    out[lane] = got[0]


@kernel(block=(32,), verify=False)
def prefetch_one_stride_too_far(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    lane = thread_idx.x
    assume(n >= 32)
    tag(x, lambda i: (i,))
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    got[0] = x[lane]
    for c in range(lane, n - 64, 32):
        tag(want, lambda j: (c,))
        assert tag(got[...]) == tag(want[...]), "this iteration's element"
        got[0] = x[c + 64]  # the next iteration needs x[c + 32]
    out[lane] = got[0]


def test_false_claims_about_what_a_per_lane_loop_leaves_are_never_proved() -> None:
    for k in (claims_the_first_element_after_the_loop, prefetch_one_stride_too_far):
        result = k.verify()
        assert result.verdict in (Verdict.VIOLATED, Verdict.UNKNOWN), result.text()


def test_a_register_read_in_a_lanes_first_iteration_before_any_write_is_found() -> None:
    witness = _finding(read_before_the_first_write.verify(), "uninitialized-read")
    assert witness["sizes"]["n"] > 16, witness  # some lane from 16 on runs an iteration


def test_a_barrier_outside_the_per_lane_loop_is_met_by_every_thread() -> None:
    _followed(barrier_between_per_lane_loops.verify())


def test_a_register_a_lane_may_never_write_in_its_loop_is_an_unwritten_read() -> None:
    witness = _finding(read_after_the_loop.verify(), "uninitialized-read")
    assert witness["thread"] >= witness["sizes"]["n"], witness  # a lane that ran no iteration
    _followed(read_after_the_loop_every_lane_runs.verify())


def test_a_register_written_in_later_iterations_only_is_an_unwritten_read() -> None:
    witness = _finding(written_in_a_later_iteration_only.verify(), "uninitialized-read")
    assert witness["thread"] + 32 >= witness["sizes"]["n"], witness  # a lane with one iteration at most


def test_shared_bytes_a_neighbour_may_not_have_written_are_never_proved() -> None:
    # (which lanes wrote a shared byte under their own condition is not kept: the candidate's
    # launch need not be one that leaves it unwritten, so the answer may be unknown)
    result = shared_filled_by_a_per_lane_loop.verify()
    assert result.verdict in (Verdict.VIOLATED, Verdict.UNKNOWN), result.text()
    assert "uninitialized-read" in result.text(), result.text()


def test_the_trip_counter_reaches_the_lane_with_the_most_iterations() -> None:
    witness = _finding(longest_lane_overruns.verify(), "out-of-bounds")
    assert witness["index"][0] >= witness["sizes"]["m"], witness


def test_per_lane_loops_nested_in_a_runtime_loop() -> None:
    _finding(inner_loop_bound_grows.verify(), "out-of-bounds")
    _followed(inner_loop_start_moves.verify())


def test_a_trip_count_of_no_one_form_is_refused_with_the_reason() -> None:
    _not_proved(clamped_bound.verify(), "trip count is not one form")


# ---- the softmax example ----------------------------------------------------------------------


@kernel(block=(32, 4), verify=False)
def rows_by_warps(x: Tensor[f32, "rows", "cols"], out: Tensor[f32, "rows", "cols"], rows: int, cols: int):
    row = block_idx.x * 4 + thread_idx.y
    lane = thread_idx.x
    if row <= rows:  # one row too many
        for c in range(lane, cols, 32):
            out[row, c] = x[row, c]


def test_the_softmax_example_is_followed() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("softmax_example", EXAMPLES / "softmax.py")
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    _followed(module.softmax.verify())


def test_a_row_guard_off_by_one_around_a_per_lane_loop_is_found() -> None:
    witness = _finding(rows_by_warps.verify(), "out-of-bounds")
    assert witness["index"][0] == witness["sizes"]["rows"], witness
