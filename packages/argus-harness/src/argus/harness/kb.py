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
import functools
import itertools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from argus.kb.expressions import Expression, ExpressionError

from .candidate import read_tree
from .errors import CandidateError, PlannerError
from .extract import extract_candidate, kernel_functions


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


def module_assignments(tree: ast.Module) -> Iterator[tuple[ast.Name, ast.expr]]:
    """Each module-level ``NAME = value``, also inside tuple assignments (``BM, BN = 64, 64``)."""
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        for target in stmt.targets:
            if isinstance(target, ast.Name):
                yield target, stmt.value
            elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) and \
                    len(target.elts) == len(stmt.value.elts):
                for name, value in zip(target.elts, stmt.value.elts):
                    if isinstance(name, ast.Name):
                        yield name, value


def set_constants(text: str, values: Mapping[str, Any], filename: str = "recipe.py") -> str:
    """`text` with each module-level constant named in `values` given that value (also inside
    tuple assignments such as ``BM, BN = 64, 64``)."""
    edits: list[tuple[int, int, int, int, str]] = []
    found: set[str] = set()
    for name, value in module_assignments(_module(text, filename)):
        if name.id in values:
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


def _module(text: str, filename: str) -> ast.Module:
    """The syntax tree of a recipe's or a candidate's text, within the candidate format's limits
    (`read_tree`): a text too long or nested too deep is a `CandidateError`, never a crash."""
    tree = read_tree(text, filename)
    assert isinstance(tree, ast.Module)
    return tree


def _kernel_name(text: str, filename: str) -> str:
    kernels = kernel_functions(_module(text, filename))
    if not kernels:
        raise CandidateError(f"{filename}: the recipe's code defines no top-level @kernel function")
    return kernels[0].name


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
    """Integer expressions over the parameters and sizes that a point must satisfy (the
    knowledge base's expression language: ``M % BM == 0``, ``BM * BK <= 4096``)."""
    default: dict[str, Any] = field(default_factory=dict)
    _checks: tuple[Expression, ...] = field(init=False, repr=False, compare=False, default=())

    def __post_init__(self) -> None:
        checks = []
        for text in self.constraints:
            try:
                checks.append(Expression.parse(text))
            except ExpressionError as err:
                raise PlannerError(f"recipe {self.id}: constraint {err}") from None
        object.__setattr__(self, "_checks", tuple(checks))

    @property
    def parameters(self) -> dict[str, tuple[Any, ...]]:
        return dict(self.values)

    def defaults(self) -> dict[str, Any]:
        return {name: self.default.get(name, values[0]) for name, values in self.values.items()}

    def admits(self, point: Mapping[str, Any], sizes: Mapping[str, int]) -> bool:
        return _admitted(self.values, self._checks, _parsed(self.template), point, sizes)

    def instantiate(self, point: Mapping[str, Any]) -> str:
        return _instantiate(self.id, self.template, point)

    def example(self) -> str:
        return self.template


def _instantiate(ident: str, template: str, point: Mapping[str, Any]) -> str:
    """The candidate of a recipe's kernel file `template` with its constants set to `point`."""
    filename = f"{ident}.py"
    text = set_constants(template, dict(point), filename)
    return extract_candidate(text, _kernel_name(text, filename), filename).text


def _admitted(domains: Mapping[str, tuple[Any, ...]], constraints: Iterable[Expression], tree: ast.Module | None,
              point: Mapping[str, Any], sizes: Mapping[str, int]) -> bool:
    """A point in the domains whose constraints hold, judged with the recipe code's integer
    constants at that point (a constraint may name ``REGS``, which no point sets), then the
    sizes; a constraint over a size this task does not give is left undecided."""
    if any(point.get(n) not in v for n, v in domains.items()):
        return False
    chosen = {n: point[n] for n in domains}
    constants = module_integers(tree, chosen) if tree is not None else {}
    for size in _size_names(tree) if tree is not None else ():
        constants.pop(size, None)  # an example's M = 64 is not the task's M: a size the task lacks stays unknown
    return _meets(constraints, {**constants, **dict(sizes), **chosen})


@functools.lru_cache(maxsize=256)
def _size_names(tree: ast.Module) -> frozenset[str]:
    """The names the module's kernels give their sizes and scalar arguments (``"M"`` in
    ``Tensor[bf16, "M", "K"]``, ``M: int``)."""
    names: set[str] = set()
    for fn in kernel_functions(tree):
        for arg in fn.args.args:
            names.add(arg.arg)
            for node in ast.walk(arg.annotation) if arg.annotation is not None else ():
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
                    names.add(node.value)
    return frozenset(names)


@functools.lru_cache(maxsize=256)
def _parsed(template: str) -> ast.Module | None:
    try:
        return _module(template, "recipe.py") if template else None
    except CandidateError:
        return None


def _meets(constraints: Iterable[Expression], scope: Mapping[str, Any]) -> bool:
    """False when a constraint is false in `scope`; one that cannot be judged there (a size
    the task does not give, a division by zero) does not count."""
    for constraint in constraints:
        try:
            if not constraint.evaluate(scope):
                return False
        except ExpressionError:
            continue
    return True


def _integer(value: ast.expr, scope: Mapping[str, Any]) -> int | None:
    """The value of an integer expression over `scope`'s names, or None when the text alone
    does not give one (an atom, a layout, a float)."""
    try:
        result = Expression.parse(ast.unparse(value)).evaluate(scope)
    except (ExpressionError, RecursionError):
        return None
    return result if isinstance(result, int) else None


def module_integers(tree: ast.Module, overrides: Mapping[str, Any] | None = None) -> dict[str, int]:
    """The module constants of `tree` whose values are integers computed from the text alone,
    in order (``STAGE_BYTES = (BM + BN) * BK * 2`` after ``BM``, ``BN`` and ``BK``); a name in
    `overrides` takes that value where it is assigned, and what is computed from it follows."""
    scope: dict[str, Any] = {}
    for name, value in module_assignments(tree):
        scope.pop(name.id, None)
        number = overrides[name.id] if overrides and name.id in overrides else _integer(value, scope)
        if isinstance(number, int):
            scope[name.id] = number
    return scope


def failed_assumption(text: str, sizes: Mapping[str, int]) -> str | None:
    """The first ``assume(...)`` of the kernel in `text` that is false for `sizes`, judged from
    the module's integer constants; None when each holds or cannot be judged from the text.

    A launch that breaks an assumption is refused (on the interpreter and on the GPU), so a
    candidate whose tiles do not divide a test shape can only fail its tests: a planner skips it
    instead of spending a round on it."""
    try:
        tree = _module(text, "candidate.py")
    except CandidateError:
        return None
    scope = {**module_integers(tree), **sizes}
    for fn in kernel_functions(tree):
        for stmt in fn.body:
            call = stmt.value if isinstance(stmt, ast.Expr) else None
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "assume"
                    and len(call.args) == 1):
                continue
            held = _integer(call.args[0], scope)
            if held is not None and not held:
                return ast.unparse(call)
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
        tree = _module(text, "recipe.py")
    except CandidateError:
        return found
    for name, value in module_assignments(tree):
        if (name.id in TUNABLES and name.id not in declared and isinstance(value, ast.Constant)
                and type(value.value) is int):
            low, high = TUNABLES[name.id]
            v = value.value
            found[name.id] = tuple(x for x in (v // 2, v, v * 2) if x == v or low <= x <= high)
    return found


def _written(text: str, names: Mapping[str, Any]) -> dict[str, Any]:
    """The values `text` gives the module constants in `names`, where it writes them as literals."""
    if not names:
        return {}
    return {name.id: value.value for name, value in module_assignments(_module(text, "recipe.py"))
            if name.id in names and isinstance(value, ast.Constant)}


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
        self.code_targets = _code_targets(self.template)
        """The targets the recipe's code says it runs on (its ``TARGETS``), () when it does not say."""

    @property
    def parameters(self) -> dict[str, tuple[Any, ...]]:
        """The entry's parameters, then the tile constants its code fixes (see `TUNABLES`)."""
        return dict(self._parameters)

    def defaults(self) -> dict[str, Any]:
        return {**dict(self.entry.parameters.default()), **self.written}

    def admits(self, point: Mapping[str, Any], sizes: Mapping[str, int]) -> bool:
        return _admitted(self._parameters, self.entry.parameters.constraints, _parsed(self.template), point, sizes)

    def instantiate(self, point: Mapping[str, Any]) -> str:
        if not self.template:
            raise CandidateError(f"recipe {self.id} has no DSL code to instantiate")
        return _instantiate(self.id, self.template, point)

    def example(self) -> str:
        before = self.entry.snippet("before")
        return (f"# before\n{before.code}\n# after\n" if before is not None else "") + self.template


class RecipeBook:
    """The recipes a run may use: those of the knowledge base (unless `use_kb` is false) and
    any given directly. `unavailable` says why the knowledge base gave none, if it did not."""

    def __init__(self, extra: Iterable[Recipe] = (), use_kb: bool = True) -> None:
        self.extra = list(extra)
        self.use_kb = use_kb
        self._kb: Any = None
        self.unavailable = ""

    def _knowledge_base(self) -> Any:
        if self._kb is None and self.use_kb:
            from argus.kb import KbError, KnowledgeBase

            try:
                self._kb = KnowledgeBase.load()
            except KbError as err:  # a damaged entry or pack: the given recipes only, and say why
                self.unavailable = f"the knowledge base cannot be loaded: {err}"
                self.use_kb = False
        return self._kb

    def recipes(self, target: str, family: str, kernel: str = "", sizes: Mapping[str, int] | None = None
                ) -> list[Recipe]:
        """Recipes for `target` and `family` that may apply to `kernel` (the ones whose conditions
        are known to fail are left out), knowledge-base ranking first. A family the knowledge
        base does not name gets its recipes for any family."""
        found: list[Recipe] = [r for r in self.extra if _covers(r.targets, target) and
                               ("any" in r.families or family in r.families)]
        kb = self._knowledge_base()
        if kb is None:
            return found
        from argus.kb import KbError, describe_source
        from argus.kb.targets import check_pattern
        from argus.kb.vocabulary import FAMILIES

        # a target or family the knowledge base does not name (the interpreter, say) gets the
        # recipes written for any target or any family
        on = target if check_pattern(target) is None else None
        known = family if family in FAMILIES else None
        try:
            description = describe_source(kernel, target=on, family=known, sizes=dict(sizes or {}),
                                          language=kb.language) if kernel else None
            hits = kb.search("", target=on, family=known, kinds=["recipe"], kernel=description)
        except KbError as err:  # a kernel it cannot read
            self.unavailable = f"the knowledge base could not judge the kernel: {err}"
            return found
        for hit in hits:
            entry = hit.entry
            if (on is None and "any" not in entry.targets) or (known is None and "any" not in entry.families):
                continue
            if entry.dsl_gap is None and entry.snippet("after") is not None:
                recipe = KbRecipe(entry)
                if on is not None and "*" not in target and recipe.code_targets and \
                        not _covers(recipe.code_targets, target):
                    continue  # the entry covers the target, but its code is written for another
                found.append(recipe)
        return found


def _code_targets(text: str) -> tuple[str, ...]:
    """The module's ``TARGETS = ("nvptx:sm_90a", ...)``, or () where it writes none."""
    tree = _parsed(text)
    for name, value in module_assignments(tree) if tree is not None else ():
        if name.id == "TARGETS":
            try:
                found = ast.literal_eval(value)
            except (ValueError, TypeError, SyntaxError, RecursionError):
                return ()
            return tuple(found) if isinstance(found, (tuple, list)) and all(isinstance(x, str) for x in found) else ()
    return ()


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
