"""A result as people read it: short witnesses on one line, long ones a fact per line under
the line of source they name; as JSON, the same facts."""

from __future__ import annotations

import json

from argus.verify.results import Result, proved, violated


def test_a_short_witness_stays_on_one_line():
    text = violated("(4,8):(1,2) is injective", "two coordinates share an offset",
                    {"first": (2, 0), "second": (0, 1), "offset": 2}).text()
    assert text.splitlines() == ["violated: (4,8):(1,2) is injective", "  two coordinates share an offset",
                                 "  counterexample: first = (2,0), second = (0,1), offset = 2"]


def test_a_long_witness_gets_a_line_per_fact_under_its_source_line(tmp_path):
    source = tmp_path / "kernel.py"
    source.write_text("def k():\n    assert tag(a[...]) == tag(b[...]), 'A and B pair up'\n")
    witness = {"assertion": f"{source}:2:5", "kind": "violated", "message": "A and B pair up", "block": (0, 0, 0),
               "thread": 3, "loops": {"k0": 16}, "element": (1, 0), "lhs tag": (0, 1), "rhs tag": (0, 8)}
    lines = violated("the tag assertions of k hold for every launch", "found", witness, dict(witness)).text().splitlines()
    assert lines[2:5] == ["  counterexample 1:", "    | assert tag(a[...]) == tag(b[...]), 'A and B pair up'",
                          f"    assertion = {source}:2:5"]
    assert "    thread = 3" in lines and "    rhs tag = (0,8)" in lines
    assert lines.count("  counterexample 2:") == 1


def test_a_witness_whose_source_cannot_be_read_is_printed_without_it():
    witness = {"assertion": "/no/such/file.py:7:5", "kind": "out-of-bounds", "block": (0, 0, 0), "thread": 4,
               "index": (4,), "extent": "register tile (4):(1), mode 0 has size 4"}
    lines = violated("claim", "found", witness).text().splitlines()
    assert lines[2:4] == ["  counterexample:", "    assertion = /no/such/file.py:7:5"]


def test_json_round_trips():
    result = violated("claim", "found", {"assertion": "f.py:1:1", "index": (4,), "loops": {"k": 2}})
    assert Result.from_dict(json.loads(result.json())) == result
    assert Result.from_dict(json.loads(proved("claim", "why").json())) == proved("claim", "why")
