"""A task kernel that asserts it writes every element of an output (``assert_written``) binds
every candidate to it: a candidate that drops it is refused, on the compiled kernel and on the
text, and one that keeps it is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from argus.harness import load_task
from argus.harness.candidate import parse_candidate
from argus.harness.hacks import source_invariants
from argus.harness.invariants import Invariants, invariant_findings, task_invariants, text_invariants

ROOT = Path(__file__).resolve().parents[3]
WRITTEN = "    assert_written(out)  # ... and writes every element of out\n"


@pytest.fixture(scope="module")
def task():  # type: ignore[no-untyped-def]
    return load_task(str(ROOT / "examples" / "vector_add.py") + ":vector_add")


def test_the_task_fixes_which_outputs_are_written_whole(task) -> None:  # type: ignore[no-untyped-def]
    required = task_invariants(task)
    assert required.written == ((2, "out"),)
    assert Invariants.from_dict(required.as_dict()) == required
    assert source_invariants(task.initial).written == ((2, "out"),)


def test_a_candidate_that_drops_assert_written_is_refused_and_one_that_keeps_it_is_not(task) -> None:  # type: ignore[no-untyped-def]
    required = task_invariants(task)
    assert task.initial.text.count(WRITTEN) == 1
    dropped = task.initial.text.replace(WRITTEN, "")
    for found in (text_invariants(dropped),):
        assert any("every element of out is written (assert_written(out))" in f
                   for f in invariant_findings(required, found))
    on_text = invariant_findings(source_invariants(task.initial), source_invariants(parse_candidate(dropped)))
    assert any("assert_written(out)" in f for f in on_text), on_text
    assert invariant_findings(required, text_invariants(task.initial.text)) == []
