"""Entry-point plugins: one discovery helper for every group Argus reads.

It lives in the lowest package that reads a group (`argus.solvers`); the others import it.

Entry points are listed without importing them and loaded on first use. A name claimed twice
is an error; a plugin that fails to import is marked unavailable with its reason and never
breaks the others. ``ARGUS_DISABLE_PLUGINS`` (comma-separated ``group:name`` or ``name``)
turns plugins off.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import Any

GROUPS = ("argus.backends", "argus.solvers", "argus.commands", "argus.planners", "argus.kb")


class PluginError(Exception):
    """A plugin that cannot be used: duplicated, disabled, or failing to import."""


@dataclass
class Plugin:
    group: str
    name: str
    entry_point: EntryPoint | None = None
    value: Any = None
    error: str | None = None
    _loaded: bool = field(default=False, repr=False)

    @property
    def source(self) -> str:
        return self.entry_point.value if self.entry_point is not None else "built in"

    def load(self) -> Any:
        if not self._loaded:
            self._loaded = True
            if self.entry_point is not None:
                try:
                    self.value = self.entry_point.load()
                except Exception as err:  # a broken plugin must not break the others
                    self.error = f"{type(err).__name__}: {err}"
        if self.error is not None:
            raise PluginError(f"plugin {self.group}:{self.name} ({self.source}) is unavailable: {self.error}")
        return self.value


def _disabled() -> set[str]:
    return {item.strip() for item in os.environ.get("ARGUS_DISABLE_PLUGINS", "").split(",") if item.strip()}


def discover(group: str, builtin: dict[str, Any] | None = None) -> dict[str, Plugin]:
    """The plugins of `group` by name: installed entry points, plus `builtin` values for names no
    installed distribution provides (so a source checkout works before it is installed)."""
    if group not in GROUPS:
        raise PluginError(f"unknown plugin group {group!r}; groups are {', '.join(GROUPS)}")
    off = _disabled()
    found: dict[str, Plugin] = {}
    for ep in entry_points(group=group):
        known = found[ep.name].entry_point if ep.name in found else None
        if known is not None and known.value != ep.value:
            raise PluginError(
                f"plugin name {group}:{ep.name} is claimed twice: {found[ep.name].source} and {ep.value}"
            )
        found[ep.name] = Plugin(group, ep.name, ep)
    for name, value in (builtin or {}).items():
        found.setdefault(name, Plugin(group, name, None, value, None, True))
    return {name: p for name, p in found.items() if name not in off and f"{group}:{name}" not in off}
