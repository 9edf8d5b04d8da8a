"""How long an example kernel (by default the benchmarked GEMM, gemm_tma) takes to compile
cold, and to load from the cache in a new process.

    python benchmarks/compile_time.py [--example NAME] [--json FILE]

Cold phases: an empty cache, so the front end, the tag check, LLVM and ptxas all run, each
timed on its own. Then two new Python processes launch the kernel (on its own `example_NAME`
problem) and wait for it, the first on an empty cache (the whole compile as a user meets it:
the binary is built while the kernel is checked) and the second with the cache filled (what
loading a cached kernel costs: check result and cubin read from disk, module loaded, launch,
synchronize). In each, a launch of the vector-add example comes first and pays what a
process pays once: finding the backend plugins, hashing the compiler's sources for the cache
keys and loading the CUDA driver bindings' state.
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
path, name = sys.argv[1], sys.argv[2]
spec = importlib.util.spec_from_file_location(name, path)
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
k = getattr(module, name)
torch.zeros(1, device="cuda")
arch = runtime.device_arch(0)
t = {}
start = time.perf_counter(); compiled = k.specialize(); t["argus IR"] = time.perf_counter() - start
start = time.perf_counter(); k.verify(); t["tag check"] = time.perf_counter() - start
start = time.perf_counter()
binary = compiler.build(compiled, arch, key=k.specialization().key)  # the key launches look up
t["LLVM + ptxas"] = time.perf_counter() - start
start = time.perf_counter(); runtime.LoadedKernel(binary, 0); t["module load"] = time.perf_counter() - start
t["total"] = sum(t.values())
print(json.dumps(t))
"""

_LAUNCH = r"""
import importlib.util, json, sys, time
import numpy as np
import torch
import argus.backends.nvptx.runtime, cuda.bindings.driver  # imports are not timed
from argus.backends.nvptx.bench import to_gpu

def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
    return module, getattr(module, name), getattr(module, "example_" + name)(np.random.default_rng(0))

path, name = sys.argv[1], sys.argv[2]
_, vector_add, warm = load(path.rsplit("/", 1)[0] + "/vector_add.py", "vector_add")
_, k, problem = load(path, name)
warm_args = [to_gpu(a) for a in warm.args]
args = [to_gpu(a) for a in problem.args]
torch.cuda.synchronize()
t = {}
start = time.perf_counter(); vector_add[warm.grid](*warm_args); torch.cuda.synchronize()
t["process's first launch (vector_add)"] = time.perf_counter() - start
start = time.perf_counter(); k[problem.grid](*args, **problem.constants); torch.cuda.synchronize()
t["first launch of the kernel"] = time.perf_counter() - start
start = time.perf_counter(); k[problem.grid](*args, **problem.constants); torch.cuda.synchronize()
t["second launch"] = time.perf_counter() - start
print(json.dumps(t))
"""


def phases(script: str, cache: str, example: str) -> dict[str, float]:
    env = dict(os.environ, ARGUS_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", script, str(ROOT / "examples" / f"{example}.py"), example], env=env,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--example", default="gemm_tma",
                        help="examples/NAME.py whose kernel NAME is compiled (default: the benchmarked GEMM)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="argus-cache-") as cache, \
            tempfile.TemporaryDirectory(prefix="argus-cache-") as fresh:
        cold = phases(_COLD, cache, args.example)
        first = phases(_LAUNCH, fresh, args.example)  # an empty cache: the first launch compiles
        cached = phases(_LAUNCH, fresh, args.example)
    for label, figures in (("cold phases", cold), ("empty cache", first), ("cached", cached)):
        print(f"{label:12s} " + ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in figures.items()))
    if args.json:
        args.json.write_text(json.dumps({"example": args.example, "cold": cold, "first_launch_empty_cache": first,
                                         "cached": cached}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
