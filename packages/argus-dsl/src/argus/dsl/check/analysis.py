"""The static tag analysis: abstract interpretation of an ``argus.kernel`` for every launch.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

import numpy as np
from argus.verify.affine import Affine, Key, Space, Uniform, add_keys, runs, sub_keys, uniform, unique_rows
from argus.verify.memory import NEVER, RESET, TagMemory
from argus.verify.obligations import Obligations
from argus.verify.tags import BOTTOM, BYTES, TOP, TagTable, join, resize
from xdsl.dialects import arith, math, scf
from xdsl.ir import Block, Operation, SSAValue

from . import batching, tag_liveness
from ..ir import dialect as D
from ..atoms import CopyAtom, MMAAtom
from ..dtypes import DType
from .findings import Conditional
from .initialization import UNKNOWN_PATHS, Conjunction, Initialization, Paths, conditional, written
from .op_table import OpTable
from .product_reads import InFlight, OperandMemory, asynchronous_groups, operand_allocations
from ..errors import SourceLocation, VerificationError
from ..interpreter import TileValue, segment_stride, tile_coordinates
from ..ir.dialect import pad3
from ..machine.tiles import fragment_bytes as tile_fragment_bytes
from ..machine.tiles import offset_table, redistribute, shared_operand_bytes
from ..ir.layout_texts import layout_from_text, unswizzled
from ..ops import integers
from .tag_liveness import Liveness, Traced, relevant_ops
from ..ir.types import dtype_of_mlir

#: Iterations up to which a runtime loop with concrete bounds is unrolled by the analysis.
CONCRETE_TRIPS = 64
#: Passes over a symbolic loop's body before its entry state is widened to ⊤ where it moves.
MAX_PASSES = 4
INT32 = (-(2**31), 2**31 - 1)


class Undecidable(Exception):
    """The analysis cannot follow the kernel here (the result is `unknown`, never a pass)."""

    def __init__(self, reason: str, location: SourceLocation | None) -> None:
        self.reason = reason
        self.location = location
        super().__init__(f"{location}: {reason}" if location else reason)


@dataclass
class GlobalRef:
    """A global tensor: its dims (uniform forms) and, for views, the tensor its tags come from."""

    name: str
    dtype: DType
    dims: list[Affine]
    root: GlobalRef | None = None


@dataclass
class _Slot:
    """A per-thread variable: its value (None for floats) and its byte tags."""

    value: Affine | None
    tags: np.ndarray
    tracked: bool = False
    stored: bool = False
    """While tracked: assigned by every thread since tracking began."""
    exposed: bool = False
    """While tracked: read before being assigned."""
    assigned: TagMemory | None = None
    """Which threads assigned it, on which paths: a byte per thread whose site says so, as a
    register's does (`initialization`)."""


@dataclass
class LoopContext:
    name: str
    symbol: int | None
    values: np.ndarray | None = None
    step: int = 1
    ends: tuple[Key, Key] | None = None
    """A runtime loop's first and last index (`TagAnalysis.every_iteration`), once asked for."""


@dataclass
class TileBounds:
    """A step of a block's plan: a tile access no check depends on, walked only to check that
    its coordinates lie inside the tile (`tag_liveness.Liveness.bounds_only`)."""

    op: Operation


@dataclass
class Analysis:
    """What a walk found: the symbol space, domain facts, obligations and the sites of stores."""

    space: Space
    table: TagTable
    obligations: Obligations
    facts: set[tuple[str, Key]]
    replay_facts: set[tuple[str, Key]]
    """Facts that keep a witness's launch in bounds in every iteration (not part of the domain)."""
    block_symbols: tuple[int, int, int]
    """The block's index — the cluster's, in a kernel with clusters."""
    grid_symbols: tuple[int, int, int]
    """The grid's size in blocks — in clusters, in a kernel with clusters."""
    parameters: dict[str, int]
    """Runtime scalar parameters and symbolic tensor dims, by name, to their symbols."""
    walk: TagAnalysis
    """The analysis itself (where each fact came from)."""


_UNREAD = object()


class Launch:
    """The threads a check enumerates: a block's, or a cluster's blocks together (point p is
    thread p mod `block_threads` of the cluster's block p // `block_threads`)."""

    def __init__(self, kernel: D.KernelOp) -> None:
        self.block_dims = pad3(tuple(kernel.block_dims))
        self.warp = kernel.warp_size.data
        self.cluster = kernel.cluster_dims
        (bx, by, bz), (cx, cy, cz) = self.block_dims, self.cluster
        self.block_threads = bx * by * bz
        self.blocks = cx * cy * cz
        self.n = self.block_threads * self.blocks
        self.local_ids = np.arange(self.n) % self.block_threads
        """Each thread's index within its block."""

    def numbers(self, op: Operation) -> np.ndarray | None:
        """Each thread's value of a thread index, lane, warp or block size (None for another op)."""
        kind = type(op)
        if kind is D.LaneIdOp:
            return self.local_ids % self.warp
        if kind is D.WarpIdOp:
            return self.local_ids // self.warp
        if kind is D.ThreadIdxOp:
            bx, by, _ = self.block_dims
            t = self.local_ids
            return (t % bx, (t // bx) % by, t // (bx * by))["xyz".index(op.dim.data)]  # type: ignore[attr-defined]
        if kind is D.BlockDimOp:
            return np.full(self.n, self.block_dims["xyz".index(op.dim.data)], np.int64)  # type: ignore[attr-defined]
        return None


_THREAD_INDICES = (D.ThreadIdxOp, D.LaneIdOp, D.WarpIdOp, D.BlockDimOp)


class Preparation:
    """What walking one kernel's IR needs that is the same for every check of it: the ops that
    can affect a check (`tag_liveness`), the values every check computes alike (`known`), and
    per block, the runs of ops whose copies are checked together (`batching`). A compiled kernel
    keeps its own."""

    def __init__(self, kernel: D.KernelOp, locations: dict[Operation, SourceLocation], batch: bool = True) -> None:
        self.kernel = kernel
        self.locations = locations
        self.batch = batch
        """Whether copies of an unrolled loop's ops run together (off: every op on its own)."""
        self._steps: dict[int, list[Any]] = {}
        self.atoms: dict[Operation, Any] = {}
        """The atom of each MMA or copy op."""
        self._read: dict[Operation, Any] = {}
        self._kinds: dict[Any, tuple[batching.Role, bool | None]] = {}
        self._allocations: dict[int, int] = {}
        self._fills: dict[Operation, bool] = {}
        self._fixed: dict[tuple[int, ...], Affine | None] = {}
        self._rolled: dict[Operation, batching.Run | None] = {}
        self.fragments: dict[tuple[Any, ...], np.ndarray] = {}
        """Fragment byte indices by layout (its identity: layouts are shared per text), element
        size, memory size, threads, base and segment."""

    @cached_property
    def table(self) -> OpTable:
        """The kernel's ops, read off the IR once for the walks below."""
        return OpTable(self.kernel)

    @cached_property
    def liveness(self) -> Liveness:
        """The ops that can affect a check, by their number in `table`, and the tile accesses
        walked only to check their coordinates."""
        return relevant_ops(self.kernel, self.table)

    @property
    def relevant(self) -> set[int]:
        """The ops a check walks (`liveness`)."""
        return self.liveness.relevant

    @cached_property
    def traced_accesses(self) -> set[int]:
        """The tile loads and stores (by identity) whose coordinates were all numbers when the
        kernel was traced (`tag_liveness.Traced`): the front end checked them against the tile's
        modes, so a walk need not."""
        table, traced = self.table, self.liveness.traced or Traced(self.table)
        out = set()
        for j in self.relevant:
            kind = table.kinds[j]
            if kind is D.LoadOp or kind is D.StoreOp:
                place = 0 if kind is D.LoadOp else 1
                if isinstance(table.operand_values[j][place].type, D.TileType) and \
                        all(map(traced, table.operands[j][place + 1:])):
                    out.add(id(table.ops[j]))
        return out

    @cached_property
    def launch(self) -> Launch:
        """The threads every check enumerates."""
        return Launch(self.kernel)

    @property
    def known(self) -> dict[int, Affine | None]:
        """The values every check computes alike, by the number of the op making them: integer
        constants, the thread indices of the launch's blocks, and integer arithmetic on those
        alone (float constants: None). The same numbers in every check and every pass over a
        loop, they are computed here once, with one numpy call per op, and set when a check
        begins (`batching.Known`); the walk and its runs skip their ops."""
        return self._known[0]

    @cached_property
    def _known(self) -> tuple[dict[int, Affine | None], dict[int, np.ndarray]]:
        """`known`, and the numbers of each known integer value (by identity)."""
        table, launch = self.table, self.launch
        kinds, ops, operands, results = table.kinds, table.ops, table.operands, table.results
        found: dict[int, Affine | None] = {}
        numbers: dict[int, np.ndarray] = {}  # per known integer value (by identity), its numbers
        for j in sorted(self.relevant):  # (in program order; none sits in a tag function's region)
            kind = kinds[j]
            if kind is arith.ConstantOp:
                number = _integer_constant(ops[j])
                if number is None:
                    found[j] = None
                    continue
                value = np.full(launch.n, number, np.int64)
            elif kind in _THREAD_INDICES:
                value = launch.numbers(ops[j])
                if value is None:
                    continue
            else:
                function = _numbers(ops[j])  # integer ops: known integer operands make an integer
                if function is None or not all(map(numbers.__contains__, operands[j])):
                    continue
                value = function(*map(numbers.__getitem__, operands[j]))
            numbers[results[j][0]] = value
            found[j] = Affine(value)
        return found, numbers

    def fixed(self, values: tuple[int, ...]) -> Affine | None:
        """An operand over every copy's points (`batching.Planner`), if every copy's value is known
        (one object per column of values: a load and the store of its copy often share one)."""
        found = self._fixed.get(values, _UNREAD)
        if found is _UNREAD:
            numbers = self._known[1]
            parts = [numbers.get(v) for v in values]
            found = self._fixed[values] = None if any(part is None for part in parts) else \
                Affine(np.concatenate(parts))  # type: ignore[arg-type]
        return found  # type: ignore[no-any-return]

    @cached_property
    def assertions(self) -> list[D.TagAssertOp]:
        return self.table.of_kind(D.TagAssertOp)

    @cached_property
    def product_operands(self) -> set[Operation]:
        """The shared allocations products read operands from (`product_reads`)."""
        return operand_allocations(self.kernel)

    @cached_property
    def asynchronous_operands(self) -> dict[Operation, set[int]]:
        """The shared allocations `matmul_async` products read operands from, with the sizes of
        their groups (`product_reads`)."""
        return asynchronous_groups(self.kernel)

    @cached_property
    def tags_something(self) -> bool:
        """Whether the kernel applies a tag function (with no assertion, MMA pairing is checked)."""
        return bool(self.table.of_kind(D.TagOp))

    @cached_property
    def claimless(self) -> bool:
        """Whether the kernel makes no claim: no tag assertion, and no product whose operands a
        tag function could pair up. Checking such a kernel (statically or on a launch) proves
        nothing: at most it finds nothing wrong."""
        return not self.assertions and not (self.tags_something and self.table.of_kind(D.MmaOp))

    def read(self, op: Operation, reader: Callable[[Operation], Any]) -> Any:
        """What `reader` reads off an op's attributes and types (once per kernel: the IR is fixed;
        one reader per kind of op)."""
        found = self._read.get(op, _UNREAD)
        if found is _UNREAD:
            found = self._read[op] = reader(op)
        return found

    def steps(self, block: Block) -> list[Any]:
        """A block's relevant ops, runs of copies as `batching.Run` steps."""
        found = self._steps.get(id(block))
        if found is None:
            relevant, table = self.relevant, self.table
            numbers = [j for j in table.block(block) if j in relevant]
            if not self.batch:
                found = self._steps[id(block)] = [table.ops[j] for j in numbers]
                return found
            known = self.known
            numbers = [j for j in numbers if j not in known]
            lead = [batching.Known([table.ops[j].results[0] for j in known], list(known.values()))] \
                if known and block is self.kernel.body.block else []
            steps = batching.plan(table, numbers, self)
            bounds = self.liveness.bounds_only
            if bounds:  # (they run alone: `roles`)
                only = {id(table.ops[j]) for j in bounds}
                steps = [TileBounds(step) if id(step) in only else step for step in steps]
            found = self._steps[id(block)] = lead + steps
        return found

    def rolled(self, loop: scf.ForOp) -> batching.Run | None:
        """A static loop kept rolled, with the rolled loops in its body, as one run over all their
        iterations (`batching.rolled_run`); None where an op of theirs must run on its own."""
        found = self._rolled.get(loop, _UNREAD)
        if found is _UNREAD:
            found = self._rolled[loop] = batching.rolled_run(self.table, self._numbers[loop], self._nest, self,
                                                             self.launch.n) if self.batch else None
        return found  # type: ignore[no-any-return]

    @cached_property
    def _numbers(self) -> dict[Operation, int]:
        """Each loop's number in `table`."""
        return {op: j for j, op in enumerate(self.table.ops) if self.table.kinds[j] is scf.ForOp}

    @cached_property
    def _nest(self) -> batching.Nest:
        """What `batching.rolled_run` asks of the kernel's ops (by their number in `table`)."""
        table, relevant, known, constants = self.table, self.relevant, self.known, self._integer_constants
        bounds = self.liveness.bounds_only

        def body(j: int) -> list[int]:
            return [k for k in table.body(j)
                    if k in relevant and k not in known and table.kinds[k] is not scf.YieldOp]

        def indices(j: int) -> np.ndarray | None:
            op = table.ops[j]
            if table.kinds[j] is not scf.ForOp or not D.is_unrolled(op):
                return None
            lb, ub, step = (constants.get(v) for v in table.operands[j])
            return None if lb is None or ub is None or not step else np.arange(lb, ub, step, dtype=np.int64)

        def alone(j: int) -> bool:  # (an integer load runs over every iteration too: an unknown per point)
            return j not in bounds and not _batchable(table.ops[j])

        def moved(j: int) -> int:
            return self._kind_role(j)[0].moved

        numbers, singles = self._known[1], {v: np.array([c], np.int64) for v, c in constants.items()}

        def known_numbers(v: int) -> np.ndarray | None:  # (a constant: one number, the same for every thread)
            found = singles.get(v)
            return numbers.get(v) if found is None else found

        return batching.Nest(body, indices, alone, lambda j: id(table.bodies[j].args[0]),
                             lambda j: _tile_bounds if j in bounds else None, known_numbers, moved)

    def holds_a_loop(self, op: scf.ForOp) -> bool:
        """Whether a runtime loop sits in the loop's body, at any depth (a static loop kept rolled
        is straight code)."""
        table = self.table
        numbers = table.block(op.body.block)
        return bool(numbers) and any(kind is scf.ForOp and not D.is_unrolled(table.ops[j]) for j, kind in
                                     enumerate(table.kinds[numbers[0]:table.ends[numbers[-1]]], numbers[0]))

    def fills_before(self, loop: scf.ForOp) -> bool:
        """Whether a shared tile receives data both before a loop and in it (a pipeline: its
        prologue fills the stage its first iteration reads, and each iteration refills one).
        Joined with what an iteration leaves, the state before such a loop loses the tags the
        prologue put there, so the checker peels its first iteration at once rather than
        after a walk that finds that out (peeling is exact either way). Registers filled
        before a loop and in it say less: data prefetched into them often carries tags the
        loop index does not change (`attention_cdna`'s K and V), and there peeling only costs."""
        found = self._fills.get(loop)
        if found is None:
            table = self.table
            number = next(j for j in table.block(loop.parent_block()) if table.ops[j] is loop)  # type: ignore[arg-type]
            before = {j for j in self._filled([j for j in range(number) if table.ends[j] <= number])  # not the ops holding it
                      if j >= 0 and table.kinds[j] is D.MakeSharedOp}
            found = self._fills[loop] = bool(before and before & self._filled(range(number + 1, table.ends[number])))
        return found

    def _filled(self, numbers: Iterable[int]) -> set[int]:
        """The tiles (by allocation) the ops `numbers` may put data in: stores of anything but a
        constant, tag functions, and every tile a target's intrinsic names (a copy, a load of a
        tensor box); products only accumulate what they compute."""
        table, out = self.table, set()
        kinds, operands, values = table.kinds, table.operands, table.operand_values
        for j in numbers:
            how = _how_it_fills(kinds[j])
            if how is _NOTHING:
                continue
            if how is _STORES:
                maker = table.maker.get(operands[j][0])
                if maker is None or kinds[maker] is not arith.ConstantOp:
                    out.add(self._allocation(operands[j][1]))
            else:
                out.update(self._allocation(v) for v, value in zip(operands[j], values[j])
                           if isinstance(value.type, D.TileType))
        return out

    def tiles(self, numbers: list[int]) -> list[tuple[tuple[Any, ...], tuple[Any, ...]]]:
        """Per op of `numbers` (ops accessing tiles), what it reads of tiles and what it writes, as
        keys (`batching.plan` makes a read wait for the writes of its keys before it): ("whole",
        tile) what an assertion or a product reads whole, which any write of the tile may change;
        ("element", view, coordinates) an element at constant coordinates, which a store there
        writes; ("products", tile) any element of a tile products write. Tiles are named by the op
        allocating them."""
        table, constant, allocation = self.table, self._integer_constants.get, self._allocation
        kinds, operands_of = table.kinds, table.operands
        # a key read can match only a key written of the same tile: the keys of tiles the ops
        # only read, or only write, make no read wait, and are left out
        reads, writes = set(), set()
        for number in numbers:
            kind, operands = kinds[number], operands_of[number]
            if kind is D.LoadOp:
                reads.add(allocation(operands[0]))
            elif kind is D.StoreOp or kind is D.StoreAtOp:
                writes.add(allocation(operands[1]))
            elif kind is D.MmaOp:
                reads.update((allocation(operands[0]), allocation(operands[1])))
                writes.add(allocation(operands[2]))
            elif kind in _TILE_ACCESSES:
                reads.update(map(allocation, operands))
        both = reads & writes
        if not both:
            return [((), ())] * len(numbers)
        out: list[tuple[tuple[Any, ...], tuple[Any, ...]]] = []
        for number in numbers:
            kind, operands = kinds[number], operands_of[number]
            if kind is D.LoadOp:
                if allocation(operands[0]) not in both:
                    out.append(((), ()))
                    continue
                tile = operands[0]
                coordinates = tuple(map(constant, operands[1:]))
                read = ("products", allocation(tile))
                out.append((((read, ("element", tile, coordinates)) if None not in coordinates else (read,)), ()))
            elif kind is D.StoreOp or kind is D.StoreAtOp:
                tile = operands[1]
                if allocation(tile) not in both:
                    out.append(((), ()))
                    continue
                coordinates = tuple(map(constant, operands[2:])) if kind is D.StoreOp else (None,)
                written = ("whole", allocation(tile))
                out.append(((), (written, ("element", tile, coordinates)) if None not in coordinates else (written,)))
            elif kind is D.MmaOp:
                c = allocation(operands[2])
                out.append((tuple(("whole", t) for t in (allocation(operands[0]), allocation(operands[1])) if t in both),
                            (("whole", c), ("products", c)) if c in both else ()))
            elif kind in _TILE_ACCESSES:
                out.append((tuple(("whole", t) for t in map(allocation, operands) if t in both), ()))
            else:
                out.append(((), ()))
        return out

    def arithmetic(self, number: int) -> Callable[..., np.ndarray] | None:
        """The numpy function of an integer op with an integer result (`batching.Planner`)."""
        if self.table.kinds[number] not in integers.INTEGER_OPS:
            return None
        function = _numbers(self.table.ops[number])
        result, = self.table.ops[number].results  # (unpacked: xDSL's indexing runs Python)
        return function if _is_int(result) else None

    @cached_property
    def _integer_constants(self) -> dict[int, int]:
        """The value of every integer constant of the kernel, by identity."""
        table = self.table
        return {table.results[j][0]: number for j, kind in enumerate(table.kinds)
                if kind is arith.ConstantOp and (number := _integer_constant(table.ops[j])) is not None}

    def _allocation(self, value: int) -> int:
        """The op that allocates a tile (by identity), through the views of it (a value no op
        makes, a kernel's argument: minus its identity)."""
        found = self._allocations.get(value)
        if found is None:
            maker = self.table.maker.get(value)
            found = -value if maker is None else \
                self._allocation(self.table.operands[maker][0]) if _RULES.get(self.table.kinds[maker]) in (_view, _partition) \
                else maker
            self._allocations[value] = found
        return found

    def roles(self, numbers: list[int]) -> tuple[list[batching.Role], list[Any]]:
        """What the plan asks of each op (by its number in `table`): its kind's `batching.Role`,
        and the key its copies share — source position and kind — where copies of it may run
        as one group (None where the op runs alone)."""
        table, locations = self.table, self._locations
        kinds, ops = table.kinds, table.ops
        bounds = self.liveness.bounds_only
        roles, keys = [], []
        for j in numbers:
            if j in bounds:
                roles.append(_ALONE)
                keys.append(None)
                continue
            kind = kinds[j]
            role, copies = self._kind_role(j)
            roles.append(role)
            key = None
            # a load's copies run together unless it reads an integer (an opaque value per load)
            if role.runnable and (copies or (copies is None and not _is_int(ops[j].results[0]))):
                where = locations.get(id(ops[j]))
                if where is not None:
                    key = (where.line, where.col, where.file, kind)  # (a location object hashes slowly)
            keys.append(key)
        return roles, keys

    @cached_property
    def _locations(self) -> dict[int, SourceLocation]:
        """`locations` by the op's identity (an op hashes in Python, an identity in C)."""
        return {id(op): where for op, where in self.locations.items()}

    def _kind_role(self, number: int) -> tuple[batching.Role, bool | None]:
        """`_role` of op `number`, found once per kind of op (a product started with
        `matmul_async` is a kind of its own: it runs alone)."""
        kind: Any = self.table.kinds[number]
        op = self.table.ops[number]
        if kind is D.MmaOp and op.asynchronous is not None:  # type: ignore[attr-defined]
            kind = _STARTED
        found = self._kinds.get(kind)
        if found is None:
            found = self._kinds[kind] = self._role(op)
        return found

    @staticmethod
    def _role(op: Operation) -> tuple[batching.Role, bool | None]:
        """The role of an op's kind, and whether copies of it may run as one group (None: it
        depends on the op — whether a load reads an integer)."""
        kind, rule = type(op), _RULES.get(type(op))
        role = batching.Role(_runnable(op), rule in (_mma, _assert), rule is _view, kind is D.MmaOp,
                             kind in _TILE_ACCESSES, 0 if rule is _store else -1)  # a store moves its value's tags
        return role, None if rule is _load else _batchable(op)


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
        none of those mentions it (`_Renamer` leaves them as they are)."""
        self._floors: dict[tuple[int | None, tuple[Any, ...]], int] = {}
        """Per fact container (a loop's symbol, None for the kernel's) and symbolic part e of its
        facts ``e + k ≥ 0``: the least k among them. A bound with a larger k is implied."""
        self.values: dict[SSAValue, Any] = {}
        self.tags: dict[SSAValue, np.ndarray] = {}
        self.memories: list[TagMemory] = []
        self.in_flight: list[InFlight] = []
        """The running asynchronous products of each shared memory they read (`product_reads`)."""
        self.slots: list[_Slot] = []
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
        self._zeros: dict[int, np.ndarray] = {}
        self._points: dict[int, tuple[Any, ...]] = {}
        """Per count of copies run together: the points' count, ids, mask, threads, zero tags."""
        self._tiled: dict[tuple[int, int], tuple[Any, Any]] = {}
        """Values every copy reads, repeated per copy (by the value's identity and the count)."""
        self._fragments: dict[int, tuple[Any, Any, np.ndarray]] = {}
        """Fragment byte indices per tile (and per tile per copy) value, by identity."""
        self._faults: list[tuple[Any, ...]] = []
        self._results: dict[Operation, Any] = {}
        self._ops: dict[Operation, Any] = {}
        self._shapes_of: dict[Operation, Any] = {}
        self._captured: dict[Operation, tuple[SSAValue, ...]] = {}
        self._bounds: dict[Operation, Any] = {}
        self._bounded: dict[tuple[Any, ...], Any] = {}
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
            batching.execute(self, step, mask, _rule_of)
        elif type(step) is batching.Known:
            self.values.update(zip(step.results, step.values))
        elif type(step) is batching.Products:
            _products(self, step, mask)
        elif type(step) is TileBounds:
            _tile_bounds(self, step.op, mask)
        else:
            rule = _RULES.get(type(step))
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
            width = _width(ssa)
            t = self._zeros.get(width)
            if t is None:
                t = self._zeros[width] = np.zeros((self.n, width), np.int64)
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
        found = self._shapes_of.get(op)
        if found is None:
            found = self._shapes_of[op] = (tuple(op.operands), tuple(op.results))
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
                self.tags[r] = np.where(known[:, None], TOP, BOTTOM) * np.ones((1, _width(r)), np.int64)

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
        if memo is not None and (_same_objects(memo[2], inputs)
                                 or _address_fingerprint(memo[2]) == _address_fingerprint(inputs)):
            self.refault(memo[1])
            return memo[0]  # type: ignore[no-any-return]
        mark = len(self._faults)
        idx = self._tile_bytes(op, tile, coords, offset, mask)
        self._addresses[op] = (idx, self._faults[mark:], inputs)
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
        return [tag_op, *(self.values.get(v) for v in _captured_values(self, tag_op)), *frozen.values()]

    def remembered(self, op: Operation, inputs: list[Any], compute: Callable[[], Any], equal: Any = None) -> Any:
        """`compute()`, or what it gave at `op` last time if `inputs` are the same objects (and
        `equal`, say the active threads, compares equal): a later pass over a loop body reads
        the same values (the IR is fixed, and values are never changed in place), so a rule
        that only reads them finds the same result."""
        memo = self._remembered.get(op)
        if memo is not None and _same_objects(memo[0], inputs) and memo[1] == equal:
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
        self._faults.append((op, thread, index, what))
        if self.checking:
            index = index() if callable(index) else index
            describe = _describer(self, op, str(self.where(op)), np.arange(self.n))
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
        if memo is not None and _same_objects(memo[0], [ref, active, *coords]):
            self.refault(memo[1])
            for fact in memo[2]:  # a later pass states the same facts (an earlier one may be gone)
                self.add_fact(fact)
            self.replay_facts.update(memo[3])
            return
        mark = len(self._faults)
        scope = self.obligations.scope
        here = set(self.loop_facts[scope[-1]]) if scope else set(self.facts)
        replay = set(self.replay_facts)
        self._in_bounds(op, ref, coords, active)
        now = set(self.loop_facts[scope[-1]]) if scope else set(self.facts)
        self._bounds[op] = ([ref, active, *coords], self._faults[mark:], now - here, self.replay_facts - replay)

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
                    _conditional(self, op, "out-of-bounds", [self.path_of(t) for t in threads], threads,
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
            if seen in self._bounded:
                continue
            faults = len(self._faults)
            self._bound_axis(op, ref, coords, axis, points)
            if len(self._faults) == faults:  # an overrun is reported at every access that makes it
                self._bounded[seen] = (c, d, active)  # kept alive, so that no other value takes an id

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
            self._floors[where] = min(k, self._floors.get(where, k))

    def implied(self, key: Key) -> bool:
        """Whether the bound ``key ≥ 0`` follows from one already stated where the analysis is
        (the same symbolic part, a constant no larger)."""
        if not key[1]:
            return False
        scope = self.obligations.scope
        least = self._floors.get((scope[-1] if scope else None, key[1]))
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
            self.obligations.fault(site, "data-race", reader, _describer(self, op, site, np.arange(self.n)),
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
            self.obligations.fault(site, "data-race", writer, _describer(self, op, site, np.arange(self.n)),
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
        self.obligations.fault(site, "data-race", writer, _describer(self, op, site, np.arange(self.n)),
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
                places = [seen.setdefault(_component(key), len(seen)) for key in forms]
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
                    if not isinstance(slot, _Slot) or slot.value is None:
                        raise VerificationError("a tag function uses a variable that does not hold an integer the "
                                                "checker follows", self.where(op))
                    if slot.tracked and not slot.stored:
                        slot.exposed = True  # read before this loop pass assigns it: carried
                    held = slot.value
                env[inner.results[0]] = held.take(threads)
                continue
            if type(inner) in D.INDEX_OPS:  # thread_idx.x and friends, per evaluation point
                _RULES[type(inner)](self, inner, np.ones(self.n, bool))
                env[inner.results[0]] = self.values[inner.results[0]].take(threads)
                continue
            rule = _INT_RULES.get(type(inner))
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
            if isinstance(owner, _Slot):
                owner.stored, owner.exposed = written, read
            else:
                owner.fresh, owner.exposed = written.copy(), read.copy()

    def join_tracking(self, other: list[tuple[Any, ...]]) -> None:
        """After two sides of a branch: written only where both sides wrote, read-first where
        either side read first."""
        for owner, written, read in other:
            if isinstance(owner, _Slot):
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
            at_first = tuple(_component(self.space.substitute(v, loop, first)) if isinstance(v, tuple) else v
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
        if _same_values([a], [b]):
            return a
        sp = self.space
        if condition is not None and select:
            return _select_int(sp, None, [condition, a, b])  # type: ignore[arg-type]
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


@dataclass
class State:
    memories: list[tuple[np.ndarray, ...]]
    """Per memory: its tags, the sites that wrote them, the writers since the last barrier (shared
    memories only: None for registers)."""
    slots: list[tuple[np.ndarray, Affine | None]]

    def same_as(self, other: State) -> bool:
        return (all(np.array_equal(p[0], q[0]) and np.array_equal(p[1], q[1]) for p, q in zip(self.memories,
                                                                                              other.memories))
                and all(np.array_equal(p[0], q[0]) for p, q in zip(self.slots, other.slots))
                and _same_values([v for _, v in self.slots], [v for _, v in other.slots]))


# ---- helpers -----------------------------------------------------------------------------------


_WIDTHS: dict[int, tuple[Any, Any]] = {}
_INTS: dict[int, tuple[Any, Any]] = {}
_TYPES_KEPT = 1 << 16


def _by_type(table: dict[int, tuple[Any, Any]], t: Any, compute: Callable[[Any], Any]) -> Any:
    """`compute(t)`, remembered by the type object's identity (an attribute hashes slowly; each
    entry keeps its type alive, so a table starts over past `_TYPES_KEPT` entries)."""
    known = table.get(id(t))
    if known is not None and known[0] is t:
        return known[1]
    if len(table) > _TYPES_KEPT:
        table.clear()
    value = compute(t)
    table[id(t)] = (t, value)
    return value


def _width(ssa: SSAValue) -> int:
    return _by_type(_WIDTHS, ssa.type, _bytes_of_type)  # type: ignore[no-any-return]


def _bytes_of_type(t: Any) -> int:
    if isinstance(t, D.VarType):
        return max(1, t.dtype.nbytes)
    try:
        return max(1, dtype_of_mlir(t).nbytes)
    except TypeError:
        return 1


def _same_objects(xs: list[Any], ys: list[Any]) -> bool:
    return len(xs) == len(ys) and all(x is y for x, y in zip(xs, ys))


def _fingerprint(v: Affine) -> tuple[Any, ...]:
    return (v.const.tobytes(), *((a, t.tobytes()) for a, t in sorted(v.terms.items())))


def _address_fingerprint(inputs: list[Any]) -> tuple[Any, ...]:
    """What an access's addresses depend on: the tile's layout and base, the threads, the coordinates."""
    tile, mask, *values = inputs
    return (mask.tobytes(), id(tile.layout), None if tile.base is None else tile.base.tobytes(),
            None if tile.segment is None else tile.segment.tobytes(), *(_fingerprint(c) for c in values))


def _component(key: Key) -> Any:
    return key[0] if not key[1] else key


def _is_int(ssa: SSAValue) -> bool:
    return _by_type(_INTS, ssa.type, _integer_type)  # type: ignore[no-any-return]


def _integer_type(t: Any) -> bool:
    try:
        dtype = dtype_of_mlir(t)
    except TypeError:
        return False
    return dtype.is_integer or dtype.kind == "bool"  # conditions are integers 0 and 1


# ---- integer rules (shared with tag functions) --------------------------------------------------

IntRule = Callable[[Space, Operation, list[Affine]], Affine]


def _shift_left(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    a, b = args
    if b.concrete and (b.const >= 0).all() and (b.const < 62).all():
        return sp.scale(a, np.left_shift(1, b.const))
    return sp.binary("shl", a, b, lambda x, y: np.left_shift(x, np.clip(y, 0, 62)))


def _shift_right(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    a, b = args
    if b.concrete and (b.const >= 0).all() and (b.const < 62).all():
        return sp.floordiv(a, sp.constant(np.left_shift(1, b.const), len(a)))
    return sp.binary("shr", a, b, lambda x, y: np.right_shift(x, np.clip(y, 0, 62)))


def _and(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    a, b = args
    for x, y in ((a, b), (b, a)):
        if not x.concrete and y.concrete and ((y.const & (y.const + 1)) == 0).all() and (y.const >= 0).all():
            return sp.mod(x, sp.constant(y.const + 1, len(a)))  # x & (2^k - 1) = x mod 2^k
    return sp.binary("and", a, b, np.bitwise_and)


def _compare(kind: str, swap: bool = False) -> IntRule:
    fn = {"lt": np.less, "le": np.less_equal, "eq": np.equal, "ne": np.not_equal}[kind]

    def rule(sp: Space, op: Operation, args: list[Affine]) -> Affine:
        a, b = args[::-1] if swap else args
        if kind in ("eq", "ne"):
            d = sp.sub(a, b)
            if d.concrete:
                return Affine(fn(d.const, 0).astype(np.int64))
        return sp.binary(kind, a, b, lambda x, y: fn(x, y).astype(np.int64))

    return rule


_CMP_RULES = {0: _compare("eq"), 1: _compare("ne"), 2: _compare("lt"), 3: _compare("le"), 4: _compare("lt", True),
              5: _compare("le", True), 6: _compare("lt"), 7: _compare("le"), 8: _compare("lt", True),
              9: _compare("le", True)}


def _cmpi(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    return _CMP_RULES[op.predicate.value.data](sp, op, args)  # type: ignore[attr-defined]


def _select_int(sp: Space, op: Operation, args: list[Affine]) -> Affine:
    c, a, b = args
    if c.concrete:
        pick = c.const != 0
        terms = {t: np.where(pick, a.terms.get(t, 0), b.terms.get(t, 0)) for t in set(a.terms) | set(b.terms)}
        return Affine(np.where(pick, a.const, b.const), {t: v for t, v in terms.items() if v.any()})
    n = len(c)
    out_const = np.zeros(n, np.int64)
    out_terms: dict[int, np.ndarray] = {}
    for p in range(n):
        key = sp._atom_key("select", c.row(p), a.row(p), b.row(p))
        if c.row(p)[1] == ():
            key = a.row(p) if c.row(p)[0] else b.row(p)
        out_const[p] = key[0]
        for atom, coef in key[1]:
            out_terms.setdefault(atom, np.zeros(n, np.int64))[p] = coef
    return Affine(out_const, out_terms)


def _binary(kind: str) -> IntRule:
    """An op kept symbolic as an atom of `kind`, computed on numbers as the table defines it."""
    def rule(sp: Space, op: Operation, args: list[Affine]) -> Affine:
        return sp.binary(kind, args[0], args[1], _numbers(op))  # type: ignore[arg-type]

    return rule


def _method(name: str) -> IntRule:
    def rule(sp: Space, op: Operation, args: list[Affine]) -> Affine:
        return getattr(sp, name)(args[0], args[1])  # type: ignore[no-any-return]

    return rule


_INT_RULES: dict[type, IntRule] = {
    arith.AddiOp: _method("add"), arith.SubiOp: _method("sub"), arith.MuliOp: _method("mul"),
    arith.FloorDivSIOp: _method("floordiv"), arith.DivUIOp: _method("floordiv"),
    arith.DivSIOp: _binary("tdiv"),  # truncates: the quotient's remainder has the dividend's sign
    arith.RemUIOp: _method("mod"),
    arith.RemSIOp: _binary("rem"),
    arith.AndIOp: _and, arith.OrIOp: _binary("or"), arith.XOrIOp: _binary("xor"),
    arith.ShLIOp: _shift_left, arith.ShRSIOp: _shift_right, arith.ShRUIOp: _shift_right,
    arith.MinSIOp: _binary("min"), arith.MaxSIOp: _binary("max"),
    arith.MinUIOp: _binary("min"), arith.MaxUIOp: _binary("max"),
    arith.CmpiOp: _cmpi, arith.SelectOp: _select_int,
}
"""Symbolic forms: exact for the signed ops while nothing overflows (docs/verify.md); the
unsigned ones read their operands as the signed numbers held (exact while those are not
negative). Numbers are computed with `_numbers`, as `argus.dsl.ops.integers` defines them
(`_on_numbers`, below)."""

_BITS: dict[int, tuple[Any, Any]] = {}


def _numbers(op: Operation) -> Callable[..., np.ndarray] | None:
    """What an integer op computes on numbers (int64, as the checker holds them), from the one
    table the interpreter reads too: wrapping at the op's width, the table's answer where the
    op is undefined (a division by 0 divides by 1). None for `select`, which is not arithmetic."""
    kind = integers.INTEGER_OPS.get(type(op))
    if kind is not None:
        bits = _by_type(_BITS, op.results[0].type, _bits_of_type)
        return lambda x, y: kind(x, y, bits).astype(np.int64)
    if isinstance(op, arith.CmpiOp):
        bits, predicate = _by_type(_BITS, op.lhs.type, _bits_of_type), op.predicate.value.data
        return lambda x, y: integers.compare(predicate, x, y, bits).astype(np.int64)
    return None


def _bits_of_type(t: Any) -> int:
    return integers.width_of(t)


def _on_numbers(rule: IntRule) -> IntRule:
    """`rule`, except that numbers at every point are computed as `_numbers` says (the
    symbolic forms compute with unbounded integers, which a wrapped number is not)."""
    def exact(sp: Space, op: Operation, args: list[Affine]) -> Affine:
        numbers = _numbers(op)
        if numbers is not None and all(x.concrete for x in args):
            return Affine(numbers(*(x.const for x in args)))
        return rule(sp, op, args)

    return exact


_INT_RULES = {kind: _on_numbers(rule) for kind, rule in _INT_RULES.items()}

# ---- op rules -----------------------------------------------------------------------------------

Rule = Callable[[TagAnalysis, Any, np.ndarray], None]


def _int_op(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    operands, results = a.shape(op)
    if not _is_int(results[0]):
        if isinstance(op, arith.SelectOp):
            return _select(a, op, mask)  # type: ignore[arg-type]
        return a.computed(op)
    values = a.values
    args = [values.get(v) for v in operands]
    numbers = _numbers(op)
    if numbers is not None and all(type(x) is Affine and not x.terms for x in args):
        # numbers for every thread: numpy alone, and ⊥ tags unless an operand carries some
        result = Affine(numbers(*(x.const for x in args)))  # type: ignore[union-attr]
        if any(v in a.tags for v in operands):
            a.set_int(op, result)
        else:
            values[results[0]] = result
            a.tags.pop(results[0], None)
        return
    args = [x if isinstance(x, Affine) else a.int_value(v, op) for x, v in zip(args, operands)]
    value = a.remembered(op, args, lambda: _INT_RULES[type(op)](a.space, op, args))  # a later pass: the same operands
    if isinstance(op, arith.SelectOp):
        a.values[op.result] = value
        _select_tags(a, op, args[0])
        return
    a.set_int(op, value)


def _select(a: TagAnalysis, op: arith.SelectOp, mask: np.ndarray) -> None:
    cond = a.values.get(a.shape(op)[0][0])
    a.values[op.result] = None
    _select_tags(a, op, cond if isinstance(cond, Affine) else None)


def _select_tags(a: TagAnalysis, op: arith.SelectOp, cond: Affine | None) -> None:
    _, lhs_ssa, rhs_ssa = a.shape(op)[0]  # operands through `shape`: copies run together substitute them
    lhs, rhs = a.tags_of(lhs_ssa), a.tags_of(rhs_ssa)
    if cond is not None and cond.concrete:
        a.tags[op.result] = np.where((cond.const != 0)[:, None], lhs, rhs)
    else:
        a.tags[op.result] = join(lhs, rhs)


def _constant(a: TagAnalysis, op: arith.ConstantOp, mask: np.ndarray) -> None:
    value = a._results.get(op)
    result = a.shape(op)[1][0]
    if value is None:
        number = a.preparation.read(op, _integer_constant)
        value = a._results[op] = (None if number is None else Affine(np.full(a.n, number, np.int64)),)
    a.values[result] = value[0]
    a.tags.pop(result, None)


def _integer_constant(op: arith.ConstantOp) -> int | None:
    """An integer constant's value (None for a float)."""
    return int(op.value.value.data) if _is_int(op.result) else None  # type: ignore[union-attr]


def _cast(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    source = a.shape(op)[0][0]
    value = a.values.get(source) if _is_int(source) and _is_int(op.results[0]) else None
    kind = integers.INTEGER_CASTS.get(type(op))
    if kind is not None and isinstance(value, Affine) and value.concrete:  # numbers: as the table converts them
        bits_in, bits_out = (_by_type(_BITS, v.type, _bits_of_type) for v in (source, op.results[0]))
        value = Affine(kind(value.const, bits_in, bits_out).astype(np.int64))
    elif isinstance(op, arith.TruncIOp) and isinstance(value, Affine):  # wraps: exact for numbers only
        value = a.space.opaque(f"a narrowed integer at {a.where(op)}", a.n)
    elif isinstance(op, arith.ExtUIOp) and value is not None:  # a negative number changes
        value = None
    elif isinstance(op, arith.ExtSIOp) and isinstance(value, Affine) and _by_type(_BITS, source.type, _bits_of_type) == 1:
        value = a.space.scale(value, -1)  # a condition held as 1 is -1 once widened with its sign
    a.values[op.results[0]] = value
    if isinstance(op, (arith.FPToSIOp, arith.FPToUIOp)):
        a.values[op.results[0]] = a.space.opaque(f"float converted at {a.where(op)}", a.n)
    a.computed(op, a.values[op.results[0]])


def _index(kind: str) -> Rule:
    def rule(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
        axis = "xyz".index(op.dim.data)
        sp = a.space
        if kind == "thread" or kind == "block_dim":
            value = Affine(a.launch.numbers(op))  # type: ignore[arg-type]
        elif kind == "block":
            value = sp.of_symbol(a.block_symbols[axis], a.n)
            if a.cluster[axis] > 1:  # the cluster's first block, plus the block's place in it
                cx, cy, _ = a.cluster
                place = (a.ranks % cx, a.ranks // cx % cy, a.ranks // (cx * cy))[axis]
                value = sp.add(sp.scale(value, a.cluster[axis]), sp.constant(place, a.n))
        else:
            value = sp.scale(sp.of_symbol(a.grid_symbols[axis], a.n), a.cluster[axis])
        a.values[op.result] = value
        a.tags.pop(op.result, None)

    return rule


def _lane_or_warp(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    a.values[op.results[0]] = Affine(a.launch.numbers(op))  # type: ignore[arg-type]
    a.tags.pop(op.results[0], None)


def _dim(a: TagAnalysis, op: D.DimOp, mask: np.ndarray) -> None:
    ref: GlobalRef = a.values[op.tensor]
    a.values[op.result] = ref.dims[op.index.data]
    a.tags.pop(op.result, None)


def _alloc(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
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
        memory = TagMemory.shared(name, stride * a.blocks)
    a.values[op.result] = TileValue(memory, layout, dtype,  # type: ignore[arg-type]
                                    segment=a.ranks * stride if clustered else None)
    a.memories.append(memory)


def _allocation(op: Any) -> tuple[Any, DType, int, bool]:
    """A tile allocation's layout, element type, size in bytes and whether it is shared."""
    t: D.TileType = op.result.type
    footprint = t.footprint * t.dtype.nbytes
    return t.layout, t.dtype, footprint, isinstance(op, D.MakeSharedOp)


def _view(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    operands, results = a.shape(op)
    source: TileValue = a.values[operands[0]]
    start = a.values.get(operands[1]) if len(operands) > 1 else None
    memo = a._results.get(op)
    if memo is not None and memo[0] is source and memo[2] is start:  # one object per view: accesses through it are remembered
        a.values[results[0]] = memo[1]
        return
    layout, dtype, slice_ = a.preparation.read(op, _view_type)
    if start is not None:  # a sub-tile of a static loop kept rolled, where its copy's index says
        view = _moved_sub_tiles(a, op, source, start, layout, dtype)
        a.values[results[0]] = view
        a._results[op] = (source, view, start)
        return
    view = source.map(lambda tile: tile.derived(layout, dtype, tile.base if slice_ else None)) \
        if isinstance(source, batching.TileCopies) else source.derived(layout, dtype, source.base if slice_ else None)
    a.values[results[0]] = view
    a._results[op] = (source, view, None)


def _moved_sub_tiles(a: TagAnalysis, op: Any, source: Any, start: Affine, layout: Any, dtype: DType) -> Any:
    """The sub-tile each copy's index picks (one per copy when copies run together): the tile
    the unrolled code names, its offset in its layout."""
    starts = a.concrete_offsets(op, start, "sub-tile start")
    threads = a.footprint.threads if a.footprint is not None else a.n
    per_copy = starts.reshape(-1, threads)
    if (per_copy != per_copy[:, :1]).any():
        raise a.undecidable(op, "the threads of a block disagree on where a sub-tile starts")
    if len(per_copy) > 1 and not isinstance(source, batching.TileCopies) and unswizzled(layout):
        # no swizzle after the start: each copy's offsets are the first's moved by its start
        return batching.TileCopies(moved=(source.derived(layout, dtype, source.base), per_copy[:, 0]))
    sources = source.tiles if isinstance(source, batching.TileCopies) else (source,) * len(per_copy)
    tiles = tuple(batching.moved_tile(tile.derived(layout, dtype, tile.base), int(s))
                  for tile, s in zip(sources, per_copy[:, 0]))
    return tiles[0] if len(tiles) == 1 else batching.TileCopies(tiles)


def _view_type(op: Any) -> tuple[Any, DType, bool]:
    t: D.TileType = op.result.type
    return t.layout, t.dtype, isinstance(op, D.SliceOp)


def _partition(a: TagAnalysis, op: D.PartitionOp, mask: np.ndarray) -> None:
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


def _tensor_view(a: TagAnalysis, op: D.TensorViewOp, mask: np.ndarray) -> None:
    source: GlobalRef = a.values[op.source]
    t: D.TensorType = op.result.type  # type: ignore[assignment]
    runtime = iter(op.dims)
    dims = [a.space.constant(d, a.n) if isinstance(d, int) else a.int_value(next(runtime), op) for d in t.shape]
    a.values[op.result] = GlobalRef(source.name, t.dtype, dims, source.root or source)


def _access(a: TagAnalysis, op: Any) -> tuple[SSAValue, tuple[SSAValue, ...] | None, SSAValue | None, Any]:
    """(memory operand, coordinate operands, offset operand, the other operand or result) of a
    load or store, read from the IR once."""
    parts = a._ops.get(op)
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
        a._ops[op] = parts
    return parts


def _load(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    source_ssa, coord_ssa, offset_ssa, result = _access(a, op)
    source = a.values[source_ssa]
    a.values[result] = a.space.opaque(f"load at {a.where(op)}", a.n) if _is_int(result) else None
    if isinstance(source, GlobalRef):
        if coord_ssa is None:
            raise a.undecidable(op, "the checker reads global tensors by coordinates (before layout lowering)")
        a.tags[result] = a.global_tags(op, source, [a.int_value(c, op) for c in coord_ssa], mask)
        return
    tile: TileValue = source
    idx = a.tile_bytes(op, tile, None if coord_ssa is None else [a.int_value(c, op) for c in coord_ssa],
                       None if offset_ssa is None else a.int_value(offset_ssa, op), mask)
    active = a.active(mask)
    threads = a.thread_of(active)
    read, _ = a.read_tags(tile.memory, idx, threads, active)  # type: ignore[arg-type]
    a.check_read(op, tile.memory, idx, threads)  # type: ignore[arg-type]
    memory: TagMemory = tile.memory  # type: ignore[assignment]
    _check_written(a, op, memory, idx, threads, active, read, f"reads {_space(memory)} bytes that no thread has written")
    if active is a.tid:
        a.tags[result] = read
        return
    tags = np.zeros((a.n, tile.dtype.nbytes), np.int64)
    tags[active] = read
    a.tags[result] = tags


def _store(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
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
        return
    tile: TileValue = target
    idx = a.tile_bytes(op, tile, None if coord_ssa is None else [a.int_value(c, op) for c in coord_ssa],
                       None if offset_ssa is None else a.int_value(offset_ssa, op), mask)
    active = a.active(mask)
    threads = a.thread_of(active)
    tags = resize(a.tags_of(value), tile.dtype.nbytes)
    a.check_overwrite(op, tile.memory, idx, threads)  # type: ignore[arg-type]
    a.write_tags(tile.memory, idx, tags if active is a.tid else tags[active], threads, active, a.site(op))  # type: ignore[arg-type]


def _tile_bounds(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    """A load or store whose data no check needs: an out-of-bounds finding if a thread's
    coordinates fall outside the tile. Coordinates computed from runtime values or data are
    left to the interpreter (the checker enumerates register and shared addresses only where
    an access matters)."""
    memory_ssa, coord_ssa, offset_ssa, _ = _access(a, op)
    coords = None if coord_ssa is None else [a.int_value(c, op) for c in coord_ssa]
    offset = None if offset_ssa is None else a.int_value(offset_ssa, op)
    if all(v.concrete for v in [*(coords or ()), *(() if offset is None else (offset,))]):
        a.tile_bytes(op, a.values[memory_ssa], coords, offset, mask)


def _atomic(a: TagAnalysis, op: D.AtomicOp, mask: np.ndarray) -> None:
    target = a.values[op.target]
    if isinstance(target, GlobalRef):
        name = (target.root or target).name
        if name in a.read_globals:
            raise a.undecidable(op, f"the kernel writes tensor {name!r}, which it also reads; the checker takes "
                                    "global tensors as read-only or write-only")
        a.written_globals.add(name)
    else:
        active = np.flatnonzero(mask)
        idx = a.tile_bytes(op, target, [a.int_value(c, op) for c in op.coords], None, mask)
        a.check_overwrite(op, target.memory, idx, active)
        target.memory.write(idx, np.full(idx.shape, TOP, np.int64), active, a.site(op))
    a.values[op.result] = a.space.opaque(f"atomic at {a.where(op)}", a.n) if _is_int(op.result) else None
    a.tags[op.result] = np.full((a.n, _width(op.result)), TOP, np.int64)


def _same_bytes(a: TagAnalysis, op: Any, mask: np.ndarray) -> None:
    a.values[op.result] = None
    a.tags[op.result] = a.tags_of(a.shape(op)[0][0]).copy()


def _concat(a: TagAnalysis, op: D.ConcatOp, mask: np.ndarray) -> None:
    a.values[op.result] = None
    a.tags[op.result] = np.concatenate([a.tags_of(v) for v in a.shape(op)[0]], axis=-1)


def _extract(a: TagAnalysis, op: D.ExtractOp, mask: np.ndarray) -> None:
    start = op.byte.data
    a.values[op.result] = None
    a.tags[op.result] = a.tags_of(a.shape(op)[0][0])[:, start:start + _width(op.result)].copy()


def _byte_perm(a: TagAnalysis, op: D.BytePermOp, mask: np.ndarray) -> None:
    both = np.concatenate([a.tags_of(v) for v in a.shape(op)[0]], axis=-1)
    a.values[op.result] = None
    a.tags[op.result] = both[:, [i.data for i in op.selector.data]]


def _shuffle(a: TagAnalysis, op: D.ShuffleOp, mask: np.ndarray) -> None:
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


def _var(a: TagAnalysis, op: D.VarOp, mask: np.ndarray) -> None:
    slot = _Slot(None, np.zeros((a.n, _width(op.result)), np.int64))
    slot.assigned = TagMemory.registers(f"variable {len(a.slots)}", a.n, 1)
    a.slots.append(slot)
    a.memories.append(slot.assigned)  # (joined, saved and restored with the registers)
    a.values[op.result] = slot


def _var_store(a: TagAnalysis, op: D.VarStoreOp, mask: np.ndarray) -> None:
    slot: _Slot = a.values[op.var]
    full = mask is a.everyone or bool(mask.all())
    threads = a.active(mask)
    byte = np.zeros((threads.size, 1), np.int64)
    a.write_tags(slot.assigned, byte, byte, threads, threads, a.site(op))  # type: ignore[arg-type]
    tags = a.tags_of(op.value)
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


def _var_load(a: TagAnalysis, op: D.VarLoadOp, mask: np.ndarray) -> None:
    slot: _Slot = a.values[op.var]
    if slot.tracked and not slot.stored:
        slot.exposed = True
    threads = a.active(mask)
    byte = np.zeros((threads.size, 1), np.int64)
    _check_written(a, op, slot.assigned, byte, threads, threads, None,  # type: ignore[arg-type]
                   "reads a variable before it is assigned")
    a.values[op.result] = slot.value if _is_int(op.result) else None
    a.tags[op.result] = slot.tags


def _copy(a: TagAnalysis, op: D.CopyOp, mask: np.ndarray) -> None:
    source, target = a.values[op.source], a.values[op.target]
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    atom = _atom(a, op, CopyAtom)
    if atom.src_layout is not None and threads.size % atom.threads:
        raise a.undecidable(op, f"{atom.name} needs whole groups of {atom.threads} threads")
    src_idx = _fragment_bytes(a, source, threads)
    tags = source.memory.read(src_idx.reshape(threads.size, -1), threads).reshape(src_idx.shape)
    a.check_read(op, source.memory, src_idx, threads)
    _check_written(a, op, source.memory, src_idx.reshape(threads.size, -1), threads, threads, tags,
                   f"copies from {_space(source.memory)} bytes that no thread has written")
    if atom.src_layout is not None:
        tags = redistribute(tags, atom, threads.size)
    dst_idx = _fragment_bytes(a, target, threads)
    a.check_overwrite(op, target.memory, dst_idx, threads)
    target.memory.write(dst_idx.reshape(threads.size, -1), tags.reshape(threads.size, -1), threads, a.site(op))


def _atom(a: TagAnalysis, op: Any, kind: Any) -> Any:
    atoms = a.preparation.atoms
    atom = atoms.get(op)
    if atom is None:
        atom = atoms[op] = _atom_of(kind, op.atom)
    return atom


@cache
def _atom_of(kind: Any, properties: Any) -> Any:
    """An atom rebuilt from its properties once per process (ops of one kernel share them)."""
    return kind.from_properties({k: v.data for k, v in properties.data.items()})


def _mma(a: TagAnalysis, op: D.MmaOp, mask: np.ndarray) -> None:
    """Operands pair up: A[m, k] and B[n, k] carry equal tags wherever both are tagged; a register
    fragment byte no store wrote is an uninitialized read. (Copies of an unrolled loop's product
    run together: each copy's operands may be tiles of their own.)"""
    points = np.flatnonzero(mask)
    atom: MMAAtom = _atom(a, op, MMAAtom)
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
    if a.checking:
        if (a_rows is not None or b_rows is not None) and _one_tag_per_k(at, bt, a_rows, b_rows):
            a.obligations.held(a.reach(_pairing_site(a, op, atom)), a.n // a.threads)
        else:
            _pairing(a, op, atom, a.thread_of(points), at if a_rows is None else at[a_rows],
                     bt if b_rows is None else bt[b_rows])
    _accumulate(a, op, accumulator, points)


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
        memory = _memory_of(value)
        flat = idx.reshape(threads.size, -1)
        tags = a.footprint.read_alike(memory, flat, threads, copy_of)  # type: ignore[union-attr]
        if tags is not None:
            tags = tags.reshape(idx.shape)
            firsts = np.unique(copy_of, return_index=True)[1]  # each fragment's first copy: its points
            _check_written(a, op, memory, flat, threads, runs(firsts * n, n).reshape(-1), tags,
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
    if not isinstance(value, batching.TileCopies):  # one tile for every copy
        return _fragment_bytes(a, value, a.thread_ids[:n]), np.zeros(copies, np.int64)
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
    return np.concatenate([_fragment_bytes(a, tiles[c], a.thread_ids[:n]) for c in firsts]), copy_of


def _accumulate(a: TagAnalysis, op: D.MmaOp, accumulator: Any, points: np.ndarray, written: bool = False) -> None:
    """The product reads its accumulator, which must be written (unless known to be), and leaves
    computed data (⊤)."""
    idx = _point_fragments(a, accumulator, points).reshape(points.size, -1)
    memory, threads = _memory_of(accumulator), a.thread_of(points)
    if not written:
        why = "matmul reads fragment c, which is not fully written"
        _check_written(a, op, memory, idx, threads, points, None, why, "c")
    a.write_tags(memory, idx, np.full(idx.shape, TOP, np.int64), threads, points, a.site(op))


def _products(a: TagAnalysis, step: batching.Products, mask: np.ndarray) -> None:
    """Products in a row with views and assertions between them (`batching.Products`): every
    product's operands are read at once when the products share one atom and register operand
    memories and none accumulates into memory another reads; otherwise one by one. The views
    run first (they read no tags), the assertions in their place among the products. Products
    go in batches of at most `PRODUCT_ROWS` threads' fragments (larger arrays cost more per
    element than they save in calls)."""
    for op in step.ops:
        if _RULES.get(type(op)) is _view:
            _view(a, op, mask)
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


#: The most threads' fragments (products × threads) read at once by `_products`.
PRODUCT_ROWS = 1024


def _product_batch(a: TagAnalysis, ops: list[Operation], threads: np.ndarray, mask: np.ndarray) -> None:
    """`_products` for a batch of them (its views already ran). A fragment several products
    read (a row of A against every column of B) is read once."""
    products = [op for op in ops if type(op) is D.MmaOp]
    if not products:
        return _one_by_one(a, ops, mask)
    atom: MMAAtom = _atom(a, products[0], MMAAtom)
    a_tiles, b_tiles, c_tiles = ([a.values[ssa] for ssa in column] for column in
                                 zip(*((op.a, op.b, op.c) for op in products)))
    read = {id(t.memory) for t in a_tiles} | {id(t.memory) for t in b_tiles}
    together = (a.checking and threads.size > 0 and threads.size % atom.threads == 0
                and atom.a_layout is not None and atom.b_layout is not None
                and all(_atom(a, op, MMAAtom) is atom for op in products)
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
    alike = _one_tag_per_k(at, bt, _product_rows(a_of, groups), _product_rows(b_of, groups))
    written = _all_written(a, c_tiles, threads)
    # with nothing but views between them, every product's accumulator is written at once when
    # the accumulators are apart (each of its own bytes)
    memory: TagMemory = c_tiles[0].memory  # type: ignore[attr-defined]
    at_once = written is not None and len(ops) == len(products) + sum(_RULES.get(type(op)) is _view for op in ops) \
        and np.bincount((written[1][:, None] * memory.tags.shape[1] + written[0]).reshape(-1)).max() == 1
    product = iter(enumerate(zip(products, c_tiles)))
    for op in ops:
        if type(op) is not D.MmaOp:
            if _RULES.get(type(op)) is not _view:
                _rule_of(op)(a, op, mask)  # an assertion, where it stands among the products
            continue
        i, (_, c) = next(product)
        if alike:
            a.obligations.held(a.reach(_pairing_site(a, op, atom)))
        else:
            _pairing(a, op, atom, threads, at[a_of[i] * groups:(a_of[i] + 1) * groups],
                     bt[b_of[i] * groups:(b_of[i] + 1) * groups])
        if not at_once:
            _accumulate(a, op, c, threads, written is not None)
    if at_once:
        idx, readers = written  # type: ignore[misc]
        sites = np.repeat(np.array([a.site(op) for op in products], np.int64), threads.size)[:, None]
        memory.write(idx, np.full(idx.shape, TOP, np.int64), readers, sites)  # (a step outside runs: no journal)


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
    idx = np.concatenate([_fragment_bytes(a, tile, threads) for tile in tiles]).reshape(len(tiles) * threads.size, -1)
    readers = np.tile(threads, len(tiles))
    status = _write_status(a, memory, idx, readers, readers, None)
    return (idx, readers) if status is None or written(status).all() else None


def _one_by_one(a: TagAnalysis, ops: list[Operation], mask: np.ndarray) -> None:
    """The products and assertions of `ops`, each on its own (the views already ran)."""
    for op in ops:
        if _RULES.get(type(op)) is not _view:
            _rule_of(op)(a, op, mask)


def _point_fragments(a: TagAnalysis, value: Any, points: np.ndarray) -> np.ndarray:
    """Byte indices (points, values, bytes) of each point's fragment of `value`: a tile, or a
    tile per copy (`batching.TileCopies`, while copies run together)."""
    if not isinstance(value, batching.TileCopies):
        return _fragment_bytes(a, value, a.thread_of(points))
    n = a.threads
    if points.size == a.n:  # every point: each copy's threads are all threads (an assertion and a product share it)
        memo = a._fragments.get(id(value))
        if memo is not None and memo[0] is value and memo[1] == n:
            return memo[2]  # type: ignore[no-any-return]
        if value.moved is not None:  # one tile's fragments, moved per copy
            found = _moved_fragments(a, *value.moved)
        else:
            found = np.concatenate([_fragment_bytes(a, tile, a.thread_ids[:n]) for tile in value.tiles])
        a._fragments[id(value)] = (value, n, found)
        return found
    parts = np.split(points, np.flatnonzero(np.diff(points // n)) + 1)  # each copy's points (in order)
    return np.concatenate([_fragment_bytes(a, value.tiles[int(part[0]) // n], part % n) for part in parts])


def _moved_fragments(a: TagAnalysis, origin: TileValue, shifts: np.ndarray) -> np.ndarray:
    """Byte indices (shifts × threads, values, bytes) of the fragments of tile `origin` moved on
    by each of `shifts` elements, which must all lie inside its memory."""
    first = _fragment_bytes(a, origin, a.thread_ids[:a.threads], inside=False)
    moved = (shifts * origin.dtype.nbytes)[:, None, None, None]
    size = origin.memory.tags.shape[-1]  # type: ignore[attr-defined]
    if first.size and (first.min() + moved.min() < 0 or first.max() + moved.max() >= size):
        raise Undecidable(f"a fragment reaches outside its {size}-byte tile (the interpreter reports where)", None)
    return (first + moved).reshape(-1, *first.shape[1:])  # type: ignore[no-any-return]


def _memory_of(value: Any) -> TagMemory:
    """The memory of a tile, or of every tile of a tile per copy (which must share one)."""
    if isinstance(value, batching.TileCopies):
        if value.moved is not None:
            return value.moved[0].memory  # type: ignore[no-any-return]
        memory = value.tiles[0].memory
        if any(tile.memory is not memory for tile in value.tiles):
            raise batching.NotUniform()
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
    pairs = _PairIndex(m, n, k, a0, b0)
    describe = _describer(a, op, site, threads[::atom.threads], mma=pairs, group=atom.threads)
    a.obligations.compare(site, lhs, rhs, True, describe, count=copies)
    # conflicting data (⊤, e.g. joined from two paths) where the other operand holds data
    # (tagged or conflicting too): no proof
    data_a, data_b = (at != BOTTOM).any(axis=(1, 3)), (bt != BOTTOM).any(axis=(1, 3))  # (groups, k)
    top = np.concatenate([(at == TOP).any(axis=-1) & data_b[:, None], (bt == TOP).any(axis=-1) & data_a[:, None]],
                         axis=1)
    for g, row, kk in np.argwhere(top)[:1]:
        a.obligations.conflict(site, int(g), int(row) * k + int(kk), describe)


@dataclass
class _PairIndex:
    """Maps an element of the pairing comparison back to the product's (m, n, k)."""

    m: int
    n: int
    k: int
    a0: np.ndarray
    b0: np.ndarray

    def element(self, group: int, element: int) -> dict[str, int]:
        row, kk = divmod(element, self.k)
        if row < self.m:
            return {"m": row, "n": int(self.b0[group, kk]), "k": kk}
        return {"m": int(self.a0[group, kk]), "n": row - self.m, "k": kk}


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
        if isinstance(tile.memory, OperandMemory):
            tile.memory.note_reads(idx, owners, group)
            if op.asynchronous is not None and tile.memory.pending is not None:  # type: ignore[attr-defined]
                tile.memory.pending.reads(idx, owners // tile.memory.pending.group)
        tags, _ = a.read_tags(tile.memory, idx, owners, points[::group])  # type: ignore[arg-type]
        _check_written(a, op, tile.memory, idx, owners, points[::group], tags,  # type: ignore[arg-type]
                       f"matmul reads operand {operand} from shared memory, which is not fully written", operand)
        return tags.reshape(owners.size, cols, rows, tile.dtype.nbytes).transpose(0, 2, 1, 3)  # type: ignore[no-any-return]
    idx = _point_fragments(a, value, points)
    memory = _memory_of(value)
    tags = a.read_tags(memory, idx.reshape(points.size, -1), threads, points)[0].reshape(idx.shape)
    _check_written(a, op, memory, idx.reshape(points.size, -1), threads, points, tags,
                   f"matmul reads fragment {operand}, which is not fully written", operand)
    return _arranged(tags, group, layout, rows, cols)


def _fragment_matrix(a: TagAnalysis, products: list[Operation], tiles: list[TileValue], threads: np.ndarray,
                     group: int, layout: Any, rows: int, cols: int, operand: str) -> tuple[np.ndarray, list[int]]:
    """`_atom_matrix` of register fragments (the `operand` of each of `products`, tiles of one
    memory) outside a run: the matrices of the distinct tiles, in turn, and which of them each
    product reads."""
    # tiles of one memory with the same bytes (slices of one row, made anew for each product)
    # share one array of byte indices (`_fragment_bytes`)
    fragments = [_fragment_bytes(a, tile, threads) for tile in tiles]
    distinct: dict[int, int] = {}
    tile_of = [distinct.setdefault(id(bytes_), len(distinct)) for bytes_ in fragments]
    unique = list({id(bytes_): bytes_ for bytes_ in fragments}.values())
    idx = np.concatenate(unique)
    readers = np.tile(threads, len(unique))
    memory: TagMemory = tiles[0].memory  # type: ignore[attr-defined]
    read = idx.reshape(readers.size, -1)
    tags = memory.read(read, readers).reshape(idx.shape)
    status = _write_status(a, memory, read, readers, readers, tags)
    if status is not None:
        per_tile = status.reshape(len(unique), threads.size, -1)
        for op, which in zip(products, tile_of):
            _unwritten(a, op, per_tile[which], threads, f"matmul reads fragment {operand}, which is not fully written",
                       operand)
    return _arranged(tags, group, layout, rows, cols), tile_of


def _check_written(a: TagAnalysis, op: Operation, memory: TagMemory, idx: np.ndarray, threads: np.ndarray,
                   points: np.ndarray, tags: np.ndarray | None, why: str, operand: str | None = None) -> None:
    """`op` reads bytes `idx` (a row per thread of `threads`, of `points`): a byte nothing wrote
    is an uninitialized read, and so is one written on some paths only, in the launches that
    take none of them."""
    status = _write_status(a, memory, idx, threads, points, tags)
    if status is not None:
        _unwritten(a, op, status, threads, why, operand)


def _write_status(a: TagAnalysis, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray,
                  tags: np.ndarray | None) -> np.ndarray | None:
    """Per row of `threads` (of `points`), the write status of bytes `idx` (`TagAnalysis.write_status`);
    None when that need not be asked: not checking, or `tags` (what was read, if known) holds a
    tag on every byte of a memory with no byte written on some paths only (constants are stored
    without tags, and a reset tag leaves its byte written; but a tag function may tag bytes of
    the memory nothing wrote, and a join of a tag with nothing is ⊤)."""
    if not a.checking or (tags is not None and not memory.tagged_unwritten and not (tags == BOTTOM).any()
                          and id(memory) not in a.initialization.memories):
        return None
    return a.write_status(memory, idx, threads, points).reshape(threads.size, -1)  # type: ignore[no-any-return]


def _unwritten(a: TagAnalysis, op: Operation, status: np.ndarray, threads: np.ndarray, why: str,
               operand: str | None = None) -> None:
    """`op` reads bytes whose write status is `status` (per row of `threads`, those bytes): the
    first thread reading bytes nothing wrote is reported as an uninitialized read, as the
    interpreter reports it, once per op (a product names its `operand`); bytes written on some
    paths only are an uninitialized read in the launches that take none of them (`_maybe_unwritten`)."""
    site = str(a.where(op))
    rows = np.flatnonzero((status == NEVER).any(axis=1))
    details = {"operand": operand} if operand else {}
    if rows.size and not any(c.site == site and c.kind == "uninitialized-read" and not isinstance(c, Conditional)
                             for c in a.obligations.candidates):
        thread = int(threads[rows[0]]) % a.threads
        a.obligations.fault(site, "uninitialized-read", thread, _describer(a, op, site, np.arange(a.threads)),
                            {**details, "why": why})
    if a.initialization.memories:
        coded = conditional(status)
        if coded.any():
            _maybe_unwritten(a, op, site, status, coded, threads, {**details, "why": f"{why} (in this launch: it "
                                                                   "is written on some paths only)"})


def _maybe_unwritten(a: TagAnalysis, op: Operation, site: str, status: np.ndarray, coded: np.ndarray,
                     threads: np.ndarray, details: dict[str, Any]) -> None:
    """A read of bytes written on some paths only: a finding whose alternatives are the
    launches, one per distinct condition with the first thread reading a byte of it, in which
    that thread reaches the read (`TagAnalysis.path_of`) and takes none of those paths."""
    rows, cols = np.nonzero(coded)
    codes, first = np.unique(status[rows, cols], return_index=True)
    alternatives, points = [], []
    for code, at in zip(codes.tolist(), first.tolist()):
        thread = int(threads[rows[at]]) % a.threads
        for conjunction in a.initialization.condition(code):
            alternatives.append(a.path_of(thread) + conjunction)
            points.append(thread)
    _conditional(a, op, "uninitialized-read", alternatives, points, details)


def _conditional(a: TagAnalysis, op: Operation, kind: str, alternatives: list[Conjunction], points: list[int],
                 details: dict[str, Any]) -> None:
    """A finding of `op` in the launches of one of `alternatives`, each about a thread of
    `points` (`findings.Conditional`): one per op, kind and loop scope, its alternatives
    gathered from every walk that finds it."""
    kept = [(both, point) for conjunction, point in zip(alternatives, points)
            if (both := a.initialization.simplified(conjunction)) is not None]
    if not kept:  # (no launch takes such a path)
        return
    site, scope = str(a.where(op)), a.obligations.scope
    for c in a.obligations.candidates:
        if isinstance(c, Conditional) and c.site == site and c.kind == kind and c.scope == scope:
            c.add(*map(list, zip(*kept)))
            return
    finding = Conditional(site, kind, kept[0][1], 0, _describer(a, op, site, np.arange(a.threads)), details=details,
                          scope=scope)
    finding.add(*map(list, zip(*kept)))
    a.obligations.candidates.append(finding)


def _space(memory: TagMemory) -> str:
    """Where a memory lives, as the interpreter names it."""
    return "local" if memory.per_thread else "shared"


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


def _assume(a: TagAnalysis, op: D.AssumeOp, mask: np.ndarray) -> None:
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


def _mma_wait(a: TagAnalysis, op: D.MmaWaitOp, mask: np.ndarray) -> None:
    """The waiting threads' groups retire their products but the newest `pending`."""
    threads = a.thread_of(a.active(mask))
    for running in a.in_flight:
        running.retire(np.unique(threads // running.group), op.pending.data)


def _sync(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    for m in a.memories:
        if not m.per_thread:
            m.barrier()


def _reset(a: TagAnalysis, op: D.ResetTagsOp, mask: np.ndarray) -> None:
    memory = a.values[op.target].memory
    coded = a.initialization.saved(memory)
    memory.reset()
    a.initialization.restore(memory, coded)  # (bytes written on some paths only stay so)


def _tag(a: TagAnalysis, op: D.TagOp, mask: np.ndarray) -> None:
    target = a.values[op.target]
    if isinstance(target, GlobalRef):
        if target.root is not None:
            raise VerificationError("tag functions attach to a tensor argument, not to a view of it: tag the "
                                    "tensor itself (with its own coordinates)", a.where(op))
        if a.guards or any(loop.symbol is not None for loop in a.loops):
            raise a.undecidable(op, "a tensor's tag function is set under a runtime branch or inside a runtime "
                                    "loop; the checker takes one tag function per tensor at a time (set it before)")
        captured = list(_captured_values(a, op))
        for inner in op.body.block.ops:
            if isinstance(inner, D.VarLoadOp):
                slot = a.values.get(inner.var)
                captured.append(slot.value if isinstance(slot, _Slot) else None)
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
                  and isinstance(a.values.get(inner.var), _Slot) and a.values[inner.var].value is not None}
        a.tag_functions[(target.root or target).name] = (op, frozen)  # variables as they are now
        return
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
    idx = _fragment_bytes(a, tile, rows)
    memory: TagMemory = tile.memory  # type: ignore[assignment]
    coded = a.initialization.saved(memory)
    if per_thread:
        memory.relabel(idx.reshape(rows.size, -1), ids, a.site(op), rows)
    else:
        memory.relabel(idx, ids, a.site(op))
    a.initialization.restore(memory, coded)  # (a tag function writes no data: bytes written on some paths stay so)


def _fragment_bytes(a: TagAnalysis, tile: TileValue, threads: np.ndarray, inside: bool = True) -> np.ndarray:
    """Byte indices of each thread's fragment, which must lie inside the tile's memory (unless
    not `inside`: a tile other tiles are moved from, which they check) (remembered per tile: a
    tile value and its threads give the same bytes on every pass)."""
    key = threads.tobytes()
    memo = a._fragments.get(id(tile))
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
    a._fragments[id(tile)] = (tile, key, idx)
    return idx


def _captured_values(a: TagAnalysis, op: D.TagOp) -> tuple[SSAValue, ...]:
    """`op.captured()`, read from the IR once per analysis (global loads ask for it each time)."""
    found = a._captured.get(op)
    if found is None:
        found = a._captured[op] = tuple(op.captured())
    return found


def _assert(a: TagAnalysis, op: D.TagAssertOp, mask: np.ndarray) -> None:
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
        idx = _point_fragments(a, target, points)
        tags, sites = a.read_tags(_memory_of(target), idx.reshape(points.size, -1), threads, points, sites=True)
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
    describe = _describer(a, op, site, threads, coordinates=coordinates, sites=(lsites, rsites), tags=(lhs, rhs),
                          message=op.message.data)
    a.obligations.compare(site, lhs, rhs, op.kind.data == "eq", describe, count=a.n // a.threads)


def _layout_of(value: Any) -> Any:
    """The layout of a tile, or of a tile per copy (whose tiles must share one shape)."""
    if isinstance(value, batching.TileCopies):
        if value.moved is not None:
            return value.moved[0].layout  # (moved copies of one tile: one shape)
        layout = value.tiles[0].layout
        if any(tile.layout.shape != layout.shape for tile in value.tiles):
            raise batching.NotUniform()
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
        site = a.site(entry[0])
    tags = np.broadcast_to(ids[None], (threads.size, *ids.shape))
    return coords, tags, np.full(tags.shape, site, np.int64)


def _describer(a: TagAnalysis, op: Operation, site: str, threads: np.ndarray, *, coordinates: list[np.ndarray] | None = None,
               sites: tuple[np.ndarray, np.ndarray] | None = None, tags: tuple[np.ndarray, np.ndarray] | None = None,
               message: str = "",
               mma: _PairIndex | None = None, group: int = 1) -> Callable[..., dict[str, Any]]:
    loops = [(ctx.name, ctx.symbol, None if ctx.values is None else ctx.values.copy()) for ctx in a.loops]
    space = a.space
    sources = a.sites

    def describe(point: int, element: int, model: dict[int, int]) -> dict[str, Any]:
        thread = int(threads[point])
        w: dict[str, Any] = {"assertion": site}
        w["block"] = a.block_of(thread, model)
        w["thread"] = thread
        if group > 1:
            w["threads"] = (thread, thread + group - 1)
        w["loops"] = {name: (space.atom_value(sym, model) if sym is not None else int(vals[thread]))  # type: ignore[index]
                      for name, sym, vals in loops}
        if mma is not None:
            w["element"] = mma.element(point, element)
        elif coordinates is not None:
            w["element"] = tuple(int(c[element]) for c in coordinates)
        if sites is not None:
            for k, (side, arr) in enumerate(zip(("lhs", "rhs"), sites)):
                written = [int(x) for x in np.ravel(arr[point, element])]
                known = [x for x in written if x >= 0]
                loc = sources[known[0]] if known else None
                tagged = tags is not None and bool((tags[k][point, element] != BOTTOM).any())
                w[f"{side} written at"] = str(loc) if loc is not None else "its tag was reset" if RESET in written \
                    else "written on some paths only" if any(x < RESET for x in written) \
                    else "never written (its tag from a tag function)" if tagged else "never written"
        if message:
            w["message"] = message
        parameters = {space.describe_atom(s): space.atom_value(s, model) for s in space.symbols
                      if space.symbols[s].role == "size" and s in model}
        if parameters:
            w["sizes"] = parameters
        return w

    return describe


# ---- control flow -------------------------------------------------------------------------------


def _if(a: TagAnalysis, op: scf.IfOp, mask: np.ndarray) -> None:
    cond = a.values.get(op.cond)
    if isinstance(cond, Affine) and cond.concrete:
        c = cond.const != 0
        for region, sub in ((op.true_region, mask & c), (op.false_region, mask & ~c)):
            if sub.any() and region.blocks:
                a.run_block(region.block, sub)
        return
    # a symbolic (or data-dependent) condition: both sides, joined
    before = a.snapshot()
    tracked = a.tracking()
    paths = Paths.branch(cond if isinstance(cond, Affine) else None)
    outside = a.path
    shared = cond.row(int(np.flatnonzero(mask)[0])) if isinstance(cond, Affine) and \
        _uniform_over(cond, np.flatnonzero(mask)) else None
    known = isinstance(cond, Affine)
    if known:
        a.branches.append((cond, "ne0"))
    a.guards += 1
    try:
        a.path = outside + _path_of(a, shared, "ne0")
        a.run_block(op.true_region.block, mask)
        after_true = a.snapshot(scope=(len(before.memories), len(before.slots)))
        tracked_true = a.tracking()
        a.restore(before)
        a.set_tracking(tracked)
        if op.false_region.blocks:
            a.path = outside + _path_of(a, shared, "eq0")
            if known:
                a.branches[-1] = (cond, "eq0")
            a.run_block(op.false_region.block, mask)
    finally:
        a.guards -= 1
        a.path = outside
        if known:
            a.branches.pop()
    a.join_into(after_true, cond if isinstance(cond, Affine) else None, origin=str(a.where(op)), paths=paths)
    a.join_tracking(tracked_true)


def _path_of(a: TagAnalysis, condition: Key | None, kind: str) -> Conjunction:
    """When a side of a branch runs, for `TagAnalysis.path`: the comparison `kind` of the
    condition the threads running it share (none where they do not share one: a read there is
    then taken to run whenever its block does)."""
    return (a.initialization.simplified(((kind, condition),)) or ()) if condition is not None else ()


def _for(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray) -> None:
    lb, ub, step = (a.int_value(v, op) for v in (op.lb, op.ub, op.step))
    body = op.body.block
    name = body.args[0].name_hint or "i"
    if not step.concrete or (step.const[mask] <= 0).any():
        raise a.undecidable(op, "the checker needs loops with a positive constant step")
    if not mask.any():
        return
    if lb.concrete and ub.concrete:
        if D.is_unrolled(op):  # a static loop kept rolled: its iterations at once where they can be
            run = a.preparation.rolled(op)
            if run is None:
                return _for_concrete(a, op, mask, lb.const, ub.const, step.const, name)
            return batching.execute(a, run, mask, _rule_of,
                                    lambda: _for_concrete(a, op, mask, lb.const, ub.const, step.const, name))
        trips = np.maximum(0, -(-(ub.const - lb.const) // np.maximum(step.const, 1)))
        if trips[mask].max(initial=0) <= CONCRETE_TRIPS:
            return _for_concrete(a, op, mask, lb.const, ub.const, step.const, name)
    active = np.flatnonzero(mask)
    s = int(step.const[active[0]])
    if not (_uniform_over(lb, active) and _uniform_over(ub, active)) or (step.const[mask] != s).any():
        raise a.undecidable(op, "the threads of a block disagree on the bounds of this runtime loop; the checker "
                                "needs bounds every thread shares when they are symbolic")
    first = int(active[0])
    _for_symbolic(a, op, mask, lb.row(first), ub.row(first), s, name)


def _uniform_over(value: Affine, points: np.ndarray) -> bool:
    """Whether `value` has one form at all of `points`."""
    return all(bool((x[points] == x[points[0]]).all()) for x in (value.const, *value.terms.values()))


def _for_concrete(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, lb: np.ndarray, ub: np.ndarray, step: np.ndarray,
                  name: str) -> None:
    i = lb.copy()
    body = op.body.block
    context = LoopContext(name, None)
    a.loops.append(context)
    try:
        while True:
            active = mask & (i < ub)
            if not active.any():
                return
            context.values = i.copy()
            a.values[body.args[0]] = a.space.constant(i, a.n)
            a.tags.pop(body.args[0], None)
            a.run_block(body, active)
            i = i + step
    finally:
        a.loops.pop()


def _for_symbolic(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, lb: Key, ub: Key, step: int, name: str) -> None:
    """Every iteration at once, from the join of the state before the loop and the state an
    iteration leaves (see the module docstring). When that join loses tags both sides have
    (a pipeline's prologue fills a stage with what iteration i then refills for i + 1, in
    another form), the first iteration is analysed on its own and the others from what it
    leaves; their first walk records what it reads before writing, so that it is final when
    the entry state later iterations see changes none of that. A loop whose shared tiles
    receive data both before it and in it is peeled at once (`Preparation.fills_before`): a
    pipeline is walked twice, once for its first iteration and once for the others."""
    before = a.snapshot()
    scope = (len(before.memories), len(before.slots))
    last = add_keys(ub, (-1, ()))
    nested = a.preparation.holds_a_loop(op)
    symbol = _loop_symbol(a, name, lb, last, step, lb)
    settled = not a.preparation.fills_before(op) and \
        _fixpoint(a, op, mask, symbol, before, step, scope, track=not nested, peelable=True)
    if not settled:  # peel the first iteration
        first = _loop_symbol(a, name, lb, lb, 1, lb, runs_until=last)
        a.restore(before)
        _one_pass(a, op, mask, first, step)
        after_first = a.snapshot(scope)
        rest = _loop_symbol(a, name, add_keys(lb, (step, ())), last, step, lb)
        me: Key = (0, ((rest, 1),))
        base = _Renamer(a, first, add_keys(me, (-step, ()))).state(after_first)
        a.restore(before)
        _fixpoint(a, op, mask, rest, base, step, scope, track=not nested, peelable=False)  # (not peelable: settles)
        # a tag the first iteration leaves as the others do (theirs at the first index) is the
        # last iteration's, whichever that is
        kept = [a.inductive_join(tags, m.tags, rest, (0, ((first, 1),)))
                for m, (tags, _, _) in zip(a.memories, after_first.memories)]
        a.join_into(after_first, None, f"a value carried from one iteration to the next of the loop at {a.where(op)}",
                    rest, paths=_after_loop(a, add_keys(lb, (step, ())), ub))
        for m, tags in zip(a.memories, kept):
            m.tags[...] = tags
    # after the loop: it ran (the state it leaves) or it did not (the state before it). A loop
    # that runs in every launch leaves the tags of its last iteration, as functions of its index
    # symbol, which is free outside the loop: what is proved of them holds whichever iteration
    # was the last (a producer's stages, read by consumers in a loop of their own)
    left = [m.tags.copy() for m in a.memories]
    paths = _after_loop(a, lb, ub)
    a.join_into(before, None, f"a value carried from one iteration to the next of the loop at {a.where(op)}", symbol,
                paths=paths)
    if paths.theirs == (None,):
        for m, tags in zip(a.memories, left):
            m.tags[...] = tags


def _after_loop(a: TagAnalysis, lb: Key, ub: Key) -> Paths:
    """The paths joining after a loop from `lb` to `ub` (exclusive): the state before it joined in
    ("theirs") where it runs no iteration, the state it leaves ("ours") where it runs (a loop
    from 0 to a tensor's size: only ours)."""
    return a.initialization.paths((("ge0", sub_keys(lb, ub)),), (("ge0", sub_keys(ub, add_keys(lb, (1, ())))),))


def _loop_symbol(a: TagAnalysis, name: str, lo: Key, hi: Key, step: int, start: Key,
                 runs_until: Key | None = None) -> int:
    """The symbol of a loop's index over [lo, hi], on the grid start + step·n; its bounds are
    facts inside the loop only (a launch where it runs no iteration stays in the domain of
    everything outside it). `runs_until`: the last index the loop reaches (for a symbol that
    stands for one iteration, which exists only if the loop runs that far)."""
    sp = a.space
    known = len(sp.constraints)
    symbol = sp.symbol(name, "loop", lo, hi)
    a.elements_before[symbol] = len(a.table.tags)
    me: Key = (0, ((symbol, 1),))
    if step > 1:
        sp.require_zero(sp._mod(sub_keys(me, start), (step, ())))
    if runs_until is not None:
        sp.require_nonnegative(sub_keys(runs_until, me))
    a.loop_facts[symbol] = sp.constraints[known:]
    del sp.constraints[known:]
    return symbol


def _one_pass(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, symbol: int, step: int) -> None:
    """The body once, its assertions checked, with the index `symbol`."""
    body = op.body.block
    a.values[body.args[0]] = a.space.of_symbol(symbol, a.n)
    a.tags.pop(body.args[0], None)
    a.loops.append(LoopContext(a.space.symbols[symbol].name, symbol, step=step))
    a.obligations.scope = a.obligations.scope + (symbol,)
    try:
        a.run_block(body, mask)
    finally:
        a.loops.pop()
        a.obligations.scope = a.obligations.scope[:-1]


def _fixpoint(a: TagAnalysis, op: scf.ForOp, mask: np.ndarray, symbol: int, base: State, step: int,
              scope: tuple[int, int], track: bool, peelable: bool) -> bool:
    """Run the body from the join of `base` (what flows into the iterations of `symbol`) and
    what an iteration leaves, renamed to the next, until that entry settles: True, the state
    being what the final pass left; False when `peelable` and the join loses tags both sides
    have."""
    sp = a.space
    me: Key = (0, ((symbol, 1),))
    lo = sp.symbols[symbol].lo
    body = op.body.block
    a.values[body.args[0]] = sp.of_symbol(symbol, a.n)
    a.tags.pop(body.args[0], None)
    entry = base
    frozen: list[np.ndarray] = []
    """Per memory, the bytes whose write status at the entry no longer moves from pass to pass
    once widened: the status before the loop (what the first iteration sees, and no less)."""
    rename = _Renamer(a, symbol, add_keys(me, (-step, ())))
    carried = f"a value carried from one iteration to the next of the loop at {a.where(op)}"
    checking = a.checking
    a.loops.append(LoopContext(sp.symbols[symbol].name, symbol, step=step))
    a.obligations.scope = a.obligations.scope + (symbol,)
    try:
        # Assertions are checked on a pass whose entry state is final. The first pass starts
        # from `base`; it is final when what the iteration carries to the next (the entry state
        # changes) is never read before being overwritten, which the first pass records.
        # Otherwise the passes go on until the entry state settles.
        for attempt in range(MAX_PASSES + 1):
            mark = a.obligations.mark()
            facts_mark = (set(a.facts), set(a.replay_facts), {k: list(v) for k, v in a.loop_facts.items()})
            a.restore(entry)
            tracking = attempt == 0 and track
            a.checking = checking and (attempt > 0 or tracking)
            if tracking:
                a.track(scope)
            a.run_block(body, mask)
            exposed = a.untrack(scope) if tracking else None
            if exposed is not None and (a.checking or not checking) and _carries_nothing(a, entry, exposed):
                return True  # the entry state of later iterations changes nothing this pass saw
            after = a.snapshot(scope)
            if exposed is not None and (a.checking or not checking) and \
                    not _reads_carried_cheaply(a, base, after, entry, exposed, rename, symbol, lo, step):
                return True  # (what the pass left is the state now)
            # the entry of a later iteration: what this iteration leaves, seen one step later
            a.restore(base)
            back = rename.state(after)
            a.join_into(back, None, carried, symbol, first=lo, step=step)
            for m, still, (_, site, _) in zip(a.memories, frozen, base.memories):
                m.site[still] = site[still]  # (widened: the write status before the loop, in every iteration)
            new_entry = a.snapshot(scope)
            if new_entry.same_as(entry) or (exposed is not None and not _reads_carried(entry, new_entry, exposed)):
                if a.checking or not checking:
                    a.restore(after)
                    return True
                continue
            a.obligations.rollback(mark)
            a.facts, a.replay_facts = set(facts_mark[0]), set(facts_mark[1])  # the pass's facts go too
            a.loop_facts = {k: list(v) for k, v in facts_mark[2].items()}
            a._floors = {}  # some of the bounds it knew are gone
            a._bounded = {}
            if peelable and attempt == 0 and _loses_tags(base, back, new_entry):
                return False
            if attempt == MAX_PASSES - 2:  # widen what still moves
                frozen = [n[1] != e[1] for n, e in zip(new_entry.memories, entry.memories)]
                new_entry = State([(np.where(n[0] != e[0], TOP, n[0]), np.where(still, b[1], n[1]), n[2]) for
                                   n, e, b, still in zip(new_entry.memories, entry.memories, base.memories, frozen)],
                                  new_entry.slots)
            entry = new_entry
        raise a.undecidable(op, "the tags this loop carries from one iteration to the next do not settle")
    finally:
        a.loops.pop()
        a.obligations.scope = a.obligations.scope[:-1]
        a.checking = checking


def _loses_tags(base: State, back: State, joined: State) -> bool:
    """Whether a loop-entry join made conflicting (⊤) bytes that both sides had tags for."""
    for (ours, *_), (theirs, *_), (both, *_) in zip(base.memories, back.memories, joined.memories):
        if ((ours > TOP) & (theirs > TOP) & (both == TOP)).any():
            return True
    return False


def _carries_nothing(a: TagAnalysis, entry: State, exposed: tuple[list[np.ndarray], list[bool]]) -> bool:
    """Whether a pass read nothing before overwriting it and leaves no shared write unordered
    that the pass's entry did not have: then no entry state of a later iteration can change
    what it saw (`_reads_carried` without building that state)."""
    memories, slots = exposed
    if any(slots) or any(read.any() for read in memories):
        return False
    return all(old is None or np.array_equal(old, m.join_writers(old, m.epoch_writer))
               for (_, _, old), m in zip(entry.memories, a.memories))


def _reads_carried_cheaply(a: TagAnalysis, base: State, after: State, entry: State,
                           exposed: tuple[list[np.ndarray], list[bool]], rename: _Renamer, symbol: int,
                           first: Key | None, step: int) -> bool:
    """`_reads_carried` of the entry state a later iteration sees (`base` joined with `after`
    renamed one step back), built only where the pass read before writing: the tags and the
    write status of the memories it read so, the writers of shared memories. (A variable it
    read so: True, and the whole state is built.)"""
    memories, slots = exposed
    if any(slots):
        return True
    for (ours, our_sites, our_writers), (theirs, their_sites, their_writers), (old, old_sites, old_writers), m, read \
            in zip(base.memories, after.memories, entry.memories, a.memories, memories):
        if read.any():
            back = rename.ids(theirs)
            joined = join(ours, back) if first is None else a.inductive_join(ours, back, symbol, first)
            if (read & (old != joined)).any():
                return True
            if first is not None and (read & ~written(old_sites)).any():
                sites = our_sites.copy()
                a.initialization.enter(m, sites, a.initialization.renamed(their_sites, symbol, rename.replacement),
                                       symbol, first, step)
                if (read & (old_sites != sites)).any():
                    return True
        if old_writers is not None and \
                not np.array_equal(old_writers, m.join_writers(our_writers, their_writers)):
            return True
    return False


def _reads_carried(entry: State, new_entry: State, exposed: tuple[list[np.ndarray], list[bool]]) -> bool:
    """Whether a pass read, before overwriting it, anything the entry state changes — or left
    shared writes unordered by a barrier at the end of the body (they race with the next
    iteration's accesses)."""
    memories, slots = exposed
    for (old, old_sites, old_writers), (new, new_sites, new_writers), read in \
            zip(entry.memories, new_entry.memories, memories):
        if (read & ((old != new) | (old_sites != new_sites))).any() or \
                (old_writers is not None and not np.array_equal(old_writers, new_writers)):
            return True
    for (old_tags, old_value), (new_tags, new_value), read in zip(entry.slots, new_entry.slots, slots):
        if read and (not np.array_equal(old_tags, new_tags) or not _same_values([old_value], [new_value])):
            return True
    return False


def _same_values(x: list[Affine | None], y: list[Affine | None]) -> bool:
    for p, q in zip(x, y):
        if (p is None) != (q is None):
            return False
        if p is not None and q is not None and not (np.array_equal(p.const, q.const) and p.terms.keys() == q.terms.keys()
                                                    and all(np.array_equal(p.terms[t], q.terms[t]) for t in p.terms)):
            return False
    return True


class _Renamer:
    """Rewrites tags and values from iteration `symbol` to the iteration before it."""

    def __init__(self, a: TagAnalysis, symbol: int, replacement: Key) -> None:
        self.a = a
        self.symbol = symbol
        self.replacement = replacement
        self.memo: dict[int, int] = {}
        self.components: dict[tuple[Any, ...], Key] = {}
        """Per symbolic part of a component, the part renamed."""
        self.shift = np.zeros(0, np.int64)
        """Per element id: what renaming adds to it (where `done`)."""
        self.done = np.zeros(0, bool)
        self.kept = a.elements_before.get(symbol, 0)
        """Elements below this id were made before the symbol: renaming leaves them as they are."""

    def state(self, state: State) -> State:
        codes = self.a.initialization
        return State([(self.ids(t), codes.renamed(site, self.symbol, self.replacement), writers)
                      for t, site, writers in state.memories],
                     [(self.ids(t), self.value(v)) for t, v in state.slots])

    def ids(self, tags: np.ndarray) -> np.ndarray:
        concrete = tags > TOP
        if not concrete.any():
            return tags
        known = tags[concrete]
        element = (known - 2) // BYTES
        size = int(element.max()) + 1
        if size > len(self.shift):  # element ids are small: a table of shifts, filled as needed
            grown = np.zeros(max(size, 2 * len(self.shift)), np.int64)
            grown[:len(self.shift)] = self.shift
            done = np.zeros(len(grown), bool)
            done[:len(self.done)] = self.done
            done[:self.kept] = True
            self.shift, self.done = grown, done
        present = np.zeros(size, bool)
        present[element] = True
        for e in np.flatnonzero(present & ~self.done[:size]).tolist():
            self.shift[e] = self.element(e) - e
            self.done[e] = True
        shift = self.shift[element]
        if not shift.any():
            return tags
        out = tags.copy()
        out[concrete] = known + shift * BYTES
        return out

    def element(self, e: int) -> int:
        new = self.memo.get(e)
        if new is None:
            tag = self.a.table.tags[e]
            renamed = tuple(self.component(v) if isinstance(v, tuple) else v for v in tag)
            new = self.memo[e] = e if renamed == tag else self.a.table.element_id(renamed)
        return new

    def component(self, key: Key) -> Any:
        """A symbolic component of a tag, renamed. Renaming adds to the constant what it makes
        of the symbolic part, which components share (the elements of a tile differ in their
        constants)."""
        part = self.components.get(key[1])
        if part is None:
            part = self.components[key[1]] = self.a.space.substitute((0, key[1]), self.symbol, self.replacement)
        if part[0] == 0 and part[1] == key[1]:  # the symbol does not appear in it
            return key
        return _component(add_keys((key[0], ()), part))

    def value(self, v: Affine | None) -> Affine | None:
        if v is None or self.symbol not in self.a.space.atoms_of((0, tuple((t, 1) for t in v.terms))) | set(v.terms):
            return v
        forms, inverse = v.forms()
        const = np.zeros(len(forms), np.int64)
        terms: dict[int, np.ndarray] = {}
        for p, form in enumerate(forms):
            key = self.a.space.substitute(form, self.symbol, self.replacement)
            const[p] = key[0]
            for t, c in key[1]:
                terms.setdefault(t, np.zeros(len(forms), np.int64))[p] = c
        return Affine(const[inverse], {t: column[inverse] for t, column in terms.items()})


def _nothing(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    pass


def _float_op(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    a.computed(op)


def register_rule(op_type: type, rule: Rule) -> None:
    """Teach the analysis an op of another dialect (a backend's intrinsic): `rule(analysis, op,
    mask)` sets the op's result values (`analysis.values`) and byte tags (`analysis.tags`) and
    moves tags through memories as the op does. Without a rule, an op's results are computed
    data (⊤ unless every input is ⊥)."""
    if op_type in _RULES:
        raise ValueError(f"{op_type.__name__} already has a tag rule")
    _RULES[op_type] = rule
    tag_liveness.keep_always(op_type)


_RULES: dict[type, Rule] = {
    arith.ConstantOp: _constant,
    **{t: _int_op for t in _INT_RULES},
    arith.ExtFOp: _cast, arith.TruncFOp: _cast, arith.SIToFPOp: _cast, arith.UIToFPOp: _cast, arith.FPToSIOp: _cast,
    arith.FPToUIOp: _cast, arith.TruncIOp: _cast, arith.ExtSIOp: _cast, arith.ExtUIOp: _cast,
    D.ThreadIdxOp: _index("thread"), D.BlockIdxOp: _index("block"), D.BlockDimOp: _index("block_dim"),
    D.GridDimOp: _index("grid"), D.LaneIdOp: _lane_or_warp, D.WarpIdOp: _lane_or_warp, D.DimOp: _dim,
    D.MakeSharedOp: _alloc, D.MakeLocalOp: _alloc, D.ViewOp: _view, D.SliceOp: _view, D.PartitionOp: _partition,
    D.TensorViewOp: _tensor_view,
    D.LoadOp: _load, D.LoadAtOp: _load, D.StoreOp: _store, D.StoreAtOp: _store, D.AtomicOp: _atomic,
    D.BitcastOp: _same_bytes, D.ConcatOp: _concat, D.ExtractOp: _extract, D.BytePermOp: _byte_perm,
    D.ShuffleOp: _shuffle, D.VarOp: _var, D.VarStoreOp: _var_store, D.VarLoadOp: _var_load,
    D.CopyOp: _copy, D.MmaOp: _mma, D.MmaWaitOp: _mma_wait, D.SyncThreadsOp: _sync, D.AssumeOp: _assume, D.ResetTagsOp: _reset, D.TagOp: _tag,
    D.TagAssertOp: _assert, scf.IfOp: _if, scf.ForOp: _for, scf.YieldOp: _nothing,
    math.FmaOp: _float_op,
}


def _rule_of(op: Operation) -> Rule:
    return _RULES.get(type(op)) or _computed


def _computed(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    a.computed(op)


#: Rules of ops that may sit in a straight run whose copies run together (`batching`): they
#: compute values, access tiles and global tensors, or compare tags (assertions, products);
#: what they report the plain walk finds again.
_RUN_RULES: set[Any] = {_int_op, _constant, _cast, _float_op, _load, _store, _same_bytes, _concat, _extract,
                        _byte_perm, _view, _dim, _computed, _mma, _assert}
#: Rules whose op may run over several copies' points at once (values computed per point;
#: tiles read and written per thread).
_COPY_RULES: set[Any] = {_int_op, _float_op, _load, _store, _same_bytes, _concat, _extract, _byte_perm, _computed,
                         _view, _mma, _assert}
_TILE_ACCESSES = (D.LoadOp, D.StoreOp, D.StoreAtOp, D.MmaOp, D.TagAssertOp)
_ALONE = batching.Role(False, False, False, False, False)
"""The role of an op walked on its own, outside runs (`TileBounds`)."""
_WRITES_SECOND = (D.StoreOp, D.StoreAtOp, D.CopyOp, D.AtomicOp)
"""Writes of their first operand's data into their second operand's tile."""
_STORES, _ANY_TILE, _NOTHING = "stores", "any tile", "nothing"
"""How an op may put data in tiles (`Preparation.fills_before`)."""
_OWN_MODULES = frozenset(("xdsl.dialects.arith", "xdsl.dialects.math", "xdsl.dialects.scf", D.__name__))
"""Where the ops whose effect on tiles this module knows are defined (a target's intrinsics are not)."""


@cache
def _how_it_fills(kind: type) -> str:
    """How ops of a kind may put data in tiles (`Preparation._filled`)."""
    if kind in _WRITES_SECOND:
        return _STORES
    return _ANY_TILE if kind is D.TagOp or kind.__module__ not in _OWN_MODULES else _NOTHING
_EXACT_CASTS = (arith.ExtFOp, arith.TruncFOp, arith.SIToFPOp, arith.UIToFPOp, arith.ExtSIOp, arith.ExtUIOp)


def _runnable(op: Operation) -> bool:
    return _rule_of(op) in _RUN_RULES and not op.regions and not _started(op)


def _batchable(op: Operation) -> bool:
    rule = _rule_of(op)
    if rule is _cast:
        return isinstance(op, _EXACT_CASTS)
    return rule in _COPY_RULES and not op.regions and not _started(op)


def _started(op: Operation) -> bool:
    """Whether an op is a product started with `matmul_async`: it runs alone, so that the
    products each group started after a running one are counted in program order."""
    return isinstance(op, D.MmaOp) and op.asynchronous is not None


_STARTED = object()
"""The kind of products started with `matmul_async`, to `Preparation._kind_role`."""
