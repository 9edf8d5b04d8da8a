"""Causal grouped-query flash attention, forward, for AMD CDNA (MI300X, MI350X): a workgroup of
two 64-lane waves per 32 queries of one head, 16 queries per wave, on the wave-wide 16×16×16
matrix atom (MFMA).

The products are computed transposed, Sᵀ = K·Qᵀ and Oᵀ = Vᵀ·Pᵀ, because then they chain in
registers: the atom leaves Sᵀ with lane l holding query l % 16 at rows 4·(l // 16) … +3, which
is exactly where the second product wants Pᵀ as its B operand (`wave_mma_16x16x16`: lane l
holds B column l % 16 at K columns 4·(l // 16) … +3). So each lane owns one query: its softmax
statistics are per lane, reduced over the four lane groups with two shuffles, and its output
is the lane's column of Oᵀ.

The two waves share each tile of 64 keys through LDS. Every thread brings 16-byte pieces of K
and V with 128-bit buffer loads (bounds-checked by the hardware: keys past the end read zero,
and the causal mask drops them), the next tile's while the waves work on this one. K goes to
LDS as it is; V is transposed on the way, in registers, so that LDS holds Vᵀ with the keys
contiguous. Then each fragment read from LDS is one 128-bit read that serves two products: a
product sums over its 16 values of d (or of keys) in any order, so in each 32 of them lane
group g takes 8·g … +7, four for each product. For Sᵀ that orders d; for Oᵀ the keys, which
Sᵀ must then leave where Oᵀ reads them: its product t of each 32 keys gives lane group g the
keys 8·g + 4·t … +3 (A's row r is key 8·(r // 4) + 4·t + r % 4). Both tiles are swizzled
(16-byte chunk c of row r at c ^ (r % 8)), and the K tile keeps key k at row k with bits 2
and 3 swapped, so that the lanes one LDS access serves together (eight for 128 bits) reach
all 32 banks of CDNA3's LDS.

Tags as in the NVIDIA example (examples/flash_attention.py): a query or key element carries its
head group and its position along d, a value or probability element its key and head group
(each product checks that its operands pair up, whatever order the fragments take d and the
keys in; the assertion before Sᵀ's says so too), and V its column d, P its query, as rows: the
output states what it sums. Each product of Oᵀ sums every other group of four keys (lane group
g holds 8·g + 4·t … +3); its product with the other t fills the gaps.

The sequence length must be a multiple of 32 and D of 64.
"""

import math

import numpy as np
from argus.backends.amdgpu import language as amd
from argus.dsl import (
    Problem,
    Tensor,
    assert_tags,
    assert_written,
    assume,
    bf16,
    block_idx,
    constexpr,
    device,
    exp2,
    f32,
    from_storage,
    grid_dim,
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
    thread_idx,
    to_storage,
    u64,
    u128,
    warp_id,
    wave_mma_16x16x16,
)
from argus.layout import ComposedLayout, Layout, Swizzle

TARGETS = ("amdgpu:gfx942", "amdgpu:gfx950")  # MFMA
MMA = wave_mma_16x16x16(bf16, bf16, f32)
THREADS = 128  # two waves
BQ = 32  # queries per workgroup, 16 per wave
KT = 64  # keys per tile
QUADS = KT // 4  # a thread moves V four keys at a time


def k_tile(d: int) -> ComposedLayout:
    """The K tile in 16-byte vectors, KT rows of d // 8. Keys 0…3 and 8…11 (plus 4·t and a
    multiple of 16) are what eight consecutive lanes read for one product: with bits 2 and 3
    of the key swapped they are eight consecutive rows, which the swizzle spreads over all the
    banks."""
    if not isinstance(d, int) or d < 64 or d % 64:
        raise ValueError(f"the tiles are laid out for D a multiple of 64, not {d!r}")
    r = d // 8
    rows = Layout(((4, 2, 2, KT // 16), r), ((r, 8 * r, 4 * r, 16 * r), 1))
    return ComposedLayout(Swizzle(3, 0, r.bit_length() - 1), 0, rows)


def vt_tile(d: int, vector: int) -> ComposedLayout:
    """The tile of Vᵀ (d rows of KT keys, 128 bytes each) in vectors of `vector` keys: written 4
    keys at a time, read 8 at a time, through one swizzle of 16-byte chunks."""
    if vector not in (4, 8) or isinstance(vector, bool):
        raise ValueError(f"the tile of Vᵀ is written in vectors of 4 keys and read in vectors of 8, not {vector!r}")
    return ComposedLayout(Swizzle(3, 8 // vector - 1, 3), 0, Layout((d, KT // vector), (KT // vector, 1)))


@device
def fetch(kv, vv, kr, vr, k0, hk, tid, D):
    """This thread's part of the key tile at k0 into registers: 16-byte vectors of K, and of V
    four keys at the same 8 values of d, so that it can write them transposed."""
    for u in static_range(D // 16):
        e = tid + THREADS * u  # vector e of the tile: key e // (D // 8), d 8·(e % (D // 8)) … +7
        kr[u] = amd.buffer_load(kv, (k0 + e // (D // 8), hk, e % (D // 8)))
    for u in static_range(D // 64):
        e = tid + THREADS * u  # keys 4·(e % QUADS) … +3 at d 8·(e // QUADS) … +7
        for j in static_range(4):
            vr[u, j] = amd.buffer_load(vv, (k0 + 4 * (e % QUADS) + j, hk, e // QUADS))


@kernel(block=(THREADS,), warp_size=64)
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
    tag(v, lambda s, h, d: (s, h), rows=lambda s, h, d: (d,))  # Oᵀ = Vᵀ·Pᵀ pairs by key; column d goes to O
    # o[s, h, d] (Oᵀ: A is Vᵀ) sums V at d times its query's probabilities over every key of the
    # tiles up to its own (the last tile may reach past the diagonal: the mask zeroes those)
    assert_tags(o, lambda s, h, d: product(v[d], pf[s, h], (range(0, (s // KT + 1) * KT), h // GQA)))
    assume(seq % BQ == 0)
    assume(grid_dim.x * BQ == seq)  # a block for every tile of queries ...
    assume(grid_dim.y == o.shape[1])  # ... of every head
    assert_written(o)  # ... and every element of o written
    qv = q.view((seq, q.shape[1], D // 8), u128)
    kv = k.view((seq, k.shape[1], D // 8), u128)
    vv = v.view((seq, v.shape[1], D // 8), u128)
    ov = o.view((seq, o.shape[1], D // 4), u128)
    sK = make_shared(k_tile(D), u128)
    sVt = make_shared(vt_tile(D, 8), u128)  # Vᵀ: row d holds the tile's keys
    sVw = sVt.view(vt_tile(D, 4), u64)
    qi = block_idx.x
    h = block_idx.y
    hk = h // GQA
    tid = thread_idx.x
    lane = lane_id()
    col = lane % 16  # this lane's query (and, in Vᵀ, its row of d)
    g = lane // 16  # its group: values 8·g … +7 of each 32 of d or of the keys
    query = qi * BQ + warp_id() * 16 + col
    scale = 1.0 / math.sqrt(D) * math.log2(math.e)

    kr = make_local((D // 16,), u128)  # this thread's part of the next tile: of K,
    vr = make_local((D // 64, 4, 8), bf16)  # and of V, four keys at the same 8 values of d
    vrv = vr.view((D // 64, 4), u128)
    vt = make_local((D // 64, 8, 4), bf16)  # the same values of V, transposed
    vtv = vt.view((D // 64, 8), u64)
    qf = make_local((D // 32, 2, 4), bf16)  # Qᵀ's B fragments: d = 32·j + 8·g + 4·t + i
    qfv = qf.view((D // 32,), u128)
    kf = make_local((2, 4), bf16)
    kfv = kf.view((1,), u128)
    vf = make_local((2, 4), bf16)
    vfv = vf.view((1,), u128)
    s_acc = make_local((KT // 32, 2, 4), f32)  # Sᵀ: keys 32·p + 8·g + 4·t + i of this lane's query
    pf = make_local((KT // 32, 2, 4), bf16)
    o_acc = make_local((D // 16, 4), f32)  # Oᵀ: d = 16·n + 4·g + i of this lane's query
    out = make_local((D // 16, 4), f32)
    outv = out.view((D // 16,), u128)
    stats = make_local((2,), f32)  # the query's running maximum and sum

    for j in static_range(D // 32):
        qfv[j] = qv[query, h, 4 * j + g]
    for n in static_range(D // 16):
        for i in static_range(4):
            o_acc[n, i] = 0.0
    stats[0] = float("-inf")
    stats[1] = 0.0
    fetch(kv, vv, kr, vrv, 0, hk, tid, D)

    for k0 in range(0, qi * BQ + BQ, KT):  # causal: key tiles up to the workgroup's last query
        for u in static_range(D // 16):
            e = tid + THREADS * u
            sK[e // (D // 8), e % (D // 8)] = kr[u]
        for u in static_range(D // 64):
            e = tid + THREADS * u
            for x in static_range(8):
                for j in static_range(4):
                    vt[u, x, j] = vr[u, j, x]
                sVw[8 * (e // QUADS) + x, e % QUADS] = vtv[u, x]
        syncthreads()
        fetch(kv, vv, kr, vrv, k0 + KT, hk, tid, D)  # in flight while this tile is used

        for p in static_range(KT // 32):
            for t in static_range(2):
                for i in static_range(4):
                    s_acc[p, t, i] = 0.0
                key = 32 * p + 8 * (col // 4) + 4 * t + col % 4  # A's row col: Sᵀ puts it in lane group col // 4
                for j in static_range(D // 32):
                    kfv[0] = sK[key, 4 * j + g]
                    for c in static_range(2):
                        assert tag(kf[c, :][...]) == tag(qf[j, c, :][...]), "K and Q pair up along d"
                        matmul(kf[c, :], qf[j, c, :], s_acc[p, t, :], MMA)

        peak = stats[0]
        for p in static_range(KT // 32):
            for t in static_range(2):
                for i in static_range(4):
                    x = select(k0 + 32 * p + 8 * g + 4 * t + i <= query, s_acc[p, t, i] * scale, float("-inf"))
                    s_acc[p, t, i] = x
                    peak = max(peak, x)
        peak = max(peak, shfl_xor(peak, 16))  # the four lanes holding one query
        peak = max(peak, shfl_xor(peak, 32))
        correction = exp2(stats[0] - peak)
        total = 0.0
        for p in static_range(KT // 32):
            for t in static_range(2):
                for i in static_range(4):
                    w = exp2(s_acc[p, t, i] - peak)
                    pf[p, t, i] = bf16(w)
                    total = total + w
        total = total + shfl_xor(total, 16)
        total = total + shfl_xor(total, 32)
        stats[1] = stats[1] * correction + total
        stats[0] = peak
        for n in static_range(D // 16):
            for i in static_range(4):
                o_acc[n, i] = o_acc[n, i] * correction

        tag(pf, lambda p, t, i: (k0 + 32 * p + 8 * g + 4 * t + i, h // GQA),
            rows=lambda p, t, i: (query, h))  # the query every probability of this lane belongs to
        for n in static_range(D // 16):
            for p in static_range(KT // 32):
                vfv[0] = sVt[16 * n + col, 4 * p + g]  # keys 32·p + 8·g … +7 at d = 16·n + col
                for t in static_range(2):
                    matmul(vf[t, :], pf[p, t, :], o_acc[n, :], MMA)
        syncthreads()  # both waves are done with the tiles before the next ones overwrite them

    for n in static_range(D // 16):
        for i in static_range(4):
            out[n, i] = o_acc[n, i] / stats[1]
        ov[query, h, 4 * n + g] = outv[n]


def example_attention_cdna(rng: np.random.Generator, seq: int = 128, heads: int = 4, kv_heads: int = 2,
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
        grid=(seq // BQ, heads), args=(q, k, v, o, seq), expected={3: reference},
        constants={"D": d, "GQA": group}, atol=2e-2, rtol=2e-2,
    )
