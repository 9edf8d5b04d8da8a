"""The on-disk cache: a second process compiles from it, with the same IR and fault lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
    return load_module(path).build(width)._disk_key({})


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
