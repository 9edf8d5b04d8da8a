"""Buffer loads into AGPRs (`buffer_load_agpr`): buffer_load's semantics (zero outside the
tensor) and tag rules, with the data written by the load into accumulation registers — the
assembly shows the load's destination AGPRs and the wait the compiler cannot insert itself."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from argus.backends.amdgpu import compiler
from argus.backends.amdgpu import language as amd
from argus.backends.amdgpu.targets import CHIPS, chip
from argus.dsl import ArgusError, Tensor, assume, f32, kernel, make_local, tag, thread_idx, u128
from argus.verify import Verdict


@kernel(block=(64,), warp_size=64)
def scaled(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(n >= 64)  # every thread writes its element of out
    v = amd.buffer_load_agpr(x, thread_idx.x + 4)  # the last four read past the end: zero
    out[thread_idx.x] = v * 2.0


@kernel(block=(64,), warp_size=64)
def moved(x: Tensor[u128, "n"], out: Tensor[u128, "n"], n: int):
    assume(n >= 64)  # every thread writes its element of out
    out[thread_idx.x] = amd.buffer_load_agpr(x, (thread_idx.x + 2,))


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def test_the_values_are_buffer_loads() -> None:
    x = np.arange(64, dtype=np.float32) + 1
    out = np.zeros(64, np.float32)
    scaled[1](x, out, 64)
    np.testing.assert_array_equal(out, 2 * np.concatenate([x[4:], np.zeros(4, np.float32)]))
    words = np.arange(64 * 4, dtype=np.uint32).reshape(64, 4)
    got = np.zeros((64, 4), np.uint32)
    moved[1](words.view("V16").reshape(64), got.view("V16").reshape(64), 64)
    np.testing.assert_array_equal(got, np.concatenate([words[2:], np.zeros((2, 4), np.uint32)]))


@pytest.mark.parametrize("target", sorted(CHIPS))
def test_the_load_writes_agprs_and_waits_for_itself(target: str) -> None:
    for k, pattern in ((scaled, r"buffer_load_dword (a\d+), v\d+, s\[\d+:\d+\], 0 offen"),
                       (moved, r"buffer_load_dwordx4 (a\[\d+:\d+\]), v\d+, s\[\d+:\d+\], 0 offen")):
        binary = compiler.build(k.specialize(), chip(target))
        load = re.search(pattern, binary.assembly)
        assert load is not None, binary.assembly
        assert binary.assembly[load.end():].lstrip().startswith("s_waitcnt vmcnt(0)")
        assert binary.resources.agprs >= (1 if k is scaled else 4) and binary.resources.scratch_bytes == 0
    assert re.search(r"v_accvgpr_read_b32 v\d+, a\d+", compiler.build(scaled.specialize(), chip(target)).assembly)


def test_the_checker_follows_them_as_buffer_loads() -> None:
    def copier(shift: int) -> Any:
        @kernel(block=(64,), warp_size=64, verify=False)
        def copy_tagged(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
            assume(n >= 64)  # every thread writes its element of out
            tag(x, lambda i: (i,))
            got = make_local((1,), f32)
            want = make_local((1,), f32)
            tag(want, lambda i: (thread_idx.x,))
            got[0] = amd.buffer_load_agpr(x, thread_idx.x + shift)
            out[thread_idx.x] = got[0]
            assert tag(got[...]) == tag(want[...])

        return copy_tagged

    assert copier(0).verify().verdict is Verdict.PROVED
    assert copier(1).verify().verdict is Verdict.VIOLATED


def test_a_part_of_a_register_is_refused_with_the_line(tmp_path: Any) -> None:
    from argus.dsl.cli import load_module

    path = tmp_path / "bad.py"
    path.write_text("from argus.backends.amdgpu import language as amd\n"
                    "from argus.dsl import Tensor, bf16, kernel, thread_idx\n\n"
                    "@kernel(block=(64,))\n"
                    "def bad(x: Tensor[bf16, 64]):\n"
                    "    v = amd.buffer_load_agpr(x, thread_idx.x)\n")
    with pytest.raises(ArgusError, match=r"bad\.py:6:\d+: .*moves 4, 8 or 16 bytes \(whole registers\), not bf16"):
        load_module(path).bad.specialize()


def test_a_kernel_without_agprs_cannot_load_into_them() -> None:
    from argus.dsl import CodegenError

    @kernel(block=(64,), warp_size=64)
    def none(x: Tensor[f32, 64], out: Tensor[f32, 64]):
        amd.agprs(0)
        out[thread_idx.x] = amd.buffer_load_agpr(x, thread_idx.x)

    with pytest.raises(CodegenError, match=r"test_agpr_loads\.py:\d+:\d+: buffer_load_agpr loads into AGPRs, and the "
                                           r"kernel asked for none \(agprs\(0\)\)"):
        compiler.build(none.specialize(), chip("gfx942"))
