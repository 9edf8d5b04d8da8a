"""Tunable parameters are data a search enumerates: domains, defaults, and constraints over
the parameters and the kernel's sizes."""

from __future__ import annotations

import pytest
from argus.kb import KbError
from argus.kb.errors import EntryError
from argus.kb.frontmatter import parse
from argus.kb.parameters import parse_parameters


def space(*lines: str, constraints: tuple[str, ...] = ()):
    data = parse(["parameters:", *(f"  {line}" for line in lines),
                  *(["constraints:", *(f"  - {c}" for c in constraints)] if constraints else [])], "p.md")
    return parse_parameters(data["parameters"], data.get("constraints"), "p.md", 1, 1)


def test_domains_enumerate_in_order_and_constraints_prune() -> None:
    s = space("- name: STAGES", "  says: stages", "  values: [2, 3, 4]", "  default: 3",
              "- name: BK", "  says: k per slice", "  powers-of-two: {min: 16, max: 64}", "  default: 32",
              constraints=("STAGES * BK * (BM + BN) * 2 <= 49152",))
    assert s.names == ("STAGES", "BK") and s.size == 9 and s.default() == {"STAGES": 3, "BK": 32}
    points = list(s.points({"BM": 128, "BN": 128}))
    assert points == [{"STAGES": 2, "BK": 16}, {"STAGES": 2, "BK": 32}, {"STAGES": 3, "BK": 16},
                      {"STAGES": 3, "BK": 32}, {"STAGES": 4, "BK": 16}]
    assert s.admits({"STAGES": 2, "BK": 32}, {"BM": 128, "BN": 128})
    assert not s.admits({"STAGES": 5, "BK": 32}, {"BM": 128, "BN": 128})
    with pytest.raises(KbError, match="needs a value for BM, BN; give the kernel's sizes"):
        list(s.points())
    with pytest.raises(KbError, match="the parameters are STAGES, BK"):
        s.admits({"STAGES": 2})


def test_ranges_and_text_values() -> None:
    s = space("- name: GROUP", "  says: rows", "  range: {min: 2, max: 10, step: 4}", "  default: 6",
              "- name: ORDER", "  says: tile order", "  values: [row, column]", "  default: row")
    assert [p.values for p in s.parameters] == [(2, 6, 10), ("row", "column")]
    assert len(list(s.points())) == 6


@pytest.mark.parametrize("lines, constraints, message", [
    (["- name: S", "  says: x", "  values: [1, 2]", "  default: 3"], (), "the default of S, 3, is not in its domain"),
    (["- name: S", "  says: x", "  values: [1, 1]", "  default: 1"], (), "lists a value twice"),
    (["- name: S", "  says: x", "  default: 1"], (), "exactly one domain"),
    (["- name: S", "  says: x", "  powers-of-two: {min: 3, max: 8}", "  default: 8"], (), "powers of two"),
    (["- name: S", "  says: x", "  range: {min: 0, max: 100000}", "  default: 1"], (), "more than 4096 values"),
    (["- name: 9S", "  says: x", "  values: [1]", "  default: 1"], (), "the identifier it sets"),
    (["- name: S", "  values: [1]", "  default: 1"], (), "needs 'says'"),
    (["- name: S", "  says: x", "  values: [1]", "  default: 1", "  unit: B"], (), "unknown key.s. unit"),
    (["- name: S", "  says: x", "  values: [a, b]", "  default: a"], ("S > 1",), "not all integers"),
    (["- name: S", "  says: x", "  values: [1, 2]", "  default: 1"], ("K > 1",), "names no parameter"),
    (["- name: S", "  says: x", "  values: [1, 2]", "  default: 1"], ("S.bit_length() > 1",), "accepted: integers"),
])
def test_bad_parameters_are_refused(lines: list[str], constraints: tuple[str, ...], message: str) -> None:
    with pytest.raises(EntryError, match=message):
        space(*lines, constraints=constraints)
