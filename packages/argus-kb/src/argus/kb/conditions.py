"""Applicability conditions: when a recipe applies to a kernel, as data a program evaluates.

An entry's ``applies-when`` is a list of conditions that must all hold. Each is a one-key
mapping:

    uses: matmul                 the kernel uses these language names (a name or a list: all)
    target: nvptx:*              the kernel's target matches this pattern (a list: any)
    feature: wgmma               the target has this feature
    dtype: f8e4m3                the kernel uses this element type (a list: all)
    divisible: {K: 64, M: 128}   each size is a multiple of its number
    shape: K >= 8 * max(M, N)    an integer expression over the sizes (`expressions`)
    all: [...] / any: [...]      every one / at least one of the conditions listed under it
    not: {uses: cp_async}        the condition under it does not hold

Evaluation is three-valued: a condition needing something the kernel description leaves out
(an unknown target, a size not given) is `UNKNOWN`, never silently true or false. `all`
is NO as soon as one part is NO, `any` YES as soon as one part is YES.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from .description import KernelDescription
from .errors import EntryError
from .expressions import Expression, ExpressionError
from .frontmatter import ListNode, MappingNode
from .targets import FEATURES, check_pattern, matches
from .vocabulary import DTYPES

FORMS = ("uses", "target", "feature", "dtype", "divisible", "shape", "all", "any", "not")


class Truth(enum.Enum):
    YES = "yes"
    NO = "no"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Applicability:
    truth: Truth
    reasons: tuple[str, ...]
    """What decided it: the facts that held (YES), failed (NO) or were missing (UNKNOWN)."""

    @property
    def applies(self) -> bool:
        return self.truth is Truth.YES


class Condition:
    """One condition of an ``applies-when`` list."""

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        raise NotImplementedError

    def walk(self) -> Iterator[Condition]:
        yield self

    def as_data(self) -> Any:
        """The condition as plain data, in the form it is written in an entry."""
        raise NotImplementedError


def _fact(truth: bool, yes: str, no: str) -> Applicability:
    return Applicability(Truth.YES, (yes,)) if truth else Applicability(Truth.NO, (no,))


def _unknown(reason: str) -> Applicability:
    return Applicability(Truth.UNKNOWN, (reason,))


@dataclass(frozen=True)
class Uses(Condition):
    names: tuple[str, ...]

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        if kernel.uses is None:
            return _unknown(f"which language names the kernel uses is unknown (needed: {', '.join(self.names)})")
        return _combine_all([_fact(n in kernel.uses, f"uses {n}", f"does not use {n}") for n in self.names])

    def as_data(self) -> Any:
        return {"uses": self.names[0] if len(self.names) == 1 else list(self.names)}


@dataclass(frozen=True)
class TargetIs(Condition):
    patterns: tuple[str, ...]

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        shown = " or ".join(self.patterns)
        if kernel.target is None:
            return _unknown(f"the target is unknown (needed: {shown})")
        hit = any(matches(p, kernel.target) for p in self.patterns)
        return _fact(hit, f"target {kernel.target} is {shown}", f"target {kernel.target} is not {shown}")

    def as_data(self) -> Any:
        return {"target": self.patterns[0] if len(self.patterns) == 1 else list(self.patterns)}


@dataclass(frozen=True)
class Feature(Condition):
    name: str

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        features = kernel.target_features()
        if features is None:
            return _unknown(f"the features of target {kernel.target or '(unknown)'} are unknown (needed: {self.name})")
        return _fact(self.name in features, f"target {kernel.target} has {self.name}",
                     f"target {kernel.target} lacks {self.name}")

    def as_data(self) -> Any:
        return {"feature": self.name}


@dataclass(frozen=True)
class DType(Condition):
    names: tuple[str, ...]

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        if kernel.dtypes is None:
            return _unknown(f"the kernel's element types are unknown (needed: {', '.join(self.names)})")
        parts = [_fact(n in kernel.dtypes, f"has {n} data", f"has no {n} data") for n in self.names]
        return _combine_all(parts)

    def as_data(self) -> Any:
        return {"dtype": self.names[0] if len(self.names) == 1 else list(self.names)}


@dataclass(frozen=True)
class Divisible(Condition):
    divisors: tuple[tuple[str, int], ...]

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        parts = []
        for name, by in self.divisors:
            value = kernel.sizes.get(name)
            if value is None:
                parts.append(_unknown(f"size {name} is unknown (needed: a multiple of {by})"))
            else:
                parts.append(_fact(value % by == 0, f"{name} = {value} is a multiple of {by}",
                                   f"{name} = {value} is not a multiple of {by}"))
        return _combine_all(parts)

    def as_data(self) -> Any:
        return {"divisible": dict(self.divisors)}


@dataclass(frozen=True)
class Shape(Condition):
    expression: Expression

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        missing = sorted(self.expression.names - set(kernel.sizes))
        if missing:
            return _unknown(f"{self.expression.text} needs sizes {', '.join(missing)}")
        try:
            held = bool(self.expression.evaluate(kernel.sizes))
        except ExpressionError as err:
            return _unknown(str(err))
        shown = ", ".join(f"{n} = {kernel.sizes[n]}" for n in sorted(self.expression.names))
        return _fact(held, f"{self.expression.text} holds ({shown})", f"{self.expression.text} fails ({shown})")

    def as_data(self) -> Any:
        return {"shape": self.expression.text}


@dataclass(frozen=True)
class All(Condition):
    parts: tuple[Condition, ...]

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        return _combine_all([p.evaluate(kernel) for p in self.parts])

    def walk(self) -> Iterator[Condition]:
        yield self
        for p in self.parts:
            yield from p.walk()

    def as_data(self) -> Any:
        return {"all": [p.as_data() for p in self.parts]}


@dataclass(frozen=True)
class AnyOf(Condition):
    parts: tuple[Condition, ...]

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        results = [p.evaluate(kernel) for p in self.parts]
        for truth in (Truth.YES, Truth.UNKNOWN):
            chosen = [r for r in results if r.truth is truth]
            if chosen:
                return Applicability(truth, tuple(x for r in chosen for x in r.reasons))
        return Applicability(Truth.NO, tuple(x for r in results for x in r.reasons))

    def walk(self) -> Iterator[Condition]:
        yield self
        for p in self.parts:
            yield from p.walk()

    def as_data(self) -> Any:
        return {"any": [p.as_data() for p in self.parts]}


@dataclass(frozen=True)
class Not(Condition):
    part: Condition

    def evaluate(self, kernel: KernelDescription) -> Applicability:
        inner = self.part.evaluate(kernel)
        flipped = {Truth.YES: Truth.NO, Truth.NO: Truth.YES, Truth.UNKNOWN: Truth.UNKNOWN}[inner.truth]
        return Applicability(flipped, inner.reasons)

    def walk(self) -> Iterator[Condition]:
        yield self
        yield from self.part.walk()

    def as_data(self) -> Any:
        return {"not": self.part.as_data()}


def _combine_all(results: list[Applicability]) -> Applicability:
    for truth in (Truth.NO, Truth.UNKNOWN):
        chosen = [r for r in results if r.truth is truth]
        if chosen:
            return Applicability(truth, tuple(x for r in chosen for x in r.reasons))
    return Applicability(Truth.YES, tuple(x for r in results for x in r.reasons))


# ---- reading conditions from an entry ------------------------------------------------------


def parse_conditions(value: Any, path: str | PurePath, line: int, names: frozenset[str]) -> All:
    """The ``applies-when`` list (or single condition) `value`, found at `line` of `path`;
    `names` are the language names ``uses`` may mention."""
    if isinstance(value, ListNode):
        return All(tuple(_parse(v, path, value.line_of(i), names) for i, v in enumerate(value)))
    return All((_parse(value, path, line, names),))


def _parse(value: Any, path: str | PurePath, line: int, names: frozenset[str]) -> Condition:
    def fail(message: str, at: int = line) -> EntryError:
        return EntryError(path, at, message)

    if not isinstance(value, MappingNode) or len(value) != 1:
        raise fail(f"a condition is a mapping with one key, one of {', '.join(FORMS)}; got {_show(value)}")
    form, arg = next(iter(value.items()))
    at = value.line_of(form)
    if form in ("all", "any"):
        if not isinstance(arg, ListNode) or not arg:
            raise fail(f"'{form}' takes a list of conditions", at)
        parts = tuple(_parse(v, path, arg.line_of(i), names) for i, v in enumerate(arg))
        return All(parts) if form == "all" else AnyOf(parts)
    if form == "not":
        return Not(_parse(arg, path, at, names))
    if form == "uses":
        used = _strings(arg, form, fail, at)
        unknown = [n for n in used if n not in names]
        if unknown:
            raise fail(f"'uses' names {', '.join(unknown)}, which the language does not have; "
                       f"it has: {', '.join(sorted(names))}", at)
        return Uses(used)
    if form == "target":
        patterns = _strings(arg, form, fail, at)
        for p in patterns:
            problem = check_pattern(p)
            if problem:
                raise fail(problem, at)
        return TargetIs(patterns)
    if form == "feature":
        if not isinstance(arg, str) or arg not in FEATURES:
            raise fail(f"unknown feature {_show(arg)}; known: {', '.join(sorted(FEATURES))}", at)
        return Feature(arg)
    if form == "dtype":
        types = _strings(arg, form, fail, at)
        unknown = [t for t in types if t not in DTYPES]
        if unknown:
            raise fail(f"unknown element type {', '.join(unknown)}; known: {', '.join(sorted(DTYPES))}", at)
        return DType(types)
    if form == "divisible":
        if not isinstance(arg, MappingNode) or not arg:
            raise fail("'divisible' takes a mapping of sizes to positive ints, e.g. {K: 64, M: 128}", at)
        for name, by in arg.items():
            if not name.isidentifier() or not isinstance(by, int) or isinstance(by, bool) or by < 1:
                raise fail(f"'divisible' maps size names to positive ints; got {name}: {_show(by)}", at)
        return Divisible(tuple(arg.items()))
    if form == "shape":
        if not isinstance(arg, str):
            raise fail("'shape' takes an expression over the sizes, e.g. K >= 4 * M", at)
        try:
            return Shape(Expression.parse(arg))
        except ExpressionError as err:
            raise fail(str(err), at) from None
    raise fail(f"unknown condition {form!r}; accepted: {', '.join(FORMS)}", at)


def _strings(arg: Any, form: str, fail: Any, at: int) -> tuple[str, ...]:
    items = list(arg) if isinstance(arg, ListNode) else [arg]
    if not items or not all(isinstance(x, str) for x in items):
        raise fail(f"'{form}' takes a name or a list of names; got {_show(arg)}", at)
    return tuple(items)


def _show(value: Any) -> str:
    if isinstance(value, MappingNode):
        return "a mapping with keys " + ", ".join(value) if value else "an empty mapping"
    if isinstance(value, ListNode):
        return "a list"
    return repr(value)
