"""What the knowledge base knows about a kernel when it decides whether an entry applies.

Whoever asks (the optimization harness, the command line) describes the kernel: its target,
its family, the language names it uses, its element types and its sizes. Anything left out is
unknown, and a condition that needs it is undecided rather than false. `describe_source`
reads the names and types from a kernel file's text with Python's parser alone (nothing is
imported or run), so it also works on code a model proposed.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .errors import KbError
from .targets import TARGETS
from .vocabulary import DTYPES, LANGUAGE


@dataclass(frozen=True)
class KernelDescription:
    target: str | None = None
    """``kind:arch``, e.g. ``nvptx:sm_90a``."""
    family: str | None = None
    uses: frozenset[str] | None = None
    """Language names the kernel refers to (`vocabulary.LANGUAGE`)."""
    dtypes: frozenset[str] | None = None
    sizes: Mapping[str, int] = field(default_factory=dict, hash=False)
    """Problem sizes and constants by name (``M``, ``K``, ``BK``, ``seq`` ...)."""
    features: frozenset[str] | None = None
    """The target's features; by default those of a known target."""

    def __post_init__(self) -> None:
        for name, value in self.sizes.items():
            if not isinstance(value, int) or isinstance(value, bool):
                raise KbError(f"size {name} of a kernel description must be an int, got {value!r}")
        object.__setattr__(self, "sizes", MappingProxyType(dict(self.sizes)))

    def target_features(self) -> frozenset[str] | None:
        if self.features is not None:
            return self.features
        known = TARGETS.get(self.target or "")
        return known.features if known else None


def describe_source(source: str, *, target: str | None = None, family: str | None = None,
                    sizes: Mapping[str, int] | None = None, filename: str = "<kernel>",
                    language: frozenset[str] = LANGUAGE) -> KernelDescription:
    """A description of the kernel file `source`: the language names and element types its
    code refers to (anywhere in the file: atoms are often built at module level; imports alone
    do not count). `language` is the set of names to look for: `KnowledgeBase.language` adds
    those of installed packs."""
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as err:
        raise KbError(f"{filename}:{err.lineno}: the kernel source is not Python: {err.msg}") from None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
    return KernelDescription(target=target, family=family, uses=frozenset(names & language),
                             dtypes=frozenset(names & DTYPES), sizes=dict(sizes or {}))
