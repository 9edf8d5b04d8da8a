"""The names and targets the knowledge base accepts are those of the language and its backends,
so a condition can only mention something a kernel can contain."""

from __future__ import annotations

import pytest

from argus.kb import targets, vocabulary

dsl = pytest.importorskip("argus.dsl")


def test_every_language_name_exists() -> None:
    nv = pytest.importorskip("argus.backends.nvptx.language")
    amd = pytest.importorskip("argus.backends.amdgpu.language")
    python = {"range", "min", "max", "view"}  # constructs and methods, not names of argus.dsl
    assert {n for n in vocabulary.CORE - python if not hasattr(dsl, n)} == set()
    assert {n for n in vocabulary.NVPTX if not hasattr(nv, n)} == set()
    assert {n for n in vocabulary.AMDGPU if not hasattr(amd, n)} == set()
    assert {n for n in vocabulary.DTYPES if not hasattr(dsl, n)} == set()


def test_targets_and_features_follow_the_backends() -> None:
    nvptx = pytest.importorskip("argus.backends.nvptx.targets")
    amdgpu = pytest.importorskip("argus.backends.amdgpu.targets")
    assert {t for t in targets.TARGETS if t.startswith("nvptx:")} == {f"nvptx:{a}" for a in nvptx.ARCHS}
    assert {t for t in targets.TARGETS if t.startswith("amdgpu:")} == {f"amdgpu:{c}" for c in amdgpu.CHIPS}
    for name, arch in nvptx.ARCHS.items():
        assert targets.TARGETS[f"nvptx:{name}"].features == arch.features - {"setmaxnreg.none"}, name


def test_hardware_facts_agree_with_the_backends_tables() -> None:
    from argus.kb import KnowledgeBase
    from argus.kb.packs import BUILTIN

    nvptx = pytest.importorskip("argus.backends.nvptx.targets")
    amdgpu = pytest.importorskip("argus.backends.amdgpu.targets")
    kb = KnowledgeBase.load([BUILTIN])

    def fact(entry: str, name: str):
        return next(f.value for f in kb.get(entry).facts if f.name == name)

    hopper = nvptx.ARCHS["sm_90a"]
    assert fact("h200-hopper", "shared-memory-per-sm") == hopper.shared_per_sm
    assert fact("h200-hopper", "registers-per-sm") == hopper.registers_per_sm
    assert fact("h200-hopper", "threads-per-sm") == hopper.threads_per_sm
    assert fact("mi300x-cdna3", "lds-per-workgroup") == amdgpu.CHIPS["gfx942"].lds_bytes
    assert fact("mi300x-cdna3", "registers-per-lane") == amdgpu.CHIPS["gfx942"].vgprs_per_simd_lane
    assert fact("mi300x-cdna3", "waves-per-simd") == amdgpu.CHIPS["gfx942"].waves_per_simd
    assert fact("mi350x-cdna4", "lds-per-workgroup") == amdgpu.CHIPS["gfx950"].lds_bytes
    assert fact("h200-hopper", "ridge-point-bf16") == round(fact("h200-hopper", "bf16-dense-peak")
                                                             / fact("h200-hopper", "hbm-bandwidth"))
