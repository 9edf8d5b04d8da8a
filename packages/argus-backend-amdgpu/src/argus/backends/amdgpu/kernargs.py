"""The kernel-argument segment of an AMD kernel: where each parameter goes, checked against the
code object's metadata, and the buffer a launch hands to HIP.

`translate` gives a kernel one parameter per tensor (a ``ptr addrspace(1)``, 8 bytes), one
``i32`` per named dim, then the scalars (``i32``, ``float``…). The AMDGPU ABI places explicit
arguments in order, each at the next multiple of its own alignment, which for these types is
their size: the same rule as `argus.dsl.launch_args.ParamLayout`. The metadata LLVM writes
(``amdhsa.kernels`` → ``.args``) says where the code reads each one; `checked_layout` refuses
a kernel whose metadata disagrees, so a launch never passes arguments the code would misread.
Hidden arguments (``hidden_*``, after the explicit ones) are the HIP runtime's to fill: these
kernels read the grid's size from the dispatch packet, and LLVM adds hidden arguments only for
what a kernel uses.
"""

from __future__ import annotations

import ctypes
import re
from collections.abc import Sequence
from dataclasses import dataclass

from argus.dsl.launch_args import ParamLayout
from argus.dsl.llvm import KernelABI

from .toolchain import ToolchainError

#: The markers of hipModuleLaunchKernel's ``extra`` array (HIP_LAUNCH_PARAM_*).
BUFFER_POINTER, BUFFER_SIZE, END = 1, 2, 3


@dataclass(frozen=True)
class MetadataArgument:
    """One kernel argument as the code object's metadata describes it."""

    name: str
    offset: int
    size: int
    value_kind: str
    """``global_buffer`` for a pointer, ``by_value`` for a number, ``hidden_*`` for the runtime's."""


_ARGUMENT = re.compile(r"^\s*-?\s*\.(?P<key>[a-z_]+):\s+(?P<value>\S+)\s*$")


def metadata_arguments(assembly: str) -> list[MetadataArgument]:
    """The ``.args`` of the (only) kernel in an assembly listing's metadata, in order."""
    start = assembly.find("amdhsa.kernels:")
    if start < 0:
        raise ToolchainError("internal: the assembly has no amdhsa.kernels metadata")
    lines = assembly[start:].splitlines()[1:]
    out: list[MetadataArgument] = []
    inside, indent = False, -1
    current: dict[str, str] = {}
    for line in lines:
        if line.strip() == ".args:":
            inside, indent = True, len(line) - len(line.lstrip())
            continue
        if not inside:
            continue
        depth = len(line) - len(line.lstrip())
        if depth <= indent and not line.lstrip().startswith("-"):
            break  # the next field of the kernel: the list is over
        match = _ARGUMENT.match(line)
        if match is None:
            continue
        if line.lstrip().startswith("-") and current:
            out.append(_argument(current))
            current = {}
        current[match["key"]] = match["value"]
    if current:
        out.append(_argument(current))
    return out


def _argument(fields: dict[str, str]) -> MetadataArgument:
    return MetadataArgument(fields.get("name", "?"), int(fields["offset"]), int(fields["size"]), fields["value_kind"])


_KINDS = {"pointer": "global_buffer", "dim": "by_value", "scalar": "by_value"}


def checked_layout(abi: KernelABI, assembly: str) -> ParamLayout:
    """Where a launch puts each parameter, after checking that the code reads it there."""
    layout = ParamLayout.of(abi)
    explicit = [a for a in metadata_arguments(assembly) if not a.value_kind.startswith("hidden_")]
    if len(explicit) != len(abi.params):
        raise ToolchainError(f"internal: {abi.name} has {len(abi.params)} parameters but its code object lists "
                             f"{len(explicit)} explicit kernel arguments")
    for param, offset, size, found in zip(abi.params, layout.offsets, layout.sizes, explicit):
        expected = (offset, size, _KINDS.get(param.kind, "?"))
        if (found.offset, found.size, found.value_kind) != expected:
            raise ToolchainError(f"internal: {abi.name}'s parameter {param.name!r} would be passed at byte {offset} "
                                 f"({size} bytes, {expected[2]}) but its code reads it at byte {found.offset} "
                                 f"({found.size} bytes, {found.value_kind})")
    return layout


class KernargBuffer:
    """One launch's kernel arguments and the ``extra`` array that hipModuleLaunchKernel reads
    them through: ``{BUFFER_POINTER, buffer, BUFFER_SIZE, &size, END}``. HIP copies the
    arguments when the launch is made, so one buffer (per thread) serves every launch."""

    def __init__(self, layout: ParamLayout) -> None:
        self.layout = layout
        self.buffer = ctypes.create_string_buffer(max(layout.size, 1))
        self.size = ctypes.c_size_t(layout.size)
        self.extra = (ctypes.c_void_p * 5)(BUFFER_POINTER, ctypes.addressof(self.buffer), BUFFER_SIZE,
                                           ctypes.addressof(self.size), END)

    def pack(self, values: Sequence[int | float]) -> int:
        """Write the parameters; returns the address of the ``extra`` array."""
        self.layout.pack_into(self.buffer, values)
        return ctypes.addressof(self.extra)

    def bytes(self) -> bytes:
        """The arguments as HIP will copy them."""
        return self.buffer.raw[:self.layout.size]
