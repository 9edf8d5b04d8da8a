"""Tags and assertions: tag functions attached to tiles and tensors, resets, `assume`, the block
barrier, and `tag_assert` (the claims the checker proves: each becomes an obligation over the
launch's symbols).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from argus.verify.affine import Affine, Uniform, uniform, unique_rows
from argus.verify.tags import BOTTOM, resize

from ..errors import VerificationError
from ..machine.interpreter import tile_coordinates
from ..ir import dialect as D
from .access import fragment_bytes
from .copies import CannotBatch, TileCopies
from .findings import compare
from .initialization import written
from .products import memory_of, point_fragments
from .reports import describer
from .state import GlobalRef, Slot

if TYPE_CHECKING:
    from typing import Any
    from argus.verify.affine import Key
    from argus.verify.memory import TagMemory
    from xdsl.ir import Operation, SSAValue
    from ..machine.interpreter import TileValue
    from .analysis import TagAnalysis


def assume_rule(a: TagAnalysis, op: D.AssumeOp, mask: np.ndarray) -> None:
    """A declared fact: outside symbolic branches, it joins the domain (a condition is 0 or 1);
    inside a runtime loop, the domain of what is inside the loop."""
    if a.guards:
        return
    cond = a.int_value(op.cond, op)
    for row in _distinct_rows(cond, a.active(mask)):
        fact = ("eq0", (row[0] - 1, row[1])) if row[1] else ("ge0", (row[0] - 1, ()))
        a.add_fact(fact)
        a.assumed.setdefault(fact, op)


def _distinct_rows(value: Affine, points: np.ndarray) -> list[Key]:
    """The distinct forms `value` takes at `points` (one, when every point agrees)."""
    if type(value) is Uniform:
        return [value.key] if points.size else []
    atoms = sorted(value.terms)
    columns = np.stack([value.const, *(value.terms[t] for t in atoms)], axis=1)[points]
    return [(row[0], tuple((t, c) for t, c in zip(atoms, row[1:]) if c))
            for row in unique_rows(columns)[0].tolist()]


def sync_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """A barrier orders the shared accesses before it; one that only some of the block's threads
    reach (under a branch on the thread index) orders nothing: the interpreter faults on it,
    and the accesses around it stay checked against each other."""
    if not mask.all():
        return
    for m in a.memories:
        if not m.per_thread:
            m.barrier()


def assert_written_rule(a: TagAnalysis, op: D.AssertWrittenOp, mask: np.ndarray) -> None:
    """Whether every element of a tensor is written is not the walk's to decide: the verdict runs
    a launch and reads what it left unwritten (`verification`)."""


def reset_rule(a: TagAnalysis, op: D.ResetTagsOp, mask: np.ndarray) -> None:
    memory = a.values[op.target].memory
    coded = a.initialization.saved(memory)
    memory.reset()
    a.initialization.restore(memory, coded)  # (bytes written on some paths only stay so)


def tag_rule(a: TagAnalysis, op: D.TagOp, mask: np.ndarray) -> None:
    target = a.values[op.target]
    if isinstance(target, GlobalRef):
        a.tag_functions[(target.root or target).name] = _tensor_function(a, op, target)
        return
    _tile_tags(a, op, target, mask)


def store_tags_rule(a: TagAnalysis, op: D.StoreTagsOp, mask: np.ndarray) -> None:
    """`assert_tags(t, fn)`: what every later store into tensor t must carry (`stored_rule`)."""
    target = a.values[op.target]
    a.store_functions[(target.root or target).name] = _tensor_function(a, op, target)


_ASSERTING: dict[int, tuple[D.KernelOp, bool]] = {}


def asserts_stores(kernel: D.KernelOp) -> bool:
    """Whether the kernel asserts what stores into some tensor carry (``assert_tags``): then a
    float zero stored into registers is a cleared accumulator (`argus.verify.products.ZERO`)
    from the kernel's start, wherever the assertion stands. Remembered per kernel."""
    found = _ASSERTING.get(id(kernel))
    if found is None or found[0] is not kernel:
        found = _ASSERTING[id(kernel)] = (kernel, any(isinstance(op, D.StoreTagsOp) for op in kernel.walk()))
    return found[1]


def stored_rule(a: TagAnalysis, op: Operation, ref: GlobalRef, coords: list[Affine], tags: np.ndarray,
                mask: np.ndarray) -> None:
    """A store of data with byte tags `tags` (points, bytes) into tensor `ref` at `coords`: where
    the tensor has asserted tags (`assert_tags`), each stored element must carry the tag its
    coordinates get."""
    root = ref.root or ref
    entry = a.store_functions.get(root.name)
    points = np.flatnonzero(mask)
    if entry is None or points.size == 0 or not a.checking:
        return
    function, frozen = entry
    elements = _stored_elements(a, op, ref, coords)
    width = root.dtype.nbytes
    lhs = resize(tags, ref.dtype.nbytes, a.table)[points].reshape(points.size, len(elements), width)
    rhs = np.stack([a.intern(a.evaluate_tag_function(function, forms, frozen=frozen), width)[points]
                    for forms in elements], axis=1)
    site = a.reach(str(a.where(function)))
    threads = a.thread_of(points)
    sites = np.full(lhs.shape, a.site(op), np.int64)
    base = describer(a, op, site, threads, sites=(sites, np.full(rhs.shape, a.site(function), np.int64)),
                     tags=(lhs, rhs), message=f"stored into {root.name!r} at {a.where(op)}")
    rows = [[c.take(points) for c in forms] for forms in elements]

    def describe(point: int, element: int, model: dict[int, int]) -> dict[str, Any]:
        w = base(point, element, model)
        w["element"] = tuple(a.space.evaluate(c.row(point), model) for c in rows[element])
        return w

    compare(a, site, lhs, rhs, True, describe, points, count=a.n // a.threads)


def _stored_elements(a: TagAnalysis, op: Operation, ref: GlobalRef, coords: list[Affine]) -> list[list[Affine]]:
    """The coordinates in its tensor of each element a store into `ref` at `coords` writes: one,
    or those a wider element of a view holds (a view keeping the tensor's leading dims, whose
    last coordinate counts several of the tensor's elements)."""
    root = ref.root
    if root is None or ref.dtype.nbytes == root.dtype.nbytes:
        return [a.root_coordinates(ref, coords)[1]]
    parts, rest = divmod(ref.dtype.nbytes, root.dtype.nbytes)
    if rest or len(ref.dims) != len(root.dims) or \
            any(v.row(0) != r.row(0) for v, r in zip(ref.dims[:-1], root.dims[:-1])):
        raise a.undecidable(op, f"a store into a view of {root.name!r} whose elements are not whole rows' runs of its "
                                "own; the tags asserted of the tensor are checked at stores of its elements, or of "
                                "a view keeping its leading dims whose elements hold several of them")
    sp = a.space
    last = sp.scale(coords[-1], parts)
    return [[*coords[:-1], sp.add(last, sp.constant(j, a.n))] for j in range(parts)]


def _tensor_function(a: TagAnalysis, op: D.TagOp | D.StoreTagsOp, target: GlobalRef) -> tuple[Any, dict[SSAValue, Affine]]:
    """A tensor's tag function (or asserted tags) and the values of the variables it reads, as
    they are now; refused where it would not give every thread the same tags."""
    if target.root is not None:
        raise VerificationError("tag functions attach to a tensor argument, not to a view of it: tag the "
                                "tensor itself (with its own coordinates)", a.where(op))
    if a.guards or any(loop.symbol is not None for loop in a.loops):
        raise a.undecidable(op, "a tensor's tag function is set under a runtime branch or inside a runtime "
                                "loop; the checker takes one tag function per tensor at a time (set it before)")
    captured = list(captured_values(a, op))
    for inner in op.body.block.ops:
        if isinstance(inner, D.VarLoadOp):
            slot = a.values.get(inner.var)
            captured.append(slot.value if isinstance(slot, Slot) else None)
    for v in captured:
        value = v if isinstance(v, Affine) or v is None else a.values.get(v)
        if isinstance(value, Affine) and not uniform(value):
            clusters = (" (in a kernel with clusters, the blocks of a cluster are checked together: not the "
                        "block index either)") if a.blocks > 1 else ""
            raise VerificationError("a tensor's tag function must give every thread the same tags: it may use "
                                    f"block indices, sizes and loop indices, not thread indices{clusters}",
                                    a.where(op))
    if any(isinstance(inner, (D.ThreadIdxOp, D.LaneIdOp, D.WarpIdOp)) for inner in op.body.block.ops):
        raise VerificationError("a tensor's tag function must give every thread the same tags: it may use "
                                "block indices, sizes and loop indices, not thread indices", a.where(op))
    frozen = {inner.var: a.values[inner.var].value for inner in op.body.block.ops if isinstance(inner, D.VarLoadOp)
              and isinstance(a.values.get(inner.var), Slot) and a.values[inner.var].value is not None}
    return op, frozen


def _tile_tags(a: TagAnalysis, op: D.TagOp, target: Any, mask: np.ndarray) -> None:
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    tile: TileValue = target
    coords = tile_coordinates(tile.layout)
    elements = coords[0].size if coords else 1
    per_thread = tile.memory.per_thread  # type: ignore[attr-defined]
    if not per_thread and a.guards:
        raise a.undecidable(op, "a shared tile is tagged under a branch on a runtime condition; which thread's "
                                "values the tag function sees depends on the launch (tag it before the branch)")
    # a shared tile is tagged once per block, by the first of its threads here
    rows = threads if per_thread else threads[np.unique(threads // a.block_threads, return_index=True)[1]]
    point = np.repeat(rows, elements)
    flat_coords = [a.space.constant(np.tile(c, rows.size), point.size) for c in coords]
    comps = a.evaluate_tag_function(op, flat_coords, point)
    ids = a.intern(comps, tile.dtype.nbytes).reshape(rows.size, elements, -1)
    a.table.note_format(ids, tile.dtype.name)
    idx = fragment_bytes(a, tile, rows)
    memory: TagMemory = tile.memory  # type: ignore[assignment]
    coded = a.initialization.saved(memory)
    if per_thread:
        memory.relabel(idx.reshape(rows.size, -1), ids, a.site(op), rows)
    else:
        memory.relabel(idx, ids, a.site(op))
    a.initialization.restore(memory, coded)  # (a tag function writes no data: bytes written on some paths stay so)


def captured_values(a: TagAnalysis, op: D.TagOp) -> tuple[SSAValue, ...]:
    """`op.captured()`, read from the IR once per analysis (global loads ask for it each time)."""
    found = a.captured.get(op)
    if found is None:
        found = a.captured[op] = tuple(op.captured())
    return found


def assert_rule(a: TagAnalysis, op: D.TagAssertOp, mask: np.ndarray) -> None:
    points = np.flatnonzero(mask)
    if points.size == 0 or not a.checking:
        return
    threads = a.thread_of(points)
    sides = []
    for ssa in a.shape(op)[0]:
        target = a.values[ssa]
        if isinstance(target, GlobalRef):
            sides.append(_tensor_side(a, op, target, threads))
            continue
        idx = point_fragments(a, target, points)
        tags, sites = a.read_tags(memory_of(target), idx.reshape(points.size, -1), threads, points, sites=True)
        sides.append((target, tags.reshape(idx.shape), sites.reshape(idx.shape)))  # type: ignore[union-attr]
    (lt, lhs, lsites), (_, rhs, rsites) = sides
    coordinates = lt if isinstance(lt, list) else tile_coordinates(_layout_of(lt))
    if lhs.shape != rhs.shape:
        raise VerificationError(f"the two sides of this tag assertion have {lhs.shape[1]} and {rhs.shape[1]} "
                                "elements; they are compared element by element", a.where(op))
    for side, tags, written in (("left", lhs, lsites), ("right", rhs, rsites)):
        if (tags == BOTTOM).all() and (written >= 0).any():
            raise VerificationError(f"the {side} side of this tag assertion carries no tags: no tag function reaches "
                                    "its data (tag the tensors it is loaded from, or the tile itself)", a.where(op))
    site = a.reach(str(a.where(op)))
    describe = describer(a, op, site, threads, coordinates=coordinates, sites=(lsites, rsites), tags=(lhs, rhs),
                          message=op.message.data)
    compare(a, site, lhs, rhs, op.kind.data == "eq", describe, points, count=a.n // a.threads)


def _layout_of(value: Any) -> Any:
    """The layout of a tile, or of a tile per copy (whose tiles must share one shape)."""
    if isinstance(value, TileCopies):
        if value.moved is not None:
            return value.moved[0].layout  # (moved copies of one tile: one shape)
        layout = value.tiles[0].layout
        if any(tile.layout.shape != layout.shape for tile in value.tiles):
            raise CannotBatch("copies of one assertion read tiles of different shapes")
        return layout
    return value.layout


def _tensor_side(a: TagAnalysis, op: D.TagAssertOp, ref: GlobalRef, threads: np.ndarray) -> tuple[Any, np.ndarray, np.ndarray]:
    """A whole global tensor as one side of an assertion: its tag function at every coordinate
    (the tensor's dims must be constants, so that its elements can be listed)."""
    if not all(d.concrete for d in ref.dims):
        raise VerificationError(f"this assertion compares all of tensor {ref.name!r}, whose dims are not all "
                                "constants; compare a tile of it instead", a.where(op))
    if (ref.root or ref).name in a.written_globals:
        raise a.undecidable(op, f"this assertion compares tensor {(ref.root or ref).name!r}, which the kernel "
                                "writes; the checker takes global tensors as read-only or write-only")
    if ref.root is not None and ref.root.dtype.nbytes != ref.dtype.nbytes:
        raise VerificationError(f"this assertion compares all of a view of {ref.root.name!r} with another element "
                                "width; compare a tile loaded from it instead", a.where(op))
    shape = tuple(int(d.const[0]) for d in ref.dims)
    flat = np.arange(int(np.prod(shape)))
    # elements in colexicographic order, as a tile's values are numbered
    coords = [c.astype(np.int64) for c in np.unravel_index(flat, shape, order="F")] if shape else []
    root, forms = a.root_coordinates(ref, [a.space.constant(c, flat.size) for c in coords])
    entry = a.tag_functions.get(root.name)
    ids = np.zeros((flat.size, ref.dtype.nbytes), np.int64)
    site = -1
    if entry is not None:
        ids = a.intern(a.evaluate_tag_function(entry[0], forms), ref.dtype.nbytes)
        a.table.note_format(ids, root.dtype.name)
        site = a.site(entry[0])
    tags = np.broadcast_to(ids[None], (threads.size, *ids.shape))
    return coords, tags, np.full(tags.shape, site, np.int64)
