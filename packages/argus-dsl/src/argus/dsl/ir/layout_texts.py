"""Layouts as the IR spells them: CuTe notation, read back once per text.

Tile types, atoms and selectors carry their layouts as text, so that printed IR reads back.
Every consumer (the checker, the interpreter, the backends) needs the layout object again, and
parsing one costs tens of microseconds — as much as checking a small kernel's op. So a text is
parsed at most once per process, and a text made from a layout object (by the front end, in the
same process) is known from the start: the object it was printed from is the one it parses to
(printing and parsing are inverse, `argus.layout.notation`).
"""

from __future__ import annotations

from typing import Any

from argus.layout import ComposedLayout, Swizzle, parse

_LAYOUTS: dict[str, Any] = {}


def layout_from_text(text: str) -> Any:
    """The layout object of a layout text, parsed once per text and shared."""
    layout = _LAYOUTS.get(text)
    if layout is None:
        layout = _LAYOUTS[text] = parse(text)
    return layout


def text_of(layout: Any) -> str:
    """A layout's text in the IR; reading that text back gives this object."""
    text = str(layout)
    _LAYOUTS.setdefault(text, layout)
    return text


_MOVED: dict[tuple[int, int], tuple[Any, Any]] = {}


def moved_layout(layout: Any, start: int) -> Any:
    """A sub-tile's layout moved `start` elements on (`with_start`): the object its text
    reads back to, made once per layout and start (so what is known of it, by identity, is
    found again)."""
    key = (id(layout), start)
    found = _MOVED.get(key)
    if found is None:
        found = _MOVED[key] = (layout, layout_from_text(text_of(with_start(layout, start))))
    return found[1]


def unswizzled(layout: Any) -> bool:
    """Whether no swizzle follows a layout's offset: a plain layout, or one composed with the
    identity (a sub-tile moved on then has every offset moved by the same)."""
    return not isinstance(layout, ComposedLayout) or (isinstance(layout.outer, Swizzle) and layout.outer.bits == 0)


def with_start(layout: Any, start: int) -> Any:
    """A sub-tile's layout moved `start` elements further (before its swizzle, as offsets are)."""
    if not start:
        return layout
    if isinstance(layout, ComposedLayout):
        return ComposedLayout(layout.outer, layout.offset + start, layout.inner)
    return ComposedLayout(Swizzle(0, 0, 0), start, layout)
