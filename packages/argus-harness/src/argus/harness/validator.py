"""The validator agent: is a candidate a correct, verified, honest kernel, and how fast is it?

In the harness process it only reads the candidate (format, interface, reward hacks visible in
the text); everything that compiles or runs it happens in the confined worker. The worker
reports measurements on a channel it cannot forge from its folder; the verdict (compiled,
proved, tests passed, hacks, time) is derived from them here, and a report that is malformed or
contradicts itself or its request is that round's failure. The result is a `Validation`, which
the reward, the report and the planner's feedback are all made from.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import gpu
from .candidate import Candidate, parse_candidate
from .errors import CandidateError, TaskError
from .hacks import SOURCE, source_invariants, static_findings
from .interface import check_interface
from .invariants import IR, Invariants, invariant_findings
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
    kernel_invariants: dict[str, Any] | None = None
    """The invariants the compiled candidate states, as the worker read them off it (held
    against the task's: a dropped or weakened one is a reward hack)."""
    isolation: dict[str, Any] = field(default_factory=dict)
    """How the worker was confined: its user, the mechanisms enforced and those missing (with
    why); empty where nothing ran."""

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
            self.limits = dataclasses.replace(self.limits, gpu=self.gpu)
        self.seeds = seeds
        self.timing = timing or {}
        self.outputs: tuple[int, ...] = ()
        self.required = Invariants()
        """The invariants the task's kernel fixes, read off it compiled (by `probe`)."""
        initial = task.initial
        self.kept_tags = source_invariants(initial) if initial is not None else Invariants(basis=SOURCE)
        """The invariants the task's kernel states in its text: what the check of a candidate's
        text holds it to before anything runs."""
        self.kept_assertions = len(self.kept_tags.assertions)
        """How many tag assertions the task's kernel reaches in its text: a floor for a candidate's."""

    @property
    def device(self) -> str:
        return gpu.name() if self.gpu else "interpreter"

    def probe(self) -> tuple[int, ...]:
        """Run the task's reference once (sandboxed) and learn which arguments are outputs, and
        the invariants the task's kernel fixes."""
        kernel = self.task.initial.text if self.task.initial is not None else None
        request = {"probe": True, "task": task_to_dict(self.task), "kernel": kernel}
        outcome = run_worker(request, self.directory / "probe", self.limits, readable=self._readable(),
                             hidden=(str(self.directory),))
        outputs = (outcome.result or {}).get("outputs")
        if outcome.result is None or not isinstance(outputs, list):
            detail = outcome.failure or (outcome.result or {}).get("error", {}).get("message", "")
            raise TaskError(f"the task's reference could not run: {detail}\n{outcome.stderr[-1500:]}")
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in outputs):
            raise TaskError(f"the task's probe reported outputs that are not argument positions: {outputs!r}")
        self.outputs = tuple(outputs)
        if not self.outputs:
            raise TaskError(f"{self.task.path}: the reference reads back no argument of the kernel")
        try:
            self.required = Invariants.from_dict(outcome.result.get("invariants"))
        except ValueError as err:
            raise TaskError(f"the task's probe reported no readable invariants: {err}") from None
        if self.required.basis != IR:
            raise TaskError(f"the task's probe read invariants {self.required.basis!r}, not off the compiled kernel")
        if not self.required and (self.kept_tags or self.kept_assertions):
            raise TaskError(f"{self.task.path}: the probe read no invariants off the task's kernel, whose text states "
                            "some: candidates would be held to none")
        return self.outputs

    def _readable(self) -> tuple[str, ...]:
        """What the worker must read beyond its interpreter: the task file, with the files beside
        it where its folder is open to everyone (a task may read them)."""
        path = self.task.path.resolve()
        return (str(path.parent if path.parent.stat().st_mode & 0o005 == 0o005 else path),)

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
        outcome = run_worker(request, self.directory / "candidates" / label, self.limits, readable=self._readable(),
                             hidden=(str(self.directory),))
        validation = Validation(device=self.device, seconds=outcome.seconds, isolation=outcome.isolation)
        if outcome.result is None:
            validation.failure = outcome.failure
            return validation
        try:
            return judge(outcome.result, request, self.outputs, validation, self.required)
        except MalformedReport as err:
            return Validation(device=self.device, seconds=outcome.seconds, isolation=outcome.isolation,
                              failure=_cut(f"the worker's report was refused: {err}"))


class MalformedReport(ValueError):
    """A worker's report that is not made as `worker` makes it, or that contradicts itself or
    its request: the round fails, it never yields a verdict."""


VERDICTS = ("proved", "violated", "unknown")
STAGES = ("compile", "invariants", "tests", "profile")
#: The longest text of a report kept (a compile error, the checker's text): it is stored with the
#: round and sent to the planner.
TEXT_LIMIT = 8000
#: The most dimensions an output's shape has, and the largest size of one.
MAX_DIMS, MAX_DIM = 16, 1 << 48


def judge(report: dict[str, Any], request: dict[str, Any], outputs: Sequence[int], v: Validation,
          required: Invariants | None = None) -> Validation:
    """The verdict of the worker's `report` on `request`, derived here from its measurements:
    compiled, the invariants' verdict and whether the compiled kernel keeps the `required`
    ones (the task's), which tests passed (of the request's shapes x seeds, in order, none after
    a failure), the reward hacks a run shows, the profile. `outputs`: the task's output
    positions. Raises `MalformedReport`."""
    stages = _field(report, "stages", dict, "the report")
    extra = set(stages) - set(STAGES)
    if extra:
        raise MalformedReport(f"unknown stages {sorted(extra)}")
    if "error" in report:
        error = _field(report, "error", dict, "the report")
        v.failure = _cut(f"the worker failed: {_field(error, 'message', str, 'its error')}")
    finished = v.failure is None  # a report cut short by the worker's own error need not reach the end
    reached = [name for name in STAGES if name in stages]
    if reached != list(STAGES[:len(reached)]):
        raise MalformedReport(f"stages {reached} skip one")

    if "compile" not in stages:
        if finished:
            raise MalformedReport("no compile stage")
        return v
    compile_ = stages["compile"]
    v.compiled = _field(compile_, "ok", bool, "compile")
    message = _field(compile_, "message", str, "compile", optional=True)
    v.compile_error = _cut(message) if message is not None else None
    _seconds(compile_, "compile")
    if not v.compiled:
        _ends(stages, "compile", "it did not compile")
        return v

    if "invariants" not in stages:
        if finished:
            raise MalformedReport("no invariants stage after compiling")
        return v
    invariants = stages["invariants"]
    v.invariants = _field(invariants, "verdict", str, "invariants")
    if v.invariants not in VERDICTS:
        raise MalformedReport(f"invariants verdict {v.invariants!r} is not one of {', '.join(VERDICTS)}")
    v.invariant_text = _cut(_field(invariants, "text", str, "invariants"))
    witnesses = _field(invariants, "witnesses", list, "invariants")
    if not all(isinstance(w, dict) for w in witnesses):
        raise MalformedReport("invariants: a witness is not an object")
    v.witnesses = witnesses[:4]
    found = _field(invariants, "kernel_invariants", dict, "invariants", optional=not required)
    if found is not None:
        v.kernel_invariants = _kernel_invariants(found).as_dict()
    if required:
        v.hacks.extend(invariant_findings(required, _kernel_invariants(found or {})))
    _seconds(invariants, "invariants")
    if v.invariants == "violated":
        _ends(stages, "invariants", "an invariant is violated")
        return v

    if "tests" not in stages:
        if finished:
            raise MalformedReport("no tests stage after the invariants")
        return v
    tests = stages["tests"]
    _seconds(tests, "tests")
    planned = [(shape, seed) for shape in request["shapes"] for seed in request["seeds"]]
    results = _field(tests, "results", list, "tests")
    if len(results) > len(planned):
        raise MalformedReport(f"{len(results)} test results for {len(planned)} tests")
    v.tests_total = len(planned)
    runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for n, (result, (shape, seed)) in enumerate(zip(results, planned)):
        where = f"test {n + 1}"
        if not isinstance(result, dict) or result.get("shape") != shape or result.get("seed") != seed:
            raise MalformedReport(f"{where} is not shape {shape} seed {seed}, the {n + 1}th the harness asked for")
        error = _field(result, "error", str, where, optional=True)
        measured = _outputs(result, outputs, where, required=error is None)
        passed = error is None and all(_right(m) for m in measured)
        if passed:
            v.tests_passed += 1
        else:
            if n != len(results) - 1:
                raise MalformedReport(f"{where} failed, yet the tests went on")
            v.test_failures.append(_cut(f"shape {shape} seed {seed}: {error or _wrong(measured)}"))
        if measured:
            runs[(json.dumps(shape, sort_keys=True), seed)] = measured
    if finished and v.tests_passed == len(results) < len(planned):
        raise MalformedReport(f"the tests stopped after {len(results)} of {len(planned)} without a failure")
    shown = sorted(set(_constant(runs) + _independent(runs)))
    v.hacks.extend(shown)

    profiled = request.get("device") == "gpu" and v.tests_passed == v.tests_total and not shown
    if "profile" not in stages:
        if profiled and finished:
            raise MalformedReport("no profile of a GPU run whose tests all passed")
        return v
    if not profiled:
        raise MalformedReport("a profile where none is taken (no GPU, a failed test or a hack)")
    v.profile = _profile(stages["profile"], request, outputs)
    if v.profile.get("hack"):
        v.hacks.append(v.profile["hack"])
    return v


def _kernel_invariants(found: dict[str, Any]) -> Invariants:
    """The invariants the worker read off the compiled candidate, as `Invariants` (read off the
    compiled kernel: the task's are)."""
    try:
        invariants = Invariants.from_dict(found)
    except ValueError as err:
        raise MalformedReport(f"invariants: kernel_invariants {_cut(str(err), 300)}") from None
    if invariants.basis != IR:
        raise MalformedReport(f"invariants: kernel_invariants read {_cut(invariants.basis, 40)!r}, not off the "
                              "compiled kernel")
    return invariants


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    """`text`, at most `limit` characters (its end replaced by "…")."""
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _ends(stages: dict[str, Any], stage: str, why: str) -> None:
    later = [name for name in STAGES[STAGES.index(stage) + 1:] if name in stages]
    if later:
        raise MalformedReport(f"stage {later[0]} after {stage}, though {why}")


def _outputs(result: dict[str, Any], outputs: Sequence[int], where: str, *, required: bool) -> list[dict[str, Any]]:
    """A test's measured outputs, checked: exactly the task's outputs (where the probe named
    them) when the launch ran."""
    measured = _field(result, "outputs", list, where)
    for m in measured:
        _measurement(m, where)
    positions = sorted(m["position"] for m in measured)
    if outputs and (measured or required) and positions != sorted(outputs):
        raise MalformedReport(f"{where} measured arguments {positions}, not the task's outputs {sorted(outputs)}")
    return measured


def _measurement(m: Any, where: str) -> None:
    """One output's measurement, as `worker.measure_outputs` makes it, self-consistent."""
    if not isinstance(m, dict):
        raise MalformedReport(f"{where}: an output's measurement is not an object")
    where = f"{where}, output {_cut(repr(m.get('name')), 80)}"
    _count(m, "position", where)
    if len(_field(m, "name", str, where)) > 200:
        raise MalformedReport(f"{where}: the name is longer than an argument's")
    shape, expected = _field(m, "shape", list, where), _field(m, "expected_shape", list, where)
    if not all(len(s) <= MAX_DIMS and all(isinstance(d, int) and not isinstance(d, bool) and 0 <= d <= MAX_DIM
                                          for d in s) for s in (shape, expected)):
        raise MalformedReport(f"{where}: a shape is not a list of at most {MAX_DIMS} sizes up to {MAX_DIM}")
    size = _count(m, "size", where)
    if size != math.prod(expected):
        raise MalformedReport(f"{where}: size {size} is not that of shape {expected}")
    _number(m, "atol", where)
    _number(m, "rtol", where)
    unwritten, mismatched = _count(m, "unwritten", where), _count(m, "mismatched", where)
    if unwritten + mismatched > size:
        raise MalformedReport(f"{where}: {unwritten} unwritten and {mismatched} wrong elements of {size}")
    if shape != expected:
        return
    _number(m, "max_error", where, infinite=True)
    _number(m, "spread", where, infinite=True, nan=True)
    _number(m, "reference_spread", where, infinite=True, nan=True)
    if size or m.get("value") is not None:
        _number(m, "value", where, negative=True, infinite=True, nan=True)
    _field(m, "digest", str, where, optional=True)
    if unwritten:
        _index(m, "first_unwritten", shape, where)
    if mismatched:
        _index(m, "first_mismatch", shape, where)
        _number(m, "got", where, negative=True, infinite=True, nan=True)
        _number(m, "expected", where, negative=True, infinite=True, nan=True)


def _index(m: dict[str, Any], key: str, shape: list[int], where: str) -> None:
    """An element's index in an output of `shape`."""
    index = _field(m, key, list, where)
    if len(index) != len(shape) or not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < d
                                            for i, d in zip(index, shape)):
        raise MalformedReport(f"{where}: {key} is not an index of shape {shape}")


def _right(m: dict[str, Any]) -> bool:
    """An output of the right shape, every element written and within the tolerance."""
    return bool(m["shape"] == m["expected_shape"] and m["unwritten"] == 0 and m["mismatched"] == 0)


def _wrong(measured: list[dict[str, Any]]) -> str:
    """What is wrong with the first output that is."""
    m = next(m for m in measured if not _right(m))
    name = m["name"]
    if m["shape"] != m["expected_shape"]:
        return f"output {name} has shape {tuple(m['shape'])}, expected {tuple(m['expected_shape'])}"
    if m["unwritten"]:
        return (f"output {name}: {m['unwritten']} element(s) never written (still NaN), the first at "
                f"{tuple(m['first_unwritten'])}")
    return (f"output {name} differs from the reference at {tuple(m['first_mismatch'])}: got {m['got']:.6g}, expected "
            f"{m['expected']:.6g} ({m['mismatched']} element(s) beyond atol {m['atol']:.3g}, rtol {m['rtol']:.3g}; "
            f"max error {m['max_error']:.3g})")


def _constant(runs: dict[tuple[str, int], list[dict[str, Any]]]) -> list[str]:
    """An output that is one value everywhere where the reference is not."""
    return [f"constant output: {m['name']} holds {m['value']:.6g} everywhere"
            for measured in runs.values() for m in measured
            if m["shape"] == m["expected_shape"] and m["size"] > 1 and m["spread"] == 0 and m["reference_spread"] > 0]


def _independent(runs: dict[tuple[str, int], list[dict[str, Any]]]) -> list[str]:
    """Outputs identical for two different inputs of one shape: they do not depend on the inputs."""
    found = []
    by_shape: dict[str, list[list[dict[str, Any]]]] = {}
    for (shape, _), measured in runs.items():
        by_shape.setdefault(shape, []).append(measured)
    for shape, seeds in by_shape.items():
        for first, second in itertools.pairwise(seeds):
            digests = {m["position"]: m.get("digest") for m in second}
            for m in first:
                if m["size"] > 1 and m.get("digest") is not None and digests.get(m["position"]) == m["digest"]:
                    found.append(f"outputs do not depend on the inputs: argument {m['position']} is identical for "
                                 f"two seeds at shape {shape}")
    return found


#: A bench time above this that does not grow with the work is a cached or skipped result.
SCALING_FLOOR_S = 50e-6
SCALING_RATIO = 1.5


def _profile(profile: Any, request: dict[str, Any], outputs: Sequence[int]) -> dict[str, Any]:
    """The profile as the report, the loop and the reward read it, derived from the measured
    outputs at the bench shape and the measured times."""
    if not isinstance(profile, dict):
        raise MalformedReport("the profile is not an object")
    bench = request.get("bench_shape") or request["shapes"][-1]
    if profile.get("shape") != bench:
        raise MalformedReport(f"the profile is not of the bench shape {bench}")
    measured = _outputs(profile, outputs, "the profile", required=True)
    if not all(_right(m) for m in measured):
        return {"ok": False, "shape": bench, "message": f"at the bench shape {bench}: {_wrong(measured)}"}
    time_s = _number(profile, "time_s", "the profile", positive=True)
    min_s = _number(profile, "min_s", "the profile", positive=True)
    if min_s > time_s:
        raise MalformedReport(f"the profile's minimum time {min_s:g} s is above its median {time_s:g} s")
    out: dict[str, Any] = {"ok": True, "shape": bench, "time_s": time_s, "min_s": min_s}
    if "scaling" in profile:
        out["scaling"] = _field(profile, "scaling", str, "the profile")
    if "half_shape" in profile:
        half = {k: v // 2 for k, v in bench.items()}
        if profile["half_shape"] != half:
            raise MalformedReport(f"the profile's half shape is not {half}")
        half_s = _number(profile, "half_time_s", "the profile", positive=True)
        ratio, work = time_s / half_s, 2 ** len(bench)
        out.update(half_shape=half, half_time_s=half_s, scaling_ratio=ratio)
        if work >= 4 and time_s > SCALING_FLOOR_S and ratio < SCALING_RATIO:
            out["hack"] = f"timing does not scale with the work: {work}x the work took {ratio:.2f}x the time"
    if "reference_time_s" in profile:
        out["reference_time_s"] = _number(profile, "reference_time_s", "the profile", positive=True)
    return out


def _field(data: Any, key: str, kind: type, where: str, *, optional: bool = False) -> Any:
    """`data[key]`, which must be a `kind` (or absent or None where `optional`)."""
    value = data.get(key) if isinstance(data, dict) else None
    if value is None and optional:
        return None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise MalformedReport(f"{where}: {key} is {'missing' if value is None else type(value).__name__}, not "
                              f"{kind.__name__}")
    return value


def _count(data: dict[str, Any], key: str, where: str) -> int:
    value: int = _field(data, key, int, where)
    if value < 0:
        raise MalformedReport(f"{where}: {key} is negative ({value})")
    return value


def _number(data: dict[str, Any], key: str, where: str, *, positive: bool = False, negative: bool = False,
            infinite: bool = False, nan: bool = False) -> float:
    """A number of the report: finite and not negative unless allowed, above zero if `positive`."""
    value = data.get(key) if isinstance(data, dict) else None
    if not isinstance(value, int | float) or isinstance(value, bool):
        what = "missing" if value is None else type(value).__name__
        raise MalformedReport(f"{where}: {key} is {what}, not a number")
    value = float(value)
    if math.isnan(value):
        if nan:
            return value
        raise MalformedReport(f"{where}: {key} is not a number (NaN)")
    if (math.isinf(value) and not infinite) or (value < 0 and not negative) or (positive and not value > 0):
        raise MalformedReport(f"{where}: {key} is {value:g}, out of range")
    return value


def _seconds(stage: dict[str, Any], where: str) -> float:
    return _number(stage, "seconds", where)


def text_digest(text: str) -> str:
    """A short, stable name for a candidate's text."""
    return hashlib.sha256(text.encode()).hexdigest()[:12]
