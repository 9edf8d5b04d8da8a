"""Findings of the static checker that hold in some launches only.

Most findings hold in every launch that gets to them (an access past the end of a tile, bytes
nothing wrote). Some hold only in the launches taking some paths: a read of bytes written on
some paths only (`initialization`), an access out of bounds wherever a thread gets to it under
a branch on a runtime condition. Such a finding lists its alternatives — conjunctions of
comparisons on the symbols of the launch, each with the thread it is about — and the checker
asks the solver, once the domain is known, for a launch of the domain satisfying one: that
launch is the witness, replayed like every other; where none does, there is no finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Affine, Key, Space, add_keys, distinct_rows, scale_key, sub_keys
from argus.verify.obligations import Candidate, Describe, _definitely_different, _key, _raw_tag
from argus.verify.tags import BOTTOM, BYTES, TOP

from .initialization import Conjunction

if TYPE_CHECKING:
    from .analysis import TagAnalysis

MAX_ALTERNATIVES = 256
"""Alternatives of one finding (per thread and condition) before they are weakened to one that
holds wherever the finding's op is reached."""


@dataclass
class Conditional(Candidate):
    """A finding in the launches of one of `alternatives`, each with the thread (`points`) it is
    about there. `choose` fixes the alternative, thread and model once the domain is known."""

    alternatives: list[Conjunction] = field(default_factory=list)
    points: list[int] = field(default_factory=list)

    def add(self, alternatives: list[Conjunction], points: list[int]) -> None:
        """More launches in which the same op finds the same fault (another iteration of an
        unrolled loop, another thread, say)."""
        for conjunction, point in zip(alternatives, points):
            if conjunction not in self.alternatives:
                self.alternatives.append(conjunction)
                self.points.append(point)
        if len(self.alternatives) > MAX_ALTERNATIVES:
            self.alternatives, self.points = [()], [self.points[0]]

    def choose(self, alternative: int, model: dict[int, int]) -> None:
        self.condition = list(self.alternatives[alternative])
        self.point = self.points[alternative]
        self.model = model


@dataclass
class GuardedComparison(Conditional):
    """A tag comparison made under branches on runtime conditions (an asserted store or a tag
    assertion inside ``if``s): a finding in the launches where a thread takes the branches' sides
    that get there and its tags are wrong. Each alternative is such a thread's path with the way
    its tags are wrong, and keeps the place, the description and the tags its witness shows."""

    places: list[tuple[int, int, Describe, Any, Any]] = field(default_factory=list)
    seen: set[Conjunction] = field(default_factory=set)

    def include(self, alternative: Conjunction, place: tuple[int, int, Describe, Any, Any]) -> None:
        """One more way the comparison fails (another thread, element or copy). Kept whole,
        never weakened: a weaker alternative would stand where the comparison holds."""
        if alternative not in self.seen:
            self.seen.add(alternative)
            self.alternatives.append(alternative)
            self.points.append(place[0])
            self.places.append(place)

    def choose(self, alternative: int, model: dict[int, int]) -> None:
        super().choose(alternative, model)
        self.point, self.element, self.describe, self.lhs, self.rhs = self.places[alternative]


def compare(a: TagAnalysis, site: str, lhs: np.ndarray, rhs: np.ndarray, equal: bool, describe: Describe,
            points: np.ndarray, count: int = 1) -> None:
    """``tag(lhs) == tag(rhs)`` (or ``!=``) for arrays of byte ids (rows of `points`, elements,
    bytes), made where the walk is now. Outside branches on runtime conditions, an obligation of
    every launch (`Obligations.compare`). Inside, each point's comparison binds only in the
    launches where its thread takes the sides that get here (`TagAnalysis.linear_path`): a store
    under ``if r < cols`` is compared where ``r < cols`` holds for that thread, and where no
    launch takes its path, not at all (`GuardedComparison`). A value that may be a cleared zero
    (`argus.verify.products.MAYBE_ZERO`) is compared as the paths' join it is: conflicting."""
    if a.table.asserted:
        lhs, rhs = a.table.products.as_joined(lhs), a.table.products.as_joined(rhs)
    lhs, rhs = a.table.at_width(lhs), a.table.at_width(rhs)  # (a part of a wider element is no element)
    if not a.branches:
        a.obligations.compare(site, lhs, rhs, equal, describe, count=count)
        return
    empty = lhs[:0]
    a.obligations.compare(site, empty, empty, equal, describe, count=count)  # (counted, and the site reached)
    unwritten = ((lhs == BOTTOM) | (rhs == BOTTOM)).any(axis=-1)
    conflicting = ((lhs == TOP) | (rhs == TOP)).any(axis=-1) & ~unwritten
    shifted = ((lhs - 2) % BYTES != (rhs - 2) % BYTES).any(axis=-1)  # bytes of other places in their elements
    concrete = ~(unwritten | conflicting)
    suspect = concrete & ~(lhs == rhs).all(axis=-1) if equal else concrete & ~shifted
    wrong = unwritten | conflicting | suspect
    if not wrong.any():
        return
    rows = np.flatnonzero(wrong.any(axis=1))
    taken, path_of = _paths(a, rows, points[rows], lhs.shape[0])
    if not taken:
        return
    wrong &= (path_of >= 0)[:, None]
    tags = a.table.tags
    for kind, where in (("unwritten", unwritten & wrong), ("conflicting", conflicting & wrong)):
        for path in np.unique(path_of[where.any(axis=1)]).tolist():
            p, e = np.argwhere(where & (path_of == path)[:, None])[0].tolist()
            _finding(a, site, kind).include(taken[path], (p, e, describe, _raw_tag(a.table, lhs[p, e]),
                                                          _raw_tag(a.table, rhs[p, e])))
    suspect &= wrong
    if not suspect.any():
        return
    # each distinct (path, pair of element rows) is judged once, its first (point, element) standing for it
    at = np.argwhere(suspect)
    nbytes = lhs.shape[-1]
    forms, _, first = distinct_rows(np.concatenate([path_of[at[:, 0]][:, None], (lhs[suspect] - 2) // BYTES,
                                                    (rhs[suspect] - 2) // BYTES, shifted[suspect][:, None]], axis=1))
    bounds: dict[int, dict[tuple[tuple[int, int], ...], int]] = {}
    for form, f in zip(forms.tolist(), first.tolist()):
        path, lhs_el, rhs_el, moved = taken[form[0]], form[1:nbytes + 1], form[nbytes + 1:-1], form[-1]
        unit = tuple(dict.fromkeys((x, y) for x, y in zip(lhs_el, rhs_el) if x != y))
        p, e = at[f].tolist()
        apart = [(x, y) for x, y in unit if _definitely_different(tags[x], tags[y])]
        if equal:
            if moved or apart:  # wrong in every launch taking the path
                ways: list[tuple[Conjunction, tuple[int, int]]] = \
                    [((), apart[0] if apart else (lhs_el[0], rhs_el[0]))]
            else:  # wrong where some component of some byte's pair differs
                ways = [((("ne0", sub_keys(_key(u), _key(v))),), (x, y)) for x, y in unit
                        for u, v in zip(tags[x], tags[y])]
        elif apart:
            continue  # some byte differs in every launch: never equal
        else:  # wrong where every byte's pair is equal in every component (the same bytes: wherever the path is taken)
            ways = [(tuple(("eq0", sub_keys(_key(u), _key(v))) for x, y in unit for u, v in zip(tags[x], tags[y])),
                     unit[0] if unit else (lhs_el[0], lhs_el[0]))]
        facts = bounds.get(form[0])
        if facts is None:
            facts = bounds[form[0]] = _lower_bounds(path)
        for way, (x, y) in ways:
            kept = a.initialization.simplified(_clamps_resolved(a.space, way, facts))
            if kept is not None:  # (None: the path decides it, as it decided a clamp in it)
                _finding(a, site, "violated").include(path + kept, (p, e, describe, tags[x], tags[y]))


def _paths(a: TagAnalysis, rows: np.ndarray, points: np.ndarray, count: int) -> tuple[list[Conjunction], np.ndarray]:
    """The paths of `points` (rows `rows` of `count`) as `GlobalAccess.linear_path` writes them,
    each simplified: the distinct ones, and each row's place among them (-1 for a row whose
    path no launch takes, and for rows not asked about). Worked out per distinct form of each
    branch's condition, not per point (a guard every thread shares has one form)."""
    from .bounds import _linear  # (bounds reports through this module)

    threads = a.thread_of(points) % a.threads
    combo = np.zeros(len(points), np.int64)  # per point, its combination of the branches' forms, numbered
    places, linear = [], []
    for condition, kind in a.branches:
        index = np.where((len(condition) > points) & (len(condition) != a.threads), points, threads)
        forms, place = _forms_at(condition, index)
        places.append(place)
        linear.append([tuple(_linear(a.space, kind, form)) for form in forms])
        combo = np.unique(combo * len(forms) + place, return_inverse=True)[1].reshape(-1)
    _, first, which = np.unique(combo, return_index=True, return_inverse=True)
    paths: dict[Conjunction, int] = {}
    place = np.full(len(first), -1, np.int64)
    for c, row in enumerate(first.tolist()):
        path = a.initialization.simplified(sum((forms[int(p[row])] for forms, p in zip(linear, places)), ()))
        if path is not None:  # (None: a side no launch takes there)
            place[c] = paths.setdefault(path, len(paths))
    path_of = np.full(count, -1, np.int64)
    path_of[rows] = place[np.reshape(which, -1)]
    return list(paths), path_of


def _forms_at(value: Affine, index: np.ndarray) -> tuple[list[Key], np.ndarray]:
    """The distinct forms `value` takes at its points `index`, and each one's place among them:
    its nonzero terms read off per point (a guard on each thread's own coordinates has a term of
    its own per thread, of which each point has one or two)."""
    if not value.terms or bool(np.all([(c[index] == c[index[0]]).all() for c in (value.const, *value.terms.values())])):
        return [value.row(int(index[0]))], np.zeros(len(index), np.int64)
    atoms = np.array(sorted(value.terms), np.int64)
    table = np.stack([value.terms[t][index] for t in atoms.tolist()], axis=1)
    at, column = np.nonzero(table)
    coefficients = table[at, column]
    starts = np.searchsorted(at, np.arange(len(index) + 1))
    names, counts, consts = atoms[column].tolist(), coefficients.tolist(), value.const[index].tolist()
    found: dict[Key, int] = {}
    place = np.empty(len(index), np.int64)
    for r in range(len(index)):
        key = (consts[r], tuple(zip(names[starts[r]:starts[r + 1]], counts[starts[r]:starts[r + 1]])))
        place[r] = found.setdefault(key, len(found))
    return list(found), place


def _lower_bounds(path: Conjunction) -> dict[tuple[tuple[int, int], ...], int]:
    """Per linear part of the path's ``ge0`` facts, the least constant k of ``part + k ≥ 0``
    among them (the strongest)."""
    least: dict[tuple[tuple[int, int], ...], int] = {}
    for kind, (const, terms) in path:
        if kind == "ge0" and terms:
            least[terms] = min(const, least.get(terms, const))
    return least


def _clamps_resolved(space: Space, conjunction: Conjunction,
                     least: dict[tuple[tuple[int, int], ...], int]) -> Conjunction:
    """`conjunction` with each ``min``, ``max`` and ``select`` that a path's facts
    (`_lower_bounds`) decide replaced by the side it takes (``min(x, y)`` is x where they give
    ``y − x ≥ 0``; ``select(i < n, i, n - 1)`` is i where they give ``n − i − 1 ≥ 0``): a clamp
    that the guard around a store keeps from clamping is the value it clamps, and a tag compared
    with that value needs no solver. Under the path, the same launches satisfy both."""
    from .bounds import _linear  # (bounds reports through this module)

    def holds(key: Key) -> bool:  # whether key ≥ 0 follows from the facts
        bound = least.get(key[1]) if key[1] else 0
        return bound is not None and key[0] >= bound

    def side(atom: int) -> Key | None:  # the value the atom takes under the facts, if they decide it
        a = space.atoms[atom]
        if a.kind in ("min", "max"):
            x, y = a.args
            low, high = (x, y) if holds(sub_keys(y, x)) else (y, x) if holds(sub_keys(x, y)) else (None, None)
            return None if low is None else low if a.kind == "min" else high
        if a.kind == "select":
            c, x, y = a.args
            for kind, value in (("ne0", x), ("eq0", y)):
                facts = _linear(space, kind, c)
                if all(k == "ge0" and holds(f) for k, f in facts):
                    return value  # type: ignore[no-any-return]
        return None

    out = []
    for kind, key in conjunction:
        found = True
        while found:
            found = False
            for atom, coefficient in key[1]:
                taken = side(atom)
                if taken is not None:
                    key = add_keys(sub_keys(key, (0, ((atom, coefficient),))), scale_key(taken, coefficient))
                    found = True
                    break
        out.append((kind, key))
    return tuple(out)


def _finding(a: TagAnalysis, site: str, kind: str) -> GuardedComparison:
    """The guarded comparisons' finding of `kind` at `site` in the runtime loops walked now (one,
    gathering the alternatives of every walk that makes it), made when its first alternative is."""
    scope = a.obligations.scope
    for c in a.obligations.candidates:
        if type(c) is GuardedComparison and c.site == site and c.kind == kind and c.scope == scope:
            return c
    found = GuardedComparison(site, kind, 0, 0, _nothing, scope=scope)
    a.obligations.candidates.append(found)
    return found


def _nothing(point: int, element: int, model: dict[int, int]) -> dict[str, Any]:
    """The description of a finding no alternative was chosen for (never shown: `choose` sets it)."""
    return {}
