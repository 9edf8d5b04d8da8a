"""Bytes written on some paths only, and the launches in which nothing wrote them.

A memory's `site` array says, per byte, which program point wrote it last (≥ 0), that its tag
was reset (`RESET`: written all the same) or that nothing wrote it (`NEVER`). Where two paths
of a kernel join — the sides of a branch on a runtime condition, a runtime loop that may run no
iteration — a byte one path wrote and the other did not is written in some launches only. Its
site becomes a *code* (below `RESET`) standing for the condition, on the symbols of the launch,
under which nothing wrote it: a disjunction of conjunctions of comparisons, as the solver takes
them. Taking such a byte for written would turn "written on one path" into "written", and a
read of it into a false proof; taking it for never written would report reads that no launch
makes. A read of a coded byte is an uninitialized read exactly in the launches satisfying its
condition (and reaching the read): a `findings.Conditional` candidate, decided with the domain
once the kernel has been walked, and replayed like every finding.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from argus.verify.affine import Affine, Key, Space, add_keys, sub_keys, unique_inverse, unique_sorted
from argus.verify.memory import NEVER, RESET

from .copies import TileCopies

Comparison = tuple[str, Key]
Conjunction = tuple[Comparison, ...]
Condition = tuple[Conjunction, ...]
"""A disjunction of conjunctions: ``()`` holds in no launch, ``((),)`` in every launch."""

ALWAYS: Condition = ((),)
FIRST_CODE = RESET - 1
"""The site of a byte written on some paths only is ``FIRST_CODE - k`` for its k-th condition."""
MAX_ALTERNATIVES = 16
"""Conjunctions kept per condition; beyond, it is weakened (to what they all require)."""


def written(sites: np.ndarray) -> np.ndarray:
    """Which bytes are written in every launch reaching them."""
    return (sites >= 0) | (sites == RESET)  # type: ignore[no-any-return]


def conditional(sites: np.ndarray) -> np.ndarray:
    """Which bytes are written on some paths only."""
    return sites < RESET  # type: ignore[no-any-return]


def all_written(tile: Any, footprint: Any) -> bool:
    """Whether every byte of the registers of `tile` (or of each tile of a tile per copy of a
    run) is written, in every launch, where the walk is: a read of them then needs no address
    to be found reading written bytes (registers are written once zeroed, mostly). Not inside a
    run of copies (`footprint`) that wrote them: the memory may hold writes that program order
    puts after the read."""
    if not isinstance(tile, TileCopies):
        return _memory_written(tile.memory, footprint)
    tiles = (tile.moved[0],) if tile.moved is not None else tile.tiles
    return all(_memory_written(memory, footprint) for memory in {id(t.memory): t.memory for t in tiles}.values())


def _memory_written(memory: Any, footprint: Any) -> bool:
    if footprint is not None:
        journal = footprint.journals.get(id(memory))
        if journal is not None and journal.writes:
            return False
    sites = memory.site
    return bool(sites.min() >= 0 or written(sites).all())


class Paths:
    """When each of two joining paths ("theirs", the state joined in, and "ours", the state the
    join updates) is taken: per distinct pair, a conjunction for each (None: a path never taken),
    and per thread the pair that is its own (registers; shared bytes take `shared`, whoever
    wrote them). A branch's are listed from its condition when a join first asks (most joins
    find nothing written on one side only, and never do)."""

    def __init__(self, theirs: tuple[Conjunction | None, ...] = (), ours: tuple[Conjunction | None, ...] = (),
                 rows: np.ndarray | None = None, condition: Affine | None = None) -> None:
        self.condition = condition
        if condition is None:
            self.theirs, self.ours, self.rows = theirs, ours, rows
            """(`rows`: per thread, its pair; None: pair 0 for every thread.)"""

    @classmethod
    def branch(cls, condition: Affine | None) -> Paths:
        """The two sides of a branch: theirs taken where `condition` ≠ 0, ours where it is 0;
        either, as far as the checker knows, when the condition is not an integer it follows."""
        return UNKNOWN_PATHS if condition is None else cls(condition=condition)

    def __getattr__(self, name: str) -> Any:
        if name not in ("theirs", "ours", "rows") or self.condition is None:
            raise AttributeError(name)
        forms, inverse = self.condition.forms()
        self.theirs = tuple(_simplified((("ne0", f),)) for f in forms)
        self.ours = tuple(_simplified((("eq0", f),)) for f in forms)
        self.rows = np.reshape(inverse, -1) if len(forms) > 1 else None
        return getattr(self, name)

    @property
    def always_ours(self) -> bool:
        """Whether every thread takes ours alone (a loop that always runs), as known without
        listing a branch's conditions."""
        return self.condition is None and self.rows is None and self.theirs[0] is None

    @property
    def always_theirs(self) -> bool:
        return self.condition is None and self.rows is None and self.ours[0] is None

    def shared(self) -> tuple[Conjunction | None, Conjunction | None]:
        """The pair for a byte any thread may have written: the threads' own when they share
        one, else none (either path, which a condition on either side implies)."""
        return (self.theirs[0], self.ours[0]) if len(self.theirs) == 1 else ((), ())


UNKNOWN_PATHS = Paths(((),), ((),))
"""Two paths whose conditions the checker does not know: a byte is unwritten after them if it
is after either."""


class Initialization:
    """The conditions of one analysis, interned: the codes its memories' sites hold."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.conditions: list[Condition] = []
        self._codes: dict[Condition, int] = {}
        self.memories: set[int] = set()
        """The memories (by identity) that have ever held a code."""
        self._ranges: dict[int, tuple[float, float]] = {}
        self._ranges_of = 0
        """`_atom_range`'s answers, and the number of symbols of the space they were found with."""

    def code(self, condition: Condition) -> int:
        """The site standing for `condition`. (Even ``ALWAYS`` is a code, not `NEVER`: some path
        wrote the byte, and which launches take it is what the checker could not tell.)"""
        found = self._codes.get(condition)
        if found is None:
            found = self._codes[condition] = FIRST_CODE - len(self.conditions)
            self.conditions.append(condition)
        return found

    def condition(self, site: int) -> Condition:
        """When a byte of site `site` is unwritten."""
        if site == NEVER:
            return ALWAYS
        if site >= 0 or site == RESET:
            return ()
        return self.conditions[FIRST_CODE - site]

    def join(self, memory: Any, ours: np.ndarray, theirs: np.ndarray, paths: Paths) -> None:
        """`ours` (a memory's sites, a row per thread for registers) becomes the sites after two
        paths join: written on both, the site of a write (ours first); alike on both, as they
        are; otherwise the code of "unwritten on a path taken"."""
        if paths.always_ours:  # (a loop that always runs)
            return
        if paths.always_theirs:
            ours[...] = theirs
            return
        flat = np.flatnonzero(ours != theirs)  # (bytes alike on both paths stay as they are)
        if not flat.size:
            return
        o, t = ours.reshape(-1)[flat], theirs.reshape(-1)[flat]
        changed = np.minimum(o, t) < 0  # (bytes both paths' writes hold keep ours)
        if not changed.all():
            flat, o, t = flat[changed], o[changed], t[changed]
        both = written(o) & written(t)
        new = np.where(o >= 0, o, np.where(t >= 0, t, np.where(both, RESET, o)))
        mixed = np.flatnonzero(~both)
        if mixed.size:
            if ours.ndim == 2 and paths.rows is not None:
                pair = paths.rows[flat[mixed] // ours.shape[1]]
                pairs = list(zip(paths.theirs, paths.ours))
            else:
                pair = np.zeros(mixed.size, np.int64)
                pairs = [(paths.theirs[0], paths.ours[0]) if ours.ndim == 2 else paths.shared()]
            # what decides a byte's code: its status on each path (any write alike) and its pair
            keys, inverse = _distinct_pairs(*(np.where(written(x), 0, x) for x in (o[mixed], t[mixed])), pair)
            codes = np.empty(len(keys), np.int64)
            for u, (mine, other, p) in enumerate(keys):
                when_theirs, when_ours = pairs[p]
                condition = self.either((when_theirs, self.condition(other)), (when_ours, self.condition(mine)))
                codes[u] = self.code(condition) if condition else RESET  # (no launch leaves it unwritten)
            coded = codes[np.reshape(inverse, -1)]
            if (coded == RESET).any():  # written whichever path a launch takes: the site of a write
                first = np.where(written(o[mixed]), o[mixed], t[mixed])
                coded = np.where(coded == RESET, np.where(written(first), first, RESET), coded)
            new[mixed] = coded
            if conditional(coded).any():
                self.memories.add(id(memory))
        ours.reshape(-1)[flat] = new

    def paths(self, theirs: Conjunction, ours: Conjunction) -> Paths:
        """Two paths every thread takes alike, each dropped where the bounds of the symbols rule
        it out."""
        return Paths((self.simplified(theirs),), (self.simplified(ours),))

    def either(self, *paths: tuple[Conjunction | None, Condition]) -> Condition:
        """The condition "some path is taken and leaves the byte unwritten", for (when the path
        is taken, when it leaves the byte unwritten) pairs."""
        out: dict[Conjunction, None] = {}
        for when, unwritten in paths:
            if when is None:
                continue
            for conjunction in unwritten:
                both = self.simplified(when + conjunction)
                if both is not None:
                    out[both] = None
        return _weakened(tuple(out))

    def simplified(self, conjunction: Conjunction) -> Conjunction | None:
        """`_simplified`, and without the comparisons the bounds of the symbols decide (a loop
        from 0 to a tensor's size runs: the size is at least 1); None when one is false."""
        kept = _simplified(conjunction)
        if kept is None:
            return None
        out = []
        for kind, key in kept:
            low, high = self._range(key)
            if kind == "ge0":
                if high < 0:
                    return None
                if low >= 0:
                    continue
            elif low > 0 or high < 0:
                if kind == "eq0":
                    return None
                continue
            elif low == high == 0:
                if kind == "ne0":
                    return None
                continue
            out.append((kind, key))
        return tuple(out)

    def highest(self, value: Affine, points: np.ndarray) -> np.ndarray:
        """Per point of `points`, the largest `value` can be, from the bounds of its symbols
        (infinite where an atom is not a symbol)."""
        out = value.const[points].astype(np.float64)
        for atom, coefficients in value.terms.items():
            coefficient = coefficients[points]
            low, high = self._atom_range(atom)
            if low > -np.inf:  # (one product per point: no 0 · ∞ to avoid)
                out += coefficient * np.where(coefficient > 0, high, low) if high < np.inf else \
                    np.where(coefficient > 0, np.inf, coefficient * low)
                continue
            with np.errstate(invalid="ignore"):
                out += np.where(coefficient > 0, coefficient * high, np.where(coefficient < 0, coefficient * low, 0))
        return out  # type: ignore[no-any-return]

    def highest_key(self, key: Key) -> float:
        """`highest` of one form (`key`): the largest it can be."""
        out = float(key[0])
        for atom, coefficient in key[1]:
            low, high = self._atom_range(atom)
            if coefficient > 0:
                out += coefficient * high
            elif coefficient < 0:
                out += coefficient * low
        return out

    def _atom_range(self, atom: int) -> tuple[float, float]:
        """`_range` of one atom, kept while the space has the same symbols (a symbol's bounds
        never change once made; `highest` asks for the same few atoms at every access)."""
        if len(self.space.symbols) != self._ranges_of:
            self._ranges.clear()
            self._ranges_of = len(self.space.symbols)
        found = self._ranges.get(atom)
        if found is None:
            found = self._ranges[atom] = self._range((0, ((atom, 1),)))
        return found

    def _range(self, key: Key, depth: int = 4) -> tuple[float, float]:
        """Bounds of `key` from the constant bounds of its symbols (their own bounds in turn, a
        few levels deep); infinite where an atom is not a symbol."""
        low = high = float(key[0])
        for atom, coefficient in key[1]:
            symbol = self.space.symbols.get(atom)
            if symbol is None or depth == 0:
                return -np.inf, np.inf
            lo = self._range(symbol.lo, depth - 1)[0] if symbol.lo is not None else -np.inf
            hi = self._range(symbol.hi, depth - 1)[1] if symbol.hi is not None else np.inf
            ends = (coefficient * lo, coefficient * hi)
            low, high = low + min(ends), high + max(ends)
        return low, high

    def enter(self, memory: Any, ours: np.ndarray, theirs: np.ndarray, index: int, first: Key, step: int) -> None:
        """`ours` (the sites before a runtime loop) becomes the sites at the entry of iteration
        `index` (a symbol, from `first` by `step`), `theirs` being what the iteration before
        leaves (its codes already in terms of `index`). A byte written before the loop stays
        written. One unwritten there (on some paths) is unwritten at the entry of the first
        iteration as it is there, and of a later one only if, besides, neither the first
        iteration nor the one before wrote it: for ``if k == 0: acc = 0``, no iteration after
        the first reads it unwritten. (What the iteration before leaves depends on the entry it
        had: each pass over the loop builds this from the last, each an over-approximation.)"""
        labelled = (ours == RESET) & (theirs >= 0)
        if labelled.any():
            ours[labelled] = theirs[labelled]
        unwritten = np.flatnonzero(~written(ours))
        if not unwritten.size:
            return
        o, t = ours.reshape(-1)[unwritten], theirs.reshape(-1)[unwritten]
        moved = np.flatnonzero((t != NEVER) & (t != o))  # (where the loop leaves it as it was, so is it)
        if not moved.size:
            return
        at_first: Conjunction = (("eq0", sub_keys((0, ((index, 1),)), first)),)
        pairs, inverse = _distinct_pairs(o[moved], np.where(written(t[moved]), 0, t[moved]))
        codes = np.empty(len(pairs), np.int64)
        for u, (before, back) in enumerate(pairs):
            left = self.condition(back)  # the iteration before left it unwritten; so did the first:
            later = self.both(left, self.substituted(left, index, add_keys(first, (step, ()))))
            entry = self.both(self.condition(before), self.either((at_first, ALWAYS), ((), later)))
            codes[u] = self.code(entry) if entry else RESET  # (RESET: written, whichever path)
        ours.reshape(-1)[unwritten[moved]] = codes[np.reshape(inverse, -1)]
        if conditional(codes).any():
            self.memories.add(id(memory))

    def both(self, first: Condition, second: Condition) -> Condition:
        """The condition that `first` and `second` hold."""
        out: dict[Conjunction, None] = {}
        for x in first:
            for y in second:
                z = self.simplified(x + y)
                if z is not None:
                    out[z] = None
        return _weakened(tuple(out))

    def substituted(self, condition: Condition, symbol: int, replacement: Key) -> Condition:
        """`condition` with `symbol` replaced by `replacement` (a loop index by another iteration's)."""
        out: dict[Conjunction, None] = {}
        substitute = self.space.substitute
        for conjunction in condition:
            z = self.simplified(tuple((kind, substitute(key, symbol, replacement)) for kind, key in conjunction))
            if z is not None:
                out[z] = None
        return _weakened(tuple(out))

    def renamed(self, sites: np.ndarray, symbol: int, replacement: Key) -> np.ndarray:
        """`sites` with the conditions of their codes in terms of another iteration of a loop
        (`symbol` replaced by `replacement`), as renaming does for tags."""
        coded = conditional(sites)
        if not coded.any():
            return sites
        out = sites.copy()
        for code in unique_sorted(sites[coded]).tolist():
            condition = self.substituted(self.condition(code), symbol, replacement)
            out[sites == code] = self.code(condition) if condition else RESET
        return out

    def saved(self, memory: Any) -> tuple[np.ndarray, np.ndarray] | None:
        """The bytes of `memory` written on some paths only and their codes, to restore after an
        op that rewrites sites without writing data (a tag function, a reset of tags)."""
        if id(memory) not in self.memories:
            return None
        coded = conditional(memory.site)
        return (coded, memory.site[coded]) if coded.any() else None

    @staticmethod
    def restore(memory: Any, saved: tuple[np.ndarray, np.ndarray] | None) -> None:
        """Bytes written on some paths only stay so (`saved`)."""
        if saved is not None:
            memory.site[saved[0]] = saved[1]


def _distinct_pairs(*columns: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The distinct rows of small integer `columns` (statuses, pair numbers) and each row's place
    among them: one sort of packed integers (mostly none: every row alike)."""
    if all(c.min() == c.max() for c in columns):  # (the usual case)
        return [tuple(int(c[0]) for c in columns)], np.zeros(columns[0].size, np.int64)
    lows = [int(c.min()) for c in columns]
    spans = [int(c.max()) - low + 1 for c, low in zip(columns, lows)]
    packed = np.zeros(columns[0].size, np.int64)
    for c, low, span in zip(columns, lows, spans):
        packed = packed * span + (c - low)
    unique, inverse = unique_inverse(packed)
    rows = []
    for value in unique.tolist():
        row = []
        for low, span in zip(reversed(lows), reversed(spans)):
            value, digit = divmod(value, span)
            row.append(digit + low)
        rows.append(tuple(reversed(row)))
    return rows, np.reshape(inverse, -1)


def _simplified(conjunction: Conjunction) -> Conjunction | None:
    """The conjunction without repeated or constant comparisons, in one order; None when a
    constant one is false."""
    kept: dict[Comparison, None] = {}
    for kind, key in conjunction:
        if not key[1]:
            value = key[0]
            if not {"ge0": value >= 0, "eq0": value == 0, "ne0": value != 0}[kind]:
                return None
            continue
        kept[(kind, key)] = None
    return tuple(sorted(kept))


def _weakened(condition: Condition) -> Condition:
    """Without conjunctions another one implies (``a ∨ (a ∧ b)`` is ``a``), and at most
    `MAX_ALTERNATIVES` of them: beyond, the one of the comparisons they all share (which each
    implies, so no launch is lost)."""
    if any(not c for c in condition):
        return ALWAYS
    if len(condition) > 1:
        sets = [set(c) for c in condition]
        condition = tuple(c for i, c in enumerate(condition)
                          if not any(j != i and other <= sets[i] and (other != sets[i] or j < i)
                                     for j, other in enumerate(sets)))
    if len(condition) <= MAX_ALTERNATIVES:
        return condition
    shared = set(condition[0]).intersection(*condition[1:])
    return (tuple(sorted(shared)),)
