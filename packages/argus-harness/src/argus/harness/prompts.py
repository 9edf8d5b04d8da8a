"""The prompts of the llm planner, kept as versioned text files in the package (``prompts/``).

A prompt is ``NAME.vN.md`` with ``$field`` placeholders; the version a run used is recorded with
it, so a changed prompt is a new file, never an edit under an old name.
"""

from __future__ import annotations

import string
from importlib import resources

from .errors import PlannerError

VERSION = "v1"
NAMES = ("language", "planner", "lowering", "icrl", "policy")


def text(name: str, version: str = VERSION) -> str:
    """The raw text of prompt `name`."""
    if name not in NAMES:
        raise PlannerError(f"no prompt {name!r}; prompts: {', '.join(NAMES)}")
    try:
        return (resources.files("argus.harness") / "prompts" / f"{name}.{version}.md").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlannerError(f"prompt {name}.{version}.md is not installed with argus.harness") from None


def render(name: str, version: str = VERSION, **fields: str) -> str:
    """Prompt `name` with its placeholders filled."""
    try:
        return string.Template(text(name, version)).substitute(fields)
    except KeyError as err:
        raise PlannerError(f"prompt {name}.{version}.md needs the field {err}") from None
