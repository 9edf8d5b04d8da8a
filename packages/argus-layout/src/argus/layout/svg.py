"""Pictures of layouts as standalone SVG text (standard library and numpy only).

A rank-1 layout is drawn as one row of cells, index ``i`` showing ``L(i)``. A rank-2 layout
(any nesting inside its two modes) is drawn as an ``M x N`` grid, ``M = size(mode 0)`` rows
and ``N = size(mode 1)`` columns, cell ``(m, n)`` showing ``L(m, n)``. Cells are coloured by
offset modulo 8, the way a picture of shared-memory banks reads, so repeated or conflicting
offsets stand out. A `ComposedLayout` (a swizzle) draws its final offsets the same way.

A TV layout maps ``(thread, value)`` to an index of an ``M x N`` tile stored column-major;
``to_svg(tv, tv_tile=(M, N))`` draws the tile with each cell labelled by the thread and value
that own it, coloured by thread.

Every cell is an SVG group ``<g class="cell">`` holding a ``<title>`` (the tooltip), a
``<rect>`` and its labels: ``<text class="offset">`` for plain layouts, ``<text
class="thread">`` and ``<text class="value">`` for TV layouts. Cells are written in index
order (column-major: the row index varies fastest), so reading the offset labels in document
order gives ``layout.offsets()``.
"""

from __future__ import annotations

import colorsys
from os import PathLike, fspath
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import numpy as np

from .basis import has_basis
from .errors import LayoutError
from .inttuple import is_int
from .layout import Layout
from .limits import number_text
from .swizzle import ComposedLayout

__all__ = ["MAX_CELLS", "offset_grid", "save_svg", "to_svg", "tv_grid"]

#: Largest number of cells drawn (grid cells, and for TV layouts also (thread, value) pairs).
MAX_CELLS = 4096

#: Soft fills for offsets, indexed by offset mod 8.
OFFSET_PALETTE = (
    "#f4cccc",  # rose
    "#fce5cd",  # apricot
    "#fff2cc",  # butter
    "#d9ead3",  # sage
    "#d0e0e3",  # mist
    "#cfe2f3",  # sky
    "#d9d2e9",  # lavender
    "#ead1dc",  # orchid
)

_EMPTY_FILL = "#ffffff"
_FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"
_GOLDEN = 0.6180339887498949


def thread_colour(t: int) -> str:
    """A soft colour for thread `t`; consecutive threads get well separated hues."""
    hue = (t * _GOLDEN) % 1.0
    r, g, b = colorsys.hls_to_rgb(hue, 0.82, 0.65)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


def offset_colour(offset: int) -> str:
    return OFFSET_PALETTE[offset % len(OFFSET_PALETTE)]


# ---- the grids behind the pictures ---------------------------------------------------------


def _check_layout(layout: Any, op: str) -> None:
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise LayoutError(op, f"expected a Layout or ComposedLayout, got {type(layout).__name__}", layout)
    parts = [layout] if isinstance(layout, Layout) else [layout.inner, layout.outer]
    if any(isinstance(p, Layout) and has_basis(p) for p in parts):
        raise LayoutError(op, "draws offsets, and a layout with basis strides gives coordinates; draw "
                          "each coordinate's layout, or the data layout it indexes", layout)


def _too_large(op: str, what: str, count: int, layout: Any, *extra: Any) -> LayoutError:
    return LayoutError(
        op,
        f"{what} has {number_text(count)} cells and at most {MAX_CELLS} are drawn; draw a tile of it instead, "
        "e.g. composition(layout, (32, 32)) or a slice such as layout(None, 0)",
        layout,
        *extra,
    )


def offset_grid(layout: Any, op: str = "to_svg") -> np.ndarray:
    """The offsets as a 2-D int64 array: ``(1, size)`` for rank <= 1, ``(M, N)`` for rank 2.

    Entry ``[m, n]`` is ``L(m, n)`` (``[0, i]`` is ``L(i)`` for rank 1). Refuses rank > 2
    and layouts of more than `MAX_CELLS` elements with a `LayoutError` that says what can be
    drawn instead.
    """
    _check_layout(layout, op)
    r = layout.rank
    if r > 2:
        raise LayoutError(
            op,
            f"only rank-1 and rank-2 layouts are drawn, this one has rank {r}; slice it to two "
            "modes (e.g. layout(None, None, 0)), group its modes into two "
            "(e.g. Layout((s0, (s1, s2)), (d0, (d1, d2)))), or coalesce it if its function "
            "needs at most two modes",
            layout,
        )
    n = layout.size()
    if n > MAX_CELLS:
        raise _too_large(op, "the layout", n, layout)
    offsets = layout.offsets()
    if r < 2:
        return offsets.reshape(1, n)
    rows = layout[0].size()
    return offsets.reshape((rows, n // rows), order="F")


def _tile_shape(tv_tile: Any, layout: Any, op: str) -> tuple[int, int]:
    if (
        not isinstance(tv_tile, (tuple, list))
        or len(tv_tile) != 2
        or not all(is_int(x) and x > 0 for x in tv_tile)
    ):
        raise LayoutError(op, f"tv_tile must be a pair of positive ints (M, N), got {tv_tile!r}", layout)
    return tv_tile[0], tv_tile[1]


def tv_grid(layout: Any, tv_tile: tuple[int, int], op: str = "to_svg") -> list[list[list[tuple[int, int]]]]:
    """Who owns each tile element: ``grid[m][n]`` lists the ``(t, v)`` pairs mapped to ``(m, n)``.

    `layout` is a rank-2 TV layout: thread ``t`` is the index in mode 0, value ``v`` the index
    in mode 1, and ``L(t, v)`` is an index into the ``M x N`` tile stored column-major, so it
    lands on ``m = L % M``, ``n = L // M``. Pairs are listed in index order (``t`` fastest).
    Every ``L(t, v)`` must lie in ``[0, M*N)``; otherwise a `LayoutError` names the first pair
    that falls outside.
    """
    _check_layout(layout, op)
    rows, cols = _tile_shape(tv_tile, layout, op)
    if layout.rank != 2:
        raise LayoutError(
            op,
            f"a TV layout has two modes (thread, value), this one has rank {layout.rank}; "
            "e.g. make_layout(threads, Layout(1, 0)) gives one value per thread",
            layout,
            tv_tile,
        )
    if rows * cols > MAX_CELLS:
        raise _too_large(op, f"the {rows}x{cols} tile", rows * cols, layout, tv_tile)
    pairs = layout.size()
    if pairs > 4 * MAX_CELLS:
        raise LayoutError(
            op,
            f"the TV layout has {pairs} (thread, value) pairs, at most {4 * MAX_CELLS} are drawn",
            layout,
            tv_tile,
        )
    threads = layout[0].size()
    offsets = layout.offsets()
    outside = np.flatnonzero((offsets < 0) | (offsets >= rows * cols))
    if outside.size:
        i = int(outside[0])
        t, v = i % threads, i // threads
        raise LayoutError(
            op,
            f"(t={t}, v={v}) maps to index {int(offsets[i])}, outside the {rows}x{cols} tile "
            f"[0, {rows * cols}); {outside.size} of {pairs} pairs fall outside",
            layout,
            tv_tile,
        )
    grid: list[list[list[tuple[int, int]]]] = [[[] for _ in range(cols)] for _ in range(rows)]
    for i, idx in enumerate(offsets.tolist()):
        grid[idx % rows][idx // rows].append((i % threads, i // threads))
    return grid


# ---- SVG writing ---------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _text(
    x: float, y: float, content: str, size: float, cls: str, anchor: str = "middle", **attrs: str
) -> str:
    extra = "".join(f" {k.replace('_', '-')}={quoteattr(v)}" for k, v in attrs.items())
    return (
        f'<text class="{cls}" x="{_fmt(x)}" y="{_fmt(y)}" font-size="{_fmt(size)}" '
        f'text-anchor="{anchor}" dy="0.35em"{extra}>{escape(content)}</text>'
    )


def _font_for(longest: int, cell: int, share: float) -> float:
    """Font size so `longest` monospace characters fit in a cell, capped at `share` of it."""
    return max(5.0, min(cell * share, 1.5 * cell / max(longest, 1)))


class _Canvas:
    """Frame shared by both kinds of pictures: title, index labels and a grid of cells."""

    def __init__(self, rows: int, cols: int, cell: int, title: str) -> None:
        self.rows, self.cols, self.cell = rows, cols, cell
        self.title = title
        self.margin = 8
        self.title_h = 22
        index_font = min(12.0, cell * 0.42)
        self.index_font = index_font
        label_chars = len(str(max(rows - 1, 0)))
        self.left = self.margin + max(label_chars * index_font * 0.62 + 6, cell * 0.6)
        self.top = self.margin + self.title_h + index_font + 6
        grid_w = cols * cell
        title_w = len(title) * 13 * 0.62
        self.width = int(np.ceil(max(self.left + grid_w, self.margin + title_w) + self.margin))
        self.height = int(np.ceil(self.top + rows * cell + self.margin))
        self.parts: list[str] = []

    def origin(self, m: int, n: int) -> tuple[float, float]:
        return self.left + n * self.cell, self.top + m * self.cell

    def frame(self) -> None:
        c, f = self.cell, self.index_font
        self.parts.append(
            f'<text class="title" x="{self.margin}" y="{self.margin + 15}" font-size="13" '
            f'font-weight="bold">{escape(self.title)}</text>'
        )
        for n in range(self.cols):
            x = self.left + (n + 0.5) * c
            self.parts.append(_text(x, self.top - f * 0.5 - 3, str(n), f, "col-index", fill="#666666"))
        if self.rows > 1 or self.cols == 1:
            for m in range(self.rows):
                y = self.top + (m + 0.5) * c
                self.parts.append(_text(self.left - 4, y, str(m), f, "row-index", "end", fill="#666666"))

    def render(self) -> str:
        head = (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" font-family={quoteattr(_FONT)}>'
        )
        background = f'<rect width="{self.width}" height="{self.height}" fill="#ffffff"/>'
        return "\n".join([head, background, *self.parts, "</svg>"]) + "\n"


def _cell_open(x: float, y: float, cell: int, fill: str, tooltip: str, stroke: str = "#555555") -> list[str]:
    return [
        '<g class="cell">',
        f"<title>{escape(tooltip)}</title>",
        f'<rect x="{_fmt(x)}" y="{_fmt(y)}" width="{cell}" height="{cell}" fill="{fill}" '
        f'stroke="{stroke}" stroke-width="0.75"/>',
    ]


def _offset_picture(layout: Any, title: str, cell: int) -> str:
    grid = offset_grid(layout)
    rows, cols = grid.shape
    canvas = _Canvas(rows, cols, cell, title)
    canvas.frame()
    font = _font_for(max(len(str(int(v))) for v in (grid.min(), grid.max())), cell, 0.42)
    rank1 = layout.rank < 2
    for n in range(cols):
        for m in range(rows):
            value = int(grid[m, n])
            x, y = canvas.origin(m, n)
            where = f"L({n})" if rank1 else f"L({m},{n})"
            canvas.parts += _cell_open(x, y, cell, offset_colour(value), f"{where} = {value}")
            canvas.parts.append(_text(x + cell / 2, y + cell / 2, str(value), font, "offset"))
            canvas.parts.append("</g>")
    return canvas.render()


def _tv_picture(layout: Any, tv_tile: tuple[int, int], title: str, cell: int) -> str:
    grid = tv_grid(layout, tv_tile)
    rows, cols = len(grid), len(grid[0])
    canvas = _Canvas(rows, cols, cell, title)
    canvas.frame()
    longest = max(len(f"T{layout[0].size() - 1}"), len(f"V{layout[1].size() - 1}"))
    font = _font_for(longest, cell, 0.32)
    marker_font = max(5.0, cell * 0.22)
    for n in range(cols):
        for m in range(rows):
            owners = grid[m][n]
            x, y = canvas.origin(m, n)
            if not owners:
                canvas.parts += _cell_open(x, y, cell, _EMPTY_FILL, f"({m},{n}): no thread", "#bbbbbb")
                canvas.parts.append("</g>")
                continue
            t, v = owners[0]
            tip = f"({m},{n}) = index {m + rows * n}: " + ", ".join(f"T{a} V{b}" for a, b in owners)
            stroke = "#c00000" if len(owners) > 1 else "#555555"
            canvas.parts += _cell_open(x, y, cell, thread_colour(t), tip, stroke)
            canvas.parts.append(_text(x + cell / 2, y + cell * 0.3, f"T{t}", font, "thread"))
            canvas.parts.append(_text(x + cell / 2, y + cell * 0.7, f"V{v}", font, "value"))
            if len(owners) > 1:
                canvas.parts.append(
                    f'<text class="marker" x="{_fmt(x + cell - 1.5)}" y="{_fmt(y + marker_font)}" '
                    f'font-size="{_fmt(marker_font)}" text-anchor="end" fill="#c00000">'
                    f"+{len(owners) - 1}</text>"
                )
            canvas.parts.append("</g>")
    return canvas.render()


def to_svg(
    layout: Any,
    *,
    tv_tile: tuple[int, int] | None = None,
    title: str | None = None,
    cell: int = 28,
) -> str:
    """A standalone SVG picture of `layout` (a `Layout` or `ComposedLayout`), as text.

    Without `tv_tile`: a rank-1 layout is one row of cells showing ``L(i)``; a rank-2 layout
    is a ``size(mode 0) x size(mode 1)`` grid whose cell ``(m, n)`` shows ``L(m, n)``, row
    indices on the left, column indices on top. Cells are coloured by offset modulo 8.

    With ``tv_tile=(M, N)``: `layout` is a TV layout, ``(thread, value) -> index`` into an
    ``M x N`` tile stored column-major. Each tile cell shows ``T<t>`` and ``V<v>`` of the pair
    that owns it and is coloured by thread. A cell reached by several pairs shows the first
    (in index order, thread fastest) with a red ``+k`` marker and border for the ``k`` others;
    all of them are listed in the cell's tooltip (``<title>``). Cells no pair reaches are
    white and unlabelled. Pairs that land outside ``[0, M*N)`` raise `LayoutError`.

    The title line is `title`, by default the layout in CuTe notation. `cell` is the cell
    side in pixels. Rank > 2, more than `MAX_CELLS` cells, or malformed arguments raise
    `LayoutError` saying what can be drawn instead.
    """
    _check_layout(layout, "to_svg")
    if not is_int(cell) or cell < 8:
        raise LayoutError("to_svg", f"cell must be an int of at least 8 pixels, got {cell!r}", layout)
    if title is not None and not isinstance(title, str):
        raise LayoutError("to_svg", f"title must be a string (or None for the layout's notation), got "
                                    f"{type(title).__name__}", layout)
    if tv_tile is None:
        return _offset_picture(layout, str(layout) if title is None else title, cell)
    rows, cols = _tile_shape(tv_tile, layout, "to_svg")
    if title is None:
        title = f"{layout}  (thread, value) -> {rows}x{cols} tile"
    return _tv_picture(layout, (rows, cols), title, cell)


def save_svg(layout: Any, path: str | Path, **kw: Any) -> Path:
    """Write ``to_svg(layout, **kw)`` to `path` (UTF-8) and return the path. Writing may fail as
    any file does (an `OSError`); a path of the wrong kind is a `LayoutError`."""
    if not isinstance(path, (str, PathLike)) or not isinstance(fspath(path), str) or "\0" in fspath(path):
        raise LayoutError("save_svg", f"path must be a file name (a string without NUL, or a path), got "
                                      f"{type(path).__name__} {path!r:.80}", layout)
    path = Path(path)
    path.write_text(to_svg(layout, **kw), encoding="utf-8")
    return path
