"""Shadow tags: the interpreter running a launch with every byte's tag beside its value.

Tag functions set the tags of a tensor's or tile's elements; loads, stores, copies,
shuffles, views and bit rearrangements move them byte for byte; arithmetic results are ⊤
unless all their inputs are ⊥ (constants); a select takes the tags of the side it chose.
Each tag assertion is checked for every active thread at the point the program reaches it,
so a violation comes with the block, thread, loop indices, element and the line of the store
that put the wrong data there. This is how witnesses found by the static checker are
replayed, and how a kernel's assertions are tested on real launches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from argus.verify.assertions import check
from argus.verify.memory import TagMemory
from argus.verify.results import Result, nothing_to_prove, proved, violated
from argus.verify.tags import BOTTOM, TOP, TagTable, resize
from xdsl.dialects import arith, scf
from xdsl.ir import Operation, SSAValue

from ..ir import dialect as D
from ..check import Preparation
from ..errors import KernelFault, SourceLocation
from .interpreter import (
    Frame as _Frame,
    Interpreter,
    Memory,
    TensorValue,
    TileValue,
    shuffle_sources,
    tile_coordinates,
)
from .interpreter import byte_indices as _byte_indices
from .interpreter import element_offsets as _element_offsets
from .interpreter import scalars as _scalar_array
from .interpreter import value_of as _value
from .tiles import fragment_bytes as _fragment_bytes
from .tiles import redistribute as _redistribute
from .tiles import shared_operand_bytes as _shared_operand_bytes
from ..ops import integers
from ..ir.types import dtype_of_mlir


class Reached(Exception):
    """The finding a shadow run was told to stop at (`ShadowInterpreter.stop_at`) showed."""

    def __init__(self, finding: dict[str, Any]) -> None:
        super().__init__(finding.get("assertion"))
        self.finding = finding


class ShadowInterpreter(Interpreter):
    """An interpreter that also carries tags and checks tag assertions as it goes."""

    def __init__(self, kernel: D.KernelOp, locations: dict[Operation, SourceLocation] | None = None) -> None:
        super().__init__(kernel, locations)
        self.table = TagTable()
        self.tags: dict[SSAValue, np.ndarray] = {}
        self.memories: dict[Any, TagMemory] = {}
        self.sites: list[SourceLocation | None] = []
        self.site_ids: dict[Operation, int] = {}
        self.findings: list[dict[str, Any]] = []
        self.stop_at: Callable[[dict[str, Any]], bool] | None = None
        """A finding to stop at (`Reached` is raised): a replayed witness is done once it shows."""
        self.alive: list[Memory] = []
        self.tag_functions: dict[Any, tuple[D.TagOp, TensorValue]] = {}
        """Per tensor buffer, the tag function last applied to it and the tensor it was applied to."""

    # ---- bookkeeping -----------------------------------------------------------------
    def report(self, finding: dict[str, Any]) -> None:
        self.findings.append(finding)
        if self.stop_at is not None and self.stop_at(finding):
            raise Reached(finding)

    def run_op(self, op: Operation, frame: _Frame, mask: np.ndarray) -> None:
        super().run_op(op, frame, mask)
        rule = RULES.get(type(op))
        if rule is not None:
            rule(self, op, frame, mask)
        elif op.results:
            self.computed(op, frame)

    def barrier_passed(self, op: Operation, frame: _Frame, threads: np.ndarray) -> None:
        """A barrier every thread of a block met orders the writes before it (tag conflicts are
        between writes of one barrier interval)."""
        super().barrier_passed(op, frame, threads)
        if threads.size == frame.block_threads or threads.size == frame.threads:
            for memory in self.memories.values():
                if not memory.per_thread:
                    memory.barrier()

    def landed(self, op: Operation, frame: _Frame, tile: TileValue, target: np.ndarray, tensor: TensorValue,
               source: np.ndarray, issuer: int) -> None:
        """The tags of landed bytes are the tensor's, byte by byte (zero outside it)."""
        tags = self.memory_tags(tensor, frame).read(np.maximum(source, 0)[None], np.array([issuer]))
        tags = np.where(source[None] >= 0, tags, 0)
        self.memory_tags(tile, frame).write(target[None], tags, np.array([issuer]), self.site(op))

    def site(self, op: Operation) -> int:
        ident = self.site_ids.get(op)
        if ident is None:
            ident = self.site_ids[op] = len(self.sites)
            self.sites.append(self.locations.get(op))
        return ident

    def value_tags(self, frame: _Frame, ssa: SSAValue) -> np.ndarray:
        tags = self.tags.get(ssa)
        if tags is None:
            return np.zeros((frame.threads, _width(ssa)), np.int64)
        return tags

    def computed(self, op: Operation, frame: _Frame) -> None:
        """A computed value: ⊥ if every input is ⊥ (constants), ⊤ otherwise."""
        inputs = [self.value_tags(frame, v) for v in op.operands if not isinstance(v.type, (D.TileType, D.TensorType))]
        known = np.zeros(frame.threads, bool)
        for t in inputs:
            known |= (t != BOTTOM).any(axis=-1)
        for result in op.results:
            width = _width(result)
            self.tags[result] = np.where(known[:, None], TOP, BOTTOM).astype(np.int64) * np.ones((1, width), np.int64)

    def memory_tags(self, target: TensorValue | TileValue, frame: _Frame) -> TagMemory:
        if isinstance(target, TensorValue):
            key: Any = _buffer_key(target)
            nbytes = target.array.nbytes
            memory = self.memories.get(key)
            if memory is None:
                memory = self.memories[key] = TagMemory.shared(target.name, nbytes)
            return memory
        key = id(target.memory)
        memory = self.memories.get(key)
        if memory is None:
            data = target.memory.data
            memory = (TagMemory.registers(target.memory.name, *data.shape) if target.memory.space == "local"
                      else TagMemory.shared(target.memory.name, data.shape[0]))
            self.memories[key] = memory
            self.alive.append(target.memory)  # keeps the id from being reused by a later block's memory
        return memory

    def tags_past_the_end(self, tensor: TensorValue, byte_indices: np.ndarray, threads: np.ndarray,
                          frame: _Frame) -> np.ndarray:
        """Tags (rows, bytes) of bytes a protected load reads outside `tensor`'s buffer (as zero),
        one row per thread of `threads`: its tag function's, at the element each byte would
        belong to were the tensor longer — what the static checker takes them to be (zero data
        pairs with anything). ⊥ for a tensor without a tag function."""
        found = self.tag_functions.get(_buffer_key(tensor))
        if found is None:
            return np.zeros(byte_indices.shape, np.int64)
        op, root = found
        width = root.dtype.nbytes
        flat = byte_indices.reshape(-1) // width  # root elements, row-major; rows past the last allowed
        coords, rest = [], flat
        for n in reversed(root.array.shape[1:]):
            coords.append(rest % n)
            rest = rest // n
        coords = [rest, *reversed(coords)]
        # a tensor's tag function gives every thread the same tags (the checker requires it)
        components = _evaluate_tag_function(self, op, frame, coords, threads[:1])  # (1, bytes)
        rows = np.stack([c[0] for c in components], axis=-1) if components else np.zeros((flat.size, 0), np.int64)
        ids = self.table.rows_to_ids(rows, width)  # (bytes, width)
        return ids[np.arange(flat.size), byte_indices.reshape(-1) % width].reshape(byte_indices.shape)  # type: ignore[no-any-return]

    def element_bytes(self, target: TensorValue | TileValue, threads: np.ndarray) -> np.ndarray:
        """Byte indices (threads, elements, bytes) of every element of a tensor or tile."""
        nbytes = target.dtype.nbytes
        if isinstance(target, TensorValue):  # colexicographic, as a tile's values are numbered
            coords = np.unravel_index(np.arange(target.array.size), target.array.shape, order="F")
            flat = np.ravel_multi_index(coords, target.array.shape)
            return np.broadcast_to(_byte_indices(flat, nbytes)[None], (threads.size, flat.size, nbytes))
        return _fragment_bytes(target, threads)

    def coordinates(self, target: TensorValue | TileValue) -> list[np.ndarray]:
        """Per-mode coordinates of every element, in element order."""
        if isinstance(target, TensorValue):
            return list(np.unravel_index(np.arange(target.array.size), target.array.shape, order="F"))
        return tile_coordinates(target.layout)


def _buffer_key(tensor: TensorValue) -> tuple[str, int]:
    """A tensor's memory, whatever view of it an argument or a view op gives."""
    buffer = tensor.array
    while buffer.base is not None and isinstance(buffer.base, np.ndarray):
        buffer = buffer.base
    return ("global", buffer.__array_interface__["data"][0])


def _width(ssa: SSAValue) -> int:
    t = ssa.type
    if isinstance(t, D.VarType):
        return max(1, t.dtype.nbytes)
    try:
        return max(1, dtype_of_mlir(t).nbytes)
    except TypeError:
        return 1


# ---- rules -----------------------------------------------------------------------------------


def _accessed_bytes(s: ShadowInterpreter, op: Any, frame: _Frame, mask: np.ndarray, memory: Any) -> np.ndarray:
    """Byte indices (active threads, bytes) a load or store touches, by coordinates or offset."""
    if isinstance(op, (D.LoadOp, D.StoreOp)):
        coords = [_scalar_array(frame, c)[mask].astype(np.int64) for c in op.coords]
        offsets = _element_offsets(s, op, frame, memory, coords, mask)
    else:
        offsets = _scalar_array(frame, op.offset)[mask].astype(np.int64)
    return _byte_indices(offsets, memory.dtype.nbytes)


def _load(s: ShadowInterpreter, op: Any, frame: _Frame, mask: np.ndarray) -> None:
    source = _value(frame, op.source)
    threads = np.flatnonzero(mask)
    tags = np.zeros((frame.threads, source.dtype.nbytes), np.int64)
    tags[threads] = s.memory_tags(source, frame).read(_accessed_bytes(s, op, frame, mask, source), threads)
    s.tags[op.result] = tags


def _store(s: ShadowInterpreter, op: Any, frame: _Frame, mask: np.ndarray) -> None:
    target = _value(frame, op.target)
    threads = np.flatnonzero(mask)
    idx = _accessed_bytes(s, op, frame, mask, target)
    tags = resize(s.value_tags(frame, op.value)[threads], target.dtype.nbytes)
    s.memory_tags(target, frame).write(idx, tags, threads, s.site(op))


def _same_bytes(s: ShadowInterpreter, op: Any, frame: _Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = s.value_tags(frame, op.operands[0]).copy()


def _concat(s: ShadowInterpreter, op: D.ConcatOp, frame: _Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = np.concatenate([s.value_tags(frame, v) for v in op.values], axis=-1)


def _extract(s: ShadowInterpreter, op: D.ExtractOp, frame: _Frame, mask: np.ndarray) -> None:
    start = op.byte.data
    s.tags[op.result] = s.value_tags(frame, op.value)[:, start:start + _width(op.result)].copy()


def _byte_perm(s: ShadowInterpreter, op: D.BytePermOp, frame: _Frame, mask: np.ndarray) -> None:
    both = np.concatenate([s.value_tags(frame, op.a), s.value_tags(frame, op.b)], axis=-1)
    s.tags[op.result] = both[:, [i.data for i in op.selector.data]]


def _select(s: ShadowInterpreter, op: arith.SelectOp, frame: _Frame, mask: np.ndarray) -> None:
    cond = _scalar_array(frame, op.cond).astype(bool)[:, None]
    s.tags[op.result] = np.where(cond, s.value_tags(frame, op.lhs), s.value_tags(frame, op.rhs))


def _constant(s: ShadowInterpreter, op: Operation, frame: _Frame, mask: np.ndarray) -> None:
    s.tags[op.results[0]] = np.zeros((frame.threads, _width(op.results[0])), np.int64)


def _shuffle(s: ShadowInterpreter, op: D.ShuffleOp, frame: _Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = s.value_tags(frame, op.value)[shuffle_sources(s, op, frame)].copy()


def _var(s: ShadowInterpreter, op: D.VarOp, frame: _Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = np.zeros((frame.threads, _width(op.result)), np.int64)


def _var_store(s: ShadowInterpreter, op: D.VarStoreOp, frame: _Frame, mask: np.ndarray) -> None:
    slot = s.tags[op.var]
    slot[mask] = s.value_tags(frame, op.value)[mask]


def _var_load(s: ShadowInterpreter, op: D.VarLoadOp, frame: _Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = s.tags[op.var].copy()


def _fragment_write(s: ShadowInterpreter, op: Operation, frame: _Frame, tile: TileValue, threads: np.ndarray,
                    tags: np.ndarray) -> None:
    idx = _fragment_bytes(tile, threads)
    memory = s.memory_tags(tile, frame)
    memory.write(idx.reshape(threads.size, -1), tags.reshape(threads.size, -1), threads, s.site(op))


def _copy(s: ShadowInterpreter, op: D.CopyOp, frame: _Frame, mask: np.ndarray) -> None:
    source, target = _value(frame, op.source), _value(frame, op.target)
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    src_idx = _fragment_bytes(source, threads)
    tags = s.memory_tags(source, frame).read(src_idx.reshape(threads.size, -1), threads).reshape(src_idx.shape)
    atom = s.copy_atom(op)
    if atom.src_layout is not None:
        tags = _redistribute(tags, atom, threads.size)
    _fragment_write(s, op, frame, target, threads, tags)


def _mma(s: ShadowInterpreter, op: D.MmaOp, frame: _Frame, mask: np.ndarray) -> None:
    """The product's operands must pair up: wherever both carry concrete tags, A[m, k] and
    B[n, k] have equal tags for every m, n, k. The accumulator becomes ⊤ (computed data)."""
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    atom = s.atom(op)
    m, n, k = atom.shape
    a_tags = _atom_matrix(s, frame, _value(frame, op.a), threads, atom.threads, atom.a_layout, m, k)
    b_tags = _atom_matrix(s, frame, _value(frame, op.b), threads, atom.threads, atom.b_layout, n, k)
    first = a_tags[:, :1]  # every A[m, k] and B[n, k] the same tag as A[0, k]: all pairs hold (the usual case)
    uniform = bool((a_tags == first).all()) and bool((b_tags == first).all())
    wrong = None
    if not uniform:
        concrete_a = (a_tags > TOP).all(axis=-1)  # (groups, m, k)
        concrete_b = (b_tags > TOP).all(axis=-1)  # (groups, n, k)
        same = (a_tags[:, :, None] == b_tags[:, None]).all(axis=-1)  # (groups, m, n, k)
        wrong = concrete_a[:, :, None] & concrete_b[:, None] & ~same
    if wrong is not None and wrong.any():
        g, mi, ni, ki = (int(x) for x in np.argwhere(wrong)[0])
        first = int(threads[g * atom.threads])
        s.report({
            "assertion": f"{s.locations.get(op)} (operands of {atom.name} must pair up)", "kind": "violated",
            "block": frame.block_of(first), "thread": first, "threads": (first, first + atom.threads - 1),
            "loops": {(loop.body.block.args[0].name_hint or "i"): int(frame.values[loop.body.block.args[0]][first])
                      for loop in s.loops},
            "element": {"m": mi, "n": ni, "k": ki},
            "lhs tag": s.table.element_tag(a_tags[g, mi, ki]), "rhs tag": s.table.element_tag(b_tags[g, ni, ki]),
        })
    c = _value(frame, op.c)
    idx = _fragment_bytes(c, threads)
    _fragment_write(s, op, frame, c, threads, np.full(idx.shape, TOP, np.int64))


def _atom_matrix(s: ShadowInterpreter, frame: _Frame, tile: TileValue, threads: np.ndarray, group: int,
                 layout: Any, rows: int, cols: int) -> np.ndarray:
    """An operand's byte tags arranged as the atom's rows × cols tile, per group of threads."""
    if layout is None:  # read whole from a shared tile, colexicographically
        idx = _shared_operand_bytes(tile, threads[::group], rows * cols)
        tags = s.memory_tags(tile, frame).read(idx, threads[::group])
        return tags.reshape(idx.shape[0], cols, rows, tile.dtype.nbytes).transpose(0, 2, 1, 3)
    idx = _fragment_bytes(tile, threads)  # (threads, values, bytes)
    tags = s.memory_tags(tile, frame).read(idx.reshape(threads.size, -1), threads).reshape(idx.shape)
    groups, nbytes = threads.size // group, idx.shape[-1]
    ordered = tags.reshape(groups, group, -1, nbytes).transpose(0, 2, 1, 3).reshape(groups, -1, nbytes)
    matrix = np.zeros((groups, rows * cols, nbytes), np.int64)
    matrix[:, layout.offsets()] = ordered
    return matrix.reshape(groups, cols, rows, nbytes).transpose(0, 2, 1, 3)


def _atomic(s: ShadowInterpreter, op: D.AtomicOp, frame: _Frame, mask: np.ndarray) -> None:
    s.tags[op.result] = np.full((frame.threads, _width(op.result)), TOP, np.int64)


def _reset(s: ShadowInterpreter, op: D.ResetTagsOp, frame: _Frame, mask: np.ndarray) -> None:
    s.memory_tags(_value(frame, op.target), frame).reset()


def _tag(s: ShadowInterpreter, op: D.TagOp, frame: _Frame, mask: np.ndarray) -> None:
    target = _value(frame, op.target)
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    if isinstance(target, TensorValue):
        s.tag_functions[_buffer_key(target)] = (op, target)
    coords = s.coordinates(target)
    per_thread = isinstance(target, TileValue) and target.memory.space == "local"
    rows = threads if per_thread else threads[:1]  # shared data and tensors: one description, the first thread's
    components = _evaluate_tag_function(s, op, frame, coords, rows)  # list of (rows, elements)
    elements = coords[0].size if coords else 1
    nbytes = target.dtype.nbytes
    stacked = np.stack(components, axis=-1) if components else np.zeros((rows.size, elements, 0), np.int64)
    idx = s.element_bytes(target, rows)
    ids = s.table.rows_to_ids(stacked[:rows.size].reshape(-1, stacked.shape[-1]), nbytes).reshape(rows.size, -1, nbytes)
    memory = s.memory_tags(target, frame)
    if memory.per_thread:
        memory.write(idx.reshape(rows.size, -1), ids.reshape(rows.size, -1), rows, s.site(op))
    else:  # a tag function describes data: nothing is written, nothing races
        memory.relabel(idx.reshape(-1), ids.reshape(-1), s.site(op))


def _evaluate_tag_function(s: ShadowInterpreter, op: D.TagOp, frame: _Frame, coords: list[np.ndarray],
                           threads: np.ndarray) -> list[np.ndarray]:
    """The tag components of every element for every thread: arrays (threads, elements)."""
    env: dict[SSAValue, np.ndarray] = {arg: c[None, :] for arg, c in zip(op.body.block.args, coords)}

    def value(v: SSAValue) -> np.ndarray:
        if v in env:
            return env[v]
        outer = frame.values.get(v)
        if outer is None:
            raise KernelFault("tag-function", "a tag function uses a value it cannot see", s.locations.get(op), {})
        return np.asarray(_scalar_array(frame, v))[threads][:, None].astype(np.int64)

    for inner in op.body.block.ops:
        if isinstance(inner, D.YieldTagOp):
            return [np.broadcast_to(value(v), (threads.size, coords[0].size if coords else 1)) for v in inner.values]
        if isinstance(inner, D.VarLoadOp):  # a variable assigned in a runtime loop or branch
            held, _ = frame.values[inner.var]
            env[inner.results[0]] = np.asarray(held)[threads][:, None].astype(np.int64)
            continue
        if isinstance(inner, D.INDEX_OPS):  # thread_idx.x and friends: the interpreter's own rule
            s.handlers[type(inner)](s, inner, frame, np.ones(frame.threads, bool))
            env[inner.results[0]] = np.asarray(_scalar_array(frame, inner.results[0]))[threads][:, None].astype(np.int64)
            continue
        if isinstance(inner, arith.ConstantOp):
            env[inner.result] = np.asarray(inner.value.value.data, dtype=np.int64).reshape(1, 1)  # type: ignore[union-attr]
            continue
        if isinstance(inner, arith.CmpiOp):
            bits = integers.width_of(inner.lhs.type)
            env[inner.result] = integers.compare(inner.predicate.value.data, value(inner.lhs), value(inner.rhs),
                                                 bits).astype(np.int64)
            continue
        if isinstance(inner, arith.SelectOp):
            c, a, b = (value(v) for v in inner.operands)
            env[inner.result] = np.where(c != 0, a, b).astype(np.int64)
            continue
        kind = integers.INTEGER_OPS.get(type(inner))
        if kind is None:
            raise KernelFault("tag-function", f"tag functions use integer arithmetic; {inner.name} is not supported",
                              s.locations.get(op), {})
        # the checker's answer where the op is undefined (a tag function describes, it does not run)
        bits = integers.width_of(inner.results[0].type)
        env[inner.results[0]] = kind(value(inner.operands[0]), value(inner.operands[1]), bits).astype(np.int64)
    return []


def _assert(s: ShadowInterpreter, op: D.TagAssertOp, frame: _Frame, mask: np.ndarray) -> None:
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    lhs_target, rhs_target = _value(frame, op.lhs), _value(frame, op.rhs)
    sides = []
    for target in (lhs_target, rhs_target):
        idx = s.element_bytes(target, threads)
        memory = s.memory_tags(target, frame)
        tags = memory.read(idx.reshape(threads.size, -1), threads).reshape(idx.shape)
        sites = (memory.site[threads[:, None], idx.reshape(threads.size, -1)] if memory.per_thread
                 else memory.site[idx.reshape(threads.size, -1)]).reshape(idx.shape)
        sides.append((target, tags, sites))
    (_, lhs, lhs_sites), (_, rhs, rhs_sites) = sides
    where = s.locations.get(op)
    if lhs.shape != rhs.shape:
        s.report({"assertion": str(where), "kind": "shapes differ",
                           "lhs elements": lhs.shape[1:], "rhs elements": rhs.shape[1:]})
        return
    for f in check(lhs, rhs, equal=op.kind.data == "eq", limit=4):
        thread = int(threads[f.point])
        element = tuple(int(c[f.element]) for c in s.coordinates(lhs_target))
        witness = {
            "assertion": str(where), "kind": f.kind, "block": frame.block_of(thread), "thread": thread,
            "loops": {(loop.body.block.args[0].name_hint or "i"): int(frame.values[loop.body.block.args[0]][thread])
                      for loop in s.loops},
            "element": element,
            "lhs tag": s.table.element_tag(f.lhs), "rhs tag": s.table.element_tag(f.rhs),
            "lhs written at": _site_text(s, lhs_sites[f.point, f.element]),
            "rhs written at": _site_text(s, rhs_sites[f.point, f.element]),
        }
        if op.message.data:
            witness["message"] = op.message.data
        s.report(witness)


def _site_text(s: ShadowInterpreter, sites: np.ndarray) -> str:
    known = [int(x) for x in np.ravel(sites) if x >= 0]
    if not known:
        return "never written"
    loc = s.sites[known[0]]
    return str(loc) if loc is not None else "an op without a source line"


RULES: dict[type, Any] = {
    D.LoadOp: _load, D.LoadAtOp: _load, D.StoreOp: _store, D.StoreAtOp: _store,
    D.BitcastOp: _same_bytes, D.ConcatOp: _concat, D.ExtractOp: _extract, D.BytePermOp: _byte_perm,
    arith.SelectOp: _select, arith.ConstantOp: _constant, D.ShuffleOp: _shuffle,
    D.VarOp: _var, D.VarStoreOp: _var_store, D.VarLoadOp: _var_load,
    D.CopyOp: _copy, D.MmaOp: _mma, D.AtomicOp: _atomic,
    D.ResetTagsOp: _reset, D.TagOp: _tag, D.TagAssertOp: _assert,
    D.MakeSharedOp: lambda *a: None, D.MakeLocalOp: lambda *a: None, D.ViewOp: lambda *a: None,
    D.SliceOp: lambda *a: None, D.PartitionOp: lambda *a: None, D.TensorViewOp: lambda *a: None,
}


def check_launch(kernel: Any, grid: Sequence[int] | int, *args: Any, **constants: Any) -> Result:
    """Run one launch with shadow tags; every tag assertion must hold for every thread that
    reaches it. Returns `proved` (for this launch) or `violated` with witnesses; for a kernel
    that makes no claim (`Preparation.claimless`), `nothing to prove` when nothing was found, as
    `verify_kernel` says of it."""
    dims = tuple(grid) if isinstance(grid, (tuple, list)) else (grid,)
    params = list(kernel.signature.parameters)
    constexprs = kernel.constexpr_names
    given = dict(zip(params, args)) | constants
    compiled = kernel.specialize(**{n: given[n] for n in constexprs})
    runtime = [given[p] for p in params if p not in constexprs]
    shadow = ShadowInterpreter(compiled.op, compiled.locations)
    shadow.launch(dims, runtime)
    preparation = getattr(compiled, "preparation", None) or Preparation(compiled.op, compiled.locations)
    claimless = preparation.claimless
    claim = (f"{kernel.name} states no tag assertion and has no product of tagged operands; its launch of grid "
             f"{dims} is checked" if claimless else f"the tag assertions of {kernel.name} hold on a launch of grid {dims}")
    if shadow.findings:
        return violated(claim, f"{len(shadow.findings)} finding(s)", *shadow.findings)
    if claimless:
        return nothing_to_prove(claim, "the launch ran with shadow tags and no fault")
    return proved(claim, "checked for every thread at every assertion it reached (shadow tags)")
