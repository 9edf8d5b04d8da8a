"""Reward hacks that show in the source: branches on the benchmark's sizes or on input values,
and invariants dropped to make the checker quiet. (Calls outside the language never get this
far: the candidate format refuses them. The hacks that show only when the kernel runs —
constant outputs, outputs independent of the inputs, time that does not grow with the work —
are the worker's.)
"""

from __future__ import annotations

import ast

from .candidate import Candidate


def tagged_positions(candidate: Candidate) -> frozenset[int]:
    """The argument positions of the tensors `candidate` gives tag functions."""
    return frozenset(i for i, p in enumerate(candidate.parameters) if p.name in candidate.tagged)


def static_findings(candidate: Candidate, kept_tags: frozenset[int] = frozenset(), kept_assertions: int = 0) -> list[str]:
    """What in `candidate`'s text looks like gaming the tests or the checker; `kept_tags` are the
    argument positions the task's kernel tags, `kept_assertions` its number of tag assertions."""
    tree = ast.parse(candidate.text)
    sizes = {p.name for p in candidate.parameters if p.kind == "scalar"}
    sizes |= {d for p in candidate.parameters if p.kind == "tensor" for d in p.dims if isinstance(d, str)}
    tensors = {p.name for p in candidate.parameters if p.kind == "tensor"}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for s in sides for n in ast.walk(s)):
            continue  # divisibility (M % BM == 0) is a tiling condition, not a benchmark test
        constants = [s for s in sides if isinstance(s, ast.Constant) and isinstance(s.value, (int, float))
                     and not isinstance(s.value, bool) and s.value not in (0, 1)]
        if not constants:
            continue
        names = {n.id for s in sides for n in ast.walk(s) if isinstance(n, ast.Name)}
        shape_reads = any(isinstance(n, ast.Attribute) and n.attr == "shape" for s in sides for n in ast.walk(s))
        if names & sizes or shape_reads:
            found.append(f"branch on a problem size against a constant at line {node.lineno}: {ast.unparse(node)} "
                         "(kernels must work for every size they accept)")
        elif any(isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in tensors
                 for s in sides for n in ast.walk(s)):
            found.append(f"branch on input values against a constant at line {node.lineno}: {ast.unparse(node)}")
    dropped = sorted(kept_tags - tagged_positions(candidate))
    if dropped:
        names = ", ".join(candidate.parameters[i].name if i < len(candidate.parameters) else f"argument {i + 1}"
                          for i in dropped)
        found.append(f"invariants dropped: the task's kernel gives tag functions to {names} and the "
                     "candidate does not (invariants are carried forward, not removed)")
    if candidate.assertions < kept_assertions:
        found.append(f"invariants dropped: the task's kernel states {kept_assertions} tag assertion(s), the candidate "
                     f"{candidate.assertions}")
    return found
