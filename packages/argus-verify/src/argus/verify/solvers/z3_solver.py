"""The default solver: z3, in process (the ``z3-solver`` package)."""

from __future__ import annotations

import time
from functools import cache
from typing import Any
from weakref import WeakKeyDictionary

from . import Answer, Query
from .encoding import Encoder, answer_from_model, encode


class _Z3Encoder(Encoder):
    def __init__(self, space: Any, z3: Any) -> None:
        super().__init__(space)
        self.z3 = z3

    def var(self, name: str) -> Any: return self.z3.Int(name)
    def num(self, n: int) -> Any: return self.z3.IntVal(n)
    def plus(self, terms: list[Any]) -> Any: return self.z3.Sum(terms)
    def times(self, a: Any, b: Any) -> Any: return a * b
    def ite(self, c: Any, a: Any, b: Any) -> Any: return self.z3.If(c, a, b)
    def eq(self, a: Any, b: Any) -> Any: return a == b
    def le(self, a: Any, b: Any) -> Any: return a <= b
    def lt(self, a: Any, b: Any) -> Any: return a < b
    def conj(self, items: list[Any]) -> Any: return self.z3.And(items) if items else self.z3.BoolVal(True)
    def disj(self, items: list[Any]) -> Any: return self.z3.Or(items) if items else self.z3.BoolVal(False)
    def neg(self, a: Any) -> Any: return self.z3.Not(a)

    def bits(self, kind: str, a: Any, b: Any) -> Any:
        z3 = self.z3
        x, y = z3.Int2BV(a, 32), z3.Int2BV(b, 32)
        out = {"xor": lambda: x ^ y, "and": lambda: x & y, "or": lambda: x | y,
               "shl": lambda: x << y, "shr": lambda: z3.AShr(x, y)}[kind]()
        return z3.BV2Int(out, is_signed=True)


_ENCODERS: WeakKeyDictionary[Any, _Z3Encoder] = WeakKeyDictionary()
"""Per symbol space, its encoder: the queries of one check share atoms and facts."""


class Z3:
    name = "z3"

    def unavailable(self) -> str | None:
        try:
            import z3  # noqa: F401
        except ImportError as err:
            return f"the z3-solver package is not installed ({err})"
        return None

    def solve(self, query: Query, timeout_ms: int) -> Answer:
        import z3

        encoder = _ENCODERS.get(query.space)
        if encoder is None:
            encoder = _ENCODERS[query.space] = _Z3Encoder(query.space, z3)
        facts, alternatives = encode(encoder, query)
        goal = encoder.disj(alternatives)
        deadline = time.monotonic() + timeout_ms / 1000
        for seed, limit in enumerate(_attempts(timeout_ms)):
            s = _solver(z3)
            s.set("random_seed", seed)
            s.set("timeout", max(1, min(limit, int((deadline - time.monotonic()) * 1000))))
            s.add(*facts)
            s.add(goal)
            status = s.check()
            if status != z3.unknown or s.reason_unknown() not in ("timeout", "canceled"):
                break
            if time.monotonic() >= deadline:
                break
        if status == z3.unsat:
            return Answer("unsat")
        if status == z3.unknown:
            return Answer("unknown", reason=f"z3: {s.reason_unknown()}")
        m = s.model()
        model = {ident: m.eval(v, model_completion=True).as_long() for ident, v in encoder.variables.items()}
        return answer_from_model(query.space, query, model)


def _solver(z3: Any) -> Any:
    """A solver that first substitutes what the facts pin down (a block index fixed to 0 turns
    a quotient by a product of sizes into 0): z3's default left such nonlinear facts to its
    core, which took seconds on some seeds."""
    return _tactic(z3).solver()


@cache
def _tactic(z3: Any) -> Any:
    """The tactic behind `_solver`, built once per process (building it costs more than a
    solver made from it)."""
    return z3.Then("simplify", "propagate-values", "solve-eqs", "smt")


FIRST_ATTEMPT_MS = 250
"""z3's time on one query varies by orders of magnitude with its random seed (a query settled in
4 ms under most seeds took 1.4 s, or ran past 10 s, under others): a query not settled this soon
is restarted with the next seed and twice the time, until the timeout is spent."""


def _attempts(timeout_ms: int) -> list[int]:
    """Each attempt's time limit: doubling from `FIRST_ATTEMPT_MS`; the last takes what is left."""
    limits, spent, limit = [], 0, FIRST_ATTEMPT_MS
    while spent + 2 * limit < timeout_ms:
        limits.append(limit)
        spent += limit
        limit *= 2
    return limits + [timeout_ms - spent]
