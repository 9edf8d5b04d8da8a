"""Findings about bytes a read may see unwritten, and how a finding describes its place: which
thread, element and coordinates a witness point stands for (`describer`). Rules of every
family report through these, so that an uninitialized read is worded the same everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from argus.verify.memory import NEVER, RESET
from argus.verify.tags import BOTTOM

from .findings import Conditional
from .initialization import conditional, written

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any
    from argus.verify.memory import TagMemory
    from xdsl.ir import Operation
    from .analysis import TagAnalysis
    from .initialization import Conjunction


@dataclass
class PairIndex:
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


def check_written(a: TagAnalysis, op: Operation, memory: TagMemory, idx: np.ndarray, threads: np.ndarray,
                   points: np.ndarray, tags: np.ndarray | None, why: str, operand: str | None = None) -> None:
    """`op` reads bytes `idx` (a row per thread of `threads`, of `points`): a byte nothing wrote
    is an uninitialized read, and so is one written on some paths only, in the launches that
    take none of them."""
    status = written_status(a, memory, idx, threads, points, tags)
    if status is not None:
        unwritten(a, op, status, threads, why, operand)


def written_status(a: TagAnalysis, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray,
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


def unwritten(a: TagAnalysis, op: Operation, status: np.ndarray, threads: np.ndarray, why: str,
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
        a.obligations.fault(site, "uninitialized-read", thread, describer(a, op, site, np.arange(a.threads)),
                            {**details, "why": why}, condition=a.path_of(int(threads[rows[0]])))
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
    conditional_finding(a, op, "uninitialized-read", alternatives, points, details)


def conditional_finding(a: TagAnalysis, op: Operation, kind: str, alternatives: list[Conjunction], points: list[int],
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
    finding = Conditional(site, kind, kept[0][1], 0, describer(a, op, site, np.arange(a.threads)), details=details,
                          scope=scope)
    finding.add(*map(list, zip(*kept)))
    a.obligations.candidates.append(finding)


def space_name(memory: TagMemory) -> str:
    """Where a memory lives, as the interpreter names it."""
    return "local" if memory.per_thread else "shared"


def describer(a: TagAnalysis, op: Operation, site: str, threads: np.ndarray, *, coordinates: list[np.ndarray] | None = None,
               sites: tuple[np.ndarray, np.ndarray] | None = None, tags: tuple[np.ndarray, np.ndarray] | None = None,
               message: str = "",
               mma: PairIndex | None = None, group: int = 1) -> Callable[..., dict[str, Any]]:
    loops = [(ctx.name, ctx.symbol, None if ctx.values is None else ctx.values.copy(), ctx.index) for ctx in a.loops]
    space = a.space
    sources = a.sites

    def describe(point: int, element: int, model: dict[int, int]) -> dict[str, Any]:
        thread = int(threads[point])
        w: dict[str, Any] = {"assertion": site}
        w["block"] = a.block_of(thread, model)
        w["thread"] = thread
        if group > 1:
            w["threads"] = (thread, thread + group - 1)
        w["loops"] = {name: (int(vals[thread]) if sym is None else space.atom_value(sym, model) if index is None  # type: ignore[index]
                             else space.evaluate(index.row(thread), model))
                      for name, sym, vals, index in loops}
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
