"""argus.backends.nvptx: NVIDIA GPUs (sm_80, sm_90, sm_90a) for Argus kernels.

Registered under the ``argus.backends`` entry point as `BACKEND`; compiling goes through LLVM
(llvmlite) to PTX and, where ptxas is installed, to a cubin; running goes through the CUDA
driver (cuda-bindings). Nothing heavy is imported until a stage or a launch needs it.
"""

from __future__ import annotations

from typing import Any

from argus.dsl.backends import BackendSpec, Target


def _compiler(target: Target) -> Any:
    from .compiler import NvptxCompiler

    return NvptxCompiler(target)


def _runtime(target: Target) -> Any:
    from .runtime import NvptxRuntime

    return NvptxRuntime(target)


def _language() -> Any:
    from .language import LANGUAGE

    return LANGUAGE


BACKEND = BackendSpec("nvptx", ("nvptx",), ("mlir", "lowered", "llvm", "ptx", "sass", "resources"), _compiler, _runtime,
                      _language)

__all__ = ["BACKEND"]
