"""Compiling a kernel for an AMD chip: the stages, and the on-disk cache of them.

    canonical argus IR ──lower layouts──► lowered IR ──translate──► LLVM IR ──O3──► LLVM IR
        ──AMDGPU──► assembly (with the code-object metadata: registers, LDS, scratch)
        ──AMDGPU──► relocatable code object ──ld.lld──► HSACO (when ld.lld is installed)

A build is cached under the key of the kernel's IR (or its specialization), the chip, llvmlite's
version and this package's code, so a second process loads the LLVM IR and assembly without
running the front end or LLVM's optimizer. The cache checks every file it serves
(`argus.dsl.cache`); an entry that is damaged, or cannot be read back, is built again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from argus.dsl import cache
from argus.dsl.backends import Target
from argus.dsl.ir.lowering import lowered
from argus.dsl.llvm import KernelABI

from . import toolchain
from .targets import Chip, chip
from .translate import translate


BUILD = ("abi.json", "ll", "s")
"""The files of a cached build (the first one, written last, stands for the entry)."""


@dataclass
class Binary:
    """A kernel built for one chip (the HSACO is linked on demand: it needs ld.lld)."""

    abi: KernelABI
    chip: Chip
    llvm: str
    assembly: str
    resources: toolchain.Resources
    key: str = ""
    """Its disk-cache entry ("" when not cached), where the linked code object is kept too."""

    def hsaco(self) -> bytes:
        # kept per linker: another ld.lld may link the same object differently
        stage = f"{hashlib.sha256(str(toolchain.find_linker()).encode()).hexdigest()[:12]}.hsaco"
        code = cache.load(self.key, stage) if self.key else None
        if code is None:
            code = toolchain.link(toolchain.to_object(self.llvm, self.chip))
            if self.key:
                cache.store(self.key, stage, code)
        return code


def build(compiled: Any, target: Chip, *, key: str | None = None) -> Binary:
    """`compiled` (an `argus.dsl.kernel.CompiledKernel`) for `target`, up to its assembly, or the
    same from the cache. `key` names the kernel's specialization
    (`argus.dsl.kernel.Specialization.key`); without one, its IR does."""
    disk = disk_key(key if key is not None else compiled.mlir(), target)
    binary = _load(disk, target)
    if binary is not None:
        return binary
    module, locations = lowered(compiled)
    text, abi = translate(module.ops.first, target, locations)
    optimized = toolchain.optimize(text, target)
    assembly = toolchain.to_assembly(optimized, target)
    cache.store_entry(disk, dict(zip(BUILD, (json.dumps(abi.to_json()).encode(), optimized.encode(),
                                             assembly.encode()))))
    return Binary(abi, target, optimized, assembly, toolchain.resources(assembly), disk)


def cached(key: str, target: Chip) -> Binary | None:
    """The binary built earlier for the specialization `key`, or None: no IR is needed."""
    return _load(disk_key(key, target), target)


def disk_key(source: str, target: Chip) -> str:
    """The name of the disk cache's entry for `source` compiled for `target`: it changes with
    the source, the target, llvmlite's version and this backend's code."""
    return cache.cache_key("argus-amdgpu", source, target.name, cache.installed_version("llvmlite"),
                           cache.code_digest(__name__.rpartition(".")[0]))


def _load(key: str, target: Chip) -> Binary | None:
    def read(found: dict[str, bytes]) -> Binary:
        assembly = found["s"].decode()
        abi = KernelABI.from_json(json.loads(found["abi.json"]))
        return Binary(abi, target, found["ll"].decode(), assembly, toolchain.resources(assembly), key)

    return cache.load_as(key, BUILD, read)


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
        path = cache.output_file(f"{binary.abi.name}.{self.chip.name}.hsaco", code)
        return f"{path} ({len(code)} bytes)"
