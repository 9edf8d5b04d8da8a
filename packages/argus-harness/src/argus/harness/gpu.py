"""The GPU side of validation, used only where torch sees a CUDA device: moving arguments to the
GPU and back, and timing by one protocol for candidates and references alike (CUDA events
around each launch, warm-up first, L2 overwritten before each timed launch, median kept).
"""

from __future__ import annotations

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
             graph: bool = True) -> dict[str, Any]:
    """Median and minimum seconds of `fn` (which enqueues work on torch's current stream), with
    the SM clock and power before and after, by the protocol of `argus bench`. With `graph`,
    `fn` is captured once in a CUDA graph and the replays are timed: the GPU's time, without
    the host's launch cost, for a candidate and a library alike (work that cannot be captured
    is timed launch by launch)."""
    import torch
    from argus.backends.nvptx.bench import measure

    try:
        timing = measure(fn, warmup=warmup, repeat=repeat, flush_l2=flush_l2, graph=graph)
    except Exception:  # noqa: BLE001 - something that cannot be captured is timed directly
        if not graph:
            raise
        torch.cuda.synchronize()
        timing = measure(fn, warmup=warmup, repeat=repeat, flush_l2=flush_l2, graph=False)
    return {"median_s": timing.median_s, "min_s": timing.min_s, "repeat": float(repeat),
            "clocks": {"before": timing.clocks_before, "after": timing.clocks_after}}
