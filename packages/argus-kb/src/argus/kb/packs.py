"""Packs: directories of entry files, the built-in one and add-ons found through entry points.

An add-on pack is a distribution that registers a `Pack` (or the directory of its entry files)
under the ``argus.kb`` entry-point group:

    [project.entry-points."argus.kb"]
    my-pack = "my_package.kb:PACK"          # PACK = Pack("my-pack", files("my_package") / "kb")

Discovery follows the rules every Argus plugin group follows: entry points are listed without
importing them and loaded on use, a name claimed twice is an error, a pack that fails to load
is set aside with its reason and never breaks the others, and ``ARGUS_DISABLE_PLUGINS``
(comma-separated ``argus.kb:name`` or ``name``) turns packs off. argus-kb reads the group
itself, so that it needs no other Argus package.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from .errors import PackError

GROUP = "argus.kb"


@dataclass(frozen=True)
class Pack:
    """A named directory of entry files (``*.md``)."""

    name: str
    directory: Traversable | Path
    language: frozenset[str] = field(default_factory=frozenset)
    """Language names beyond the core and the bundled backends that this pack's conditions use
    (the intrinsics of another backend)."""

    def files(self) -> list[Traversable | Path]:
        if not self.directory.is_dir():
            raise PackError(f"pack {self.name}: {self.directory} is not a directory of entry files")
        return sorted((f for f in self.directory.iterdir() if f.name.endswith(".md") and f.is_file()),
                      key=lambda f: f.name)


BUILTIN = Pack("argus", files("argus.kb") / "entries")


@dataclass
class Found:
    """One pack entry point, loaded on demand."""

    name: str
    entry_point: EntryPoint | None
    value: Any = None
    error: str | None = None
    loaded: bool = False

    def load(self) -> Pack:
        if not self.loaded:
            self.loaded = True
            if self.entry_point is not None:
                try:
                    self.value = self.entry_point.load()
                except Exception as err:  # a broken pack must not break the others
                    self.error = f"{type(err).__name__}: {err}"
            if self.error is None:
                pack = _as_pack(self.name, self.value)
                if pack is None:
                    self.error = f"it gives a {type(self.value).__name__}, not an argus.kb.Pack or a directory"
                self.value = pack
        if self.error is not None:
            source = self.entry_point.value if self.entry_point else "built in"
            raise PackError(f"pack {GROUP}:{self.name} ({source}) is unavailable: {self.error}")
        return self.value


def _as_pack(name: str, value: Any) -> Pack | None:
    if isinstance(value, Pack):
        return value
    if isinstance(value, (str, Path)):
        return Pack(name, Path(value))
    if isinstance(value, Traversable):
        return Pack(name, value)
    return None


def _disabled() -> set[str]:
    return {item.strip() for item in os.environ.get("ARGUS_DISABLE_PLUGINS", "").split(",") if item.strip()}


def discover() -> dict[str, Found]:
    """The packs by name: installed entry points, and the built-in pack when no installed
    distribution provides it (a source checkout)."""
    found: dict[str, Found] = {}
    for ep in entry_points(group=GROUP):
        known = found.get(ep.name)
        if known is not None and known.entry_point is not None and known.entry_point.value != ep.value:
            raise PackError(f"pack name {GROUP}:{ep.name} is claimed twice: {known.entry_point.value} and {ep.value}")
        found[ep.name] = Found(ep.name, ep)
    found.setdefault(BUILTIN.name, Found(BUILTIN.name, None, BUILTIN))
    off = _disabled()
    return {n: f for n, f in found.items() if n not in off and f"{GROUP}:{n}" not in off}
