"""The optimization selector: samples one proposal from the planner's ranked list rather than
always taking the top one (locally plausible steps interact, so exploration pays), and turns it
into a plan with every parameter resolved.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from typing import Any

from .errors import PlannerError
from .planning import Plan, Proposal


def select(proposals: list[Proposal], rng: random.Random, temperature: float = 0.25,
           defaults: Callable[[str], Mapping[str, Any]] | None = None) -> Plan:
    """Sample a proposal with probability ∝ exp(score / temperature); fill the parameters it
    leaves open from `defaults(optimization)`."""
    if not proposals:
        raise PlannerError("the planner proposed nothing")
    scores = [p.score for p in proposals]
    top = max(scores)
    weights = [math.exp((s - top) / max(temperature, 1e-6)) for s in scores]
    total = sum(weights)
    probabilities = [w / total for w in weights]
    chosen = rng.choices(range(len(proposals)), weights=probabilities)[0]
    proposal = proposals[chosen]
    parameters = dict(defaults(proposal.optimization)) if defaults else {}
    parameters.update(proposal.parameters)
    lines = [f"Apply: {proposal.optimization}"]
    if parameters:
        lines.append("Parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(parameters.items())))
    if proposal.context:
        lines.append(f"Where and how: {proposal.context}")
    if proposal.invariants:
        lines.append("Invariants the result must state and keep: " + "; ".join(proposal.invariants))
    return Plan(proposal, parameters, "\n".join(lines), [round(p, 4) for p in probabilities])
