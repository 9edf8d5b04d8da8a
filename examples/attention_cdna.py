"""Causal grouped-query flash attention, forward, for AMD CDNA (MI300X, MI350X): one 64-lane wave
per 16 queries of one head, on the wave-wide 16×16×16 matrix atom (MFMA).

The products are computed transposed, Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·Pᵀ, because then they chain in
registers: the atom leaves Sᵀ with lane l holding query l % 16 at keys 4·(l // 16) … +3, which
is exactly where the second product wants Pᵀ as its B operand (`wave_mma_16x16x16`: lane l
holds B column l % 16 at K columns 4·(l // 16) … +3). So each lane owns one query: its softmax
statistics are per lane, reduced over the four lane groups with two shuffles, and its output
is the lane's column of Oᵀ. K and V are read straight from global memory in fragment order;
nothing goes through LDS.

Tags as in the NVIDIA example (examples/flash_attention.py): a query or key element carries its
head group and its position along d, a value or probability element its key and head group;
the assertions before each product say the operands pair up element by element.
"""

import math

import numpy as np
from argus.dsl import (
    Problem,
    Tensor,
    bf16,
    block_idx,
    constexpr,
    exp2,
    f32,
    from_storage,
    kernel,
    lane_id,
    make_local,
    matmul,
    select,
    shfl_xor,
    static_range,
    tag,
    to_storage,
    wave_mma_16x16x16,
)

TARGETS = ("amdgpu:gfx942", "amdgpu:gfx950")  # MFMA
MMA = wave_mma_16x16x16(bf16, bf16, f32)
TILE = 16  # queries per wave and keys per step


@kernel(block=(64,), warp_size=64)
def attention_cdna(
    q: Tensor[bf16, "seq", "hq", "D"],
    k: Tensor[bf16, "seq", "hkv", "D"],
    v: Tensor[bf16, "seq", "hkv", "D"],
    o: Tensor[f32, "seq", "hq", "D"],
    seq: int,
    D: constexpr,
    GQA: constexpr,
):
    tag(q, lambda s, h, d: (h // GQA, d))
    tag(k, lambda s, h, d: (h, d))
    tag(v, lambda s, h, d: (s, h))
    qi = block_idx.x
    h = block_idx.y
    hk = h // GQA
    lane = lane_id()
    col = lane % 16  # this lane's query (and, in Vᵀ, its column of d)
    g = lane // 16  # its group: K columns 4·g … +3 of each product
    query = qi * TILE + col
    scale = 1.0 / math.sqrt(D) * math.log2(math.e)

    qf = make_local((D // 16, 4), bf16)  # Qᵀ's B fragments, one per 16-wide step of d
    kf = make_local((4,), bf16)
    vf = make_local((4,), bf16)
    s_acc = make_local((4,), f32)  # Sᵀ: keys 4·g … +3 of this lane's query
    pf = make_local((4,), bf16)
    o_acc = make_local((D // 16, 4), f32)  # Oᵀ: d = 16·n + 4·g + i of this lane's query
    stats = make_local((2,), f32)  # the query's running maximum and sum

    for n in static_range(D // 16):
        for i in static_range(4):
            qf[n, i] = q[query, h, 16 * n + 4 * g + i]
            o_acc[n, i] = 0.0
    stats[0] = float("-inf")
    stats[1] = 0.0

    for kj in range(0, qi + 1):  # causal: key tiles up to the diagonal
        for i in static_range(4):
            s_acc[i] = 0.0
        for n in static_range(D // 16):
            for i in static_range(4):
                kf[i] = k[kj * TILE + col, hk, 16 * n + 4 * g + i]
            assert tag(kf[...]) == tag(qf[n, :][...]), "K and Q pair up along d"
            matmul(kf, qf[n, :], s_acc, MMA)

        peak = stats[0]
        for i in static_range(4):
            x = select(kj * TILE + 4 * g + i <= query, s_acc[i] * scale, float("-inf"))
            s_acc[i] = x
            peak = max(peak, x)
        peak = max(peak, shfl_xor(peak, 16))  # the four lanes holding one query
        peak = max(peak, shfl_xor(peak, 32))
        correction = exp2(stats[0] - peak)
        total = 0.0
        for i in static_range(4):
            p = exp2(s_acc[i] - peak)
            pf[i] = bf16(p)
            total = total + p
        total = total + shfl_xor(total, 16)
        total = total + shfl_xor(total, 32)
        stats[1] = stats[1] * correction + total
        stats[0] = peak
        for n in static_range(D // 16):
            for i in static_range(4):
                o_acc[n, i] = o_acc[n, i] * correction

        tag(pf, lambda i: (kj * TILE + 4 * g + i, h // GQA))
        for n in static_range(D // 16):
            for i in static_range(4):
                vf[i] = v[kj * TILE + 4 * g + i, hk, 16 * n + col]
            assert tag(vf[...]) == tag(pf[...]), "V and P pair up along the keys"
            matmul(vf, pf, o_acc[n, :], MMA)

    for n in static_range(D // 16):
        for i in static_range(4):
            o[query, h, 16 * n + 4 * g + i] = o_acc[n, i] / stats[1]


def example_attention_cdna(rng: np.random.Generator, seq: int = 64, heads: int = 2, kv_heads: int = 1,
                           d: int = 64) -> Problem:
    q = to_storage(rng.standard_normal((seq, heads, d)), bf16)
    k = to_storage(rng.standard_normal((seq, kv_heads, d)), bf16)
    v = to_storage(rng.standard_normal((seq, kv_heads, d)), bf16)
    o = np.zeros((seq, heads, d), np.float32)
    Q, K, V = (from_storage(t, bf16).astype(np.float64) for t in (q, k, v))
    group = heads // kv_heads
    reference = np.zeros((seq, heads, d))
    causal = np.tril(np.ones((seq, seq), bool))
    for head in range(heads):
        s = Q[:, head] @ K[:, head // group].T / math.sqrt(d)
        s = np.where(causal, s, -np.inf)
        p = np.exp(s - s.max(axis=1, keepdims=True))
        reference[:, head] = (p / p.sum(axis=1, keepdims=True)) @ V[:, head // group]
    return Problem(
        grid=(seq // TILE, heads), args=(q, k, v, o, seq), expected={3: reference},
        constants={"D": d, "GQA": group}, atol=2e-2, rtol=2e-2,
    )
