"""The layout checker: prove or refute properties of CuTe layouts, with counterexamples.

Each check returns a `Result` and says "proved" only with a proof of the whole claim, about
the whole function (a swizzle or an outer layout included). Up to `limit` points
(``ENUMERATION_LIMIT`` unless a caller lowers it) the layout is enumerated with numpy: exact,
and it yields the first counterexample. Beyond it, a structural argument is used where one
covers the whole function: coalesced forms are canonical, mixed-radix strides are
injective, a swizzle and an offset are one-to-one, and a layout composed after another is
their composition. Otherwise the answer is `unknown`; a violation found without enumerating
still comes with a checked counterexample where one is cheap to name.
"""

from __future__ import annotations

from math import prod
from typing import Any

import numpy as np

from argus.layout import ComposedLayout, Layout, LayoutError, Swizzle, coalesce, idx2crd
from argus.layout import composition as compose
from argus.layout.algebra import fit_modes, line_stride
from argus.layout.basis import require_integer_strides

from .results import Result, proved, unknown, violated

#: Largest domain the checker enumerates point by point.
ENUMERATION_LIMIT = 1 << 22

INT64_MAX = (1 << 63) - 1

AnyLayout = Layout | ComposedLayout

Mode = tuple[int, int]


# ---- inputs ------------------------------------------------------------------------------


def _checked(x: Any, op: str) -> AnyLayout:
    """A layout the checker can reason about: integer strides, offsets defined everywhere."""
    if isinstance(x, Swizzle):
        raise LayoutError(
            op, f"a bare swizzle is a function on all offsets, not a layout; compose it with one, "
            f"e.g. '{x} o 0 o {x.size()}:1'", x)
    if not isinstance(x, (Layout, ComposedLayout)):
        raise LayoutError(op, f"expected a Layout or a ComposedLayout, got {type(x).__name__}", x)
    for part in _parts(x):
        require_integer_strides(part, op, x)
    if isinstance(x, ComposedLayout):
        x.check_defined(op, x)
    return x


def _parts(x: AnyLayout) -> list[Layout]:
    if isinstance(x, Layout):
        return [x]
    return [x.inner] + ([x.outer] if isinstance(x.outer, Layout) else [])


def _reach(x: AnyLayout) -> int:
    """A bound on |offset| over x's domain, for every value computed on the way."""
    if isinstance(x, Layout):
        lo, hi = x.codomain()
        return max(-lo, hi)
    lo, hi = x.inner.codomain()
    top = x.offset + hi
    reach = max(-lo, hi, abs(x.offset), top)
    if isinstance(x.outer, Swizzle):
        return reach  # a swizzle flips bits below 2**63 only, so what is below stays below
    outer_lo, outer_hi = _bounds_on(x.outer, top)
    return max(reach, -outer_lo, outer_hi)


def _bounds_on(layout: Layout, top: int) -> tuple[int, int]:
    """Bounds on the offsets of `layout` at the indices 0..top (its last mode unbounded)."""
    lo = hi = 0
    position = 1
    modes = layout.modes()
    for k, (s, d) in enumerate(modes):
        digit = top // position if k == len(modes) - 1 else min(s - 1, top // position)
        lo, hi = (lo + digit * d, hi) if d < 0 else (lo, hi + digit * d)
        position *= s
    return lo, hi


def _enumerable(x: AnyLayout, limit: int) -> bool:
    return x.size() <= limit and _reach(x) <= INT64_MAX


def _offsets(x: AnyLayout) -> np.ndarray:
    return np.asarray(x.offsets(), dtype=np.int64)


def _coordinate(layout: AnyLayout, index: int) -> Any:
    return idx2crd(int(index), layout.shape)


def _as_plain(x: AnyLayout) -> Layout | None:
    """x as one Layout with the same function on x's domain, where the algebra gives it exactly."""
    if isinstance(x, Layout):
        return x
    if isinstance(x.outer, Layout) and x.offset == 0:
        try:
            return compose(x.outer, x.inner)  # type: ignore[no-any-return]
        except LayoutError:
            return None
    return None


# ---- reading a flat layout ---------------------------------------------------------------


def _flat_modes(layout: Layout) -> list[tuple[int, int, int]]:
    """(size, stride, index step) of each coalesced mode of size > 1, in index order."""
    out, step = [], 1
    for s, d in coalesce(layout).modes():
        if s > 1:
            out.append((s, d, step))
            step *= s
    return out


def _collision(layout: Layout) -> tuple[int, int] | None:
    """Two indices with the same offset, where the structure names them: a mode of stride 0
    (indices 0 and that mode's step), or, with non-negative strides sorted, a mode whose stride
    d the compact smaller modes (which reach exactly [0, expected)) already reach."""
    modes = _flat_modes(layout)
    for s, d, step in modes:
        if d == 0:
            return 0, step
    if any(d < 0 for _, d, _ in modes):
        return None
    ordered = sorted(modes, key=lambda m: m[1])
    expected = 1
    for k, (s, d, step) in enumerate(ordered):
        if d < expected:
            return _index_of(ordered[:k], d), step
        if d > expected:
            return None
        expected *= s
    return None


def _mixed_radix(layout: Layout) -> bool:
    """Sorted by |stride|, each stride exceeds the span of the smaller modes: then no two
    coordinates share an offset (the largest differing digit decides)."""
    span = 0
    for s, d, _ in sorted(_flat_modes(layout), key=lambda m: abs(m[1])):
        if abs(d) <= span:
            return False
        span += (s - 1) * abs(d)
    return True


# ---- injective -----------------------------------------------------------------------------


def injective(layout: AnyLayout, *, limit: int = ENUMERATION_LIMIT) -> Result:
    """No two coordinates of the domain share an offset."""
    layout = _checked(layout, "injective")
    claim = f"{layout} is injective"
    if _enumerable(layout, limit):
        offsets = _offsets(layout)
        order = np.argsort(offsets, kind="stable")
        same = np.flatnonzero(offsets[order][1:] == offsets[order][:-1])
        if same.size:
            return _shared(claim, layout, int(order[same[0]]), int(order[same[0] + 1]))
        return proved(claim, f"all {layout.size()} offsets are distinct (enumerated)")
    if isinstance(layout, ComposedLayout) and isinstance(layout.outer, Swizzle):
        core = layout.inner
        why = "the offset and the swizzle are one-to-one, so it is injective exactly when its inner layout is; "
    else:
        core, why = _as_plain(layout), ""
    if core is None:
        pair = _collision(layout.inner)  # type: ignore[union-attr]
        if pair is not None:
            return _shared(claim, layout, *pair)
        return unknown(claim, f"{layout.size()} points exceed the enumeration limit, and the outer layout "
                              "is not shown one-to-one on the inner layout's offsets")
    pair = _collision(core)
    if pair is not None:
        return _shared(claim, layout, *pair)
    if _mixed_radix(core):
        return proved(claim, why + "sorted by |stride|, each stride exceeds the span of the smaller modes "
                                   "(a mixed radix)")
    return unknown(claim, f"{layout.size()} points exceed the enumeration limit and the strides do not nest")


def _shared(claim: str, layout: AnyLayout, i: int, j: int) -> Result:
    return violated(claim, "two coordinates share an offset", {
        "first": _coordinate(layout, i), "second": _coordinate(layout, j), "offset": int(layout(i))})


# ---- bijective -----------------------------------------------------------------------------


def bijective(layout: AnyLayout, *, limit: int = ENUMERATION_LIMIT) -> Result:
    """The layout maps its domain one-to-one onto the offsets ``[0, cosize)``."""
    layout = _checked(layout, "bijective")
    claim = f"{layout} is a bijection onto [0, cosize)"
    if _enumerable(layout, limit):
        return _bijective_enumerated(claim, layout, limit)
    if isinstance(layout, ComposedLayout) and isinstance(layout.outer, Swizzle):
        return _swizzled_bijective(claim, layout, limit)
    plain = _as_plain(layout)
    if plain is None:
        pair = _collision(layout.inner)  # type: ignore[union-attr]
        if pair is not None:
            return _shared(claim, layout, *pair)
        return unknown(claim, f"{layout.size()} points exceed the enumeration limit, and the outer layout "
                              "is not reduced to one layout")
    return _compact(claim, layout, plain)


def _bijective_enumerated(claim: str, layout: AnyLayout, limit: int) -> Result:
    offsets = _offsets(layout)
    if offsets.min() < 0:
        i = int(np.argmin(offsets))
        return violated(claim, "an offset is negative", {"coordinate": _coordinate(layout, i), "offset": int(offsets[i])})
    inj = injective(layout, limit=limit)
    if not inj.proved:
        return type(inj)(claim, inj.verdict, inj.reason, inj.witnesses)
    missing = _first_missing(offsets)
    if missing < offsets.size:
        top = int(offsets.max()) + 1
        return violated(claim, f"{offsets.size} elements leave gaps in [0, {top})", {"missing offset": missing})
    return proved(claim, f"the {offsets.size} offsets are exactly 0 .. {offsets.size - 1} (enumerated)")


def _first_missing(offsets: np.ndarray) -> int:
    """The smallest non-negative integer not among `offsets` (distinct and non-negative)."""
    ordered = np.sort(offsets)
    gaps = np.flatnonzero(ordered != np.arange(ordered.size, dtype=np.int64))
    return int(gaps[0]) if gaps.size else int(ordered.size)


def _compact(claim: str, layout: AnyLayout, plain: Layout) -> Result:
    """Decide bijectivity of `layout` from `plain`, one layout with the same function: it is a
    bijection onto [0, cosize) exactly when, sorted by stride, each stride is the product of
    the smaller sizes."""
    pair = _collision(plain)
    if pair is not None:
        return _shared(claim, layout, *pair)
    modes = _flat_modes(plain)
    negative = [(s, step) for s, d, step in modes if d < 0]
    if negative:
        i = sum((s - 1) * step for s, step in negative)  # every negative mode at its last coordinate
        return violated(claim, "an offset is negative", {"coordinate": _coordinate(layout, i), "offset": int(layout(i))})
    expected = 1
    for s, d, _ in sorted(modes, key=lambda m: m[1]):
        if d > expected:
            # The smaller modes reach exactly [0, expected); every other offset is at least d.
            return violated(claim, "the offsets leave a gap", {"missing offset": expected})
        expected *= s  # d == expected: a smaller stride was a collision, found above
    return proved(claim, "sorted by stride, each stride is the product of the smaller sizes (compact)")


def _is_compact(layout: Layout) -> bool:
    """A bijection onto [0, size): sorted by stride, each stride is the product of the smaller sizes."""
    expected = 1
    for s, d, _ in sorted(_flat_modes(layout), key=lambda m: m[1]):
        if d != expected:
            return False
        expected *= s
    return True


def _index_of(compact: list[tuple[int, int, int]], offset: int) -> int:
    """The index at which compact modes (sorted by stride, strides 1, s0, s0·s1, ...) reach `offset`."""
    index = 0
    for s, d, step in reversed(compact):
        digit, offset = divmod(offset, d)
        index += digit * step
    return index


def _swizzled_bijective(claim: str, layout: ComposedLayout, limit: int) -> Result:
    """``Sw o off o inner`` beyond the enumeration limit. The swizzle is an involution fixing 0,
    so offset 0 is reached exactly when off + inner reaches 0, and for a compact inner with no
    offset, the image is [0, n) exactly when the swizzle keeps [0, n)."""
    sw, inner = layout.outer, layout.inner
    assert isinstance(sw, Swizzle)
    pair = _collision(inner)
    if pair is not None:
        return _shared(claim, layout, *pair)
    if layout.offset + inner.codomain()[0] > 0:
        return violated(claim, "offset 0 is never reached: the swizzle maps only 0 to 0", {"missing offset": 0})
    if layout.offset != 0 or not _is_compact(inner):
        return unknown(claim, f"{layout.size()} points exceed the enumeration limit and the inner layout "
                              "is not compact with offset 0")
    n = inner.size()
    period = sw.size()
    tail = n % period
    start = n - tail
    if tail == 0 or sw.bits == 0 or tail <= 1 << (sw.base + max(0, sw.shift)):
        return proved(claim, f"the inner layout is compact and the swizzle permutes every aligned block of "
                             f"{period} offsets, and leaves the last, partial one alone")
    if tail > limit:
        return unknown(claim, f"the swizzle may move offsets of the last partial block of {tail} offsets past "
                              f"{n}, and that block exceeds the enumeration limit")
    # Sw(start + r) == start + Sw(r) for r < period: the tail block is checked on its own.
    moved = np.flatnonzero(sw(np.arange(tail, dtype=np.int64)) >= tail)
    if moved.size:
        return violated(claim, "the swizzle moves offsets of the last partial block past the end",
                        {"missing offset": start + int(moved[0])})
    return proved(claim, f"the inner layout is compact, the swizzle permutes every aligned block of {period} "
                         f"offsets, and it keeps the last {tail} (enumerated)")


# ---- equal ---------------------------------------------------------------------------------


def equal(a: AnyLayout, b: AnyLayout, *, limit: int = ENUMERATION_LIMIT) -> Result:
    """The two layouts are the same function on their (equal-sized) domain."""
    a, b = _checked(a, "equal"), _checked(b, "equal")
    claim = f"{a} and {b} are the same function"
    if a.size() != b.size():
        return violated(claim, "the domains differ", {"size of the first": a.size(), "size of the second": b.size()})
    if _enumerable(a, limit) and _enumerable(b, limit):
        diff = np.flatnonzero(_offsets(a) != _offsets(b))
        if diff.size == 0:
            return proved(claim, f"they agree at all {a.size()} indices (enumerated)")
        return _differ(claim, a, b, int(diff[0]))
    for i in _boundary_indices(a, b):
        if a(i) != b(i):
            return _differ(claim, a, b, i)
    plain_a, plain_b = _as_plain(a), _as_plain(b)
    if plain_a is not None and plain_b is not None:
        if coalesce(plain_a) == coalesce(plain_b):
            return proved(claim, f"both coalesce to {coalesce(plain_a)} (a canonical form)")
        return violated(claim, f"their canonical forms differ: {coalesce(plain_a)} and {coalesce(plain_b)}")
    if _same_outside(a, b):
        assert isinstance(a, ComposedLayout) and isinstance(b, ComposedLayout)
        if coalesce(a.inner) == coalesce(b.inner):
            return proved(claim, f"the same outer function and offset, and inner layouts that both coalesce to "
                                 f"{coalesce(a.inner)} (a canonical form)")
        if isinstance(a.outer, Swizzle):
            return violated(claim, "the same swizzle and offset (one-to-one) over inner layouts whose canonical "
                                   f"forms differ: {coalesce(a.inner)} and {coalesce(b.inner)}")
    return unknown(claim, f"{a.size()} points exceed the enumeration limit")


def _same_outside(a: AnyLayout, b: AnyLayout) -> bool:
    return (isinstance(a, ComposedLayout) and isinstance(b, ComposedLayout)
            and (a.outer, a.offset) == (b.outer, b.offset))


def _differ(claim: str, a: AnyLayout, b: AnyLayout, i: int) -> Result:
    return violated(claim, "they differ", {
        "index": i, "coordinate": _coordinate(a, i), "first": int(a(i)), "second": int(b(i))})


def _boundary_indices(a: AnyLayout, b: AnyLayout) -> list[int]:
    """Indices where a difference between two layouts shows first: each mode boundary, and the
    powers of two (where a swizzle's source bits start to be set)."""
    points = {1 << k for k in range(a.size().bit_length())}
    for layout in (a, b):
        inner = layout.inner if isinstance(layout, ComposedLayout) else layout
        for _, _, step in _flat_modes(inner):
            points.update({step, step - 1, step + 1})
    return sorted(i for i in points if 0 <= i < a.size())


# ---- composition ---------------------------------------------------------------------------


def composition(a: AnyLayout | Swizzle, b: Layout, r: AnyLayout | None = None, *,
                limit: int = ENUMERATION_LIMIT) -> Result:
    """``A∘B`` is a layout (``r`` absent), or ``r(i) == A(B(i))`` for every index of B."""
    if not isinstance(b, Layout):
        raise LayoutError("composition", f"B must be a plain Layout, got {type(b).__name__}", b)
    b = _checked(b, "composition")  # type: ignore[assignment]
    if not isinstance(a, Swizzle):
        a = _checked(a, "composition")
    _require_defined_on(a, b)
    if r is not None:
        r = _checked(r, "composition")
    claim = f"{a} o {b} is a layout" if r is None else f"{r} == {a} o {b}"
    try:
        result = compose(a, b)
    except LayoutError as refusal:
        if r is not None:
            return _pointwise(claim, a, b, r, limit, f"A∘B has no layout ({refusal.reason})")
        return _no_layout(claim, a, b, refusal, limit)
    if r is None:
        return _pointwise(claim, a, b, result, limit, f"A∘B = {result}", expected=True)
    eq = equal(r, result, limit=limit)
    if eq.proved:
        return proved(claim, f"A∘B = {result}; {eq.reason}")
    if eq.verdict.value == "violated" and not _enumerable(b, limit):
        return violated(claim, f"A∘B = {result}, and R is a different function: {eq.reason}", *eq.witnesses)
    return _pointwise(claim, a, b, r, limit, f"A∘B = {result}")


def _require_defined_on(a: AnyLayout | Swizzle, b: Layout) -> None:
    """Refuse, as for a composed layout that is not defined on its own domain, an A whose outer
    function (a swizzle, or a composed layout's outer) B leads below 0, where it is not defined:
    decided on ``A∘B`` where the algebra gives A's inner part exactly."""
    if isinstance(a, Swizzle):
        ComposedLayout(a, 0, b).check_defined("composition", a, b)
    elif isinstance(a, ComposedLayout):
        try:
            inner = compose(a.inner, b)
        except LayoutError:
            return  # no exact form: A∘B is then refused, and decided point by point, if at all
        a.with_inner(inner).check_defined("composition", a, b)


def _at(a: AnyLayout | Swizzle, indices: np.ndarray) -> np.ndarray | None:
    """A at the given indices, in int64; None where A is not defined there (a negative index
    of anything but a straight line) or its offsets leave int64."""
    if not indices.size:
        return np.zeros(0, dtype=np.int64)
    lo, hi = int(indices.min()), int(indices.max())
    if isinstance(a, Swizzle):
        return np.asarray(a(indices), dtype=np.int64) if lo >= 0 else None
    if isinstance(a, ComposedLayout):
        inner = _at(a.inner, indices)
        if inner is None or abs(a.offset) > INT64_MAX or not inner.size:
            return inner
        if int(inner.min()) + a.offset < 0 or int(inner.max()) + a.offset > INT64_MAX:
            return None
        return _at(a.outer, inner + a.offset)
    if lo < 0:
        line = line_stride(a)  # a straight line is defined below 0 too, as the algebra reads it
        if line is None or abs(line) * max(-lo, hi) > INT64_MAX:
            return None
        return indices * line
    bound_lo, bound_hi = _bounds_on(a, hi)
    if max(-bound_lo, bound_hi) > INT64_MAX:
        return None
    return np.asarray(a(indices), dtype=np.int64)


def _pointwise(claim: str, a: AnyLayout | Swizzle, b: Layout, r: AnyLayout, limit: int, what: str,
               expected: bool = False) -> Result:
    """Check r(i) == A(B(i)) for every index of B. With `expected`, r is the algebra's own
    answer: agreement proves the claim that A∘B is a layout, beyond the limit the algebra's
    divisibility argument does."""
    if r.size() != b.size():
        return violated(claim, "R and B have different sizes", {"size of R": r.size(), "size of B": b.size()})
    if not (_enumerable(b, limit) and _enumerable(r, limit)):
        if expected:
            return proved(claim, f"{what}, by the divisibility argument of the layout algebra")
        return unknown(claim, f"{b.size()} points exceed the enumeration limit; {what}")
    inner = _offsets(b)
    want = _at(a, inner)
    if want is None:
        if inner.size and inner.min() < 0 and not expected:
            i = int(np.argmin(inner))
            return violated(claim, "B reaches a negative index of A, where A is not defined",
                            {"index": i, "B(i)": int(inner[i])})
        return unknown(claim, f"A's offsets on B's image are not enumerable in int64; {what}")
    got = _offsets(r)
    diff = np.flatnonzero(want != got)
    if diff.size == 0:
        return proved(claim, f"{what}; R(i) == A(B(i)) at all {b.size()} indices (enumerated)")
    i = int(diff[0])
    if expected:
        return unknown(claim, f"{what} from the algebra, but it differs from A(B(i)) at index {i}")
    return violated(claim, "R(i) != A(B(i))", {
        "index": i, "B(i)": int(inner[i]), "A(B(i))": int(want[i]), "R(i)": int(got[i])})


def _no_layout(claim: str, a: AnyLayout | Swizzle, b: Layout, refusal: LayoutError, limit: int) -> Result:
    """The algebra refused A∘B. Refuted only where brute force over B's domain shows that no
    layout shaped like B reproduces A(B(i)); otherwise the refusal is not a proof."""
    if not isinstance(a, Layout) or not _enumerable(b, limit):
        return unknown(claim, f"the layout algebra refuses A∘B ({refusal.reason}), which is not decided "
                              "point by point here")
    inner = _offsets(b)
    values = _at(a, inner)
    if values is None:
        if inner.size and inner.min() < 0:
            i = int(np.argmin(inner))
            return violated(claim, "B reaches a negative index of A, where A is not defined",
                            {"index": i, "B(i)": int(inner[i]), "failed condition": refusal.reason})
        return unknown(claim, f"the layout algebra refuses A∘B ({refusal.reason}); A's offsets exceed int64")
    witness = _why_no_layout(b, values)
    if witness is None:
        return unknown(claim, f"a layout shaped like B reproduces A(B(i)) on B's domain, but the layout algebra "
                              f"refuses A∘B: {refusal.reason}")
    return violated(claim, "A∘B is not a layout", {**witness, "failed condition": refusal.reason})


def _why_no_layout(b: Layout, values: np.ndarray) -> dict[str, Any] | None:
    """Why no layout refining B's shape has these offsets in B's index order, or None if one does.

    Such a layout is a sum of one layout per flat mode of B: the values must be the sum of
    their values along each mode, and along each mode one layout must reproduce them.
    """
    sizes = [s for s, _ in b.modes()]
    steps = [prod(sizes[:k]) for k in range(len(sizes))]
    along = [values[np.arange(s, dtype=np.int64) * step] for s, step in zip(sizes, steps)]
    index = np.arange(values.size, dtype=np.int64)
    total = np.zeros(values.size, dtype=np.int64)
    for s, step, line in zip(sizes, steps, along):
        total += line[(index // step) % s]
    bad = np.flatnonzero(total != values)
    if bad.size:
        i = int(bad[0])
        return {"index": i, "A(B(i))": int(values[i]), "sum over B's modes": int(total[i])}
    for k, (s, line) in enumerate(zip(sizes, along)):
        if s > 1 and fit_modes(line) is None:
            return {"mode of B": k, "offsets along it": [int(v) for v in line[:8]]}
    return None


# ---- partition -----------------------------------------------------------------------------


def partition(tv: Layout, tile_size: int, *, limit: int = ENUMERATION_LIMIT) -> Result:
    """A (thread, value) layout hands every element of a tile of `tile_size` elements to
    exactly one (thread, value) pair."""
    if not isinstance(tv, Layout):
        raise LayoutError("partition", f"the TV layout must be a plain Layout, got {type(tv).__name__}", tv)
    tv = _checked(tv, "partition")  # type: ignore[assignment]
    if tv.rank != 2:
        raise LayoutError("partition", f"a TV layout has two modes, (threads, values); this one has {tv.rank}", tv)
    if not isinstance(tile_size, int) or isinstance(tile_size, bool) or tile_size < 1:
        raise LayoutError("partition", f"the tile size must be a positive int, got {tile_size!r}", tv)
    claim = f"{tv} covers a tile of {tile_size} elements exactly once"
    threads = tv[0].size()

    def pair(i: int) -> dict[str, int]:
        return {"thread": i % threads, "value": i // threads}

    if not _enumerable(tv, limit):
        if tv.size() != tile_size:
            return violated(claim, f"{tv.size()} (thread, value) pairs cannot hold {tile_size} elements once each",
                            {"pairs": tv.size(), "elements": tile_size})
        whole = bijective(tv, limit=limit)
        return type(whole)(claim, whole.verdict, f"with as many pairs as elements, as a bijection: {whole.reason}",
                           whole.witnesses)
    offsets = _offsets(tv)
    outside = np.flatnonzero((offsets < 0) | (offsets >= min(tile_size, INT64_MAX)))
    if outside.size:
        i = int(outside[0])
        return violated(claim, "a pair lands outside the tile", {**pair(i), "element": int(offsets[i])})
    order = np.argsort(offsets, kind="stable")
    same = np.flatnonzero(offsets[order][1:] == offsets[order][:-1])
    if same.size:
        i, j = int(order[same[0]]), int(order[same[0] + 1])
        return violated(claim, "an element is held twice", {"element": int(offsets[i]), "first": pair(i), "second": pair(j)})
    if offsets.size != tile_size:
        return violated(claim, f"{tile_size - offsets.size} element(s) are held by nobody", {"element": _first_missing(offsets)})
    return proved(claim, f"each of the {tile_size} elements is held by one pair (enumerated)")


# ---- shared-memory banks -------------------------------------------------------------------


def bank_conflict_free(addresses: AnyLayout, element_bytes: int, access_bytes: int, *, threads: int = 32,
                       banks: int = 32, bank_bytes: int = 4) -> Result:
    """A warp's shared-memory access is conflict free: thread t accesses `access_bytes` bytes at
    element offset ``addresses(t)``. As on NVIDIA GPUs, a request is served in phases of
    ``banks·bank_bytes`` bytes (e.g. 8 threads per phase for 16-byte accesses); within a phase,
    two threads touching different words of one bank conflict (the same word is a broadcast)."""
    addresses = _checked(addresses, "banks")
    for name, value, top in (("element_bytes", element_bytes, None), ("access_bytes", access_bytes, banks * bank_bytes),
                             ("threads", threads, 1024), ("banks", banks, 1024), ("bank_bytes", bank_bytes, 1024)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1 or (top is not None and value > top):
            bound = f" of at most {top}" if top is not None else ""
            raise LayoutError("banks", f"{name} must be a positive int{bound}, got {value!r}", addresses)
    if access_bytes & (access_bytes - 1):
        raise LayoutError("banks", f"access_bytes must be a power of two, got {access_bytes}", addresses)
    if addresses.size() < threads:
        raise LayoutError("banks", f"the layout gives {addresses.size()} addresses for {threads} threads; "
                                   "it needs one for every thread", addresses)
    claim = f"{threads} threads accessing {access_bytes} bytes at {addresses} ({element_bytes}-byte elements) are bank-conflict free"
    words_per_access = max(1, access_bytes // bank_bytes)
    starts = [int(addresses(t)) * element_bytes for t in range(threads)]  # exact Python ints
    for t, start in enumerate(starts):
        if start % access_bytes:
            return violated(claim, "an access is not aligned to its width", {"thread": t, "byte address": start})
    per_phase = max(1, min(threads, banks * bank_bytes // max(access_bytes, bank_bytes)))
    for phase_start in range(0, threads, per_phase):
        seen: dict[int, tuple[int, int]] = {}
        for t in range(phase_start, min(threads, phase_start + per_phase)):
            first_word = starts[t] // bank_bytes
            for word in range(first_word, first_word + words_per_access):
                bank = word % banks
                if bank in seen and seen[bank][1] != word:
                    other, other_word = seen[bank]
                    return violated(claim, "two threads touch different words of one bank in the same phase", {
                        "phase": phase_start // per_phase, "threads": (other, t), "bank": bank,
                        "byte addresses": (other_word * bank_bytes, word * bank_bytes)})
                seen.setdefault(bank, (t, word))
    return proved(claim, f"every phase of {per_phase} threads touches each bank at most once (enumerated)")
