"""The verdict cache never hands a kernel another kernel's proof. A kernel that reads a constant
of another module (``config.SHIFT``) or of a class (``Sizes.SHIFT``) is another kernel once that
constant changes, though its own text is the same; a kernel whose file changes after its source
was read is checked as it now reads. Each case: the old kernel is proved and cached, the new one
is wrong (its shadow tags refute a launch), and a fresh check must not read the old proof."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from argus.dsl import kernel
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

KERNEL = '''
{imports}
from argus.dsl import (Tensor, assert_tags, assume, block_idx, constexpr, f32, grid_dim, kernel, sum_of, tag,
                       thread_idx)


@kernel(block=(32,), verify=False)
def add(x: Tensor[f32, "n"], y: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, BLOCKS: constexpr):
    assume(grid_dim.x * 32 >= n)
    assume(grid_dim.x >= BLOCKS)
    tag(x, lambda i: (0, i))
    tag(y, lambda i: (1, i))
    assert_tags(out, lambda i: sum_of((0, i), (1, i)))
    i = block_idx.x * 32 + thread_idx.x
    if i < n - {shift}:
        out[i] = x[i] + y[i + {shift}]
'''


def _module(path: Path, text: str, name: str):
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _fresh(k):
    """The same kernel as a new object: nothing of it held in memory, so the cache is read."""
    return kernel(block=(32,), verify=False)(k.fn)


def _refuted(k) -> None:
    """A launch of `k` stores a wrong element (its shadow tags say so)."""
    n = 64
    x, y = np.arange(n, dtype=np.float32), np.arange(n, dtype=np.float32)
    assert check_launch(k, (2,), x, y, np.zeros(n, np.float32), n, BLOCKS=1).verdict is Verdict.VIOLATED


@pytest.mark.parametrize("imports, shift, change", [
    pytest.param("import redteam_cache_config as config", "config.SHIFT",
                 lambda module, holder: setattr(holder, "SHIFT", 1), id="a module's constant"),
    pytest.param("class Sizes:\n    SHIFT = 0", "Sizes.SHIFT",
                 lambda module, holder: setattr(module.Sizes, "SHIFT", 1), id="a class's constant"),
])
def test_a_constant_read_through_a_dotted_name_is_part_of_the_key(tmp_path, monkeypatch, imports, shift, change):
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path / "cache"))
    holder = _module(tmp_path / "redteam_cache_config.py", "SHIFT = 0\n", "redteam_cache_config")
    module = _module(tmp_path / "dotted.py", KERNEL.format(imports=imports, shift=shift), "redteam_cache_dotted")
    try:
        assert _fresh(module.add).verify(BLOCKS=1).verdict is Verdict.PROVED
        before = _fresh(module.add).disk_key({'BLOCKS': 1})
        change(module, holder)
        assert _fresh(module.add).disk_key({'BLOCKS': 1}) != before
        _refuted(_fresh(module.add))
        assert _fresh(module.add).verify(BLOCKS=1).verdict is Verdict.VIOLATED
    finally:
        sys.modules.pop("redteam_cache_config", None)
        sys.modules.pop("redteam_cache_dotted", None)


def test_a_file_edited_after_its_source_was_read_is_keyed_and_checked_as_it_now_reads(tmp_path, monkeypatch):
    """A kernel object that read its source, then sees its file change (an editor saving while a
    session runs), keys what it builds for new constexpr values by the new text: so it must build
    the new text, or the next process would read the old kernel's proof under the new kernel's key."""
    import linecache

    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "edited.py"
    module = _module(path, KERNEL.format(imports="", shift="0"), "redteam_cache_edited")
    try:
        k = module.add
        assert k.verify(BLOCKS=1).verdict is Verdict.PROVED  # its source read, and its proof cached
        path.write_text(KERNEL.format(imports="", shift="1"))
        linecache.checkcache(str(path))
        assert k.verify(BLOCKS=2).verdict is Verdict.VIOLATED  # new constants: a key of the new text
        fresh = _module(path, KERNEL.format(imports="", shift="1"), "redteam_cache_edited")
        _refuted(_fresh(fresh.add))
        assert _fresh(fresh.add).verify(BLOCKS=2).verdict is Verdict.VIOLATED
    finally:
        sys.modules.pop("redteam_cache_edited", None)
