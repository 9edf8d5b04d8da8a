"""Differential tests against NVIDIA's pycute (from the `nvidia-cutlass` wheel).

For each random input, pycute's answer is judged by brute force against the operation's
defining law. Where pycute is right, Argus must give the same function (same size, same
offsets in index order; for composition also the same shape). Where pycute is wrong, Argus
must be right or refuse. Argus may refuse where pycute is right only for a documented
strictness: complement (and the divides and products built on it) refuses layouts whose
sorted strides are not multiples of the span below them.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from argus.layout import (
    Layout,
    LayoutError,
    blocked_product,
    coalesce,
    complement,
    composition,
    cosize,
    filter,
    left_inverse,
    logical_divide,
    logical_product,
    make_layout,
    raked_product,
    right_inverse,
    tiled_divide,
    zipped_divide,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import (
    admissible_pairs,
    adversarial_pairs,
    compact_layouts,
    divide_pairs,
    divide_tiler_pairs,
    injective_layouts,
    is_injective,
    layouts,
    leaves,
    product_pairs,
    ref,
    ref_offsets,
    shape_size,
    tractable_layouts,
)

pycute = pytest.importorskip("pycute")

DIFF = settings(max_examples=250, deadline=None)


# ---------------------------------------------------------------------------------------
# Conversions and verdict helpers
# ---------------------------------------------------------------------------------------


def to_py(x: Any) -> Any:
    if isinstance(x, Layout):
        return pycute.Layout(x.shape, x.stride)
    if isinstance(x, tuple):
        return tuple(to_py(e) for e in x)
    return x


def run_pycute(f: Any, *args: Any) -> Any:
    """pycute's answer, or None where it fails (it signals failure with assert and others)."""
    try:
        return f(*args)
    except Exception:  # noqa: BLE001 - any failure of pycute counts as a refusal
        return None


def size_of(layout: Any) -> int:
    return shape_size(layout.shape)


def py_modes(layout: Any) -> list[Any]:
    return [layout[i] for i in range(len(layout))]


def complementable(layout: Layout) -> bool:
    """The documented complement rule: sorted by stride, each stride a multiple of the span below."""
    current = 1
    modes = sorted((d, s) for s, d in zip(leaves(layout.shape), leaves(layout.stride)) if s > 1 and d != 0)
    for d, s in modes:
        if d < 0 or d % current:
            return False
        current = s * d
    return True


def complement_is_right(a: Layout, m: int, c: Any) -> bool:
    """Ordered, disjoint from A, (filter(A), C) injective, and together at least m offsets."""
    if c is None or size_of(c) < 1:
        return False
    offs = ref_offsets(c)
    if any(x >= y for x, y in itertools.pairwise(offs)):
        return False
    if set(ref_offsets(a)) & set(offs[1:]):
        return False
    kept = filter(a)
    both = ref_offsets(make_layout(kept, Layout(c.shape, c.stride)))
    return len(set(both)) == len(both) and kept.size() * len(offs) >= m


def attempt(f: Any, *args: Any) -> Any:
    try:
        return f(*args)
    except LayoutError:
        return None


# ---------------------------------------------------------------------------------------
# composition
# ---------------------------------------------------------------------------------------


@DIFF
@given(st.one_of(adversarial_pairs(), admissible_pairs()))
def test_composition(pair):
    a, b = pair
    p = run_pycute(pycute.composition, to_py(a), to_py(b))
    n = b.size()
    want = [ref(a, ref(b, i)) for i in range(n)]
    pycute_right = p is not None and size_of(p) == n and [ref(p, i) for i in range(n)] == want
    r = attempt(composition, a, b)
    if pycute_right:
        assert r is not None, f"pycute composes {a} o {b} = {p} exactly, Argus refuses"
        assert r.shape == p.shape
        assert ref_offsets(r) == [ref(p, i) for i in range(n)]
    elif r is not None:
        assert r.size() == n and ref_offsets(r) == want


# ---------------------------------------------------------------------------------------
# complement
# ---------------------------------------------------------------------------------------


@DIFF
@given(st.one_of(layouts(max_rank=3), tractable_layouts()), st.one_of(st.none(), st.integers(1, 120)))
def test_complement(a, m):
    target = cosize(a) if m is None else m
    p = run_pycute(pycute.complement, to_py(a), target)
    r = attempt(complement, a, m)
    if complement_is_right(a, target, p):
        if r is None:
            assert not complementable(a), f"pycute complements {a} wrt {target} as {p}, Argus refuses"
            return
        assert r.size() == size_of(p) and ref_offsets(r) == ref_offsets(p)
    elif r is not None:
        assert complement_is_right(a, target, r), f"complement({a}, {target}) = {r} breaks the law"


# ---------------------------------------------------------------------------------------
# coalesce
# ---------------------------------------------------------------------------------------


@DIFF
@given(layouts(max_rank=4, negative=True))
def test_coalesce(layout):
    p = run_pycute(pycute.coalesce, to_py(layout))
    r = coalesce(layout)
    assert ref_offsets(r) == ref_offsets(layout)
    if p is not None and size_of(p) == layout.size() and ref_offsets(p) == ref_offsets(layout):
        assert (r.shape, r.stride) == (p.shape, p.stride)


# ---------------------------------------------------------------------------------------
# inverses
# ---------------------------------------------------------------------------------------


def right_inverse_law(layout: Layout, r: Any) -> bool:
    return all(0 <= ref(r, i) < layout.size() and ref(layout, ref(r, i)) == i for i in range(size_of(r)))


@DIFF
@given(layouts(max_rank=4, negative=True))
def test_right_inverse(layout):
    p = run_pycute(pycute.right_inverse, to_py(layout))
    r = right_inverse(layout)
    assert right_inverse_law(layout, r)
    if p is not None and right_inverse_law(layout, p):
        # no right inverse is larger than one whose size is not an offset of the layout
        if size_of(p) not in set(ref_offsets(layout)):
            assert r.size() == size_of(p)
            if is_injective(layout):
                assert ref_offsets(r) == ref_offsets(p)
        assert r.size() >= size_of(p)


def left_inverse_law(layout: Layout, linv: Any) -> bool:
    """Linv maps every offset of the layout to an index of its domain holding that offset."""
    n = layout.size()
    return all(0 <= ref(linv, y) < n and ref(layout, ref(linv, y)) == y for y in ref_offsets(layout))


LEFT_INPUTS = st.one_of(layouts(max_rank=3), injective_layouts(), tractable_layouts())


@DIFF
@given(LEFT_INPUTS)
def test_left_inverse(layout):
    p = run_pycute(pycute.left_inverse, to_py(layout))
    r = attempt(left_inverse, layout)
    if r is not None:
        assert left_inverse_law(layout, r)
        if p is not None and left_inverse_law(layout, p) and is_injective(layout):
            assert [ref(r, y) for y in ref_offsets(layout)] == [ref(p, y) for y in ref_offsets(layout)]


# ---------------------------------------------------------------------------------------
# divides
# ---------------------------------------------------------------------------------------


def pycute_divide_is_right(a: Layout, b: Layout, p: Any) -> bool:
    """pycute's A o (B, complement(B, size(A))) with a lawful complement, exact point by point."""
    c = run_pycute(pycute.complement, to_py(b), a.size())
    if p is None or not complement_is_right(b, a.size(), c):
        return False
    whole = pycute.make_layout(to_py(b), c)
    n = size_of(whole)
    return size_of(p) == n and all(ref(p, i) == ref(a, ref(whole, i)) for i in range(n))


DIVIDE_INPUTS = st.one_of(
    divide_pairs(), adversarial_pairs(), st.tuples(layouts(negative=True), injective_layouts())
)


@DIFF
@given(DIVIDE_INPUTS)
def test_logical_divide(pair):
    a, b = pair
    p = run_pycute(pycute.logical_divide, to_py(a), to_py(b))
    r = attempt(logical_divide, a, b)
    if pycute_divide_is_right(a, b, p):
        if r is None:
            assert not complementable(b), f"pycute divides {a} by {b} as {p}, Argus refuses"
            return
        assert ref_offsets(r) == ref_offsets(p)
        assert [m.size() for m in r] == [size_of(m) for m in py_modes(p)]
    elif r is not None:
        rest = complement(b, a.size())
        whole = make_layout(b, rest)
        assert ref_offsets(r) == [ref(a, ref(whole, i)) for i in range(whole.size())]


@DIFF
@given(st.one_of(divide_tiler_pairs(), divide_pairs()))
def test_zipped_and_tiled_divide(pair):
    a, tiler = pair
    tilers = tiler if isinstance(tiler, tuple) else (tiler,)
    modes = [a[i] for i in range(len(tilers))] if isinstance(tiler, tuple) else [a]
    pycute_right = all(
        pycute_divide_is_right(m, t, run_pycute(pycute.logical_divide, to_py(m), to_py(t)))
        for m, t in zip(modes, tilers)
    )
    if not pycute_right:
        return
    for ours, theirs in ((zipped_divide, pycute.zipped_divide), (tiled_divide, pycute.tiled_divide)):
        p = run_pycute(theirs, to_py(a), to_py(tiler))
        assert p is not None
        r = attempt(ours, a, tiler)
        if r is None:
            assert not all(complementable(t) for t in tilers), f"pycute {theirs.__name__}({a}, {tiler}) = {p}"
            continue
        assert ref_offsets(r) == ref_offsets(p)
        assert len(r) == len(p)
        assert [m.size() for m in r] == [size_of(m) for m in py_modes(p)]


# ---------------------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------------------


def pycute_product_is_right(a: Layout, b: Layout, p: Any) -> bool:
    """(A, complement(A, size(A)*cosize(B)) o B) with a lawful complement, exact point by point."""
    m = a.size() * cosize(b)
    c = run_pycute(pycute.complement, to_py(a), m)
    if p is None or len(p) != 2 or not complement_is_right(a, m, c):
        return False
    if (p[0].shape, p[0].stride) != (a.shape, a.stride) or size_of(p[1]) != b.size():
        return False
    return all(ref(p[1], j) == ref(c, ref(b, j)) for j in range(b.size()))


PRODUCT_INPUTS = st.one_of(
    product_pairs(),
    st.tuples(layouts(max_rank=2, max_shape=4, max_stride=8), layouts(max_rank=2, max_shape=4, max_stride=6)),
)


@DIFF
@given(PRODUCT_INPUTS)
def test_logical_product(pair):
    a, b = pair
    p = run_pycute(pycute.logical_product, to_py(a), to_py(b))
    r = attempt(logical_product, a, b)
    if pycute_product_is_right(a, b, p):
        if r is None:
            assert not complementable(a), f"pycute multiplies {a} by {b} as {p}, Argus refuses"
            return
        assert ref_offsets(r) == ref_offsets(p)
        assert r[0] == a and r[1].shape == p[1].shape
    elif r is not None:
        c = complement(a, a.size() * cosize(b))
        assert r[0] == a
        assert [ref(r[1], j) for j in range(b.size())] == [ref(c, ref(b, j)) for j in range(b.size())]


def _pad(layout: Layout, r: int) -> Layout:
    modes = [layout[i] for i in range(layout.rank)] if isinstance(layout.shape, tuple) else [layout]
    modes += [Layout(1, 0)] * (r - len(modes))
    return Layout(tuple(m.shape for m in modes), tuple(m.stride for m in modes))


def pycute_interleaved(a: Layout, b: Layout, block_first: bool) -> Any:
    """CuTe's blocked/raked product from pycute's logical_product (pycute has neither)."""
    r = max(a.rank, b.rank)
    pa, pb = (_pad(a, r), _pad(b, r)) if r > 1 else (a, b)
    lp = run_pycute(pycute.logical_product, to_py(pa), to_py(pb))
    if not pycute_product_is_right(pa, pb, lp):
        return None
    blocks = py_modes(lp[0]) if r > 1 else [lp[0]]
    repeats = py_modes(lp[1]) if r > 1 else [lp[1]]
    pairs = [
        pycute.make_layout(x, y) if block_first else pycute.make_layout(y, x) for x, y in zip(blocks, repeats)
    ]
    return pycute.make_layout(*pairs) if r > 1 else pairs[0]


@DIFF
@given(
    st.one_of(
        PRODUCT_INPUTS,
        st.tuples(compact_layouts(max_modes=2, max_shape=4), compact_layouts(max_modes=2, max_shape=3)),
    )
)
def test_blocked_and_raked_product(pair):
    a, b = pair
    r = max(a.rank, b.rank)
    for ours, block_first in ((blocked_product, True), (raked_product, False)):
        p = pycute_interleaved(a, b, block_first)
        got = attempt(ours, a, b)
        if p is None:
            continue
        if got is None:
            assert not complementable(a), (
                f"pycute's recipe gives {p} for {ours.__name__}({a}, {b}), Argus refuses"
            )
            continue
        assert ref_offsets(got) == ref_offsets(p)
        if r > 1:
            assert [m.size() for m in got] == [size_of(m) for m in py_modes(p)]


def test_pycute_is_the_expected_version():
    # the differential tests are written against the pycute of nvidia-cutlass 4.x
    assert hasattr(pycute, "logical_divide") and hasattr(pycute, "zipped_divide")
    assert not hasattr(pycute, "blocked_product")
