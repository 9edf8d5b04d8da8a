"""A finding that happens only in some blocks is replayed in one of them: the witness's launch
makes the comparisons of the branches around the faulting access (a race or a read of unwritten
bytes under ``if block_idx.x > 0`` is reported in block 1, not left unknown because block 0 runs
clean)."""

from __future__ import annotations

from argus.dsl import Tensor, assume, block_idx, f32, grid_dim, kernel, make_local, make_shared, syncthreads, thread_idx
from argus.verify import Verdict


@kernel(block=(64,), verify=False)
def race_in_later_blocks(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(n == 64 * grid_dim.x)
    s = make_shared((64,), f32)
    t = thread_idx.x
    i = block_idx.x * 64 + t
    s[t] = x[i]
    if block_idx.x > 0:
        out[i] = s[63 - t]  # no barrier: the other warp's write races with this read
    else:
        syncthreads()
        out[i] = s[63 - t]


@kernel(block=(64,), verify=False)
def unwritten_in_later_blocks(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(n == 64 * grid_dim.x)
    r = make_local((2,), f32)
    i = block_idx.x * 64 + thread_idx.x
    r[0] = x[i]
    if block_idx.x >= 2:
        out[i] = r[1]  # never written
    else:
        out[i] = r[0]


@kernel(block=(64,), verify=False)
def barrier_in_every_block(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(n == 64 * grid_dim.x)
    s = make_shared((64,), f32)
    t = thread_idx.x
    i = block_idx.x * 64 + t
    s[t] = x[i]
    if block_idx.x > 0:
        syncthreads()
        out[i] = s[63 - t]
    else:
        syncthreads()
        out[i] = s[63 - t]


def test_a_race_in_blocks_after_the_first_is_replayed_in_one_of_them():
    result = race_in_later_blocks.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "data-race" and witness["block"][0] >= 1, witness


def test_a_read_of_unwritten_registers_in_later_blocks_is_replayed_in_one_of_them():
    result = unwritten_in_later_blocks.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "uninitialized-read" and witness["block"][0] >= 2, witness


def test_the_same_kernel_with_its_barrier_has_no_finding():
    result = barrier_in_every_block.verify()
    assert result.verdict is Verdict.NOTHING_TO_PROVE and not result.witnesses, result.text()
