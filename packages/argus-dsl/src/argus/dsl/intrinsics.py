"""Target intrinsics: instructions a backend adds to the language.

The core language names no GPU instruction. A backend that exposes one declares, in its own
package:

1. the stub kernels call, an `Intrinsic`, whose `build` turns a call into IR through the small
   `IntrinsicBuilder` interface (checked operands, errors that name the call's line);
2. its `Language` (`argus.dsl.ir.registry`): the dialect its ops belong to, so printed IR
   parses back, and each op's `Meaning` for every consumer of the IR — the same declaration
   the core language's op families make (`argus.dsl.ops`): the interpreter (the executable
   semantics, required: a rule, or a wait for an op that may block), the tag analysis (how the
   op moves tags; without a rule its results are computed data, and the op is always kept by
   tag liveness, since it may touch memory), the shadow-tag interpreter, layout lowering, and the
   scheduler's traits (a synchronization point, an op a whole warpgroup runs, an op reading
   across a hardware wave).

The backend's `BackendSpec` names its language (`language=`); the registry installs every
discovered backend's language the first time any consumer needs a meaning, so nothing depends
on which module a program happened to import first.

Code generation stays in the backend, which is the only one that knows the instruction (its
translator's own rules).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any

from xdsl.ir import Operation, SSAValue

from . import lang
from .dtypes import DType, i32
from .errors import ArgusTypeError
from .frontend.values import TensorRef, TileRef, Value, describe
from .ir.registry import Language, Meaning, dialects, install, install_language

__all__ = ["Intrinsic", "IntrinsicBuilder", "Language", "Meaning", "call", "dialects", "install_language",
           "install_languages"]


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
        return self._fe.runtime(value, dtype, node).ssa  # type: ignore[no-any-return]

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


def install_languages() -> None:
    """Define every op family (the core language's and each backend's language), once."""
    install()
