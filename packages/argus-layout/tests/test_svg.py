"""SVG pictures: well-formed XML whose cells show exactly the layout's offsets."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

import numpy as np
import pytest
from argus.layout import ComposedLayout, Layout, LayoutError, Swizzle, parse
from argus.layout.svg import MAX_CELLS, offset_grid, save_svg, to_svg, tv_grid
from hypothesis import given, settings
from hypothesis import strategies as st

NS = "{http://www.w3.org/2000/svg}"


def parse_svg(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == f"{NS}svg"
    width, height = int(root.get("width")), int(root.get("height"))
    assert width > 0 and height > 0
    assert root.get("viewBox") == f"0 0 {width} {height}"
    return root


def cells(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter(f"{NS}g") if g.get("class") == "cell"]


def labels(cell: ET.Element, cls: str) -> list[str]:
    return [t.text or "" for t in cell.iter(f"{NS}text") if t.get("class") == cls]


def offset_labels(root: ET.Element) -> list[int]:
    out = []
    for c in cells(root):
        (text,) = labels(c, "offset")
        out.append(int(text))
    return out


def title_text(root: ET.Element) -> str:
    (title,) = [t for t in root.iter(f"{NS}text") if t.get("class") == "title"]
    return title.text or ""


def fill(cell: ET.Element) -> str:
    return cell.find(f"{NS}rect").get("fill")  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        "8:1",
        "8:-3",
        "(4,8):(8,1)",
        "(4,8):(1,4)",
        "((2,2),8):((1,4),16)",
        "((2,3),(2,2)):((1,12),(2,6))",
        "(3,(2,2)):(0,(1,-5))",
        "(6):(2)",
        "Sw<3,4,3> o 0 o (8,64):(64,1)",
        "Sw<2,0,3> o 5 o (4,8):(8,1)",
        "(4,4):(4,1) o 0 o (4,4):(1,4)",
    ],
)
def test_cells_show_the_offsets_in_index_order(text: str) -> None:
    layout = parse(text)
    root = parse_svg(to_svg(layout))
    assert len(cells(root)) == layout.size()
    assert offset_labels(root) == layout.offsets().tolist()
    assert title_text(root) == str(layout)


def test_cells_are_placed_on_the_grid() -> None:
    layout = parse("((2,2),3):((1,6),2)")
    root = parse_svg(to_svg(layout, cell=20))
    by_position = {}
    for c in cells(root):
        rect = c.find(f"{NS}rect")
        by_position[(float(rect.get("y")), float(rect.get("x")))] = int(labels(c, "offset")[0])
    ys = sorted({y for y, _ in by_position})
    xs = sorted({x for _, x in by_position})
    assert (len(ys), len(xs)) == (4, 3)
    for m, y in enumerate(ys):
        for n, x in enumerate(xs):
            assert by_position[(y, x)] == layout((m, n))
    rows = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "row-index"]
    cols = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "col-index"]
    assert rows == ["0", "1", "2", "3"] and cols == ["0", "1", "2"]


def test_colour_follows_offset_modulo_8() -> None:
    root = parse_svg(to_svg(parse("(4,8):(4,1)")))
    colour_of: dict[int, set[str]] = {}
    for c in cells(root):
        colour_of.setdefault(int(labels(c, "offset")[0]) % 8, set()).add(fill(c))
    assert all(len(v) == 1 for v in colour_of.values())
    assert len({next(iter(v)) for v in colour_of.values()}) == 8


def test_swizzle_changes_the_picture() -> None:
    plain = parse("(8,64):(64,1)")
    swizzled = ComposedLayout(Swizzle(3, 4, 3), 0, plain)
    a, b = parse_svg(to_svg(plain)), parse_svg(to_svg(swizzled))
    assert offset_labels(a) != offset_labels(b)
    assert sorted(offset_labels(a)) == sorted(offset_labels(b))  # a swizzle permutes offsets


def test_title_and_text_are_escaped() -> None:
    root = parse_svg(to_svg(parse("4:1"), title='a <b> & "c"'))
    assert title_text(root) == 'a <b> & "c"'
    swz = parse_svg(to_svg(parse("Sw<1,2,3> o 0 o 16:1")))
    assert title_text(swz) == "Sw<1,2,3> o 0 o 16:1"


def test_repr_svg_and_save(tmp_path) -> None:
    layout = parse("(2,4):(4,1)")
    assert layout._repr_svg_() == to_svg(layout)
    composed = parse("Sw<1,1,2> o 0 o (4,4):(4,1)")
    parse_svg(composed._repr_svg_())
    path = save_svg(layout, tmp_path / "l.svg", cell=16)
    assert offset_labels(parse_svg(path.read_text(encoding="utf-8"))) == layout.offsets().tolist()


def test_offset_grid_is_column_major() -> None:
    layout = parse("((2,2),3):((1,6),2)")
    grid = offset_grid(layout)
    assert grid.shape == (4, 3)
    assert all(grid[m, n] == layout(m, n) for m in range(4) for n in range(3))
    assert offset_grid(parse("5:3")).tolist() == [[0, 3, 6, 9, 12]]


@st.composite
def small_layouts(draw: st.DrawFn) -> Layout:
    def mode() -> tuple[object, object]:
        k = draw(st.integers(1, 2))
        shapes = tuple(draw(st.integers(1, 4)) for _ in range(k))
        strides = tuple(draw(st.integers(-9, 9)) for _ in range(k))
        return (shapes[0], strides[0]) if k == 1 else (shapes, strides)

    modes = [mode() for _ in range(draw(st.integers(1, 2)))]
    if len(modes) == 1:
        return Layout(*modes[0])
    return Layout(tuple(m[0] for m in modes), tuple(m[1] for m in modes))


@settings(max_examples=60, deadline=None)
@given(small_layouts())
def test_labels_equal_offsets_property(layout: Layout) -> None:
    root = parse_svg(to_svg(layout))
    assert len(cells(root)) == layout.size()
    assert offset_labels(root) == layout.offsets().tolist()


# ---- TV layouts ----------------------------------------------------------------------------

MMA_C = "((4,8),(2,2)):((32,1),(16,8))"  # 32 threads x 4 values on a 16x8 tile


def tv_labels(root: ET.Element) -> list[tuple[int, int] | None]:
    out: list[tuple[int, int] | None] = []
    for c in cells(root):
        t, v = labels(c, "thread"), labels(c, "value")
        if not t:
            assert not v
            out.append(None)
            continue
        out.append((int(t[0][1:]), int(v[0][1:])))
    return out


def test_tv_bijective_covers_each_pair_once() -> None:
    tv = parse(MMA_C)
    root = parse_svg(to_svg(tv, tv_tile=(16, 8)))
    assert len(cells(root)) == 16 * 8
    pairs = tv_labels(root)
    assert Counter(pairs) == Counter((t, v) for v in range(4) for t in range(32))
    # cell k (column-major) is owned by the pair that the layout sends to index k
    owner = {int(i): (k % 32, k // 32) for k, i in enumerate(tv.offsets())}
    assert pairs == [owner[k] for k in range(128)]
    assert not [t for t in root.iter(f"{NS}text") if t.get("class") == "marker"]


def test_tv_colour_follows_thread() -> None:
    root = parse_svg(to_svg(parse(MMA_C), tv_tile=(16, 8)))
    by_thread: dict[int, set[str]] = {}
    for c, pair in zip(cells(root), tv_labels(root)):
        assert pair is not None
        by_thread.setdefault(pair[0], set()).add(fill(c))
    assert all(len(v) == 1 for v in by_thread.values())
    assert len({next(iter(by_thread[t])) for t in range(8)}) == 8  # consecutive threads differ


def test_tv_shared_and_empty_cells() -> None:
    tv = parse("((2,2),(2,2)):((1,0),(4,8))")  # thread bit 1 has stride 0: pairs collide
    root = parse_svg(to_svg(tv, tv_tile=(4, 4)))
    pairs = tv_labels(root)
    assert len(pairs) == 16
    assert pairs.count(None) == 8
    empty = [c for c, p in zip(cells(root), pairs) if p is None]
    assert {fill(c) for c in empty} == {"#ffffff"}
    markers = [t.text for t in root.iter(f"{NS}text") if t.get("class") == "marker"]
    assert markers == ["+1"] * 8
    grid = tv_grid(tv, (4, 4))
    assert grid[0][0] == [(0, 0), (2, 0)]
    tips = [c.find(f"{NS}title").text for c in cells(root)]
    assert "T0 V0, T2 V0" in tips[0]


def test_tv_composed_layout() -> None:
    tv = ComposedLayout(Swizzle(1, 0, 1), 0, parse("(2,2):(1,2)"))
    pairs = tv_labels(parse_svg(to_svg(tv, tv_tile=(2, 2))))
    # offsets 0, 1, 3, 2: the swizzle swaps the owners of tile indices 2 and 3
    assert pairs == [(0, 0), (1, 0), (1, 1), (0, 1)]


# ---- refusals ------------------------------------------------------------------------------


def test_rank_3_is_refused() -> None:
    with pytest.raises(LayoutError, match="rank 3") as info:
        to_svg(parse("(2,3,4):(1,2,6)"))
    assert info.value.operation == "to_svg"
    assert "slice" in info.value.reason


def test_too_many_cells_is_refused() -> None:
    with pytest.raises(LayoutError, match=f"at most {MAX_CELLS}"):
        to_svg(Layout((64, 65)))
    with pytest.raises(LayoutError, match="tile"):
        to_svg(Layout((64, 65)), tv_tile=(64, 65))
    to_svg(Layout((64, 64)))  # the limit itself is drawn


def test_tv_outside_the_tile_is_refused() -> None:
    with pytest.raises(LayoutError) as info:
        to_svg(parse(MMA_C), tv_tile=(8, 8))
    message = str(info.value)
    assert "(t=2, v=0)" in message and "8x8" in message and "64" in message
    with pytest.raises(LayoutError, match=r"\(t=1, v=0\)"):
        to_svg(parse("(2,2):(-1,1)"), tv_tile=(2, 2))


@pytest.mark.parametrize("tile", [(4,), (0, 4), (2.0, 2), "4,4"])
def test_bad_tile_argument(tile: object) -> None:
    with pytest.raises(LayoutError, match="tv_tile"):
        to_svg(parse("(2,2):(1,2)"), tv_tile=tile)  # type: ignore[arg-type]


def test_tv_needs_two_modes_and_other_bad_input() -> None:
    with pytest.raises(LayoutError, match="two modes"):
        to_svg(parse("4:1"), tv_tile=(2, 2))
    with pytest.raises(LayoutError, match="Layout or ComposedLayout"):
        to_svg(Swizzle(1, 2, 3))  # type: ignore[arg-type]
    with pytest.raises(LayoutError, match="cell"):
        to_svg(parse("4:1"), cell=2)


def test_offsets_beyond_int64_are_refused_not_wrapped() -> None:
    with pytest.raises(LayoutError):
        to_svg(Layout((4, 2), (1 << 62, 1)))
    assert offset_labels(parse_svg(to_svg(Layout((2, 2), (1, 1 << 40))))) == [0, 1, 1 << 40, (1 << 40) + 1]
    assert np.array_equal(offset_grid(Layout(1, 0)), [[0]])
