"""Targets and the backend plugin interface.

A target is written ``kind[:arch]`` — ``interp``, ``nvptx:sm_90a``, ``amdgpu:gfx942``. A
backend registers, under the ``argus.backends`` entry-point group, a `BackendSpec` naming the
target kinds it serves and factories for its compiler and runtime, which are only imported
when used (so importing argus.dsl never imports a GPU toolchain).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .errors import ArgusError
from .plugins import PluginError, discover


class TargetError(ArgusError):
    """A target string that names no known backend or is malformed."""


@dataclass(frozen=True)
class Target:
    kind: str
    arch: str = ""

    def __str__(self) -> str:
        return f"{self.kind}:{self.arch}" if self.arch else self.kind


_TARGET = re.compile(r"^(?P<kind>[a-z][a-z0-9_]*)(?::(?P<arch>[A-Za-z0-9_.+-]+))?$")


@functools.lru_cache(maxsize=64)
def parse_target(text: str) -> Target:
    match = _TARGET.match(text.strip())
    if match is None:
        raise TargetError(f"malformed target {text!r}; write kind[:arch], e.g. interp, nvptx:sm_90a, amdgpu:gfx942")
    return Target(match["kind"], match["arch"] or "")


class Compiler(Protocol):
    """Turns a compiled kernel (its canonical argus IR and source locations) into the
    backend's stages."""

    def emit(self, compiled: Any, stage: str) -> str: ...


class Runtime(Protocol):
    """Runs a kernel: `kernel` is a `kernel.Specialization` (a cache key, and the IR on demand);
    `args` are the runtime arguments in order (constexprs removed)."""

    def launch(self, kernel: Any, grid: tuple[int, ...], args: Sequence[Any]) -> None: ...

    # Optional: ``prepare(kernel, args)`` is called once per specialization before the kernel's
    # tag assertions are checked, so that a runtime can start building its binary meanwhile.
    # Optional: ``measure(fn, *, warmup, repeat, flush_l2, graph)`` times `fn` (which enqueues
    # work on the device) by the runtime's protocol: a result with ``median_s`` and ``min_s``.


@dataclass(frozen=True)
class BackendSpec:
    name: str
    kinds: tuple[str, ...]
    stages: tuple[str, ...]
    """What ``argus compile --emit`` can print for this backend."""
    compiler: Callable[[Target], Compiler]
    runtime: Callable[[Target], Runtime]
    language: Callable[[], Any] | None = None
    """The backend's intrinsic ops (`argus.dsl.intrinsics.Language`), imported when first needed."""


class _InterpreterCompiler:
    """The interpreter runs the argus dialect itself. Its stages: the canonical IR (``mlir``)
    and the same IR with layouts lowered to index arithmetic (``lowered``), which it also runs."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def emit(self, compiled: Any, stage: str) -> str:
        if stage == "lowered":
            from .ir.lowering import lowered

            return str(lowered(compiled)[0])
        return str(compiled.module)


class _InterpreterRuntime:
    """Launches on numpy arrays with the reference interpreter."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def launch(self, kernel: Any, grid: tuple[int, ...], args: Sequence[Any]) -> None:
        from .machine.interpreter import Interpreter

        compiled = kernel.compiled()
        Interpreter(compiled.op, compiled.locations).launch(grid, args)


INTERPRETER = BackendSpec("interp", ("interp",), ("mlir", "lowered"), _InterpreterCompiler, _InterpreterRuntime)


_RUNTIMES: dict[Target, Runtime] = {}


def runtime_for(target: Target) -> Runtime:
    """The runtime of a target, one per process (it keeps what it has loaded)."""
    runtime = _RUNTIMES.get(target)
    if runtime is None:
        runtime = _RUNTIMES[target] = backend_for(target).runtime(target)
    return runtime


#: The target kind of each DLPack device type that is a GPU: kDLCUDA, kDLROCM.
_DLPACK_GPUS = {2: "nvptx", 10: "amdgpu"}


def default_target(args: Sequence[Any]) -> str:
    """Where a launch runs when no target is named: on the GPU holding its tensors (CUDA:
    ``nvptx``, ROCm: ``amdgpu``, as the tensor's DLPack device says), else on the interpreter.
    ``ARGUS_TARGET`` overrides."""
    chosen = os.environ.get("ARGUS_TARGET")
    if chosen:
        return chosen
    for x in args:
        device = getattr(x, "__dlpack_device__", None)
        if device is not None and not hasattr(x, "__array_interface__"):
            try:
                kind = _DLPACK_GPUS.get(int(device()[0]))
            except Exception:  # noqa: BLE001 - an odd producer is judged by the attributes below
                kind = None
            if kind is not None:
                return kind
        if getattr(x, "is_cuda", False) or hasattr(x, "__cuda_array_interface__"):
            return "nvptx"
    return "interp"


def backend_for(target: Target) -> BackendSpec:
    plugins = discover("argus.backends", {"interp": INTERPRETER})
    for plugin in plugins.values():
        spec = plugin.load()
        if target.kind in spec.kinds:
            return spec  # type: ignore[no-any-return]
    known = sorted({k for p in plugins.values() for k in _kinds(p)})
    raise TargetError(f"no installed backend serves {str(target)!r}; available target kinds: {', '.join(known)}")


def backends() -> dict[str, BackendSpec]:
    """Every installed backend's spec, by entry-point name (one that fails to load is left out:
    naming its target says why)."""
    found = {}
    for name, plugin in discover("argus.backends", {"interp": INTERPRETER}).items():
        try:
            found[name] = plugin.load()
        except (ArgusError, PluginError):
            continue
    return found


def _kinds(plugin: Any) -> tuple[str, ...]:
    try:
        return plugin.load().kinds  # type: ignore[no-any-return]
    except ArgusError:
        return ()
