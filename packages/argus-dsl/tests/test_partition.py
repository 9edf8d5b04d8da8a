"""Partitioning a tile among threads by a TV layout, and tiling it, with runtime indices."""

from __future__ import annotations

import numpy as np
from argus.dsl import (
    Tensor,
    f32,
    kernel,
    local_tile,
    make_shared,
    partition,
    static_range,
    syncthreads,
    thread_idx,
)
from argus.dsl.machine.interpreter import Interpreter
from argus.dsl.ir.lowering import lower_layouts
from argus.dsl.ir.passes import canonicalize
from argus.layout import ComposedLayout, Layout, Swizzle

SMEM = ComposedLayout(Swizzle(2, 2, 3), 0, Layout((8, 16), (16, 1)))
TV = Layout((32, 4), (4, 1))  # thread t holds the tile's elements 4t .. 4t+3 (colexicographic)


@kernel(block=(32,))
def scatter_gather(x: Tensor[f32, 8, 16], out: Tensor[f32, 8, 16], cols: Tensor[f32, 8, 16]):
    s = make_shared(SMEM, f32)
    t = thread_idx.x
    mine = partition(s, TV, t)
    for v in static_range(4):
        i = 4 * t + v
        mine[v] = x[i % 8, i // 8]
    syncthreads()
    for j in static_range(4):
        e = t + 32 * j
        out[e // 16, e % 16] = s[e // 16, e % 16]
    block = local_tile(s, (8, 4), t % 4)  # columns 4q .. 4q+3
    for r in static_range(8):
        if t < 4:
            cols[r, 4 * (t % 4) + 1] = block[r, 1]


def run(launch):
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    out, cols = np.zeros_like(x), np.zeros_like(x)
    launch(x, out, cols)
    assert np.array_equal(out, x)
    expected = np.zeros_like(x)
    expected[:, 1::4] = x[:, 1::4]
    assert np.array_equal(cols, expected)


def test_partitioned_writes_and_tiled_reads_in_the_interpreter():
    run(lambda *a: scatter_gather[1](*a))


def test_the_same_after_lowering_layouts_to_index_arithmetic():
    lowered = canonicalize(lower_layouts(scatter_gather.compile().module.clone()))
    text = str(lowered)
    assert '"argus.load"(' not in text and '"argus.partition"' in text
    run(lambda *a: Interpreter(lowered.ops.first).launch((1,), a))
