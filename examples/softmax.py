"""Row softmax: one warp per row, with warp reductions for the maximum and the sum.

Each lane walks the row with a stride of 32, keeps its own running maximum, and
``warp_max`` combines the 32 partial results (a butterfly of ``shfl_xor``); the same for the
sum of exponentials. ``exp2`` with the input scaled by log2(e) is how GPUs compute exp.

The claim says what each stored element is: the softmax of its row of x over every column,
at its column. The checker proves it for every launch: each lane's running maximum and sum
cover the columns its walk visits, the butterflies join the 32 lanes' columns into the whole
row, and each term and the sum subtract the same maximum (docs/verify.md, "What a reduction
computes").
"""

import math

import numpy as np
from argus.dsl import (Problem, Tensor, assert_tags, assert_written, assume, block_idx, exp2, f32, grid_dim, kernel,
                       lane_id, softmax_of, tag, thread_idx, warp_max, warp_sum)

ROWS_PER_BLOCK = 4
LOG2E = math.log2(math.e)


@kernel(block=(32, ROWS_PER_BLOCK))
def softmax(x: Tensor[f32, "rows", "cols"], out: Tensor[f32, "rows", "cols"], rows: int, cols: int):
    assume(grid_dim.x * ROWS_PER_BLOCK >= rows)  # a warp for every row
    assert_written(out)  # ... and every element of out written
    tag(x, lambda r, c: (c,), rows=lambda r, c: (r,))  # a row's elements, told apart by column
    assert_tags(out, lambda r, c: softmax_of(x[r], (c,), (range(0, cols),)))  # out[r, c]: row r's softmax at c
    row = block_idx.x * ROWS_PER_BLOCK + thread_idx.y
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


def example_softmax(rng: np.random.Generator, rows: int = 37, cols: int = 200) -> Problem:
    x = (rng.standard_normal((rows, cols)) * 3).astype(np.float32)
    out = np.zeros_like(x)
    z = x.astype(np.float64)
    e = np.exp(z - z.max(axis=1, keepdims=True))
    reference = e / e.sum(axis=1, keepdims=True)
    grid = ((rows + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK,)
    return Problem(grid=grid, args=(x, out, rows, cols), expected={1: reference}, atol=1e-6, rtol=1e-4)
