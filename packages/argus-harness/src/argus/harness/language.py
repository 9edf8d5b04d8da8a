"""What a candidate kernel may name: the language's own names and nothing else.

The DSL front-end evaluates at compile time any Python callable a kernel can reach (that is how
layouts and atoms fold), so a kernel that names ``open`` or ``__import__`` would run it. A
candidate from a planner is therefore checked against these lists before anything reads it:
imports only from the modules below, only the language's names, no dunder or private
attributes, and only the attributes the language uses.
"""

from __future__ import annotations

import builtins

import argus.dsl as _dsl
import argus.layout as _layout

#: Names of `argus.dsl` that belong to the language (errors, problems and host helpers do not).
_NOT_LANGUAGE = {
    "ArgusError", "ArgusLaunchError", "ArgusSyntaxError", "ArgusTypeError", "ArgusVerificationWarning",
    "CodegenError", "CompiledKernel", "TagAssertionError", "VerificationError", "Kernel", "KernelFault",
    "Problem", "SourceLocation", "from_storage", "to_storage", "DeviceFunction",
}
DSL_NAMES: frozenset[str] = frozenset(n for n in _dsl.__all__ if n not in _NOT_LANGUAGE)

#: Layout algebra a kernel may fold at compile time (drawing to files is not part of it).
LAYOUT_NAMES: frozenset[str] = frozenset(n for n in _layout.__all__
                                         if n not in {"save_svg", "to_svg", "LayoutError", "LayoutParseError"})

#: Modules whose names a candidate may import, with the names accepted (None: the module's own
#: ``__all__``, checked where the module is loaded).
MODULES: dict[str, frozenset[str] | None] = {
    "argus.dsl": DSL_NAMES,
    "argus.layout": LAYOUT_NAMES,
    "argus.backends.nvptx.language": None,
    "argus.backends.amdgpu.language": None,
    "math": frozenset({"log2", "log", "exp", "exp2", "sqrt", "pi", "e", "inf", "ceil", "floor", "gcd", "lcm", "isqrt"}),
}

#: Modules a candidate may import whole, under a name (``import math``, ``... import language as nv``).
WHOLE_MODULES: frozenset[str] = frozenset({"argus.backends.nvptx.language", "argus.backends.amdgpu.language", "math"})

#: Python builtins the language gives a meaning to (loops, compile-time arithmetic, conversions).
BUILTINS: frozenset[str] = frozenset({"range", "min", "max", "abs", "len", "int", "float", "bool", "tuple",
                                      "divmod", "round", "True", "False", "None"})

#: Every other builtin name is refused wherever it appears.
FORBIDDEN_BUILTINS: frozenset[str] = frozenset(n for n in dir(builtins) if n not in BUILTINS)

#: Attributes the language reads: index axes, tensor shapes and views, atom layouts and sizes,
#: dtype sizes, layout properties.
ATTRIBUTES: frozenset[str] = frozenset({
    "x", "y", "z", "view", "shape", "stride", "a_layout", "b_layout", "c_layout", "values", "shared_shape",
    "threads", "nbytes", "bits", "bit_length", "size", "cosize", "rank", "depth", "layout", "swizzle", "offset",
    "vector_bytes", "src_layout", "dst_layout",
})

#: The decorators of a candidate's functions.
DECORATORS: frozenset[str] = frozenset({"kernel", "device"})


def accepted_imports() -> str:
    """The import lines a candidate may use, for messages and prompts."""
    return ("from argus.dsl import ..., from argus.layout import ..., "
            "from argus.backends.nvptx import language as nv, from argus.backends.amdgpu import language as amd")
