"""Timing GPU work the same way for every kernel and every reference, and ``argus bench``.

The protocol: warm-up launches, then `repeat` timed launches, each between two CUDA events on
the current stream, optionally after overwriting the L2 cache (the flush is outside the timed
region), optionally as replays of a captured CUDA graph (which removes the launch overhead of
short kernels). The median is reported with the SM clock, memory clock and power read through
NVML (or nvidia-smi) before and after, since the H200 lowers its clock under sustained load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from argus.dsl.cli import Command, CommandError, example_problem, load_kernel
from argus.dsl.errors import ArgusError


@dataclass
class Timing:
    median_s: float
    min_s: float
    repeat: int
    clocks_before: dict[str, Any] = field(default_factory=dict)
    clocks_after: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        sm = f"SM {self.clocks_before.get('sm_mhz', '?')}→{self.clocks_after.get('sm_mhz', '?')} MHz"
        power = self.clocks_after.get("power_w")
        return (f"median {self.median_s * 1e6:.1f} µs (min {self.min_s * 1e6:.1f} µs, {self.repeat} runs; {sm}"
                + (f", {power:.0f} W" if isinstance(power, float) else "") + ")")


def clocks(device: int = 0) -> dict[str, Any]:
    """SM and memory clocks (MHz), power (W) and temperature (°C) of a GPU, as NVML reports them."""
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device)
        return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
                "mem_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,
                "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU)}
    except Exception:  # noqa: BLE001 - NVML missing or refusing: try the command-line tool
        pass
    try:
        out = subprocess.run(["nvidia-smi", f"--id={device}", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10).stdout
        sm, mem, power, temp = (x.strip() for x in out.strip().split(","))
        return {"sm_mhz": int(sm), "mem_mhz": int(mem), "power_w": float(power), "temperature_c": int(temp)}
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def measure(fn: Callable[[], Any], *, warmup: int = 5, repeat: int = 50, flush_l2: bool = False,
            graph: bool = False) -> Timing:
    """Time `fn` (which enqueues GPU work on torch's current stream) by the protocol above."""
    import torch

    if repeat < 1 or warmup < 0:
        raise ArgusError(f"repeat must be ≥ 1 and warmup ≥ 0, got {repeat} and {warmup}")
    device = torch.cuda.current_device()
    run = fn
    if graph:
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()  # the first launch loads and compiles outside the capture
        torch.cuda.current_stream().wait_stream(side)
        captured = torch.cuda.CUDAGraph()
        with torch.cuda.graph(captured):
            fn()
        run = captured.replay
    scratch = None
    if flush_l2:
        l2 = torch.cuda.get_device_properties(device).L2_cache_size
        scratch = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    before = clocks(device)
    times = []
    for _ in range(repeat):
        if scratch is not None:
            scratch.fill_(1)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    return Timing(statistics.median(times), min(times), repeat, before, clocks(device))


# ---- argus bench -----------------------------------------------------------------------------


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("kernel", metavar="FILE:KERNEL")
    p.add_argument("--target", default="nvptx", help="an NVIDIA target (default: the device's best)")
    p.add_argument("--seed", type=int, default=0, help="seed of the example problem's random inputs")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--repeat", type=int, default=50)
    p.add_argument("--flush-l2", action="store_true", help="overwrite the L2 cache before each timed launch")
    p.add_argument("--graph", action="store_true", help="time replays of a captured CUDA graph")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")


def _run(args: argparse.Namespace) -> int:
    try:
        import torch
    except ImportError:
        raise CommandError("argus bench needs PyTorch with CUDA to hold the inputs on the GPU") from None
    if not torch.cuda.is_available():
        raise CommandError("argus bench needs a CUDA GPU; none is visible")
    module, k, name = load_kernel(args.kernel)
    problem = example_problem(module, name, args.seed)
    device = [to_gpu(a) for a in problem.args]

    def launch() -> None:
        k.launch(problem.grid, device, dict(problem.constants), target=args.target)

    launch()
    torch.cuda.synchronize()
    problem.args = tuple(to_numpy(d, h) for d, h in zip(device, problem.args))
    try:
        problem.check()
    except AssertionError as err:
        raise CommandError(f"{name} does not match the reference on the GPU: {err}") from None
    timing = measure(launch, warmup=args.warmup, repeat=args.repeat, flush_l2=args.flush_l2, graph=args.graph)
    if args.json:
        print(json.dumps({"kernel": name, "grid": list(problem.grid), "device": torch.cuda.get_device_name(),
                          **asdict(timing)}, indent=2))
    else:
        print(f"{name} on {torch.cuda.get_device_name()}: grid {problem.grid}, matches the reference; {timing.text()}")
    return 0


def to_gpu(x: Any) -> Any:
    """A numpy argument as a torch CUDA tensor (bf16 bits as bf16); anything else unchanged."""
    import numpy as np
    import torch

    if not isinstance(x, np.ndarray):
        return x
    if x.dtype == np.uint16:  # bf16 bits
        return torch.from_numpy(x.view(np.int16).copy()).cuda().view(torch.bfloat16)
    return torch.from_numpy(x.copy()).cuda()


def to_numpy(x: Any, like: Any) -> Any:
    """A torch CUDA tensor back in the storage of the numpy argument `like` it came from."""
    import numpy as np
    import torch

    if not isinstance(like, np.ndarray):
        return like
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).cpu().numpy().view(np.uint16)
    return x.cpu().numpy()


BENCH = Command("bench", "time a kernel's example problem on an NVIDIA GPU (CUDA events, clocks logged)",
                _configure, _run)
