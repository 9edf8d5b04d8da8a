"""Hypothesis strategies for `argus.layout`, and plain-int reference helpers.

The reference helpers at the top evaluate layouts with nothing but Python ints, without
calling into `argus.layout`, so tests can check every answer point by point.

The pair strategies build their inputs *by construction*: a layout A is read as a
mixed-radix number (its flat shape, each digit split further into random factors, with the
last mode of A unbounded), and B's modes are cut out of disjoint runs of those digits.
Such a B never carries across A's digits, so ``A o B`` must exist and be exact.
"""

from __future__ import annotations

import itertools
from math import prod
from typing import Any

from argus.layout import ComposedLayout, Layout, Swizzle
from hypothesis import strategies as st

# ---------------------------------------------------------------------------------------
# Plain-int reference helpers
# ---------------------------------------------------------------------------------------


def leaves(t: Any) -> list[Any]:
    """The leaves of a nested tuple, left to right."""
    if isinstance(t, tuple):
        return [x for e in t for x in leaves(e)]
    return [t]


def fill(profile: Any, values: list[Any]) -> Any:
    """Rebuild `profile`'s nesting (any nested tuple) with `values` as its leaves."""
    it = iter(values)

    def go(p: Any) -> Any:
        return tuple(go(e) for e in p) if isinstance(p, tuple) else next(it)

    out = go(profile)
    rest = list(it)
    assert not rest, "more values than leaves"
    return out


def shape_size(shape: Any) -> int:
    return prod(leaves(shape))


def evaluate(shape: Any, stride: Any, i: int) -> int:
    """Offset of 1-D index `i`: colexicographic digits, the last flat mode unbounded.

    A negative index is only meaningful for a single-mode layout (a straight line).
    """
    shapes, strides = leaves(shape), leaves(stride)
    if i < 0:
        if len(shapes) != 1:
            raise ValueError("negative index on a multi-mode layout")
        return i * strides[0]
    total = 0
    for k, (s, d) in enumerate(zip(shapes, strides)):
        if k == len(shapes) - 1:
            total += i * d
        else:
            total += (i % s) * d
            i //= s
    return total


def ref(layout: Any, i: int) -> int:
    """Plain-int value of a Layout (argus or pycute: anything with .shape/.stride) at index i."""
    return evaluate(layout.shape, layout.stride, i)


def ref_offsets(layout: Any) -> list[int]:
    return [ref(layout, i) for i in range(shape_size(layout.shape))]


def is_injective(layout: Any) -> bool:
    offs = ref_offsets(layout)
    return len(set(offs)) == len(offs)


def refines(r_shape: Any, b_shape: Any) -> bool:
    """R's shape refines B's: same profile down to B's leaves, each R part of B's leaf size."""
    if isinstance(b_shape, tuple):
        return (
            isinstance(r_shape, tuple)
            and len(r_shape) == len(b_shape)
            and all(refines(r, b) for r, b in zip(r_shape, b_shape))
        )
    return shape_size(r_shape) == b_shape


def swizzle_ref(b: int, m: int, s: int, x: int) -> int:
    """Sw<B,M,S>(x) bit by bit: bit (m+k+max(0,s)) is XORed into bit (m+k-min(0,s))."""
    out = x
    for k in range(b):
        src = m + k + max(0, s)
        dst = m + k - min(0, s)
        if (x >> src) & 1:
            out ^= 1 << dst
    return out


def prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


# ---------------------------------------------------------------------------------------
# Nesting
# ---------------------------------------------------------------------------------------

LEAF = 0


def _profile(draw: Any, n: int, depth: int) -> Any:
    """A random nesting with `n` leaves, at most `depth` levels of tuples."""
    if depth == 0:
        assert n == 1
        return LEAF
    if n == 1 and draw(st.integers(0, 3)) > 0:
        return LEAF
    if depth == 1 or n == 1:
        sizes = [1] * n
    else:
        cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=n - 1)))
        bounds = [0, *cuts, n]
        sizes = [b - a for a, b in itertools.pairwise(bounds)]
    return tuple(_profile(draw, k, depth - 1) for k in sizes)


def _nest(draw: Any, modes: list[tuple[int, int]], nested: bool = True) -> Layout:
    """A Layout with these flat (shape, stride) modes, in order, under a random nesting."""
    if not modes:
        return Layout(1, 0)
    prof = _profile(draw, len(modes), 2 if nested else 1)
    return Layout(fill(prof, [s for s, _ in modes]), fill(prof, [d for _, d in modes]))


# ---------------------------------------------------------------------------------------
# Layouts
# ---------------------------------------------------------------------------------------


@st.composite
def layouts(
    draw: Any,
    max_rank: int = 3,
    max_shape: int = 6,
    max_stride: int = 16,
    negative: bool = False,
    nested: bool = True,
    min_rank: int = 1,
) -> Layout:
    """Arbitrary layouts: `max_rank` flat modes at most, stride 0 allowed, random nesting."""
    n = draw(st.integers(min_rank, max_rank))
    shapes = draw(st.lists(st.integers(1, max_shape), min_size=n, max_size=n))
    lo = -max_stride if negative else 0
    strides = draw(st.lists(st.integers(lo, max_stride), min_size=n, max_size=n))
    return _nest(draw, list(zip(shapes, strides)), nested)


@st.composite
def tractable_layouts(
    draw: Any,
    max_modes: int = 3,
    max_shape: int = 6,
    max_gap: int = 3,
    zeros: bool = True,
    nested: bool = True,
) -> Layout:
    """Sorted by stride, each shape*stride divides the next stride (built that way).

    Strides are a chain d0 = g0, d(k+1) = d(k) * s(k) * g(k+1) with gaps g >= 1; the modes
    are then permuted and nested. `zeros` may add one stride-0 mode. With ``max_gap=1``
    the result is a compact layout (a permutation of a column-major one).
    """
    n = draw(st.integers(1, max_modes))
    sizes = draw(st.lists(st.integers(1, max_shape), min_size=n, max_size=n))
    gaps = draw(st.lists(st.integers(1, max_gap), min_size=n, max_size=n))
    modes = []
    d = gaps[0]
    for k in range(n):
        modes.append((sizes[k], d))
        d *= sizes[k] * (gaps[k + 1] if k + 1 < n else 1)
    if zeros and draw(st.booleans()):
        modes.append((draw(st.integers(1, max_shape)), 0))
    modes = draw(st.permutations(modes))
    return _nest(draw, list(modes), nested)


def compact_layouts(max_modes: int = 3, max_shape: int = 6, nested: bool = True) -> st.SearchStrategy[Layout]:
    """Bijections onto [0, size): permuted column-major layouts."""
    return tractable_layouts(max_modes=max_modes, max_shape=max_shape, max_gap=1, zeros=False, nested=nested)


def injective_layouts(max_rank: int = 3) -> st.SearchStrategy[Layout]:
    """Injective layouts with non-negative strides: tractable ones and filtered random ones."""
    return st.one_of(
        tractable_layouts(max_modes=max_rank, zeros=False),
        layouts(max_rank=max_rank, max_shape=5, max_stride=12).filter(is_injective),
    )


# ---------------------------------------------------------------------------------------
# Digit structure of A and pairs built from it
# ---------------------------------------------------------------------------------------


def _split(draw: Any, s: int) -> list[int]:
    """`s` as an ordered product of random factors > 1 (every divisor can be a prefix)."""
    primes = list(draw(st.permutations(prime_factors(s))))
    if len(primes) <= 1:
        return primes
    cuts = sorted(draw(st.sets(st.integers(1, len(primes) - 1), max_size=len(primes) - 1)))
    bounds = [0, *cuts, len(primes)]
    return [prod(primes[a:b]) for a, b in itertools.pairwise(bounds)]


def _digits(draw: Any, a: Layout, extension: bool = True) -> list[int]:
    """A's flat shape refined into random factors, plus (optionally) a few radices that
    refine A's unbounded last mode beyond size(A)."""
    out: list[int] = []
    for s in leaves(a.shape):
        if s > 1:
            out += _split(draw, s)
    if extension:
        out += draw(st.lists(st.integers(2, 4), max_size=2))
    return out


def _runs(
    draw: Any, digits: list[int], max_runs: int, partial: bool, unbounded: bool
) -> list[tuple[int, int]]:
    """Disjoint runs of consecutive digits, as (size, position) modes.

    With `partial`, a run may also take the values 0..t-1 of the digit just above it (that
    digit then belongs to the run); with `unbounded`, runs may reach into the unbounded
    top of A with any size.
    """
    pos = [1]
    for r in digits:
        pos.append(pos[-1] * r)
    top = len(digits)
    runs: list[tuple[int, int]] = []
    i = 0
    while i < top and len(runs) < max_runs:
        if draw(st.booleans()):
            i += 1
            continue
        j = draw(st.integers(i + 1, top))
        n, d = prod(digits[i:j]), pos[i]
        if partial and draw(st.booleans()):
            if j < top:
                n *= draw(st.integers(1, digits[j]))
                j += 1
            elif unbounded:
                n *= draw(st.integers(1, 5))
                j = top + 1
        runs.append((n, d))
        i = j
    if unbounded and i <= top and len(runs) < max_runs and draw(st.booleans()):
        runs.append((draw(st.integers(1, 5)), pos[top]))
    return runs


MAX_B_SIZE = 2048


def _finish_b(draw: Any, runs: list[tuple[int, int]], extras: bool = True) -> Layout:
    """Permute the runs, maybe add a stride-0 or a size-1 mode, nest; keep size(B) small."""
    modes = list(runs)
    while modes and prod(n for n, _ in modes) > MAX_B_SIZE:
        modes.pop()
    if extras and draw(st.integers(0, 4)) == 0:
        modes.append((draw(st.integers(1, 3)), 0))
    if extras and draw(st.integers(0, 5)) == 0:
        modes.append((1, draw(st.integers(0, 40))))
    if not modes:
        return Layout(draw(st.integers(1, 4)), 0)
    modes = list(draw(st.permutations(modes)))
    return _nest(draw, modes)


def _admissible_b(draw: Any, a: Layout, max_b_modes: int = 3) -> Layout:
    kind = draw(st.sampled_from(["run", "runs", "inside"]))
    flat = leaves(a.shape)
    if kind == "inside" and any(s > 2 for s in flat):
        # B = n:(prefix*q) stays inside one digit of A: (n-1)*q < a_j, no divisibility needed.
        j = draw(st.sampled_from([k for k, s in enumerate(flat) if s > 2]))
        q = draw(st.integers(1, flat[j] - 1))
        n = draw(st.integers(1, (flat[j] - 1) // q + 1))
        return Layout(n, prod(flat[:j]) * q)
    digits = _digits(draw, a)
    runs = _runs(draw, digits, 1 if kind != "runs" else max_b_modes, partial=True, unbounded=True)
    return _finish_b(draw, runs)


@st.composite
def admissible_pairs(draw: Any, a_layouts: st.SearchStrategy[Layout] | None = None) -> tuple[Layout, Layout]:
    """(A, B) for which A o B must exist: B's modes are disjoint runs of A's digits."""
    a = draw(a_layouts if a_layouts is not None else layouts(negative=True))
    return a, _admissible_b(draw, a)


@st.composite
def admissible_tiler_pairs(draw: Any) -> tuple[Layout, tuple[Any, ...]]:
    """(A, tiler) with a tuple tiler: one admissible B (or None, or an int n) per mode of A."""
    a = draw(layouts(max_rank=4, negative=True, min_rank=1))
    k = draw(st.integers(1, a.rank))
    tiler: list[Any] = []
    for i in range(k):
        choice = draw(st.integers(0, 7))
        if choice == 0:
            tiler.append(None)
            continue
        b = _admissible_b(draw, a[i])
        if choice == 1 and b.shape != 1 and not isinstance(b.shape, tuple) and b.stride == 1:
            tiler.append(b.shape)  # an int n means n:1
        else:
            tiler.append(b)
    return a, tuple(tiler)


@st.composite
def adversarial_pairs(draw: Any) -> tuple[Layout, Layout]:
    """Random (A, B), B with non-negative strides: most must be refused, the rest exact."""
    a = draw(layouts(negative=True))
    b = draw(
        st.one_of(
            layouts(max_rank=3, max_shape=6, max_stride=12),
            tractable_layouts(zeros=True),
        )
    )
    return a, b


def _divide_tiler(draw: Any, a: Layout, max_modes: int = 3) -> Layout:
    """An injective tiler made of whole digits of A (or of its unbounded extension)."""
    digits = _digits(draw, a)
    runs = _runs(draw, digits, max_modes, partial=False, unbounded=False)
    return _finish_b(draw, runs, extras=draw(st.integers(0, 5)) == 0)


@st.composite
def divide_pairs(draw: Any, a_layouts: st.SearchStrategy[Layout] | None = None) -> tuple[Layout, Layout]:
    """(A, B) with B injective and ``A o (B, complement(B, size(A)))`` existing."""
    a = draw(a_layouts if a_layouts is not None else layouts(negative=True))
    return a, _divide_tiler(draw, a)


@st.composite
def divide_tiler_pairs(draw: Any) -> tuple[Layout, tuple[Any, ...]]:
    """(A, tuple tiler) for the divides, one divide tiler per leading mode of A."""
    a = draw(layouts(max_rank=4, negative=True, min_rank=1))
    k = draw(st.integers(1, a.rank))
    return a, tuple(_divide_tiler(draw, a[i], max_modes=2) for i in range(k))


@st.composite
def product_pairs(draw: Any, compact: bool = False) -> tuple[Layout, Layout]:
    """(A, B) for products: A tractable (compact if asked), B injective and small."""
    a = draw(
        compact_layouts(max_modes=2, max_shape=4)
        if compact
        else tractable_layouts(max_modes=2, max_shape=4, zeros=False)
    )
    b = draw(
        st.one_of(
            tractable_layouts(max_modes=2, max_shape=4, max_gap=2, zeros=False),
            layouts(max_rank=2, max_shape=4, max_stride=6).filter(is_injective),
        )
    )
    return a, b


# ---------------------------------------------------------------------------------------
# Swizzles and composed layouts
# ---------------------------------------------------------------------------------------


@st.composite
def swizzles(draw: Any, max_bits: int = 3, max_base: int = 3, max_shift: int = 5) -> Swizzle:
    """Sw<B,M,S> with |S| >= B; S of either sign (S = 0 only with B = 0)."""
    b = draw(st.integers(0, max_bits))
    m = draw(st.integers(0, max_base))
    mag = draw(st.integers(b, max(b, max_shift)))
    s = mag if draw(st.booleans()) else -mag
    return Swizzle(b, m, s)


@st.composite
def composed_layouts(draw: Any) -> ComposedLayout:
    """``outer o offset o inner`` with a swizzle or a non-negative layout outside."""
    outer = draw(st.one_of(swizzles(), layouts(max_stride=8)))
    offset = draw(st.integers(0, 64))
    inner = draw(layouts(max_stride=8))
    return ComposedLayout(outer, offset, inner)


# ---------------------------------------------------------------------------------------
# Pairs whose composition continues past B's size like A does
# ---------------------------------------------------------------------------------------


def top_position(a: Layout) -> int:
    """Where A's last flat mode starts: A(u + top·v) == A(u) + v·(last stride) for u < top, any v."""
    return shape_size(a.shape) // leaves(a.shape)[-1]


@st.composite
def continuing_pairs(draw: Any) -> tuple[Layout, Layout]:
    """(A, B) with B's last flat mode stepping along A's last (unbounded) mode.

    B's other modes are disjoint runs of A's lower digits, plus maybe a stride-0 mode or a
    size-1 mode of any stride; its last mode is ``s:top·m``, often of size 1. Past its size,
    B continues along that last mode, where A is a straight line, so A∘B must continue past
    its size exactly as ``A(B(i))`` does.
    """
    a = draw(layouts(negative=True))
    low: list[int] = []
    for s in leaves(a.shape)[:-1]:
        if s > 1:
            low += _split(draw, s)
    runs = _runs(draw, low, 2, partial=True, unbounded=False)
    if draw(st.integers(0, 3)) == 0:
        runs.append((draw(st.integers(1, 3)), 0))
    if draw(st.integers(0, 3)) == 0:
        runs.append((1, draw(st.integers(0, 40))))
    modes = list(draw(st.permutations(runs)))
    last_size = draw(st.sampled_from([1, 1, 2, 3]))
    modes.append((last_size, top_position(a) * draw(st.integers(0, 3))))
    return a, _nest(draw, modes)
