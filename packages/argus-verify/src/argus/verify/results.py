"""What a check concludes: proved, violated (with witnesses), unknown (with the reason), or
nothing to prove (a kernel that states no claim: no proof is claimed either).

An unknown is never a pass, and "nothing to prove" is never a proof. A witness is a plain dictionary of the facts that pin a
violation down (coordinates, offsets, threads, ...), printable for people and as JSON.
"""

from __future__ import annotations

import enum
import json
import linecache
from dataclasses import dataclass, field
from typing import Any


class Verdict(enum.Enum):
    PROVED = "proved"
    VIOLATED = "violated"
    UNKNOWN = "unknown"
    NOTHING_TO_PROVE = "nothing to prove"
    """The check found nothing wrong, and there was no claim to prove (a kernel without tag
    assertions or tags): not a proof of anything."""

    @property
    def exit_status(self) -> int:
        """0 proved or nothing to prove, 1 violated, 2 unknown (the convention of every
        argus-verify command)."""
        return {"proved": 0, "nothing to prove": 0, "violated": 1, "unknown": 2}[self.value]


@dataclass(frozen=True)
class Result:
    claim: str
    verdict: Verdict
    reason: str = ""
    """How it was decided (the proof method), or why it could not be."""
    witnesses: tuple[dict[str, Any], ...] = field(default=())

    @property
    def proved(self) -> bool:
        return self.verdict is Verdict.PROVED

    def __bool__(self) -> bool:
        return self.proved

    def text(self) -> str:
        lines = [f"{self.verdict.value}: {self.claim}"]
        if self.reason:
            lines.append(f"  {self.reason}")
        for number, w in enumerate(self.witnesses, 1):
            lines.extend(_witness_lines(w, number if len(self.witnesses) > 1 else None))
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "verdict": self.verdict.value, "reason": self.reason,
                "witnesses": [{k: _jsonable(v) for k, v in w.items()} for w in self.witnesses]}

    def json(self) -> str:
        return json.dumps(self.as_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result | None:
        """The inverse of `as_dict` (None when `data` is not a stored result)."""
        try:
            return cls(data["claim"], Verdict(data["verdict"]), data.get("reason", ""),
                       tuple({k: _tuples(v) for k, v in w.items()} for w in data.get("witnesses", ())))
        except (KeyError, TypeError, ValueError):
            return None


def proved(claim: str, reason: str) -> Result:
    return Result(claim, Verdict.PROVED, reason)


def violated(claim: str, reason: str, *witnesses: dict[str, Any]) -> Result:
    return Result(claim, Verdict.VIOLATED, reason, tuple(witnesses))


def unknown(claim: str, reason: str) -> Result:
    return Result(claim, Verdict.UNKNOWN, reason)


def nothing_to_prove(claim: str, reason: str) -> Result:
    return Result(claim, Verdict.NOTHING_TO_PROVE, reason)


#: The longest witness printed on one line; a longer one gets a line per fact.
ONE_LINE = 100


def _witness_lines(witness: dict[str, Any], number: int | None) -> list[str]:
    """A witness for people: on one line when short (a layout's two coordinates), else one fact
    per line, after the line of source its `assertion` names (an assertion, a product, an
    access), quoted where that file can be read. `number`: its place among several."""
    facts = [f"{k} = {_show(v)}" for k, v in witness.items()]
    head = "  counterexample" + (f" {number}" if number else "") + ":"
    line = f"{head} " + ", ".join(facts)
    if len(line) <= ONE_LINE:
        return [line]
    source = _source_line(witness.get("assertion"))
    return [head, *([f"    | {source}"] if source else []), *(f"    {fact}" for fact in facts)]


def _source_line(where: Any) -> str | None:
    """The text of the line ``FILE:LINE:COL`` names, stripped (None when it cannot be read)."""
    parts = str(where).rsplit(":", 2) if where is not None else []
    if len(parts) != 3 or not parts[1].isdigit():
        return None
    linecache.checkcache(parts[0])  # (the file may have changed since it was last read)
    text = linecache.getline(parts[0], int(parts[1])).strip()
    return text or None


def _show(v: Any) -> str:
    if isinstance(v, tuple):
        return "(" + ",".join(_show(e) for e in v) + ")"
    return str(v)


def _tuples(v: Any) -> Any:
    """JSON arrays back to the tuples a fresh result holds."""
    if isinstance(v, list):
        return tuple(_tuples(e) for e in v)
    if isinstance(v, dict):
        return {k: _tuples(e) for k, e in v.items()}
    return v


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_jsonable(e) for e in v]
    if hasattr(v, "item"):
        return v.item()
    return v if isinstance(v, (int, float, str, bool, list, dict)) or v is None else str(v)
