"""On a Hopper GPU: the warp-specialized GEMM (examples/gemm_ws.py) computes A·Bᵀ, checked
against PyTorch's fp32 product of the same bf16 inputs, for several tile shapes and sizes (more
than one round of stages, several blocks in each direction, grids that are not square), with C
poisoned first so that every element must be written."""

from __future__ import annotations

import pytest
from argus.dsl.cli import load_module

from .conftest import EXAMPLES, cuda_available

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU")]


def _hopper() -> bool:
    import torch

    return torch.cuda.get_device_capability() == (9, 0)


@pytest.mark.parametrize("tiles, size", [
    ((128, 128, 64, 4), (256, 384, 1024)),  # 3×2 blocks, 4 rounds of stages
    ((128, 128, 64, 4), (1024, 512, 2048)),
    ((256, 128, 64, 3), (512, 768, 576)),  # two 64-row halves per consumer; 3 rounds of 3 stages
    ((128, 256, 32, 4), (384, 512, 256)),  # BN 256, 64-byte swizzled rows
    ((128, 64, 16, 2), (128, 192, 96)),
])
@pytest.mark.parametrize("seed", [1, 2])
def test_gemm_ws_matches_torch(tiles: tuple[int, int, int, int], size: tuple[int, int, int], seed: int) -> None:
    import torch

    if not _hopper():
        pytest.skip("gemm_ws needs sm_90a (warpgroup MMA, setmaxnreg)")
    bm, bn, bk, stages = tiles
    m, n, k = size
    gemm = load_module(EXAMPLES / "gemm_ws.py").build(bm, bn, bk, stages)
    generator = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=generator).to(torch.bfloat16)
    b = torch.randn(n, k, device="cuda", generator=generator).to(torch.bfloat16)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
    gemm[(n // bn, m // bm)](a, b, c, m, n, k)
    torch.cuda.synchronize()
    reference = a.double() @ b.double().T
    got = c.double()
    assert not got.isnan().any(), f"{int(got.isnan().sum())} elements of C were not written"
    relative = float((got - reference).norm() / reference.norm())
    assert relative < 1e-2, relative  # bf16 output: about 2⁻⁹ per element
    worst = float(((got - reference).abs() - 1e-2 * reference.abs()).max())
    assert worst < 0.1, f"an element is off by more than 0.1 + 1% ({worst:.3f} beyond)"
