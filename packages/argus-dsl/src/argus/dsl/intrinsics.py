"""Target intrinsics: instructions a backend adds to the language.

The core language names no GPU instruction. A backend that exposes one declares, in its own
package:

1. the stub kernels call, an `Intrinsic`, whose `build` turns a call into IR through the small
   `IntrinsicBuilder` interface (checked operands, errors that name the call's line);
2. its `Language`: the dialect its ops belong to, so printed IR parses back, and each op's
   `Meaning` for every consumer of the IR: the interpreter (the executable semantics,
   required: a rule, or a wait for an op that may block), the tag analysis (how the op moves
   tags; without a rule its results are computed data), the shadow-tag interpreter (the same,
   at run time), layout lowering, and the scheduler's traits (a synchronization point, an op a
   whole warpgroup runs, an op reading across a hardware wave).

The backend's `BackendSpec` names its language (`language=`); Argus installs every discovered
backend's language the first time one is needed (an intrinsic's op built, printed IR parsed),
so nothing depends on which module a program happened to import first.

Code generation stays in the backend, which is the only one that knows the instruction.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.ir import Dialect, Operation, SSAValue

from . import lang
from .dtypes import DType, i32
from .errors import ArgusTypeError
from .frontend.values import TensorRef, TileRef, Value, describe


class IntrinsicBuilder:
    """What an intrinsic's `build` may do with the kernel being compiled."""

    def __init__(self, frontend: Any, node: ast.Call) -> None:
        self._fe = frontend
        self.node = node

    def error(self, message: str, node: ast.AST | None = None) -> ArgusTypeError:
        """An error at the call (or at one of its arguments), to raise."""
        return self._fe.type_error(node or self.node, message)  # type: ignore[no-any-return]

    def argument(self, index: int) -> ast.expr:
        return self.node.args[index]

    def scalar(self, value: Any, dtype: DType = i32, index: int | None = None) -> SSAValue:
        """A runtime scalar of `dtype` (a compile-time number becomes a constant)."""
        node = self.node if index is None else self.node.args[index]
        converted = self._fe.convert(value, dtype, node)
        return self._fe.materialize(converted, node).ssa  # type: ignore[no-any-return]

    def integer(self, value: Any, index: int) -> int:
        """A compile-time integer argument."""
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(f"expected a compile-time int, got {describe(value)}", self.node.args[index])
        return value

    def tile(self, value: Any, index: int, space: str | None = None) -> TileRef:
        """A tile argument (in `space` when given: 'shared' or 'local')."""
        if not isinstance(value, TileRef) or (space is not None and value.type.space.data != space):
            kind = f"a {space} tile" if space else "a tile"
            raise self.error(f"expected {kind}, got {describe(value)}", self.node.args[index])
        return value

    def tensor(self, value: Any, index: int) -> TensorRef:
        """A global tensor argument (a kernel parameter, not a view)."""
        if not isinstance(value, TensorRef):
            raise self.error(f"expected a tensor parameter, got {describe(value)}", self.node.args[index])
        return value

    def coordinates(self, value: Any, index: int, rank: int, what: str) -> list[SSAValue]:
        """Argument `index`: one coordinate, or a tuple of `rank` of them, into `what`."""
        coords = list(value) if isinstance(value, tuple) else [value]
        if len(coords) != rank:
            raise self.error(f"{what} has {rank} mode(s); give {rank} coordinate(s)", self.node.args[index])
        return [self.scalar(c, index=index) for c in coords]

    def same_elements(self, tile: TileRef, tensor: TensorRef, index: int = 0) -> None:
        """Refuse a copy between a tile and a tensor of different element types."""
        if tile.type.dtype != tensor.type.dtype:
            raise self.error(f"the tile holds {tile.type.dtype}, tensor {tensor.name!r} {tensor.type.dtype}",
                             self.node.args[index])

    def element_copy(self, args: list[Any]) -> tuple[TileRef, TensorRef, list[SSAValue]]:
        """The arguments ``(tile, tile_coords, tensor, tensor_coords)`` of a copy of one element
        per thread from a tensor into a shared tile: the two, of one element type, and the
        coordinates into both."""
        tile, tensor = self.tile(args[0], 0, "shared"), self.tensor(args[2], 2)
        self.same_elements(tile, tensor)
        return tile, tensor, [*self.coordinates(args[1], 1, tile.type.layout.rank, "the tile"),
                              *self.coordinates(args[3], 3, len(tensor.type.shape), f"tensor {tensor.name!r}")]

    def emit(self, op: Operation) -> Operation:
        """Append `op` at the call's position (it gets the call's source location)."""
        install_languages()
        return self._fe.emit(op)  # type: ignore[no-any-return]

    def result(self, op: Operation, dtype: DType) -> Value:
        """The call's value: `op`'s (single) result, of `dtype`."""
        return Value(op.results[0], dtype)


class Intrinsic(lang.Builtin):
    """A target instruction kernels can call. `build(builder, args)` receives the evaluated
    arguments and emits the op(s); it returns the call's value (None for a statement)."""

    def __init__(self, name: str, doc: str, build: Callable[[IntrinsicBuilder, list[Any]], Any], arity: int) -> None:
        super().__init__(name, doc)
        self.build = build
        self.arity = arity

    def __repr__(self) -> str:
        return f"intrinsic {self.name}"


def call(frontend: Any, node: ast.Call, intrinsic: Intrinsic) -> Any:
    """The front end's side of an intrinsic call."""
    if len(node.args) != intrinsic.arity or node.keywords:
        raise frontend.type_error(node, f"{intrinsic.name} takes {intrinsic.arity} positional argument(s): "
                                        f"{(intrinsic.__doc__ or '').splitlines()[0]}")
    args = [frontend.expr(a) for a in node.args]
    return intrinsic.build(IntrinsicBuilder(frontend, node), args)


_DIALECTS: list[Dialect] = []


def register_dialect(dialect: Dialect) -> None:
    """Make printed IR of `dialect`'s ops parse (the kernel cache stores IR as text)."""
    if all(d.name != dialect.name for d in _DIALECTS):
        _DIALECTS.append(dialect)


def dialects() -> list[Dialect]:
    install_languages()
    return list(_DIALECTS)


@dataclass(frozen=True)
class Meaning:
    """What one op of a backend means to each consumer of the IR (see `define`)."""

    op_type: type
    interpret: Callable[..., None] | None = None
    wait: Any = None
    analyze: Callable[..., None] | None = None
    shadow: Callable[..., None] | None = None
    lower: Callable[..., Operation] | None = None
    sync: bool = False
    collective: int = 0
    """Threads that run the op together (a warpgroup's 128), when more than a warp."""
    lockstep: int = 0
    """Lanes the op reads across (a hardware wave of 64), when more than a warp."""


@dataclass(frozen=True)
class Language:
    """A backend's intrinsic ops: their dialect and their meanings."""

    dialect: Dialect
    meanings: Sequence[Meaning]


_INSTALLED: set[str] = set()
_DISCOVERED = False


def install(language: Language) -> None:
    """Give every consumer of the IR the meaning of `language`'s ops (once)."""
    if language.dialect.name in _INSTALLED:
        return
    _INSTALLED.add(language.dialect.name)
    register_dialect(language.dialect)
    for m in language.meanings:
        define(m.op_type, interpret=m.interpret, analyze=m.analyze, shadow=m.shadow, lower=m.lower, wait=m.wait,
               sync=m.sync, collective=m.collective, lockstep=m.lockstep)


def install_languages() -> None:
    """Install the language of every backend the `argus.backends` entry points name (once)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    from .backends import backends

    for spec in backends().values():
        if spec.language is not None:
            install(spec.language())


def define(op_type: type, *, interpret: Callable[..., None] | None = None, analyze: Callable[..., None] | None = None,
           shadow: Callable[..., None] | None = None,
           lower: Callable[[Any, Callable[[SSAValue, list[SSAValue]], SSAValue]], Operation] | None = None,
           wait: Any = None, sync: bool = False, collective: int = 0, lockstep: int = 0) -> None:
    """Give an intrinsic op its meaning: `interpret(interpreter, op, frame, mask)` runs it for
    the threads of `mask` — or, for an op that may block (a barrier, a wait), `wait` is its
    `argus.dsl.machine.schedule.WaitRule`; `sync` ends a group's turn after the op (it orders
    memory or starts an asynchronous agent, so other warps' order around it matters);
    `collective` (threads, more than a warp) makes warps of a group that get to the op first wait
    for the rest; `lockstep` (lanes, more than a warp) runs a kernel using the op in lockstep
    groups of that many lanes; `analyze(analysis, op, mask)` moves its tags in the static checker;
    `shadow(shadow_interpreter, op, frame, mask)` after `interpret`, in shadow-tag runs. An op
    that addresses tiles or tensors by coordinates gives `lower(op, offset_of)`, which layout
    lowering calls to replace it by an op on element offsets: ``offset_of(tile_or_tensor,
    coords)`` inserts the arithmetic of one offset before `op` and returns it."""
    from .machine import interpreter, shadow as shadow_mode
    from .check import register_rule, tag_liveness
    from .ir import lowering

    from .machine import register_sync_point, register_wait
    from .machine.schedule import register_collective, register_lockstep

    if (interpret is None) == (wait is None):
        raise ValueError(f"{op_type.__name__}: give exactly one of interpret= and wait=")
    if interpret is not None:
        interpreter.register_rule(op_type, interpret)
    else:
        register_wait(op_type, wait)
    if sync:
        register_sync_point(op_type)
    if collective:
        register_collective(op_type, lambda interp, op, threads=collective: threads)
    if lockstep:
        register_lockstep(op_type, lockstep)
    if lower is not None:
        lowering.register_rule(op_type, lower)
    if analyze is not None:
        register_rule(op_type, analyze)
    else:
        tag_liveness.keep_always(op_type)
    if shadow is not None:
        shadow_mode.register_rule(op_type, shadow)
