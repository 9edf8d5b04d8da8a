"""Building the kernel of a checked candidate, inside the sandboxed worker.

Module-level Python is never executed: imports bind the language's objects by name, constants
are computed by a small evaluator over the syntax tree (numbers, tuples, arithmetic, calls of
the language's compile-time functions), and functions are created from their ``def`` alone —
decorators removed and annotations left as text, so creating them evaluates nothing. The DSL
front-end then reads each kernel's source, as it reads any kernel.
"""

from __future__ import annotations
import __future__

import ast
import builtins
import importlib
import operator
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus.dsl import device, kernel
from argus.dsl.kernel import Kernel

from .candidate import Candidate
from .errors import CandidateError, SourceLocation
from .language import BUILTINS, MODULES, WHOLE_MODULES

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
            ast.GtE: operator.ge}
_MISSING = object()
_BUILTINS = {name: getattr(builtins, name) for name in BUILTINS if name not in ("True", "False", "None")}


@dataclass
class Loaded:
    """A candidate's kernel and its launch grid function (None: the task's grid)."""

    kernel: Kernel
    namespace: dict[str, Any]
    grid_node: ast.FunctionDef | None
    filename: str

    def grid(self, sizes: dict[str, int]) -> tuple[int, ...]:
        """The launch grid for these sizes."""
        if self.grid_node is None:
            raise CandidateError("the candidate has no grid(<sizes>) function and the task gives no grid")
        args = {}
        for a in self.grid_node.args.args:
            if a.arg not in sizes:
                raise CandidateError(f"grid() takes {a.arg!r}, which is none of the sizes the kernel's tensors name "
                                     f"({', '.join(sorted(sizes))})", SourceLocation.of(a, self.filename))
            args[a.arg] = sizes[a.arg]
        body = [s for s in self.grid_node.body if isinstance(s, ast.Return)]
        value = Evaluator({**self.namespace, **args}, self.filename).value(body[0].value)  # type: ignore[arg-type]
        dims = value if isinstance(value, tuple) else (value,)
        if not 1 <= len(dims) <= 3 or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 1 for d in dims):
            raise CandidateError(f"grid({', '.join(f'{k}={v}' for k, v in args.items())}) gave {value!r}; a grid is 1 to "
                                 "3 positive ints", SourceLocation.of(self.grid_node, self.filename))
        return tuple(dims)


def load_candidate(candidate: Candidate, path: Path) -> Loaded:
    """Build `candidate`'s kernel; its text is written to `path` so that the front-end (and its
    error messages) can read the lines."""
    path.write_text(candidate.text)
    tree = ast.parse(candidate.text, filename=str(path))
    namespace: dict[str, Any] = {}
    evaluator = Evaluator(namespace, str(path))
    functions: list[ast.FunctionDef] = []
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module != "__future__":
            _import_from(stmt, namespace, str(path))
        elif isinstance(stmt, ast.Import):
            for alias in stmt.names:
                namespace[alias.asname or alias.name] = _whole(alias.name)
        elif isinstance(stmt, ast.Assign):
            value = evaluator.value(stmt.value)
            for target in stmt.targets:
                evaluator.assign(target, value)
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            evaluator.assign(stmt.target, evaluator.value(stmt.value))
        elif isinstance(stmt, ast.FunctionDef):
            functions.append(stmt)
    bare = ast.Module(body=[_undecorated(fn) for fn in functions], type_ignores=[])
    code = compile(bare, str(path), "exec", flags=__future__.annotations.compiler_flag, dont_inherit=True)
    created: dict[str, Any] = {}
    exec(code, created)  # noqa: S102 - only `def` statements, undecorated, with annotations as text
    made_functions = {fn.name: created[fn.name] for fn in functions}
    created.update(namespace)  # the functions' globals: the candidate's constants and imports
    grid_node = None
    found = None
    for fn in functions:
        made = made_functions[fn.name]
        if not fn.decorator_list:
            grid_node = fn
            continue
        deco = fn.decorator_list[0]
        if isinstance(deco, ast.Call):
            options = {k.arg: evaluator.value(k.value) for k in deco.keywords if k.arg}
            try:
                namespace[fn.name] = found = kernel(made, **options)
            except Exception as err:  # noqa: BLE001 - the decorator's own message, at the line
                raise CandidateError(f"@kernel: {err}", SourceLocation.of(deco, str(path))) from None
        else:
            namespace[fn.name] = device(made)
    created.update(namespace)  # every function sees the kernels and helpers, wherever defined
    assert isinstance(found, Kernel)
    return Loaded(found, namespace, grid_node, str(path))


def _undecorated(fn: ast.FunctionDef) -> ast.FunctionDef:
    copy = ast.FunctionDef(name=fn.name, args=fn.args, body=fn.body, decorator_list=[], returns=None,
                           type_comment=None, type_params=[])
    return ast.copy_location(copy, fn)


def _import_from(stmt: ast.ImportFrom, namespace: dict[str, Any], filename: str) -> None:
    for alias in stmt.names:
        full = f"{stmt.module}.{alias.name}"
        if full in WHOLE_MODULES:
            namespace[alias.asname or alias.name] = _whole(full)
            continue
        module = importlib.import_module(stmt.module or "")
        allowed = MODULES.get(stmt.module or "")
        names = allowed if allowed is not None else set(getattr(module, "__all__", ()))
        if alias.name not in names or not hasattr(module, alias.name):
            raise CandidateError(f"{stmt.module} offers no {alias.name!r} to kernels", SourceLocation.of(stmt, filename))
        namespace[alias.asname or alias.name] = getattr(module, alias.name)


def _whole(name: str) -> types.SimpleNamespace:
    """A module as the kernel sees it: only the names it offers kernels."""
    module = importlib.import_module(name)
    allowed = MODULES.get(name)
    names = allowed if allowed is not None else getattr(module, "__all__", ())
    return types.SimpleNamespace(**{n: getattr(module, n) for n in names if hasattr(module, n)})


class Evaluator:
    """Computes a constant expression of a checked candidate."""

    def __init__(self, namespace: dict[str, Any], filename: str) -> None:
        self.namespace = namespace
        self.filename = filename

    def error(self, node: ast.AST, message: str) -> CandidateError:
        return CandidateError(message, SourceLocation.of(node, self.filename), ast.unparse(node)[:120])

    def assign(self, target: ast.expr, value: Any) -> None:
        if isinstance(target, ast.Name):
            self.namespace[target.id] = value
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            try:
                values = tuple(value)
            except TypeError:
                raise self.error(target, f"cannot unpack {value!r}") from None
            if len(values) != len(target.elts):
                raise self.error(target, f"{len(target.elts)} names for {len(values)} values")
            for t, v in zip(target.elts, values):
                self.assign(t, v)
            return
        raise self.error(target, "assign constants to names")

    def value(self, node: ast.expr) -> Any:
        try:
            return self._value(node)
        except CandidateError:
            raise
        except Exception as err:  # noqa: BLE001 - any failure of a constant is the candidate's
            raise self.error(node, f"this constant cannot be computed: {type(err).__name__}: {err}") from None

    def _value(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.namespace:
                return self.namespace[node.id]
            if node.id in _BUILTINS:
                return _BUILTINS[node.id]
            raise self.error(node, f"name {node.id!r} is not defined")
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self._value(e) for e in node.elts)
        if isinstance(node, ast.BinOp):
            left, right = self._value(node.left), self._value(node.right)
            if isinstance(node.op, ast.Pow) and isinstance(right, int) and abs(right) > 64:
                raise self.error(node, "exponents above 64 are not accepted in constants")
            return _BINARY[type(node.op)](left, right)
        if isinstance(node, ast.UnaryOp):
            return _UNARY[type(node.op)](self._value(node.operand))
        if isinstance(node, ast.BoolOp):  # short-circuits, as Python does
            result = self._value(node.values[0])
            for v in node.values[1:]:
                if (not result) if isinstance(node.op, ast.And) else result:
                    break
                result = self._value(v)
            return result
        if isinstance(node, ast.Compare):
            left = self._value(node.left)
            for op, comparator in zip(node.ops, node.comparators):
                if type(op) not in _COMPARE:
                    raise self.error(node, f"the comparison {type(op).__name__} is not accepted in a constant; "
                                           "accepted: == != < <= > >=")
                right = self._value(comparator)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self._value(node.body) if self._value(node.test) else self._value(node.orelse)
        if isinstance(node, ast.Attribute):
            return getattr(self._value(node.value), node.attr)
        if isinstance(node, ast.Subscript):
            return self._value(node.value)[self._value(node.slice)]
        if isinstance(node, ast.Slice):
            return slice(*(self._value(p) if p is not None else None for p in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                raise self.error(node, "a constant dict lists its keys: {KEY: value, ...} (no ** unpacking)")
            return {self._value(k): self._value(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return tuple(self._comprehension(node.elt, node.generators))
        if isinstance(node, ast.Call):
            fn = self._value(node.func)
            if not callable(fn):
                raise self.error(node, f"{ast.unparse(node.func)} is not callable")
            args = [self._value(a) for a in node.args]
            kwargs = {k.arg: self._value(k.value) for k in node.keywords if k.arg}
            return fn(*args, **kwargs)
        raise self.error(node, f"{type(node).__name__} is not accepted in a constant")

    def _comprehension(self, element: ast.expr, generators: list[ast.comprehension]) -> list[Any]:
        first, rest = generators[0], generators[1:]
        assert isinstance(first.target, ast.Name)
        out: list[Any] = []
        saved = self.namespace.get(first.target.id, _MISSING)
        try:
            for value in self._value(first.iter):
                self.namespace[first.target.id] = value
                if all(self._value(condition) for condition in first.ifs):
                    out.extend(self._comprehension(element, rest) if rest else [self._value(element)])
        finally:
            if saved is _MISSING:
                self.namespace.pop(first.target.id, None)
            else:
                self.namespace[first.target.id] = saved
        return out
