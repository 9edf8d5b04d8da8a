"""Attacks on the sandbox by a worker whose candidate already got code execution (`hostile_worker`
stand-ins, run after the worker confined itself): on the harness's wait (an interrupt, memory
spread over processes), on its reading of the channel (what the JSON reader cannot hold, numbers
that would take the harness forever), on what it keeps (huge texts, a huge log, a full disk),
and on the run's store (the model's exchanges, other rounds). Each must cost at most the round."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from argus.harness import Limits, Validator, load_task, sandbox
from argus.harness import validator as validator_module
from argus.harness.cli import _terminated_as_interrupt
from argus.harness.sandbox import Outcome, run_worker
from argus.harness.validator import MalformedReport, Validation, judge
from harness_testing import DATA, gemm_candidate

LIMITS = Limits(seconds=60, memory_mb=2048)


def _folder(tmp_path: Path) -> Path:
    return tmp_path / "run" / "candidates" / "round-001"


def _processes_named(token: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _gone(token: str, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while _processes_named(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _processes_named(token)


# ---- the harness's wait ------------------------------------------------------------------------
@pytest.mark.parametrize("stop", ["interrupt", "sigterm"])
def test_an_interrupt_during_a_round_kills_every_process_of_the_worker(tmp_path: Path, stop: str) -> None:
    """Ctrl-C or SIGTERM (which `argus optimize` turns into an exit) while a worker runs: the
    exception reaches the caller at once, and no process of the round is left running."""
    token = f"argus-hang-{uuid.uuid4().hex}"
    folder = _folder(tmp_path)
    signum = signal.SIGINT if stop == "interrupt" else signal.SIGTERM

    def interrupt_when_ready() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            log = folder / "worker.log"
            if log.is_file() and b"ready" in log.read_bytes() and _processes_named(token):
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signum)

    started = time.monotonic()
    threading.Thread(target=interrupt_when_ready, daemon=True).start()
    try:
        with _terminated_as_interrupt(), pytest.raises(KeyboardInterrupt if stop == "interrupt" else SystemExit):
            run_worker({"token": token}, folder, LIMITS, entry="hostile_worker:hang")
        assert time.monotonic() - started < 40
        assert _gone(token), "a process of the worker outlived the interrupt"
    finally:
        for pid in _processes_named(token):
            os.kill(pid, signal.SIGKILL)


def test_the_kill_reaches_processes_that_left_the_worker_s_session(tmp_path: Path) -> None:
    """Where the worker has no PID namespace, its keeper is a subreaper: a daemon that left the
    session (``setsid``) is still below it, and killing the round kills it too."""
    token = f"argus-daemon-{uuid.uuid4().hex}"
    ready = tmp_path / "ready"
    program = ("import ctypes, os, subprocess, sys, time\n"
               "ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)\n"  # PR_SET_CHILD_SUBREAPER
               "if os.fork() == 0:\n"
               "    os.setsid()\n"
               f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', {token!r}],"
               " start_new_session=True)\n"
               "    os._exit(0)\n"
               f"time.sleep(1); open({str(ready)!r}, 'w').close(); time.sleep(120)\n")
    keeper = subprocess.Popen([sys.executable, "-c", program], start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _processes_named(token)
        sandbox._kill(keeper)
        assert _gone(token), "a daemon of the worker outlived the kill"
    finally:
        for pid in _processes_named(token):
            os.kill(pid, signal.SIGKILL)
        keeper.kill()
        keeper.wait()


def test_the_memory_limit_holds_for_the_worker_s_processes_together(tmp_path: Path) -> None:
    """Processes each under the address-space limit, together far over the memory limit: the
    round is stopped, as one process over the limit would be."""
    limits = Limits(seconds=60, memory_mb=400)
    outcome = run_worker({"processes": 6, "mb": 200, "wait": 8}, _folder(tmp_path), limits,
                         entry="hostile_worker:hog")
    if outcome.result is not None:  # where the address-space limit leaves each process less, they may stay under it
        assert outcome.result["held_mb"] <= 400, outcome
        return
    assert "past the limit of 400 MB" in (outcome.failure or ""), outcome


# ---- reading the channel -----------------------------------------------------------------------
LINES = {
    "nesting bomb": '{"report": ' + "[" * 200_000 + "]" * 200_000 + "}",
    "deep nesting": '{"report": {"stages": {}, "x": ' + "[" * 600 + "]" * 600 + "}}",
    "number too long": '{"report": {"stages": {}, "x": ' + "9" * 5000 + "}}",
    "invalid UTF-8": '{"report": {"stages": "\xff\xfe"}}',
}


@pytest.mark.parametrize("name", sorted(LINES))
def test_a_report_the_harness_cannot_read_fails_the_round(tmp_path: Path, name: str) -> None:
    outcome = run_worker({"line": LINES[name]}, _folder(tmp_path), LIMITS, entry="hostile_worker:raw")
    assert outcome.result is None and "the worker's channel" in (outcome.failure or ""), outcome


def test_a_report_past_the_channel_s_size_is_cut_off(tmp_path: Path) -> None:
    line = '{"report": "' + "x" * (40 << 20) + '"}'
    outcome = run_worker({"line": line}, _folder(tmp_path), LIMITS, entry="hostile_worker:raw")
    assert outcome.result is None and "larger than 32 MB" in (outcome.failure or ""), outcome


def test_a_process_holding_the_channel_open_neither_hangs_the_harness_nor_outlives_the_round(tmp_path: Path) -> None:
    token = f"argus-hold-{uuid.uuid4().hex}"
    started = time.monotonic()
    outcome = run_worker({"token": token}, _folder(tmp_path), LIMITS, entry="hostile_worker:hold")
    try:
        assert outcome.result == {"held": True} and time.monotonic() - started < 30, outcome
        assert _gone(token) or "pid_namespace" in outcome.isolation["missing"]
    finally:
        for pid in _processes_named(token):
            os.kill(pid, signal.SIGKILL)


def _report(**output: Any) -> dict[str, Any]:
    measured = {"position": 2, "name": "c", "shape": [4, 4], "expected_shape": [4, 4], "atol": 1e-4, "rtol": 1e-4,
                "size": 16, "unwritten": 0, "mismatched": 0, "max_error": 0.0, "spread": 1.0,
                "reference_spread": 1.0, "value": 0.5, "digest": "d", **output}
    return {"stages": {"compile": {"ok": True, "seconds": 0.1},
                       "invariants": {"verdict": "proved", "text": "proved", "witnesses": [], "seconds": 0.1},
                       "tests": {"results": [{"shape": {"m": 4}, "seed": 0, "error": None, "outputs": [measured]}],
                                 "seconds": 0.1}}}


REQUEST = {"shapes": [{"m": 4}], "seeds": [0], "device": "cpu"}


def test_a_report_that_would_take_the_harness_forever_is_refused() -> None:
    """An output's shape of thousands of dimensions of thousands of digits each: its size would
    take the harness minutes to compute; the report is refused at once."""
    huge = [10 ** 4000] * 400
    started = time.monotonic()
    with pytest.raises(MalformedReport, match="a shape is not a list of at most"):
        judge(_report(shape=huge, expected_shape=huge, size=1), REQUEST, (2,), Validation())
    assert time.monotonic() - started < 1.0


def test_a_constant_output_without_its_value_is_refused() -> None:
    with pytest.raises(MalformedReport, match="value is missing"):
        judge(_report(spread=0.0, value=None), REQUEST, (2,), Validation())


def test_the_texts_a_report_carries_are_cut_short() -> None:
    """A compile error of megabytes would be stored with the round and sent to the planner."""
    report = {"stages": {"compile": {"ok": False, "message": "e" * (4 << 20), "seconds": 0.1}}}
    v = judge(report, REQUEST, (2,), Validation())
    assert v.compile_error is not None and len(v.compile_error) <= validator_module.TEXT_LIMIT


# ---- what the harness keeps --------------------------------------------------------------------
def test_what_the_worker_writes_stays_in_a_bounded_folder_of_its_own(tmp_path: Path) -> None:
    """Writes past the folder's size are refused; nothing the worker leaves (files, a FIFO where
    the log was, a link where the request was) reaches the harness's disk."""
    from argus.harness import isolation

    folder = _folder(tmp_path)
    outcome = run_worker({"mb": 160}, folder, Limits(60, 2048, folder_mb=64), entry="hostile_worker:fill")
    assert outcome.failure is None and outcome.result is not None, outcome
    if "folder_quota" in outcome.isolation["missing"]:
        assert isolation.supported().namespaces is not None, outcome.isolation
        return
    assert outcome.result["written_mb"] <= 64 and outcome.result["refused"], outcome.result
    assert sorted(p.name for p in folder.iterdir()) == ["request.json", "worker.log"]
    assert (folder / "worker.log").is_file() and not (folder / "request.json").is_symlink()


def test_a_huge_log_is_cut_to_its_end(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    outcome = run_worker({"mb": 6}, folder, LIMITS, entry="hostile_worker:shout")
    assert outcome.failure is None, outcome
    assert (folder / "worker.log").stat().st_size <= sandbox.LOG_BYTES + 200
    assert "cut" in (folder / "worker.log").read_text(errors="replace").splitlines()[0]


# ---- the run's store ---------------------------------------------------------------------------
@pytest.fixture
def open_run() -> Iterator[Path]:
    """A run folder every user can read, as one made with a usual umask outside a private folder."""
    made = Path(tempfile.mkdtemp(prefix="argus-open-run-", dir="/tmp"))
    made.chmod(0o755)
    try:
        yield made / "run"
    finally:
        import shutil

        shutil.rmtree(made, ignore_errors=True)


def test_the_run_s_store_is_hidden_from_the_worker(open_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's exchanges (``llm.jsonl``), the run's settings and other rounds' folders are out
    of the worker's sight; its own folder and the task remain."""
    secret = f"sk-{uuid.uuid4().hex}"
    validator = Validator(load_task(str(DATA / "gemm_task.py")), open_run, device="cpu", limits=Limits(60, 4096))
    validator.probe()
    (open_run / "llm.jsonl").write_text(f'{{"reply": "{secret}"}}\n')
    (open_run / "run.json").write_text(f'{{"key": "{secret}"}}\n')
    other = open_run / "candidates" / "round-000"
    other.mkdir(parents=True)
    (other / "request.json").write_text(secret)
    paths = [str(p) for p in (open_run / "llm.jsonl", open_run / "run.json", other / "request.json",
                              DATA / "gemm_task.py")]
    seen: list[Outcome] = []

    def peeking(request: dict[str, Any], directory: Path, limits: Limits, **kwargs: Any) -> Outcome:
        outcome = run_worker({"paths": paths, "folders": [str(open_run), str(open_run / "candidates")]}, directory,
                             limits, **{**kwargs, "entry": "hostile_worker:peek"})
        seen.append(outcome)
        return outcome

    monkeypatch.setattr(validator_module, "run_worker", peeking)
    validator.validate(gemm_candidate(), "round-001")
    outcome = seen[0]
    assert outcome.result is not None, outcome
    read, listed = outcome.result["read"], outcome.result["listed"]
    if "hidden_folders" in outcome.isolation["missing"]:
        return
    assert not [p for p, text in read.items() if secret in text], read
    assert str(DATA / "gemm_task.py") in read  # the task stays readable
    assert listed.get(str(open_run), []) in ([], ["candidates"]), listed
    assert listed.get(str(open_run / "candidates"), []) in ([], ["round-001"]), listed
