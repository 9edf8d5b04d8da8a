"""How long the reference interpreter takes on the example kernels (CPU only).

Targets (2-core machine): GEMM at 256^3 under 5 s, flash attention (batch 1, 2 heads, seq 256,
d 64) under 10 s. Each kernel is compiled first (timed
apart), then launched on fresh random inputs and checked against its float64 reference.

Run:  hatch run bench-interp       (writes benchmarks/results/interpreter-<date>.json)
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = {
    "gemm 256x256x256 bf16->f32": ("gemm", "gemm", {"m": 256, "n": 256, "k": 256}),
    "flash attention causal GQA b1 h2 s256 d64": ("flash_attention", "attention", {"seq": 256, "heads": 2, "kv_heads": 1, "d": 64}),
    "softmax 256x1024 f32": ("softmax", "softmax", {"rows": 256, "cols": 1024}),
    "transpose 1024x1024 f32": ("transpose", "transpose", {"rows": 1024, "cols": 1024}),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    os.environ.setdefault("ARGUS_CACHE_DIR", "off")
    rows = []
    for label, (file, kernel_name, size) in CASES.items():
        module = load(file)
        k = getattr(module, kernel_name)
        problem = getattr(module, f"example_{kernel_name}")(np.random.default_rng(0), *size.values())
        t0 = time.perf_counter()
        k.compile(**problem.constants)
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        k[problem.grid](*problem.args, **problem.constants)
        run_s = time.perf_counter() - t0
        error = max(problem.check().values())
        rows.append({"case": label, "compile_s": compile_s, "run_s": run_s, "max_abs_error": error})
        print(f"{label:32s} compile {compile_s:6.2f} s   run {run_s:6.2f} s   max error {error:.2g}", flush=True)
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count()},
        "cases": rows,
    }
    out = args.output or Path(__file__).parent / "results" / f"interpreter-{dt.date.today().isoformat()}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
