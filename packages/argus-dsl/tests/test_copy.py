"""Copy atoms: fragments move in vectors that must be contiguous and aligned."""

from __future__ import annotations

import numpy as np
import pytest

from argus.dsl import (
    KernelFault,
    Tensor,
    bf16,
    copy,
    copy_vector,
    kernel,
    make_local,
    make_shared,
    partition,
    static_range,
    syncthreads,
    thread_idx,
)
from argus.layout import Layout

ROWS = Layout((32, 8), (8, 1))  # thread t holds 8 consecutive bf16 (16 bytes) of a 256-element tile
COLUMNS = Layout((32, 8), (1, 32))  # thread t holds elements t, t+32, ...: not contiguous


@kernel(block=(32,))
def stage(x: Tensor[bf16, 256], out: Tensor[bf16, 256]):
    s = make_shared((256,), bf16)
    r = make_local((8,), bf16)
    t = thread_idx.x
    for v in static_range(8):
        s[t * 8 + v] = x[t * 8 + v]
    syncthreads()
    copy(partition(s, ROWS, t), r, copy_vector(16))
    for v in static_range(8):
        out[t * 8 + v] = r[v]


@kernel(block=(32,))
def strided(x: Tensor[bf16, 256], out: Tensor[bf16, 256]):
    s = make_shared((256,), bf16)
    r = make_local((8,), bf16)
    t = thread_idx.x
    for v in static_range(8):
        s[t * 8 + v] = x[t * 8 + v]
    syncthreads()
    copy(partition(s, COLUMNS, t), r, copy_vector(16))


def test_vector_copies_move_the_fragment():
    x = np.arange(256, dtype=np.uint16)
    out = np.zeros_like(x)
    stage[1](x, out)
    assert np.array_equal(out, x)


def test_a_copy_the_vector_instruction_cannot_do_is_reported():
    with pytest.raises(KernelFault) as info:
        strided[1](np.arange(256, dtype=np.uint16), np.zeros(256, np.uint16))
    assert info.value.kind == "misaligned-copy" and "not contiguous" in str(info.value)


from argus.dsl import CopyAtom, f32  # noqa: E402

# A warp-wide exchange: thread t = t0 + 4*t1 receives what thread 8*t0 + t1 held.
EXCHANGE = CopyAtom(
    "exchange_4x8", vector_bytes=4, threads=32,
    src_layout=Layout((32, 1), (1, 0)), dst_layout=Layout(((4, 8), 1), ((8, 1), 0)),
)


@kernel(block=(64,))
def exchange(x: Tensor[f32, 64], out: Tensor[f32, 64]):
    a = make_local((1,), f32)
    b = make_local((1,), f32)
    a[0] = x[thread_idx.x]
    copy(a, b, EXCHANGE)
    out[thread_idx.x] = b[0]


def test_a_cooperative_copy_redistributes_values_as_its_layouts_say():
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    exchange[1](x, out)
    t = np.arange(64)
    lane, warp = t % 32, t // 32
    assert np.array_equal(out, warp * 32 + 8 * (lane % 4) + lane // 4)


# ---- a per-thread atom that reorders its values: compiled as the interpreter runs it -----------

from argus.dsl.machine.tiles import redistribute  # noqa: E402
from argus.dsl.ops.memory import value_order  # noqa: E402


@pytest.mark.parametrize("source, target", [
    (Layout((1, (2, 2)), (0, (2, 1))), Layout((1, 4), (0, 1))),   # a transposed 2×2
    (Layout((1, 4), (0, 1)), Layout((1, (2, 2)), (0, (1, 2)))),  # the same order, written as two modes
    (Layout((1, 8), (0, 1)), Layout((1, (2, 4)), (0, (4, 1)))),    # 2×4 read as 4×2
])
def test_generated_code_hands_a_thread_its_values_in_the_order_the_interpreter_does(source, target):
    atom = CopyAtom("reorder_4B", 4, 1, source, target)
    per = atom.values()
    count = 3 * per  # three uses of the atom per thread
    raw = np.arange(count, dtype=np.int64).reshape(1, count, 1)  # value i of the thread holds i
    interpreted = redistribute(raw, atom, 1).reshape(-1).tolist()
    assert value_order(atom, count) == interpreted
