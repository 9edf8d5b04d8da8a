"""The GPU side of validation, used only where torch sees a CUDA device: moving arguments to the
GPU and back, and timing by one protocol for candidates and references alike (CUDA events
around each launch, warm-up first, L2 overwritten before each timed launch, median kept).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

import numpy as np


def available() -> bool:
    """Whether a CUDA GPU can be used here (torch installed and a device visible)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def name() -> str:
    import torch

    return str(torch.cuda.get_device_name())


def multiprocessors() -> int:
    import torch

    return int(torch.cuda.get_device_properties(0).multi_processor_count)


def to_device(x: Any) -> Any:
    """A host argument on the GPU (bf16 bits as a bf16 tensor); scalars unchanged."""
    import torch

    if not isinstance(x, np.ndarray):
        return x
    if x.dtype == np.uint16:
        return torch.from_numpy(x.view(np.int16).copy()).cuda().view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x)).cuda()


def to_host(x: Any, like: Any) -> Any:
    """A GPU tensor back in the storage of the host array `like`."""
    import torch

    if not isinstance(like, np.ndarray):
        return like
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).cpu().numpy().view(np.uint16)
    return x.cpu().numpy()


def time_gpu(fn: Callable[[], Any], warmup: int = 3, repeat: int = 20, flush_l2: bool = True,
             graph: bool = True) -> dict[str, float]:
    """Median and minimum seconds of `fn` (which enqueues work on torch's current stream). With
    `graph`, `fn` is captured once in a CUDA graph and the replays are timed: the GPU's time,
    without the host's launch cost, for a candidate and a library alike."""
    import torch

    fn()  # loads (and for a candidate, builds) outside any capture
    torch.cuda.synchronize()
    if graph:
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            captured = torch.cuda.CUDAGraph()
            with torch.cuda.stream(side), torch.cuda.graph(captured):
                fn()
            torch.cuda.current_stream().wait_stream(side)
            fn = captured.replay
        except Exception:  # noqa: BLE001 - something that cannot be captured is timed directly
            torch.cuda.synchronize()
    scratch = None
    if flush_l2:
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        scratch = torch.empty(max(2 * l2, 1 << 20), dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        if scratch is not None:
            scratch.fill_(1)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    return {"median_s": statistics.median(times), "min_s": min(times), "repeat": float(repeat)}
