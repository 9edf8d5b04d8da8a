"""How long the GEMM example takes to compile cold, and to load from the cache in a new process.

    python benchmarks/compile_time.py [--json FILE]

Cold: an empty cache, so the front end, the tag check, LLVM and ptxas all run (each phase timed
separately). Cached: a new Python process with the cache filled; its first launch (check
result and cubin read from disk, module loaded by the driver, launch, synchronize) against its
second. Imports and CUDA context creation are excluded from both.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_COLD = r"""
import importlib.util, json, sys, time
import torch
from argus.backends.nvptx import compiler, runtime
spec = importlib.util.spec_from_file_location("gemm", sys.argv[1])
gemm = importlib.util.module_from_spec(spec); spec.loader.exec_module(gemm)
torch.zeros(1, device="cuda")
arch = runtime.device_arch(0)
t = {}
start = time.perf_counter(); compiled = gemm.gemm.specialize(); t["argus IR"] = time.perf_counter() - start
start = time.perf_counter(); gemm.gemm.verify(); t["tag check"] = time.perf_counter() - start
start = time.perf_counter()
binary = compiler.build(compiled, arch, key=gemm.gemm.specialization().key)  # the key launches look up
t["LLVM + ptxas"] = time.perf_counter() - start
start = time.perf_counter(); runtime.LoadedKernel(binary, 0); t["module load"] = time.perf_counter() - start
t["total"] = sum(t.values())
print(json.dumps(t))
"""

_CACHED = r"""
import importlib.util, json, sys, time
import torch
import argus.backends.nvptx.runtime, cuda.bindings.driver  # imports are not timed
spec = importlib.util.spec_from_file_location("gemm", sys.argv[1])
gemm = importlib.util.module_from_spec(spec); spec.loader.exec_module(gemm)
a, b = (torch.randn(256, 256, device="cuda").to(torch.bfloat16) for _ in range(2))
c = torch.empty(256, 256, device="cuda")
torch.cuda.synchronize()
start = time.perf_counter(); gemm.gemm[(4, 4)](a, b, c, 256, 256, 256); torch.cuda.synchronize()
first = time.perf_counter() - start
start = time.perf_counter(); gemm.gemm[(4, 4)](a, b, c, 256, 256, 256); torch.cuda.synchronize()
print(json.dumps({"first launch": first, "second launch": time.perf_counter() - start}))
"""


def phases(script: str, cache: str) -> dict[str, float]:
    env = dict(os.environ, ARGUS_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", script, str(ROOT / "examples" / "gemm.py")], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="argus-cache-") as cache:
        cold = phases(_COLD, cache)
        cached = phases(_CACHED, cache)
    for label, figures in (("cold compile", cold), ("cached load", cached)):
        print(f"{label:13s} " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in figures.items()))
    if args.json:
        args.json.write_text(json.dumps({"cold": cold, "cached": cached}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
