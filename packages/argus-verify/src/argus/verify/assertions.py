"""Checking a tag assertion over many points at once.

Both sides are given as byte-tag id arrays of shape (points, elements, bytes): a point is one
combination of the enumerated domain (a thread, a loop iteration, ...), an element one
coordinate of the asserted tiles, compared at equal coordinates. Findings distinguish a real
violation from reading data that was never written (⊥) or that conflicting writes made ⊤.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .affine import all_along, any_along
from .tags import BOTTOM, TOP


@dataclass(frozen=True)
class Finding:
    kind: str
    """``violated`` (tags differ for ==, agree for !=), ``unwritten`` (⊥) or ``conflicting`` (⊤)."""
    point: int
    element: int
    lhs: np.ndarray
    rhs: np.ndarray


def check(lhs: np.ndarray, rhs: np.ndarray, equal: bool, limit: int = 8) -> list[Finding]:
    """The first `limit` findings of ``tag(lhs) == tag(rhs)`` (or ``!=`` when not `equal`)."""
    if lhs.shape != rhs.shape:
        raise ValueError(f"the two sides of a tag assertion have shapes {lhs.shape} and {rhs.shape}")
    unwritten = any_along((lhs == BOTTOM) | (rhs == BOTTOM))
    conflicting = any_along((lhs == TOP) | (rhs == TOP)) & ~unwritten
    same = all_along(lhs == rhs)
    concrete = ~unwritten & ~conflicting
    wrong = concrete & (~same if equal else same)
    findings: list[Finding] = []
    for kind, where in (("violated", wrong), ("unwritten", unwritten), ("conflicting", conflicting)):
        for point, element in np.argwhere(where)[: limit - len(findings)]:
            findings.append(Finding(kind, int(point), int(element), lhs[point, element], rhs[point, element]))
        if len(findings) >= limit:
            break
    return findings
