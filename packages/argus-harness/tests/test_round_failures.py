"""No reply crashes a run: a candidate whose 500-term comparison exhausted the checker's stack,
a validation that raises, replies whose JSON Python cannot hold (a score past a float, nesting
past the stack), a damaged line in the record of replies. Each is its round's outcome, recorded
with the error and its reward; taking the run up again replays none of them, records a round the
run died in as failed instead of playing it again, and does again a round that was interrupted."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from argus.harness import Limits, Optimizer, PlannerConfig, RecipeBook, RunStore, Validation, Validator, load_task
from argus.harness.kb import set_constants
from argus.harness.planners.llm import PLANNER
from harness_testing import DATA, Script, gemm_candidate

FIXED = set_constants(gemm_candidate(), {"BK": 8})
DEEP = gemm_candidate().replace("    tid = thread_idx.x\n", "    tid = thread_idx.x\n    if " + " + ".join(["M"] * 500)
                                + " == 7:\n        tid = thread_idx.x\n")
RAISES = FIXED + "\n# the validator raises on this one\n"


def _python(text: str) -> str:
    return f"The kernel:\n```python\n{text}```\n"


def _plan(score: str = "0.9") -> str:
    return '```json\n{"proposals": [{"optimization": "k-slice", "score": ' + score + ', "parameters": {"BK": 8}}]}\n```'


def _policy(n: int) -> str:
    return "```json\n" + json.dumps({"evaluation": f"e{n}", "critique": f"c{n}", "policy": f"policy {n}"}) + "\n```"


NESTED = "```json\n" + "[" * 100_000 + "]" * 100_000 + "\n```"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, ...]:
    """The task's outputs, probed once (the sandboxed reference run)."""
    task = load_task(str(DATA / "gemm_task.py"))
    return Validator(task, tmp_path_factory.mktemp("probe"), device="cpu", limits=Limits(60, 4096)).probe()


class _Run:
    """One run directory of the gemm task with the llm planner on a scripted endpoint. The
    kernels known to be correct (the baseline, `FIXED`) are taken as validated without a
    sandboxed run (what is tested is the loop); every other text is validated for real."""

    def __init__(self, tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch, outputs: tuple[int, ...]) -> None:
        self.task = load_task(str(DATA / "gemm_task.py"))
        self.out = tmp_path / "run"
        self.url = url
        self.validator = Validator(self.task, self.out, device="cpu", limits=Limits(seconds=60, memory_mb=4096))
        self.validator.outputs = outputs
        self.interrupt = False
        """Whether the next validation is interrupted (Ctrl-C)."""
        correct = {self.task.initial.text, FIXED}
        real = self.validator.validate

        def validate(text: str, label: str, seed_base: int = 0) -> Validation:
            if "the validator raises" in text:
                raise RecursionError("maximum recursion depth exceeded while calling a Python object")
            if self.interrupt:
                self.interrupt = False
                raise KeyboardInterrupt
            if text in correct:
                return Validation(compiled=True, invariants="proved", tests_passed=2, tests_total=2)
            return real(text, label, seed_base)

        monkeypatch.setattr(self.validator, "validate", validate)

    def optimize(self, rounds: int, lines: list[str] | None = None) -> list[dict]:
        store = RunStore(self.out)
        store.open({"task": str(self.task.path), "planner": "llm", "target": self.task.target})
        planner = PLANNER.create(PlannerConfig(self.task, self.out, RecipeBook(use_kb=False), model="scripted",
                                               base_url=self.url, api_key="test", timeout_s=5.0, retries=0))
        progress = lines.append if lines is not None else (lambda line: None)
        return Optimizer(self.task, planner, self.validator, store, rounds, progress=progress).run()


def test_failures_inside_rounds_are_their_outcomes_and_are_never_replayed(tmp_path: Path, scripted_server, outputs,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script({
        "planner": [_plan(), _plan("9" * 400), _plan("9" * 5000), _plan()],
        "lowering": [_python(DEEP), _python(RAISES), _python(FIXED), _python(FIXED)],
        "icrl": [NESTED, _policy(2), _policy(3), _policy(4)],
    })
    run = _Run(tmp_path, scripted_server(script), monkeypatch, outputs)
    lines: list[str] = []
    records = run.optimize(3, lines)

    assert [r["round"] for r in records] == [0, 1, 2, 3]
    deep = records[1]["validation"]  # once an uncaught RecursionError that ended `argus optimize`
    assert deep["stage"] in ("format", "hacks") and records[1]["reward"]["total"] == -1.0, deep
    assert records[1]["icrl"]["critique"].startswith("no update this round: the reply holds no readable")
    failed = records[2]
    assert failed["error"] == ("the candidate could not be validated: RecursionError: maximum recursion depth "
                               "exceeded while calling a Python object")
    assert failed["validation"]["stage"] == "format" and failed["reward"]["total"] == -1.0 and not failed["kept"]
    assert failed["plan"]["proposal"]["optimization"] == "revise"  # a score past a float: the plan is unreadable
    assert "could not be validated: RecursionError" in lines[2]
    assert "could not be validated: RecursionError" in script.sent("planner")[2]  # the next round is told
    assert records[3]["validation"]["validated"]
    assert records[3]["plan"]["proposal"]["optimization"] == "revise"  # an int past Python's digit limit
    assert (run.out / "best.py").read_text() == records[0]["text"]  # nothing timed: the baseline stays

    # taken up again: the rounds on disk stay as they are, none is asked for or played again
    with open(run.out / "llm.jsonl", "a") as f:
        f.write('[1, 2]\n{"key": 1, "reply": null}\n')  # lines that are JSON but no exchange
    asked = len(script.requests)
    before = (run.out / "rounds.jsonl").read_text()
    again = run.optimize(4)
    assert (run.out / "rounds.jsonl").read_text().startswith(before)
    assert [r["round"] for r in again] == [0, 1, 2, 3, 4] and again[4]["validation"]["validated"]
    assert len(script.requests) == asked + 3  # round 4's planner, lowering and icrl only
    assert all("round 4 of 4" in m for m in script.sent("planner")[asked:asked + 1])


def test_a_round_the_run_died_in_is_recorded_as_failed_not_played_again(tmp_path: Path, scripted_server, outputs,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script({"planner": [_plan()], "lowering": [_python(FIXED)], "icrl": [_policy(2)]})
    run = _Run(tmp_path, scripted_server(script), monkeypatch, outputs)
    run.optimize(0)
    RunStore(run.out).begin(1)  # the process died in round 1: killed, or crashed past any handler
    records = run.optimize(2)
    assert [r["round"] for r in records] == [0, 1, 2]
    assert "round 1 stopped without a result" in records[1]["error"] and records[1]["reward"]["total"] == -1.0
    assert records[2]["validation"]["validated"]
    assert [m for m in script.sent("planner") if "round 1 of" in m] == []  # round 1 was never asked for again
    assert "round 1 stopped without a result" in script.sent("planner")[0]


def test_an_interrupted_round_is_done_again(tmp_path: Path, scripted_server, outputs,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script({"planner": [_plan()], "lowering": [_python(FIXED)], "icrl": [_policy(1)]})
    run = _Run(tmp_path, scripted_server(script), monkeypatch, outputs)
    run.optimize(0)
    run.interrupt = True
    with pytest.raises(KeyboardInterrupt):
        run.optimize(1)
    assert not (run.out / "current.json").exists()
    records = run.optimize(1)  # round 1 played anew, its replies replayed from the record
    assert [r["round"] for r in records] == [0, 1] and "error" not in records[1]
    assert records[1]["validation"]["validated"]
    assert len(script.sent("planner")) == 1 and len(script.sent("lowering")) == 1
