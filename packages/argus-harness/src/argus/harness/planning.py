"""What planners exchange with the loop, and how they are found.

A planner (§6) reads an `Observation` — the task, the current best kernel, the last round's
feedback (a failed invariant's counterexample, a test's mismatch, a profile), the history and
its own policy text θ — and returns ranked `Proposal`s ⟨optimization, context, score⟩. It also
provides the lowering agent for its proposals and the ICRL step that rewrites θ.

Planners are plugins of the ``argus.planners`` entry-point group: each value is a
`PlannerPlugin` whose `create` builds the planner for a run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

from argus.dsl.plugins import PluginError, discover

from .errors import PlannerError
from .kb import RecipeBook
from .task import Task


@dataclass
class Proposal:
    """⟨optimization, context, score⟩, with the parameters and invariants it binds."""

    optimization: str
    context: str = ""
    score: float = 0.0
    parameters: dict[str, Any] = field(default_factory=dict)
    invariants: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Proposal:
        return cls(str(data.get("optimization", "")), str(data.get("context", "")), float(data.get("score", 0.0)),
                   dict(data.get("parameters") or {}), [str(x) for x in data.get("invariants") or []])


@dataclass
class Plan:
    """The selector's choice, with every parameter resolved, as instructions for lowering."""

    proposal: Proposal
    parameters: dict[str, Any]
    instructions: str
    probabilities: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"proposal": self.proposal.as_dict(), "parameters": self.parameters,
                "instructions": self.instructions, "probabilities": self.probabilities}


@dataclass
class Lowered:
    """The lowering agent's candidate text, or why it produced none."""

    text: str | None
    error: str | None = None


@dataclass
class Observation:
    task: Task
    round: int
    rounds: int
    current: str
    """The text of the fastest validated kernel so far (the one to improve)."""
    best_time_s: float | None
    reference_time_s: float | None
    feedback: str | None
    """The previous round's validation, in words (with the counterexample if one was found)."""
    history: list[dict[str, Any]]
    """One short entry per earlier round: optimization, parameters, stage, reward, time."""
    policy: str


@dataclass
class PolicyUpdate:
    """One ICRL step: the evaluation of the policy, the critique (text gradient), the new θ."""

    evaluation: str
    critique: str
    policy: str


class Planner(Protocol):
    name: str

    def propose(self, obs: Observation) -> list[Proposal]: ...

    def lower(self, plan: Plan, obs: Observation) -> Lowered: ...

    def learn(self, evaluation: str, records: list[dict[str, Any]]) -> PolicyUpdate: ...

    def restore(self, records: list[dict[str, Any]]) -> None:
        """Take up a run again after these recorded rounds."""

    def commit(self, record: dict[str, Any]) -> None:
        """The round in `record` is stored: persist what the planner learned from it."""

    def policy(self) -> str: ...

    def spent(self) -> dict[str, Any]:
        """Tokens (and calls) spent so far, by role."""


@dataclass
class PlannerConfig:
    """What a planner is built from."""

    task: Task
    directory: Path
    recipes: RecipeBook
    seed: int = 0
    policy_path: Path | None = None
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    timeout_s: float = 120.0
    retries: int = 3
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PlannerPlugin:
    name: str
    summary: str
    create: Callable[[PlannerConfig], Planner]


def default_planner() -> str:
    """``llm`` when an endpoint is configured (``OPENAI_BASE_URL``), else ``search``."""
    return "llm" if os.environ.get("OPENAI_BASE_URL") else "search"


def planner_plugin(name: str) -> PlannerPlugin:
    """The planner registered as `name` in ``argus.planners``."""
    from .planners import llm, search

    plugins = discover("argus.planners", {"search": search.PLANNER, "llm": llm.PLANNER})
    if name not in plugins:
        raise PlannerError(f"no planner {name!r}; installed planners: {', '.join(sorted(plugins))}")
    try:
        plugin = plugins[name].load()
    except PluginError as err:
        raise PlannerError(str(err)) from None
    if not isinstance(plugin, PlannerPlugin):
        raise PlannerError(f"argus.planners:{name} is {type(plugin).__name__}, not a PlannerPlugin")
    return plugin
