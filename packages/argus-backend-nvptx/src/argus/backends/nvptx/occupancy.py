"""How many blocks of a kernel fit on one multiprocessor, and what limits them.

Computed from ptxas's report and the architecture's per-multiprocessor limits, with the
allocation rules of the CUDA occupancy calculator: registers are given to warps in units of
256, shared memory to blocks in units of 128 bytes plus 1 KB the system reserves per block.
"""

from __future__ import annotations

from dataclasses import dataclass

from .targets import Arch
from .toolchain import Resources

_REGISTER_UNIT = 256
_SHARED_UNIT = 128
_RESERVED_SHARED = 1024


@dataclass(frozen=True)
class Occupancy:
    blocks_per_sm: int
    warps_per_sm: int
    limit: str
    """What stops one more block: "threads", "blocks", "registers" or "shared memory"."""

    def text(self, arch: Arch) -> str:
        percent = 100 * self.warps_per_sm * 32 // arch.threads_per_sm
        return f"{self.blocks_per_sm} block(s) per SM, {self.warps_per_sm} warps ({percent}%), limited by {self.limit}"


def occupancy(resources: Resources, arch: Arch, threads: int) -> Occupancy:
    warps = -(-threads // 32)
    per_warp = -(-max(resources.registers, 1) * 32 // _REGISTER_UNIT) * _REGISTER_UNIT
    used = resources.shared_bytes + resources.dynamic_shared_bytes
    shared = -(-used // _SHARED_UNIT) * _SHARED_UNIT + _RESERVED_SHARED
    limits = {
        "threads": arch.threads_per_sm // (warps * 32),
        "blocks": arch.blocks_per_sm,
        "registers": (arch.registers_per_sm // per_warp) // warps,
        "shared memory": arch.shared_per_sm // shared,
    }
    limit = min(limits, key=lambda k: limits[k])
    blocks = limits[limit]
    return Occupancy(blocks, blocks * warps, limit)
