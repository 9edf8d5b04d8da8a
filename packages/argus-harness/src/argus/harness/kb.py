"""Recipes as the planners use them, read from the knowledge base (`argus.kb`).

A recipe here is what a search can act on: an id, the targets and families it serves, its
tunable parameters (names, values, defaults, constraints over the kernel's sizes) and a way to
produce a candidate for a point of that space. A knowledge-base recipe produces its candidate
from its ``after`` snippet, with each parameter's module constant set to the point's value.
`TemplateRecipe` is the same from plain text, for recipes kept outside the knowledge base.
"""

from __future__ import annotations

import ast
import fnmatch
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .errors import CandidateError, PlannerError
from .extract import extract_candidate


class Recipe(Protocol):
    id: str
    title: str
    summary: str
    targets: tuple[str, ...]
    families: tuple[str, ...]
    invariants: tuple[str, ...]

    @property
    def parameters(self) -> dict[str, tuple[Any, ...]]:
        """Each parameter's values, in order."""

    def defaults(self) -> dict[str, Any]: ...

    def admits(self, point: Mapping[str, Any], sizes: Mapping[str, int]) -> bool: ...

    def instantiate(self, point: Mapping[str, Any]) -> str:
        """The candidate text for `point` (raises `CandidateError` when none can be made)."""

    def example(self) -> str:
        """DSL code showing the recipe (a few-shot example for a model)."""


def set_constants(text: str, values: Mapping[str, Any], filename: str = "recipe.py") -> str:
    """`text` with each module-level constant named in `values` given that value (also inside
    tuple assignments such as ``BM, BN = 64, 64``)."""
    tree = ast.parse(text, filename=filename)
    edits: list[tuple[int, int, int, int, str]] = []
    found: set[str] = set()
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        for target in stmt.targets:
            if isinstance(target, ast.Name) and target.id in values:
                edits.append(_span(stmt.value, repr(values[target.id])))
                found.add(target.id)
            elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) and \
                    len(target.elts) == len(stmt.value.elts):
                for name, value in zip(target.elts, stmt.value.elts):
                    if isinstance(name, ast.Name) and name.id in values:
                        edits.append(_span(value, repr(values[name.id])))
                        found.add(name.id)
    missing = sorted(set(values) - found)
    if missing:
        raise CandidateError(f"{filename}: no module constant {', '.join(missing)} to set")
    lines = text.splitlines(keepends=True)
    for line, col, end_line, end_col, new in sorted(edits, reverse=True):
        first, last = lines[line - 1], lines[end_line - 1]
        merged = first[:col] + new + last[end_col:]
        lines[line - 1:end_line] = [merged]
    return "".join(lines)


def _span(node: ast.expr, new: str) -> tuple[int, int, int, int, str]:
    assert node.end_lineno is not None and node.end_col_offset is not None
    return node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, new


def _kernel_name(text: str) -> str:
    for stmt in ast.parse(text).body:
        if isinstance(stmt, ast.FunctionDef):
            for deco in stmt.decorator_list:
                head = deco.func if isinstance(deco, ast.Call) else deco
                if isinstance(head, ast.Name) and head.id == "kernel":
                    return stmt.name
    raise CandidateError("the recipe's code defines no top-level @kernel function")


@dataclass(frozen=True)
class TemplateRecipe:
    """A recipe given as a kernel file whose module constants are its parameters."""

    id: str
    title: str
    template: str
    values: dict[str, tuple[Any, ...]]
    targets: tuple[str, ...] = ("*",)
    families: tuple[str, ...] = ("any",)
    summary: str = ""
    invariants: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    """Python expressions over the parameters and sizes that a point must satisfy."""
    default: dict[str, Any] = field(default_factory=dict)

    @property
    def parameters(self) -> dict[str, tuple[Any, ...]]:
        return dict(self.values)

    def defaults(self) -> dict[str, Any]:
        return {name: self.default.get(name, values[0]) for name, values in self.values.items()}

    def admits(self, point: Mapping[str, Any], sizes: Mapping[str, int]) -> bool:
        if any(point.get(n) not in v for n, v in self.values.items()):
            return False
        scope = {**sizes, **point}
        for text in self.constraints:
            try:
                if not _evaluate(text, scope):
                    return False
            except (NameError, KeyError):
                continue  # a size the task does not give: the constraint cannot be judged here
        return True

    def instantiate(self, point: Mapping[str, Any]) -> str:
        text = set_constants(self.template, dict(point), f"{self.id}.py")
        return extract_candidate(text, _kernel_name(text), f"{self.id}.py").text

    def example(self) -> str:
        return self.template


def _evaluate(text: str, scope: Mapping[str, Any]) -> bool:
    """A constraint: integer arithmetic and comparisons over `scope`'s names."""
    return bool(_arithmetic(ast.parse(text, mode="eval"), scope, text))


def _arithmetic(tree: ast.Expression, scope: Mapping[str, Any], text: str) -> Any:
    """The value of `tree` if it is only arithmetic and comparisons over constants and `scope`'s
    names (`NameError` for a name `scope` lacks)."""
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Expression, ast.BinOp, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.Name,
                                 ast.Constant, ast.Load, ast.operator, ast.cmpop, ast.boolop, ast.unaryop)):
            raise PlannerError(f"constraint {text!r}: only arithmetic and comparisons are accepted")
    missing = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} - set(scope)
    if missing:
        raise NameError(", ".join(sorted(missing)))
    return eval(compile(tree, "<constraint>", "eval"), {"__builtins__": {}}, dict(scope))


def failed_assumption(text: str, sizes: Mapping[str, int]) -> str | None:
    """The first ``assume(...)`` of the kernel in `text` that is false for `sizes`, judged from
    the module's numeric constants; None when each holds or cannot be judged from the text.

    A launch that breaks an assumption is refused (on the interpreter and on the GPU), so a
    candidate whose tiles do not divide a test shape can only fail its tests: a planner skips it
    instead of spending a round on it."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    scope: dict[str, Any] = {}
    kernels = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                pairs = list(zip(target.elts, stmt.value.elts)) if isinstance(target, ast.Tuple) and isinstance(
                    stmt.value, ast.Tuple) and len(target.elts) == len(stmt.value.elts) else [(target, stmt.value)]
                for name, value in pairs:
                    if isinstance(name, ast.Name):
                        scope.pop(name.id, None)
                        try:
                            scope[name.id] = _arithmetic(ast.Expression(value), scope, ast.unparse(value))
                        except (PlannerError, NameError, ArithmeticError, TypeError):
                            pass  # not a number the text alone gives (an atom, a layout)
        elif isinstance(stmt, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Name) and d.func.id == "kernel"
                for d in stmt.decorator_list):
            kernels.append(stmt)
    scope.update(sizes)
    for fn in kernels:
        for stmt in fn.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "assume"
                    and len(call.args) == 1):
                continue
            condition = ast.Expression(call.args[0])
            try:
                if not _arithmetic(condition, scope, ast.unparse(call.args[0])):
                    return ast.unparse(call)
            except (PlannerError, NameError, ArithmeticError, TypeError):
                continue
    return None


#: Module constants a search may move besides a recipe's declared parameters (tile shapes,
#: K slices, stages, tile-order groups, vector widths), with the range each may take: a
#: recipe's code fixes them at one value, and the best value depends on the task's sizes.
TUNABLES = {"BM": (32, 256), "BN": (32, 256), "BK": (16, 128), "STAGES": (2, 8), "GROUP": (1, 16), "VEC": (1, 8)}


def tunables(text: str, declared: Mapping[str, Any]) -> dict[str, tuple[int, ...]]:
    """The `TUNABLES` that `text` sets to an int at module level and that are not `declared`:
    each with its value as written, and halved and doubled where that stays in its range."""
    found: dict[str, tuple[int, ...]] = {}
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return found
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        for target in stmt.targets:
            pairs = [(target, stmt.value)]
            if isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple):
                pairs = list(zip(target.elts, stmt.value.elts))
            for name, value in pairs:
                if (isinstance(name, ast.Name) and name.id in TUNABLES and name.id not in declared
                        and isinstance(value, ast.Constant) and type(value.value) is int):
                    low, high = TUNABLES[name.id]
                    v = value.value
                    found[name.id] = tuple(x for x in (v // 2, v, v * 2) if x == v or low <= x <= high)
    return found


def _written(text: str, names: Mapping[str, Any]) -> dict[str, int]:
    scope: dict[str, int] = {}
    for stmt in ast.parse(text).body if names else []:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                pairs = list(zip(target.elts, stmt.value.elts)) if isinstance(target, ast.Tuple) and isinstance(
                    stmt.value, ast.Tuple) else [(target, stmt.value)]
                for name, value in pairs:
                    if isinstance(name, ast.Name) and name.id in names and isinstance(value, ast.Constant):
                        scope[name.id] = value.value
    return scope


class KbRecipe:
    """A knowledge-base recipe entry as a `Recipe` (its ``after`` snippet is the template)."""

    def __init__(self, entry: Any) -> None:
        self.entry = entry
        self.id: str = entry.id
        self.title: str = entry.title
        self.summary: str = entry.summary
        self.targets: tuple[str, ...] = tuple(entry.targets)
        self.families: tuple[str, ...] = tuple(entry.families)
        self.invariants: tuple[str, ...] = tuple(f"{i.id}: {i.says} ({i.template})" for i in entry.invariants)
        after = entry.snippet("after")
        self.template: str = after.code if after is not None else ""
        declared = {p.name: tuple(p.values) for p in entry.parameters.parameters}
        self.extra = tunables(self.template, declared)
        self.written = _written(self.template, self.extra)
        """The values the recipe's code gives the extra tunables."""
        self._parameters = {**declared, **self.extra}

    @property
    def parameters(self) -> dict[str, tuple[Any, ...]]:
        """The entry's parameters, then the tile constants its code fixes (see `TUNABLES`)."""
        return dict(self._parameters)

    def defaults(self) -> dict[str, Any]:
        return {**dict(self.entry.parameters.default()), **self.written}

    def admits(self, point: Mapping[str, Any], sizes: Mapping[str, int]) -> bool:
        """In the domains, and no constraint false; a constraint over a size this task does not
        give is left undecided (the others still count)."""
        if any(point.get(n) not in v for n, v in self._parameters.items()):
            return False
        scope = {**dict(sizes), **{n: point[n] for n in self._parameters}}
        for constraint in self.entry.parameters.constraints:
            try:
                if not constraint.evaluate(scope):
                    return False
            except (ValueError, KeyError, ArithmeticError):
                continue  # a size this task does not give: this constraint cannot be judged here
        return True

    def instantiate(self, point: Mapping[str, Any]) -> str:
        if not self.template:
            raise CandidateError(f"recipe {self.id} has no DSL code to instantiate")
        text = set_constants(self.template, dict(point), f"{self.id}.py")
        return extract_candidate(text, _kernel_name(text), f"{self.id}.py").text

    def example(self) -> str:
        before = self.entry.snippet("before")
        return (f"# before\n{before.code}\n# after\n" if before is not None else "") + self.template


class RecipeBook:
    """The recipes a run may use: those of the knowledge base (when `argus.kb` is installed) and
    any given directly."""

    def __init__(self, extra: Iterable[Recipe] = (), use_kb: bool = True) -> None:
        self.extra = list(extra)
        self.use_kb = use_kb
        self._kb: Any = None
        self.unavailable = ""

    def _knowledge_base(self) -> Any:
        if self._kb is None and self.use_kb:
            try:
                from argus.kb import KnowledgeBase

                self._kb = KnowledgeBase.load()
            except Exception as err:  # noqa: BLE001 - no knowledge base: the given recipes only
                self.unavailable = f"{type(err).__name__}: {err}"
                self.use_kb = False
        return self._kb

    def recipes(self, target: str, family: str, kernel: str = "", sizes: Mapping[str, int] | None = None
                ) -> list[Recipe]:
        """Recipes for `target` and `family` that may apply to `kernel` (the ones whose conditions
        are known to fail are left out), knowledge-base ranking first."""
        found: list[Recipe] = [r for r in self.extra if _covers(r.targets, target) and
                               ("any" in r.families or family in r.families)]
        kb = self._knowledge_base()
        if kb is not None:
            try:
                from argus.kb import describe_source

                description = describe_source(kernel, target=target, family=family, sizes=dict(sizes or {})) \
                    if kernel else None
                hits = kb.search("", target=target, family=family, kinds=["recipe"], kernel=description)
                for hit in hits:
                    entry = hit.entry
                    if entry.dsl_gap is None and entry.snippet("after") is not None:
                        found.append(KbRecipe(entry))
            except Exception as err:  # noqa: BLE001 - an unknown family or a changed API: given recipes only
                self.unavailable = f"{type(err).__name__}: {err}"
        return found

    def get(self, ident: str, target: str, family: str) -> Recipe | None:
        for recipe in self.recipes(target, family):
            if recipe.id == ident:
                return recipe
        return None


def _covers(patterns: Sequence[str], target: str) -> bool:
    return any(p in ("*", "any") or fnmatch.fnmatch(target, p) or target.startswith(p + ":") or target == p
               for p in patterns)


def points(recipe: Recipe, sizes: Mapping[str, int], limit: int = 100_000) -> Iterator[dict[str, Any]]:
    """The recipe's admitted points, in order (at most `limit` looked at)."""
    names = list(recipe.parameters)
    for values in itertools.islice(itertools.product(*recipe.parameters.values()), limit):
        point = dict(zip(names, values))
        if recipe.admits(point, sizes):
            yield point
