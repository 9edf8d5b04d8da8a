"""Integer expressions in entries (``K >= 4 * max(M, N)``): Python syntax, a whitelist of nodes.

Entries are data, never code: an expression is parsed once, checked against the whitelist,
and evaluated by walking its tree with the names a caller supplies. Accepted: integers,
``true``/``false`` as Python spells them, names, ``+ - * // %``, comparisons (chains too),
``and or not``, and calls of ``min`` and ``max``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

_BINARY: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
}
_COMPARE: dict[type, Callable[[int, int], bool]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge,
}
_CALLS: dict[str, Callable[..., int]] = {"min": min, "max": max}
ACCEPTED = "integers, names, + - * // %, comparisons, and/or/not, min(...) and max(...)"


class ExpressionError(ValueError):
    """An expression outside the whitelist, or one evaluated without a value for a name."""


@dataclass(frozen=True)
class Expression:
    text: str
    tree: ast.Expression = field(repr=False, compare=False)
    names: frozenset[str] = field(compare=False)

    @classmethod
    def parse(cls, text: str) -> Expression:
        try:
            tree = ast.parse(text.strip(), mode="eval")
        except SyntaxError as err:
            raise ExpressionError(f"{text!r} is not an expression ({err.msg}); accepted: {ACCEPTED}") from None
        names: set[str] = set()
        for node in ast.walk(tree):
            _check(node, text)
            if isinstance(node, ast.Name) and not _is_callee(tree, node):
                names.add(node.id)
        return cls(text.strip(), tree, frozenset(names))

    def evaluate(self, values: Mapping[str, int]) -> int | bool:
        missing = sorted(self.names - set(values))
        if missing:
            raise ExpressionError(f"{self.text!r} needs a value for {', '.join(missing)}")
        return _eval(self.tree.body, values, self.text)


def _is_callee(tree: ast.AST, name: ast.Name) -> bool:
    return any(isinstance(n, ast.Call) and n.func is name for n in ast.walk(tree))


def _check(node: ast.AST, text: str) -> None:
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.Name, ast.Load, ast.Call,
               ast.Constant, ast.And, ast.Or, ast.Not, ast.USub, ast.UAdd, *_BINARY, *_COMPARE)
    if not isinstance(node, allowed):
        raise ExpressionError(f"{text!r} uses {type(node).__name__}; accepted: {ACCEPTED}")
    if isinstance(node, ast.Constant) and (not isinstance(node.value, int)):
        raise ExpressionError(f"{text!r} has the constant {node.value!r}; accepted: {ACCEPTED}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _CALLS or node.keywords or not node.args:
            raise ExpressionError(f"{text!r} calls something other than min(...) or max(...); accepted: {ACCEPTED}")


def _eval(node: ast.AST, values: Mapping[str, int], text: str) -> int | bool:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return values[node.id]
    if isinstance(node, ast.UnaryOp):
        inner = _eval(node.operand, values, text)
        return (not inner) if isinstance(node.op, ast.Not) else (-inner if isinstance(node.op, ast.USub) else +inner)
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left, values, text), _eval(node.right, values, text)
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and right == 0:
            raise ExpressionError(f"{text!r} divides by zero")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.BoolOp):
        results = (_eval(v, values, text) for v in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.Compare):
        left = _eval(node.left, values, text)
        for op, right_node in zip(node.ops, node.comparators):
            right = _eval(right_node, values, text)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.Call):
        return _CALLS[node.func.id](*(_eval(a, values, text) for a in node.args))  # type: ignore[union-attr]
    raise ExpressionError(f"{text!r}: cannot evaluate {type(node).__name__}")  # pragma: no cover
