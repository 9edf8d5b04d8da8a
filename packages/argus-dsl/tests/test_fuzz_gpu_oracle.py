"""The GPU as the third oracle of the semantics fuzz (`argus.dsl.fuzzing.GpuRunner`): a device
runner runs only launches the interpreter ran without a fault, is never asked to replay a
witness, and must leave the interpreter's outputs. The plumbing and the comparison are tested
here with stand-in devices; the last tests run the real GPU where one is present."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest
from argus.dsl import ArgusError, bf16, f32, i32, to_storage
from argus.dsl.fuzzing import (
    GpuRunner,
    KernelCase,
    LaunchSpec,
    Outcome,
    check_case,
    draw_kernel,
    output_difference,
    shadow_runner,
)

COPY = '''from argus.dsl import *


@kernel(block=(32,))
def copy(src: Tensor[f32, 32], dst: Tensor[f32, 32]):
    tag(src, lambda i: (i,))
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(want, lambda v: (thread_idx.x,))
    got[0] = src[thread_idx.x]
    assert tag(got[...]) == tag(want[...]), "each thread holds its own element"
    dst[thread_idx.x] = got[0]
'''
LAUNCH = LaunchSpec((1,), (("tensor", "f32", (32,)), ("tensor", "f32", (32,))), 7)
COPY_CASE = KernelCase(COPY, "copy", (LAUNCH,))

RACY = COPY.replace("got[0] = src[thread_idx.x]", "s = make_shared((32,), f32)\n    s[thread_idx.x] = "
                    "src[thread_idx.x]\n    got[0] = s[(thread_idx.x + 1) % 32]").replace(
    "tag(want, lambda v: (thread_idx.x,))", "tag(want, lambda v: ((thread_idx.x + 1) % 32,))")
"""A read of another thread's shared element with no barrier: the interpreter faults (a race),
so what the launch leaves is not determined and no device may be held to it."""


class Device:
    """A stand-in device runner: the interpreter's outputs, then `edit` applied to them; it
    records each launch it is given."""

    checks_faults = False
    rtol = 1e-4
    atol = 1e-4

    def __init__(self, edit: Any = None, error: str | None = None) -> None:
        self.edit, self.error = edit, error
        self.calls: list[Any] = []

    def __call__(self, compiled: Any, grid: tuple[int, ...], args: list[Any], blocks: Any = None) -> Outcome:
        self.calls.append((grid, blocks))
        if blocks is not None:
            raise AssertionError("a device runner was asked to replay a witness")
        outcome = shadow_runner(compiled, grid, args)
        outcome.fault, outcome.findings = None, []  # a device reports outputs only
        if self.error is not None:
            outcome.error = self.error
        if self.edit is not None:
            self.edit(outcome.outputs)
        return outcome


# ---- the comparison -------------------------------------------------------------------------


def test_integers_must_agree_bit_for_bit() -> None:
    want = np.arange(12, dtype=np.int32).reshape(3, 4)
    got = want.copy()
    assert output_difference([want, 3], [got, 3], [i32, None], rtol=0.5, atol=0.5) is None
    got[2, 1] += 1
    text = output_difference([want, 3], [got, 3], [i32, None], rtol=0.5, atol=0.5)
    assert text is not None and "argument 0" in text and "(2, 1)" in text and "1 of 12" in text


def test_floats_agree_within_the_tolerance_and_nan_only_with_nan() -> None:
    want = np.linspace(-2, 2, 16).astype(np.float32)
    close = want + np.float32(1e-6)
    assert output_difference([want], [close], [f32], rtol=1e-4, atol=1e-4) is None
    assert output_difference([want], [close], [f32]) is not None, "no tolerance: bit for bit"
    far = want.copy()
    far[5] += 0.01
    assert "(5,)" in str(output_difference([want], [far], [f32], rtol=1e-4, atol=1e-4))
    nan_want, nan_got = want.copy(), want.copy()
    nan_want[3] = nan_got[3] = np.nan
    assert output_difference([nan_want], [nan_got], [f32], rtol=1e-4, atol=1e-4) is None
    nan_got[4] = np.nan
    assert output_difference([nan_want], [nan_got], [f32], rtol=1e-4, atol=1e-4) is not None


def test_bf16_outputs_are_compared_as_values_not_bits() -> None:
    """bf16 is held as uint16 bits on the host: one unit in the last place apart is a relative
    difference of 2⁻⁷, far apart as integers."""
    want = to_storage(np.array([1.0, -3.0, 0.5]), bf16)
    got = want.copy()
    got[1] += 1
    assert output_difference([want], [got], [bf16], rtol=1e-2, atol=0.0) is None
    assert output_difference([want], [got], [bf16], rtol=1e-3, atol=0.0) is not None


def test_a_wrong_shape_or_type_is_a_difference() -> None:
    want = np.zeros(4, np.float32)
    assert "float32[3]" in str(output_difference([want], [np.zeros(3, np.float32)], [f32]))
    assert "float64" in str(output_difference([want], [np.zeros(4, np.float64)], [f32]))


# ---- the plumbing in check_case ------------------------------------------------------------


def test_a_faithful_device_agrees() -> None:
    device = Device()
    report = check_case(COPY_CASE, runners=[shadow_runner, device])
    assert report.verdict == "proved" and not report.findings
    assert (report.device_runs, report.device_exact, report.device_skipped) == (1, 1, 0)
    assert device.calls == [((1,), None)]


def test_a_device_that_leaves_other_outputs_disagrees() -> None:
    def scribble(outputs: list[Any]) -> None:
        outputs[1][9] += 1.0

    report = check_case(COPY_CASE, runners=[shadow_runner, Device(scribble)])
    assert [f.kind for f in report.findings] == ["device-disagreement"]
    text = report.findings[0].text()
    assert "argument 1" in text and "(9,)" in text and "src[thread_idx.x]" in text


def test_rounding_within_the_tolerance_agrees_but_is_not_exact() -> None:
    def rounding(outputs: list[Any]) -> None:
        outputs[1] += np.float32(1e-6)

    report = check_case(COPY_CASE, runners=[shadow_runner, Device(rounding)])
    assert not report.findings and (report.device_runs, report.device_exact) == (1, 0)


def test_a_launch_the_interpreter_faults_on_is_not_run_on_the_device() -> None:
    device = Device()
    report = check_case(KernelCase(RACY, "copy", (LAUNCH,)), runners=[shadow_runner, device])
    fault = report.runs[0][0].fault
    assert fault is not None and fault.kind == "data-race"
    assert device.calls == [] and report.device_skipped == 1 and report.runs[0][1].skipped
    assert not [f for f in report.findings if f.kind.startswith("device")]


def test_a_device_error_is_a_finding() -> None:
    report = check_case(COPY_CASE, runners=[shadow_runner, Device(error="the GPU run failed: illegal address")])
    assert [f.kind for f in report.findings] == ["device-error"]
    assert "illegal address" in report.findings[0].message


def test_witnesses_are_replayed_on_the_interpreter_only() -> None:
    """A device has no shadow tags: a witness is the interpreter's to reproduce."""
    wrong = COPY.replace("got[0] = src[thread_idx.x]", "got[0] = src[(thread_idx.x + 1) % 32]")
    device = Device()
    report = check_case(KernelCase(wrong, "copy", (LAUNCH,)), runners=[shadow_runner, device])
    assert report.verdict == "violated" and not report.findings
    assert device.calls == [((1,), None)]  # the launch, outputs compared; no replay


def test_device_runners_alone_are_refused() -> None:
    with pytest.raises(ValueError, match="runner that checks faults"):
        check_case(COPY_CASE, runners=[Device()])


# ---- the GPU ---------------------------------------------------------------------------------


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.skipif(_cuda(), reason="a CUDA GPU is here")
def test_without_a_gpu_the_gpu_oracle_says_so() -> None:
    with pytest.raises(ArgusError, match="GPU oracle"):
        GpuRunner()


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")
def test_the_gpu_leaves_what_the_interpreter_leaves() -> None:
    report = check_case(COPY_CASE, runners=[shadow_runner, GpuRunner()])
    assert not report.findings, report.findings[0].text()
    assert (report.device_runs, report.device_exact) == (1, 1)


@pytest.mark.gpu
@pytest.mark.skipif(not _cuda(), reason="no CUDA GPU")
def test_fuzzed_kernels_agree_on_the_gpu() -> None:
    gpu = GpuRunner()
    runs = 0
    for seed in range(12):
        report = check_case(draw_kernel(random.Random(seed)), runners=[shadow_runner, gpu], solver_timeout_ms=1500)
        assert not report.findings, report.findings[0].text()
        runs += report.device_runs
    assert runs >= 6 and gpu.broken is None
