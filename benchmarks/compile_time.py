"""How long the GEMM example takes to compile cold, and to load from the cache in a new process.

    python benchmarks/compile_time.py [--json FILE]

Cold: an empty cache, so the front end, the tag check, LLVM and ptxas all run (each phase timed
separately). Cached: a new Python process with the cache filled. Its very first launch (of the
vector-add example) also pays once for the process: finding the backend plugins and loading
the CUDA driver bindings' state. The first launch of the GEMM after it is what loading a cached
kernel costs (check result and cubin read from disk, module loaded, launch, synchronize).
Imports and CUDA context creation are excluded.
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
import numpy as np
import torch
import argus.backends.nvptx.runtime, cuda.bindings.driver  # imports are not timed

def load(name):
    spec = importlib.util.spec_from_file_location(name, sys.argv[1].replace("gemm.py", name + ".py"))
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    return module

gemm, vector_add = load("gemm"), load("vector_add")
a, b = (torch.randn(256, 256, device="cuda").to(torch.bfloat16) for _ in range(2))
c = torch.empty(256, 256, device="cuda")
x = torch.randn(1000, device="cuda")
torch.cuda.synchronize()
t = {}
start = time.perf_counter(); vector_add.vector_add[(8,)](x, x, torch.empty_like(x), 1000); torch.cuda.synchronize()
t["process's first launch (vector_add)"] = time.perf_counter() - start
start = time.perf_counter(); gemm.gemm[(4, 4)](a, b, c, 256, 256, 256); torch.cuda.synchronize()
t["first launch of the cached GEMM"] = time.perf_counter() - start
start = time.perf_counter(); gemm.gemm[(4, 4)](a, b, c, 256, 256, 256); torch.cuda.synchronize()
t["second launch"] = time.perf_counter() - start
print(json.dumps(t))
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
        phases(_CACHED, cache)  # fills the cache for vector_add too
        cached = phases(_CACHED, cache)
    for label, figures in (("cold compile", cold), ("cached load", cached)):
        print(f"{label:13s} " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in figures.items()))
    if args.json:
        args.json.write_text(json.dumps({"cold": cold, "cached": cached}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
