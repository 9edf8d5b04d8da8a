"""A plain Triton GEMM (C = A·Bᵀ, bf16 in, fp32 accumulate, bf16 out), autotuned over a few
tile shapes: the "what a Triton user gets" reference of benchmarks/gemm.py."""

from __future__ import annotations

from typing import Any

import torch
import triton
import triton.language as tl

_CONFIGS = [
    triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_warps=w, num_stages=s)
    for bm, bn, bk, w, s in [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (128, 128, 64, 8, 4),
                             (64, 128, 64, 4, 4), (128, 64, 64, 4, 4)]
]


@triton.autotune(configs=_CONFIGS, key=["M", "N", "K"])
@triton.jit
def _gemm_nt(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    tiles_m, tiles_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    # blocks walk GROUP rows of tiles column by column, so neighbours share A and B tiles in L2
    per_group = GROUP * tiles_n
    first_m = (pid // per_group) * GROUP
    rows = min(tiles_m - first_m, GROUP)
    tile_m = first_m + (pid % per_group) % rows
    tile_n = (pid % per_group) // rows
    offs_m = tile_m * BM + tl.arange(0, BM)
    offs_n = tile_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_ptr = a + offs_m[:, None] * K + offs_k[None, :]
    b_ptr = b + offs_n[None, :] * K + offs_k[:, None]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(tl.load(a_ptr), tl.load(b_ptr), acc)
        a_ptr += BK
        b_ptr += BK
    c_ptr = c + offs_m[:, None] * N + offs_n[None, :]
    tl.store(c_ptr, acc.to(tl.bfloat16))


def matmul_nt(a: torch.Tensor, b: torch.Tensor) -> Any:
    """A (M×K) times B (N×K) transposed; M, N, K multiples of the tile shapes."""
    m, k = a.shape
    n = b.shape[0]
    c = torch.empty(m, n, device=a.device, dtype=torch.bfloat16)
    _gemm_nt[lambda meta: (triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"]),)](a, b, c, m, n, k)
    return c
