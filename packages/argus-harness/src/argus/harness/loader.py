"""Building the kernel of a checked candidate, inside the sandboxed worker.

Module-level Python is never executed: imports bind the language's objects by name, constants
are computed by the evaluator of `constants` over the syntax tree (plain data and the language's
values only), and functions are created from their ``def`` alone — decorators, defaults and
return annotations absent, parameter annotations left as text, so creating them evaluates
nothing. The functions' globals hold only the candidate's constants, the language names it
imports, its ``@device`` helpers and the builtins as kernel code may call them (``round``
bounded, every builtin outside the language a marker; no kernel, no grid), and the DSL
front-end then reads each kernel's source from the file the loader wrote, as it reads any
kernel, once that file reads back as the checked text. The format check (`candidate`) has
refused anything else already; the loader checks the same again, so that a candidate that
reaches it by another path still runs nothing.
"""

from __future__ import annotations
import __future__

import ast
import linecache
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus.dsl import device, kernel
from argus.dsl.kernel import Kernel

from .candidate import Candidate, read_tree
from .constants import Evaluator, bounded_round
from .errors import CandidateError, SourceLocation
from .language import (
    BUILTINS,
    FORBIDDEN_BUILTINS,
    KERNEL_OPTIONS,
    MODULES,
    WHOLE_MODULES,
    language_object,
    module_view,
    offered,
)
from .limits import MAX_FUNCTIONS, MAX_GRID


@dataclass
class Loaded:
    """A candidate's kernel and its launch grid function (None: the task's grid)."""

    kernel: Kernel
    namespace: dict[str, Any]
    """The candidate's constants and the language names it imports."""
    grid_node: ast.FunctionDef | None
    filename: str
    protected: frozenset[str] = frozenset()
    """Names of the language here (imports, builtins), which nothing may rebind."""

    def grid(self, sizes: dict[str, int]) -> tuple[int, ...]:
        """The launch grid for these sizes."""
        if self.grid_node is None:
            raise CandidateError("the candidate has no grid(<sizes>) function and the task gives no grid")
        args = {}
        for a in self.grid_node.args.args:
            if a.arg not in sizes:
                raise CandidateError(f"grid() takes {a.arg!r}, which is none of the sizes the kernel's tensors name "
                                     f"({', '.join(sorted(sizes))})", SourceLocation.of(a, self.filename))
            if a.arg in self.protected:
                raise CandidateError(f"grid() parameter {a.arg!r} is a name of the language",
                                     SourceLocation.of(a, self.filename))
            args[a.arg] = sizes[a.arg]
        body = [s for s in self.grid_node.body if isinstance(s, ast.Return)]
        if len(body) != 1 or body[0].value is None:
            raise CandidateError("grid(<sizes>) is one return statement", SourceLocation.of(self.grid_node, self.filename))
        value = Evaluator({**self.namespace, **args}, self.filename, self.protected).value(body[0].value)
        dims = value if isinstance(value, tuple) else (value,)
        if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) and 1 <= d <= most
                                              for d, most in zip(dims, MAX_GRID)):
            shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:80] + "..."
            raise CandidateError(f"grid({', '.join(f'{k}={v}' for k, v in args.items())}) gave {shown}; a grid is 1 to "
                                 f"3 positive ints, at most {MAX_GRID[0]} along x and {MAX_GRID[1]} along y and z",
                                 SourceLocation.of(self.grid_node, self.filename))
        return tuple(dims)


def load_candidate(candidate: Candidate, path: Path) -> Loaded:
    """Build `candidate`'s kernel; its text is written to `path` so that the front-end (and its
    error messages) can read the lines."""
    filename = str(path)
    tree = read_tree(candidate.text, filename)
    assert isinstance(tree, ast.Module)
    _write_source(candidate.text, path)
    namespace: dict[str, Any] = {}
    protected: set[str] = set(BUILTINS)
    evaluator = Evaluator(namespace, filename, protected)
    functions: list[ast.FunctionDef] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom):
            _import_from(stmt, namespace, protected, filename)
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                _bind(stmt, alias.asname or alias.name, _whole(alias.name, stmt, filename), namespace, protected, filename)
        elif isinstance(stmt, ast.Assign):
            value = evaluator.value(stmt.value)
            for target in stmt.targets:
                evaluator.assign(target, value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            evaluator.assign(stmt.target, evaluator.value(stmt.value))
        elif isinstance(stmt, ast.FunctionDef):
            functions.append(stmt)
        elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            raise CandidateError(f"{type(stmt).__name__} statements are not accepted at the top level of a candidate",
                                 SourceLocation.of(stmt, filename))
    if len(functions) > MAX_FUNCTIONS:
        raise CandidateError(f"a candidate defines at most {MAX_FUNCTIONS} functions; this is one more",
                             SourceLocation.of(functions[MAX_FUNCTIONS], filename))
    _unshadowed(functions, protected, filename)
    grid_node = _grid(functions, filename)
    code = [fn for fn in functions if fn is not grid_node]  # the grid is computed by the evaluator, never created
    options = {fn.name: _kernel_options(fn, evaluator, filename) for fn in code}
    kernels = [fn for fn in code if options[fn.name] is not None]
    if len(kernels) != 1:
        raise CandidateError(f"a candidate defines exactly one @kernel function; found {len(kernels)}",
                             SourceLocation(filename, 1, 1))
    # the functions' globals: constants and language names (the decorators are applied here, not
    # named in code), the builtins as the front-end may call them, and the helpers; nothing in
    # them is ever run as Python
    scope: dict[str, Any] = {k: v for k, v in namespace.items() if v is not kernel and v is not device}
    scope.update(_kernel_builtins(scope))
    scope["__builtins__"] = {}
    made = _functions(code, scope, filename)
    for fn in code:
        if options[fn.name] is None:
            scope[fn.name] = device(made[fn.name])  # every function sees the helpers, wherever defined
    fn = kernels[0]
    try:
        found = kernel(made[fn.name], **options[fn.name])  # type: ignore[arg-type]
    except Exception as err:  # noqa: BLE001 - the decorator's own message, at the line
        raise CandidateError(f"@kernel: {err}", SourceLocation.of(fn.decorator_list[0], filename)) from None
    return Loaded(found, namespace, grid_node, filename, frozenset(protected))


def _write_source(text: str, path: Path) -> None:
    """Write `text` where the front-end reads the kernels' source, and make sure that it reads
    back as `text`: the front-end compiles what Python decodes from the file (by its coding
    declaration, with universal newlines, through `linecache`), not the text that was checked."""
    filename = str(path)
    path.write_text(text, encoding="utf-8")
    linecache.clearcache()  # a file read before under this name must not stand in for this one
    expected = text.replace("\r\n", "\n").replace("\r", "\n")
    if expected and not expected.endswith("\n"):
        expected += "\n"  # as `linecache` ends the last line
    if "".join(linecache.getlines(filename)) != expected:
        raise CandidateError("the text does not read back from its file as it was checked (Python decodes it "
                             "otherwise: a coding declaration?); a candidate is plain UTF-8 text",
                             SourceLocation(filename, 1, 1))


class OutsideTheLanguage:
    """What kernel code finds under the name of a Python builtin the language does not offer:
    nothing to call or read. The front-end looks a name up in the kernel's globals, then among
    Python's builtins, and calls at compile time what it finds there; the format check refuses
    these names, and this is all a kernel that named one anyway would reach."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}: a Python builtin outside the language>"


def _kernel_builtins(scope: dict[str, Any]) -> dict[str, Any]:
    """Builtins for the kernels' globals: ``round`` as constants compute it (bounded), and each
    Python builtin outside the language that `scope` does not bind as an `OutsideTheLanguage`
    (all but ``__name__``, which Python reads as the functions' module)."""
    found: dict[str, Any] = {name: OutsideTheLanguage(name) for name in FORBIDDEN_BUILTINS - {"__name__"}
                             if name not in scope}
    found["round"] = bounded_round
    return found


def _grid(functions: list[ast.FunctionDef], filename: str) -> ast.FunctionDef | None:
    """The undecorated ``def grid``, if any; no other function goes undecorated, no name twice."""
    names: set[str] = set()
    grid = None
    for fn in functions:
        if fn.name in names:
            raise CandidateError(f"{fn.name!r} is defined twice", SourceLocation.of(fn, filename))
        names.add(fn.name)
        if not fn.decorator_list:
            if fn.name != "grid":
                raise CandidateError(f"function {fn.name!r} needs @kernel(...) or @device",
                                     SourceLocation.of(fn, filename))
            grid = fn
    return grid


def _kernel_options(fn: ast.FunctionDef, evaluator: Evaluator, filename: str) -> dict[str, Any] | None:
    """The options of ``@kernel(...)`` on `fn`, computed as constants; None for ``@device``."""
    if len(fn.decorator_list) != 1:
        raise CandidateError("a function takes one decorator: @kernel(block=...) or @device",
                             SourceLocation.of(fn, filename))
    deco = fn.decorator_list[0]
    name = deco.func if isinstance(deco, ast.Call) else deco
    if not isinstance(name, ast.Name) or name.id not in ("kernel", "device") \
            or isinstance(deco, ast.Call) != (name.id == "kernel") or isinstance(deco, ast.Call) and deco.args:
        raise CandidateError("accepted decorators: @kernel(block=(...), ...) with named options, and @device",
                             SourceLocation.of(deco, filename))
    if not isinstance(deco, ast.Call):
        return None
    options = {}
    for keyword in deco.keywords:
        if keyword.arg not in KERNEL_OPTIONS:
            raise CandidateError(f"@kernel has no option {keyword.arg!r} a candidate may set",
                                 SourceLocation.of(keyword, filename))
        options[keyword.arg] = evaluator.value(keyword.value)
    return options


def _functions(functions: list[ast.FunctionDef], scope: dict[str, Any], filename: str) -> dict[str, Any]:
    """The Python function objects of these ``def``s, with `scope` as their globals, created
    without evaluating anything: no decorators, defaults or return annotations (refused),
    parameter annotations kept as text."""
    for fn in functions:
        spec = fn.args
        if fn.name in scope:
            raise CandidateError(f"{fn.name!r} is already bound", SourceLocation.of(fn, filename))
        if spec.defaults or spec.kw_defaults or spec.kwonlyargs or spec.vararg or spec.kwarg or spec.posonlyargs \
                or fn.returns is not None or getattr(fn, "type_params", None):
            raise CandidateError(f"{fn.name}: parameters are plain positional names without defaults",
                                 SourceLocation.of(fn, filename))
    bare = ast.Module(body=[_undecorated(fn) for fn in functions], type_ignores=[])
    try:
        with warnings.catch_warnings():  # the front-end reports what is wrong in a kernel, at its line
            warnings.simplefilter("ignore", SyntaxWarning)
            code = compile(bare, filename, "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
    except (SyntaxError, RecursionError, MemoryError, ValueError) as err:
        raise CandidateError(f"the functions cannot be compiled ({type(err).__name__}: {err})",
                             SourceLocation(filename, 1, 1)) from None
    exec(code, scope)  # noqa: S102 - only `def` statements, undecorated, without defaults, annotations as text
    return {fn.name: scope.pop(fn.name) for fn in functions}


def _unshadowed(functions: list[ast.FunctionDef], protected: set[str], filename: str) -> None:
    """Refuse a function, parameter or local that rebinds a name of the language: the front-end
    would read the candidate's value where the language's is expected."""
    for fn in functions:
        for node in ast.walk(fn):
            bound = node.name if isinstance(node, ast.FunctionDef) else node.arg if isinstance(node, ast.arg) else \
                node.id if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) else None
            if bound is not None and bound in protected:
                raise CandidateError(f"{bound!r} is a name of the language; it cannot be rebound or shadowed",
                                     SourceLocation.of(node, filename))


def _undecorated(fn: ast.FunctionDef) -> ast.FunctionDef:
    copy = ast.FunctionDef(name=fn.name, args=fn.args, body=fn.body, decorator_list=[], returns=None,
                           type_comment=None, type_params=[])
    return ast.copy_location(copy, fn)


def _bind(stmt: ast.stmt, name: str, value: Any, namespace: dict[str, Any], protected: set[str],
          filename: str) -> None:
    """Bind an imported language name once; no later import or constant may rebind it."""
    if name.startswith("_") or (name in namespace and namespace[name] is not value) or \
            (name in BUILTINS and name in protected and name not in namespace):
        raise CandidateError(f"the import cannot bind {name!r}: it is private, already bound or a builtin",
                             SourceLocation.of(stmt, filename))
    namespace[name] = value
    protected.add(name)


def _import_from(stmt: ast.ImportFrom, namespace: dict[str, Any], protected: set[str], filename: str) -> None:
    module = stmt.module or ""
    if module == "__future__" and not stmt.level and all(a.name == "annotations" and not a.asname for a in stmt.names):
        return
    for alias in stmt.names:
        full = f"{module}.{alias.name}"
        if full in WHOLE_MODULES and not stmt.level:
            _bind(stmt, alias.asname or alias.name, _whole(full, stmt, filename), namespace, protected, filename)
            continue
        names = offered(module) if module in MODULES and not stmt.level else None
        if names is None or alias.name not in names:
            raise CandidateError(f"{module} offers no {alias.name!r} to kernels", SourceLocation.of(stmt, filename))
        _bind(stmt, alias.asname or alias.name, language_object(module, alias.name), namespace, protected, filename)


def _whole(name: str, stmt: ast.stmt, filename: str) -> Any:
    """A module as the kernel sees it: only the names it offers kernels."""
    if name not in WHOLE_MODULES or offered(name) is None:
        raise CandidateError(f"import {name} is not accepted", SourceLocation.of(stmt, filename))
    return module_view(name)
