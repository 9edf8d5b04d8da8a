"""The candidate format, read without running any of it.

A candidate is the text of one kernel module in a closed form:

- a docstring, and imports from the language's modules only (see `language`);
- constants: ``NAME = expression`` over numbers, tuples, earlier constants and the language's
  compile-time functions (atoms, layouts, swizzles);
- ``@device`` helpers and exactly one ``@kernel(...)`` function;
- optionally ``def grid(<sizes>): return (...)``, the launch grid as arithmetic on the sizes the
  kernel's tensors name (and ``SMS``, the multiprocessor count).

Nothing else is accepted: no other import, statement or builtin, no private attribute. The
check works on the syntax tree alone (`ast.parse`), so a refused candidate has run no code
anywhere; an accepted one is compiled in a sandboxed subprocess (`sandbox`), where `loader`
builds its kernel without executing module-level Python.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from .errors import CandidateError, SourceLocation
from .language import (
    ATTRIBUTES,
    BUILTINS,
    DECORATORS,
    FORBIDDEN_BUILTINS,
    MODULES,
    WHOLE_MODULES,
    accepted_imports,
)

_TOP_LEVEL = ("a docstring, imports from the language's modules, constants (NAME = expression), "
              "@device and @kernel functions, and def grid(...)")


@dataclass(frozen=True)
class Parameter:
    """One kernel parameter as written: a tensor (dtype and dims), a scalar or a constexpr."""

    name: str
    kind: str
    dtype: str = ""
    dims: tuple[str | int, ...] = ()

    def text(self) -> str:
        if self.kind == "tensor":
            dims = ", ".join(repr(d) if isinstance(d, str) else str(d) for d in self.dims)
            return f"{self.name}: Tensor[{self.dtype}, {dims}]"
        return f"{self.name}: {self.dtype or self.kind}"


@dataclass(frozen=True)
class Candidate:
    """A candidate that passed the format check, and what the harness needs to know about it."""

    text: str
    kernel: str
    parameters: tuple[Parameter, ...]
    grid: tuple[str, ...] | None
    """The parameters of its ``grid`` function, or None when it has none."""
    aliases: dict[str, str] = field(default_factory=dict)
    """Module aliases (``nv`` -> ``argus.backends.nvptx.language``)."""
    tagged: frozenset[str] = frozenset()
    """Tensor parameters given a tag function."""
    assertions: int = 0
    """Tag assertions written in the kernel and its helpers."""
    filename: str = "candidate.py"

    def signature(self) -> str:
        return ", ".join(p.text() for p in self.parameters)


def parse_candidate(text: str, filename: str = "candidate.py") -> Candidate:
    """Check `text` against the candidate format; raises `CandidateError` naming the line and what
    is accepted."""
    if not isinstance(text, str) or not text.strip():
        raise CandidateError("a candidate is the text of a kernel module; got nothing",
                             SourceLocation(filename, 1, 1))
    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError as err:
        raise CandidateError(f"not Python syntax: {err.msg}",
                             SourceLocation(filename, err.lineno or 1, err.offset or 1)) from None
    except (RecursionError, MemoryError, ValueError) as err:  # nesting or size past the parser's limits
        raise CandidateError(f"the text cannot be parsed ({type(err).__name__}): expressions nest too deeply or "
                             "it is far too long for a kernel module", SourceLocation(filename, 1, 1)) from None
    return _Checker(filename).module(tree, text)


class _Checker:
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.globals: set[str] = set()
        self.aliases: dict[str, str] = {}

    def error(self, node: ast.AST, message: str) -> CandidateError:
        return CandidateError(message, SourceLocation.of(node, self.filename), _snippet(node))

    # ---- the top level -------------------------------------------------------------------
    def module(self, tree: ast.Module, text: str) -> Candidate:
        kernels: list[ast.FunctionDef] = []
        grid: ast.FunctionDef | None = None
        functions: list[ast.FunctionDef] = []
        for i, stmt in enumerate(tree.body):
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                continue
            if isinstance(stmt, ast.ImportFrom):
                self.import_from(stmt)
            elif isinstance(stmt, ast.Import):
                self.import_(stmt)
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    self.bind(target, top=True)
                self.expression(stmt.value, lambdas=False, constant=True)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
                self.bind(stmt.target, top=True)
                self.annotation(stmt.annotation)
                self.expression(stmt.value, lambdas=False, constant=True)
            elif isinstance(stmt, ast.FunctionDef):
                kind = self.decorator(stmt)
                if stmt.name in self.globals:
                    raise self.error(stmt, f"{stmt.name!r} is defined twice")
                self.name(stmt, stmt.name)
                self.globals.add(stmt.name)
                if kind == "kernel":
                    kernels.append(stmt)
                elif kind == "grid":
                    grid = stmt
                functions.append(stmt)
            else:
                raise self.error(stmt, f"{type(stmt).__name__} statements are not accepted at the top level of a "
                                       f"candidate; it holds {_TOP_LEVEL}")
        if len(kernels) != 1:
            where = kernels[1] if kernels else (tree.body[0] if tree.body else tree)
            raise self.error(where, f"a candidate defines exactly one @kernel function; found {len(kernels)}")
        for fn in functions:
            self.function(fn)
        kernel = kernels[0]
        if grid is not None:
            self.grid(grid)
        tagged, assertions = _tags(functions)
        return Candidate(text, kernel.name, self.parameters(kernel),
                         tuple(a.arg for a in grid.args.args) if grid is not None else None,
                         dict(self.aliases), frozenset(tagged), assertions, self.filename)

    def import_from(self, stmt: ast.ImportFrom) -> None:
        module = stmt.module or ""
        if stmt.level:
            raise self.error(stmt, f"relative imports are not accepted; a candidate imports only {accepted_imports()}")
        if module == "__future__":
            return
        for alias in stmt.names:
            if alias.name == "*":
                raise self.error(stmt, f"import * is not accepted; name what you use ({accepted_imports()})")
            full = f"{module}.{alias.name}"
            if full in WHOLE_MODULES:  # from argus.backends.nvptx import language as nv
                self.aliases[alias.asname or alias.name] = full
                self.bind_name(stmt, alias.asname or alias.name)
                continue
            if module not in MODULES:
                raise self.error(stmt, f"import from {module!r} is not accepted; a candidate imports only "
                                       f"{accepted_imports()}")
            allowed = MODULES[module]
            if allowed is not None and alias.name not in allowed:
                raise self.error(stmt, f"{alias.name!r} is not part of the language that {module} offers kernels")
            if alias.name.startswith("_"):
                raise self.error(stmt, f"private name {alias.name!r} cannot be imported")
            self.bind_name(stmt, alias.asname or alias.name)

    def import_(self, stmt: ast.Import) -> None:
        for alias in stmt.names:
            bound = alias.asname or alias.name
            if alias.name in WHOLE_MODULES and (alias.asname or "." not in alias.name):
                self.aliases[bound] = alias.name
                self.bind_name(stmt, bound)
                continue
            raise self.error(stmt, f"import {alias.name} is not accepted; a candidate imports only "
                                   f"{accepted_imports()}")

    def decorator(self, fn: ast.FunctionDef) -> str:
        if not fn.decorator_list:
            if fn.name != "grid":
                raise self.error(fn, f"function {fn.name!r} needs @kernel(...) or @device; the only plain function "
                                     "a candidate may define is grid(<sizes>)")
            return "grid"
        if len(fn.decorator_list) != 1:
            raise self.error(fn, "a function takes one decorator: @kernel(block=...) or @device")
        deco = fn.decorator_list[0]
        name = deco.func if isinstance(deco, ast.Call) else deco
        if not isinstance(name, ast.Name) or name.id not in DECORATORS or name.id not in self.globals:
            raise self.error(deco, "accepted decorators: @kernel(block=(...), ...) and @device, imported from argus.dsl")
        if name.id == "device" and isinstance(deco, ast.Call):
            raise self.error(deco, "write @device without arguments")
        if name.id == "kernel":
            if not isinstance(deco, ast.Call) or deco.args or not any(k.arg == "block" for k in deco.keywords):
                raise self.error(deco, "write the kernel decorator as @kernel(block=(threads, ...)[, warp_size=..., "
                                       "min_blocks_per_sm=..., max_registers=...])")
            for keyword in deco.keywords:  # the decorator checks its own options when the kernel is built
                if keyword.arg is None:
                    raise self.error(keyword, "@kernel takes named options: block=..., warp_size=..., ...")
                if keyword.arg == "verify":
                    raise self.error(keyword, "a candidate cannot turn its tag checks off (verify=...)")
                self.expression(keyword.value, lambdas=False)
        return name.id

    # ---- names ------------------------------------------------------------------------------
    def name(self, node: ast.AST, name: str) -> None:
        if name.startswith("_"):
            raise self.error(node, f"names starting with '_' are not accepted ({name!r})")
        if name in FORBIDDEN_BUILTINS and name not in self.globals:
            raise self.error(node, f"{name!r} is a Python builtin outside the language; accepted builtins: "
                                   f"{', '.join(sorted(BUILTINS - {'True', 'False', 'None'}))}")

    def bind_name(self, node: ast.AST, name: str) -> None:
        if name.startswith("_"):
            raise self.error(node, f"names starting with '_' are not accepted ({name!r})")
        self.globals.add(name)

    def bind(self, target: ast.expr, top: bool = False) -> None:
        if isinstance(target, ast.Name):
            self.name(target, target.id)
            if top:
                self.globals.add(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)) and not top or isinstance(target, ast.Tuple):
            for element in target.elts:
                self.bind(element, top)
        elif isinstance(target, ast.Subscript) and not top:
            self.expression(target.value, lambdas=False)
            self.expression(target.slice, lambdas=False)
        else:
            raise self.error(target, "assign to names (or, in a function, to tile and tensor elements)")

    # ---- functions -----------------------------------------------------------------------
    def function(self, fn: ast.FunctionDef) -> None:
        spec = fn.args
        if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.posonlyargs or spec.defaults:
            raise self.error(fn, f"{fn.name}: parameters are plain positional names without defaults")
        if fn.returns is not None:
            raise self.error(fn.returns, f"{fn.name}: no return annotation")
        for arg in spec.args:
            self.name(arg, arg.arg)
            if arg.annotation is not None:
                self.annotation(arg.annotation)
        for stmt in fn.body:
            self.statement(stmt)

    def annotation(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                parsed = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                raise self.error(node, "unreadable string annotation") from None
            self.annotation(parsed)
            return
        self.expression(node, lambdas=False)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                self.bind(target)
            self.expression(stmt.value)
        elif isinstance(stmt, ast.AugAssign):
            self.bind(stmt.target)
            self.expression(stmt.value)
        elif isinstance(stmt, ast.AnnAssign):
            self.bind(stmt.target)
            self.annotation(stmt.annotation)
            if stmt.value is not None:
                self.expression(stmt.value)
        elif isinstance(stmt, ast.Expr):
            self.expression(stmt.value)
        elif isinstance(stmt, ast.If):
            self.expression(stmt.test)
            for s in stmt.body + stmt.orelse:
                self.statement(s)
        elif isinstance(stmt, ast.For):
            if stmt.orelse:
                raise self.error(stmt, "for ... else is not part of the language")
            self.bind(stmt.target)
            self.expression(stmt.iter)
            for s in stmt.body:
                self.statement(s)
        elif isinstance(stmt, ast.Assert):
            self.expression(stmt.test)
            if stmt.msg is not None and not (isinstance(stmt.msg, ast.Constant) and isinstance(stmt.msg.value, str)):
                raise self.error(stmt.msg, "an assertion's message is a plain string")
        elif isinstance(stmt, ast.Return):
            if stmt.value is not None:
                self.expression(stmt.value)
        elif isinstance(stmt, ast.Pass):
            pass
        else:
            raise self.error(stmt, f"{type(stmt).__name__} statements are not part of the language; kernels use "
                                   "assignments, if/else, for over range/static_range, calls, assert and return "
                                   "(in @device helpers)")

    def grid(self, fn: ast.FunctionDef) -> None:
        body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
            raise self.error(fn, "grid(<sizes>) is one return statement: return (blocks_x[, blocks_y[, blocks_z]])")
        for node in ast.walk(body[0].value):
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in ("min", "max")):
                raise self.error(node, "grid(...) computes with integer arithmetic, min and max only")

    # ---- expressions ---------------------------------------------------------------------
    def expression(self, node: ast.expr, lambdas: bool = True, constant: bool = False) -> None:
        """Check an expression; `constant`: a module constant, which may also use dicts and
        comprehensions (computed once by the loader, never seen by the front-end)."""
        for child in ast.walk(node):
            if constant and isinstance(child, (ast.Dict, ast.ListComp, ast.GeneratorExp, ast.comprehension)):
                if isinstance(child, ast.comprehension) and (child.is_async or not isinstance(child.target, ast.Name)):
                    raise self.error(node, "a comprehension in a constant binds one name: (f(i) for i in range(n))")
                continue
            if isinstance(child, ast.Name):
                self.name(child, child.id)
            elif isinstance(child, ast.Attribute):
                if child.attr.startswith("_"):
                    raise self.error(child, f"private attribute {child.attr!r} is not accepted")
                base = child.value
                module = self.aliases.get(base.id) if isinstance(base, ast.Name) else None
                names = MODULES.get(module) if module else None
                if module is not None and names is not None and child.attr not in names:
                    raise self.error(child, f"{module}.{child.attr} is not accepted; accepted: {', '.join(sorted(names))}")
                if module is None and child.attr not in ATTRIBUTES:
                    raise self.error(child, f"attribute {child.attr!r} is not part of the language; accepted: "
                                            f"{', '.join(sorted(ATTRIBUTES))} and the names of an imported "
                                            "target language module")
            elif isinstance(child, ast.Lambda):
                if not lambdas:
                    raise self.error(child, "lambdas are accepted only as tag functions inside kernels")
                spec = child.args
                if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.defaults or spec.posonlyargs:
                    raise self.error(child, "a tag function takes plain coordinates: lambda i, j: (...)")
                for arg in spec.args:
                    self.name(child, arg.arg)
            elif isinstance(child, ast.Constant):
                if not isinstance(child.value, (int, float, str, bool)) and child.value not in (None, Ellipsis):
                    raise self.error(child, f"constant {child.value!r} is not accepted")
            elif isinstance(child, (ast.JoinedStr, ast.FormattedValue, ast.Await, ast.Yield, ast.YieldFrom,
                                    ast.NamedExpr, ast.Starred, ast.Dict, ast.Set, ast.ListComp, ast.SetComp,
                                    ast.DictComp, ast.GeneratorExp)):
                raise self.error(child, f"{type(child).__name__} is not part of the language")

    # ---- what the harness reads off the kernel -----------------------------------------------
    def parameters(self, fn: ast.FunctionDef) -> tuple[Parameter, ...]:
        out = []
        for arg in fn.args.args:
            ann = arg.annotation
            if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                ann = ast.parse(ann.value, mode="eval").body
            if ann is None:
                raise self.error(arg, f"parameter {arg.arg!r} needs an annotation: Tensor[dtype, dims...], a scalar "
                                      "dtype or constexpr")
            if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "Tensor":
                items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
                dtype = items[0].id if isinstance(items[0], ast.Name) else ast.unparse(items[0])
                dims: list[str | int] = []
                for item in items[1:]:
                    if isinstance(item, ast.Constant) and isinstance(item.value, (str, int)):
                        dims.append(item.value)
                    elif isinstance(item, ast.Name):
                        dims.append(item.id)
                    else:
                        raise self.error(item, "a tensor dim is an int or a name")
                out.append(Parameter(arg.arg, "tensor", dtype, tuple(dims)))
            elif isinstance(ann, ast.Name) and ann.id == "constexpr":
                out.append(Parameter(arg.arg, "constexpr"))
            elif isinstance(ann, ast.Name):
                out.append(Parameter(arg.arg, "scalar", ann.id))
            else:
                raise self.error(ann, "a parameter is Tensor[dtype, dims...], a scalar dtype or constexpr")
        return tuple(out)


def _tags(functions: list[ast.FunctionDef]) -> tuple[set[str], int]:
    """Tensor names given a tag function, and the number of tag assertions."""
    tagged: set[str] = set()
    assertions = 0
    for fn in functions:
        for node in ast.walk(fn):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "tag"
                    and len(node.args) == 2 and isinstance(node.args[0], ast.Name)):
                tagged.add(node.args[0].id)
            if isinstance(node, ast.Assert) and any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                                                    and c.func.id == "tag" for c in ast.walk(node.test)):
                assertions += 1
    return tagged, assertions


def _snippet(node: ast.AST) -> str:
    try:
        return ast.unparse(node).splitlines()[0][:120] if not isinstance(node, ast.FunctionDef) else f"def {node.name}(...)"
    except Exception:  # noqa: BLE001 - unparse of an odd node: no snippet
        return ""
