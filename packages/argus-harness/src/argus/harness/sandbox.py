"""Running a candidate in a child process with limits, so that whatever it does costs only itself.

The child gets its own session (so the whole process group can be killed), a wall-clock limit,
a CPU-time limit, no core files, and a memory limit: an address-space limit
(``resource.setrlimit``, applied by the child as it starts) where no GPU is used, and a
resident-memory watch from the parent where one is (a CUDA context reserves far more address space than it uses, so an address-space limit
would refuse every GPU run).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

LIMITS_VARIABLE = "ARGUS_SANDBOX_LIMITS"


@dataclass(frozen=True)
class Limits:
    """What one candidate may spend: wall-clock seconds (the CPU-time limit is 5 s more), and
    memory in MB (address space without a GPU, resident memory with one)."""

    seconds: float = 300.0
    """Wall clock for one candidate, compile to profile."""
    memory_mb: int = 8192
    gpu: bool = False


@dataclass
class Outcome:
    """What came back: the worker's result, or why none did."""

    result: dict[str, Any] | None
    failure: str | None
    seconds: float
    stderr: str = ""


def run_worker(request: dict[str, Any], directory: Path, limits: Limits) -> Outcome:
    """Run ``argus.harness.worker`` on `request` in `directory` under `limits`."""
    directory = directory.resolve()  # the worker runs in it: a relative path would not name it there
    directory.mkdir(parents=True, exist_ok=True)
    request_path, result_path = directory / "request.json", directory / "result.json"
    result_path.unlink(missing_ok=True)
    request_path.write_text(json.dumps(request))
    env = worker_environment(directory, limits)
    started = time.monotonic()
    with open(directory / "worker.log", "w") as log:
        child = subprocess.Popen([sys.executable, "-m", "argus.harness.worker", str(request_path), str(result_path)],
                                 stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=directory,
                                 env=env, start_new_session=True)
        failure = _wait(child, limits, started)
    seconds = time.monotonic() - started
    stderr = (directory / "worker.log").read_text(errors="replace")[-3000:]
    if failure is None and child.returncode != 0:
        failure = _died(child.returncode)
    if failure is None and not result_path.is_file():
        failure = "the worker exited without a result"
    if failure is not None:
        return Outcome(None, failure, seconds, stderr)
    try:
        return Outcome(json.loads(result_path.read_text()), None, seconds, stderr)
    except json.JSONDecodeError as err:
        return Outcome(None, f"the worker's result is unreadable: {err}", seconds, stderr)


#: Variables the worker never needs and must not see: the endpoint's credentials.
PRIVATE_VARIABLES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID")


def worker_environment(directory: Path, limits: Limits) -> dict[str, str]:
    """The worker's environment: this one without the endpoint's credentials, with this
    process's import path, a compile cache next to the run, and the limits to apply."""
    env = {k: v for k, v in os.environ.items() if k not in PRIVATE_VARIABLES}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and Path(p).exists())
    env.setdefault("ARGUS_CACHE_DIR", str(directory.parent / "cache"))
    env[LIMITS_VARIABLE] = f"{int(limits.seconds) + 5},{0 if limits.gpu else limits.memory_mb}"
    return env


def apply_limits() -> None:
    """In the child, first thing: the CPU-time, core-file and (without a GPU) address-space
    limits the parent passed in ``ARGUS_SANDBOX_LIMITS`` (set here rather than between fork and
    exec, which is unsafe in a parent that runs threads)."""
    text = os.environ.get(LIMITS_VARIABLE)
    if not text:
        return
    cpu, memory_mb = (int(x) for x in text.split(","))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    if memory_mb:
        size = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (size, size))


def _wait(child: subprocess.Popen[bytes], limits: Limits, started: float) -> str | None:
    """Wait for the child; kill its process group past the time or (GPU) memory limit."""
    while True:
        try:
            child.wait(timeout=0.2)
            return None
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() - started > limits.seconds:
            _kill(child)
            return f"timed out after {limits.seconds:g} s (the candidate hangs or is far too slow)"
        if limits.gpu:
            rss = _resident_mb(child.pid)
            if rss > limits.memory_mb:
                _kill(child)
                return f"used {rss} MB of memory, past the limit of {limits.memory_mb} MB"


def _kill(child: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.wait()


def _resident_mb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError):
        pass
    return 0


def _died(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        reason = {"SIGXCPU": "its CPU time ran out", "SIGSEGV": "it crashed", "SIGKILL": "it was killed",
                  "SIGABRT": "it aborted"}.get(name, "")
        return f"the worker died of {name}" + (f": {reason}" if reason else "")
    return f"the worker exited with status {code} (out of memory or a crash: see its log)"
