"""bf16 GEMM on the GPU: the Argus example kernels against torch.matmul (cuBLAS) and a plain
autotuned Triton GEMM, side by side in one process.

    python benchmarks/gemm.py [--sizes 1024 2048 ...] [--kernels gemm_tma:tuned ...] [--repeat N] [--rounds R]
                              [--json FILE]

All compute C = A·Bᵀ for A (M×K) and B (N×K) in bf16 with fp32 accumulation on the same
random inputs; each result is checked against cuBLAS's before timing. Every figure comes from
`argus.backends.nvptx.bench.measure` (CUDA events, warm-up, median of `repeat`), with the SM
clock, memory clock and power read before and after (the H200 throttles under sustained load,
so the contenders take turns: `rounds` measurements of each, interleaved, and the middle one
is kept).
By default each contender is captured once in a CUDA graph and the replays are timed: the
GPU's time for the product, the same way for all. ``--direct`` times plain launches instead,
which adds each library's host-side launch cost (large next to a 1024³ product).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _example(load_module: Any, spec: str) -> tuple[Any, Any, Any]:
    """(kernel, grid(m, n), C's torch dtype) of an example GEMM:

    - "NAME": examples/NAME.py's kernel NAME, with its tile sizes BM, BN (and C_TYPE when C is not f32);
    - "NAME:BMxBNxSTAGES[:OPTION=INT...]": the example's `build(BM, BN, 64, STAGES, ...)`;
    - "NAME:persistent:BMxBNxSTAGES": its `build_persistent(...)`, one block per multiprocessor;
    - "NAME:cluster:BMxBNxSTAGES": its `build_cluster(...)`, clusters of two blocks sharing B;
    - "NAME:tuned": its `tuned(m, n, k)`, which picks kernel and grid per size (grid None).
    """
    import torch

    name, *rest = spec.split(":")
    module = load_module(ROOT / "examples" / f"{name}.py")
    out = {"f32": torch.float32, "bf16": torch.bfloat16}[getattr(module, "C_TYPE", "f32")]
    if not rest:
        bm, bn = module.BM, module.BN
        return getattr(module, name), lambda m, n: (n // bn, m // bm), out
    if rest == ["tuned"]:
        return module.tuned, None, out
    persistent, clustered = rest[0] == "persistent", rest[0] == "cluster"
    rest = rest[1:] if persistent or clustered else rest
    bm, bn, stages = (int(x) for x in rest[0].split("x"))
    options = {k: int(v) for k, v in (o.split("=") for o in rest[1:])}
    if clustered:
        return module.build_cluster(bm, bn, 64, stages, **options), lambda m, n: ((m // bm) * (n // bn),), out
    if persistent:
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        return (module.build_persistent(bm, bn, 64, stages, **options),
                lambda m, n: (min((m // bm) * (n // bn), sms),), out)
    return module.build(bm, bn, 64, stages, **options), lambda m, n: (n // bn, m // bm), out


def _interleaved(runs: dict[str, Any], rounds: int, repeat: int, graph: bool) -> dict[str, Any]:
    """Each contender's median round: every round measures all contenders once, in turn, so that
    a clock that drops under sustained load slows them alike."""
    from argus.backends.nvptx.bench import measure

    measured: dict[str, list[Any]] = {name: [] for name in runs}
    for _ in range(max(rounds, 1)):
        for name, fn in runs.items():
            measured[name].append(measure(fn, warmup=3, repeat=repeat, graph=graph))
    return {name: sorted(found, key=lambda t: t.median_s)[len(found) // 2] for name, found in measured.items()}


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384])
    parser.add_argument("--kernels", nargs="+", default=["gemm_tma:tuned"],
                        help="example GEMMs: NAME (examples/NAME.py, kernel NAME) or NAME:BMxBNxSTAGES (its build()); "
                             "the first is the one compared")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3,
                        help="measure every contender this many times, in turn, and keep the middle round of each "
                             "(the clock drifts as the GPU heats up; taking turns spreads that over all)")
    parser.add_argument("--direct", action="store_true",
                        help="time direct launches (the host's launch cost included) instead of CUDA graph replays")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    from argus.dsl.cli import load_module

    examples = {spec: _example(load_module, spec) for spec in args.kernels}
    sys.path.insert(0, str(Path(__file__).parent))
    from triton_matmul import matmul_nt

    rows = []
    print("TFLOP/s: " + "  ".join(f"{name:>10}" for name in [*args.kernels, "cuBLAS", "Triton"])
          + f"  {args.kernels[0]}/cuBLAS  SM clock, power")
    for size in args.sizes:
        m = n = k = size
        a = torch.randn(m, k, device="cuda").to(torch.bfloat16)
        b = torch.randn(n, k, device="cuda").to(torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.float32)

        outputs = {torch.float32: c, torch.bfloat16: torch.empty(m, n, device="cuda", dtype=torch.bfloat16)}

        def launcher(name: str) -> Any:
            fn, grid, out = examples[name]
            fn, dims = fn(m, n, k) if grid is None else (fn, grid(m, n))  # None: the example picks per size
            return lambda: fn[dims](a, b, outputs[out], m, n, k)

        def cublas() -> Any:
            return torch.matmul(a, b.T)

        def triton_gemm() -> Any:
            return matmul_nt(a, b)

        reference = cublas().float()
        errors = {"triton": float((triton_gemm().float() - reference).norm() / reference.norm())}
        for name in examples:
            out = outputs[examples[name][2]]
            out.fill_(float("nan"))  # every element must be written
            launcher(name)()
            errors[name] = float((out.float() - reference).norm() / reference.norm())
        if not max(errors.values()) <= 1e-2:
            print(f"size {size}: a result differs from cuBLAS (relative errors {errors})", file=sys.stderr)
            return 1
        runs = {**{name: launcher(name) for name in examples}, "cublas": cublas, "triton": triton_gemm}
        timings = _interleaved(runs, args.rounds, args.repeat, not args.direct)
        flops = 2 * m * n * k
        row = {"size": size, **{f"{name}_tflops": flops / t.median_s / 1e12 for name, t in timings.items()},
               "ratio": timings["cublas"].median_s / timings[args.kernels[0]].median_s, "relative_errors": errors,
               "timings": {name: asdict(t) for name, t in timings.items()}}
        rows.append(row)
        clock = timings[args.kernels[0]].clocks_after
        print(f"{size:6d}  " + "  ".join(f"{row[f'{name}_tflops']:10.1f}" for name in runs)
              + f"  {row['ratio']:8.2f}  {clock.get('sm_mhz')} MHz, {clock.get('power_w')} W")
    ratios = [r["ratio"] for r in rows]
    geomean = statistics.geometric_mean(ratios)
    print(f"geometric mean of {args.kernels[0]}/cuBLAS speed: {geomean:.3f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                                         "kernels": args.kernels, "compared": args.kernels[0], "rows": rows,
                                         "timing": "direct launches" if args.direct else "CUDA graph replays",
                                         "rounds": args.rounds, "repeat": args.repeat,
                                         "geomean_ratio": geomean}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
