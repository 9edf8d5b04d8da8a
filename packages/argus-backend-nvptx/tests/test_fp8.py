"""The warp's fp8 matrix multiply (`warp_mma_16x8x32`): the interpreter computes the product of
the decoded values, the checker pairs the operands, the code uses mma.sync m16n8k32 on sm_90
and an architecture without it refuses with the line."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from argus.backends.nvptx import compiler, toolchain
from argus.backends.nvptx.errors import CodegenError
from argus.backends.nvptx.targets import arch
from argus.dsl import (
    Tensor,
    f8e4m3,
    f8e5m2,
    f32,
    from_storage,
    kernel,
    lane_id,
    make_local,
    matmul,
    static_range,
    tag,
    to_storage,
    warp_mma_16x8x32,
)
from argus.verify import Verdict

E4M3 = warp_mma_16x8x32(f8e4m3, f8e4m3, f32)
MIXED = warp_mma_16x8x32(f8e4m3, f8e5m2, f32)


def product(atom: Any, b_type: Any) -> Any:
    """One 16×8×32 product, C = A·Bᵀ, each lane loading its fragments through the atom's layouts."""

    @kernel(block=(32,))
    def fp8_mma(a: Tensor[f8e4m3, 16, 32], b: Tensor[b_type, 8, 32], c: Tensor[f32, 16, 8]):
        tag(a, lambda m, k: (k,))
        tag(b, lambda n, k: (k,))
        lane = lane_id()
        fa = make_local((16,), f8e4m3)
        fb = make_local((8,), b_type)
        acc = make_local((4,), f32)
        for v in static_range(16):
            at = atom.a_layout(lane, v)
            fa[v] = a[at % 16, at // 16]
        for v in static_range(8):
            at = atom.b_layout(lane, v)
            fb[v] = b[at % 8, at // 8]
        for v in static_range(4):
            acc[v] = 0.0
        matmul(fa, fb, acc, atom)
        for v in static_range(4):
            at = atom.c_layout(lane, v)
            c[at % 16, at // 16] = acc[v]

    return fp8_mma


def inputs(b_type: Any, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return to_storage(rng.standard_normal((16, 32)), f8e4m3), to_storage(rng.standard_normal((8, 32)), b_type)


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


@pytest.mark.parametrize("atom, b_type", [(E4M3, f8e4m3), (MIXED, f8e5m2)])
def test_the_interpreter_multiplies_the_decoded_values(atom: Any, b_type: Any) -> None:
    a, b = inputs(b_type)
    c = np.zeros((16, 8), np.float32)
    product(atom, b_type)[1](a, b, c)
    expected = from_storage(a, f8e4m3).astype(np.float64) @ from_storage(b, b_type).astype(np.float64).T
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-5)


def test_the_operands_pair_up() -> None:
    assert product(E4M3, f8e4m3).verify().verdict is Verdict.PROVED


@pytest.mark.skipif(toolchain.find_ptxas() is None, reason="ptxas is not installed")
def test_the_code_is_mma_sync_m16n8k32_and_assembles() -> None:
    binary = compiler.build(product(MIXED, f8e5m2).specialize(), arch("sm_90a"), assemble=True)
    assert "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e5m2.f32" in binary.ptx
    assert binary.cubin


def test_an_architecture_without_fp8_products_refuses_with_the_line() -> None:
    with pytest.raises(CodegenError, match=r"test_fp8\.py:\d+:\d+: no sm_80 instruction runs the matrix-multiply "
                                           r"atom mma_16x8x32"):
        compiler.build(product(E4M3, f8e4m3).specialize(), arch("sm_80"), assemble=False)


def test_the_atom_takes_8_bit_inputs() -> None:
    from argus.dsl import ArgusError, bf16

    with pytest.raises(ArgusError, match="multiplies 8-bit inputs, not bf16"):
        warp_mma_16x8x32(bf16, bf16, f32)
