"""The HIP launch path, against a stand-in for the HIP bindings (no AMD GPU and no ROCm here):
the HSACO goes to hipModuleLoadData, the kernel arguments reach hipModuleLaunchKernel through
``extra`` laid out as the code object's metadata says the code reads them, with the grid, the
workgroup, the dynamic LDS and the stream asked for; bad arguments never reach HIP, a HIP
error becomes a message naming the kernel and the launch, and `availability()` names exactly
what is missing."""

from __future__ import annotations

import ctypes
import enum
import struct
import sys
import types
from typing import Any

import numpy as np
import pytest
from argus.backends.amdgpu import compiler, kernargs, runtime, toolchain
from argus.backends.amdgpu.targets import chip
from argus.dsl import Tensor, bf16, f32, kernel, make_shared, syncthreads, thread_idx
from argus.dsl.backends import Target, default_target


class HipErrorCode(enum.IntEnum):
    hipSuccess = 0
    hipErrorInvalidValue = 1
    hipErrorInvalidImage = 200
    hipErrorLaunchFailure = 719


class DeviceProperties:
    gcnArchName = b""


class StandInHip:
    """The calls the runtime makes, recorded; each answers success unless told otherwise."""

    hipError_t = HipErrorCode
    hipDeviceProp_t = DeviceProperties

    def __init__(self, arch: str = "gfx942:sramecc+:xnack-", devices: int = 1) -> None:
        self.arch = arch
        self.devices = devices
        self.calls: list[tuple[Any, ...]] = []
        self.launches: list[dict[str, Any]] = []
        self.fail: dict[str, HipErrorCode] = {}

    def _answer(self, call: str, *values: Any) -> tuple[Any, ...]:
        return (self.fail.get(call, HipErrorCode.hipSuccess), *values)

    def hipGetDeviceCount(self) -> tuple[Any, ...]:
        return self._answer("hipGetDeviceCount", self.devices)

    def hipGetDevice(self) -> tuple[Any, ...]:
        return self._answer("hipGetDevice", 0)

    def hipSetDevice(self, ordinal: int) -> tuple[Any, ...]:
        self.calls.append(("hipSetDevice", ordinal))
        return self._answer("hipSetDevice")

    def hipGetDeviceProperties(self, props: DeviceProperties, ordinal: int) -> tuple[Any, ...]:
        props.gcnArchName = self.arch.encode()
        return self._answer("hipGetDeviceProperties")

    def hipModuleLoadData(self, image: bytes) -> tuple[Any, ...]:
        self.calls.append(("hipModuleLoadData", bytes(image)))
        return self._answer("hipModuleLoadData", "module-handle")

    def hipModuleGetFunction(self, module: Any, name: bytes) -> tuple[Any, ...]:
        self.calls.append(("hipModuleGetFunction", module, name))
        return self._answer("hipModuleGetFunction", "function-handle")

    def hipModuleLaunchKernel(self, function: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int,
                              shared: int, stream: Any, params: Any, extra: int) -> tuple[Any, ...]:
        # read `extra` as HIP does: {BUFFER_POINTER, buffer, BUFFER_SIZE, &size, END}
        config = (ctypes.c_void_p * 5).from_address(extra)
        assert (config[0], config[2], config[4]) == (1, 2, 3), list(config)
        size = ctypes.c_size_t.from_address(config[3]).value
        self.launches.append({"function": function, "grid": (gx, gy, gz), "block": (bx, by, bz), "shared": shared,
                              "stream": stream, "params": params, "kernargs": ctypes.string_at(config[1], size)})
        return self._answer("hipModuleLaunchKernel")

    def hipStreamSynchronize(self, stream: Any) -> tuple[Any, ...]:
        self.calls.append(("hipStreamSynchronize", stream))
        return self._answer("hipStreamSynchronize")

    def hipGetErrorString(self, err: Any) -> bytes:
        return {HipErrorCode.hipErrorLaunchFailure: b"unspecified launch failure",
                HipErrorCode.hipErrorInvalidImage: b"device kernel image is invalid"}.get(err, b"?")


class RocmArray:
    """A DLPack producer on ROCm device 0 (its memory is a host array: the stand-in never reads it)."""

    def __init__(self, array: np.ndarray, device: int = 0) -> None:
        self.array = array
        self.device = device

    def __dlpack_device__(self) -> tuple[int, int]:
        return (10, self.device)

    def __dlpack__(self, **_: Any) -> Any:
        return self.array.__dlpack__()


@pytest.fixture
def hip(monkeypatch: pytest.MonkeyPatch) -> StandInHip:
    """The stand-in as ``from hip import hip``, a linker that wraps the relocatable object."""
    fake = StandInHip()
    package = types.ModuleType("hip")
    package.hip = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hip", package)
    monkeypatch.setattr(toolchain, "find_linker", lambda: "/stand-in/ld.lld")
    monkeypatch.setattr(toolchain, "link", lambda obj: b"HSACO" + obj)
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    return fake


@kernel(block=(64,), warp_size=64)
def scale(x: Tensor[f32, "n"], w: Tensor[bf16, 4, "k"], out: Tensor[f32, "n"], n: int, alpha: float):
    s = make_shared((64,), f32)
    i = thread_idx.x
    s[i] = x[i % n] * alpha
    syncthreads()
    out[i % n] = s[63 - i] + f32(w[0, 0])


def arguments(n: int = 64, k: int = 8) -> list[Any]:
    return [RocmArray(np.arange(n, dtype=np.float32)), RocmArray(np.zeros((4, k), np.uint16)),
            RocmArray(np.zeros(n, np.float32)), n, 1.5]


def launch(target: str, grid: tuple[int, ...], args: list[Any], stream: int | None = None) -> None:
    runtime.AmdgpuRuntime(Target("amdgpu", target)).launch(scale.specialization(), grid, args, stream=stream)


def test_a_launch_hands_hip_the_hsaco_and_the_kernel_arguments_where_the_code_reads_them(hip: StandInHip) -> None:
    args = arguments()
    launch("gfx942", (3, 2), args)
    loaded = [c[1] for c in hip.calls if c[0] == "hipModuleLoadData"]
    assert len(loaded) == 1 and loaded[0].startswith(b"HSACO\x7fELF")  # the linked relocatable code object
    assert ("hipModuleGetFunction", "module-handle", b"scale") in hip.calls
    (made,) = hip.launches
    assert made["function"] == "function-handle" and made["params"] is None
    assert made["grid"] == (3, 2, 1) and made["block"] == (64, 1, 1)
    assert made["shared"] == 0  # the shared tile is static LDS in the code object, no dynamic LDS
    assert made["stream"] is None  # no framework stream: the default one
    x, w, out = (a.array.ctypes.data for a in args[:3])
    # x at 0, its dim n at 8; w at 16 (after 4 bytes of padding), its dim k; out, its dim n; n; alpha
    expected = struct.pack("<Qi4xQi4xQiif", x, 64, w, 8, out, 64, 64, 1.5)
    assert made["kernargs"] == expected


def test_the_layout_is_the_one_the_code_object_lists() -> None:
    binary = compiler.build(scale.specialize(), chip("gfx942"))
    listed = kernargs.metadata_arguments(binary.assembly)
    assert [(a.offset, a.size, a.value_kind) for a in listed] == [
        (0, 8, "global_buffer"), (8, 4, "by_value"), (16, 8, "global_buffer"), (24, 4, "by_value"),
        (32, 8, "global_buffer"), (40, 4, "by_value"), (44, 4, "by_value"), (48, 4, "by_value")]
    assert kernargs.checked_layout(binary.abi, binary.assembly).offsets == (0, 8, 16, 24, 32, 40, 44, 48)
    moved = binary.assembly.replace(".offset:         24", ".offset:         28", 1)
    with pytest.raises(toolchain.ToolchainError, match=r"parameter 'w.shape\[1\]' would be passed at byte 24 "
                                                       r"\(4 bytes, by_value\) but its code reads it at byte 28"):
        kernargs.checked_layout(binary.abi, moved)


def test_the_stream_given_and_a_blocking_launch(hip: StandInHip, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_LAUNCH_BLOCKING", "1")
    launch("gfx942", (1,), arguments(), stream=0xABC0)
    assert hip.launches[0]["stream"] == 0xABC0 and ("hipStreamSynchronize", 0xABC0) in hip.calls


def test_a_hip_error_names_the_kernel_and_the_launch(hip: StandInHip) -> None:
    hip.fail["hipModuleLaunchKernel"] = HipErrorCode.hipErrorLaunchFailure
    with pytest.raises(runtime.HipError, match=r"launching scale on HIP device 0 with grid \(3, 1, 1\) and block "
                                               r"\(64, 1, 1\): hipErrorLaunchFailure: unspecified launch failure"):
        launch("gfx942", (3,), arguments())


def test_an_image_hip_refuses_is_named(hip: StandInHip) -> None:
    hip.fail["hipModuleLoadData"] = HipErrorCode.hipErrorInvalidImage
    with pytest.raises(runtime.HipError, match=r"loading scale on HIP device 0 \(amdgpu:gfx942\): "
                                               r"hipErrorInvalidImage: device kernel image is invalid"):
        launch("", (1,), arguments())


@pytest.mark.parametrize("change, message", [
    (lambda a: a.__setitem__(0, RocmArray(np.zeros(64, np.float16))), r"'x' is declared f32; .*got dl:f16"),
    (lambda a: a.__setitem__(2, RocmArray(np.zeros(32, np.float32))), r"dims named 'n' differ: x.shape\[0\] = 64 "
                                                                      r"but out.shape\[0\] = 32"),
    (lambda a: a.__setitem__(0, np.zeros(64, np.float32)), r"'x' is not in HIP device memory"),
    (lambda a: a.__setitem__(3, 2**31), r"'n' = 2147483648 does not fit in 32 bits"),
    (lambda a: a.__setitem__(2, RocmArray(np.zeros(64, np.float32), device=1)), r"several devices \[0, 1\]"),
])
def test_bad_arguments_never_reach_hip(hip: StandInHip, change: Any, message: str) -> None:
    args = arguments()
    change(args)
    with pytest.raises(runtime.HipError, match=message):
        launch("gfx942", (1,), args)
    assert hip.launches == []


def test_a_target_naming_another_chip_than_the_device_is_refused(hip: StandInHip) -> None:
    with pytest.raises(runtime.HipError, match=r"the target is amdgpu:gfx950 but HIP device 0 is a gfx942"):
        launch("gfx950", (1,), arguments())
    hip.arch = "gfx950"
    launch("", (1,), arguments())  # the chip is the device's
    assert hip.launches and "gfx950" in runtime.AmdgpuRuntime(Target("amdgpu")).load(scale.specialization()).binary.assembly


def test_a_launch_with_rocm_tensors_goes_to_the_amd_gpu(hip: StandInHip, monkeypatch: pytest.MonkeyPatch) -> None:
    from argus.dsl import backends

    monkeypatch.setattr(backends, "_RUNTIMES", {})
    args = arguments()
    assert default_target(args) == "amdgpu"
    scale[(2,)](*args)
    assert hip.launches[0]["grid"] == (2, 1, 1)
    out = np.zeros(64, np.float32)
    scale[(1,)](args[0].array, args[1].array, out, 64, 1.5)  # numpy arrays: the interpreter
    assert len(hip.launches) == 1 and out[0] == 63 * 1.5


def test_availability_names_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "hip", None)  # importing it fails
    monkeypatch.setattr(toolchain, "find_linker", lambda: None)
    missing = runtime.availability()
    assert missing is not None and "HIP Python bindings" in missing and "ld.lld" in missing
    package = types.ModuleType("hip")
    package.hip = StandInHip(devices=0)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hip", package)
    missing = runtime.availability()
    assert missing is not None and "bindings" not in missing
    assert "an AMD GPU visible to the HIP runtime" in missing and "ld.lld" in missing
    package.hip = StandInHip()  # type: ignore[attr-defined]
    monkeypatch.setattr(toolchain, "find_linker", lambda: "/stand-in/ld.lld")
    assert runtime.availability() is None
