"""The tiles-and-views family (argus.dsl.ops.tiles): allocations, views, sub-tiles, partitions
and tensor views are declared once, and each consumer — the interpreter, the shadow tags, the
static checker, tag liveness, the LLVM translation, the front end — reads its part from there."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    KernelFault,
    Tensor,
    boolean,
    f32,
    kernel,
    local_tile,
    make_local,
    make_shared,
    partition,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    u32,
    u128,
)
from argus.dsl.check import rules as check_rules
from argus.dsl.check import tag_liveness
from argus.dsl.check.access import alloc_rule, partition_rule, tensor_view_rule, view_rule
from argus.dsl.frontend.calls import BUILDERS
from argus.dsl.ir import dialect as D
from argus.dsl.ir.registry import meaning
from argus.dsl.llvm import translate
from argus.dsl.machine import interpreter, shadow
from argus.dsl.machine.shadow import check_launch
from argus.layout import Layout
from argus.verify import Verdict

OPS = {D.MakeSharedOp: alloc_rule, D.MakeLocalOp: alloc_rule, D.ViewOp: view_rule, D.SliceOp: view_rule,
       D.PartitionOp: partition_rule, D.TensorViewOp: tensor_view_rule}


@pytest.mark.parametrize("op_type", list(OPS), ids=lambda t: t.__name__)
def test_each_op_is_declared_once_with_every_consumers_part(op_type):
    m = meaning(op_type)
    assert m is not None and m.analyze is OPS[op_type] and m.liveness is tag_liveness.always
    assert m.interpret is not None and m.shadow is not None and m.translate is not None
    # each consumer dispatches to the declared part (no second, older rule beside it)
    assert interpreter.RULES[op_type] is m.interpret and shadow.RULES[op_type] is m.shadow
    assert translate.RULES[op_type] is m.translate and check_rules.RULES[op_type] is m.analyze
    assert tag_liveness.RULES[op_type] is tag_liveness.always


@pytest.mark.parametrize("name", ["make_shared", "make_local", "partition", "local_tile", "tile.view", "tensor.view"])
def test_each_builtin_and_view_method_is_built_by_the_family(name):
    assert BUILDERS[name].__module__ == "argus.dsl.ops.tiles"


TV = Layout((32, 2), (2, 1))  # thread t holds elements 2t and 2t+1


@kernel(block=(32,))
def tiles(x: Tensor[f32, 64], out: Tensor[f32, 64], words: Tensor[u32, 64], rows: Tensor[f32, 4, 16],
          wide: Tensor[f32, 4, 16]):
    t = thread_idx.x
    s = make_shared((64,), f32)
    mine = partition(s, TV, t)  # a part chosen at run time
    for v in static_range(2):
        mine[v] = x[2 * t + v]
    syncthreads()
    r = make_local((2,), f32)  # registers
    for v in static_range(2):
        r[v] = s[(2 * t + v + 2) % 64]
    for v in static_range(2):
        out[2 * t + v] = r[v]
    as_words = s.view((64,), u32)  # the same bytes as u32
    for v in static_range(2):
        words[2 * t + v] = as_words[2 * t + v]
    grid = s.view((4, 16), f32)
    for i in static_range(4):
        row = grid[i, :]  # a sub-tile
        if t < 16:
            rows[i, t] = row[t]
    quarter = local_tile(grid, (4, 4), t % 4)  # columns 4q .. 4q+3
    vectors = wide.view((4, 4), u128)  # a tensor seen as 16-byte vectors
    if t < 4:
        for c in static_range(4):
            wide[c, 4 * t] = quarter[c, 0]


def test_tiles_and_views_name_the_same_memory_on_the_interpreter():
    x = np.arange(64, dtype=np.float32) + 0.5
    out, words, rows, wide = np.zeros(64, np.float32), np.zeros(64, np.uint32), np.zeros((4, 16), np.float32), \
        np.zeros((4, 16), np.float32)
    tiles[1](x, out, words, rows, wide)
    assert np.array_equal(out, np.roll(x, -2))
    assert np.array_equal(words, x.view(np.uint32))
    assert np.array_equal(rows, x.reshape(4, 16))
    assert np.array_equal(wide[:, ::4], x.reshape(4, 16)[:, ::4])


def test_allocations_become_a_shared_global_and_an_alloca_in_llvm(llvm_text):
    text = llvm_text(tiles)
    assert "internal addrspace(3) global [64 x float] undef, align 128" in text  # make_shared
    assert "alloca [2 x float], align 16" in text  # make_local
    assert "addrspace(1)" in text  # the tensor view reads its tensor's memory


@kernel(block=(32,))
def staged(x: Tensor[f32, 32], k: Tensor[f32, 32]):
    tag(x, lambda i: i)
    tag(k, lambda i: i)
    s = make_shared((32,), f32)
    s[thread_idx.x] = x[thread_idx.x]
    syncthreads()
    grid = s.view((4, 8), f32)
    back = make_shared((32,), f32)
    back[thread_idx.x] = grid[thread_idx.x // 8, thread_idx.x % 8]
    syncthreads()
    assert tag(back[...]) == tag(k[...])


def test_tags_live_in_memory_and_views_reach_them():
    x = np.arange(32, dtype=np.float32)
    assert check_launch(staged, 1, x, x.copy()).verdict is Verdict.PROVED


@kernel(block=(32,), verify=False)
def part_out_of_range(out: Tensor[f32, 64]):
    s = make_shared((64,), f32)
    mine = partition(s, TV, thread_idx.x + 1)  # thread 31 asks for part 32 of 32
    mine[0] = 1.0


def test_a_part_past_the_last_is_an_out_of_bounds_fault():
    with pytest.raises(KernelFault) as info:
        part_out_of_range[1](np.zeros(64, np.float32))
    assert info.value.kind == "out-of-bounds" and "asks for part 32 of a tile that has 32 parts" in str(info.value)


@kernel(block=(32,))
def bool_tile(out: Tensor[f32, 32]):
    s = make_shared((32,), boolean)


@kernel(block=(32,))
def bad_tiler(out: Tensor[f32, 32]):
    s = make_shared((8, 4), f32)
    q = local_tile(s, (8,), 0)


@kernel(block=(32,))
def resized_view(out: Tensor[f32, 32]):
    s = make_shared((32,), f32)
    v = s.view((16,), f32)


@kernel(block=(32,))
def bool_tensor_view(out: Tensor[f32, 32]):
    v = out.view((32,), boolean)


@pytest.mark.parametrize(("k", "message", "text"), [
    (bool_tile, "tiles of bool are not supported", "make_shared((32,), boolean)"),
    (bad_tiler, "a tiler is a Layout or a tuple of 2 positive ints", "local_tile(s"),
    (resized_view, "a view must cover the same memory", "s.view("),
    (bool_tensor_view, "the second argument of view is a storable dtype", "out.view("),
], ids=["make_shared", "local_tile", "tile.view", "tensor.view"])
def test_a_bad_call_is_refused_at_its_line(k, message, text):
    with pytest.raises(ArgusTypeError, match=message) as info:
        k.compile()
    lines, first = inspect.getsourcelines(k.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if text in s)
