"""The candidate format, read without running any of it.

A candidate is the text of one kernel module in a closed form:

- a docstring, and imports from the language's modules only (see `language`);
- constants: ``NAME = expression`` over numbers, tuples, earlier constants and the language's
  compile-time functions (atoms, layouts, swizzles);
- ``@device`` helpers and exactly one ``@kernel(...)`` function;
- optionally ``def grid(<sizes>): return (...)``, the launch grid as arithmetic on the sizes the
  kernel's tensors name (and ``SMS``, the multiprocessor count).

Nothing else is accepted: no other import, statement or builtin, no private attribute, no
rebinding of a name of the language, no string formatting, no class or function of the language
held by kernel code rather than called, no encoding declared but UTF-8, nothing past the size
limits (`limits`). The check works on the syntax tree alone (`ast.parse`), so a refused candidate has
run no code anywhere; an accepted one is compiled in a sandboxed subprocess (`sandbox`), where
`loader` builds its kernel without executing module-level Python and computes its constants
with an evaluator (`constants`) that enforces the same rules again on the values.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Literal

from .errors import CandidateError, SourceLocation
from .language import (
    ATTRIBUTES,
    BUILTINS,
    CONSTANT_ATTRIBUTES,
    CONSTANT_FUNCTIONS,
    DECORATORS,
    DSL_NAMES,
    FORBIDDEN_BUILTINS,
    KERNEL_OPTIONS,
    LAYOUT_NAMES,
    MATH_NAMES,
    MODULES,
    WHOLE_MODULES,
    accepted_imports,
    is_language_routine,
    is_language_value,
    language_object,
    offered,
)
from .limits import (
    MAX_DICT_ENTRIES,
    MAX_FUNCTIONS,
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_NESTING,
    MAX_STRING_CHARS,
    MAX_TEXT_CHARS,
)

_TOP_LEVEL = ("a docstring, imports from the language's modules, constants (NAME = expression), "
              "@device and @kernel functions, and def grid(...)")

_LANGUAGE_NAMES = DSL_NAMES | LAYOUT_NAMES | MATH_NAMES | DECORATORS | BUILTINS | FORBIDDEN_BUILTINS
"""Names an import may not rename another object to (``from math import floor as range``)."""


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
    assertions: int = 0
    """Tag assertions (``assert tag(...) == tag(...)``, `tag` by that name) written in any of the
    candidate's functions, whether its kernel reaches them or not: a count of the text, not of
    what is checked. The invariants the kernel reaches are `hacks.source_invariants`'s."""
    filename: str = "candidate.py"

    def signature(self) -> str:
        return ", ".join(p.text() for p in self.parameters)


def parse_candidate(text: str, filename: str = "candidate.py") -> Candidate:
    """Check `text` against the candidate format; raises `CandidateError` naming the line and what
    is accepted."""
    if not isinstance(text, str) or not text.strip():
        raise CandidateError("a candidate is the text of a kernel module; got nothing",
                             SourceLocation(filename, 1, 1))
    return _Checker(filename).module(read_tree(text, filename), text)


def read_tree(text: str, filename: str, mode: Literal["exec", "eval"] = "exec", line: int = 1) -> ast.AST:
    """The syntax tree of `text` within the limits: no text so long or nested so deep that
    Python's parser, compiler or unparser would fail on it (RecursionError, MemoryError) comes
    out of here as anything but a `CandidateError`. `line`: where a nested text (a string
    annotation) starts, for the messages."""
    if len(text) > MAX_TEXT_CHARS:
        raise CandidateError(f"the text cannot be parsed: it is {len(text)} characters long; a candidate is at most "
                             f"{MAX_TEXT_CHARS} (a kernel module is a few thousand)", SourceLocation(filename, line, 1))
    if mode == "exec":
        _utf8_only(text, filename)
    try:
        tree = ast.parse(text, filename=filename, mode=mode)
    except SyntaxError as err:
        raise CandidateError(f"not Python syntax: {err.msg}",
                             SourceLocation(filename, line - 1 + (err.lineno or 1), err.offset or 1)) from None
    except UnicodeEncodeError:
        raise CandidateError("the text is not valid Unicode (it holds a lone surrogate); a candidate is UTF-8 text",
                             SourceLocation(filename, line, 1)) from None
    except (RecursionError, MemoryError, ValueError) as err:  # nesting or size past the parser's limits
        raise CandidateError(f"the text cannot be parsed ({type(err).__name__}): expressions nest too deeply or "
                             "it is far too long for a kernel module", SourceLocation(filename, line, 1)) from None
    deep = _past_nesting(tree)
    if deep is not None:
        raise CandidateError(f"the text nests more than {MAX_NESTING} levels deep here (statements, expressions "
                             "and brackets within each other); a kernel needs a few dozen",
                             SourceLocation(filename, line - 1 + getattr(deep, "lineno", 1),
                                            getattr(deep, "col_offset", 0) + 1))
    return tree


_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
"""A source encoding declaration (PEP 263), as Python finds it on one of the first two lines."""


def _utf8_only(text: str, filename: str) -> None:
    """Refuse a coding declaration other than UTF-8. `ast.parse` of a string ignores one, but
    Python decodes a file by it, and the front-end reads a kernel's source from its file: under
    ``# coding: utf-7`` a comment can decode to code that was never checked."""
    for number, first in enumerate(text.split("\n", 2)[:2], 1):  # lines as Python's decoder splits them
        declared = _CODING.match(first)
        if declared is not None and declared.group(1).lower().replace("_", "-") not in ("utf-8", "utf8"):
            raise CandidateError(f"the text declares the encoding {declared.group(1)!r}; a candidate is UTF-8 "
                                 "text and declares no other", SourceLocation(filename, number, 1))


_LEAVES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
"""Nodes that only mark what their parent does (``Load``, ``Add``): no deeper than it."""


def _past_nesting(tree: ast.AST) -> ast.AST | None:
    """A node nested more than `MAX_NESTING` levels deep in `tree` (one with a line, where the
    level has one), or None; read level by level, without recursion."""
    level = [tree]
    for _ in range(MAX_NESTING + 1):
        below: list[ast.AST] = []
        for node in level:
            for field in node._fields:
                value = getattr(node, field, None)
                if isinstance(value, ast.AST):
                    if not isinstance(value, _LEAVES):
                        below.append(value)
                elif isinstance(value, list):
                    below.extend(v for v in value if isinstance(v, ast.AST))
        if not below:
            return None
        level = below
    return next((node for node in level if hasattr(node, "lineno")), level[0])


def snippet(node: ast.AST) -> str:
    """The first line of `node`'s source, for messages (empty when it cannot be written back)."""
    try:
        return ast.unparse(node).splitlines()[0][:120] if not isinstance(node, ast.FunctionDef) else f"def {node.name}(...)"
    except Exception:  # noqa: BLE001 - unparse of an odd node: no snippet
        return ""


class _Checker:
    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.globals: set[str] = set()
        self.aliases: dict[str, str] = {}
        """Module aliases: ``nv`` -> ``argus.backends.nvptx.language``."""
        self.imported: dict[str, tuple[str, str]] = {}
        """Names bound by ``from MODULE import NAME [as bound]``: bound -> (MODULE, NAME)."""
        self.functions: dict[str, str] = {}
        """The candidate's functions: name -> "kernel", "device" or "grid"."""

    def error(self, node: ast.AST, message: str) -> CandidateError:
        return CandidateError(message, SourceLocation.of(node, self.filename), snippet(node))

    def language(self, name: str) -> bool:
        """Whether `name` is a name of the language here: imported, a module alias or a builtin."""
        return name in self.imported or name in self.aliases or name in BUILTINS

    # ---- the top level -------------------------------------------------------------------
    def module(self, tree: ast.AST, text: str) -> Candidate:
        assert isinstance(tree, ast.Module)
        kernels: list[ast.FunctionDef] = []
        grid: ast.FunctionDef | None = None
        functions: list[ast.FunctionDef] = []
        for stmt in tree.body:  # the language's names first: nothing may rebind them, wherever it stands
            if isinstance(stmt, ast.ImportFrom):
                self.import_from(stmt)
            elif isinstance(stmt, ast.Import):
                self.import_(stmt)
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) or isinstance(stmt, ast.Expr) and \
                    isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
                continue
            if isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    self.bind(target, top=True)
                self.constant(stmt.value)
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None and isinstance(stmt.target, ast.Name):
                self.bind(stmt.target, top=True)
                self.annotation(stmt.annotation)
                self.constant(stmt.value)
            elif isinstance(stmt, ast.FunctionDef):
                kind = self.decorator(stmt)
                self.name(stmt, stmt.name)
                self.unshadowed(stmt, stmt.name)
                if stmt.name in self.globals:
                    raise self.error(stmt, f"{stmt.name!r} is defined twice")
                self.globals.add(stmt.name)
                self.functions[stmt.name] = kind
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
        if len(functions) > MAX_FUNCTIONS:
            raise self.error(functions[MAX_FUNCTIONS], f"a candidate defines at most {MAX_FUNCTIONS} functions (its "
                                                       "kernel, @device helpers and grid); this is one more")
        for fn in functions:
            self.function(fn)
        kernel = kernels[0]
        if grid is not None:
            self.grid(grid)
        return Candidate(text, kernel.name, self.parameters(kernel),
                         tuple(a.arg for a in grid.args.args) if grid is not None else None,
                         dict(self.aliases), _tag_assertions(functions), self.filename)

    def import_from(self, stmt: ast.ImportFrom) -> None:
        module = stmt.module or ""
        if stmt.level:
            raise self.error(stmt, f"relative imports are not accepted; a candidate imports only {accepted_imports()}")
        if module == "__future__":
            if any(alias.name != "annotations" or alias.asname for alias in stmt.names):
                raise self.error(stmt, "the only __future__ import accepted is: from __future__ import annotations")
            return
        for alias in stmt.names:
            if alias.name == "*":
                raise self.error(stmt, f"import * is not accepted; name what you use ({accepted_imports()})")
            full = f"{module}.{alias.name}"
            if full in WHOLE_MODULES:  # from argus.backends.nvptx import language as nv
                self.bind_module(stmt, alias.asname or alias.name, full)
                continue
            if module not in MODULES:
                raise self.error(stmt, f"import from {module!r} is not accepted; a candidate imports only "
                                       f"{accepted_imports()}")
            if alias.name.startswith("_"):
                raise self.error(stmt, f"private name {alias.name!r} cannot be imported")
            if alias.name not in self.offered(stmt, module):
                raise self.error(stmt, f"{alias.name!r} is not part of the language that {module} offers kernels")
            self.bind_import(stmt, alias.asname or alias.name, (module, alias.name))

    def import_(self, stmt: ast.Import) -> None:
        for alias in stmt.names:
            if alias.name in WHOLE_MODULES and (alias.asname or "." not in alias.name):
                self.bind_module(stmt, alias.asname or alias.name, alias.name)
                continue
            raise self.error(stmt, f"import {alias.name} is not accepted; a candidate imports only "
                                   f"{accepted_imports()}")

    def offered(self, stmt: ast.stmt, module: str) -> frozenset[str]:
        names = offered(module)
        if names is None:
            raise self.error(stmt, f"{module} cannot be imported here (its backend is not installed)")
        return names

    def bind_module(self, stmt: ast.stmt, bound: str, module: str) -> None:
        self.offered(stmt, module)
        self.check_import_name(stmt, bound, module.rsplit(".", 1)[-1], self.aliases.get(bound) == module)
        self.aliases[bound] = module
        self.globals.add(bound)

    def bind_import(self, stmt: ast.stmt, bound: str, source: tuple[str, str]) -> None:
        self.check_import_name(stmt, bound, source[1], self.imported.get(bound) == source)
        self.imported[bound] = source
        self.globals.add(bound)

    def check_import_name(self, stmt: ast.stmt, bound: str, own: str, repeated: bool) -> None:
        """An import binds a fresh name once: its own, or a new one that is no name of the language."""
        if bound.startswith("_"):
            raise self.error(stmt, f"names starting with '_' are not accepted ({bound!r})")
        if bound in self.globals and not repeated:
            raise self.error(stmt, f"{bound!r} is already bound; an import cannot rebind a name")
        if bound != own and bound in _LANGUAGE_NAMES:
            raise self.error(stmt, f"an import cannot be renamed to {bound!r}, a name of the language or a Python "
                                   "builtin; choose a name of your own")

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
        if not isinstance(name, ast.Name) or name.id not in DECORATORS or \
                self.imported.get(name.id) != ("argus.dsl", name.id):
            raise self.error(deco, "accepted decorators: @kernel(block=(...), ...) and @device, imported from argus.dsl")
        if name.id == "device" and isinstance(deco, ast.Call):
            raise self.error(deco, "write @device without arguments")
        if name.id == "kernel":
            if not isinstance(deco, ast.Call) or deco.args or not any(k.arg == "block" for k in deco.keywords):
                raise self.error(deco, "write the kernel decorator as @kernel(block=(threads, ...)[, warp_size=..., "
                                       "min_blocks_per_sm=..., max_registers=..., cluster=...])")
            for keyword in deco.keywords:  # the decorator checks its own options when the kernel is built
                if keyword.arg is None:
                    raise self.error(keyword, "@kernel takes named options: block=..., warp_size=..., ...")
                if keyword.arg == "verify":
                    raise self.error(keyword, "a candidate cannot turn its tag checks off (verify=...)")
                if keyword.arg not in KERNEL_OPTIONS:
                    raise self.error(keyword, f"@kernel has no option {keyword.arg!r}; its options: "
                                              f"{', '.join(sorted(KERNEL_OPTIONS))}")
                self.constant(keyword.value)
        return name.id

    # ---- names ------------------------------------------------------------------------------
    def name(self, node: ast.AST, name: str) -> None:
        if name.startswith("_"):
            raise self.error(node, f"names starting with '_' are not accepted ({name!r})")
        if name in FORBIDDEN_BUILTINS and name not in self.globals:
            raise self.error(node, f"{name!r} is a Python builtin outside the language; accepted builtins: "
                                   f"{', '.join(sorted(BUILTINS - {'True', 'False', 'None'}))}")

    def unshadowed(self, node: ast.AST, name: str) -> None:
        """Refuse binding `name` when it names the language here: a kernel that rebinds ``nv`` or
        ``range`` would have the front-end read its own value where the language's was checked."""
        if self.language(name):
            raise self.error(node, f"{name!r} is a name of the language (an import, module alias or builtin); it "
                                   "cannot be rebound or shadowed: choose another name")

    def bind(self, target: ast.expr, top: bool = False) -> None:
        if isinstance(target, ast.Name):
            self.name(target, target.id)
            self.unshadowed(target, target.id)
            if top:
                if target.id in self.functions:
                    raise self.error(target, f"{target.id!r} is a function of this candidate; a constant cannot "
                                             "rebind it")
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
        if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.posonlyargs or spec.defaults or spec.kw_defaults \
                or getattr(fn, "type_params", None):
            raise self.error(fn, f"{fn.name}: parameters are plain positional names without defaults")
        if fn.returns is not None:
            raise self.error(fn.returns, f"{fn.name}: no return annotation")
        for arg in spec.args:
            self.name(arg, arg.arg)
            self.unshadowed(arg, arg.arg)
            if arg.annotation is not None:
                self.annotation(arg.annotation)
        for stmt in fn.body:
            self.statement(stmt)

    def annotation(self, node: ast.expr) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.annotation(self.annotation_text(node))
            return
        self.expression(node, lambdas=False, annotation=True)

    def annotation_text(self, node: ast.Constant) -> ast.expr:
        """A string annotation's expression, read within the same limits as the candidate."""
        parsed = read_tree(node.value, self.filename, "eval", getattr(node, "lineno", 1))
        assert isinstance(parsed, ast.Expression)
        return parsed.body

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
            if not (isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)):  # a docstring
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
        self.constant(body[0].value)

    # ---- expressions ---------------------------------------------------------------------
    def constant(self, node: ast.expr) -> None:
        """Check an expression the loader computes (a module constant, a @kernel option, the
        grid): besides the kernels' rules, it may use dicts and comprehensions, calls only the
        language's compile-time functions and reads only the attributes of its values."""
        self.expression(node, lambdas=False, constant=True)

    def expression(self, node: ast.expr, lambdas: bool = True, constant: bool = False, annotation: bool = False
                   ) -> None:
        """Check an expression of a kernel, a helper, an `annotation` or (`constant`) one the
        loader computes."""
        nodes = list(ast.walk(node))
        bases = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
        callees = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
        for child in nodes:
            if constant and isinstance(child, (ast.Dict, ast.ListComp, ast.GeneratorExp, ast.comprehension)):
                if isinstance(child, ast.Dict) and len(child.keys) > MAX_DICT_ENTRIES:
                    raise self.error(child, f"a dict of {len(child.keys)} entries; a constant's dict has at most "
                                            f"{MAX_DICT_ENTRIES}")
                if isinstance(child, ast.comprehension):
                    if child.is_async or not isinstance(child.target, ast.Name):
                        raise self.error(child.target, "a comprehension in a constant binds one name: "
                                                       "(f(i) for i in range(n))")
                    self.unshadowed(child.target, child.target.id)
                continue
            if isinstance(child, ast.Name):
                self.name(child, child.id)
                self.name_use(child, id(child) in bases, id(child) in callees, constant)
                if not (constant or annotation or id(child) in callees):
                    self.callee_only(child, child.id, self.imported.get(child.id, ("builtins", child.id)))
            elif isinstance(child, ast.Attribute):
                self.attribute(child, id(child) in callees, constant)
                module = self.aliases.get(child.value.id) if isinstance(child.value, ast.Name) else None
                if module is not None and not (constant or annotation or id(child) in callees):
                    self.callee_only(child, snippet(child), (module, child.attr))
            elif isinstance(child, ast.Call):
                if any(k.arg is None for k in child.keywords):
                    raise self.error(child, "calls name their arguments; ** unpacking is not accepted")
            elif isinstance(child, ast.Lambda):
                if not lambdas:
                    raise self.error(child, "lambdas are accepted only as tag functions inside kernels")
                spec = child.args
                if spec.vararg or spec.kwarg or spec.kwonlyargs or spec.defaults or spec.posonlyargs:
                    raise self.error(child, "a tag function takes plain coordinates: lambda i, j: (...)")
                for arg in spec.args:
                    self.name(child, arg.arg)
                    self.unshadowed(child, arg.arg)
            elif isinstance(child, ast.Constant):
                self.literal(child)
            elif isinstance(child, ast.BinOp):
                self.operator(child)
            elif isinstance(child, (ast.JoinedStr, ast.FormattedValue, ast.Await, ast.Yield, ast.YieldFrom,
                                    ast.NamedExpr, ast.Starred, ast.Dict, ast.Set, ast.ListComp, ast.SetComp,
                                    ast.DictComp, ast.GeneratorExp)):
                raise self.error(child, f"{type(child).__name__} is not part of the language")

    def name_use(self, node: ast.Name, base: bool, called: bool, constant: bool) -> None:
        """A module alias only names what it offers (``nv.cp_async``); a kernel's code cannot
        reach the kernel or grid functions; a constant names values, and functions it calls."""
        if node.id in self.aliases and not base:
            raise self.error(node, f"{node.id} is a module; use the names it offers: {node.id}.NAME")
        if node.id in DECORATORS and self.imported.get(node.id) == ("argus.dsl", node.id):
            raise self.error(node, f"{node.id} is a decorator: write it as @{node.id} on a function, nowhere else")
        if self.functions.get(node.id) in ("kernel", "grid"):
            raise self.error(node, f"{node.id} is this candidate's {self.functions[node.id]} function; code calls "
                                   "only @device helpers and the language")
        if not constant:
            return
        if node.id in self.functions:
            raise self.error(node, f"{node.id} is a function; constants hold data and the language's values")
        if node.id in self.imported:
            self.constant_use(node, node.id, self.imported[node.id], called)
        elif node.id in BUILTINS - {"True", "False", "None"} and not called:
            raise self.error(node, f"{node.id} is a function; a constant holds what it returns: {node.id}(...)")

    def callee_only(self, node: ast.AST, shown: str, source: tuple[str, str]) -> None:
        """Kernel code calls the language's classes and functions and does not hold them: the
        front-end reads any attribute the language names of what it holds, and of a class that
        is a descriptor (``Layout.shape``), not a shape."""
        module, name = source
        if module == "builtins" and name not in BUILTINS - {"True", "False", "None"}:
            return
        try:
            value = language_object(module, name)
        except (ImportError, AttributeError):
            return
        if is_language_routine(value):
            raise self.error(node, f"{shown} is a {'class' if isinstance(value, type) else 'function'} of the "
                                   f"language: kernel code calls it ({shown}(...)) and reads attributes of what it "
                                   "returns")

    def constant_use(self, node: ast.AST, shown: str, source: tuple[str, str], called: bool) -> None:
        """A language name in a constant: a function of `CONSTANT_FUNCTIONS`, called, or a value."""
        module, name = source
        if name in CONSTANT_FUNCTIONS.get(module, ()):
            if not called:
                raise self.error(node, f"{shown} is a function; a constant holds what it returns: {shown}(...)")
            return
        if called:
            raise self.error(node, f"{shown} is not a function a constant may call; constants call the language's "
                                   "constructors and compile-time functions (atoms, layouts, swizzles, math)")
        try:
            value = language_object(module, name)
        except (ImportError, AttributeError):
            value = None
        if not (is_language_value(value) or type(value) in (int, float)):
            raise self.error(node, f"{shown} is not usable in a constant (it means something only inside a kernel); "
                                   "constants call the language's constructors and compile-time functions (atoms, "
                                   "layouts, swizzles, math) and hold their values")

    def attribute(self, node: ast.Attribute, called: bool, constant: bool) -> None:
        if node.attr.startswith("_"):
            raise self.error(node, f"private attribute {node.attr!r} is not accepted")
        base = node.value
        module = self.aliases.get(base.id) if isinstance(base, ast.Name) else None
        if module is not None:
            names = self.offered(node, module)  # type: ignore[arg-type]
            if node.attr not in names:
                raise self.error(node, f"{module}.{node.attr} is not accepted; accepted: {', '.join(sorted(names))}")
            if constant:
                self.constant_use(node, snippet(node), (module, node.attr), called)
            return
        allowed = CONSTANT_ATTRIBUTES if constant else ATTRIBUTES
        if node.attr not in allowed:
            raise self.error(node, f"attribute {node.attr!r} is not part of the language; accepted: "
                                   f"{', '.join(sorted(allowed))} and the names of an imported target language module")

    def literal(self, node: ast.Constant) -> None:
        value = node.value
        if not isinstance(value, (int, float, str, bool)) and value not in (None, Ellipsis):
            raise self.error(node, f"constant {value!r} is not accepted")
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise self.error(node, f"an integer of {value.bit_length()} bits; the language's integers have at most "
                                   f"{MAX_INT_BITS}")
        if isinstance(value, str) and len(value) > MAX_STRING_CHARS:
            raise self.error(node, f"a string of {len(value)} characters; strings have at most {MAX_STRING_CHARS}")
        if isinstance(value, str) and "__" in value:
            raise self.error(node, "strings with '__' are not accepted: they can only name private attributes")

    def operator(self, node: ast.BinOp) -> None:
        """Refuse %-formatting, and literal operands that would make folding blow up (``1 << 10**9``,
        ``'a' * 10**9``) wherever they are computed."""
        left, right = node.left, node.right
        if isinstance(node.op, ast.Mod) and isinstance(left, (ast.Constant, ast.JoinedStr)) and \
                isinstance(getattr(left, "value", ""), str):
            raise self.error(node, "%-formatting of strings is not part of the language")
        amount = right.value if isinstance(right, ast.Constant) and type(right.value) is int else None
        if amount is not None and isinstance(node.op, (ast.Pow, ast.LShift)) and amount > MAX_INT_BITS:
            raise self.error(node, f"{'exponent' if isinstance(node.op, ast.Pow) else 'shift'} {amount} is past "
                                   f"the language's integers (at most {MAX_INT_BITS} bits)")
        if isinstance(node.op, ast.Mult):
            for sequence, times in ((left, right), (right, left)):
                count = times.value if isinstance(times, ast.Constant) and type(times.value) is int else 0
                if isinstance(sequence, (ast.Tuple, ast.List)) or isinstance(sequence, ast.Constant) and \
                        isinstance(sequence.value, str):
                    if count > MAX_ITEMS:
                        raise self.error(node, f"repeating a sequence {count} times; at most {MAX_ITEMS} items")

    # ---- what the harness reads off the kernel -----------------------------------------------
    def parameters(self, fn: ast.FunctionDef) -> tuple[Parameter, ...]:
        out = []
        for arg in fn.args.args:
            ann = arg.annotation
            if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
                ann = self.annotation_text(ann)
            if ann is None:
                raise self.error(arg, f"parameter {arg.arg!r} needs an annotation: Tensor[dtype, dims...], a scalar "
                                      "dtype or constexpr")
            if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "Tensor":
                items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
                if len(items) < 2:
                    raise self.error(ann, "a tensor parameter is Tensor[dtype, dims...] with at least one dim")
                dtype = items[0].id if isinstance(items[0], ast.Name) else snippet(items[0])
                dims: list[str | int] = []
                for item in items[1:]:
                    if isinstance(item, ast.Constant) and type(item.value) in (str, int):
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


def _tag_assertions(functions: list[ast.FunctionDef]) -> int:
    """How many ``assert`` statements of these functions call ``tag`` (see `Candidate.assertions`)."""
    return sum(1 for fn in functions for node in ast.walk(fn)
               if isinstance(node, ast.Assert) and any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                                                       and c.func.id == "tag" for c in ast.walk(node.test)))

