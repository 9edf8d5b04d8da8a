"""``search``: the offline planner. It needs no model: it searches the knowledge base's recipes
and their parameters (tile shapes, stages, swizzles, vector widths, warps, ...).

Each round it proposes points of the applicable recipes' parameter spaces, scored by the bandit
(`bandit`): neighbours of the best validated point (one parameter moved to an adjacent value),
and fresh points drawn by Thompson sampling per parameter. Points already tried in the run are
not proposed again, nor points a shape of the task cannot run (the recipe's constraints, or its
kernel's assumptions, false at a test shape or the bench shape). Its lowering agent
instantiates the recipe's code at the chosen point. Its ICRL step credits the round's reward to
the arms it used (policy evaluation), writes what the standings say (critique) and renders them
as its policy text (θ), which persists with the bandit across runs and tasks.
"""

from __future__ import annotations

import json
import random
from typing import Any

from ..bandit import Bandit, default_path
from ..candidate import parse_candidate
from ..errors import CandidateError
from ..interface import check_interface
from ..kb import Recipe, failed_assumption, points
from ..planning import Lowered, Observation, Plan, PlannerConfig, PlannerPlugin, PolicyUpdate, Proposal

PROPOSALS = 8
"""Proposals per round."""


class SearchPlanner:
    name = "search"

    def __init__(self, config: PlannerConfig) -> None:
        self.config = config
        self.task = config.task
        self.bandit = Bandit(config.policy_path or default_path())
        self.context = f"{self.task.target}|{self.task.family}"
        self.tried: set[str] = set()
        self.known: dict[str, Recipe] = {}
        self.texts: set[str] = set()
        """Candidate texts already validated in this run."""
        self.best: tuple[str, dict[str, Any], float | None] | None = None
        self.run_id = config.options.get("run_id", "run")
        self._policy = self._render()
        self._pending: list[tuple[list[str], float, str]] = []

    # ---- planning --------------------------------------------------------------------------
    def _recipes(self, obs: Observation) -> list[Recipe]:
        """The recipes that apply to the task's kernel, and any that applied in an earlier round:
        a recipe here is a template the search tunes, so the incumbent it produced (which the
        knowledge base may no longer count as a candidate for that transformation) keeps it."""
        start = self.task.initial.text if self.task.initial is not None else obs.current
        for recipe in self.config.recipes.recipes(self.task.target, self.task.family, start, self._sizes()):
            self.known.setdefault(recipe.id, recipe)
        if obs.current and obs.current != start:
            for recipe in self.config.recipes.recipes(self.task.target, self.task.family, obs.current, self._sizes()):
                self.known.setdefault(recipe.id, recipe)
        return list(self.known.values())

    def _sizes(self) -> dict[str, int]:
        return _named(self.task.bench_shape or self.task.shapes[-1])

    def _shapes(self) -> list[dict[str, int]]:
        """Every shape a candidate must run at: the test shapes and the timed one."""
        shapes = list(self.task.shapes) + ([self.task.bench_shape] if self.task.bench_shape else [])
        return [_named(shape) for shape in shapes]

    def _admitted(self, recipe: Recipe, point: dict[str, Any]) -> bool:
        """A point the recipe's constraints admit at every shape: one whose tiles do not divide a
        test shape would only fail its tests."""
        return all(recipe.admits(point, sizes) for sizes in self._shapes())

    def propose(self, obs: Observation) -> list[Proposal]:
        rng = random.Random(f"{self.config.seed}:{obs.round}:propose")
        recipes = {r.id: r for r in self._recipes(obs)}
        sizes = self._sizes()
        found: dict[str, Proposal] = {}

        def offer(recipe: Recipe, point: dict[str, Any], how: str) -> None:
            key = _key(recipe.id, point)
            if key in self.tried or key in found or not self._admitted(recipe, point):
                return
            score = self.bandit.sample(self.context, f"recipe:{recipe.id}", rng)
            if point:
                score += sum(self.bandit.sample(self.context, f"{recipe.id}:{n}={v}", rng)
                             for n, v in point.items()) / len(point)
            found[key] = Proposal(recipe.id, f"{how}; {recipe.summary or recipe.title}".strip("; "), round(score, 4),
                                  dict(point), list(recipe.invariants))

        if self.best is not None and self.best[0] in recipes:
            recipe = recipes[self.best[0]]
            for name, values in recipe.parameters.items():
                here = list(values).index(self.best[1][name]) if self.best[1].get(name) in values else None
                if here is None:
                    continue
                for step in (-1, 1):
                    if 0 <= here + step < len(values):
                        offer(recipe, {**self.best[1], name: values[here + step]}, f"neighbour of the best: {name}")
        for recipe in recipes.values():
            if not recipe.parameters:
                offer(recipe, {}, "apply")
                continue
            defaults = recipe.defaults()
            offer(recipe, defaults, "the recipe's defaults")
            for _ in range(12):
                point = {}
                for name, values in recipe.parameters.items():
                    draws = [(self.bandit.sample(self.context, f"{recipe.id}:{name}={v}", rng), i)
                             for i, v in enumerate(values)]
                    point[name] = values[max(draws)[1]]
                offer(recipe, point, "drawn from the policy")
                if len(found) >= 3 * PROPOSALS:
                    break
            if not any(p.optimization == recipe.id for p in found.values()):  # everything drawn was tried
                for point in points(recipe, sizes, limit=5000):
                    offer(recipe, point, "next untried point")
                    if any(p.optimization == recipe.id for p in found.values()):
                        break
        ranked = []
        seen = self.texts | {obs.current}
        for proposal in sorted(found.values(), key=lambda p: -p.score):
            try:  # a point whose kernel is one already tried (the baseline's, say), does not take the
                # task's arguments, or assumes what a shape breaks (whole tiles), is no proposal
                text = recipes[proposal.optimization].instantiate(proposal.parameters)
                check_interface(parse_candidate(text), self.task.interface, ())
                if any(failed_assumption(text, shape) for shape in self._shapes()):
                    text = ""
            except CandidateError:
                text = ""
            if text in seen or not text:
                self.tried.add(_key(proposal.optimization, proposal.parameters))
                continue
            seen.add(text)
            ranked.append(proposal)
            if len(ranked) == PROPOSALS:
                break
        return ranked

    def lower(self, plan: Plan, obs: Observation) -> Lowered:
        recipe = next((r for r in self._recipes(obs) if r.id == plan.proposal.optimization), None)
        self.tried.add(_key(plan.proposal.optimization, plan.parameters))
        if recipe is None:
            return Lowered(None, f"no recipe {plan.proposal.optimization!r} for {self.task.target}/{self.task.family}")
        try:
            text = recipe.instantiate(plan.parameters)
            self.texts.add(text)
            return Lowered(text)
        except CandidateError as err:
            return Lowered(None, f"recipe {recipe.id} at {plan.parameters}: {err}")

    # ---- learning --------------------------------------------------------------------------
    def _arms(self, record: dict[str, Any]) -> list[str]:
        plan = record.get("plan") or {}
        ident = (plan.get("proposal") or {}).get("optimization")
        if not ident:
            return []
        return [f"recipe:{ident}"] + [f"{ident}:{n}={v}" for n, v in (plan.get("parameters") or {}).items()]

    def _observe(self, record: dict[str, Any]) -> None:
        plan = record.get("plan") or {}
        ident = (plan.get("proposal") or {}).get("optimization")
        if record.get("text"):
            self.texts.add(record["text"])
        if ident:
            self.tried.add(_key(ident, plan.get("parameters") or {}))
            validation = record.get("validation") or {}
            if record.get("kept") and validation.get("validated"):
                time = (validation.get("profile") or {}).get("time_s")
                self.best = (ident, dict(plan.get("parameters") or {}), time)

    def learn(self, evaluation: str, records: list[dict[str, Any]]) -> PolicyUpdate:
        critique = []
        for record in records:
            arms = self._arms(record)
            if not arms:
                continue
            key = f"{self.run_id}:{record['round']}"
            reward = float(record["reward"]["total"])
            if self.bandit.update(self.context, arms, reward, key):
                self._pending.append((arms, reward, key))
            self._observe(record)
            stage = (record.get("validation") or {}).get("stage", "?")
            critique.append(f"round {record['round']}: {arms[0][7:]} {record['plan']['parameters']} -> {stage}, "
                            f"reward {reward:+.2f}")
        self._policy = self._render()
        return PolicyUpdate(evaluation, "\n".join(critique) or "nothing to credit", self._policy)

    def commit(self, record: dict[str, Any]) -> None:
        self.bandit.save()
        self._pending.clear()

    def restore(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            arms = self._arms(record)
            if arms:
                self.bandit.update(self.context, arms, float(record["reward"]["total"]),
                                   f"{self.run_id}:{record['round']}")
            self._observe(record)
        self.bandit.save()
        self._policy = self._render()

    def _render(self) -> str:
        lines = [f"Search policy for {self.context} (bandit over recipes and parameter values; mean reward, tries):"]
        for name, arm in self.bandit.standings(self.context, 16):
            lines.append(f"- {name}: {arm.mean:+.3f} over {arm.n}")
        if len(lines) == 1:
            lines.append("- no experience yet: every arm at the prior")
        return "\n".join(lines)

    def policy(self) -> str:
        return self._policy

    def spent(self) -> dict[str, Any]:
        return {}


def _named(shape: dict[str, int]) -> dict[str, int]:
    """A task shape's sizes under the names kernels give them too (``m`` of an example problem
    is a kernel's ``M``)."""
    return {**{k.upper(): v for k, v in shape.items()}, **shape}


def _key(ident: str, point: dict[str, Any]) -> str:
    return f"{ident}:{json.dumps(point, sort_keys=True, default=str)}"


PLANNER = PlannerPlugin("search", "offline search over knowledge-base recipes and parameters with a bandit policy",
                        SearchPlanner)
