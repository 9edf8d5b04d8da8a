"""The offline planner end to end on the interpreter, through ``argus optimize``: rounds recorded,
the report written, the policy learned and kept across runs, a run killed with SIGKILL taken
up again without playing the round it died in again, and paths relative to where it runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from argus.dsl.cli import main as argus
from argus.harness import PlannerConfig, RecipeBook, load_task
from argus.harness.planners.search import SearchPlanner
from harness_testing import DATA, tile_recipe


def _command(out: Path, policy: Path, rounds: int) -> list[str]:
    return [str(DATA / "gemm_task.py"), "--rounds", str(rounds), "--out", str(out), "--planner", "search",
            "--recipes", str(DATA / "recipes.py"), "--no-kb", "--device", "cpu", "--policy", str(policy),
            "--timeout", "60"]


def test_argus_optimize_offline_on_the_interpreter(tmp_path: Path, capsys) -> None:
    out, policy = tmp_path / "run", tmp_path / "policy.json"
    assert argus(["optimize", *_command(out, policy, 3)]) == 0
    printed = capsys.readouterr().out
    assert "round 0/3: baseline" in printed and "round 3/3: tile-shape" in printed
    records = [json.loads(line) for line in (out / "rounds.jsonl").read_text().splitlines()]
    assert [r["round"] for r in records] == [0, 1, 2, 3]
    tried = {json.dumps(r["plan"]["parameters"], sort_keys=True) for r in records[1:]}
    assert len(tried) == 3  # the search never proposes a point twice
    for r in records[1:]:
        assert r["validation"]["validated"], r["validation"]
        assert r["validation"]["invariants"] == "proved" and r["validation"]["tests_passed"] == 2
        assert r["reward"]["total"] > 0 and r["proposals"] and r["diff"].startswith("---")
        assert r["icrl"]["policy"].startswith("Search policy for interp|gemm")
    report = (out / "report.md").read_text()
    assert "checked for correctness on the interpreter only" in report
    assert "| 3 | tile-shape |" in report and "## Final kernel" in report
    page = (out / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<td>tile-shape</td>" in page and "<pre><code>" in page
    assert "<svg" not in page  # nothing was timed: nothing to draw
    assert (out / "best.py").read_text() == records[0]["text"]  # nothing timed: the baseline stays
    # the policy persists across runs and tasks: a new run's planner starts from it
    task = load_task(str(DATA / "gemm_task.py"))
    fresh = SearchPlanner(PlannerConfig(task, tmp_path / "other", RecipeBook([tile_recipe()], use_kb=False),
                                        policy_path=policy))
    assert "recipe:tile-shape: +0.600 over 3" in fresh.policy()  # 3 rewards of +0.8 and the prior's 0


def test_a_run_killed_with_sigkill_resumes_without_playing_the_round_it_died_in(tmp_path: Path) -> None:
    """A kill cannot be told from a crash of the harness, which the same round would cause again:
    the round under way is recorded as failed and the run goes on after it."""
    out, policy = tmp_path / "run", tmp_path / "policy.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    command = [sys.executable, "-m", "argus.harness.cli", *_command(out, policy, 4)]
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
    rounds = out / "rounds.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and child.poll() is None:
        if rounds.is_file() and len(rounds.read_text().splitlines()) >= 2:
            break
        time.sleep(0.05)
    assert child.poll() is None, child.stdout.read().decode() if child.stdout else ""
    os.killpg(child.pid, signal.SIGKILL)  # the run and its sandboxed worker, mid-round
    child.wait()
    before = rounds.read_text().splitlines()
    assert 2 <= len(before) < 5

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming" in done.stdout
    after = rounds.read_text().splitlines()
    records = [json.loads(line) for line in after]
    assert [r["round"] for r in records] == [0, 1, 2, 3, 4]
    assert after[:len(before)] == before  # the rounds finished before the kill are kept as they were
    stopped = [r for r in records if "stopped without a result" in (r.get("error") or "")]
    assert len(stopped) <= 1  # the round under way at the kill (none when the kill fell between two)
    for record in stopped:
        assert record["round"] == len(before) and not record["kept"] and record["reward"]["total"] == -1.0
        assert record["validation"]["stage"] == "format" and record["plan"] is None
    assert all(r["validation"]["validated"] for r in records if r not in stopped)
    applied = json.loads(policy.read_text())["applied"]
    assert len(applied) == 4 - len(stopped) == len(set(applied))  # each round played credited to the policy once
    assert (out / "report.md").is_file()


def test_relative_paths_work_from_any_directory(tmp_path: Path, monkeypatch) -> None:
    """``argus optimize TASK --out runs/x`` with paths relative to where it runs: the sandboxed
    worker runs in each candidate's folder, where those paths would name nothing."""
    from argus.harness.cli import main

    monkeypatch.chdir(tmp_path)
    task, recipes = (os.path.relpath(DATA / name, tmp_path) for name in ("gemm_task.py", "recipes.py"))
    assert main([task, "--rounds", "1", "--out", "runs/x", "--planner", "search", "--recipes", recipes, "--no-kb",
                 "--device", "cpu", "--policy", "policy.json", "--timeout", "60"]) == 0
    records = [json.loads(line) for line in (tmp_path / "runs" / "x" / "rounds.jsonl").read_text().splitlines()]
    assert [r["validation"]["stage"] for r in records] == ["validated", "validated"], records[0]["validation"]
    assert (tmp_path / "policy.json").is_file() and (tmp_path / "runs" / "x" / "report.md").is_file()


def test_limits_that_would_not_hold_are_refused(tmp_path: Path, capsys) -> None:
    from argus.harness.cli import main

    for option, value in (("--memory-mb", "0"), ("--timeout", "0"), ("--seeds", "0")):
        assert main([*_command(tmp_path / "run", tmp_path / "policy.json", 1), option, value]) == 2
        assert f"error: {option} takes a number >= " in capsys.readouterr().err
    assert not (tmp_path / "run").exists()
