"""argus.layout against NVIDIA's pycute, side by side in one process.

Two workloads:
1. every offset of a 2**20-element nested layout: pycute's per-index loop against
   argus.layout's vectorized `offsets()` (and its own scalar loop, for reference);
2. the layout algebra of a typical 128x128x64 bf16 GEMM tiling (global tiles, a swizzle-free
   shared-memory atom tiled to shape, thread/value partitions, inverses), each operation
   timed on both libraries after checking that they agree.

Run:  hatch run bench            (writes benchmarks/results/layout-<date>.json)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import argus.layout as al
import numpy as np

try:
    import pycute as pc
except ImportError:  # pragma: no cover - the bench needs the oracle
    sys.exit("pycute is missing: pip install --no-deps nvidia-cutlass==4.2.0.0")

NESTED = (((8, 8), (16, 4), (16, 4), 4), ((1, 4096), (8, 65536), (262144, 128), 4194304))


def best_of(fn: Callable[[], Any], repeat: int, number: int) -> float:
    """Seconds per call: the best of `repeat` batches of `number` calls."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def offsets_workload() -> dict[str, Any]:
    shape, stride = NESTED
    ours, theirs = al.Layout(shape, stride), pc.Layout(shape, stride)
    n = ours.size()
    t0 = time.perf_counter()
    ref = [theirs(i) for i in range(n)]
    t_pycute = time.perf_counter() - t0
    t0 = time.perf_counter()
    scalar = [ours(i) for i in range(n)]
    t_scalar = time.perf_counter() - t0
    vec = ours.offsets()
    t_offsets = best_of(ours.offsets, repeat=5, number=3)
    idx = np.random.default_rng(0).permutation(n)
    t_random = best_of(lambda: ours(idx), repeat=5, number=3)
    if not (np.array_equal(vec, np.asarray(ref)) and scalar == ref):
        raise SystemExit("offsets disagree with pycute")
    if not np.array_equal(ours(idx), vec[idx]):
        raise SystemExit("random-index evaluation disagrees with offsets()")
    return {
        "layout": str(ours),
        "size": n,
        "pycute_loop_s": t_pycute,
        "argus_scalar_loop_s": t_scalar,
        "argus_offsets_s": t_offsets,
        "argus_random_index_array_s": t_random,
        "speedup_offsets_vs_pycute_loop": t_pycute / t_offsets,
        "speedup_index_array_vs_pycute_loop": t_pycute / t_random,
    }


TV = al.Layout(((4, 8), (2, 2, 2)), ((256, 1), (128, 8, 1024)))


def agree(ours: al.Layout, theirs: al.Layout, inverse_of: al.Layout | None = None) -> bool:
    """Same function on the domain; a left inverse is only defined on the image of its layout."""
    if inverse_of is not None:
        image = inverse_of.offsets()
        return bool(np.array_equal(ours(image), theirs(image)))
    return ours.size() == theirs.size() and bool(np.array_equal(ours.offsets(), theirs.offsets()))


def as_pair(x: Any) -> tuple[Any, Any]:
    return (x.shape, x.stride)


def gemm_cases(lib: Any) -> dict[str, Callable[[], Any]]:
    """The layout algebra a 128x128x64 bf16 GEMM mainloop performs, in either library."""
    L = lib.Layout
    M = N = K = 4096
    gA = L((M, K), (K, 1))  # row-major A
    gB = L((N, K), (K, 1))  # B stored N x K (K-major)
    gC = L((M, N), (N, 1))
    tile_a, tile_c = L((128, 64), (64, 1)), L((128, 128), (128, 1))
    smem_atom = L((8, 64), (64, 1))
    thr = L((16, 8), (8, 1))
    tv = L(*as_pair(TV))  # a 32-thread x 8-value fragment of the 128x128 C tile
    tile_128x16 = L((128, 16), (1, 128))
    tiles_a = L(((128, 32), (64, 64)), ((4096, 524288), (1, 64)))
    return {
        "logical_divide gA by (128,64)": lambda: lib.logical_divide(gA, (L(128, 1), L(64, 1))),
        "zipped_divide gA by (128,64)": lambda: lib.zipped_divide(gA, (L(128, 1), L(64, 1))),
        "zipped_divide gB by (128,64)": lambda: lib.zipped_divide(gB, (L(128, 1), L(64, 1))),
        "tiled_divide gC by (128,128)": lambda: lib.tiled_divide(gC, (L(128, 1), L(128, 1))),
        "composition tileA o (128,16)": lambda: lib.composition(tile_a, tile_128x16),
        "logical_product smem atom x (16,1)": lambda: lib.logical_product(smem_atom, L((16, 1), (1, 16))),
        "tiled_product smem atom x (16,1)": lambda: lib.tiled_product(smem_atom, (L(16, 1), L(1, 0))),
        "zipped_product thr x val": lambda: lib.zipped_product(thr, (L(1, 0), L(8, 1))),
        "composition tileC o tv": lambda: lib.composition(tile_c, tv),
        "complement tv in 16384": lambda: lib.complement(tv, 16384),
        "right_inverse tv": lambda: lib.right_inverse(tv),
        "left_inverse tv": lambda: lib.left_inverse(tv),
        "coalesce gA tiles": lambda: lib.coalesce(tiles_a),
        "construct a nested layout (validated in argus)": lambda: L(((128, 32), (64, 64)), ((4096, 524288), (1, 64))),
    }


def algebra_workload() -> list[dict[str, Any]]:
    ours, theirs = gemm_cases(al), gemm_cases(pc)
    rows = []
    for name in ours:
        a, b = ours[name](), theirs[name]()
        same = agree(a, al.Layout(*as_pair(b)), inverse_of=TV if "left_inverse" in name else None)
        t_ours = best_of(ours[name], repeat=7, number=200)
        t_theirs = best_of(theirs[name], repeat=7, number=200)
        rows.append({
            "operation": name,
            "argus_us": t_ours * 1e6,
            "pycute_us": t_theirs * 1e6,
            "pycute_over_argus": t_theirs / t_ours,
            "same_function": same,
            "argus_result": str(a),
        })
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-o", "--output", type=Path, default=None, help="JSON file to write")
    args = parser.parse_args()

    print("offsets of a 2**20-element nested layout ...", flush=True)
    off = offsets_workload()
    print(f"  {off['layout']}")
    print(f"  pycute per-index loop   {off['pycute_loop_s']:9.3f} s")
    print(f"  argus scalar loop       {off['argus_scalar_loop_s']:9.3f} s")
    print(f"  argus offsets()         {off['argus_offsets_s'] * 1e3:9.3f} ms   "
          f"({off['speedup_offsets_vs_pycute_loop']:.0f}x pycute)")
    print(f"  argus layout(idx array) {off['argus_random_index_array_s'] * 1e3:9.3f} ms   "
          f"({off['speedup_index_array_vs_pycute_loop']:.0f}x pycute)")

    print("\nGEMM 128x128x64 tiling algebra (microseconds per call) ...", flush=True)
    rows = algebra_workload()
    width = max(len(r["operation"]) for r in rows)
    print(f"  {'operation':<{width}}  {'argus':>8}  {'pycute':>8}  pycute/argus  same")
    for r in rows:
        print(f"  {r['operation']:<{width}}  {r['argus_us']:8.1f}  {r['pycute_us']:8.1f}  "
              f"{r['pycute_over_argus']:12.2f}  {r['same_function']}")
    ratios = [r["pycute_over_argus"] for r in rows if not r["operation"].startswith("construct")]
    geo = statistics.geometric_mean(ratios)
    print(f"  geometric mean pycute/argus over the algebra: {geo:.2f} (>= 1 means argus is no slower)")

    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"python": sys.version.split()[0], "platform": platform.platform(),
                    "processor": platform.processor(), "numpy": np.__version__},
        "offsets": off,
        "algebra": rows,
        "algebra_geomean_pycute_over_argus": geo,
    }
    out = args.output or Path(__file__).parent / "results" / f"layout-{dt.date.today().isoformat()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
