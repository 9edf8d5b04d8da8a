"""Compiling a kernel for an AMD chip: the stages.

    canonical argus IR ──lower layouts──► lowered IR ──translate──► LLVM IR ──O3──► LLVM IR
        ──AMDGPU──► assembly (with the code-object metadata: registers, LDS, scratch)
        ──AMDGPU──► relocatable code object ──ld.lld──► HSACO (when ld.lld is installed)
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus.dsl import cache
from argus.dsl.backends import Target
from argus.dsl.lowering import lowered
from argus.dsl.llvm import KernelABI

from . import toolchain
from .targets import Chip, chip
from .translate import translate


@dataclass
class Binary:
    """A kernel built for one chip (the HSACO is linked on demand: it needs ld.lld)."""

    abi: KernelABI
    chip: Chip
    llvm: str
    assembly: str
    resources: toolchain.Resources

    def hsaco(self) -> bytes:
        return toolchain.link(toolchain.to_object(self.llvm, self.chip))


def build(compiled: Any, target: Chip) -> Binary:
    """`compiled` (an `argus.dsl.kernel.CompiledKernel`) for `target`, up to its assembly."""
    module, locations = lowered(compiled)
    text, abi = translate(module.ops.first, target, locations)
    optimized = toolchain.optimize(text, target)
    assembly = toolchain.to_assembly(optimized, target)
    return Binary(abi, target, optimized, assembly, toolchain.resources(assembly))


class AmdgpuCompiler:
    """The ``argus compile --target amdgpu:<chip>`` stages; ``hsaco`` writes the code object
    to a file (in the kernel cache, or a temporary folder without one) and prints its path."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.chip = chip(target.arch)

    def emit(self, compiled: Any, stage: str) -> str:
        if stage == "mlir":
            return compiled.mlir()  # type: ignore[no-any-return]
        if stage == "lowered":
            return str(lowered(compiled)[0])
        binary = build(compiled, self.chip)
        if stage == "llvm":
            return binary.llvm
        if stage == "asm":
            return binary.assembly
        if stage == "resources":
            threads = binary.abi.block[0] * binary.abi.block[1] * binary.abi.block[2]
            return f"{binary.abi.name} ({self.chip.name}, {threads} work-items per workgroup): " \
                   f"{binary.resources.text(self.chip)}"
        code = binary.hsaco()
        folder = cache.cache_dir() or Path(tempfile.mkdtemp(prefix="argus-amdgpu-"))
        path = folder / f"{binary.abi.name}.{self.chip.name}.hsaco"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(code)
        return f"{path} ({len(code)} bytes)"
