"""CDNA4's 16-bit MFMAs with twice the K (`wave_mma_16x16x32`, `wave_mma_32x32x16` on bf16 or
f16): the interpreter multiplies through the atoms' layouts, the checker proves the operand
pairing (and catches a fragment loaded with another pairing), gfx950 issues
v_mfma_f32_16x16x32_bf16 … _32x32x16_f16, and gfx942, which lacks them, refuses naming the
line and the chip."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.amdgpu import compiler
from argus.backends.amdgpu.targets import chip
from argus.dsl import (
    ArgusError,
    CodegenError,
    Tensor,
    bf16,
    f8e4m3,
    f16,
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

CASES = [(wave_mma_16x16x32, bf16, "v_mfma_f32_16x16x32_bf16"), (wave_mma_16x16x32, f16, "v_mfma_f32_16x16x32_f16"),
         (wave_mma_32x32x16, bf16, "v_mfma_f32_32x32x16_bf16"), (wave_mma_32x32x16, f16, "v_mfma_f32_32x32x16_f16")]


def product(make: Any, dtype: Any, b_group: int = 8) -> Any:
    """C = A·Bᵀ with one MFMA, A's fragment loaded through the atom's layout and B's with each
    lane's K columns in runs of `b_group`: 8 is the atom's own pairing, 4 the 16×16×16 one,
    which pairs other K columns than A's."""
    atom = make(dtype, dtype, f32)
    mn, _, k = atom.shape
    outputs = mn * mn // 64

    @kernel(block=(64,), warp_size=64)
    def wide(a: Tensor[dtype, mn, k], b: Tensor[dtype, mn, k], c: Tensor[f32, mn, mn]):
        tag(a, lambda m, kk: (kk,))
        tag(b, lambda n, kk: (kk,))
        lane = lane_id()
        values = mn * k // 64  # k named in the body: the dims k above are the atom's K, not a launch size
        fa = make_local((values,), dtype)
        fb = make_local((values,), dtype)
        acc = make_local((outputs,), f32)
        for v in static_range(values):
            at = atom.a_layout(lane, v)
            fa[v] = a[at % mn, at // mn]
            fb[v] = b[lane % mn, (v // b_group) * b_group * (64 // mn) + (lane // mn) * b_group + v % b_group]
        for v in static_range(outputs):
            acc[v] = 0.0
        matmul(fa, fb, acc, atom)
        for v in static_range(outputs):
            at = atom.c_layout(lane, v)
            c[at % mn, at // mn] = acc[v]

    return wide


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def test_eight_consecutive_k_values_per_lane() -> None:
    """The lane mappings AMD documents for these MFMAs (and for the fp8 ones): lane l holds
    row l % M of A (column of B) at K 8·(l // M) … 8·(l // M) + 7."""
    for make, mn in ((wave_mma_16x16x32, 16), (wave_mma_32x32x16, 32)):
        atom = make(bf16, bf16, f32)
        for lane in (0, 5, mn + 3, 63):
            held = sorted(atom.a_layout(lane, v) for v in range(8))
            assert held == [lane % mn + mn * (8 * (lane // mn) + j) for j in range(8)]
        assert str(atom.c_layout) == str(make(f8e4m3, f8e4m3, f32).c_layout)  # C as for fp8 and the narrow atoms


@pytest.mark.parametrize("make, dtype, instruction", CASES)
def test_the_interpreter_multiplies_through_the_layouts(make: Any, dtype: Any, instruction: str) -> None:
    mn, _, k = make(dtype, dtype, f32).shape
    rng = np.random.default_rng(1)
    a, b = to_storage(rng.standard_normal((mn, k)), dtype), to_storage(rng.standard_normal((mn, k)), dtype)
    c = np.zeros((mn, mn), np.float32)
    product(make, dtype)[1](a, b, c)
    expected = from_storage(a, dtype).astype(np.float64) @ from_storage(b, dtype).astype(np.float64).T
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("make, dtype, instruction", CASES)
def test_gfx950_runs_them_on_its_mfma(make: Any, dtype: Any, instruction: str) -> None:
    binary = compiler.build(product(make, dtype).specialize(), chip("gfx950"))
    assert binary.assembly.count(instruction) == 1
    assert binary.resources.scratch_bytes == 0 and binary.resources.vgpr_spills == 0


def test_the_checker_proves_the_pairing_and_catches_another() -> None:
    assert product(wave_mma_16x16x32, bf16).verify().verdict is Verdict.PROVED
    assert product(wave_mma_16x16x32, bf16, b_group=4).verify().verdict is Verdict.VIOLATED


@pytest.mark.parametrize("make, dtype, instruction", CASES)
def test_gfx942_refuses_them_naming_the_line_and_the_chip(make: Any, dtype: Any, instruction: str) -> None:
    with pytest.raises(CodegenError, match=rf"test_wide_mfma\.py:\d+:\d+: no gfx942 instruction runs the "
                                           rf"matrix-multiply atom .*: {instruction} is a CDNA4 instruction "
                                           rf"\(amdgpu:gfx950\); gfx942 multiplies bf16 and f16 with "
                                           rf"wave_mma_16x16x16 and wave_mma_32x32x8"):
        compiler.build(product(make, dtype).specialize(), chip("gfx942"))


def test_the_atoms_take_inputs_of_one_width() -> None:
    with pytest.raises(ArgusError, match=r"wave_mma_16x16x32 multiplies 8-bit or 16-bit inputs, not f32"):
        wave_mma_16x16x32(f32, f32, f32)
    with pytest.raises(ArgusError, match=r"wave_mma_32x32x16 multiplies inputs of one width, not bf16 with f8e4m3"):
        wave_mma_32x32x16(bf16, f8e4m3, f32)
