"""Global tensors: the tags a load reads (the tensor's tag function at symbolic coordinates), flat
and root coordinates of views, and the facts accesses add (in bounds for every launch a caller
may make; under symbolic branches, an obligation instead).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Affine, Uniform, add_keys, scale_key, sub_keys, unique_rows

from ..ir import dialect as D
from .findings import Conditional
from .reports import conditional_finding, describer
from .state import GlobalRef, same_objects

if TYPE_CHECKING:
    from argus.verify.affine import Key
    from xdsl.ir import Operation


class GlobalAccess:
    """The global tensors part of `TagAnalysis` (a mixin: its state is set in `TagAnalysis.__init__`)."""

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
            ids = self.intern(self.evaluate_tag_function(entry[0], coords, frozen=entry[1]), width)
            self.table.note_format(ids, root.dtype.name)
            if active is self.everyone:  # (every point: a copy, not a gather and a scatter by mask)
                out[...] = ids
            else:
                out[active] = ids[active]
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
        self.table.note_format(ids, root.dtype.name)
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
        """An access must be in bounds in every launch that gets to it: an obligation of its own
        (`bound_obligation`), decided over the kernel's assumptions. Outside symbolic branches
        its in-bounds facts also join the domain of the tag assertions, which is sound because a
        proof needs every such obligation proved first."""
        if not active.any():
            return
        if self.checking:
            self.bound_obligation(op, ref, coords, active)
        if self.guards:
            return
        memo = self._bounds.get(op)
        if memo is not None and same_objects(memo[0], [ref, active, *coords]):
            self.refault(memo[1])
            for fact in memo[2]:  # a later pass states the same facts (an earlier one may be gone)
                self.add_access_fact(fact)
            self.replay_facts.update(memo[3])
            for _, fact in memo[4]:
                self.add_cover(fact)
            return
        mark = len(self.faults)
        scope = self.obligations.scope
        here = set(self.loop_facts[scope[-1]]) if scope else set(self.facts)
        replay = set(self.replay_facts)
        covers = set(self.cover_facts)
        self._in_bounds(op, ref, coords, active)
        if type(op) is D.StoreOp:
            self.grid_covers(ref, coords, active)
        now = set(self.loop_facts[scope[-1]]) if scope else set(self.facts)
        self._bounds[op] = ([ref, active, *coords], self.faults[mark:], now - here, self.replay_facts - replay,
                            self.cover_facts - covers)

    def grid_covers(self, ref: GlobalRef, coords: list[Affine], active: np.ndarray) -> None:
        """The launch's grid covers the data the kernel writes as a caller launches it: a store
        outside symbolic branches overlaps its tensor along each axis in every block (its least
        coordinate is below the extent, its greatest at least 0) — a fact of the domain. Only an
        axis whose coordinates share one symbolic part of block indices, the grid and sizes says so
        (`i = block_x·128 + t` of `out[i]`: block_x·128 ≤ n − 1, so the last block may be
        ragged); everything else about the access stays an obligation."""
        points = self.active(active)
        axes = []
        for c, d in zip(coords, ref.dims):
            if type(c) is Uniform:
                terms, least, greatest = c.key[1], c.key[0], c.key[0]
            else:
                rows = c if points.size == len(c) else c.take(points)
                if any(rows.terms[a].min() != rows.terms[a].max() for a in rows.terms):
                    continue  # (a part per thread: a clamp, say)
                terms = tuple((a, int(rows.terms[a][0])) for a in sorted(rows.terms) if rows.terms[a][0])
                least, greatest = int(rows.const.min()), int(rows.const.max())
            if terms and self._of_the_launch(terms):
                axes.append((terms, least, greatest, d))
        # a block index stepping along two axes of one store at once moves diagonally through
        # the tensor: the grid along it is not taken to cover either (`bn = block_y·BN` beside
        # `bm = block_y·BM`)
        blocks = [{a for a, _ in terms if a in self.block_symbols} for terms, *_ in axes]
        for k, (terms, least, greatest, d) in enumerate(axes):
            if any(blocks[k] & other for j, other in enumerate(blocks) if j != k):
                continue
            extent = add_keys(d.row(0), (-1, ()))
            for key in ((greatest, terms), sub_keys(extent, (least, terms))):
                if key[1]:
                    self.add_cover(("ge0", key))

    def _of_the_launch(self, terms: tuple[tuple[int, int], ...]) -> bool:
        """Whether a form's atoms derive from block indices, the grid and sizes alone (no runtime
        loop index, no data read from memory)."""
        space = self.space
        for atom in space.atoms_of((0, terms)):
            symbol = space.symbols.get(atom)
            if (symbol is not None and symbol.role == "loop") or space.atoms[atom].kind == "opaque":
                return False
        return True

    def add_cover(self, fact: tuple[str, Key]) -> None:
        """A fact of the domain that the grid covers the written data (`grid_covers`), kept
        with its container (`cover_facts`: the innermost runtime loop's symbol, or None)."""
        scope = self.obligations.scope
        if not scope:
            self.facts.add(fact)
        elif fact not in self.loop_facts[scope[-1]]:
            self.loop_facts[scope[-1]].append(fact)
        self.cover_facts.add((scope[-1] if scope else None, fact))

    def bound_obligation(self, op: Operation, ref: GlobalRef, coords: list[Affine], active: np.ndarray) -> None:
        """The obligation that the access is in bounds wherever a thread gets to it: a finding
        (`findings.Conditional`) whose alternatives are, per point that may run out of bounds,
        the thread's path and a coordinate below 0 or past its extent. The solver decides it
        over the kernel's assumptions alone; where no launch satisfies one, there is none."""
        if not all(type(c) is Affine or type(c) is Uniform for c in coords):
            return  # (a coordinate read from memory: the interpreter's to check)
        points, space = self.active(active), self.space
        guarded = bool(self.branches)
        alternatives: dict[tuple[Any, ...], int] = {}
        for c, d in zip(coords, ref.dims):
            ends = None if guarded else self._outside_ends(c, d, points)
            if ends is not None:
                for key, row in ends:
                    alternatives.setdefault((("ge0", key),), int(self.thread_of(np.array([row]))[0]) % self.threads)
                continue
            below = space.sub(space.constant(-1, len(c)), c)  # ≥ 0: below the tensor
            past = space.sub(c, d)  # ≥ 0: past its end
            for outside in (below, past):
                if not guarded:
                    for key, row in self._weakest_outside(outside, points):
                        alternatives.setdefault((("ge0", key),), int(self.thread_of(np.array([row]))[0]) % self.threads)
                    continue
                rows = points[self.initialization.highest(outside, points) >= 0]  # the others never are
                if not rows.size:
                    continue
                for point, thread in zip(rows.tolist(), (self.thread_of(rows) % self.threads).tolist()):
                    conjunction = (*self.linear_path(point, thread), ("ge0", outside.row(point)))
                    if not _contradicts(conjunction):
                        alternatives.setdefault(conjunction, thread)
        if not alternatives:
            return
        if guarded:
            alternatives = _undominated(alternatives)
        shape = ", ".join(space.describe(d.row(0)) for d in ref.dims)
        conditional_finding(self, op, "out-of-bounds", list(alternatives), list(alternatives.values()),
                            {"extent": f"tensor {ref.name!r} of shape ({shape})"})
        site, scope = str(self.where(op)), self.obligations.scope
        for found in self.obligations.candidates:
            if isinstance(found, Conditional) and found.site == site and found.kind == "out-of-bounds" and \
                    found.scope == scope and not hasattr(found.describe, "indexed"):
                found.describe = _indexed(found.describe, space, coords, points,
                                          self.thread_of(points) % self.threads)

    def _outside_ends(self, c: Affine, d: Affine, points: np.ndarray) -> list[tuple[Key, int]] | None:
        """`_weakest_outside` of ``−1 − c`` (below the tensor) then of ``c − d`` (past its end),
        read off `c` itself where every point of `points` shares its symbolic part and the
        extent `d` is one form: below is weakest at the least constant, past at the greatest
        (the first point holding it, as `_weakest` picks), without making either difference
        over every point. None otherwise (the caller makes them)."""
        if type(c) is Uniform or type(d) is not Uniform:
            return None
        rows = c if points.size == len(c) else c.take(points)
        coefficients = rows.terms
        atoms = sorted(coefficients)
        if any(coefficients[a].min() != coefficients[a].max() for a in atoms):
            return None
        terms = tuple((a, k) for a in atoms if (k := int(coefficients[a][0])))
        const = rows.const
        low, high = int(const.argmin()), int(const.argmax())
        highest = self.initialization.highest_key
        out = []
        for key, row in ((sub_keys((-1, ()), (int(const[low]), terms)), low),
                         (sub_keys((int(const[high]), terms), d.key), high)):
            if highest(key) >= 0:
                out.append((key, int(points[row])))
        return out

    def _weakest_outside(self, outside: Affine, points: np.ndarray) -> list[tuple[Key, int]]:
        """`_weakest` of `outside` over those of `points` where it may be at least 0 (the others
        are never out of bounds). Points of one symbolic part differ only in their constant, so
        the part's point of greatest constant is the one whose bound is greatest: the bounds of
        those points alone say which parts stay (the same points as filtering every point first)."""
        initialization = self.initialization
        if type(outside) is Uniform:
            return [(outside.key, int(points[0]))] if initialization.highest_key(outside.key) >= 0 else []
        weakest = _weakest(outside, points)
        highest = initialization.highest(outside, np.array([row for _, row in weakest], np.int64))
        return [found for found, bound in zip(weakest, highest.tolist()) if bound >= 0]

    def linear_path(self, point: int, thread: int) -> tuple[tuple[str, Key], ...]:
        """The comparisons the branches around the access make for `point` (of `thread`), a
        comparison of two forms written as the linear fact it amounts to (``i < n`` taken:
        ``n − i − 1 ≥ 0``), so that a path and an access that contradict each other are seen
        to without a solver."""
        out: list[tuple[str, Key]] = []
        for condition, kind in self.branches:
            key = condition.row(point if len(condition) > point and len(condition) != self.threads else thread)
            out.extend(_linear(self.space, kind, key))
        return tuple(out)

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
                        self.add_access_fact(("ge0", key))
                        self.fact_origins.setdefault(("ge0", key), origin)
                    elif key[1]:
                        self.replay_facts.add(("ge0", key))
                        self.fact_origins.setdefault(("ge0", key), origin)
                    elif key[0] < 0:  # out of bounds in every launch
                        self.out_of_bounds(*origin)
                        break

    def add_access_fact(self, fact: tuple[str, Key]) -> None:
        """An access's in-bounds fact (`add_fact`); one that was not there yet is noted in
        `access_facts`: the tag assertions' domain takes it, the accesses' bounds are decided
        without it."""
        scope = self.obligations.scope
        where = scope[-1] if scope else None
        if fact not in (self.loop_facts[where] if where is not None else self.facts):
            self.access_facts.add((where, fact))
        self.add_fact(fact)

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
                context.ends = (symbol.lo, sub_keys(symbol.hi, self.space.mod_key(sub_keys(symbol.hi, symbol.lo),
                                                                               (context.step, ()))))
            out = [self.space.substitute(k, context.symbol, end) for k in out for end in context.ends] + out
        result = self._iterations[key] = list(dict.fromkeys(out))
        return result


def _weakest(outside: Affine, rows: np.ndarray) -> list[tuple[Key, int]]:
    """Per symbolic part of `outside` at `rows`, its greatest constant and the row holding it:
    the one point of that part that is out of bounds whenever any is."""
    if type(outside) is Uniform:
        return [(outside.key, int(rows[0]))]
    values = outside.take(rows)
    atoms = sorted(values.terms)
    if all(values.terms[a].min() == values.terms[a].max() for a in atoms):
        at = int(values.const.argmax())
        return [(values.row(at), int(rows[at]))]
    unique, inverse = unique_rows(np.stack([values.terms[a] for a in atoms], axis=1))
    inverse = np.reshape(inverse, -1)
    out = []
    for u in range(len(unique)):
        members = np.flatnonzero(inverse == u)
        at = int(members[int(values.const[members].argmax())])
        out.append((values.row(at), int(rows[at])))
    return out


_STRICT = {"lt": 1, "le": 0}


def _linear(space: Any, kind: str, key: Key) -> list[tuple[str, Key]]:
    """A branch's comparison `kind` ("ne0" taken, "eq0" not) of condition `key`, as linear
    facts where the condition compares two forms (or is a conjunction of such comparisons);
    as it is elsewhere."""
    if key[0] == 0 and len(key[1]) == 1 and key[1][0][1] == 1:
        atom = space.atoms[key[1][0][0]]
        if atom.kind in _STRICT:
            x, y = atom.args
            strict = _STRICT[atom.kind]
            # x < y taken: y − x − 1 ≥ 0, not taken: x − y ≥ 0 (x ≤ y: y − x ≥ 0, x − y − 1 ≥ 0)
            return [("ge0", add_keys(sub_keys(y, x), (-strict, ())))] if kind == "ne0" else \
                [("ge0", add_keys(sub_keys(x, y), (strict - 1, ())))]
        if atom.kind == "eq":
            return [("eq0" if kind == "ne0" else "ne0", sub_keys(*atom.args))]
        if atom.kind == "and" and kind == "ne0" and all(_boolean(space, k) for k in atom.args):
            return [c for k in atom.args for c in _linear(space, "ne0", k)]
    return [(kind, key)]


def _boolean(space: Any, key: Any) -> bool:
    """Whether `key` is a comparison of two forms (0 or 1)."""
    return isinstance(key, tuple) and len(key) == 2 and key[0] == 0 and len(key[1]) == 1 and key[1][0][1] == 1 \
        and space.atoms[key[1][0][0]].kind in ("lt", "le", "eq", "ne")


def _contradicts(conjunction: tuple[tuple[str, Key], ...]) -> bool:
    """Whether the conjunction is false on its face: a constant comparison that is false, or
    ``e + a ≥ 0`` and ``−e + b ≥ 0`` with a + b < 0."""
    strongest: dict[tuple[Any, ...], int] = {}
    for kind, (const, terms) in conjunction:
        if kind != "ge0":
            continue
        if not terms:
            if const < 0:
                return True
            continue
        other = strongest.get(tuple((a, -c) for a, c in terms))
        if other is not None and other + const < 0:
            return True
        strongest[terms] = min(const, strongest.get(terms, const))
    return False


def _indexed(describe: Any, space: Any, coords: list[Affine], points: np.ndarray, threads: np.ndarray) -> Any:
    """`describe` with the coordinates the witness's thread accesses in its launch (`index`): those
    of the thread's last point among `points` (of `threads`), else of the first point. They are
    read only when a witness is described (most obligations are proved, and a row per point of
    every access cost GEMM's check most of its time)."""
    def indexed(point: int, element: int, model: dict[int, int]) -> dict[str, Any]:
        w = describe(point, element, model)
        mine = np.flatnonzero(threads == int(w.get("thread", point)))
        at = int(points[mine[-1]]) if mine.size else int(points[0])
        w["index"] = tuple(space.evaluate(x.row(at), model) for x in coords)
        return w  # type: ignore[no-any-return]

    indexed.indexed = True  # type: ignore[attr-defined]
    return indexed


def _undominated(alternatives: dict[tuple[Any, ...], int]) -> dict[tuple[Any, ...], int]:
    """The alternatives no other one implies: of conjunctions comparing the same forms but for
    their constants, one whose every ``e + k ≥ 0`` has a k no smaller holds wherever the other
    does (a path and a coordinate per point of an unrolled loop: the point nearest the edge)."""
    groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    for conjunction in alternatives:
        shape = tuple((kind, key[1]) if kind == "ge0" else (kind, key) for kind, key in conjunction)
        groups.setdefault(shape, []).append(conjunction)
    out: dict[tuple[Any, ...], int] = {}
    for members in groups.values():
        consts = np.array([[key[0] if kind == "ge0" else 0 for kind, key in c] for c in members], np.int64)
        order = np.argsort(-consts.sum(axis=1), kind="stable")
        kept: list[int] = []
        for i in order.tolist():
            if not kept or not (consts[kept] >= consts[i]).all(axis=1).any():
                kept.append(i)
        for i in sorted(kept):
            out[members[i]] = alternatives[members[i]]
    return out


class Refuter:
    """Decides without a solver, for the common case, that a conjunction (an access's way out of
    bounds) holds in no launch of a domain: atoms are taken as independent integer unknowns
    (sound: whatever else ties them only removes launches), the domain's equalities are solved
    for unknowns of coefficient ±1 (`M = 64·(M // 64)` from an assumed divisibility), each
    ``Σ cᵢxᵢ + k ≥ 0`` is divided by the gcd of its coefficients with its constant rounded down
    (integers), and a contradiction is a constant below 0 or two facts with opposite terms whose
    constants sum below 0, directly or after the conjunction's facts are added, up to `DEPTH`
    times, to a positive multiple of a known fact eliminating one unknown (a tile index bounded
    by a loop index bounded by the grid). A floor division ``q = x // c`` brings
    ``c·q ≤ x ≤ c·q + c − 1``. What it cannot refute is left to the solver; it never says more."""

    DEPTH = 2
    """Rounds of elimination tried on a conjunction's facts."""
    WIDTH = 64
    """Facts carried from one round to the next."""

    def __init__(self, space: Any, facts: list[tuple[str, Key]]) -> None:
        self.space = space
        self.pivots: dict[int, Key] = {}
        self.empty = False
        self.strongest: dict[tuple[tuple[int, int], ...], int] = {}
        unsolved: list[Key] = []
        for kind, key in facts:
            if kind == "eq0":
                for equation in self._equalities(key):
                    unsolved.extend(self._solve(equation))
        for equation in unsolved:
            for sign in (1, -1):
                if self._note(self.strongest, scale_key(self._substituted(equation), sign)):
                    self.empty = True
        for kind, key in facts:
            if kind == "ge0" and self._note(self.strongest, self._substituted(key)):
                self.empty = True
        for atom in {a for kind, key in facts for a, _ in key[1]}:
            for key in self._division(atom):
                if self._note(self.strongest, self._substituted(key)):
                    self.empty = True

    def refutes(self, conjunction: tuple[tuple[str, Key], ...] | list[tuple[str, Key]]) -> bool:
        """Whether no launch of the domain satisfies `conjunction` (False: not known)."""
        if self.empty:
            return True
        own: dict[tuple[tuple[int, int], ...], int] = {}
        for kind, key in conjunction:
            if kind == "ge0":
                forms = [key]
            elif kind == "eq0":
                forms = [e for x in self._equalities(key) for e in (x, scale_key(x, -1))]
            else:
                continue  # (≠ 0 is dropped: fewer facts refute less, never wrongly)
            for form in forms:
                if self._note(own, self._substituted(form)):
                    return True
        frontier = list(own.items())
        for atom in {a for terms in own for a, _ in terms}:
            for key in self._division(atom):
                if self._note(own, self._substituted(key)):
                    return True
        known = [*self.strongest.items(), *own.items()]
        for _ in range(self.DEPTH + 1):
            for terms, const in frontier:
                opposite = tuple((a, -c) for a, c in terms)
                for least in (self.strongest.get(opposite), own.get(opposite)):
                    if least is not None and least + const < 0:
                        return True
            following: dict[tuple[tuple[int, int], ...], int] = {}
            for terms, const in frontier:
                mine = dict(terms)
                for other, other_const in known:
                    pivot = next(((c, mine[a]) for a, c in other if a in mine and (c > 0) != (mine[a] > 0)), None)
                    if pivot is None:
                        continue
                    step = math.lcm(abs(pivot[0]), abs(pivot[1]))
                    combined = add_keys(scale_key((const, terms), step // abs(pivot[1])),
                                        scale_key((other_const, other), step // abs(pivot[0])))
                    if self._note(following, combined):
                        return True
            frontier = sorted(following.items(), key=lambda f: len(f[0]))[:self.WIDTH]
            if not frontier:
                break
        return False

    def _division(self, atom: int) -> list[Key]:
        """What a floor division by a positive constant ``q = x // c`` says of `atom`:
        ``x − c·q ≥ 0`` and ``c·q + c − 1 − x ≥ 0``; nothing for any other atom."""
        a = self.space.atoms[atom]
        if a.kind != "floordiv" or a.args[1][1] or a.args[1][0] <= 0:
            return []
        x, c = a.args[0], a.args[1][0]
        return [sub_keys(x, (0, ((atom, c),))), add_keys((c - 1, ((atom, c),)), x, -1)]

    def _equalities(self, key: Key) -> list[Key]:
        """The linear equalities (``e = 0``) that ``key = 0`` states: itself, and where it says
        that a comparison ``x == y`` holds (``(x == y) − 1 = 0``), also ``x − y = 0``."""
        out = [key]
        if key[0] == -1 and len(key[1]) == 1 and key[1][0][1] == 1:
            atom = self.space.atoms[key[1][0][0]]
            if atom.kind == "eq":
                out.append(sub_keys(*atom.args))
        return out

    def _solve(self, equation: Key) -> list[Key]:
        """Take `equation` (``e = 0``) into the substitutions, solved for an unknown of
        coefficient ±1; the equation itself when it has none."""
        equation = self._substituted(equation)
        if not equation[1]:
            self.empty = self.empty or equation[0] != 0
            return []
        pivot = next(((a, c) for a, c in equation[1] if c in (1, -1)), None)
        if pivot is None:
            return [equation]
        atom, c = pivot
        # c·x + rest = 0, c = ±1: x = −c·rest
        value = scale_key(sub_keys(equation, (0, ((atom, c),))), -c)
        for other, expression in self.pivots.items():
            self.pivots[other] = self._replace(expression, atom, value)
        self.pivots[atom] = value
        return []

    def _substituted(self, key: Key) -> Key:
        """`key` with every solved unknown replaced by its value."""
        if not any(a in self.pivots for a, _ in key[1]):
            return key
        out: Key = (key[0], ())
        for a, c in key[1]:
            out = add_keys(out, scale_key(self.pivots[a], c) if a in self.pivots else (0, ((a, c),)))
        return out

    @staticmethod
    def _replace(key: Key, atom: int, value: Key) -> Key:
        coefficient = dict(key[1]).get(atom)
        if coefficient is None:
            return key
        return add_keys(sub_keys(key, (0, ((atom, coefficient),))), scale_key(value, coefficient))

    def _note(self, strongest: dict[tuple[tuple[int, int], ...], int], key: Key) -> bool:
        """Keep ``key ≥ 0`` (divided by its coefficients' gcd, its constant rounded down) in
        `strongest`; whether it is false on its own (no unknown, a constant below 0)."""
        const, terms = key
        if not terms:
            return const < 0
        g = math.gcd(*(c for _, c in terms))
        if g > 1:
            const, terms = const // g, tuple((a, c // g) for a, c in terms)
        known = strongest.get(terms)
        if known is None or const < known:
            strongest[terms] = const
        return False
