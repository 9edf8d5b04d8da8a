"""Reward hacks that show in the source: branches on the benchmark's sizes or on input values,
and invariants dropped or weakened to make the checker quiet. (Calls outside the language never
get this far: the candidate format refuses them. The hacks that show only when the kernel
runs — constant outputs, outputs independent of the inputs, time that does not grow with the
work — are the worker's.)

The invariants are read here off the text, on the code the kernel reaches: its own body and
the ``@device`` helpers it calls, without the side of an ``if`` that a constant rules out. A
tag function is compared with the task's up to its parameters' names. The worker reads the
same invariants exactly, off the compiled kernel (`invariants`); this check refuses the plain
cases before anything runs.

Every walk here is iterative and every quoted expression is a slice of the text: a candidate
can nest expressions far deeper than Python's recursion limit.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from .candidate import Candidate
from .invariants import ArgumentTag, Assertion, Invariants, TagFunction, invariant_findings

SOURCE = "source"
"""The basis of invariants read off a candidate's text (`source_invariants`)."""

QUOTE_LIMIT = 160
"""The longest piece of a candidate quoted in a finding."""


def static_findings(candidate: Candidate, required: Invariants | None = None, kept_assertions: int = 0) -> list[str]:
    """What in `candidate`'s text looks like gaming the tests or the checker. `required`: the
    task kernel's invariants read off its text (`source_invariants`; nothing required when
    empty or None); `kept_assertions`: a floor on the number of tag assertions the kernel
    reaches."""
    tree = ast.parse(candidate.text)
    sizes = {p.name for p in candidate.parameters if p.kind == "scalar"}
    sizes |= {d for p in candidate.parameters if p.kind == "tensor" for d in p.dims if isinstance(d, str)}
    tensors = {p.name for p in candidate.parameters if p.kind == "tensor"}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        inside = [n for s in sides for n in ast.walk(s)]
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in inside):
            continue  # divisibility (M % BM == 0) is a tiling condition, not a benchmark test
        constants = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, (int, float))
                     and not isinstance(s.value, bool) and s.value not in (0, 1)]
        if not constants:
            continue
        names = {n.id for n in inside if isinstance(n, ast.Name)}
        shape_reads = any(isinstance(n, ast.Attribute) and n.attr == "shape" for n in inside)
        if names & sizes or shape_reads:
            found.append(f"branch on a problem size against a constant at line {node.lineno}: "
                         f"{quote(candidate.text, node)} (kernels must work for every size they accept)")
        elif any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in tensors
                 for n in inside):
            found.append(f"branch on input values against a constant at line {node.lineno}: "
                         f"{quote(candidate.text, node)}")
    have = source_invariants(candidate, tree)
    kept = required if isinstance(required, Invariants) else Invariants(basis=SOURCE)
    dropped = invariant_findings(kept, have)
    if len(have.assertions) < kept_assertions and not any("tag assertion" in d for d in dropped):
        dropped.append(f"invariants dropped: the task's kernel states {kept_assertions} tag assertion(s), the "
                       f"candidate {len(have.assertions)} on code its kernel reaches")
    return found + dropped


def source_invariants(candidate: Candidate, tree: ast.Module | None = None) -> Invariants:
    """The tag functions `candidate`'s kernel gives its tensor arguments and the tag assertions
    it states, on the code the kernel reaches (see the module's docstring)."""
    tree = tree if tree is not None else ast.parse(candidate.text)
    functions = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    constants = _module_constants(tree, functions.values())
    tensors = {p.name: i for i, p in enumerate(candidate.parameters) if p.kind == "tensor"}
    names = [p.name for p in candidate.parameters]
    tags: dict[ArgumentTag, None] = {}
    claims: dict[ArgumentTag, None] = {}
    written: dict[tuple[int, str], None] = {}
    assertions: dict[int, Assertion] = {}
    pending = [(candidate.kernel, tuple(sorted(tensors.items())))]
    visited = set()
    while pending:
        entry = pending.pop()
        if entry in visited or entry[0] not in functions:
            continue
        visited.add(entry)
        name, bound = entry
        binding = dict(bound)  # a name of this function -> the kernel argument it stands for
        for stmt in _reached(functions[name].body, constants):
            if isinstance(stmt, ast.Assign):
                binding.update(_aliases(stmt, binding))
            for call in _calls(stmt):
                callee = call.func.id if isinstance(call.func, ast.Name) else None
                if callee in ("tag", "assert_tags") and len(call.args) == 2 and isinstance(call.args[0], ast.Name) \
                        and call.args[0].id in binding and isinstance(call.args[1], ast.Lambda):
                    position = binding[call.args[0].id]
                    found = tags if callee == "tag" else claims
                    found[ArgumentTag(position, names[position], _tag_function(candidate.text, call))] = None
                elif callee == "assert_written" and len(call.args) == 1 and isinstance(call.args[0], ast.Name) \
                        and call.args[0].id in binding:
                    position = binding[call.args[0].id]
                    written[(position, names[position])] = None
                elif callee in functions and callee != name:
                    params = [a.arg for a in functions[callee].args.args]
                    passed = {p: binding[a.id] for p, a in zip(params, call.args)
                              if isinstance(a, ast.Name) and a.id in binding}
                    pending.append((callee, tuple(sorted(passed.items()))))
            if isinstance(stmt, ast.Assert) and _states_tags(stmt.test):
                said = stmt.msg.value if isinstance(stmt.msg, ast.Constant) else ""
                message = said if isinstance(said, str) else ""
                assertions.setdefault(id(stmt), Assertion(_kind(stmt.test), message, stmt.lineno))
    return Invariants(tuple(tags), tuple(sorted(assertions.values(), key=lambda a: a.line)), SOURCE, tuple(claims),
                      tuple(sorted(written)))


def quote(text: str, node: ast.AST) -> str:
    """The source of `node`, cut to `QUOTE_LIMIT` characters."""
    segment = (ast.get_source_segment(text, node) or "").replace("\n", " ")
    return segment if len(segment) <= QUOTE_LIMIT else segment[:QUOTE_LIMIT - 1] + "…"


# ---- walking the reachable code ---------------------------------------------------------------
def _reached(body: list[ast.stmt], constants: dict[str, object]) -> Iterator[ast.stmt]:
    """The statements of `body` and of the blocks inside it, less the sides of an ``if`` whose
    condition is a constant."""
    stack = [iter(body)]
    while stack:
        stmt = next(stack[-1], None)
        if stmt is None:
            stack.pop()
            continue
        yield stmt
        if isinstance(stmt, ast.If):
            truth = _truth(stmt.test, constants)
            blocks = [stmt.body, stmt.orelse] if truth is None else [stmt.body if truth else stmt.orelse]
        else:
            blocks = [getattr(stmt, "body", []), getattr(stmt, "orelse", [])]
        for block in reversed(blocks):
            if isinstance(block, list) and block:
                stack.append(iter(block))


def _calls(stmt: ast.stmt) -> Iterator[ast.Call]:
    """The calls in `stmt` itself (not in the blocks nested in it)."""
    heads: list[ast.AST] = [stmt]
    if isinstance(stmt, (ast.If, ast.For, ast.While)):
        heads = [stmt.test] if not isinstance(stmt, ast.For) else [stmt.target, stmt.iter]
    for head in heads:
        for node in ast.walk(head):
            if isinstance(node, ast.Call):
                yield node


def _aliases(stmt: ast.Assign, binding: dict[str, int]) -> dict[str, int]:
    """Names an assignment makes other names for kernel arguments (``x = a``, ``x, y = a, b``)."""
    pairs = []
    for target in stmt.targets:
        value = stmt.value
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs.extend(zip(target.elts, stmt.value.elts))
        else:
            pairs.append((target, stmt.value))
    return {t.id: binding[v.id] for t, v in pairs
            if isinstance(t, ast.Name) and isinstance(v, ast.Name) and v.id in binding}


def _module_constants(tree: ast.Module, functions: Iterable[ast.FunctionDef]) -> dict[str, object]:
    """Module names bound once to a literal and never assigned in a function: what a condition
    such as ``if DEBUG:`` reads."""
    counts: dict[str, int] = {}
    values: dict[str, object] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        counts[name.id] = counts.get(name.id, 0) + 1
                        if target is name and isinstance(stmt.value, ast.Constant):
                            values[name.id] = stmt.value.value
    local = {n.id for fn in functions for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    local |= {a.arg for fn in functions for a in ast.walk(fn) if isinstance(a, ast.arg)}
    return {k: v for k, v in values.items() if counts[k] == 1 and k not in local}


_COMPARISONS = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
                ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


def _truth(test: ast.expr, constants: dict[str, object]) -> bool | None:
    """Whether `test` is always true or always false, when literals and module constants decide
    it (``False``, ``0``, ``not True``, ``DEBUG and x``, ``BM > 1000``); None otherwise."""
    value = _value(test, constants)
    return None if value is _UNKNOWN else bool(value)


_UNKNOWN = object()


def _value(node: ast.expr, constants: dict[str, object], depth: int = 0) -> object:
    if depth > 32:
        return _UNKNOWN
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id, _UNKNOWN)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        inner = _value(node.operand, constants, depth + 1)
        if inner is _UNKNOWN:
            return _UNKNOWN
        if isinstance(node.op, ast.Not):
            return not inner
        return -inner if isinstance(inner, (int, float)) else _UNKNOWN
    if isinstance(node, ast.BoolOp):
        parts = [_value(v, constants, depth + 1) for v in node.values]
        decisive = [p for p in parts if p is not _UNKNOWN and bool(p) == isinstance(node.op, ast.Or)]
        if decisive:
            return decisive[0]
        return _UNKNOWN if any(p is _UNKNOWN for p in parts) else parts[-1]
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARISONS for op in node.ops):
        items = [_value(v, constants, depth + 1) for v in (node.left, *node.comparators)]
        if any(not isinstance(v, (int, float)) for v in items):
            return _UNKNOWN
        return all(_COMPARISONS[type(op)](a, b) for op, a, b in zip(node.ops, items, items[1:]))
    return _UNKNOWN


# ---- what the reached code states -----------------------------------------------------------
def _tag_function(text: str, call: ast.Call) -> TagFunction:
    """The tag function of ``tag(t, fn)`` or ``assert_tags(t, fn)``: its canonical key (its
    parameters by position; a bare value is a 1-tuple; a ``rows=`` function after it) and its
    text."""
    functions = [call.args[1]] + [k.value for k in call.keywords if k.arg == "rows"]
    keys = []
    for fn in functions:
        if not isinstance(fn, ast.Lambda):
            keys.append(_shape(fn))
            continue
        params = {a.arg: f"#{i}" for i, a in enumerate(fn.args.args)}
        parts = fn.body.elts if isinstance(fn.body, ast.Tuple) else [fn.body]
        keys.append("(" + "; ".join(_shape(p, params) for p in parts) + ")")
    shown = quote(text, call.args[1]) + "".join(f", rows={quote(text, fn)}" for fn in functions[1:])
    return TagFunction(" rows ".join(keys), shown if len(shown) <= QUOTE_LIMIT else shown[:QUOTE_LIMIT - 1] + "…")


def _shape(node: ast.AST, renames: dict[str, str] | None = None) -> str:
    """The tree under `node` written flat (breadth first, each node with its scalar fields and
    its number of children), so equal trees give equal strings at any depth."""
    renames = renames or {}
    out = []
    for n in ast.walk(node):
        fields = [f"{k}={renames.get(v, v) if k == 'id' else v!r}" for k, v in ast.iter_fields(n)
                  if not isinstance(v, (ast.AST, list))]
        out.append(f"{type(n).__name__}[{','.join(fields)}]/{len(list(ast.iter_child_nodes(n)))}")
    return " ".join(out)


def _states_tags(test: ast.expr) -> bool:
    """A tag assertion that can fail: it compares tags, and its two sides are not one expression."""
    if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "tag" for n in ast.walk(test)):
        return False
    if isinstance(test, ast.Compare) and len(test.comparators) == 1:
        return _shape(test.left) != _shape(test.comparators[0])
    return True


def _kind(test: ast.expr) -> str:
    return "ne" if isinstance(test, ast.Compare) and isinstance(test.ops[0], ast.NotEq) else "eq"
