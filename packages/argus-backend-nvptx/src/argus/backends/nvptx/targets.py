"""The NVIDIA architectures this backend compiles for, and what each one has."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import TargetError


@dataclass(frozen=True)
class Arch:
    """One ``nvptx:<name>`` target: the LLVM CPU, the PTX version it needs, its features."""

    name: str
    capability: int
    """Compute capability as an int: 80, 90."""
    ptx: int
    """PTX ISA version, times ten (80 is PTX 8.0)."""
    features: frozenset[str]
    shared_per_sm: int = 233472
    """Bytes of shared memory a multiprocessor gives to resident blocks (228 KB on Hopper)."""
    registers_per_sm: int = 65536
    threads_per_sm: int = 2048
    blocks_per_sm: int = 32

    @property
    def llvm_features(self) -> str:
        return f"+ptx{self.ptx}"

    def has(self, feature: str) -> bool:
        return feature in self.features


_AMPERE = frozenset({"mma.sync", "ldmatrix", "cp.async", "bf16"})
_HOPPER = _AMPERE | {"mma.fp8", "stmatrix", "mbarrier.tx", "tma", "clusters", "setmaxnreg.none", "fence.proxy.async"}

ARCHS: dict[str, Arch] = {
    a.name: a
    for a in (
        Arch("sm_80", 80, 70, _AMPERE, shared_per_sm=167936),  # A100: 164 KB
        # PTX 8.4: the first with fp8 mma.sync (drivers from CUDA 12.4 on load it)
        Arch("sm_90", 90, 84, _HOPPER),
        # the "a" variant adds the architecture-specific instructions: wgmma and setmaxnreg
        Arch("sm_90a", 90, 84, (_HOPPER - {"setmaxnreg.none"}) | {"wgmma", "setmaxnreg"}),
    )
}

DEFAULT = "sm_90a"


def arch(name: str) -> Arch:
    """The architecture called `name` (``""`` is the default, sm_90a)."""
    found = ARCHS.get(name or DEFAULT)
    if found is None:
        raise TargetError(f"unknown NVIDIA architecture {name!r}; the nvptx backend targets "
                          f"{', '.join('nvptx:' + n for n in ARCHS)}")
    return found
