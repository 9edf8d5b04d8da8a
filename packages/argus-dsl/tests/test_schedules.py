"""Warps scheduled independently: schedules are named and reproducible, warps that go different
ways meet again, a wait that can never complete is a reported deadlock, and `argus run`
explores schedules."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from argus.dsl import KernelFault, Tensor, f32, kernel, make_shared, syncthreads, thread_idx, warp_id
from argus.dsl.machine import Schedule, schedules, using

ALL = ("round-robin", "delay-async", "random:0", "random:7")


@pytest.fixture(autouse=True)
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def test_a_schedule_is_parsed_from_its_name() -> None:
    assert Schedule.parse("random:12") == Schedule("random", 12)
    assert str(Schedule.parse("delay-async")) == "delay-async"
    for bad, message in (("eager", "unknown schedule policy 'eager'"), ("random:x", "seed is an integer"),
                         ("round-robin:3", "only the random schedule takes a seed")):
        with pytest.raises(ValueError, match=message):
            Schedule.parse(bad)


def test_schedules_to_explore_start_with_the_extremes() -> None:
    assert [str(s) for s in schedules(4, seed=5)] == ["round-robin", "delay-async", "random:5", "random:6"]


@kernel(block=(128,))
def staggered(x: Tensor[f32, 128], out: Tensor[f32, 128]):
    """Warps run loops of different lengths (warp w: w + 1 iterations), then meet at a barrier and
    read each other's results."""
    s = make_shared((128,), f32)
    t = thread_idx.x
    acc = 0.0
    for i in range(warp_id() + 1):
        acc = acc + x[t]
    s[t] = acc
    syncthreads()
    out[t] = s[127 - t]


@pytest.mark.parametrize("schedule", ALL)
def test_warps_that_leave_a_loop_at_different_times_meet_at_the_barrier(schedule: str) -> None:
    x = np.arange(128, dtype=np.float32)
    out = np.zeros(128, np.float32)
    with using(schedule):
        staggered[1](x, out)
    other = 127 - np.arange(128)
    np.testing.assert_array_equal(out, x[other] * (other // 32 + 1))


@kernel(block=(64,))
def half_barrier(out: Tensor[f32, 64]):
    s = make_shared((64,), f32)
    s[thread_idx.x] = 1.0
    if warp_id() == 0:
        syncthreads()  # warp 1 never gets here
    out[thread_idx.x] = s[thread_idx.x]


@pytest.mark.parametrize("schedule", ALL)
def test_a_barrier_part_of_the_block_never_reaches_is_reported_with_the_missing_threads(schedule: str) -> None:
    with pytest.raises(KernelFault) as info, using(schedule):
        half_barrier[1](np.zeros(64, np.float32))
    fault = info.value
    assert fault.kind == "divergent-barrier"
    assert fault.details["threads"] == list(range(32, 64))
    assert f"schedule {schedule}" in str(fault)


@kernel(block=(64,))
def exchange(out: Tensor[f32, 64]):
    """Warp 1 writes what warp 0 reads, with no barrier between: a race whichever goes first."""
    s = make_shared((64,), f32)
    if warp_id() == 1:
        s[thread_idx.x - 32] = 2.0
    if warp_id() == 0:
        out[thread_idx.x] = s[thread_idx.x]


@pytest.mark.parametrize("schedule", ALL)
def test_a_race_between_warps_is_found_whichever_runs_first(schedule: str) -> None:
    with pytest.raises(KernelFault, match=r"data-race|uninitialized-read") as info, using(schedule):
        exchange[1](np.zeros(64, np.float32))
    if info.value.kind == "data-race":
        assert f"schedule {schedule}" in str(info.value)


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "argus.dsl", "run", *args], capture_output=True, text=True, cwd=cwd,
                          env={"ARGUS_CACHE_DIR": "off", "ARGUS_VERIFY": "0", "PATH": "/usr/bin:/bin",
                               "PYTHONPATH": ":".join(sys.path)})


EXAMPLE = '''
import numpy as np
from argus.dsl import Problem, Tensor, f32, kernel, make_shared, syncthreads, thread_idx

@kernel(block=(64,))
def mirror(x: Tensor[f32, 64], out: Tensor[f32, 64]):
    s = make_shared((64,), f32)
    s[thread_idx.x] = x[thread_idx.x]
    syncthreads()
    out[thread_idx.x] = s[63 - thread_idx.x]

def example_mirror(rng):
    x = rng.standard_normal(64).astype(np.float32)
    return Problem(grid=(1,), args=(x, np.zeros(64, np.float32)), expected={1: x[::-1]})
'''


def test_argus_run_checks_the_example_under_several_schedules(tmp_path: Path) -> None:
    (tmp_path / "mirror.py").write_text(EXAMPLE)
    done = _run("mirror.py:mirror", "--schedules", "3", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = done.stdout
    for name in ("round-robin", "delay-async", "random:0"):
        assert f"under schedule {name}" in said, said


@pytest.mark.parametrize("args, message", [
    (("--schedule", "sometimes"), "--schedule: unknown schedule policy 'sometimes'"),
    (("--schedules", "0"), "--schedules takes a positive count, got 0"),
    (("--schedule", "random:1", "--schedules", "2"), "give --schedule or --schedules, not both"),
])
def test_argus_run_names_a_bad_schedule_option(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    (tmp_path / "mirror.py").write_text(EXAMPLE)
    done = _run("mirror.py:mirror", *args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr, done.stderr
