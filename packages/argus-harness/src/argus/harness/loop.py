"""The loop of §6: planner -> selector -> lowering agent -> validator -> keep the fastest
validated kernel -> reward -> ICRL, one round at a time, each round stored before the next.

Round 0 validates the task's initial kernel (the baseline). A run taken up again (same
``--out``) reads its finished rounds, restores the best kernel, the planner's policy and its
learning, and goes on from the first round not on disk.
"""

from __future__ import annotations

import difflib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import icrl
from .errors import HarnessError
from .planning import Observation, Planner
from .reward import reward
from .selector import select
from .store import RunStore
from .task import Task
from .validator import Validation, Validator


@dataclass
class Best:
    text: str
    time_s: float | None
    round: int
    validated: bool


class Optimizer:
    def __init__(self, task: Task, planner: Planner, validator: Validator, store: RunStore, rounds: int, *,
                 seed: int = 0, progress: Callable[[str], None] = print) -> None:
        self.task = task
        self.planner = planner
        self.validator = validator
        self.store = store
        self.rounds = rounds
        self.seed = seed
        self.progress = progress
        self.records: list[dict[str, Any]] = []
        self.best: Best | None = None
        self.reference_time_s: float | None = None

    # ---- state --------------------------------------------------------------------------
    def _restore(self) -> None:
        self.records = self.store.rounds()
        for record in self.records:
            self._account(record)
        if self.records:
            self.planner.restore(self.records[1:])
            if self.best is not None:  # a kill between a round's record and best.py leaves the file behind
                self.store.save_best(self.best.text)
            self.progress(f"resuming {self.store.directory}: rounds 0-{len(self.records) - 1} are on disk")

    def _account(self, record: dict[str, Any]) -> None:
        validation = record.get("validation") or {}
        profile = validation.get("profile") or {}
        if profile.get("reference_time_s"):
            self.reference_time_s = profile["reference_time_s"]
        if record.get("kept"):
            self.best = Best(record["text"], profile.get("time_s") if validation.get("validated") else None,
                             record["round"], bool(validation.get("validated")))

    # ---- the run ------------------------------------------------------------------------
    def run(self) -> list[dict[str, Any]]:
        self._restore()
        if not self.records:
            self._baseline()
        while len(self.records) <= self.rounds:
            self._round(len(self.records))
        return self.records

    def _baseline(self) -> None:
        started = time.monotonic()
        initial = self.task.initial
        if initial is None:
            record = {"round": 0, "text": "", "validation": None, "reward": {"total": 0.0, "parts": {}},
                      "kept": False, "note": "no initial kernel: the planner writes the first one"}
        else:
            v = self.validator.validate(initial.text, "round-000", seed_base=0)
            record = {"round": 0, "text": initial.text, "validation": v.as_dict(),
                      "reward": {"total": 0.0, "parts": {}}, "kept": True,
                      "note": "the task's initial kernel" + ("" if v.validated else f" (not validated: {v.stage})")}
        record.update(seconds=time.monotonic() - started, tokens={}, best_time_s=None)
        self._account(record)
        record["best_time_s"] = self.best.time_s if self.best else None
        self.store.append(record)
        if self.best is not None:
            self.store.save_best(self.best.text)
        self.records.append(record)
        self.progress(self._line(record))

    def _history(self) -> list[dict[str, Any]]:
        out = []
        for r in self.records[1:]:
            plan = r.get("plan") or {}
            out.append({"round": r["round"], "optimization": (plan.get("proposal") or {}).get("optimization", "?"),
                        "parameters": plan.get("parameters"), "stage": (r.get("validation") or {}).get("stage", "?"),
                        "reward": r["reward"]["total"]})
        return out

    def _round(self, number: int) -> None:
        started = time.monotonic()
        before = self.planner.spent()
        last = self.records[-1]
        feedback = None
        if last.get("validation") is not None:
            feedback = Validation.from_dict(last["validation"]).feedback()
        elif last.get("error"):
            feedback = last["error"]
        current = self.best.text if self.best is not None else ""
        obs = Observation(self.task, number, self.rounds, current, self.best.time_s if self.best else None,
                          self.reference_time_s, feedback, self._history(), self.planner.policy())
        record: dict[str, Any] = {"round": number}
        try:
            proposals = self.planner.propose(obs)
            plan = select(proposals, random.Random(f"{self.seed}:{number}:select"))
            lowered = self.planner.lower(plan, obs)
        except HarnessError as err:
            proposals, plan, lowered = [], None, None
            record["error"] = f"planning failed: {err}"
        record["proposals"] = [p.as_dict() for p in proposals]
        record["plan"] = plan.as_dict() if plan is not None else None
        if lowered is not None and lowered.text is not None:
            text = lowered.text
            validation = self.validator.validate(text, f"round-{number:03d}", seed_base=1000 * number)
        else:
            text = ""
            validation = Validation(format_error=(lowered.error if lowered is not None else record.get("error"))
                                    or "no candidate")
        best_time = self.best.time_s if self.best else None
        got = reward(validation, best_time)
        kept = self._keeps(validation)
        record.update(text=text, diff=_diff(current, text), validation=validation.as_dict(),
                      reward={"total": got.total, "parts": got.parts}, kept=kept)
        if kept:
            self.best = Best(text, validation.time_s, number, True)
        record["best_time_s"] = self.best.time_s if self.best else None
        evaluation = icrl.evaluate(self.records[1:] + [record])
        update = self.planner.learn(evaluation, [record])
        record["icrl"] = {"evaluation": update.evaluation, "critique": update.critique, "policy": update.policy}
        record["tokens"] = _delta(before, self.planner.spent())
        record["seconds"] = time.monotonic() - started
        self.store.append(record)
        self.planner.commit(record)
        if kept:
            self.store.save_best(text)
        self.records.append(record)
        self.progress(self._line(record))

    def _keeps(self, v: Validation) -> bool:
        """Keep a validated candidate that is faster than the best (or the first validated one
        when nothing is timed, or when the best so far was not validated)."""
        if not v.validated:
            return False
        if self.best is None or not self.best.validated:
            return True
        if v.time_s is None or self.best.time_s is None:
            return False
        return v.time_s < self.best.time_s

    # ---- progress -----------------------------------------------------------------------
    def _line(self, record: dict[str, Any]) -> str:
        v = record.get("validation") or {}
        plan = record.get("plan") or {}
        what = "baseline" if record["round"] == 0 else (plan.get("proposal") or {}).get("optimization", "no plan")
        params = " ".join(f"{k}={v}" for k, v in sorted((plan.get("parameters") or {}).items()))
        time_s = (v.get("profile") or {}).get("time_s") if v.get("validated") else None
        timing = f" {time_s * 1e6:.1f} µs" if time_s else ""
        if time_s and self.reference_time_s:
            timing += f" ({self.reference_time_s / time_s:.2f}x the reference)"
        tokens = sum(int(e.get("prompt_tokens", 0) + e.get("completion_tokens", 0))
                     for e in (record.get("tokens") or {}).values())
        return (f"round {record['round']}/{self.rounds}: {what} {params} -> {v.get('stage', 'not run')}{timing}; "
                f"reward {record['reward']['total']:+.2f}" + ("; kept" if record.get("kept") else "")
                + (f"; {tokens} tokens" if tokens else "") + f" [{record.get('seconds', 0):.1f} s]")


def _diff(old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), "best.py",
                                        "candidate.py", n=2))


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for role, entry in after.items():
        prior = before.get(role, {})
        out[role] = {k: v - prior.get(k, 0) for k, v in entry.items()}
    return out
