"""Stand-ins for a worker whose candidate got code execution: each is run by the sandbox in place
of `argus.harness.worker.run` (after the worker confined itself, as a candidate's code would
be) and reports what it managed, for `test_security_worker` to judge."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def snoop(request: dict[str, Any]) -> dict[str, Any]:
    """Look for the harness's secret: in this environment, in the harness's and every visible
    process's ``/proc/PID/environ``, and try to open the harness's memory."""
    secret, harness = request["secret"], request["harness_pid"]
    found = [f"environ:{name}" for name, value in os.environ.items() if secret in value]
    visible = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    for pid in {harness, os.getppid(), *visible}:
        try:
            if secret.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                found.append(f"/proc/{pid}/environ")
        except OSError:
            pass
    try:
        with open(f"/proc/{harness}/mem", "rb"):
            found.append(f"/proc/{harness}/mem opened")
    except OSError:
        pass
    return {"found": found, "names": sorted(os.environ), "harness_visible": harness in visible or _alive(harness)}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def escape(request: dict[str, Any]) -> dict[str, Any]:
    """Try to write each of the request's targets (outside the folder) and one file inside it."""
    written = []
    for target in [*request["targets"], str(Path.cwd() / "inside.txt")]:
        try:
            Path(target).write_text("# written by a candidate\n")
            written.append(target)
        except OSError:
            pass
    return {"written": written}


def reach(request: dict[str, Any]) -> dict[str, Any]:
    """Try to reach the harness's machine over TCP and UDP (to send what it read)."""
    import socket

    reached = []
    try:
        with socket.create_connection(("127.0.0.1", request["tcp"]), timeout=2) as conn:
            conn.sendall(b"exfiltrated")
            reached.append("tcp")
    except OSError:
        pass
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(b"exfiltrated", ("127.0.0.1", request["udp"]))
            reached.append("udp sent")
    except OSError:
        pass
    return {"reached": reached}


def linger(request: dict[str, Any]) -> dict[str, Any]:
    """Leave a daemon behind: fork, ``setsid``, fork again, and run a sleeper named by the
    request's token; report once it runs."""
    ready = Path.cwd() / "daemon.pid"
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            sleeper = [sys.executable, "-c", "import time; time.sleep(120)", request["token"]]
            daemon = subprocess.Popen(sleeper, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL, start_new_session=True)
            ready.write_text(str(daemon.pid))
        os._exit(0)
    deadline = time.monotonic() + 20
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(ready.read_text()) if ready.exists() else 0
    return {"daemon": pid, "running": pid > 0 and _alive(pid)}


def forge(request: dict[str, Any]) -> dict[str, Any]:
    """Claim a validated, proved kernel: a result file in the folder as the harness used to read
    it, and a report of the wanted verdict instead of measurements (or, with ``exit``, no
    report at all)."""
    claim = {"stages": {"compile": {"ok": True, "seconds": 0.1},
                        "invariants": {"verdict": "proved", "text": "proved: everything", "witnesses": [],
                                       "seconds": 0.1},
                        "tests": {"passed": 2, "total": 2, "results": [], "seconds": 0.1}, "hacks": []}}
    for name in ("result.json", "result.json.part", "report.json"):
        (Path.cwd() / name).write_text(json.dumps(claim))
    if request.get("forge") == "exit":
        os._exit(0)
    return claim


def descriptors(request: dict[str, Any]) -> dict[str, Any]:
    """The descriptors this process holds, and where they lead."""
    held = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            held[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            pass
    return {"held": held}


def plant(request: dict[str, Any]) -> dict[str, Any]:
    """Write a module into the folder and try to import it, as a planted ``numpy.py`` would be."""
    (Path.cwd() / "argus_planted_module.py").write_text("PLANTED = True\n")
    try:
        import argus_planted_module  # type: ignore[import-not-found]  # noqa: F401
    except ImportError:
        imported = False
    else:
        imported = True
    return {"imported": imported, "isolated": bool(sys.flags.isolated), "no_site": bool(sys.flags.no_site),
            "path": sys.path}


def limits(request: dict[str, Any]) -> dict[str, Any]:
    """The resource limits this process runs under."""
    import resource

    return {name: resource.getrlimit(getattr(resource, name))[0]
            for name in ("RLIMIT_AS", "RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE")}


def _channel() -> int:
    """The verdict channel's descriptor: the one pipe this process holds."""
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
                return int(fd)
        except OSError:
            pass
    raise RuntimeError("no channel")


def raw(request: dict[str, Any]) -> dict[str, Any]:
    """Write the request's text on the channel as the report line, unchecked, and exit (a JSON
    nesting bomb, numbers too long to read, invalid UTF-8)."""
    os.write(_channel(), request["line"].encode("latin-1") + b"\n")
    os._exit(0)


def hog(request: dict[str, Any]) -> dict[str, Any]:
    """Hold memory in several processes, each under the address-space limit, together over the
    memory limit; report after a while if nothing stopped it."""
    children = []
    read_end, write_end = os.pipe()
    for _ in range(request["processes"]):
        pid = os.fork()
        if pid == 0:
            held = []
            try:  # as much as the address-space limit lets it hold, in pieces of 10 MB
                while len(held) < request["mb"] // 10:
                    held.append(b"x" * (10 << 20))
            except MemoryError:
                pass
            finally:
                os.write(write_end, bytes([len(held)]))  # how many pieces it holds
                time.sleep(60)
                os._exit(0)  # never back into the worker, which would report on the channel
        children.append(pid)
    os.close(write_end)
    time.sleep(request["wait"])
    pieces = os.read(read_end, len(children))
    return {"processes": len(children), "held_mb": 10 * sum(pieces)}


def hang(request: dict[str, Any]) -> dict[str, Any]:
    """Start a sleeper named by the request's token, say so on the log, and never report."""
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", request["token"]],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True)
    print("ready", flush=True)
    time.sleep(120)
    return {}


def peek(request: dict[str, Any]) -> dict[str, Any]:
    """Read each of the request's paths (the run's model exchanges, another round's files)."""
    read = {}
    for path in request["paths"]:
        try:
            read[path] = Path(path).read_text()[:200]
        except OSError:
            pass
    listed = {}
    for folder in request.get("folders", []):
        try:
            listed[folder] = sorted(os.listdir(folder))
        except OSError:
            pass
    return {"read": read, "listed": listed}


def fill(request: dict[str, Any]) -> dict[str, Any]:
    """Write files of 16 MB into the folder until the request's total or a refusal; leave a FIFO
    and a link where the harness's files are."""
    written = 0
    chunk = b"x" * (16 << 20)
    try:
        for n in range(request["mb"] // 16):
            with open(f"fill-{n}", "wb") as f:
                f.write(chunk)
            written += 16
    except OSError as err:
        refused = err.strerror
    else:
        refused = None
    for name in ("worker.log", "request.json"):
        try:
            os.unlink(name)
        except OSError:
            pass
    os.mkfifo("worker.log")
    os.symlink("/etc/passwd", "request.json")
    return {"written_mb": written, "refused": refused}


def shout(request: dict[str, Any]) -> dict[str, Any]:
    """Write the request's number of MB on the log."""
    line = b"y" * 1023 + b"\n"
    for _ in range(request["mb"] << 10):
        os.write(1, line)
    return {}


def name_thread(request: dict[str, Any]) -> dict[str, Any]:
    """Name a thread through ``/proc/self/task/TID/comm``, as NVIDIA's driver does while CUDA
    starts (and fails with error 304 where it cannot)."""
    import threading

    named: dict[str, Any] = {}

    def name() -> None:
        path = f"/proc/self/task/{threading.get_native_id()}/comm"
        try:
            Path(path).write_text("argus-named")
            named["name"] = Path(path).read_text().strip()
        except OSError as err:
            named["error"] = err.strerror

    thread = threading.Thread(target=name)
    thread.start()
    thread.join()
    return named


def hold(request: dict[str, Any]) -> dict[str, Any]:
    """Leave a process, named by the request's token, holding the channel open after the report."""
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)", request["token"]])
    return {"held": True}
