"""The optimization selector: samples one proposal from the planner's ranked list rather than
always taking the top one (locally plausible steps interact, so exploration pays), and turns it
into a plan: the instructions for the lowering agent, with the parameters the proposal binds.
"""

from __future__ import annotations

import math
import random

from .errors import PlannerError
from .planning import Plan, Proposal


def select(proposals: list[Proposal], rng: random.Random, temperature: float = 0.25) -> Plan:
    """Sample a proposal with probability ∝ exp(score / temperature) (a score that is not a
    finite number counts as the lowest)."""
    if not proposals:
        raise PlannerError("the planner proposed nothing")
    finite = [p.score for p in proposals if math.isfinite(p.score)]
    floor = min(finite) if finite else 0.0
    scores = [p.score if math.isfinite(p.score) else floor - 100.0 * temperature for p in proposals]
    top = max(scores)
    weights = [math.exp((s - top) / max(temperature, 1e-6)) for s in scores]
    total = sum(weights)
    probabilities = [w / total for w in weights]
    chosen = rng.choices(range(len(proposals)), weights=probabilities)[0]
    proposal = proposals[chosen]
    parameters = dict(proposal.parameters)
    lines = [f"Apply: {proposal.optimization}"]
    if parameters:
        lines.append("Parameters: " + ", ".join(f"{k}={v}" for k, v in sorted(parameters.items())))
    if proposal.context:
        lines.append(f"Where and how: {proposal.context}")
    if proposal.invariants:
        lines.append("Invariants the result must state and keep: " + "; ".join(proposal.invariants))
    return Plan(proposal, parameters, "\n".join(lines), [round(p, 4) for p in probabilities])
