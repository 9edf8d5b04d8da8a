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
checked on the last pass. Accesses to global memory outside symbolic branches are assumed in
bounds: those facts join the domain, so witnesses are launches a caller could make.

Clusters: the blocks of a cluster are analysed together, as the interpreter runs them: the
threads enumerated are the cluster's (block after block), the symbols are the cluster's
index and the grid's size in clusters, and a thread's block index is its cluster's first
block plus its block's place in the cluster. Shared tiles hold one segment per block.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
from argus.verify.affine import Affine, Space, Uniform, add_keys, runs, sub_keys, unique_rows
from argus.verify.obligations import Obligations
from argus.verify.tags import BOTTOM, BYTES, TOP, TagTable, join
from xdsl.dialects import arith, math, scf

from ..errors import VerificationError
from ..ir import dialect as D
from ..ir.dialect import pad3
from ..ir.types import dtype_of_mlir
from ..machine.tiles import offset_table
from . import batching, rules
from .access import (
    alloc_rule,
    atomic_rule,
    byte_perm_rule,
    concat_rule,
    copy_rule,
    extract_rule,
    load_rule,
    partition_rule,
    same_bytes_rule,
    shuffle_rule,
    store_rule,
    tensor_view_rule,
    tile_bounds_rule,
    var_load_rule,
    var_rule,
    var_store_rule,
    view_rule,
)
from .arithmetic import (
    INT_RULES,
    cast_rule,
    constant_rule,
    dim_rule,
    index_rule,
    int_op_rule,
    lane_or_warp_rule,
    select_int,
)
from .control import for_rule, if_rule
from .initialization import Initialization, UNKNOWN_PATHS, written
from .preparation import Preparation
from .product_reads import OperandMemory
from .products import mma_rule, mma_wait_rule, products_rule
from .reports import conditional_finding, describer
from .rules import float_op_rule, nothing_rule
from .state import (
    Analysis,
    GlobalRef,
    INT32,
    Slot,
    State,
    TileBounds,
    Undecidable,
    address_fingerprint,
    byte_width,
    key_component,
    same_objects,
    same_values,
)
from .tags import assert_rule, assume_rule, captured_values, reset_rule, sync_rule, tag_rule

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from argus.verify.affine import Key
    from argus.verify.memory import TagMemory
    from xdsl.ir import Block, Operation, SSAValue
    from ..errors import SourceLocation
    from ..interpreter import TileValue
    from .initialization import Conjunction, Paths
    from .product_reads import InFlight
    from .rules import Rule
    from .state import LoopContext


class TagAnalysis:
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
        self.footprint: batching.Footprint | None = None
        self.step_times: dict[int, tuple[Any, float]] | None = None
        """Where set, per step of the walk (by identity: an op, or a `batching` step), the step and
        its wall time in seconds, summed over passes over loop bodies (`verify_speed.py --steps`)."""
        self.space = Space()
        self.table = TagTable(self.space)
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
        self.written_globals: set[str] = set()
        self.read_globals: set[str] = set()
        self.sites: list[SourceLocation | None] = []
        self.site_ids: dict[Operation, int] = {}
        self.loops: list[LoopContext] = []
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
        self._remembered: dict[Operation, tuple[list[Any], Any, Any]] = {}
        """Per op, what `remembered` computed last and from which inputs."""
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

    def run_step(self, step: Operation | batching.Run | batching.Products | batching.Known,
                 mask: np.ndarray) -> None:
        """One step of a block's plan: an op, a run of copies, or products side by side."""
        if type(step) is batching.Run:
            batching.execute(self, step, mask, rules.rule_of)
        elif type(step) is batching.Known:
            self.values.update(zip(step.results, step.values))
        elif type(step) is batching.Products:
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

    def read_tags(self, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray,
                  sites: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """Tags at byte indices `idx` (rows: `threads`, those of `points`), and the sites that
        wrote them if asked; in a run of copies, as program order leaves them (`batching`)."""
        if self.footprint is not None:
            return self.footprint.read(memory, idx, threads, points, sites)
        tags = memory.read(idx, threads)
        if not sites:
            return tags, None
        return tags, (memory.site.reshape(-1)[threads[:, None] * memory.tags.shape[1] + idx] if memory.per_thread
                      else memory.site[idx])

    def write_status(self, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray
                     ) -> np.ndarray:
        """Whether something wrote bytes `idx` (rows: `threads`, of `points`) before the points
        read them (in a run of copies, in program order), as sites: a write's (or `RESET`) where
        one did, `NEVER` where none did, a code of `initialization` where one did on some paths
        only. While a loop tracks what its body reads before writing, this is such a read where
        the bytes are not known to be written (what the iteration before wrote may change that)."""
        if self.footprint is not None:
            return self.footprint.write_status(memory, idx, threads, points)
        at = threads[:, None] * memory.tags.shape[1] + idx if memory.per_thread else idx
        status = memory.site.reshape(-1)[at]
        if memory.exposed is not None and memory.fresh is not None:
            open_ = at[~written(status)]
            memory.exposed.reshape(-1)[open_] |= ~memory.fresh.reshape(-1)[open_]
        return status  # type: ignore[no-any-return]

    def write_tags(self, memory: TagMemory, idx: np.ndarray, tags: np.ndarray, threads: np.ndarray,
                   points: np.ndarray, site: int) -> None:
        """Thread `threads[r]` (of `points[r]`) writes `tags[r]` at bytes `idx[r]`."""
        if self.footprint is not None:
            self.footprint.write(memory, idx, tags, threads, points, site)
        else:
            memory.write(idx, tags, threads, site)

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
                k = (t != BOTTOM).any(axis=-1)
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

    # ---- memories ----------------------------------------------------------------------
    def concrete_offsets(self, op: Operation, value: Affine, what: str) -> np.ndarray:
        if value.concrete:
            return value.const
        symbols = sorted({self.space.describe_atom(a) for a in value.terms})
        if any(self.space.atoms[a].kind == "opaque" for a in value.terms):
            raise VerificationError(
                f"the {what} depends on data read from memory; the checker needs shared and register addresses "
                "computed from thread ids, unrolled loop indices and constants", self.where(op))
        raise self.undecidable(op, f"the {what} depends on {', '.join(symbols)}; the checker enumerates shared and "
                                   "register addresses and needs them to depend only on thread ids, unrolled loop "
                                   "indices and constants")

    def tile_bytes(self, op: Operation, tile: TileValue, coords: list[Affine] | None, offset: Affine | None,
                   mask: np.ndarray) -> np.ndarray:
        """Byte indices (active threads, bytes) of one element per active thread of a tile
        (remembered per op, like global tags)."""
        inputs = [tile, mask, *([offset] if offset is not None else coords or [])]
        memo = self._addresses.get(op)
        # a later pass over a loop body: the same objects, or equal ones (compared only then:
        # most ops are visited once, and values are never changed in place)
        if memo is not None and (same_objects(memo[2], inputs)
                                 or address_fingerprint(memo[2]) == address_fingerprint(inputs)):
            self.refault(memo[1])
            return memo[0]  # type: ignore[no-any-return]
        mark = len(self.faults)
        idx = self._tile_bytes(op, tile, coords, offset, mask)
        self._addresses[op] = (idx, self.faults[mark:], inputs)
        return idx

    def _tile_bytes(self, op: Operation, tile: TileValue, coords: list[Affine] | None, offset: Affine | None,
                    mask: np.ndarray) -> np.ndarray:
        active = self.active(mask)
        if offset is not None:
            offsets = self.concrete_offsets(op, offset, "address")[active]
        else:
            assert coords is not None
            table, sizes = offset_table(tile.layout)
            sizes = sizes if len(coords) > 1 else [table.size]
            values = [self.concrete_offsets(op, c, "tile coordinate") for c in coords]
            if active is not self.tid:
                values = [v[active] for v in values]
            flat, reported, stride = None, False, 1
            checked = id(op) in self.preparation.traced_accesses  # (by the front end, as it traced them)
            for axis, (v, n) in enumerate(zip(values, sizes)):
                if not checked and v.size and (v.min() < 0 or v.max() >= n):
                    bad = (v < 0) | (v >= n)
                    if not reported:  # the first offender is reported; the others read inside, as clipped
                        row = int(np.flatnonzero(bad)[0])
                        self.out_of_bounds(op, int(active[row]), tuple(int(w[row]) for w in values),
                                           f"{'shared' if not tile.memory.per_thread else 'register'} tile "  # type: ignore[attr-defined]
                                           f"{tile.layout}, mode {axis} has size {n}")
                        reported = True
                    v = np.clip(v, 0, n - 1)
                term = v * stride if stride != 1 else v  # mode 0 fastest, as tiles number their elements
                flat = term if flat is None else flat + term
                stride *= n
            offsets = tile.offsets(np.zeros(active.size, np.int64) if flat is None else flat, self.thread_of(active))
        nbytes = tile.dtype.nbytes
        return runs(offsets * nbytes, nbytes) if nbytes > 1 else offsets[:, None]

    def active(self, mask: np.ndarray) -> np.ndarray:
        """The indices of the threads of `mask` (all of them, without a search, when all are)."""
        if mask is self.everyone:
            return self.tid
        return np.flatnonzero(mask)

    def global_tags(self, op: Operation, ref: GlobalRef, coords: list[Affine], active: np.ndarray,
                    bounded: bool = True) -> np.ndarray:
        """Byte tags (threads, bytes) of the elements of a global tensor at `coords` (remembered
        per op: later passes over a loop body load the same forms). A `bounded` access is in
        bounds in every launch considered (a fact of the domain); an unbounded one (a target's
        protected load, which reads zero outside) adds no fact, and where it falls outside the
        tags it gives belong to data that is all zero, which pairs with anything."""
        if bounded:
            self.in_bounds(op, ref, coords, active)
        name = (ref.root or ref).name
        if name in self.written_globals:
            raise self.undecidable(op, f"the kernel reads tensor {name!r}, which it also writes; the checker "
                                       "takes global tensors as read-only or write-only")
        self.read_globals.add(name)
        inputs = [ref, active, *coords, *self.tag_function_inputs(name)]
        return self.remembered(op, inputs, lambda: self._global_tags(op, ref, coords, active))

    def tag_function_inputs(self, name: str) -> list[Any]:
        """What the tag function of global tensor `name` reads: the tag op, the values it
        captures and the variables frozen for it (as objects: `remembered` compares them)."""
        entry = self.tag_functions.get(name)
        if entry is None:
            return [None]
        tag_op, frozen = entry
        return [tag_op, *(self.values.get(v) for v in captured_values(self, tag_op)), *frozen.values()]

    def remembered(self, op: Operation, inputs: list[Any], compute: Callable[[], Any], equal: Any = None) -> Any:
        """`compute()`, or what it gave at `op` last time if `inputs` are the same objects (and
        `equal`, say the active threads, compares equal): a later pass over a loop body reads
        the same values (the IR is fixed, and values are never changed in place), so a rule
        that only reads them finds the same result."""
        memo = self._remembered.get(op)
        if memo is not None and same_objects(memo[0], inputs) and memo[1] == equal:
            return memo[2]
        found = compute()
        self._remembered[op] = (inputs, equal, found)
        return found

    def refault(self, faults: list[tuple[Any, ...]]) -> None:
        """Report again the faults a remembered access found (a new pass over a loop body)."""
        for fault in faults:
            self.out_of_bounds(*fault)

    def _global_tags(self, op: Operation, ref: GlobalRef, coords: list[Affine], active: np.ndarray) -> np.ndarray:
        root = ref.root or ref
        if root.name in self.written_globals:
            raise self.undecidable(op, f"the kernel reads tensor {root.name!r}, which it also writes; the checker "
                                       "takes global tensors as read-only or write-only")
        entry = self.tag_functions.get(root.name)
        out = np.zeros((self.n, ref.dtype.nbytes), np.int64)
        if entry is None:
            return out
        width, root_width = ref.dtype.nbytes, root.dtype.nbytes
        if ref.root is None or width == root_width:
            _, coords = self.root_coordinates(ref, coords)
            out[active] = self.intern(self.evaluate_tag_function(entry[0], coords, frozen=entry[1]), width)[active]
            return out
        # a view of another element width: byte b of the view element at flat index i is byte
        # (i·width + b) mod root_width of the root element (i·width + b) // root_width
        if width % root_width and root_width % width:
            raise self.undecidable(op, f"a view of {root.name!r} whose elements ({width} bytes) neither hold whole "
                                       f"elements of it ({root_width} bytes) nor divide them")
        # A view keeping the root's leading dims has rows of the root's byte size (a launch whose
        # view covers other bytes than its tensor faults), so only the last coordinate changes
        # units: no division by a runtime size, which the solver would find hard.
        same_rows = len(ref.dims) == len(root.dims) and all(
            v.row(0) == r.row(0) for v, r in zip(ref.dims[:-1], root.dims[:-1]))
        position = coords[-1] if same_rows else self.flat_index(ref, coords)
        # every byte of the view element at once: point b·n + p is byte b of point p's element
        n = self.n
        every = np.tile(np.arange(n), width)
        bytes_ = self.space.constant(np.repeat(np.arange(width), n), n * width)
        at = self.space.add(self.space.scale(position.take(every), width), bytes_)
        element = self.space.floordiv(at, self.space.constant(root_width, n * width))
        byte = self.space.mod(at, self.space.constant(root_width, n * width))
        if not byte.concrete:
            raise self.undecidable(op, f"which byte of {root.name!r} a narrower view reads depends on runtime values")
        root_coords = [*(c.take(every) for c in coords[:-1]), element] if same_rows else \
            self.unflatten(GlobalRef(root.name, root.dtype, [d.take(every) for d in root.dims]), element)
        ids = self.intern(self.evaluate_tag_function(entry[0], root_coords, frozen=entry[1]), root_width)
        picked = ids[np.arange(n * width), byte.const].reshape(width, n).T
        out[active] = picked[active]
        return out

    def flat_index(self, ref: GlobalRef, coords: list[Affine]) -> Affine:
        """The row-major element index of `coords` in `ref`."""
        flat = coords[0]
        for c, d in zip(coords[1:], ref.dims[1:]):
            flat = self.space.add(self.space.mul(flat, d), c)
        return flat

    def unflatten(self, tensor: GlobalRef, flat: Affine) -> list[Affine]:
        """The coordinates of row-major element index `flat` of `tensor`. The outermost one is not
        reduced modulo its extent: accesses are bounded by their view's extents, which cover the
        tensor (a launch faults otherwise), so that would only ask the solver for a no-op division
        by a runtime size."""
        out = []
        for d in reversed(tensor.dims[1:]):
            out.append(self.space.mod(flat, d))
            flat = self.space.floordiv(flat, d)
        return [flat, *out[::-1]] if tensor.dims else []

    def root_coordinates(self, ref: GlobalRef, coords: list[Affine]) -> tuple[GlobalRef, list[Affine]]:
        """The coordinates in the viewed tensor of an element of a view of the same width."""
        if ref.root is None:
            return ref, coords
        return ref.root, self.unflatten(ref.root, self.flat_index(ref, coords))

    def out_of_bounds(self, op: Operation, thread: int, index: Any, what: str) -> None:
        """An access out of bounds for every launch; `index` may be a callable computing it."""
        self.faults.append((op, thread, index, what))
        if self.checking:
            index = index() if callable(index) else index
            describe = describer(self, op, str(self.where(op)), np.arange(self.n))
            self.obligations.fault(str(self.where(op)), "out-of-bounds", thread, describe,
                                   {"index": index, "extent": what})

    def in_bounds(self, op: Operation, ref: GlobalRef, coords: list[Affine], active: np.ndarray) -> None:
        """Outside symbolic branches, a launch's accesses are in bounds: a fact of the domain."""
        if not active.any():
            return
        if self.guards:
            if self.checking:
                self.bounds_under_branches(op, ref, coords, active)
            return
        memo = self._bounds.get(op)
        if memo is not None and same_objects(memo[0], [ref, active, *coords]):
            self.refault(memo[1])
            for fact in memo[2]:  # a later pass states the same facts (an earlier one may be gone)
                self.add_fact(fact)
            self.replay_facts.update(memo[3])
            return
        mark = len(self.faults)
        scope = self.obligations.scope
        here = set(self.loop_facts[scope[-1]]) if scope else set(self.facts)
        replay = set(self.replay_facts)
        self._in_bounds(op, ref, coords, active)
        now = set(self.loop_facts[scope[-1]]) if scope else set(self.facts)
        self._bounds[op] = ([ref, active, *coords], self.faults[mark:], now - here, self.replay_facts - replay)

    def bounds_under_branches(self, op: Operation, ref: GlobalRef, coords: list[Affine], active: np.ndarray) -> None:
        """An access under a branch on a runtime condition states no fact (the branch may be what
        keeps it in bounds), but one out of bounds in every launch, as the bounds of the symbols
        tell (`x[n + thread_idx.x]` of a tensor of `n`), is a fault wherever its thread gets to
        it: a finding in the launches whose branches take a thread there."""
        if not all(type(c) is Affine or type(c) is Uniform for c in coords):
            return  # (a coordinate read from memory: the interpreter's to check)
        points, space = self.active(active), self.space
        for axis, (c, d) in enumerate(zip(coords, ref.dims)):
            for margin in (c, space.add(space.sub(d, c), space.constant(-1, len(c)))):  # both ≥ 0 in bounds
                outside = points[self.initialization.highest(margin, points) < 0]
                if outside.size:
                    threads = [int(t) % self.threads for t in np.unique(self.thread_of(outside))]
                    index = tuple(space.describe(x.row(int(outside[0]))) for x in coords)
                    conditional_finding(self, op, "out-of-bounds", [self.path_of(t) for t in threads], threads,
                                 {"index": index, "extent": f"tensor {ref.name!r}, mode {axis}"})
                    return

    def _in_bounds(self, op: Operation, ref: GlobalRef, coords: list[Affine], active: np.ndarray) -> None:
        points = self.active(active)
        scope = self.obligations.scope
        for axis, (c, d) in enumerate(zip(coords, ref.dims)):
            if c.concrete and d.concrete:  # numbers on both sides: only an overrun to report
                values, extent = c.const[points], int(d.const[0])
                bad = (values < 0) | (values >= extent)
                if bad.any():
                    row = int(np.flatnonzero(bad)[0])
                    self.out_of_bounds(op, int(points[row]), tuple(int(x.const[points[row]]) for x in coords),
                                       f"tensor {ref.name!r}, mode {axis} has size {extent}")
                continue
            # one coordinate value bounded by one extent, for the same threads in the same loops,
            # states the same facts: the copies a static loop unrolls share many coordinates
            seen = (id(c), id(d), id(active), scope)
            if seen in self.bounded:
                continue
            faults = len(self.faults)
            self._bound_axis(op, ref, coords, axis, points)
            if len(self.faults) == faults:  # an overrun is reported at every access that makes it
                self.bounded[seen] = (c, d, active)  # kept alive, so that no other value takes an id

    def _bound_axis(self, op: Operation, ref: GlobalRef, coords: list[Affine], axis: int, points: np.ndarray) -> None:
        """The facts that coordinate `axis` of the access is within its extent, for `points`:
        two per symbolic part the points' coordinates have (its least and its greatest constant).
        Points have different parts when copies of an op run together, or when each thread has
        its own unknown (`min(row0 + ty, rows - 1)`)."""
        value = coords[axis]
        # per symbolic part: (the part, its least and greatest constant, the rows holding them)
        bounds: list[tuple[Any, int, int, int, int]]
        if type(value) is Uniform:  # one form at every point (a block index, a size)
            bounds = [(value.key[1], value.key[0], value.key[0], 0, 0)]
        else:
            rows = value if points.size == len(value) else value.take(points)  # (all points: in order)
            atoms = sorted(rows.terms)
            if all(rows.terms[a].min() == rows.terms[a].max() for a in atoms):
                parts = [(tuple((a, c) for a in atoms if (c := int(rows.terms[a][0]))), None)]
            else:
                unique, inverse = unique_rows(np.stack([rows.terms[a] for a in atoms], axis=1))
                inverse = np.reshape(inverse, -1)
                parts = [(tuple((a, c) for a, c in zip(atoms, row) if c), np.flatnonzero(inverse == u))
                         for u, row in enumerate(unique.tolist())]
            bounds = []
            for terms, members in parts:
                const = rows.const if members is None else rows.const[members]
                low, high = int(const.argmin()), int(const.argmax())
                if members is not None:
                    low, high = int(members[low]), int(members[high])
                bounds.append((terms, int(rows.const[low]), int(rows.const[high]), low, high))
        extent = add_keys(ref.dims[axis].row(0), (-1, ()))
        for terms, least, greatest, low, high in bounds:
            for fact, row in ((("ge0", (least, terms)), low), (("ge0", sub_keys(extent, (greatest, terms))), high)):
                if self.implied(fact[1]):  # so are the same bounds in the loops' first and last iterations
                    continue
                point, space = int(points[row]), self.space

                def where(point: int = point) -> tuple[str, ...]:  # (not through `self`: no cycle to collect)
                    return tuple(space.describe(x.row(point)) for x in coords)

                origin = (op, point % self.threads, where, f"tensor {ref.name!r}, mode {axis}")
                for key in self.every_iteration(fact[1]):
                    if key[1] and key == fact[1]:
                        self.add_fact(("ge0", key))
                        self.fact_origins.setdefault(("ge0", key), origin)
                    elif key[1]:
                        self.replay_facts.add(("ge0", key))
                        self.fact_origins.setdefault(("ge0", key), origin)
                    elif key[0] < 0:  # out of bounds in every launch
                        self.out_of_bounds(*origin)
                        break

    def add_fact(self, fact: tuple[str, Key]) -> None:
        """A fact of the domain where the analysis is: inside a runtime loop, of that loop only
        (a launch in which it runs no iteration must stay in the domain of what follows)."""
        scope = self.obligations.scope
        if scope:
            facts = self.loop_facts[scope[-1]]
            if fact not in facts:
                facts.append(fact)
        else:
            self.facts.add(fact)
        kind, (k, part) = fact
        if kind == "ge0" and part:
            where = (scope[-1] if scope else None, part)
            self.floors[where] = min(k, self.floors.get(where, k))

    def implied(self, key: Key) -> bool:
        """Whether the bound ``key ≥ 0`` follows from one already stated where the analysis is
        (the same symbolic part, a constant no larger)."""
        if not key[1]:
            return False
        scope = self.obligations.scope
        least = self.floors.get((scope[-1] if scope else None, key[1]))
        return least is not None and least <= key[0]

    def check_read(self, op: Operation, memory: TagMemory, idx: np.ndarray, threads: np.ndarray,
                   by_group: bool = False) -> None:
        """A thread reading shared bytes another thread wrote since the last barrier: a race.
        A read `by_group` (an atom's shared operand, read by the group led by each of
        `threads`) races with a write by any thread, its own included."""
        if memory.per_thread or not self.checking:
            return
        writers = memory.epoch_writer[idx.reshape(threads.size, -1)]
        unordered = (writers != -1) if by_group else (writers != -1) & (writers != threads[:, None])
        if unordered.any():
            row, col = (int(x[0]) for x in np.nonzero(unordered))
            reader, writer = int(threads[row]), int(writers[row, col])
            site = str(self.where(op))
            self.obligations.fault(site, "data-race", reader, describer(self, op, site, np.arange(self.n)),
                                   {"memory": memory.name, "byte": int(idx.reshape(threads.size, -1)[row, col]),
                                    "threads": (writer, reader), "why": "read before a barrier orders the write"})

    def check_overwrite(self, op: Operation, memory: TagMemory, idx: np.ndarray, threads: np.ndarray) -> None:
        """A thread writing shared bytes that the product of a group it is not in read since the
        last barrier: a race (`product_reads`). The write that follows is the one checked."""
        if not isinstance(memory, OperandMemory):
            return
        memory.checked = True
        if not self.checking or self.check_in_flight(op, memory, idx, threads):
            return
        rows = idx.reshape(threads.size, -1)
        unordered = memory.unordered(rows, threads)
        if unordered.any():
            row, col = (int(x[0]) for x in np.nonzero(unordered))
            writer, byte = int(threads[row]), int(rows[row, col])
            site = str(self.where(op))
            reader = int(memory.readers.epoch_writer[byte])  # type: ignore[union-attr]
            self.obligations.fault(site, "data-race", writer, describer(self, op, site, np.arange(self.n)),
                                   {"memory": memory.name, "byte": byte, "threads": (reader, writer),
                                    "why": "written before a barrier orders a matrix product that read it"})

    def check_in_flight(self, op: Operation, memory: TagMemory, idx: np.ndarray, threads: np.ndarray) -> bool:
        """Thread `threads[r]` writing shared bytes `idx[r]` that a product started with
        `matmul_async` may still read: a race, whoever writes (its own group too, a backend's
        bulk copy) and whatever barriers came between, until the `matmul_wait` that retires
        the product. Whether one was reported."""
        pending = memory.pending if isinstance(memory, OperandMemory) else None
        if pending is None or not self.checking:
            return False
        rows = idx.reshape(threads.size, -1)
        running, leaders = pending.running(rows)
        if not running.any():
            return False
        row, col = (int(x[0]) for x in np.nonzero(running))
        writer, byte = int(threads[row]), int(rows[row, col])
        site = str(self.where(op))
        self.obligations.fault(site, "data-race", writer, describer(self, op, site, np.arange(self.n)),
                               {"memory": memory.name, "byte": byte, "threads": (int(leaders[row, col]), writer),
                                "why": "written while a product started with matmul_async may still read it (a "
                                       "barrier does not retire it: the matmul_wait that does comes later)"})
        return True

    def every_iteration(self, key: Key) -> list[Key]:
        """A fact about one iteration of the enclosing runtime loops, and the same fact for their
        first and last iterations (an affine quantity is extreme at the ends of its range). The
        first is the domain of the proof; the others pick witnesses whose launches stay in bounds
        in every iteration they run (they do not shrink the domain: a kernel that goes out of
        bounds at K > 16 is still checked at K > 16)."""
        known = self._iterations.get(key)
        if known is not None:
            return known
        out = [key]
        involved = self.space.atoms_of(key)
        for context in reversed(self.loops):
            if context.symbol is None or context.symbol not in involved:
                continue  # the fact does not move with this loop's index
            if context.ends is None:
                symbol = self.space.symbols[context.symbol]
                assert symbol.lo is not None and symbol.hi is not None
                context.ends = (symbol.lo, sub_keys(symbol.hi, self.space._mod(sub_keys(symbol.hi, symbol.lo),
                                                                               (context.step, ()))))
            out = [self.space.substitute(k, context.symbol, end) for k in out for end in context.ends] + out
        result = self._iterations[key] = list(dict.fromkeys(out))
        return result

    def intern(self, comps: list[Affine], nbytes: int) -> np.ndarray:
        """Byte ids (points, nbytes) of the tags whose components are `comps`."""
        if all(type(c) is Uniform or all(t.min() == t.max() for t in c.terms.values()) for c in comps):
            # every point shares each component's symbolic part: only the constants vary, and
            # tags of one shape are looked up by their constants alone
            parts = tuple(c.key[1] if type(c) is Uniform else tuple((a, int(t[0])) for a, t in sorted(c.terms.items()))
                          for c in comps)  # (a `Uniform` keeps its form as a key: no arrays made from it)
            known = self._shapes.get(parts)
            if known is None:
                known = self._shapes[parts] = {}
            element = self.table.element_id
            if not comps:
                return self.table.bytes_of(np.full(self.n, element(()), np.int64), nbytes)
            if len(comps[0]) <= 64:  # a lookup per point: cheaper than finding the distinct rows first
                def ident(key: tuple[int, ...]) -> int:
                    found = known.get(key)
                    if found is None:
                        found = known[key] = element(tuple((v, part) if part else v for v, part in zip(key, parts)))
                    return found

                rows = np.stack([c.const for c in comps], axis=1)
                ids = np.fromiter(map(ident, map(tuple, rows.tolist())), np.int64, len(rows))
                return self.table.bytes_of(ids, nbytes)
            # one lookup per distinct row of constants (a tile's elements share few), the tags
            # made column by column; a component with one form everywhere is no column to search
            varying = [c.const for c in comps if type(c) is not Uniform]
            unique, inverse = unique_rows(np.stack(varying, axis=1) if varying else np.zeros((len(comps[0]), 0), np.int64))
            found = iter(unique.T.tolist())
            columns = [next(found) if type(c) is not Uniform else [c.key[0]] * len(unique) for c in comps]
            columns = [[(v, part) for v in column] if part else column for column, part in zip(columns, parts)]
            ids = np.fromiter(map(element, zip(*columns)), np.int64, len(unique))
            return self.table.bytes_of(ids[np.reshape(inverse, -1)], nbytes)
        # component by component: each point's component as an index into its distinct values,
        # then one tag per distinct combination of indices
        n = len(comps[0])
        values: list[list[Any]] = []
        indices = np.empty((n, len(comps)), np.int64)
        for j, c in enumerate(comps):
            seen: dict[Any, int] = {}
            if c.concrete:
                indices[:, j] = [seen.setdefault(v, len(seen)) for v in c.const.tolist()]
            else:
                forms, inverse = c.forms()
                places = [seen.setdefault(key_component(key), len(seen)) for key in forms]
                indices[:, j] = np.asarray(places, np.int64)[inverse]
            values.append(list(seen))
        unique, inverse = unique_rows(indices)
        element = self.table.element_id
        ids = np.fromiter((element(tuple(values[j][i] for j, i in enumerate(row))) for row in unique.tolist()),
                          np.int64, len(unique))
        return self.table.bytes_of(ids[np.reshape(inverse, -1)], nbytes)

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

    def track(self, scope: tuple[int, int]) -> None:
        """Record, for the memories and variables of `scope`, what is read before being written."""
        for m in self.memories[:scope[0]]:
            m.track()
        for slot in self.slots[:scope[1]]:
            slot.stored = slot.exposed = False
            slot.tracked = True

    def tracking(self) -> list[tuple[Any, ...]]:
        """What a loop pass has recorded so far (written and read-first bytes and variables)."""
        out: list[tuple[Any, ...]] = []
        for m in self.memories:
            if m.fresh is not None and m.exposed is not None:
                out.append((m, m.fresh.copy(), m.exposed.copy()))
        for slot in self.slots:
            if slot.tracked:
                out.append((slot, slot.stored, slot.exposed))
        return out

    def set_tracking(self, recorded: list[tuple[Any, ...]]) -> None:
        for owner, written, read in recorded:
            if isinstance(owner, Slot):
                owner.stored, owner.exposed = written, read
            else:
                owner.fresh, owner.exposed = written.copy(), read.copy()

    def join_tracking(self, other: list[tuple[Any, ...]]) -> None:
        """After two sides of a branch: written only where both sides wrote, read-first where
        either side read first."""
        for owner, written, read in other:
            if isinstance(owner, Slot):
                owner.stored, owner.exposed = owner.stored and written, owner.exposed or read
            elif owner.fresh is not None and owner.exposed is not None:
                owner.fresh &= written
                owner.exposed |= read

    def untrack(self, scope: tuple[int, int]) -> tuple[list[np.ndarray], list[bool]]:
        memories = [m.untrack() for m in self.memories[:scope[0]]]
        slots = []
        for slot in self.slots[:scope[1]]:
            slots.append(slot.exposed)
            slot.tracked = False
        return memories, slots

    # ---- state snapshots for joins ----------------------------------------------------
    def snapshot(self, scope: tuple[int, int] | None = None) -> State:
        """The tags of every memory and variable that exists (or the first `scope` of them)."""
        k, v = scope or (len(self.memories), len(self.slots))
        # registers never race: their writers since the last barrier are not part of the state
        return State([(m.tags.copy(), m.site.copy(), None if m.per_thread else m.epoch_writer.copy())
                      for m in self.memories[:k]],
                      [(s.tags.copy(), s.value) for s in self.slots[:v]])

    def restore(self, state: State) -> None:
        for m, (tags, site, writers) in zip(self.memories, state.memories):
            m.tags[...] = tags
            m.site[...] = site
            if writers is not None:
                m.epoch_writer[...] = writers
        for s, (tags, value) in zip(self.slots, state.slots):
            s.tags, s.value = tags.copy(), value

    def join_into(self, other: State, condition: Affine | None, carried: str = "", loop: int | None = None,
                  origin: str = "", first: Key | None = None, paths: Paths = UNKNOWN_PATHS, step: int = 1
                  ) -> None:
        """The current state becomes its join with `other`. Integer variables that differ become
        a select on `condition` or, across loop iterations (`carried`), a value the checker
        does not follow. At a loop's entry (`other` the back edge, renamed to iteration `loop`,
        which starts at `first`), a tag that is the current one at the first iteration is the
        loop's own: the join keeps it (what a pipeline stage holds, as a function of the index).
        A byte written on one path only is written in the launches that take that path, as
        `paths` says when `other` and the current state's path are taken; at a loop's entry
        (whose index moves by `step`), in the iterations after one that wrote it
        (`initialization`)."""
        for m, (tags, site, writers) in zip(self.memories, other.memories):
            if loop is not None and first is not None:
                m.tags[...] = self.inductive_join(m.tags, tags, loop, first)
            else:
                differ = m.tags != tags  # `join`, in place
                if differ.any():
                    m.tags[differ] = TOP
            if first is not None and loop is not None:  # (a loop's entry: the first iteration starts from
                self.initialization.enter(m, m.site, site, loop, first, step)  # the current state)
            else:
                self.initialization.join(m, m.site, site, paths)
            if writers is not None:
                m.epoch_writer[...] = m.join_writers(m.epoch_writer, writers)
        for i, (s, (tags, value)) in enumerate(zip(self.slots, other.slots)):
            s.tags = join(s.tags, tags)
            label = f"{carried or f'a value joined from two paths at {origin}'} (variable {i})"
            scope = self.obligations.scope
            s.value = self.join_values(condition, value, s.value, label,
                                       loop if loop is not None else (scope[-1] if scope else None),
                                       select=not carried)

    def inductive_join(self, ours: np.ndarray, theirs: np.ndarray, loop: int, first: Key) -> np.ndarray:
        """`join(ours, theirs)`, except where `theirs` (a tag of loop iteration `loop`) equals
        `ours` when the index takes its `first` value: there it is `theirs`."""
        out = join(ours, theirs)
        where = np.flatnonzero((ours > TOP) & (theirs > TOP) & (ours != theirs))
        if where.size == 0:
            return out
        before, back = ours.reshape(-1)[where], theirs.reshape(-1)[where]
        aligned = (before - 2) % BYTES == (back - 2) % BYTES  # the same byte of two elements
        where, before, back = where[aligned], (before[aligned] - 2) // BYTES, back[aligned]
        if where.size == 0:
            return out
        width = int(((back - 2) // BYTES).max()) + 1
        pairs = before * width + (back - 2) // BYTES  # (element before, element in the loop) as one key
        accepted = []
        for key in np.unique(pairs).tolist():
            was, now = divmod(key, width)
            at_first = tuple(key_component(self.space.substitute(v, loop, first)) if isinstance(v, tuple) else v
                             for v in self.table.tags[now])
            if self.table.element_id(at_first) == was:
                accepted.append(key)
        if accepted:
            hit = np.isin(pairs, accepted)
            out[np.unravel_index(where[hit], out.shape)] = back[hit]
        return out

    def join_values(self, condition: Affine | None, a: Affine | None, b: Affine | None, label: str,
                    loop: int | None = None, select: bool = True) -> Affine | None:
        """Two paths' values of a variable: equal, a select on the branch condition, or a value
        the checker does not follow (one per point, and per iteration of `loop`: renaming the
        loop index to the previous iteration makes it another value)."""
        if a is None or b is None:
            return None
        if same_values([a], [b]):
            return a
        sp = self.space
        if condition is not None and select:
            return select_int(sp, None, [condition, a, b])  # type: ignore[arg-type]
        const = np.zeros(len(a), np.int64)
        terms: dict[int, np.ndarray] = {}
        for p in range(len(a)):
            ra, rb = a.row(p), b.row(p)
            iteration = () if loop is None else ((0, ((loop, 1),)),)
            key = ra if ra == rb else (0, ((sp.atom("opaque", label, p, *iteration), 1),))
            const[p] = key[0]
            for t, c in key[1]:
                terms.setdefault(t, np.zeros(len(a), np.int64))[p] = c
        return Affine(const, terms)


rules.RULES.update({
    arith.ConstantOp: constant_rule,
    **{t: int_op_rule for t in INT_RULES},
    arith.ExtFOp: cast_rule, arith.TruncFOp: cast_rule, arith.SIToFPOp: cast_rule, arith.UIToFPOp: cast_rule, arith.FPToSIOp: cast_rule,
    arith.FPToUIOp: cast_rule, arith.TruncIOp: cast_rule, arith.ExtSIOp: cast_rule, arith.ExtUIOp: cast_rule,
    D.ThreadIdxOp: index_rule("thread"), D.BlockIdxOp: index_rule("block"), D.BlockDimOp: index_rule("block_dim"),
    D.GridDimOp: index_rule("grid"), D.LaneIdOp: lane_or_warp_rule, D.WarpIdOp: lane_or_warp_rule, D.DimOp: dim_rule,
    D.MakeSharedOp: alloc_rule, D.MakeLocalOp: alloc_rule, D.ViewOp: view_rule, D.SliceOp: view_rule, D.PartitionOp: partition_rule,
    D.TensorViewOp: tensor_view_rule,
    D.LoadOp: load_rule, D.LoadAtOp: load_rule, D.StoreOp: store_rule, D.StoreAtOp: store_rule, D.AtomicOp: atomic_rule,
    D.BitcastOp: same_bytes_rule, D.ConcatOp: concat_rule, D.ExtractOp: extract_rule, D.BytePermOp: byte_perm_rule,
    D.ShuffleOp: shuffle_rule, D.VarOp: var_rule, D.VarStoreOp: var_store_rule, D.VarLoadOp: var_load_rule,
    D.CopyOp: copy_rule, D.MmaOp: mma_rule, D.MmaWaitOp: mma_wait_rule, D.SyncThreadsOp: sync_rule, D.AssumeOp: assume_rule, D.ResetTagsOp: reset_rule, D.TagOp: tag_rule,
    D.TagAssertOp: assert_rule, scf.IfOp: if_rule, scf.ForOp: for_rule, scf.YieldOp: nothing_rule,
    math.FmaOp: float_op_rule,
})
