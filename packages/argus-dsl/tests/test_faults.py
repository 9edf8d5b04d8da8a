"""Each kind of undefined behaviour the interpreter must catch, with the thread and the line."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import KernelFault, TagAssertionError, Tensor, f32, kernel, make_local, make_shared, syncthreads, thread_idx


def line_of(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


@kernel(block=(32,), verify=False)  # the checker refutes it at compile time: this is the interpreter's test
def neighbour_without_barrier(out: Tensor[f32, 32]):
    buf = make_shared((32,), f32)
    t = thread_idx.x
    buf[t] = 1.0
    out[t] = buf[(t + 1) % 32]  # reads a neighbour's write: needs syncthreads() before


@kernel(block=(32,))
def neighbour_with_barrier(out: Tensor[f32, 32]):
    buf = make_shared((32,), f32)
    t = thread_idx.x
    buf[t] = f32(t)
    syncthreads()
    out[t] = buf[(t + 1) % 32]


@kernel(block=(32,), verify=False)  # the checker refutes it at compile time: this is the interpreter's test
def same_slot(out: Tensor[f32, 32]):
    buf = make_shared((4,), f32)
    buf[thread_idx.x % 4] = 2.0  # eight threads write each slot
    syncthreads()
    out[thread_idx.x] = buf[0]


@kernel(block=(32,), verify=False)  # the checker refutes it at compile time: this is the interpreter's test
def half_written(out: Tensor[f32, 32]):
    buf = make_shared((32,), f32)
    t = thread_idx.x
    if t < 16:
        buf[t] = 1.0
    syncthreads()
    out[t] = buf[31 - t]


@kernel(block=(32,), verify=False)  # the checker refutes it at compile time: this is the interpreter's test
def unwritten_register(out: Tensor[f32, 32]):
    r = make_local((4,), f32)
    r[0] = 1.0
    out[thread_idx.x] = r[1]


@kernel(block=(32,), verify=False)  # the checker refutes it at compile time: this is the interpreter's test
def past_the_end(x: Tensor[f32, "n"], out: Tensor[f32, 32]):
    out[thread_idx.x] = x[thread_idx.x + 1]


@kernel(block=(32,))
def barrier_in_branch(out: Tensor[f32, 32]):
    buf = make_shared((32,), f32)
    if thread_idx.x < 8:
        syncthreads()
    buf[thread_idx.x] = 0.0
    out[thread_idx.x] = buf[thread_idx.x]


def run(k, *args):
    k[1](*args)


def test_read_after_write_without_barrier_is_a_race():
    with pytest.raises(KernelFault) as info:
        run(neighbour_without_barrier, np.zeros(32, np.float32))
    fault = info.value
    assert fault.kind == "data-race"
    assert fault.location.line == line_of(neighbour_without_barrier, "out[t] = buf[(t + 1) % 32]")
    a, b = fault.details["threads"]
    assert (b + 1) % 32 == a or (a + 1) % 32 == b
    assert fault.details["block"] == (0, 0, 0)


def test_the_barrier_orders_the_accesses():
    out = np.zeros(32, np.float32)
    run(neighbour_with_barrier, out)
    assert np.array_equal(out, (np.arange(32) + 1) % 32)


def test_two_threads_writing_one_element_is_a_race():
    with pytest.raises(KernelFault) as info:
        run(same_slot, np.zeros(32, np.float32))
    assert info.value.kind == "data-race"
    t0, t1 = info.value.details["threads"]
    assert t0 != t1 and t0 % 4 == t1 % 4


def test_reading_shared_memory_nobody_wrote():
    with pytest.raises(KernelFault) as info:
        run(half_written, np.zeros(32, np.float32))
    fault = info.value
    assert fault.kind == "uninitialized-read"
    assert fault.details["thread"] == 0 and fault.details["index"] == (31,)
    assert fault.location.line == line_of(half_written, "out[t] = buf[31 - t]")


def test_reading_a_register_never_written():
    with pytest.raises(KernelFault) as info:
        run(unwritten_register, np.zeros(32, np.float32))
    assert info.value.kind == "uninitialized-read"
    assert info.value.details["index"] == (1,)


def test_out_of_bounds_global_read_names_array_thread_and_index():
    with pytest.raises(KernelFault) as info:
        run(past_the_end, np.zeros(32, np.float32), np.zeros(32, np.float32))
    fault = info.value
    assert fault.kind == "out-of-bounds"
    assert fault.details["array"] == "x" and fault.details["thread"] == 31 and fault.details["index"] == (32,)
    assert fault.location.line == line_of(past_the_end, "x[thread_idx.x + 1]")


def test_barrier_not_reached_by_every_thread():
    with pytest.raises(KernelFault) as info:
        run(barrier_in_branch, np.zeros(32, np.float32))
    fault = info.value
    assert fault.kind == "divergent-barrier"
    assert fault.details["threads"] == list(range(8, 32))
    assert fault.location.line == line_of(barrier_in_branch, "syncthreads()")


@pytest.mark.parametrize(
    ("unchecked", "kind"), [(unwritten_register, "uninitialized-read"), (past_the_end, "out-of-bounds")]
)
def test_the_checker_refutes_these_faults_before_any_launch(unchecked, kind: str):
    with pytest.raises(TagAssertionError) as info:
        kernel(block=(32,))(unchecked.fn).compile()
    assert f"kind = {kind}" in str(info.value)
