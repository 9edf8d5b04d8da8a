"""Which ops of a kernel can affect a tag check: backward liveness of memories and values.

The checks are the tag assertions, the operand pairing of every `matmul`, and reads of bytes
nothing wrote (a product's accumulator included) or of variables not assigned: a read of a
variable that some path reaches before any assignment (`unassigned_reads`) is walked, with the
assignments before it (as writes, their values unneeded). An op matters when a check reads what it
produces, directly or through memory: a store matters when the memory it writes is read later
by something that matters (only as a write, its data unneeded, when all that reads it needs is
that it was written: an accumulator), a value when an op that matters uses it. A tag function
applied to a whole register tile overwrites every tag of it, so stores before it (the scores of
an attention kernel, computed and then re-tagged as probabilities) do not matter (in shared
memory they still do: they may race with later accesses). Control flow, barriers, allocations,
views, tag functions of tensors and the coordinates of global accesses (they state the
in-bounds facts of the domain) always matter.

The analysis skips the other ops: arithmetic on data whose tags reach no check is most of a
kernel. Reads of shared memory always run, with the writes before them, since they may race.
A tile access it would skip whose coordinates are not all numbers when traced (the front end
rejects a constant outside its mode, in each iteration of a static loop) is kept for its
coordinates alone (`Liveness.bounds_only`): an access outside the tile faults whatever its
data. A static loop kept rolled with nothing in it to walk is skipped too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from xdsl.dialects import arith, scf

from ..ir import dialect as D
from ..ir.dialect import UNROLLED
from .op_table import OpTable
from ..ops import integers

_VIEWS = (D.ViewOp, D.SliceOp, D.PartitionOp)
_SOURCES = frozenset((*_VIEWS, D.TensorViewOp))
"""Ops whose result is a view of their first operand's memory."""


class Liveness(NamedTuple):
    """What the tag analysis must run of a kernel's ops (by their number in the `OpTable`)."""

    relevant: set[int]
    """The ops that can change what a check sees, and those of `bounds_only`."""
    bounds_only: set[int]
    """Tile accesses whose data no check needs: only their coordinates are checked."""
    traced: Traced | None = None
    """Which values were numbers when the kernel was traced (as far as the walk asked)."""
    written_only: frozenset[int] = frozenset()
    """Register loads whose value no check needs: only that the bytes they read were written."""


def relevant_ops(kernel: D.KernelOp, table: OpTable | None = None) -> Liveness:
    """The ops the tag analysis must run; the others cannot change what any check sees."""
    from ..ir.registry import install

    install()  # every op's liveness rule: an op missing one would be dropped when unused
    walk = _Liveness(table or OpTable(kernel))
    t = walk.table
    walk.unassigned = unassigned_reads(t, kernel.body.block)
    walk.operands = {t.results[j][0] for j, kind in enumerate(t.kinds) if kind is D.MakeSharedOp}
    walk.asserted = {walk.root(t.operands[j][0]) for j, kind in enumerate(t.kinds) if kind is D.StoreTagsOp}
    walk.block(kernel.body.block, set())
    return Liveness(walk.keep | walk.bounds, walk.bounds - walk.keep, walk.traced, frozenset(walk.written_only))


class Traced:
    """Whether a value was a number while the front end traced the kernel: a constant, the index
    of a static loop kept rolled, or integer arithmetic on those (the index expressions of a
    rolled loop, constants once it is unrolled). A tile coordinate that was is checked against
    its mode when traced (in each iteration), as a constant coordinate is."""

    def __init__(self, table: OpTable) -> None:
        self.table = table
        self._found: dict[int, bool] = {}
        self._indices: set[int] | None = None

    def __call__(self, value: int) -> bool:
        found = self._found.get(value)
        if found is None:
            t = self.table
            maker = t.maker.get(value)
            if maker is None:  # an argument of a block: of a static loop kept rolled?
                if self._indices is None:
                    self._indices = {id(t.bodies[j].args[0]) for j, kind in enumerate(t.kinds)
                                     if kind is scf.ForOp and D.is_unrolled(t.ops[j])}
                found = value in self._indices
            else:
                kind = t.kinds[maker]
                found = kind is arith.ConstantOp or \
                    (kind in _INTEGER_ARITHMETIC and all(map(self, t.operands[maker])))
            self._found[value] = found
        return found


Live = set[int]
"""SSA values, by identity (see `op_table`), and memories whose writes matter only as writes
(`_written`)."""


class _Liveness:
    def __init__(self, table: OpTable) -> None:
        self.table = table
        self.keep: set[int] = set()
        self.roots: dict[int, int] = {}
        self.spaces: dict[int, str | None] = {}
        self.skipped: Live = set()
        """Memories and variables some op the analysis skips writes."""
        self.bounds: set[int] = set()
        """Tile accesses kept for their coordinates alone (`Liveness.bounds_only`)."""
        self.written_only: set[int] = set()
        """Register loads kept only for whether their bytes were written (`Liveness.written_only`)."""
        self.traced = Traced(table)
        self.products = [j for j, kind in enumerate(table.kinds) if kind is D.MmaOp]
        """The matrix products, by number (a loop's body keeps what those in it read written)."""
        self.unassigned: set[int] = set()
        """The reads of variables that may find them unassigned (`unassigned_reads`)."""
        self.asserted: set[int] = set()
        """The tensors whose stores are checked against asserted tags (`assert_tags`): what a
        store into one writes matters."""
        self.operands: set[int] = set()
        """The shared memories: every write to them is walked, whether or not anything reads what
        it writes, since it may race with a thread's read before it (`shared_reads`, in an
        earlier iteration of a loop too) or a product's (`product_reads`; one started with
        `matmul_async` may still read them)."""

    def root(self, value: int) -> int:
        """The allocation (or tensor argument) a tile or tensor value is a view of."""
        found = self.roots.get(value)
        if found is None:
            t = self.table
            source = value
            while (maker := t.maker.get(source)) is not None and t.kinds[maker] in _SOURCES:
                source = t.operands[maker][0]
            found = self.roots[value] = source
        return found

    def space(self, i: int, k: int) -> str | None:
        """Where the memory of op i's k-th operand lives ("shared", "local", ...), "tensor" for
        a global tensor, None for a scalar."""
        value = self.table.operands[i][k]
        known = self.spaces.get(value, _UNKNOWN)
        if known is _UNKNOWN:
            t = self.table.operand_values[i][k].type
            known = self.spaces[value] = t.space.data if isinstance(t, D.TileType) else \
                "tensor" if isinstance(t, D.TensorType) else None
        return known  # type: ignore[return-value]

    def block(self, block: object, live_out: Live, owned: bool = False) -> Live:
        """What is live at the top of `block`, given what is live after it (`owned`: a set of the
        caller's own, which the walk may update in place instead of copying)."""
        live = live_out if owned else set(live_out)
        t = self.table
        kinds, operands, results, keep = t.kinds, t.operands, t.results, self.keep
        for i in reversed(t.blocks[id(block)]):
            rule = RULES.get(kinds[i])
            if rule is not None:
                rule(self, i, live)
                continue
            for r in results[i]:  # a pure op: needed when its result is
                if r in live:
                    keep.add(i)
                    live.update(operands[i])
                    break
        return live


_UNKNOWN = object()


_INTEGER_ARITHMETIC = frozenset(integers.INTEGER_OPS)
"""Integer ops whose result is a number when their operands are (`Traced`): every one the
language defines (`argus.dsl.ops.integers`)."""


def loop(w: _Liveness, i: int, live: Live) -> None:
    """A runtime loop (`scf.for`): its body until its live-in is stable, and its bounds."""
    op: scf.ForOp = w.table.ops[i]  # type: ignore[assignment]
    after = live  # (what is live after the loop: `live` changes only once the body's live-in is known)
    # what the body's products need written is live at its top whatever the rest of it does (a
    # write never kills it), so it flows around the back edge: known before the first pass, it
    # spares a second pass over the body only to carry it (an accumulator zeroed in the body)
    t = w.table
    end = t.ends[i]
    body_in: Live = {_written(w.root(v)) for j in w.products if i < j < end for v in t.operands[j][:3]}
    body = w.table.bodies[i]
    while True:  # the body's live-in flows around the back edge
        new_in = w.block(body, after | body_in, owned=True)
        if new_in <= body_in:
            break
        body_in |= new_in
        # what is live at the top reaches the bottom through the back edge; it can change the
        # body's ops only if the body writes it (values defined outside are never redefined),
        # in an op skipped so far (an op kept stays kept, and so keeps the same values live)
        if not ((body_in - after) & w.skipped):
            break
    live |= body_in
    if UNROLLED in op.attributes and w.keep.isdisjoint(t.blocks[id(body)][:-1]):
        return  # a static loop kept rolled with nothing to walk but its yield (its bounds are numbers)
    live.update(w.table.operands[i][:3])  # lower bound, upper bound, step
    w.keep.add(i)


def branch(w: _Liveness, i: int, live: Live) -> None:
    """A runtime branch (`scf.if`): both sides, and its condition."""
    op: scf.IfOp = w.table.ops[i]  # type: ignore[assignment]
    branches = [w.block(r.block, live) for r in (op.true_region, op.false_region) if r.blocks]
    for b in branches:
        live |= b
    live.add(w.table.operands[i][0])
    w.keep.add(i)


def tag_function(w: _Liveness, i: int, live: Live) -> None:
    """A tag function applied to a tile or tensor: kept when its tags may be read."""
    op: D.TagOp = w.table.ops[i]  # type: ignore[assignment]
    value = w.table.operands[i][0]
    target = w.root(value)
    tensor = w.space(i, 0) == "tensor"
    if not (tensor or target in live):
        w.skipped.add(target)
    else:
        w.keep.add(i)
        if value == target and w.space(i, 0) == "local" and _covers_memory(op.target):
            live.discard(target)  # every tag of the registers is overwritten here
        live.update(map(id, op.captured()))


def store_tags(w: _Liveness, i: int, live: Live) -> None:
    """`assert_tags` of a tensor: always kept (a claim), with the values its function reads."""
    w.keep.add(i)
    live.update(map(id, w.table.ops[i].captured()))  # type: ignore[attr-defined]


def reset(w: _Liveness, i: int, live: Live) -> None:
    """`reset_tags` of a shared tile: kept when the tile is read later."""
    target = w.root(w.table.operands[i][0])
    if target in live:
        w.keep.add(i)  # shared memory: earlier writes still race with later accesses, so they stay
    else:
        w.skipped.add(target)


_AT_OFFSET = frozenset((D.LoadAtOp, D.StoreAtOp))
"""Tile accesses at a flat offset (not coordinates the front end checks)."""
_TARGET_SECOND = frozenset((D.StoreOp, D.StoreAtOp, D.AtomicOp, D.CopyOp))
"""Writes whose second operand is the memory written (the first is the value)."""
_PAIRS = frozenset((D.TagAssertOp, D.MmaOp))
"""Ops that read the data of their first two operands."""


def write(w: _Liveness, i: int, live: Live) -> None:
    """A store, atomic or copy: kept when what it writes (or, for an atomic, returns) may be read."""
    t = w.table
    kind, operands = t.kinds[i], t.operands[i]
    place = 1 if kind in _TARGET_SECOND else 0
    target = operands[place]
    root = w.root(target)
    reads = kind is D.AtomicOp and t.results[i][0] in live
    if w.space(i, place) == "tensor":  # in-bounds facts: its coordinates matter, not its data
        w.keep.add(i)
        live.update(operands[2:])
        if reads or root in w.asserted:  # (what is stored into a tensor with asserted tags: its data too)
            live.add(operands[0])
        return
    copy = kind is D.CopyOp
    store = kind is D.StoreOp or kind is D.StoreAtOp
    if root in live or reads or (copy and (w.space(i, 0) == "shared" or root in w.operands)) or \
            (not store and _written(root) in live):
        w.keep.add(i)
        live.update(operands)
        if copy:
            live.add(w.root(operands[0]))
    elif _written(root) in live or root in w.operands or (copy and w.space(i, 0) == "local"):
        w.keep.add(i)  # which bytes it writes matters, not its data
        w.skipped.add(root)  # (its data: should a loop's back edge make it matter, the loop walks again)
        # its address, not its value (its tile is made by ops always kept: naming it here would
        # make the memory's tags matter, since a memory is named by the value allocating it)
        live.update(operands[2:])
        if copy and w.space(i, 0) == "local":  # a copy from registers faults on bytes nothing wrote (`load`)
            live.add(_written(w.root(operands[0])))
    else:
        w.skipped.add(root)
        w.skipped.add(_written(root))
        if store:
            _bounds_only(w, i, live, operands[2:])


def _written(memory: int) -> int:
    """What a read that needs the bytes of `memory` written (not their tags) keeps live: the
    writes to it, without the data they write. (Identities are positive: the complement of the
    memory's names this.)"""
    return ~memory


def var_store(w: _Liveness, i: int, live: Live) -> None:
    """An assignment of a variable: kept when the variable, or that it was assigned, matters."""
    var = w.table.operands[i][1]
    if var in live:
        w.keep.add(i)
        live.update(w.table.operands[i])
    else:
        w.skipped.add(var)
        if _written(var) in live:  # that it assigns the variable matters, not the value
            w.keep.add(i)


def var_load(w: _Liveness, i: int, live: Live) -> None:
    """A read of a variable: kept when its value is used, or when it may find it unassigned."""
    var = w.table.operands[i][0]
    if i in w.unassigned:  # it may fault, whatever reads its value: whether it was assigned matters
        w.keep.add(i)
        live.add(_written(var))
    if w.table.results[i][0] in live:
        w.keep.add(i)
        live.add(var)


def unassigned_reads(table: OpTable, block: object) -> set[int]:
    """The reads of variables (by number) that some path through `block` reaches before any
    assignment of theirs — the only reads that may find a variable unassigned: definite
    assignment over the kernel's structured control flow, conditions aside (both sides of a
    branch must assign; a loop may run no iteration)."""
    found: set[int] = set()
    _assigned(table, block, frozenset(), found)
    return found


def _assigned(table: OpTable, block: object, before: frozenset[int], found: set[int]) -> frozenset[int]:
    """The variables every path through `block` has assigned, given those assigned `before`; the
    reads that may come first go to `found`."""
    assigned = before
    kinds, operands = table.kinds, table.operands
    for i in table.blocks[id(block)]:
        kind = kinds[i]
        if kind is D.VarStoreOp:
            assigned = assigned | {operands[i][1]}
        elif kind is D.VarLoadOp:
            if operands[i][0] not in assigned:
                found.add(i)
        elif kind is scf.IfOp:
            op: scf.IfOp = table.ops[i]  # type: ignore[assignment]
            sides = [_assigned(table, r.block, assigned, found) for r in (op.true_region, op.false_region) if r.blocks]
            assigned = sides[0] & sides[1] if len(sides) == 2 else assigned
        elif kind is scf.ForOp:
            _assigned(table, table.bodies[i], assigned, found)  # (what the body assigns, a later iteration has)
    return assigned


def load(w: _Liveness, i: int, live: Live) -> None:
    """A load: kept when its value is used, for a shared read's races, for a tensor's bounds, or
    for whether the registers it reads were written (`Liveness.written_only`)."""
    operands = w.table.operands[i]
    source = operands[0]
    used = w.table.results[i][0] in live
    space = w.space(i, 0)
    shared = space == "shared"
    if used or shared or space == "tensor":  # in-bounds facts; races on shared reads
        w.keep.add(i)
        w.written_only.discard(i)  # (a later walk of a loop's body, with more live: its value is needed)
        live.update(operands[1:])
        if used or shared:  # a shared read races with the writes before it, so they matter too
            live.add(w.root(source))
    elif space == "local":  # it faults on bytes nothing wrote, whatever reads its value: the
        w.keep.add(i)  # writes before it matter as writes (a running sum no check reads, never set)
        w.written_only.add(i)
        live.update(operands[1:])
        live.add(_written(w.root(source)))
    else:
        _bounds_only(w, i, live, operands[1:])


def _bounds_only(w: _Liveness, i: int, live: Live, coordinates: tuple[int, ...]) -> None:
    """Keep a tile access the analysis would skip for its coordinates alone, unless they are
    all numbers when traced (the front end checked those against the tile; an offset it did
    not)."""
    if w.table.kinds[i] in _AT_OFFSET or not all(map(w.traced, coordinates)):
        w.bounds.add(i)
        live.update(coordinates)


def always(w: _Liveness, i: int, live: Live) -> None:
    """Keep the op whatever is used of it (a barrier, an allocation, a view, an assertion...)."""
    w.keep.add(i)
    operands = w.table.operands[i]
    # a view reads no data: its source matters only through what reads the view
    live.update(v for k, v in enumerate(operands) if w.space(i, k) is None)
    if w.table.kinds[i] in _PAIRS:
        live.add(w.root(operands[0]))
        live.add(w.root(operands[1]))
        if w.table.kinds[i] is D.MmaOp and w.asserted:  # its accumulator's tags become the product's
            live.add(w.root(operands[2]))  # (`argus.verify.products`), which claims on stores read
        if w.table.kinds[i] is D.MmaOp:  # it reads the data of every operand, which must have been
            # written: its accumulator (zeroed, say), and its fragments, even where a tag function gave
            # them the tags it compares (the stores before that function then still count as writes)
            live.update(_written(w.root(v)) for v in operands[:3])


RULES: dict[type, Callable[[_Liveness, int, Live], None]] = {}
"""Each op kind's liveness rule (`argus.dsl.ir.registry.define(liveness=...)` fills it); an op
without one is kept when a check needs one of its results."""


def _covers_memory(tile: object) -> bool:
    """Whether a tile (an allocation) is laid out over every element of its memory."""
    offsets = tile.type.layout.offsets()  # type: ignore[attr-defined]
    return len(offsets) > 0 and len({int(o) for o in offsets}) == int(max(offsets)) + 1


def keep_always(op_type: type) -> None:
    """Run every op of this type (an op with a registered tag rule may move tags in memory)."""
    RULES[op_type] = always
