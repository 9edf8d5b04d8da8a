"""Retrieval: filter entries, then rank them with a score whose every part is shown.

Filters (an entry failing one is dropped):
  kind, target and family, when given (a kernel description's target and family stand in for
  missing ones); applicability, when a kernel is described: an entry whose conditions are
  false for it is dropped, one whose conditions are undecided is kept unless asked otherwise;
  and, when there is a query, an entry none of whose text matches any query term.

Score (sum of):
  target     +2 the entry names the target itself, +1 it names its kind (nvptx:*), 0 for any
  family     +2 the entry names the family, 0 for any
  applies    +3 its conditions hold for the kernel (0 when undecided, or when it states none)
  uses       +1 per language name its conditions require that the kernel uses (at most +3)
  query      per distinct query term, the best field it appears in: id, title or keywords +2,
             summary, transformation or controls +1, the body +0.5

Terms are lower-cased words with a trailing ``ing``, ``ed``, ``es``, ``s`` or ``e`` dropped, so
"pipelining" finds "pipeline". Ties go to the entry id, in alphabetical order.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .conditions import Applicability, Condition, Not, Truth, Uses
from .description import KernelDescription
from .entry import Entry

WEIGHTS = {
    "target": 2.0, "target-kind": 1.0, "family": 2.0, "applies": 3.0, "uses": 1.0, "uses-max": 3.0,
    "title": 2.0, "text": 1.0, "body": 0.5,
}
_STOP = frozenset("a an and are as at be by for from in is it its of on or that the this to with".split())
_SUFFIXES = ("ing", "ed", "es", "s", "e")


@dataclass(frozen=True)
class Hit:
    entry: Entry
    score: float
    applicability: Applicability | None
    """How the entry's conditions fared on the kernel (None when no kernel was described)."""
    reasons: tuple[str, ...]
    """Each part of the score, e.g. ``family gemm +2``."""


def terms(text: str) -> set[str]:
    """The search terms of `text`."""
    out = set()
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        if word in _STOP:
            continue
        for suffix in _SUFFIXES:
            if word.endswith(suffix) and len(word) - len(suffix) >= 3:
                word = word[: -len(suffix)]
                break
        out.add(word)
    return out


def search(entries: Iterable[Entry], query: str = "", *, target: str | None = None, family: str | None = None,
           kinds: Sequence[str] | None = None, kernel: KernelDescription | None = None,
           include_unknown: bool = True, limit: int | None = None) -> list[Hit]:
    if kernel is not None:
        target = target or kernel.target
        family = family or kernel.family
    wanted = terms(query)
    hits = []
    for e in entries:
        if kinds is not None and e.kind not in kinds:
            continue
        if target is not None and not e.covers_target(target):
            continue
        if family is not None and not e.covers_family(family):
            continue
        reasons: list[str] = []
        score = 0.0
        applicability = None
        if kernel is not None:
            applicability = e.applicability(kernel)
            if applicability.truth is Truth.NO or (applicability.truth is Truth.UNKNOWN and not include_unknown):
                continue
        matched = _query_score(e, wanted)
        if wanted and not matched:
            continue
        if target is not None:
            if target in e.targets:
                score += WEIGHTS["target"]
                reasons.append(f"target {target} +{WEIGHTS['target']:g}")
            elif f"{target.split(':', 1)[0]}:*" in e.targets:
                score += WEIGHTS["target-kind"]
                reasons.append(f"target kind {target.split(':', 1)[0]} +{WEIGHTS['target-kind']:g}")
        if family is not None and family in e.families:
            score += WEIGHTS["family"]
            reasons.append(f"family {family} +{WEIGHTS['family']:g}")
        conditioned = e.applies_when is not None and bool(e.applies_when.parts)
        if applicability is not None and applicability.truth is Truth.YES and conditioned:
            score += WEIGHTS["applies"]
            reasons.append(f"applies +{WEIGHTS['applies']:g}")
        if kernel is not None and kernel.uses is not None and e.applies_when is not None:
            shared = sorted(required_names(e.applies_when) & kernel.uses)
            if shared:
                bonus = min(WEIGHTS["uses"] * len(shared), WEIGHTS["uses-max"])
                score += bonus
                reasons.append(f"uses {', '.join(shared)} +{bonus:g}")
        for term, (field, weight) in sorted(matched.items()):
            score += weight
            reasons.append(f"query '{term}' in {field} +{weight:g}")
        hits.append(Hit(e, score, applicability, tuple(reasons)))
    hits.sort(key=lambda h: (-h.score, h.entry.id))
    return hits[:limit] if limit is not None else hits


def required_names(condition: Condition) -> set[str]:
    """The language names a condition requires the kernel to use (not those it requires absent)."""
    found: set[str] = set()
    negated = {id(n) for c in condition.walk() if isinstance(c, Not) for n in c.part.walk()}
    for c in condition.walk():
        if isinstance(c, Uses) and id(c) not in negated:
            found.update(c.names)
    return found


def _query_score(e: Entry, wanted: set[str]) -> dict[str, tuple[str, float]]:
    if not wanted:
        return {}
    fields = (
        ("title", WEIGHTS["title"], terms(" ".join((e.id, e.title, *e.keywords)))),
        ("text", WEIGHTS["text"], terms(" ".join((e.summary, e.transformation or "", *e.controls)))),
        ("body", WEIGHTS["body"], terms(e.body)),
    )
    out = {}
    for term in wanted:
        for name, weight, bag in fields:
            if term in bag:
                out[term] = (name, weight)
                break
    return out
