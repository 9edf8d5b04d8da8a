"""Thread-block clusters on the interpreter, the checker and the code generator: the blocks of a
cluster run together, reach each other's barriers, and receive multicast bulk copies."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import compiler
from argus.backends.nvptx import language as nv
from argus.backends.nvptx.targets import arch
from argus.dsl import (
    ArgusLaunchError,
    ArgusSyntaxError,
    CodegenError,
    KernelFault,
    Tensor,
    assume,
    block_idx,
    i32,
    kernel,
    lane_id,
    thread_idx,
)
from argus.verify import Verdict

from .conftest import example_variant


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


@kernel(block=(64,), cluster=(2, 1, 1))
def where_am_i(out: Tensor[i32, "n", 4]):
    assume(block_idx.x * 64 + 64 <= out.shape[0])  # the grid covers out's rows
    t = thread_idx.x
    row = block_idx.x * 64 + t
    out[row, 0] = nv.cluster_rank()
    out[row, 1] = block_idx.x
    out[row, 2] = t
    out[row, 3] = lane_id()


def variant(tmp_path: Path, *edits: tuple[str, str]) -> Any:
    return example_variant(tmp_path, "gemm_tma", *edits)


def run(module: Any) -> float:
    problem = module.example_gemm_tma_cluster(np.random.default_rng(1))
    module.gemm_tma_cluster[problem.grid](*problem.args)
    return problem.check()[2]


def test_the_blocks_of_a_cluster_know_their_rank_and_index() -> None:
    out = np.full((256, 4), -1, np.int32)
    where_am_i[(4,)](out)
    rows = np.arange(256)
    assert (out[:, 0] == (rows // 64) % 2).all()  # x fastest: blocks 2c and 2c + 1 share cluster c
    assert (out[:, 1] == rows // 64).all()
    assert (out[:, 2] == rows % 64).all()
    assert (out[:, 3] == rows % 32).all()


def test_a_grid_of_partial_clusters_is_refused() -> None:
    with pytest.raises(ArgusLaunchError, match=r"clusters of \(2, 1, 1\) blocks.*got \(3,\)"):
        where_am_i[(3,)](np.zeros((192, 4), np.int32))


@pytest.mark.parametrize("cluster", [(3, 3), (0,), (2, 1, 1, 1), "2"])
def test_a_cluster_shape_is_checked_where_it_is_declared(cluster: Any) -> None:
    with pytest.raises(ArgusSyntaxError, match="cluster is 1 to 3 positive ints with at most 8 blocks"):
        kernel(block=(32,), cluster=cluster)


def test_the_cluster_gemm_is_proved_and_multiplies(tmp_path: Path) -> None:
    module = variant(tmp_path)
    assert module.gemm_tma_cluster.verify().verdict is Verdict.PROVED
    assert run(module) < 0.5  # C is rounded to bf16


def test_a_partner_copying_the_wrong_slice_is_refuted_with_a_replayed_witness(tmp_path: Path) -> None:
    module = variant(tmp_path, ("nv.tma_load_multicast(halves[s, r, :, :], b, (bn + r * HALF, k), bars, s, 0b11)",
                                "nv.tma_load_multicast(halves[s, r, :, :], b, (bn + r * HALF, k + r * (b.shape[1] - 64 - 2 * k)), bars, s, 0b11)"))
    # the second block's half of B comes from the slice at the other end of K
    result = module.gemm_tma_cluster.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "must pair up" in result.text() and "reproduced" in result.text()


def test_a_tile_too_large_for_the_stages_is_refuted_on_the_plainest_launch(tmp_path: Path) -> None:
    """128×256 tiles with three 128×64 stages: C in bf16 (64 KiB) does not fit in the A stages
    (48 KiB) it is staged through. The witness is block 0 of one cluster on a 1-D grid, not a
    block of whatever grid the solver picked first."""
    result = variant(tmp_path).build_cluster(128, 256, 64, 3).verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    w = result.witnesses[0]
    assert w["kind"] == "out-of-bounds" and w["block"] == (0, 0, 0), w
    assert w["replayed"].endswith("in block (0, 0, 0) of grid (2, 1, 1)"), w["replayed"]
    # what follows from the same overrun is named, not replayed (each replay would stop there first)
    assert "also found, not replayed" in result.reason and len(result.witnesses) <= 2


def test_a_stage_waiting_for_a_partner_that_never_arrives_deadlocks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "free" expects an arrival from a third block, which the cluster does not have
    module = variant(tmp_path, ("nv.mbarrier_init(free, s, 2)", "nv.mbarrier_init(free, s, 3)"))
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with pytest.raises(KernelFault, match=r"deadlock.*1 of 3 arrival\(s\) missing"):
        run(module)


def test_an_arrival_on_a_block_outside_the_cluster_faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = variant(tmp_path, ("nv.mbarrier_arrive_cluster(free, PREVIOUS[s], r)",
                                "nv.mbarrier_arrive_cluster(free, PREVIOUS[s], r + 1)"))
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with pytest.raises(KernelFault, match=r"names block rank 2 of a cluster of 2 block\(s\)"):
        run(module)


def test_a_cluster_barrier_some_threads_skip_faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = variant(tmp_path, ("        nv.cluster_sync()  # no block leaves",
                                "        if tid < 128:\n            nv.cluster_sync()  # no block leaves"))
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with pytest.raises(KernelFault, match="divergent-barrier.*cluster_sync"):
        run(module)


def test_the_code_declares_the_cluster_and_uses_its_instructions(tmp_path: Path) -> None:
    module = variant(tmp_path)
    ptx = compiler.build(module.gemm_tma_cluster.compile(), arch("sm_90a"), assemble=False).ptx
    assert re.search(r"\.reqnctapercluster 2, 1, 1", ptx)
    for instruction in ("%cluster_ctarank", "multicast::cluster", "mapa.shared::cluster",
                        "mbarrier.arrive.release.cluster.shared::cluster", "barrier.cluster.wait.aligned"):
        assert instruction in ptx, instruction


def test_a_collective_instruction_after_a_branch_is_not_copied_into_its_paths(tmp_path: Path) -> None:
    """Every thread must execute the same instance of an ``.aligned`` instruction: LLVM must not
    copy the cluster barrier after ``if tid == 0: init barriers`` into both paths (the GPU then
    waits forever). The example has two cluster_sync calls, so two barriers; and every
    collective instruction is a convergent call."""
    module = variant(tmp_path)
    binary = compiler.build(module.gemm_tma_cluster.compile(), arch("sm_90a"), assemble=False)
    assert binary.ptx.count("barrier.cluster.wait.aligned") == 2
    groups = dict(re.findall(r"^attributes (#\d+) = \{(.*)\}$", binary.llvm, re.M))
    calls = [line for line in binary.llvm.splitlines() if "asm sideeffect" in line and
             any(word in line for word in (".aligned", "bar.sync", "elect.sync"))]
    assert len(calls) > 10
    for line in calls:
        group = re.search(r"(#\d+)$", line)
        assert group and "convergent" in groups[group.group(1)], line


def test_clusters_before_hopper_are_refused_at_the_kernel(tmp_path: Path) -> None:
    module = variant(tmp_path)
    with pytest.raises(CodegenError, match=r"gemm_tma_variant_\d+\.py:\d+:\d+: thread-block clusters need nvptx:sm_90"):
        compiler.build(module.gemm_tma_cluster.compile(), arch("sm_80"), assemble=False)


def test_a_multicast_to_a_block_the_cluster_lacks_is_refused_at_its_line(tmp_path: Path) -> None:
    module = variant(tmp_path, ("bars, s, 0b11)", "bars, s, 0b111)"))
    with pytest.raises(CodegenError, match=r"gemm_tma_variant_\d+\.py:\d+:\d+: the copy lands in block rank 2, but "
                                           r"the kernel's clusters have 2 block"):
        compiler.build(module.gemm_tma_cluster.specialize(), arch("sm_90a"), assemble=False)
