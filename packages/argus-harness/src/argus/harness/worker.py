"""The sandboxed half of validation: ``python -m argus.harness.worker REQUEST.json RESULT.json``.

It runs in a subprocess with time and memory limits (`sandbox`), so a kernel that hangs, faults
or exhausts memory costs one candidate. In order, stopping at the first failure:

1. compile: build the candidate's kernel (`loader`) and its IR; for a GPU target, its code;
2. invariants: prove its tag assertions for every launch (`verify_kernel`), or refute them with
   a replayed counterexample;
3. tests: every shape and seed of the request, on fresh inputs, outputs poisoned with NaN;
   on the GPU when there is one, else on the interpreter;
4. checks for reward hacking that need a run: outputs constant, or independent of the inputs;
5. profile (GPU only): the bench shape timed, correct there too, and its time compared with a
   smaller shape's (time that does not grow with the work is a cached or skipped result).
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np


def main(argv: list[str] | None = None) -> int:
    from .sandbox import apply_limits

    apply_limits()
    args = sys.argv[1:] if argv is None else argv
    request = json.loads(Path(args[0]).read_text())
    try:
        result = run(request)
    except Exception as err:  # noqa: BLE001 - reported to the harness, never raised past it
        result = {"stages": {}, "error": {"stage": "worker", "message": f"{type(err).__name__}: {err}",
                                          "trace": traceback.format_exc()[-2000:]}}
    temporary = Path(args[1] + ".part")
    temporary.write_text(json.dumps(result, default=_jsonable))
    os.replace(temporary, args[1])
    return 0


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def run(request: dict[str, Any]) -> dict[str, Any]:
    from argus.dsl.backends import backend_for, parse_target
    from argus.dsl.errors import ArgusError
    from argus.dsl.verification import verify_kernel

    from . import gpu
    from .candidate import parse_candidate
    from .loader import load_candidate
    from .reference import make_case
    from .task import task_from_dict

    task = task_from_dict(request["task"])
    if request.get("probe"):  # the task itself: can its reference run, and which arguments does it read back?
        from .reference import outputs_of

        return {"outputs": list(outputs_of(task, task.interface))}
    target = request["target"]
    work = Path(request["work_dir"])
    on_gpu = request.get("device") == "gpu"
    out: dict[str, Any] = {"stages": {}, "device": gpu.name() if on_gpu else "interpreter"}
    stages = out["stages"]

    started = time.perf_counter()
    try:
        candidate = parse_candidate(request["candidate"], "candidate.py")
        loaded = load_candidate(candidate, work / "candidate.py")
        compiled = loaded.kernel.specialize()
        kind = parse_target(target)
        if kind.kind != "interp" and not on_gpu:  # no GPU to build for at launch: build the code now
            backend = backend_for(kind)
            stage = next((s for s in ("ptx", "asm", "llvm") if s in backend.stages), None)
            if stage is not None:
                backend.compiler(kind).emit(compiled, stage)
    except ArgusError as err:
        stages["compile"] = {"ok": False, "message": str(err), "seconds": time.perf_counter() - started}
        return out
    except Exception as err:  # noqa: BLE001 - any failure to build is the candidate's
        stages["compile"] = {"ok": False, "message": f"{type(err).__name__}: {err}",
                             "seconds": time.perf_counter() - started}
        return out
    stages["compile"] = {"ok": True, "seconds": time.perf_counter() - started}

    started = time.perf_counter()
    try:
        result = verify_kernel(compiled, loaded.kernel.name)
    except ArgusError as err:
        stages["invariants"] = {"verdict": "unknown", "text": str(err), "witnesses": [],
                                "seconds": time.perf_counter() - started}
    else:
        stages["invariants"] = {"verdict": result.verdict.value, "text": result.text(),
                                "witnesses": result.as_dict()["witnesses"], "seconds": time.perf_counter() - started}
    if stages["invariants"]["verdict"] == "violated":
        return out
    os.environ["ARGUS_VERIFY"] = "0"  # proved (or undecided) once above; launches need not check again

    sms = gpu.multiprocessors() if on_gpu else 4
    params = [p for p in candidate.parameters if p.kind != "constexpr"]

    def launch(case: Any) -> list[Any]:
        grid = loaded.grid({**case.sizes, "SMS": sms}) if loaded.grid_node is not None else case.grid
        if grid is None:
            raise ArgusError("the candidate needs def grid(<sizes>): the task does not fix a launch grid")
        if on_gpu:
            import torch

            device = [gpu.to_device(a) for a in case.args]
            loaded.kernel.launch(grid, device, {}, target=target)
            torch.cuda.synchronize()
            return [gpu.to_host(d, h) for d, h in zip(device, case.args)]
        loaded.kernel.launch(grid, case.args, {}, target="interp")
        return case.args

    started = time.perf_counter()
    tests: list[dict[str, Any]] = []
    outputs: dict[tuple[str, int], dict[int, np.ndarray]] = {}
    hacks: list[str] = []
    for shape in request["shapes"]:
        for seed in request["seeds"]:
            test: dict[str, Any] = {"shape": shape, "seed": seed}
            try:
                case = make_case(task, candidate.parameters, shape, seed)
                got = launch(case)
                test.update(_compare(case, got, params))
                outputs[(json.dumps(shape, sort_keys=True), seed)] = {i: _decoded(got[i], params[i]) for i in case.expected}
                hacks.extend(_constant(case, got, params))
            except ArgusError as err:
                test.update(passed=False, message=str(err))
            tests.append(test)
            if not test["passed"]:
                break
        if tests and not tests[-1]["passed"]:
            break
    passed = sum(1 for t in tests if t["passed"])
    stages["tests"] = {"passed": passed, "total": len(request["shapes"]) * len(request["seeds"]), "results": tests,
                       "seconds": time.perf_counter() - started}
    hacks.extend(_independent(outputs))
    stages["hacks"] = sorted(set(hacks))
    if passed < stages["tests"]["total"] or hacks or not on_gpu:
        return out

    stages["profile"] = _profile(request, task, candidate, loaded, params, launch, sms, target)
    return out


def _decoded(array: Any, p: Any) -> np.ndarray:
    from .reference import decode

    return decode(array, p)


def _compare(case: Any, got: list[Any], params: list[Any]) -> dict[str, Any]:
    worst = 0.0
    for i, want in case.expected.items():
        values = _decoded(got[i], params[i])
        if values.shape != want.shape:
            return {"passed": False, "message": f"output {params[i].name} has shape {values.shape}, expected "
                                                f"{want.shape}"}
        unwritten = int(np.isnan(values).sum() - np.isnan(want).sum())
        if unwritten > 0:
            first = tuple(int(x) for x in np.argwhere(np.isnan(values) & ~np.isnan(want))[0])
            return {"passed": False, "message": f"output {params[i].name}: {unwritten} element(s) never written (still "
                                                f"NaN), the first at {first}"}
        error = np.abs(values - want)
        bad = ~(error <= case.atol + case.rtol * np.abs(want)) & ~(np.isnan(want) & np.isnan(values))
        worst = max(worst, float(np.nanmax(error)) if error.size else 0.0)
        if bad.any():
            at = tuple(int(x) for x in np.argwhere(bad)[0])
            return {"passed": False, "message": f"output {params[i].name} differs from the reference at {at}: got "
                                                f"{values[at]:.6g}, expected {want[at]:.6g} ({int(bad.sum())} element(s) "
                                                f"beyond atol {case.atol:.3g}, rtol {case.rtol:.3g}; max error "
                                                f"{worst:.3g})"}
    return {"passed": True, "max_error": worst}


def _constant(case: Any, got: list[Any], params: list[Any]) -> list[str]:
    """An output that is one value everywhere where the reference is not."""
    found = []
    for i, want in case.expected.items():
        values = _decoded(got[i], params[i])
        if values.size > 1 and want.size > 1 and np.ptp(values) == 0 and np.ptp(want) > 0:
            found.append(f"constant output: {params[i].name} holds {float(values.flat[0]):.6g} everywhere")
    return found


def _independent(outputs: dict[tuple[str, int], dict[int, np.ndarray]]) -> list[str]:
    """Outputs equal for two different inputs of one shape: they do not depend on the inputs."""
    found = []
    by_shape: dict[str, list[dict[int, np.ndarray]]] = {}
    for (shape, _), outs in outputs.items():
        by_shape.setdefault(shape, []).append(outs)
    for shape, runs in by_shape.items():
        for first, second in itertools.pairwise(runs):
            for i in first:
                if first[i].size > 1 and np.array_equal(first[i], second[i]):
                    found.append(f"outputs do not depend on the inputs: argument {i} is identical for two seeds at "
                                 f"shape {shape}")
    return found


def _profile(request: dict[str, Any], task: Any, candidate: Any, loaded: Any, params: list[Any], launch: Any,
             sms: int, target: str) -> dict[str, Any]:
    """Time the bench shape (checked too) and a half-size shape; time the reference where it runs on
    the GPU (KernelBench form)."""
    from . import gpu
    from .reference import make_case, task_module

    bench = request.get("bench_shape") or request["shapes"][-1]
    case = make_case(task, candidate.parameters, bench, 1234)
    checked = _compare(case, launch(case), params)
    if not checked["passed"]:
        return {"ok": False, "message": f"at the bench shape {bench}: {checked['message']}"}

    def timed(c: Any) -> dict[str, float]:
        grid = loaded.grid({**c.sizes, "SMS": sms}) if loaded.grid_node is not None else c.grid
        device = [gpu.to_device(a) for a in c.args]
        return gpu.time_gpu(lambda: loaded.kernel.launch(grid, device, {}, target=target), target,
                            **request.get("timing", {}))

    mine = timed(case)
    profile: dict[str, Any] = {"ok": True, "shape": bench, "time_s": mine["median_s"], "min_s": mine["min_s"]}
    half = {k: v // 2 for k, v in bench.items()} if all(v % 2 == 0 and v >= 2 for v in bench.values()) else None
    if half is not None:
        try:
            small = timed(make_case(task, candidate.parameters, half, 1234))
        except Exception as err:  # noqa: BLE001 - a shape the candidate does not take: no scaling check
            profile["scaling"] = f"not checked: {type(err).__name__}: {err}"
        else:
            ratio = mine["median_s"] / small["median_s"]
            profile.update(half_shape=half, half_time_s=small["median_s"], scaling_ratio=ratio)
            work = 2 ** len(bench)
            if work >= 4 and mine["median_s"] > 50e-6 and ratio < 1.5:
                profile["hack"] = (f"timing does not scale with the work: {work}x the work took {ratio:.2f}x the "
                                   "time")
    if task.form == "kernelbench" and case.torch_inputs is not None:
        import torch

        module = task_module(task)
        model = module.Model(*module.get_init_inputs()).cuda()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in case.torch_inputs]
        with torch.no_grad():
            reference = gpu.time_gpu(lambda: model(*inputs), target, **request.get("timing", {}))
        profile["reference_time_s"] = reference["median_s"]
    return profile


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
