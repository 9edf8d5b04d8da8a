"""Asynchronous copies (`cp_async`, `cp_async_commit`, `cp_async_wait`): the interpreter lands
a thread's groups at its waits and reports reads of bytes still in flight; the checker follows
the copied tags; the code uses cp.async; bad calls name their line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import compiler
from argus.backends.nvptx import language as nv
from argus.backends.nvptx.targets import arch
from argus.dsl import (
    ArgusError,
    KernelFault,
    TagAssertionError,
    Tensor,
    kernel,
    make_shared,
    syncthreads,
    thread_idx,
    u32,
)
from argus.verify import Verdict

from .conftest import example_variant


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def staged(wait: int, barrier: bool, neighbour: bool) -> Any:
    """Each thread copies two words into shared memory as two groups, waits until `wait` groups
    are in flight, and reads back its own (or, after a barrier, its neighbour's) first word."""

    @kernel(block=(32,), verify=False)  # the interpreter's timing of the copies is what is tested
    def stage(x: Tensor[u32, 64], out: Tensor[u32, 32]):
        s = make_shared((64,), u32)
        lane = thread_idx.x
        nv.cp_async(s, lane, x, lane)
        nv.cp_async_commit()
        nv.cp_async(s, 32 + lane, x, 32 + lane)
        nv.cp_async_commit()
        nv.cp_async_wait(wait)
        if barrier:
            syncthreads()
        out[lane] = s[(lane + 1) % 32 if neighbour else lane]

    return stage


def run(k: Any) -> np.ndarray:
    x = np.arange(64, dtype=np.uint32) * 3
    out = np.zeros(32, np.uint32)
    k[1](x, out)
    return out


def test_a_wait_lands_the_oldest_groups() -> None:
    np.testing.assert_array_equal(run(staged(1, barrier=False, neighbour=False)), np.arange(32) * 3)
    np.testing.assert_array_equal(run(staged(0, barrier=True, neighbour=True)), (np.arange(32) + 1) % 32 * 3)


def test_reading_a_copy_still_in_flight_is_a_race() -> None:
    @kernel(block=(32,))
    def early(x: Tensor[u32, 32], out: Tensor[u32, 32]):
        s = make_shared((32,), u32)
        nv.cp_async(s, thread_idx.x, x, thread_idx.x)
        nv.cp_async_commit()
        out[thread_idx.x] = s[thread_idx.x]

    # the launch's check runs the hand-off under several schedules first, and refuses it
    with pytest.raises(TagAssertionError, match="thread 0 reads byte 0 of shared#0 and the cp.async copy of thread 0 "
                                                "wrote it"):
        early[1](np.zeros(32, np.uint32), np.zeros(32, np.uint32))


def test_another_threads_copy_needs_a_barrier_after_the_wait() -> None:
    with pytest.raises(KernelFault, match=r"data-race: thread 0 reads byte 4 .* the cp.async copy of thread 1 wrote it"):
        run(staged(0, barrier=False, neighbour=True))


def test_the_checker_follows_the_copies_of_the_ampere_gemm(tmp_path: Any) -> None:
    """gemm_sm80 fills its stages with cp_async: proved; a copy from the wrong K vector is refuted."""
    original = example_variant(tmp_path, "gemm_sm80")
    assert original.gemm_sm80.verify().verdict is Verdict.PROVED
    wrong = example_variant(tmp_path, "gemm_sm80", ("nv.cp_async(sBv, (0, e // 4, e % 4), bv, (bn + e // 4, e % 4))",
                                            "nv.cp_async(sBv, (0, e // 4, e % 4), bv, (bn + e // 4, (e + 1) % 4))"))
    result = wrong.gemm_sm80.verify()
    assert result.verdict is Verdict.VIOLATED and "reproduced" in result.text(), result.text()


def test_the_code_uses_cp_async_in_groups() -> None:
    ptx = compiler.build(staged(1, barrier=False, neighbour=False).specialize(), arch("sm_80"), assemble=False).ptx
    assert ptx.count("cp.async.ca.shared.global") == 2
    assert "cp.async.commit_group" in ptx and "cp.async.wait_group 1" in ptx


@pytest.mark.parametrize("body, message", [
    ("nv.cp_async(s, 0, x, 0)", r"moves one element of 4, 8 or 16 bytes .* not bf16"),
    ("nv.cp_async(w, (0, 1), y, 0)", r"the tile has 1 mode\(s\); give 1 coordinate\(s\)"),
    ("nv.cp_async_wait(8)", "0 to 7 of its groups"),
])
def test_bad_calls_name_their_line(tmp_path: Any, body: str, message: str) -> None:
    from argus.dsl.cli import load_module

    path = tmp_path / "bad.py"
    path.write_text(
        "from argus.backends.nvptx import language as nv\n"
        "from argus.dsl import Tensor, bf16, kernel, make_shared, u32\n\n"
        "@kernel(block=(32,))\n"
        "def bad(x: Tensor[bf16, 8], y: Tensor[u32, 8]):\n"
        "    s = make_shared((8,), bf16)\n"
        "    w = make_shared((8,), u32)\n"
        f"    {body}\n")
    with pytest.raises(ArgusError, match=r"bad\.py:8:\d+: .*" + message):
        load_module(path).bad.specialize()

