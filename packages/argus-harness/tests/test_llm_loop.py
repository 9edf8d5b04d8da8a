"""The llm planner end to end against a local OpenAI-compatible server replaying scripted
replies: a stalled reply (retried), a candidate breaking an invariant (its counterexample must
reach the next round, which recovers), one that is not valid DSL, one importing os, one that
hangs. Every round is recorded; none of them stops the run."""

from __future__ import annotations

import json
from pathlib import Path

from argus.harness import Limits, Optimizer, PlannerConfig, RecipeBook, RunStore, Validator, load_task
from argus.harness.kb import set_constants
from argus.harness.planners.llm import PLANNER
from harness_testing import DATA, Script, gemm_candidate


def _python(text: str) -> str:
    return f"Here is the kernel.\n```python\n{text}```\n"


def _plan(name: str) -> str:
    return "```json\n" + json.dumps({"proposals": [{"optimization": name, "context": "the K loop", "score": 0.9,
                                                    "parameters": {"BK": 8}, "invariants": ["A and B meet along k"]}]}) + "\n```"


def _policy(n: int) -> str:
    return "```json\n" + json.dumps({"evaluation": f"round {n} judged", "critique": f"critique {n}",
                                     "policy": f"policy after round {n}: read the counterexample first"}) + "\n```"


BROKEN = gemm_candidate().replace("b[bn + idx // BK, k0 + idx % BK]", "b[bn + idx // BK, k0 + (idx + 1) % BK]")
FIXED = set_constants(gemm_candidate(), {"BK": 8})
NOT_DSL = gemm_candidate().replace("sA = make_shared((BM, BK), f32)", "sA = make_shared((BM, BK), f99)")
IMPORTS_OS = "import os\n" + gemm_candidate() + "\nos.system('touch pwned')\n"
HANGS = gemm_candidate().replace("    for i in static_range(2):\n        for j in static_range(2):\n            c[",
                                "    for spin in range(0, 1000000):\n        acc[0, 0] = acc[0, 0] * 1.0\n"
                                "    for i in static_range(2):\n        for j in static_range(2):\n            c[", 1)


def test_llm_rounds_feed_the_witness_back_and_survive_bad_replies(tmp_path: Path, scripted_server, monkeypatch) -> None:
    assert BROKEN != gemm_candidate() and HANGS != gemm_candidate()
    script = Script({
        "planner": [("stall", 2.5, _plan("k-slice"))] + [_plan("k-slice")] * 5,
        "lowering": [_python(BROKEN), _python(FIXED), _python(NOT_DSL), _python(IMPORTS_OS), _python(HANGS)],
        "icrl": [_policy(n) for n in range(1, 6)],
    })
    url = scripted_server(script)
    monkeypatch.chdir(tmp_path)
    task = load_task(str(DATA / "gemm_task.py"))
    out = tmp_path / "run"
    store = RunStore(out)
    store.open({"task": str(task.path), "planner": "llm", "target": task.target})
    validator = Validator(task, out, device="cpu", limits=Limits(seconds=8, memory_mb=4096))
    validator.probe()
    planner = PLANNER.create(PlannerConfig(task, out, RecipeBook(use_kb=False), model="scripted", base_url=url,
                                           api_key="test", timeout_s=1.0, retries=2,
                                           options={"client": {"sleep": lambda s: None}}))
    lines: list[str] = []
    records = Optimizer(task, planner, validator, store, 5, progress=lines.append).run()

    assert [r["round"] for r in records] == [0, 1, 2, 3, 4, 5]
    stages = [r["validation"]["stage"] for r in records]
    assert stages == ["validated", "invariants", "validated", "compile", "format", "sandbox"], stages

    broken = records[1]["validation"]
    assert broken["invariants"] == "violated" and broken["witnesses"]
    assert "A and B meet along k" in broken["invariant_text"] and records[1]["reward"]["total"] < 0
    # the counterexample of round 1 is what the planner and the lowering agent read in round 2
    round_two = script.sent("planner")[2]  # [0] stalled and [1] its retry are round 1's
    assert "counterexample" in round_two and "A and B meet along k" in round_two
    assert "counterexample" in script.sent("lowering")[1]
    assert records[2]["validation"]["validated"] and records[2]["reward"]["total"] > 0

    assert "f99" in records[3]["validation"]["compile_error"]
    assert "import os is not accepted" in records[4]["validation"]["format_error"]
    assert not (out / "candidates" / "round-004").exists()  # refused before anything ran
    assert not (tmp_path / "pwned").exists() and not any(out.rglob("pwned"))
    assert "timed out" in records[5]["validation"]["failure"]

    # ICRL: the policy text the model wrote after round 1 is the planner's prompt in round 2
    planner_systems = [r["messages"][0]["content"] for r in script.requests if r["role"] == "planner"]
    assert "policy after round 1" in planner_systems[2]
    assert records[1]["icrl"]["critique"] == "critique 1"
    # the stalled first reply was retried: two planner requests before the first lowering one
    roles = [r["role"] for r in script.requests]
    assert roles[:3] == ["planner", "planner", "lowering"]
    for record in records[1:]:
        assert record["tokens"]["planner"]["prompt_tokens"] > 0 and record["tokens"]["icrl"]["calls"] == 1
    assert len(lines) == 6 and "invariants" in lines[1]


def test_replies_are_replayed_when_a_run_is_taken_up_again(tmp_path: Path, scripted_server) -> None:
    from argus.harness.llm import Client, Endpoint

    script = Script({"planner": ["first", "second"]})
    url = scripted_server(script)
    endpoint = Endpoint(url, "k", "scripted", timeout_s=5, retries=0)
    messages = [{"role": "system", "content": "argus-prompt: planner/v1"}, {"role": "user", "content": "hi"}]
    assert Client(endpoint, tmp_path / "llm.jsonl").chat("planner", messages) == "first"
    again = Client(endpoint, tmp_path / "llm.jsonl")
    assert again.chat("planner", messages) == "first"  # from the record: the server is not asked
    assert len(script.requests) == 1 and again.ledger.roles["planner"]["replayed"] == 1
