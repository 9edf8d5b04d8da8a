"""The memory family (argus.dsl.ops.memory): loads and stores, variables, copies and atomics are
declared once, and each consumer — the interpreter, the scheduler, the shadow tags, the static
checker and its liveness, layout lowering, the LLVM translation, the front end — reads its part
from that declaration."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    KernelFault,
    Tensor,
    atomic_add,
    atomic_exchange,
    atomic_max,
    copy,
    copy_vector,
    f32,
    i32,
    kernel,
    make_local,
    make_shared,
    partition,
    static_range,
    syncthreads,
    tag,
    thread_idx,
)
from argus.dsl.check import rules as check_rules
from argus.dsl.check import tag_liveness
from argus.dsl.check.access import atomic_rule, copy_rule, load_rule, store_rule, var_load_rule, var_rule, var_store_rule
from argus.dsl.check.verification import verify_kernel
from argus.dsl.frontend.calls import BUILDERS, SYNTAX_BUILDERS
from argus.dsl.ir import dialect as D
from argus.dsl.ir import lowering
from argus.dsl.ir.lowering import lowered
from argus.dsl.ir.registry import meaning
from argus.dsl.llvm import translate
from argus.dsl.machine import interpreter, shadow
from argus.dsl.machine.interpreter import Interpreter
from argus.dsl.machine.schedule import is_sync_point, is_wait
from argus.dsl.machine.shadow import check_launch
from argus.layout import Layout
from argus.verify import Verdict

# each op: its tag rule, its liveness rule, and whether it is lowered (by coordinates) or translated
OPS = {
    D.LoadOp: (load_rule, tag_liveness.load, "lower"),
    D.StoreOp: (store_rule, tag_liveness.write, "lower"),
    D.LoadAtOp: (load_rule, tag_liveness.load, "translate"),
    D.StoreAtOp: (store_rule, tag_liveness.write, "translate"),
    D.VarOp: (var_rule, tag_liveness.always, "translate"),
    D.VarLoadOp: (var_load_rule, tag_liveness.var_load, "translate"),
    D.VarStoreOp: (var_store_rule, tag_liveness.var_store, "translate"),
    D.CopyOp: (copy_rule, tag_liveness.write, "translate"),
    D.AtomicOp: (atomic_rule, tag_liveness.write, "translate"),
}


@pytest.mark.parametrize("op_type", list(OPS), ids=lambda t: t.__name__)
def test_each_op_is_declared_once_with_every_consumers_part(op_type):
    analyze, liveness, last = OPS[op_type]
    m = meaning(op_type)
    assert m is not None and m.analyze is analyze and m.liveness is liveness
    assert m.interpret is not None and m.shadow is not None and m.wait is None
    assert (m.lower is not None, m.translate is not None) == (last == "lower", last == "translate")
    # each consumer dispatches to the declared part (no second, older rule beside it)
    assert interpreter.RULES[op_type] is m.interpret and shadow.RULES[op_type] is m.shadow
    assert check_rules.RULES[op_type] is m.analyze and tag_liveness.RULES[op_type] is m.liveness
    if m.lower is not None:
        assert lowering.RULES[op_type] is m.lower and op_type not in translate.RULES
    else:
        assert translate.RULES[op_type] is m.translate and op_type not in lowering.RULES


def test_only_the_copy_is_collective_and_only_the_atomic_a_sync_point():
    for op_type in OPS:
        m = meaning(op_type)
        assert (m.sync, bool(m.collective)) == (op_type is D.AtomicOp, op_type is D.CopyOp), op_type.__name__


@pytest.mark.parametrize("name", ["copy"])
def test_the_copy_builtin_is_built_by_the_family(name):
    assert BUILDERS[name].__module__ == "argus.dsl.ops.memory"


@pytest.mark.parametrize("name", ["atomic_add", "atomic_max", "atomic_min", "atomic_exchange"])
def test_atomics_are_built_by_the_family_from_their_arguments_syntax(name):
    assert SYNTAX_BUILDERS[name].__module__ == "argus.dsl.ops.memory" and name not in BUILDERS


# ---- a kernel using every op of the family ------------------------------------------------------

ROWS = Layout((32, 4), (4, 1))  # thread t holds 4 consecutive f32 (16 bytes) of a 128-element tile


@kernel(block=(32,))
def every_op(x: Tensor[f32, 128], out: Tensor[f32, 128], total: Tensor[i32, 1], top: Tensor[i32, 1],
             last: Tensor[i32, 1], old: Tensor[i32, 32], n: int):
    t = thread_idx.x
    s = make_shared((128,), f32)
    r = make_local((4,), f32)
    for v in static_range(4):
        s[t * 4 + v] = x[t * 4 + v]  # loads of a tensor, stores into a shared tile
    syncthreads()
    for v in static_range(4):
        r[v] = s[t * 4 + (v + 1) % 4]
    q = make_local((4,), f32)
    copy(r, q, copy_vector(16))
    best = 0
    if t < n:  # a variable assigned in a runtime branch
        best = t * 2
    for v in static_range(4):
        out[t * 4 + (v + 1) % 4] = q[v] * 2.0
    old[t] = atomic_add(total[0], 1)
    atomic_max(top[0], best)
    atomic_exchange(last[0], t)


def _run_every_op(n):
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    total, top, last = (np.zeros(1, np.int32) for _ in range(3))
    old = np.full(32, -1, np.int32)
    every_op[1](x, out, total, top, last, old, n)
    return x, out, total, top, last, old


def test_the_ops_run_on_the_interpreter():
    x, out, total, top, last, old = _run_every_op(20)
    assert np.array_equal(out, x * 2)  # through shared memory, registers and the copy between registers
    assert total[0] == 32 and sorted(old.tolist()) == list(range(32))  # each saw the count before its add
    assert top[0] == 19 * 2  # threads past n kept the variable's first value, 0
    assert 0 <= last[0] < 32


def test_the_ops_become_llvm_loads_stores_allocas_and_atomics(llvm_text):
    text = llvm_text(every_op)
    assert "addrspace(3)" in text and "load float, ptr addrspace(1)" in text  # tensor loads, shared stores
    assert "alloca [1 x i32]" in text  # the variable
    assert "atomicrmw add ptr addrspace(1)" in text and "atomicrmw max ptr addrspace(1)" in text
    assert "atomicrmw xchg ptr addrspace(1)" in text


def test_layout_lowering_turns_coordinate_accesses_into_offset_accesses_at_their_lines():
    compiled = every_op.specialize()
    module, locations = lowered(compiled)
    kinds = [type(op) for op in module.walk()]
    assert D.LoadOp not in kinds and D.StoreOp not in kinds
    assert D.LoadAtOp in kinds and D.StoreAtOp in kinds
    lines, first = inspect.getsourcelines(every_op.fn)
    store_line = first + next(i for i, s in enumerate(lines) if "out[t * 4 + (v + 1) % 4] = q[v]" in s)
    assert any(locations.get(op) is not None and locations[op].line == store_line
               for op in module.walk() if isinstance(op, D.StoreAtOp))  # the lowered store keeps its line


def test_the_copy_is_run_by_its_atoms_threads_and_the_atomic_ends_a_turn():
    compiled = every_op.specialize()
    ops = list(compiled.op.walk())
    (copy_op,) = [op for op in ops if isinstance(op, D.CopyOp)]
    atomic = next(op for op in ops if isinstance(op, D.AtomicOp))
    assert meaning(D.CopyOp).collective(Interpreter(compiled.op), copy_op) == 1  # copy_vector: one thread
    assert is_sync_point(atomic) and not is_wait(atomic)


# ---- faults and errors --------------------------------------------------------------------------

@kernel(block=(32,), verify=False)
def read_unassigned(out: Tensor[i32, 32], n: int):
    v = 0
    if thread_idx.x < n:
        v = 1
    else:
        w = 2
    for i in range(n):
        w = w + i
    out[thread_idx.x] = v + w


def test_a_variable_read_before_it_is_assigned_faults():
    with pytest.raises(KernelFault) as info:
        read_unassigned[1](np.zeros(32, np.int32), 4)
    assert info.value.kind == "uninitialized-read"


@kernel(block=(32,), verify=False)
def past_the_end(x: Tensor[f32, 32], out: Tensor[f32, 32]):
    out[thread_idx.x] = x[thread_idx.x + 1]


def test_a_load_outside_its_tensor_faults_naming_the_element():
    with pytest.raises(KernelFault) as info:
        past_the_end[1](np.zeros(32, np.float32), np.zeros(32, np.float32))
    assert info.value.kind == "out-of-bounds" and "(32,)" in str(info.value)


@kernel(block=(32,))
def counted(total: Tensor[i32, 1]):
    atomic_add(total[0], 1)


def test_an_atomics_target_is_updated_not_loaded():
    assert not [op for op in counted.specialize().op.walk() if isinstance(op, D.LoadOp)]


def _bad_atomic(total: Tensor[i32, 1]):
    atomic_add(total, 1)


def _bad_atomic_value(total: Tensor[i32, 1]):
    atomic_add(total[0])


def _bad_copy(x: Tensor[f32, 32]):
    s = make_shared((32,), f32)
    copy(s, x, copy_vector(4))


def _bad_copy_sizes(x: Tensor[f32, 32]):
    s = make_shared((32,), f32)
    r = make_local((3,), f32)
    copy(s, r, copy_vector(4))


@pytest.mark.parametrize("fn, call, message", [
    (_bad_atomic, "atomic_add(total, 1)", r"atomic_add\(t\[coords...\], value\)"),
    (_bad_atomic_value, "atomic_add(total[0])", r"atomic_add\(t\[coords...\], value\)"),
    (_bad_copy, "copy(s, x,", "copy's target must be a tile"),
    (_bad_copy_sizes, "copy(s, r,", "copy needs tiles of one size and type"),
], ids=["atomic-of-a-tensor", "atomic-without-value", "copy-into-a-tensor", "copy-of-unequal-tiles"])
def test_a_bad_call_is_refused_at_its_line(fn, call, message):
    k = kernel(block=(32,))(fn)
    with pytest.raises(ArgusTypeError, match=message) as info:
        k.compile()
    lines, first = inspect.getsourcelines(k.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if call in s)


# ---- tags: loads, stores and copies move them byte for byte --------------------------------------

@kernel(block=(32,))
def staged(x: Tensor[f32, 128], k: Tensor[f32, 128]):
    tag(x, lambda i: i)
    tag(k, lambda i: i)
    s = make_shared((128,), f32)
    t = thread_idx.x
    for v in static_range(4):
        s[t * 4 + v] = x[t * 4 + v]
    syncthreads()
    r = make_local((4,), f32)
    copy(partition(s, ROWS, t), r, copy_vector(16))
    d = make_shared((128,), f32)
    syncthreads()
    for v in static_range(4):
        d[t * 4 + v] = r[v]
    syncthreads()
    assert tag(d[...]) == tag(k[...])


@kernel(block=(32,), verify=False)
def shifted(x: Tensor[f32, 128], k: Tensor[f32, 128]):
    tag(x, lambda i: i)
    tag(k, lambda i: i)
    s = make_shared((128,), f32)
    t = thread_idx.x
    for v in static_range(4):
        s[t * 4 + v] = x[(t * 4 + v + 1) % 128]
    syncthreads()
    r = make_local((4,), f32)
    copy(partition(s, ROWS, t), r, copy_vector(16))
    d = make_shared((128,), f32)
    syncthreads()
    for v in static_range(4):
        d[t * 4 + v] = r[v]
    syncthreads()
    assert tag(d[...]) == tag(k[...])


def test_tags_follow_loads_stores_and_copies_in_the_shadow_run_and_the_checker():
    x = np.arange(128, dtype=np.float32)
    assert check_launch(staged, 1, x, x.copy()).verdict is Verdict.PROVED
    assert verify_kernel(staged.specialize(), "staged").verdict is Verdict.PROVED
    assert check_launch(shifted, 1, x, x.copy()).verdict is Verdict.VIOLATED  # each element moved by one
    assert verify_kernel(shifted.specialize(), "shifted").verdict is Verdict.VIOLATED
