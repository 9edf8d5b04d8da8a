"""Matrix-multiply atoms described by layouts, as CuTe describes them.

An atom is a cooperative ``C[m, n] += sum_k A[m, k] * B[n, k]`` over an M×N×K tile done by
`threads` threads together. Who holds what is three thread/value layouts: ``a_layout(t, v)``
is the position ``m + M*k`` of thread t's v-th A value in the column-major M×K tile, and
likewise ``n + N*k`` for B and ``m + M*n`` for C. The interpreter runs any atom from these
layouts alone; a backend maps an atom with the same layouts and types to its instruction.

An operand without a layout (``None``) is not held by threads at all: the group reads it
whole from a shared-memory tile of shape (M, K) for A or (N, K) for B, through that tile's
own layout (swizzle included). Which shared layouts an instruction can read is the backend's
business; the language only needs to know which element sits where.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from argus.layout import Layout, parse

from .dtypes import DType, dtype_named
from .errors import ArgusTypeError
from .ir.layout_texts import layout_from_text, text_of


@dataclass(frozen=True)
class MMAAtom:
    name: str
    shape: tuple[int, int, int]
    threads: int
    a_layout: Layout | None
    b_layout: Layout | None
    c_layout: Layout
    a_dtype: DType
    b_dtype: DType
    c_dtype: DType

    def __post_init__(self) -> None:
        m, n, k = self.shape
        for label, layout, extent in (("A", self.a_layout, m * k), ("B", self.b_layout, n * k), ("C", self.c_layout, m * n)):
            if layout is None:
                continue
            if layout.rank != 2 or layout[0].size() != self.threads:
                raise ArgusTypeError(f"atom {self.name}: the {label} layout must be (threads={self.threads}, values) -> index, got {layout}")
            image = np.sort(layout.offsets())
            if not np.array_equal(image, np.arange(extent)):
                raise ArgusTypeError(
                    f"atom {self.name}: the {label} layout {layout} must hold each of the {extent} elements of its tile exactly once"
                )

    def values(self, operand: str) -> int:
        """Values one thread holds of operand 'a', 'b' or 'c' (0 for an operand read from
        shared memory)."""
        layout = {"a": self.a_layout, "b": self.b_layout, "c": self.c_layout}[operand]
        return 0 if layout is None else layout[1].size()

    def shared_shape(self, operand: str) -> tuple[int, int] | None:
        """The (rows, K) shape of the shared tile operand 'a' or 'b' is read from, or None when
        threads hold it in registers."""
        m, n, k = self.shape
        layout, rows = (self.a_layout, m) if operand == "a" else (self.b_layout, n)
        return (rows, k) if layout is None else None

    def as_properties(self) -> dict[str, str]:
        """Everything needed to rebuild the atom from printed IR."""
        m, n, k = self.shape
        return {
            "atom": self.name, "shape": f"{m}x{n}x{k}", "threads": str(self.threads),
            "a_layout": _layout_text(self.a_layout), "b_layout": _layout_text(self.b_layout),
            "c_layout": text_of(self.c_layout),
            "types": f"{self.a_dtype},{self.b_dtype},{self.c_dtype}",
        }

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> MMAAtom:
        m, n, k = (int(x) for x in props["shape"].split("x"))
        a, b, c = (dtype_named(t) for t in props["types"].split(","))
        return cls(props["atom"], (m, n, k), int(props["threads"]), _layout_of(props["a_layout"]),
                   _layout_of(props["b_layout"]), layout_from_text(props["c_layout"]), a, b, c)  # type: ignore[arg-type]


_SHARED = "shared"


def _layout_text(layout: Layout | None) -> str:
    return _SHARED if layout is None else text_of(layout)


def _layout_of(text: str) -> Layout | None:
    return None if text == _SHARED else layout_from_text(text)  # type: ignore[no-any-return]


def warp_mma_16x8x16(a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    """A warp-wide 16×8×16 atom: lane ``t0 + 4·t1`` holds A rows t1, t1+8 at columns
    2·t0 (+1, +8, +9), B column t1 at rows 2·t0 (+1, +8, +9), and C rows t1, t1+8 at columns
    2·t0 (+1). (These are the layouts of NVIDIA's m16n8k16 MMA; any target may run the atom.)"""
    return MMAAtom(
        f"mma_16x8x16_{c_dtype}_{a_dtype}_{b_dtype}",
        shape=(16, 8, 16),
        threads=32,
        a_layout=parse("((4,8),(2,2,2)):((32,1),(16,8,128))"),
        b_layout=parse("((4,8),(2,2)):((16,1),(8,64))"),
        c_layout=parse("((4,8),(2,2)):((32,1),(16,8))"),
        a_dtype=a_dtype,
        b_dtype=b_dtype,
        c_dtype=c_dtype,
    )


def warp_mma_16x8x32(a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    """The warp-wide atom for 8-bit inputs (fp8: f8e4m3, f8e5m2), 16×8×32: lane ``t0 + 4·t1``
    holds A rows t1, t1+8 at columns 4·t0 … 4·t0+3 (and +16), B column t1 at rows 4·t0 … 4·t0+3
    (and +16), and C as in the 16×8×16 atom. (NVIDIA's m16n8k32 MMA on sm_89 and later.)"""
    for dtype in (a_dtype, b_dtype):
        if dtype.bits != 8:
            raise ArgusTypeError(f"warp_mma_16x8x32 multiplies 8-bit inputs, not {dtype}")
    return MMAAtom(
        f"mma_16x8x32_{c_dtype}_{a_dtype}_{b_dtype}",
        shape=(16, 8, 32),
        threads=32,
        a_layout=parse("((4,8),(4,2,2)):((64,1),(16,8,256))"),
        b_layout=parse("((4,8),(4,2)):((32,1),(8,128))"),
        c_layout=parse("((4,8),(2,2)):((32,1),(16,8))"),
        a_dtype=a_dtype,
        b_dtype=b_dtype,
        c_dtype=c_dtype,
    )


def wave_mma_16x16x16(a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    """A 64-lane (wave) 16×16×16 atom: lane l holds A row l % 16 and B column l % 16 at K
    columns 4·(l // 16) … +3, and C column l % 16 at rows 4·(l // 16) … +3. (The layouts of
    AMD CDNA's v_mfma_f32_16x16x16 for 16-bit inputs; any target may run the atom.)"""
    return _wave_mma(16, 16, 16, a_dtype, b_dtype, c_dtype)


def wave_mma_32x32x8(a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    """A 64-lane (wave) 32×32×8 atom: lane l holds A row l % 32 and B column l % 32 at K
    columns 4·(l // 32) … +3, and C column l % 32 at rows 8·j + 4·(l // 32) + i for value
    4·j + i. (AMD CDNA's v_mfma_f32_32x32x8 for 16-bit inputs; any target may run it.)"""
    return _wave_mma(32, 8, 16, a_dtype, b_dtype, c_dtype)


def wave_mma_16x16x32(a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    """The 16×16 wave atom with K 32: lane l holds A row l % 16 and B column l % 16 at K
    columns 8·(l // 16) … +7; C as in the 16×16×16 atom. For 8-bit floats
    (v_mfma_f32_16x16x32 fp8/bf8) or, on CDNA4 (gfx950), bf16 or f16 (v_mfma_f32_16x16x32_bf16
    and _f16, eight 16-bit values per lane)."""
    return _wave_mma(16, 32, (8, 16), a_dtype, b_dtype, c_dtype)


def wave_mma_32x32x16(a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    """The 32×32 wave atom with K 16: lane l holds A row l % 32 and B column l % 32 at K
    columns 8·(l // 32) … +7; C as in the 32×32×8 atom. For 8-bit floats (v_mfma_f32_32x32x16
    fp8/bf8) or, on CDNA4 (gfx950), bf16 or f16 (v_mfma_f32_32x32x16_bf16 and _f16)."""
    return _wave_mma(32, 16, (8, 16), a_dtype, b_dtype, c_dtype)


_WAVE_C = {16: "((16,4),4):((16,4),1)", 32: "((32,2),(4,4)):((32,4),(1,8))"}


def _wave_mma(mn: int, k: int, bits: int | tuple[int, ...], a_dtype: DType, b_dtype: DType,
              c_dtype: DType) -> MMAAtom:
    widths = (bits,) if isinstance(bits, int) else bits
    for dtype in (a_dtype, b_dtype):
        if dtype.bits not in widths:
            either = " or ".join(f"{w}-bit" for w in widths)
            raise ArgusTypeError(f"wave_mma_{mn}x{mn}x{k} multiplies {either} inputs, not {dtype}")
    if a_dtype.bits != b_dtype.bits:
        raise ArgusTypeError(f"wave_mma_{mn}x{mn}x{k} multiplies inputs of one width, not {a_dtype} with {b_dtype}")
    groups = 64 // mn  # lane groups, each holding the next `per` columns of K
    per = k // groups
    operand = parse(f"(({mn},{groups}),{per}):((1,{per * mn}),{mn})")
    return MMAAtom(f"mma_{mn}x{mn}x{k}_{c_dtype}_{a_dtype}_{b_dtype}_wave", shape=(mn, mn, k), threads=64,
                   a_layout=operand, b_layout=operand, c_layout=parse(_WAVE_C[mn]), a_dtype=a_dtype,
                   b_dtype=b_dtype, c_dtype=c_dtype)


def warpgroup_mma_64xNx16(n: int, a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    """A 128-thread (four-warp) 64×n×16 atom reading A (64×16) and B (n×16) whole from shared
    memory; thread ``l + 32·w`` (lane l of warp w, ``l = t0 + 4·t1``) holds C rows
    ``16·w + t1`` and ``+8`` at columns ``8·j + 2·t0`` (+1) for j < n/8, in the value order
    (column pair, row half, j). (The layouts of NVIDIA's warpgroup MMA with both operands in
    shared memory, for 16-bit inputs; any target may run the atom.)"""
    return _warpgroup_mma(n, 16, a_dtype, b_dtype, c_dtype)


def warpgroup_mma_64xNx32(n: int, a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    """The same for 8-bit inputs (fp8: f8e4m3, f8e5m2): 64×n×32, each operand row 32 bytes."""
    return _warpgroup_mma(n, 32, a_dtype, b_dtype, c_dtype)


def _warpgroup_mma(n: int, k: int, a_dtype: DType, b_dtype: DType, c_dtype: DType) -> MMAAtom:
    name = f"warpgroup_mma_64xNx{k}"
    if not isinstance(n, int) or isinstance(n, bool) or not (8 <= n <= 256 and n % 8 == 0):
        raise ArgusTypeError(f"{name}: n must be a multiple of 8 from 8 to 256, got {n!r}")
    for dtype in (a_dtype, b_dtype):
        if dtype.bits != 256 // k:
            raise ArgusTypeError(f"{name} multiplies {256 // k}-bit inputs (32 bytes of K per row), not {dtype}"
                                 + ("; use warpgroup_mma_64xNx32 for 8-bit ones" if k == 16 and dtype.bits == 8 else ""))
    return MMAAtom(
        f"mma_64x{n}x{k}_{c_dtype}_{a_dtype}_{b_dtype}_ss",
        shape=(64, n, k),
        threads=128,
        a_layout=None,
        b_layout=None,
        c_layout=Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512))),
        a_dtype=a_dtype,
        b_dtype=b_dtype,
        c_dtype=c_dtype,
    )


def universal_fma(dtype: DType) -> MMAAtom:
    """One thread, 1×1×1: ``c += a * b``. Every target can run it."""
    one = Layout((1, 1), (0, 0))
    return MMAAtom(f"fma_{dtype}", (1, 1, 1), 1, one, one, one, dtype, dtype, dtype)


@dataclass(frozen=True)
class CopyAtom:
    """A copy instruction described by layouts.

    Every thread reads its source fragment and writes its target fragment in vectors of
    `vector_bytes`, each contiguous and aligned in memory. A cooperative atom (`threads` > 1,
    like a warp-wide matrix load) also redistributes: over a tile of `size` elements,
    ``src_layout(t, v)`` is where thread t's v-th source value sits and ``dst_layout(t, v)``
    which element thread t receives as its v-th target value. Without layouts the atom is a
    plain per-thread copy. The interpreter runs any atom from this description.
    """

    name: str
    vector_bytes: int
    threads: int = 1
    src_layout: Layout | None = None
    dst_layout: Layout | None = None

    def __post_init__(self) -> None:
        if self.vector_bytes not in (1, 2, 4, 8, 16, 32):
            raise ArgusTypeError(f"copy atom {self.name}: vectors are 1, 2, 4, 8, 16 or 32 bytes, got {self.vector_bytes}")
        if (self.src_layout is None) != (self.dst_layout is None) or (self.threads > 1 and self.src_layout is None):
            raise ArgusTypeError(f"copy atom {self.name}: a cooperative atom needs both a source and a target layout")
        if self.src_layout is not None and self.dst_layout is not None:
            for label, layout in (("source", self.src_layout), ("target", self.dst_layout)):
                if layout.rank != 2 or layout[0].size() != self.threads:
                    raise ArgusTypeError(f"copy atom {self.name}: the {label} layout must be (threads={self.threads}, values)")
            size = self.src_layout.size()
            for label, layout in (("source", self.src_layout), ("target", self.dst_layout)):
                if not np.array_equal(np.sort(layout.offsets()), np.arange(size)):
                    raise ArgusTypeError(f"copy atom {self.name}: the {label} layout must cover its {size} elements once each")

    def values(self) -> int | None:
        """Values per thread per use (None: any multiple of a vector, for a per-thread copy)."""
        return None if self.src_layout is None else self.src_layout[1].size()

    def as_properties(self) -> dict[str, str]:
        props = {"atom": self.name, "vector_bytes": str(self.vector_bytes), "threads": str(self.threads)}
        if self.src_layout is not None and self.dst_layout is not None:
            props |= {"src_layout": text_of(self.src_layout), "dst_layout": text_of(self.dst_layout)}
        return props

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> CopyAtom:
        src, dst = props.get("src_layout"), props.get("dst_layout")
        return cls(props["atom"], int(props["vector_bytes"]), int(props["threads"]),
                   layout_from_text(src) if src else None, layout_from_text(dst) if dst else None)


def copy_vector(nbytes: int) -> CopyAtom:
    """Per-thread copies in `nbytes`-byte vectors (the wide loads and stores every GPU has)."""
    return CopyAtom(f"copy_{nbytes}B", nbytes)
