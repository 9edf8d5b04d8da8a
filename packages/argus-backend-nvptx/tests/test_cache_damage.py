"""A damaged build in the disk cache is never served: each file of an entry (PTX, LLVM IR, ABI,
cubin, ptxas's report), truncated, overwritten, emptied, left from an older version, copied from
another entry or missing, is discarded with a warning naming it, and the build is made again."""

from __future__ import annotations

import hashlib
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from argus.backends.nvptx import compiler, toolchain
from argus.backends.nvptx.compiler import ASSEMBLED, BUILD, NvptxCompiler
from argus.backends.nvptx.targets import Arch, arch
from argus.dsl.backends import parse_target
from argus.dsl.cache import ArgusCacheWarning
from argus.dsl.cli import load_module

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
KEY = "vector-add-cache-test"
HOPPER, AMPERE = arch("sm_90a"), arch("sm_80")


def stand_in_assemble(ptx: str, target: Arch) -> tuple[bytes, toolchain.Resources]:
    """ptxas's part, without ptxas: a cubin that differs per PTX and architecture."""
    return b"CUBIN " + target.name.encode() + hashlib.sha256(ptx.encode()).digest(), toolchain.Resources(
        registers=12, spill_stores=0, spill_loads=0, stack_bytes=0, shared_bytes=0)


@pytest.fixture(scope="module")
def compiled() -> Any:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARGUS_CACHE_DIR", "off")
        return load_module(EXAMPLES / "vector_add.py").vector_add.specialize()


@pytest.fixture(scope="module")
def pristine(compiled: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, compiler.Binary]:
    """A cache holding the kernel's build for Hopper (the one damaged) and Ampere (a donor of
    files from another key), and the Hopper build made without any cache."""
    root = tmp_path_factory.mktemp("pristine")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(toolchain, "assemble", stand_in_assemble)
        patch.setenv("ARGUS_CACHE_DIR", "off")
        fresh = compiler.build(compiled, HOPPER, assemble=True, key=KEY)
        patch.setenv("ARGUS_CACHE_DIR", str(root))
        for target in (HOPPER, AMPERE):
            compiler.build(compiled, target, assemble=True, key=KEY)
    return root, fresh


@pytest.fixture
def cache(pristine: tuple[Path, compiler.Binary], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    shutil.copytree(pristine[0], root)
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(root))
    monkeypatch.setattr(toolchain, "assemble", stand_in_assemble)
    return root


def entry_file(root: Path, target: Arch, kind: str) -> Path:
    key = compiler.disk_key(KEY, target)
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
CASES = [pytest.param(kind, damage, id=f"{kind}-{damage}") for kind in BUILD + ASSEMBLED for damage in DAMAGES
         if not (damage == "missing" and kind in (BUILD[0], ASSEMBLED[0]))]  # a missing first file: no entry


def build_warning_once(compiled: Any) -> tuple[compiler.Binary, list[str]]:
    """A build as a launch asks for it (the cache alone, then a build that reads it again), and
    the cache's warnings: a damaged entry is discarded at once, so it is reported once."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        binary = (compiler.cached(KEY, HOPPER, assemble=True)
                  or compiler.build(compiled, HOPPER, assemble=True, key=KEY))
    return binary, [str(w.message) for w in caught if issubclass(w.category, ArgusCacheWarning)]


def same(a: compiler.Binary, b: compiler.Binary) -> bool:
    return (a.abi, a.ptx, a.llvm, a.cubin, a.resources) == (b.abi, b.ptx, b.llvm, b.cubin, b.resources)


@pytest.mark.parametrize("kind, damage", CASES)
def test_a_damaged_file_is_discarded_with_a_warning_and_built_again(
        kind: str, damage: str, compiled: Any, pristine: tuple[Path, compiler.Binary], cache: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    harm, problem = DAMAGES[damage]
    harm(entry_file(cache, HOPPER, kind), entry_file(cache, AMPERE, kind))
    binary, warned = build_warning_once(compiled)
    assert same(binary, pristine[1])
    assert len(warned) == 1, warned
    key = compiler.disk_key(KEY, HOPPER)
    assert str(cache / key[:2] / key) in warned[0] and f"its {kind} file {problem}" in warned[0]
    # the entry was written again: the next build comes from the cache, whole and silent
    monkeypatch.setattr(compiler, "lowered", lambda *a: pytest.fail("the rebuilt entry was not served"))
    again, warned = build_warning_once(compiled)
    assert same(again, pristine[1]) and not warned


def test_an_entry_without_its_first_file_is_not_there_and_is_built_again_silently(
        compiled: Any, pristine: tuple[Path, compiler.Binary], cache: Path) -> None:
    """The first file is written last: without it the entry may still be being written."""
    entry_file(cache, HOPPER, BUILD[0]).unlink()
    binary, warned = build_warning_once(compiled)
    assert same(binary, pristine[1]) and not warned


def test_emit_ptx_prints_the_whole_ptx_when_the_cached_one_was_truncated(
        compiled: Any, pristine: tuple[Path, compiler.Binary], cache: Path) -> None:
    """`argus compile --emit ptx` once printed a truncated cache file as the kernel's PTX."""
    emit = NvptxCompiler(parse_target("nvptx:sm_90a"))
    ir_key = compiler.disk_key(compiled.mlir(), HOPPER)
    compiler.build(compiled, HOPPER, assemble=False)  # the entry `emit` reads: keyed by the IR
    ptx = cache / ir_key[:2] / f"{ir_key}.ptx"
    ptx.write_bytes(ptx.read_bytes()[: len(ptx.read_bytes()) // 2])
    with pytest.warns(ArgusCacheWarning, match=r"\.ptx|ptx file"):
        assert emit.emit(compiled, "ptx") == pristine[1].ptx


def test_a_cache_folder_that_cannot_be_written_costs_a_warning_not_the_build(
        compiled: Any, pristine: tuple[Path, compiler.Binary], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(blocked))
    monkeypatch.setattr(toolchain, "assemble", stand_in_assemble)
    binary, warned = build_warning_once(compiled)
    assert same(binary, pristine[1])
    assert len(warned) == 1 and str(blocked) in warned[0] and "compiling without it" in warned[0]
