"""The on-disk cache: a second process compiles from it, with the same IR and fault lines, and
nothing it did not write for that name (a damaged entry is discarded, with a warning)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from argus.dsl import Tensor, bf16, kernel, make_local, tag, thread_idx
from argus.verify import Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

SCRIPT = f"""
import sys, numpy as np
sys.path.insert(0, {str(EXAMPLES)!r})
import gemm
from argus.dsl import kernel as _k
c = gemm.gemm.compile()
print(len(c.locations))
print(c.mlir())
"""


def run(env: dict[str, str]) -> str:
    result = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True)
    return result.stdout


def test_second_compile_reads_the_cache_and_gives_the_same_ir(tmp_path, monkeypatch):
    import os

    env = {**os.environ, "ARGUS_CACHE_DIR": str(tmp_path / "cache"), "ARGUS_DUMP_DIR": str(tmp_path / "dump")}
    first = run(env)
    entries = sorted(p.name.split(".", 1)[1] for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert entries == ["locations.json", "mlir", "tags.json"]  # the IR, where it came from, its checked invariants
    dumps = sorted(p.name.split(".", 1)[1] for p in (tmp_path / "dump").iterdir())
    assert dumps == ["frontend.mlir", "mlir"]
    (tmp_path / "dump").rename(tmp_path / "first-dump")
    second = run(env)
    assert second == first
    assert not (tmp_path / "dump").exists(), "a cache hit compiles nothing, so dumps nothing"
    assert int(first.splitlines()[0]) > 100


def test_cache_can_be_turned_off(tmp_path):
    import os

    env = {**os.environ, "ARGUS_CACHE_DIR": "off", "HOME": str(tmp_path)}
    run(env)
    assert not (tmp_path / ".cache").exists()


KERNEL = '''
from argus.dsl import Tensor, device, f32, kernel, thread_idx

SCALE = {scale}


@device
def twice(x):
    return x * {factor}


def build(width):
    @kernel(block=(32,))
    def scaled(out: Tensor[f32, "n"], n: int):
        i = thread_idx.x
        if i < n:
            out[i] = twice(f32(i)) * SCALE + width{tail}

    return scaled
'''


def _key(tmp_path: Path, name: str, width: float = 1.0, scale: float = 2.0, factor: float = 2.0, tail: str = "") -> str:
    from argus.dsl.cli import load_module

    path = tmp_path / f"{name}.py"
    path.write_text(KERNEL.format(scale=scale, factor=factor, tail=tail))
    return load_module(path).build(width).disk_key({})


def test_the_cache_key_follows_everything_the_compile_reads(tmp_path):
    """Without parsing the kernel, its key still changes with its text, the device functions
    and globals it uses and the values it closes over, and with nothing else."""
    base = _key(tmp_path, "a")
    assert _key(tmp_path, "a") == base  # the same file loaded again
    assert _key(tmp_path, "a", tail=" + 0.0") != base  # the kernel's text
    assert _key(tmp_path, "a", factor=3.0) != base  # a device function it calls
    assert _key(tmp_path, "a", scale=3.0) != base  # a global it reads
    assert _key(tmp_path, "a", width=4.0) != base  # a value it closes over
    assert _key(tmp_path, "b") != base  # another file: its locations differ


def test_a_changed_compiler_package_gives_other_keys(tmp_path, monkeypatch):
    """A backend includes its own code in its keys: editing it must not reuse what the old
    code compiled."""
    from argus.dsl import cache

    package = tmp_path / "fake_backend"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "lower.py").write_text("RULE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = cache.code_digest("fake_backend")
    assert cache.code_digest("fake_backend") == before
    (package / "lower.py").write_text("RULE = 2\n")
    cache.code_digest.cache_clear()
    assert cache.code_digest("fake_backend") != before


def test_every_key_follows_the_installed_backends_code(monkeypatch):
    """Backends give their intrinsics' meaning to the checker and the shadow tags, so a cached
    verdict (or trace) keyed without their code would outlive a fix to one of their rules: every
    key changes when a backend's code does."""
    from argus.dsl import cache

    assert {"argus.backends.nvptx", "argus.backends.amdgpu"} <= set(cache._backend_packages())
    cache._versions.cache_clear()
    before = cache.cache_key("kernel")
    real = cache.code_digest

    def edited(*packages: str) -> str:
        return "edited" if packages == ("argus.backends.amdgpu",) else real(*packages)

    monkeypatch.setattr(cache, "code_digest", edited)
    cache._versions.cache_clear()
    try:
        assert cache.cache_key("kernel") != before
    finally:
        monkeypatch.undo()
        cache._versions.cache_clear()


# ---- a damaged entry is never served ------------------------------------------------------------

KEY = "0123456789abcdef0123456789abcdef"


def _drop_tail(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:-5])


def _garbage(path: Path) -> None:
    path.write_bytes(bytes(range(256)))


def _empty(path: Path) -> None:
    path.write_bytes(b"")


def _old_format(path: Path) -> None:
    """The content as it was stored before entries carried checksums."""
    path.write_bytes(path.read_bytes().partition(b"\n")[2])


def _from_another_key(path: Path) -> None:
    from argus.dsl import cache

    other = KEY[::-1]
    cache.store(other, "ptx", b"// the PTX of another kernel\n")
    path.write_bytes(cache.entry_path(path.parents[1], other, "ptx").read_bytes())


def _from_another_kind(path: Path) -> None:
    from argus.dsl import cache

    cache.store(KEY, "ll", b"; the LLVM IR of the same kernel\n")
    path.write_bytes(cache.entry_path(path.parents[1], KEY, "ll").read_bytes())


@pytest.mark.parametrize("harm, problem", [
    (_drop_tail, "does not match its checksum"),
    (_garbage, "has no valid checksum header"),
    (_empty, "is empty"),
    (_old_format, "has no valid checksum header"),
    (_from_another_key, "was written for another entry"),
    (_from_another_kind, "was written for another entry"),
])
def test_a_damaged_file_is_discarded_with_a_warning_naming_it(harm, problem, tmp_path, monkeypatch):
    from argus.dsl import cache

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    cache.store(KEY, "ptx", b"// the whole PTX of the kernel\n")
    path = cache.entry_path(tmp_path, KEY, "ptx")
    assert cache.load(KEY, "ptx") == b"// the whole PTX of the kernel\n"
    harm(path)
    with pytest.warns(cache.ArgusCacheWarning) as caught:
        assert cache.load(KEY, "ptx") is None
    (message,) = [str(w.message) for w in caught]
    assert f"{tmp_path / KEY[:2] / KEY} (ptx): its ptx file {problem}" in message and "\n" not in message
    assert not path.exists(), "a damaged file is removed, so the next load is a plain miss"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache.load(KEY, "ptx") is None


def test_an_entry_of_several_files_is_whole_or_discarded(tmp_path, monkeypatch):
    from argus.dsl import cache

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    parts = {"abi.json": b"{}", "ptx": b"// PTX\n", "ll": b"; LLVM IR\n"}
    cache.store_entry(KEY, parts)
    assert cache.load_entry(KEY, tuple(parts)) == parts
    cache.entry_path(tmp_path, KEY, "ll").unlink()
    with pytest.warns(cache.ArgusCacheWarning, match=r"\(abi\.json, ptx, ll\): its ll file is missing"):
        assert cache.load_entry(KEY, tuple(parts)) is None
    assert not list(tmp_path.rglob(f"{KEY}.*")), "every file of a partial entry is removed"


def test_an_entry_being_written_is_not_there_yet(tmp_path, monkeypatch):
    """Its first file is written last: a reader between the files sees no entry, and no damage."""
    from argus.dsl import cache

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    parts = {"abi.json": b"{}", "ptx": b"// PTX\n", "ll": b"; LLVM IR\n"}
    seen = []
    write = cache._atomic_write

    def write_then_read(path: Path, data: bytes) -> None:
        write(path, data)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            seen.append(cache.load_entry(KEY, tuple(parts)))

    monkeypatch.setattr(cache, "_atomic_write", write_then_read)
    cache.store_entry(KEY, parts)
    assert seen == [None, None, parts]


def test_checked_content_that_cannot_be_read_back_is_discarded(tmp_path, monkeypatch):
    """The checksums hold, yet the content is not what this version writes: never a traceback."""
    from argus.dsl import cache

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    cache.store(KEY, "abi.json", b'{"name": "k"')
    with pytest.warns(cache.ArgusCacheWarning, match=r"\(abi\.json\): it cannot be read back \(JSONDecodeError"):
        assert cache.load_as(KEY, ("abi.json",), lambda found: json.loads(found["abi.json"])) is None
    assert cache.load(KEY, "abi.json") is None


@kernel(block=(32,), verify=False)
def halves_apart(x: Tensor[bf16, 64], out: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    a = make_local((1,), bf16)
    b = make_local((1,), bf16)
    a[0] = x[thread_idx.x]
    b[0] = x[thread_idx.x + 32]
    assert tag(a[...]) != tag(b[...]), "the two halves never meet"
    out[thread_idx.x] = a[0] + b[0]


@kernel(block=(32,), verify=False)
def halves_meet(x: Tensor[bf16, 64], out: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    a = make_local((1,), bf16)
    b = make_local((1,), bf16)
    a[0] = x[thread_idx.x]
    b[0] = x[thread_idx.x]
    assert tag(a[...]) != tag(b[...]), "the two halves never meet"
    out[thread_idx.x] = a[0] + b[0]


def _fresh(k):
    """The same kernel as a new object: nothing of it held in memory, so the cache is read."""
    return kernel(block=(32,), verify=False)(k.fn)


def _entry(root: Path, k, kind: str) -> Path:
    """The cached `kind` file of kernel `k` (a verdict's key carries the grid and solver too)."""
    (path,) = (root / k.disk_key({})[:2]).glob(f"{k.disk_key({})}*.{kind}")
    return path


@pytest.mark.parametrize("harm, problem", [
    (lambda path, donor: shutil.copyfile(donor, path), "was written for another entry"),
    (lambda path, donor: path.write_bytes(path.read_bytes()[:-9]), "does not match its checksum"),
])
def test_a_cached_proof_is_only_ever_its_own_kernels(harm, problem, tmp_path, monkeypatch):
    """A verdict read from the cache is the one checked for this kernel: a proof moved there from
    another kernel, or a damaged one, is discarded and the kernel checked again."""
    from argus.dsl import cache

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    assert _fresh(halves_apart).verify().verdict is Verdict.PROVED
    assert _fresh(halves_meet).verify().verdict is Verdict.VIOLATED
    harm(_entry(tmp_path, halves_meet, "tags.json"), _entry(tmp_path, halves_apart, "tags.json"))
    with pytest.warns(cache.ArgusCacheWarning, match=f"its tags.json file {problem}"):
        assert _fresh(halves_meet).verify().verdict is Verdict.VIOLATED


def test_the_ir_of_another_kernel_is_not_taken_from_the_cache(tmp_path, monkeypatch):
    from argus.dsl import cache

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    own, other = _fresh(halves_meet).mlir(), _fresh(halves_apart).mlir()
    assert own != other
    for kind in ("mlir", "locations.json"):
        shutil.copyfile(_entry(tmp_path, halves_apart, kind), _entry(tmp_path, halves_meet, kind))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _fresh(halves_meet).mlir() == own
    assert any("its mlir file was written for another entry" in str(w.message) for w in caught)


def test_folders_that_cannot_be_written_cost_a_warning_not_the_compile(tmp_path, monkeypatch):
    from argus.dsl import cache

    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(blocked / "cache"))
    monkeypatch.setenv("ARGUS_DUMP_DIR", str(blocked / "dump"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = kernel(block=(32,))(halves_apart.fn).compile()
    assert compiled.mlir() == halves_apart.mlir()
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, cache.ArgusCacheWarning))
    assert len(messages) == 2, messages
    assert messages[0].startswith("compile cache: ") and str(blocked / "cache") in messages[0]
    assert messages[1].startswith("stage dumps: cannot write to ") and str(blocked / "dump") in messages[1]
