"""Tasks load from files in each form, and bad ones say where and what is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from argus.harness import Limits, TaskError, Validator, load_task
from harness_testing import DATA

ROOT = Path(__file__).resolve().parents[3]


def test_a_kernel_file_with_its_example_problem_is_a_task(tmp_path: Path) -> None:
    task = load_task(f"{ROOT / 'examples' / 'gemm.py'}:gemm", target="nvptx:sm_90a")
    assert (task.form, task.example, task.family, task.target) == ("example", "gemm", "gemm", "nvptx:sm_90a")
    assert task.shapes == ({"m": 128, "n": 64, "k": 48},)
    assert [p.name for p in task.interface] == ["a", "b", "c", "M", "N", "K"]
    validator = Validator(task, tmp_path, device="cpu", limits=Limits(60, 4096))
    assert validator.probe() == (2,)
    assert validator.validate(task.initial.text, "initial").validated


def test_numpy_form_reads_sizes_and_settings() -> None:
    task = load_task(str(DATA / "gemm_task.py"))
    assert task.form == "numpy" and task.shapes == ({"M": 32, "N": 32, "K": 16},)
    assert task.initial is not None and task.initial.kernel == "gemm" and task.family == "gemm"


@pytest.mark.parametrize("text, message", [
    ("x = 1\n", "is not a task: define example_K(rng) next to kernel K, or Model, get_inputs"),
    ("def reference(a):\n    return a\ndef get_inputs():\n    return []\n", "needs an initial kernel or the kernel's signature"),
    ("ARGUS_TASK = {'kernal': 'x.py:k'}\ndef reference(a):\n    return a\ndef get_inputs():\n    return []\n",
     "ARGUS_TASK keys ['kernal'] are not known; accepted: kernel, signature"),
    ("ARGUS_TASK = {'kernel': 'missing.py:k'}\ndef reference(a):\n    return a\ndef get_inputs():\n    return []\n",
     "is not FILE.py:KERNEL of an existing file"),
    ("ARGUS_TASK = dict(kernel=1)\n", "ARGUS_TASK must be a literal dict"),
    ("ARGUS_TASK = {[1]: 2}\n", "task.py:1: ARGUS_TASK must be a literal dict"),
    ("ARGUS_TASK = {'atol': '1e-3'}\n", "task.py:1: ARGUS_TASK 'atol' is a number, got '1e-3'"),
    ("ARGUS_TASK = {'shapes': {'m': 4}}\n", "ARGUS_TASK 'shapes' is a list of size dicts"),
    ("def f(:\n", "the task file is not Python"),
])
def test_bad_task_files_say_what_is_accepted(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "task.py"
    path.write_text(text)
    with pytest.raises(TaskError) as caught:
        load_task(str(path))
    assert message in str(caught.value)
    with pytest.raises(TaskError, match="no such task file"):
        load_task(str(tmp_path / "absent.py"))


def test_a_task_with_a_signature_and_no_kernel(tmp_path: Path) -> None:
    path = tmp_path / "scale.py"
    path.write_text("N = 64\nARGUS_TASK = {'signature': 'x: Tensor[f32, \"n\"], y: Tensor[f32, \"n\"], n: int'}\n"
                    "def get_inputs():\n    import numpy as np\n    return [np.arange(N, dtype=float)]\n"
                    "def reference(x):\n    return 2 * x\n")
    task = load_task(str(path))
    assert task.initial is None and [p.text() for p in task.interface][0] == "x: Tensor[f32, 'n']"


def test_kernelbench_form_runs_the_torch_model_as_reference(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    task = load_task(str(DATA / "gemm_kernelbench.py"))
    assert task.form == "kernelbench" and task.shapes == ({"M": 32, "N": 32, "K": 16},)
    validator = Validator(task, tmp_path, device="cpu", limits=Limits(120, 8192))
    assert validator.probe() == (2,)
    validation = validator.validate(task.initial.text, "initial")
    assert validation.validated, validation.feedback()
