"""The layout checker proves what holds, refutes what does not with a counterexample that is
checked here against the layout itself, and says unknown rather than guess."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from argus.layout import Layout, composition as compose, parse
from argus.verify import Verdict, bank_conflict_free, bijective, composition, equal, injective, partition
from argus.verify.cli import main

P = parse


def small_layouts():
    return st.lists(st.tuples(st.integers(1, 4), st.integers(0, 12)), min_size=1, max_size=3).map(
        lambda modes: Layout(tuple(s for s, _ in modes), tuple(d for _, d in modes)))


@settings(max_examples=300, deadline=None)
@given(small_layouts())
def test_injective_agrees_with_brute_force_and_its_witness_collides(layout):
    result = injective(layout)
    offsets = layout.offsets()
    assert result.proved == (len(set(offsets.tolist())) == offsets.size)
    if not result.proved:
        (w,) = result.witnesses
        assert w["first"] != w["second"] and layout(w["first"]) == layout(w["second"]) == w["offset"]


@settings(max_examples=300, deadline=None)
@given(small_layouts())
def test_bijective_agrees_with_brute_force(layout):
    offsets = layout.offsets()
    truth = sorted(offsets.tolist()) == list(range(offsets.size))
    assert bijective(layout).proved == truth


@settings(max_examples=300, deadline=None)
@given(small_layouts(), small_layouts())
def test_equal_agrees_with_brute_force_and_names_an_index_where_they_differ(a, b):
    result = equal(a, b)
    same = a.size() == b.size() and np.array_equal(a.offsets(), b.offsets())
    assert result.proved == same
    if not same and a.size() == b.size():
        w = result.witnesses[0]
        assert a(w["index"]) == w["first"] != w["second"] == b(w["index"])


def test_large_layouts_are_decided_structurally_or_left_unknown():
    big = Layout((1 << 12, 1 << 12), (1, 1 << 12))
    assert injective(big).proved and bijective(big).proved
    assert "mixed radix" in injective(Layout((1 << 12, 1 << 12), (1 << 12, 1))).reason
    collide = injective(Layout((1 << 12, 1 << 11, 2), (1, 1 << 12, 0)))
    assert collide.verdict is Verdict.VIOLATED
    assert injective(Layout((1 << 12, 1 << 11), (3, 5))).verdict is Verdict.UNKNOWN
    assert equal(Layout((1 << 12, 1 << 12), (1, 1 << 12)), Layout(1 << 24, 1)).proved
    differ = equal(Layout((1 << 12, 1 << 12), (1, 1 << 13)), Layout(1 << 24, 1))
    assert differ.verdict is Verdict.VIOLATED and differ.witnesses[0]["index"] == 1 << 12


def test_composition_proves_the_cute_result_and_refutes_wrong_ones():
    a, b = P("(6,2):(8,2)"), P("(4,3):(3,1)")
    assert composition(a, b).proved
    assert composition(a, b, P("((2,2),3):((24,2),8)")).proved
    wrong = composition(a, b, P("((2,2),3):((24,2),9)"))
    w = wrong.witnesses[0]
    assert wrong.verdict is Verdict.VIOLATED and a(w["B(i)"]) == w["A(B(i))"] != w["R(i)"]
    refused = composition(P("(6,2):(1,7)"), P("(3,2):(2,3)"))
    assert refused.verdict is Verdict.VIOLATED and "index 5" in refused.witnesses[0]["failed condition"]
    assert compose(a, b) == P("((2,2),3):((24,2),8)")


def test_partition_finds_holes_and_double_owners():
    assert partition(P("((4,8),(2,2)):((32,1),(16,8))"), 128).proved
    twice = partition(P("(32,4):(1,16)"), 128)
    w = twice.witnesses[0]
    assert twice.verdict is Verdict.VIOLATED and w["first"] != w["second"]
    tv = P("(32,4):(1,16)")
    assert tv(w["first"]["thread"], w["first"]["value"]) == tv(w["second"]["thread"], w["second"]["value"]) == w["element"]
    hole = partition(P("(32,3):(1,32)"), 128)
    assert hole.verdict is Verdict.VIOLATED and hole.witnesses[0]["element"] == 96


def test_bank_conflicts_of_vector_accesses():
    rows = P("(32):(64)")  # each thread reads 16 bytes at the start of a 128-byte row: all in banks 0-3
    result = bank_conflict_free(rows, 2, 16)
    assert result.verdict is Verdict.VIOLATED and result.witnesses[0]["bank"] < 4
    swizzled = P("Sw<3,3,3> o 0 o (32):(64)")
    assert bank_conflict_free(swizzled, 2, 16).proved
    assert bank_conflict_free(P("(32):(1)"), 4, 4).proved
    assert bank_conflict_free(P("(32):(0)"), 4, 4).proved  # one word for everybody: a broadcast


@pytest.mark.parametrize(
    "argv, status, words",
    [
        (["layout", "injective", "(4,8):(8,1)"], 0, "proved"),
        (["layout", "injective", "(4,8):(1,2)"], 1, "counterexample: first = (2,0), second = (0,1), offset = 2"),
        (["layout", "bijective", "(4,8):(1,5)"], 1, "missing offset = 4"),
        (["layout", "injective", "(1024,1024):(3,5)"], 1, "offset = 15"),
        (["layout", "partition", "(32,4):(1,32)", "128"], 0, "proved"),
    ],
)
def test_command_line(capsys, argv, status, words):
    assert main(argv) == status
    assert words in capsys.readouterr().out


def test_command_line_json_and_bad_input(capsys):
    assert main(["layout", "injective", "(4,8):(1,2)", "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "violated" and data["witnesses"][0]["first"] == [2, 0]
    assert main(["layout", "injective", "(4,8]:(1,2)"]) == 2
    assert "column 5" in capsys.readouterr().err
    assert main(["layout", "equal", "4:1"]) == 2
    assert main(["layout", "partition", "(32,4):(1,32)", "many"]) == 2
    assert main(["layout", "teleport", "4:1"]) == 2
