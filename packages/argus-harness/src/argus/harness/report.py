"""The run report (Markdown, and the same as an HTML page with a chart of the trajectory): the
trajectory round by round — throughput, speedup over the reference, what failed and where — the
invariant violations and hacks caught, the tokens spent, how each round's worker was confined,
and the final kernel.
"""

from __future__ import annotations

import math
from typing import Any

from . import webpage
from .task import Task


def flops(task: Task, shape: dict[str, int] | None) -> float | None:
    """Work of one launch at `shape`, for the families where it is known: 2·M·N·K for a GEMM."""
    if shape is None or task.family != "gemm" or len(shape) != 3:
        return None
    return 2.0 * math.prod(shape.values())


def render(task: Task, meta: dict[str, Any], records: list[dict[str, Any]]) -> str:
    on_gpu = any(((r.get("validation") or {}).get("profile")) for r in records)
    device = next(((r.get("validation") or {}).get("device") for r in records if (r.get("validation") or {})
                   .get("device")), meta.get("device", "?"))
    lines = [f"# Argus optimization report: {task.name}", "",
             f"- task: `{task.path}` ({task.form} form), family `{task.family}`, target `{task.target}`",
             f"- planner: `{meta.get('planner')}`, rounds: {len(records) - 1} of {meta.get('rounds')}, device: {device}",
             f"- test shapes: {', '.join(_shape(s) for s in task.shapes)}"
             + (f"; bench shape: {_shape(task.bench_shape)}" if task.bench_shape else ""),
             f"- time: {sum(r.get('seconds', 0.0) for r in records):.1f} s in rounds"]
    if not on_gpu:
        lines += ["", "**No GPU was used: every kernel was checked for correctness on the interpreter only, "
                      "and nothing was timed.** Throughput and speedups need a run on a GPU target with a GPU."]
    reference = None
    for r in records:
        profile = (r.get("validation") or {}).get("profile") or {}
        if profile.get("reference_time_s"):
            reference = float(profile["reference_time_s"])
            break
    baseline = ((records[0].get("validation") or {}).get("profile") or {}).get("time_s") if records else None
    lines += ["", "## Trajectory", "",
              "| round | optimization | parameters | outcome | invariants | tests | time (µs) | TFLOP/s | vs reference "
              "| reward | kept | tokens |", "|" + " --- |" * 12]
    work = flops(task, task.bench_shape)
    for r in records:
        v = r.get("validation") or {}
        plan = r.get("plan") or {}
        what = "baseline" if r["round"] == 0 else (plan.get("proposal") or {}).get("optimization", "—")
        params = ", ".join(f"{k}={x}" for k, x in sorted((plan.get("parameters") or {}).items())) or "—"
        time_s = (v.get("profile") or {}).get("time_s") if v.get("validated") else None
        tokens = sum(int(e.get("prompt_tokens", 0) + e.get("completion_tokens", 0))
                     for e in (r.get("tokens") or {}).values())
        lines.append(" | ".join([
            f"| {r['round']}", what, params, v.get("stage", "not run"), v.get("invariants") or "—",
            f"{v.get('tests_passed', 0)}/{v.get('tests_total', 0)}",
            f"{time_s * 1e6:.1f}" if time_s else "—",
            f"{work / time_s / 1e12:.1f}" if time_s and work else "—",
            f"{reference / time_s:.2f}x" if time_s and reference else "—",
            f"{r['reward']['total']:+.2f}", "yes" if r.get("kept") else "", str(tokens or "")]) + " |")
    kept = [r for r in records if r.get("kept")]
    best = kept[-1] if kept else None
    lines += ["", "## Outcome", ""]
    if best is None:
        lines.append("No kernel was validated.")
    else:
        v = best.get("validation") or {}
        time_s = (v.get("profile") or {}).get("time_s")
        lines.append(f"- best kernel: round {best['round']} ({'validated' if v.get('validated') else 'not validated'})")
        if time_s:
            lines.append(f"- time at the bench shape: {time_s * 1e6:.1f} µs"
                         + (f", {work / time_s / 1e12:.1f} TFLOP/s" if work else ""))
            if reference:
                lines.append(f"- speedup over the reference: {reference / time_s:.2f}x "
                             f"(reference {reference * 1e6:.1f} µs)")
            if baseline:
                lines.append(f"- speedup over the initial kernel: {baseline / time_s:.2f}x")
    violations = [r for r in records if (r.get("validation") or {}).get("invariants") == "violated"]
    lines.append(f"- invariant violations caught: {len(violations)}"
                 + (" (rounds " + ", ".join(str(r["round"]) for r in violations) + ")" if violations else ""))
    for r in violations[:5]:
        text = (r["validation"].get("invariant_text") or "").splitlines()
        witness = next((t.strip() for t in text if t.strip().startswith("counterexample:")), text[0] if text else "")
        lines.append(f"  - round {r['round']}: {witness[:300]}")
    hacks = [(r["round"], h) for r in records for h in (r.get("validation") or {}).get("hacks", [])]
    failed = [r for r in records if r.get("error")]
    refused = [r for r in records if (r.get("validation") or {}).get("format_error") and not r.get("error")]
    lines.append(f"- reward hacks caught: {len(hacks)}" + "".join(f"\n  - round {n}: {h}" for n, h in hacks[:5]))
    lines.append(f"- candidates refused before compiling: {len(refused)}"
                 + "".join(f"\n  - round {r['round']}: {_first_line(r['validation']['format_error'])}"
                           for r in refused[:5]))
    lines.append(f"- rounds that failed (recorded with their error, the run going on): {len(failed)}"
                 + "".join(f"\n  - round {r['round']}: {_first_line(r['error'])}" for r in failed[:5]))
    totals: dict[str, dict[str, float]] = {}
    for r in records:
        for role, entry in (r.get("tokens") or {}).items():
            into = totals.setdefault(role, {})
            for k, x in entry.items():
                into[k] = into.get(k, 0) + x
    if totals:
        lines.append("- tokens: " + "; ".join(
            f"{role} {int(e.get('prompt_tokens', 0))} in / {int(e.get('completion_tokens', 0))} out over "
            f"{int(e.get('calls', 0))} call(s)" for role, e in sorted(totals.items())))
    else:
        lines.append("- tokens: none (no model was used)")
    lines += _isolation(records)
    policy = next((p for r in reversed(records) if (p := (r.get("icrl") or {}).get("policy"))), None)
    if policy:
        lines += ["", "## Planner policy after the last round", "", "```", policy, "```"]
    if best is not None:
        lines += ["", "## Final kernel", "", "```python", best["text"].rstrip(), "```"]
    return "\n".join(lines) + "\n"


def render_html(task: Task, meta: dict[str, Any], records: list[dict[str, Any]]) -> str:
    """The report as a standalone HTML page, with the trajectory drawn."""
    return webpage.page(render(task, meta, records), f"Argus optimization report: {task.name}",
                        trajectory_svg(task, records))


def trajectory_svg(task: Task, records: list[dict[str, Any]], width: int = 640, height: int = 180) -> str:
    """Each round's validated time at the bench shape as a bar (TFLOP/s for a GEMM, else the
    speedup over the first timed kernel), the kept ones dark; empty when nothing was timed."""
    work = flops(task, task.bench_shape)
    times = [((r.get("validation") or {}).get("profile") or {}).get("time_s")
             if (r.get("validation") or {}).get("validated") else None for r in records]
    timed = [t for t in times if t]
    if not timed:
        return ""
    first = timed[0]
    values = [(work / t / 1e12 if work else first / t) if t else 0.0 for t in times]
    unit = "TFLOP/s" if work else "speedup over the first timed kernel"
    top = max(values) or 1.0
    step = (width - 40) / max(len(values), 1)
    bars = []
    for i, (r, v) in enumerate(zip(records, values)):
        h = (height - 40) * v / top
        colour = "#0969da" if r.get("kept") else "#9ab8e0"
        bars.append(f'<rect x="{30 + i * step:.1f}" y="{height - 20 - h:.1f}" width="{max(step - 2, 1):.1f}" '
                    f'height="{h:.1f}" fill="{colour}"><title>round {r["round"]}: {v:.2f}</title></rect>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
            f'aria-label="{unit} per round"><text x="30" y="14" font-size="12">{unit} per round (best {top:.1f}; '
            f'dark: kept)</text>{"".join(bars)}<line x1="28" y1="{height - 20}" x2="{width - 8}" '
            f'y2="{height - 20}" stroke="#57606a"/></svg>')


def _isolation(records: list[dict[str, Any]]) -> list[str]:
    """How each round's worker was confined: its user, and every mechanism that was missing with
    why ("all enforced" where none was); rounds with the same record on one line."""
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[int]] = {}
    for r in records:
        record = (r.get("validation") or {}).get("isolation") or {}
        if record:
            missing = tuple(sorted((str(k), _first_line(v, 160)) for k, v in (record.get("missing") or {}).items()))
            groups.setdefault((str(record.get("user") or "?"), missing), []).append(r["round"])
    lines = ["", "## Worker isolation", ""]
    if not groups:
        return lines + ["No round ran a worker (every candidate was refused before it ran)."]
    for (user, missing), rounds in groups.items():
        what = "all enforced" if not missing else "missing " + "; ".join(f"{name} ({why})" for name, why in missing)
        lines.append(f"- {_rounds(rounds)}: as {user}, {what}")
    return lines


def _rounds(numbers: list[int]) -> str:
    """``round 3`` or ``rounds 0–5, 7``."""
    spans: list[list[int]] = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    text = ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)
    return f"round{'s' if len(numbers) > 1 else ''} {text}"


def _first_line(text: object, limit: int = 200) -> str:
    lines = str(text).splitlines()
    return lines[0][:limit] if lines else ""


def _shape(shape: dict[str, int] | None) -> str:
    return "×".join(f"{k}={v}" for k, v in (shape or {}).items())
