"""Which ops of a kernel can affect a tag check: backward liveness of memories and values.

The checks are the tag assertions and the operand pairing of every `matmul`. An op matters
when a check reads what it produces, directly or through memory: a store matters when the
memory it writes is read later by something that matters, a value when an op that matters
uses it. A tag function applied to a whole register tile overwrites every tag of it, so stores
before it (the scores of an attention kernel, computed and then re-tagged as probabilities) do
not matter (in shared memory they still do: they may race with later accesses). Control flow, barriers, allocations, views, tag functions of tensors and the
coordinates of global accesses (they state the in-bounds facts of the domain) always matter.

The analysis skips the other ops: arithmetic on data whose tags reach no check is most of a
kernel. Reads of shared memory always run, with the writes before them, since they may race.
"""

from __future__ import annotations

from xdsl.dialects import scf
from xdsl.ir import Block, Operation, SSAValue

from . import dialect as D

_VIEWS = (D.ViewOp, D.SliceOp, D.PartitionOp)
_ALWAYS = (D.MakeSharedOp, D.MakeLocalOp, D.VarOp, D.TensorViewOp, D.SyncThreadsOp, D.TagAssertOp, D.MmaOp, D.AssumeOp,
           scf.YieldOp, *_VIEWS)


def relevant_ops(kernel: D.KernelOp) -> set[Operation]:
    """The ops the tag analysis must run; the others cannot change what any check sees."""
    walk = _Liveness()
    walk.block(kernel.body.block, set())
    return walk.keep


Live = set[int]
"""SSA values, by identity (the IR holds them; ids hash in C)."""


class _Liveness:
    def __init__(self) -> None:
        self.keep: set[Operation] = set()
        self.roots: dict[int, int] = {}
        self.data: dict[int, bool] = {}
        self.written: Live = set()
        """Memories (their roots) and variables some op writes."""

    def root(self, value: SSAValue) -> int:
        """The allocation (or tensor argument) a tile or tensor value is a view of."""
        found = self.roots.get(id(value))
        if found is None:
            source = value
            while isinstance(source.owner, _VIEWS + (D.TensorViewOp,)):
                source = source.owner.operands[0]
            found = self.roots[id(value)] = id(source)
        return found

    def is_data(self, value: SSAValue) -> bool:
        """A tile or tensor (memory), as opposed to a scalar value."""
        known = self.data.get(id(value))
        if known is None:
            known = self.data[id(value)] = isinstance(value.type, (D.TileType, D.TensorType))
        return known

    def block(self, block: Block, live_out: Live) -> Live:
        live = set(live_out)
        for op in reversed(list(block.ops)):
            rule = _RULES.get(type(op))
            if rule is not None:
                rule(self, op, live)
            elif any(id(r) in live for r in op.results):  # a pure op: needed when its result is
                self.keep.add(op)
                live.update(map(id, op.operands))
        return live


def _for(w: _Liveness, op: scf.ForOp, live: Live) -> None:
    after = set(live)
    body_in: Live = set()
    while True:  # the body's live-in flows around the back edge
        new_in = w.block(op.body.block, after | body_in)
        if new_in <= body_in:
            break
        body_in |= new_in
        # what is live at the top reaches the bottom through the back edge; it can change the
        # body's ops only if the body writes it (values defined outside are never redefined)
        if not ((body_in - after) & w.written):
            break
    live |= body_in
    live.update((id(op.lb), id(op.ub), id(op.step)))
    w.keep.add(op)


def _if(w: _Liveness, op: scf.IfOp, live: Live) -> None:
    branches = [w.block(r.block, live) for r in (op.true_region, op.false_region) if r.blocks]
    for b in branches:
        live |= b
    live.add(id(op.cond))
    w.keep.add(op)


def _tag(w: _Liveness, op: D.TagOp, live: Live) -> None:
    target = w.root(op.target)
    w.written.add(target)
    tensor = isinstance(op.target.type, D.TensorType)
    if tensor or target in live:
        w.keep.add(op)
        if id(op.target) == target and not tensor and _local(op.target) and _covers_memory(op.target):
            live.discard(target)  # every tag of the registers is overwritten here
        live.update(map(id, op.captured()))


def _reset(w: _Liveness, op: D.ResetTagsOp, live: Live) -> None:
    w.written.add(w.root(op.target))
    if w.root(op.target) in live:
        w.keep.add(op)  # shared memory: earlier writes still race with later accesses, so they stay


def _write(w: _Liveness, op: Operation, live: Live) -> None:
    target = op.operands[1] if isinstance(op, (D.StoreOp, D.StoreAtOp, D.AtomicOp, D.CopyOp)) else op.operands[0]
    w.written.add(w.root(target))
    reads = isinstance(op, D.AtomicOp) and id(op.results[0]) in live
    if isinstance(target.type, D.TensorType):  # in-bounds facts: its coordinates matter, not its data
        w.keep.add(op)
        live.update(map(id, op.operands[2:]))
        if reads:
            live.add(id(op.operands[0]))
        return
    from_shared = isinstance(op, D.CopyOp) and _shared(op.operands[0])
    if w.root(target) in live or reads or from_shared:
        w.keep.add(op)
        live.update(map(id, op.operands))
        if isinstance(op, D.CopyOp):
            live.add(w.root(op.operands[0]))


def _var_store(w: _Liveness, op: D.VarStoreOp, live: Live) -> None:
    w.written.add(id(op.var))
    if id(op.var) in live:
        w.keep.add(op)
        live.update(map(id, op.operands))


def _var_load(w: _Liveness, op: D.VarLoadOp, live: Live) -> None:
    if id(op.results[0]) in live:
        w.keep.add(op)
        live.add(id(op.var))


def _load(w: _Liveness, op: Operation, live: Live) -> None:
    source = op.operands[0]
    used = id(op.results[0]) in live
    shared = _shared(source)
    if used or shared or isinstance(source.type, D.TensorType):  # in-bounds facts; races on shared reads
        w.keep.add(op)
        live.update(map(id, op.operands[1:]))
        if used or shared:  # a shared read races with the writes before it, so they matter too
            live.add(w.root(source))


def _always(w: _Liveness, op: Operation, live: Live) -> None:
    w.keep.add(op)
    # a view reads no data: its source matters only through what reads the view
    live.update(id(v) for v in op.operands if not w.is_data(v))
    if isinstance(op, (D.TagAssertOp, D.MmaOp)):
        live.add(w.root(op.operands[0]))
        live.add(w.root(op.operands[1]))


_RULES = {
    scf.ForOp: _for, scf.IfOp: _if, D.TagOp: _tag, D.ResetTagsOp: _reset,
    D.StoreOp: _write, D.StoreAtOp: _write, D.AtomicOp: _write, D.CopyOp: _write,
    D.VarStoreOp: _var_store, D.VarLoadOp: _var_load, D.LoadOp: _load, D.LoadAtOp: _load,
    **{t: _always for t in _ALWAYS},
}


def _shared(value: SSAValue) -> bool:
    return isinstance(value.type, D.TileType) and value.type.space.data == "shared"


def _local(tile: SSAValue) -> bool:
    """Registers, where a write never races (shared tiles keep their earlier writes live)."""
    return bool(tile.type.space.data == "local")  # type: ignore[attr-defined]


def _covers_memory(tile: SSAValue) -> bool:
    """Whether a tile (an allocation) is laid out over every element of its memory."""
    offsets = tile.type.layout.offsets()  # type: ignore[attr-defined]
    return len(offsets) > 0 and len({int(o) for o in offsets}) == int(max(offsets)) + 1


def keep_always(op_type: type) -> None:
    """Run every op of this type (an op with a registered tag rule may move tags in memory)."""
    _RULES[op_type] = _always
