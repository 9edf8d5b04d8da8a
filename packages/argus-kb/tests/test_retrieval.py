"""Retrieval filters by target, family, kind and applicability, and ranks what is left with a
score whose parts it reports."""

from __future__ import annotations

from pathlib import Path

import pytest
from argus.kb import KernelDescription, KnowledgeBase, Pack, Truth, UnknownNameError, describe_source
from argus.kb.packs import BUILTIN
from argus.kb.retrieval import terms

from .conftest import RECIPE

KB = KnowledgeBase.load([BUILTIN])
GEMM_SM90A = KernelDescription(target="nvptx:sm_90a", family="gemm",
                               uses=frozenset({"matmul", "make_shared", "syncthreads", "range", "static_range",
                                               "warp_mma_16x8x16", "lane_id", "tag", "assume"}),
                               dtypes=frozenset({"bf16", "f32"}), sizes={"M": 4096, "N": 4096, "K": 4096})


def ids(hits) -> list[str]:
    return [h.entry.id for h in hits]


def test_filters_keep_only_entries_for_the_target_family_and_kind() -> None:
    amd = KB.search(target="amdgpu:gfx942", kinds=["recipe"])
    assert {"agprs", "oob-guarded-loads", "instruction-scheduling"} <= set(ids(amd))
    assert not {"wgmma", "tma-mbarrier-pipeline", "setmaxnreg", "async-copies"} & set(ids(amd))
    assert all(h.entry.kind == "recipe" for h in amd)
    attention = KB.search(family="attention")
    assert {"online-softmax", "v-transpose", "gqa-packing", "causal-block-skipping"} <= set(ids(attention))
    assert "moe-token-sorting" not in ids(attention) and "h200-hopper" in ids(attention)  # families: any
    assert {e.id for e in KB.select(target="nvptx:sm_80", kinds=["hardware-fact"])} == set()
    assert {e.id for e in KB.select(target="amdgpu:gfx950", kinds=["hardware-fact"])} == {"mi350x-cdna4"}


def test_a_described_kernel_drops_what_cannot_apply_and_keeps_the_undecided() -> None:
    hits = KB.search(kernel=GEMM_SM90A, kinds=["recipe"])
    found = {h.entry.id: h for h in hits}
    assert "matrix-core-matmul" not in found  # it already uses matmul
    assert "split-k" not in found  # K is not much larger than M and N
    assert "agprs" not in found  # an AMD recipe, on an NVIDIA target
    assert found["tma-mbarrier-pipeline"].applicability.truth is Truth.YES
    assert found["fp8-requantization"].applicability.truth is Truth.UNKNOWN  # its size I is not described
    decided = KB.search(kernel=GEMM_SM90A, kinds=["recipe"], include_unknown=False)
    assert "fp8-requantization" not in ids(decided) and "tma-mbarrier-pipeline" in ids(decided)
    skinny = KernelDescription(target="nvptx:sm_90a", family="gemm", uses=GEMM_SM90A.uses, dtypes=GEMM_SM90A.dtypes,
                               sizes={"M": 256, "N": 256, "K": 16384})
    assert "split-k" in ids(KB.search(kernel=skinny))


def test_the_score_is_the_sum_of_its_reported_parts() -> None:
    hits = KB.search("pipeline stages", kernel=GEMM_SM90A, kinds=["recipe"])
    assert ids(hits)[:2] == ["tma-mbarrier-pipeline", "software-pipelining"]
    top = hits[0]
    assert top.reasons[:4] == ("target nvptx:sm_90a +2", "family gemm +2", "applies +3",
                               "uses make_shared, matmul, range +3")
    assert top.score == sum(float(r.rsplit("+", 1)[1]) for r in top.reasons)
    assert hits == sorted(hits, key=lambda h: (-h.score, h.entry.id))
    assert KB.search("pipeline stages", kernel=GEMM_SM90A, limit=1) == hits[:1]


def test_a_query_drops_entries_it_does_not_match_and_stems_words() -> None:
    assert terms("Pipelining the stages, swizzled") == {"pipelin", "stag", "swizzl"}
    hits = KB.search("swizzling")
    titled = {h.entry.id for h in hits if h.reasons == ("query 'swizzl' in title +2",)}
    assert {"workgroup-swizzling", "bank-conflict-swizzle"} <= titled  # "swizzling", "swizzle" in their titles
    assert ids(hits)[:len(titled)] == sorted(titled)  # ahead of the entries that mention it in their text
    assert KB.search("zebra giraffe") == []


def test_unknown_filters_are_refused_not_ignored() -> None:
    with pytest.raises(UnknownNameError, match="unknown family 'gemms'"):
        KB.search(family="gemms")
    with pytest.raises(UnknownNameError, match="unknown nvptx target 'nvptx:sm_100'"):
        KB.search(target="nvptx:sm_100")
    with pytest.raises(UnknownNameError, match="filter on one target"):
        KB.select(target="nvptx:*")
    with pytest.raises(UnknownNameError, match="unknown kind 'recipie'"):
        KB.select(kinds=["recipie"])
    with pytest.raises(UnknownNameError, match="no entry 'split-kk' .did you mean split-k"):
        KB.get("split-kk")


def test_an_entry_without_conditions_applies_but_earns_no_applies_bonus(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text(RECIPE.replace("applies-when:\n  - uses: matmul\n", "applies-when: []\n"))
    kb = KnowledgeBase.load([Pack("t", tmp_path)])
    (hit,) = kb.search(kernel=GEMM_SM90A)
    assert hit.applicability.truth is Truth.YES and hit.reasons == ("target nvptx:sm_90a +2", "family gemm +2")


def test_the_two_warpgroup_gemm_applies_to_the_naive_example_kernel() -> None:
    """A search that starts from examples/gemm.py (64x64 tiles, mma.sync) must be able to pick
    the fast Hopper design, so its conditions must hold for that kernel; a kernel already on
    asynchronous products, or a target without the warpgroup MMA, is not offered it."""
    root = Path(__file__).resolve().parents[3]
    naive = (root / "examples" / "gemm.py").read_text()
    sizes = {"M": 4096, "N": 4096, "K": 4096}
    entry = KB.get("async-warpgroup-gemm")
    described = describe_source(naive, target="nvptx:sm_90a", family="gemm", sizes=sizes)
    assert entry.applicability(described).truth is Truth.YES
    assert "async-warpgroup-gemm" in ids(KB.search(kernel=described, kinds=["recipe"], include_unknown=False))
    for target in ("nvptx:sm_90", "nvptx:sm_80"):
        assert entry.applicability(describe_source(naive, target=target, family="gemm")).truth is Truth.NO
    tma = describe_source((root / "examples" / "gemm_tma.py").read_text(), target="nvptx:sm_90a", family="gemm")
    assert entry.applicability(tma).truth is Truth.NO


def test_the_two_warpgroup_gemm_admits_only_points_that_fit() -> None:
    """The constraints keep the accumulators in registers (no 256x256), the stages in shared
    memory, room for 128 rows of C in f32 in the B stages, and the tiles and rounds whole: at
    4096 cubed only four stages divide K."""
    space = KB.get("async-warpgroup-gemm").parameters
    at = {"M": 4096, "N": 4096, "K": 4096}
    points = list(space.points(at))
    assert {(p["BM"], p["BN"]) for p in points} == {(128, 128), (256, 128), (128, 256)}
    assert {p["STAGES"] for p in points} == {4} and space.admits(space.default(), at)
    assert space.admits({**space.default(), "STAGES": 5, "BM": 128}, {"M": 4096, "N": 4096, "K": 1280})
    assert not space.admits({**space.default(), "STAGES": 5}, {"M": 4096, "N": 4096, "K": 1280})  # 240 KiB of stages
    assert not space.admits({**space.default(), "STAGES": 3}, {"M": 4096, "N": 4096, "K": 768})  # C needs 4 stages
    assert not space.admits(space.default(), {"M": 128, "N": 4096, "K": 4096})  # half a 256-row tile
