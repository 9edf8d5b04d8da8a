"""Malformed and mutated candidates: the format check and the loader either take a text or refuse
it with a `CandidateError` — never any other exception, whatever the text.

The seeds are the valid candidates of the test data and the examples; each case mutates one
with a fixed seed (tokens deleted, duplicated, swapped or replaced, lines of attacks inserted,
expressions nested deep, numbers made huge), so a failure names a case that reproduces."""

from __future__ import annotations

import ast
import functools
import io
import random
import tokenize
from pathlib import Path

import pytest
from argus.harness import CandidateError, extract_candidate, parse_candidate
from argus.harness.extract import kernel_functions
from argus.harness.loader import load_candidate

ROOT = Path(__file__).resolve().parents[3]
CASES = 300

HUGE_NUMBERS = ["10**10**8", "1 << 10**9", "9" * 5000, "0x" + "f" * 4000, "(0,) * 10**9", "1e999", "-0", "2**2**2**2**2**2",
                "'a' * 10**9", "int('9' * 4000)", "range(10**12)", "round(5, -10**8)"]
NAMES = ["open", "nv", "__class__", "getattr", "range", "u8", "make_shared", "kernel", "grid", "type", "numpy",
         "format", "__import__", "thread_idx", "Layout", "math", "tuple", "min"]
LINES = ["nv = u8", "X = ''.join('a')", "X = (lambda: 0)()", "X = tuple(0 for a in range(10**6) for b in range(10**6))",
         "X = " + "(" * 300 + "1" + ")" * 300, "X = " + "-" * 3000 + "1", "X = " + "[" * 150 + "]" * 150,
         "from argus.dsl import *", "import os", "X = '{0.__class__}'.format(1)", "del X", "global X",
         "X = f'{1!r}'", "X = (Y := 1)", "class A: pass", "X = {**{}}", "X = min(*(1, 2))", "X = u8.numpy",
         "X = 1 if 1 else 2", "X = math.log2(8)", "X = Layout((4, 8), (8, 1)).size()", "X = 'a' % 1",
         "x = " + "lambda: " * 1500 + "0", "X = 0x" + "f" * 4000 + " // 0", "x: Tensor[()] = 0",
         "x: '" + "-" * 2000 + "1' = 0", "# -*- coding: utf-7 -*-", "x = Layout.shape", "x = (make_local, 1)",
         "X = E(0) * (1 << 400) * (1 << 400)", "from argus.dsl import CopyAtom, DType, MMAAtom",
         "X = prefix_product((1 << 500,) * 40)", "X = tuple(max(range(10000)) for i in range(100))",
         "A = (0,)\nA = (A, A)", "X = {" + ", ".join(f"{i} * (2 ** 61 - 1): 0" for i in range(300)) + "}"]


@functools.cache
def seeds() -> tuple[str, ...]:
    """Every kernel of the test data and the examples, in the candidate format."""
    found = []
    for path in sorted([*(ROOT / "examples").glob("*.py"), *(Path(__file__).parent / "data").glob("*.py")]):
        text = path.read_text()
        for fn in kernel_functions(ast.parse(text)):
            try:
                found.append(extract_candidate(text, fn.name, path.name).text)
            except CandidateError:
                continue
    assert len(found) >= 8
    return tuple(found)


def mutated(case: int) -> str:
    """Case `case`: one seed, changed one way, both chosen by a generator seeded with `case`."""
    rng = random.Random(case)
    text = rng.choice(seeds())
    kind = case % 7
    if kind in (0, 6):  # a line of an attack: anywhere, or first in the kernel's body
        lines = text.splitlines()
        at = rng.randrange(len(lines) + 1)
        indent = " " * (len(lines[at - 1]) - len(lines[at - 1].lstrip())) if at else ""
        if kind == 6:
            first = kernel_functions(ast.parse(text))[0].body[0]
            at, indent = first.lineno - 1, " " * first.col_offset
        return "\n".join(lines[:at] + [indent + rng.choice(LINES)] + lines[at:]) + "\n"
    tokens = [(t.type, t.string) for t in tokenize.generate_tokens(io.StringIO(text).readline)]
    i = rng.randrange(len(tokens) - 1)
    if kind == 1:
        del tokens[i]
    elif kind == 2:
        tokens.insert(i, tokens[i])
    elif kind == 3:
        tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
    elif kind == 4:
        numbers = [j for j, t in enumerate(tokens) if t[0] == tokenize.NUMBER] or [i]
        tokens[rng.choice(numbers)] = (tokenize.NUMBER, rng.choice(HUGE_NUMBERS))
    else:  # a name replaced by another, at times nested in brackets past every limit
        names = [j for j, t in enumerate(tokens) if t[0] == tokenize.NAME] or [i]
        depth = rng.choice([0, 0, 120, 250])
        tokens[rng.choice(names)] = (tokenize.NAME, "[" * depth + rng.choice(NAMES) + "]" * depth)
    try:
        return tokenize.untokenize(tokens)
    except (ValueError, TypeError, IndexError):
        return text


@pytest.mark.parametrize("case", range(CASES))
def test_a_mutated_candidate_is_taken_or_refused_with_a_candidate_error(case: int, tmp_path: Path) -> None:
    text = mutated(case)
    try:
        candidate = parse_candidate(text)
        loaded = load_candidate(candidate, tmp_path / "candidate.py")
        if loaded.grid_node is not None:
            loaded.grid({a.arg: 64 for a in loaded.grid_node.args.args})
    except CandidateError as err:
        assert str(err)  # a message a model can act on; any other exception fails the test
