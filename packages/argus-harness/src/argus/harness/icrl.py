"""Policy evaluation for in-context RL (Algorithm 1): what the trajectory so far says about the
planner's choices, by optimization. The critique and the new policy text are the planner's
(`Planner.learn`): a model writes them for the llm planner, the bandit's standings for search.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any


def evaluate(records: list[dict[str, Any]]) -> str:
    """A short table: per optimization, tries, validated, invariant failures, mean reward, best time."""
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: {"tries": 0, "validated": 0, "violations": 0,
                                                           "reward": 0.0, "best": None})
    for record in records:
        plan = record.get("plan")
        if not plan:
            continue
        name = plan["proposal"]["optimization"]
        row = rows[name]
        validation = record.get("validation") or {}
        row["tries"] += 1
        row["validated"] += int(bool(validation.get("validated")))
        row["violations"] += int(validation.get("invariants") == "violated")
        row["reward"] += float(record["reward"]["total"])
        time = (validation.get("profile") or {}).get("time_s") if validation.get("validated") else None
        if time is not None and (row["best"] is None or time < row["best"]):
            row["best"] = time
    if not rows:
        return "no optimization tried yet"
    lines = []
    for name, row in sorted(rows.items(), key=lambda kv: -kv[1]["reward"] / kv[1]["tries"]):
        best = f", best {row['best'] * 1e6:.1f} µs" if row["best"] is not None else ""
        lines.append(f"{name}: {row['tries']} tries, {row['validated']} validated, {row['violations']} invariant "
                     f"violation(s), mean reward {row['reward'] / row['tries']:+.3f}{best}")
    return "\n".join(lines)
