"""Matrix-product rules: an MMA atom's operands read through its layouts (from registers or
shared tiles), the pairing of A and B elements an assertion about a product compares, the
accumulator's tags, and products in a row read together (`products_rule`, batched over threads).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

import numpy as np
from argus.verify.affine import any_along, runs, unique_sorted
from argus.verify.tags import BOTTOM, TOP

from ..atoms import MMAAtom
from ..ir import dialect as D
from ..machine.tiles import shared_operand_bytes
from . import rules
from .access import atom_of_op, fragment_bytes, view_rule
from .copies import CannotBatch, TileCopies
from .initialization import written
from .product_reads import OperandMemory
from .reports import PairIndex, check_written, describer, unwritten, written_status
from .run_plan import Products
from .state import Undecidable

if TYPE_CHECKING:
    from typing import Any
    from argus.verify.memory import TagMemory
    from xdsl.ir import Operation
    from ..machine.interpreter import TileValue
    from .analysis import TagAnalysis


def mma_rule(a: TagAnalysis, op: D.MmaOp, mask: np.ndarray) -> None:
    """Operands pair up: A[m, k] and B[n, k] carry equal tags wherever both are tagged; a register
    fragment byte no store wrote is an uninitialized read. (Copies of an unrolled loop's product
    run together: each copy's operands may be tiles of their own.)"""
    points = np.flatnonzero(mask)
    atom: MMAAtom = atom_of_op(a, op, MMAAtom)
    if not points.size:
        return
    if (points.size // (a.n // a.threads)) % atom.threads:
        raise a.undecidable(op, f"{atom.name} needs whole groups of {atom.threads} threads")
    first, second, accumulator = (a.values[v] for v in a.shape(op)[0][:3])
    m, n, k = atom.shape
    if a.in_flight and op.asynchronous is not None:  # (alone, never in a run: one product per group, in order)
        assert a.n == a.threads, "a product started with matmul_async runs on its own"
        leaders = a.thread_of(points)[::atom.threads]
        for running in a.in_flight:
            if running.group == atom.threads:  # (another size's products are not counted: they run longer)
                running.started(leaders // running.group)
    at, a_rows = _atom_operand(a, op, first, points, atom.threads, atom.a_layout, m, k, "a")
    bt, b_rows = _atom_operand(a, op, second, points, atom.threads, atom.b_layout, n, k, "b")
    pa, pb = a.table.products.pair_bytes(at), a.table.products.pair_bytes(bt)
    if a.checking:
        if (a_rows is not None or b_rows is not None) and _one_tag_per_k(pa, pb, a_rows, b_rows):
            a.obligations.held(a.reach(_pairing_site(a, op, atom)), a.n // a.threads)
        else:
            _pairing(a, op, atom, a.thread_of(points), pa if a_rows is None else pa[a_rows],
                     pb if b_rows is None else pb[b_rows])
    _accumulate(a, op, accumulator, points, atom, at if a_rows is None else at[a_rows],
                bt if b_rows is None else bt[b_rows])


def _atom_operand(a: TagAnalysis, op: Operation, value: Any, points: np.ndarray, group: int, layout: Any,
                  rows: int, cols: int, operand: str) -> tuple[np.ndarray, np.ndarray | None]:
    """`_atom_matrix`, made once for copies of a product that read one register fragment alike
    (a row of A against every column of B): the matrices, and for each group of points the
    matrix it reads (None: one each, in order)."""
    alike = _alike_fragments(a, value, points) if layout is not None and a.footprint is not None else None
    if alike is not None:
        idx, copy_of = alike
        n = a.threads
        threads = np.tile(a.thread_ids[:n], idx.shape[0] // n)
        memory = memory_of(value)
        flat = idx.reshape(threads.size, -1)
        tags = a.footprint.read_alike(memory, flat, threads, copy_of)  # type: ignore[union-attr]
        if tags is not None:
            tags = tags.reshape(idx.shape)
            firsts = np.unique(copy_of, return_index=True)[1]  # each fragment's first copy: its points
            check_written(a, op, memory, flat, threads, runs(firsts * n, n).reshape(-1), tags,
                           f"matmul reads fragment {operand}, which is not fully written", operand)
            return _arranged(tags, group, layout, rows, cols), _product_rows(copy_of, n // group)
    return _atom_matrix(a, op, value, points, group, layout, rows, cols, operand), None


def _alike_fragments(a: TagAnalysis, value: Any, points: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Where the copies running together read fewer distinct register fragments than there are
    copies: the bytes of each distinct fragment (rows: its copy's threads, in order) and, per
    copy, which one it reads."""
    n = a.threads
    copies = a.n // n
    if copies < 2 or points.size != a.n:
        return None
    if not isinstance(value, TileCopies):  # one tile for every copy
        return fragment_bytes(a, value, a.thread_ids[:n]), np.zeros(copies, np.int64)
    if value.moved is not None:
        origin, shifts = value.moved
        unique, copy_of = np.unique(shifts, return_inverse=True)
        if unique.size == copies:
            return None
        return _moved_fragments(a, origin, unique), np.reshape(copy_of, -1)
    number: dict[int, int] = {}  # per distinct tile (by identity), its place among them
    tiles = value.tiles
    copy_of = np.fromiter((number.setdefault(id(t), len(number)) for t in tiles), np.int64, copies)
    if len(number) == copies:
        return None
    firsts = np.unique(copy_of, return_index=True)[1]
    return np.concatenate([fragment_bytes(a, tiles[c], a.thread_ids[:n]) for c in firsts]), copy_of


def _accumulate(a: TagAnalysis, op: D.MmaOp, accumulator: Any, points: np.ndarray, atom: MMAAtom, at: np.ndarray,
                bt: np.ndarray, written: bool = False) -> None:
    """The product reads its accumulator, which must be written (unless known to be), and leaves
    the product of its operands' rows over their pairs added to what it held (`at`, `bt`: the
    operands as matrices, a group of points each; `argus.verify.products`)."""
    idx = point_fragments(a, accumulator, points).reshape(points.size, -1)
    memory, threads = memory_of(accumulator), a.thread_of(points)
    if not written:
        why = "matmul reads fragment c, which is not fully written"
        check_written(a, op, memory, idx, threads, points, None, why, "c")
    if not a.table.asserted:  # (no claim reads products: computed data, ⊤, as before any)
        a.write_tags(memory, idx, np.full(idx.shape, TOP, np.int64), threads, points, a.site(op))
        return
    copies = points // a.threads
    keys = threads[:, None] * memory.tags.shape[-1] + idx
    if a.footprint is None or copies[0] == copies[-1] or np.bincount(keys.reshape(-1)).max() <= 1:  # (apart: at once)
        old, _ = a.read_tags(memory, idx, threads, points)
        a.write_tags(memory, idx, accumulated(a, atom, at, bt, old), threads, points, a.site(op))
        return
    # copies of an unrolled loop's product run together, reading what the run left before them;
    # each adds to what the copies before it left (one accumulator summed over them): in program order
    # (a copy reads the run's memory only for bytes no copy before it wrote here: the run's
    # journal then sees no read after a write of the same step)
    new = np.empty(idx.shape, np.int64)
    scratch = np.full((int(threads.max()) + 1, memory.tags.shape[-1]), -1, np.int64)
    groups = copies[::atom.threads]
    for c in unique_sorted(copies).tolist():
        mine, own = copies == c, groups == c
        rows, who = idx[mine], threads[mine][:, None]
        left = scratch[who, rows]
        before = left if (left >= 0).all() else \
            np.where(left >= 0, left, a.read_tags(memory, rows, threads[mine], points[mine])[0])
        new[mine] = scratch[who, rows] = accumulated(a, atom, at[own], bt[own], before)
    a.write_tags(memory, idx, new, threads, points, a.site(op))


def accumulated(a: TagAnalysis, atom: MMAAtom, at: np.ndarray, bt: np.ndarray, old: np.ndarray) -> np.ndarray:
    """An accumulator's tags (points, bytes) after a product of the operand matrices `at`, `bt`
    (a group of points each), from its tags `old` before."""
    groups, values = at.shape[0], atom.values("c")
    width = old.shape[-1] // max(values, 1)
    before = old.reshape(groups, atom.threads, values, width)
    return a.table.products.accumulate(at, bt, before, c_index(atom.c_layout, atom.threads),
                                       (atom.a_dtype.name, atom.b_dtype.name)).reshape(old.shape)


@cache
def c_index(layout: Any, threads: int) -> np.ndarray:
    """Per thread of an atom and value of its accumulator fragment, the element of C it holds
    (m + n·M): the atom's C layout as a table (threads, values)."""
    offsets = np.asarray(layout.offsets(), np.int64)
    return offsets.reshape(-1, threads).T.copy()


def products_rule(a: TagAnalysis, step: Products, mask: np.ndarray) -> None:
    """Products in a row with views and assertions between them (`run_plan.Products`): every
    product's operands are read at once when the products share one atom and register operand
    memories and none accumulates into memory another reads; otherwise one by one. The views
    run first (they read no tags), the assertions in their place among the products. Products
    go in batches of at most `PRODUCT_ROWS` threads' fragments (larger arrays cost more per
    element than they save in calls)."""
    for op in step.ops:
        if rules.RULES.get(type(op)) is view_rule:
            view_rule(a, op, mask)
    threads = np.flatnonzero(mask)
    batch, ops, count = max(1, PRODUCT_ROWS // max(threads.size, 1)), [], 0
    for op in step.ops:
        ops.append(op)
        count += type(op) is D.MmaOp
        if count == batch:
            _product_batch(a, ops, threads, mask)
            ops, count = [], 0
    if ops:
        _product_batch(a, ops, threads, mask)


#: The most threads' fragments (products × threads) read at once by `products_rule`.
PRODUCT_ROWS = 1024


def _product_batch(a: TagAnalysis, ops: list[Operation], threads: np.ndarray, mask: np.ndarray) -> None:
    """`products_rule` for a batch of them (its views already ran). A fragment several products
    read (a row of A against every column of B) is read once."""
    products = [op for op in ops if type(op) is D.MmaOp]
    if not products:
        return _one_by_one(a, ops, mask)
    atom: MMAAtom = atom_of_op(a, products[0], MMAAtom)
    a_tiles, b_tiles, c_tiles = ([a.values[ssa] for ssa in column] for column in
                                 zip(*((op.a, op.b, op.c) for op in products)))
    read = {id(t.memory) for t in a_tiles} | {id(t.memory) for t in b_tiles}
    together = (threads.size > 0 and threads.size % atom.threads == 0
                and atom.a_layout is not None and atom.b_layout is not None
                and all(atom_of_op(a, op, MMAAtom) is atom for op in products)
                and all(t.memory is a_tiles[0].memory for t in a_tiles)
                and all(t.memory is b_tiles[0].memory for t in b_tiles)
                and not any(id(t.memory) in read for t in c_tiles))
    m, n, k = atom.shape
    if together:
        try:
            at, a_of = _fragment_matrix(a, products, a_tiles, threads, atom.threads, atom.a_layout, m, k, "a")
            bt, b_of = _fragment_matrix(a, products, b_tiles, threads, atom.threads, atom.b_layout, n, k, "b")
        except Undecidable:  # reported where it stands, one by one
            together = False
    if not together:
        return _one_by_one(a, ops, mask)
    groups = threads.size // atom.threads
    pa, pb = a.table.products.pair_bytes(at), a.table.products.pair_bytes(bt)
    alike = a.checking and _one_tag_per_k(pa, pb, _product_rows(a_of, groups), _product_rows(b_of, groups))
    written = _all_written(a, c_tiles, threads)
    # with nothing but views between them, every product's accumulator is written at once when
    # the accumulators are apart (each of its own bytes)
    memory: TagMemory = c_tiles[0].memory  # type: ignore[attr-defined]
    at_once = written is not None and len(ops) == len(products) + sum(rules.RULES.get(type(op)) is view_rule for op in ops) \
        and np.bincount((written[1][:, None] * memory.tags.shape[1] + written[0]).reshape(-1)).max() == 1
    product = iter(enumerate(zip(products, c_tiles)))
    for op in ops:
        if type(op) is not D.MmaOp:
            if rules.RULES.get(type(op)) is not view_rule:
                rules.rule_of(op)(a, op, mask)  # an assertion, where it stands among the products
            continue
        i, (_, c) = next(product)
        a_i, b_i = slice(a_of[i] * groups, (a_of[i] + 1) * groups), slice(b_of[i] * groups, (b_of[i] + 1) * groups)
        if not a.checking:  # (a pass that only proposes a loop's entry: `mma_rule` pairs nothing either)
            pass
        elif alike:
            a.obligations.held(a.reach(_pairing_site(a, op, atom)))
        else:
            _pairing(a, op, atom, threads, pa[a_i], pb[b_i])
        if not at_once:
            _accumulate(a, op, c, threads, atom, at[a_i], bt[b_i], written is not None)
    if at_once:
        idx, readers = written  # type: ignore[misc]
        sites = np.repeat(np.array([a.site(op) for op in products], np.int64), threads.size)[:, None]
        a_all = at[_product_rows(a_of, groups)]
        b_all = bt[_product_rows(b_of, groups)]
        tags = accumulated(a, atom, a_all, b_all, memory.read(idx, readers)) if a.table.asserted else \
            np.full(idx.shape, TOP, np.int64)
        memory.write(idx, tags, readers, sites)  # (a step outside runs: no journal)


def _product_rows(tile_of: list[int] | np.ndarray, groups: int) -> np.ndarray:
    """The rows of a matrix of distinct fragments (`groups` per fragment) that each product's
    groups read, in product order."""
    return runs(np.asarray(tile_of, np.int64) * groups, groups).reshape(-1)


def _all_written(a: TagAnalysis, tiles: list[TileValue], threads: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Whether every byte of every thread's fragment of `tiles` (register tiles of one memory)
    was written: then products accumulating into them need not check one by one (outside runs).
    If so, the fragments' bytes (a row per tile and thread) and the thread of each row."""
    memory: TagMemory = tiles[0].memory  # type: ignore[attr-defined]
    if any(t.memory is not memory for t in tiles):  # type: ignore[attr-defined]
        return None
    idx = np.concatenate([fragment_bytes(a, tile, threads) for tile in tiles]).reshape(len(tiles) * threads.size, -1)
    readers = np.tile(threads, len(tiles))
    status = written_status(a, memory, idx, readers, readers, None)
    return (idx, readers) if status is None or written(status).all() else None


def _one_by_one(a: TagAnalysis, ops: list[Operation], mask: np.ndarray) -> None:
    """The products and assertions of `ops`, each on its own (the views already ran)."""
    for op in ops:
        if rules.RULES.get(type(op)) is not view_rule:
            rules.rule_of(op)(a, op, mask)


def point_fragments(a: TagAnalysis, value: Any, points: np.ndarray) -> np.ndarray:
    """Byte indices (points, values, bytes) of each point's fragment of `value`: a tile, or a
    tile per copy (`copies.TileCopies`, while copies run together)."""
    if not isinstance(value, TileCopies):
        return fragment_bytes(a, value, a.thread_of(points))
    n = a.threads
    if points.size == a.n:  # every point: each copy's threads are all threads (an assertion and a product share it)
        memo = a.fragment_memo.get(id(value))
        if memo is not None and memo[0] is value and memo[1] == n:
            return memo[2]  # type: ignore[no-any-return]
        if value.moved is not None:  # one tile's fragments, moved per copy
            found = _moved_fragments(a, *value.moved)
        else:
            found = np.concatenate([fragment_bytes(a, tile, a.thread_ids[:n]) for tile in value.tiles])
        a.fragment_memo[id(value)] = (value, n, found)
        return found
    parts = np.split(points, np.flatnonzero(np.diff(points // n)) + 1)  # each copy's points (in order)
    return np.concatenate([fragment_bytes(a, value.tiles[int(part[0]) // n], part % n) for part in parts])


def _moved_fragments(a: TagAnalysis, origin: TileValue, shifts: np.ndarray) -> np.ndarray:
    """Byte indices (shifts × threads, values, bytes) of the fragments of tile `origin` moved on
    by each of `shifts` elements, which must all lie inside its memory."""
    first = fragment_bytes(a, origin, a.thread_ids[:a.threads], inside=False)
    moved = (shifts * origin.dtype.nbytes)[:, None, None, None]
    size = origin.memory.tags.shape[-1]  # type: ignore[attr-defined]
    if first.size and (first.min() + moved.min() < 0 or first.max() + moved.max() >= size):
        raise Undecidable(f"a fragment reaches outside its {size}-byte tile (the interpreter reports where)", None)
    return (first + moved).reshape(-1, *first.shape[1:])  # type: ignore[no-any-return]


def memory_of(value: Any) -> TagMemory:
    """The memory of a tile, or of every tile of a tile per copy (which must share one)."""
    if isinstance(value, TileCopies):
        if value.moved is not None:
            return value.moved[0].memory  # type: ignore[no-any-return]
        memory = value.tiles[0].memory
        if any(tile.memory is not memory for tile in value.tiles):
            raise CannotBatch("copies of one op read tiles of different memories")
        return memory  # type: ignore[no-any-return]
    return value.memory  # type: ignore[no-any-return]


def _pairing_site(a: TagAnalysis, op: Operation, atom: MMAAtom) -> str:
    return f"{a.where(op)} (operands of {atom.name} must pair up)"


def _one_tag_per_k(at: np.ndarray, bt: np.ndarray, a_rows: np.ndarray | None = None,
                   b_rows: np.ndarray | None = None) -> bool:
    """Whether every A[m, k] and B[n, k] of each group carries one tag per k (the usual case,
    in which every pair pairs up); group g pairs A's group `a_rows[g]` with B's `b_rows[g]`
    (default: the same group)."""
    first = at[:, :1]  # (groups, 1, k, bytes)
    if not ((first > TOP).all() and (at == first).all() and (bt == bt[:, :1]).all()):
        return False
    return bool(np.array_equal(first if a_rows is None else first[a_rows], bt[:, :1] if b_rows is None
                               else bt[b_rows, :1]))


def _pairing(a: TagAnalysis, op: D.MmaOp, atom: MMAAtom, threads: np.ndarray, at: np.ndarray, bt: np.ndarray) -> None:
    """A[m, k] == B[n, k] for every m, n, k where both are tagged, as m·k + n·k comparisons of
    real A-B pairs: every A[m, k] against one tagged B[n₀, k], every B[n, k] against one tagged
    A[m₀, k]. If all hold, all pairs hold (equality is transitive); a failing one is a genuine
    pair of the product."""
    m, n, k = atom.shape
    groups = at.shape[0]
    site = a.reach(_pairing_site(a, op, atom))
    copies = a.n // a.threads
    if _one_tag_per_k(at, bt):
        a.obligations.held(site, copies)  # decided here
        return
    tagged_a: np.ndarray = np.all(at > TOP, axis=-1)  # (groups, m, k)
    tagged_b: np.ndarray = np.all(bt > TOP, axis=-1)  # (groups, n, k)
    a0, b0 = tagged_a.argmax(axis=1), tagged_b.argmax(axis=1)  # (groups, k): a tagged row, if any
    g = np.arange(groups)[:, None]
    kk = np.arange(k)[None, :]
    ref_b, ref_a = bt[g, b0, kk], at[g, a0, kk]  # (groups, k, bytes)
    has_b, has_a = tagged_b.any(axis=1), tagged_a.any(axis=1)  # (groups, k)
    lhs = np.concatenate([at, np.broadcast_to(ref_a[:, None], bt.shape)], axis=1)  # (groups, m + n, k, bytes)
    rhs = np.concatenate([np.broadcast_to(ref_b[:, None], at.shape), bt], axis=1)
    keep = np.concatenate([tagged_a & has_b[:, None], tagged_b & has_a[:, None]], axis=1)[..., None]
    nbytes = at.shape[-1]
    lhs = np.where(keep, lhs, 2).reshape(groups, -1, nbytes)
    rhs = np.where(keep, rhs, 2).reshape(groups, -1, nbytes)
    pairs = PairIndex(m, n, k, a0, b0)
    describe = describer(a, op, site, threads[::atom.threads], mma=pairs, group=atom.threads)
    a.obligations.compare(site, lhs, rhs, True, describe, count=copies)
    # conflicting data (⊤, e.g. joined from two paths) where the other operand holds data
    # (tagged or conflicting too): no proof
    data_a, data_b = (at != BOTTOM).any(axis=(1, 3)), (bt != BOTTOM).any(axis=(1, 3))  # (groups, k)
    top = np.concatenate([any_along(at == TOP) & data_b[:, None], any_along(bt == TOP) & data_a[:, None]],
                         axis=1)
    for g, row, kk in np.argwhere(top)[:1]:
        a.obligations.conflict(site, int(g), int(row) * k + int(kk), describe)


def _atom_matrix(a: TagAnalysis, op: Operation, value: Any, points: np.ndarray, group: int, layout: Any, rows: int,
                 cols: int, operand: str) -> np.ndarray:
    """An atom operand (`operand`: "a" or "b") as matrices (groups of `group` points, rows, cols,
    bytes)."""
    threads = a.thread_of(points)
    if layout is None:  # read whole from a shared tile, colexicographically
        tile: TileValue = value
        owners = threads[::group]
        idx = shared_operand_bytes(tile, owners, rows * cols)
        if idx.size and (idx.min() < 0 or idx.max() >= tile.memory.tags.shape[-1]):  # type: ignore[attr-defined]
            raise Undecidable("a shared operand reaches outside its tile (the interpreter reports where)", None)
        a.check_read(op, tile.memory, idx, owners, by_group=True)  # type: ignore[arg-type]
        for observer in a.observers:  # (every thread of each group reads the operand)
            observer.read(a, op, tile.memory, np.repeat(idx.reshape(owners.size, -1), group, axis=0),
                          (owners[:, None] + np.arange(group)).reshape(-1), op.asynchronous is not None)
        if isinstance(tile.memory, OperandMemory):
            tile.memory.note_reads(idx, owners, group)
            if op.asynchronous is not None and tile.memory.pending is not None:  # type: ignore[attr-defined]
                tile.memory.pending.reads(idx, owners // tile.memory.pending.group)
        tags, _ = a.read_tags(tile.memory, idx, owners, points[::group])  # type: ignore[arg-type]
        check_written(a, op, tile.memory, idx, owners, points[::group], tags,  # type: ignore[arg-type]
                       f"matmul reads operand {operand} from shared memory, which is not fully written", operand)
        return tags.reshape(owners.size, cols, rows, tile.dtype.nbytes).transpose(0, 2, 1, 3)  # type: ignore[no-any-return]
    idx = point_fragments(a, value, points)
    memory = memory_of(value)
    tags = a.read_tags(memory, idx.reshape(points.size, -1), threads, points)[0].reshape(idx.shape)
    check_written(a, op, memory, idx.reshape(points.size, -1), threads, points, tags,
                   f"matmul reads fragment {operand}, which is not fully written", operand)
    return _arranged(tags, group, layout, rows, cols)


def _fragment_matrix(a: TagAnalysis, products: list[Operation], tiles: list[TileValue], threads: np.ndarray,
                     group: int, layout: Any, rows: int, cols: int, operand: str) -> tuple[np.ndarray, list[int]]:
    """`_atom_matrix` of register fragments (the `operand` of each of `products`, tiles of one
    memory) outside a run: the matrices of the distinct tiles, in turn, and which of them each
    product reads."""
    # tiles of one memory with the same bytes (slices of one row, made anew for each product)
    # share one array of byte indices (`fragment_bytes`)
    fragments = [fragment_bytes(a, tile, threads) for tile in tiles]
    distinct: dict[int, int] = {}
    tile_of = [distinct.setdefault(id(bytes_), len(distinct)) for bytes_ in fragments]
    unique = list({id(bytes_): bytes_ for bytes_ in fragments}.values())
    idx = np.concatenate(unique)
    readers = np.tile(threads, len(unique))
    memory: TagMemory = tiles[0].memory  # type: ignore[attr-defined]
    read = idx.reshape(readers.size, -1)
    tags = memory.read(read, readers).reshape(idx.shape)
    status = written_status(a, memory, read, readers, readers, tags)
    if status is not None:
        per_tile = status.reshape(len(unique), threads.size, -1)
        for op, which in zip(products, tile_of):
            unwritten(a, op, per_tile[which], threads, f"matmul reads fragment {operand}, which is not fully written",
                       operand)
    return _arranged(tags, group, layout, rows, cols), tile_of


def _arranged(tags: np.ndarray, group: int, layout: Any, rows: int, cols: int) -> np.ndarray:
    """Fragment tags (points, values, bytes) as matrices (groups of `group` points, rows, cols,
    bytes), each value put in place by the atom's operand `layout`."""
    groups, nbytes = tags.shape[0] // group, tags.shape[-1]
    ordered = tags.reshape(groups, group, -1, nbytes).transpose(0, 2, 1, 3).reshape(groups, -1, nbytes)
    offsets, inverse = _layout_offsets(layout, rows * cols)
    if inverse is not None:  # the values cover the matrix once: one gather puts them in place
        matrix = ordered[:, inverse]
    else:
        matrix = np.zeros((groups, rows * cols, nbytes), np.int64)
        matrix[:, offsets] = ordered
    return matrix.reshape(groups, cols, rows, nbytes).transpose(0, 2, 1, 3)


@cache
def _layout_offsets(layout: Any, size: int) -> tuple[np.ndarray, np.ndarray | None]:
    """An atom operand layout's offsets, and where each matrix position's value is when the
    layout covers all `size` positions once (None otherwise)."""
    offsets = np.asarray(layout.offsets(), np.int64)
    if offsets.size != size or not np.array_equal(np.sort(offsets), np.arange(size)):
        return offsets, None
    inverse = np.empty(size, np.int64)
    inverse[offsets] = np.arange(size)
    return offsets, inverse


def mma_wait_rule(a: TagAnalysis, op: D.MmaWaitOp, mask: np.ndarray) -> None:
    """The waiting threads' groups retire their products but the newest `pending`."""
    threads = a.thread_of(a.active(mask))
    for running in a.in_flight:
        running.retire(unique_sorted(threads // running.group), op.pending.data)
    for observer in a.observers:
        observer.retire(a, op, threads, op.pending.data)
