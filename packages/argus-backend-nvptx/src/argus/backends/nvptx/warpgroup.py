"""Warpgroup matrix multiply (``wgmma``) on sm_90a: shared-memory matrix descriptors from layouts.

An atom whose A and B the group reads whole from shared memory (`MMAAtom` with no operand
layouts) runs as ``wgmma.mma_async`` when each operand tile is laid out the way a matrix
descriptor can describe (PTX ISA, "Matrix Descriptor Format"): K-major rows, 8-row core
groups a fixed number of bytes apart (the stride byte offset), and either

- a 128-, 64- or 32-byte swizzle: rows of that many bytes whose 16-byte chunks are XOR-ed with
  the row index (`Swizzle(3, 4, 3)`, `Swizzle(2, 4, 3)`, `Swizzle(1, 4, 3)` on byte offsets), or
- no swizzle: 8×16-byte core matrices, 128 contiguous bytes each, K-adjacent ones a fixed
  number of bytes apart (the leading byte offset).

The layout is compared with that form element by element, so a tile the instruction would
read differently is refused at compile time with the reason, never issued.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from argus.dsl.atoms import MMAAtom
from argus.layout import ComposedLayout, Layout, Swizzle

#: Descriptor swizzle-mode field values, and the mode of each swizzle width (in Swizzle bits).
NO_SWIZZLE, SWIZZLE_128B, SWIZZLE_64B, SWIZZLE_32B = 0, 1, 2, 3
_MODES = {3: SWIZZLE_128B, 2: SWIZZLE_64B, 1: SWIZZLE_32B}

#: PTX type names of the element types wgmma multiplies (with an f32 accumulator): 16-bit ones
#: (k = 16, A and B of one type) and 8-bit floats (k = 32, A and B of either).
OPERAND_TYPES = {"bf16": "bf16", "f16": "f16", "f8e4m3": "e4m3", "f8e5m2": "e5m2"}


@dataclass(frozen=True)
class DescriptorForm:
    """What a descriptor says about an operand tile, besides where it starts."""

    mode: int
    leading_bytes: int
    stride_bytes: int
    alignment: int
    """Bytes the allocation must be aligned to for the hardware's swizzle (on addresses) to be
    the layout's (on offsets from the allocation)."""


class NotDescribable(Exception):
    """An operand layout no matrix descriptor describes (the message says why)."""


def descriptor_form(layout: Layout | ComposedLayout, rows: int, nbytes: int) -> DescriptorForm:
    """The descriptor of a K-major rows×(32 bytes) operand tile with this layout."""
    k = 32 // nbytes
    if isinstance(layout, ComposedLayout):
        swizzle, inner = layout.outer, layout.inner
        if not isinstance(swizzle, Swizzle) or not isinstance(inner, Layout):
            raise NotDescribable(f"{layout} is not a swizzle over a plain layout")
    else:
        swizzle, inner = Swizzle(0, 0, 0), layout
    per_16 = 16 // nbytes  # elements per 16-byte chunk
    shift = per_16.bit_length() - 1
    offsets = _table(inner, rows, k)  # (rows, k) element offsets before swizzling
    r = np.arange(rows)[:, None]
    kk = np.arange(k)[None, :]
    if swizzle.bits == 0:
        lead = int(offsets[0, per_16]) if k > per_16 else 0
        stride = int(offsets[8, 0]) if rows > 8 else 0
        expected = (r % 8) * per_16 + kk % per_16 + (kk // per_16) * lead + (r // 8) * stride
        form = DescriptorForm(NO_SWIZZLE, lead * nbytes, stride * nbytes, 16)
    elif swizzle.bits in _MODES and (swizzle.base, swizzle.shift) == (shift, 3):
        width = 16 << swizzle.bits  # bytes per swizzled row
        row = width // nbytes
        stride = int(offsets[8, 0]) if rows > 8 else 8 * row
        expected = (r % 8) * row + kk + (r // 8) * stride  # an operand row (32 bytes) fits in a swizzled one
        form = DescriptorForm(_MODES[swizzle.bits], 16, stride * nbytes, 8 * width)
    else:
        raise NotDescribable(f"the swizzle {swizzle} is neither none nor a 128-, 64- or 32-byte swizzle "
                             f"Swizzle(3 | 2 | 1, {shift}, 3) for {nbytes}-byte elements")
    if not np.array_equal(offsets, expected):
        bad = np.argwhere(offsets != expected)[0]
        raise NotDescribable(f"element (row {bad[0]}, k {bad[1]}) sits at offset {int(offsets[tuple(bad)])}, where the "
                             f"{'swizzled' if form.mode else 'core-matrix'} K-major form puts "
                             f"{int(expected[tuple(bad)])}")
    for name, value in (("leading", form.leading_bytes), ("stride", form.stride_bytes)):
        if value % 16 or not 0 <= value < (1 << 18):
            raise NotDescribable(f"the {name} byte offset {value} is not a multiple of 16 below 2^18")
    return form


def _table(layout: Layout, rows: int, cols: int) -> np.ndarray:
    """Offsets of a rank-2 layout at every (row, col), columns of the tile fastest-varying last."""
    flat = layout.offsets()  # colexicographic: row fastest
    return np.asarray(flat, np.int64).reshape(cols, rows).T


def wgmma_text(atom: MMAAtom, first: int) -> str:
    """The inline PTX of one ``wgmma.mma_async`` of `atom`: accumulators $0…, then from operand
    `first` on the A and B descriptors and a word that is nonzero when the accumulators are
    added to."""
    m, n, k = atom.shape
    a, b = OPERAND_TYPES[atom.a_dtype.name], OPERAND_TYPES[atom.b_dtype.name]
    regs = ", ".join(f"${i}" for i in range(n // 2))
    transposes = ", 0, 0" if k == 16 else ""  # the K-major bit exists for 16-bit inputs only
    return ("{ .reg .pred p; setp.ne.b32 p, $" + str(first + 2) + ", 0; "
            f"wgmma.mma_async.sync.aligned.m{m}n{n}k{k}.f32.{a}.{b} "
            f"{{{regs}}}, ${first}, ${first + 1}, p, 1, 1{transposes}; }}")


def runs_as_wgmma(atom: MMAAtom) -> str | None:
    """Why `atom` cannot run as a wgmma with both operands in shared memory, or None if it can."""
    m, n, k = atom.shape
    if atom.a_layout is not None or atom.b_layout is not None:
        return "wgmma here reads both operands from shared memory"
    if (m, atom.threads) != (64, 128) or k not in (16, 32) or n % 8 or not 8 <= n <= 256:
        return (f"wgmma has shapes 64×n×16 (16-bit inputs) and 64×n×32 (8-bit), n a multiple of 8 up to 256, over "
                f"128 threads, not {m}×{n}×{k}")
    names = (atom.a_dtype.name, atom.b_dtype.name)
    sixteen = names[0] == names[1] and names[0] in ("bf16", "f16") and k == 16
    eight = all(x in ("f8e4m3", "f8e5m2") for x in names) and k == 32
    if not (sixteen or eight) or atom.c_dtype.name != "f32":
        return (f"wgmma here multiplies bf16 or f16 (k 16) or fp8 e4m3/e5m2 (k 32) into f32, not "
                f"{atom.a_dtype}·{atom.b_dtype} → {atom.c_dtype} with k {k}")
    expected = Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))
    if not np.array_equal(atom.c_layout.offsets(), expected.offsets()) or atom.c_layout.size() != expected.size():
        return "its accumulator layout is not wgmma's register fragment"
    return None
