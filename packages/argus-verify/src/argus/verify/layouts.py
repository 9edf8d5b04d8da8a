"""The layout checker: prove or refute properties of CuTe layouts, with counterexamples.

Each check returns a `Result`. Where the domain is small enough (``ENUMERATION_LIMIT``
points) the layout is enumerated with numpy: that is exact and yields the first
counterexample. Beyond it, a structural argument decides where one exists (coalesced forms
are canonical; mixed-radix strides are injective); otherwise the answer is `unknown`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from argus.layout import ComposedLayout, Layout, LayoutError, coalesce, idx2crd, prefix_product
from argus.layout import composition as compose
from argus.layout.inttuple import flatten

from .results import Result, proved, unknown, violated

#: Largest domain the checker enumerates point by point.
ENUMERATION_LIMIT = 1 << 22

AnyLayout = Layout | ComposedLayout


def _coordinate(layout: AnyLayout, index: int) -> Any:
    return idx2crd(int(index), layout.shape)


def _offsets(layout: AnyLayout) -> np.ndarray:
    return np.asarray(layout.offsets(), dtype=np.int64)


def injective(layout: AnyLayout) -> Result:
    """No two coordinates of the domain share an offset."""
    claim = f"{layout} is injective"
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    if isinstance(layout, ComposedLayout) and not isinstance(layout.outer, Layout) and inner.size() > ENUMERATION_LIMIT:
        result = injective(inner)  # a swizzle and an offset are bijections: they keep (non-)injectivity
        return type(result)(claim, result.verdict, f"the swizzle is a bijection; {result.reason}", result.witnesses)
    if layout.size() <= ENUMERATION_LIMIT:
        offsets = _offsets(layout)
        order = np.argsort(offsets, kind="stable")
        same = np.flatnonzero(offsets[order][1:] == offsets[order][:-1])
        if same.size:
            i, j = int(order[same[0]]), int(order[same[0] + 1])
            return violated(claim, "two coordinates share an offset", {
                "first": _coordinate(layout, i), "second": _coordinate(layout, j), "offset": int(offsets[i])})
        return proved(claim, f"all {layout.size()} offsets are distinct (enumerated)")
    modes = [(s, d) for s, d in coalesce(inner).modes() if s > 1]
    for k, (s, d) in enumerate(modes):
        if d == 0:
            step = int(np.prod([m[0] for m in modes[:k]], dtype=object)) if k else 1
            return violated(claim, "a mode of size > 1 has stride 0", {
                "first": _coordinate(inner, 0), "second": _coordinate(inner, step), "offset": int(inner(0))})
    span = 0
    for s, d in sorted(modes, key=lambda m: abs(m[1])):
        if abs(d) <= span:
            return unknown(claim, f"{layout.size()} points exceed the enumeration limit and the strides do not nest")
        span += (s - 1) * abs(d)
    return proved(claim, "sorted by |stride|, each stride exceeds the span of the smaller modes (a mixed radix)")


def bijective(layout: AnyLayout) -> Result:
    """The layout maps its domain one-to-one onto the offsets ``[0, cosize)``."""
    claim = f"{layout} is a bijection onto [0, cosize)"
    if layout.size() <= ENUMERATION_LIMIT:
        offsets = _offsets(layout)
        if offsets.size and offsets.min() < 0:
            i = int(np.argmin(offsets))
            return violated(claim, "an offset is negative", {"coordinate": _coordinate(layout, i), "offset": int(offsets[i])})
        inj = injective(layout)
        if not inj.proved:
            return type(inj)(claim, inj.verdict, inj.reason, inj.witnesses)
        top = int(offsets.max()) + 1 if offsets.size else 0
        if top != offsets.size:
            missing = int(np.setdiff1d(np.arange(top), offsets)[0])
            return violated(claim, f"{offsets.size} elements leave gaps in [0, {top})", {"missing offset": missing})
        return proved(claim, f"the {offsets.size} offsets are exactly 0 .. {top - 1} (enumerated)")
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    expected = 1
    for s, d in sorted(((s, d) for s, d in coalesce(inner).modes() if s > 1), key=lambda m: m[1]):
        if d != expected:
            return unknown(claim, f"{layout.size()} points exceed the enumeration limit and the layout is not compact")
        expected *= s
    return proved(claim, "sorted by stride, each stride is the product of the smaller sizes (compact)")


def equal(a: AnyLayout, b: AnyLayout) -> Result:
    """The two layouts are the same function on their (equal-sized) domain."""
    claim = f"{a} and {b} are the same function"
    if a.size() != b.size():
        return violated(claim, "the domains differ", {"size of the first": a.size(), "size of the second": b.size()})
    if isinstance(a, Layout) and isinstance(b, Layout) and coalesce(a) == coalesce(b):
        return proved(claim, f"both coalesce to {coalesce(a)} (a canonical form)")
    if a.size() <= ENUMERATION_LIMIT:
        diff = np.flatnonzero(_offsets(a) != _offsets(b))
        if diff.size == 0:
            return proved(claim, f"they agree at all {a.size()} indices (enumerated)")
        i = int(diff[0])
        return violated(claim, "they differ", {"index": i, "coordinate": _coordinate(a, i), "first": int(a(i)), "second": int(b(i))})
    for i in _boundary_indices(a, b):
        if a(i) != b(i):
            return violated(claim, "they differ", {"index": i, "first": int(a(i)), "second": int(b(i))})
    if isinstance(a, Layout) and isinstance(b, Layout):
        return violated(claim, f"their canonical forms differ: {coalesce(a)} and {coalesce(b)}")
    return unknown(claim, f"{a.size()} points exceed the enumeration limit")


def _boundary_indices(a: AnyLayout, b: AnyLayout) -> list[int]:
    """Indices where a difference between two layouts shows first: 1 and each mode boundary."""
    points = {1}
    for layout in (a, b):
        inner = layout.inner if isinstance(layout, ComposedLayout) else layout
        for p in flatten(prefix_product(coalesce(inner).shape)):
            points.update({p, p - 1, p + 1})
    return sorted(i for i in points if 0 <= i < a.size())


def composition(a: AnyLayout, b: Layout, r: AnyLayout | None = None) -> Result:
    """``A∘B`` is a layout (``r`` absent), or ``r(i) == A(B(i))`` for every index of B."""
    claim = f"{a} o {b} is a layout" if r is None else f"{r} == {a} o {b}"
    try:
        result = compose(a, b)
    except LayoutError as err:
        if r is None:
            return violated(claim, "A∘B is not a layout", {"failed condition": err.reason})
        return _pointwise_composition(claim, a, b, r)
    if r is None:
        return proved(claim, f"A∘B = {result}")
    eq = equal(r, result)
    if eq.proved:
        return proved(claim, f"A∘B = {result}; {eq.reason}")
    return _pointwise_composition(claim, a, b, r)


def _pointwise_composition(claim: str, a: AnyLayout, b: Layout, r: AnyLayout) -> Result:
    if b.size() > ENUMERATION_LIMIT:
        return unknown(claim, f"{b.size()} points exceed the enumeration limit")
    if r.size() != b.size():
        return violated(claim, "R and B have different sizes", {"size of R": r.size(), "size of B": b.size()})
    inner = _offsets(b)
    if inner.size and inner.min() < 0:
        return violated(claim, "B reaches negative indices of A", {"index": int(np.argmin(inner))})
    want, got = np.asarray(a(inner), dtype=np.int64), _offsets(r)
    diff = np.flatnonzero(want != got)
    if diff.size == 0:
        return proved(claim, f"R(i) == A(B(i)) at all {b.size()} indices (enumerated)")
    i = int(diff[0])
    return violated(claim, "R(i) != A(B(i))", {"index": i, "B(i)": int(inner[i]), "A(B(i))": int(want[i]), "R(i)": int(got[i])})


def partition(tv: Layout, tile_size: int) -> Result:
    """A (thread, value) layout hands every element of a tile of `tile_size` elements to
    exactly one (thread, value) pair."""
    claim = f"{tv} covers a tile of {tile_size} elements exactly once"
    if tv.rank != 2:
        return violated(claim, "a TV layout has two modes: (threads, values)", {"rank": tv.rank})
    if tv.size() > ENUMERATION_LIMIT:
        return unknown(claim, f"{tv.size()} points exceed the enumeration limit")
    threads = tv[0].size()
    offsets = _offsets(tv)

    def pair(i: int) -> dict[str, int]:
        return {"thread": i % threads, "value": i // threads}

    outside = np.flatnonzero((offsets < 0) | (offsets >= tile_size))
    if outside.size:
        i = int(outside[0])
        return violated(claim, "a pair lands outside the tile", {**pair(i), "element": int(offsets[i])})
    order = np.argsort(offsets, kind="stable")
    same = np.flatnonzero(offsets[order][1:] == offsets[order][:-1])
    if same.size:
        i, j = int(order[same[0]]), int(order[same[0] + 1])
        return violated(claim, "an element is held twice", {"element": int(offsets[i]), "first": pair(i), "second": pair(j)})
    if offsets.size != tile_size:
        missing = int(np.setdiff1d(np.arange(tile_size), offsets)[0])
        return violated(claim, f"{tile_size - offsets.size} element(s) are held by nobody", {"element": missing})
    return proved(claim, f"each of the {tile_size} elements is held by one pair (enumerated)")


def bank_conflict_free(addresses: AnyLayout, element_bytes: int, access_bytes: int, *, threads: int = 32,
                       banks: int = 32, bank_bytes: int = 4) -> Result:
    """A warp's shared-memory access is conflict free: thread t accesses `access_bytes` bytes at
    element offset ``addresses(t)``. As on NVIDIA GPUs, a request is served in phases of
    ``banks·bank_bytes`` bytes (e.g. 8 threads per phase for 16-byte accesses); within a phase,
    two threads touching different words of one bank conflict (the same word is a broadcast)."""
    claim = f"{threads} threads accessing {access_bytes} bytes at {addresses} ({element_bytes}-byte elements) are bank-conflict free"
    words_per_access = max(1, access_bytes // bank_bytes)
    starts = np.asarray([addresses(t) for t in range(threads)], dtype=np.int64) * element_bytes
    misaligned = np.flatnonzero(starts % access_bytes)
    if misaligned.size:
        t = int(misaligned[0])
        return violated(claim, "an access is not aligned to its width", {"thread": t, "byte address": int(starts[t])})
    per_phase = max(1, min(threads, banks * bank_bytes // max(access_bytes, bank_bytes)))
    for phase_start in range(0, threads, per_phase):
        seen: dict[int, tuple[int, int]] = {}
        for t in range(phase_start, min(threads, phase_start + per_phase)):
            first_word = int(starts[t]) // bank_bytes
            for word in range(first_word, first_word + words_per_access):
                bank = word % banks
                if bank in seen and seen[bank][1] != word:
                    other, other_word = seen[bank]
                    return violated(claim, "two threads touch different words of one bank in the same phase", {
                        "phase": phase_start // per_phase, "threads": (other, t), "bank": bank,
                        "byte addresses": (other_word * bank_bytes, word * bank_bytes)})
                seen.setdefault(bank, (t, word))
    return proved(claim, f"every phase of {per_phase} threads touches each bank at most once (enumerated)")
