"""The tools behind the stages: llvmlite (LLVM IR → optimized LLVM IR → PTX), ptxas (PTX →
cubin, with its resource report) and cuobjdump (cubin → SASS).

llvmlite is imported only here, when a stage is asked for, so that ``import argus.dsl`` never
loads LLVM. ptxas is looked for in ``ARGUS_PTXAS``, then the ``nvidia-cuda-nvcc`` wheel, then
``$CUDA_HOME/bin`` and the ``PATH`` (`find_tool`).
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

from .errors import ToolchainError
from .targets import Arch

_LOCK = threading.Lock()  # LLVM's global state (target registration, pass pipelines)


@cache
def _llvm() -> Any:
    try:
        import llvmlite.binding as llvm
    except ImportError as err:  # pragma: no cover - a dependency of this package
        raise ToolchainError(f"the nvptx backend needs llvmlite ({err}); pip install 'llvmlite>=0.50'") from err
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    # 32-bit pointers for shared (and local, const) memory: their addresses fit, and 64-bit
    # address arithmetic costs two instructions per access
    llvm.set_option("", "--nvptx-short-ptr")
    return llvm


@cache
def _machine(arch: Arch) -> Any:
    llvm = _llvm()
    target = llvm.Target.from_triple("nvptx64-nvidia-cuda")
    return target.create_target_machine(cpu=arch.name, features=arch.llvm_features, opt=3)


def optimize(text: str, arch: Arch) -> str:
    """Parse, verify and optimize (O3) an LLVM module; returns the optimized module's text."""
    with _LOCK:
        llvm = _llvm()
        machine = _machine(arch)
        try:
            module = llvm.parse_assembly(text)
            module.verify()
        except RuntimeError as err:
            raise ToolchainError(f"internal: the generated LLVM IR is invalid: {err}") from err
        module.data_layout = str(machine.target_data)
        options = llvm.create_pipeline_tuning_options(speed_level=3)
        builder = llvm.create_pass_builder(machine, options)
        builder.getModulePassManager().run(module, builder)
        return str(module)


def to_ptx(llvm_text: str, arch: Arch) -> str:
    """PTX of an (optimized) LLVM module."""
    with _LOCK:
        llvm = _llvm()
        module = llvm.parse_assembly(llvm_text)
        return str(_machine(arch).emit_assembly(module))


@cache
def find_tool(name: str) -> str | None:
    """A CUDA tool (ptxas, cuobjdump, nvdisasm): ``ARGUS_<NAME>``, NVIDIA's PyPI wheels
    (``nvidia/*/bin``), ``$CUDA_HOME/bin``, then the ``PATH``."""
    explicit = os.environ.get(f"ARGUS_{name.upper()}")
    if explicit:
        return explicit if Path(explicit).exists() else None
    try:
        import nvidia  # type: ignore[import-not-found]  # the namespace of NVIDIA's wheels

        for root in nvidia.__path__:
            for candidate in sorted(Path(root).glob(f"*/bin/{name}")):
                return str(candidate)
    except ImportError:
        pass
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if home and (Path(home) / "bin" / name).exists():
        return str(Path(home) / "bin" / name)
    return shutil.which(name)


def find_ptxas() -> str | None:
    return find_tool("ptxas")


@dataclass(frozen=True)
class Resources:
    """What ptxas reports for one kernel."""

    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    shared_bytes: int
    dynamic_shared_bytes: int = 0
    """Shared memory the launch gives (tiles past the static limit), beside the static."""

    def text(self) -> str:
        dynamic = f" + {self.dynamic_shared_bytes} dynamic" if self.dynamic_shared_bytes else ""
        return (f"{self.registers} registers, {self.shared_bytes} bytes of static shared memory{dynamic}, "
                f"{self.stack_bytes} bytes of stack, spills: {self.spill_stores} B stored / {self.spill_loads} B loaded")


def assemble(ptx: str, arch: Arch) -> tuple[bytes, Resources]:
    """A cubin of `ptx` for `arch` and ptxas's resource report."""
    ptxas = find_ptxas()
    if ptxas is None:
        raise ToolchainError("ptxas was not found; install the nvidia-cuda-nvcc wheel "
                             "(pip install nvidia-cuda-nvcc), set ARGUS_PTXAS, or put CUDA's bin on the PATH")
    with tempfile.TemporaryDirectory(prefix="argus-ptxas-") as tmp:
        source, out = Path(tmp) / "kernel.ptx", Path(tmp) / "kernel.cubin"
        source.write_text(ptx)
        run = subprocess.run([ptxas, f"-arch={arch.name}", "-O3", "-v", str(source), "-o", str(out)],
                             capture_output=True, text=True)
        if run.returncode != 0:
            raise ToolchainError(f"ptxas failed for {arch.name}:\n{run.stderr.strip()}")
        return out.read_bytes(), _resources(run.stderr)


def _resources(report: str) -> Resources:
    def number(pattern: str) -> int:
        found = re.search(pattern, report)
        return int(found.group(1)) if found else 0

    return Resources(
        registers=number(r"Used (\d+) registers"),
        spill_stores=number(r"(\d+) bytes spill stores"),
        spill_loads=number(r"(\d+) bytes spill loads"),
        stack_bytes=number(r"(\d+) bytes stack frame"),
        shared_bytes=number(r"(\d+) bytes smem"),
    )


def disassemble(cubin: bytes) -> str:
    """The SASS of a cubin (nvdisasm; cuobjdump, which needs nvdisasm too, as a fallback)."""
    tool = find_tool("nvdisasm") or find_tool("cuobjdump")
    if tool is None:
        raise ToolchainError("SASS needs nvdisasm (CUDA's bin, or the nvidia-cuda-nvdisasm wheel)")
    with tempfile.TemporaryDirectory(prefix="argus-sass-") as tmp:
        path = Path(tmp) / "kernel.cubin"
        path.write_bytes(cubin)
        args = [tool, "--dump-sass", str(path)] if tool.endswith("cuobjdump") else [tool, str(path)]
        run = subprocess.run(args, capture_output=True, text=True)
        if run.returncode != 0:
            raise ToolchainError(f"{Path(tool).name} failed: {run.stderr.strip()}")
        return run.stdout
