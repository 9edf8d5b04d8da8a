"""The front-matter parser: the YAML subset entries use, the same values a YAML parser reads,
and a refusal naming the line for anything else."""

from __future__ import annotations

import pytest
from argus.kb.errors import EntryError
from argus.kb.frontmatter import parse, split
from argus.kb.packs import BUILTIN

TEXT = """\
id: x
title: "A: b"
count: 3
ratio: 1.5
on-off: true
targets: [nvptx:sm_90a, amdgpu:gfx942, "a, b"]
sizes: {K: 64, M: 128}
folded: >
  one two
  three

  four
literal: |
  a
    b
nested:
  - uses: matmul
  - any:
      - target: nvptx:*
      - feature: wgmma
  - plain words
  -
    - 1
    - 2
params:
  - name: STAGES   # a comment
    values: [2, 3]
quoted: 'it''s'
range: 1.3-1.6x faster
"""


def test_the_subset_reads_as_yaml_does() -> None:
    data = parse(TEXT.split("\n"), "t.md")
    assert data == {
        "id": "x", "title": "A: b", "count": 3, "ratio": 1.5, "on-off": True,
        "targets": ["nvptx:sm_90a", "amdgpu:gfx942", "a, b"], "sizes": {"K": 64, "M": 128},
        "folded": "one two three\nfour\n", "literal": "a\n  b\n",
        "nested": [{"uses": "matmul"}, {"any": [{"target": "nvptx:*"}, {"feature": "wgmma"}]}, "plain words", [1, 2]],
        "params": [{"name": "STAGES", "values": [2, 3]}], "quoted": "it's", "range": "1.3-1.6x faster",
    }
    assert data.line_of("params") == 25 and data["params"].line_of(0) == 26
    yaml = pytest.importorskip("yaml")
    assert yaml.safe_load(TEXT) == data


def test_every_shipped_front_matter_reads_the_same_with_a_yaml_parser() -> None:
    yaml = pytest.importorskip("yaml")
    for f in BUILTIN.files():
        text = f.read_text(encoding="utf-8")
        doc = split(text, f.name)
        assert yaml.safe_load(text.split("\n---\n", 1)[0].removeprefix("---\n")) == doc.data, f.name


def test_body_and_its_first_line() -> None:
    doc = split("---\nid: a\n---\n\nBody\n", "e.md")
    assert doc.data == {"id": "a"} and doc.body == "\nBody\n" and doc.body_line == 4


@pytest.mark.parametrize("lines, line, message", [
    (["id: a", "id: b"], 2, "key 'id' appears twice .first on line 1"),
    (["id: yes"], 1, "special value by YAML; quote it"),
    (["n: 1e5"], 1, "special value"),
    (["n: 0x10"], 1, "special value"),
    (["d: 2024-01-02"], 1, "special value"),
    (["t: a: b"], 1, "cannot contain ': '"),
    (["t: *ref"], 1, "cannot start with"),
    (["t: [a, [b]]"], 1, "scalars only"),
    (["t: [a, b"], 1, "expected ',' or ']'"),
    (["t: \"open"], 1, "never closed"),
    (["t: \"\\q\""], 1, "unknown escape"),
    (["a:", "b: 1"], 1, "has no value"),
    (["a:", "- 1"], 2, "indent the list under its key"),
    (["a: 1", "- 1"], 2, "a list item where a key was expected"),
    (["a: 1", "  b: 2"], 2, "unexpected indentation"),
    (["a:", "  - 1", "  b: 2"], 3, "a key where a list item"),
    (["a:", "\t- 1"], 2, "spaces, not tabs"),
    (["- 1"], 1, "a mapping of keys, not a list"),
    (["text: >", "  a", "    b"], 3, "'>' text block keeps one indentation"),
    (["text: |"], 1, "no indented line follows"),
    (["bad key: 1"], 1, "expected 'key: value'"),
    ([], 1, "front matter is empty"),
])
def test_refusals_name_the_line(lines: list[str], line: int, message: str) -> None:
    with pytest.raises(EntryError, match=message) as err:
        parse(lines, "bad.md")
    assert err.value.line == line and str(err.value).startswith(f"bad.md:{line}: ")


def test_the_front_matter_must_be_opened_and_closed() -> None:
    with pytest.raises(EntryError, match="bad.md:1: .*starts with a line '---'"):
        split("id: a\n", "bad.md")
    with pytest.raises(EntryError, match="never closed"):
        split("---\nid: a\n", "bad.md")
