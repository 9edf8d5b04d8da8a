"""An access out of bounds in some launch the kernel's assumptions allow is an `out-of-bounds`
finding with a witness that replays, not a proof: a dropped or wrong guard, a wrong clamp, an
overrun in a runtime loop. Correct guards, clamps and assumptions stay proved."""

from __future__ import annotations

from argus.dsl import Tensor, assume, block_idx, f32, kernel, thread_idx
from argus.verify.results import Verdict


def _out_of_bounds(result: object) -> dict:
    assert result.verdict is Verdict.VIOLATED, result  # type: ignore[attr-defined]
    witness = result.witnesses[0]  # type: ignore[attr-defined]
    assert witness["kind"] == "out-of-bounds", witness
    assert "faults the same way" in witness["replayed"] or "reproduced" in witness["replayed"], witness
    return witness


def _clean(result: object) -> None:
    assert result.verdict in (Verdict.PROVED, Verdict.NOTHING_TO_PROVE), result  # type: ignore[attr-defined]


@kernel(block=(128,), verify=False)
def guarded(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    i = block_idx.x * 128 + thread_idx.x
    if i < n:
        out[i] = x[i]


@kernel(block=(128,), verify=False)
def unguarded(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    i = block_idx.x * 128 + thread_idx.x
    out[i] = x[i]


@kernel(block=(128,), verify=False)
def off_by_one(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    i = block_idx.x * 128 + thread_idx.x
    if i <= n:
        out[i] = x[i]


@kernel(block=(128,), verify=False)
def whole_blocks(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(n % 128 == 0)
    i = block_idx.x * 128 + thread_idx.x
    out[i] = x[i]


def test_a_correct_guard_stays_clean() -> None:
    _clean(guarded.verify())


def test_a_dropped_guard_is_found_in_the_ragged_last_block() -> None:
    witness = _out_of_bounds(unguarded.verify())
    n = witness["sizes"]["n"]
    block, thread = witness["block"][0], witness["thread"]
    assert block * 128 + thread >= n  # the witness's thread is past the end in its launch
    assert witness["index"] == (block * 128 + thread,)


def test_a_guard_off_by_one_is_found() -> None:
    witness = _out_of_bounds(off_by_one.verify())
    assert witness["index"] == (witness["sizes"]["n"],)


def test_an_assumption_that_makes_it_safe_keeps_it_clean() -> None:
    _clean(whole_blocks.verify())


@kernel(block=(16, 16), verify=False)
def copy2d(src: Tensor[f32, "rows", "cols"], dst: Tensor[f32, "rows", "cols"], rows: int, cols: int):
    r = block_idx.y * 16 + thread_idx.y
    c = block_idx.x * 16 + thread_idx.x
    if r < rows and c < cols:
        dst[r, c] = src[r, c]


@kernel(block=(16, 16), verify=False)
def copy2d_unguarded(src: Tensor[f32, "rows", "cols"], dst: Tensor[f32, "rows", "cols"], rows: int, cols: int):
    r = block_idx.y * 16 + thread_idx.y
    c = block_idx.x * 16 + thread_idx.x
    dst[r, c] = src[r, c]


@kernel(block=(16, 16), verify=False)
def copy2d_swapped(src: Tensor[f32, "rows", "cols"], dst: Tensor[f32, "rows", "cols"], rows: int, cols: int):
    r = block_idx.y * 16 + thread_idx.y
    c = block_idx.x * 16 + thread_idx.x
    if r < cols and c < rows:
        dst[r, c] = src[r, c]


def test_2d_guard_clean_dropped_and_swapped() -> None:
    _clean(copy2d.verify())
    _out_of_bounds(copy2d_unguarded.verify())
    witness = _out_of_bounds(copy2d_swapped.verify())
    assert witness["sizes"]["rows"] != witness["sizes"]["cols"]


@kernel(block=(32,), verify=False)
def rows_clamped(src: Tensor[f32, "rows", "cols"], dst: Tensor[f32, "cols"], rows: int, cols: int):
    c = block_idx.x * 32 + thread_idx.x
    r = min(block_idx.y * 32 + thread_idx.x, rows - 1)
    if c < cols:
        dst[c] = src[r, c]


@kernel(block=(32,), verify=False)
def rows_clamped_to_rows(src: Tensor[f32, "rows", "cols"], dst: Tensor[f32, "cols"], rows: int, cols: int):
    c = block_idx.x * 32 + thread_idx.x
    r = min(block_idx.y * 32 + thread_idx.x, rows)
    if c < cols:
        dst[c] = src[r, c]


def test_a_clamp_to_rows_not_rows_minus_one_is_found() -> None:
    _clean(rows_clamped.verify())
    witness = _out_of_bounds(rows_clamped_to_rows.verify())
    assert witness["index"][0] == witness["sizes"]["rows"]


@kernel(block=(32,), verify=False)
def row_sums(x: Tensor[f32, "rows", "cols"], out: Tensor[f32, "rows", 32], rows: int, cols: int):
    row = block_idx.x
    if row < rows:
        for c in range(0, cols):
            out[row, thread_idx.x] = x[row, c]


@kernel(block=(32,), verify=False)
def row_sums_overrun(x: Tensor[f32, "rows", "cols"], out: Tensor[f32, "rows", 32], rows: int, cols: int):
    row = block_idx.x
    if row < rows:
        for c in range(0, cols + 1):  # one column too many
            out[row, thread_idx.x] = x[row, c]


def test_an_overrun_in_a_runtime_loop_under_a_guard_is_found() -> None:
    _clean(row_sums.verify())
    witness = _out_of_bounds(row_sums_overrun.verify())
    assert witness["index"][1] == witness["sizes"]["cols"]
    assert list(witness["loops"].values()) == [witness["sizes"]["cols"]]
