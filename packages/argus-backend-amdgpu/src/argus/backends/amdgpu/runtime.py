"""Running kernels on AMD GPUs: what is needed, and a clear refusal until it is there.

Launching needs a ROCm machine with an AMD GPU, the HIP runtime's Python bindings
(``pip install 'argus-backend-amdgpu[hip]'``) and ``ld.lld`` to link the code object. This
backend is compiled and inspected without AMD hardware; its kernels' semantics are checked on
the interpreter (``argus run`` with numpy arrays, or target ``interp``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus.dsl.backends import Target

from . import toolchain
from .targets import chip


def availability() -> str | None:
    """What is missing to launch kernels here, or None when nothing is."""
    missing = []
    try:
        from hip import hip  # type: ignore[import-not-found]
    except ImportError:
        missing.append("the HIP Python bindings (pip install 'argus-backend-amdgpu[hip]', on a ROCm machine)")
    else:
        _, count = hip.hipGetDeviceCount()
        if count < 1:
            missing.append("an AMD GPU visible to the HIP runtime")
    if toolchain.find_linker() is None:
        missing.append("ld.lld, to link code objects (ROCm's /opt/rocm/llvm/bin/ld.lld or the system's lld)")
    return "; ".join(missing) or None


class AmdgpuRuntime:
    """The runtime behind ``kernel[grid](*args)`` for ``amdgpu`` targets."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.chip = chip(target.arch)

    def launch(self, kernel: Any, grid: tuple[int, ...], args: Sequence[Any]) -> None:
        missing = availability()
        raise toolchain.ToolchainError(
            f"{kernel.kernel.name}: launching on amdgpu:{self.chip.name} needs " + (missing or "a HIP launch path")
            + "; this build of the amdgpu backend compiles and inspects kernels (argus compile --target "
            f"amdgpu:{self.chip.name} --emit asm|resources|hsaco) and does not launch them yet")
