"""The invariants a candidate must prove, fixed by the task: never taken from the candidate.

A candidate is verified against its own tag functions and tag assertions, so a candidate that
weakens them (a tag function made a constant, an assertion moved into a helper nothing calls
or under a condition that is never true) is "proved" while computing something else. The
task's trusted kernel therefore fixes, for each tensor argument, the tag function it carries
and what every store into it is asserted to carry (``assert_tags``: a GEMM's C is the product of
A's and B's rows over all of K), and the number of tag assertions a kernel must state; a
candidate that carries less is a reward hack.

Both sides are read off the COMPILED kernel (`argus.dsl` IR), where helpers are inlined, code
under a condition known false at compile time is gone, and a tag function is a small
expression of its coordinates: two spellings that compile to the same expression (renamed
lambda parameters, ``k`` and ``(k,)``, ``k + 0``) are the same invariant.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xdsl.dialects import arith, builtin, scf
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

if TYPE_CHECKING:
    from argus.dsl.kernel import CompiledKernel, Kernel

    from .task import Task

IR = "ir"
"""The basis of invariants read off a compiled kernel (`kernel_invariants`)."""

TEXT_LIMIT = 160
"""The longest readable form of a tag function (its canonical key is never cut)."""

_INFIX = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.floordivsi": "//", "arith.divsi": "/",
          "arith.remsi": "%", "arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}

_VIEWS = frozenset({"argus.slice", "argus.partition", "argus.view", "argus.tensor_view"})
"""Ops that only look at a tile or tensor another way: equal operands give the same elements."""


@dataclass(frozen=True)
class TagFunction:
    """One tag function: `key` compares (canonical: its parameters by position), `text` reads
    (``lambda m, k: (k,)``)."""

    key: str
    text: str


@dataclass(frozen=True)
class ArgumentTag:
    """The tag function a kernel gives the tensor argument at `position` (named `argument`)."""

    position: int
    argument: str
    function: TagFunction


@dataclass(frozen=True)
class Assertion:
    """One tag assertion on reachable code: ``eq`` (same tags) or ``ne``, its message and line."""

    kind: str
    message: str
    line: int


@dataclass(frozen=True)
class Invariants:
    """What a kernel states about its data flow: its arguments' tag functions, what stores into
    its tensor arguments are asserted to carry (`claims`, one ``assert_tags`` each) and its tag
    assertions. `basis` names how they were read (``ir``: off the compiled kernel; ``source``:
    off the text, `hacks.source_invariants`); only invariants of one basis compare."""

    tags: tuple[ArgumentTag, ...] = ()
    assertions: tuple[Assertion, ...] = ()
    basis: str = IR
    claims: tuple[ArgumentTag, ...] = ()
    written: tuple[tuple[int, str], ...] = ()
    """The tensor arguments (position, name) the kernel asserts it writes whole (``assert_written``)."""

    def __bool__(self) -> bool:
        return bool(self.tags or self.assertions or self.claims or self.written)

    def tagged(self, position: int) -> list[TagFunction]:
        return [t.function for t in self.tags if t.position == position]

    def claimed(self, position: int) -> list[TagFunction]:
        return [t.function for t in self.claims if t.position == position]

    def as_dict(self) -> dict[str, Any]:
        def listed(tags: tuple[ArgumentTag, ...]) -> list[dict[str, Any]]:
            return [{"position": t.position, "argument": t.argument, "key": t.function.key, "text": t.function.text}
                    for t in tags]

        return {"basis": self.basis, "tags": listed(self.tags), "claims": listed(self.claims),
                "assertions": [{"kind": a.kind, "message": a.message, "line": a.line} for a in self.assertions],
                "written": [{"position": p, "argument": n} for p, n in self.written]}

    @classmethod
    def from_dict(cls, data: Any) -> Invariants:
        """The inverse of `as_dict`, which it must match field for field and type for type
        (raises `ValueError` naming what is wrong: a worker's report carries these)."""
        def items(value: Any, fields: dict[str, type], what: str) -> list[dict[str, Any]]:
            if not isinstance(value, list):
                raise ValueError(f"{what} is not a list")
            for item in value:
                if not isinstance(item, dict) or set(item) != set(fields) or not all(
                        isinstance(item[k], t) and not isinstance(item[k], bool) for k, t in fields.items()):
                    expected = ", ".join(f"{k!r}: {t.__name__}" for k, t in fields.items())
                    raise ValueError(f"an item of {what} is not {{{expected}}}")
            return value

        if not isinstance(data, dict) or not isinstance(data.get("basis"), str):
            raise ValueError("not a stored Invariants: expected {'basis': str, 'tags': [...], 'claims': [...], "
                             "'assertions': [...]}")
        fields = {"position": int, "argument": str, "key": str, "text": str}
        tags = items(data.get("tags"), fields, "tags")
        claims = items(data.get("claims", []), fields, "claims")  # absent from runs stored before claims
        assertions = items(data.get("assertions"), {"kind": str, "message": str, "line": int}, "assertions")
        written = items(data.get("written", []), {"position": int, "argument": str}, "written")  # (absent before it)
        return cls(tuple(ArgumentTag(t["position"], t["argument"], TagFunction(t["key"], t["text"])) for t in tags),
                   tuple(Assertion(a["kind"], a["message"], a["line"]) for a in assertions), data["basis"],
                   tuple(ArgumentTag(t["position"], t["argument"], TagFunction(t["key"], t["text"])) for t in claims),
                   tuple((w["position"], w["argument"]) for w in written))


# ---- comparing ------------------------------------------------------------------------------
def invariant_findings(required: Invariants, found: Invariants) -> list[str]:
    """What `found` (a candidate's) drops or weakens of `required` (the task's); [] when it keeps
    them all. A candidate may add tag functions and assertions, never carry fewer."""
    if required.basis != found.basis:
        raise ValueError(f"invariants read {required.basis!r} and {found.basis!r} do not compare")
    out = []
    positions = sorted({t.position for t in required.tags})
    names = {t.position: t.argument for t in required.tags}
    dropped = [names[p] for p in positions if not found.tagged(p)]
    if dropped:
        out.append(f"invariants dropped: the task's kernel gives tag functions to {', '.join(dropped)} and the "
                   "candidate does not (invariants are carried forward, not removed)")
    for position in positions:
        wanted = required.tagged(position)
        keys = {f.key for f in wanted}
        for function in found.tagged(position):
            if function.key not in keys:
                out.append(f"invariant weakened: the task tags {names[position]} with {wanted[0].text}, the candidate "
                           f"with {function.text} (tag functions are fixed by the task)")
    claimed = sorted({t.position for t in required.claims})
    names.update({t.position: t.argument for t in required.claims})
    for position in claimed:
        wanted = required.claimed(position)
        keys = {f.key for f in wanted}
        if not found.claimed(position):
            out.append(f"invariants dropped: the task asserts what every store into {names[position]} carries "
                       f"(assert_tags({names[position]}, {wanted[0].text})) and the candidate does not")
        for function in found.claimed(position):
            if function.key not in keys:
                out.append(f"invariant weakened: the task asserts that {names[position]} holds {wanted[0].text}, the "
                           f"candidate {function.text} (what is stored is fixed by the task)")
    kept = {position for position, _ in found.written}
    for position, name in required.written:
        if position not in kept:
            out.append(f"invariants dropped: the task asserts that every element of {name} is written "
                       f"(assert_written({name})) and the candidate does not")
    have = Counter(a.kind for a in found.assertions)
    for kind, count in sorted(Counter(a.kind for a in required.assertions).items()):
        if have[kind] < count:
            kept = sorted({a.message for a in required.assertions if a.kind == kind and a.message})
            said = f" ({'; '.join(repr(m) for m in kept)})" if kept else ""
            out.append(f"invariants dropped: the task's kernel states {count} tag assertion(s){said}, the candidate "
                       f"{have[kind]} on code its kernel reaches")
    return out


# ---- reading them off the compiled kernel ----------------------------------------------------
def kernel_invariants(kernel: Kernel) -> Invariants:
    """The invariants of a built kernel, compiled as the validator compiles it."""
    return compiled_invariants(kernel.specialize())


def task_invariants(task: Task, folder: Path | None = None) -> Invariants:
    """The invariants the task's trusted kernel fixes (none when the task has no kernel)."""
    return text_invariants(task.initial.text if task.initial is not None else None, folder)


def text_invariants(text: str | None, folder: Path | None = None) -> Invariants:
    """The invariants of the kernel in `text`, a module in the candidate format (None: no kernel,
    no invariants); the text is written to `folder` (default: a temporary one) for the front end
    to read. Where only the task's text travels (a sandboxed worker's request), this is
    `task_invariants`."""
    if text is None:
        return Invariants()
    from .candidate import parse_candidate
    from .loader import load_candidate

    candidate = parse_candidate(text, "task_kernel.py")
    if folder is not None:
        return kernel_invariants(load_candidate(candidate, folder / "task_kernel.py").kernel)
    with tempfile.TemporaryDirectory(prefix="argus-task-") as scratch:
        return kernel_invariants(load_candidate(candidate, Path(scratch) / "task_kernel.py").kernel)


def compiled_invariants(compiled: CompiledKernel) -> Invariants:
    """The tag functions of the kernel's tensor arguments, what stores into them are asserted to
    carry, and its tag assertions, on the ops any launch can reach."""
    kernel = compiled.op
    params = kernel.body.block.args
    names = [a.data for a in kernel.arg_names.data]
    tags: list[ArgumentTag] = []
    claims: list[ArgumentTag] = []
    written: dict[tuple[int, str], None] = {}
    assertions: dict[tuple[int, int, str, str], Assertion] = {}
    for op in _reachable(kernel.body.block):
        if op.name == "argus.assert_written":
            target = op.operands[0]
            if isinstance(target, BlockArgument) and target.owner is kernel.body.block:
                written[(target.index, names[target.index])] = None
        elif op.name in ("argus.tag", "argus.store_tags"):
            target = op.operands[0]
            if isinstance(target, BlockArgument) and target.owner is kernel.body.block:
                found = tags if op.name == "argus.tag" else claims
                found.append(ArgumentTag(target.index, names[target.index], _tag_function(op, params, names)))
        elif op.name == "argus.tag_assert" and not _same_elements(op.operands[0], op.operands[1]):
            where = compiled.locations.get(op)
            line, col = (where.line, where.col) if where is not None else (0, len(assertions))
            kind, message = op.properties["kind"].data, op.properties["message"].data
            assertions.setdefault((line, col, kind, message), Assertion(kind, message, line))
    return Invariants(tuple(dict.fromkeys(tags)), tuple(assertions.values()), IR, tuple(dict.fromkeys(claims)),
                      tuple(written))


def _reachable(block: Block) -> Iterator[Operation]:
    """The ops of `block` and the regions below it that a launch can reach: a branch on a
    constant condition keeps only its taken side, a loop with constant bounds and no trips
    nothing. (The front end already drops what a constant decides; this holds whatever pass
    produced the IR.)"""
    stack = [iter(block.ops)]
    while stack:
        op = next(stack[-1], None)
        if op is None:
            stack.pop()
            continue
        yield op
        if isinstance(op, scf.IfOp):
            taken = _constant(op.cond)
            regions = [op.true_region, op.false_region] if taken is None else \
                [op.true_region if taken else op.false_region]
        elif isinstance(op, scf.ForOp):
            lower, upper = _constant(op.lb), _constant(op.ub)
            regions = [] if lower is not None and upper is not None and lower >= upper else list(op.regions)
        elif op.name in ("argus.tag", "argus.store_tags"):
            regions = []  # a tag function's body is an expression, read by `_tag_function`
        else:
            regions = list(op.regions)
        for region in reversed(regions):
            for inner in reversed(region.blocks):
                stack.append(iter(inner.ops))


def _constant(value: SSAValue) -> int | None:
    maker = value.owner
    if isinstance(maker, arith.ConstantOp) and isinstance(maker.value, builtin.IntegerAttr):
        return int(maker.value.value.data)
    return None


def _tag_function(op: Operation, params: tuple[BlockArgument, ...], names: list[str]) -> TagFunction:
    """The tag function of an ``argus.tag`` op: its yielded values as expressions of the body's
    coordinates (by position in the key, by name in the text), of the kernel's parameters (by
    position) and of constants."""
    body = op.regions[0].block
    terminator = body.last_op
    values = list(terminator.operands) if terminator is not None else []
    names_of: dict[SSAValue, str] = {}
    lines: list[str] = []

    def leaf(value: SSAValue) -> str | None:
        if isinstance(value, BlockArgument):
            if value.owner is body:
                return f"x{value.index}"
            if value in params:
                return f"arg{value.index}"
            return f"an index of {value.owner.parent_op().name if value.owner.parent_op() else 'a block'}"
        return names_of.get(value) or _literal(value.owner)

    for root in values:  # each op after its operands (iteratively: an expression may nest deeply)
        stack = [root]
        while stack:
            value = stack[-1]
            if leaf(value) is not None:
                stack.pop()
                continue
            maker = value.owner
            pending = [v for v in maker.operands if leaf(v) is None]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            names_of[value] = name = f"v{len(lines)}"
            operands = ", ".join(str(leaf(v)) for v in maker.operands)
            lines.append(f"{name} = {maker.name}{_properties(maker)}({operands}) : {value.type}")

    def key(value: SSAValue) -> str:
        return str(leaf(value))

    yielded = ", ".join(key(v) for v in values)
    canonical = "; ".join(lines) + f" -> ({yielded})"
    coordinates = ", ".join(a.name_hint or f"x{a.index}" for a in body.args)
    parts = [_readable(v, body, params, names) for v in values]
    text = f"lambda {coordinates}: {_spelled(parts, [_constant(v) for v in values], names, coordinates)}"
    return TagFunction(canonical, text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT - 1] + "…")


def _spelled(parts: list[str], constants: list[int | None], names: list[str], coordinates: str) -> str:
    """A tag function's components as its source spells them: an operand's pair and row parts
    (``(k,), rows=(m,)``) and a product (``product(a[m], b[n], (range(0, K),))``) from their
    flat forms (`argus.dsl`'s tag components), the rest as a tuple."""
    from argus.dsl.frontend.statements import operand_identity
    from argus.verify import products

    def tup(items: list[str]) -> str:
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"

    operand = {operand_identity(n): n for n in names}
    try:
        if constants[0] == products.ROWS and constants[1] is not None:
            pairs = constants[1]
            return f"{tup(parts[2:2 + pairs])}, rows=lambda {coordinates}: {tup(parts[3 + pairs:])}"
        if constants[0] == products.PRODUCT:
            at, rows = 1, []
            for _ in range(2):
                size = constants[at]
                if size is None or constants[at + 1] not in operand:
                    return tup(parts)
                rows.append(f"{operand[constants[at + 1]]}[{', '.join(parts[at + 2:at + 1 + size])}]")
                at += 1 + size
            pos, pairs = constants[at], parts[at + 1:]
            if pos is None or not 0 <= pos < len(pairs) - 1:
                return tup(parts)
            pairs = [*pairs[:pos], f"range({pairs[pos]}, {pairs[-1]})", *pairs[pos + 1:-1]]
            return f"product({rows[0]}, {rows[1]}, {tup(pairs)})"
    except (IndexError, TypeError):
        pass
    return tup(parts)


def _literal(op: Operation) -> str | None:
    if isinstance(op, arith.ConstantOp):
        value = op.value
        if isinstance(value, (builtin.IntegerAttr, builtin.FloatAttr)):
            return repr(value.value.data)
        return str(value)
    return None


def _properties(op: Operation) -> str:
    items = sorted((name, str(attr)) for name, attr in op.properties.items())
    return "{" + ", ".join(f"{name}={attr}" for name, attr in items) + "}" if items else ""


def _readable(value: SSAValue, body: Block, params: tuple[BlockArgument, ...], names: list[str],
              budget: list[int] | None = None, depth: int = 0) -> str:
    """`value` as Python-like text, for messages; cut short ("…") past `TEXT_LIMIT` characters
    or a deep nesting."""
    budget = budget if budget is not None else [TEXT_LIMIT]
    if budget[0] <= 0 or depth > 24:
        return "…"
    if isinstance(value, BlockArgument):
        inner = value.owner is body or value in params
        text = value.name_hint or (f"x{value.index}" if value.owner is body else names[value.index] if inner else "i")
    else:
        maker = value.owner
        literal = _literal(maker)
        parts = [] if literal is not None else \
            [_readable(v, body, params, names, budget, depth + 1) for v in maker.operands]
        dim = maker.properties.get("dim")
        short = maker.name.split(".", 1)[-1]
        if literal is not None:
            text = literal
        elif maker.name in _INFIX and len(parts) == 2:
            text = f"({parts[0]} {_INFIX[maker.name]} {parts[1]})"
        elif isinstance(dim, builtin.StringAttr) and not parts:
            text = f"{short}.{dim.data}"
        else:
            text = f"{short}({', '.join(parts)})"
    budget[0] -= len(text)
    return text


def _same_elements(left: SSAValue, right: SSAValue, depth: int = 0) -> bool:
    """Both sides of a tag assertion name the same elements (the assertion cannot fail): the
    same value, or the same view of the same values."""
    if left is right:
        return True
    if depth > 32 or isinstance(left, BlockArgument) or isinstance(right, BlockArgument):
        return False
    a, b = left.owner, right.owner
    if isinstance(a, arith.ConstantOp) and isinstance(b, arith.ConstantOp):
        return a.value == b.value
    if a.name != b.name or a.name not in _VIEWS or left.type != right.type or a.properties != b.properties \
            or len(a.operands) != len(b.operands):
        return False
    return all(_same_elements(x, y, depth + 1) for x, y in zip(a.operands, b.operands))
