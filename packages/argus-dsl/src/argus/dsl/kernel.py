"""`@kernel`: a decorated function becomes a `Kernel`, compiled per set of constexpr values and
launched as ``kernel[grid](*args)``."""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import linecache
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from argus.verify.results import Result, Verdict
from xdsl.dialects import builtin
from xdsl.ir import Operation

from . import cache, lang
from .cache import cache_key
from .ir.dialect import parse_module
from .errors import ArgusLaunchError, ArgusSyntaxError, ArgusVerificationWarning, SourceLocation, TagAssertionError
from .frontend import FrontEnd, KernelSource
from .frontend.limits import MAX_NESTING
from .frontend.values import MustUnroll
from .ir.passes import canonicalize

#: Blocks a cluster may have (the portable limit of NVIDIA sm_90).
MAX_CLUSTER = 8


@dataclass(frozen=True)
class CompiledKernel:
    """One specialization: the module holding the ``argus.kernel`` op, and where its ops came from."""

    module: builtin.ModuleOp
    locations: dict[Operation, SourceLocation]

    @property
    def op(self) -> Any:
        return self.module.ops.first

    @functools.cached_property
    def preparation(self) -> Any:
        """What every check of this IR starts from (`argus.dsl.check.Preparation`)."""
        from .check import Preparation  # the checker loads only when it runs

        return Preparation(self.op, self.locations)

    def mlir(self) -> str:
        return str(self.module)


@dataclass(frozen=True)
class Specialization:
    """What a runtime is handed to launch: the key of one specialization (its source, constexpr
    values and the compiler's version, stable across processes) and a way to build its IR. A
    runtime that finds a binary under the key never needs the IR, so a cached kernel launches
    from a new process without running the front end."""

    kernel: Kernel
    constants: tuple[tuple[str, Any], ...]
    key: str

    def compiled(self) -> CompiledKernel:
        """The IR (the launch that made this handle has checked the kernel already)."""
        return self.kernel.specialize(**dict(self.constants))


class Kernel:
    """A kernel written in the Argus language. Compile with `compile`, print with `mlir`,
    run with ``kernel[grid](*args)`` (the interpreter, on numpy arrays)."""

    def __init__(self, fn: Callable[..., Any], block: Sequence[Any], warp_size: int = 32, verify: bool = True,
                 min_blocks_per_sm: int | None = None, max_registers: int | None = None,
                 cluster: Sequence[int] | None = None) -> None:
        self.fn = fn
        self.cluster = tuple(cluster) if cluster is not None else None
        self.checks = verify
        self.min_blocks_per_sm = min_blocks_per_sm
        self.max_registers = max_registers
        self.name = fn.__name__
        self.block = tuple(block)
        self.warp_size = warp_size
        self.signature = inspect.signature(fn)
        self._source: KernelSource | None = None
        self._source_print: list[str] = []
        """The fingerprint of what `source` read (its text and globals, at the time it read them)."""
        self._cache: dict[tuple[tuple[str, Any], ...], CompiledKernel] = {}
        self._verified: dict[tuple[tuple[str, Any], ...], Result] = {}
        self._keys: dict[tuple[tuple[str, Any], ...], str] = {}
        self._params = list(self.signature.parameters)
        self._ready: dict[tuple[Any, ...], Specialization] = {}
        """Per constexpr values (and checking setting), the checked handle a launch passes on."""

    @property
    def source(self) -> KernelSource:
        if self._source is None:
            self._source = KernelSource.of(self.fn, self.block, self.warp_size)
            self._source_print = _fingerprint(self.fn)
        return self._source

    @functools.cached_property
    def constexpr_names(self) -> list[str]:
        annotations = [p.annotation for p in self.signature.parameters.values()]
        if not any(isinstance(a, str) for a in annotations):  # evaluated: no need to parse the source
            return [name for name, a in zip(self._params, annotations) if a is lang.constexpr]
        names = []
        for p in self.source.tree.args.args:
            ann = p.annotation
            if ann is not None and FrontEnd(self.source, {}).resolve_global(ann) is lang.constexpr:
                names.append(p.arg)
        return names

    def compile(self, **constants: Any) -> CompiledKernel:
        """The IR of this kernel for these constexpr values (cached), its tag assertions checked
        for every launch unless the kernel was declared with ``verify=False`` or ``ARGUS_VERIFY=0``
        is set: a violated assertion raises `TagAssertionError` with the replayed counterexample,
        an undecided one warns (`ArgusVerificationWarning`)."""
        compiled = self.specialize(**constants)
        self._check(constants)
        return compiled

    def _check(self, constants: dict[str, Any]) -> None:
        if self.checks and os.environ.get("ARGUS_VERIFY", "1") != "0":
            result = self.verify(**constants)
            if result.verdict is Verdict.VIOLATED:
                raise TagAssertionError(result)
            if result.verdict is Verdict.UNKNOWN:
                warnings.warn(ArgusVerificationWarning(result.text()), stacklevel=3)

    def verify(self, grid: Sequence[int] | None = None, solver: str | None = None, **constants: Any) -> Result:
        """Prove or refute this kernel's tag assertions for every launch (of `grid`, if given).
        Results are cached with the kernel, in memory and on disk."""
        if grid is not None:
            grid = tuple(grid)
            if not 1 <= len(grid) <= 3 or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 1
                                                   for g in grid):
                raise ArgusLaunchError(f"a grid is 1 to 3 positive ints, got {grid!r}")
            if self.cluster is not None:
                self.check_clusters(grid)
        key = _constants_key(constants) + (("grid", grid), ("solver", solver))
        result = self._verified.get(key)
        if result is None:
            budget = os.environ.get("ARGUS_SOLVER_BUDGET")  # (a check cut short by it is another result)
            disk = self.disk_key(constants) + f"-tags-{grid}-{solver}" + (f"-budget-{budget}" if budget else "")
            stored = cache.load(disk, "tags.json")  # read before building any IR
            result = Result.from_dict(json.loads(stored)) if stored is not None else None
            if result is None:
                from .check.verification import verify_kernel  # the checker loads only when it runs

                result = verify_kernel(self.specialize(**constants), self.name, grid=grid, solver=solver)
                cache.store(disk, "tags.json", result.json().encode())
            self._verified[key] = result
        return result

    def specialize(self, **constants: Any) -> CompiledKernel:
        """The IR of this kernel for these constexpr values (cached), without checking it."""
        key = _constants_key(constants)
        compiled = self._cache.get(key)
        if compiled is None:
            missing = [n for n in self.constexpr_names if n not in constants]
            unknown = [n for n in constants if n not in self.constexpr_names]
            if missing or unknown:
                raise ArgusLaunchError(
                    f"{self.name}: constexpr values needed for {missing}" + (f", not parameters: {unknown}" if unknown else "")
                    if missing else f"{self.name}: {unknown} are not constexpr parameters of the kernel"
                )
            compiled = self._from_disk(constants) or self._build(constants)
            self._cache[key] = compiled
        return compiled

    def disk_key(self, constants: dict[str, Any]) -> str:
        """The name of the disk cache's entries for this kernel specialized with `constants`
        (its MLIR, binaries and check results start with it), found once per set of constants."""
        memo = _constants_key(constants)
        found = self._keys.get(memo)
        if found is None:
            found = self._keys[memo] = self._compute_key(constants)
        return found

    def _compute_key(self, constants: dict[str, Any]) -> str:
        fingerprint = _fingerprint(self.fn)
        if self._source is not None and fingerprint != self._source_print:
            # the file or a global changed since the source was read: read it again, so that the IR
            # built under this key is the kernel the key names (a later process trusts the verdict
            # stored with it)
            self._source = None
        return cache_key("argus-mlir", self.block, self.warp_size, self.min_blocks_per_sm, self.max_registers,
                         self.cluster, sorted(constants.items()), fingerprint, FrontEnd.rolls)

    def _build(self, constants: dict[str, Any]) -> CompiledKernel:
        unrolled: frozenset[Any] = frozenset()
        while True:  # a rolled static loop whose value is read after it is unrolled, and the kernel read again
            frontend = FrontEnd(self.source, constants, unrolled)
            try:
                op = frontend.build()
                break
            except MustUnroll as must:
                unrolled |= {must.loop}
            except (RecursionError, MemoryError) as err:  # past what the front end's limits foresee
                exhausted = "stack" if isinstance(err, RecursionError) else "memory"
                where = SourceLocation(self.source.file, self.source.line_offset + self.source.tree.lineno, 1)
                raise ArgusSyntaxError(f"reading {self.name} exhausted the compiler's {exhausted}; simplify it (fewer "
                                       "nested expressions, smaller static loops and tiles)", where) from None
        if self.min_blocks_per_sm is not None:
            op.properties["min_blocks_per_sm"] = builtin.IntAttr(self.min_blocks_per_sm)
        if self.max_registers is not None:
            op.properties["max_registers"] = builtin.IntAttr(self.max_registers)
        if self.cluster is not None:
            op.properties["cluster"] = builtin.ArrayAttr([builtin.IntAttr(d) for d in self.cluster])
        module = builtin.ModuleOp([op])
        key = self.disk_key(constants)
        if cache.dumping():
            cache.dump(self.name, key, "frontend.mlir", str(module))
        canonicalize(module)
        module.verify()
        ops = list(module.walk())
        compiled = CompiledKernel(module, _located(ops, frontend.locations))
        if cache.dumping() or cache.cache_dir() is not None:  # printing the IR is a good part of a compile
            text = compiled.mlir()
            cache.dump(self.name, key, "mlir", text)
            where = [[i, loc.file, loc.line, loc.col] for i, op in enumerate(ops) if (loc := compiled.locations.get(op))]
            cache.store(key, "mlir", text.encode())
            cache.store(key, "locations.json", json.dumps(where).encode())
        return compiled

    def _from_disk(self, constants: dict[str, Any]) -> CompiledKernel | None:
        key = self.disk_key(constants)
        text, where = cache.load(key, "mlir"), cache.load(key, "locations.json")
        if text is None or where is None:
            return None
        try:
            module = parse_module(text.decode())
            ops = list(module.walk())
            locations = {ops[i]: SourceLocation(f, line, col) for i, f, line, col in json.loads(where)}
        except Exception:  # a damaged entry is rebuilt
            return None
        return CompiledKernel(module, locations)

    def mlir(self, **constants: Any) -> str:
        return self.specialize(**constants).mlir()

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        dims = grid if isinstance(grid, tuple) else (grid,)
        if not dims or len(dims) > 3 or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 1 for g in dims):
            raise ArgusLaunchError(f"a grid is 1 to 3 positive ints, got {grid!r}")

        def launch(*args: Any, **constants: Any) -> None:
            self.launch(dims, args, constants)

        return launch

    def launch(self, grid: tuple[int, ...], args: Sequence[Any], constants: dict[str, Any],
               target: str | None = None) -> None:
        """Compile for these constexprs (cached) and run on `target`'s runtime (by default: the
        GPU holding the tensor arguments, or the interpreter for numpy arrays)."""
        from .backends import default_target, parse_target, runtime_for

        params = self._params
        constexprs = self.constexpr_names
        if not constexprs and not constants and len(args) == len(params):  # the common case, kept short
            values: dict[str, Any] = {}
            runtime = list(args)
        else:
            if len(args) > len(params):
                raise ArgusLaunchError(f"{self.name} takes {len(params)} arguments, got {len(args)}")
            given = dict(zip(params, args))
            for name, value in constants.items():
                if name not in self.signature.parameters:
                    raise ArgusLaunchError(f"{self.name} has no parameter {name!r}; its parameters: {', '.join(params)}")
                if name in given:
                    raise ArgusLaunchError(f"{self.name}: {name!r} given twice")
                given[name] = value
            missing = [p for p in params if p not in given]
            if missing:
                raise ArgusLaunchError(f"{self.name}: missing argument(s) {missing}")
            values = {n: given[n] for n in constexprs}
            runtime = [given[p] for p in params if p not in constexprs]
        ready_key = (_constants_key(values), os.environ.get("ARGUS_VERIFY", "1"))
        backend = runtime_for(parse_target(target or default_target(runtime)))
        handle = self._ready.get(ready_key)
        if handle is None:
            handle = self.specialization(**values)
            prepare = getattr(backend, "prepare", None)  # a runtime may build the binary during the check
            if prepare is not None:
                prepare(handle, runtime)
            self._check(values)
            self._ready[ready_key] = handle
        if self.cluster is not None:
            self.check_clusters(grid)
        backend.launch(handle, grid, runtime)

    def check_clusters(self, grid: Sequence[int]) -> None:
        """A grid of whole clusters: each grid dim a multiple of the cluster's."""
        dims = tuple(grid) + (1,) * (3 - len(grid))
        cluster = tuple(self.cluster or ()) + (1,) * (3 - len(self.cluster or ()))
        if any(g % c for g, c in zip(dims, cluster)):
            raise ArgusLaunchError(f"{self.name} runs in clusters of {cluster} blocks; its grid must be whole "
                                   f"clusters (each dim a multiple of the cluster's), got {tuple(grid)}")

    def specialization(self, **constants: Any) -> Specialization:
        """The handle a runtime launches: this kernel for these constexpr values, by cache key."""
        return Specialization(self, _constants_key(constants), self.disk_key(constants))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ArgusSyntaxError(f"launch {self.name} with a grid: {self.name}[grid](*args)")

    def __repr__(self) -> str:
        return f"<argus kernel {self.name} block={self.block}>"


def kernel(fn: Callable[..., Any] | None = None, *, block: Sequence[Any] | None = None, warp_size: int = 32,
           verify: bool = True, min_blocks_per_sm: int | None = None, max_registers: int | None = None,
           cluster: Sequence[int] | None = None) -> Any:
    """Declare a kernel: ``@kernel(block=(128,))``. Block dims are ints or constexpr names;
    `warp_size` is 32 (NVIDIA) or 64 (AMD CDNA); ``verify=False`` skips checking the tag
    assertions when the kernel is compiled; `min_blocks_per_sm` asks the compiler to keep
    registers low enough for that many blocks to share a multiprocessor; `max_registers` caps
    each thread's registers (a target may let warps trade them at run time); `cluster` groups
    blocks into clusters of that many blocks along x, y, z (at most 8 in all) that run at once
    and reach each other's shared memory (NVIDIA sm_90: see the nvptx backend's language)."""
    if block is None:
        raise ArgusSyntaxError("give the block dims: @kernel(block=(threads_x[, threads_y[, threads_z]]))")
    if warp_size not in (32, 64):
        raise ArgusSyntaxError(f"warp_size is 32 or 64, got {warp_size!r}")
    if min_blocks_per_sm is not None and (isinstance(min_blocks_per_sm, bool) or not isinstance(min_blocks_per_sm, int)
                                          or not 1 <= min_blocks_per_sm <= 32):
        raise ArgusSyntaxError(f"min_blocks_per_sm is an int from 1 to 32, got {min_blocks_per_sm!r}")
    if max_registers is not None and (isinstance(max_registers, bool) or not isinstance(max_registers, int)
                                      or not 24 <= max_registers <= 255):
        raise ArgusSyntaxError(f"max_registers is an int from 24 to 255, got {max_registers!r}")
    if cluster is not None:
        dims = tuple(cluster) if isinstance(cluster, (tuple, list)) else ()
        if (not 1 <= len(dims) <= 3 or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims)
                or int(np.prod(dims)) > MAX_CLUSTER):
            raise ArgusSyntaxError(f"cluster is 1 to 3 positive ints with at most {MAX_CLUSTER} blocks in all, "
                                   f"e.g. cluster=(2, 1, 1); got {cluster!r}")
        cluster = dims
    if isinstance(block, (str, bytes)) or not isinstance(block, Sequence):
        raise ArgusSyntaxError(f"block is a tuple of 1 to 3 dims (ints or constexpr names), got {block!r}")

    def declare(f: Any) -> Kernel:
        if not inspect.isfunction(f):
            raise ArgusSyntaxError(f"@kernel declares a function written with def, not {type(f).__name__} {f!r}")
        return Kernel(f, block, warp_size, verify, min_blocks_per_sm, max_registers, cluster)

    return declare(fn) if fn is not None else declare


def _fingerprint(fn: Callable[..., Any], seen: frozenset[int] = frozenset(),
                 known: dict[int, str] | None = None) -> list[str]:
    """What a compile of `fn` depends on besides the constexpr values, read without parsing it
    (so that a cached kernel launches quickly): its file, first line and source text (decorators
    to the end of the body), its evaluated annotations and defaults, and the values of the
    global and enclosing names its code uses: a device function by a digest of its own
    fingerprint (worked out once per function, `known`: however long the chain of device
    functions or often each is called, the fingerprint grows with their number only); a module,
    function or class by its qualified name; anything else by its repr."""
    known = {} if known is None else known
    code = fn.__code__
    codes = _nested_codes(code)
    last = max((end for c in codes for _, end, _, _ in c.co_positions() if end is not None), default=code.co_firstlineno)
    linecache.checkcache(code.co_filename)
    text = "".join(linecache.getlines(code.co_filename)[code.co_firstlineno - 1:last])
    scope = dict(fn.__globals__)
    if fn.__closure__:
        scope.update(zip(code.co_freevars, (cell.cell_contents for cell in fn.__closure__)))
    out = [code.co_filename, str(code.co_firstlineno), text, repr(fn.__annotations__), repr(fn.__defaults__)]
    used = {n for c in codes for n in (*c.co_names, *c.co_freevars)}
    for name in sorted(used & scope.keys()):
        out.extend(_described(name, scope[name], used, seen, known))
    return out


def _described(name: str, value: Any, used: set[str], seen: frozenset[int], known: dict[int, str],
               depth: int = 0) -> list[str]:
    """What a compile reads of the value `name` holds (see `_fingerprint`). A module or class is
    its qualified name plus the attributes the code names that it has (``config.TILE``,
    ``Sizes.BLOCK``: the front end reads dotted names too, so a constant edited in another
    module must change the key), to a few levels of dots."""
    if isinstance(value, lang.DeviceFunction):
        digest = known.get(id(value))
        if digest is None:
            deep = id(value) in seen or len(seen) > MAX_NESTING  # (the front end refuses a longer chain)
            inner = [] if deep else _fingerprint(value.fn, seen | {id(value)}, known)
            digest = known[id(value)] = hashlib.sha256("\0".join(inner).encode()).hexdigest()
        return [f"{name}=device:{digest}"]
    if inspect.isroutine(value):
        return [f"{name}={getattr(value, '__qualname__', getattr(value, '__name__', name))}"]
    if inspect.ismodule(value) or inspect.isclass(value):
        out = [f"{name}={getattr(value, '__qualname__', getattr(value, '__name__', name))}"]
        if depth < _ATTRIBUTE_DEPTH:
            for attr in sorted(used):
                try:
                    inner = inspect.getattr_static(value, attr)  # (runs no property or module __getattr__)
                except AttributeError:
                    continue
                inner = getattr(inner, "__func__", inner)  # a staticmethod's or classmethod's function
                out.extend(_described(f"{name}.{attr}", inner, used, seen, known, depth + 1))
        return out
    return [f"{name}={value!r}"]


_ATTRIBUTE_DEPTH = 4
"""How many dots of a global's attributes the cache key follows (``a.b.c.d.E``)."""


def _nested_codes(code: Any) -> list[Any]:
    """A code object and those of the lambdas and functions defined in it."""
    found = [code]
    for const in code.co_consts:
        if inspect.iscode(const):
            found.extend(_nested_codes(const))
    return found


def _constants_key(constants: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Constexpr values as a dict key, in name order."""
    return tuple(sorted((k, _hashable(v)) for k, v in constants.items()))


def _hashable(value: Any) -> Any:
    try:
        hash(value)
        return value
    except TypeError:
        return repr(value)


def _located(ops: list[Operation], traced: dict[Operation, SourceLocation]) -> dict[Operation, SourceLocation]:
    """Each op's source location: where the front-end traced it, or, for an op the passes made
    (a folded constant, a re-associated sum), the location of the first op using its result —
    so that copies of an unrolled statement stay copies (the checker runs them together) and
    every op can be named by a line."""
    located = {op: traced[op] for op in ops if op in traced}
    for op in reversed(ops):  # users come after the values they use: a chain of made ops is located from its end
        if op not in located:
            user = next((use.operation for r in op.results for use in r.uses if use.operation in located), None)
            if user is not None:
                located[op] = located[user]
    return located
