"""How big a candidate may be, and how much work computing its constants may take.

A candidate comes from a planner, so any text may arrive: these bounds turn a module that would
exhaust the parser's stack, the worker's memory or its time into a `CandidateError` naming the
line and the limit. Each is far above what a kernel module needs (the largest example is under
10,000 characters, nests 16 deep and computes a few dozen values).
"""

from __future__ import annotations

MAX_TEXT_CHARS = 200_000
"""Characters in a candidate's text: a kernel module is a few thousand; past this, parsing alone
costs seconds and memory."""

MAX_NESTING = 100
"""How deep the syntax tree may nest (statements, expressions, brackets): Python's own parser,
compiler and `ast.unparse` recurse on it and fail with RecursionError a few hundred levels down."""

MAX_FUNCTIONS = 8
"""Functions a candidate defines (the kernel, its helpers, the grid): a kernel module has two or
three. The compiler reads helpers that call helpers recursively, at a cost that doubles with
each level (a chain of thirteen took it 40 s, thousands past Python's recursion limit)."""

MAX_GRID = (2**31 - 1, 65_535, 65_535)
"""The most blocks a launch grid may have along x, y and z: what any target launches."""

MAX_INT_BITS = 512
"""Bits of an integer a constant may hold or produce: enough for any mask, size or offset
(u256 included); ``1 << 10**9`` or ``10 ** 10 ** 8`` is refused before it is computed."""

MAX_STRING_CHARS = 4096
"""Characters of a string a constant may hold or produce (``'a' * 10**9`` is refused before it
is built)."""

MAX_ITEMS = 10_000
"""Elements of a tuple (at every depth, counted as often as they appear) or range a constant may
hold or produce, and of what a comprehension may build (``(0,) * 10**9``, ``range(10**12)``;
``A = (B, B)`` twenty times over from ``B = (0,)``, a million elements in twenty tuples)."""

MAX_DICT_ENTRIES = 256
"""Entries of a dict a constant computes on the way (``{1: u32, 2: u64}[VEC]``): a choice by key
is a few entries; keys chosen to share one hash make building a dict quadratic in them."""

MAX_VALUE_NESTING = 32
"""How deep tuples may nest inside a constant's value (constants built from constants can nest
deeper than the text does)."""

MAX_LAYOUT_SIZE = 1 << 22
"""Elements of a layout a constant may build: some layout operations enumerate every element
(a swizzled layout's cosize, an atom's check), so a layout of 2**30 elements would take gigabytes."""

MAX_CALL_BITS = 1 << 14
"""Bits of the integers given to one call of the language's functions, all together: their
products and prefix products grow with each (``prefix_product((1 << 500,) * 9000)`` would build
gigabytes), and a layout's modes are a few numbers of a few digits."""

LAYOUT_ELEMENTS_PER_STEP = 64
"""A layout given to a call costs a step per this many of its elements (and one per mode): some
functions and methods enumerate its offsets (an atom's check, a swizzled layout's cosize)."""

MAX_STEPS = 200_000
"""Evaluation steps (one per expression node, comprehension iteration and element of a new
tuple, and for a call what it is given) for all of a candidate's constants together, and again
for each launch grid: nested comprehensions that filter everything out build nothing yet can
loop for hours."""
