"""Matrix transpose through a swizzled shared-memory tile.

Each block moves a 32x32 tile: it reads rows of the source (coalesced), writes them into
shared memory, and after a barrier reads columns back to write rows of the destination. The
XOR swizzle ``Sw<5,0,5>`` places element (r, c) at column ``c ^ r``, so the 32 threads reading
one column touch 32 different banks.
"""

import numpy as np
from argus.dsl import (
    Problem,
    Tensor,
    block_idx,
    f32,
    kernel,
    make_shared,
    static_range,
    syncthreads,
    thread_idx,
)
from argus.layout import ComposedLayout, Layout, Swizzle

TILE = 32
ROWS_PER_PASS = 8
SMEM = ComposedLayout(Swizzle(5, 0, 5), 0, Layout((TILE, TILE), (TILE, 1)))


@kernel(block=(TILE, ROWS_PER_PASS))
def transpose(src: Tensor[f32, "rows", "cols"], dst: Tensor[f32, "cols", "rows"], rows: int, cols: int):
    tile = make_shared(SMEM, f32)
    tx = thread_idx.x
    ty = thread_idx.y
    for k in static_range(TILE // ROWS_PER_PASS):
        r = block_idx.y * TILE + ty + k * ROWS_PER_PASS
        c = block_idx.x * TILE + tx
        if r < rows and c < cols:
            tile[ty + k * ROWS_PER_PASS, tx] = src[r, c]
    syncthreads()
    for k in static_range(TILE // ROWS_PER_PASS):
        r = block_idx.x * TILE + ty + k * ROWS_PER_PASS
        c = block_idx.y * TILE + tx
        if r < cols and c < rows:
            dst[r, c] = tile[tx, ty + k * ROWS_PER_PASS]


def example_transpose(rng: np.random.Generator, rows: int = 100, cols: int = 70) -> Problem:
    src = rng.standard_normal((rows, cols)).astype(np.float32)
    dst = np.zeros((cols, rows), np.float32)
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    return Problem(grid=grid, args=(src, dst, rows, cols), expected={1: src.T.astype(np.float64)}, atol=0, rtol=0)
