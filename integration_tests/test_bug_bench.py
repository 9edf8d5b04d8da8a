"""The held-out bug benchmark's data stays valid as the examples change: every edit applies to
exactly one place of its example, the cases span every example and kind the benchmark promises,
and its vocabulary stays apart from the mutation benchmark's. A few cases are confirmed on the
interpreter (the whole benchmark, with the checker, is too slow for the suite)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = _load("bug_bench")
cases = sys.modules["bug_bench_cases"]


@pytest.mark.parametrize("case", cases.CASES, ids=lambda c: c.name)
def test_each_edit_applies_to_exactly_one_place_of_its_example(case):
    source = (ROOT / "examples" / f"{case.example}.py").read_text()
    for old, new in case.edits:
        assert source.count(old) == 1, f"{case.name}: {old!r} occurs {source.count(old)} times"
        assert old != new
        source = source.replace(old, new, 1)


def test_the_cases_cover_every_example_with_enough_bugs_and_equivalents():
    examples = {p.stem for p in (ROOT / "examples").glob("*.py")}
    bugs = [c for c in cases.CASES if not c.equivalent]
    assert {c.example for c in bugs} == examples
    assert len(bugs) >= 80 and sum(c.equivalent for c in cases.CASES) >= 20
    assert {"gemm_ws", "gemm_tma"} <= {c.example for c in bugs if c.kind in ("phase parity", "expect-tx bytes")}
    assert len({c.name for c in cases.CASES}) == len(cases.CASES), "two cases share a name"


def test_the_kinds_and_edits_are_not_the_mutation_benchmark_s():
    mutants = _load("verify_mutants")
    assert not {m.operator for m in mutants.MUTANTS} & {c.kind for c in cases.CASES}
    assert not {m.edits for m in mutants.MUTANTS} & {c.edits for c in cases.CASES}


@pytest.mark.parametrize("note, expected", [
    ("guard dropped", "fault out-of-bounds"),  # a bug the interpreter faults on
    ("x added twice", "wrong output"),  # a bug that only computes the wrong thing
    ("y + x", ""),  # an equivalent rewrite: right under every schedule
])
def test_cases_are_confirmed_on_the_interpreter(note, expected, monkeypatch):
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    index = next(i for i, c in enumerate(cases.CASES) if c.example == "vector_add" and c.note == note)
    row = bench.run_case(index, check=False)
    assert row["confirmed"], row
    assert row["interpreter"].split(": ", 1)[-1].startswith(expected) if expected else "right output" in row["interpreter"]


def test_a_case_whose_edit_no_longer_applies_is_named(tmp_path):
    case = cases.Case("vector_add", "vector_add", "bounds mask", (("if i < n + 7:", "if i <= n:"),))
    with pytest.raises(ValueError, match="occurs 0 times in examples/vector_add.py"):
        bench.mutated(case, tmp_path, "t")
