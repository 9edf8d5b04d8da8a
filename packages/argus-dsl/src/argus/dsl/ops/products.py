"""Matrix products: ``matmul``, ``matmul_async`` and ``matmul_wait``.

A product (`D.MmaOp`) is run by the threads of one MMA atom together (a warp, a warpgroup, a
wave, or one thread for the scalar multiply-add), so it is a collective of the scheduler: the
warps of a group that get there first wait for the rest. Its A and B operands come from
register fragments or, for atoms that read them whole, from shared tiles; those shared reads are
an agent of the group's stream of products, happening at a moment the schedule picks before the
product retires. ``matmul_async`` starts one without waiting: its accumulator registers are busy
until a ``matmul_wait`` (`D.MmaWaitOp`, a sync point) retires it.

The checker's rules (`argus.dsl.check.products`: the pairing of A and B elements, the products
in flight) and tag liveness (a product is always walked: its pairing is a check) stay with the
checker, which reasons about their identities. Backends translate the wait themselves (wgmma's
wait group on NVIDIA, nothing on AMD) and the atoms other than the scalar multiply-add
(`Translator.matrix_multiply`). The layout lowering's `_LowerMma` (argus.dsl.ir.lowering) gives a
product reading shared operands where each starts; it stays a rewrite pattern there, since it
extends the op in place with unswizzled start offsets rather than replacing an access by
coordinates with one at an element offset (`lower(op, offset_of)`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.layout import Layout, product
from argus.verify.tags import TOP
from xdsl.dialects.builtin import DictionaryAttr, IntAttr, StringAttr, UnitAttr
from xdsl.ir import Operation

from ..atoms import MMAAtom
from ..check.products import c_index, mma_rule, mma_wait_rule
from ..check.tag_liveness import always
from ..frontend.values import TileRef, describe
from ..ir import dialect as D
from ..ir.registry import builtin, define
from ..llvm.translate import intrinsic_suffix
from ..machine import Agent, Race
from ..machine.interpreter import (
    Frame,
    Interpreter,
    Memory,
    TileValue,
    atom_threads,
    fenced,
    fragment_in_tile,
    not_busy,
    race,
    value_of,
)
from ..machine.shadow import ShadowInterpreter, fragment_write
from ..machine.tiles import fragment_bytes, shared_operand_bytes

if TYPE_CHECKING:
    from ..llvm import Translator


# ---- the front end ------------------------------------------------------------------------

def _build_matmul(asynchronous: bool) -> Any:
    def build(fe: Any, node: ast.Call, args: list[Any]) -> None:
        name = "matmul_async" if asynchronous else "matmul"
        if len(args) != 4 or not isinstance(args[3], MMAAtom):
            raise fe.type_error(node, f"{name}(a, b, acc, atom): three fragments (local tiles) and an MMAAtom")
        atom: MMAAtom = args[3]
        for label, frag, dtype in (("a", args[0], atom.a_dtype), ("b", args[1], atom.b_dtype), ("c", args[2], atom.c_dtype)):
            whole = atom.shared_shape(label) if label != "c" else None
            if whole is not None:
                _shared_operand(fe, node, atom, label, frag, dtype, whole)
                continue
            if not isinstance(frag, TileRef) or frag.type.space.data != "local":
                raise fe.type_error(node, f"{name}'s {label} must be a local tile (registers), got {describe(frag)}")
            if frag.type.dtype != dtype:
                raise fe.type_error(node, f"atom {atom.name} takes {label} as {dtype}, got {frag.type.dtype}")
            want = atom.values(label)
            if frag.type.layout.size() != want:
                raise fe.type_error(node, f"atom {atom.name} gives each thread {want} {label} values; this fragment "
                                          f"holds {frag.type.layout.size()}")
        props: dict[str, Any] = {"atom": DictionaryAttr({k: StringAttr(v) for k, v in atom.as_properties().items()})}
        if asynchronous:
            props["asynchronous"] = UnitAttr()
        fe.emit(D.MmaOp.create(operands=[args[0].ssa, args[1].ssa, args[2].ssa], properties=props))

    return build


def _shared_operand(fe: Any, node: ast.Call, atom: MMAAtom, label: str, tile: Any, dtype: Any,
                    shape: tuple[int, int]) -> None:
    """An operand the atom reads whole from shared memory: a shared tile of its shape."""
    rows = "M" if label == "a" else "N"
    if not isinstance(tile, TileRef) or tile.type.space.data != "shared":
        raise fe.type_error(node, f"atom {atom.name} reads {label} from shared memory: pass a shared tile of "
                                  f"shape {shape} ({rows}×K), got {describe(tile)}")
    if tile.type.dtype != dtype:
        raise fe.type_error(node, f"atom {atom.name} takes {label} as {dtype}, got {tile.type.dtype}")
    layout = tile.type.layout
    got = tuple(layout.shape) if layout.rank == 2 else None
    if got is None or tuple(product(s) for s in got) != shape:
        raise fe.type_error(node, f"atom {atom.name} reads {label} as a {shape[0]}×{shape[1]} ({rows}×K) shared "
                                  f"tile; this one is {layout.shape}")


def _build_matmul_wait(fe: Any, node: ast.Call, args: list[Any]) -> None:
    if len(args) != 1 or not isinstance(args[0], int) or isinstance(args[0], bool) or args[0] < 0:
        raise fe.type_error(node, "matmul_wait(pending): a compile-time int ≥ 0, the products that may "
                                  "still be running")
    fe.emit(D.MmaWaitOp.create(properties={"pending": IntAttr(args[0])}))


builtin("matmul")(_build_matmul(asynchronous=False))
builtin("matmul_async")(_build_matmul(asynchronous=True))
builtin("matmul_wait")(_build_matmul_wait)


# ---- the interpreter ----------------------------------------------------------------------

def _interpret_mma(interp: Interpreter, op: D.MmaOp, frame: Frame, mask: np.ndarray) -> None:
    atom = interp.atom(op)
    group = atom.threads
    threads = atom_threads(interp, op, frame, mask, group, atom.name)
    if threads.size == 0:
        return
    groups = threads[::group] // group
    m, n, k = atom.shape

    def read(tile: TileValue, label: str) -> np.ndarray:
        idx = fragment_in_tile(interp, op, frame, tile, threads, f"operand {label}")
        raw = tile.memory.data[threads[:, None, None], idx]
        if not tile.memory.written[threads[:, None, None], idx].all():  # type: ignore[index]
            raise interp.fault("uninitialized-read", f"matmul reads fragment {label}, which is not fully written",
                               op, frame, array=tile.memory.name)
        values = tile.dtype.decode(raw).astype(np.float64).reshape(groups.size, group, -1)
        return values.transpose(0, 2, 1).reshape(groups.size, -1)  # layout index order: thread fastest

    def matrix(values: np.ndarray, layout: Layout, rows: int, cols: int) -> np.ndarray:
        out = np.zeros((groups.size, rows * cols))
        out[:, layout.offsets()] = values
        return out.reshape(groups.size, cols, rows).transpose(0, 2, 1)

    shared: list[tuple[Memory, np.ndarray]] = []  # the shared bytes the product reads (a row per group)

    def operand(tile: TileValue, label: str, layout: Layout | None, rows: int) -> np.ndarray:
        if layout is not None:
            return matrix(read(tile, label), layout, rows, k)
        idx = shared_operand_bytes(tile, threads[::group], rows * k)
        memory = tile.memory
        shared.append((memory, idx))
        if idx.size and (idx.min() < 0 or idx.max() >= memory.data.size):
            raise interp.fault("out-of-bounds", f"operand {label} reaches outside its shared tile "
                               f"({memory.data.size} bytes)", op, frame, array=memory.name)
        if not memory.written[idx].all():  # type: ignore[index]
            raise interp.fault("uninitialized-read", f"matmul reads operand {label} from shared memory, which is not "
                               "fully written", op, frame, array=memory.name)
        raw = memory.data[idx].reshape(groups.size, rows * k, tile.dtype.nbytes)
        values = tile.dtype.decode(raw).astype(np.float64)  # (groups, rows·k) colexicographic
        return values.reshape(groups.size, k, rows).transpose(0, 2, 1)

    a, b, c = (value_of(frame, v) for v in (op.a, op.b, op.c))
    started = op.asynchronous is not None
    idx = fragment_in_tile(interp, op, frame, c, threads, "accumulator")
    if not started:
        not_busy(interp, op, frame, c.memory, threads, idx, "uses as its accumulator")
    A = operand(a, "a", atom.a_layout, m)
    B = operand(b, "b", atom.b_layout, n)
    C = matrix(read(c, "c"), atom.c_layout, m, n)
    C = C + A @ B.transpose(0, 2, 1)
    flat = C.transpose(0, 2, 1).reshape(groups.size, m * n)[:, atom.c_layout.offsets()]
    per_thread = flat.reshape(groups.size, -1, group).transpose(0, 2, 1).reshape(threads.size, -1)
    c.memory.data[threads[:, None, None], idx] = c.dtype.encode(atom.c_dtype.round(per_thread))
    started_product = _Product(c.memory, threads, idx, shared, threads[::group], group)
    _issue(interp, op, frame, started_product)
    if started:
        _start(frame, started_product)
    else:
        started_product.retire(frame)


@dataclass(eq=False)
class _Product:
    """A product: its accumulator registers (`idx`, rows: `threads`) and the shared bytes it
    reads (a row per group, led by `leaders`). Each group's reads are an agent of that group's
    stream of products: they happen at a moment the schedule picks, before the product retires."""

    memory: Memory
    threads: np.ndarray
    idx: np.ndarray
    shared: list[tuple[Memory, np.ndarray]]
    leaders: np.ndarray
    group: int
    agents: list[Agent] = field(default_factory=list)
    clocks: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    """Per group: its warps, and the clock of its reads."""
    retired: bool = False
    """Read by the interpreter at the end of a block: a product still running there is a fault."""

    def retire(self, frame: Frame, threads: np.ndarray | None = None) -> None:
        """The product has finished (for `threads`, or all of its threads): its reads have
        happened, and whoever waited for it is ordered after them."""
        frame.machine.scheduler.force(self.agents)
        clocks = frame.machine.clocks
        waiting = self.threads if threads is None else threads
        for warps, vc in self.clocks:
            mine = np.intersect1d(warps, clocks.warp_of(waiting))
            if mine.size:
                clocks.acquire(mine, vc, lanes=False)


def _issue(interp: Interpreter, op: Operation, frame: Frame, started: _Product) -> None:
    """The product's shared operands are read by an agent per group, stamped with the group's
    stream of products. The agent's clock covers what its warps saw before they issued it, but
    not their own shared-memory writes since their last barrier (the products read shared
    memory through the asynchronous proxy, which sees a thread's writes only after a barrier)."""
    machine = frame.machine
    clocks = machine.clocks
    site = interp.point(op)
    for row, leader in enumerate(started.leaders.tolist()):
        warps = np.unique(clocks.warp_of(np.arange(leader, leader + started.group)))
        stream = clocks.stream(("products", leader),
                               f"the matrix product of threads {leader}–{leader + started.group - 1}", reads=True)
        tick, vc = clocks.agent_clock(warps, stream)
        vc[warps] = fenced(frame)[warps]
        started.clocks.append((warps, vc))
        reads = [(memory, where[row]) for memory, where in started.shared]
        if not reads:
            continue

        def run(reads: list[tuple[Memory, np.ndarray]] = reads, unit: int = stream.unit, tick: int = tick,
                vc: np.ndarray = vc, leader: int = leader, name: str = stream.name) -> None:
            for memory, where in reads:
                try:
                    machine.tracker.agent_read(machine.tracker.history(id(memory), memory.data.size), where, unit,
                                               tick, vc, leader, name, site)
                except Race as found:
                    raise race(interp, op, frame, memory, found) from None

        agent = Agent(f"{stream.name}: operand reads", run)
        started.agents.append(agent)
        machine.scheduler.start(agent)


def _start(frame: Frame, started: _Product) -> None:
    """A product started asynchronously: its accumulator registers are busy until a
    matmul_wait retires it."""
    memory = started.memory
    if memory.busy is None:
        memory.busy = np.zeros(memory.data.shape, bool)
    memory.busy[started.threads[:, None, None], started.idx] = True
    frame.state.setdefault("matmul.pending", []).append(started)


def _interpret_mma_wait(interp: Interpreter, op: D.MmaWaitOp, frame: Frame, mask: np.ndarray) -> None:
    """The waiting threads' products retire, all but the newest `pending`: their operand reads
    have happened, ordered before whatever the waiting threads do next."""
    pending: list[_Product] = frame.state.get("matmul.pending", [])
    keep = op.pending.data
    active = np.flatnonzero(mask)
    threads = set(active.tolist())
    mine = [p for p in pending if threads & set(p.threads.tolist())]
    for running in mine[:max(0, len(mine) - keep)]:
        running.memory.busy[running.threads[:, None, None], running.idx] = False  # type: ignore[index]
        running.retire(frame, active)
        running.retired = True
        pending.remove(running)
    for running in pending:  # registers a running product uses stay busy
        running.memory.busy[running.threads[:, None, None], running.idx] = True  # type: ignore[index]


# ---- shadow tags --------------------------------------------------------------------------

def _shadow_mma(s: ShadowInterpreter, op: D.MmaOp, frame: Frame, mask: np.ndarray) -> None:
    """The product's operands must pair up: wherever both carry concrete tags, A[m, k] and
    B[n, k] have equal pair tags for every m, n, k. The accumulator then holds the product of
    the operands' rows over those pairs, added to what it held (`argus.verify.products`)."""
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    atom = s.atom(op)
    m, n, k = atom.shape
    a_full = _atom_matrix(s, frame, value_of(frame, op.a), threads, atom.threads, atom.a_layout, m, k)
    b_full = _atom_matrix(s, frame, value_of(frame, op.b), threads, atom.threads, atom.b_layout, n, k)
    a_tags, b_tags = s.table.products.pair_bytes(a_full), s.table.products.pair_bytes(b_full)  # (what pairs)
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
        leader = int(threads[g * atom.threads])
        s.report({
            "assertion": f"{s.locations.get(op)} (operands of {atom.name} must pair up)", "kind": "violated",
            "block": frame.block_of(leader), "thread": leader, "threads": (leader, leader + atom.threads - 1),
            "loops": {(loop.body.block.args[0].name_hint or "i"): int(frame.values[loop.body.block.args[0]][leader])
                      for loop in s.loops},
            "element": {"m": mi, "n": ni, "k": ki},
            "lhs tag": s.table.element_tag(a_tags[g, mi, ki]), "rhs tag": s.table.element_tag(b_tags[g, ni, ki]),
        })
    c = value_of(frame, op.c)
    idx = fragment_bytes(c, threads)  # (threads, values, bytes)
    old = s.memory_tags(c, frame).read(idx.reshape(threads.size, -1), threads)
    before = old.reshape(threads.size // atom.threads, atom.threads, idx.shape[1], idx.shape[2])
    after = s.table.products.accumulate(a_full, b_full, before, c_index(atom.c_layout, atom.threads),
                                        (atom.a_dtype.name, atom.b_dtype.name))
    fragment_write(s, op, frame, c, threads, after.reshape(idx.shape))


def _atom_matrix(s: ShadowInterpreter, frame: Frame, tile: TileValue, threads: np.ndarray, group: int,
                 layout: Any, rows: int, cols: int) -> np.ndarray:
    """An operand's byte tags arranged as the atom's rows × cols tile, per group of threads."""
    if layout is None:  # read whole from a shared tile, colexicographically
        idx = shared_operand_bytes(tile, threads[::group], rows * cols)
        tags = s.memory_tags(tile, frame).read(idx, threads[::group])
        return tags.reshape(idx.shape[0], cols, rows, tile.dtype.nbytes).transpose(0, 2, 1, 3)
    idx = fragment_bytes(tile, threads)  # (threads, values, bytes)
    tags = s.memory_tags(tile, frame).read(idx.reshape(threads.size, -1), threads).reshape(idx.shape)
    groups, nbytes = threads.size // group, idx.shape[-1]
    ordered = tags.reshape(groups, group, -1, nbytes).transpose(0, 2, 1, 3).reshape(groups, -1, nbytes)
    matrix = np.zeros((groups, rows * cols, nbytes), np.int64)
    matrix[:, layout.offsets()] = ordered
    return matrix.reshape(groups, cols, rows, nbytes).transpose(0, 2, 1, 3)


# ---- LLVM ---------------------------------------------------------------------------------

def _translate_mma(t: Translator, op: D.MmaOp) -> None:
    """The scalar multiply-add every target has; any other atom is the target's
    (`Translator.matrix_multiply`)."""
    atom = MMAAtom.from_properties({k: v.data for k, v in op.atom.data.items()})  # type: ignore[attr-defined]
    if atom.threads == 1 and atom.shape == (1, 1, 1):
        _scalar_fma(t, op)
    else:
        t.matrix_multiply(op, atom)


def _scalar_fma(t: Translator, op: D.MmaOp) -> None:
    loaded = []
    for tile in (op.a, op.b, op.c):
        memory, ty, offsets = t.fragment(tile, op)
        pointer = t.element_pointer(memory, ty, str(offsets[0]))
        loaded.append((ty, t.load(ty, memory, pointer), pointer, memory))
    (ta, a, _, _), (tb, b, _, _), (tc, c, cp, cm) = loaded
    for ty, name in ((ta, "a"), (tb, "b")):
        if ty != tc:
            raise t.unsupported(op, f"a scalar multiply-add with {name} of type {ty} and an accumulator of type {tc}")
    if tc.startswith("i"):
        prod = t.let(f"mul {tc} {a}, {b}")
        acc = t.let(f"add {tc} {prod}, {c}")
    else:
        acc = t.call(tc, f"llvm.fma.{intrinsic_suffix(tc)}", [(tc, a), (tc, b), (tc, c)])
    t.store(tc, acc, cm, cp)


# ---- the ops ------------------------------------------------------------------------------

define(D.MmaOp, interpret=_interpret_mma, collective=lambda interp, op: interp.atom(op).threads,
       analyze=mma_rule, liveness=always, shadow=_shadow_mma, translate=_translate_mma)
define(D.MmaWaitOp, interpret=_interpret_mma_wait, sync=True, analyze=mma_wait_rule, liveness=always)
