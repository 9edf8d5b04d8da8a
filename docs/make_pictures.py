"""Regenerate the pictures of docs/layout.md:  python docs/make_pictures.py"""

from __future__ import annotations

from pathlib import Path

from argus.layout import (
    blocked_product,
    make_layout,
    parse,
    raked_product,
    save_svg,
    upcast,
    zipped_divide,
)

HERE = Path(__file__).parent / "images"

PICTURES = {
    "col_major_4x8.svg": (parse("(4,8):(1,4)"), {}),
    "row_major_4x8.svg": (parse("(4,8):(8,1)"), {}),
    "nested.svg": (parse("((2,2),8):((1,4),16)"), {}),
    "zipped_divide.svg": (zipped_divide(parse("(8,8):(1,8)"), (make_layout(2), make_layout(4))), {}),
    "blocked_product.svg": (blocked_product(parse("(2,2):(1,2)"), parse("(3,4):(1,3)")), {}),
    "raked_product.svg": (raked_product(parse("(2,2):(1,2)"), parse("(3,4):(1,3)")), {}),
    "swizzle_8x64.svg": (parse("Sw<3,4,3> o 0 o (8,64):(64,1)"), {}),
    "swizzle_vectors.svg": (upcast(parse("Sw<3,4,3> o 0 o (8,64):(64,1)"), 8), {}),
    "tv_16x8.svg": (parse("((4,8),(2,2)):((32,1),(16,8))"), {"tv_tile": (16, 8)}),
}


def main() -> None:
    HERE.mkdir(exist_ok=True)
    for name, (layout, options) in PICTURES.items():
        save_svg(layout, HERE / name, **options)
        print(f"{HERE / name}: {layout}")


if __name__ == "__main__":
    main()
