"""What the front-end holds while it reads a kernel: runtime values, tensors, tiles, variables."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from xdsl.ir import SSAValue

from ..ir import dialect as D
from ..dtypes import DType
from ..errors import ArgusSyntaxError, SourceLocation

# ---- values the front-end juggles ----------------------------------------------------------


@dataclass(frozen=True)
class Value:
    """A runtime scalar: one per thread."""

    ssa: SSAValue
    dtype: DType


@dataclass(frozen=True)
class TensorRef:
    """A global tensor parameter."""

    ssa: SSAValue
    type: D.TensorType
    name: str


@dataclass(frozen=True)
class TileRef:
    """A tile: shared or local memory (or a view of it) under a layout. A partitioned tile also
    starts at a runtime offset (see lang.partition)."""

    ssa: SSAValue
    type: D.TileType
    partitioned: bool = False


@dataclass(frozen=True)
class Slot:
    """A per-thread variable behind a Python name assigned under runtime control flow."""

    ssa: SSAValue
    dtype: DType


@dataclass(frozen=True)
class KernelSource:
    """What the front-end needs of a decorated Python function."""

    name: str
    tree: ast.FunctionDef
    file: str
    line_offset: int
    globals: dict[str, Any]
    block: tuple[Any, ...]
    warp_size: int

    @classmethod
    def of(cls, fn: Callable[..., Any], block: tuple[Any, ...], warp_size: int = 32) -> KernelSource:
        try:
            lines, first = inspect.getsourcelines(fn)
        except (OSError, TypeError) as err:
            raise ArgusSyntaxError(f"cannot read the source of {fn.__name__}: {err}") from None
        source = textwrap.dedent("".join(lines))
        where = SourceLocation(inspect.getfile(fn), first, 1)
        try:
            tree = ast.parse(source)
        except SyntaxError as err:  # (the lines of a lambda: part of an expression)
            raise ArgusSyntaxError(f"cannot read {fn.__name__} on its own: {err.msg}; write kernels and device "
                                   "functions with def", where) from None
        except (RecursionError, MemoryError):
            raise ArgusSyntaxError(f"{fn.__name__} nests expressions too deeply to be read; name intermediate "
                                   "values to flatten it", where) from None
        fdef = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
        if fdef is None:
            raise ArgusSyntaxError(f"{fn.__name__} is not a function defined with def; write kernels and device "
                                   "functions with def", where)
        if isinstance(fdef, ast.AsyncFunctionDef):
            raise ArgusSyntaxError("a kernel cannot be async", where)
        globals_ = dict(fn.__globals__)
        if fn.__closure__:
            globals_.update(zip(fn.__code__.co_freevars, (c.cell_contents for c in fn.__closure__)))
        return cls(fn.__name__, fdef, inspect.getfile(fn), first - 1, globals_, block, warp_size)



@dataclass(frozen=True)
class PendingSlot:
    """A name first assigned inside runtime control flow; it becomes a slot on assignment."""

    name: str


@dataclass(frozen=True)
class RolledAway:
    """A name an iteration of a rolled static loop bound (`rolling`): its value is out of reach
    after the loop, and reading it reads the kernel again with that loop unrolled."""

    loop: ast.For


class MustUnroll(Exception):
    """Raised when a rolled static loop's value is read after it: the loop must be unrolled."""

    def __init__(self, loop: ast.For) -> None:
        super().__init__("a rolled static loop's value is read after the loop")
        self.loop = loop


@dataclass(frozen=True)
class BoundMethod:
    base: TileRef | TensorRef
    name: str


def describe(value: Any) -> str:
    if isinstance(value, Value):
        return f"a runtime {value.dtype} value"
    if isinstance(value, TileRef):
        return f"a {value.type.space.data} tile"
    if isinstance(value, TensorRef):
        return f"tensor {value.name}"
    if callable(value):
        return getattr(value, "__name__", repr(value))
    return f"{type(value).__name__} {value!r}"


def snippet(node: ast.AST) -> str:
    try:
        return ast.unparse(node)[:120]
    except Exception:  # pragma: no cover - unparse of exotic nodes
        return ""

def truth(value: Any, node: ast.AST, fe: Any) -> bool:
    if isinstance(value, (bool, int, float)):
        return bool(value)
    raise fe.type_error(node, f"a condition must be a comparison or a compile-time bool, got {describe(value)}")
