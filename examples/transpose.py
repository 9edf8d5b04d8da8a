"""Matrix transpose through a swizzled shared-memory tile.

Each block moves a 32x32 tile: it reads rows of the source (coalesced), writes them into
shared memory, and after a barrier reads columns back to write rows of the destination. The
XOR swizzle ``Sw<5,0,5>`` places element (r, c) at column ``c ^ r``, so the 32 threads reading
one column touch 32 different banks. Blocks on the edge of the matrix stage clamped
coordinates (the last row or column again), so the tile is always whole.

Two claims state the point of the kernel. ``assert_tags(dst, ...)``: every element stored at
``dst[r, c]`` is ``src[c, r]``. The store runs under the guard ``r < cols and c < rows``, and the
checker takes that guard as a fact of the thread that stores: there the clamps are no-ops, so
the element staged as ``src[min(c, rows - 1), min(r, cols - 1)]`` is ``src[c, r]``; a thread the
guard stops stores nothing, and its clamped element is not compared. The assertion on ``got``
says it in registers, for every thread (clamped ones included): after the round trip through
shared memory, the elements a thread holds are the source elements of the transposed position
it writes.
"""

import numpy as np
from argus.dsl import (
    Problem,
    Tensor,
    assert_tags,
    block_idx,
    f32,
    kernel,
    make_local,
    make_shared,
    static_range,
    syncthreads,
    tag,
    thread_idx,
)
from argus.layout import ComposedLayout, Layout, Swizzle

TILE = 32
ROWS_PER_PASS = 8
PASSES = TILE // ROWS_PER_PASS
SMEM = ComposedLayout(Swizzle(5, 0, 5), 0, Layout((TILE, TILE), (TILE, 1)))


@kernel(block=(TILE, ROWS_PER_PASS))
def transpose(src: Tensor[f32, "rows", "cols"], dst: Tensor[f32, "cols", "rows"], rows: int, cols: int):
    tile = make_shared(SMEM, f32)
    got = make_local((PASSES,), f32)
    want = make_local((PASSES,), f32)
    tx = thread_idx.x
    ty = thread_idx.y
    row0 = block_idx.y * TILE
    col0 = block_idx.x * TILE
    tag(src, lambda r, c: (r, c))
    assert_tags(dst, lambda r, c: (c, r))  # dst[r, c] holds src[c, r]: checked at every store into dst
    tag(want, lambda k: (min(row0 + tx, rows - 1), min(col0 + ty + k * ROWS_PER_PASS, cols - 1)))
    for k in static_range(PASSES):
        r = min(row0 + ty + k * ROWS_PER_PASS, rows - 1)
        c = min(col0 + tx, cols - 1)
        tile[ty + k * ROWS_PER_PASS, tx] = src[r, c]
    syncthreads()
    for k in static_range(PASSES):
        got[k] = tile[tx, ty + k * ROWS_PER_PASS]
    assert tag(got[...]) == tag(want[...]), "each thread holds the source elements of its transposed positions"
    for k in static_range(PASSES):
        r = col0 + ty + k * ROWS_PER_PASS
        c = row0 + tx
        if r < cols and c < rows:
            dst[r, c] = got[k]


def example_transpose(rng: np.random.Generator, rows: int = 100, cols: int = 70) -> Problem:
    src = rng.standard_normal((rows, cols)).astype(np.float32)
    dst = np.zeros((cols, rows), np.float32)
    grid = ((cols + TILE - 1) // TILE, (rows + TILE - 1) // TILE)
    return Problem(grid=grid, args=(src, dst, rows, cols), expected={1: src.T.astype(np.float64)}, atol=0, rtol=0)
