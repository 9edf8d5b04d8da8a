"""Vector add: one element per thread, guarded against the ragged last block.

The tags say what every element of out is: x's element i (tagged (0, i)) plus y's element i
(tagged (1, i)); an output element made of other elements, or of x twice, is a violation."""

import numpy as np
from argus.dsl import (Problem, Tensor, assert_tags, assert_written, assume, block_idx, f32, grid_dim, kernel, sum_of, tag,
                       thread_idx)

BLOCK = 128


@kernel(block=(BLOCK,))
def vector_add(x: Tensor[f32, "n"], y: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * BLOCK >= n)  # a launch has a thread for every element
    assert_written(out)  # ... and writes every element of out
    tag(x, lambda i: (0, i))
    tag(y, lambda i: (1, i))
    assert_tags(out, lambda i: sum_of((0, i), (1, i)))  # each element of out: x[i] plus y[i]
    i = block_idx.x * BLOCK + thread_idx.x
    if i < n:
        out[i] = x[i] + y[i]


def example_vector_add(rng: np.random.Generator, n: int = 1000) -> Problem:
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    reference = x.astype(np.float64) + y.astype(np.float64)
    return Problem(grid=((n + BLOCK - 1) // BLOCK,), args=(x, y, out, n), expected={2: reference})
