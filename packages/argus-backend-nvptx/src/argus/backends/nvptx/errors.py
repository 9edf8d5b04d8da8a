"""The errors of the nvptx backend; all are `argus.dsl` errors, so callers catch one base class."""

from __future__ import annotations

from argus.dsl.backends import TargetError
from argus.dsl.errors import ArgusError, ArgusLaunchError, CodegenError


class ToolchainError(ArgusError):
    """An external tool (llvmlite, ptxas, the CUDA driver's JIT) failed or is missing."""


class CudaError(ArgusLaunchError):
    """A CUDA driver call failed while loading or launching a kernel."""


__all__ = ["CodegenError", "CudaError", "TargetError", "ToolchainError"]
