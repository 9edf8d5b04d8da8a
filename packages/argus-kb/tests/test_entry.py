"""The entry schema: what a valid entry holds, and a refusal naming the file, the line and what
is accepted for each way an entry can be wrong."""

from __future__ import annotations

from pathlib import Path

import pytest
from argus.kb import EntryError, KnowledgeBase, Pack, read_entry

from .conftest import RECIPE


def test_a_valid_recipe_reads_into_its_parts(write) -> None:
    e = read_entry(write("sample.md", RECIPE))
    assert (e.id, e.kind, e.targets, e.families, e.keywords) == (
        "sample-recipe", "recipe", ("nvptx:sm_90a",), ("gemm",), ("sample", "pipeline"))
    assert e.dsl_gap == "The language cannot show it." and e.snippets == ()
    assert e.invariants[0].placeholders == ("A",) and e.body.strip() == "Body text."
    assert e.covers_target("nvptx:sm_90a") and not e.covers_target("nvptx:sm_80")
    assert e.covers_family("gemm") and not e.covers_family("attention")
    data = e.as_dict()
    assert data["applies-when"] == [{"uses": "matmul"}] and data["invariants"][0]["example"] == {"A": "a"}


@pytest.mark.parametrize("old, new, line, message", [
    ("kind: recipe", "kind: recipes", 4, "unknown kind 'recipes'; accepted: hardware-fact, dsl-reference, recipe"),
    ("id: sample-recipe", "id: Sample_Recipe", 2, "lower-case words joined by '-'"),
    ("targets: [nvptx:sm_90a]", "targets: [nvptx:sm90a]", 6, "unknown nvptx target 'nvptx:sm90a'; known: nvptx:sm_80"),
    ("targets: [nvptx:sm_90a]", "targets: [sm_90a]", 6, "is not a target: write kind:arch"),
    ("families: [gemm]", "families: [gemms]", 7, "unknown family 'gemms'; accepted: gemm, attention"),
    ("benefit: It is faster.", "benefit: It is faster.\nspeed: 2", 20, "unknown key 'speed'; accepted: id, title"),
    ("  - uses: matmul", "  - uses: matmull", 10, "'uses' names matmull, which the language does not have"),
    ("  - uses: matmul", "  - feature: warp-drive", 10, "unknown feature 'warp-drive'; known:"),
    ("  - uses: matmul", "  - shape: K >= open(M)", 10, "calls something other than min"),
    ("  - uses: matmul", "  - divisible: {K: 0}", 10, "maps size names to positive ints"),
    ("  - uses: matmul", "  - nope: 1", 10, "unknown condition 'nope'; accepted: uses, target"),
    ("  - uses: matmul", "  - any: []", 10, "'any' takes a list of conditions"),
    ("    example: {A: a}", "    example: {B: a}", 18, "must bind exactly its placeholders .A."),
    ("benefit: It is faster.", "benefit:\n  summary: x\n  speedup: [2, 1]", 21, "speedup is \\[low, high\\]"),
    ("benefit: It is faster.", "benefit: {summary: x, limit: power}", 19, "unknown limit 'power'"),
    ("dsl-gap: The language cannot show it.\n", "", 2, "one ```python before and one ```python after"),
    ("transformation: Do the thing.\n", "", 2, "a recipe entry needs 'transformation'"),
    ("sources: [somewhere]\n", "", 2, "the entry needs 'sources'"),
    ("benefit: It is faster.", "benefit: It is faster.\nfacts: []", 20, "'facts' belongs to hardware-fact entries"),
])
def test_schema_errors_name_the_file_and_line(write, old: str, new: str, line: int, message: str) -> None:
    assert old in RECIPE
    path = write("bad.md", RECIPE.replace(old, new))
    with pytest.raises(EntryError, match=message) as err:
        read_entry(path)
    assert err.value.path == str(path) and err.value.line == line, str(err.value)


def test_snippets_are_checked_against_the_kind(write) -> None:
    both = RECIPE + "\n```python before\nx = 1\n```\n"
    with pytest.raises(EntryError, match="a recipe with a 'dsl-gap' has no snippets"):
        read_entry(write("a.md", both))
    no_gap = both.replace("dsl-gap: The language cannot show it.\n", "")
    with pytest.raises(EntryError, match="one ```python before and one ```python after"):
        read_entry(write("b.md", no_gap))
    unlabeled = no_gap + "\n```python\ny = 2\n```\n"
    with pytest.raises(EntryError, match="b.md:29: a python block .* got 'no role'; accepted: before, after"):
        read_entry(write("b.md", unlabeled))
    twice = no_gap + "\n```python before\ny = 2\n```\n"
    with pytest.raises(EntryError, match="a second ```python before block"):
        read_entry(write("c.md", twice))
    good = no_gap + "\n```python after\ny = 2\n```\n\n```text\nnot code\n```\n"
    e = read_entry(write("d.md", good))
    assert [(s.role, s.code, s.line) for s in e.snippets] == [("before", "x = 1\n", 26), ("after", "y = 2\n", 30)]
    fact = good.replace("kind: recipe", "kind: dsl-reference")
    with pytest.raises(EntryError, match="e.md:9: 'applies-when' belongs to recipes, not to a dsl-reference entry"):
        read_entry(write("e.md", fact))


def test_hardware_facts_need_facts(write) -> None:
    text = """\
    ---
    id: a-chip
    title: A chip
    kind: hardware-fact
    summary: Numbers.
    targets: [amdgpu:gfx942]
    families: [any]
    facts:
      - name: wave-size
        value: 64
        unit: lanes
        source: the ISA
    sources: [the ISA]
    ---
    """
    e = read_entry(write("chip.md", text))
    assert e.facts[0].value == 64 and e.kind == "hardware-fact" and e.covers_family("moe")
    with pytest.raises(EntryError, match="chip.md:9: a fact is a mapping with exactly name, value, unit and source"):
        read_entry(write("chip.md", text.replace("        source: the ISA\n", "")))


def test_ids_are_unique_and_requirements_exist_across_packs(write, tmp_path: Path) -> None:
    one = tmp_path / "one"
    two = tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "a.md").write_text(RECIPE)
    (two / "b.md").write_text(RECIPE)
    with pytest.raises(EntryError, match="b.md:2: id 'sample-recipe' is already used by .*a.md"):
        KnowledgeBase.load([Pack("one", one), Pack("two", two)])
    (two / "b.md").write_text(RECIPE.replace("id: sample-recipe", "id: other").replace(
        "kind: recipe", "kind: recipe\nrequires: [sample-recipie]"))
    with pytest.raises(EntryError, match="b.md:5: requires 'sample-recipie', .*did you mean sample-recipe"):
        KnowledgeBase.load([Pack("one", one), Pack("two", two)])
    (one / "a.md").write_text(RECIPE.replace("kind: recipe", "kind: recipe\nrequires: [other]"))
    (two / "b.md").write_text(RECIPE.replace("id: sample-recipe", "id: other").replace(
        "kind: recipe", "kind: recipe\nrequires: [sample-recipe]"))
    with pytest.raises(EntryError, match="requires form a cycle: (sample-recipe -> other -> sample-recipe|other -> "
                                         "sample-recipe -> other)"):
        KnowledgeBase.load([Pack("one", one), Pack("two", two)])
