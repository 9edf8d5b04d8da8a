"""The fp8 wave atoms (`wave_mma_16x16x32`, `wave_mma_32x32x16`): the interpreter multiplies the
decoded values, the code is the MFMA of the chip's fp8 formats (fnuz on gfx942, OCP on gfx950),
and the other formats are refused with the line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.amdgpu import compiler
from argus.backends.amdgpu.targets import chip
from argus.dsl import (
    CodegenError,
    Tensor,
    f8e4m3,
    f8e4m3fnuz,
    f8e5m2fnuz,
    f32,
    from_storage,
    kernel,
    lane_id,
    make_local,
    matmul,
    static_range,
    tag,
    to_storage,
    wave_mma_16x16x32,
    wave_mma_32x32x16,
)
from argus.verify import Verdict


def product(make: Any, a_type: Any, b_type: Any) -> Any:
    """One product of the atom, C = A·Bᵀ, each lane loading its fragments through the layouts."""
    atom = make(a_type, b_type, f32)
    mn, _, k = atom.shape

    @kernel(block=(64,), warp_size=64)
    def wave_fp8(a: Tensor[a_type, mn, k], b: Tensor[b_type, mn, k], c: Tensor[f32, mn, mn]):
        tag(a, lambda m, kk: (kk,))
        tag(b, lambda n, kk: (kk,))
        lane = lane_id()
        values = mn * k // 64  # k named in the body: the dims k above are the atom's K, not a launch size
        fa = make_local((values,), a_type)
        fb = make_local((values,), b_type)
        acc = make_local((mn * mn // 64,), f32)
        for v in static_range(values):
            at = atom.a_layout(lane, v)
            fa[v] = a[at % mn, at // mn]
            at = atom.b_layout(lane, v)
            fb[v] = b[at % mn, at // mn]
        for v in static_range(mn * mn // 64):
            acc[v] = 0.0
        matmul(fa, fb, acc, atom)
        for v in static_range(mn * mn // 64):
            at = atom.c_layout(lane, v)
            c[at % mn, at // mn] = acc[v]

    return wave_fp8


CASES = [(wave_mma_16x16x32, f8e4m3fnuz, f8e4m3fnuz, "v_mfma_f32_16x16x32_fp8_fp8"),
         (wave_mma_32x32x16, f8e5m2fnuz, f8e4m3fnuz, "v_mfma_f32_32x32x16_bf8_fp8")]


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


@pytest.mark.parametrize("make, a_type, b_type, instruction", CASES)
def test_the_interpreter_multiplies_the_decoded_values(make: Any, a_type: Any, b_type: Any, instruction: str) -> None:
    mn, _, k = make(a_type, b_type, f32).shape
    rng = np.random.default_rng(0)
    a, b = to_storage(rng.standard_normal((mn, k)), a_type), to_storage(rng.standard_normal((mn, k)), b_type)
    c = np.zeros((mn, mn), np.float32)
    product(make, a_type, b_type)[1](a, b, c)
    expected = from_storage(a, a_type).astype(np.float64) @ from_storage(b, b_type).astype(np.float64).T
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make, a_type, b_type, instruction", CASES)
def test_gfx942_runs_the_fnuz_formats(make: Any, a_type: Any, b_type: Any, instruction: str) -> None:
    k = product(make, a_type, b_type)
    assert k.verify().verdict is Verdict.PROVED
    binary = compiler.build(k.specialize(), chip("gfx942"))
    assert instruction in binary.assembly and binary.resources.scratch_bytes == 0


def test_gfx950_runs_the_ocp_formats_and_refuses_fnuz_with_the_line() -> None:
    ocp = compiler.build(product(wave_mma_16x16x32, f8e4m3, f8e4m3).specialize(), chip("gfx950"))
    assert "v_mfma_f32_16x16x32_fp8_fp8" in ocp.assembly
    with pytest.raises(CodegenError, match=r"test_fp8\.py:\d+:\d+: .*gfx950's MFMA reads 8-bit floats as f8e4m3 and "
                                           r"f8e5m2, not f8e4m3fnuz"):
        compiler.build(product(wave_mma_16x16x32, f8e4m3fnuz, f8e4m3fnuz).specialize(), chip("gfx950"))
    with pytest.raises(CodegenError, match="gfx942's MFMA reads 8-bit floats as f8e4m3fnuz and f8e5m2fnuz"):
        compiler.build(product(wave_mma_16x16x32, f8e4m3, f8e4m3).specialize(), chip("gfx942"))
