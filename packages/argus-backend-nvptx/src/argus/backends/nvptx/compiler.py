"""Compiling a kernel for an NVIDIA architecture: the stages, and the on-disk cache of them.

    canonical argus IR ──lower layouts──► lowered IR ──translate──► LLVM IR ──O3──► LLVM IR
        ──NVPTX──► PTX ──ptxas──► cubin (optional: when ptxas is installed) ──cuobjdump──► SASS

A build is cached under the key of the kernel's IR, the architecture and the package versions,
so a second process loads the PTX (and cubin) without running LLVM. The cache checks every file
it serves (`argus.dsl.cache`); an entry that is damaged, or cannot be read back, is built again.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from typing import Any

from argus.dsl import cache
from argus.dsl.backends import Target
from argus.dsl.ir.lowering import lowered

from . import bulk, copies, matrices  # noqa: F401  # the code of the language's NVIDIA intrinsics
from . import toolchain
from .occupancy import occupancy
from .targets import Arch, arch
from .translate import KernelABI, translate


BUILD = ("abi.json", "ptx", "ll")
"""The files of a cached build (the first one, written last, stands for the entry)."""
ASSEMBLED = ("cubin", "resources.json")
"""The files of its cubin: a second entry under the same key, made only where ptxas is."""


@dataclass
class Binary:
    """A kernel built for one architecture."""

    abi: KernelABI
    arch: Arch
    llvm: str
    ptx: str
    cubin: bytes | None = None
    resources: toolchain.Resources | None = None


def build(compiled: Any, target: Arch, *, assemble: bool | None = None, key: str | None = None) -> Binary:
    """Build (or load from the cache) `compiled` for `target`. The cubin is made when
    `assemble` is true, or when it is None and ptxas is installed. `key` names the kernel's
    specialization (`argus.dsl.kernel.Specialization.key`); without one, its IR does."""
    want_cubin = _want_cubin(assemble)
    disk = disk_key(key if key is not None else compiled.mlir(), target)
    binary = _load(disk, target, want_cubin)
    if binary is not None:
        return binary
    key = disk
    module, locations = lowered(compiled)
    text, abi = translate(module.ops.first, target, locations)
    optimized = toolchain.optimize(text, target)
    binary = Binary(abi, target, optimized, toolchain.to_ptx(optimized, target))
    cache.store_entry(key, dict(zip(BUILD, (json.dumps(abi.to_json()).encode(), binary.ptx.encode(),
                                            binary.llvm.encode()))))
    if want_cubin:
        binary.cubin, resources = toolchain.assemble(binary.ptx, target)
        binary.resources = replace(resources, dynamic_shared_bytes=abi.shared_bytes)
        report = json.dumps(asdict(binary.resources)).encode()
        cache.store_entry(key, dict(zip(ASSEMBLED, (binary.cubin, report))))
    return binary


def cached(key: str, target: Arch, *, assemble: bool | None = None) -> Binary | None:
    """The binary built earlier for the specialization `key`, or None: no IR is needed."""
    return _load(disk_key(key, target), target, _want_cubin(assemble))


def disk_key(source: str, target: Arch) -> str:
    """The name of the disk cache's entry for `source` compiled for `target`: it changes with
    the source, the target, llvmlite's version and this backend's code."""
    return cache.cache_key("argus-nvptx", source, target.name, cache.installed_version("llvmlite"),
                           cache.code_digest(__name__.rpartition(".")[0]))


def _want_cubin(assemble: bool | None) -> bool:
    return assemble if assemble is not None else toolchain.find_ptxas() is not None


def _load(key: str, target: Arch, want_cubin: bool) -> Binary | None:
    binary = cache.load_as(key, BUILD, lambda found: Binary(
        KernelABI.from_json(json.loads(found["abi.json"])), target, found["ll"].decode(),
        found["ptx"].decode()))
    if binary is None or not want_cubin:
        return binary
    assembled = cache.load_as(key, ASSEMBLED, lambda found: (
        found["cubin"], toolchain.Resources(**json.loads(found["resources.json"]))))
    if assembled is None:
        return None
    binary.cubin, binary.resources = assembled
    return binary


class NvptxCompiler:
    """The ``argus compile --target nvptx:<arch>`` stages."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.arch = arch(target.arch)

    def emit(self, compiled: Any, stage: str) -> str:
        if stage == "mlir":
            return compiled.mlir()
        if stage == "lowered":
            return str(lowered(compiled)[0])
        binary = build(compiled, self.arch, assemble=stage in ("sass", "resources"))
        if stage == "llvm":
            return binary.llvm
        if stage == "ptx":
            return binary.ptx
        assert binary.cubin is not None and binary.resources is not None
        if stage == "resources":
            threads = binary.abi.block[0] * binary.abi.block[1] * binary.abi.block[2]
            fit = occupancy(binary.resources, self.arch, threads)
            return (f"{binary.abi.name} ({self.arch.name}, {threads} threads per block): {binary.resources.text()}; "
                    f"{fit.text(self.arch)}")
        return toolchain.disassemble(binary.cubin)
