"""Add-on packs: found through the argus.kb entry-point group, loaded lazily, a duplicate name
refused, a broken pack set aside with its reason, packs switched off by ARGUS_DISABLE_PLUGINS."""

from __future__ import annotations

from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from argus.kb import EntryError, KnowledgeBase, PackError, describe_source
from argus.kb import packs

from .conftest import RECIPE

ADDON = '''
from pathlib import Path
from argus.kb import Pack

PACK = Pack("vendor", Path(__file__).parent / "vendor_entries", language=frozenset({"vendor_dot"}))
DIRECTORY = Path(__file__).parent / "vendor_entries"
PLAIN = Path(__file__).parent / "plain_entries"
NOT_A_PACK = 42
'''

VENDOR = RECIPE.replace("id: sample-recipe", "id: vendor-dot-products").replace(
    "title: A sample recipe", "title: Dot products on the vendor's dot unit").replace(
    "  - uses: matmul", "  - uses: vendor_dot").replace("keywords: [sample, pipeline]", "keywords: [dot, vendor]")


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`installed(*entry_points)`: these entry points (name, value) are what the group lists."""
    (tmp_path / "vendor_kb.py").write_text(ADDON)
    (tmp_path / "vendor_entries").mkdir()
    (tmp_path / "vendor_entries" / "vendor-dot-products.md").write_text(VENDOR)
    (tmp_path / "plain_entries").mkdir()
    (tmp_path / "plain_entries" / "sample-recipe.md").write_text(RECIPE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("ARGUS_DISABLE_PLUGINS", raising=False)

    def register(*pairs: tuple[str, str]) -> None:
        eps = [EntryPoint(name, value, packs.GROUP) for name, value in pairs]
        monkeypatch.setattr(packs, "entry_points", lambda group: [ep for ep in eps if ep.group == group])

    return register


BUILTIN_EP = ("argus", "argus.kb.packs:BUILTIN")


def test_an_installed_pack_adds_its_entries(installed) -> None:
    installed(BUILTIN_EP, ("vendor", "vendor_kb:PACK"))
    kb = KnowledgeBase.load()
    assert kb.packs == ("argus", "vendor") and kb.unavailable == {}
    entry = kb.get("vendor-dot-products")
    assert entry.pack == "vendor" and len(kb) == len(KnowledgeBase.load([packs.BUILTIN])) + 1
    source = "vendor_dot(a, b)"
    assert describe_source(source).uses == frozenset()  # the pack's names are not the core language's ...
    kernel = describe_source(source, target="nvptx:sm_90a", family="gemm", language=kb.language)
    assert kernel.uses == {"vendor_dot"}  # ... but the knowledge base knows them
    hit = kb.search("dot", kernel=kernel)[0]
    assert hit.entry.id == "vendor-dot-products" and "applies +3" in hit.reasons


def test_a_pack_may_be_given_as_a_directory(installed) -> None:
    installed(("plain", "vendor_kb:PLAIN"))
    kb = KnowledgeBase.load()
    assert kb.packs == ("argus", "plain") and kb.get("sample-recipe").pack == "plain"
    installed(("vendor", "vendor_kb:DIRECTORY"))
    with pytest.raises(EntryError, match="vendor-dot-products.md:10: 'uses' names vendor_dot, which the language"):
        KnowledgeBase.load()  # a bare directory cannot extend the language


def test_a_broken_pack_is_set_aside_and_the_others_load(installed) -> None:
    installed(BUILTIN_EP, ("ghost", "no_such_module_here:PACK"), ("odd", "vendor_kb:NOT_A_PACK"))
    kb = KnowledgeBase.load()
    assert kb.packs == ("argus",)
    assert "ModuleNotFoundError" in kb.unavailable["ghost"]
    assert "gives a int, not an argus.kb.Pack or a directory" in kb.unavailable["odd"]


def test_a_name_claimed_twice_is_an_error(installed) -> None:
    installed(("vendor", "vendor_kb:PACK"), ("vendor", "other_module:PACK"))
    with pytest.raises(PackError, match="pack name argus.kb:vendor is claimed twice"):
        packs.discover()


def test_packs_can_be_switched_off(installed, monkeypatch: pytest.MonkeyPatch) -> None:
    installed(BUILTIN_EP, ("vendor", "vendor_kb:PACK"))
    monkeypatch.setenv("ARGUS_DISABLE_PLUGINS", "argus.kb:vendor")
    assert KnowledgeBase.load().packs == ("argus",)
    monkeypatch.setenv("ARGUS_DISABLE_PLUGINS", "argus")
    assert KnowledgeBase.load().packs == ("vendor",)


def test_the_built_in_pack_is_there_without_an_installed_entry_point(installed) -> None:
    installed()
    assert set(packs.discover()) == {"argus"}
    assert KnowledgeBase.load().packs == ("argus",)


def test_a_pack_directory_must_exist(tmp_path: Path) -> None:
    with pytest.raises(PackError, match="pack nowhere: .* is not a directory of entry files"):
        KnowledgeBase.load([packs.Pack("nowhere", tmp_path / "missing")])


def test_an_installed_pack_without_its_directory_is_set_aside(installed) -> None:
    installed(BUILTIN_EP, ("vendor", "vendor_kb:PACK"))
    vendor = __import__("vendor_kb").PACK
    for f in Path(vendor.directory).iterdir():
        f.unlink()
    Path(vendor.directory).rmdir()
    kb = KnowledgeBase.load()
    assert kb.packs == ("argus",) and "is not a directory of entry files" in kb.unavailable["vendor"]


def test_an_entry_file_that_is_not_utf8_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "broken.md").write_bytes(b"---\nid: caf\xe9\n---\n")
    with pytest.raises(EntryError, match=r"broken.md:1: cannot read the entry: .*utf-8"):
        KnowledgeBase.load([packs.Pack("local", tmp_path)])
