"""The HTML report: the Markdown report's content as a page, with the timed rounds drawn."""

from __future__ import annotations

import re
from pathlib import Path

from argus.harness import report, webpage
from argus.harness.task import load_task

DATA = Path(__file__).parent / "data"


def test_markdown_becomes_escaped_html() -> None:
    text = ("# Title <x>\n\n- one `a<b`\n  - nested **bold**\n- two\n\n| a | b |\n| --- | --- |\n| 1 | <2> |\n\n"
            "```python\nif a < b:\n    pass\n```\nplain & simple\n")
    page = webpage.page(text, "t")
    assert "<h1>Title &lt;x&gt;</h1>" in page
    assert "<ul><li>one <code>a&lt;b</code></li><ul><li>nested <strong>bold</strong></li></ul><li>two</li></ul>" in page
    assert "<th>a</th><th>b</th>" in page and "<td>&lt;2&gt;</td>" in page and "---" not in page
    assert "<pre><code>if a &lt; b:\n    pass</code></pre>" in page and "<p>plain &amp; simple</p>" in page


def _record(n: int, time_s: float | None, kept: bool) -> dict:
    validation = {"validated": time_s is not None, "stage": "profiled" if time_s else "tests",
                  "profile": {"time_s": time_s, "reference_time_s": 1e-3} if time_s else None}
    return {"round": n, "validation": validation, "plan": {}, "reward": {"total": 0.5}, "kept": kept,
            "text": "kernel text", "seconds": 1.0}


def test_the_page_draws_each_timed_round() -> None:
    task = load_task(str(DATA / "gemm_task.py"))
    records = [_record(0, 2e-3, True), _record(1, None, False), _record(2, 1e-3, True)]
    page = report.render_html(task, {"planner": "search", "rounds": 2}, records)
    bars = re.findall(r'<rect [^>]*height="([\d.]+)"[^>]*fill="(#[0-9a-f]+)"><title>round (\d)', page)
    assert [b[2] for b in bars] == ["0", "1", "2"]
    heights = [float(b[0]) for b in bars]
    assert heights[1] == 0 and abs(heights[2] - 2 * heights[0]) < 0.2  # twice as fast, twice as high
    assert bars[0][1] == bars[2][1] != bars[1][1]  # kept rounds dark
    assert page.index("<svg") < page.index("<h2>Trajectory</h2>")


def test_failed_rounds_are_reported_with_their_error() -> None:
    task = load_task(str(DATA / "gemm_task.py"))
    failed = {**_record(1, None, False), "error": "the candidate could not be validated: RecursionError: too deep",
              "validation": {"format_error": "the candidate could not be validated: RecursionError: too deep",
                             "stage": "format"}, "icrl": {"policy": None}}
    refused = {**_record(2, None, False), "validation": {"format_error": "\n", "stage": "format"}}
    text = report.render(task, {"planner": "llm", "rounds": 2}, [_record(0, None, True), failed, refused])
    assert "- rounds that failed (recorded with their error, the run going on): 1\n  - round 1: the candidate could " \
           "not be validated: RecursionError: too deep" in text
    assert "- candidates refused before compiling: 1\n  - round 2: " in text


def test_each_round_s_worker_isolation_is_reported() -> None:
    """Rounds confined alike share a line: the worker's user and each missing mechanism with why,
    or "all enforced"; a round refused before running has no record."""
    task = load_task(str(DATA / "gemm_task.py"))
    full = {"user": "nobody", "enforced": ["pid_namespace", "landlock"], "missing": {}}
    partial = {"user": "argus", "enforced": ["pid_namespace"],
               "missing": {"landlock": "the kernel has no Landlock (Linux 5.13 or later, built with it)",
                           "user": "the harness is not root: the worker keeps its user"}}
    records = []
    for n, isolation in enumerate([full, full, full, None, partial, full]):
        record = _record(n, None, n == 0)
        record["validation"]["isolation"] = isolation or {}
        records.append(record)
    text = report.render(task, {"planner": "search", "rounds": 5}, records)
    section = text.split("## Worker isolation\n\n", 1)[1].split("\n\n", 1)[0]
    assert section.splitlines() == [
        "- rounds 0–2, 5: as nobody, all enforced",
        "- round 4: as argus, missing landlock (the kernel has no Landlock (Linux 5.13 or later, built with it)); "
        "user (the harness is not root: the worker keeps its user)"]
