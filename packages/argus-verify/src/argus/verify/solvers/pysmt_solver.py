"""Any SMT solver pySMT finds installed, through pySMT's solver-independent formulas."""

from __future__ import annotations

from typing import Any

from . import Answer, Query
from .encoding import Encoder, answer_from_model, encode


class _PySMTEncoder(Encoder):
    def __init__(self, space: Any, shortcuts: Any, typing: Any) -> None:
        super().__init__(space)
        self.s = shortcuts
        self.typing = typing

    def var(self, name: str) -> Any: return self.s.Symbol(name, self.typing.INT)
    def num(self, n: int) -> Any: return self.s.Int(n)
    def plus(self, terms: list[Any]) -> Any: return self.s.Plus(terms)
    def times(self, a: Any, b: Any) -> Any: return self.s.Times(a, b)
    def ite(self, c: Any, a: Any, b: Any) -> Any: return self.s.Ite(c, a, b)
    def eq(self, a: Any, b: Any) -> Any: return self.s.Equals(a, b)
    def le(self, a: Any, b: Any) -> Any: return self.s.LE(a, b)
    def lt(self, a: Any, b: Any) -> Any: return self.s.LT(a, b)
    def conj(self, items: list[Any]) -> Any: return self.s.And(items)
    def disj(self, items: list[Any]) -> Any: return self.s.Or(items)
    def neg(self, a: Any) -> Any: return self.s.Not(a)

    def bits(self, kind: str, a: Any, b: Any) -> Any:
        raise NotImplementedError("the pysmt adapter encodes integer arithmetic only (no bit operations)")


class PySMT:
    name = "pysmt"

    def unavailable(self) -> str | None:
        try:
            from pysmt.factory import Factory  # noqa: F401
            from pysmt.shortcuts import get_env
        except ImportError as err:
            return f"the pysmt package is not installed ({err})"
        if not get_env().factory.all_solvers():
            return "pysmt finds no SMT solver installed (see `pysmt-install --check`)"
        return None

    def solve(self, query: Query, timeout_ms: int) -> Answer:
        from pysmt import shortcuts, typing
        from pysmt.logics import QF_NIA

        encoder = _PySMTEncoder(query.space, shortcuts, typing)
        try:
            facts, alternatives = encode(encoder, query)
        except NotImplementedError as err:
            return Answer("unknown", reason=f"pysmt: {err}")
        formula = shortcuts.And(facts + [encoder.disj(alternatives)])
        with shortcuts.Solver(logic=QF_NIA) as s:
            s.add_assertion(formula)
            try:
                sat = s.solve()
            except Exception as err:  # a backend that gives up raises its own error types
                return Answer("unknown", reason=f"pysmt: {type(err).__name__}: {err}")
            if not sat:
                return Answer("unsat")
            model = {ident: int(s.get_value(v).constant_value()) for ident, v in encoder.variables.items()}
        return answer_from_model(query.space, query, model)
