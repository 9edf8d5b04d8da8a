"""The static proof of a memory-barrier pipeline's timing (`argus.backends.nvptx.protocol`), on
the warp-specialized GEMM example and the TMA GEMM example at a small tile: proved for each
example, for every launch; not proved — with the failing obligation named — for each mistake of
their hand-offs, including one that goes wrong only from the fifth round on, which no launch
the interpreter explores reaches."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from argus.backends.nvptx import protocol
from argus.dsl.check import Preparation, TagAnalysis
from argus.dsl.check.verification import _tightest
from argus.verify.solvers import solver

from .conftest import example_variant

MISTAKES = {  # an edit of gemm_ws, and what the failing obligation may say (the first found is named)
    "no-empty-wait": (("nv.mbarrier_wait(empty, s, phase ^ 1)", "pass"),
                      ("may overwrite bytes the read", "would wait for the wrong phase",
                       "before the barrier's previous phase completed")),
    "no-full-wait": (("nv.mbarrier_wait(full, s, phase)", "pass"),
                     ("does not wait on that copy's barrier", "before the barrier's previous phase completed",
                      "would wait for the wrong phase")),
    "full-phase-off-by-one": (("nv.mbarrier_wait(full, s, phase)", "nv.mbarrier_wait(full, s, phase ^ 1)"),
                              ("parity that is not its phase's", "would wait for the wrong phase")),
    "empty-phase-off-by-one": (("nv.mbarrier_wait(empty, s, phase ^ 1)", "nv.mbarrier_wait(empty, s, phase)"),
                               ("may wait forever",)),
    "expect-tx-short": (("nv.mbarrier_arrive_expect_tx(full, s, STAGE_BYTES)",
                         "nv.mbarrier_arrive_expect_tx(full, s, STAGE_BYTES - 2)"), ("announces",)),
    "empty-released-before-the-products-finish": (
        ("matmul_wait(PRODUCTS)  # the previous stage's products have finished, this stage's run on",
         "matmul_wait(PRODUCTS + 1)"), ("may overwrite bytes the read",)),
    "empty-waits-skipped-from-round-five": (
        ("nv.mbarrier_wait(empty, s, phase ^ 1)",
         "if k0 < 4 * STAGES * BK:\n                            nv.mbarrier_wait(empty, s, phase ^ 1)"),
        ("some iterations of its loop only",)),
}


TMA_MISTAKES = {  # an edit of gemm_tma (one loop: thread 0 refills the stage every thread released)
    "no-empty-wait": (("nv.mbarrier_wait(empty, PREVIOUS[s], phase)  # … and so is every other", "pass"),
                      ("would wait for the wrong phase", "may overwrite bytes the read",
                       "before the barrier's previous phase completed")),
    "no-wait-before-the-store-through-a-stage": (
        ("            nv.mbarrier_wait(bars, s, (K // (STAGES * BK)) % 2)", "            pass"),
        ("may overwrite bytes the read", "before that copy has landed")),
    "stage-released-before-its-products-finish": (
        ("matmul_wait(PRODUCTS)  # the previous stage's products have finished, this stage's run on",
         "matmul_wait(PRODUCTS + 1)"), ("may overwrite bytes the read",)),
    "refill-announces-too-few-bytes": (
        ("nv.mbarrier_arrive_expect_tx(bars, PREVIOUS[s], STAGE_BYTES)",
         "nv.mbarrier_arrive_expect_tx(bars, PREVIOUS[s], STAGE_BYTES - 2)"), ("announces",)),
    "full-phase-off-by-one": (("nv.mbarrier_wait(bars, s, phase)\n                multiply",
                               "nv.mbarrier_wait(bars, s, phase ^ 1)\n                multiply"),
                              ("parity that is not its phase's",)),
    "empty-phase-off-by-one": (("nv.mbarrier_wait(empty, PREVIOUS[s], phase)  # … and so is every other",
                                "nv.mbarrier_wait(empty, PREVIOUS[s], phase ^ 1)"),
                               ("would wait for the wrong phase", "parity that is not its phase's")),
}


@pytest.fixture(autouse=True)
def unchecked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiling runs no check (the test calls the model itself) and keeps no verdict."""
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def timing(module: Any, example: str = "gemm_ws") -> protocol.Verdict:
    """The protocol's verdict on the variant's kernel at 128×16 tiles, slices of 16, two stages."""
    compiled = module.build(128, 16, 16, 2).compile()
    analysis = TagAnalysis(compiled.op, compiled.locations, None, Preparation(compiled.op, compiled.locations)).run()
    recorder = analysis.walk.extensions[protocol.KEY]
    return recorder.prove(analysis.walk, solver(None), _tightest(analysis.facts), 10_000)  # type: ignore[no-any-return]


@pytest.mark.parametrize("example", ["gemm_ws", "gemm_tma"])
def test_the_examples_pipeline_is_proved(tmp_path: Path, example: str) -> None:
    verdict = timing(example_variant(tmp_path, example))
    assert verdict.proved, verdict.why
    assert verdict.obligations > 20


@pytest.mark.parametrize("example, name", [("gemm_ws", name) for name in sorted(MISTAKES)] +
                         [("gemm_tma", name) for name in sorted(TMA_MISTAKES)])
def test_each_mistake_is_not_proved_and_named(tmp_path: Path, example: str, name: str) -> None:
    edit, said = (MISTAKES if example == "gemm_ws" else TMA_MISTAKES)[name]
    verdict = timing(example_variant(tmp_path, example, edit))
    assert not verdict.proved
    assert any(phrase in verdict.why for phrase in said), verdict.why


def test_a_parity_flipped_each_round_is_not_followed_and_says_how_to_write_it(tmp_path: Path) -> None:
    """`phase ^= 1` carries the consumers' parity from one round to the next: right, but not a
    form of the loop's index, which the model needs; the reason says how to write it."""
    module = example_variant(
        tmp_path, "gemm_ws",
        ("            for k0 in range(0, K, STAGES * BK):\n                phase = (k0 // (STAGES * BK)) % 2\n",
         "            phase = 0\n            for k0 in range(0, K, STAGES * BK):\n"),
        ("                        nv.mbarrier_arrive(empty, PREVIOUS[s])\n",
         "                        nv.mbarrier_arrive(empty, PREVIOUS[s])\n                phase ^= 1\n"))
    verdict = timing(module)
    assert not verdict.proved
    assert "phase ^= 1" in verdict.why and "(k0 // STEP) % 2" in verdict.why, verdict.why
