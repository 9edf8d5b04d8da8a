"""The validator agent: is a candidate a correct, verified, honest kernel, and how fast is it?

In the harness process it only reads the candidate (format, interface, reward hacks visible in
the text); everything that compiles or runs it happens in the sandboxed worker. The result is a
`Validation`, which the reward, the report and the planner's feedback are all made from.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import gpu
from .candidate import Candidate, parse_candidate
from .errors import CandidateError, TaskError
from .hacks import static_findings, tagged_positions
from .interface import check_interface
from .sandbox import Limits, run_worker
from .task import Task, task_to_dict


@dataclass
class Validation:
    """Each stage's outcome (None: not reached)."""

    format_error: str | None = None
    hacks: list[str] = field(default_factory=list)
    compiled: bool | None = None
    compile_error: str | None = None
    invariants: str | None = None
    invariant_text: str = ""
    witnesses: list[dict[str, Any]] = field(default_factory=list)
    tests_passed: int = 0
    tests_total: int = 0
    test_failures: list[str] = field(default_factory=list)
    profile: dict[str, Any] | None = None
    failure: str | None = None
    device: str = ""
    seconds: float = 0.0

    @property
    def validated(self) -> bool:
        """Compiled, invariants proved, every test passed, no hack found (and, where it was
        profiled, correct at the bench shape)."""
        return (self.format_error is None and not self.hacks and bool(self.compiled) and self.invariants == "proved"
                and self.tests_total > 0 and self.tests_passed == self.tests_total and self.failure is None
                and (self.profile is None or bool(self.profile.get("ok"))))

    @property
    def time_s(self) -> float | None:
        if self.validated and self.profile and self.profile.get("ok"):
            return float(self.profile["time_s"])
        return None

    @property
    def stage(self) -> str:
        """The first stage that failed, or ``validated``."""
        if self.format_error is not None:
            return "format"
        if self.failure is not None:
            return "sandbox"
        if self.hacks and self.compiled is None:  # seen in the text: never run
            return "hacks"
        if not self.compiled:
            return "compile"
        if self.invariants == "violated":
            return "invariants"
        if self.tests_passed < self.tests_total or self.tests_total == 0:
            return "tests"
        if self.hacks:
            return "hacks"
        if self.invariants != "proved":
            return "invariants"
        if self.profile is not None and not self.profile.get("ok"):
            return "profile"
        return "validated"

    def feedback(self) -> str:
        """What the planner and the lowering agent are told about this candidate."""
        stage = self.stage
        if stage == "format":
            return f"refused before compiling (not in the accepted format): {self.format_error}"
        if stage == "sandbox":
            return f"the sandboxed run failed: {self.failure}"
        if stage == "compile":
            return f"did not compile: {self.compile_error}"
        if stage == "invariants":
            return f"invariant check {self.invariants}:\n{self.invariant_text}"
        if stage == "tests":
            return f"tests: {self.tests_passed}/{self.tests_total} passed; " + "; ".join(self.test_failures[:3])
        if stage == "hacks":
            return "rejected as reward hacking: " + "; ".join(self.hacks)
        if stage == "profile":
            return f"incorrect at the bench shape: {self.profile.get('message') if self.profile else ''}"
        timing = f"; {self.profile['time_s'] * 1e6:.1f} µs at {self.profile['shape']}" if self.time_s else ""
        return f"validated: invariants proved, {self.tests_passed}/{self.tests_total} tests passed{timing}"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(validated=self.validated, stage=self.stage)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Validation:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


class Validator:
    """Validates candidates of one task into one run directory."""

    def __init__(self, task: Task, directory: Path, *, device: str = "auto", limits: Limits | None = None,
                 seeds: int = 2, timing: dict[str, Any] | None = None) -> None:
        self.task = task
        self.directory = directory
        self.gpu = gpu.available() if device == "auto" else device == "gpu"
        self.limits = limits or Limits(gpu=self.gpu)
        if self.limits.gpu != self.gpu:
            self.limits = Limits(self.limits.seconds, self.limits.memory_mb, self.gpu)
        self.seeds = seeds
        self.timing = timing or {}
        self.outputs: tuple[int, ...] = ()
        initial = task.initial
        self.kept_tags = tagged_positions(initial) if initial is not None else frozenset()
        self.kept_assertions = initial.assertions if initial is not None else 0

    @property
    def device(self) -> str:
        return gpu.name() if self.gpu else "interpreter"

    def probe(self) -> tuple[int, ...]:
        """Run the task's reference once (sandboxed) and learn which arguments are outputs."""
        outcome = run_worker({"probe": True, "task": task_to_dict(self.task)}, self.directory / "probe", self.limits)
        if outcome.result is None or "outputs" not in outcome.result:
            detail = outcome.failure or (outcome.result or {}).get("error", {}).get("message", "")
            raise TaskError(f"the task's reference could not run: {detail}\n{outcome.stderr[-1500:]}")
        self.outputs = tuple(outcome.result["outputs"])
        if not self.outputs:
            raise TaskError(f"{self.task.path}: the reference reads back no argument of the kernel")
        return self.outputs

    def check(self, text: str) -> Candidate:
        """The static half: format and interface (raises `CandidateError`)."""
        candidate = parse_candidate(text, "candidate.py")
        check_interface(candidate, self.task.interface, self.outputs)
        return candidate

    def validate(self, text: str, label: str, seed_base: int = 0) -> Validation:
        """Validate `text`; `label` names its folder in the run directory, `seed_base` picks fresh
        inputs for this validation."""
        try:
            candidate = self.check(text)
        except CandidateError as err:
            return Validation(format_error=str(err))
        hacks = static_findings(candidate, self.kept_tags, self.kept_assertions)
        if hacks:
            return Validation(hacks=hacks)
        request = {"task": task_to_dict(self.task), "candidate": text, "target": self.task.target,
                   "device": "gpu" if self.gpu else "cpu", "shapes": list(self.task.shapes),
                   "seeds": [seed_base + i for i in range(self.seeds)], "bench_shape": self.task.bench_shape,
                   "timing": self.timing}
        folder = self.directory / "candidates" / label
        request["work_dir"] = str(folder)
        outcome = run_worker(request, folder, self.limits)
        validation = Validation(device=self.device, seconds=outcome.seconds)
        if outcome.result is None:
            validation.failure = outcome.failure
            return validation
        return _read(outcome.result, validation)


def _read(result: dict[str, Any], v: Validation) -> Validation:
    stages = result.get("stages", {})
    if "error" in result:
        v.failure = f"the worker failed: {result['error']['message']}"
    compile_ = stages.get("compile")
    if compile_ is not None:
        v.compiled = bool(compile_["ok"])
        v.compile_error = compile_.get("message")
    invariants = stages.get("invariants")
    if invariants is not None:
        v.invariants = invariants["verdict"]
        v.invariant_text = invariants["text"]
        v.witnesses = invariants.get("witnesses", [])[:4]
    tests = stages.get("tests")
    if tests is not None:
        v.tests_passed, v.tests_total = tests["passed"], tests["total"]
        v.test_failures = [f"shape {t['shape']} seed {t['seed']}: {t['message']}" for t in tests["results"]
                           if not t["passed"]]
    v.hacks = list(stages.get("hacks", []))
    profile = stages.get("profile")
    if profile is not None:
        if profile.get("hack"):
            v.hacks.append(profile["hack"])
        v.profile = profile
    return v


def text_digest(text: str) -> str:
    """A short, stable name for a candidate's text."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]
