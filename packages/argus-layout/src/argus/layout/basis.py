"""Basis strides: layouts whose offsets are coordinates, such as identity layouts.

A stride may be a `ScaledBasis` ``k@m`` — k steps along coordinate `m` of the codomain —
instead of an integer. ``make_identity_layout((4,8))`` is ``(4,8):(1@0,1@1)``: it maps every
coordinate to itself, and after tiling or partitioning it tells each element where it came
from (what predication against a tensor's bounds needs). Scaling and coalescing work on
bases like on integers; operations that order strides (complement, inverses) need integers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import LayoutError
from .inttuple import flatten
from .limits import MAX_MODES, MAX_NESTING, int_text
from .symbolic import Expr

if TYPE_CHECKING:
    from .layout import Layout

__all__ = ["ArithmeticTuple", "E", "ScaledBasis", "has_basis", "make_identity_layout"]

Path = tuple[int, ...]


class ScaledBasis:
    """``scale@mode``: `scale` unit steps along codomain coordinate `mode` (a path of mode indices)."""

    __slots__ = ("mode", "scale")

    def __init__(self, scale: int, mode: Path) -> None:
        if not isinstance(scale, int) or isinstance(scale, bool):
            raise LayoutError("ScaledBasis", f"scale must be an int, got {scale!r}", scale, mode)
        _check_path(mode, "ScaledBasis", scale)
        self.scale = scale
        self.mode = tuple(mode)

    def __mul__(self, k: Any) -> Any:
        """Scale by an int or a symbolic expression (arrays go through `vectorized`)."""
        if type(k).__module__ == "numpy":
            return NotImplemented
        if not _is_scale(k):
            raise LayoutError("scale", f"a basis element scales by an int or a symbolic expression, got "
                                       f"{type(k).__name__} {k!r:.80}", self)
        scale = self.scale * k
        if isinstance(scale, int) and scale == 0:
            return 0
        result = object.__new__(ScaledBasis)
        result.scale, result.mode = scale, self.mode
        return result

    __rmul__ = __mul__

    def __add__(self, other: Any) -> Any:
        return ArithmeticTuple.of(self) + other

    __radd__ = __add__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScaledBasis):
            return NotImplemented
        return self.scale == other.scale and self.mode == other.mode

    def __hash__(self) -> int:
        return hash((self.scale, self.mode))

    def __str__(self) -> str:
        scale = int_text(self.scale) if isinstance(self.scale, int) else str(self.scale)
        return f"{scale}@" + "@".join(str(m) for m in self.mode)

    def __repr__(self) -> str:
        return f"ScaledBasis({self.scale}, {self.mode})"


def E(*mode: int) -> ScaledBasis:
    """The unit step along codomain coordinate `mode`: ``E(1)`` is ``1@1``, ``E(0, 1)`` is ``1@0@1``."""
    return ScaledBasis(1, mode)


class ArithmeticTuple:
    """A coordinate under construction: a sum of scaled bases (and zeros), added element-wise."""

    __slots__ = ("entries",)

    def __init__(self, entries: dict[Path, Any]) -> None:
        if not isinstance(entries, dict) or not entries:
            raise LayoutError("ArithmeticTuple", "entries must be a non-empty dict from mode paths to ints or "
                                                 f"symbolic expressions, got {type(entries).__name__}", entries)
        for mode, value in entries.items():
            _check_path(mode, "ArithmeticTuple", entries)
            if not _is_scale(value):
                raise LayoutError("ArithmeticTuple", f"the entry of mode {mode} must be an int or a symbolic "
                                                     f"expression, got {type(value).__name__} {value!r:.80}", entries)
        self.entries = dict(entries)

    @classmethod
    def _make(cls, entries: dict[Path, Any]) -> ArithmeticTuple:
        """Without checks, for sums of checked entries."""
        result = object.__new__(cls)
        result.entries = entries
        return result

    @classmethod
    def of(cls, b: ScaledBasis) -> ArithmeticTuple:
        return cls._make({b.mode: b.scale})

    def __add__(self, other: Any) -> Any:
        if isinstance(other, int) and not isinstance(other, bool) and other == 0:
            return self
        if isinstance(other, ScaledBasis):
            other = ArithmeticTuple.of(other)
        if not isinstance(other, ArithmeticTuple):
            raise LayoutError("ArithmeticTuple", f"cannot add {other!r} to a coordinate offset", self, other)
        entries = dict(self.entries)
        for mode, v in other.entries.items():
            entries[mode] = entries[mode] + v if mode in entries else v
        return ArithmeticTuple._make(entries)

    __radd__ = __add__

    def as_coordinate(self) -> Any:
        """The nested coordinate tuple; missing coordinates are 0."""
        return nest_coordinate(self.entries)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ArithmeticTuple):
            return NotImplemented
        return self.as_coordinate() == other.as_coordinate()

    def __hash__(self) -> int:
        return hash(self.as_coordinate())

    def __repr__(self) -> str:
        return f"ArithmeticTuple({self.as_coordinate()!r})"


def _check_path(mode: Any, op: str, *operands: Any) -> None:
    """A mode path: a non-empty tuple of at most `MAX_NESTING` ints in [0, `MAX_MODES`)."""
    if not isinstance(mode, tuple) or not mode or not all(
        isinstance(m, int) and not isinstance(m, bool) and 0 <= m < MAX_MODES for m in mode
    ):
        raise LayoutError(op, f"mode must be a non-empty tuple of ints in [0, {MAX_MODES}), got {mode!r:.80}",
                          *operands)
    if len(mode) > MAX_NESTING:
        raise LayoutError(op, f"mode path is longer than {MAX_NESTING}", *operands)


def _is_scale(k: Any) -> bool:
    """What a basis element scales by: an int (not a bool) or a symbolic expression."""
    return (isinstance(k, int) and not isinstance(k, bool)) or isinstance(k, Expr)


def nest_coordinate(entries: dict[Path, Any]) -> Any:
    """Build the nested coordinate tuple from {mode path: value}; missing coordinates are 0."""
    if () in entries:
        return entries[()]
    width = 1 + max(m[0] for m in entries)
    groups: list[dict[Path, Any]] = [{} for _ in range(width)]
    for m, v in entries.items():
        groups[m[0]][m[1:]] = v
    return tuple(nest_coordinate(g) if g else 0 for g in groups)


def as_coordinate(value: Any, modes: Any = ()) -> Any:
    """A basis-valued result as a plain nested tuple with an entry for each of `modes` (0 if absent)."""
    entries: dict[Path, Any] = {m: 0 for m in modes}
    if isinstance(value, ScaledBasis):
        entries[value.mode] = value.scale
    elif isinstance(value, ArithmeticTuple):
        entries.update(value.entries)
    elif value != 0:
        raise LayoutError("evaluate", f"a coordinate-valued layout produced the plain integer {value!r}")
    return nest_coordinate(entries) if entries else value


def has_basis(layout: Layout) -> bool:
    stride = layout.stride
    if type(stride) is int:
        return False
    return any(type(d) is ScaledBasis for d in flatten(stride))


def require_integer_strides(layout: Layout, op: str, *operands: Any) -> None:
    if has_basis(layout):
        raise LayoutError(op, "needs integer strides; this layout has basis (coordinate) strides", *operands)


def make_identity_layout(shape: Any) -> Layout:
    """The layout mapping each coordinate of `shape` to itself: ``(4,8):(1@0,1@1)``."""
    from .inttuple import as_int_tuple, is_tuple
    from .layout import Layout

    shape = as_int_tuple(shape, "make_identity_layout", "shape")
    if not is_tuple(shape):
        return Layout(shape, 1)  # the coordinate of a rank-1 shape is the index itself

    def bases(s: Any, path: Path) -> Any:
        if is_tuple(s):
            return tuple(bases(e, path + (i,)) for i, e in enumerate(s))
        return ScaledBasis(1, path)

    return Layout(shape, bases(shape, ()))
