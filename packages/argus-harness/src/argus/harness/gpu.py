"""The GPU side of validation, used only where torch sees a CUDA device: moving arguments to the
GPU and back, and timing candidates and references alike by the target runtime's protocol
(asked through argus.dsl's backend interface: the harness names no GPU backend).
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


def time_gpu(fn: Callable[[], Any], target: str, warmup: int = 3, repeat: int = 20, flush_l2: bool = True,
             graph: bool = True) -> dict[str, Any]:
    """Median and minimum seconds of `fn` (which enqueues work on the device), by the protocol of
    `target`'s runtime (for NVIDIA, `argus bench`'s: CUDA events, clocks recorded). With `graph`,
    `fn` is captured once in a CUDA graph and the replays are timed: the GPU's time, without the
    host's launch cost, for a candidate and a library alike (work that cannot be captured is
    timed launch by launch)."""
    from argus.dsl.backends import parse_target, runtime_for

    runtime = runtime_for(parse_target(target))
    measure = getattr(runtime, "measure", None)
    if measure is None:
        raise RuntimeError(f"the runtime of {target} cannot time work on its device")
    try:
        timing = measure(fn, warmup=warmup, repeat=repeat, flush_l2=flush_l2, graph=graph)
    except Exception:  # noqa: BLE001 - something that cannot be captured is timed directly
        if not graph:
            raise
        timing = measure(fn, warmup=warmup, repeat=repeat, flush_l2=flush_l2, graph=False)
    return {"median_s": timing.median_s, "min_s": timing.min_s, "repeat": float(repeat),
            "clocks": {"before": getattr(timing, "clocks_before", {}), "after": getattr(timing, "clocks_after", {})}}
