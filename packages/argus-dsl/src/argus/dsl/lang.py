"""The names a kernel is written with.

Kernel bodies are never executed by Python: the front-end reads their syntax tree and
recognises these objects by identity. Outside a kernel, using them raises an error that says
so. Their docstrings are the language reference in short.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .dtypes import DType
from .errors import ArgusSyntaxError


class Builtin:
    """A language function; `name` is how kernels spell it."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ArgusSyntaxError(f"{self.name}() can only be used inside an @kernel function")

    def __repr__(self) -> str:
        return f"argus.dsl.{self.name}"


class IndexSpace:
    """``thread_idx``, ``block_idx``, ``block_dim``, ``grid_dim``: read ``.x``, ``.y`` or ``.z``."""

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.__doc__ = doc

    def __getattr__(self, dim: str) -> Any:
        if dim in ("x", "y", "z"):
            raise ArgusSyntaxError(f"{self.name}.{dim} can only be used inside an @kernel function")
        raise AttributeError(dim)

    def __repr__(self) -> str:
        return f"argus.dsl.{self.name}"


thread_idx = IndexSpace("thread_idx", "The thread's index within its block (i32).")
block_idx = IndexSpace("block_idx", "The block's index within the grid (i32).")
block_dim = IndexSpace("block_dim", "Threads per block along each axis (a compile-time constant).")
grid_dim = IndexSpace("grid_dim", "Blocks in the grid along each axis (i32, known at launch).")

syncthreads = Builtin("syncthreads", "Barrier for all threads of the block; orders shared-memory accesses.")
make_shared = Builtin(
    "make_shared",
    "make_shared(layout, dtype): a shared-memory tile. `layout` is a compile-time Layout, "
    "ComposedLayout (swizzled) or shape tuple (compact, column-major).",
)
make_local = Builtin(
    "make_local",
    "make_local(shape_or_layout, dtype): per-thread registers, uninitialized.",
)
static_range = Builtin(
    "static_range",
    "static_range([start,] stop[, step]): a loop unrolled at compile time; its variable is a "
    "compile-time int in each copy of the body. Bounds must be compile-time constants.",
)
select = Builtin("select", "select(cond, a, b): a where cond holds, else b (per thread).")
exp2 = Builtin("exp2", "2**x for floats.")
log2 = Builtin("log2", "log2(x) for floats.")
rsqrt = Builtin("rsqrt", "1/sqrt(x) for floats.")
sqrt = Builtin("sqrt", "sqrt(x) for floats.")
fma = Builtin("fma", "fma(a, b, c): a*b + c with one rounding.")
rcp = Builtin("rcp", "rcp(x): 1/x for floats.")
exp = Builtin("exp", "exp(x): e**x for floats.")
log = Builtin("log", "log(x): the natural logarithm for floats (-inf at 0, NaN below).")
log1p = Builtin("log1p", "log1p(x): log(1 + x), accurate for small x.")
expm1 = Builtin("expm1", "expm1(x): exp(x) - 1, accurate for small x.")
tanh = Builtin("tanh", "tanh(x) for floats.")
erf = Builtin("erf", "erf(x): the error function for floats (GELU's).")
sin = Builtin("sin", "sin(x) for floats (x in radians).")
cos = Builtin("cos", "cos(x) for floats (x in radians).")
pow = Builtin("pow", "pow(x, y): x**y for floats, as C's pow (a negative x needs a whole y).")  # noqa: A001
abs = Builtin("abs", "abs(x): |x| for floats and integers (a signed integer's minimum stays itself).")  # noqa: A001
floor = Builtin("floor", "floor(x): the float rounded down to a whole number.")
ceil = Builtin("ceil", "ceil(x): the float rounded up to a whole number.")
sigmoid = Builtin("sigmoid", "sigmoid(x): 1 / (1 + exp(-x)) for floats.")

bitcast = Builtin("bitcast", "bitcast(x, dtype): the same bits as another type of the same size.")
concat = Builtin("concat", "concat(a, b, ...): the bytes of a, then b, ... (a lowest) as one wider unsigned or vector value.")
lo = Builtin("lo", "lo(x): the low half of x's bits.")
byte_perm = Builtin(
    "byte_perm",
    "byte_perm(a, b, (i0, i1, ...)): byte k of the result is byte i_k of concat(a, b); the selector is "
    "a compile-time tuple whose length gives the result's size in bytes.",
)
hi = Builtin("hi", "hi(x): the high half of x's bits.")
atomic_add = Builtin("atomic_add", "atomic_add(t[coords], v): add v to one element atomically; returns the old value.")
atomic_max = Builtin("atomic_max", "atomic_max(t[coords], v): atomically keep the larger; returns the old value.")
atomic_min = Builtin("atomic_min", "atomic_min(t[coords], v): atomically keep the smaller; returns the old value.")
atomic_exchange = Builtin("atomic_exchange", "atomic_exchange(t[coords], v): store v atomically; returns the old value.")
copy = Builtin(
    "copy",
    "copy(src, dst, atom): each thread copies its fragment src into dst (tiles of equal size and type) "
    "with a CopyAtom, e.g. copy_vector(16) for 16-byte vectors that must be contiguous and aligned.",
)
partition = Builtin(
    "partition",
    "partition(tile, tv_layout, thread): the elements of `tile` that thread `thread` holds under the "
    "thread/value layout `tv_layout` ((threads, values) -> index of the tile), as a tile of its values.",
)
local_tile = Builtin(
    "local_tile",
    "local_tile(tile, tiler, k): the k-th tile of `tile` divided by `tiler` (zipped_divide), e.g. "
    "local_tile(smem, (16, 8), warp) for one warp's 16x8 block.",
)
tag = Builtin(
    "tag",
    "tag(t, lambda i, j, ...: (...)): attach a tag function to tensor or tile t (one parameter per "
    "mode). In an assertion, tag(t[...]) stands for the tags of all of t's elements: "
    "assert tag(a[...]) == tag(b[...]). Checked at compile time; no runtime effect.",
)
product = Builtin(
    "product",
    "product(a[m], b[n], k): in a tag function, the tag of a matrix product's element: the sum "
    "over the pair tags k (a tuple holding one range, e.g. (range(0, K),)) of operand a's row m times "
    "operand b's row n, as matmul leaves it in its accumulator. Rows are the operands' row parts, "
    "named by the operand: tag(a, lambda m, k: (k,), rows=lambda m, k: (m,)).",
)
sum_of = Builtin(
    "sum_of",
    "sum_of(t1, t2, ...): in a tag function of assert_tags, the tag of an element-wise sum: the "
    "elements tagged t1, t2, ... (each a tuple of components, in any order) added up, e.g. "
    "assert_tags(out, lambda i: sum_of((0, i), (1, i))) where x is tagged (0, i) and y (1, i).",
)
row_max = Builtin(
    "row_max",
    "row_max(x[r], k): in a tag function of assert_tags, the tag of a row maximum: the largest "
    "element of operand x's row r over the pair tags k (a tuple holding one range, e.g. "
    "(range(0, cols),)); x is tagged with rows=, its pair tag the column: "
    "tag(x, lambda r, c: (c,), rows=lambda r, c: (r,)).",
)
row_sum = Builtin(
    "row_sum",
    "row_sum(x[r], k): in a tag function of assert_tags, the tag of a row sum: the elements of "
    "operand x's row r over the pair tags k (a tuple holding one range) added up, as row_max.",
)
softmax_of = Builtin(
    "softmax_of",
    "softmax_of(x[r], (c,), k): in a tag function of assert_tags, the tag of a softmax element: "
    "exp(x[r, c]) over the sum of exp(x[r, j]) for the pair tags j of k (a tuple holding one "
    "range, e.g. (range(0, cols),)), computed as exp2((x - m) * log2(e)) over the sum of the same "
    "terms, m any reduction of the row (its maximum); x is tagged as for row_max.",
)
assert_tags = Builtin(
    "assert_tags",
    "assert_tags(t, lambda i, j, ...: (...)): every element the kernel stores into tensor t carries "
    "the tag the function gives its coordinates, e.g. assert_tags(c, lambda m, n: product(a[m], b[n], "
    "(range(0, K),))). Checked at compile time at each store; no runtime effect.",
)
assert_written = Builtin(
    "assert_written",
    "assert_written(t): the launch writes every element of tensor t (an output with no element left as it "
    "was). Tested when the kernel is verified, on one launch of the interpreter; no runtime effect.",
)
reset_tags = Builtin("reset_tags", "reset_tags(t): forget the tags of shared tile t before reusing its memory.")
assume = Builtin(
    "assume",
    "assume(condition): a fact every launch satisfies, e.g. assume(K % 16 == 0). The checker proves "
    "the tag assertions under it; the interpreter faults a launch that breaks it.",
)
lane_id = Builtin("lane_id", "lane_id(): the thread's lane in its warp (i32).")
warp_id = Builtin("warp_id", "warp_id(): the thread's warp in its block (i32).")
shfl_xor = Builtin("shfl_xor", "shfl_xor(x, mask): x of lane (lane ^ mask); all lanes of the warp must be active.")
shfl_idx = Builtin("shfl_idx", "shfl_idx(x, lane): x of the given lane.")
shfl_down = Builtin("shfl_down", "shfl_down(x, delta): x of lane + delta (own x past the warp's end).")
shfl_up = Builtin("shfl_up", "shfl_up(x, delta): x of lane - delta (own x before the warp's start).")
warp_sum = Builtin("warp_sum", "warp_sum(x): the sum of x over the warp, in every lane (a butterfly of shfl_xor).")
warp_max = Builtin("warp_max", "warp_max(x): the maximum of x over the warp, in every lane.")
warp_min = Builtin("warp_min", "warp_min(x): the minimum of x over the warp, in every lane.")
matmul = Builtin(
    "matmul",
    "matmul(a, b, acc, atom): acc += a·bᵀ by the threads of one atom together; a, b, acc are the "
    "calling thread's fragments (local tiles in the atom's value order).",
)
matmul_async = Builtin(
    "matmul_async",
    "matmul_async(a, b, acc, atom): start acc += a·bᵀ (as matmul) without waiting for it: until a "
    "matmul_wait lets it finish, acc may only be the accumulator of further matmul_async calls and "
    "the operands read from shared memory must not be overwritten.",
)
matmul_wait = Builtin(
    "matmul_wait",
    "matmul_wait(pending): wait until at most `pending` (a compile-time int) of the calling "
    "thread's matmul_async products are still running; the others have finished.",
)



class TensorAnnotation:
    """``Tensor[dtype, dim0, dim1, ...]``: a global tensor, row-major; a dim is an int, the name
    of a constexpr parameter, or a new name for a size known only at launch."""

    def __init__(self, dtype: DType, dims: tuple[Any, ...]) -> None:
        self.dtype = dtype
        self.dims = dims

    def __repr__(self) -> str:
        return f"Tensor[{self.dtype}, {', '.join(map(str, self.dims))}]"


class Tensor:
    """Annotation of a global tensor parameter: ``x: Tensor[f32, "n"]``."""

    def __class_getitem__(cls, item: Any) -> TensorAnnotation:
        items = item if isinstance(item, tuple) else (item,)
        if not items or not isinstance(items[0], DType):
            raise ArgusSyntaxError("write a tensor annotation as Tensor[dtype, dim0, dim1, ...]")
        return TensorAnnotation(items[0], tuple(items[1:]))


class constexpr:  # noqa: N801 - spelled like a type annotation, as in Triton
    """Annotation of a compile-time constant parameter: ``BLOCK: constexpr``. Kernels are
    specialized (and cached) per value."""


class DeviceFunction:
    """A helper inlined into the kernels that call it (``@device``). It follows the language's
    rules, takes values, tiles or compile-time values as arguments, and returns once, at its end."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.name = fn.__name__
        self._source: Any = None

    @property
    def source(self) -> Any:
        """The helper's syntax tree and module (a frontend KernelSource), read once."""
        if self._source is None:
            from .frontend.values import KernelSource

            self._source = KernelSource.of(self.fn, ())
        return self._source

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise ArgusSyntaxError(f"{self.name}() is a device function: call it from inside an @kernel function")

    def __repr__(self) -> str:
        return f"<argus device function {self.name}>"


def device(fn: Callable[..., Any]) -> DeviceFunction:
    """Declare a helper for kernels: ``@device``; it is inlined where it is called."""
    if not inspect.isfunction(fn):
        raise ArgusSyntaxError(f"@device declares a function written with def, not {type(fn).__name__} {fn!r}")
    return DeviceFunction(fn)


def is_builtin(value: Any) -> bool:
    return isinstance(value, (Builtin, IndexSpace))

