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
import struct
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from argus.dsl.backends import Target
from argus.dsl.dtypes import DType, dtype_named

from . import compiler
from .compiler import Binary
from .errors import CudaError, ToolchainError
from .targets import ARCHS, Arch, arch
from .tensormaps import tensor_map
from .translate import KernelABI

_LOCK = threading.Lock()


_DRIVER: Any = None


def _driver() -> Any:
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
    driver = _driver()
    err, *values = result if isinstance(result, tuple) else (result,)
    if err != driver.CUresult.CUDA_SUCCESS:
        _, text = driver.cuGetErrorString(err)
        name = getattr(err, "name", str(err))
        raise CudaError(f"{what}: {name}: {text.decode() if isinstance(text, bytes) else text}")
    return values[0] if len(values) == 1 else tuple(values)


_CONTEXTS: dict[int, Any] = {}


def use_device(ordinal: int) -> Any:
    """Make the device's primary context (the one torch and CuPy use) current; returns it."""
    driver = _driver()
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
    driver = _driver()
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


@dataclass
class DeviceArray:
    """What a launch needs of a tensor argument."""

    pointer: int
    shape: tuple[int, ...]
    dtype: str
    """As the producer names it: torch's name, a typestr, or a DLPack (code, bits)."""
    device: int
    contiguous: bool
    stream: int | None = None
    keep: Any = None
    framework: str = ""
    """'torch' when the framework's current stream is asked for at launch."""


_TORCH = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
          "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
          "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "f8e4m3fnuz": "float8_e4m3fnuz",
          "f8e5m2fnuz": "float8_e5m2fnuz"}
_DLPACK = {0: "i", 1: "u", 2: "f", 4: "bf"}


@functools.lru_cache(maxsize=None)
def accepted(dtype: DType) -> frozenset[str]:
    """The names under which an array of `dtype` elements may arrive."""
    names = {f"torch.{_TORCH[dtype.name]}"} if dtype.name in _TORCH else set()
    if dtype.kind in ("int", "uint", "float") and not dtype.minifloat and dtype.name != "bf16":
        letter = {"int": "i", "uint": "u", "float": "f"}[dtype.kind]
        names |= {f"<{letter}{dtype.nbytes}", f"|{letter}{dtype.nbytes}", f"dl:{letter}{dtype.bits}"}
    if dtype.name == "bf16":
        names |= {"<u2", "dl:bf16", "dl:u16"}
    if dtype.minifloat:  # or its bits, as uint8
        names |= {"|u1", "dl:u8", "torch.uint8"}
    return frozenset(names)


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
        contiguous = strides is None or tuple(strides) == _c_strides(shape, itemsize)
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
        return _from_dlpack(x, int(ordinal))
    return None


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _pointer_device(pointer: int) -> int:
    driver = _driver()
    attr = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
    try:
        return int(check(driver.cuPointerGetAttribute(attr, pointer), "reading a pointer's device"))
    except CudaError:
        return -1


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


def _from_dlpack(x: Any, ordinal: int) -> DeviceArray:
    capsule = x.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    tensor = _DLTensor.from_address(get(capsule, b"dltensor"))  # DLManagedTensor starts with its DLTensor
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    contiguous = not tensor.strides or tuple(tensor.strides[i] for i in range(tensor.ndim)) == \
        tuple(s // max(tensor.dtype.bits // 8, 1) for s in _c_strides(shape, max(tensor.dtype.bits // 8, 1)))
    name = f"dl:{_DLPACK.get(tensor.dtype.code, '?')}{tensor.dtype.bits}"
    return DeviceArray(int(tensor.data or 0) + int(tensor.byte_offset), shape, name, ordinal, contiguous, keep=capsule)


# ---- launching -----------------------------------------------------------------------------


class LoadedKernel:
    """A kernel loaded on one device, ready to launch."""

    def __init__(self, binary: Binary, device: int) -> None:
        driver = _driver()
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
        driver = _driver()
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
    _driver()  # the bindings are present, so is the driver they load
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
    arrays: dict[int, DeviceArray] = {}
    named: dict[str, tuple[str, int]] = {}
    stream = None
    out: list[Any] = []
    for param in abi.params:
        value = args[param.tensor]
        if param.kind == "pointer":
            array = arrays[param.tensor] = _checked_array(abi, param.name, value, views[param.tensor],
                                                          _dtype(param.dtype))
            if array.pointer % param.align:
                raise CudaError(f"{abi.name}: argument {param.name!r} must start at a multiple of {param.align} bytes "
                                f"(the kernel reads it {param.align} bytes at a time); its address is "
                                f"{array.pointer:#x}")
            if device is not None and array.device != device:
                raise CudaError(f"{abi.name}: argument {param.name!r} is on CUDA device {array.device}, "
                                f"the kernel is loaded on device {device}")
            if stream is None:
                stream = array.stream if array.framework != "torch" else _torch_stream(array.device)
            out.append(array.pointer)
        elif param.kind == "dim":
            size = arrays[param.tensor].shape[param.axis]
            label = abi.arguments[param.tensor]
            seen = named.setdefault(param.symbol, (label, size))
            if seen[1] != size:
                raise CudaError(f"{abi.name}: dim {param.symbol!r} is {seen[1]} in argument {seen[0]!r} but {size} in "
                                f"argument {label!r}")
            if size >= 2**31:
                raise CudaError(f"{abi.name}: argument {label!r} dim {param.axis} is {size}; sizes must fit in 32 bits")
            out.append(size)
        elif param.kind == "tensormap":
            array = arrays[param.tensor]
            found = tensor_map(abi.name, abi.arguments[param.tensor], array.pointer, array.shape, param.dtype,
                               _dtype(param.dtype).nbytes, param.box, param.swizzle,
                               device if device is not None else array.device)
            out.append(int(found))
        else:
            out.append(_scalar(abi, param.name, param.llvm_type, value))
    if abi.conditions:
        key = tuple(arrays[i].shape if i in arrays else args[i] for i in range(len(args)))
        _, satisfied = _SATISFIED.setdefault(id(abi), (abi, set()))
        if key not in satisfied:  # each distinct launch shape is checked once
            for condition in abi.conditions:
                _check_condition(abi, condition, args, arrays)
            if len(satisfied) > 4096:
                satisfied.clear()
            satisfied.add(key)
    return out, stream


_SATISFIED: dict[int, tuple[KernelABI, set[Any]]] = {}
"""Per kernel (kept alive here, so its id is its own), the launch shapes that met its conditions."""


def _check_condition(abi: KernelABI, condition: Any, args: Sequence[Any], arrays: dict[int, DeviceArray]) -> None:
    """A broken assumption is an error here: on the GPU the launch would be undefined."""
    holds, seen = condition.holds(lambda i: args[i], lambda i, axis: arrays[i].shape[axis])
    if not holds:
        values = ", ".join(f"{abi.arguments[i]}{'' if axis < 0 else f'.shape[{axis}]'} = {v}" for i, axis, v in seen)
        raise CudaError(f"{abi.name}: this launch breaks the kernel's assumption at {condition.where}: "
                        f"{condition.text} ({values})")


def _torch_stream(device: int) -> int:
    import torch

    return int(torch.cuda.current_stream(device).cuda_stream)


def _checked_array(abi: KernelABI, name: str, value: Any, array: DeviceArray | None, dtype: DType) -> DeviceArray:
    if array is None:
        raise CudaError(f"{abi.name}: argument {name!r} must be a CUDA tensor (torch, CuPy, __cuda_array_interface__ "
                        f"or DLPack), got {type(value).__name__}")
    if array.device < 0:
        raise CudaError(f"{abi.name}: argument {name!r} is not in CUDA device memory")
    names = accepted(dtype)
    if array.dtype not in names:
        raise CudaError(f"{abi.name}: argument {name!r} is declared {dtype}; accepted element types: "
                        f"{', '.join(sorted(names))}; got {array.dtype}")
    if not array.contiguous:
        raise CudaError(f"{abi.name}: argument {name!r} must be C-contiguous")
    return array


def _scalar(abi: KernelABI, name: str, llvm_type: str, value: Any) -> int | float:
    if type(value) is int and llvm_type == "i32" and -(2**31) <= value < 2**31:  # the common case
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__index__") \
            and not hasattr(value, "__float__"):
        raise CudaError(f"{abi.name}: argument {name!r} must be a scalar ({llvm_type}), got {type(value).__name__}")
    if llvm_type.startswith("i"):
        if not hasattr(value, "__index__"):
            raise CudaError(f"{abi.name}: argument {name!r} must be an integer, got {value!r}")
        bits = int(llvm_type[1:])
        number = int(value)
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise CudaError(f"{abi.name}: argument {name!r} = {number} does not fit in {bits} bits")
        return number
    if llvm_type in ("float", "double"):
        return float(value)
    raise CudaError(f"{abi.name}: argument {name!r} of type {llvm_type} cannot be passed from the host")


@functools.lru_cache(maxsize=None)
def _dtype(name: str) -> DType:
    found = dtype_named(name)
    assert found is not None
    return found


#: struct codes of the parameters as the kernel takes them.
_CODES = {"ptr addrspace(1)": "Q", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "float": "f", "double": "d"}


class ParamBuffer:
    """A kernel's parameters packed in one buffer, with the pointer to each that the driver
    reads at launch (it copies them then, so the buffer is reused; one per thread)."""

    def __init__(self, abi: KernelABI) -> None:
        codes = [_CODES["ptr addrspace(1)"] if p.kind in ("pointer", "tensormap") else _CODES[p.llvm_type]
                 for p in abi.params]
        offsets, end = [], 0
        for code in codes:
            size = struct.calcsize(code)
            end = -(-end // size) * size
            offsets.append(end)
            end += size
        self.buffer = ctypes.create_string_buffer(max(end, 1))
        base = ctypes.addressof(self.buffer)
        self.pointers = (ctypes.c_void_p * max(len(codes), 1))(*[base + o for o in offsets])
        self.codes, self.offsets = codes, offsets

    def pack(self, values: Sequence[int | float]) -> Any:
        for code, offset, value in zip(self.codes, self.offsets, values):
            struct.pack_into(code, self.buffer, offset, value)
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
        device = _device_of(kernel, [device_array(x) for x in args])
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

    def launch(self, kernel: Any, grid: tuple[int, ...], args: Sequence[Any], stream: int | None = None) -> None:
        views = [device_array(x) for x in args]
        self.load(kernel, _device_of(kernel, views)).launch(grid, args, stream=stream, views=views)


def _device_of(kernel: Any, views: Sequence[DeviceArray | None]) -> int:
    """The one device holding a launch's tensors (0 when there are none)."""
    devices = {a.device for a in views if a is not None and a.device >= 0}
    if len(devices) > 1:
        raise CudaError(f"{kernel.kernel.name}: tensor arguments are on several devices {sorted(devices)}")
    return devices.pop() if devices else 0


@functools.lru_cache(maxsize=1)
def _builder() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="argus-nvptx-build")
