"""A GPU launch's arguments, checked before anything reaches the GPU, and the kernel's
parameters packed where it reads them: what every GPU runtime (CUDA's, HIP's) shares.

A runtime turns each argument into a `DeviceArray` with its own ``device_array`` (it knows
which frameworks and devices are its own), then `marshal` checks them against the kernel's
`KernelABI` — element type, contiguity, device, alignment, dims named alike and integer
arguments named like them (`check_named_sizes`, which the interpreter shares), scalar ranges,
the kernel's launch assumptions — and gives the parameters as numbers, which a `ParamLayout`
packs at the offsets the kernel reads them from. Errors are of the runtime's own class, so
that each names its driver (``CudaError``, ``HipError``).
"""

from __future__ import annotations

import ctypes
import functools
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .dtypes import DType, dtype_named
from .errors import ArgusLaunchError

if TYPE_CHECKING:
    from .assumptions import LaunchCondition
    from .llvm import KernelABI, Param

ErrorClass = type[ArgusLaunchError]


@dataclass
class DeviceArray:
    """What a launch needs of a tensor argument."""

    pointer: int
    shape: tuple[int, ...]
    dtype: str
    """As the producer names it: torch's name, a typestr, or a DLPack (code, bits)."""
    device: int
    """The device ordinal; -1 when the array is not in device memory."""
    contiguous: bool
    stream: int | None = None
    keep: Any = None
    """What must stay alive while the pointer is used (a DLPack capsule)."""
    framework: str = ""
    """'torch' when the framework's current stream is asked for at launch."""


_TORCH = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16",
          "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
          "f8e4m3": "float8_e4m3fn", "f8e5m2": "float8_e5m2", "f8e4m3fnuz": "float8_e4m3fnuz",
          "f8e5m2fnuz": "float8_e5m2fnuz"}
_DLPACK = {0: "i", 1: "u", 2: "f", 4: "bf"}


@functools.lru_cache(maxsize=None)
def accepted(dtype: DType) -> frozenset[str]:
    """The names under which an array of `dtype` elements may arrive: the type itself, and for
    bf16 and the 8-bit floats also their bits as unsigned integers (how numpy holds them)."""
    names = {f"torch.{_TORCH[dtype.name]}"} if dtype.name in _TORCH else set()
    if dtype.kind in ("int", "uint", "float") and not dtype.minifloat and dtype.name != "bf16":
        letter = {"int": "i", "uint": "u", "float": "f"}[dtype.kind]
        names |= {f"<{letter}{dtype.nbytes}", f"|{letter}{dtype.nbytes}", f"dl:{letter}{dtype.bits}"}
    if dtype.name == "bf16":
        names |= {"<u2", "dl:bf16", "dl:u16"}
    if dtype.minifloat:  # or its bits, as uint8
        names |= {"|u1", "dl:u8", "torch.uint8"}
    return frozenset(names)


def c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The strides (in bytes) of a C-contiguous array."""
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


def read_dlpack(x: Any, ordinal: int) -> DeviceArray:
    """A DLPack producer's tensor on device `ordinal` (the caller has checked its device kind);
    the capsule is kept with it, so the memory stays valid while the launch uses it."""
    capsule = x.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    tensor = _DLTensor.from_address(get(capsule, b"dltensor"))  # DLManagedTensor starts with its DLTensor
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    itemsize = max(tensor.dtype.bits // 8, 1)
    contiguous = not tensor.strides or tuple(tensor.strides[i] for i in range(tensor.ndim)) == \
        tuple(s // itemsize for s in c_strides(shape, itemsize))
    name = f"dl:{_DLPACK.get(tensor.dtype.code, '?')}{tensor.dtype.bits}"
    return DeviceArray(int(tensor.data or 0) + int(tensor.byte_offset), shape, name, ordinal, contiguous, keep=capsule)


@functools.lru_cache(maxsize=None)
def element_dtype(name: str) -> DType:
    """The DSL type a kernel parameter names (the ABI stores it by name)."""
    found = dtype_named(name)
    assert found is not None, name
    return found


def checked_array(abi: KernelABI, name: str, value: Any, array: DeviceArray | None, dtype: DType,
                  error: ErrorClass, memory: str) -> DeviceArray:
    """`array` when it can be the tensor argument `name` of element type `dtype`; `memory` names
    the device memory the runtime launches on ('CUDA', 'HIP')."""
    if array is None:
        raise error(f"{abi.name}: argument {name!r} must be a {memory} tensor (torch, CuPy, __cuda_array_interface__ "
                    f"or DLPack), got {type(value).__name__}")
    if array.device < 0:
        raise error(f"{abi.name}: argument {name!r} is not in {memory} device memory")
    names = accepted(dtype)
    if array.dtype not in names:
        raise error(f"{abi.name}: argument {name!r} is declared {dtype}; accepted element types: "
                    f"{', '.join(sorted(names))}; got {array.dtype}")
    if not array.contiguous:
        raise error(f"{abi.name}: argument {name!r} must be C-contiguous")
    return array


def scalar(abi: KernelABI, name: str, llvm_type: str, value: Any, error: ErrorClass) -> int | float:
    """A scalar argument as the kernel takes it (`llvm_type`), or an error saying why it cannot be."""
    if type(value) is int and llvm_type == "i32" and -(2**31) <= value < 2**31:  # the common case
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__index__") \
            and not hasattr(value, "__float__"):
        raise error(f"{abi.name}: argument {name!r} must be a scalar ({llvm_type}), got {type(value).__name__}")
    if llvm_type.startswith("i"):
        if not hasattr(value, "__index__"):
            raise error(f"{abi.name}: argument {name!r} must be an integer, got {value!r}")
        bits = int(llvm_type[1:])
        number = int(value)
        if not -(2 ** (bits - 1)) <= number < 2 ** (bits - 1):
            raise error(f"{abi.name}: argument {name!r} = {number} does not fit in {bits} bits")
        return number
    if llvm_type in ("float", "double"):
        return float(value)
    raise error(f"{abi.name}: argument {name!r} of type {llvm_type} cannot be passed from the host")


def check_shape(kernel: str, name: str, declared: Sequence[int | str], shape: Sequence[int],
                error: ErrorClass = ArgusLaunchError) -> None:
    """An array of as many dims as tensor argument `name` declares, and the declared sizes where
    they are numbers (a named dim is checked by `check_named_sizes`)."""
    if len(shape) == len(declared):
        for want, size in zip(declared, shape):
            if want != size and type(want) is int:
                break
        else:
            return
    if len(shape) != len(declared):
        raise error(f"{kernel}: argument {name!r} has {len(shape)} dims, the kernel declares {len(declared)}: "
                    f"{list(declared)}")
    axis, want, size = next((a, w, s) for a, (w, s) in enumerate(zip(declared, shape)) if isinstance(w, int) and w != s)
    raise error(f"{kernel}: argument {name!r} dim {axis} is {size}, the kernel declares {want}")


NamedDim = tuple[str, int, str, int]
"""A dim a kernel declares by name in one launch: (argument, axis, the dim's name, its size)."""

#: The LLVM types of integer scalars (the checker takes each as a symbol, as it takes sizes).
_INTEGERS = frozenset({"i8", "i16", "i32", "i64"})

#: The sizes the checker's proofs are about: a named dim is a symbol in [1, 2**31).
MAX_SIZE = 2**31 - 1


def check_named_sizes(kernel: str, dims: Sequence[NamedDim], integers: Sequence[tuple[str, int]],
                      error: ErrorClass = ArgusLaunchError) -> None:
    """Refuse a launch that no proof of the kernel is about. The checker takes a dim name as one
    symbol in [1, 2**31) — every dim of that name, and an integer argument of that name, are the
    same value — so dims named alike must agree, an integer argument named like a dim must equal
    it, and a named dim must be from 1 to 2**31 - 1. Every launch path (the interpreter, each GPU
    runtime's marshalling) calls this."""
    first: dict[str, NamedDim] = {}
    for dim in dims:
        size = dim[3]
        if not 0 < size <= MAX_SIZE:
            raise error(f"{kernel}: dim {dim[2]!r} is {_shown(dim)} but a named dim must be from 1 to {MAX_SIZE} "
                        f"(the sizes the kernel is checked for)")
        seen = first.setdefault(dim[2], dim)
        if seen[3] != size:
            raise error(f"{kernel}: dims named {dim[2]!r} differ: {_shown(seen)} but {_shown(dim)}; dims named alike "
                        f"are one size and must agree")
    for name, value in integers:
        seen = first.get(name)
        if seen is not None and value != seen[3]:
            raise error(f"{kernel}: argument {name!r} = {value} but dim {name!r} is {_shown(seen)}; an integer "
                        f"argument named like a dim is that size and must equal it")


def _shown(dim: NamedDim) -> str:
    return f"{dim[0]}.shape[{dim[1]}] = {dim[3]}"


def marshal(abi: KernelABI, args: Sequence[Any], views: Sequence[DeviceArray | None], error: ErrorClass, *,
            memory: str, device: int | None = None,
            special: Callable[[Param, dict[int, DeviceArray]], int] | None = None
            ) -> tuple[list[int | float], dict[int, DeviceArray]]:
    """The kernel's parameters as numbers, after checking every argument (`views` are the
    arguments' device arrays, None for scalars), and the tensor arguments by index. `device`
    is where the kernel is loaded; `special(param, arrays)` gives a parameter of a kind only
    the runtime knows (the NVIDIA tensor maps)."""
    arrays: dict[int, DeviceArray] = {}
    dims: list[NamedDim] = []
    integers: list[tuple[str, int]] = []
    out: list[int | float] = []
    for param in abi.params:
        value = args[param.tensor]
        if param.kind == "pointer":
            array = arrays[param.tensor] = checked_array(abi, param.name, value, views[param.tensor],
                                                         element_dtype(param.dtype), error, memory)
            check_shape(abi.name, param.name, param.shape, array.shape, error)
            if array.pointer % param.align:
                raise error(f"{abi.name}: argument {param.name!r} must start at a multiple of {param.align} bytes "
                            f"(the kernel reads it {param.align} bytes at a time); its address is {array.pointer:#x}")
            if device is not None and array.device != device:
                raise error(f"{abi.name}: argument {param.name!r} is on {memory} device {array.device}, "
                            f"the kernel is loaded on device {device}")
            out.append(array.pointer)
        elif param.kind == "dim":
            size = arrays[param.tensor].shape[param.axis]
            dims.append((abi.arguments[param.tensor], param.axis, param.symbol, size))
            out.append(size)
        elif param.kind == "scalar":
            number = scalar(abi, param.name, param.llvm_type, value, error)
            if param.llvm_type in _INTEGERS:
                integers.append((param.name, int(number)))
            out.append(number)
        elif special is not None:
            out.append(special(param, arrays))
        else:
            raise error(f"{abi.name}: internal: this runtime cannot pass parameter {param.name!r} ({param.kind})")
    check_named_sizes(abi.name, dims, integers, error)
    check_conditions(abi, args, arrays, error)
    return out, arrays


_SATISFIED: dict[int, tuple[KernelABI, set[Any]]] = {}
"""Per kernel (kept alive here, so its id is its own), the launch shapes that met its conditions."""


def check_conditions(abi: KernelABI, args: Sequence[Any], arrays: dict[int, DeviceArray], error: ErrorClass) -> None:
    """The kernel's launch assumptions, each distinct launch shape checked once."""
    if not abi.conditions:
        return
    key = tuple(arrays[i].shape if i in arrays else args[i] for i in range(len(args)))
    _, satisfied = _SATISFIED.setdefault(id(abi), (abi, set()))
    if key in satisfied:
        return
    for condition in abi.conditions:
        check_condition(abi, condition, args, arrays, error)
    if len(satisfied) > 4096:
        satisfied.clear()
    satisfied.add(key)


def check_condition(abi: KernelABI, condition: LaunchCondition, args: Sequence[Any], arrays: dict[int, DeviceArray],
                    error: ErrorClass) -> None:
    """A broken assumption is an error here: on the GPU the launch would be undefined."""
    holds, seen = condition.holds(lambda i: args[i], lambda i, axis: arrays[i].shape[axis])
    if not holds:
        values = ", ".join(f"{abi.arguments[i]}{'' if axis < 0 else f'.shape[{axis}]'} = {v}" for i, axis, v in seen)
        raise error(f"{abi.name}: this launch breaks the kernel's assumption at {condition.where}: "
                    f"{condition.text} ({values})")


#: struct codes of the parameters as kernels take them.
CODES = {"ptr addrspace(1)": "Q", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "float": "f", "double": "d"}


@dataclass(frozen=True)
class ParamLayout:
    """Where each of a kernel's parameters sits in one packed buffer: in order, each at the
    next multiple of its own size (its natural alignment, which both the CUDA parameter space
    and the AMDGPU kernel-argument segment use)."""

    codes: tuple[str, ...]
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    size: int
    """The bytes up to the end of the last parameter."""

    @classmethod
    def of(cls, abi: KernelABI) -> ParamLayout:
        codes = tuple(CODES["ptr addrspace(1)"] if p.kind in ("pointer", "tensormap") else CODES[p.llvm_type]
                      for p in abi.params)
        offsets, sizes, end = [], [], 0
        for code in codes:
            size = struct.calcsize(code)
            end = -(-end // size) * size
            offsets.append(end)
            sizes.append(size)
            end += size
        return cls(codes, tuple(offsets), tuple(sizes), end)

    def pack_into(self, buffer: Any, values: Sequence[int | float]) -> None:
        """Write `values` (as `marshal` gives them) into `buffer` at their offsets."""
        for code, offset, value in zip(self.codes, self.offsets, values):
            struct.pack_into(code, buffer, offset, value)


def device_of(kernel: str, views: Sequence[DeviceArray | None], error: ErrorClass) -> int:
    """The one device holding a launch's tensors (0 when there are none)."""
    devices = {a.device for a in views if a is not None and a.device >= 0}
    if len(devices) > 1:
        raise error(f"{kernel}: tensor arguments are on several devices {sorted(devices)}")
    return devices.pop() if devices else 0
