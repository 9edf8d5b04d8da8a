"""The invariants a candidate must prove are the task's: a candidate that moves its tag functions
and assertions into a helper nothing calls, weakens a tag function to a constant, puts its
assertion under ``if False:`` or compares a tile with itself is refused as a reward hack, both
by the validator's check of the text and on the compiled kernel (`argus.harness.invariants`);
renamed lambda parameters and a legitimately optimized kernel are accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from argus.harness import Limits, Validator, load_task
from argus.harness.candidate import parse_candidate
from argus.harness.invariants import Invariants, invariant_findings, kernel_invariants, task_invariants, text_invariants
from argus.harness.kb import set_constants
from argus.harness.loader import load_candidate
from harness_testing import DATA, gemm_candidate

TAGS = "    tag(a, lambda m, k: (k,))\n    tag(b, lambda n, k: (k,))\n"
WEAKENED_A = "invariant weakened: the task tags a with lambda m, k: (k,), the candidate with lambda m, k: (0,)"
WEAKENED_B = "invariant weakened: the task tags b with lambda n, k: (k,), the candidate with lambda n, k: (0,)"
ASSERTION = '                assert tag(fa[i, :][...]) == tag(fb[j, :][...]), "A and B meet along k"\n'
HELPER = '''

@device
def invariants(a, b, fa, fb):
    tag(a, lambda m, k: (k,))
    tag(b, lambda n, k: (k,))
    assert tag(fa[0, :][...]) == tag(fb[0, :][...]), "A and B meet along k"
'''


def _with_device(text: str) -> str:
    return text.replace("from argus.dsl import Tensor,", "from argus.dsl import Tensor, device,")


def _unreachable_helper() -> str:
    """The invariants moved into a @device helper the kernel never calls."""
    return _with_device(gemm_candidate().replace(TAGS, "").replace(ASSERTION, "") + HELPER)


def _called_helper() -> str:
    """The tag functions set by a helper the kernel does call: still the kernel's invariants."""
    helper = "\n\n@device\ndef set_tags(x, y):\n    tag(x, lambda m, k: (k,))\n    tag(y, lambda n, k: (k,))\n"
    return _with_device(gemm_candidate().replace(TAGS, "    set_tags(a, b)\n") + helper)


HACKS = {
    "unreachable-helper": (_unreachable_helper(),
                           ["the task's kernel gives tag functions to a, b and the candidate does not",
                            "the task's kernel states 1 tag assertion(s) ('A and B meet along k'), the candidate 0"]),
    "constant-tag": (gemm_candidate().replace("tag(a, lambda m, k: (k,))", "tag(a, lambda m, k: (0,))"), [WEAKENED_A]),
    "dead-assertion": (gemm_candidate().replace(ASSERTION, "                if False:\n    " + ASSERTION),
                       ["the task's kernel states 1 tag assertion(s) ('A and B meet along k'), the candidate 0"]),
    "aliased-constant-tags": (gemm_candidate().replace(TAGS, TAGS + "    x, y = a, b\n    tag(x, lambda m, k: (0,))\n"
                                                                "    tag(y, lambda n, k: (0,))\n"),
                              [WEAKENED_A, WEAKENED_B]),
    "self-comparison": (gemm_candidate().replace("tag(fb[j, :][...])", "tag(fa[i, :][...])"),
                        ["the task's kernel states 1 tag assertion(s) ('A and B meet along k'), the candidate 0"]),
}


def _aliased_by_a_helper() -> str:
    """Both tag functions made constants through names a helper returns: only the compiled
    kernel, where the helper is inlined, shows that they are the arguments' tags."""
    weakened = TAGS + ("    x = same(a)\n    y = same(b)\n    tag(x, lambda m, k: (0,))\n"
                       "    tag(y, lambda n, k: (0,))\n")
    return _with_device(gemm_candidate().replace(TAGS, weakened) + "\n\n@device\ndef same(t):\n    return t\n")


ONLY_COMPILED = {"aliased-by-a-helper": (_aliased_by_a_helper(), [WEAKENED_A, WEAKENED_B])}

ACCEPTED = {
    "renamed-parameters": gemm_candidate().replace("lambda m, k: (k,)", "lambda row, col: col")
                                          .replace("lambda n, k: (k,)", "lambda i, j: (j,)"),
    "tags-in-a-called-helper": _called_helper(),
    "larger-k-slice": set_constants(gemm_candidate(), {"BK": 8}),
}


@pytest.fixture(scope="module")
def validator(tmp_path_factory: pytest.TempPathFactory) -> Validator:
    task = load_task(str(DATA / "gemm_task.py"))
    made = Validator(task, tmp_path_factory.mktemp("invariants"), device="cpu", limits=Limits(60, 4096))
    made.probe()
    return made


@pytest.mark.parametrize("name", sorted(HACKS))
def test_the_validator_refuses_invariants_weakened_in_the_text(validator: Validator, name: str) -> None:
    text, expected = HACKS[name]
    v = validator.validate(text, name)
    assert v.stage == "hacks" and not v.validated, v.feedback()
    for message in expected:
        assert any(message in hack for hack in v.hacks), (message, v.hacks)
    assert not (validator.directory / "candidates" / name).exists()  # refused before anything ran


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_validator_accepts_the_same_invariants_spelled_otherwise(validator: Validator, name: str) -> None:
    from argus.harness.hacks import static_findings

    candidate = validator.check(ACCEPTED[name])
    assert static_findings(candidate, validator.kept_tags, validator.kept_assertions) == []


def test_a_legitimately_optimized_candidate_is_validated(validator: Validator) -> None:
    v = validator.validate(ACCEPTED["larger-k-slice"], "larger-k-slice")
    assert v.validated and v.invariants == "proved", v.feedback()


def test_the_validator_refuses_what_only_the_compiled_kernel_shows(validator: Validator) -> None:
    text, expected = ONLY_COMPILED["aliased-by-a-helper"]
    v = validator.validate(text, "aliased-by-a-helper")
    assert v.stage == "hacks" and all(any(m in h for h in v.hacks) for m in expected), v.feedback()


def test_a_dead_assertion_behind_a_module_constant_is_refused(validator: Validator) -> None:
    text = gemm_candidate().replace("THREADS = BM * BN // 4", "THREADS = BM * BN // 4\nCHECK = False")
    text = text.replace(ASSERTION, "                if CHECK:\n    " + ASSERTION)
    v = validator.validate(text, "dead-by-constant")
    assert v.stage == "hacks" and any("tag assertion(s)" in h for h in v.hacks), v.hacks


# ---- the same, on the compiled kernel --------------------------------------------------------
@pytest.fixture(scope="module")
def required() -> Invariants:
    return task_invariants(load_task(str(DATA / "gemm_task.py")))


def _compiled(text: str, folder: Path) -> Invariants:
    return kernel_invariants(load_candidate(parse_candidate(text), folder / "candidate.py").kernel)


def test_the_task_fixes_its_tag_functions_and_assertions(required: Invariants) -> None:
    assert [(t.position, t.argument, t.function.text) for t in required.tags] == [
        (0, "a", "lambda m, k: (k,)"), (1, "b", "lambda n, k: (k,)")]
    assert [(a.kind, a.message) for a in required.assertions] == [("eq", "A and B meet along k")]
    assert Invariants.from_dict(required.as_dict()) == required
    assert text_invariants(load_task(str(DATA / "gemm_task.py")).initial.text) == required  # what a worker reads
    with pytest.raises(ValueError, match="not a stored Invariants"):
        Invariants.from_dict({"tags": [{"position": 0}]})


@pytest.mark.parametrize("name", sorted(HACKS) + sorted(ONLY_COMPILED))
def test_the_compiled_kernel_shows_the_same_hacks(required: Invariants, tmp_path: Path, name: str) -> None:
    text, expected = {**HACKS, **ONLY_COMPILED}[name]
    findings = invariant_findings(required, _compiled(text, tmp_path))
    for message in expected:
        assert any(message in f for f in findings), (message, findings)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_compiled_kernel_keeps_the_invariants(required: Invariants, tmp_path: Path, name: str) -> None:
    assert invariant_findings(required, _compiled(ACCEPTED[name], tmp_path)) == []


def test_invariants_of_different_readings_do_not_compare(required: Invariants, validator: Validator) -> None:
    with pytest.raises(ValueError, match="do not compare"):
        invariant_findings(required, validator.kept_tags)
