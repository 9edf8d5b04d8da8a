"""Buffer loads straight into LDS (`buffer_load_lds`): the interpreter writes the tensor's
element (zero outside it) into the tile, the checker follows its tags into shared memory and
proves what the kernel claims of them, a wave whose lanes do not write consecutive elements in
lane order is reported by both, and the code is ``buffer_load_dword … lds`` (``_dwordx4`` on
gfx950, refused on gfx942 naming the line and the chip) with the waits the language needs."""

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
    CodegenError,
    KernelFault,
    Tensor,
    block_idx,
    f32,
    kernel,
    make_local,
    make_shared,
    syncthreads,
    tag,
    thread_idx,
    u128,
)
from argus.verify import Verdict


def reverser(claimed: int = 127, order: int = 1) -> Any:
    """Each block stages 128 elements of x in LDS through buffer loads (`order` -1: the lanes
    in reverse), then each thread writes out the element of the thread mirrored in the block,
    from the other wave; the tag assertion says which element that is."""

    @kernel(block=(128,), warp_size=64, verify=False)
    def staged(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
        tag(x, lambda i: (i,))
        s = make_shared((128,), f32)
        base = 128 * block_idx.x
        lane = thread_idx.x if order == 1 else 127 - thread_idx.x
        amd.buffer_load_lds(s, (lane,), x, (base + lane,))
        syncthreads()
        got = make_local((1,), f32)
        want = make_local((1,), f32)
        tag(want, lambda i: (base + claimed - thread_idx.x,))
        got[0] = s[127 - thread_idx.x]
        amd.buffer_store(out, base + thread_idx.x, got[0])
        assert tag(got[...]) == tag(want[...])

    return staged


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def test_the_elements_land_in_the_tile_and_zero_outside_the_tensor() -> None:
    n = 200
    x = np.arange(n, dtype=np.float32) + 1
    out = np.full(n, -1, np.float32)
    reverser()[2](x, out, n)
    padded = np.concatenate([x, np.zeros(256 - n, np.float32)])  # the second block reads past the end: zeros
    expected = np.concatenate([padded[127::-1], padded[:127:-1]])[:n]
    np.testing.assert_array_equal(out, expected)


def test_the_checker_follows_the_tags_into_shared_memory() -> None:
    assert reverser().verify().verdict is Verdict.PROVED
    assert reverser(claimed=126).verify().verdict is Verdict.VIOLATED


def test_lanes_out_of_order_are_reported_and_refused() -> None:
    why = (r"thread 1 writes element 126 of the tile, but the lanes of a 64-lane wave write consecutive elements in "
           r"lane order: after lane 0's element 127, lane 1 writes element 128")
    with pytest.raises(KernelFault, match=r"lds-load-order: buffer_load_lds into shared#0: " + why):
        reverser(order=-1)[1](np.zeros(128, np.float32), np.zeros(128, np.float32), 128)
    with pytest.raises(ArgusError, match=r"test_lds_load\.py:\d+:\d+: buffer_load_lds: " + why):
        reverser(order=-1).verify()


def test_the_code_loads_into_lds_and_waits_before_the_barrier() -> None:
    assembly = compiler.build(reverser().specialize(), chip("gfx942")).assembly
    body = assembly[assembly.index("staged:"):assembly.index("s_endpgm")]
    load = re.search(r"buffer_load_dword \S+, s\[\d+:\d+\], 0 offen lds", body)
    assert load is not None, body
    assert re.search(r"\bm0\b", body[:load.start()]), "the wave's LDS address goes in M0"
    between = body[load.end():body.index("s_barrier")]
    assert "s_waitcnt vmcnt(0)" in between  # the elements have landed before any wave reads them
    assert "ds_write" not in body  # nothing passes through registers into LDS


def test_a_thread_reading_its_own_element_waits_for_it() -> None:
    @kernel(block=(64,), warp_size=64)
    def own(x: Tensor[f32, 64], out: Tensor[f32, 64]):
        s = make_shared((64,), f32)
        amd.buffer_load_lds(s, (thread_idx.x,), x, (thread_idx.x,))
        out[thread_idx.x] = s[thread_idx.x] * 2.0

    x = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    own[1](x, out)
    np.testing.assert_array_equal(out, 2 * x)
    body = compiler.build(own.specialize(), chip("gfx942")).assembly
    after = body[body.index(" lds\n"):]
    assert after.index("s_waitcnt vmcnt(0)") < after.index("ds_read_b32")


@kernel(block=(64,), warp_size=64)
def wide(x: Tensor[u128, "n"], out: Tensor[u128, 64], n: int):
    s = make_shared((64,), u128)
    amd.buffer_load_lds(s, (thread_idx.x,), x, (thread_idx.x,))
    syncthreads()
    out[thread_idx.x] = s[63 - thread_idx.x]


def test_sixteen_bytes_per_lane_on_gfx950_only() -> None:
    words = np.arange(64 * 4, dtype=np.uint32).reshape(64, 4)
    out = np.zeros((64, 4), np.uint32)
    wide[1](words.view("V16").reshape(64), out.view("V16").reshape(64), 64)  # u128 values as 16-byte records
    np.testing.assert_array_equal(out, words[::-1])
    assembly = compiler.build(wide.specialize(), chip("gfx950")).assembly
    assert re.search(r"buffer_load_dwordx4 \S+, s\[\d+:\d+\], 0 offen lds", assembly)
    with pytest.raises(CodegenError, match=r"test_lds_load\.py:\d+:\d+: a buffer load into LDS moves 4 bytes per lane "
                                           r"on gfx942, not 16 \(u128\); 16 needs amdgpu:gfx950"):
        compiler.build(wide.specialize(), chip("gfx942"))


@pytest.mark.parametrize("body, message", [
    ("amd.buffer_load_lds(s, (0,), y, (0,))", r"the tile holds f32, tensor 'y' i32"),
    ("amd.buffer_load_lds(h, (0,), z, (0,))", r"moves 4 bytes per lane, or 16 on gfx950 .* not f16"),
    ("amd.buffer_load_lds(s, (0, 1), x, (0,))", r"the tile has 1 mode\(s\); give 1 coordinate\(s\)"),
    ("amd.buffer_load_lds(r, (0,), x, (0,))", r"expected a shared tile"),
])
def test_bad_arguments_name_their_line(tmp_path: Any, body: str, message: str) -> None:
    from argus.dsl.cli import load_module

    path = tmp_path / "bad.py"
    path.write_text("from argus.backends.amdgpu import language as amd\n"
                    "from argus.dsl import Tensor, f16, f32, i32, kernel, make_local, make_shared\n\n"
                    "@kernel(block=(64,))\n"
                    "def bad(x: Tensor[f32, 64], y: Tensor[i32, 64], z: Tensor[f16, 64]):\n"
                    "    s = make_shared((64,), f32)\n"
                    "    h = make_shared((64,), f16)\n"
                    "    r = make_local((1,), f32)\n"
                    f"    {body}\n")
    with pytest.raises(ArgusError, match=r"bad\.py:9:\d+: .*" + message):
        load_module(path).bad.specialize()
