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
from argus.verify.memory import NEVER, TagMemory
from argus.verify.results import Result, nothing_to_prove, proved, unknown, violated
from argus.verify.tags import BOTTOM, TOP, TagTable
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
    tile_coordinates,
)
from .interpreter import byte_indices as _byte_indices
from .interpreter import scalars as _scalar_array
from .tiles import fragment_bytes as _fragment_bytes
from ..ir.types import dtype_of_mlir
from ..ops import integers


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
        from ..check.tags import asserts_stores
        self.table.asserted = asserts_stores(kernel)
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
        self.store_functions: dict[Any, tuple[D.StoreTagsOp, TensorValue]] = {}
        """Per tensor buffer with asserted tags (`assert_tags`): what every store into it carries."""
        self.written_claims: dict[Any, tuple[D.AssertWrittenOp, TensorValue]] = {}
        """Per tensor buffer that the launch must write whole (`assert_written`): the claim and
        the tensor."""
        self.unchecked: list[str] = []
        """Updates of tensors with asserted tags that no assertion checks (atomics): a launch that
        made one proves nothing (`check_launch`)."""

    # ---- bookkeeping -----------------------------------------------------------------
    def launch(self, grid: Sequence[int], args: Sequence[Any], blocks: Sequence[tuple[int, int, int]] | None = None) -> None:
        """Run the launch; a claim that it writes a tensor argument whole (`assert_written`) holds
        of the launch wherever it stands, so one that no thread reaches (under a branch none takes)
        is held to it too."""
        params = list(self.kernel.body.block.args)
        names = [n.data for n in self.kernel.arg_names.data]
        for op in self.kernel.walk():
            if isinstance(op, D.AssertWrittenOp) and op.target in params and len(args) == len(params):
                at = params.index(op.target)
                if isinstance(args[at], np.ndarray):
                    tensor = TensorValue(names[at], args[at], op.target.type.dtype)
                    self.written_claims.setdefault(_buffer_key(tensor), (op, tensor))
        super().launch(grid, args, blocks)

    def unwritten(self) -> list[dict[str, Any]]:
        """After a launch, a finding per tensor it must write whole (`assert_written`) that it
        left in part as it was, naming the first element no thread wrote."""
        found = []
        for key, (op, tensor) in self.written_claims.items():
            memory = self.memories.get(key)
            array = tensor.array
            never = np.ones(array.nbytes, bool) if memory is None else memory.site[:array.nbytes] == NEVER
            if not never.any():
                continue
            left = never.reshape(-1, array.itemsize).any(axis=1)
            element = tuple(int(i) for i in np.unravel_index(int(np.flatnonzero(left)[0]), array.shape))
            found.append({"assertion": str(self.locations.get(op)), "kind": "unwritten-output",
                          "tensor": tensor.name, "element": element, "unwritten": int(left.sum()),
                          "message": f"the launch writes no value at {tensor.name}{list(element)} "
                                     f"({int(left.sum())} of its {left.size} elements are left as they were)"})
        return found

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
        coords = row_major(flat, root.array.shape)
        # a tensor's tag function gives every thread the same tags (the checker requires it)
        components = self.evaluate_tag_function(op, frame, coords, threads[:1])  # (1, bytes)
        rows = np.stack([c[0] for c in components], axis=-1) if components else np.zeros((flat.size, 0), np.int64)
        ids = self.table.rows_to_ids(rows, width)  # (bytes, width)
        self.table.note_format(ids, root.dtype.name)
        return ids[np.arange(flat.size), byte_indices.reshape(-1) % width].reshape(byte_indices.shape)  # type: ignore[no-any-return]

    def evaluate_tag_function(self, op: D.TagOp, frame: _Frame, coords: list[np.ndarray],
                              threads: np.ndarray) -> list[np.ndarray]:
        """The tag components of every element for every thread of `threads`: arrays (threads,
        elements), the elements' coordinates given per mode (`coords`)."""
        env: dict[SSAValue, np.ndarray] = {arg: c[None, :] for arg, c in zip(op.body.block.args, coords)}

        def value(v: SSAValue) -> np.ndarray:
            if v in env:
                return env[v]
            outer = frame.values.get(v)
            if outer is None:
                raise KernelFault("tag-function", "a tag function uses a value it cannot see", self.locations.get(op), {})
            return np.asarray(_scalar_array(frame, v))[threads][:, None].astype(np.int64)

        for inner in op.body.block.ops:
            if isinstance(inner, D.YieldTagOp):
                return [np.broadcast_to(value(v), (threads.size, coords[0].size if coords else 1)) for v in inner.values]
            if isinstance(inner, D.VarLoadOp):  # a variable assigned in a runtime loop or branch
                held, _ = frame.values[inner.var]
                env[inner.results[0]] = np.asarray(held)[threads][:, None].astype(np.int64)
                continue
            if isinstance(inner, D.INDEX_OPS):  # thread_idx.x and friends: the interpreter's own rule
                self.handlers[type(inner)](self, inner, frame, np.ones(frame.threads, bool))
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
                                  self.locations.get(op), {})
            # the checker's answer where the op is undefined (a tag function describes, it does not run)
            bits = integers.width_of(inner.results[0].type)
            env[inner.results[0]] = kind(value(inner.operands[0]), value(inner.operands[1]), bits).astype(np.int64)
        return []

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


def row_major(flat: np.ndarray, shape: Sequence[int]) -> list[np.ndarray]:
    """The coordinates of row-major element indices `flat` of a tensor of `shape` (the first
    not reduced: rows past the last stay rows)."""
    coords, rest = [], flat
    for n in reversed(shape[1:]):
        coords.append(rest % n)
        rest = rest // n
    return [rest, *reversed(coords)]


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


# ---- for op families (argus.dsl.ops): what their shadow rules may use ----
buffer_key = _buffer_key
width = _width


# ---- rules -----------------------------------------------------------------------------------


def _fragment_write(s: ShadowInterpreter, op: Operation, frame: _Frame, tile: TileValue, threads: np.ndarray,
                    tags: np.ndarray) -> None:
    idx = _fragment_bytes(tile, threads)
    memory = s.memory_tags(tile, frame)
    memory.write(idx.reshape(threads.size, -1), tags.reshape(threads.size, -1), threads, s.site(op))


fragment_write = _fragment_write
"""For op families (`argus.dsl.ops`): `tags` (threads, values, bytes) into the threads' fragment of `tile`."""


RULES: dict[type, Any] = {}
"""Each op kind's shadow-tag rule, run after its interpreter rule (`argus.dsl.ir.registry.define`
fills it); an op without one gives computed data (`ShadowInterpreter.computed`)."""


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
    shadow.findings += shadow.unwritten()
    preparation = getattr(compiled, "preparation", None) or Preparation(compiled.op, compiled.locations)
    claimless = preparation.claimless
    claim = (f"{kernel.name} states no tag assertion and has no product of tagged operands; its launch of grid "
             f"{dims} is checked" if claimless else f"the tag assertions of {kernel.name} hold on a launch of grid {dims}")
    if shadow.findings:
        return violated(claim, f"{len(shadow.findings)} finding(s)", *shadow.findings)
    if claimless:
        return nothing_to_prove(claim, "the launch ran with shadow tags and no fault")
    if shadow.unchecked:
        return unknown(claim, shadow.unchecked[0])
    return proved(claim, "checked for every thread at every assertion it reached (shadow tags)")
