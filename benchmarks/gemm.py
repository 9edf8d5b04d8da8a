"""bf16 GEMM on the GPU: the Argus example kernel against torch.matmul (cuBLAS), side by side.

    python benchmarks/gemm.py [--sizes 1024 2048 ...] [--repeat N] [--json FILE]

Both compute C = A·Bᵀ for A (M×K) and B (N×K) in bf16 with fp32 accumulation on the same
random inputs; the Argus result is checked against cuBLAS's before timing. Each figure is the
median of `repeat` timed launches (CUDA events) after warm-up, with the SM clock, memory clock
and power read before and after each size (the H200 throttles under sustained load).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def clocks() -> dict[str, str]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return {}
    sm, mem, power, temp = (x.strip() for x in out.split(","))
    return {"sm_clock": sm, "mem_clock": mem, "power": power, "temperature_c": temp}


def timed(fn: Any, repeat: int) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000)
    return statistics.median(times)


def load_example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    gemm = load_example("gemm")
    rows = []
    print(f"{'size':>6} {'argus TFLOP/s':>14} {'cuBLAS TFLOP/s':>15} {'ratio':>6}  clocks")
    for size in args.sizes:
        m = n = k = size
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.float32)
        grid = (n // gemm.BN, m // gemm.BM)

        def argus() -> None:
            gemm.gemm[grid](a, b, c, m, n, k)

        def cublas() -> Any:
            return torch.matmul(a, b.T)

        argus()
        reference = cublas().float()
        error = float((c - reference).norm() / reference.norm())
        if error > 1e-2:
            print(f"size {size}: the Argus result differs from cuBLAS (relative error {error:.2e})", file=sys.stderr)
            return 1
        before = clocks()
        t_argus, t_cublas = timed(argus, args.repeat), timed(cublas, args.repeat)
        after = clocks()
        flops = 2 * m * n * k
        row = {"size": size, "argus_tflops": flops / t_argus / 1e12, "cublas_tflops": flops / t_cublas / 1e12,
               "ratio": t_cublas / t_argus, "relative_error": error, "clocks_before": before, "clocks_after": after}
        rows.append(row)
        print(f"{size:6d} {row['argus_tflops']:14.1f} {row['cublas_tflops']:15.1f} {row['ratio']:6.2f}  "
              f"{before.get('sm_clock')}→{after.get('sm_clock')} {after.get('power')}")
    ratios = [r["ratio"] for r in rows]
    geomean = statistics.geometric_mean(ratios)
    print(f"geometric mean of argus/cuBLAS speed: {geomean:.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                         "kernel": "examples/gemm.py (mma.sync, 64x64x16 tiles)", "rows": rows,
                                         "geomean_ratio": geomean}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
