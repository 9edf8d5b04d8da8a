"""One encoding of `Space` atoms for every solver: adapters supply the term constructors.

Symbols and opaque values are integer variables. A floor quotient ``q = x // c`` by a positive
constant is a fresh variable bounded by ``c·q ≤ x ≤ c·q + c - 1`` (linear: no div/mod for the
solver), one per expression ``x`` up to its constant term. Products of symbolic expressions
are products; min, max, comparisons and selects are if-then-else; xor/and/or/shifts go through
32-bit vectors. Each atom is encoded once.
"""

from __future__ import annotations

from typing import Any

from ..affine import Key, Space, key_constant
from . import Answer, Comparison, Query


class Encoder:
    """Builds solver terms for keys; subclasses implement the primitive constructors."""

    def __init__(self, space: Space) -> None:
        self.space = space
        self.terms: dict[int, Any] = {}
        self.side: list[Any] = []
        """Definitions of derived atoms (quotient bounds), asserted with the query."""
        self.variables: dict[int, Any] = {}
        self.quotients: dict[tuple[Any, int], tuple[Any, Any]] = {}
        """Per expression without its constant and positive divisor: its floor quotient and remainder."""
        self.comparisons: dict[Comparison, Any] = {}
        """Each comparison encoded once (the queries of one analysis share their facts)."""

    # primitives -------------------------------------------------------------------------
    def var(self, name: str) -> Any: raise NotImplementedError
    def num(self, n: int) -> Any: raise NotImplementedError
    def plus(self, terms: list[Any]) -> Any: raise NotImplementedError
    def times(self, a: Any, b: Any) -> Any: raise NotImplementedError
    def ite(self, c: Any, a: Any, b: Any) -> Any: raise NotImplementedError
    def eq(self, a: Any, b: Any) -> Any: raise NotImplementedError
    def le(self, a: Any, b: Any) -> Any: raise NotImplementedError
    def lt(self, a: Any, b: Any) -> Any: raise NotImplementedError
    def conj(self, items: list[Any]) -> Any: raise NotImplementedError
    def disj(self, items: list[Any]) -> Any: raise NotImplementedError
    def neg(self, a: Any) -> Any: raise NotImplementedError
    def bits(self, kind: str, a: Any, b: Any) -> Any: raise NotImplementedError

    # keys and atoms ---------------------------------------------------------------------
    def key(self, key: Key) -> Any:
        parts = [self.num(key[0])] if key[0] or not key[1] else []
        for atom, coef in key[1]:
            t = self.atom(atom)
            parts.append(t if coef == 1 else self.times(self.num(coef), t))
        return parts[0] if len(parts) == 1 else self.plus(parts)

    def atom(self, ident: int) -> Any:
        term = self.terms.get(ident)
        if term is None:
            term = self.terms[ident] = self._define(ident)
        return term

    def _define(self, ident: int) -> Any:
        a = self.space.atoms[ident]
        if a.kind in ("symbol", "opaque"):
            v = self.variables[ident] = self.var(f"a{ident}")
            return v
        args = a.args
        if a.kind == "floordiv" and key_constant(args[1]) is not None and key_constant(args[1]) > 0:  # type: ignore[operator]
            return self._floor_quotient(args[0], key_constant(args[1]))  # type: ignore[arg-type]
        x = self.key(args[0]) if isinstance(args[0], tuple) else None
        y = self.key(args[1]) if len(args) > 1 and isinstance(args[1], tuple) else None
        if a.kind == "mul":
            return self.times(x, y)
        if a.kind in ("floordiv", "mod", "rem", "tdiv"):
            q = self.var(f"q{ident}")  # x = y·q + r, r's sign that of y (floor) or of x (truncation)
            r = self.plus([x, self.times(self.num(-1), self.times(y, q))])
            zero = self.num(0)
            follows = y if a.kind in ("floordiv", "mod") else x
            positive = self.conj([self.le(zero, r), self.lt(r, self.ite(self.lt(zero, y), y, self.times(self.num(-1), y)))])
            negative = self.conj([self.le(r, zero), self.lt(self.ite(self.lt(zero, y), self.times(self.num(-1), y), y), r)])
            self.side.append(self.ite(self.eq(y, zero), self.eq(q, x),  # x // 0 = x, x % 0 = 0 (the interpreter's)
                                      self.ite(self.le(zero, follows), positive, negative)))
            return q if a.kind in ("floordiv", "tdiv") else self.ite(self.eq(y, zero), zero, r)
        if a.kind in ("min", "max"):
            return self.ite(self.le(x, y), x, y) if a.kind == "min" else self.ite(self.le(x, y), y, x)
        if a.kind in ("lt", "le", "eq", "ne"):
            cond = {"lt": self.lt, "le": self.le, "eq": self.eq}.get(a.kind, lambda p, q: self.neg(self.eq(p, q)))(x, y)
            return self.ite(cond, self.num(1), self.num(0))
        if a.kind == "select":
            return self.ite(self.neg(self.eq(x, self.num(0))), y, self.key(args[2]))
        if a.kind in ("xor", "and", "or", "shl", "shr"):
            return self.bits(a.kind, x, y)
        raise NotImplementedError(f"no encoding for {a.kind}")

    def _floor_quotient(self, x: Key, c: int) -> Any:
        """``(t + k) // c`` as ``k // c + q + [r ≥ c - k mod c]`` where ``t = c·q + r``: the
        quotients of one expression at different offsets share one variable, so a solver need
        not relate them (separate ones made it wander, seed-dependently, on ``(n + i) // 32``)."""
        k, terms = x
        if not terms:
            return self.num(k // c)
        shared = self.quotients.get((terms, c))
        if shared is None:
            t = self.key((0, terms))
            q = self.var(f"q{len(self.quotients)}_{c}")
            lower = self.times(self.num(c), q)
            self.side += [self.le(lower, t), self.le(t, self.plus([lower, self.num(c - 1)]))]
            shared = self.quotients[(terms, c)] = (q, self.plus([t, self.times(self.num(-1), lower)]))
        q, r = shared
        parts = [q] + ([self.num(k // c)] if k // c else [])
        if k % c:
            parts.append(self.ite(self.le(self.num(c - k % c), r), self.num(1), self.num(0)))
        return parts[0] if len(parts) == 1 else self.plus(parts)

    def comparison(self, c: Comparison) -> Any:
        term = self.comparisons.get(c)
        if term is None:
            kind, key = c
            t, zero = self.key(key), self.num(0)
            term = self.comparisons[c] = {"ge0": lambda: self.le(zero, t), "eq0": lambda: self.eq(t, zero),
                                          "ne0": lambda: self.neg(self.eq(t, zero))}[kind]()
        return term


def encode(encoder: Encoder, query: Query) -> tuple[list[Any], list[Any]]:
    """(facts, alternatives) as solver terms; derived-atom definitions are added to the facts
    (an encoder kept for one space's queries holds those of earlier queries too: each only
    defines its own fresh variable, so they constrain nothing else)."""
    facts = [encoder.comparison(c) for c in query.facts]
    alternatives = [encoder.conj([encoder.comparison(c) for c in alt]) for alt in query.alternatives]
    return facts + encoder.side, alternatives


def pick_alternative(space: Space, query: Query, model: dict[int, int]) -> int | None:
    """The first alternative the model satisfies, evaluated exactly in Python."""
    for i, alt in enumerate(query.alternatives):
        if all(_holds(space, c, model) for c in alt):
            return i
    return None


def _holds(space: Space, c: Comparison, model: dict[int, int]) -> bool:
    v = space.evaluate(c[1], model)
    return {"ge0": v >= 0, "eq0": v == 0, "ne0": v != 0}[c[0]]


def answer_from_model(space: Space, query: Query, model: dict[int, int]) -> Answer:
    return Answer("sat", model, "", pick_alternative(space, query, model))
