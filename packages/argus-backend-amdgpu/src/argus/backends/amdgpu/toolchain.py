"""The tools behind the stages: llvmlite (LLVM IR → optimized LLVM IR → AMDGPU assembly and a
relocatable code object) and ``ld.lld`` (code object → HSACO, the file the HIP runtime loads).

llvmlite is imported only here, when a stage is asked for. ``ld.lld`` is looked for in
``ARGUS_LD_LLD``, ROCm's LLVM (``$ROCM_PATH/llvm/bin``, ``/opt/rocm/llvm/bin``), then the
``PATH``; without one, building stops at the relocatable object and says so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from argus.dsl.errors import ArgusError

from .targets import Chip

_LOCK = threading.Lock()  # LLVM's global state (target registration, pass pipelines)


class ToolchainError(ArgusError):
    """An external tool (llvmlite, ld.lld) failed or is missing."""


@cache
def _llvm() -> Any:
    try:
        import llvmlite.binding as llvm
    except ImportError as err:  # pragma: no cover - a dependency of this package
        raise ToolchainError(f"the amdgpu backend needs llvmlite ({err}); pip install 'llvmlite>=0.50'") from err
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm


@cache
def _machine(chip: Chip) -> Any:
    target = _llvm().Target.from_triple("amdgcn-amd-amdhsa")
    return target.create_target_machine(cpu=chip.name, features="", opt=3)


def optimize(text: str, chip: Chip) -> str:
    """Parse, verify and optimize (O3) an LLVM module; returns the optimized module's text."""
    with _LOCK:
        llvm = _llvm()
        machine = _machine(chip)
        try:
            module = llvm.parse_assembly(text)
            module.verify()
        except RuntimeError as err:
            raise ToolchainError(f"internal: the generated LLVM IR is invalid: {err}") from err
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        builder = llvm.create_pass_builder(machine, options)
        builder.getModulePassManager().run(module, builder)
        return str(module)


def to_assembly(llvm_text: str, chip: Chip) -> str:
    """The AMDGPU assembly of an (optimized) LLVM module, with its code-object metadata."""
    with _LOCK:
        return str(_machine(chip).emit_assembly(_llvm().parse_assembly(llvm_text)))


def to_object(llvm_text: str, chip: Chip) -> bytes:
    """A relocatable ELF code object of an (optimized) LLVM module."""
    with _LOCK:
        return bytes(_machine(chip).emit_object(_llvm().parse_assembly(llvm_text)))


def find_linker() -> str | None:
    explicit = os.environ.get("ARGUS_LD_LLD")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root and (Path(root) / "llvm" / "bin" / "ld.lld").exists():
            return str(Path(root) / "llvm" / "bin" / "ld.lld")
    return shutil.which("ld.lld")


def link(obj: bytes) -> bytes:
    """The HSACO of a relocatable code object (``ld.lld -shared``)."""
    linker = find_linker()
    if linker is None:
        raise ToolchainError("linking a code object into an HSACO needs ld.lld (ROCm's /opt/rocm/llvm/bin/ld.lld, "
                             "the system's lld package, or ARGUS_LD_LLD=path); none was found. The assembly and "
                             "resources stages need no linker")
    with tempfile.TemporaryDirectory(prefix="argus-amdgpu-") as work:
        source, target = Path(work) / "kernel.o", Path(work) / "kernel.hsaco"
        source.write_bytes(obj)
        done = subprocess.run([linker, "-shared", "-o", str(target), str(source)], capture_output=True, text=True)
        if done.returncode != 0:
            raise ToolchainError(f"ld.lld failed: {done.stderr.strip()}")
        return target.read_bytes()


@dataclass(frozen=True)
class Resources:
    """What the code object's metadata says about one kernel."""

    vgprs: int
    agprs: int
    sgprs: int
    vgpr_spills: int
    sgpr_spills: int
    lds_bytes: int
    scratch_bytes: int

    def waves_per_simd(self, chip: Chip) -> int:
        """Waves of this kernel one SIMD holds, as far as registers allow (VGPRs and AGPRs
        share one file, allocated in blocks of 8)."""
        used = -(-max(self.vgprs + self.agprs, 1) // 8) * 8
        return min(chip.waves_per_simd, chip.vgprs_per_simd_lane // used)

    def text(self, chip: Chip) -> str:
        return (f"{self.vgprs} VGPRs, {self.agprs} AGPRs, {self.sgprs} SGPRs, {self.lds_bytes} bytes of LDS, "
                f"{self.scratch_bytes} bytes of scratch, spills: {self.vgpr_spills} VGPRs / {self.sgpr_spills} SGPRs; "
                f"{self.waves_per_simd(chip)} wave(s) per SIMD by registers")


_FIELDS = {"vgprs": ".vgpr_count", "agprs": ".agpr_count", "sgprs": ".sgpr_count", "vgpr_spills": ".vgpr_spill_count",
           "sgpr_spills": ".sgpr_spill_count", "lds_bytes": ".group_segment_fixed_size",
           "scratch_bytes": ".private_segment_fixed_size"}


def resources(assembly: str) -> Resources:
    """The resources of the (only) kernel in an assembly listing, from its metadata."""
    found = {}
    for field, key in _FIELDS.items():
        match = re.search(rf"^\s*-?\s*{re.escape(key)}:\s+(\d+)", assembly, re.MULTILINE)
        if match is None:
            raise ToolchainError(f"internal: the assembly has no {key} in its metadata")
        found[field] = int(match.group(1))
    return Resources(**found)
