"""Causal grouped-query flash attention, forward, in the style of the ARGUS paper's Figure 1.

One warp computes a 16-row tile of queries for one head. Q's fragment stays in registers for
the whole kernel; for each 16-key tile up to the diagonal, K is staged in shared memory as it
is and V transposed on the fly (``sVt[d, key] = V[key, d]``), so that the fragments of both
matrix products are read from shared memory in the order the 16×8×16 atom wants them.
Softmax is online: each thread keeps the running maximum and sum of the two rows it holds,
rescaling the output accumulator when the maximum grows. The probabilities P leave the first
product in exactly the fragment order the second one takes as its A operand.

Tag functions say where every element comes from: a query or key element is tagged with its
head group and its position along d, a value or probability element with its key index and
head group. The assertions before each product state that the operands pair up element by
element (same d for Q·Kᵀ, same key for P·V).
"""

import math

import numpy as np
from argus.dsl import (
    Problem,
    Tensor,
    assert_tags,
    assume,
    bf16,
    block_idx,
    constexpr,
    exp2,
    f32,
    from_storage,
    kernel,
    lane_id,
    make_local,
    make_shared,
    matmul,
    product,
    select,
    shfl_xor,
    static_range,
    syncthreads,
    tag,
    to_storage,
    warp_mma_16x8x16,
)

MMA = warp_mma_16x8x16(bf16, bf16, f32)
TILE = 16  # queries per block and keys per step


@kernel(block=(32,))
def attention(
    q: Tensor[bf16, "seq", "hq", "D"],
    k: Tensor[bf16, "seq", "hkv", "D"],
    v: Tensor[bf16, "seq", "hkv", "D"],
    o: Tensor[f32, "seq", "hq", "D"],
    seq: int,
    D: constexpr,
    GQA: constexpr,
):
    assume(seq % TILE == 0)  # whole query and key tiles only
    assume(q.shape[1] == k.shape[1] * GQA)  # each group of GQA query heads shares one key/value head
    tag(q, lambda s, h, d: (h // GQA, d))
    tag(k, lambda s, h, d: (h, d))
    tag(v, lambda s, h, d: (s, h), rows=lambda s, h, d: (d,))  # P·V pairs by key; column d goes to O
    # o[s, h, :] sums the products of its query row with V over every key of the tiles up to its own
    assert_tags(o, lambda s, h, d: product(pf[s, h], v[d], (range(0, (s // TILE + 1) * TILE), h // GQA)))
    qi = block_idx.x
    h = block_idx.y
    hk = h // GQA
    lane = lane_id()
    t0 = lane % 4
    t1 = lane // 4
    scale = 1.0 / math.sqrt(D) * math.log2(math.e)

    sK = make_shared((TILE, D), bf16)
    sVt = make_shared((D, TILE), bf16)
    # Fragments list the atom's value modes first: value i of a fragment is the element at
    # colexicographic index i of its tile, so qf[:, :, :, ks] is one A fragment (v0, v1, v2).
    qf = make_local((2, 2, 2, D // 16), bf16)  # A fragments of Q, one per 16-wide step of d
    kf = make_local((2, 2, 2), bf16)  # B fragments of K for two 8-key atoms: (v0, v1, j)
    vf = make_local((2, 2), bf16)  # a B fragment of V for 8 columns of d: (v0, v1)
    s_acc = make_local((2, 2, 2), f32)  # S for the two 8-key atoms: (v0, v1 = row half, j)
    pf = make_local((2, 2, 2), bf16)  # P as the A fragment of P·V: (v0, v1, v2 = j)
    o_acc = make_local((2, 2, D // 8), f32)  # O, one C fragment per 8 columns of d
    row_max = make_local((2,), f32)
    row_sum = make_local((2,), f32)

    for ks in static_range(D // 16):
        for v2 in static_range(2):
            for v1 in static_range(2):
                for v0 in static_range(2):
                    qf[v0, v1, v2, ks] = q[qi * TILE + t1 + 8 * v1, h, ks * 16 + 2 * t0 + v0 + 8 * v2]
    for n in static_range(D // 8):
        for v1 in static_range(2):
            for v0 in static_range(2):
                o_acc[v0, v1, n] = 0.0
    for v1 in static_range(2):
        row_max[v1] = float("-inf")
        row_sum[v1] = 0.0

    for kj in range(0, qi + 1):  # causal: key tiles up to the diagonal
        for i in static_range(TILE * D // 32):
            key = (lane + i * 32) // D
            d = (lane + i * 32) % D
            sK[key, d] = k[kj * TILE + key, hk, d]
            sVt[d, key] = v[kj * TILE + key, hk, d]  # V transposed on the fly
        syncthreads()

        for j in static_range(2):
            for v1 in static_range(2):
                for v0 in static_range(2):
                    s_acc[v0, v1, j] = 0.0
        for ks in static_range(D // 16):
            for j in static_range(2):
                for v1 in static_range(2):
                    for v0 in static_range(2):
                        kf[v0, v1, j] = sK[j * 8 + t1, ks * 16 + 2 * t0 + v0 + 8 * v1]
            for j in static_range(2):
                assert tag(qf[:, 0, :, ks][...]) == tag(kf[:, :, j][...]), "Q and K pair up along d"
                matmul(qf[:, :, :, ks], kf[:, :, j], s_acc[:, :, j], MMA)

        for v1 in static_range(2):
            row = qi * TILE + t1 + 8 * v1
            peak = row_max[v1]
            for j in static_range(2):
                for v0 in static_range(2):
                    key = kj * TILE + j * 8 + 2 * t0 + v0
                    x = select(key <= row, s_acc[v0, v1, j] * scale, float("-inf"))
                    s_acc[v0, v1, j] = x
                    peak = max(peak, x)
            peak = max(peak, shfl_xor(peak, 1))  # the 4 threads holding one row
            peak = max(peak, shfl_xor(peak, 2))
            correction = exp2(row_max[v1] - peak)
            total = 0.0
            for j in static_range(2):
                for v0 in static_range(2):
                    p = exp2(s_acc[v0, v1, j] - peak)
                    pf[v0, v1, j] = bf16(p)
                    total = total + p
            total = total + shfl_xor(total, 1)
            total = total + shfl_xor(total, 2)
            row_sum[v1] = row_sum[v1] * correction + total
            row_max[v1] = peak
            for n in static_range(D // 8):
                for v0 in static_range(2):
                    o_acc[v0, v1, n] = o_acc[v0, v1, n] * correction

        tag(pf, lambda c, r, j: (kj * TILE + 8 * j + 2 * t0 + c, h // GQA),
            rows=lambda c, r, j: (qi * TILE + t1 + 8 * r, h))  # the query row each probability belongs to
        for n in static_range(D // 8):
            for v1 in static_range(2):
                for v0 in static_range(2):
                    vf[v0, v1] = sVt[n * 8 + t1, 2 * t0 + v0 + 8 * v1]
            matmul(pf, vf, o_acc[:, :, n], MMA)
        syncthreads()

    for n in static_range(D // 8):
        for v1 in static_range(2):
            for v0 in static_range(2):
                o[qi * TILE + t1 + 8 * v1, h, n * 8 + 2 * t0 + v0] = o_acc[v0, v1, n] / row_sum[v1]


def example_attention(rng: np.random.Generator, seq: int = 64, heads: int = 2, kv_heads: int = 1, d: int = 64) -> Problem:
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
