"""Test cases from a task's reference, in the sandboxed worker: fresh random inputs for one shape
and seed, the float64 reference outputs computed from the inputs exactly as the kernel will see
them (rounded to its element types), and output buffers filled with NaN so that an element the
kernel never writes cannot pass.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np
from argus.dsl import from_storage, to_storage
from argus.dsl.cli import load_module
from argus.dsl.errors import ArgusError
from argus.dsl.dtypes import DType, dtype_named
from argus.dsl.machine.interpreter import storage_dtype

from .candidate import Parameter
from .errors import TaskError
from .task import Task

#: Default relative tolerance by the element type of an output (the absolute one scales with
#: the reference's RMS value), as in KernelBench: tight for fp32, loose for half types.
RTOL = {"f64": 1e-7, "f32": 1e-4, "f16": 1e-2, "bf16": 2e-2}


@dataclass
class Case:
    """One test: the launch arguments (storage arrays and scalars), the expected outputs by
    argument position, the sizes the kernel's tensors name, and the task's grid if it has one."""

    shape: dict[str, int]
    seed: int
    args: list[Any]
    expected: dict[int, np.ndarray]
    sizes: dict[str, int]
    grid: tuple[int, ...] | None
    atol: float
    rtol: float
    torch_inputs: list[Any] | None = None
    """KernelBench form: the inputs as torch made them (for timing the reference)."""


_MODULES: dict[str, Any] = {}


def task_module(task: Task) -> Any:
    """The task file imported once per worker process (it is the user's own code)."""
    key = str(task.path.resolve())
    if key not in _MODULES:
        try:
            _MODULES[key] = load_module(task.path)
        except ArgusError as err:
            raise TaskError(f"the task cannot be imported: {err}") from None
    return _MODULES[key]


def make_case(task: Task, parameters: tuple[Parameter, ...], shape: dict[str, int], seed: int) -> Case:
    """The test case of `task` at `shape` and `seed`, for a kernel with these parameters."""
    runtime = [p for p in parameters if p.kind != "constexpr"]
    module = task_module(task)
    if task.form == "example":
        problem = getattr(module, f"example_{task.example}")(np.random.default_rng(seed), **shape)
        args = list(problem.args)
        values: list[Any] = [None] * len(args)
        expected = {i: np.asarray(v, np.float64) for i, v in problem.expected.items()}
        grid = tuple(problem.grid)
        atol, rtol = task.atol if task.atol is not None else problem.atol, task.rtol if task.rtol is not None else problem.rtol
        torch_inputs = None
        inputs = [i for i in range(len(args)) if i not in expected]
        for i in inputs:
            values[i] = args[i]
    else:
        inputs_raw, torch_inputs = _inputs(task, module, shape, seed)
        if len(inputs_raw) > len(runtime):
            raise TaskError(f"{task.path}: get_inputs() gives {len(inputs_raw)} inputs; the kernel takes "
                            f"{len(runtime)} arguments")
        args = [None] * len(runtime)
        rounded = []
        for i, x in enumerate(inputs_raw):
            p = runtime[i]
            if p.kind == "tensor":
                stored = to_storage(np.asarray(x, np.float64), _dtype(p))
                args[i] = stored
                rounded.append(_values(stored, _dtype(p)))
            else:
                args[i] = x
                rounded.append(x)
        outs = _reference(task, module, rounded)
        tensor_slots = [i for i in range(len(inputs_raw), len(runtime)) if runtime[i].kind == "tensor"]
        if len(outs) > len(tensor_slots):
            raise TaskError(f"{task.path}: the reference gives {len(outs)} outputs; the kernel has {len(tensor_slots)} "
                            "tensor arguments after the inputs")
        expected = {slot: out for slot, out in zip(tensor_slots, outs)}
        grid = None
        rtol = task.rtol if task.rtol is not None else RTOL.get(task.interface[tensor_slots[0]].dtype, 1e-3)
        atol = task.atol if task.atol is not None else rtol * max(1.0, _rms(outs))
    sizes = _bind(runtime, args, expected)
    for i, p in enumerate(runtime):
        if i in expected:
            args[i] = poisoned(expected[i].shape, _dtype(p))
        elif p.kind == "scalar" and args[i] is None:
            args[i] = sizes[p.name]
    return Case(dict(shape), seed, args, expected, sizes, grid, float(atol), float(rtol), torch_inputs)


def outputs_of(task: Task, parameters: tuple[Parameter, ...]) -> tuple[int, ...]:
    """Argument positions the task reads back (from the task's smallest case)."""
    return tuple(sorted(make_case(task, parameters, task.shapes[0], 0).expected))


def poisoned(shape: tuple[int, ...], dtype: DType) -> np.ndarray:
    """An output buffer every element of which fails a comparison until the kernel writes it."""
    if dtype.kind == "float":
        return to_storage(np.full(shape, np.nan), dtype)
    return np.full(shape, 0x5A, dtype=storage_dtype(dtype))


def decode(array: Any, p: Parameter) -> np.ndarray:
    """A kernel's output storage as float64 values."""
    return _values(np.asarray(array), _dtype(p))


def _values(stored: np.ndarray, dtype: DType) -> np.ndarray:
    if dtype.kind == "float" and dtype.nbytes <= 2:
        return np.asarray(from_storage(stored, dtype), np.float64)
    return np.asarray(stored, np.float64)


def _dtype(p: Parameter) -> DType:
    found = dtype_named(p.dtype)
    if found is None:
        raise TaskError(f"parameter {p.name} has element type {p.dtype!r}, which Argus does not know")
    return found


def _rms(outs: list[np.ndarray]) -> float:
    total = sum(float(np.sum(o * o)) for o in outs)
    count = sum(o.size for o in outs)
    return float(np.sqrt(total / count)) if count else 0.0


def _inputs(task: Task, module: Any, shape: dict[str, int], seed: int) -> tuple[list[Any], list[Any] | None]:
    """The reference's inputs at `shape` (module size constants set to it), as float64 arrays
    and scalars; KernelBench inputs come from torch, seeded."""
    for name, value in shape.items():
        setattr(module, name, value)
    get_inputs = module.get_inputs
    if task.form == "kernelbench":
        import torch

        torch.manual_seed(seed)
        made = list(get_inputs())
        out = [x.detach().to(torch.float64).cpu().numpy() if isinstance(x, torch.Tensor) else x for x in made]
        return out, made
    np.random.seed(seed)
    made = list(get_inputs(np.random.default_rng(seed)) if _takes_argument(get_inputs) else get_inputs())
    return [np.asarray(x, np.float64) if isinstance(x, np.ndarray) else x for x in made], None


def _takes_argument(fn: Any) -> bool:
    try:
        return len(inspect.signature(fn).parameters) >= 1
    except (TypeError, ValueError):
        return False


def _reference(task: Task, module: Any, inputs: list[Any]) -> list[np.ndarray]:
    """The reference outputs in float64, from the rounded inputs."""
    if task.form == "kernelbench":
        import torch

        model = module.Model(*module.get_init_inputs())
        if any(True for _ in model.parameters()):
            raise TaskError(f"{task.path}: Model has weights; a kernel sees only get_inputs(), so weights must be "
                            "inputs too")
        model = model.to(torch.float64)
        with torch.no_grad():
            got = model(*[torch.from_numpy(x) if isinstance(x, np.ndarray) else x for x in inputs])
        items = list(got) if isinstance(got, (tuple, list)) else [got]
        return [np.asarray(t.detach().cpu().numpy(), np.float64) for t in items]
    got = module.reference(*inputs)
    items = list(got) if isinstance(got, (tuple, list)) else [got]
    return [np.asarray(x, np.float64) for x in items]


def _bind(runtime: list[Parameter], args: list[Any], expected: dict[int, np.ndarray]) -> dict[str, int]:
    """Size names from the tensors' dims and the arrays' shapes (inputs and outputs)."""
    sizes: dict[str, int] = {}
    for i, p in enumerate(runtime):
        if p.kind != "tensor":
            if args[i] is not None and isinstance(args[i], (int, np.integer)):
                sizes.setdefault(p.name, int(args[i]))
            continue
        array = expected[i] if i in expected else args[i]
        shape = np.shape(array)
        if len(shape) != len(p.dims):
            raise TaskError(f"argument {p.name} has shape {shape}; the kernel declares {len(p.dims)} dims")
        for dim, n in zip(p.dims, shape):
            if isinstance(dim, int):
                if dim != n:
                    raise TaskError(f"argument {p.name} has {n} where the kernel declares {dim}")
            elif sizes.setdefault(dim, int(n)) != n:
                raise TaskError(f"size {dim} is {sizes[dim]} in one tensor and {n} in {p.name}")
    for p in runtime:
        if p.kind == "scalar" and p.name not in sizes:
            raise TaskError(f"kernel argument {p.name} is a scalar that neither the reference gives nor a tensor dim "
                            "names")
    return sizes
