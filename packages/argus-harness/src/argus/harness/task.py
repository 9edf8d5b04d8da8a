"""Tasks: what to optimize, against which reference, for which target and shapes.

A task file is one of three forms, told apart by what it defines:

- a kernel file (``FILE.py:KERNEL``) with ``example_KERNEL(rng, **sizes)`` returning an
  `argus.dsl.Problem`: the example's inputs and float64 reference; its kernel is the start;
- KernelBench form: ``Model`` (a torch module), ``get_inputs()`` and ``get_init_inputs()``;
  sizes are the file's module-level integer constants;
- a numpy function: ``reference(*inputs)`` and ``get_inputs()`` (or ``get_inputs(rng)``).

An optional literal ``ARGUS_TASK = {...}`` in the file sets the initial kernel
(``"kernel": "gemm.py:gemm"``, relative to the file), the kernel ``signature`` when there is
none, ``family``, ``target``, test ``shapes``, the ``bench_shape`` timed on the GPU, and
``atol``/``rtol``. The file is read here as a syntax tree only; it is imported, with torch if it
needs it, in the sandboxed worker (`reference`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .candidate import Candidate, Parameter, parse_candidate
from .errors import CandidateError, SourceLocation, TaskError
from .extract import decorated, extract_candidate

TASK_KEYS = ("kernel", "signature", "family", "target", "shapes", "bench_shape", "atol", "rtol")
_SETTING_TYPES = (("kernel", str, "text (FILE.py:KERNEL)"), ("signature", str, "text (the kernel's parameters)"),
                  ("family", str, "text"), ("target", str, "text (interp, nvptx:sm_90a, ...)"),
                  ("shapes", list, "a list of size dicts"), ("bench_shape", dict, "a dict of sizes"),
                  ("atol", (int, float), "a number"), ("rtol", (int, float), "a number"))
_FAMILIES = (("attention", "attention"), ("softmax", "softmax"), ("gemm", "gemm"), ("matmul", "gemm"),
             ("moe", "moe"), ("transpose", "transpose"), ("add", "elementwise"))


@dataclass(frozen=True)
class Task:
    """Everything the loop needs to know about a task, read without running it."""

    name: str
    path: Path
    form: str
    """``example``, ``kernelbench`` or ``numpy``."""
    example: str | None
    """For the example form, the kernel whose example problem is the reference."""
    initial: Candidate | None
    interface: tuple[Parameter, ...]
    family: str
    target: str
    shapes: tuple[dict[str, int], ...]
    bench_shape: dict[str, int] | None = None
    atol: float | None = None
    rtol: float | None = None
    seeds: int = 2
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def sizes(self) -> tuple[str, ...]:
        """The size names a shape sets."""
        return tuple(self.shapes[0]) if self.shapes else ()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "form": self.form, "family": self.family,
                "target": self.target, "shapes": list(self.shapes), "bench_shape": self.bench_shape,
                "interface": [p.text() for p in self.interface]}


def load_task(spec: str, *, target: str | None = None, family: str | None = None,
              shapes: list[dict[str, int]] | None = None, bench_shape: dict[str, int] | None = None,
              kernel: str | None = None) -> Task:
    """Read the task at `spec` (``FILE.py`` or ``FILE.py:KERNEL``); options given here override
    the file's ``ARGUS_TASK``."""
    path_text, _, name = spec.partition(":") if not Path(spec).is_file() else (spec, "", "")
    path = Path(path_text)
    if not path.is_file():
        raise TaskError(f"no such task file: {path_text} (write FILE.py or FILE.py:KERNEL)")
    text = path.read_text()
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as err:
        raise TaskError(f"{path}:{err.lineno}: the task file is not Python: {err.msg}") from None
    defs = {s.name: s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))}
    settings = _settings(tree, path)
    target = target or settings.get("target") or "interp"
    kernels = [n for n, d in defs.items() if isinstance(d, ast.FunctionDef) and decorated(d, "kernel")]
    if name or (not ({"Model", "reference"} & defs.keys()) and kernels):
        name = name or (kernels[0] if len(kernels) == 1 else "")
        if not name:
            raise TaskError(f"{path} defines several kernels ({', '.join(kernels)}); name one: {path}:KERNEL")
        example = defs.get(f"example_{name}")
        if not isinstance(example, ast.FunctionDef):
            raise TaskError(f"{path} has no example_{name}(rng, **sizes) returning argus.dsl.Problem; a kernel file "
                            "is a task through its example problem")
        initial = _initial(text, name, path)
        default = _example_sizes(example, path)
        return _finish(Task(name, path, "example", name, initial, initial.parameters, family or "",
                            target, tuple(shapes or settings.get("shapes") or [default]),
                            bench_shape or settings.get("bench_shape"), settings.get("atol"),
                            settings.get("rtol")), family or settings.get("family"))
    if {"Model", "get_inputs", "get_init_inputs"} <= defs.keys():
        form = "kernelbench"
    elif {"reference", "get_inputs"} <= defs.keys():
        form = "numpy"
    else:
        raise TaskError(f"{path} is not a task: define example_K(rng) next to kernel K, or Model, get_inputs and "
                        "get_init_inputs (KernelBench form), or reference(*inputs) and get_inputs() (numpy form)")
    initial = None
    kernel = kernel or settings.get("kernel")
    if kernel:
        kernel_path, _, kernel_name = str(kernel).rpartition(":")
        file = (path.parent / kernel_path) if not Path(kernel_path).is_absolute() else Path(kernel_path)
        if not kernel_path or not kernel_name or not file.is_file():
            raise TaskError(f"{path}: ARGUS_TASK kernel {kernel!r} is not FILE.py:KERNEL of an existing file "
                            "(relative to the task file)")
        initial = _initial(file.read_text(), kernel_name, file)
        interface = initial.parameters
    elif settings.get("signature"):
        interface = _signature(str(settings["signature"]), path)
    else:
        raise TaskError(f"{path}: a {form} task needs an initial kernel or the kernel's signature: set "
                        "ARGUS_TASK = {'kernel': 'FILE.py:KERNEL'} or {'signature': 'a: Tensor[f32, \"n\"], ...'}")
    default = _module_sizes(tree)
    return _finish(Task(path.stem, path, form, None, initial, interface, family or "", target,
                        tuple(shapes or settings.get("shapes") or [default]), bench_shape or settings.get("bench_shape"),
                        settings.get("atol"), settings.get("rtol")), family or settings.get("family"))


def _finish(task: Task, family: str | None) -> Task:
    chosen = family or task.family or _family(task)
    for shape in task.shapes + ((task.bench_shape,) if task.bench_shape else ()):
        if not isinstance(shape, dict) or not all(isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool)
                                                  and v > 0 for k, v in shape.items()):
            raise TaskError(f"{task.path}: a shape maps size names to positive ints, got {shape!r}")
        if task.shapes and set(shape) - set(task.shapes[0]) and task.form != "example":
            raise TaskError(f"{task.path}: shape {shape} sets sizes the first shape does not ({sorted(task.shapes[0])})")
    return replace(task, family=chosen)


def _family(task: Task) -> str:
    name = (task.initial.kernel if task.initial else task.name).lower()
    for word, family in _FAMILIES:
        if word in name:
            return family
    return "generic"


def _settings(tree: ast.Module, path: Path) -> dict[str, Any]:
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "ARGUS_TASK" for t in stmt.targets):
            try:
                value = ast.literal_eval(stmt.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                raise TaskError(f"{path}:{stmt.lineno}: ARGUS_TASK must be a literal dict (numbers, strings, lists, "
                                "dicts)") from None
            if not isinstance(value, dict):
                raise TaskError(f"{path}:{stmt.lineno}: ARGUS_TASK must be a dict")
            unknown = sorted(set(value) - set(TASK_KEYS), key=str)
            if unknown:
                raise TaskError(f"{path}:{stmt.lineno}: ARGUS_TASK keys {unknown} are not known; accepted: "
                                f"{', '.join(TASK_KEYS)}")
            for key, kinds, what in _SETTING_TYPES:
                if key in value and (not isinstance(value[key], kinds) or isinstance(value[key], bool)):
                    raise TaskError(f"{path}:{stmt.lineno}: ARGUS_TASK {key!r} is {what}, got {value[key]!r}")
            for key in ("atol", "rtol"):
                if key in value and value[key] < 0:
                    raise TaskError(f"{path}:{stmt.lineno}: ARGUS_TASK {key!r} is a tolerance >= 0, got {value[key]!r}")
            return value
    return {}


def _initial(text: str, name: str, path: Path) -> Candidate:
    try:
        return extract_candidate(text, name, str(path))
    except CandidateError as err:
        raise TaskError(f"the initial kernel cannot be used as a candidate: {err}") from None


def _example_sizes(fn: ast.FunctionDef, path: Path) -> dict[str, int]:
    """The int keyword parameters of ``example_K(rng, m=..., ...)`` and their defaults."""
    spec = fn.args
    names = [a.arg for a in spec.args][len(spec.args) - len(spec.defaults):]
    sizes = {}
    for name, default in zip(names, spec.defaults):
        if isinstance(default, ast.Constant) and isinstance(default.value, int) and not isinstance(default.value, bool):
            sizes[name] = default.value
    if not spec.args or spec.args[0].arg in names:
        raise TaskError(f"{path}:{fn.lineno}: {fn.name} must take the random generator first: {fn.name}(rng, ...)")
    return sizes


def _module_sizes(tree: ast.Module) -> dict[str, int]:
    """Module-level integer constants (``M = 1024 * 2``), the sizes of a KernelBench or numpy task."""
    sizes: dict[str, int] = {}
    for stmt in tree.body:
        if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
            continue
        target, value = stmt.targets[0], stmt.value
        pairs = [(target, value)]
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            pairs = list(zip(target.elts, value.elts))
        for name, expr in pairs:
            number = _integer(expr, sizes) if isinstance(name, ast.Name) else None
            if number is not None and isinstance(name, ast.Name):
                sizes[name.id] = number
    return sizes


def _integer(node: ast.expr, known: dict[str, int]) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return known.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.FloorDiv, ast.Pow)):
        left, right = _integer(node.left, known), _integer(node.right, known)
        if left is None or right is None or (isinstance(node.op, ast.Pow) and right > 64):
            return None
        if isinstance(node.op, ast.FloorDiv) and right == 0:
            return None
        ops = {ast.Mult: int.__mul__, ast.Add: int.__add__, ast.Sub: int.__sub__, ast.FloorDiv: int.__floordiv__,
               ast.Pow: int.__pow__}
        return int(ops[type(node.op)](left, right))
    return None


def _signature(text: str, path: Path) -> tuple[Parameter, ...]:
    source = ("from argus.dsl import kernel, Tensor, bf16, f16, f32, f64, i32, i64, u8, u16, u32, constexpr\n"
              f"@kernel(block=(1,))\ndef signature({text}):\n    pass\n")
    try:
        return parse_candidate(source, str(path)).parameters
    except CandidateError as err:
        raise TaskError(f"{path}: ARGUS_TASK signature {text!r} is not a kernel signature: {err.message}",
                        SourceLocation(str(path), 1, 1)) from None


def task_to_dict(task: Task) -> dict[str, Any]:
    """What a worker needs of a task, as JSON data (the initial kernel is not among it)."""
    return {"name": task.name, "path": str(task.path.resolve()), "form": task.form, "example": task.example,
            "interface": [[p.name, p.kind, p.dtype, list(p.dims)] for p in task.interface], "family": task.family,
            "target": task.target, "shapes": list(task.shapes), "bench_shape": task.bench_shape, "atol": task.atol,
            "rtol": task.rtol, "seeds": task.seeds}


def task_from_dict(data: dict[str, Any]) -> Task:
    interface = tuple(Parameter(n, k, d, tuple(dims)) for n, k, d, dims in data["interface"])
    return Task(data["name"], Path(data["path"]), data["form"], data["example"], None, interface, data["family"],
                data["target"], tuple(data["shapes"]), data["bench_shape"], data["atol"], data["rtol"], data["seeds"])
