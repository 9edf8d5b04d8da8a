"""Running a candidate in a confined child process, so that whatever it does costs only itself.

The worker starts from an emptied folder, as an isolated interpreter (``-I -S -B``: nothing
from its folder, the environment's ``PYTHON*`` or a ``.pth`` file is read; the harness passes
its import path), with an allow-listed environment, stdin on ``/dev/null`` and no descriptor
but its log and the verdict channel; it confines itself further first thing (`isolation`).

It has its own session, a wall-clock limit and a memory limit: an address-space limit per
process where no GPU is used (a CUDA context reserves far more address space than it uses), and
in every case a watch from here on the resident memory of all its processes together. Past a
limit, or when the harness itself is stopped (an interrupt, SIGTERM), every process of the
worker is killed, those that left its session included.

The worker's measurements come back on a pipe the harness created, never through a file: its
folder is the candidate's to write. The channel carries two lines of JSON: what the worker's
confinement enforced (sent before the candidate is read) and, at the end, its report. A line
the harness cannot read (invalid UTF-8, numbers too long, nesting deeper than a report has) is
the round's failure, never the harness's.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from . import isolation

#: The function the confined worker calls with the request: ``module:function``.
WORKER_ENTRY = "argus.harness.worker:run"
#: The request's file in the worker's folder (written by the harness before the worker starts).
REQUEST = "request.json"
#: The most the verdict channel may carry, and the deepest nesting of its messages.
CHANNEL_BYTES = 32 << 20
CHANNEL_DEPTH = 32
#: The most of the worker's log kept once it is over (its end).
LOG_BYTES = 1 << 20
#: What the isolated interpreter runs: the harness's import path, then the worker's main.
BOOTSTRAP = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); "
             "from argus.harness.worker import main; sys.exit(main(sys.argv[2:]))")
#: What the harness enforces itself, before the worker starts.
HARNESS_MECHANISMS = ("environment", "isolated_python", "descriptors", "fresh_folder")


@dataclass(frozen=True)
class Limits:
    """What one candidate may spend: wall-clock seconds (the CPU-time limit is 5 s more), and
    memory in MB (address space per process without a GPU; resident memory of all its
    processes together in every case), and what it may write in its folder."""

    seconds: float = 300.0
    """Wall clock for one candidate, compile to profile."""
    memory_mb: int = 8192
    gpu: bool = False
    folder_mb: int = isolation.FOLDER_MB
    """The size of the worker's folder, where its mount namespace gives it one of its own."""


@dataclass
class Outcome:
    """What came back: the worker's report, or why none did, and how it was confined."""

    result: dict[str, Any] | None
    failure: str | None
    seconds: float
    stderr: str = ""
    isolation: dict[str, Any] = field(default_factory=dict)


def run_worker(request: dict[str, Any], directory: Path, limits: Limits, *, readable: tuple[str, ...] = (),
               hidden: tuple[str, ...] | None = None, entry: str = WORKER_ENTRY) -> Outcome:
    """Run the worker on `request` in `directory` (emptied first) under `limits`. `readable`:
    files the worker must read beyond its interpreter and import path (the task file);
    `hidden`: folders the worker must not see but for its own folder and `readable` (the run's
    store; default: the folder holding `directory`, where the other workers' folders are);
    `entry`: the function the confined worker calls (tests pass hostile stand-ins here)."""
    # absolute (the worker runs in it), but the folder itself not followed if it is a link
    directory = directory.absolute().parent.resolve() / directory.name
    _empty(directory)
    (directory / REQUEST).write_text(json.dumps(request))
    path = import_path(directory)
    hidden = (str(directory.parent),) if hidden is None else tuple(str(Path(h).absolute()) for h in hidden)
    plan = isolation.plan_for(directory, seconds=limits.seconds, memory_mb=limits.memory_mb, gpu=limits.gpu,
                              readable=[*path, *_prefixes(), *readable], hidden=hidden, folder_mb=limits.folder_mb,
                              carried=[REQUEST])
    harness = list(HARNESS_MECHANISMS)
    if isolation.close_harness():
        harness.append("harness_not_dumpable")
    read_end, write_end = os.pipe()
    started = time.monotonic()
    try:
        with open(directory / "worker.log", "w+b") as log:
            try:
                child = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-B", "-c", BOOTSTRAP, json.dumps(path), str(write_end), entry,
                     plan.to_json()],
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=directory,
                    env=worker_environment(directory), start_new_session=True, close_fds=True,
                    pass_fds=(write_end,))
            finally:
                os.close(write_end)
            try:
                received, failure = _collect(child, read_end, limits, started)
            except BaseException:  # an interrupt or SIGTERM: the round ends with every process of it
                _kill(child)
                raise
            stderr = _tail(log)
            _keep_end(log, LOG_BYTES)
    finally:
        os.close(read_end)
    seconds = time.monotonic() - started
    messages, problem = _messages(received)
    record = _confinement(messages.get("isolation"))
    record = {**record, "enforced": [*harness, *record["enforced"]]}
    if failure is None and child.returncode != 0:
        failure = _died(child.returncode)
    if failure is None and problem is not None:
        failure = problem
    if failure is None and "report" not in messages:
        failure = "the worker exited without a report"
    if failure is not None:
        return Outcome(None, failure, seconds, stderr, record)
    return Outcome(messages["report"], None, seconds, stderr, record)


def _confinement(message: Any) -> dict[str, Any]:
    """The worker's confinement record as `isolation.Record.as_dict` makes it; a record of
    nothing enforced where the worker sent none, or none of that form."""
    if (isinstance(message, dict) and isinstance(message.get("user"), str)
            and isinstance(message.get("enforced"), list) and all(isinstance(n, str) for n in message["enforced"])
            and isinstance(message.get("missing"), dict)
            and all(isinstance(v, str) for v in message["missing"].values())):
        return {"user": message["user"], "enforced": message["enforced"], "missing": message["missing"]}
    return {"user": "", "enforced": [], "missing": {"worker": "the worker did not report its confinement"}}


def _empty(directory: Path) -> None:
    """The worker's folder, empty: nothing a candidate left there in an earlier attempt at this
    round (a planted module, a cache entry, a link) survives into this one. A link in the
    folder's place is removed, never followed (emptying its target would empty a folder the
    candidate chose)."""
    if directory.is_symlink() or directory.is_file():
        directory.unlink()
    elif directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)


def import_path(directory: Path) -> list[str]:
    """The worker's import path: this process's absolute entries that exist, none inside the
    folder that holds the workers' folders (where candidates write)."""
    found = []
    for entry in sys.path:
        if not entry or not os.path.isabs(entry) or not os.path.exists(entry):
            continue
        if Path(entry).resolve().is_relative_to(directory.parent) or entry in found:
            continue
        found.append(entry)
    return found


def _prefixes() -> list[str]:
    """The interpreter's own folders (its standard library and shared libraries)."""
    return sorted({sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                   os.path.dirname(os.path.realpath(sys.executable)), os.path.dirname(sys.executable)})


#: Variables the worker gets from the harness's environment when they are set: locale, and what
#: finds and picks the GPU and its tools. Nothing else passes (no credentials, no PYTHON*).
PASSED_VARIABLES = (
    "LANG", "LC_ALL", "LC_CTYPE", "TZ",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_LAUNCH_BLOCKING",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "LD_LIBRARY_PATH",
    "ROCM_PATH", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
    "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS",
    "ARGUS_SOLVER", "ARGUS_DISABLE_PLUGINS", "ARGUS_LAUNCH_BLOCKING",
    "ARGUS_PTXAS", "ARGUS_CUOBJDUMP", "ARGUS_NVDISASM", "ARGUS_LD_LLD",
)
#: The worker's own folders, by the variable that names them (made by the worker once confined).
OWN_FOLDERS = {"HOME": "home", "TMPDIR": "tmp", "ARGUS_CACHE_DIR": "cache"}
#: Variables naming lists of folders: only absolute entries pass (a relative one would be read
#: in the candidate's folder).
PATH_VARIABLES = ("PATH", "LD_LIBRARY_PATH")


def worker_environment(directory: Path) -> dict[str, str]:
    """The worker's environment, allow-listed: `PASSED_VARIABLES` that are set here, ``PATH``,
    and its own ``HOME``, temporary folder and compile cache inside `directory` (a cache shared
    between rounds would let one candidate plant entries that a later one loads)."""
    env = {name: os.environ[name] for name in PASSED_VARIABLES if name in os.environ}
    env["PATH"] = os.environ.get("PATH", os.defpath)
    for name in PATH_VARIABLES:
        if name in env:
            env[name] = os.pathsep.join(p for p in env[name].split(os.pathsep) if os.path.isabs(p))
    env.setdefault("LANG", "C.UTF-8")
    env.update({variable: str(directory / name) for variable, name in OWN_FOLDERS.items()})
    return env


def _collect(child: subprocess.Popen[bytes], channel: int, limits: Limits, started: float) -> tuple[bytes, str | None]:
    """Read the verdict channel until it closes (or the worker is gone); kill the worker past
    the time or memory limit."""
    received = bytearray()
    os.set_blocking(channel, False)
    while True:
        ready, _, _ = select.select([channel], [], [], 0.2)
        if ready:
            data = _read(channel)
            if data is None:
                break
            received += data
            if len(received) > CHANNEL_BYTES:
                _kill(child)
                return bytes(received), f"the worker's report is larger than {CHANNEL_BYTES >> 20} MB"
        elif child.poll() is not None:  # gone, and a descendant may hold the channel: take what is there
            received += _drain(channel)
            break
        if time.monotonic() - started > limits.seconds:
            _kill(child)
            return bytes(received), f"timed out after {limits.seconds:g} s (the candidate hangs or is far too slow)"
        rss = _resident_mb(child.pid)
        if rss > limits.memory_mb:
            _kill(child)
            return bytes(received), f"used {rss} MB of memory, past the limit of {limits.memory_mb} MB"
    try:
        child.wait(timeout=max(1.0, limits.seconds - (time.monotonic() - started)))
    except subprocess.TimeoutExpired:
        _kill(child)
        return bytes(received), f"timed out after {limits.seconds:g} s (the candidate hangs or is far too slow)"
    return bytes(received), None


def _read(channel: int) -> bytes | None:
    """What is there to read (None at the end of the channel)."""
    try:
        data = os.read(channel, 1 << 16)
    except BlockingIOError:
        return b""
    return data or None


def _drain(channel: int) -> bytes:
    out = bytearray()
    while (data := _read(channel)):
        out += data
    return bytes(out)


def _messages(received: bytes) -> tuple[dict[str, Any], str | None]:
    """The channel's messages by kind, and what is wrong with them: exactly one line of
    confinement, then at most one report, each a JSON object of one key."""
    lines = received.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    messages: dict[str, Any] = {}
    for number, (line, kind) in enumerate(zip(lines, ("isolation", "report")), 1):
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as err:  # ValueError: bad JSON, bad UTF-8, too long a number
            return messages, f"the worker's channel is unreadable at message {number}: {str(err)[:200]}"
        if _depth(message) > CHANNEL_DEPTH:
            return messages, (f"the worker's channel is unreadable at message {number}: nested deeper than "
                              f"{CHANNEL_DEPTH} levels")
        if not isinstance(message, dict) or list(message) != [kind] or not isinstance(message[kind], dict):
            return messages, (f"the worker's channel holds an unexpected message {number} "
                              f"(expected {{{kind!r}: {{...}}}})")
        messages[kind] = message[kind]
    if len(lines) > 2 or (lines and not received.endswith(b"\n")):
        return messages, "the worker's channel holds more than its confinement and one report"
    return messages, None


def _depth(value: Any) -> int:
    """How deep lists and objects nest in `value` (walked without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((inner, level + 1) for inner in (item.values() if isinstance(item, dict) else item))
    return deepest


def _tail(log: IO[bytes], size: int = 3000) -> str:
    """The end of the worker's log, read through the harness's own descriptor (the file's name
    in the folder may since name something else)."""
    log.flush()
    end = log.seek(0, os.SEEK_END)
    log.seek(max(0, end - size))
    return log.read().decode(errors="replace")


def _keep_end(log: IO[bytes], size: int) -> None:
    """Cut the log to its last `size` bytes, through the harness's own descriptor: a worker
    that writes gigabytes costs the disk that much only while it runs."""
    end = log.seek(0, os.SEEK_END)
    if end <= size:
        return
    log.seek(end - size)
    kept = log.read(size)
    log.seek(0)
    log.truncate()
    log.write(f"[the first {end - size} bytes of the log are cut]\n".encode() + kept)
    log.flush()


def _kill(child: subprocess.Popen[bytes]) -> None:
    """Kill every process of the worker: its process group, and every process below it (those
    that left its session are still below its keeper, a subreaper, or die with its PID
    namespace); the worker itself last, so that orphans come back to it meanwhile."""
    for _ in range(100):  # a process forking as it is killed: its children are found next time
        below = _descendants(child.pid)
        if not below:
            break
        for pid in below:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    child.kill()
    child.wait()


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (by ``/proc``)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    below: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in below:
                below.add(child)
                frontier.append(child)
    return below


def _resident_mb(pid: int) -> int:
    """Resident memory of `pid` and every process under it, in MB."""
    return sum(_own_resident_kb(p) for p in {pid, *_descendants(pid)}) // 1024


def _own_resident_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
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
