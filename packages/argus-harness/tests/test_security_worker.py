"""The worker's confinement and the verdict channel, tested with hostile stand-ins for a worker
whose candidate got code execution (`hostile_worker`, run by the sandbox in place of the
worker's measurements, after the worker confined itself).

Each attack must fail; where this machine lacks the mechanism that stops it, the confinement
record must name that mechanism as missing (never a silent pass)."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from argus.harness import Limits, Validator, isolation, load_task, sandbox
from argus.harness import validator as validator_module
from argus.harness.sandbox import Outcome, run_worker
from argus.harness.validator import MalformedReport, Validation, judge
from harness_testing import DATA, gemm_candidate

LIMITS = Limits(seconds=60, memory_mb=2048)


def _run(tmp_path: Path, stand_in: str, request: dict[str, Any] | None = None, limits: Limits = LIMITS) -> Outcome:
    outcome = run_worker(request or {}, tmp_path / "run" / "candidates" / "round-001", limits,
                         entry=f"hostile_worker:{stand_in}")
    assert outcome.failure is None, (outcome.failure, outcome.stderr)
    assert outcome.result is not None
    return outcome


def _stopped_or_reported(outcome: Outcome, attack_worked: bool, *mechanisms: str) -> None:
    """The attack failed, or every mechanism that would have stopped it is reported missing."""
    if attack_worked:
        missing = outcome.isolation["missing"]
        assert all(m in missing for m in mechanisms), (outcome.result, outcome.isolation)


def test_the_worker_cannot_read_the_harness_secret(tmp_path: Path) -> None:
    """A harness started with an API key in its environment: the worker sees neither the key in
    its own environment nor the harness's ``/proc/PID/environ`` or memory."""
    secret = f"sk-{uuid.uuid4().hex}"
    program = (f"import json, os, sys; sys.path[:0] = {json.dumps(sys.path)}; from pathlib import Path; "
               "from argus.harness.sandbox import run_worker, Limits; "
               f"o = run_worker({{'secret': {secret!r}, 'harness_pid': os.getpid()}}, "
               f"Path({str(tmp_path / 'run' / 'candidates' / 'round-001')!r}), Limits(60, 2048), "
               "entry='hostile_worker:snoop'); "
               "print(json.dumps({'result': o.result, 'failure': o.failure, 'isolation': o.isolation}))")
    env = {**os.environ, "OPENAI_API_KEY": secret, "AWS_SECRET_ACCESS_KEY": secret, "GITHUB_TOKEN": secret}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.splitlines()[-1])
    assert outcome["failure"] is None, outcome
    found = outcome["result"]["found"]
    assert not [f for f in found if f.startswith("environ:")], found  # the allow-list holds in any case
    if found:
        assert {"pid_namespace", "user"} <= set(outcome["isolation"]["missing"]), outcome
    assert set(outcome["result"]["names"]) <= {*sandbox.PASSED_VARIABLES, "PATH", "HOME", "TMPDIR", "ARGUS_CACHE_DIR"}
    assert "harness_not_dumpable" in outcome["isolation"]["enforced"]


def test_the_worker_writes_only_in_its_folder(tmp_path: Path) -> None:
    """Home, /tmp, a site-packages ``.pth`` (run by every later Python start), the run's folder
    beside the round's: none is writable; the round's own folder is."""
    token = uuid.uuid4().hex
    packages = Path(site.getsitepackages()[0]) if site.getsitepackages() else Path(sys.prefix)
    targets = [Path.home() / f".argus-{token}", Path("/tmp") / f"argus-{token}", packages / f"argus-{token}.pth",
               tmp_path / "run" / f"beside-{token}.txt", Path("/dev/shm") / f"argus-{token}"]
    try:
        outcome = _run(tmp_path, "escape", {"targets": [str(t) for t in targets]})
        written = outcome.result["written"]
        assert written[-1].endswith("inside.txt"), written
        outside = [w for w in written if not w.endswith("inside.txt")]
        _stopped_or_reported(outcome, bool(outside), "read_only_mounts", "landlock")
        assert not outside or "user" in outcome.isolation["missing"]
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


def test_the_worker_reaches_no_network(tmp_path: Path) -> None:
    """Nothing the worker sends over TCP or UDP arrives, even on this machine's loopback."""
    import socket

    with socket.socket() as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        tcp.bind(("127.0.0.1", 0))
        tcp.listen()
        udp.bind(("127.0.0.1", 0))
        outcome = _run(tmp_path, "reach", {"tcp": tcp.getsockname()[1], "udp": udp.getsockname()[1]})
        tcp.setblocking(False)
        udp.setblocking(False)
        arrived = [kind for kind, sock in (("tcp", tcp), ("udp", udp)) if _pending(sock)]
    _stopped_or_reported(outcome, bool(arrived), "network_namespace")
    assert "tcp" not in arrived or "landlock_network" in outcome.isolation["missing"], arrived


def _pending(sock: Any) -> bool:
    try:
        if sock.type == 1:  # SOCK_STREAM: a connection waits to be accepted
            sock.accept()[0].close()
        else:
            sock.recv(64)
    except BlockingIOError:
        return False
    return True


def test_no_process_of_the_worker_outlives_its_round(tmp_path: Path) -> None:
    """A daemon (double fork, ``setsid``, its own session) is gone once the round is over."""
    token = f"argus-daemon-{uuid.uuid4().hex}"
    outcome = _run(tmp_path, "linger", {"token": token})
    assert outcome.result["running"], outcome.result
    survivors = _processes_named(token)
    try:
        _stopped_or_reported(outcome, bool(survivors), "pid_namespace")
        assert not survivors or "subreaper" not in outcome.isolation["enforced"]
    finally:
        for pid in survivors:
            os.kill(pid, 9)


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


def test_the_worker_holds_no_descriptor_of_the_harness(tmp_path: Path) -> None:
    """A descriptor the harness left inheritable does not reach the worker: it holds its stdin
    (/dev/null), its log and the verdict channel."""
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    leaked = os.open(secret, os.O_RDONLY)
    os.set_inheritable(leaked, True)
    try:
        held = _run(tmp_path, "descriptors").result["held"]
    finally:
        os.close(leaked)
    assert held["0"] == "/dev/null" and held["1"].endswith("worker.log") and held["2"] == held["1"]
    assert not [target for target in held.values() if "secret" in target], held
    assert sum(1 for target in held.values() if target.startswith("pipe:")) == 1, held


def test_a_module_planted_in_the_folder_is_not_imported(tmp_path: Path) -> None:
    """The worker is an isolated interpreter: its folder is not on its import path and no
    ``.pth`` file runs in it."""
    result = _run(tmp_path, "plant").result
    assert not result["imported"] and result["isolated"] and result["no_site"], result
    assert not [p for p in result["path"] if p in ("", ".") or p.startswith(str(tmp_path / "run"))], result["path"]


def test_the_folder_is_emptied_before_each_run(tmp_path: Path) -> None:
    """What a candidate left in its folder (a module, a cache entry) is gone when the round is
    run again."""
    folder = tmp_path / "run" / "candidates" / "round-001"
    folder.mkdir(parents=True)
    (folder / "numpy.py").write_text("raise SystemExit('planted')\n")
    planted = folder / "cache" / "96" / "96planted.mlir"
    planted.parent.mkdir(parents=True)
    planted.write_text("builtin.module {}")
    _run(tmp_path, "descriptors")
    assert not (folder / "numpy.py").exists() and not planted.exists()


def test_a_link_in_the_folder_s_place_is_not_followed(tmp_path: Path) -> None:
    """A link planted where a round's folder goes is replaced, and what it points to is left
    alone (emptying it would empty a folder of the candidate's choosing)."""
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "keep.txt").write_text("keep")
    folder = tmp_path / "run" / "candidates" / "round-001"
    folder.parent.mkdir(parents=True)
    folder.symlink_to(precious)
    _run(tmp_path, "descriptors")
    assert (precious / "keep.txt").read_text() == "keep" and not folder.is_symlink() and folder.is_dir()


def test_a_gpu_run_keeps_its_devices_and_has_no_address_space_limit(tmp_path: Path) -> None:
    """With ``gpu``, the worker still starts, without an address-space limit; it may write the
    GPU's device files, and is given a device's group where the device is not open to
    everyone (never root's group)."""
    outcome = _run(tmp_path, "limits", limits=Limits(seconds=60, memory_mb=2048, gpu=True))
    assert outcome.result["RLIMIT_AS"] == -1 and outcome.result["RLIMIT_CORE"] == 0
    plan = isolation.plan_for(tmp_path, seconds=10, memory_mb=512, gpu=True, readable=[])
    assert plan.memory_mb == 0 and plan.devices == ["/dev/null", *isolation.gpu_devices()]

    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    for name in ("nvidia0", "nvidiactl", "nvidia-uvm", "null"):
        (dev / name).write_text("")
    assert isolation.gpu_devices(dev) == [str(dev / n) for n in ("nvidia-caps", "nvidia-uvm", "nvidia0", "nvidiactl")]
    if os.geteuid() == 0:  # only root can give the files other groups
        os.chown(dev / "nvidia0", -1, 44)
        os.chown(dev / "nvidiactl", -1, 0)
    for name in ("nvidia0", "nvidiactl"):
        (dev / name).chmod(0o660)
    user = isolation._identity(isolation.Plan(str(tmp_path), devices=[str(dev / "nvidia0"), str(dev / "nvidiactl")]),
                               True, True)
    assert user is not None and 0 not in user[1] and (os.geteuid() != 0 or 44 in user[1]), user


def test_the_worker_names_its_threads_as_a_gpu_driver_does(tmp_path: Path) -> None:
    """CUDA's driver writes its threads' names under ``/proc/self/task`` while it starts and
    fails (error 304) where it cannot: the worker's own ``/proc`` takes them, where it has one
    and is not uid 0."""
    outcome = _run(tmp_path, "name_thread", limits=Limits(seconds=60, memory_mb=2048, gpu=True))
    missing = outcome.isolation["missing"]
    if "read_only_mounts" in missing or outcome.isolation["user"] == "root":
        return
    assert outcome.result == {"name": "argus-named"}, (outcome.result, outcome.isolation)


def test_argus_optimize_says_what_isolation_this_machine_offers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    """At the start of a run, one line says what confines the workers here, and a warning names
    each mechanism this machine lacks, with why; none is left unsaid."""
    from argus.harness.cli import main

    no_landlock = isolation.Support(True, None, 0, "Landlock is not enabled at boot (lsm=...,landlock)")
    monkeypatch.setattr(isolation, "supported", lambda: no_landlock)
    assert main([str(DATA / "gemm_task.py"), "--planner", "search", "--rounds", "0", "--device", "cpu",
                 "--out", str(tmp_path / "run")]) == 0
    out, err = capsys.readouterr()
    assert "worker isolation: its own PID, mount, network and IPC namespaces; the user nobody" in out
    assert "warning: worker isolation lacks landlock (Landlock is not enabled at boot (lsm=...,landlock))" in err
    offered, missing = isolation.summary(isolation.Support(False, "user namespaces are disabled "
                                                                  "(user.max_user_namespaces = 0)", 6, None))
    assert offered == ["Landlock (ABI 6)"] and missing == {
        "namespaces": "user namespaces are disabled (user.max_user_namespaces = 0)",
        "user": "the harness is not root: the worker keeps its user"}


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> Validator:
    made = Validator(load_task(str(DATA / "gemm_task.py")), tmp_path_factory.mktemp("security"), device="cpu",
                     limits=Limits(60, 4096))
    made.probe()
    return made


def test_the_confinement_is_recorded_with_the_validation(validator: Validator) -> None:
    """Each validation that ran says how its worker was confined: enforced and missing
    mechanisms, each missing one with its reason."""
    v = validator.validate(gemm_candidate(), "round-000")
    assert v.validated, v.feedback()
    record = v.as_dict()["isolation"]
    assert {"environment", "isolated_python", "descriptors", "fresh_folder"} <= set(record["enforced"])
    assert set(isolation.WORKER_MECHANISMS) <= {*record["enforced"], *record["missing"]}, record
    assert all(isinstance(reason, str) and reason for reason in record["missing"].values())
    support = isolation.supported()
    if support.landlock is not None:
        assert record["missing"]["landlock"] == support.landlock
    if support.namespaces is not None:
        assert record["missing"]["pid_namespace"] == support.namespaces


@pytest.mark.parametrize("forge", ["exit", "claim"])
def test_a_forged_result_has_no_effect_on_the_verdict(validator: Validator, monkeypatch: pytest.MonkeyPatch,
                                                      forge: str) -> None:
    """A worker that writes ``result.json`` (and more) in its folder claiming "validated, proved,
    2/2" and exits, or that reports the claim instead of measurements: the round fails, -1."""
    from argus.harness import reward

    def forging(request: dict[str, Any], directory: Path, limits: Limits, **kwargs: Any) -> Outcome:
        return run_worker({**request, "forge": forge}, directory, limits, **{**kwargs, "entry": "hostile_worker:forge"})

    monkeypatch.setattr(validator_module, "run_worker", forging)
    v = validator.validate(gemm_candidate(), f"forged-{forge}")
    assert not v.validated and v.stage == "sandbox" and v.invariants is None and v.tests_passed == 0, v.as_dict()
    assert reward(v, None).total == -1.0
    assert ("exited without a report" if forge == "exit" else "report was refused") in (v.failure or "")
    forged = (validator.directory / "candidates" / f"forged-{forge}" / "result.json").exists()
    assert forged == ("folder_quota" in v.isolation["missing"])  # written in its own folder, or on disk but not read


def _report(passed: int = 2, **changes: Any) -> dict[str, Any]:
    """A well-made report of two passing tests at one shape, with `changes` to its parts."""
    def output() -> dict[str, Any]:
        return {"position": 2, "name": "c", "shape": [4, 4], "expected_shape": [4, 4], "atol": 1e-4, "rtol": 1e-4,
                "size": 16, "unwritten": 0, "mismatched": 0, "max_error": 1e-6, "spread": 3.0,
                "reference_spread": 3.0, "value": 0.5, "digest": uuid.uuid4().hex}

    results = [{"shape": {"m": 4}, "seed": seed, "error": None, "outputs": [output()]} for seed in (0, 1)]
    for result in results[passed:]:
        result["outputs"][0].update(mismatched=3, first_mismatch=[0, 1], got=1.0, expected=2.0)
    report = {"stages": {"compile": {"ok": True, "seconds": 0.1},
                         "invariants": {"verdict": "proved", "text": "proved", "witnesses": [], "seconds": 0.1,
                                        "kernel_invariants": None},
                         "tests": {"results": results[:passed + 1], "seconds": 0.2}}}
    for path, value in changes.items():
        *parents, last = path.split(".")
        node: Any = report
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value
    return report


REQUEST = {"shapes": [{"m": 4}], "seeds": [0, 1], "device": "cpu"}


def test_the_verdict_is_derived_from_the_measurements() -> None:
    v = judge(_report(), REQUEST, (2,), Validation())
    assert v.validated and v.tests_passed == v.tests_total == 2
    failed = judge(_report(passed=1), REQUEST, (2,), Validation())
    assert failed.tests_passed == 1 and failed.tests_total == 2 and not failed.validated
    assert "differs from the reference at (0, 1): got 1, expected 2 (3 element(s)" in failed.test_failures[0]
    constant = judge(_report(**{"stages.tests.results.0.outputs.0.spread": 0.0}), REQUEST, (2,), Validation())
    assert constant.hacks == ["constant output: c holds 0.5 everywhere"] and not constant.validated


@pytest.mark.parametrize("changes, why", [
    ({"stages.tests.passed": 2, "stages.tests.results": []}, "stopped after 0 of 2 without a failure"),
    ({"stages.tests.results.0.outputs.0.mismatched": 17}, "0 unwritten and 17 wrong elements of 16"),
    ({"stages.tests.results.0.outputs.0.unwritten": -1}, "unwritten is negative"),
    ({"stages.tests.results.0.seed": 7}, "is not shape {'m': 4} seed 0"),
    ({"stages.compile.seconds": -1.0}, "seconds is -1, out of range"),
    ({"stages.invariants.verdict": "true"}, "is not one of proved, violated, unknown"),
    ({"stages.compile.ok": "yes"}, "ok is str, not bool"),
    ({"stages.invariants": None}, "stages ['compile', 'tests'] skip one"),
    ({"stages.invariants": None, "stages.tests": None}, "no invariants stage after compiling"),
    ({"stages.hacks": []}, "unknown stages ['hacks']"),
    ({"stages.tests.results.0.outputs.0.position": 0}, "not the task's outputs [2]"),
    ({"stages.profile": {"shape": {"m": 4}, "time_s": 1e-3}}, "a profile where none is taken"),
])
def test_a_malformed_or_inconsistent_report_is_refused(changes: dict[str, Any], why: str) -> None:
    report = _report(**changes)
    report["stages"] = {k: v for k, v in report["stages"].items() if v is not None}
    with pytest.raises(MalformedReport, match=_escaped(why)):
        judge(report, REQUEST, (2,), Validation())


def test_the_compiled_kernel_must_keep_the_task_invariants() -> None:
    """The invariants the worker read off the compiled candidate are held against the task's:
    one dropped is a reward hack; a report without them is refused."""
    from argus.harness.invariants import ArgumentTag, Invariants, TagFunction

    required = Invariants(tags=(ArgumentTag(0, "a", TagFunction("k", "lambda m, k: (k,)")),))
    dropped = {"basis": "ir", "tags": [], "assertions": []}
    v = judge(_report(**{"stages.invariants.kernel_invariants": dropped}), REQUEST, (2,), Validation(), required)
    assert v.stage == "hacks" and not v.validated and "invariants dropped" in v.hacks[0], v.hacks
    with pytest.raises(MalformedReport, match="kernel_invariants is missing"):
        judge(_report(), REQUEST, (2,), Validation(), required)


def test_a_profile_with_impossible_times_is_refused() -> None:
    gpu_request = {**REQUEST, "device": "gpu", "bench_shape": {"m": 4, "n": 4}}
    profile = {"shape": {"m": 4, "n": 4}, "outputs": _report()["stages"]["tests"]["results"][0]["outputs"],
               "time_s": 2e-3, "min_s": 1e-3, "half_shape": {"m": 2, "n": 2}, "half_time_s": 1.9e-3}
    v = judge(_report(**{"stages.profile": profile}), gpu_request, (2,), Validation())
    assert v.profile is not None and v.profile["time_s"] == 2e-3 and v.time_s is None  # a hack: not validated
    assert any("timing does not scale" in h for h in v.hacks)
    for bad in ({"time_s": -2e-3}, {"time_s": float("nan")}, {"min_s": 3e-3}, {"time_s": float("inf")}):
        with pytest.raises(MalformedReport):
            judge(_report(**{"stages.profile": {**profile, **bad}}), gpu_request, (2,), Validation())


def _escaped(text: str) -> str:
    import re

    return re.escape(text)
