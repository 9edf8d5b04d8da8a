"""What a candidate kernel may name: the language's own names and nothing else.

The DSL front-end evaluates at compile time any Python callable a kernel can reach (that is how
layouts and atoms fold), so a kernel that names ``open`` or ``__import__`` would run it. A
candidate from a planner is therefore checked against these lists before anything reads it:
imports only from the modules below, only the language's names, no dunder or private
attributes, and only the attributes the language uses.

Module constants are computed by the loader's evaluator (`constants`), which goes further: it
calls only the functions listed in `CONSTANT_FUNCTIONS`, reads only the attributes listed per
type in `VALUE_ATTRIBUTES` and `METHODS`, and keeps only values of `VALUE_TYPES` (and plain data).
"""

from __future__ import annotations

import builtins
import functools
import importlib
import math
import types
from typing import Any

import argus.dsl as _dsl
import argus.layout as _layout
from argus.dsl.atoms import CopyAtom, MMAAtom
from argus.dsl.dtypes import DType
from argus.layout import ArithmeticTuple, ComposedLayout, Layout, ScaledBasis, Swizzle

#: Names of `argus.dsl` that belong to the language (errors, problems and host helpers do not).
#: Nor do the classes of its element types and atoms: a candidate uses the named ones (f32,
#: ``warp_mma_16x8x16(...)``, ``nv.LDMATRIX_X4``). A ``DType('f32', 16, ...)`` is 2 bytes to some
#: checks and 4 in the IR; an atom of a candidate's own making is one more description that the
#: checker, the interpreter and every backend must read alike (the backends refuse an atom that
#: bears a registered name with another description; refusing them here keeps that surface shut).
_NOT_LANGUAGE = {
    "ArgusError", "ArgusLaunchError", "ArgusSyntaxError", "ArgusTypeError", "ArgusVerificationWarning",
    "CodegenError", "CompiledKernel", "TagAssertionError", "VerificationError", "Kernel", "KernelFault",
    "Problem", "SourceLocation", "from_storage", "to_storage", "DeviceFunction", "DType", "CopyAtom", "MMAAtom",
}
DSL_NAMES: frozenset[str] = frozenset(n for n in _dsl.__all__ if n not in _NOT_LANGUAGE)

#: Layout algebra a kernel may fold at compile time (drawing to files is not part of it).
LAYOUT_NAMES: frozenset[str] = frozenset(n for n in _layout.__all__
                                         if n not in {"save_svg", "to_svg", "LayoutError", "LayoutParseError"})

#: What ``math`` offers kernels: functions and constants of compile-time arithmetic.
MATH_NAMES: frozenset[str] = frozenset({"log2", "log", "exp", "exp2", "sqrt", "pi", "e", "inf", "ceil", "floor",
                                        "gcd", "lcm", "isqrt"})

#: Modules whose names a candidate may import, with the names accepted (None: the module's own
#: ``__all__``, read by `offered` when a candidate imports it).
MODULES: dict[str, frozenset[str] | None] = {
    "argus.dsl": DSL_NAMES,
    "argus.layout": LAYOUT_NAMES,
    "argus.backends.nvptx.language": None,
    "argus.backends.amdgpu.language": None,
    "math": MATH_NAMES,
}

#: Modules a candidate may import whole, under a name (``import math``, ``... import language as nv``).
WHOLE_MODULES: frozenset[str] = frozenset({"argus.backends.nvptx.language", "argus.backends.amdgpu.language", "math"})

#: Python builtins the language gives a meaning to (loops, compile-time arithmetic, conversions).
BUILTINS: frozenset[str] = frozenset({"range", "min", "max", "abs", "len", "int", "float", "bool", "tuple",
                                      "divmod", "round", "True", "False", "None"})

#: Every other builtin name is refused wherever it appears.
FORBIDDEN_BUILTINS: frozenset[str] = frozenset(n for n in dir(builtins) if n not in BUILTINS)

#: Attributes the language reads in kernels: index axes, tensor shapes and views, atom layouts
#: and sizes, dtype sizes, layout properties.
ATTRIBUTES: frozenset[str] = frozenset({
    "x", "y", "z", "view", "shape", "stride", "a_layout", "b_layout", "c_layout", "values", "shared_shape",
    "threads", "nbytes", "bits", "bit_length", "size", "cosize", "rank", "depth", "layout", "swizzle", "offset",
    "vector_bytes", "src_layout", "dst_layout",
})

#: The decorators of a candidate's functions.
DECORATORS: frozenset[str] = frozenset({"kernel", "device"})

#: The options ``@kernel(...)`` takes from a candidate (``verify`` is the harness's, not its).
KERNEL_OPTIONS: frozenset[str] = frozenset({"block", "warp_size", "min_blocks_per_sm", "max_registers", "cluster"})

#: The functions a module constant may call, by module: the language's constructors and pure
#: compile-time functions. Kernel operations (loads, copies, barriers, tags) are not among them:
#: they mean something only inside a kernel.
CONSTANT_FUNCTIONS: dict[str, frozenset[str]] = {
    "argus.dsl": frozenset({
        "copy_vector", "universal_fma", "warp_mma_16x8x16", "warp_mma_16x8x32",
        "warpgroup_mma_64xNx16", "warpgroup_mma_64xNx32", "wave_mma_16x16x16", "wave_mma_16x16x32",
        "wave_mma_32x32x16", "wave_mma_32x32x8",
    }),
    "argus.layout": frozenset({
        "ComposedLayout", "E", "Layout", "ScaledBasis", "Swizzle", "blocked_product", "ceil_div", "coalesce",
        "compact_col_major", "compact_row_major", "complement", "composition", "congruent", "cosize", "crd2idx",
        "depth", "downcast", "filter", "filter_zeros", "flat_divide", "flat_product", "flatten", "idx2crd",
        "inner_product", "left_inverse", "logical_divide", "logical_product", "make_composed_layout",
        "make_identity_layout", "make_layout", "make_layout_like", "make_ordered_layout", "max_common_layout",
        "max_common_vector", "parse", "parse_int_tuple", "prefix_product", "product", "raked_product", "rank",
        "right_inverse", "same_function", "shape_div", "size", "slice_and_offset", "tile_to_shape",
        "tiled_divide", "tiled_product", "upcast", "zipped_divide", "zipped_product",
    }),
    "math": frozenset({"log2", "log", "exp", "exp2", "sqrt", "ceil", "floor", "gcd", "lcm", "isqrt"}),
    "builtins": BUILTINS - {"True", "False", "None"},
}

#: The classes whose instances are values of the language: a constant may hold them, the
#: evaluator reads their attributes (below) and kernels receive them.
VALUE_TYPES: tuple[type, ...] = (DType, Layout, ComposedLayout, Swizzle, ScaledBasis, ArithmeticTuple, MMAAtom,
                                 CopyAtom)

#: The data attributes a constant may read, per type of value.
VALUE_ATTRIBUTES: dict[type, frozenset[str]] = {
    DType: frozenset({"name", "bits", "nbytes", "kind", "is_float", "is_integer"}),
    Layout: frozenset({"shape", "stride", "rank", "depth"}),
    ComposedLayout: frozenset({"shape", "rank", "depth", "outer", "offset", "inner"}),
    Swizzle: frozenset({"bits", "base", "shift"}),
    MMAAtom: frozenset({"name", "shape", "threads", "a_layout", "b_layout", "c_layout", "a_dtype", "b_dtype",
                        "c_dtype"}),
    CopyAtom: frozenset({"name", "vector_bytes", "threads", "src_layout", "dst_layout"}),
}

#: The methods a constant may call, per type of value (``(BK * 2).bit_length()``, ``L.size()``).
METHODS: dict[type, frozenset[str]] = {
    int: frozenset({"bit_length"}),
    Layout: frozenset({"size", "cosize"}),
    ComposedLayout: frozenset({"size", "cosize"}),
    Swizzle: frozenset({"size", "cosize"}),
    MMAAtom: frozenset({"values", "shared_shape"}),
}

#: Every attribute name a constant may read, whatever it reads it on.
CONSTANT_ATTRIBUTES: frozenset[str] = frozenset().union(*VALUE_ATTRIBUTES.values(), *METHODS.values())


@functools.cache
def offered(module: str) -> frozenset[str] | None:
    """The names `module` offers kernels, or None when it is not a language module or cannot
    be imported here (a backend that is not installed)."""
    if module not in MODULES:
        return None
    names = MODULES[module]
    if names is not None:
        return names
    try:
        loaded = importlib.import_module(module)
    except ImportError:
        return None
    return frozenset(n for n in getattr(loaded, "__all__", ()) if not n.startswith("_") and hasattr(loaded, n))


def language_object(module: str, name: str) -> Any:
    """The object `module` offers kernels under `name` (`offered` must list it)."""
    return getattr(math if module == "math" else importlib.import_module(module), name)


class ModuleView(types.SimpleNamespace):
    """A language module as a candidate sees it: the names it offers kernels and nothing else
    (its own imports, helpers and dunders stay out of reach)."""


def module_view(module: str) -> ModuleView:
    """The view of `module` (a `WHOLE_MODULES` name) a candidate's ``nv.NAME`` reads."""
    names = offered(module) or frozenset()
    return ModuleView(**{n: language_object(module, n) for n in sorted(names)})


def is_language_value(value: Any) -> bool:
    """Whether `value` is a value of the language (a dtype, layout, swizzle, atom), as opposed to
    one of its functions, classes or markers."""
    return type(value) in VALUE_TYPES


def is_language_routine(value: Any) -> bool:
    """Whether `value` is one of the language's classes or Python functions (its constructors
    and compile-time functions, the builtins it offers), which code calls, as opposed to a value
    or a kernel operation."""
    return isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType))


def accepted_imports() -> str:
    """The import lines a candidate may use, for messages and prompts."""
    return ("from argus.dsl import ..., from argus.layout import ..., "
            "from argus.backends.nvptx import language as nv, from argus.backends.amdgpu import language as amd")
