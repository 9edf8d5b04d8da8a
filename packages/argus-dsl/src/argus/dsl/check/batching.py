"""Running a run of copies (`run_plan.Run`) over every copy's points at once, or walking it again.

Each group of a run executes as one op over ``points = copies × threads`` (point ``c·n + t`` is
thread t of copy c): its operands gathered from the copies' values as the plan says, its rule
run once with the walk's points set to the copies' (`TagAnalysis.points` / `set_points`, put
back after), its results kept over all copies for later groups and set for each copy where
something else reads them. Integer arithmetic on numbers without tags is computed directly.

Findings come from the plain walk, whose witnesses name one thread and one copy. So the run is
undone and walked again op by op when running the groups out of program order changed what a
read saw (`footprint.Footprint`), when anything was reported in it (a fault, a race, a
comparison), or when a rule raised on purpose what the plain walk is to decide (`RE_WALKED`:
copies a rule cannot take together, `copies.CannotBatch`; or a verdict that may hold for one
copy and not another). Any other exception is a bug of a rule, and it surfaces as one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Affine, Uniform
from xdsl.ir import Operation

from ..errors import VerificationError
from ..machine.interpreter import TileValue
from .copies import CannotBatch, TileCopies
from .footprint import Footprint
from .findings import Conditional
from .run_plan import Gather, Group, Run
from .state import GlobalRef, Undecidable

if TYPE_CHECKING:
    from .analysis import TagAnalysis


RE_WALKED = (CannotBatch, Undecidable, VerificationError)
"""What a rule raises on purpose in a run that the plain walk decides again, op by op: copies
it cannot take together, or a verdict the plain walk gives with one copy's points and place.
Nothing else is caught: a rule's bug is not hidden behind a second walk."""


def execute(a: TagAnalysis, run: Run, mask: np.ndarray, rule_of: Callable[[Operation], Any],
            again: Callable[[], None] | None = None) -> None:
    """Run `run` group by group; walk it again op by op (or by `again`) if that changed any
    byte's order of accesses, reported anything, or a rule raised one of `RE_WALKED`."""
    footprint = Footprint(run.places or len(run.ops))
    footprint.alone = len(run.groups) == 1 and any(gather.tags_only for gather in run.groups[0].gathers)
    mark = a.obligations.mark()
    compared = a.obligations.compared
    faults = len(a.faults)
    a.footprint = footprint
    n = a.n
    results: list[list[tuple[Any, Any]]] = []
    try:
        for step, group in enumerate(run.groups):
            footprint.step = step
            if len(group.ops) == 1:
                footprint.group, footprint.threads = group, n
                rule_of(group.ops[0])(a, group.ops[0], mask)
                results.append([])
            else:
                results.append(_run_group(a, group, mask, rule_of, results))
        # findings come from the plain walk; comparisons left to decide are kept (their
        # witnesses are described per point, as the plain walk would)
        # (an access's bounds obligation is no finding yet: the solver decides it later)
        fine = footprint.in_order() and len(a.faults) == faults and \
            all(type(c) is Conditional and c.kind == "out-of-bounds" for c in a.obligations.candidates[mark[0]:])
    except RE_WALKED:
        fine = False
    finally:
        a.footprint = None
    if fine:
        footprint.finish()
        return
    run.walked_again += 1
    footprint.undo()
    a.obligations.rollback(mark)
    a.obligations.compared = compared
    del a.faults[faults:]
    if again is not None:
        again()
        return
    for op in run.ops:
        rule_of(op)(a, op, mask)


def _run_group(a: TagAnalysis, group: Group, mask: np.ndarray, rule_of: Callable[[Operation], Any],
               earlier: list[list[tuple[Any, Any]]]) -> list[tuple[Any, Any]]:
    """Run a group's first op over every copy's points; its results over all copies."""
    ops = group.ops
    copies, n = len(ops), a.n
    values, tags = a.values, a.tags
    gathered = [_gather(a, gather, copies, earlier) for gather in group.gathers]
    if group.arithmetic is not None and all(type(x) is Affine and not x.terms and t is None for x, t in gathered):
        out = [(Affine(group.arithmetic(*(x.const for x, _ in gathered))), None)]
    else:
        out = _run_rule(a, group, mask, rule_of, gathered)
    for r, (value, t) in enumerate(out):
        if not group.scatter[r]:
            continue
        for c, op in enumerate(ops):
            part = slice(c * n, (c + 1) * n)
            result = op.results[r]
            values[result] = value.tiles[c] if isinstance(value, TileCopies) else _part(value, part)
            if t is None:
                tags.pop(result, None)
            else:
                tags[result] = t[part]
    return out


def _run_rule(a: TagAnalysis, group: Group, mask: np.ndarray, rule_of: Callable[[Operation], Any],
              gathered: list[tuple[Any, np.ndarray | None]]) -> list[tuple[Any, Any]]:
    """The group's first op's rule over every copy's points, its operands stand-ins holding what
    was gathered; its results over all copies."""
    first, copies, n = group.ops[0], len(group.ops), a.n
    results = tuple(first.results)
    values, tags = a.values, a.tags
    for stand_in, (value, t) in zip(group.operands, gathered):
        values[stand_in] = value
        if t is not None:
            tags[stand_in] = t
    a.shapes_of[first] = (group.operands, results)  # the rule reads the stand-ins
    a.op_parts.pop(first, None)
    a.footprint.group, a.footprint.threads = group, n  # type: ignore[union-attr]
    points = _points(a, copies)
    saved = a.points()
    full = mask is a.everyone
    a.set_points(points)
    try:
        (group.rule or rule_of(first))(a, first, points[2] if full else np.tile(mask, copies))
        out = [(values.get(r), tags.get(r)) for r in results]
    finally:
        a.set_points(saved)
        del a.shapes_of[first]
        a.op_parts.pop(first, None)
        for stand_in in group.operands:
            values.pop(stand_in, None)
            tags.pop(stand_in, None)
    return out


def _points(a: TagAnalysis, copies: int) -> tuple[Any, ...]:
    """The analysis's point arrays over `copies` × its threads (point p is thread p mod n): the
    count, the ids, the everyone mask, each point's thread, the zero tags by width."""
    found = a.copy_points.get(copies)
    if found is None:
        count = a.n * copies
        found = a.copy_points[copies] = (count, np.arange(count), np.ones(count, bool),
                                     np.concatenate([a.thread_ids] * copies), {})
    return found


def _gather(a: TagAnalysis, gather: Gather, copies: int, earlier: list[list[tuple[Any, Any]]]
            ) -> tuple[Any, np.ndarray | None]:
    """An operand's value and tags over every copy's points."""
    tiled = a.tiled_values
    if gather.shared is not None:  # one value for every copy
        tags = a.tags.get(gather.shared)
        value = None if gather.tags_only else _tile(a.values.get(gather.shared), copies, tiled)
        return value, None if tags is None else _tile(tags, copies, tiled)
    sources = gather.sources
    if gather.fixed is not None:  # known values: no tags
        return None if gather.tags_only else gather.fixed, None
    if gather.in_order and len(sources) == 1 and type(sources[0]) is tuple:
        return earlier[sources[0][0]][sources[0][1]]  # an earlier group's results, copy for copy
    n = a.n
    values, tags, sizes = [], [], []
    for source in sources:
        if type(source) is not tuple:  # an SSA value
            values.append(a.values.get(source))
            tags.append(a.tags.get(source))
            sizes.append(n)
        else:
            value, t = earlier[source[0]][source[1]]
            values.append(value)
            tags.append(t)
            sizes.append(source[2] * n)
    index = gather.index(n)
    if gather.tags_only:
        value = None
    elif all(type(x) is Affine and not x.terms for x in values):  # numbers only: one array to gather
        const = values[0].const if len(values) == 1 else np.concatenate([x.const for x in values])
        value = Affine(const if index is None else const[index])
    elif all(isinstance(x, Affine) for x in values):
        value = values[0] if len(values) == 1 else _concatenate(values)
        if index is not None:
            value = _without_zero_terms(value.take(index))
    elif all(x is values[0] for x in values) and not isinstance(values[0], TileCopies):
        value = values[0]
    else:
        value = _tiles(values, sizes, n, gather.rows)
    if all(t is None for t in tags):
        return value, None
    width = next(t for t in tags if t is not None).shape[1]
    both = np.concatenate([np.zeros((size, width), np.int64) if t is None else t for size, t in zip(sizes, tags)]) \
        if len(tags) > 1 else tags[0]
    return value, both if index is None else both[index]


def _tiles(values: list[Any], sizes: list[int], n: int, rows: tuple[int, ...]) -> Any:
    """Each copy's tile, from its sources' tiles (`sizes`: their points): one tile if all are
    the same, else a `TileCopies`."""
    listed: list[Any] = []
    for value, size in zip(values, sizes):
        if isinstance(value, TileCopies):
            listed.extend(value.tiles)
        elif value is None or isinstance(value, (Affine, GlobalRef)):
            raise CannotBatch("copies of one op read different memories or tensors")
        else:
            listed.extend([value] * (size // n))
    tiles = tuple(listed[r] for r in rows)
    return tiles[0] if all(tile is tiles[0] for tile in tiles) else TileCopies(tiles)


def _concatenate(values: list[Affine]) -> Affine:
    atoms = {t for x in values for t in x.terms}
    return Affine(np.concatenate([x.const for x in values]),
                  {t: np.concatenate([x.terms[t] if t in x.terms else np.zeros(len(x), np.int64) for x in values])
                   for t in atoms})


def _part(value: Any, part: slice) -> Any:
    """Some copies' share of a value over all copies."""
    return _without_zero_terms(Affine(value.const[part], {t: x[part] for t, x in value.terms.items()})) \
        if isinstance(value, Affine) else value


def _without_zero_terms(value: Affine) -> Affine:
    """The value without the symbols none of its points depends on (a form's terms are nonzero
    somewhere: a symbol with zero coefficients everywhere would make a number look symbolic)."""
    if all(x.any() for x in value.terms.values()):
        return value
    return Affine(value.const, {t: x for t, x in value.terms.items() if x.any()})


def _tile(value: Any, copies: int, tiled: dict[Any, Any]) -> Any:
    """A value (or tags) every copy reads, over every copy's points."""
    if copies == 1 or value is None or type(value) is TileValue:
        return value  # (a tile's per-thread parts are read per thread)
    known = tiled.get((id(value), copies))
    if known is not None and known[0] is value:
        return known[1]
    # (copies stacked by np.concatenate, which runs in C: np.tile is Python)
    if isinstance(value, np.ndarray):
        out: Any = np.concatenate([value] * copies) if value.ndim == 2 else np.tile(value, (copies, 1))
    elif type(value) is Uniform:  # one form at every point stays one (made into arrays only if read so)
        out = Uniform(value.key, len(value) * copies)
    elif isinstance(value, Affine):
        out = Affine(np.concatenate([value.const] * copies),
                     {t: np.concatenate([c] * copies) for t, c in value.terms.items()})
    else:
        if not isinstance(value, GlobalRef):
            return value
        out = GlobalRef(value.name, value.dtype, [_tile(d, copies, tiled) for d in value.dims],
                        None if value.root is None else _tile(value.root, copies, tiled))
    tiled[(id(value), copies)] = (value, out)
    return out
