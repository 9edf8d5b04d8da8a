"""The AMD chips this backend compiles for, and what each one has."""

from __future__ import annotations

from dataclasses import dataclass

from argus.dsl.backends import TargetError


@dataclass(frozen=True)
class Chip:
    """One ``amdgpu:<name>`` target: the LLVM processor and its per-workgroup limits."""

    name: str
    product: str
    lds_bytes: int
    """Local data share (shared memory) one workgroup may use."""
    vgprs_per_simd_lane: int = 512
    """The unified register file (VGPRs and AGPRs) a SIMD's waves share, per lane."""
    waves_per_simd: int = 8
    wide_mfma: bool = False
    """Whether the chip has CDNA4's 16-bit MFMAs with twice the K (16×16×32, 32×32×16)."""
    lds_load_bytes: tuple[int, ...] = (4,)
    """The bytes per lane a buffer load straight into LDS may move."""


CHIPS: dict[str, Chip] = {
    c.name: c
    for c in (
        Chip("gfx942", "MI300X (CDNA3)", 64 * 1024),
        Chip("gfx950", "MI350X (CDNA4)", 160 * 1024, wide_mfma=True, lds_load_bytes=(4, 16)),
    )
}

DEFAULT = "gfx942"


def chip(name: str) -> Chip:
    """The chip called `name` (``""`` is the default, gfx942)."""
    found = CHIPS.get(name or DEFAULT)
    if found is None:
        raise TargetError(f"unknown AMD chip {name!r}; the amdgpu backend targets "
                          f"{', '.join(f'amdgpu:{n} ({c.product})' for n, c in CHIPS.items())}")
    return found
