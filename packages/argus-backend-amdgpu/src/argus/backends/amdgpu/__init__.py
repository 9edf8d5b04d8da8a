"""argus.backends.amdgpu: AMD CDNA GPUs (gfx942, gfx950) for Argus kernels.

Registered under the ``argus.backends`` entry point as `BACKEND`; compiling goes through LLVM
(llvmlite) to AMDGPU assembly and a relocatable code object, linked into an HSACO where
``ld.lld`` is installed, which the runtime launches through HIP (hip-python). Nothing heavy is
imported until a stage or a launch needs it.
"""

from __future__ import annotations

from typing import Any

from argus.dsl.backends import BackendSpec, Target


def _compiler(target: Target) -> Any:
    from .compiler import AmdgpuCompiler

    return AmdgpuCompiler(target)


def _runtime(target: Target) -> Any:
    from .runtime import AmdgpuRuntime

    return AmdgpuRuntime(target)


def _language() -> Any:
    from .language import LANGUAGE

    return LANGUAGE


BACKEND = BackendSpec("amdgpu", ("amdgpu",), ("mlir", "lowered", "llvm", "asm", "resources", "hsaco"),
                      _compiler, _runtime, _language)

__all__ = ["BACKEND"]
