"""Symbolic integers over a whole enumerated domain at once.

A kernel's integers depend on things the checker enumerates (thread ids, unrolled loop
indices: the *points*) and on things it keeps symbolic (block indices, runtime loop indices,
runtime sizes: the *symbols*). An `Affine` holds one affine form per point::

    value[p] = const[p] + Σ_a coef_a[p] · atom_a

Atoms are the symbols themselves and derived atoms for what is not affine: the floor quotient
of an expression by a constant, a product of two symbolic expressions, bit operations, min,
max, comparisons, opaque values (data read from memory). Floor division and remainder by a
constant split off what divides exactly (``(16·k + r) // 16 = k + r // 16``) so equal
quantities get equal forms, and a remainder is ``e - c·(e // c)``: affine in a quotient atom,
which a solver encodes as bounded integers rather than with div/mod.

Where every point is concrete the forms are plain numpy arrays and cost what numpy costs. A
value with one symbolic form at every point (a size, a block index, a runtime loop's index,
arithmetic on those) is a `Uniform`: its key, computed on once rather than point by point.
Division by zero means what it means in the interpreter: ``x // 0 = x``, ``x % 0 = 0``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

#: A scalar affine expression, canonical and hashable: (const, ((atom, coef), ...)) with atoms
#: ascending and no zero coefficient.
Key = tuple[int, tuple[tuple[int, int], ...]]


@dataclass(frozen=True)
class Atom:
    """A symbolic quantity: ``symbol`` (args: name), or derived (args: operand keys/ints)."""

    kind: str
    args: tuple[Any, ...]


@dataclass
class Symbol:
    """A named unknown with inclusive bounds (ints or keys) and the role it plays."""

    name: str
    role: str
    lo: Key | None = None
    hi: Key | None = None


class Affine:
    """One affine form per point (see the module docstring). Immutable by convention."""

    __slots__ = ("const", "terms")

    def __init__(self, const: np.ndarray, terms: dict[int, np.ndarray] | None = None) -> None:
        self.const = const
        self.terms = terms or {}

    @property
    def concrete(self) -> bool:
        return not self.terms

    def __len__(self) -> int:
        return int(self.const.shape[0])

    def row(self, p: int) -> Key:
        return (int(self.const[p]), tuple((a, int(c[p])) for a, c in sorted(self.terms.items()) if c[p] != 0))

    def take(self, index: np.ndarray) -> Affine:
        return Affine(self.const[index], {a: c[index] for a, c in self.terms.items()})

    def forms(self) -> tuple[list[Key], np.ndarray]:
        """The distinct forms of the points as keys, in order of first appearance, and each
        point's place among them (points share few forms: work per form, not per point)."""
        atoms = sorted(self.terms)
        rows, inverse, _ = distinct_rows(np.stack([self.const, *(self.terms[t] for t in atoms)], axis=1))
        return [(row[0], tuple((t, c) for t, c in zip(atoms, row[1:]) if c)) for row in rows.tolist()], inverse

    def symbolic_points(self) -> np.ndarray:
        """Mask of the points whose value depends on a symbol."""
        out = np.zeros(len(self), bool)
        for c in self.terms.values():
            out |= c != 0
        return out


class _Opaque(Affine):
    """A value the checker cannot know, one fresh atom per point. The atoms are made when the
    value is first read as a form: most integer data loaded is only moved, never computed on."""

    __slots__ = ("_space", "_label", "_terms")

    def __init__(self, space: Space, label: str, n: int) -> None:
        self.const = np.zeros(n, np.int64)
        self._space, self._label = space, label
        self._terms: dict[int, np.ndarray] | None = None

    @property  # type: ignore[override]
    def terms(self) -> dict[int, np.ndarray]:
        if self._terms is None:
            sp, n = self._space, len(self.const)
            own = np.eye(n, dtype=np.int64)
            self._terms = {sp.atom("opaque", self._label, len(sp.atoms)): own[p] for p in range(n)}
        return self._terms

    @property
    def concrete(self) -> bool:
        return len(self.const) == 0

    def symbolic_points(self) -> np.ndarray:
        return np.ones(len(self.const), bool)


class Uniform(Affine):
    """One symbolic form at every point: a size, a block index, a runtime loop's index, and
    arithmetic on those alone. It is kept as its key, and its arrays are made when something
    first reads them: `Space` computes on two such values once, on their keys, where numpy
    would make and compare arrays of every point (a kernel's ``assume``s are a chain of them)."""

    __slots__ = ("key", "_n", "_const", "_terms")

    def __init__(self, key: Key, n: int) -> None:
        self.key, self._n = key, n
        self._const: np.ndarray | None = None
        self._terms: dict[int, np.ndarray] | None = None

    @property  # type: ignore[override]
    def const(self) -> np.ndarray:
        if self._const is None:
            self._const = np.full(self._n, self.key[0], np.int64)
        return self._const

    @property  # type: ignore[override]
    def terms(self) -> dict[int, np.ndarray]:
        if self._terms is None:
            self._terms = {a: np.full(self._n, c, np.int64) for a, c in self.key[1]}
        return self._terms

    @property
    def concrete(self) -> bool:
        return not self.key[1]

    def __len__(self) -> int:
        return self._n

    def row(self, p: int) -> Key:
        return self.key

    def symbolic_points(self) -> np.ndarray:
        return np.full(self._n, bool(self.key[1]))


def uniform_key(value: Affine) -> Key | None:
    """The form every point of `value` shares, if it is a `Uniform` or a number the same at
    every point (a constant); None otherwise."""
    if type(value) is Uniform:
        return value.key
    if not len(value) or not value.concrete:  # (`concrete`: an unknown makes no atoms to answer)
        return None
    const = value.const
    first = int(const[0])
    return (first, ()) if (const == first).all() else None


def key_constant(key: Key) -> int | None:
    return key[0] if not key[1] else None


class Space:
    """The atoms and symbols of one analysis, and arithmetic on `Affine` values over it."""

    def __init__(self) -> None:
        self.atoms: list[Atom] = []
        self.symbols: dict[int, Symbol] = {}
        self._ids: dict[Atom, int] = {}
        self.constraints: list[tuple[str, Key]] = []
        """Facts of the domain: ``("ge0", e)`` (e ≥ 0), ``("eq0", e)``, ``("mod0", e, m)`` encoded
        as ("eq0", e - m·q) with a fresh quotient atom."""

    # ---- atoms and symbols -------------------------------------------------------------
    def atom(self, kind: str, *args: Any) -> int:
        a = Atom(kind, args)
        ident = self._ids.get(a)
        if ident is None:
            ident = self._ids[a] = len(self.atoms)
            self.atoms.append(a)
        return ident

    def symbol(self, name: str, role: str, lo: Key | int | None = None, hi: Key | int | None = None) -> int:
        """A new symbol (the name is made unique); bounds are inclusive and become constraints."""
        base, n = name, 1
        taken = {s.name for s in self.symbols.values()}
        while name in taken:
            n += 1
            name = f"{base}#{n}"
        ident = self.atom("symbol", name)
        lo_key, hi_key = _as_key(lo), _as_key(hi)
        self.symbols[ident] = Symbol(name, role, lo_key, hi_key)
        me: Key = (0, ((ident, 1),))
        if lo_key is not None:
            self.require_nonnegative(sub_keys(me, lo_key))
        if hi_key is not None:
            self.require_nonnegative(sub_keys(hi_key, me))
        return ident

    def require_nonnegative(self, key: Key) -> None:
        if key not in [c[1] for c in self.constraints if c[0] == "ge0"]:
            self.constraints.append(("ge0", key))

    def require_zero(self, key: Key) -> None:
        self.constraints.append(("eq0", key))

    def name(self, atom: int) -> str:
        return self.describe_atom(atom)

    # ---- constructing values -----------------------------------------------------------
    @staticmethod
    def constant(values: Any, n: int) -> Affine:
        out = np.empty(n, np.int64)
        out[...] = values  # (a broadcast in C: numpy's broadcast_to is Python)
        return Affine(out)

    def of_symbol(self, atom: int, n: int) -> Affine:
        return Uniform((0, ((atom, 1),)), n)

    @staticmethod
    def of_key(key: Key, n: int) -> Affine:
        return Uniform(key, n) if key[1] else Affine(np.full(n, key[0], np.int64))

    def opaque(self, label: str, n: int) -> Affine:
        """A value the checker cannot know (data read from memory): one fresh atom per point."""
        return _Opaque(self, label, n)

    # ---- arithmetic --------------------------------------------------------------------
    def add(self, a: Affine, b: Affine) -> Affine:
        keys = _uniform_pair(a, b)
        if keys is not None:
            return self.of_key(add_keys(*keys), len(a))
        return Affine(a.const + b.const, _merge_terms(a.terms, b.terms, 1))

    def sub(self, a: Affine, b: Affine) -> Affine:
        keys = _uniform_pair(a, b)
        if keys is not None:
            return self.of_key(sub_keys(*keys), len(a))
        return Affine(a.const - b.const, _merge_terms(a.terms, b.terms, -1))

    def scale(self, a: Affine, k: np.ndarray | int) -> Affine:
        if type(a) is Uniform and (isinstance(k, int) or np.ndim(k) == 0):
            return self.of_key(scale_key(a.key, int(k)), len(a))
        k = np.asarray(k, dtype=np.int64)
        return Affine(a.const * k, _clean({t: c * k for t, c in a.terms.items()}))

    def mul(self, a: Affine, b: Affine) -> Affine:
        keys = _uniform_pair(a, b)
        if keys is not None:
            return self.of_key(self._product(*keys), len(a))
        if b.concrete:
            return self.scale(a, b.const)
        if a.concrete:
            return self.scale(b, a.const)
        return self.lift(a, b, lambda x, y: self._product(x, y), np.multiply)

    def floordiv(self, a: Affine, b: Affine) -> Affine:
        keys = _uniform_pair(a, b)
        if keys is not None:
            return self.of_key(self._floordiv(*keys), len(a))
        fast = self._by_constant(a, b)
        return fast[0] if fast is not None else self.lift(a, b, self._floordiv, _np_floordiv)

    def mod(self, a: Affine, b: Affine) -> Affine:
        keys = _uniform_pair(a, b)
        if keys is not None:
            return self.of_key(self.mod_key(*keys), len(a))
        fast = self._by_constant(a, b)
        if fast is not None:
            quotient, c = fast
            return self.sub(a, self.scale(quotient, c))
        return self.lift(a, b, self.mod_key, _np_mod)

    def _by_constant(self, a: Affine, b: Affine) -> tuple[Affine, int] | None:
        """``a // c`` for one positive constant c and symbolic parts shared by every point, with
        numpy: the exactly divisible terms divide, the rest becomes one quotient atom per
        remainder of the constant part (at most c of them). None when that does not apply."""
        if a.concrete or not b.concrete or len(b) == 0:
            return None
        c = int(b.const[0])
        if c <= 0 or (b.const != c).any() or any(t.min() != t.max() for t in a.terms.values()):
            return None
        terms = {t: int(v[0]) for t, v in a.terms.items()}
        exact = {t: np.full(len(a), v // c, np.int64) for t, v in terms.items() if v % c == 0}
        rest = tuple(sorted((t, v) for t, v in terms.items() if v % c))
        quotient, remainder = np.divmod(a.const, c)
        out = Affine(quotient, exact)
        if rest and remainder.size and (remainder == remainder[0]).all():  # one remainder (a size): one atom
            atom = self.atom("floordiv", (int(remainder[0]), rest), (c, ()))
            ones = np.ones(len(a), np.int64)
            out.terms[atom] = out.terms[atom] + ones if atom in out.terms else ones
        elif rest:
            present = np.zeros(c, bool)  # remainders lie in [0, c): one quotient atom each
            present[remainder] = True
            found = np.flatnonzero(present)
            onehot = np.zeros((found.size, len(a)), np.int64)
            row = np.zeros(c, np.int64)
            row[found] = np.arange(found.size)
            onehot[row[remainder], np.arange(len(a))] = 1
            for j, r in enumerate(found.tolist()):
                atom = self.atom("floordiv", (r, rest), (c, ()))
                out.terms[atom] = out.terms[atom] + onehot[j] if atom in out.terms else onehot[j]
        return out, c

    def binary(self, kind: str, a: Affine, b: Affine, concrete: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Affine:
        """Any other integer operation: exact where both sides are concrete, an atom elsewhere."""
        simplify = getattr(self, f"_{kind}", None)

        def symbolic(x: Key, y: Key) -> Key:
            if simplify is not None:
                return simplify(x, y)  # type: ignore[no-any-return]
            return self.atom_key(kind, *_commute(kind, x, y))

        return self.lift(a, b, symbolic, concrete)

    def lift(self, a: Affine, b: Affine, symbolic: Callable[[Key, Key], Key],
             concrete: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Affine:
        """Apply an operation point by point: numpy where both forms are concrete, `symbolic`
        on canonical keys elsewhere (once per distinct pair of forms)."""
        keys = _uniform_pair(a, b)
        if keys is not None:
            return self.of_key(symbolic(*keys), len(a))
        plain = np.asarray(concrete(a.const, b.const), dtype=np.int64)
        if a.concrete and b.concrete:
            return Affine(plain)
        if uniform(a) and uniform(b):  # one form at every point (a size, a block index): once
            x, y = a.row(0), b.row(0)
            return self.of_key(symbolic(x, y), len(a)) if x[1] or y[1] else Affine(plain)
        points = np.flatnonzero(a.symbolic_points() | b.symbolic_points())
        atoms = sorted(set(a.terms) | set(b.terms))
        if len(atoms) <= 8:  # few atoms: distinct pairs of forms found with numpy
            k, zero = len(atoms), np.zeros(len(a), np.int64)
            columns = [a.const, *(a.terms.get(t, zero) for t in atoms), b.const, *(b.terms.get(t, zero) for t in atoms)]
            unique, inverse = unique_rows(np.stack(columns, axis=1)[points])
            pairs = [((row[0], tuple((t, c) for t, c in zip(atoms, row[1:1 + k]) if c)),
                      (row[1 + k], tuple((t, c) for t, c in zip(atoms, row[2 + k:]) if c))) for row in unique.tolist()]
            inverse = np.reshape(inverse, -1)
        else:  # many atoms (a different one per point): distinct pairs found by hashing
            seen: dict[tuple[Key, Key], int] = {}
            inverse = np.fromiter((seen.setdefault((a.row(int(p)), b.row(int(p))), len(seen)) for p in points),
                                  np.int64, len(points))
            pairs = list(seen)
        results = [symbolic(x, y) for x, y in pairs]  # once per distinct pair of forms
        const = plain.copy()
        const[points] = np.array([r[0] for r in results], np.int64)[inverse]
        columns_of: dict[int, np.ndarray] = {}
        for j, r in enumerate(results):
            for atom, coef in r[1]:
                column = columns_of.get(atom)
                if column is None:
                    column = columns_of[atom] = np.zeros(len(results), np.int64)
                column[j] = coef
        terms: dict[int, np.ndarray] = {}
        for atom, column in columns_of.items():
            terms[atom] = np.zeros(len(a), np.int64)
            terms[atom][points] = column[inverse]
        return Affine(const, terms)

    def atom_key(self, kind: str, *args: Any) -> Key:
        """The key of one opaque term, `kind` of `args` (`atom`), with coefficient 1."""
        return (0, ((self.atom(kind, *args), 1),))

    def _product(self, x: Key, y: Key) -> Key:
        cx, cy = key_constant(x), key_constant(y)
        if cx is not None:
            return scale_key(y, cx)
        if cy is not None:
            return scale_key(x, cy)
        return self.atom_key("mul", *sorted((x, y)))

    def _floordiv(self, x: Key, y: Key) -> Key:
        c = key_constant(y)
        if c is None or c == 0:
            return self.atom_key("floordiv", x, y)
        if c < 0:
            return self._floordiv(scale_key(x, -1), (-c, ()))
        exact = tuple((a, k // c) for a, k in x[1] if k % c == 0)
        rest = tuple((a, k) for a, k in x[1] if k % c != 0)
        q, r = divmod(x[0], c)
        if not rest:
            return (q, exact)
        return add_keys((q, exact), self.atom_key("floordiv", (r, rest), (c, ())))

    def mod_key(self, x: Key, y: Key) -> Key:
        """The key of ``x mod y`` (floored): affine where `y` is a nonzero constant."""
        c = key_constant(y)
        if c is None or c == 0:
            return self.atom_key("mod", x, y)
        return sub_keys(x, scale_key(self._floordiv(x, y), c))

    def substitute(self, key: Key, symbol: int, replacement: Key) -> Key:
        """`key` with `symbol` replaced by `replacement`, derived atoms rebuilt and simplified."""
        out: Key = (key[0], ())
        for atom, coef in key[1]:
            if atom == symbol:
                out = add_keys(out, scale_key(replacement, coef))
                continue
            a = self.atoms[atom]
            if a.kind == "symbol" or symbol not in self.atoms_of((0, ((atom, 1),))):
                out = add_keys(out, ((0, ((atom, coef),))))
                continue
            args = tuple(self.substitute(x, symbol, replacement) if _is_key(x) else x for x in a.args)
            simplify = {"mul": self._product, "floordiv": self._floordiv, "mod": self.mod_key}.get(a.kind)
            rebuilt = simplify(*args) if simplify is not None else self.atom_key(a.kind, *args)
            out = add_keys(out, scale_key(rebuilt, coef))
        return out

    # ---- evaluation --------------------------------------------------------------------
    def atoms_of(self, key: Key) -> set[int]:
        """Every atom a key depends on, through derived atoms down to symbols."""
        out: set[int] = set()
        stack = [a for a, _ in key[1]]
        while stack:
            a = stack.pop()
            if a in out:
                continue
            out.add(a)
            for arg in self.atoms[a].args:
                if _is_key(arg):
                    stack.extend(b for b, _ in arg[1])
        return out

    def evaluate(self, key: Key, values: dict[int, int]) -> int:
        """The value of a key once every symbol has a value (derived atoms computed exactly)."""
        total = key[0]
        for a, c in key[1]:
            total += c * self.atom_value(a, values)
        return total

    def atom_value(self, atom: int, values: dict[int, int]) -> int:
        a = self.atoms[atom]
        if a.kind in ("symbol", "opaque"):
            return values.get(atom, 0)
        args = [self.evaluate(x, values) if _is_key(x) else x for x in a.args]
        return _SCALAR[a.kind](*args)

    def describe(self, key: Key | int) -> str:
        """A key as people write it: ``16*kj + t // 4 + 3``."""
        if isinstance(key, (int, np.integer)) or not _is_key(key):
            return str(key)
        parts = []
        for a, c in key[1]:
            name = self.describe_atom(a)
            parts.append(name if c == 1 else f"-{name}" if c == -1 else f"{c}*{name}")
        if key[0] or not parts:
            parts.append(str(key[0]))
        text = " + ".join(parts)
        return text.replace("+ -", "- ")

    def describe_atom(self, atom: int) -> str:
        a = self.atoms[atom]
        if a.kind == "symbol":
            return str(a.args[0])
        if a.kind == "opaque":
            return f"<{a.args[0]}>"
        shown = [f"({self.describe(x)})" if _is_key(x) and x[1] and (len(x[1]) > 1 or x[0]) else
                 self.describe(x) if _is_key(x) else str(x) for x in a.args]
        op = _INFIX.get(a.kind)
        if op is not None and len(shown) == 2:
            return f"({shown[0]} {op} {shown[1]})"
        return f"{a.kind}({', '.join(shown)})"


# ---- keys --------------------------------------------------------------------------------------


def distinct_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`unique_rows` in order of first appearance: the distinct rows, each row's place among
    them, and where each first appears."""
    unique, inverse = unique_rows(rows)
    first = np.full(len(unique), len(rows))
    np.minimum.at(first, inverse, np.arange(len(rows)))
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return unique[order], rank[inverse], first[order]


def runs(starts: np.ndarray, length: int) -> np.ndarray:
    """Shape ``(*starts.shape, length)``: each start followed by the next ``length - 1``
    integers (the byte indices of elements at byte offsets `starts`). numpy adds a short row to
    a column one row at a time; repeating the starts and adding a counter is several times
    faster for thousands of rows."""
    out = np.repeat(np.asarray(starts, np.int64).reshape(-1), length)
    out += _counter(out.size, length)
    return out.reshape(*np.shape(starts), length)


@lru_cache(maxsize=64)
def _counter(size: int, length: int) -> np.ndarray:
    """0, 1, …, length - 1, repeated to `size` entries (read-only: shared between calls)."""
    counter = np.tile(np.arange(length, dtype=np.int64), size // length)
    counter.flags.writeable = False
    return counter


def unique_sorted(values: Any) -> np.ndarray:
    """`np.unique(values)` of integers (flattened, sorted) by one sort: numpy's unique hashes
    (2.x), which costs several times a sort on the thousands of byte ids a check compares."""
    flat = np.sort(np.asarray(values), axis=None)
    if flat.size < 2:
        return flat
    keep = np.empty(flat.size, bool)
    keep[0] = True
    np.not_equal(flat[1:], flat[:-1], out=keep[1:])
    return flat[keep]


def unique_inverse(values: Any) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(values, return_inverse=True)` of integers (the inverse in the shape of
    `values`), through a table when their range is small (much faster than sorting)."""
    values = np.asarray(values)
    if values.size:
        low = int(values.min())
        span = int(values.max()) - low + 1
        if span <= 4 * values.size + 4096:
            present = np.zeros(span, bool)
            present[values - low] = True
            found = np.flatnonzero(present)
            number = np.zeros(span, np.int64)
            number[found] = np.arange(found.size)
            return (found + low).astype(values.dtype, copy=False), number[values - low]
    unique, inverse = np.unique(values, return_inverse=True)
    return unique, np.reshape(inverse, values.shape)


def among(values: Any, members: Any) -> np.ndarray:
    """`np.isin(values, members)` of integers, through a table of `members` when their range is
    small (numpy sorts both, unless that range is small against both sizes together)."""
    values, members = np.asarray(values), np.asarray(members, np.int64).reshape(-1)
    if not members.size or not values.size:
        return np.zeros(values.shape, bool)
    low, high = int(members.min()), int(members.max())
    if high - low > 4 * (values.size + members.size) + 4096:
        return np.isin(values, members)
    table = np.zeros(high - low + 1, bool)
    table[members - low] = True
    inside = (values >= low) & (values <= high)
    return inside & table[np.where(inside, values - low, 0)]


_WORDS = {2: np.uint16, 4: np.uint32, 8: np.uint64}
"""Unsigned integers as wide as 2, 4 and 8 booleans (`all_along`, `any_along`)."""


def all_along(x: np.ndarray) -> np.ndarray:
    """`x.all(axis=-1)` of booleans: where the last axis is 2, 4 or 8 long, as one comparison of
    each row's bytes read as one word (numpy reduces a short last axis row by row, a call each)."""
    word = _WORDS.get(x.shape[-1]) if x.ndim and x.dtype == bool else None
    if word is None:
        return x.all(axis=-1)  # type: ignore[no-any-return]
    ones = np.frombuffer(b"\x01" * x.shape[-1], word)[0]
    return np.ascontiguousarray(x).view(word)[..., 0] == ones  # type: ignore[no-any-return]


def any_along(x: np.ndarray) -> np.ndarray:
    """`x.any(axis=-1)` of booleans (`all_along`)."""
    word = _WORDS.get(x.shape[-1]) if x.ndim and x.dtype == bool else None
    if word is None:
        return x.any(axis=-1)  # type: ignore[no-any-return]
    return np.ascontiguousarray(x).view(word)[..., 0] != 0  # type: ignore[no-any-return]


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`np.unique(rows, axis=0, return_inverse=True)`, through one integer per row when the
    columns' ranges allow (much faster than sorting rows)."""
    if len(rows) and (rows == rows[0]).all():  # one row repeated (a size, a block index): the common case
        return rows[:1], np.zeros(len(rows), np.int64)
    if len(rows) <= 64:  # few rows: a dictionary is quicker than any sort
        seen: dict[tuple[int, ...], int] = {}
        inverse = np.fromiter((seen.setdefault(tuple(r), len(seen)) for r in rows.tolist()), np.int64, len(rows))
        return np.array(list(seen), np.int64).reshape(len(seen), rows.shape[1]), inverse
    if rows.shape[1] == 1:  # one column: its values in a small range are a table's indices
        column = rows[:, 0]
        low = int(column.min())
        span = int(column.max()) - low + 1
        if span <= 4 * len(rows) + 4096:
            present = np.zeros(span, bool)
            present[column - low] = True
            distinct = np.flatnonzero(present)
            number = np.zeros(span, np.int64)
            number[distinct] = np.arange(distinct.size)
            return (distinct + low)[:, None], number[column - low]
    columns = rows.T.copy()  # contiguous columns: reductions along rows are slow in numpy
    low = columns.min(axis=1)
    spans = columns.max(axis=1) - low + 1
    total = float(np.prod(spans.astype(np.float64)))
    if total < 2.0**62:
        codes = columns[0] - low[0]  # mixed radix, one digit per column
        for j in range(1, len(columns)):
            codes = codes * spans[j] + (columns[j] - low[j])
        if total <= 4 * len(rows) + 4096:  # codes in a small range: a table instead of a sort
            present = np.zeros(int(total), bool)
            present[codes] = True
            distinct = np.flatnonzero(present)
            number = np.zeros(int(total), np.int64)
            number[distinct] = np.arange(distinct.size)
            inverse = number[codes]
            first = np.zeros(distinct.size, np.int64)
            first[inverse] = np.arange(len(rows))  # any row of each code: they are equal
            return rows[first], inverse
        _, first, inverse = np.unique(codes, return_index=True, return_inverse=True)
        return rows[first], np.reshape(inverse, -1)
    unique, inverse = np.unique(rows, axis=0, return_inverse=True)
    return unique, np.reshape(inverse, -1)


def _uniform_pair(a: Affine, b: Affine) -> tuple[Key, Key] | None:
    """The keys of two operands with one form each at every point, one of them a `Uniform`
    (two numbers are numpy's)."""
    if type(a) is not Uniform and type(b) is not Uniform:
        return None
    x, y = uniform_key(a), uniform_key(b)
    return None if x is None or y is None else (x, y)


def uniform(v: Affine) -> bool:
    """Whether every point of `v` has the same form (an unknown has its own at each point)."""
    if type(v) is Uniform:
        return True
    if not len(v) or type(v) is _Opaque:
        return False
    return all(bool((x == x[0]).all()) for x in (v.const, *v.terms.values()))


def _is_key(v: Any) -> bool:
    return isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], tuple)


def _as_key(v: Key | int | None) -> Key | None:
    if v is None or isinstance(v, tuple):
        return v
    return (int(v), ())


def add_keys(x: Key, y: Key, sign: int = 1) -> Key:
    terms = dict(x[1])
    for a, c in y[1]:
        terms[a] = terms.get(a, 0) + sign * c
    return (x[0] + sign * y[0], tuple(sorted((a, c) for a, c in terms.items() if c)))


def sub_keys(x: Key, y: Key) -> Key:
    return add_keys(x, y, -1)


def scale_key(x: Key, k: int) -> Key:
    if k == 0:
        return (0, ())
    return (x[0] * k, tuple((a, c * k) for a, c in x[1]))


def _commute(kind: str, x: Key, y: Key) -> tuple[Key, Key]:
    return tuple(sorted((x, y))) if kind in ("xor", "and", "or", "min", "max") else (x, y)  # type: ignore[return-value]


def _merge_terms(a: dict[int, np.ndarray], b: dict[int, np.ndarray], sign: int) -> dict[int, np.ndarray]:
    if not b:
        return dict(a)
    out = dict(a)
    for t, c in b.items():
        out[t] = out[t] + sign * c if t in out else sign * c
    return _clean(out)


def _clean(terms: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    return {t: c for t, c in terms.items() if c.any()}


def _np_floordiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.floor_divide(a, np.where(b == 0, 1, b))


def _np_mod(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.remainder(a, np.where(b == 0, 1, b))


def _trunc_rem(a: int, b: int) -> int:
    return int(np.fmod(a, b)) if b else 0


_SCALAR: dict[str, Callable[..., int]] = {
    "mul": lambda a, b: a * b, "floordiv": lambda a, b: a // b if b else a, "mod": lambda a, b: a % b if b else 0,
    "rem": _trunc_rem, "tdiv": lambda a, b: int(np.trunc(a / b)) if b else a, "xor": lambda a, b: a ^ b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
    "shl": lambda a, b: a << b if 0 <= b < 64 else 0, "shr": lambda a, b: a >> max(0, min(b, 63)),
    "min": min, "max": max,
    "lt": lambda a, b: int(a < b), "le": lambda a, b: int(a <= b), "eq": lambda a, b: int(a == b),
    "ne": lambda a, b: int(a != b), "select": lambda c, a, b: a if c else b,
}

_INFIX = {"mul": "*", "floordiv": "//", "mod": "%", "rem": "rem", "xor": "^", "and": "&", "or": "|",
          "shl": "<<", "shr": ">>", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}

