"""A trusted kernel file (an example, a task's initial kernel, a knowledge-base snippet) cut down
to the candidate format: the kernel, the helpers and constants it uses, and the imports of
language names. Example problems, numpy imports and the rest of the file are left out.

The result is then checked like any candidate (`parse_candidate`), so what reaches the loop is
always in one form.
"""

from __future__ import annotations

import ast

from .candidate import Candidate, parse_candidate, read_tree
from .errors import CandidateError
from .language import MODULES, WHOLE_MODULES


def extract_candidate(text: str, kernel: str, filename: str = "kernel.py") -> Candidate:
    """The candidate holding kernel `kernel` of the module `text`."""
    tree = read_tree(text, filename)
    assert isinstance(tree, ast.Module)
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    if kernel not in functions or not decorated(functions[kernel], "kernel"):
        found = sorted(n for n, f in functions.items() if decorated(f, "kernel"))
        raise CandidateError(f"{filename} has no top-level @kernel function {kernel!r}; its kernels: "
                             f"{', '.join(found) or 'none (a kernel built inside a function cannot be a candidate)'}")
    assigned = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in _names(target):
                    assigned[name] = stmt
    # a grid read off the example problem needs the constants it names (BLOCKS, BM, ...) too
    grid = "" if "grid" in functions else _grid_from_example(functions.get(f"example_{kernel}"),
                                                               functions[kernel], set(assigned))
    needed: list[ast.stmt] = []
    seen: set[str] = set()
    wanted = [kernel] + (["grid"] if "grid" in functions else [])
    if grid:
        wanted += _names_used(ast.parse(grid).body[0])
    while wanted:
        name = wanted.pop()
        if name in seen:
            continue
        seen.add(name)
        node: ast.stmt | None = functions.get(name) if name in functions and (
            name == "grid" or decorated(functions[name], "kernel") or decorated(functions[name], "device")) else None
        node = node or assigned.get(name)
        if node is None or node in needed:
            continue
        needed.append(node)
        wanted.extend(_names_used(node))
        if isinstance(node, ast.FunctionDef):
            for arg in node.args.args:  # annotations written as strings name module values too
                if isinstance(arg.annotation, ast.Constant) and isinstance(arg.annotation.value, str):
                    try:
                        parsed = read_tree(arg.annotation.value, filename, "eval")
                    except CandidateError:
                        continue
                    wanted.extend(x.id for x in ast.walk(parsed) if isinstance(x, ast.Name))
    lines = text.splitlines()
    out: list[str] = []
    if ast.get_docstring(tree, clean=False) is not None:
        first = tree.body[0]
        out.append("\n".join(lines[first.lineno - 1:first.end_lineno]))
    for stmt in tree.body:
        imported = _imports(stmt, seen)
        if imported:
            out.append(imported)
    for stmt in tree.body:
        if stmt in needed:
            first = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
            out.append("\n".join(lines[first - 1:stmt.end_lineno]))
    if grid:
        out.append(grid)
    return parse_candidate("\n\n".join(out) + "\n", filename)


def _names_used(node: ast.stmt) -> list[str]:
    """The names `node` reads; a function's parameters are its own (a kernel's or a grid's size
    M), not module constants of the same name."""
    own = {a.arg for a in node.args.args} if isinstance(node, ast.FunctionDef) else set()
    return [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id not in own]


def _grid_from_example(example: ast.FunctionDef | None, kernel: ast.FunctionDef, constants: set[str]) -> str:
    """``def grid(...)`` read off the example problem's ``Problem(grid=..., args=(...))``: its
    size variables renamed to the kernel's scalar parameters at the same positions. Empty when
    the example does not say it that plainly."""
    if example is None:
        return ""
    for node in ast.walk(example):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Problem"):
            continue
        given = {k.arg: k.value for k in node.keywords}
        grid, args = given.get("grid"), given.get("args")
        if grid is None or not isinstance(args, ast.Tuple) or len(args.elts) != len(kernel.args.args):
            return ""
        renames = {}
        for value, param in zip(args.elts, kernel.args.args):
            if isinstance(value, ast.Name) and isinstance(param.annotation, ast.Name) and param.annotation.id != "constexpr":
                renames[value.id] = param.arg
        names = {n.id for n in ast.walk(grid) if isinstance(n, ast.Name)}
        if not names <= set(renames) | constants | {"min", "max"}:
            return ""

        body = ast.unparse(_Rename(renames).visit(grid))
        params = [p.arg for p in kernel.args.args if p.arg in renames.values()]
        return f"def grid({', '.join(params)}):\n    return {body}\n"
    return ""


class _Rename(ast.NodeTransformer):
    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames

    def visit_Name(self, name: ast.Name) -> ast.Name:
        return ast.Name(self.renames.get(name.id, name.id), name.ctx)


def kernel_functions(tree: ast.Module) -> list[ast.FunctionDef]:
    """The module's top-level ``@kernel`` functions, in order."""
    return [s for s in tree.body if isinstance(s, ast.FunctionDef) and decorated(s, "kernel")]


def decorated(fn: ast.FunctionDef, name: str) -> bool:
    """Whether `fn` carries the decorator `name` (``@name`` or ``@name(...)``)."""
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Name) and target.id == name:
            return True
    return False


def _names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _names(e)]
    return []


def _imports(stmt: ast.stmt, used: set[str]) -> str:
    """The language names `stmt` imports that the kept code uses, as one import line."""
    if isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
        keep = []
        for alias in stmt.names:
            bound = alias.asname or alias.name
            full = f"{stmt.module}.{alias.name}"
            if bound not in used:
                continue
            if full in WHOLE_MODULES:
                keep.append(alias)
            elif stmt.module in MODULES:
                allowed = MODULES[stmt.module]
                if allowed is None or alias.name in allowed:
                    keep.append(alias)
        if keep:
            return ast.unparse(ast.ImportFrom(module=stmt.module, names=keep, level=0))
    if isinstance(stmt, ast.Import):
        keep = [a for a in stmt.names if (a.asname or a.name) in used and a.name in WHOLE_MODULES]
        if keep:
            return ast.unparse(ast.Import(names=keep))
    return ""
