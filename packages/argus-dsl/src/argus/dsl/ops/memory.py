"""Memory ops: loads and stores of tile and tensor elements, variables, copies between tiles,
and atomics.

A load or store names its element by coordinates (``t[i, j]``, built by the front end's
subscripts and assignments, `argus.dsl.frontend.expressions` and `.statements`); layout lowering
turns it into a load or store at an element offset, the form the LLVM translation reads. A
variable (a name assigned in a runtime loop or branch) is a per-thread slot: reading it before
any assignment is a fault. A copy moves a tile's fragment into another's through a copy atom,
run by the atom's threads together (a collective), each vector of it contiguous and aligned.
An atomic updates one element of a global tensor or shared tile, the active threads one after
another, and returns the element's value before its update; it ends a group's turn (a sync
point), since other warps' order around it decides what it returns.

The checker's tag rules stay in `argus.dsl.check.access` and its liveness rules in
`argus.dsl.check.tag_liveness` (the checker reasons about their identities); they are only
declared here.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.byte_moves import copied
from argus.verify.tags import TOP, resize
from xdsl.dialects import builtin as xbuiltin
from xdsl.ir import Operation

from ..atoms import CopyAtom
from ..check import tag_liveness
from ..check.access import (
    atomic_rule,
    cleared,
    copy_rule,
    load_rule,
    source_bytes,
    store_rule,
    var_load_rule,
    var_rule,
    var_store_rule,
)
from ..dtypes import DType
from ..frontend.values import TensorRef, TileRef, Value, describe
from ..ir import dialect as D
from ..ir.registry import builtin, define
from ..ir.types import mlir_type
from ..llvm.translate import element_type, llvm_type
from ..machine import shadow
from ..machine.interpreter import (
    Frame,
    Interpreter,
    TensorValue,
    TileValue,
    atom_threads,
    check_read_race,
    check_write_race,
    checked_offsets,
    coordinate,
    element_offsets,
    fragment_in_tile,
    read,
    scalars,
    set_value,
    value_of,
    write,
)
from ..machine.interpreter import byte_indices
from ..machine.tiles import fragment_bytes, redistribute

if TYPE_CHECKING:
    from ..llvm import Translator
    from ..machine.shadow import ShadowInterpreter

#: The atomic updates, by the name after ``atomic_``: the element's new value from its old one.
ATOMIC_UPDATES: dict[str, Callable[[Any, Any], Any]] = {
    "add": np.add, "max": np.maximum, "min": np.minimum, "exchange": lambda old, new: new,
}


# ---- the front end ------------------------------------------------------------------------

def _build_atomic(kind: str) -> Callable[..., Value]:
    def build(fe: Any, node: ast.Call, args: list[ast.expr]) -> Value:
        """``atomic_add(t[i, j], v)``: returns the element's value before the update. Its first
        argument names an element (a place, not a value: it is not loaded)."""
        if len(args) != 2 or not isinstance(args[0], ast.Subscript):
            raise fe.type_error(node, f"atomic_{kind}(t[coords...], value)")
        target_node = args[0]
        base = fe.expr(target_node.value)
        if not isinstance(base, (TensorRef, TileRef)) or (isinstance(base, TileRef) and base.type.space.data != "shared"):
            raise fe.type_error(target_node, "atomics update a global tensor or a shared tile")
        dtype: DType = base.type.dtype
        if kind in ("add", "max", "min") and not (dtype.is_integer or dtype.is_float):
            raise fe.type_error(node, f"atomic_{kind} needs numbers, not {dtype}")
        coords = fe.coordinates(target_node, base)
        value = fe.runtime(fe.expr(args[1]), dtype, args[1])
        op = D.AtomicOp.create(operands=[value.ssa, base.ssa, *coords], properties={"kind": xbuiltin.StringAttr(kind)},
                               result_types=[mlir_type(dtype)])
        return Value(fe.emit(op).results[0], dtype)

    return build


for _kind in ATOMIC_UPDATES:
    builtin(f"atomic_{_kind}", syntax=True)(_build_atomic(_kind))


@builtin("copy")
def _build_copy(fe: Any, node: ast.Call, args: list[Any]) -> None:
    """``copy(src, dst, atom)``: the tiles must hold whole vectors of the atom, and as many
    values as the atom moves per thread."""
    if len(args) != 3 or not isinstance(args[2], CopyAtom):
        raise fe.type_error(node, "copy(src, dst, atom) with two tiles and a CopyAtom such as copy_vector(16)")
    src, dst, atom = args
    for label, t in (("source", src), ("target", dst)):
        if not isinstance(t, TileRef):
            raise fe.type_error(node, f"copy's {label} must be a tile, got {describe(t)}")
    if src.type.dtype != dst.type.dtype or src.type.layout.size() != dst.type.layout.size():
        raise fe.type_error(node, f"copy needs tiles of one size and type: {src.type.layout.size()} {src.type.dtype} "
                                  f"and {dst.type.layout.size()} {dst.type.dtype}")
    count, nbytes = src.type.layout.size(), src.type.dtype.nbytes
    if atom.vector_bytes % nbytes or (count * nbytes) % atom.vector_bytes:
        raise fe.type_error(node, f"{atom.name} moves {atom.vector_bytes}-byte vectors; a fragment of "
                                  f"{count} {src.type.dtype} is not a whole number of them")
    if atom.values() is not None and count % atom.values():  # type: ignore[operator]
        raise fe.type_error(node, f"{atom.name} moves {atom.values()} values per thread; the fragment holds {count}")
    props = xbuiltin.DictionaryAttr({k: xbuiltin.StringAttr(v) for k, v in atom.as_properties().items()})
    fe.emit(D.CopyOp.create(operands=[src.ssa, dst.ssa], properties={"atom": props}))


# ---- the interpreter ----------------------------------------------------------------------

def _interpret_load(interp: Interpreter, op: D.LoadOp, frame: Frame, mask: np.ndarray) -> None:
    source = value_of(frame, op.source)
    coords = [scalars(frame, c)[mask].astype(np.int64) for c in op.coords]
    offsets = element_offsets(interp, op, frame, source, coords, mask)
    read(interp, op, frame, mask, source, offsets, lambda row: coordinate(coords, row))


def _interpret_store(interp: Interpreter, op: D.StoreOp, frame: Frame, mask: np.ndarray) -> None:
    target = value_of(frame, op.target)
    coords = [scalars(frame, c)[mask].astype(np.int64) for c in op.coords]
    offsets = element_offsets(interp, op, frame, target, coords, mask)
    write(interp, op, frame, mask, target, offsets, scalars(frame, op.value))


def _interpret_load_at(interp: Interpreter, op: D.LoadAtOp, frame: Frame, mask: np.ndarray) -> None:
    source = value_of(frame, op.source)
    offsets = checked_offsets(interp, op, frame, source, scalars(frame, op.offset)[mask].astype(np.int64), mask)
    read(interp, op, frame, mask, source, offsets, lambda row: (int(offsets[row]),))


def _interpret_store_at(interp: Interpreter, op: D.StoreAtOp, frame: Frame, mask: np.ndarray) -> None:
    target = value_of(frame, op.target)
    offsets = checked_offsets(interp, op, frame, target, scalars(frame, op.offset)[mask].astype(np.int64), mask)
    write(interp, op, frame, mask, target, offsets, scalars(frame, op.value))


def _interpret_var(interp: Interpreter, op: D.VarOp, frame: Frame, mask: np.ndarray) -> None:
    """A slot per thread, and which threads assigned it."""
    dtype: DType = op.result.type.dtype  # type: ignore[attr-defined]
    shape = (frame.threads, dtype.nbytes) if dtype.kind == "bits" else (frame.threads,)
    frame.values[op.result] = [np.zeros(shape, dtype.numpy), np.zeros(frame.threads, bool)]


def _interpret_var_load(interp: Interpreter, op: D.VarLoadOp, frame: Frame, mask: np.ndarray) -> None:
    values, assigned = value_of(frame, op.var)
    if np.any(mask & ~assigned):
        threads = np.flatnonzero(mask & ~assigned)
        raise interp.fault("uninitialized-read", f"a variable is read before it is assigned by thread(s) {threads[:8].tolist()}",
                           op, frame, threads=threads.tolist())
    set_value(frame, op, values.copy())


def _interpret_var_store(interp: Interpreter, op: D.VarStoreOp, frame: Frame, mask: np.ndarray) -> None:
    slot = value_of(frame, op.var)
    slot[0][mask] = scalars(frame, op.value)[mask]
    slot[1] |= mask


def _interpret_copy(interp: Interpreter, op: D.CopyOp, frame: Frame, mask: np.ndarray) -> None:
    atom = interp.copy_atom(op)
    source: TileValue = value_of(frame, op.source)
    target: TileValue = value_of(frame, op.target)
    threads = atom_threads(interp, op, frame, mask, atom.threads, atom.name)
    if threads.size == 0:
        return
    nbytes = source.dtype.nbytes
    src_idx = fragment_in_tile(interp, op, frame, source, threads, "source")
    dst_idx = fragment_in_tile(interp, op, frame, target, threads, "target")
    for idx, tile, role in ((src_idx, source, "source"), (dst_idx, target, "target")):
        _check_vectors(interp, op, frame, atom, idx[..., 0], threads, tile, role)
    owners = np.repeat(threads, src_idx.shape[1])
    if source.memory.space == "local":
        raw = source.memory.data[threads[:, None, None], src_idx]
        unset = ~source.memory.written[threads[:, None, None], src_idx]  # type: ignore[index]
    else:
        raw = source.memory.data[src_idx]
        unset = ~source.memory.written[src_idx]  # type: ignore[index]
        check_read_race(interp, op, frame, source.memory, src_idx.reshape(-1, nbytes), owners)
    if unset.any():
        t = int(np.flatnonzero(unset.any(axis=(1, 2)))[0])
        raise interp.fault("uninitialized-read", f"thread {int(threads[t])} copies from {source.memory.space} bytes "
                           "that no thread has written", op, frame, thread=int(threads[t]), array=source.memory.name)
    if atom.src_layout is not None and atom.dst_layout is not None:
        raw = redistribute(raw, atom, threads.size)
    if target.memory.space == "local":
        target.memory.data[threads[:, None, None], dst_idx] = raw
        target.memory.written[threads[:, None, None], dst_idx] = True  # type: ignore[index]
    else:
        check_write_race(interp, op, frame, target.memory, dst_idx.reshape(-1, nbytes), owners)
        target.memory.data[dst_idx] = raw
        target.memory.written[dst_idx] = True  # type: ignore[index]


def _check_vectors(interp: Interpreter, op: Operation, frame: Frame, atom: CopyAtom, first_bytes: np.ndarray,
                   threads: np.ndarray, tile: TileValue, role: str) -> None:
    """Every `vector_bytes` run of a fragment must be contiguous and aligned in memory."""
    nbytes = tile.dtype.nbytes
    per_vector = atom.vector_bytes // nbytes
    groups = first_bytes.reshape(threads.size, -1, per_vector)
    contiguous = (np.diff(groups, axis=-1) == nbytes).all(axis=-1) if per_vector > 1 else np.ones(groups.shape[:2], bool)
    aligned = groups[..., 0] % atom.vector_bytes == 0
    bad = ~(contiguous & aligned)
    if bad.any():
        t, g = (int(i) for i in np.argwhere(bad)[0])
        what = "not contiguous" if not contiguous[t, g] else f"not aligned to {atom.vector_bytes} bytes"
        raise interp.fault(
            "misaligned-copy", f"{atom.name}: thread {int(threads[t])}'s vector {g} of the {role} starts at byte "
            f"{int(groups[t, g, 0])} and is {what}", op, frame, thread=int(threads[t]), array=tile.memory.name,
        )


def _interpret_atomic(interp: Interpreter, op: D.AtomicOp, frame: Frame, mask: np.ndarray) -> None:
    """Active threads update one after another, in thread order (one valid serialization)."""
    target = value_of(frame, op.target)
    dtype: DType = target.dtype
    active = np.flatnonzero(mask)
    coords = [scalars(frame, c)[active].astype(np.int64) for c in op.coords]
    offsets = element_offsets(interp, op, frame, target, coords, mask)
    data = target.bytes if isinstance(target, TensorValue) else target.memory.data
    values = scalars(frame, op.value)
    result = np.zeros(frame.threads, dtype.numpy)
    combine = ATOMIC_UPDATES[op.kind.data]
    for t, offset in zip(active, offsets):
        span = slice(int(offset) * dtype.nbytes, (int(offset) + 1) * dtype.nbytes)
        old = dtype.decode(data[span][None])[0]
        result[t] = old
        data[span] = dtype.encode(dtype.round(np.asarray(combine(old, values[t]))))[()] if dtype.kind != "bits" else values[t]
        if not isinstance(target, TensorValue):
            target.memory.written[span] = True  # type: ignore[index]
    set_value(frame, op, result)


# ---- shadow tags: loads, stores and copies move tags byte for byte ---------------------------

def _accessed_bytes(s: ShadowInterpreter, op: Any, frame: Frame, mask: np.ndarray, memory: Any) -> np.ndarray:
    """Byte indices (active threads, bytes) a load, store or atomic touches, by coordinates or offset."""
    if isinstance(op, (D.LoadOp, D.StoreOp, D.AtomicOp)):
        coords = [scalars(frame, c)[mask].astype(np.int64) for c in op.coords]
        offsets = element_offsets(s, op, frame, memory, coords, mask)
    else:
        offsets = scalars(frame, op.offset)[mask].astype(np.int64)
    return byte_indices(offsets, memory.dtype.nbytes)


def _shadow_load(s: ShadowInterpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
    source = value_of(frame, op.source)
    threads = np.flatnonzero(mask)
    tags = np.zeros((frame.threads, source.dtype.nbytes), np.int64)
    tags[threads] = s.memory_tags(source, frame).read(_accessed_bytes(s, op, frame, mask, source), threads)
    s.tags[op.result] = tags


def _shadow_store(s: ShadowInterpreter, op: Any, frame: Frame, mask: np.ndarray) -> None:
    target = value_of(frame, op.target)
    threads = np.flatnonzero(mask)
    idx = _accessed_bytes(s, op, frame, mask, target)
    tags = resize(s.value_tags(frame, op.value)[threads], target.dtype.nbytes, s.table)
    if not isinstance(target, TensorValue):
        tags = cleared(s.table, op.value, tags, s.memory_tags(target, frame).per_thread)
    if isinstance(target, TensorValue) and s.store_functions:
        from .tags import check_stored
        check_stored(s, op, frame, target, idx, tags, threads)
    s.memory_tags(target, frame).write(idx, tags, threads, s.site(op))


def _shadow_var(s: ShadowInterpreter, op: D.VarOp, frame: Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = np.zeros((frame.threads, shadow.width(op.result)), np.int64)


def _shadow_var_store(s: ShadowInterpreter, op: D.VarStoreOp, frame: Frame, mask: np.ndarray) -> None:
    slot = s.tags[op.var]
    slot[mask] = cleared(s.table, op.value, s.value_tags(frame, op.value), True, variable=True)[mask]  # (a variable is a register)


def _shadow_var_load(s: ShadowInterpreter, op: D.VarLoadOp, frame: Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = s.tags[op.var].copy()


def _shadow_copy(s: ShadowInterpreter, op: D.CopyOp, frame: Frame, mask: np.ndarray) -> None:
    source, target = value_of(frame, op.source), value_of(frame, op.target)
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    src_idx = fragment_bytes(source, threads)
    tags = s.memory_tags(source, frame).read(src_idx.reshape(threads.size, -1), threads).reshape(src_idx.shape)
    origin = source_bytes(s.memory_tags(source, frame), src_idx, threads)
    atom = s.copy_atom(op)
    if atom.src_layout is not None:
        tags, origin = redistribute(tags, atom, threads.size), redistribute(origin, atom, threads.size)
    shadow.fragment_write(s, op, frame, target, threads, copied(tags, origin))


def _shadow_atomic(s: ShadowInterpreter, op: D.AtomicOp, frame: Frame, mask: np.ndarray) -> None:
    """The old value is computed data: what other threads left there, in an order the tags do
    not follow; and so is the value the update leaves (⊤ there, as the checker's rule writes: an
    `atomic_add` over a product in a shared tile leaves no product). An update of a tensor whose
    stored tags are asserted is not checked, and the launch's verdict says so (`unchecked`), as
    the checker's does."""
    s.tags[op.result] = np.full((frame.threads, shadow.width(op.result)), TOP, np.int64)
    target = value_of(frame, op.target)
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    if isinstance(target, TensorValue) and shadow.buffer_key(target) in s.store_functions:
        s.unchecked.append(f"{s.locations.get(op)}: an atomic into {target.name!r}, whose stored tags are asserted "
                           "(assert_tags); stores are checked, atomics are not")
    idx = _accessed_bytes(s, op, frame, mask, target)
    s.memory_tags(target, frame).write(idx, np.full(idx.shape, TOP, np.int64), threads, s.site(op))


# ---- layout lowering ----------------------------------------------------------------------

def _lower_load(op: D.LoadOp, offset_of: Callable[..., Any]) -> D.LoadAtOp:
    offset = offset_of(op.source, list(op.coords))
    return D.LoadAtOp.create(operands=[op.source, offset], result_types=[op.result.type])


def _lower_store(op: D.StoreOp, offset_of: Callable[..., Any]) -> D.StoreAtOp:
    offset = offset_of(op.target, list(op.coords))
    return D.StoreAtOp.create(operands=[op.value, op.target, offset])


# ---- LLVM ---------------------------------------------------------------------------------

def _translate_load_at(t: Translator, op: D.LoadAtOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    memory = t.memory(op.source, op)
    t.names[op.result] = t.load(ty, memory, t.element_pointer(memory, ty, t.value(op.offset)))


def _translate_store_at(t: Translator, op: D.StoreAtOp) -> None:
    ty = llvm_type(op.value.type, t.where(op))
    memory = t.memory(op.target, op)
    t.store(ty, t.value(op.value), memory, t.element_pointer(memory, ty, t.value(op.offset)))


def _translate_var(t: Translator, op: D.VarOp) -> None:
    ty = element_type(op.result.type.dtype, t.where(op))  # type: ignore[attr-defined]
    t.names[op.result] = t.alloca(ty, 1, 8)


def _translate_var_load(t: Translator, op: D.VarLoadOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    t.names[op.result] = t.load(ty, t.private, t.value(op.var))


def _translate_var_store(t: Translator, op: D.VarStoreOp) -> None:
    ty = llvm_type(op.value.type, t.where(op))
    t.store(ty, t.value(op.value), t.private, t.value(op.var))


_ATOMIC_INT = {"add": "add", "max": "max", "min": "min", "exchange": "xchg"}
_ATOMIC_FLOAT = {"add": "fadd", "max": "fmax", "min": "fmin", "exchange": "xchg"}


def _translate_atomic(t: Translator, op: D.AtomicOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    kind = op.kind.data
    table = _ATOMIC_INT if ty.startswith("i") else _ATOMIC_FLOAT
    if kind not in table:
        raise t.unsupported(op, f"atomic {kind!r}")
    if op.coords and len(op.coords) != 1:
        raise t.unsupported(op, "an atomic addressed by coordinates (lower layouts first)")
    memory = t.memory(op.target, op)
    pointer = t.element_pointer(memory, ty, t.value(op.coords[0]))
    space = f" addrspace({memory.space})" if memory.space else ""
    t.define(op.result, f"atomicrmw {table[kind]} ptr{space} {pointer}, {ty} {t.value(op.value)} monotonic")


def _translate_copy(t: Translator, op: D.CopyOp) -> None:
    """A per-thread atom moves the thread's values itself; one that redistributes values among
    threads is the backend's (`Translator.cooperative_copy`)."""
    atom = CopyAtom.from_properties({k: v.data for k, v in op.atom.data.items()})  # type: ignore[attr-defined]
    if atom.threads != 1:
        t.cooperative_copy(op, atom)
        return
    src_memory, ty, src_offsets = t.fragment(op.source, op)
    dst_memory, _, dst_offsets = t.fragment(op.target, op)
    order = value_order(atom, len(src_offsets))
    for w, d in enumerate(dst_offsets):
        s = src_offsets[order[w]]
        value = t.load(ty, src_memory, t.element_pointer(src_memory, ty, str(s)))
        t.store(ty, value, dst_memory, t.element_pointer(dst_memory, ty, str(d)))


def value_order(atom: CopyAtom, count: int) -> list[int]:
    """For each of a thread's `count` target values, the source value it receives: in order,
    unless the atom's layouts hand a group's values out in another order (as the interpreter
    does: target value w takes the source value that sits where the target layout puts w)."""
    if atom.src_layout is None or atom.dst_layout is None:
        return list(range(count))
    per = atom.values()
    assert per is not None and count % per == 0
    where = {int(o): v for v, o in enumerate(atom.src_layout.offsets())}
    group = [where[int(o)] for o in atom.dst_layout.offsets()]
    return [base + v for base in range(0, count, per) for v in group]


# ---- the ops ------------------------------------------------------------------------------

define(D.LoadOp, interpret=_interpret_load, analyze=load_rule, liveness=tag_liveness.load, shadow=_shadow_load,
       lower=_lower_load)
define(D.StoreOp, interpret=_interpret_store, analyze=store_rule, liveness=tag_liveness.write, shadow=_shadow_store,
       lower=_lower_store)
define(D.LoadAtOp, interpret=_interpret_load_at, analyze=load_rule, liveness=tag_liveness.load, shadow=_shadow_load,
       translate=_translate_load_at)
define(D.StoreAtOp, interpret=_interpret_store_at, analyze=store_rule, liveness=tag_liveness.write,
       shadow=_shadow_store, translate=_translate_store_at)
define(D.VarOp, interpret=_interpret_var, analyze=var_rule, liveness=tag_liveness.always, shadow=_shadow_var,
       translate=_translate_var)
define(D.VarLoadOp, interpret=_interpret_var_load, analyze=var_load_rule, liveness=tag_liveness.var_load,
       shadow=_shadow_var_load, translate=_translate_var_load)
define(D.VarStoreOp, interpret=_interpret_var_store, analyze=var_store_rule, liveness=tag_liveness.var_store,
       shadow=_shadow_var_store, translate=_translate_var_store)
define(D.CopyOp, interpret=_interpret_copy, analyze=copy_rule, liveness=tag_liveness.write, shadow=_shadow_copy,
       translate=_translate_copy, collective=lambda interp, op: interp.copy_atom(op).threads)
define(D.AtomicOp, interpret=_interpret_atomic, analyze=atomic_rule, liveness=tag_liveness.write,
       shadow=_shadow_atomic, translate=_translate_atomic, sync=True)
