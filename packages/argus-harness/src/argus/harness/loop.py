"""The loop of §6: planner -> selector -> lowering agent -> validator -> keep the fastest
validated kernel -> reward -> ICRL, one round at a time, each round stored before the next.

Round 0 validates the task's initial kernel (the baseline). Whatever fails inside a round —
the planner, its reply, the format check, the validation, the learning — is that round's
outcome: it is recorded as a failed round with the error and its reward, and the run goes on.
A run taken up again (same ``--out``) reads its finished rounds, restores the best kernel, the
planner's policy and its learning, records a round the run died in as failed (so that a
candidate that kills the harness is never played again), and goes on from the next round.
"""

from __future__ import annotations

import difflib
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


ERROR_LIMIT = 2000
"""The longest error text a round records."""


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
        stopped = self.store.unfinished(len(self.records))
        if self.records:
            self.planner.restore(self.records[1:])
            if self.best is not None:  # a kill between a round's record and best.py leaves the file behind
                self.store.save_best(self.best.text)
            self.progress(f"resuming {self.store.directory}: rounds 0-{len(self.records) - 1} are on disk")
        if stopped is not None:
            record = {"round": stopped, "icrl": None, "tokens": {}, "seconds": 0.0}
            self._fail(record, f"round {stopped} stopped without a result: the run was killed or crashed during it; "
                               "it is recorded as failed so that taking the run up again does not repeat it")
            self._store(record)

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
            with self._under_way(0):
                self._baseline()
        while len(self.records) <= self.rounds:
            with self._under_way(len(self.records)):
                self._round(len(self.records))
        return self.records

    @contextmanager
    def _under_way(self, number: int) -> Iterator[None]:
        """Mark round `number` as under way: a run that dies in it (killed, or crashed past the
        round's own handling) finds the mark when taken up again and records the round as failed
        rather than playing it again. A deliberate stop (an interrupt, a store that cannot be
        written) removes the mark: that round is done again."""
        self.store.begin(number)
        try:
            yield
        except BaseException:
            self.store.forget()
            raise

    def _baseline(self) -> None:
        started = time.monotonic()
        initial = self.task.initial
        if initial is None:
            record = {"round": 0, "text": "", "validation": None, "reward": {"total": 0.0, "parts": {}},
                      "kept": False, "note": "no initial kernel: the planner writes the first one"}
        else:
            record = {"round": 0, "text": initial.text, "reward": {"total": 0.0, "parts": {}}, "kept": True}
            v = self._validate(initial.text, record)
            record.update(validation=v.as_dict(),
                          note="the task's initial kernel" + ("" if v.validated else f" (not validated: {v.stage})"))
        record.update(seconds=time.monotonic() - started, tokens={})
        self._store(record)

    def _history(self) -> list[dict[str, Any]]:
        out = []
        for r in self.records[1:]:
            plan = r.get("plan") or {}
            out.append({"round": r["round"], "optimization": (plan.get("proposal") or {}).get("optimization", "?"),
                        "parameters": plan.get("parameters"), "stage": (r.get("validation") or {}).get("stage", "?"),
                        "reward": r["reward"]["total"]})
        return out

    def _observation(self, number: int) -> Observation:
        last = self.records[-1]
        feedback = None
        if last.get("error"):
            feedback = last["error"]
        elif last.get("validation") is not None:
            feedback = Validation.from_dict(last["validation"]).feedback()
        current = self.best.text if self.best is not None else ""
        return Observation(self.task, number, self.rounds, current, self.best.time_s if self.best else None,
                           self.reference_time_s, feedback, self._history(), self.planner.policy())

    def _round(self, number: int) -> None:
        """One round; whatever fails in it (the planner, its reply, the format check, the
        validation) is recorded as this round's failure, with the error, and the run goes on."""
        started = time.monotonic()
        before = self.planner.spent()
        record: dict[str, Any] = {"round": number}
        try:
            self._play(self._observation(number), record)
        except Exception as err:  # noqa: BLE001 - a round's failure is its outcome, never the run's
            self._fail(record, f"round {number} failed: {_described(err)}")
        self._learn(record)
        record["tokens"] = _delta(before, self.planner.spent())
        record["seconds"] = time.monotonic() - started
        self._store(record)

    def _play(self, obs: Observation, record: dict[str, Any]) -> None:
        proposals: list[Any] = []
        plan = lowered = None
        try:
            proposals = self.planner.propose(obs)
            plan = select(proposals, random.Random(f"{self.seed}:{obs.round}:select"))
            lowered = self.planner.lower(plan, obs)
        except Exception as err:  # noqa: BLE001 - the planner's failure is this round's
            record["error"] = f"planning failed: {_described(err) if not isinstance(err, HarnessError) else err}"
        record["proposals"] = [p.as_dict() for p in proposals]
        record["plan"] = plan.as_dict() if plan is not None else None
        if lowered is not None and lowered.text is not None:
            text = lowered.text
            validation = self._validate(text, record)
        else:
            text = ""
            validation = Validation(format_error=(lowered.error if lowered is not None else record.get("error"))
                                    or "no candidate")
        got = reward(validation, self.best.time_s if self.best else None)
        record.update(text=text, diff=_diff(obs.current, text), validation=validation.as_dict(),
                      reward={"total": got.total, "parts": got.parts}, kept=self._keeps(validation))

    def _validate(self, text: str, record: dict[str, Any]) -> Validation:
        """The validation of round `record`'s candidate; a validator that raises refuses the
        candidate with the error (a text deep enough to exhaust the stack, say)."""
        number = record["round"]
        try:
            return self.validator.validate(text, f"round-{number:03d}", seed_base=1000 * number)
        except Exception as err:  # noqa: BLE001 - the failure is this candidate's outcome
            record["error"] = f"the candidate could not be validated: {_described(err)}"
            return Validation(format_error=record["error"])

    def _fail(self, record: dict[str, Any], error: str) -> None:
        """Make `record` a failed round: refused with `error`, never kept (the baseline stays the
        kernel to improve, unvalidated)."""
        baseline = record["round"] == 0
        initial = self.task.initial
        validation = Validation(format_error=error)
        got = reward(validation, None)
        record.update(error=error, validation=validation.as_dict(),
                      reward={"total": 0.0, "parts": {}} if baseline else {"total": got.total, "parts": got.parts},
                      kept=baseline and initial is not None)
        record.setdefault("proposals", [])
        record.setdefault("plan", None)
        if baseline:
            record["text"] = initial.text if initial is not None else ""
        record.setdefault("text", "")
        record.setdefault("diff", "")

    def _learn(self, record: dict[str, Any]) -> None:
        """The ICRL step on `record`; a planner that fails at it leaves its policy as it was."""
        evaluation = ""
        try:
            evaluation = icrl.evaluate(self.records[1:] + [record])
            update = self.planner.learn(evaluation, [record])
            record["icrl"] = {"evaluation": update.evaluation, "critique": update.critique, "policy": update.policy}
        except Exception as err:  # noqa: BLE001 - learning is part of the round, whose outcome is recorded
            record["icrl"] = {"evaluation": evaluation, "critique": f"no update this round: {_described(err)}",
                              "policy": None}

    def _store(self, record: dict[str, Any]) -> None:
        """Record the finished round `record`, then let the planner persist what it learned."""
        kept_before = self.best
        self._account(record)
        record["best_time_s"] = self.best.time_s if self.best is not None else None
        self.store.append(record)
        if self.best is not None and self.best is not kept_before:
            self.store.save_best(self.best.text)
        if record["round"] > 0:
            try:
                self.planner.commit(record)
            except Exception as err:  # noqa: BLE001 - the round is on disk; only the planner's memory is lost
                self.progress(f"warning: round {record['round']}: the planner could not keep what it learned: "
                              f"{_described(err)}")
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
                + (f"; {str(record['error']).splitlines()[0][:200]}" if record.get("error") else "")
                + (f"; {tokens} tokens" if tokens else "") + f" [{record.get('seconds', 0):.1f} s]")


def _diff(old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True), "best.py",
                                        "candidate.py", n=2))


def _described(err: BaseException) -> str:
    """An exception in one line of at most `ERROR_LIMIT` characters: its kind and message."""
    text = f"{type(err).__name__}: {err}".replace("\n", " ")
    return text if len(text) <= ERROR_LIMIT else text[:ERROR_LIMIT - 1] + "…"


def _delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for role, entry in after.items():
        prior = before.get(role, {})
        out[role] = {k: v - prior.get(k, 0) for k, v in entry.items()}
    return out
