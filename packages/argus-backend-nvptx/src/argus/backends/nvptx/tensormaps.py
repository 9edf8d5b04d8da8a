"""Tensor maps: the copy engine's description of a tensor, made at launch.

A bulk copy's tensor map says where the tensor is, its dims and strides, the box one copy moves
and the swizzle it writes. The kernel records the box and swizzle (`Param` of kind
"tensormap"); the launch adds the tensor argument's address and shape, encodes the map with
the driver and passes it in device memory (64-byte aligned, written before the launch). Maps
are kept per device, tensor address, shape, box and swizzle, so a repeated launch on the same
tensors costs a dictionary lookup.
"""

from __future__ import annotations

import ctypes
import threading
from collections import OrderedDict
from typing import Any

from .errors import CudaError

#: Tensor maps kept per device before the oldest is freed.
KEPT = 4096
MAP_BYTES = 128

_DATA_TYPES = {"bf16": "BFLOAT16", "f16": "FLOAT16", "f32": "FLOAT32", "f64": "FLOAT64", "i32": "INT32",
               "i64": "INT64", "u8": "UINT8", "i8": "UINT8", "u16": "UINT16", "i16": "UINT16", "u32": "UINT32",
               "u64": "UINT64", "f8e4m3": "UINT8", "f8e5m2": "UINT8"}
_SWIZZLES = {0: "NONE", 32: "32B", 64: "64B", 128: "128B"}

_LOCK = threading.Lock()
_MAPS: OrderedDict[tuple[Any, ...], Any] = OrderedDict()


def tensor_map(kernel: str, name: str, pointer: int, shape: tuple[int, ...], dtype: str, nbytes: int,
               box: tuple[int, ...], swizzle: int, device: int) -> Any:
    """The device pointer of the tensor map of a C-contiguous tensor (encoded once, then kept)."""
    from .runtime import check, cuda_driver

    key = (device, pointer, shape, dtype, box, swizzle)
    with _LOCK:
        found = _MAPS.get(key)
        if found is not None:
            _MAPS.move_to_end(key)
            return found
    driver = cuda_driver()
    if pointer % 16:
        raise CudaError(f"{kernel}: argument {name!r} is copied in bulk and must start at a multiple of 16 bytes; its "
                        f"address is {pointer:#x}")
    strides = []
    step = nbytes
    for extent in reversed(shape[1:]):
        step *= extent
        if step % 16:
            raise CudaError(f"{kernel}: argument {name!r} is copied in bulk; each of its rows must be a multiple of 16 "
                            f"bytes, got shape {shape}")
        strides.append(step)
    kind = getattr(driver.CUtensorMapDataType, f"CU_TENSOR_MAP_DATA_TYPE_{_DATA_TYPES[dtype]}")
    what = f"{kernel}: encoding the tensor map of argument {name!r} (shape {shape}, box {box})"
    u32, u64 = driver.cuuint32_t, driver.cuuint64_t
    encoded = check(driver.cuTensorMapEncodeTiled(
        kind, u32(len(shape)), pointer, [u64(x) for x in reversed(shape)], [u64(x) for x in strides],
        [u32(x) for x in reversed(box)], [u32(1)] * len(shape),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        getattr(driver.CUtensorMapSwizzle, f"CU_TENSOR_MAP_SWIZZLE_{_SWIZZLES[swizzle]}"),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), what)
    raw = ctypes.string_at(encoded.getPtr(), MAP_BYTES)
    memory = check(driver.cuMemAlloc(MAP_BYTES), f"{what}: allocating it")
    check(driver.cuMemcpyHtoD(memory, raw, MAP_BYTES), f"{what}: copying it to the device")
    with _LOCK:
        _MAPS[key] = memory
        while len(_MAPS) > KEPT:
            _, old = _MAPS.popitem(last=False)
            driver.cuMemFree(old)
    return memory
