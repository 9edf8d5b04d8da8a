"""One knowledge-base entry: its schema, read from an entry file and checked key by key.

An entry file is front matter (`frontmatter`) and a Markdown body. The body may hold DSL
snippets, fenced as ```` ```python before ````, ```` ```python after ```` (a recipe's
transformation) or ```` ```python example ```` (a DSL reference); each is a whole kernel
file that the package's tests compile, verify and run. The keys:

    id, title, kind, summary, targets, families, sources        every entry
    keywords, requires                                          optional
    applies-when, transformation, controls, invariants, benefit  recipes
    parameters, constraints                                      recipes, optional
    dsl-gap                                                      a recipe the language cannot express yet
    facts                                                        hardware facts
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import Any

from .conditions import All, Applicability, Truth, parse_conditions
from .description import KernelDescription
from .errors import EntryError
from .frontmatter import Document, ListNode, MappingNode, Scalar, split
from .invariants import InvariantTemplate, parse_invariants
from .parameters import ParameterSpace, parse_parameters
from .targets import check_pattern, matches
from .vocabulary import FAMILIES, KINDS, LANGUAGE

COMMON = ("id", "title", "kind", "summary", "targets", "families", "sources", "keywords", "requires")
RECIPE = ("applies-when", "transformation", "controls", "invariants", "benefit", "parameters", "constraints",
          "dsl-gap")
KEYS = COMMON + RECIPE + ("facts",)
REQUIRED = {
    "recipe": ("applies-when", "transformation", "controls", "invariants", "benefit"),
    "hardware-fact": ("facts",),
    "dsl-reference": (),
}
ROLES = {"recipe": ("before", "after"), "dsl-reference": ("example",), "hardware-fact": ()}
LIMITS = ("compute", "memory", "latency", "occupancy")
_ID = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
_FENCE = re.compile(r"^(```+|~~~+)\s*(\S*)\s*(.*?)\s*$")


@dataclass(frozen=True)
class Snippet:
    """A DSL kernel file inside an entry's body."""

    role: str
    code: str
    line: int
    """The file line of the snippet's first line of code."""


@dataclass(frozen=True)
class Fact:
    name: str
    value: Scalar
    unit: str
    source: str


@dataclass(frozen=True)
class Benefit:
    summary: str
    speedup: tuple[float, float] | None = None
    """The range of speedups to expect where it applies, a prior for a search."""
    limit: str | None = None
    """The limit it addresses: compute, memory, latency or occupancy."""


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    kind: str
    summary: str
    targets: tuple[str, ...]
    families: tuple[str, ...]
    sources: tuple[str, ...]
    path: str
    body: str
    keywords: tuple[str, ...] = ()
    requires: tuple[str, ...] = ()
    applies_when: All | None = None
    transformation: str | None = None
    controls: tuple[str, ...] = ()
    invariants: tuple[InvariantTemplate, ...] = ()
    benefit: Benefit | None = None
    parameters: ParameterSpace = field(default_factory=ParameterSpace)
    dsl_gap: str | None = None
    facts: tuple[Fact, ...] = ()
    snippets: tuple[Snippet, ...] = ()
    pack: str = ""
    key_lines: dict[str, int] = field(default_factory=dict, compare=False, repr=False)
    """The file line of each front-matter key, for errors found after reading."""

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, 1)

    def snippet(self, role: str) -> Snippet | None:
        return next((s for s in self.snippets if s.role == role), None)

    def covers_target(self, target: str) -> bool:
        return any(matches(p, target) for p in self.targets)

    def covers_family(self, family: str) -> bool:
        return "any" in self.families or family in self.families

    def applicability(self, kernel: KernelDescription) -> Applicability:
        if self.applies_when is None or not self.applies_when.parts:
            return Applicability(Truth.YES, ("the entry states no conditions",))
        return self.applies_when.evaluate(kernel)

    def as_dict(self) -> dict[str, Any]:
        """The entry as JSON-ready data (what ``argus kb show --json`` prints)."""
        return {
            "id": self.id, "title": self.title, "kind": self.kind, "pack": self.pack, "path": self.path,
            "summary": self.summary, "targets": list(self.targets), "families": list(self.families),
            "keywords": list(self.keywords), "requires": list(self.requires),
            "applies-when": [c.as_data() for c in self.applies_when.parts] if self.applies_when else [],
            "transformation": self.transformation, "controls": list(self.controls),
            "invariants": [{"id": i.id, "says": i.says, "template": i.template, "placeholders": list(i.placeholders),
                            "example": dict(i.example)} for i in self.invariants],
            "benefit": None if self.benefit is None else {
                "summary": self.benefit.summary, "speedup": list(self.benefit.speedup) if self.benefit.speedup else None,
                "limit": self.benefit.limit},
            "parameters": [{"name": p.name, "says": p.says, "values": list(p.values), "default": p.default}
                           for p in self.parameters.parameters],
            "constraints": [c.text for c in self.parameters.constraints],
            "dsl-gap": self.dsl_gap,
            "facts": [{"name": f.name, "value": f.value, "unit": f.unit, "source": f.source} for f in self.facts],
            "snippets": {s.role: s.code for s in self.snippets},
            "sources": list(self.sources), "body": self.body,
        }


def read_entry(path: str | PurePath, text: str | None = None, *, pack: str = "",
               language: frozenset[str] = LANGUAGE) -> Entry:
    """The entry in the file at `path` (or in `text`, named `path`), checked against the schema."""
    if text is None:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise EntryError(path, 1, f"cannot read the entry: {err}") from None
    return _Reader(split(text, path), str(path), pack, language).entry()


class _Reader:
    def __init__(self, doc: Document, path: str, pack: str, language: frozenset[str]) -> None:
        self.doc = doc
        self.data = doc.data
        self.path = path
        self.pack = pack
        self.language = language

    def fail(self, message: str, key: str | None = None, line: int | None = None) -> EntryError:
        at = line if line is not None else (self.data.line_of(key) if key else self.data.line)
        return EntryError(self.path, at, message)

    def entry(self) -> Entry:
        unknown = [k for k in self.data if k not in KEYS]
        if unknown:
            raise self.fail(f"unknown key {unknown[0]!r}; accepted: {', '.join(KEYS)}", unknown[0])
        ident = self.text("id")
        if not _ID.match(ident):
            raise self.fail(f"id {ident!r} must be lower-case words joined by '-' (software-pipelining)", "id")
        kind = self.text("kind")
        if kind not in KINDS:
            raise self.fail(f"unknown kind {kind!r}; accepted: {', '.join(KINDS)}", "kind")
        for key in REQUIRED[kind]:
            if key not in self.data:
                raise self.fail(f"a {kind} entry needs '{key}'")
        if kind != "recipe":
            misplaced = [k for k in RECIPE if k in self.data]
            if misplaced:
                raise self.fail(f"'{misplaced[0]}' belongs to recipes, not to a {kind} entry", misplaced[0])
        if kind != "hardware-fact" and "facts" in self.data:
            raise self.fail(f"'facts' belongs to hardware-fact entries, not to a {kind} entry", "facts")
        targets = self.names("targets")
        for t in targets:
            problem = check_pattern(t)
            if problem:
                raise self.fail(problem, "targets")
        families = self.names("families")
        for f in families:
            if f != "any" and f not in FAMILIES:
                raise self.fail(f"unknown family {f!r}; accepted: {', '.join(FAMILIES)}, any", "families")
        snippets = self.snippets(kind)
        gap = self.text("dsl-gap") if "dsl-gap" in self.data else None
        if kind == "recipe":
            roles = {s.role for s in snippets}
            if gap is not None and snippets:
                raise self.fail("a recipe with a 'dsl-gap' has no snippets (nothing in the language shows it yet)",
                                "dsl-gap")
            if gap is None and roles != {"before", "after"}:
                raise self.fail("a recipe shows its transformation with one ```python before and one ```python after "
                                "block in its body, or says why it cannot in 'dsl-gap'")
        applies = None
        if "applies-when" in self.data:
            applies = parse_conditions(self.data["applies-when"], self.path, self.data.line_of("applies-when"),
                                       self.language)
        return Entry(
            id=ident, title=self.text("title"), kind=kind, summary=self.text("summary"),
            targets=targets, families=families, sources=self.names("sources", free=True), path=self.path,
            body=self.doc.body, keywords=self.names("keywords", optional=True, free=True),
            requires=self.names("requires", optional=True), applies_when=applies,
            transformation=self.text("transformation") if "transformation" in self.data else None,
            controls=self.names("controls", optional=True, free=True),
            invariants=parse_invariants(self.data.get("invariants"), self.path, self.data.line_of("invariants")),
            benefit=self.benefit() if "benefit" in self.data else None,
            parameters=parse_parameters(self.data.get("parameters"), self.data.get("constraints"), self.path,
                                        self.data.line_of("parameters"), self.data.line_of("constraints")),
            dsl_gap=gap, facts=self.facts() if "facts" in self.data else (), snippets=snippets, pack=self.pack,
            key_lines=dict(self.data.key_lines),
        )

    def text(self, key: str) -> str:
        if key not in self.data:
            raise self.fail(f"the entry needs '{key}'")
        value = self.data[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"'{key}' is text; got {value!r}", key)
        return value.strip()

    def names(self, key: str, optional: bool = False, free: bool = False) -> tuple[str, ...]:
        if key not in self.data:
            if optional:
                return ()
            raise self.fail(f"the entry needs '{key}'")
        value = self.data[key]
        items = list(value) if isinstance(value, ListNode) else [value]
        if not items or not all(isinstance(x, str) and x.strip() for x in items):
            raise self.fail(f"'{key}' is a list of " + ("texts" if free else "names"), key)
        if len(set(items)) != len(items):
            raise self.fail(f"'{key}' lists an item twice", key)
        return tuple(x.strip() for x in items)

    def benefit(self) -> Benefit:
        value = self.data["benefit"]
        if isinstance(value, str):
            return Benefit(value.strip())
        if not isinstance(value, MappingNode) or "summary" not in value or not set(value) <= {"summary", "speedup",
                                                                                              "limit"}:
            raise self.fail("'benefit' is text, or a mapping with summary and optionally speedup [low, high] and "
                            "limit", "benefit")
        summary = value["summary"]
        if not isinstance(summary, str) or not summary.strip():
            raise self.fail("the benefit's summary is text", line=value.line_of("summary"))
        speedup = value.get("speedup")
        if speedup is not None:
            if (not isinstance(speedup, ListNode) or len(speedup) != 2
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in speedup)
                    or speedup[0] > speedup[1]):
                raise self.fail("speedup is [low, high]: two positive numbers, low <= high",
                                line=value.line_of("speedup"))
            speedup = (float(speedup[0]), float(speedup[1]))
        limit = value.get("limit")
        if limit is not None and limit not in LIMITS:
            raise self.fail(f"unknown limit {limit!r}; accepted: {', '.join(LIMITS)}", line=value.line_of("limit"))
        return Benefit(summary.strip(), speedup, limit)

    def facts(self) -> tuple[Fact, ...]:
        value = self.data["facts"]
        if not isinstance(value, ListNode) or not value:
            raise self.fail("'facts' is a list of mappings with name, value, unit and source", "facts")
        out = []
        for i, item in enumerate(value):
            at = value.line_of(i)
            if not isinstance(item, MappingNode) or set(item) != {"name", "value", "unit", "source"}:
                raise self.fail("a fact is a mapping with exactly name, value, unit and source", line=at)
            if not all(isinstance(item[k], str) for k in ("name", "unit", "source")) or not _ID.match(item["name"]):
                raise self.fail("a fact's name is lower-case words joined by '-'; its unit and source are text",
                                line=at)
            if isinstance(item["value"], (ListNode, MappingNode)):
                raise self.fail("a fact's value is a number or text", line=item.line_of("value"))
            out.append(Fact(item["name"], item["value"], item["unit"], item["source"]))
        names = [f.name for f in out]
        for dup in {n for n in names if names.count(n) > 1}:
            raise self.fail(f"fact {dup} is listed twice", "facts")
        return tuple(out)

    def snippets(self, kind: str) -> tuple[Snippet, ...]:
        allowed = ROLES[kind]
        lines = self.doc.body.split("\n")
        out: list[Snippet] = []
        i = 0
        while i < len(lines):
            match = _FENCE.match(lines[i])
            if not match:
                i += 1
                continue
            fence, language, role = match.groups()
            at = self.doc.body_line + i
            close = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
            if close is None:
                raise self.fail(f"the block opened with {fence} is never closed", line=at)
            if language == "python":
                if role not in allowed:
                    accepted = ", ".join(allowed) if allowed else "none: this kind shows no DSL code"
                    raise self.fail(f"a python block in a {kind} entry is a DSL snippet labelled with its role "
                                    f"(```python ROLE); got {role or 'no role'!r}; accepted: {accepted}", line=at)
                if kind == "recipe" and any(s.role == role for s in out):
                    raise self.fail(f"a second ```python {role} block; a recipe has one of each", line=at)
                code = "\n".join(lines[i + 1: close]) + "\n"
                if not code.strip():
                    raise self.fail(f"the ```python {role} block is empty", line=at)
                out.append(Snippet(role, code, at + 1))
            i = close + 1
        return tuple(out)
