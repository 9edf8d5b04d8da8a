"""A damaged build in the disk cache is never served: each file of an entry (ABI, LLVM IR,
assembly, linked HSACO), truncated, overwritten, emptied, left from an older version, copied
from another entry or missing, is discarded with a warning naming it, and made again."""

from __future__ import annotations

import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from argus.backends.amdgpu import compiler, toolchain
from argus.backends.amdgpu.compiler import BUILD, AmdgpuCompiler
from argus.backends.amdgpu.targets import Chip, chip
from argus.dsl.backends import parse_target
from argus.dsl.cache import ArgusCacheWarning
from argus.dsl.cli import load_module

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
KEY = "vector-add-cache-test"
MI300, MI355 = chip("gfx942"), chip("gfx950")


def stand_in_link(obj: bytes) -> bytes:
    """ld.lld's part, without ld.lld: an HSACO that differs per code object."""
    return b"HSACO" + obj


@pytest.fixture(scope="module")
def compiled() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARGUS_CACHE_DIR", "off")
        return load_module(EXAMPLES / "vector_add.py").vector_add.specialize()


@pytest.fixture(scope="module")
def pristine(compiled: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, compiler.Binary, bytes]:
    """A cache holding the kernel's build and HSACO for gfx942 (the one damaged) and gfx950 (a
    donor of files from another key), and the gfx942 build and HSACO made without any cache."""
    root = tmp_path_factory.mktemp("pristine")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolchain, "link", stand_in_link)
        patch.setenv("ARGUS_CACHE_DIR", "off")
        fresh = compiler.build(compiled, MI300, key=KEY)
        code = fresh.hsaco()
        patch.setenv("ARGUS_CACHE_DIR", str(root))
        for target in (MI300, MI355):
            compiler.build(compiled, target, key=KEY).hsaco()
    return root, fresh, code


@pytest.fixture
def cache(pristine: tuple[Path, compiler.Binary, bytes], tmp_path: Path,
          monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    shutil.copytree(pristine[0], root)
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(root))
    monkeypatch.setattr(toolchain, "link", stand_in_link)
    return root


def entry_file(root: Path, target: Chip, kind: str) -> Path:
    key = compiler.disk_key(KEY, target)
    if kind == "hsaco":  # stored per linker
        return next((root / key[:2]).glob(f"{key}.*.hsaco"))
    return root / key[:2] / f"{key}.{kind}"


def _drop_tail(path: Path, donor: Path) -> None:
    path.write_bytes(path.read_bytes()[:-16])


def _garbage(path: Path, donor: Path) -> None:
    path.write_bytes(bytes(range(256)) * 3)


def _empty(path: Path, donor: Path) -> None:
    path.write_bytes(b"")


def _old_format(path: Path, donor: Path) -> None:
    """The content as it was stored before entries carried checksums."""
    path.write_bytes(path.read_bytes().partition(b"\n")[2])


def _from_another_key(path: Path, donor: Path) -> None:
    shutil.copyfile(donor, path)


def _missing(path: Path, donor: Path) -> None:
    path.unlink()


DAMAGES: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "truncated": (_drop_tail, "does not match its checksum"),
    "garbage": (_garbage, "has no valid checksum header"),
    "empty": (_empty, "is empty"),
    "old format": (_old_format, "has no valid checksum header"),
    "another key": (_from_another_key, "was written for another entry"),
    "missing": (_missing, "is missing"),
}
# (a missing first file, or only file, means no entry at all)
CASES = [pytest.param(kind, damage, id=f"{kind}-{damage}") for kind in (*BUILD, "hsaco") for damage in DAMAGES
         if not (damage == "missing" and kind in (BUILD[0], "hsaco"))]


def build_and_link(compiled: Any) -> tuple[compiler.Binary, bytes, list[str]]:
    """A build as a launch asks for it (the cache alone, then a build that reads it again), and
    the cache's warnings: a damaged entry is discarded at once, so it is reported once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        binary = compiler.cached(KEY, MI300) or compiler.build(compiled, MI300, key=KEY)
        code = binary.hsaco()
    return binary, code, [str(w.message) for w in caught if issubclass(w.category, ArgusCacheWarning)]


def same(a: compiler.Binary, b: compiler.Binary) -> bool:
    return (a.abi, a.llvm, a.assembly, a.resources) == (b.abi, b.llvm, b.assembly, b.resources)


@pytest.mark.parametrize("kind, damage", CASES)
def test_a_damaged_file_is_discarded_with_a_warning_and_made_again(
        kind: str, damage: str, compiled: Any, pristine: tuple[Path, compiler.Binary, bytes], cache: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    harm, problem = DAMAGES[damage]
    harm(entry_file(cache, MI300, kind), entry_file(cache, MI355, kind))
    binary, code, warned = build_and_link(compiled)
    assert same(binary, pristine[1]) and code == pristine[2]
    assert len(warned) == 1, warned
    key = compiler.disk_key(KEY, MI300)
    named = entry_file(cache, MI300, kind).name.removeprefix(f"{key}.") if kind == "hsaco" else kind
    assert str(cache / key[:2] / key) in warned[0] and f"its {named} file {problem}" in warned[0]
    # the entry was written again: the next build comes from the cache, whole and silent
    monkeypatch.setattr(compiler, "lowered", lambda *a: pytest.fail("the rebuilt entry was not served"))
    monkeypatch.setattr(toolchain, "link", lambda obj: pytest.fail("the relinked HSACO was not served"))
    again, code, warned = build_and_link(compiled)
    assert same(again, pristine[1]) and code == pristine[2] and not warned


def test_an_entry_without_its_first_file_is_not_there_and_is_built_again_silently(
        compiled: Any, pristine: tuple[Path, compiler.Binary, bytes], cache: Path) -> None:
    """The first file is written last: without it the entry may still be being written."""
    entry_file(cache, MI300, BUILD[0]).unlink()
    binary, code, warned = build_and_link(compiled)
    assert same(binary, pristine[1]) and code == pristine[2] and not warned


def test_a_cache_folder_that_cannot_be_written_costs_a_warning_not_the_build(
        compiled: Any, pristine: tuple[Path, compiler.Binary, bytes], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """`--emit hsaco` writes its file to a temporary folder instead of the cache folder."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(blocked))
    monkeypatch.setattr(toolchain, "link", stand_in_link)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        printed = AmdgpuCompiler(parse_target("amdgpu:gfx942")).emit(compiled, "hsaco")
    warned = [str(w.message) for w in caught if issubclass(w.category, ArgusCacheWarning)]
    assert len(warned) == 1 and str(blocked) in warned[0], warned
    path = Path(printed.split(" (")[0])
    assert path.read_bytes() == pristine[2] and not path.is_relative_to(blocked)
