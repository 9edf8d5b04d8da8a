"""Satisfiability of symbolic queries, through solver plugins (entry-point group `argus.solvers`).

A `Query` asks: is there a value of every symbol that satisfies the domain's facts and at
least one alternative (a conjunction of comparisons with zero)? ``unsat`` proves the negation
of every alternative over the whole domain; ``sat`` comes with a model. Every adapter encodes
the same atoms the same way (`encoding.Encoder`): floor quotients by constants as bounded
integers, products as products, bit operations on 32-bit vectors.

``ARGUS_SOLVER`` picks a plugin by name (default ``z3``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..affine import Key, Space
from .. import plugins
from ..plugins import Plugin, PluginError, discover

Comparison = tuple[str, Key]
"""``("ge0" | "eq0" | "ne0", e)``: e ≥ 0, e = 0, e ≠ 0."""


@dataclass
class Query:
    space: Space
    facts: list[Comparison]
    alternatives: list[list[Comparison]]


@dataclass
class Answer:
    status: str
    """``sat``, ``unsat`` or ``unknown``."""
    model: dict[int, int] = field(default_factory=dict)
    """Values of the symbol and opaque atoms (sat only)."""
    reason: str = ""
    alternative: int | None = None
    """The index of an alternative the model satisfies (sat only)."""


class Solver(Protocol):
    name: str

    def solve(self, query: Query, timeout_ms: int) -> Answer: ...


class Budgeted:
    """A solver whose queries share one time budget: once it is spent, every query left
    answers unknown at once, saying so. A check that cannot be decided then ends within its
    budget with what it could not decide, not after one timeout per question."""

    def __init__(self, engine: Solver, seconds: float) -> None:
        self.engine = engine
        self.name = engine.name
        self.seconds = seconds
        self.left = seconds
        self.refused = 0
        """Queries answered unknown for want of budget."""

    @property
    def spent(self) -> bool:
        return self.left <= 0 or self.refused > 0

    def solve(self, query: Query, timeout_ms: int) -> Answer:
        if self.left <= 0:
            self.refused += 1
            return Answer("unknown", reason=f"the solver budget ({self.seconds:g} s) was spent")
        started = time.perf_counter()
        try:
            return self.engine.solve(query, max(1, min(timeout_ms, int(self.left * 1000))))
        finally:
            self.left -= time.perf_counter() - started


def _builtin() -> dict[str, Any]:
    from .pysmt_solver import PySMT
    from .z3_solver import Z3

    return {"z3": Z3(), "pysmt": PySMT()}


_FOUND: dict[tuple[Any, ...], Plugin] = {}
"""The solver plugin found per name asked for, plugins turned off and listing of installed
entry points (`solver`)."""


def solver(name: str | None = None) -> Solver:
    """The solver plugin `name` (or ``$ARGUS_SOLVER``, or z3), checked to be usable. The
    installed plugins are listed once per name and ``$ARGUS_DISABLE_PLUGINS``: listing them reads
    every installed distribution's metadata (about 4 ms), and a check that needs a solver asks
    for one every time (a distribution installed while the process runs is not seen for a name
    already found; each call still makes its own solver and checks that it can run)."""
    wanted = name or os.environ.get("ARGUS_SOLVER") or "z3"
    key = (wanted, os.environ.get("ARGUS_DISABLE_PLUGINS", ""), plugins.entry_points)
    plugin = _FOUND.get(key)
    if plugin is None:
        found = discover("argus.solvers", _builtin())
        plugin = found.get(wanted)
        if plugin is None:
            raise PluginError(f"no solver plugin named {wanted!r}; installed: {', '.join(sorted(found)) or 'none'}")
        _FOUND[key] = plugin
    value = plugin.load()
    chosen = value() if isinstance(value, type) else value
    problem = getattr(chosen, "unavailable", lambda: None)()
    if problem:
        raise PluginError(f"solver {wanted!r} cannot run here: {problem}")
    return chosen  # type: ignore[no-any-return]


__all__ = ["Answer", "Comparison", "Query", "Solver", "solver"]
