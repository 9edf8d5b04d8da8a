"""The offline planner's policy: a bandit over recipes and parameter values that learns across
rounds and across tasks.

Arms live in contexts (``target|family``): ``recipe:ID`` for choosing a recipe and
``ID:NAME=VALUE`` for each parameter value. Each keeps the count, sum and sum of squares of the
rewards it received; `sample` draws from a normal posterior around the mean (Thompson
sampling), so arms rarely tried stay uncertain and get explored. The state is one JSON file
(by default ``~/.cache/argus/harness-policy.json``); updates carry a key (run and round) so a
resumed run never counts a round twice.
"""

from __future__ import annotations

import json
import math
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PRIOR_MEAN = 0.0
PRIOR_WEIGHT = 1.0
"""The prior counts as this many rewards of PRIOR_MEAN."""


def default_path() -> Path:
    base = os.environ.get("ARGUS_POLICY_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "argus")
    return Path(base) / "harness-policy.json"


@dataclass
class Arm:
    n: int = 0
    total: float = 0.0
    squares: float = 0.0

    @property
    def mean(self) -> float:
        return (self.total + PRIOR_MEAN * PRIOR_WEIGHT) / (self.n + PRIOR_WEIGHT)

    @property
    def spread(self) -> float:
        """The posterior's standard deviation: wide when untried, shrinking with evidence."""
        if self.n < 2:
            return 1.0 / math.sqrt(self.n + PRIOR_WEIGHT)
        variance = max(self.squares / self.n - (self.total / self.n) ** 2, 0.01)
        return math.sqrt(variance / (self.n + PRIOR_WEIGHT))


class Bandit:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.contexts: dict[str, dict[str, Arm]] = {}
        self.applied: set[str] = set()
        if path is not None and path.is_file():
            self._read(path)

    def _read(self, path: Path) -> None:
        try:
            data = json.loads(path.read_text())
            self.contexts = {c: {a: Arm(**v) for a, v in arms.items()} for c, arms in data.get("contexts", {}).items()}
            self.applied = set(data.get("applied", []))
        except (json.JSONDecodeError, TypeError, AttributeError):
            self.contexts, self.applied = {}, set()  # a damaged policy starts again from the prior

    def arm(self, context: str, name: str) -> Arm:
        return self.contexts.setdefault(context, {}).setdefault(name, Arm())

    def sample(self, context: str, name: str, rng: random.Random) -> float:
        arm = self.contexts.get(context, {}).get(name, Arm())
        return rng.gauss(arm.mean, arm.spread)

    def update(self, context: str, arms: list[str], reward: float, key: str) -> bool:
        """Credit `reward` to `arms` once per `key`; False if that key was applied before."""
        if key in self.applied:
            return False
        for name in arms:
            arm = self.arm(context, name)
            arm.n += 1
            arm.total += reward
            arm.squares += reward * reward
        self.applied.add(key)
        return True

    def save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data: dict[str, Any] = {"contexts": {c: {a: vars(arm) for a, arm in arms.items()}
                                             for c, arms in self.contexts.items()},
                                "applied": sorted(self.applied)}
        part = self.path.with_suffix(".part")
        part.write_text(json.dumps(data, indent=1))
        os.replace(part, self.path)

    def standings(self, context: str, limit: int = 12) -> list[tuple[str, Arm]]:
        """The context's arms, best mean first."""
        arms = self.contexts.get(context, {})
        return sorted(arms.items(), key=lambda kv: -kv[1].mean)[:limit]
