"""What a check prepares once per kernel (`Preparation`): the op table, tag liveness, the values
every check computes alike, the batching plan (which ops may run together over copies of an
unrolled loop, and their roles), and the launch's concrete thread indices (`Launch`).
"""

from __future__ import annotations

from functools import cache, cached_property
from typing import TYPE_CHECKING

import numpy as np
from argus.verify.affine import Affine
from xdsl.dialects import arith, scf

from ..ir import dialect as D
from ..ir.dialect import pad3
from ..ops import integers
from . import rolled_loops, rules, run_plan
from .access import (
    byte_perm_rule,
    concat_rule,
    extract_rule,
    load_rule,
    partition_rule,
    same_bytes_rule,
    store_rule,
    tile_bounds_rule,
    view_rule,
)
from .arithmetic import cast_rule, constant_rule, dim_rule, int_op_rule, integer_constant, numeric_rule, scale_rule
from .initialization import written
from .op_table import OpTable
from .product_reads import asynchronous_groups, operand_allocations
from .products import mma_rule
from .rules import computed_rule, float_op_rule
from .state import TileBounds, UNREAD, is_int
from .tag_liveness import Traced, relevant_ops
from .tags import assert_rule

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any
    from xdsl.ir import Block, Operation
    from ..errors import SourceLocation
    from .tag_liveness import Liveness


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
        from ..ir.registry import install

        install()  # every op's tag rule, the core language's and every backend's
        self.kernel = kernel
        self.locations = locations
        self.batch = batch
        """Whether copies of an unrolled loop's ops run together (off: every op on its own)."""
        self._steps: dict[int, list[Any]] = {}
        self.atoms: dict[Operation, Any] = {}
        """The atom of each MMA or copy op."""
        self._read: dict[Operation, Any] = {}
        self._kinds: dict[Any, tuple[run_plan.Role, bool | None]] = {}
        self._allocations: dict[int, int] = {}
        self._fills: dict[Operation, bool] = {}
        self._fixed: dict[tuple[int, ...], Affine | None] = {}
        self._rolled: dict[Operation, run_plan.Run | None] = {}
        self._arithmetic: dict[int, Callable[..., np.ndarray] | None] = {}
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
    def written_only(self) -> set[int]:
        """The register loads (by identity) whose value no check needs (`Liveness.written_only`):
        a walk asks only whether their bytes were written, not what they hold."""
        return {id(self.table.ops[j]) for j in self.liveness.written_only}

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
        begins (`run_plan.Known`); the walk and its runs skip their ops."""
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
                number = integer_constant(ops[j])
                if number is None:
                    found[j] = None
                    continue
                value = np.full(launch.n, number, np.int64)
            elif kind in _THREAD_INDICES:
                value = launch.numbers(ops[j])
                if value is None:
                    continue
            else:  # integer ops: known integer operands make an integer
                if (kind not in integers.INTEGER_OPS and kind is not arith.CmpiOp) or \
                        not all(map(numbers.__contains__, operands[j])):
                    continue
                function = numeric_rule(ops[j])
                if function is None:
                    continue
                value = function(*map(numbers.__getitem__, operands[j]))
            numbers[results[j][0]] = value
            found[j] = Affine(value)
        return found, numbers

    def fixed(self, values: tuple[int, ...]) -> Affine | None:
        """An operand over every copy's points (`run_plan.Planner`), if every copy's value is known
        (one object per column of values: a load and the store of its copy often share one)."""
        found = self._fixed.get(values, UNREAD)
        if found is UNREAD:
            numbers = self._known[1]
            parts = [numbers.get(v) for v in values]
            found = self._fixed[values] = None if any(part is None for part in parts) else \
                Affine(np.concatenate(parts))  # type: ignore[arg-type]
        return found  # type: ignore[no-any-return]

    @cached_property
    def hands_off(self) -> bool:
        """Whether the kernel hands data between warps or asynchronous agents other than through
        block barriers (`verification.hands_off`), read off the op table once per kernel."""
        from .verification import hands_off

        return hands_off(self.table.ops)

    @cached_property
    def assertions(self) -> list[D.TagAssertOp | D.StoreTagsOp]:
        """The kernel's claims: tag assertions, and tags asserted of what is stored (`assert_tags`)."""
        return self.table.of_kind(D.TagAssertOp) + self.table.of_kind(D.StoreTagsOp)

    @cached_property
    def products(self) -> list[D.MmaOp]:
        """The kernel's matrix products (`matmul` ops), in program order."""
        return self.table.of_kind(D.MmaOp)

    @cached_property
    def product_operands(self) -> set[Operation]:
        """The shared allocations products read operands from (`product_reads`)."""
        return operand_allocations(self.products)

    @cached_property
    def asynchronous_operands(self) -> dict[Operation, set[int]]:
        """The shared allocations `matmul_async` products read operands from, with the sizes of
        their groups (`product_reads`)."""
        return asynchronous_groups(self.products)

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
        found = self._read.get(op, UNREAD)
        if found is UNREAD:
            found = self._read[op] = reader(op)
        return found

    def steps(self, block: Block) -> list[Any]:
        """A block's relevant ops, runs of copies as `run_plan.Run` steps."""
        found = self._steps.get(id(block))
        if found is None:
            relevant, table = self.relevant, self.table
            numbers = [j for j in table.block(block) if j in relevant]
            if not self.batch:
                found = self._steps[id(block)] = [table.ops[j] for j in numbers]
                return found
            known = self.known
            numbers = [j for j in numbers if j not in known]
            lead = [run_plan.Known([table.ops[j].results[0] for j in known], list(known.values()))] \
                if known and block is self.kernel.body.block else []
            steps = run_plan.plan(table, numbers, self)
            bounds = self.liveness.bounds_only
            if bounds:  # (they run alone: `roles`)
                only = {id(table.ops[j]) for j in bounds}
                steps = [TileBounds(step) if id(step) in only else step for step in steps]
            found = self._steps[id(block)] = lead + steps
        return found

    def rolled(self, loop: scf.ForOp) -> run_plan.Run | None:
        """A static loop kept rolled, with the rolled loops in its body, as one run over all their
        iterations (`rolled_loops.rolled_run`); None where an op of theirs must run on its own."""
        found = self._rolled.get(loop, UNREAD)
        if found is UNREAD:
            found = self._rolled[loop] = rolled_loops.rolled_run(self.table, self._numbers[loop], self._nest, self,
                                                             self.launch.n) if self.batch else None
        return found  # type: ignore[no-any-return]

    @cached_property
    def _numbers(self) -> dict[Operation, int]:
        """Each loop's number in `table`."""
        return {op: j for j, op in enumerate(self.table.ops) if self.table.kinds[j] is scf.ForOp}

    @cached_property
    def _nest(self) -> rolled_loops.Nest:
        """What `rolled_loops.rolled_run` asks of the kernel's ops (by their number in `table`)."""
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

        return rolled_loops.Nest(body, indices, alone, lambda j: id(table.bodies[j].args[0]),
                             lambda j: tile_bounds_rule if j in bounds else None, known_numbers, moved)

    def holds_a_loop(self, op: scf.ForOp) -> bool:
        """Whether a runtime loop sits in the loop's body, at any depth (a static loop kept rolled
        is straight code)."""
        table = self.table
        numbers = table.block(op.body.block)
        return bool(numbers) and any(kind is scf.ForOp and not D.is_unrolled(table.ops[j]) for j, kind in
                                     enumerate(table.kinds[numbers[0]:table.ends[numbers[-1]]], numbers[0]))

    def holds_a_product(self, op: scf.ForOp) -> bool:
        """Whether a matrix product sits in the loop's body, at any depth."""
        table = self.table
        numbers = table.block(op.body.block)
        return bool(numbers) and any(kind is D.MmaOp for kind in table.kinds[numbers[0]:table.ends[numbers[-1]]])

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
        keys (`run_plan.plan` makes a read wait for the writes of its keys before it): ("whole",
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
        """The numpy function of an integer op with an integer result (`run_plan.Planner`; the
        plan asks for an op once per block walked, and each check's groups call it)."""
        found = self._arithmetic.get(number, UNREAD)
        if found is UNREAD:
            found = None
            if self.table.kinds[number] in integers.INTEGER_OPS:
                result, = self.table.ops[number].results  # (unpacked: xDSL's indexing runs Python)
                if is_int(result):
                    found = numeric_rule(self.table.ops[number])
            self._arithmetic[number] = found
        return found  # type: ignore[no-any-return]

    @cached_property
    def _integer_constants(self) -> dict[int, int]:
        """The value of every integer constant of the kernel, by identity."""
        table = self.table
        return {table.results[j][0]: number for j, kind in enumerate(table.kinds)
                if kind is arith.ConstantOp and (number := integer_constant(table.ops[j])) is not None}

    def _allocation(self, value: int) -> int:
        """The op that allocates a tile (by identity), through the views of it (a value no op
        makes, a kernel's argument: minus its identity)."""
        found = self._allocations.get(value)
        if found is None:
            maker = self.table.maker.get(value)
            found = -value if maker is None else \
                self._allocation(self.table.operands[maker][0]) if rules.RULES.get(self.table.kinds[maker]) in (view_rule, partition_rule) \
                else maker
            self._allocations[value] = found
        return found

    def roles(self, numbers: list[int]) -> tuple[list[run_plan.Role], list[Any]]:
        """What the plan asks of each op (by its number in `table`): its kind's `run_plan.Role`,
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
            if role.runnable and (copies or (copies is None and not is_int(ops[j].results[0]))):
                where = locations.get(id(ops[j]))
                if where is not None:
                    key = (where.line, where.col, where.file, kind)  # (a location object hashes slowly)
            keys.append(key)
        return roles, keys

    @cached_property
    def _locations(self) -> dict[int, SourceLocation]:
        """`locations` by the op's identity (an op hashes in Python, an identity in C)."""
        return {id(op): where for op, where in self.locations.items()}

    def _kind_role(self, number: int) -> tuple[run_plan.Role, bool | None]:
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
    def _role(op: Operation) -> tuple[run_plan.Role, bool | None]:
        """The role of an op's kind, and whether copies of it may run as one group (None: it
        depends on the op — whether a load reads an integer)."""
        kind, rule = type(op), rules.RULES.get(type(op))
        role = run_plan.Role(_runnable(op), rule in (mma_rule, assert_rule), rule is view_rule, kind is D.MmaOp,
                             kind in _TILE_ACCESSES, 0 if rule is store_rule else -1)  # a store moves its value's tags
        return role, None if rule is load_rule else _batchable(op)


#: Rules of ops that may sit in a straight run whose copies run together (`batching`): they
#: compute values, access tiles and global tensors, or compare tags (assertions, products);
#: what they report the plain walk finds again.
_RUN_RULES: set[Any] = {int_op_rule, constant_rule, cast_rule, float_op_rule, scale_rule, load_rule, store_rule, same_bytes_rule,
                        concat_rule, extract_rule, byte_perm_rule, view_rule, dim_rule, computed_rule, mma_rule, assert_rule}


#: Rules whose op may run over several copies' points at once (values computed per point;
#: tiles read and written per thread).
_COPY_RULES: set[Any] = {int_op_rule, float_op_rule, scale_rule, load_rule, store_rule, same_bytes_rule, concat_rule, extract_rule,
                         byte_perm_rule, computed_rule, view_rule, mma_rule, assert_rule}


_TILE_ACCESSES = (D.LoadOp, D.StoreOp, D.StoreAtOp, D.MmaOp, D.TagAssertOp)


_ALONE = run_plan.Role(False, False, False, False, False)
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
    return rules.rule_of(op) in _RUN_RULES and not op.regions and not _started(op)


def _batchable(op: Operation) -> bool:
    rule = rules.rule_of(op)
    if rule is cast_rule:
        return isinstance(op, _EXACT_CASTS)
    return rule in _COPY_RULES and not op.regions and not _started(op)


def _started(op: Operation) -> bool:
    """Whether an op is a product started with `matmul_async`: it runs alone, so that the
    products each group started after a running one are counted in program order."""
    return isinstance(op, D.MmaOp) and op.asynchronous is not None


_STARTED = object()
"""The kind of products started with `matmul_async`, to `Preparation._kind_role`."""
