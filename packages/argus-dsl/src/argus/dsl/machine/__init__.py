"""The machine the interpreter runs kernels on: warps scheduled independently, asynchronous
operations as agents, and happens-before (vector clocks) deciding what is a data race.

- `schedule`: groups of warps, agents, the policies that pick the interleaving;
- `clocks`: vector clocks and the per-byte access history;
- `barriers`: barriers threads meet at (block, named, cluster).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .clocks import Clocks, Race, Tracker
from .schedule import Agent, Schedule, Scheduler, active, register_sync_point, register_wait, schedules, using


@dataclass
class Machine:
    """What one block (cluster) shares while it runs: clocks, access history, barriers, schedule."""

    clocks: Clocks
    tracker: Tracker
    scheduler: Scheduler
    barriers: dict[Any, Any] = field(default_factory=dict)


__all__ = ["Agent", "Clocks", "Machine", "Race", "Schedule", "Scheduler", "Tracker", "active", "register_sync_point",
           "register_wait", "schedules", "using"]
