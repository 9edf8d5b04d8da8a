"""Tag comparisons an analysis collects, decided once the whole kernel has been walked.

Each comparison holds byte-tag ids for every enumerated point (thread, unrolled iteration)
and element. Most are settled by numpy on the spot: equal ids are equal tags; two tags with
only integer components that differ are a violation, listed exactly. What is left are pairs
of distinct symbolic tags (``(16·kj + 3, h // 2)`` against ``(16·kj + 3, hk)``): per
assertion, every distinct pair goes into one solver query, a disjunction "some pair differs
somewhere in the domain". ``unsat`` proves the assertion; a model is a candidate witness.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .affine import Key, Space, all_along, among, any_along, distinct_rows, sub_keys
from .products import text as products_text
from .reductions import MARKS as _REDUCTION_MARKS
from .sums import SUM
from .solvers import Answer, Comparison, Query, Solver
from .tags import BOTTOM, PLACE, SHIFT, TOP, TagTable

_MARKED = {(m,) for m in _REDUCTION_MARKS}
"""First components of the reduction tags, which read as text (`argus.verify.reductions.text`)."""

#: Builds a witness for (point, element) from symbol values (empty for a concrete finding).
Describe = Callable[[int, int, dict[int, int]], dict[str, Any]]


@dataclass
class Candidate:
    """A finding before replay: its kind, the site, and how to describe it for a model."""

    site: str
    kind: str
    point: int
    element: int
    describe: Describe
    model: dict[int, int] = field(default_factory=dict)
    lhs: Any = None
    rhs: Any = None

    details: dict[str, Any] = field(default_factory=dict)
    condition: list[Comparison] = field(default_factory=list)
    """What the symbols must satisfy for this finding (a solver's alternative); empty if none."""
    scope: tuple[int, ...] = ()
    """The symbols of the runtime loops around the finding (their bounds hold there only)."""

    def witness(self, table: TagTable, space: Space) -> dict[str, Any]:
        """The finding for people and programs, its facts in reading order."""
        facts = self.describe(self.point, self.element, self.model)
        facts["kind"] = self.kind
        facts.update(self.details)
        for side in ("lhs", "rhs"):
            tag = getattr(self, side)
            if tag is not None:
                facts[f"{side} tag"] = _evaluated(tag, table, space, self.model)
        first = [k for k in _ORDER if k in facts]
        return {k: facts[k] for k in first + [k for k in facts if k not in first]}


@dataclass
class _Pending:
    site: str
    equal: bool
    scope: tuple[int, ...] = ()
    pairs: dict[tuple[tuple[int, ...], tuple[tuple[int, int], ...]], tuple[int, int, Describe]] = field(
        default_factory=dict)
    """Per loop scope and distinct set of (lhs, rhs) element-tag pairs an element's bytes
    compare, where it was first seen (a site reached inside and outside a loop has both)."""


class Obligations:
    def __init__(self, table: TagTable, space: Space) -> None:
        self.table = table
        self.space = space
        self.candidates: list[Candidate] = []
        self.pending: dict[str, _Pending] = {}
        self.compared = 0
        self.scope: tuple[int, ...] = ()
        """The loop symbols around what is being compared now (set by the analysis)."""

    def mark(self) -> tuple[int, dict[str, int]]:
        """A point to roll back to (a loop pass whose entry state turned out not to be final)."""
        return len(self.candidates), {site: len(p.pairs) for site, p in self.pending.items()}

    def rollback(self, mark: tuple[int, dict[str, int]]) -> None:
        count, sizes = mark
        del self.candidates[count:]
        for site in list(self.pending):
            keep = sizes.get(site)
            if keep is None:
                del self.pending[site]
                continue
            pairs = self.pending[site].pairs
            for extra in list(pairs)[keep:]:
                del pairs[extra]

    def held(self, site: str, count: int = 1) -> None:
        """A comparison at `site` whose sides the caller found to be the same concrete tags
        (`count` of them, made at once): counted and the site reached, with nothing to decide."""
        self.compared += count
        self.pending.setdefault(site, _Pending(site, True, self.scope))

    def compare(self, site: str, lhs: np.ndarray, rhs: np.ndarray, equal: bool, describe: Describe,
                limit: int = 4, count: int = 1) -> None:
        """``tag(lhs) == tag(rhs)`` (or ``!=``) for arrays of byte ids (points, elements, bytes);
        `count` comparisons made at once (copies of an unrolled loop's assertion)."""
        self.compared += count
        pending = self.pending.setdefault(site, _Pending(site, equal, self.scope))
        if equal and lhs.shape == rhs.shape and np.array_equal(lhs, rhs) and (lhs > TOP).all():
            return  # the same concrete tags on both sides: nothing to decide (the common case)
        unwritten = any_along((lhs == BOTTOM) | (rhs == BOTTOM))
        conflicting = any_along((lhs == TOP) | (rhs == TOP)) & ~unwritten
        for kind, where in (("unwritten", unwritten), ("conflicting", conflicting)):
            for p, e in np.argwhere(where)[:limit]:
                self._add(Candidate(site, kind, int(p), int(e), describe, {},
                                    _raw_tag(self.table, lhs[p, e]), _raw_tag(self.table, rhs[p, e])))
        concrete = ~(unwritten | conflicting)
        same = all_along(lhs == rhs)
        if equal:
            suspect = concrete & ~same
        else:
            suspect = concrete & ~_shifted(lhs, rhs)  # different byte positions can never be equal
        if not suspect.any():
            return
        # the comparisons of one pair of elements are alike: each distinct pair of byte rows is
        # judged once, its first point standing for it; findings keep the points' order
        points = np.argwhere(suspect)
        rows = np.concatenate([(lhs[suspect] - 2) >> SHIFT, (rhs[suspect] - 2) >> SHIFT,
                               _shifted(lhs, rhs)[suspect][:, None]], axis=1)
        forms, inverse, first = distinct_rows(rows)
        tags = self.table.tags
        nbytes = lhs.shape[-1]
        found: dict[int, tuple[int, int]] = {}
        """Per form found false in every launch: the pair of elements whose tags show it."""
        for f in range(len(forms)):
            row = forms[f].tolist()
            lhs_el, rhs_el, shifted = row[:nbytes], row[nbytes:2 * nbytes], row[-1]
            # the element pairs its bytes come from (one, unless bytes were assembled from several)
            unit = tuple(dict.fromkeys((a, b) for a, b in zip(lhs_el, rhs_el) if a != b))
            p, e = points[first[f]].tolist()
            if equal:
                wrong = next(((a, b) for a, b in unit if _definitely_different(tags[a], tags[b])), None)
                if shifted and wrong is None:
                    wrong = (lhs_el[0], rhs_el[0])
                if wrong is not None:
                    found[f] = wrong
                elif unit:
                    pending.pairs.setdefault((self.scope, unit), (p, e, describe))
                continue
            if any(_definitely_different(tags[a], tags[b]) for a, b in unit):
                continue  # some byte differs in every launch: never equal
            if not unit:  # the same bytes: equal in every launch
                found[f] = (lhs_el[0], lhs_el[0])
                continue
            pending.pairs.setdefault((self.scope, unit), (p, e, describe))
        if found:
            false = among(inverse, list(found))
            for s in np.flatnonzero(false)[:4].tolist():  # a site keeps at most four of a kind
                a, b = found[int(inverse[s])]
                p, e = points[s].tolist()
                self._add(Candidate(site, "violated", p, e, describe, {}, tags[a], tags[b]))

    def conflict(self, site: str, point: int, element: int, describe: Describe) -> None:
        """Conflicting data (⊤) where a check needs tags: never a proof."""
        self._add(Candidate(site, "conflicting", point, element, describe, {}, "⊤", None))

    def fault(self, site: str, kind: str, point: int, describe: Describe, details: dict[str, Any],
              condition: list[Comparison] | None = None) -> None:
        """A fault the analysis found on its own (an access out of bounds in every launch, a
        race); `condition`: the comparisons of the branches the faulting access runs under, which
        the launch of its witness must make (a race in blocks ≥ 1 only is replayed in one)."""
        self._add(Candidate(site, kind, point, 0, describe, details=details, condition=list(condition or ())))

    def _add(self, candidate: Candidate) -> None:
        if not candidate.scope:
            candidate.scope = self.scope
        same_site = [c for c in self.candidates if c.site == candidate.site and c.kind == candidate.kind]
        if len(same_site) < 4:
            self.candidates.append(candidate)

    def decide(self, solver: Solver, facts: list[Comparison], timeout_ms: int = 10_000,
               scoped: Callable[[tuple[int, ...]], list[Comparison]] | None = None) -> list[str]:
        """Settle the symbolic pairs; returns the reasons of anything left undecided. `scoped`
        gives the facts that hold inside the loops of a scope (their index bounds)."""
        undecided = []
        for pending in self.pending.values():
            for scope in dict.fromkeys(key[0] for key in pending.pairs):  # one query per loop scope reached
                units = [key[1] for key in pending.pairs if key[0] == scope]
                undecided += self._decide(solver, pending, scope, units, facts + (scoped(scope) if scoped else []),
                                          timeout_ms)
        return undecided

    def _decide(self, solver: Solver, pending: _Pending, scope: tuple[int, ...],
                units: list[tuple[tuple[int, int], ...]], site_facts: list[Comparison], timeout_ms: int) -> list[str]:
        """One query for the pairs one assertion compares in one loop scope."""
        alternatives: list[list[Comparison]] = []
        owners: list[tuple[tuple[tuple[int, int], ...], tuple[int, int]]] = []
        for unit in units:
            if pending.equal:  # violated when some component of some byte's pair differs
                for a, b in unit:
                    for x, y in zip(self.table.tags[a], self.table.tags[b]):
                        alternatives.append([("ne0", sub_keys(_key(x), _key(y)))])
                        owners.append((unit, (a, b)))
            else:  # violated when every byte's pair is equal in every component
                alternatives.append([("eq0", sub_keys(_key(x), _key(y))) for a, b in unit
                                     for x, y in zip(self.table.tags[a], self.table.tags[b])])
                owners.append((unit, unit[0]))
        answer: Answer = solver.solve(Query(self.space, site_facts, alternatives), timeout_ms)
        if answer.status == "unsat":
            if scope and solver.solve(Query(self.space, site_facts, [[]]), timeout_ms).status != "sat":
                return [(f"{pending.site}: the domain of this assertion is empty (the loops around it never run "
                         "in any launch), so a proof would be vacuous")]
            return []
        if answer.status == "unknown" or answer.alternative is None:
            return [f"{pending.site}: {answer.reason or 'the solver found no usable model'}"]
        unit, (a, b) = owners[answer.alternative]
        p, e, describe = pending.pairs[(scope, unit)]
        self._add(Candidate(pending.site, "violated", p, e, describe, answer.model, self.table.tags[a],
                            self.table.tags[b], condition=alternatives[answer.alternative], scope=scope))
        return []


_ORDER = ("assertion", "kind", "message", "block", "thread", "threads", "loops", "element", "lhs tag", "rhs tag",
          "lhs written at", "rhs written at", "index", "extent", "memory", "byte", "first write at", "sizes")


def _raw_tag(table: TagTable, ids: np.ndarray) -> Any:
    """An element's tag as stored (components may be symbolic), or ⊥ / ⊤."""
    ids = np.asarray(ids)
    if (ids == BOTTOM).all():
        return "⊥"
    if ((ids == BOTTOM) | (ids == TOP)).any():
        return "⊤"
    elements = set(((ids - 2) >> SHIFT).tolist())
    return table.tags[elements.pop()] if len(elements) == 1 else "⊤"


def _key(v: Any) -> Key:
    return v if isinstance(v, tuple) else (int(v), ())


def _symbolic(tag: tuple[Any, ...]) -> bool:
    return any(isinstance(v, tuple) for v in tag)


def _definitely_different(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Different lengths, or equal-length tags with integer components that differ."""
    if len(a) != len(b):
        return True
    return any(not isinstance(x, tuple) and not isinstance(y, tuple) and x != y for x, y in zip(a, b))


def _shifted(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return any_along(((lhs - 2) & PLACE) != ((rhs - 2) & PLACE))


def _evaluated(tag: Any, table: TagTable, space: Space, model: dict[int, int]) -> Any:
    if isinstance(tag, str):
        return tag
    if model:
        values = tuple(space.evaluate(_key(v), model) for v in tag)
        return products_text(values) or (table.text(values) if values[:1] == (SUM,) or values[:1] in _MARKED else values)
    return table.text(tag)
