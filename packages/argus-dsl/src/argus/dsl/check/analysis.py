"""The static tag analysis: abstract interpretation of an ``argus.kernel`` for every launch.

This module is the walker (`TagAnalysis`): its state, the operations rules call on it, and the
table of the built-in rules, which live by concept in the modules beside it (see the package).

Threads and unrolled loop indices are enumerated (all threads of a block run in lockstep as in
the interpreter, with numpy); block indices, grid sizes, runtime sizes and runtime loop
indices are symbols (`argus.verify.affine`). Integers are affine forms over those symbols;
floats are not tracked at all, only their tags. Memories hold byte tags; shared and register
addresses must come out concrete (they do whenever they depend only on thread ids, unrolled
indices and constants), global coordinates may be symbolic: a global load's tag is the
tensor's tag function applied to its coordinates, symbolically.

Control flow: a branch whose condition is concrete runs under masks as in the interpreter; a
symbolic one runs both sides and joins their states (the lattice join, ⊥ < tag < ⊤; a byte
written on one side only is written in the launches taking it: `initialization`). A
runtime loop with symbolic bounds runs its body with a fresh symbol ``i`` bounded by the loop's
range, from the join of the state before the loop and the state the body leaves, renamed to
the previous iteration (``i ↦ i - step``), until that entry state is stable; assertions are
checked on the last pass. Every access to global memory must be in bounds wherever a thread
gets to it: an obligation decided over the kernel's assumptions and the grid covering what it
writes (`bounds.GlobalAccess.bound_obligation`), never assumed. Its in-bounds facts join the
domain of the tag assertions, which is sound because a proof needs every such obligation proved
first. (Copies that fill zeros outside the tensor, as TMA and buffer loads do, are none.)

Clusters: the blocks of a cluster are analysed together, as the interpreter runs them: the
threads enumerated are the cluster's (block after block), the symbols are the cluster's
index and the grid's size in clusters, and a thread's block index is its cluster's first
block plus its block's place in the cluster. Shared tiles hold one segment per block.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
from argus.verify.affine import Affine, Space, add_keys, any_along
from argus.verify.obligations import Obligations
from argus.verify.tags import BOTTOM, TOP, TagTable
from xdsl.dialects import arith, scf

from ..errors import VerificationError
from ..ir import dialect as D
from ..ir.dialect import pad3
from ..ir.types import dtype_of_mlir
from . import batching, rules, run_plan
from .access import (
    tile_bounds_rule,
)
from .arithmetic import INT_RULES
from .bounds import GlobalAccess
from .initialization import Initialization
from .joins import Joins
from .memory import AbstractMemory
from .preparation import Preparation
from .products import products_rule
from .state import Analysis, GlobalRef, INT32, Slot, TileBounds, Undecidable, byte_width
from .tags import captured_values

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from argus.verify.affine import Key
    from argus.verify.memory import TagMemory
    from xdsl.ir import Block, Operation, SSAValue
    from ..errors import SourceLocation
    from ..machine.interpreter import TileValue
    from .footprint import Footprint
    from .initialization import Conjunction, Paths
    from .product_reads import InFlight
    from .rules import Rule
    from .state import LoopContext


class TagAnalysis(AbstractMemory, GlobalAccess, Joins):
    """Walks a kernel once (loops to a fixpoint), collecting tag obligations."""

    def __init__(self, kernel: D.KernelOp, locations: dict[Operation, SourceLocation] | None = None,
                 grid: tuple[int, ...] | None = None, preparation: Preparation | None = None) -> None:
        self.kernel = kernel
        self.locations = locations or {}
        self.preparation = preparation or Preparation(kernel, self.locations)
        self.launch = launch = self.preparation.launch
        self.block_dims, self.warp, self.cluster = launch.block_dims, launch.warp, launch.cluster
        self.block_threads = launch.block_threads
        self.blocks = launch.blocks
        """Blocks analysed together: the cluster's (1 without clusters)."""
        self.n = launch.n
        self.threads = self.n
        """Threads enumerated (`n` counts points, which copies of an unrolled op multiply)."""
        self.tid = np.arange(self.n)
        self.local_ids = launch.local_ids
        """Each thread's index within its block (the cluster's blocks are enumerated together)."""
        self.ranks = self.tid // self.block_threads
        self.everyone = np.ones(self.n, bool)
        self.thread_ids = self.tid
        """Each point's thread: the points are the threads, except while copies of an unrolled
        loop's op run together (`batching`), when point p is thread p mod n of copy p // n."""
        self.footprint: Footprint | None = None
        self.step_times: dict[int, tuple[Any, float]] | None = None
        """Where set, per step of the walk (by identity: an op, or a `batching` step), the step and
        its wall time in seconds, summed over passes over loop bodies (`verify_speed.py --steps`)."""
        self.space = Space()
        self.table = TagTable(self.space)
        from .tags import asserts_stores
        self.table.asserted = asserts_stores(kernel)
        self.table.same, self.table.context = self.always_equal, self.equality_context
        self.equal_memo: dict[Any, bool] = {}
        self.part_mask: tuple[int, np.ndarray] | None = None
        self.first_memo: dict[tuple[int, Key], dict[int, int]] = {}
        """Per loop symbol and its first index, per element: the element at the first iteration
        (`Joins.inductive_join`)."""
        self.entry_memo: dict[tuple[Any, ...], dict[tuple[int, int], int]] = {}
        """Per loop symbol, first index and `equality_context`, per pair of elements: the
        element a loop's entry holds (`Joins.product_entry`)."""
        """`Joins._product_parts`, with the number of product parts it was made for."""
        self.equal_engine: Any = None
        self.obligations = Obligations(self.table, self.space)
        self.facts: set[tuple[str, Key]] = set()
        self.replay_facts: set[tuple[str, Key]] = set()
        self.fact_origins: dict[tuple[str, Key], tuple[Any, ...]] = {}
        self.assumed: dict[tuple[str, Key], Operation] = {}
        """The facts the kernel declares (`assume`), and the op declaring each."""
        self.loop_facts: dict[int, list[tuple[str, Key]]] = {}
        """Per runtime loop's index symbol, its bounds: facts inside the loop only."""
        self.elements_before: dict[int, int] = {}
        """Per runtime loop's index symbol, how many element tags there were when it was made:
        none of those mentions it (`Renamer` leaves them as they are)."""
        self.floors: dict[tuple[int | None, tuple[Any, ...]], int] = {}
        """Per fact container (a loop's symbol, None for the kernel's) and symbolic part e of its
        facts ``e + k ≥ 0``: the least k among them. A bound with a larger k is implied."""
        self.values: dict[SSAValue, Any] = {}
        self.tags: dict[SSAValue, np.ndarray] = {}
        self.memories: list[TagMemory] = []
        self.in_flight: list[InFlight] = []
        """The running asynchronous products of each shared memory they read (`product_reads`)."""
        self.slots: list[Slot] = []
        self.tag_functions: dict[str, tuple[D.TagOp, dict[SSAValue, Any]]] = {}
        self.store_functions: dict[str, tuple[D.StoreTagsOp, dict[SSAValue, Any]]] = {}
        """Per tensor with asserted tags (`assert_tags`): what every store into it carries."""
        self.written_globals: set[str] = set()
        self.read_globals: set[str] = set()
        self.sites: list[SourceLocation | None] = []
        self.site_ids: dict[Operation, int] = {}
        self.loops: list[LoopContext] = []
        self.loop_starts: dict[int, Key] = {}
        """Per runtime loop's index symbol, where its grid of indices starts (the loop's lower
        bound, also for the symbol of its iterations after a first walked on its own)."""
        self.guards = 0
        self.initialization = Initialization(self.space)
        """The launches in which bytes written on some paths only are not (`initialization`)."""
        self.path: Conjunction = ()
        """When the ops being walked run, as far as branches on runtime conditions every thread
        shares tell (inside such a branch: its condition)."""
        self.branches: list[tuple[Affine, str]] = []
        """The conditions of the branches on runtime conditions around the ops being walked, each
        with the comparison the side taken makes of it ("ne0" or "eq0"): each thread's path."""
        self.reached: dict[str, set[tuple[tuple[int, ...], Conjunction]]] = {}
        """Per assertion (and product pairing), the runtime loops and the path around each place
        the walk compared it: a proof needs a launch that gets there."""
        self.checking = True
        self.extensions: dict[str, Any] = {}
        """State a backend's rules keep for the whole walk, by a name of theirs."""
        self.observers: list[Any] = []
        """Extensions told of every shared read, `read(a, op, memory, idx, threads, asynchronous)`
        (a row of bytes per thread; a product's operand: every thread of its groups), and of
        every thread's shared write, `write(a, op, memory, idx, threads)`, and of every
        `matmul_wait`, `retire(a, op, threads, pending)` (a backend's model of a pipeline's
        timing: `argus.backends.nvptx.protocol`)."""
        self.at_end: list[Callable[[], None]] = []
        """Checks a backend's rules leave for the end of the walk (a named barrier that too few
        threads ever meet)."""
        self._remembered: dict[Operation, dict[tuple[Any, ...], tuple[list[Any], Any]]] = {}
        """Per op, what `remembered` computed, by the identities of its inputs (and `equal`), with
        the inputs (kept, so that their identities stay theirs)."""
        self._addresses: dict[Operation, tuple[Any, ...]] = {}
        self.zero_tags: dict[int, np.ndarray] = {}
        self.copy_points: dict[int, tuple[Any, ...]] = {}
        """Per count of copies run together: the points' count, ids, mask, threads, zero tags."""
        self.tiled_values: dict[tuple[int, int], tuple[Any, Any]] = {}
        """Values every copy reads, repeated per copy (by the value's identity and the count)."""
        self.fragment_memo: dict[int, tuple[Any, Any, np.ndarray]] = {}
        """Fragment byte indices per tile (and per tile per copy) value, by identity."""
        self.faults: list[tuple[Any, ...]] = []
        self.memo: dict[Operation, Any] = {}
        self.op_parts: dict[Operation, Any] = {}
        self.shapes_of: dict[Operation, Any] = {}
        self.captured: dict[Operation, tuple[SSAValue, ...]] = {}
        self._bounds: dict[Operation, Any] = {}
        self.bounded: dict[tuple[Any, ...], Any] = {}
        self.cover_facts: set[tuple[int | None, tuple[str, Key]]] = set()
        """Facts of the domain that the grid covers the data written (`GlobalAccess.grid_covers`),
        with their container (a runtime loop's symbol, None for the kernel's)."""
        self.access_facts: set[tuple[int | None, tuple[str, Key]]] = set()
        """The in-bounds facts of accesses, with their container: proved, not assumed (`add_fact`)."""
        """The symbolic coordinates (by identity) whose bounds are stated, per extent, threads and loops."""
        self._iterations: dict[Key, list[Key]] = {}
        self._shapes: dict[tuple[Any, ...], dict[tuple[int, ...], int]] = {}
        """Per op, its operands and result last time: a later pass over a loop body reuses them."""
        g = pad3(tuple(grid)) if grid else None
        clustered = self.cluster != (1, 1, 1)
        if g is not None and clustered:
            g = tuple(d // c for d, c in zip(g, self.cluster))  # type: ignore[assignment]
        unit = "clusters" if clustered else "grid"
        self.grid_symbols = tuple(
            self.space.symbol(f"{unit}_{a}", "grid", 1 if g is None else g[i], INT32[1] // self.cluster[i] if g is None
                              else g[i]) for i, a in enumerate("xyz"))
        self.block_symbols = tuple(
            self.space.symbol(f"{'cluster' if clustered else 'block'}_{a}", "block", 0,
                              add_keys((0, ((self.grid_symbols[i], 1),)), (-1, ())))
            for i, a in enumerate("xyz"))
        self.parameters: dict[str, int] = {}
        self.facts.update(self.space.constraints)

    # ---- entry -----------------------------------------------------------------------
    def run(self) -> Analysis:
        block = self.kernel.body.block
        names = [n.data for n in self.kernel.arg_names.data]
        for name, param in zip(names, block.args):
            self.values[param] = self.bind(name, param)
        with np.errstate(all="ignore"):
            self.run_block(block, self.everyone)
        for check in self.at_end:
            check()
        self.facts.update(self.space.constraints)
        self.report_write_conflicts()
        return Analysis(self.space, self.table, self.obligations, self.facts, self.replay_facts - self.facts,
                        self.block_symbols, self.grid_symbols, self.parameters, self)  # type: ignore[arg-type]

    def report_write_conflicts(self) -> None:
        """Two threads writing different data to one shared byte with no barrier between them."""
        seen = set()
        for memory in self.memories:
            for conflict in memory.conflicts:
                key = (memory.name, conflict.sites)
                if key in seen:
                    continue
                seen.add(key)
                later = self.sites[conflict.sites[1]] if conflict.sites[1] >= 0 else None
                first = self.sites[conflict.sites[0]] if conflict.sites[0] >= 0 else None
                details = {"memory": memory.name, "byte": conflict.byte, "threads": conflict.threads,
                           "first write at": str(first)}
                def describe(point: int, element: int, model: dict[int, int], site: str = str(later)) -> dict[str, Any]:
                    return {"assertion": site, "block": self.block_of(point, model), "thread": point}

                self.obligations.fault(str(later), "data-race", conflict.threads[1], describe, details)

    def bind(self, name: str, param: SSAValue) -> Any:
        t = param.type
        if isinstance(t, D.TensorType):
            dims = [self.space.constant(d, self.n) if isinstance(d, int) else
                    self.space.of_symbol(self.parameter(str(d), 1), self.n) for d in t.shape]
            return GlobalRef(name, t.dtype, dims)
        dtype = dtype_of_mlir(t)
        if dtype.is_integer:
            return self.space.of_symbol(self.parameter(name, INT32[0]), self.n)
        return None

    def block_of(self, thread: int, model: dict[int, int]) -> tuple[int, int, int]:
        """The block `thread` belongs to, in the launch `model` describes."""
        rank = thread // self.block_threads
        place = (rank % self.cluster[0], rank // self.cluster[0] % self.cluster[1],
                 rank // (self.cluster[0] * self.cluster[1]))
        return tuple(c * self.space.atom_value(s, model) + p  # type: ignore[return-value]
                     for c, s, p in zip(self.cluster, self.block_symbols, place))

    def grid_of(self, model: dict[int, int]) -> tuple[int, int, int]:
        """The grid (in blocks) of the launch `model` describes."""
        return tuple(c * max(1, self.space.atom_value(s, model))  # type: ignore[return-value]
                     for c, s in zip(self.cluster, self.grid_symbols))

    def block_shifts(self, op: Operation, tile: TileValue, thread: int, blocks: int | None) -> list[int]:
        """Bytes from `thread`'s block's segment of `tile`'s memory to each block of the cluster
        mask `blocks` (its own block's only, [0], without a mask)."""
        if blocks is None:
            return [0]
        size = self.blocks
        ranks = [r for r in range(16) if blocks >> r & 1]
        if ranks[-1] >= size:
            raise self.undecidable(op, f"a multicast copy lands in block rank {ranks[-1]} of a cluster of {size} "
                                       "block(s)")
        stride = tile.memory.tags.shape[-1] // size  # one segment per block of the cluster
        own = thread // self.block_threads
        return [(r - own) * stride for r in ranks]

    def parameter(self, name: str, lo: int) -> int:
        """The symbol of a runtime size or scalar; a dim and a scalar of one name are one symbol."""
        ident = self.parameters.get(name)
        if ident is None:
            ident = self.parameters[name] = self.space.symbol(name, "size", lo, INT32[1])
        return ident

    # ---- walking ---------------------------------------------------------------------
    def run_block(self, block: Block, mask: np.ndarray) -> None:
        times = self.step_times
        for step in self.preparation.steps(block):
            if times is None:
                self.run_step(step, mask)
                continue
            start = time.perf_counter()
            self.run_step(step, mask)
            if not isinstance(step, (scf.ForOp, scf.IfOp)) or D.is_unrolled(step):  # (others' steps are timed inside)
                seconds = times.get(id(step), (step, 0.0))[1]
                times[id(step)] = (step, seconds + time.perf_counter() - start)

    def run_step(self, step: Operation | run_plan.Run | run_plan.Products | run_plan.Known,
                 mask: np.ndarray) -> None:
        """One step of a block's plan: an op, a run of copies, or products side by side."""
        if type(step) is run_plan.Run:
            batching.execute(self, step, mask, rules.rule_of)
        elif type(step) is run_plan.Known:
            self.values.update(zip(step.results, step.values))
        elif type(step) is run_plan.Products:
            products_rule(self, step, mask)
        elif type(step) is TileBounds:
            tile_bounds_rule(self, step.op, mask)
        else:
            rule = rules.RULES.get(type(step))
            if rule is None:
                self.computed(step)
            else:
                rule(self, step, mask)

    def reach(self, site: str) -> str:
        """`site`, whose comparison the walk makes here (`reached`)."""
        self.reached.setdefault(site, set()).add((self.obligations.scope, self.path))
        return site

    def path_of(self, thread: int) -> Conjunction:
        """When `thread` gets to the ops being walked: the comparisons its branches make."""
        return tuple((kind, condition.row(thread)) for condition, kind in self.branches)

    def thread_of(self, points: np.ndarray) -> np.ndarray:
        """The threads of points (themselves, unless copies run together)."""
        return points if self.thread_ids is self.tid else self.thread_ids[points]

    def where(self, op: Operation) -> SourceLocation | None:
        return self.locations.get(op)

    def site(self, op: Operation) -> int:
        ident = self.site_ids.get(op)
        if ident is None:
            ident = self.site_ids[op] = len(self.sites)
            self.sites.append(self.locations.get(op))
        return ident

    def int_value(self, ssa: SSAValue, op: Operation) -> Affine:
        v = self.values.get(ssa)
        if isinstance(v, Affine):
            return v
        return self.space.opaque(f"value at {self.where(op)}", self.n)

    def tags_of(self, ssa: SSAValue) -> np.ndarray:
        """A value's byte tags (threads, width); values that are ⊥ everywhere are not stored."""
        t = self.tags.get(ssa)
        if t is None:
            width = byte_width(ssa)
            t = self.zero_tags.get(width)
            if t is None:
                t = self.zero_tags[width] = np.zeros((self.n, width), np.int64)
                t.flags.writeable = False
        return t

    def shape(self, op: Operation) -> tuple[tuple[SSAValue, ...], tuple[SSAValue, ...]]:
        """An op's operands and results, read from the IR once."""
        found = self.shapes_of.get(op)
        if found is None:
            found = self.shapes_of[op] = (tuple(op.operands), tuple(op.results))
        return found

    def computed(self, op: Operation, value: Affine | None = None) -> None:
        """A computed value: ⊥ if every input is ⊥ (constants), ⊤ otherwise."""
        known = None
        operands, results = self.shape(op)
        for v in operands:
            t = self.tags.get(v)
            if t is not None:
                k = any_along(t != BOTTOM)
                known = k if known is None else known | k
        for r in results:
            self.values[r] = value
            if known is None or not known.any():
                self.tags.pop(r, None)
            else:
                self.tags[r] = np.where(known[:, None], TOP, BOTTOM) * np.ones((1, byte_width(r)), np.int64)

    def set_int(self, op: Operation, value: Affine | None) -> None:
        self.computed(op, value)

    def undecidable(self, op: Operation, reason: str) -> Undecidable:
        return Undecidable(reason, self.where(op))

    def points(self) -> tuple[Any, ...]:
        """The points the walk runs over: their count, ids, the all-points mask, each point's
        thread and zero tags by width. Points are the block's threads, or threads × copies
        while copies of an unrolled loop run together (`batching`)."""
        return self.n, self.tid, self.everyone, self.thread_ids, self.zero_tags

    def set_points(self, points: tuple[Any, ...]) -> None:
        """Run over other points (as `points` gives them); `batching` sets a run's copies and
        puts the threads back after it."""
        self.n, self.tid, self.everyone, self.thread_ids, self.zero_tags = points

    def active(self, mask: np.ndarray) -> np.ndarray:
        """The indices of the threads of `mask` (all of them, without a search, when all are)."""
        if mask is self.everyone:
            return self.tid
        return np.flatnonzero(mask)

    def tag_function_inputs(self, name: str) -> list[Any]:
        """What the tag function of global tensor `name` reads: the tag op, the values it
        captures and the variables frozen for it (as objects: `remembered` compares them)."""
        entry = self.tag_functions.get(name)
        if entry is None:
            return [None]
        tag_op, frozen = entry
        return [tag_op, *(self.values.get(v) for v in captured_values(self, tag_op)), *frozen.values()]

    def remembered(self, op: Operation, inputs: list[Any], compute: Callable[[], Any], equal: Any = None) -> Any:
        """`compute()`, or what it gave at `op` before for the same `inputs` (and an equal `equal`,
        hashable): the same objects, or affine values of the same forms (`_identity`). A later
        pass over a loop body reads the same values (the IR is fixed, and values are never
        changed in place), so a rule that only reads them finds the same result — at each
        iteration of a static loop inside, too, whose index and what is computed from it are
        numbers made anew in each pass."""
        memo = self._remembered.get(op)
        if memo is None:
            memo = self._remembered[op] = {}
        key = (*map(_identity, inputs), equal)
        held = memo.get(key)
        if held is not None:  # (the objects its key names by identity are alive: held[0] keeps them)
            return held[1]
        found = compute()
        memo[key] = (inputs, found)
        return found

    def refault(self, faults: list[tuple[Any, ...]]) -> None:
        """Report again the faults a remembered access found (a new pass over a loop body)."""
        for fault in faults:
            self.out_of_bounds(*fault)

    def evaluate_tag_function(self, op: D.TagOp, coords: list[Affine], points: np.ndarray | None = None,
                              frozen: dict[SSAValue, Affine] | None = None) -> list[Affine]:
        """The tag components at `coords` (forms of equal length), the body run symbolically;
        `points[i]` is the thread whose values evaluation i sees (default: i itself); `frozen`
        holds the values variables had when a tensor's tag function was set."""
        n = len(coords[0]) if coords else self.n
        threads = self.thread_of(np.arange(n) % self.n) if points is None else points
        env: dict[SSAValue, Affine] = dict(zip(op.body.block.args, coords))
        sp = self.space

        def value(v: SSAValue) -> Affine:
            if v in env:
                return env[v]
            outer = self.values.get(v)
            if not isinstance(outer, Affine):
                raise VerificationError("a tag function uses a value that is not an integer known to the checker",
                                        self.where(op))
            return outer if points is None and len(outer) == n else outer.take(threads)

        for inner in op.body.block.ops:
            if isinstance(inner, D.YieldTagOp):
                return [value(v) for v in inner.values]
            if isinstance(inner, arith.ConstantOp):
                env[inner.result] = sp.constant(int(inner.value.value.data), n)  # type: ignore[union-attr]
                continue
            if isinstance(inner, D.VarLoadOp):  # a variable assigned in a runtime loop or branch
                held = (frozen or {}).get(inner.var)
                if held is None:
                    slot = self.values.get(inner.var)
                    if not isinstance(slot, Slot) or slot.value is None:
                        raise VerificationError("a tag function uses a variable that does not hold an integer the "
                                                "checker follows", self.where(op))
                    if slot.tracked and not slot.stored:
                        slot.exposed = True  # read before this loop pass assigns it: carried
                    held = slot.value
                env[inner.results[0]] = held.take(threads)
                continue
            if type(inner) in D.INDEX_OPS:  # thread_idx.x and friends, per evaluation point
                rules.RULES[type(inner)](self, inner, np.ones(self.n, bool))
                env[inner.results[0]] = self.values[inner.results[0]].take(threads)
                continue
            rule = INT_RULES.get(type(inner))
            if rule is None:
                raise VerificationError(f"tag functions use integer arithmetic on their coordinates, on thread and "
                                        f"block indices and on values computed before them; {inner.name} is not "
                                        "supported", self.where(op))
            env[inner.results[0]] = rule(sp, inner, [value(v) for v in inner.operands])
        return []


def _identity(value: Any) -> Any:
    """What `TagAnalysis.remembered` tells inputs apart by: an affine value by its forms (its
    constants and terms, as bytes with their types), anything else by its identity (kept alive by
    the memo, so never another object's)."""
    if type(value) is Affine:
        return (len(value), value.const.dtype.str, value.const.tobytes(),
                *((t, column.dtype.str, column.tobytes()) for t, column in sorted(value.terms.items())))
    return id(value)
