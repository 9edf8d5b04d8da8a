"""`assert_written(t)`: the launch writes every element of tensor t. Verification tests it on a
whole launch of the interpreter, as small as the kernel's assumptions allow, and reports the
first element left as it was, with that launch as the witness."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import Tensor, assert_written, assume, block_idx, f32, grid_dim, kernel, thread_idx
from argus.dsl.errors import ArgusError
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")


@kernel(block=(32,), verify=False)
def scaled(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)  # enough blocks for every element
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n:
        out[i] = x[i] * 2.0


@kernel(block=(32,), verify=False)
def swapped(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    assert_written(out)
    i = thread_idx.x * 32 + block_idx.x  # block and thread swapped: only a few elements per block
    if i < n:
        out[i] = x[i] * 2.0


@kernel(block=(32,), verify=False)
def one_short(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    assert_written(out)
    i = block_idx.x * 32 + thread_idx.x
    if i < n - 1:  # the last element is never written
        out[i] = x[i] * 2.0


def test_an_output_every_element_of_which_is_written_has_nothing_found():
    result = scaled.verify()
    assert result.verdict is Verdict.NOTHING_TO_PROVE, result.text()
    assert "every element of out was written" in result.text() and "tested, not proved" in result.text()


@pytest.mark.parametrize("k", [swapped, one_short])
def test_an_output_left_in_part_unwritten_is_violated_with_the_launch_as_witness(k):
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "unwritten-output" and witness["tensor"] == "out"
    n = witness["sizes"]["n"]
    assert 0 <= witness["element"][0] < n
    data = np.zeros(n, np.float32)
    grid = -(-n // 32)
    again = check_launch(k, (grid,), data, np.zeros(n, np.float32), n)
    assert again.verdict is Verdict.VIOLATED and again.witnesses[0]["element"] == witness["element"]


def test_assert_written_takes_a_tensor():
    with pytest.raises(ArgusError, match=r"assert_written\(t\) takes one tensor"):
        @kernel(block=(32,), verify=False)
        def bad(x: Tensor[f32, "n"], n: int):
            assert_written(n)
            x[0] = 1.0

        bad.specialize()
