"""The GEMM example task's kernel states what C holds (``assert_tags(c, ... product(...))``),
and that claim binds every candidate like its tag functions: a candidate that drops it, narrows
its range or drops A's rows is refused, on the compiled kernel and on the text, and the
knowledge base's GEMM recipes, which state the same, are accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from argus.harness import load_task
from argus.harness.candidate import parse_candidate
from argus.harness.extract import extract_candidate
from argus.harness.hacks import source_invariants
from argus.harness.invariants import Invariants, invariant_findings, task_invariants, text_invariants
from argus.harness.kb import RecipeBook

ROOT = Path(__file__).resolve().parents[3]
CLAIM = "    assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))\n"
ROWS_A = "    tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))\n"


@pytest.fixture(scope="module")
def task():  # type: ignore[no-untyped-def]
    return load_task(str(ROOT / "examples" / "gemm.py") + ":gemm")


@pytest.fixture(scope="module")
def required(task) -> Invariants:  # type: ignore[no-untyped-def]
    return task_invariants(task)


def test_the_task_fixes_the_claim_on_c_and_reads_it_as_written(required: Invariants) -> None:
    assert [(t.argument, t.function.text) for t in required.tags] == [
        ("a", "lambda m, k: (k,), rows=lambda m, k: (m,)"), ("b", "lambda n, k: (k,), rows=lambda n, k: (n,)")]
    assert [(t.position, t.argument, t.function.text) for t in required.claims] == [
        (2, "c", "lambda m, n: product(a[m], b[n], (range(0, K),))")]
    assert Invariants.from_dict(required.as_dict()) == required


EDITS = {
    "claim dropped": ((CLAIM, ""), "invariants dropped: the task asserts what every store into c carries"),
    "range narrowed": ((CLAIM, CLAIM.replace("range(0, K)", "range(0, K - 16)")),
                       "invariant weakened: the task asserts that c holds lambda m, n: product(a[m], b[n], "
                       "(range(0, K),)), the candidate"),
    "A's rows dropped": ((ROWS_A, "    tag(a, lambda m, k: (k,))\n"),
                         "invariant weakened: the task tags a with lambda m, k: (k,), rows=lambda m, k: (m,)"),
}


@pytest.mark.parametrize("name", sorted(EDITS))
def test_a_weaker_claim_is_refused_on_the_compiled_kernel_and_on_the_text(task, required: Invariants,  # type: ignore[no-untyped-def]
                                                                           name: str) -> None:
    (old, new), message = EDITS[name]
    assert task.initial.text.count(old) == 1
    text = task.initial.text.replace(old, new)
    compiled = invariant_findings(required, text_invariants(text))
    assert any(message in f for f in compiled), compiled
    on_text = invariant_findings(source_invariants(task.initial), source_invariants(parse_candidate(text)))
    assert on_text and all(f.startswith(("invariants dropped", "invariant weakened")) for f in on_text), on_text


def test_the_gemm_recipes_keep_the_task_s_claim(task, required: Invariants) -> None:  # type: ignore[no-untyped-def]
    recipes = [r for r in RecipeBook().recipes("nvptx:sm_90a", "gemm", task.initial.text)
               if "def gemm(a: Tensor[bf16" in r.template]
    assert len(recipes) >= 6, [r.id for r in recipes]
    for recipe in recipes:
        candidate = extract_candidate(recipe.template, "gemm")
        assert invariant_findings(required, text_invariants(candidate.text)) == [], recipe.id
        assert invariant_findings(source_invariants(task.initial), source_invariants(candidate)) == [], recipe.id
