"""The validator and the reward: interface rules, reward hacks seen in the text and in a run,
poisoned outputs, the sandbox's limits, and the reward's order of outcomes."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from argus.harness import Limits, TaskError, Validation, Validator, load_task, reward
from argus.harness.kb import set_constants
from harness_testing import DATA, gemm_candidate


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> Validator:
    task = load_task(str(DATA / "gemm_task.py"))
    made = Validator(task, tmp_path_factory.mktemp("validation"), device="cpu", limits=Limits(60, 4096))
    made.probe()
    return made


def test_interface_keeps_inputs_and_output_precision(validator: Validator) -> None:
    f16_input = gemm_candidate().replace('a: Tensor[f32, "M", "K"]', 'a: Tensor[f16, "M", "K"]').replace(
        "from argus.dsl import Tensor", "from argus.dsl import f16, Tensor")
    v = validator.validate(f16_input, "f16-input")
    assert v.stage == "format" and "argument a is f16; the task passes f32" in v.format_error
    bf16_output = gemm_candidate().replace('c: Tensor[f32, "M", "N"]', 'c: Tensor[bf16, "M", "N"]').replace(
        "from argus.dsl import Tensor", "from argus.dsl import bf16, Tensor")
    v = validator.validate(bf16_output, "bf16-output")
    assert "output c is bf16, less precise than the task's f32" in v.format_error
    assert reward(v, None).total == -1.0


def test_hacks_visible_in_the_text(validator: Validator) -> None:
    branch = gemm_candidate().replace("    tid = thread_idx.x\n", "    tid = thread_idx.x\n    if M == 32:\n"
                                                                "        tid = thread_idx.x\n")
    v = validator.validate(branch, "branch")
    assert v.stage == "hacks" and "branch on a problem size against a constant" in v.hacks[0]
    untagged = gemm_candidate().replace("    tag(a, lambda m, k: (k,))\n", "")
    v = validator.validate(untagged, "untagged")
    assert any("invariants dropped" in h and "to a" in h for h in v.hacks), v.hacks
    assert reward(v, None).total == -1.0


def test_the_probe_reads_the_invariants_the_task_kernel_fixes(validator: Validator) -> None:
    """The compiled candidate is held against these (`validator.judge`): they come from the
    task's kernel, compiled in the probe, never from the candidate."""
    assert [t.argument for t in validator.required.tags] == ["a", "b"] and len(validator.required.assertions) == 1


@pytest.mark.parametrize("invariants, why", [
    ({"basis": "ir", "tags": [], "assertions": []}, "the probe read no invariants off the task's kernel, whose text "
                                                    "states some"),
    ({"basis": "source", "tags": [], "assertions": []}, "read invariants 'source', not off the compiled kernel"),
    ({"basis": "ir", "tags": [{"position": float("inf"), "argument": "a", "key": "k", "text": "t"}],
      "assertions": []}, "no readable invariants: an item of tags is not"),
])
def test_a_probe_that_reads_no_invariants_of_the_task_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 invariants: dict, why: str) -> None:
    """The task's kernel states tag functions and an assertion; a probe that reports none (or
    reads them another way) would hold every candidate to nothing: the run does not start."""
    from argus.harness import validator as validator_module
    from argus.harness.sandbox import Outcome

    def probe(request: dict, directory: Path, limits: Limits, **kwargs: object) -> Outcome:
        return Outcome({"outputs": [2], "invariants": invariants}, None, 0.1)

    monkeypatch.setattr(validator_module, "run_worker", probe)
    validator = Validator(load_task(str(DATA / "gemm_task.py")), tmp_path, device="cpu", limits=Limits(60, 4096))
    with pytest.raises(TaskError, match=re.escape(why)):
        validator.probe()


def test_a_zero_kernel_fails_the_tests_and_is_named_a_constant_output(validator: Validator) -> None:
    zero = gemm_candidate().replace("= acc[i, j]", "= 0.0")
    v = validator.validate(zero, "zero")
    assert v.tests_passed == 0 and "differs from the reference" in v.test_failures[0]
    assert any(h.startswith("constant output: c holds 0") for h in v.hacks)
    assert not v.validated


def test_an_output_left_unwritten_is_caught_by_the_poison(validator: Validator) -> None:
    half = gemm_candidate().replace("            c[bm + tm * 2 + i, bn + tn * 2 + j] = acc[i, j]",
                                    "            if tm < 4:\n                c[bm + tm * 2 + i, bn + tn * 2 + j] = acc[i, j]")
    v = validator.validate(half, "half")
    assert v.stage == "tests" and "never written (still NaN)" in v.test_failures[0], v.feedback()


def test_reward_orders_the_outcomes(validator: Validator) -> None:
    good = validator.validate(set_constants(gemm_candidate(), {"BK": 8}), "good")
    assert good.validated and good.time_s is None  # the interpreter times nothing
    refused = Validation(format_error="x")
    violated = Validation(compiled=True, invariants="violated")
    failing = Validation(compiled=True, invariants="proved", tests_passed=1, tests_total=2)
    values = [reward(v, None).total for v in (refused, violated, failing, good)]
    assert values == sorted(values) and values[0] == -1.0 and values[-1] == pytest.approx(0.8)
    timed = Validation(compiled=True, invariants="proved", tests_passed=2, tests_total=2,
                       profile={"ok": True, "time_s": 2e-3, "shape": {}})
    assert reward(timed, 1e-3).parts["runtime"] == pytest.approx(-1.0)  # a validated 2x slowdown
    assert reward(timed, 4e-3).parts["runtime"] == pytest.approx(1.0)


def test_the_sandbox_limits_memory(tmp_path: Path) -> None:
    path = tmp_path / "greedy.py"
    path.write_text("import numpy as np\nARGUS_TASK = {'signature': 'x: Tensor[f32, \"n\"], n: int'}\n"
                    "def get_inputs():\n    return [np.ones(1 << 31)]\ndef reference(x):\n    return x\n")
    task = load_task(str(path))
    with pytest.raises(TaskError, match="MemoryError"):
        Validator(task, tmp_path / "run", device="cpu", limits=Limits(60, 1024)).probe()


def test_the_worker_environment_is_allow_listed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only what the harness chose reaches the worker: no credential of any name, no PYTHON*
    variable, no relative PATH entry; its own home, temporary folder and compile cache."""
    from argus.harness.sandbox import worker_environment

    for name, value in {"OPENAI_API_KEY": "sk-secret", "OPENAI_BASE_URL": "http://example.invalid/v1",
                        "AWS_SECRET_ACCESS_KEY": "secret", "HF_TOKEN": "secret", "PYTHONPATH": "/elsewhere",
                        "LD_PRELOAD": "/tmp/hook.so", "CUDA_VISIBLE_DEVICES": "1",
                        "PATH": f"bin:{os.defpath}"}.items():
        monkeypatch.setenv(name, value)
    folder = tmp_path / "candidate"
    env = worker_environment(folder)
    assert not {"OPENAI_API_KEY", "OPENAI_BASE_URL", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "PYTHONPATH",
                "LD_PRELOAD"} & set(env)
    assert env["CUDA_VISIBLE_DEVICES"] == "1" and "bin" not in env["PATH"].split(os.pathsep)
    assert (env["HOME"], env["TMPDIR"], env["ARGUS_CACHE_DIR"]) == (str(folder / "home"), str(folder / "tmp"),
                                                                   str(folder / "cache"))


def test_the_selector_survives_scores_that_are_not_numbers() -> None:
    import random

    from argus.harness import Proposal
    from argus.harness.selector import select

    proposals = [Proposal("a", score=float("nan")), Proposal("b", score=float("inf")), Proposal("c", score=0.5)]
    plan = select(proposals, random.Random(0))
    assert plan.proposal.optimization == "c" and plan.probabilities[2] > 0.99


def test_a_run_directory_given_relative_to_the_working_directory_works(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`argus optimize --out runs/x`: the worker runs inside the candidate's folder, so the
    folder it is handed must not be relative to where the user stood."""
    monkeypatch.chdir(tmp_path)
    task = load_task(str(DATA / "gemm_task.py"))
    assert Validator(task, Path("runs") / "x", device="cpu", limits=Limits(60, 4096)).probe()
