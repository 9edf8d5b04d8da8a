"""``llm``: the planner, lowering agent and ICRL step of §6 as calls to a language model on any
OpenAI-compatible endpoint.

- planner: the current kernel, the last round's feedback (with its counterexample), the
  history, the knowledge base's applicable recipes and the policy θ -> ranked proposals (JSON);
- lowering agent: the plan, the kernel and the recipe's DSL code as an example -> the whole
  candidate module (a python block), which the harness only parses: it is never run as Python;
- ICRL: θ, the round's record -> evaluation, critique and the new θ (JSON).

A reply that cannot be read makes that round fail with the reason; it never stops the run.
"""

from __future__ import annotations

import json
from typing import Any

from .. import prompts, replies
from ..errors import LLMError
from ..llm import Client, Endpoint
from ..planning import Lowered, Observation, Plan, PlannerConfig, PlannerPlugin, PolicyUpdate, Proposal

HISTORY = 8
"""Earlier rounds shown to the planner."""


class LLMPlanner:
    name = "llm"

    def __init__(self, config: PlannerConfig) -> None:
        self.config = config
        self.task = config.task
        endpoint = Endpoint.from_environment(config.model, config.base_url, config.api_key, config.timeout_s,
                                             config.retries)
        self.client = Client(endpoint, config.directory / "llm.jsonl", **config.options.get("client", {}))
        self._policy = prompts.text("policy").strip()
        self.language = prompts.text("language").strip()

    def _recipes(self, obs: Observation) -> list[Any]:
        sizes = {k.upper(): v for k, v in (self.task.bench_shape or self.task.shapes[-1]).items()}
        return self.config.recipes.recipes(self.task.target, self.task.family, obs.current, sizes)

    def propose(self, obs: Observation) -> list[Proposal]:
        recipes = self._recipes(obs)
        catalogue = "\n".join(f"- {r.id}: {r.summary or r.title}; parameters "
                              + (", ".join(f"{n} in {list(v)}" for n, v in r.parameters.items()) or "none")
                              for r in recipes[:20]) or "- (no recipe applies: propose by name)"
        history = "\n".join(f"- round {h['round']}: {h['optimization']} {h.get('parameters') or ''} -> {h['stage']}, "
                            f"reward {h['reward']:+.2f}" for h in obs.history[-HISTORY:]) or "- none yet"
        timing = (f"{obs.best_time_s * 1e6:.1f} µs" if obs.best_time_s else "not timed (interpreter only)")
        user = (f"Task: {self.task.name} ({self.task.family}) on {self.task.target}; round {obs.round} of "
                f"{obs.rounds}.\nBest kernel so far ({timing}"
                + (f"; the reference takes {obs.reference_time_s * 1e6:.1f} µs" if obs.reference_time_s else "")
                + f"):\n```python\n{obs.current}```\n"
                f"Last round's result:\n{obs.feedback or 'none'}\n\nHistory:\n{history}\n\n"
                f"Knowledge-base recipes for this target and family:\n{catalogue}\n")
        messages = [{"role": "system", "content": prompts.render("planner", policy=obs.policy,
                                                                  language=self.language)},
                    {"role": "user", "content": user}]
        reply = self.client.chat("planner", messages, call=f"round {obs.round}")
        try:
            return replies.proposals(reply)
        except LLMError as err:  # an unreadable plan still gives the lowering agent something to do
            return [Proposal("revise", f"the planner's reply could not be read ({err}); improve the kernel, guided "
                                       "by the last round's result", 0.0)]

    def lower(self, plan: Plan, obs: Observation) -> Lowered:
        recipe = next((r for r in self._recipes(obs) if r.id == plan.proposal.optimization), None)
        example = f"\nThe recipe's code, as an example:\n```python\n{recipe.example()}```\n" if recipe else ""
        user = (f"Kernel to transform:\n```python\n{obs.current}```\n\nPlan:\n{plan.instructions}\n"
                f"{example}\nLast round's result (fix what it reports if it applies):\n{obs.feedback or 'none'}\n")
        messages = [{"role": "system", "content": prompts.render("lowering", language=self.language)},
                    {"role": "user", "content": user}]
        try:
            reply = self.client.chat("lowering", messages, call=f"round {obs.round}")
        except LLMError as err:
            return Lowered(None, str(err))
        try:
            return Lowered(replies.code(reply))
        except LLMError as err:
            return Lowered(None, str(err))

    def learn(self, evaluation: str, records: list[dict[str, Any]]) -> PolicyUpdate:
        summary = json.dumps([_brief(r) for r in records], indent=1, default=str)
        messages = [{"role": "system", "content": prompts.render("icrl")},
                    {"role": "user", "content": f"Current policy:\n{self._policy}\n\nPolicy evaluation so far:\n"
                                                f"{evaluation}\n\nLast round(s):\n{summary}\n"}]
        try:
            rounds = ",".join(str(r.get("round")) for r in records)
            update = replies.policy_update(self.client.chat("icrl", messages, call=f"round {rounds}"))
        except LLMError as err:
            return PolicyUpdate(evaluation, f"no update this round: {err}", self._policy)
        self._policy = update["policy"].strip()
        return PolicyUpdate(update["evaluation"] or evaluation, update["critique"], self._policy)

    def restore(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            policy = (record.get("icrl") or {}).get("policy")
            if policy:
                self._policy = policy

    def commit(self, record: dict[str, Any]) -> None:
        """The exchanges are already on disk (llm.jsonl); nothing else to keep."""

    def policy(self) -> str:
        return self._policy

    def spent(self) -> dict[str, Any]:
        return self.client.ledger.snapshot()


def _brief(record: dict[str, Any]) -> dict[str, Any]:
    v = record.get("validation") or {}
    return {"round": record.get("round"), "optimization": ((record.get("plan") or {}).get("proposal") or {})
            .get("optimization"), "parameters": (record.get("plan") or {}).get("parameters"),
            "outcome": v.get("stage"), "invariants": v.get("invariant_text", "")[:600],
            "tests": f"{v.get('tests_passed', 0)}/{v.get('tests_total', 0)}", "reward": record.get("reward"),
            "time_s": (v.get("profile") or {}).get("time_s")}


PLANNER = PlannerPlugin("llm", "planner, lowering agent and ICRL through an OpenAI-compatible endpoint", LLMPlanner)
