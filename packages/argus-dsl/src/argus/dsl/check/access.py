"""Tile and memory-access rules: allocations, views, partitions, loads, stores (to tiles and to
global tensors), atomics, byte moves between values (bitcasts, concatenations, shuffles),
variables, and copies between tiles through a copy atom. Each access checks what it reads was
written and, for global tensors, that it stays in bounds (`TagAnalysis.in_bounds`).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np
from argus.verify import reductions
from argus.verify.affine import Affine
from argus.verify.byte_moves import concatenated, copied, extracted, permuted
from argus.verify.memory import TagMemory
from argus.verify.tags import TOP, resize

from ..atoms import CopyAtom
from ..machine.interpreter import TileValue, segment_stride
from ..ir import dialect as D
from ..ir.layout_texts import layout_from_text, unswizzled
from ..machine.tiles import fragment_bytes as tile_fragment_bytes, offset_table, redistribute
from .copies import TileCopies, moved_tile
from .product_reads import InFlight, OperandMemory
from .initialization import all_written
from .reports import check_written, space_name
from .arithmetic import float_constant
from .run_plan import float_nonfinite, float_zero
from .shared_reads import SharedMemory
from .state import GlobalRef, Slot, Undecidable, byte_width, is_int

if TYPE_CHECKING:
    from typing import Any
    from argus.verify.affine import Space
    from argus.verify.tags import TagTable
    from xdsl.ir import SSAValue
    from ..dtypes import DType
    from .analysis import TagAnalysis


def alloc_rule(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    layout, dtype, footprint, shared = a.preparation.read(op, _allocation)
    name = f"{'shared' if shared else 'local'} {op.result.name_hint or len(a.memories)}"
    if not shared:
        memory = TagMemory.registers(name, a.n, footprint)
        a.values[op.result] = TileValue(memory, layout, dtype)  # type: ignore[arg-type]
        a.memories.append(memory)
        return
    clustered = a.blocks > 1  # a cluster: one segment per block, each block's threads in theirs
    stride = segment_stride(footprint) if clustered else footprint
    if op in a.preparation.product_operands:  # with the groups whose products read it: a memory of their own
        memory = OperandMemory.operands(name, stride * a.blocks)
        a.memories.append(memory.readers)  # type: ignore[arg-type]
        groups = a.preparation.asynchronous_operands.get(op)
        if groups:  # and the asynchronous products still running that read it
            if len(groups) > 1:
                raise a.undecidable(op, "products started with matmul_async in groups of different sizes read this "
                                        "tile; the checker follows one size per tile")
            group, = groups
            memory.pending = InFlight.of(name, -(-a.threads // group) * group, group, stride * a.blocks)  # type: ignore[attr-defined]
            a.memories.append(memory.pending)  # type: ignore[attr-defined]
            a.in_flight.append(memory.pending)  # type: ignore[attr-defined]
    else:
        memory = SharedMemory.of(name, stride * a.blocks)
    a.memories.append(memory.reads)  # type: ignore[arg-type]  # (the threads that read it: `shared_reads`)
    a.values[op.result] = TileValue(memory, layout, dtype,  # type: ignore[arg-type]
                                    segment=a.ranks * stride if clustered else None)
    a.memories.append(memory)


def _allocation(op: Any) -> tuple[Any, DType, int, bool]:
    """A tile allocation's layout, element type, size in bytes and whether it is shared."""
    t: D.TileType = op.result.type
    footprint = t.footprint * t.dtype.nbytes
    return t.layout, t.dtype, footprint, isinstance(op, D.MakeSharedOp)


def view_rule(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    operands, results = a.shape(op)
    source: TileValue = a.values[operands[0]]
    start = a.values.get(operands[1]) if len(operands) > 1 else None
    memo = a.memo.get(op)
    if memo is not None and memo[0] is source and memo[2] is start:  # one object per view: accesses through it are remembered
        a.values[results[0]] = memo[1]
        return
    layout, dtype, slice_ = a.preparation.read(op, _view_type)
    if start is not None:  # a sub-tile of a static loop kept rolled, where its copy's index says
        view = _moved_sub_tiles(a, op, source, start, layout, dtype)
        a.values[results[0]] = view
        a.memo[op] = (source, view, start)
        return
    view = source.map(lambda tile: tile.derived(layout, dtype, tile.base if slice_ else None)) \
        if isinstance(source, TileCopies) else source.derived(layout, dtype, source.base if slice_ else None)
    a.values[results[0]] = view
    a.memo[op] = (source, view, None)


def _moved_sub_tiles(a: TagAnalysis, op: Any, source: Any, start: Affine, layout: Any, dtype: DType) -> Any:
    """The sub-tile each copy's index picks (one per copy when copies run together): the tile
    the unrolled code names, its offset in its layout."""
    starts = a.concrete_offsets(op, start, "sub-tile start")
    threads = a.footprint.threads if a.footprint is not None else a.n
    per_copy = starts.reshape(-1, threads)
    if (per_copy != per_copy[:, :1]).any():
        raise a.undecidable(op, "the threads of a block disagree on where a sub-tile starts")
    if len(per_copy) > 1 and not isinstance(source, TileCopies) and unswizzled(layout):
        # no swizzle after the start: each copy's offsets are the first's moved by its start
        return TileCopies(moved=(source.derived(layout, dtype, source.base), per_copy[:, 0]))
    sources = source.tiles if isinstance(source, TileCopies) else (source,) * len(per_copy)
    tiles = tuple(moved_tile(tile.derived(layout, dtype, tile.base), int(s))
                  for tile, s in zip(sources, per_copy[:, 0]))
    return tiles[0] if len(tiles) == 1 else TileCopies(tiles)


def _view_type(op: Any) -> tuple[Any, DType, bool]:
    t: D.TileType = op.result.type
    return t.layout, t.dtype, isinstance(op, D.SliceOp)


def partition_rule(a: TagAnalysis, op: D.PartitionOp, mask: np.ndarray) -> None:
    source: TileValue = a.values[op.source]
    t: D.TileType = op.result.type  # type: ignore[assignment]
    table = offset_table(layout_from_text(op.selector.data))[0]
    index = a.concrete_offsets(op, a.int_value(op.index, op), "partition index")
    bad = mask & ((index < 0) | (index >= table.size))
    if bad.any():  # the first offender is reported (as the interpreter faults); the others read inside, as clipped
        point = int(np.flatnonzero(bad)[0])
        a.out_of_bounds(op, point, int(index[point]), f"a tile of {table.size} parts")
    base = table[np.clip(index, 0, table.size - 1)]
    if source.base is not None:
        base = base + source.base
    a.values[op.result] = source.derived(t.layout, t.dtype, base)


def tensor_view_rule(a: TagAnalysis, op: D.TensorViewOp, mask: np.ndarray) -> None:
    source: GlobalRef = a.values[op.source]
    t: D.TensorType = op.result.type  # type: ignore[assignment]
    runtime = iter(op.dims)
    dims = [a.space.constant(d, a.n) if isinstance(d, int) else a.int_value(next(runtime), op) for d in t.shape]
    a.values[op.result] = GlobalRef(source.name, t.dtype, dims, source.root or source)


def _access(a: TagAnalysis, op: Any) -> tuple[SSAValue, tuple[SSAValue, ...] | None, SSAValue | None, Any]:
    """(memory operand, coordinate operands, offset operand, the other operand or result) of a
    load or store, read from the IR once."""
    parts = a.op_parts.get(op)
    if parts is None:  # by position (the ops' operand order), which is cheaper than the named accessors
        operands, results = a.shape(op)
        kind = type(op)
        if kind is D.LoadOp:
            parts = (operands[0], operands[1:], None, results[0])
        elif kind is D.StoreOp:
            parts = (operands[1], operands[2:], None, operands[0])
        elif kind is D.LoadAtOp:
            parts = (operands[0], None, operands[1], results[0])
        else:
            parts = (operands[1], None, operands[2], operands[0])
        a.op_parts[op] = parts
    return parts


def load_rule(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    source_ssa, coord_ssa, offset_ssa, result = _access(a, op)
    source = a.values[source_ssa]
    a.values[result] = a.space.opaque(f"load at {a.where(op)}", a.n) if is_int(result) else None
    if isinstance(source, GlobalRef):
        if coord_ssa is None:
            raise a.undecidable(op, "the checker reads global tensors by coordinates (before layout lowering)")
        a.tags[result] = a.global_tags(op, source, [a.int_value(c, op) for c in coord_ssa], mask)
        return
    tile: TileValue = source
    # a read of registers whose value no check needs: only whether its bytes were written (not
    # their tags, which a loop would then carry), and once every byte is, only its coordinates
    written_only = id(op) in a.preparation.written_only
    if written_only and (not a.checking or all_written(tile, a.footprint)):
        if id(op) not in a.preparation.traced_accesses:
            tile_bounds_rule(a, op, mask)
        return
    idx = a.tile_bytes(op, tile, None if coord_ssa is None else [a.int_value(c, op) for c in coord_ssa],
                       None if offset_ssa is None else a.int_value(offset_ssa, op), mask)
    active = a.active(mask)
    threads = a.thread_of(active)
    if written_only:
        check_written(a, op, tile.memory, idx, threads, active, None, "reads local bytes that no thread has written")
        return
    read, _ = a.read_tags(tile.memory, idx, threads, active)  # type: ignore[arg-type]
    a.check_read(op, tile.memory, idx, threads)  # type: ignore[arg-type]
    memory: TagMemory = tile.memory  # type: ignore[assignment]
    check_written(a, op, memory, idx, threads, active, read, f"reads {space_name(memory)} bytes that no thread has written")
    if active is a.tid:
        a.tags[result] = read
        return
    tags = np.zeros((a.n, tile.dtype.nbytes), np.int64)
    tags[active] = read
    a.tags[result] = tags


def store_rule(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    target_ssa, coord_ssa, offset_ssa, value = _access(a, op)
    target = a.values[target_ssa]
    if isinstance(target, GlobalRef):
        if coord_ssa is not None:
            a.in_bounds(op, target, [a.int_value(c, op) for c in coord_ssa], mask)
        name = (target.root or target).name
        if name in a.read_globals:
            raise a.undecidable(op, f"the kernel writes tensor {name!r}, which it also reads; the checker takes "
                                    "global tensors as read-only or write-only")
        a.written_globals.add(name)
        if name in a.store_functions:
            from .tags import stored_rule
            if coord_ssa is None:
                raise a.undecidable(op, f"the checker checks what is stored into {name!r} (assert_tags) at stores "
                                        "by coordinates (before layout lowering)")
            stored_rule(a, op, target, [a.int_value(c, op) for c in coord_ssa], a.tags_of(value), mask)
        return
    tile: TileValue = target
    idx = a.tile_bytes(op, tile, None if coord_ssa is None else [a.int_value(c, op) for c in coord_ssa],
                       None if offset_ssa is None else a.int_value(offset_ssa, op), mask)
    active = a.active(mask)
    threads = a.thread_of(active)
    tags = cleared(a.table, value, resize(a.tags_of(value), tile.dtype.nbytes, a.table), tile.memory.per_thread)
    a.check_overwrite(op, tile.memory, idx, threads)  # type: ignore[arg-type]
    a.write_tags(tile.memory, idx, tags if active is a.tid else tags[active], threads, active, a.site(op))  # type: ignore[arg-type]


def cleared(table: TagTable, value: SSAValue, tags: np.ndarray, per_thread: bool, variable: bool = False
            ) -> np.ndarray:
    """The tags a store of `value` (with tags `tags`) writes: a float zero stored into registers
    after an ``assert_tags`` carries `argus.verify.products.ZERO` (an accumulator cleared,
    which a product or a row sum starts from), ``-inf`` stored into a `variable`
    `argus.verify.reductions.START_MAX` (what a row maximum starts from), another NaN or
    infinity `MAYBE_ZERO` (no product starts from it, and none survives a scale by it:
    ``acc * r`` with ``r = float("nan")`` is no number); every other value its own tags."""
    if variable and table.asserted and float_constant(value) == float("-inf"):
        return np.broadcast_to(reductions.start_bytes(table, tags.shape[-1]), tags.shape).copy()
    if not per_thread or not table.asserted:
        return tags
    if float_zero(value):
        return np.broadcast_to(table.products.zero_bytes(tags.shape[-1]), tags.shape).copy()
    if float_nonfinite(value):
        return np.broadcast_to(table.products.maybe_zero_element(tags.shape[-1]), tags.shape).copy()
    return tags


def tile_bounds_rule(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    """A load or store whose data no check needs: an out-of-bounds finding if a thread's
    coordinates fall outside the tile. Coordinates computed from runtime values or data are
    left to the interpreter (the checker enumerates register and shared addresses only where
    an access matters)."""
    memory_ssa, coord_ssa, offset_ssa, _ = _access(a, op)
    coords = None if coord_ssa is None else [a.int_value(c, op) for c in coord_ssa]
    offset = None if offset_ssa is None else a.int_value(offset_ssa, op)
    if all(v.concrete for v in [*(coords or ()), *(() if offset is None else (offset,))]):
        a.tile_bytes(op, a.values[memory_ssa], coords, offset, mask)


def atomic_rule(a: TagAnalysis, op: D.AtomicOp, mask: np.ndarray) -> None:
    target = a.values[op.target]
    if isinstance(target, GlobalRef):
        name = (target.root or target).name
        if name in a.store_functions:
            raise a.undecidable(op, f"an atomic into {name!r}, whose stored tags are asserted (assert_tags); the "
                                    "checker checks those at plain stores only")
        if name in a.read_globals:
            raise a.undecidable(op, f"the kernel writes tensor {name!r}, which it also reads; the checker takes "
                                    "global tensors as read-only or write-only")
        a.written_globals.add(name)
    else:
        active = np.flatnonzero(mask)
        idx = a.tile_bytes(op, target, [a.int_value(c, op) for c in op.coords], None, mask)
        a.check_overwrite(op, target.memory, idx, active)
        target.memory.write(idx, np.full(idx.shape, TOP, np.int64), active, a.site(op))
    a.values[op.result] = a.space.opaque(f"atomic at {a.where(op)}", a.n) if is_int(op.result) else None
    a.tags[op.result] = np.full((a.n, byte_width(op.result)), TOP, np.int64)


def same_bytes_rule(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    a.values[op.result] = None
    a.tags[op.result] = a.tags_of(a.shape(op)[0][0]).copy()


def concat_rule(a: TagAnalysis, op: D.ConcatOp, mask: np.ndarray) -> None:
    a.values[op.result] = None
    a.tags[op.result] = concatenated([a.tags_of(v) for v in a.shape(op)[0]])


def extract_rule(a: TagAnalysis, op: D.ExtractOp, mask: np.ndarray) -> None:
    a.values[op.result] = None
    a.tags[op.result] = extracted(a.tags_of(a.shape(op)[0][0]), op.byte.data, byte_width(op.result))


def byte_perm_rule(a: TagAnalysis, op: D.BytePermOp, mask: np.ndarray) -> None:
    a.values[op.result] = None
    a.tags[op.result] = permuted([a.tags_of(v) for v in a.shape(op)[0]], [i.data for i in op.selector.data])


def shuffle_rule(a: TagAnalysis, op: D.ShuffleOp, mask: np.ndarray) -> None:
    w = a.warp
    lane_value = a.concrete_offsets(op, a.int_value(op.lane, op), "shuffle lane")
    t = a.tid
    lane = a.local_ids % w
    base = t - lane
    last = t - a.local_ids + a.block_threads - 1  # the block's last thread
    src = {"xor": lane ^ lane_value, "idx": lane_value, "down": lane + lane_value, "up": lane - lane_value}[op.mode.data]
    outside = (src < 0) | (src >= w)
    source = np.minimum(np.where(outside, t, base + np.clip(src, 0, w - 1)), last)
    value = a.values.get(op.value)
    a.values[op.result] = value.take(source) if isinstance(value, Affine) else None
    a.tags[op.result] = a.tags_of(op.value)[source].copy()


def var_rule(a: TagAnalysis, op: D.VarOp, mask: np.ndarray) -> None:
    slot = Slot(None, np.zeros((a.n, byte_width(op.result)), np.int64))
    slot.assigned = TagMemory.registers(f"variable {len(a.slots)}", a.n, 1)
    a.slots.append(slot)
    a.memories.append(slot.assigned)  # (joined, saved and restored with the registers)
    a.values[op.result] = slot


def var_store_rule(a: TagAnalysis, op: D.VarStoreOp, mask: np.ndarray) -> None:
    slot: Slot = a.values[op.var]
    full = mask is a.everyone or bool(mask.all())
    threads = a.active(mask)
    byte = np.zeros((threads.size, 1), np.int64)
    a.write_tags(slot.assigned, byte, byte, threads, threads, a.site(op))  # type: ignore[arg-type]
    tags = cleared(a.table, op.value, a.tags_of(op.value), True, variable=True)  # (a variable is a register too)
    if full:
        slot.stored = slot.stored or slot.tracked
        slot.tags = tags  # tag arrays of values are never changed in place
    else:
        slot.tags = slot.tags.copy()
        slot.tags[mask] = tags[mask]
    new = a.values.get(op.value)
    if not isinstance(new, Affine) or (not full and slot.value is None):
        slot.value = None  # unknown for the threads the store leaves out
    elif full:
        slot.value = new
    else:
        slot.value = _masked(a.space, mask, new, slot.value)


def _masked(sp: Space, mask: np.ndarray, new: Affine, old: Affine | None) -> Affine:
    if old is None:
        return new
    pick = mask
    terms = {t: np.where(pick, new.terms.get(t, 0), old.terms.get(t, 0)) for t in set(new.terms) | set(old.terms)}
    return Affine(np.where(pick, new.const, old.const), {t: v for t, v in terms.items() if v.any()})


def var_load_rule(a: TagAnalysis, op: D.VarLoadOp, mask: np.ndarray) -> None:
    slot: Slot = a.values[op.var]
    if slot.tracked and not slot.stored:
        slot.exposed = True
    threads = a.active(mask)
    byte = np.zeros((threads.size, 1), np.int64)
    check_written(a, op, slot.assigned, byte, threads, threads, None,  # type: ignore[arg-type]
                   "reads a variable before it is assigned")
    a.values[op.result] = slot.value if is_int(op.result) else None
    a.tags[op.result] = slot.tags


def copy_rule(a: TagAnalysis, op: D.CopyOp, mask: np.ndarray) -> None:
    source, target = a.values[op.source], a.values[op.target]
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    atom = atom_of_op(a, op, CopyAtom)
    if atom.src_layout is not None and threads.size % atom.threads:
        raise a.undecidable(op, f"{atom.name} needs whole groups of {atom.threads} threads")
    src_idx = fragment_bytes(a, source, threads)
    tags = source.memory.read(src_idx.reshape(threads.size, -1), threads).reshape(src_idx.shape)
    a.check_read(op, source.memory, src_idx, threads)
    check_written(a, op, source.memory, src_idx.reshape(threads.size, -1), threads, threads, tags,
                   f"copies from {space_name(source.memory)} bytes that no thread has written")
    origin = source_bytes(source.memory, src_idx, threads)
    if atom.src_layout is not None:
        tags, origin = redistribute(tags, atom, threads.size), redistribute(origin, atom, threads.size)
    tags = copied(tags, origin)
    dst_idx = fragment_bytes(a, target, threads)
    a.check_overwrite(op, target.memory, dst_idx, threads)
    target.memory.write(dst_idx.reshape(threads.size, -1), tags.reshape(threads.size, -1), threads, a.site(op))


def source_bytes(memory: TagMemory, idx: np.ndarray, threads: np.ndarray) -> np.ndarray:
    """Each byte a copy reads (`idx`: threads, ...), as an index over its whole memory (a thread's
    registers apart from another's): where bytes were consecutive (`byte_moves.copied`)."""
    if not memory.per_thread:
        return idx
    return idx + (threads * memory.tags.shape[1]).reshape((-1,) + (1,) * (idx.ndim - 1))  # type: ignore[no-any-return]


def atom_of_op(a: TagAnalysis, op: Any, kind: Any) -> Any:
    atoms = a.preparation.atoms
    atom = atoms.get(op)
    if atom is None:
        atom = atoms[op] = _atom_of(kind, op.atom)
    return atom


@cache
def _atom_of(kind: Any, properties: Any) -> Any:
    """An atom rebuilt from its properties once per process (ops of one kernel share them)."""
    return kind.from_properties({k: v.data for k, v in properties.data.items()})


def fragment_bytes(a: TagAnalysis, tile: TileValue, threads: np.ndarray, inside: bool = True) -> np.ndarray:
    """Byte indices of each thread's fragment, which must lie inside the tile's memory (unless
    not `inside`: a tile other tiles are moved from, which they check) (remembered per tile: a
    tile value and its threads give the same bytes on every pass)."""
    key = threads.tobytes()
    memo = a.fragment_memo.get(id(tile))
    if memo is not None and memo[0] is tile and memo[1] == key:
        return memo[2]
    size = tile.memory.tags.shape[-1]  # type: ignore[attr-defined]
    # the same layout, base, segment and threads give the same bytes in every check of the kernel
    shape = (id(tile.layout), tile.dtype.nbytes, size, key, None if tile.base is None else tile.base.tobytes(),
             None if tile.segment is None else tile.segment.tobytes(), inside)
    idx = a.preparation.fragments.get(shape)
    if idx is None:
        idx = tile_fragment_bytes(tile, threads)
        if inside and idx.size and (idx.min() < 0 or idx.max() >= size):
            raise Undecidable(f"a fragment reaches outside its {size}-byte tile (the interpreter reports where)", None)
        idx.flags.writeable = False
        a.preparation.fragments[shape] = idx
    a.fragment_memo[id(tile)] = (tile, key, idx)
    return idx
