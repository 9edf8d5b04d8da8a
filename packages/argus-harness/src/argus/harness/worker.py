"""The confined half of validation, started by `sandbox` as an isolated interpreter.

It confines itself first (`isolation.confine`), says on the verdict channel what that enforced,
then reads the request from its folder and measures the candidate. In order, stopping at the
first failure:

1. compile: build the candidate's kernel (`loader`) and its IR; for a GPU target, its code;
2. invariants: prove its tag assertions for every launch (`verify_kernel`), or refute them with
   a replayed counterexample;
3. tests: every shape and seed of the request, on fresh inputs, outputs poisoned with NaN;
   on the GPU when there is one, else on the interpreter;
4. profile (GPU only): the bench shape checked and timed, and a smaller shape timed.

Its report holds measurements, not conclusions: per output, the elements never written and
those beyond the tolerance, the output's spread and digest; per timing, the seconds. The
harness derives every verdict from them (`validator`), and reads nothing the worker leaves in
its folder.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np


def main(argv: list[str] | None = None) -> int:
    """CHANNEL ENTRY PLAN (from `sandbox.BOOTSTRAP`): confine this process, then report the
    measurements of ``ENTRY(request)`` on the descriptor CHANNEL."""
    from .isolation import Plan, confine
    from .sandbox import OWN_FOLDERS, REQUEST

    args = sys.argv[1:] if argv is None else argv
    channel, entry, plan = int(args[0]), args[1], Plan.from_json(args[2])
    record = confine(plan, channel)
    for variable in OWN_FOLDERS:
        Path(os.environ[variable]).mkdir(exist_ok=True)
    with os.fdopen(channel, "w") as out:
        _send(out, "isolation", record.as_dict())  # before anything of the candidate is read
        try:
            request = json.loads(Path(REQUEST).read_text())
            report = _function(entry)(request)
        except Exception as err:  # noqa: BLE001 - reported to the harness, never raised past it
            report = {"stages": {}, "error": {"stage": "worker", "message": f"{type(err).__name__}: {err}",
                                              "trace": traceback.format_exc()[-2000:]}}
        _send(out, "report", report)
    return 0


def _function(entry: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    module, _, name = entry.partition(":")
    function: Callable[[dict[str, Any]], dict[str, Any]] = getattr(importlib.import_module(module), name)
    return function


def _send(out: IO[str], kind: str, message: dict[str, Any]) -> None:
    out.write(json.dumps({kind: message}, default=_jsonable) + "\n")
    out.flush()


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, tuple):
        return list(value)
    return str(value)


def run(request: dict[str, Any]) -> dict[str, Any]:
    """The measurements of the request's candidate (or, for a probe, the task's outputs)."""
    from argus.dsl.backends import backend_for, parse_target
    from argus.dsl.errors import ArgusError
    from argus.dsl.check.verification import verify_kernel

    from . import gpu
    from .candidate import parse_candidate
    from .loader import load_candidate
    from .reference import make_case
    from .task import task_from_dict

    task = task_from_dict(request["task"])
    work = Path.cwd()
    if request.get("probe"):  # the task itself: can its reference run, which arguments does it read back,
        from .invariants import text_invariants  # and which invariants does its kernel (sent as text) fix?
        from .reference import outputs_of

        return {"outputs": list(outputs_of(task, task.interface)),
                "invariants": text_invariants(request.get("kernel"), work).as_dict()}
    target = request["target"]
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
    stages["invariants"]["kernel_invariants"] = _kernel_invariants(loaded.kernel)
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
    for shape in request["shapes"]:
        for seed in request["seeds"]:
            test: dict[str, Any] = {"shape": shape, "seed": seed, "outputs": [], "error": None}
            try:
                case = make_case(task, candidate.parameters, shape, seed)
                test["outputs"] = measure_outputs(case, launch(case), params)
            except ArgusError as err:
                test["error"] = str(err)
            except Exception as err:  # noqa: BLE001 - a launch that fails any other way fails its test, not the report
                test["error"] = f"{type(err).__name__}: {err}"
            tests.append(test)
            if not _passed(test):
                break
        if not _passed(tests[-1]):
            break
    stages["tests"] = {"results": tests, "seconds": time.perf_counter() - started}
    if not all(_passed(t) for t in tests) or not on_gpu:
        return out

    stages["profile"] = _profile(request, task, candidate, loaded, params, launch, sms, target)
    return out


def _kernel_invariants(kernel: Any) -> dict[str, Any]:
    """The invariants the compiled kernel states, for the harness to hold against those the
    task fixes (`validator.judge`)."""
    from .invariants import kernel_invariants

    return kernel_invariants(kernel).as_dict()


def _passed(test: dict[str, Any]) -> bool:
    """Whether to go on to the next test (the harness judges the measurements itself)."""
    return test["error"] is None and bool(test["outputs"]) and all(_clean(m) for m in test["outputs"])


def _clean(m: dict[str, Any]) -> bool:
    return m["shape"] == m["expected_shape"] and m["unwritten"] == 0 and m["mismatched"] == 0


def _decoded(array: Any, p: Any) -> np.ndarray:
    from .reference import decode

    return decode(array, p)


def measure_outputs(case: Any, got: list[Any], params: list[Any]) -> list[dict[str, Any]]:
    """Each output against the reference: its shape, the elements never written (still NaN
    where the reference is a number) and those beyond the tolerance (with the first of each),
    the largest error, the spread of its values and of the reference's, and a digest of its
    values (None when some are NaN)."""
    found = []
    for i, want in case.expected.items():
        values = _decoded(got[i], params[i])
        m: dict[str, Any] = {"position": i, "name": params[i].name, "shape": list(values.shape),
                             "expected_shape": list(want.shape), "atol": case.atol, "rtol": case.rtol,
                             "size": int(want.size), "unwritten": 0, "mismatched": 0}
        found.append(m)
        if values.shape != want.shape:
            continue
        never = np.isnan(values) & ~np.isnan(want)
        error = np.abs(values - want)
        bad = ~(error <= case.atol + case.rtol * np.abs(want)) & ~(np.isnan(want) & np.isnan(values)) & ~never
        m.update(unwritten=int(never.sum()), mismatched=int(bad.sum()),
                 max_error=float(np.nanmax(error)) if error.size and not np.isnan(error).all() else 0.0,
                 spread=float(np.ptp(values)) if values.size else 0.0,
                 reference_spread=float(np.ptp(want)) if want.size else 0.0,
                 value=float(values.flat[0]) if values.size else None,
                 digest=None if np.isnan(values).any() else hashlib.sha256(values.tobytes()).hexdigest())
        if never.any():
            m["first_unwritten"] = [int(x) for x in np.argwhere(never)[0]]
        if bad.any():
            at = tuple(int(x) for x in np.argwhere(bad)[0])
            m.update(first_mismatch=list(at), got=float(values[at]), expected=float(want[at]))
    return found


def _profile(request: dict[str, Any], task: Any, candidate: Any, loaded: Any, params: list[Any], launch: Any,
             sms: int, target: str) -> dict[str, Any]:
    """Measure the bench shape's outputs; where they are right, time it and a half-size shape,
    and the reference where it runs on the GPU (KernelBench form)."""
    from . import gpu
    from .reference import make_case, task_module

    bench = request.get("bench_shape") or request["shapes"][-1]
    case = make_case(task, candidate.parameters, bench, 1234)
    profile: dict[str, Any] = {"shape": bench, "outputs": measure_outputs(case, launch(case), params)}
    if not all(_clean(m) for m in profile["outputs"]):
        return profile

    def timed(c: Any) -> dict[str, float]:
        grid = loaded.grid({**c.sizes, "SMS": sms}) if loaded.grid_node is not None else c.grid
        device = [gpu.to_device(a) for a in c.args]
        return gpu.time_gpu(lambda: loaded.kernel.launch(grid, device, {}, target=target), target,
                            **request.get("timing", {}))

    mine = timed(case)
    profile.update(time_s=mine["median_s"], min_s=mine["min_s"])
    half = {k: v // 2 for k, v in bench.items()} if all(v % 2 == 0 and v >= 2 for v in bench.values()) else None
    if half is not None:
        try:
            small = timed(make_case(task, candidate.parameters, half, 1234))
        except Exception as err:  # noqa: BLE001 - a shape the candidate does not take: no scaling check
            profile["scaling"] = f"not checked: {type(err).__name__}: {err}"
        else:
            profile.update(half_shape=half, half_time_s=small["median_s"])
    if task.form == "kernelbench" and case.torch_inputs is not None:
        import torch

        module = task_module(task)
        model = module.Model(*module.get_init_inputs()).cuda()
        inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in case.torch_inputs]
        with torch.no_grad():
            reference = gpu.time_gpu(lambda: model(*inputs), target, **request.get("timing", {}))
        profile["reference_time_s"] = reference["median_s"]
    return profile


