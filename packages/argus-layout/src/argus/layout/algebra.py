"""The core laws of the algebra: coalesce, filter, composition, complement and the inverses.

Each operation either returns the mathematical answer or raises `LayoutError` naming the
condition that failed. Admissibility is decided by exact conditions (two-way divisibility and
"no carry across the modes of A"); where those are inconclusive and the domain is small, the
candidate is checked point by point before it is returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from math import gcd
from typing import Any

import numpy as np

from .basis import ScaledBasis, has_basis, require_integer_strides
from .errors import LayoutError
from .inttuple import as_int_tuple, ceil_div, is_int, is_tuple, product, unflatten
from .layout import Layout
from .limits import check_nesting
from .swizzle import ComposedLayout, Swizzle

__all__ = [
    "coalesce",
    "complement",
    "composition",
    "downcast",
    "filter",
    "filter_zeros",
    "left_inverse",
    "max_common_layout",
    "max_common_vector",
    "right_inverse",
    "same_function",
    "upcast",
]

Mode = tuple[int, int]

#: Largest domain the composition fallback checks point by point.
EXHAUSTIVE_CHECK_LIMIT = 1 << 16


def _from_modes(modes: Sequence[Mode]) -> Layout:
    if not modes:
        return Layout._make(1, 0)
    if len(modes) == 1:
        return Layout._make(modes[0][0], modes[0][1])
    return Layout._make(tuple(s for s, _ in modes), tuple(d for _, d in modes))


def _merge_modes(modes: Iterable[Mode]) -> list[Mode]:
    """Drop size-1 modes and merge neighbours where ``d1 == s0 * d0``."""
    out: list[Mode] = []
    for s, d in modes:
        if s == 1:
            continue
        if out and d == out[-1][0] * out[-1][1]:
            out[-1] = (out[-1][0] * s, out[-1][1])
        else:
            out.append((s, d))
    return out


def as_layout(x: Any, op: str) -> Layout:
    """A layout operand: a `Layout`, or an int ``n`` meaning ``n:1``."""
    if isinstance(x, Layout):
        return x
    if is_int(x):
        return Layout(x, 1)
    raise LayoutError(op, f"expected a Layout or an int, got {type(x).__name__} {x!r}", x)


# ---- coalesce and filter -----------------------------------------------------------------


def coalesce(layout: Layout, profile: Any = None) -> Layout:
    """The canonical flat form: same function on the domain, fewest modes.

    With a tuple `profile`, each of the first ``len(profile)`` modes is coalesced on its own
    (recursively by the profile's entries); remaining modes are kept unchanged.
    """
    layout = as_layout(layout, "coalesce")
    if profile is None or is_int(profile):
        return _from_modes(_merge_modes(layout.modes()))
    if not is_tuple(profile):
        raise LayoutError("coalesce", "profile must be an int-tuple", layout, profile)
    check_nesting(profile, "coalesce", "profile")
    if len(profile) > layout.rank:
        raise LayoutError("coalesce", f"profile rank {len(profile)} exceeds layout rank {layout.rank}", layout, profile)
    parts = [coalesce(layout[i], p) for i, p in enumerate(profile)]
    parts += [layout[i] for i in range(len(profile), layout.rank)]
    return Layout._make(tuple(p.shape for p in parts), tuple(p.stride for p in parts))


def same_function(a: Layout, b: Layout) -> bool:
    """True when `a` and `b` have the same size and agree at every index of their domain."""
    a, b = as_layout(a, "same_function"), as_layout(b, "same_function")
    return a.size() == b.size() and coalesce(a) == coalesce(b)


def filter_zeros(layout: Layout) -> Layout:
    """Replace the shape of every stride-0 mode by 1."""
    layout = as_layout(layout, "filter_zeros")
    return Layout._make(
        unflatten(tuple(1 if d == 0 else s for s, d in layout.modes()), layout.shape), layout.stride
    )


def filter(layout: Layout) -> Layout:
    """Coalesce after dropping stride-0 and size-1 modes: the layout's image, as a layout."""
    return coalesce(filter_zeros(as_layout(layout, "filter")))


# ---- composition -------------------------------------------------------------------------


def _extension_modes(a: Layout) -> list[Mode]:
    """A's coalesced modes, keeping the stride with which its last mode extends past size(A).

    A is a function on all naturals: indices past its size continue along the last mode.
    Plain coalescing may drop a trailing size-1 mode and with it that extension.
    """
    flat = a.modes()
    if not flat:  # the empty layout (): one element at offset 0, continuing nowhere
        return [(1, 0)]
    merged = _merge_modes(flat)
    last_shape, last_stride = flat[-1]
    if last_shape == 1:
        if not merged:
            return [(1, last_stride)]
        if last_stride != merged[-1][0] * merged[-1][1]:
            merged.append((1, last_stride))
    return merged or [(1, 0)]


def line_stride(a: Layout) -> Any:
    """The c with ``a(i) == i·c`` for every natural i, when A is such a straight line, else None.

    Only a straight line is defined below 0 (as ``i·c`` there too): composition reads a single-mode
    A that way. Decided on A's modes with its continuation (a trailing size-1 mode may break the
    line past A's size, which plain coalescing would hide).
    """
    modes = _extension_modes(a)
    return modes[0][1] if len(modes) == 1 else None


def _compose_mode(a_modes: list[Mode], s: int, d: int, a: Layout, b: Layout) -> list[Mode]:
    """A ∘ (s:d) for A given by its extension modes; the last A mode is unbounded.

    The divisibility walk answers for any size; where it refuses and the mode is small, the
    offsets A(j·d) are computed and fitted exactly, so only a truly absent layout is refused.
    """
    if d == 0:
        return [(s, 0)]
    if s == 1:
        return [(1, _next_step(a_modes, d, a, b))]
    if d < 0:
        if len(a_modes) == 1:
            return [(s, a_modes[0][1] * d)]
        raise LayoutError(
            "composition", f"B has negative stride {d}, so it reaches negative indices of A", a, b
        )
    try:
        return _walk_mode(a_modes, s, d, a, b)
    except LayoutError as refusal:
        fitted = _fit_mode(a, s, d)
        if fitted is None:
            raise LayoutError(
                "composition",
                f"{refusal.reason}" + ("; no layout reproduces A(B(i)) on this mode (checked every i)"
                                       if s <= EXHAUSTIVE_CHECK_LIMIT and not has_basis(a) else ""),
                a,
                b,
            ) from None
        return fitted


def _next_step(a_modes: list[Mode], d: int, a: Layout, b: Layout) -> Any:
    """The stride of ``A ∘ (1:d)``: A's offset at index d, where the mode's next step lands.

    On its domain a size-1 mode is offset 0 whatever its stride, but past its size (a later
    composition, a divide's rest mode) it continues with its stride, and A∘B must continue as
    A does: a longer mode ``n:d`` starts with stride A(d) too.
    """
    if d < 0 and len(a_modes) > 1:
        raise LayoutError(
            "composition",
            f"B has a size-1 mode with stride {d}: past its size it continues to negative indices "
            "of A, where a layout of several modes is not defined",
            a,
            b,
        )
    terms = []
    position = 1
    for k, (size_k, stride_k) in enumerate(a_modes):
        digit = d // position if k == len(a_modes) - 1 else d // position % size_k
        if digit and stride_k != 0:
            terms.append(stride_k * digit)
        position *= size_k
    return _single_stride(terms, d, a, b)


def _single_stride(terms: list[Any], d: int, a: Layout, b: Layout) -> Any:
    """The sum of non-zero stride terms as one stride: an int, or one basis element."""
    if not terms:
        return 0
    if all(is_int(t) for t in terms):
        return sum(terms)
    modes = {t.mode for t in terms if isinstance(t, ScaledBasis)}
    if len(modes) == 1 and all(isinstance(t, ScaledBasis) for t in terms):
        scale = sum(t.scale for t in terms)
        return ScaledBasis(scale, modes.pop()) if scale else 0
    raise LayoutError(
        "composition",
        f"B has a size-1 mode with stride {d}: past its size it continues to A({d}), which steps "
        "along more than one coordinate and is no single stride",
        a,
        b,
    )


def _fit_mode(a: Layout, s: int, d: int) -> list[Mode] | None:
    """The flat layout of size s whose offsets are A(j·d), j < s, if one exists (small s only)."""
    if s > EXHAUSTIVE_CHECK_LIMIT or has_basis(a):
        return None
    try:
        values = a(np.arange(s, dtype=np.int64) * d)
    except LayoutError:
        return None
    return fit_modes(values)


def fit_modes(values: np.ndarray) -> list[Mode] | None:
    """The coalesced modes of the layout whose offsets, in index order, are `values`, or None.

    A coalesced layout is determined by its function: each mode's stride is the offset at the
    product of the sizes before it, and its size is how long that stride keeps stepping.
    """
    n = len(values)
    if n == 0 or values[0] != 0:
        return None
    modes: list[Mode] = []
    p = 1
    while p < n:
        d = int(values[p])
        f = 2
        while p * f < n and values[p * f] == f * d:
            f += 1
        if n % (p * f):
            return None
        modes.append((f, d))
        p *= f
    candidate = _from_modes(modes)
    return modes if np.array_equal(candidate.offsets(), values) else None


def _walk_mode(a_modes: list[Mode], s: int, d: int, a: Layout, b: Layout) -> list[Mode]:
    """The divisibility walk of (s:d) through A's modes (d > 0); raises where it cannot decide."""
    last = len(a_modes) - 1
    r, i = d, 0
    while i < last:
        size_i, stride_i = a_modes[i]
        if r % size_i == 0:
            r //= size_i
            i += 1
        elif size_i % r == 0:
            break
        elif (s - 1) * r < size_i:  # every index of B stays inside this one mode of A
            return [(s, stride_i * r)]
        else:
            raise LayoutError(
                "composition",
                f"stride divisibility fails: B's stride reaches A's mode {i} of size {size_i} "
                f"with step {r}, and neither divides the other",
                a,
                b,
            )
    result: list[Mode] = []
    rest = s
    while True:
        size_i, stride_i = a_modes[i]
        if i == last:
            result.append((rest, stride_i * r))
            return result
        m = size_i // r
        if rest <= m:
            result.append((rest, stride_i * r))
            return result
        if rest % m:
            raise LayoutError(
                "composition",
                f"shape divisibility fails: {rest} remaining elements of B do not split evenly "
                f"over {m} elements of A's mode {i}",
                a,
                b,
            )
        result.append((m, stride_i * r))
        rest //= m
        r = 1
        i += 1


def _max_residue(s: int, d: int, p: int) -> int:
    """max over j < s of (j*d) mod p, for d >= 0, p >= 1."""
    if d % p == 0:
        return 0
    if (s - 1) * d < p:
        return (s - 1) * d
    if p % d == 0:
        return p - d
    g = gcd(d, p)
    if s >= p // g or s > EXHAUSTIVE_CHECK_LIMIT:
        return p - g  # exact when the residues cycle, an upper bound otherwise
    return max(j * d % p for j in range(s))


def _carry_free(a_modes: Sequence[Mode], b_modes: Sequence[Mode]) -> bool:
    """True when summing the B modes' indices never carries across a boundary of A's modes.

    Then A is additive on those sums and composing mode by mode is exact.
    """
    active = [(s, d) for s, d in b_modes if s > 1 and d != 0]
    if len(active) < 2:
        return True
    boundary = 1
    for size_i, _ in a_modes[:-1]:
        boundary *= size_i
        if sum(_max_residue(s, d, boundary) for s, d in active) >= boundary:
            return False
    return True


def _compose_layout(a: Layout, b: Layout) -> Layout:
    require_integer_strides(b, "composition", a, b)
    a_modes = _extension_modes(a)
    b_modes = b.modes()
    parts = [_compose_mode(a_modes, s, d, a, b) for s, d in b_modes]
    if not isinstance(b.shape, tuple):
        return _from_modes(parts[0])
    shape = unflatten(tuple(p[0][0] if len(p) == 1 else tuple(m[0] for m in p) for p in parts), b.shape)
    stride = unflatten(tuple(p[0][1] if len(p) == 1 else tuple(m[1] for m in p) for p in parts), b.shape)
    result = Layout._make(shape, stride)
    if not _carry_free(a_modes, b_modes):
        _check_pointwise(result, a, b)
    return result


def _check_pointwise(result: Layout, a: Layout, b: Layout) -> None:
    n = b.size()
    if n > EXHAUSTIVE_CHECK_LIMIT:
        raise LayoutError(
            "composition",
            "B's modes can carry across A's mode boundaries (A is not additive on B's image) "
            f"and the domain ({n} points) is too large to check point by point",
            a,
            b,
        )
    b_off = b.offsets()
    if int(b_off.min()) < 0:
        raise LayoutError("composition", "B reaches negative indices of A", a, b)
    got, want = result.offsets(), a(b_off)
    bad = np.flatnonzero(_differs(got, want, n))
    if bad.size:
        i = int(bad[0])
        raise LayoutError(
            "composition",
            "no layout equals A∘B: B's modes carry across A's mode boundaries "
            f"(at index {i}: B gives {int(b_off[i])}, A of that is {_at(want, i)}, "
            f"composing mode by mode gives {_at(got, i)})",
            a,
            b,
        )


def _differs(x: Any, y: Any, n: int) -> np.ndarray:
    """Where two evaluations over n points differ; coordinates (tuples of arrays) compare per entry."""
    if isinstance(x, tuple) and isinstance(y, tuple):
        width = max(len(x), len(y))  # a coordinate entry that no stride reaches is 0
        out = np.zeros(n, dtype=bool)
        for xi, yi in zip(x + (0,) * (width - len(x)), y + (0,) * (width - len(y))):
            out |= _differs(xi, yi, n)
        return out
    if isinstance(x, tuple) or isinstance(y, tuple):
        return np.ones(n, dtype=bool)
    return np.broadcast_to(np.asarray(x) != np.asarray(y), (n,))


def _at(values: Any, i: int) -> Any:
    """Entry i of an evaluation over many points (an array, or a coordinate of arrays)."""
    if isinstance(values, tuple):
        return tuple(_at(v, i) for v in values)
    return int(values[i]) if np.ndim(values) else int(values)


def composition(a: Any, b: Any) -> Any:
    """``R = A ∘ B`` with ``R(c) == A(B(c))`` for every coordinate c of B, and R shaped like B.

    B may be a Layout, an int n (meaning n:1), None (keep A), or a tuple tiler composed
    mode by mode with A's modes. A may be a Layout, a ComposedLayout or a Swizzle.
    """
    if b is None:
        return a
    if isinstance(a, ComposedLayout):
        return a.with_inner(composition(a.inner, b)).check_defined("composition", a, b)
    if isinstance(a, Swizzle):
        return ComposedLayout(a, 0, as_layout(b, "composition")).check_defined("composition", a, b)
    if not isinstance(a, Layout):
        raise LayoutError("composition", f"A must be a Layout, got {type(a).__name__}", a, b)
    if is_tuple(b):
        check_nesting(b, "composition", "tiler")
        if len(b) > a.rank:
            raise LayoutError("composition", f"tiler rank {len(b)} exceeds the layout rank {a.rank}", a, b)
        parts = [composition(a[i], t) for i, t in enumerate(b)] + [a[i] for i in range(len(b), a.rank)]
        return Layout._make(tuple(p.shape for p in parts), tuple(p.stride for p in parts))
    return _compose_layout(a, as_layout(b, "composition"))


# ---- complement ----------------------------------------------------------------------------


def _cotarget_size(cotarget: Any, layout: Layout) -> int:
    if cotarget is None:
        return layout.cosize()
    if type(cotarget) is int and cotarget >= 1:
        return cotarget
    target = as_int_tuple(cotarget, "complement", "cotarget")
    n = product(target)
    if n < 1:
        raise LayoutError("complement", f"cotarget must be positive, got {cotarget}", layout, cotarget)
    return n


def complement(layout: Any, cotarget: Any = None) -> Layout:
    """The ordered layout R that fills what `layout` leaves free up to `cotarget`.

    ``(layout, R)`` is injective, R's strides increase, and together they reach
    ``size(layout) * size(R) >= cotarget`` offsets. Defined only when, sorted by stride,
    each stride is a multiple of the span below it; otherwise no layout fills the gaps.
    """
    layout = as_layout(layout, "complement")
    require_integer_strides(layout, "complement", layout)
    target = _cotarget_size(cotarget, layout)
    modes = sorted((d, s) for s, d in layout.modes() if s > 1 and d != 0)
    if any(d < 0 for d, _ in modes):
        raise LayoutError("complement", "negative strides are not complementable", layout, target)
    current = 1
    out: list[Mode] = []
    for d, s in modes:
        if d % current:
            reason = "modes overlap" if d < current else "the gap below it is not a whole number of its span"
            raise LayoutError(
                "complement",
                f"not complementable: stride {d} is not a multiple of {current}, the span of the "
                f"smaller-stride modes ({reason})",
                layout,
                target,
            )
        out.append((d // current, current))
        current = s * d
    out.append((ceil_div(target, current), current))
    merged = _merge_modes(out)
    # When A already fills the cotarget, R is one element; past its size it continues with the
    # next whole span of A (a divide's rest mode steps to the next tile), not with stride 0.
    return _from_modes(merged) if merged else Layout._make(1, current)


# ---- inverses ------------------------------------------------------------------------------


def _modes_with_index_strides(layout: Layout) -> list[tuple[int, int, int]]:
    """(stride, shape, index stride) of each coalesced mode with a non-zero stride."""
    require_integer_strides(layout, "inverse", layout)
    out = []
    index_stride = 1
    for s, d in _merge_modes(layout.modes()):
        if d != 0:
            out.append((d, s, index_stride))
        index_stride *= s
    return out


def right_inverse(layout: Any) -> Layout:
    """The largest R with ``layout(R(i)) == i`` for all i < size(R).

    Stride-0 and negative-stride modes never reach 0, 1, 2, ... and are skipped.
    """
    layout = as_layout(layout, "right_inverse")
    out: list[Mode] = []
    current = 1
    for d, s, r in sorted(_modes_with_index_strides(layout)):
        if d != current:
            if d > 0:
                break
            continue
        out.append((s, r))
        current = s * d
    return _from_modes(_merge_modes(out))


def left_inverse(layout: Any) -> Layout:
    """An L with ``layout(L(layout(i))) == layout(i)`` for every index i.

    Stride-0 modes carry no information and are skipped. The image of the remaining modes,
    sorted by stride, must decode uniquely: each stride is a multiple of the previous one and
    at least the previous mode's span.
    """
    layout = as_layout(layout, "left_inverse")
    modes = sorted(_modes_with_index_strides(layout))
    if any(d < 0 for d, _, _ in modes):
        raise LayoutError("left_inverse", "negative strides are not supported", layout)
    if not modes:
        return Layout(1, 0)
    out: list[Mode] = []
    if modes[0][0] > 1:
        out.append((modes[0][0], 0))
    for (d, s, r), (d_next, _, _) in zip(modes, modes[1:]):
        if d_next % d or d_next < s * d:
            why = "modes overlap (not injective)" if d_next < s * d else f"{d_next} is not a multiple of {d}"
            raise LayoutError("left_inverse", f"no layout decodes the image: {why}", layout)
        out.append((d_next // d, r))
    out.append((modes[-1][1], modes[-1][2]))
    return coalesce(_from_modes(out))


# ---- common vectors ------------------------------------------------------------------------


def max_common_layout(a: Layout, b: Layout) -> Layout:
    """The largest layout C of indices that a and b both map contiguously: a(C(i)) == b(C(i)) == i.

    C's indices come from the right inverse of the smaller layout, so they are indices of both
    (the larger one, read through its inverse, would reach past the end of the smaller one).
    """
    a, b = as_layout(a, "max_common_layout"), as_layout(b, "max_common_layout")
    if a.size() < b.size():
        a, b = b, a
    inv_b = right_inverse(b)
    modes = coalesce(inv_b).modes()
    for k in range(len(modes), 0, -1):
        prefix = _from_modes(modes[:k])
        try:
            common = coalesce(composition(a, prefix))
        except LayoutError:
            continue
        first_shape, first_stride = common.modes()[0]
        if first_stride == 1 and first_shape > 1:
            return composition(prefix, Layout(first_shape, 1))
        return Layout(1, 0)
    return Layout(1, 0)


def max_common_vector(a: Layout, b: Layout) -> int:
    """How many elements, starting at offset 0, are contiguous in both a and b."""
    return max_common_layout(a, b).size()


# ---- upcast / downcast ---------------------------------------------------------------------


def upcast(layout: Any, n: int) -> Any:
    """View the same memory as elements `n` times wider (e.g. bf16 as 16-byte vectors).

    Each stride-±1 mode must cover whole vectors; other strides must divide or be divided by n.
    Refused: a negative stride shorter than a vector (from offset 0 such a mode runs on into the
    vector before [0, n), so it never holds whole vectors), and two modes stepping inside a
    vector (each spans whole vectors, their sum reaches one more).
    """
    if isinstance(layout, ComposedLayout):
        return _recast_composed(layout, n, "upcast")
    layout = as_layout(layout, "upcast")
    if not is_int(n) or n < 1:
        raise LayoutError("upcast", f"factor must be a positive int, got {n!r}", layout, n)
    require_integer_strides(layout, "upcast", layout)
    inside = [f"{s}:{d}" for s, d in layout.modes() if s > 1 and 0 < abs(d) < n]
    if len(inside) > 1:
        raise LayoutError(
            "upcast", f"modes {' and '.join(inside)} both step inside a {n}-element vector: each spans whole "
            "vectors alone, and added together they reach a vector neither of them holds", layout, n,
        )

    def one(s: int, d: int) -> Mode:
        if d == 0:
            return (s, 0)
        ad = abs(d)
        if ad % n and n % ad:
            raise LayoutError("upcast", f"stride {d} and factor {n}: neither divides the other", layout, n)
        if n % ad == 0 and (s * ad) % n:
            raise LayoutError(
                "upcast", f"mode {s}:{d} spans {s * ad} elements, not a whole number of {n}-element vectors",
                layout, n,
            )
        if d < 0 and ad < n and s > 1:
            raise LayoutError(
                "upcast", f"mode {s}:{d} has stride {d}: from offset 0 it runs backwards into the {n}-element "
                "vector before the first, so its elements are never whole vectors",
                layout, n,
            )
        sign = 1 if d > 0 else -1
        return (ceil_div(s, ceil_div(n, ad)), sign * ceil_div(ad, n))

    return _map_modes(layout, one)


def downcast(layout: Any, n: int) -> Any:
    """View the same memory as elements `n` times narrower.

    The n narrow elements of each wide element join one mode of stride 1 (the first of size
    > 1; else a size-1 mode, whose stride never mattered, becomes one), which grows n-fold;
    every other stride is scaled by n. A mode of stride -1 runs backwards while the narrow
    elements of an element run forwards, so it is scaled like the others. A layout with neither
    has nowhere to put them and is refused.
    """
    if isinstance(layout, ComposedLayout):
        return _recast_composed(layout, n, "downcast")
    layout = as_layout(layout, "downcast")
    if not is_int(n) or n < 1:
        raise LayoutError("downcast", f"factor must be a positive int, got {n!r}", layout, n)
    require_integer_strides(layout, "downcast", layout, n)
    modes = layout.modes()
    unit = [k for k, (s, d) in enumerate(modes) if d == 1 and s > 1]
    trivial = [k for k, (s, _) in enumerate(modes) if s == 1]
    if n > 1 and not unit and not trivial:
        backwards = any(d == -1 and s > 1 for s, d in modes)
        raise LayoutError(
            "downcast", "no mode has stride 1, so the narrow elements inside each element would not be "
            "addressed" + (" (the mode of stride -1 runs backwards, and they run forwards)" if backwards else ""),
            layout, n,
        )
    grow = unit[0] if unit else trivial[0] if trivial else -1
    pairs = [(s * n, 1) if k == grow else (s, d * n) for k, (s, d) in enumerate(modes)]
    return Layout._make(
        unflatten(tuple(s for s, _ in pairs), layout.shape), unflatten(tuple(d for _, d in pairs), layout.shape)
    )


def _recast_composed(layout: ComposedLayout, n: int, op: str) -> ComposedLayout:
    """Up/downcast ``Sw<B,M,S> o off o L``: a swizzle leaves the low M bits alone, so viewing
    elements 2**k times wider (narrower) moves its base to M - k (M + k)."""
    if not isinstance(layout.outer, Swizzle):
        raise LayoutError(op, "only swizzle-composed layouts can be recast", layout, n)
    if not is_int(n) or n < 1 or n & (n - 1):
        raise LayoutError(op, f"a swizzled layout recasts by a power of two, got {n!r}", layout, n)
    k = n.bit_length() - 1
    sw = layout.outer
    if op == "upcast":
        if k > sw.base:
            raise LayoutError(op, f"factor {n} is wider than the {2**sw.base}-element chunks the swizzle keeps", layout, n)
        if layout.offset % n:
            raise LayoutError(op, f"offset {layout.offset} is not a multiple of {n}", layout, n)
        return ComposedLayout(Swizzle(sw.bits, sw.base - k, sw.shift), layout.offset // n, upcast(layout.inner, n))
    return ComposedLayout(Swizzle(sw.bits, sw.base + k, sw.shift), layout.offset * n, downcast(layout.inner, n))


def _map_modes(layout: Layout, f: Any) -> Layout:
    require_integer_strides(layout, "upcast", layout)
    pairs = [f(s, d) for s, d in layout.modes()]
    return Layout._make(
        unflatten(tuple(s for s, _ in pairs), layout.shape), unflatten(tuple(d for _, d in pairs), layout.shape)
    )
