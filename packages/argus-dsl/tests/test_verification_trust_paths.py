"""Kernels that write shared memory under random nests of runtime branches and loops, then read
it: wherever the interpreter finds a read of unwritten bytes on one of a grid of launches, the
checker must not say the kernel is free of faults (`nothing to prove`); and where it reports an
uninitialized read, the interpreter reproduced it (its witness is replayed)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest
from argus.dsl import KernelFault
from argus.dsl.cli import load_module
from argus.verify import Verdict

pytestmark = pytest.mark.usefixtures("no_result_cache")

CONDITIONS = ("n > 2", "n < 5", "m > 0", "n == 3", "m >= n", "thread_idx.x < n")
RANGES = ("range(0, m)", "range(n, 4)", "range(1, n)", "range(0, 2)")
LAUNCHES = list(itertools.product(range(0, 7), range(-1, 3)))  # (n, m)
CASES = 80


def _block(rng: random.Random, depth: int, indent: str, loops: int = 0) -> list[str]:
    """Statements writing `s` (each thread its own byte) under branches and loops."""
    lines: list[str] = []
    for _ in range(rng.randint(1, 2)):
        kind = rng.choice(("write", "write", "if", "if-else", "for") if depth < 2 else ("write",))
        if kind == "write":
            lines.append(f"{indent}s[thread_idx.x] = 1.0")
        elif kind == "for":
            lines.append(f"{indent}for i{loops} in {rng.choice(RANGES)}:")
            lines += _block(rng, depth + 1, indent + "    ", loops + 1)
        else:
            lines.append(f"{indent}if {rng.choice(CONDITIONS)}:")
            lines += _block(rng, depth + 1, indent + "    ", loops)
            if kind == "if-else":
                lines.append(f"{indent}else:")
                lines += _block(rng, depth + 1, indent + "    ", loops)
    return lines


def _kernel_source(seed: int) -> str:
    rng = random.Random(seed)
    body = _block(rng, 0, "    ")
    read = "    out[thread_idx.x] = s[thread_idx.x]"
    if rng.random() < 0.3:
        read = f"    if {rng.choice(CONDITIONS)}:\n    " + read
    return "\n".join([
        "from argus.dsl import Tensor, f32, kernel, make_shared, syncthreads, thread_idx",
        "",
        "",
        "@kernel(block=(32,), verify=False)",
        "def k(out: Tensor[f32, 32], n: int, m: int):",
        "    s = make_shared((32,), f32)",
        *body,
        "    syncthreads()",
        read,
        "",
    ])


def _faulting_launch(k) -> tuple[int, int] | None:
    for n, m in LAUNCHES:
        try:
            k[(1,)](np.zeros(32, np.float32), n, m)
        except KernelFault as fault:
            assert fault.kind == "uninitialized-read", fault
            return n, m
    return None


@pytest.mark.parametrize("seed", range(CASES))
def test_no_launch_reading_unwritten_bytes_is_missed(tmp_path: Path, seed: int) -> None:
    source = _kernel_source(seed)
    path = tmp_path / f"paths_{seed}.py"
    path.write_text(source)
    k = load_module(path).k
    result = k.verify()
    faulting = _faulting_launch(k)
    if faulting is not None:
        assert result.verdict is not Verdict.NOTHING_TO_PROVE, \
            f"the launch n, m = {faulting} reads unwritten bytes:\n{source}\n{result.text()}"
    if result.verdict is Verdict.VIOLATED:
        assert all(w["replayed"].startswith(("the interpreter faults", "reproduced")) for w in result.witnesses)
