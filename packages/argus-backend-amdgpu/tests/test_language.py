"""AMD intrinsics: scheduling hints shape the assembly without changing what a kernel computes,
`readfirstlane` reads the hardware wave's first active lane, bad arguments name their line,
and another backend refuses them naming the line."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from argus.backends.amdgpu import compiler
from argus.backends.amdgpu import language as amd
from argus.backends.amdgpu.targets import chip
from argus.dsl import (
    ArgusError,
    assume,
    block_idx,
    CodegenError,
    Tensor,
    bf16,
    f32,
    from_storage,
    i32,
    kernel,
    make_local,
    make_shared,
    matmul,
    static_range,
    syncthreads,
    thread_idx,
    to_storage,
    wave_mma_16x16x16,
)

MMA = wave_mma_16x16x16(bf16, bf16, f32)


def products_and_reads(hints: bool) -> Any:
    """Four independent MFMAs and four independent LDS reads; with hints, one of each in turn."""

    @kernel(block=(64,), warp_size=64)
    def interleaved(x: Tensor[bf16, 64, 16], y: Tensor[f32, 64, 16], out: Tensor[f32, 64, 20]):
        s = make_shared((64, 16), f32)
        fa = make_local((4, 4), bf16)
        acc = make_local((4, 4), f32)
        got = make_local((16,), f32)
        for j in static_range(4):
            for v in static_range(4):
                fa[j, v] = x[thread_idx.x, 4 * j + v]
                acc[j, v] = 0.0
        for c in static_range(16):
            s[thread_idx.x, c] = y[thread_idx.x, c]
        syncthreads()
        for j in static_range(4):
            matmul(fa[j, :], fa[j, :], acc[j, :], MMA)
        for c in static_range(16):
            got[c] = s[(thread_idx.x + 1) % 64, c]
        if hints:
            for j in static_range(4):
                amd.sched_group_barrier(amd.MFMA, 1, 0)
                amd.sched_group_barrier(amd.DS_READ, 1, 0)
        for j in static_range(4):
            for v in static_range(4):
                out[thread_idx.x, 4 * j + v] = acc[j, v]
        for c in static_range(4):
            out[thread_idx.x, 16 + c] = got[4 * c] + got[4 * c + 1] + got[4 * c + 2] + got[4 * c + 3]

    return interleaved


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def order(k: Any) -> list[str]:
    """The MFMAs and LDS reads of a kernel's assembly, in program order."""
    assembly = compiler.build(k.specialize(), chip("gfx942")).assembly
    return re.findall(r"^\s*(v_mfma\S*|ds_read\S*)", assembly, re.MULTILINE)


def test_sched_group_barriers_interleave_the_groups_asked_for() -> None:
    hinted = order(products_and_reads(True))
    assert [name.startswith("v_mfma") for name in hinted] == [True, False] * 4, hinted
    assert all(name == "ds_read_b128" for name in hinted[1::2])  # 16-byte LDS reads
    plain = order(products_and_reads(False))
    assert sorted(plain) == sorted(hinted) and plain != hinted


def test_hints_change_nothing_the_kernel_computes() -> None:
    rng = np.random.default_rng(0)
    x = to_storage(rng.standard_normal((64, 16)), bf16)
    y = rng.standard_normal((64, 16)).astype(np.float32)
    results = []
    for hints in (True, False):
        out = np.zeros((64, 20), np.float32)
        products_and_reads(hints)[1](x, y, out)
        results.append(out)
    np.testing.assert_array_equal(results[0], results[1])
    values = from_storage(x, bf16).astype(np.float64)
    lanes = np.arange(64)
    # lane l, value 4j + i of the product: C[4·(l // 16) + i, l % 16] of the j-th 16×16×16 block
    j, i = 1, 2
    block = values[:, 4 * j:4 * j + 4]  # lane r's A (and B) values: row (column) r % 16, K 4·(r // 16) + q
    expected = np.zeros(64)
    for lane in lanes:
        m, n = 4 * (lane // 16) + i, lane % 16
        rows = [r for r in lanes if r % 16 == m]  # ascending: K groups 0 … 3 in turn
        cols = [c for c in lanes if c % 16 == n]
        expected[lane] = sum(block[r][q] * block[c][q] for r, c in zip(rows, cols) for q in range(4))
    np.testing.assert_allclose(results[0][:, 4 * j + i], expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(results[0][:, 16], y[(lanes + 1) % 64, 0:4].sum(axis=1), rtol=1e-6)


@kernel(block=(128,))
def broadcast(x: Tensor[i32, 128], out: Tensor[i32, 128]):
    amd.setprio(2)
    amd.sched_barrier(amd.NOTHING)
    amd.waitcnt(33, 5)
    if thread_idx.x % 64 >= 3:
        out[thread_idx.x] = amd.readfirstlane(x[thread_idx.x])


def test_readfirstlane_reads_the_waves_first_active_lane() -> None:
    x = np.arange(128, dtype=np.int32) * 7
    out = np.full(128, -1, np.int32)
    broadcast[1](x, out)  # a 32-lane warp is declared: the hardware wave is 64 lanes all the same
    assert list(out[3:64]) == [21] * 61 and list(out[67:]) == [7 * 67] * 61


def test_the_code_uses_the_instructions() -> None:
    assembly = compiler.build(broadcast.specialize(), chip("gfx942")).assembly
    assert "v_readfirstlane_b32" in assembly and "s_setprio 2" in assembly
    assert re.search(r"s_waitcnt vmcnt\(33\) lgkmcnt\(5\)", assembly), "the counts as asked"


@pytest.mark.parametrize("body, message", [
    ("amd.setprio(4)", "priority is 0 to 3, not 4"),
    ("amd.sched_barrier(0x400)", r"0 to 0x3ff\), not 0x400"),
    ("amd.sched_group_barrier(amd.MFMA, 0, 0)", "at least one instruction, not 0"),
    ("amd.waitcnt(64, 0)", "vector-memory count is 0 to 63, not 64"),
    ("amd.agprs(300)", "0 to 256 AGPRs, not 300"),
    ("amd.row_shift(1, 16)", "moves by 1 to 15, not 16"),
])
def test_bad_arguments_name_their_line(tmp_path: Any, body: str, message: str) -> None:
    from argus.dsl.cli import load_module

    path = tmp_path / "bad.py"
    path.write_text("from argus.backends.amdgpu import language as amd\n"
                    "from argus.dsl import Tensor, f32, kernel\n\n"
                    "@kernel(block=(64,))\n"
                    "def bad(x: Tensor[f32, 64]):\n"
                    f"    {body}\n")
    with pytest.raises(ArgusError, match=r"bad\.py:6:\d+: .*" + message):
        load_module(path).bad.specialize()


def test_another_backend_refuses_them_with_the_line() -> None:
    nvptx = pytest.importorskip("argus.backends.nvptx.compiler")
    from argus.backends.nvptx.targets import arch

    with pytest.raises(CodegenError, match=r"test_language\.py:\d+:\d+: the operation amdgpu.setprio is not supported"):
        nvptx.build(broadcast.specialize(), arch("sm_90a"), assemble=False)


@kernel(block=(64,), warp_size=64)
def shifted(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(n >= 64)  # every thread writes its element of out
    out[thread_idx.x] = amd.buffer_load(x, thread_idx.x + 4)  # the last four read past the end: zero
    amd.buffer_store(out, thread_idx.x + 64, 1.0)  # all past the end: dropped


def test_buffer_accesses_outside_the_tensor_read_zero_and_write_nothing() -> None:
    x = np.arange(64, dtype=np.float32) + 1
    out = np.zeros(64, np.float32)
    shifted[1](x, out, 64)
    np.testing.assert_array_equal(out, np.concatenate([x[4:], np.zeros(4, np.float32)]))


def test_buffer_accesses_use_buffer_instructions() -> None:
    assembly = compiler.build(shifted.specialize(), chip("gfx942")).assembly
    assert "buffer_load_dword " in assembly and "buffer_store_dword " in assembly


def test_the_checker_follows_buffer_loads_without_assuming_them_in_bounds() -> None:
    """A copy through buffer loads keeps its tags; an index read past the end adds no fact to
    the launches considered, so the claim still covers every launch."""
    from argus.dsl import tag
    from argus.verify import Verdict

    def copier(shift: int) -> Any:
        @kernel(block=(64,), warp_size=64, verify=False)
        def copy_tagged(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
            assume(64 * block_idx.x + 64 <= n)  # the grid covers out
            tag(x, lambda i: (i,))
            got = make_local((1,), f32)
            want = make_local((1,), f32)
            tag(want, lambda i: (thread_idx.x + 64 * block_idx.x,))
            got[0] = amd.buffer_load(x, thread_idx.x + 64 * block_idx.x + shift)
            out[thread_idx.x + 64 * block_idx.x] = got[0]
            assert tag(got[...]) == tag(want[...])

        return copy_tagged

    assert copier(0).verify().verdict is Verdict.PROVED
    assert copier(1).verify().verdict is Verdict.VIOLATED


def buffer_stored(shift: int, claim: bool) -> Any:
    """out[i] = x[i + shift] by buffer stores (the last `shift` threads store nothing), with
    `assert_tags` (out[i] holds x[i]) or `assert_written`."""
    from argus.dsl import assert_tags, assert_written, grid_dim, tag

    @kernel(block=(64,), warp_size=64, verify=False)
    def buffer_copy(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
        assume(grid_dim.x * 64 >= n)
        if claim:
            tag(x, lambda i: (i,))
            assert_tags(out, lambda i: (i,))
        else:
            assert_written(out)
        i = block_idx.x * 64 + thread_idx.x
        if i + shift < n:
            amd.buffer_store(out, (i,), x[i + shift])

    return buffer_copy


def test_buffer_stores_are_held_to_the_asserted_tags() -> None:
    """A buffer store into a tensor with `assert_tags` is compared as a plain store is, by the
    checker and by the shadow tags that replay its witness: storing x[i + 1] at out[i] is a
    replayed violation, x[i] a proof."""
    from argus.verify import Verdict

    assert buffer_stored(0, claim=True).verify().verdict is Verdict.PROVED
    wrong = buffer_stored(1, claim=True).verify()
    assert wrong.verdict is Verdict.VIOLATED, wrong.text()
    assert "reproduced" in str(wrong.witnesses[0]["replayed"])


def test_buffer_stores_count_as_writes_for_assert_written() -> None:
    """The shadow tags record a buffer store's writes: a launch writing every element by buffer
    stores is no violation of `assert_written`, and one leaving the last element is."""
    from argus.verify import Verdict

    assert buffer_stored(0, claim=False).verify().verdict is not Verdict.VIOLATED
    assert buffer_stored(1, claim=False).verify().verdict is Verdict.VIOLATED


def test_agprs_are_asked_for_at_the_top_level() -> None:
    @kernel(block=(64,), warp_size=64)
    def nested(x: Tensor[f32, 64]):
        if thread_idx.x < 32:
            amd.agprs(16)
        x[thread_idx.x] = 0.0

    with pytest.raises(CodegenError, match=r"test_language\.py:\d+:\d+: call agprs\(n\) at the kernel's top level"):
        compiler.build(nested.specialize(), chip("gfx942"))


@kernel(block=(64,), warp_size=64)
def rows(x: Tensor[i32, 64], out: Tensor[i32, 2, 64]):
    out[0, thread_idx.x] = amd.row_shift(x[thread_idx.x], 3)
    out[1, thread_idx.x] = amd.row_rotate(x[thread_idx.x], 5)


def test_row_moves_stay_in_rows_of_16() -> None:
    x = np.arange(64, dtype=np.int32) * 10
    out = np.zeros((2, 64), np.int32)
    rows[1](x, out)
    lane = np.arange(64)
    np.testing.assert_array_equal(out[0], np.where(lane % 16 >= 3, x[lane - 3], x))  # the first three keep theirs
    np.testing.assert_array_equal(out[1], x[lane - lane % 16 + (lane % 16 - 5) % 16])
    assembly = compiler.build(rows.specialize(), chip("gfx942")).assembly
    assert "row_shr:3" in assembly and "row_ror:5" in assembly


def test_the_checker_follows_row_moves() -> None:
    from argus.dsl import tag
    from argus.verify import Verdict

    def rotated(claimed: int) -> Any:
        @kernel(block=(64,), warp_size=64, verify=False)
        def rotate_tags(x: Tensor[i32, 64], out: Tensor[i32, 64]):
            tag(x, lambda i: (i,))
            got = make_local((1,), i32)
            want = make_local((1,), i32)
            lane = thread_idx.x
            tag(want, lambda i: (lane - lane % 16 + (lane % 16 + 16 - claimed) % 16,))
            got[0] = amd.row_rotate(x[lane], 5)
            out[lane] = got[0]
            assert tag(got[...]) == tag(want[...])

        return rotate_tags

    assert rotated(5).verify().verdict is Verdict.PROVED
    assert rotated(4).verify().verdict is Verdict.VIOLATED


def test_a_launch_reading_past_the_end_agrees_with_the_proof() -> None:
    """A sequence of 160 keys: the last tile's protected loads read zeros past the end. The
    shadow-tag run takes their tags from the tag function, as the proof does, so both agree."""
    from pathlib import Path

    from argus.dsl.cli import load_module
    from argus.dsl.machine.shadow import check_launch
    from argus.verify import Verdict

    module = load_module(Path(__file__).resolve().parents[3] / "examples" / "attention_cdna.py")
    problem = module.example_attention_cdna(np.random.default_rng(0), seq=160)
    assert module.attention_cdna.verify(**problem.constants).verdict is Verdict.PROVED
    result = check_launch(module.attention_cdna, problem.grid, *problem.args, **problem.constants)
    assert result.verdict is Verdict.PROVED, result.text()
