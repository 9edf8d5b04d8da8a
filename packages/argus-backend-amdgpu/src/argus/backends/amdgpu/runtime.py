"""Loading and launching kernels on AMD GPUs through the HIP runtime (hip-python).

The launch is the NVIDIA one: ``kernel[grid](*args)`` with torch tensors, CuPy arrays, anything
with ``__cuda_array_interface__`` or any DLPack producer on a ROCm device. Every argument is
checked before anything reaches the GPU (`argus.dsl.launch_args`: element type, contiguity,
device, alignment, dims named alike, the kernel's assumptions); the linked HSACO is loaded with
hipModuleLoadData, and hipModuleLaunchKernel gets the kernel arguments in one buffer through
``extra`` (`kernargs`: laid out as the code object's metadata says the code reads them). A HIP
error becomes a `HipError` naming the kernel and the launch. The kernel runs on the stream
given, else torch's (or CuPy's) current stream, else the default one;
``ARGUS_LAUNCH_BLOCKING=1`` waits for every launch and reports its errors there.

Launching needs a ROCm machine with an AMD GPU, the HIP runtime's Python bindings
(``pip install 'argus-backend-amdgpu[hip]'``) and ``ld.lld`` to link the code object;
`availability()` says which of them is missing. No AMD GPU was available to this project:
this path is tested against a stand-in for the HIP bindings that records each call, and has
never run on hardware.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence
from typing import Any

from argus.dsl import launch_args
from argus.dsl.backends import Target
from argus.dsl.errors import ArgusLaunchError
from argus.dsl.launch_args import DeviceArray, c_strides, read_dlpack

from . import compiler, toolchain
from .compiler import Binary
from .kernargs import KernargBuffer, checked_layout
from .targets import Chip, chip

#: DLPack's device type of ROCm GPUs (kDLROCM).
DLPACK_ROCM = 10


class HipError(ArgusLaunchError):
    """A HIP runtime call failed, or a launch's arguments cannot run on the AMD GPU."""


def _hip() -> Any:
    """The HIP runtime's bindings (``from hip import hip``)."""
    try:
        from hip import hip  # type: ignore[import-not-found]
    except ImportError as err:
        raise toolchain.ToolchainError("running on AMD GPUs needs the HIP runtime's Python bindings: pip install "
                                       "'argus-backend-amdgpu[hip]' (hip-python, on a ROCm machine)") from err
    return hip


def check(result: Any, what: str) -> Any:
    """The values of a HIP call (hip-python returns the error first), or a HipError naming
    `what`, the error and HIP's description of it."""
    err: Any
    err, *values = result if isinstance(result, tuple) else (result,)
    code = int(getattr(err, "value", err))
    if code != 0:  # hipSuccess
        name = getattr(err, "name", f"HIP error {code}")
        raise HipError(f"{what}: {name}: {_error_text(err)}")
    return values[0] if len(values) == 1 else tuple(values) if values else None


def _error_text(err: Any) -> str:
    try:
        text = _hip().hipGetErrorString(err)
    except Exception as failed:  # noqa: BLE001 - the message is a courtesy; the code is what matters
        return f"(no description: {failed})"
    if isinstance(text, tuple):
        text = text[-1]
    return text.decode() if isinstance(text, bytes) else str(text)


def availability() -> str | None:
    """What is missing to launch kernels here, or None when nothing is."""
    missing = []
    try:
        hip = _hip()
    except toolchain.ToolchainError:
        missing.append("the HIP Python bindings (pip install 'argus-backend-amdgpu[hip]', on a ROCm machine)")
    else:
        err, count = hip.hipGetDeviceCount()
        if int(getattr(err, "value", err)) != 0 or count < 1:
            missing.append("an AMD GPU visible to the HIP runtime")
    if toolchain.find_linker() is None:
        missing.append("ld.lld, to link code objects (ROCm's /opt/rocm/llvm/bin/ld.lld or the system's lld)")
    return "; ".join(missing) or None


def device_chip(ordinal: int) -> Chip:
    """The chip of a device, from its architecture name (``gfx942:sramecc+:xnack-``)."""
    hip = _hip()
    props = hip.hipDeviceProp_t()
    check(hip.hipGetDeviceProperties(props, ordinal), f"reading the properties of HIP device {ordinal}")
    name = props.gcnArchName
    name = name.decode() if isinstance(name, bytes) else str(name)
    return chip(name.split(":")[0])


# ---- arguments ----------------------------------------------------------------------------------


def device_array(x: Any) -> DeviceArray | None:
    """A tensor argument as HIP sees it, or None when `x` is no GPU array (a scalar)."""
    if isinstance(x, (int, float)):
        return None
    module = type(x).__module__
    if module.startswith("torch") and hasattr(x, "data_ptr"):  # ROCm's torch calls its GPUs "cuda"
        import torch

        if x.device.type != "cuda" or getattr(torch.version, "hip", None) is None:
            return DeviceArray(0, tuple(x.shape), str(x.dtype), -1, True)
        return DeviceArray(x.data_ptr(), tuple(x.shape), str(x.dtype), x.device.index or 0, x.is_contiguous(),
                           framework="torch")
    interface = getattr(x, "__cuda_array_interface__", None)  # CuPy on ROCm, among others
    if interface is not None:
        shape = tuple(interface["shape"])
        strides = interface.get("strides")
        contiguous = strides is None or tuple(strides) == c_strides(shape, int(interface["typestr"][2:]))
        stream, device = None, None
        if module.startswith("cupy"):
            import cupy

            stream, device = cupy.cuda.get_current_stream().ptr, int(x.device.id)
        if device is None:
            device = check(_hip().hipGetDevice(), "reading the current HIP device")
        return DeviceArray(int(interface["data"][0]), shape, interface["typestr"], int(device), contiguous, stream)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        kind, ordinal = x.__dlpack_device__()
        if int(kind) != DLPACK_ROCM:
            return DeviceArray(0, (), "", -1, True)
        return read_dlpack(x, int(ordinal))
    return None


def _stream(abi: Any, arrays: dict[int, DeviceArray]) -> int | None:
    """The stream of the first tensor's framework that has one (None: the default stream)."""
    for param in abi.params:
        if param.kind == "pointer":
            array = arrays[param.tensor]
            if array.framework == "torch":
                import torch

                return int(torch.cuda.current_stream(array.device).cuda_stream)
            if array.stream is not None:
                return array.stream
    return None


# ---- launching ----------------------------------------------------------------------------------


class LoadedKernel:
    """A kernel's HSACO loaded on one device, ready to launch."""

    def __init__(self, binary: Binary, device: int) -> None:
        hip = _hip()
        self.binary = binary
        self.abi = binary.abi
        self.device = device
        self.layout = checked_layout(binary.abi, binary.assembly)
        image = binary.hsaco()
        where = f"{self.abi.name} on HIP device {device} (amdgpu:{binary.chip.name})"
        check(hip.hipSetDevice(device), f"selecting HIP device {device} for {self.abi.name}")
        self.module = check(hip.hipModuleLoadData(image), f"loading {where}")
        self.function = check(hip.hipModuleGetFunction(self.module, self.abi.name.encode()),
                              f"finding {self.abi.name} in its code object")

    def launch(self, grid: Sequence[int], args: Sequence[Any], *, stream: int | None = None,
               views: Sequence[DeviceArray | None] | None = None) -> None:
        """Launch on `args`; `views` are their `device_array`s when the caller has them already."""
        hip = _hip()
        abi = self.abi
        if len(args) != len(abi.arguments):
            raise HipError(f"{abi.name} takes {len(abi.arguments)} runtime argument(s) ({', '.join(abi.arguments)}), "
                           f"got {len(args)}")
        grid3 = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        if len(grid3) != 3 or any(g < 1 or g * b >= 2**32 for g, b in zip(grid3, abi.block)):
            raise HipError(f"{abi.name}: grid {tuple(grid)} with block {abi.block}: a grid is 1 to 3 positive numbers "
                           "of workgroups, each dimension under 2³² work-items in all")
        views = views if views is not None else [device_array(x) for x in args]
        values, arrays = launch_args.marshal(abi, args, views, HipError, memory="HIP", device=self.device)
        stream = stream if stream is not None else _stream(abi, arrays)
        buffers = self._buffers.__dict__
        buffer = buffers.get("kernargs")
        if buffer is None:
            buffer = buffers["kernargs"] = KernargBuffer(self.layout)
        extra = buffer.pack(values)
        what = f"launching {abi.name} on HIP device {self.device} with grid {grid3} and block {abi.block}"
        check(hip.hipSetDevice(self.device), f"selecting HIP device {self.device} for {abi.name}")
        check(hip.hipModuleLaunchKernel(self.function, *grid3, *abi.block, abi.shared_bytes, stream, None, extra), what)
        if os.environ.get("ARGUS_LAUNCH_BLOCKING") == "1":
            check(hip.hipStreamSynchronize(stream), f"{what} (at the synchronization after it)")

    @functools.cached_property
    def _buffers(self) -> threading.local:
        return threading.local()


class AmdgpuRuntime:
    """The runtime behind ``kernel[grid](*args)`` for ``amdgpu`` targets. A kernel is built,
    linked and loaded once per process and device (there is no disk cache yet)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.chip = chip(target.arch) if target.arch else None
        self._loaded: dict[tuple[str, int], LoadedKernel] = {}

    def load(self, kernel: Any, device: int = 0) -> LoadedKernel:
        """`kernel` is an `argus.dsl.kernel.Specialization`."""
        found = self._loaded.get((kernel.key, device))
        if found is None:
            named = f"amdgpu:{self.chip.name}" if self.chip is not None else "amdgpu"
            missing = availability()
            if missing is not None:
                raise toolchain.ToolchainError(
                    f"{kernel.kernel.name}: launching on {named} needs {missing}. Without them kernels are compiled and "
                    f"inspected (argus compile --target {named} --emit asm|resources|hsaco) and run on the interpreter")
            target = device_chip(device)
            if self.chip is not None and self.chip != target:
                raise HipError(f"{kernel.kernel.name}: the target is amdgpu:{self.chip.name} but HIP device {device} "
                               f"is a {target.name} ({target.product}); name amdgpu:{target.name} or just amdgpu")
            binary = compiler.cached(kernel.key, target) or compiler.build(kernel.compiled(), target, key=kernel.key)
            found = self._loaded[(kernel.key, device)] = LoadedKernel(binary, device)
        return found

    def launch(self, kernel: Any, grid: tuple[int, ...], args: Sequence[Any], stream: int | None = None) -> None:
        views = [device_array(x) for x in args]
        self.load(kernel, launch_args.device_of(kernel.kernel.name, views, HipError)).launch(grid, args, stream=stream, views=views)

