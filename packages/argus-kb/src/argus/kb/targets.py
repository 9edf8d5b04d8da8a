"""The targets entries name, with the features conditions test (``feature: wgmma``).

A target is ``kind:arch`` as the ``--target`` option spells it. Entries may also name every
architecture of a kind (``nvptx:*``) or every target (``any``). The feature sets follow the
backends (the tests compare them); an add-on pack may name targets of other kinds, which are
accepted as written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import UnknownNameError


@dataclass(frozen=True)
class Target:
    name: str
    product: str
    warp_size: int
    features: frozenset[str]

    @property
    def kind(self) -> str:
        return self.name.split(":", 1)[0]


_AMPERE = frozenset({"mma.sync", "ldmatrix", "cp.async", "bf16"})
_HOPPER = _AMPERE | {"mma.fp8", "stmatrix", "mbarrier.tx", "tma", "clusters", "fence.proxy.async"}
_CDNA3 = frozenset({"mfma", "mfma.fp8", "buffer", "agpr", "sched.barrier", "setprio", "dpp", "readfirstlane", "bf16"})

TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("nvptx:sm_80", "A100 (Ampere)", 32, _AMPERE),
        Target("nvptx:sm_90", "H100/H200 (Hopper), portable PTX", 32, _HOPPER),
        Target("nvptx:sm_90a", "H100/H200 (Hopper), architecture-specific", 32, _HOPPER | {"wgmma", "setmaxnreg"}),
        Target("amdgpu:gfx942", "MI300X (CDNA3)", 64, _CDNA3),
        Target("amdgpu:gfx950", "MI350X (CDNA4)", 64, _CDNA3 | {"fp8.ocp"}),
    )
}

#: Every feature some known target has.
FEATURES = frozenset().union(*(t.features for t in TARGETS.values()))

_PATTERN = re.compile(r"^(any|[a-z][a-z0-9_]*:(\*|[A-Za-z0-9_.]+))$")


def kinds() -> frozenset[str]:
    return frozenset(t.kind for t in TARGETS.values())


def check_pattern(pattern: str) -> str | None:
    """Why `pattern` is not a valid target pattern, or None when it is."""
    if not _PATTERN.match(pattern):
        return f"{pattern!r} is not a target: write kind:arch (nvptx:sm_90a), kind:* (amdgpu:*) or any"
    kind, _, arch = pattern.partition(":")
    if kind in kinds() and arch != "*" and pattern not in TARGETS:
        known = ", ".join(t for t in TARGETS if t.startswith(kind + ":"))
        return f"unknown {kind} target {pattern!r}; known: {known}, {kind}:*"
    return None


def matches(pattern: str, target: str) -> bool:
    """Whether the target pattern of an entry covers `target`."""
    if pattern == "any":
        return True
    kind, _, arch = pattern.partition(":")
    return pattern == target or (arch == "*" and target.split(":", 1)[0] == kind)


def target(name: str) -> Target:
    found = TARGETS.get(name)
    if found is None:
        raise UnknownNameError(f"unknown target {name!r}; known: {', '.join(TARGETS)}")
    return found
