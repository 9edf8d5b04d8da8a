"""Tunable parameters of a recipe, as data a search can enumerate.

Each parameter names the identifier it sets in the recipe's code (``STAGES``, ``BK``) and its
domain; ``constraints`` are integer expressions over the parameters and the kernel's sizes
that a point must satisfy (``STAGES * (BM + BN) * BK * 2 <= 232448``). An offline planner
walks `ParameterSpace.points`; a model may propose a point and have it checked with `admits`.

    parameters:
      - name: STAGES
        says: K slices in shared memory at once
        values: [2, 3, 4]                    # or range: {min: 1, max: 16, step: 1}
        default: 3                           # or powers-of-two: {min: 16, max: 256}
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from .errors import EntryError, KbError
from .expressions import Expression, ExpressionError
from .frontmatter import ListNode, MappingNode, Scalar

#: The most values one parameter's domain may hold.
MAX_VALUES = 4096
_DOMAINS = ("values", "range", "powers-of-two")


@dataclass(frozen=True)
class Parameter:
    name: str
    values: tuple[Scalar, ...]
    default: Scalar
    says: str

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, int) and not isinstance(v, bool) for v in self.values)


@dataclass(frozen=True)
class ParameterSpace:
    parameters: tuple[Parameter, ...] = ()
    constraints: tuple[Expression, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.parameters)

    @property
    def size(self) -> int:
        """Points before the constraints are applied."""
        n = 1
        for p in self.parameters:
            n *= len(p.values)
        return n

    def default(self) -> dict[str, Scalar]:
        return {p.name: p.default for p in self.parameters}

    def admits(self, point: Mapping[str, Scalar], sizes: Mapping[str, int] | None = None) -> bool:
        """Whether `point` gives every parameter a value of its domain and meets the constraints."""
        if set(point) != set(self.names):
            raise KbError(f"a point gives values to {', '.join(sorted(point)) or 'nothing'}; "
                          f"the parameters are {', '.join(self.names) or 'none'}")
        for p in self.parameters:
            if point[p.name] not in p.values:
                return False
        return self._meets(point, sizes or {})

    def points(self, sizes: Mapping[str, int] | None = None) -> Iterator[dict[str, Scalar]]:
        """Every point of the domain that meets the constraints, in the order the values are listed."""
        for values in itertools.product(*(p.values for p in self.parameters)):
            point = dict(zip(self.names, values))
            if self._meets(point, sizes or {}):
                yield point

    def _meets(self, point: Mapping[str, Scalar], sizes: Mapping[str, int]) -> bool:
        scope: dict[str, Any] = {**sizes, **point}
        for c in self.constraints:
            try:
                if not c.evaluate(scope):
                    return False
            except ExpressionError as err:
                raise KbError(f"constraint {c.text!r}: {err}; give the kernel's sizes") from None
        return True


def parse_parameters(value: Any, constraints: Any, path: str | PurePath, line: int, constraints_line: int
                     ) -> ParameterSpace:
    """The ``parameters`` list and ``constraints`` list of an entry."""
    def fail(message: str, at: int) -> EntryError:
        return EntryError(path, at, message)

    params: list[Parameter] = []
    if value is not None:
        if not isinstance(value, ListNode):
            raise fail("'parameters' is a list of mappings with name, says, a domain and default", line)
        for i, item in enumerate(value):
            params.append(_parameter(item, fail, value.line_of(i)))
    names = [p.name for p in params]
    for name in names:
        if names.count(name) > 1:
            raise fail(f"parameter {name} is listed twice", line)
    checks: list[Expression] = []
    if constraints is not None:
        if not isinstance(constraints, ListNode) or not all(isinstance(c, str) for c in constraints):
            raise fail("'constraints' is a list of expressions over the parameters and sizes", constraints_line)
        numeric = {p.name for p in params if p.numeric}
        for i, text in enumerate(constraints):
            try:
                expression = Expression.parse(text)
            except ExpressionError as err:
                raise fail(str(err), constraints.line_of(i)) from None
            textual = sorted((expression.names & set(names)) - numeric)
            if textual:
                raise fail(f"constraint {text!r} uses {', '.join(textual)}, whose values are not all integers",
                           constraints.line_of(i))
            if not expression.names & set(names):
                raise fail(f"constraint {text!r} names no parameter; sizes alone belong in applies-when",
                           constraints.line_of(i))
            checks.append(expression)
    return ParameterSpace(tuple(params), tuple(checks))


def _parameter(item: Any, fail: Any, at: int) -> Parameter:
    if not isinstance(item, MappingNode):
        raise fail("a parameter is a mapping with name, says, a domain (values, range or powers-of-two) and "
                   "default", at)
    allowed = {"name", "says", "default", *_DOMAINS}
    extra = sorted(set(item) - allowed)
    if extra:
        raise fail(f"unknown key(s) {', '.join(extra)} in a parameter; accepted: {', '.join(sorted(allowed))}",
                   item.line_of(extra[0]))
    name = item.get("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise fail(f"a parameter's name is the identifier it sets in the code; got {name!r}", at)
    says = item.get("says")
    if not isinstance(says, str) or not says.strip():
        raise fail(f"parameter {name} needs 'says': what it controls", at)
    domains = [d for d in _DOMAINS if d in item]
    if len(domains) != 1:
        raise fail(f"parameter {name} needs exactly one domain: values, range or powers-of-two", at)
    kind = domains[0]
    where = item.line_of(kind)
    values = _domain(kind, item[kind], name, fail, where)
    if len(set(values)) != len(values):
        raise fail(f"parameter {name} lists a value twice", where)
    if "default" not in item:
        raise fail(f"parameter {name} needs a default (the value the recipe's code uses)", at)
    default = item["default"]
    if default not in values:
        raise fail(f"the default of {name}, {default!r}, is not in its domain {list(values)}", item.line_of("default"))
    return Parameter(name, values, default, says.strip())


def _domain(kind: str, spec: Any, name: str, fail: Any, at: int) -> tuple[Scalar, ...]:
    if kind == "values":
        if not isinstance(spec, ListNode) or not spec or any(isinstance(v, (list, dict)) for v in spec):
            raise fail(f"the values of {name} are a non-empty [list] of scalars", at)
        return tuple(spec)
    if not isinstance(spec, MappingNode) or not set(spec) <= {"min", "max", "step"} or {"min", "max"} - set(spec):
        raise fail(f"{kind} of {name} is {{min: A, max: B}}" + (" with an optional step" if kind == "range" else ""),
                   at)
    low, high, step = spec["min"], spec["max"], spec.get("step", 1)
    if kind == "powers-of-two" and "step" in spec:
        raise fail(f"powers-of-two of {name} takes no step", at)
    if not all(isinstance(x, int) and not isinstance(x, bool) for x in (low, high, step)) or step < 1 or low > high:
        raise fail(f"{kind} of {name} needs integers min <= max" + (" and step >= 1" if kind == "range" else ""), at)
    if kind == "range":
        if (high - low) // step + 1 > MAX_VALUES:
            raise fail(f"range of {name} holds more than {MAX_VALUES} values", at)
        return tuple(range(low, high + 1, step))
    if low < 1 or low & (low - 1) or high & (high - 1):
        raise fail(f"powers-of-two of {name} needs min and max that are powers of two", at)
    out, v = [], low
    while v <= high:
        out.append(v)
        v *= 2
    return tuple(out)
