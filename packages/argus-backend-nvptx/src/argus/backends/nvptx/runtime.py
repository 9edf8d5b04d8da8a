"""Loading and launching kernels through the CUDA driver (cuda-bindings).

Arguments are checked before anything reaches the GPU: tensors may be torch tensors, CuPy
arrays, anything with ``__cuda_array_interface__`` or any DLPack producer, on one CUDA device,
C-contiguous, of the declared element type and of the declared shape (dims named alike agree).
A bf16 tensor may be held as bf16 (torch) or as its uint16 bits (CuPy, like numpy on the host),
an fp8 one as fp8 or as its uint8 bits.
The kernel runs on the stream given, else torch's (or CuPy's) current stream, else the default
one. ``ARGUS_LAUNCH_BLOCKING=1`` waits for every launch and reports its errors there.
"""

from __future__ import annotations

import ctypes
import functools
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from argus.dsl import launch_args
from argus.dsl.backends import Target
from argus.dsl.launch_args import DeviceArray, ParamLayout, c_strides, element_dtype, read_dlpack

from . import compiler
from .compiler import Binary
from .errors import CudaError, ToolchainError
from .targets import ARCHS, Arch, arch
from .tensormaps import tensor_map
from .translate import KernelABI

_LOCK = threading.Lock()


_DRIVER: Any = None


def cuda_driver() -> Any:
    """The CUDA driver bindings (cuda.bindings.driver), imported once, with a clear error where
    they are missing: launches, modules and tensor maps all reach the driver through this."""
    global _DRIVER
    if _DRIVER is None:
        try:
            from cuda.bindings import driver
        except ImportError as err:
            raise ToolchainError("running on NVIDIA GPUs needs the CUDA driver bindings: "
                                 "pip install 'argus-backend-nvptx[cuda]' (cuda-bindings)") from err
        _DRIVER = driver
    return _DRIVER


def check(result: Any, what: str) -> Any:
    """The values of a driver call, or a CudaError naming `what` and the driver's message."""
    driver = cuda_driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        _, text = driver.cuGetErrorString(err)
        name = getattr(err, "name", str(err))
        raise CudaError(f"{what}: {name}: {text.decode() if isinstance(text, bytes) else text}")
    return values[0] if len(values) == 1 else tuple(values)


_CONTEXTS: dict[int, Any] = {}


def use_device(ordinal: int) -> Any:
    """Make the device's primary context (the one torch and CuPy use) current; returns it."""
    driver = cuda_driver()
    context = _CONTEXTS.get(ordinal)
    if context is None:
        with _LOCK:
            context = _CONTEXTS.get(ordinal)
        if context is None:
            check(driver.cuInit(0), "initializing CUDA")
            device = check(driver.cuDeviceGet(ordinal), f"opening CUDA device {ordinal}")
            context = _CONTEXTS[ordinal] = check(driver.cuDevicePrimaryCtxRetain(device),
                                                 f"retaining the context of device {ordinal}")
    check(driver.cuCtxSetCurrent(context), f"making device {ordinal} current")
    return context


def device_arch(ordinal: int) -> Arch:
    """The best target for a device: sm_90a on Hopper, sm_80 on Ampere and Ada."""
    driver = cuda_driver()
    use_device(ordinal)
    device = check(driver.cuDeviceGet(ordinal), f"opening CUDA device {ordinal}")
    attr = driver.CUdevice_attribute
    major = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "reading")
    minor = check(driver.cuDeviceGetAttribute(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "reading")
    if (major, minor) == (9, 0):
        return ARCHS["sm_90a"]
    if major >= 8:
        return ARCHS["sm_80"]
    raise CudaError(f"device {ordinal} has compute capability {major}.{minor}; the nvptx backend needs 8.0 or newer")


# ---- arguments -----------------------------------------------------------------------------
# What every GPU runtime shares (DeviceArray, the checks, the packing) is argus.dsl.launch_args;
# what is NVIDIA's is which arrays are CUDA arrays, the streams, and the tensor maps.


def device_array(x: Any) -> DeviceArray | None:
    """A tensor argument as the driver sees it, or None when `x` is no GPU array."""
    if isinstance(x, (int, float)):  # scalars, the other common argument
        return None
    module = type(x).__module__
    if module.startswith("torch") and hasattr(x, "data_ptr"):
        if x.device.type != "cuda":
            return DeviceArray(0, tuple(x.shape), str(x.dtype), -1, True)
        return DeviceArray(x.data_ptr(), tuple(x.shape), str(x.dtype), x.device.index or 0, x.is_contiguous(),
                           framework="torch")
    interface = getattr(x, "__cuda_array_interface__", None)
    if interface is not None:
        shape = tuple(interface["shape"])
        strides = interface.get("strides")
        itemsize = int(interface["typestr"][2:])
        contiguous = strides is None or tuple(strides) == c_strides(shape, itemsize)
        stream = None
        if module.startswith("cupy"):
            import cupy

            stream = cupy.cuda.get_current_stream().ptr
        return DeviceArray(int(interface["data"][0]), shape, interface["typestr"], _pointer_device(
            int(interface["data"][0])), contiguous, stream)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        kind, ordinal = x.__dlpack_device__()
        if int(kind) != 2:  # kDLCUDA
            return DeviceArray(0, (), "", -1, True)
        return read_dlpack(x, int(ordinal))
    return None


def _pointer_device(pointer: int) -> int:
    driver = cuda_driver()
    attr = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    try:
        return int(check(driver.cuPointerGetAttribute(attr, pointer), "reading a pointer's device"))
    except CudaError:
        return -1


# ---- launching -----------------------------------------------------------------------------


class LoadedKernel:
    """A kernel loaded on one device, ready to launch."""

    def __init__(self, binary: Binary, device: int) -> None:
        driver = cuda_driver()
        use_device(device)
        self.binary = binary
        self.abi: KernelABI = binary.abi
        self.device = device
        image = binary.cubin if binary.cubin is not None else binary.ptx.encode() + b"\0"
        self.module = check(driver.cuModuleLoadData(image), f"loading {self.abi.name} on device {device}")
        self.function = check(driver.cuModuleGetFunction(self.module, self.abi.name.encode()),
                              f"finding {self.abi.name} in its module")
        if self.abi.shared_bytes:  # more shared memory than a launch gets unasked
            attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(driver.cuFuncSetAttribute(self.function, attribute, self.abi.shared_bytes),
                  f"giving {self.abi.name} {self.abi.shared_bytes} bytes of shared memory on device {device}")

    def launch(self, grid: Sequence[int], args: Sequence[Any], *, stream: int | None = None,
               views: Sequence[DeviceArray | None] | None = None) -> None:
        """Launch on `args`; `views` are their `device_array`s when the caller has them already."""
        driver = cuda_driver()
        if len(args) != len(self.abi.arguments):
            raise CudaError(f"{self.abi.name} takes {len(self.abi.arguments)} runtime argument(s) "
                            f"({', '.join(self.abi.arguments)}), got {len(args)}")
        grid3 = tuple(grid) + (1,) * (3 - len(grid))
        if grid3[0] >= 2**31 or grid3[1] >= 2**16 or grid3[2] >= 2**16:
            raise CudaError(f"{self.abi.name}: grid {tuple(grid)} exceeds the limits (2³¹−1, 65535, 65535)")
        views = views if views is not None else [device_array(x) for x in args]
        values, chosen_stream = marshal(self.abi, args, views, self.device)
        stream = stream if stream is not None else chosen_stream
        buffers = self._buffers.__dict__
        buffer = buffers.get("params")
        if buffer is None:
            buffer = buffers["params"] = ParamBuffer(self.abi)
        pointers = buffer.pack(values)
        use_device(self.device)
        code = _launch_kernel()(self.handle, *grid3, *self.abi.block, self.abi.shared_bytes, stream or 0, pointers, None)
        if code or os.environ.get("ARGUS_LAUNCH_BLOCKING") == "1":
            what = f"launching {self.abi.name} with grid {grid3} and block {self.abi.block}"
            check(driver.CUresult(code), what)
            check(driver.cuStreamSynchronize(stream or 0), f"{what} (at the synchronization after it)")

    @functools.cached_property
    def _buffers(self) -> threading.local:
        return threading.local()

    @functools.cached_property
    def handle(self) -> int:
        """The function's driver handle, as a plain address."""
        return int(self.function)


@functools.lru_cache(maxsize=1)
def _launch_kernel() -> Any:
    """The driver's cuLaunchKernel called directly (a launch is its arguments and one call)."""
    cuda_driver()  # the bindings are present, so is the driver they load
    library = ctypes.CDLL("libcuda.so.1")
    launch = library.cuLaunchKernel
    launch.argtypes = [ctypes.c_void_p, *[ctypes.c_uint] * 7, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p),
                       ctypes.c_void_p]
    launch.restype = ctypes.c_int
    return launch


def marshal(abi: KernelABI, args: Sequence[Any], views: Sequence[DeviceArray | None],
            device: int | None = None) -> tuple[list[Any], int | None]:
    """The kernel's parameters as numbers (`ParamBuffer` packs them), after checking every
    argument; and the stream of the arrays' framework."""

    def tensormap(param: Any, arrays: dict[int, DeviceArray]) -> int:
        array = arrays[param.tensor]
        found = tensor_map(abi.name, abi.arguments[param.tensor], array.pointer, array.shape, param.dtype,
                           element_dtype(param.dtype).nbytes, param.box, param.swizzle,
                           device if device is not None else array.device)
        return int(found)

    values, arrays = launch_args.marshal(abi, args, views, CudaError, memory="CUDA", device=device, special=tensormap)
    stream = None
    for param in abi.params:  # the first tensor's framework that has a stream
        if param.kind == "pointer" and stream is None:
            array = arrays[param.tensor]
            stream = array.stream if array.framework != "torch" else _torch_stream(array.device)
    return values, stream


def _torch_stream(device: int) -> int:
    import torch

    return int(torch.cuda.current_stream(device).cuda_stream)


class ParamBuffer:
    """A kernel's parameters packed in one buffer, with the pointer to each that the driver
    reads at launch (it copies them then, so the buffer is reused; one per thread)."""

    def __init__(self, abi: KernelABI) -> None:
        self.layout = ParamLayout.of(abi)
        self.buffer = ctypes.create_string_buffer(max(self.layout.size, 1))
        base = ctypes.addressof(self.buffer)
        count = len(self.layout.offsets)
        self.pointers = (ctypes.c_void_p * max(count, 1))(*[base + o for o in self.layout.offsets])

    def pack(self, values: Sequence[int | float]) -> Any:
        self.layout.pack_into(self.buffer, values)
        return self.pointers


class NvptxRuntime:
    """The runtime behind ``kernel[grid](*args)`` for ``nvptx`` targets. A kernel is loaded once
    per process and device; its binary comes from the disk cache when one was built before
    (without building the kernel's IR), else it is compiled."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self.arch = arch(target.arch) if target.arch else None
        self._loaded: dict[tuple[str, int], LoadedKernel] = {}
        self._building: dict[tuple[str, str], Future[Binary]] = {}

    def prepare(self, kernel: Any, args: Sequence[Any]) -> None:
        """Find the binary of `kernel` (a `Specialization`) in the cache or start building it on
        a worker thread: LLVM and ptxas then run while the caller checks the kernel (both
        release the interpreter lock). `load` takes the result."""
        device = launch_args.device_of(kernel.kernel.name, [device_array(x) for x in args], CudaError)
        target = self.arch or device_arch(device)
        if (kernel.key, device) in self._loaded or (kernel.key, target.name) in self._building:
            return
        binary = compiler.cached(kernel.key, target)
        if binary is not None:  # kept for `load`, which would otherwise read the cache again
            done: Future[Binary] = Future()
            done.set_result(binary)
            self._building[(kernel.key, target.name)] = done
            return
        compiled = kernel.compiled()  # the IR, which the check needs too, is built here first
        self._building[(kernel.key, target.name)] = _builder().submit(compiler.build, compiled, target,
                                                                      key=kernel.key)

    def load(self, kernel: Any, device: int = 0) -> LoadedKernel:
        """`kernel` is an `argus.dsl.kernel.Specialization`."""
        found = self._loaded.get((kernel.key, device))
        if found is None:
            target = self.arch or device_arch(device)
            building = self._building.pop((kernel.key, target.name), None)
            binary = building.result() if building is not None else \
                compiler.cached(kernel.key, target) or compiler.build(kernel.compiled(), target, key=kernel.key)
            found = self._loaded[(kernel.key, device)] = LoadedKernel(binary, device)
        return found

    def measure(self, fn: Any, *, warmup: int = 5, repeat: int = 50, flush_l2: bool = False,
                graph: bool = False) -> Any:
        """Time `fn` by `argus bench`'s protocol (CUDA events, clocks recorded)."""
        from .bench import measure

        return measure(fn, warmup=warmup, repeat=repeat, flush_l2=flush_l2, graph=graph)

    def launch(self, kernel: Any, grid: tuple[int, ...], args: Sequence[Any], stream: int | None = None) -> None:
        views = [device_array(x) for x in args]
        self.load(kernel, launch_args.device_of(kernel.kernel.name, views, CudaError)).launch(grid, args, stream=stream, views=views)



@functools.lru_cache(maxsize=1)
def _builder() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="argus-nvptx-build")
