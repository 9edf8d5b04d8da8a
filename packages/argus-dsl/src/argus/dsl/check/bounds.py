"""Global tensors: the tags a load reads (the tensor's tag function at symbolic coordinates), flat
and root coordinates of views, and the facts accesses add (in bounds for every launch a caller
may make; under symbolic branches, an obligation instead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Affine, Uniform, add_keys, sub_keys, unique_rows

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
