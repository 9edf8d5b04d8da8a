"""The reward of one round (§6): process rewards from compiling, the invariant check and the
tests, and a runtime term that counts only once all of them pass.

    refused by the format, or a reward hack found        -1
    did not compile (or the sandbox run failed)           -1
    compiled                                             +0.2
    invariants: proved +0.3, unknown 0, violated -0.5    (the witness is the feedback)
    tests: +0.3 x the fraction passed
    validated and timed: +log2(best time / this time)    (a validated slowdown is negative)

The runtime term compares with the fastest validated kernel so far, so a round is rewarded for
improving on the incumbent and penalized for a correct but slower kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .validator import Validation

COMPILE = 0.2
INVARIANTS = {"proved": 0.3, "unknown": 0.0, "violated": -0.5}
TESTS = 0.3
SLOWDOWN_WEIGHT = 1.0
"""Scale of the negative runtime term; a slowdown by 2x costs as much as a 2x gain earns."""


@dataclass(frozen=True)
class Reward:
    total: float
    parts: dict[str, float] = field(default_factory=dict)

    def text(self) -> str:
        return f"{self.total:+.3f} (" + ", ".join(f"{k} {v:+.2f}" for k, v in self.parts.items()) + ")"


def reward(v: Validation, best_time_s: float | None) -> Reward:
    """The reward of validation `v` against the incumbent's time (None: nothing timed yet)."""
    if v.format_error is not None or v.hacks:
        return Reward(-1.0, {"refused" if v.format_error is not None else "hack": -1.0})
    if not v.compiled or v.failure is not None:
        return Reward(-1.0, {"compile": -1.0})
    parts = {"compile": COMPILE, "invariants": INVARIANTS.get(v.invariants or "unknown", 0.0)}
    if v.tests_total:
        parts["tests"] = TESTS * v.tests_passed / v.tests_total
    time_s = v.time_s
    if time_s is not None and best_time_s is not None and time_s > 0:
        gain = math.log2(best_time_s / time_s)
        parts["runtime"] = gain if gain >= 0 else SLOWDOWN_WEIGHT * gain
    return Reward(round(sum(parts.values()), 6), parts)
