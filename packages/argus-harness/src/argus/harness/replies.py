"""Reading a model's replies: the kernel it wrote (a fenced python block) and its structured
proposals or policy update (a fenced json block). A reply that gives neither is an error with
what was expected, which the loop records as that round's failure.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .errors import LLMError
from .planning import Proposal

_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[^\n]*\n(.*?)```", re.DOTALL)


def blocks(text: str, language: str) -> list[str]:
    """The contents of the fenced blocks of `language` in `text`, in order."""
    return [body for lang, body in _FENCE.findall(text) if lang.lower() == language]


def code(text: str) -> str:
    """The candidate kernel in a reply: its last ```python block."""
    found = blocks(text, "python") or blocks(text, "py")
    if not found:
        raise LLMError("the reply holds no ```python block with the kernel module")
    return found[-1]


def data(text: str) -> Any:
    """The JSON value of a reply: its ```json block, or the whole reply when it is JSON."""
    found = blocks(text, "json")
    candidates = found + [text.strip()]
    for item in candidates:
        try:
            return json.loads(item)
        except (ValueError, RecursionError):  # not JSON, an int past Python's digit limit, nesting past the stack
            continue
    raise LLMError("the reply holds no readable ```json block")


def proposals(text: str) -> list[Proposal]:
    """Ranked proposals: a JSON list, or {"proposals": [...]}, of objects with optimization,
    context, score, parameters and invariants."""
    value = data(text)
    items = value.get("proposals") if isinstance(value, dict) else value
    if not isinstance(items, list) or not items:
        raise LLMError('the reply\'s JSON is not a non-empty list of proposals ({"proposals": [{"optimization": ..., '
                       '"context": ..., "score": ..., "parameters": {...}, "invariants": [...]}]})')
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("optimization"), str):
            raise LLMError(f"proposal {i + 1} has no optimization name")
        try:
            out.append(Proposal.from_dict(item))
        except (TypeError, ValueError, OverflowError) as err:  # a score too large for a float, too
            raise LLMError(f"proposal {i + 1} is malformed: {err}") from None
    return sorted(out, key=lambda p: -p.score)


def policy_update(text: str) -> dict[str, str]:
    """An ICRL reply: {"evaluation": ..., "critique": ..., "policy": ...}."""
    value = data(text)
    if not isinstance(value, dict) or not isinstance(value.get("policy"), str) or not value["policy"].strip():
        raise LLMError('the reply\'s JSON needs "evaluation", "critique" and a non-empty "policy" text')
    return {k: str(value.get(k, "")) for k in ("evaluation", "critique", "policy")}
