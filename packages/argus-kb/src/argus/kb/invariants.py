"""Invariant templates: the tag functions and assertions a recipe's rewrite must keep true.

A template is DSL text with ``{PLACEHOLDER}`` holes that the planner fills with the names of
the kernel at hand (``{{`` and ``}}`` stand for literal braces). Each template carries an
``example`` binding; the package's tests check that the example instantiation is what the
recipe's verified code actually states.

    invariants:
      - id: operands-pair-along-k
        says: a product meets A[m, k] only with B[n, k] of the same k
        template: |
          tag({A}, lambda m, k: (k,))
          tag({B}, lambda n, k: (k,))
        example: {A: a, B: b}
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from .errors import EntryError, KbError
from .frontmatter import ListNode, MappingNode

_HOLE = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")


@dataclass(frozen=True)
class InvariantTemplate:
    id: str
    says: str
    template: str
    example: tuple[tuple[str, str], ...]

    @property
    def placeholders(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.group(1) for m in _HOLE.finditer(self.template) if m.group(1)))

    def instantiate(self, bindings: Mapping[str, str] | None = None, **more: str) -> str:
        """The template with every placeholder replaced by the code given for it."""
        values = {**(bindings or {}), **more}
        missing = [p for p in self.placeholders if p not in values]
        extra = sorted(set(values) - set(self.placeholders))
        if missing or extra:
            raise KbError(f"invariant {self.id} takes {', '.join(self.placeholders) or 'no placeholders'}"
                          + (f"; missing {', '.join(missing)}" if missing else "")
                          + (f"; not placeholders: {', '.join(extra)}" if extra else ""))
        for name, code in values.items():
            if not isinstance(code, str):
                raise KbError(f"invariant {self.id}: the value of {name} is DSL text, got {code!r}")

        def fill(m: re.Match[str]) -> str:
            token = m.group(0)
            return {"{{": "{", "}}": "}"}.get(token) or values[m.group(1)]

        return _HOLE.sub(fill, self.template)

    def instantiate_example(self) -> str:
        return self.instantiate(dict(self.example))


def parse_invariants(value: Any, path: str | PurePath, line: int) -> tuple[InvariantTemplate, ...]:
    if value is None:
        return ()
    if not isinstance(value, ListNode):
        raise EntryError(path, line, "'invariants' is a list of mappings with id, says, template and example")
    out = []
    for i, item in enumerate(value):
        at = value.line_of(i)
        if not isinstance(item, MappingNode):
            raise EntryError(path, at, "an invariant is a mapping with id, says, template and example")
        extra = sorted(set(item) - {"id", "says", "template", "example"})
        if extra:
            raise EntryError(path, item.line_of(extra[0]), f"unknown key(s) {', '.join(extra)} in an invariant; "
                                                           f"accepted: id, says, template, example")
        for key in ("id", "says", "template"):
            if not isinstance(item.get(key), str) or not item[key].strip():
                raise EntryError(path, at, f"an invariant needs '{key}' (text)")
        template = item["template"].strip("\n")
        stray = [m.group(0) for m in _HOLE.finditer(template) if m.group(0) in "{}"]
        if stray:
            raise EntryError(path, item.line_of("template"), "a template's holes are {NAME}; write {{ and }} for "
                                                             "literal braces")
        example = item.get("example", MappingNode(at))
        if not isinstance(example, MappingNode) or not all(isinstance(v, str) for v in example.values()):
            raise EntryError(path, item.line_of("example"), "an invariant's example maps each placeholder to text")
        inv = InvariantTemplate(item["id"], item["says"].strip(), template, tuple(example.items()))
        if set(example) != set(inv.placeholders):
            raise EntryError(path, item.line_of("example") if "example" in item else at,
                             f"invariant {inv.id}'s example must bind exactly its placeholders "
                             f"({', '.join(inv.placeholders) or 'none'})")
        out.append(inv)
    ids = [i.id for i in out]
    for dup in {x for x in ids if ids.count(x) > 1}:
        raise EntryError(path, line, f"invariant id {dup} is used twice")
    return tuple(out)
