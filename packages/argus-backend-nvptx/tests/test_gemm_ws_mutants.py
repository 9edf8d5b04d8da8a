"""The warp-specialized GEMM example (examples/gemm_ws.py) and five mistakes of its producer /
consumer hand-off, each a one-line edit of the example's source: the interpreter, whose warps
run independently, must show each under every kind of schedule (a data race, a deadlock, an
uninitialized read or a wrong C), and the static checker's verdict on each is stated here."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.dsl import KernelFault, TagAssertionError
from argus.dsl.machine import using
from argus.verify import Verdict

from .conftest import example_variant

ROUND = 4 * 64  # K of one round: STAGES slices of BK
SCHEDULES = ("round-robin", "delay-async", "random:1")

MUTANTS = {
    "no-full-wait": (("nv.mbarrier_wait(full, s, phase)", "pass"),),
    "no-empty-wait": (("nv.mbarrier_wait(empty, s, phase ^ 1)", "pass"),),
    "refill-stage-off-by-one": (("nv.tma_load(sA[s, :, :], a, (bm, k0 + s * BK), full, s)",
                                 "nv.tma_load(sA[(s + 1) % STAGES, :, :], a, (bm, k0 + s * BK), full, s)"),),
    "phase-off-by-one": (("nv.mbarrier_wait(full, s, phase)", "nv.mbarrier_wait(full, s, phase ^ 1)"),),
    "expect-tx-short": (("nv.mbarrier_arrive_expect_tx(full, s, STAGE_BYTES)",
                         "nv.mbarrier_arrive_expect_tx(full, s, BM * BK * 2)"),),  # A's bytes only
}

#: What the interpreter may say of a mutant: a fault of one of these kinds (a producer that does
#: not wait may arrive on a phase that already has its arrivals), or a wrong C.
SHOWN = r"data-race|deadlock|uninitialized-read|barrier: thread \d+ arrives on a barrier whose phase|wrong C"


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def variant(tmp_path: Path, name: str | None = None) -> Any:
    return example_variant(tmp_path, "gemm_ws", *(MUTANTS[name] if name else ()))


def outcome(module: Any, k: int) -> str:
    """What the interpreter says about a 128×128×k launch of the variant: its fault, "wrong C"
    with the first difference, or "" when C matches the float64 reference."""
    problem = module.example_gemm_ws(np.random.default_rng(1), k=k)
    try:
        module.gemm_ws[problem.grid](*problem.args)
        problem.check()
    except (KernelFault, TagAssertionError) as err:
        return str(err)
    except AssertionError as err:
        return f"wrong C: {err}"
    return ""


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_several_rounds_compute_the_product_under_every_schedule(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  schedule: str) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with using(schedule):
        assert outcome(variant(tmp_path), 2 * ROUND) == ""


def test_the_example_is_proved(tmp_path: Path) -> None:
    """C's claim, and the pipeline's timing for every launch (`argus.backends.nvptx.protocol`)."""
    result = variant(tmp_path).gemm_ws.verify()
    assert result.verdict is Verdict.PROVED, result.text()
    assert "asynchronous protocol" in result.text() and "is proved for every launch" in result.text(), result.text()


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_the_interpreter_shows_each_mistake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                                            schedule: str) -> None:
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    with using(schedule):
        said = outcome(variant(tmp_path, name), 2 * ROUND)
    assert re.search(SHOWN, said), said
    if said.startswith("wrong C"):
        return
    assert schedule == "round-robin" or f"schedule {schedule}" in said, said


def test_a_stage_filled_from_two_slices_is_refuted(tmp_path: Path) -> None:
    """The stage off by one for A only: the products would pair A's slice s with B's slice
    s + 1, which the checker finds and replays."""
    result = variant(tmp_path, "refill-stage-off-by-one").gemm_ws.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "reproduced" in result.text() or "replayed" in result.text()


@pytest.mark.parametrize("edit", [
    pytest.param(("nv.tma_load(sA[s, :, :], a, (bm, k0 + s * BK), full, s)",
                  "nv.tma_load(sA[s, :, :], b, (bn, k0 + s * BK), full, s)"), id="A's stage filled from B"),
    pytest.param(("nv.tma_load(sB[s, :, :], b, (bn, k0 + s * BK), full, s)",
                  "nv.tma_load(sB[s, :, :], b, (bn, s * BK), full, s)"), id="every round copies B's first slices"),
])
def test_what_the_consumers_sum_is_followed_through_the_hand_off(tmp_path: Path, edit: tuple[str, str]) -> None:
    """What a consumer reads after waiting on a stage's "full" barrier is what the producer
    copied there in the iteration of the same index: C's claim (the product of A's and B's rows
    over all of K) is proved of the example, and a stage filled from the wrong tensor or the
    same slice every round is a replayed violation of it, found statically."""
    result = example_variant(tmp_path, "gemm_ws", edit).gemm_ws.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "found statically and reproduced" in result.text(), result.text()


PRODUCER_LOOP = "                for k0 in range(0, K, STAGES * BK):\n                    phase = (k0 // (STAGES * BK)) % 2\n"
EXTRA_ROUND = ("                for p in range(0, extra):  # an extra first round: slice 0 once more\n"
               "                    for s in static_range(STAGES):\n"
               "                        nv.mbarrier_arrive_expect_tx(full, s, STAGE_BYTES)\n"
               "                        nv.tma_load(sA[s, :, :], a, (bm, s * BK), full, s)\n"
               "                        nv.tma_load(sB[s, :, :], b, (bn, s * BK), full, s)\n"
               "                for k0 in range(0, K, STAGES * BK):\n"
               "                    phase = (k0 // (STAGES * BK) + extra) % 2\n")


@pytest.mark.parametrize("edit", [
    pytest.param((PRODUCER_LOOP, "                extra = min(K // (5 * STAGES * BK), 1)\n" + EXTRA_ROUND),
                 id="an extra round of copies where K has five rounds or more"),
    pytest.param((PRODUCER_LOOP, "                extra = (min(block_idx.y, 1) - min(block_idx.y // 2, 1)) * "
                                 "(1 - min(block_idx.x, 1))\n" + EXTRA_ROUND),
                 id="an extra round of copies in block (0, 1) only"),
    pytest.param(("            for k0 in range(0, K, STAGES * BK):\n                phase = (k0 // (STAGES * BK)) % 2\n",
                  "            for k0 in range(0, K, STAGES * BK):\n                r = k0 // (STAGES * BK)\n"
                  "                phase = (r + r // 4) % 2\n"), id="the consumers' parity right for four rounds only"),
])
def test_a_hand_off_whose_phases_are_not_the_iterations_is_never_proved(tmp_path: Path, edit: tuple[str, str]) -> None:
    """The consumers read what the producer copied in the iteration of the same index only
    where the kernel says so as written: the barrier's phases are the producer loop's alone
    and each wait's parity is its iteration's number mod 2. These hand-offs go wrong only in
    launches the interpreter's schedules do not run (five rounds or more, another block): C is
    never proved to be the product there."""
    result = example_variant(tmp_path, "gemm_ws", edit).gemm_ws.verify()
    assert result.verdict is not Verdict.PROVED, result.text()


@pytest.mark.parametrize("name", ["no-full-wait", "no-empty-wait", "phase-off-by-one", "expect-tx-short"])
def test_the_checker_does_not_prove_a_broken_hand_off(tmp_path: Path, name: str) -> None:
    """The static analysis follows bulk copies in program order (and a stage's contents through
    the wait on its "full" barrier); the hand-off's timing is run on the interpreter under
    several schedules before any proof, and its fault is the verdict. Without the wait (or with
    the wrong parity), what the consumers read is not taken for the producer's slice of their
    iteration: a static candidate, whose replay meets the read of a stage not filled yet."""
    result = variant(tmp_path, name).gemm_ws.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert re.search(r"under schedule|uninitialized-read|data-race", result.text()), result.text()


def test_a_producer_that_stops_waiting_from_the_fifth_round_is_refuted(tmp_path: Path) -> None:
    """Right in every launch of four rounds or fewer: the protocol's model does not follow a wait
    made in some iterations only, and names a launch where it is made in some and not others
    (five rounds); the interpreter shows the race there, so C is never proved."""
    edit = ("nv.mbarrier_wait(empty, s, phase ^ 1)",
            "if k0 < 4 * STAGES * BK:\n                            nv.mbarrier_wait(empty, s, phase ^ 1)")
    result = example_variant(tmp_path, "gemm_ws", edit).gemm_ws.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "some iterations of its loop only" in result.text() and "data-race" in result.text(), result.text()
