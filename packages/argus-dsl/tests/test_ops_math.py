"""The math family (`argus.dsl.ops.math`): each function's meaning on the interpreter against
numpy in double precision, within the ulp bounds docs/language.md gives; the GPU forms (the f32
compositions both backends emit) run on this machine's CPU with exact primitives, within their
documented composition bounds and with C's special cases; every function compiles for NVIDIA
(PTX) and AMD (assembly) in f32, f16 and bf16 (an LLVM abort would kill the process, with no
line); f64 is refused at its line where neither GPU can compute it; bad calls are refused at
their line."""

from __future__ import annotations

import ctypes
import inspect
import math as pymath
from typing import Any

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    CodegenError,
    Tensor,
    abs,
    bf16,
    block_idx,
    ceil,
    constexpr,
    cos,
    erf,
    exp,
    expm1,
    f16,
    f32,
    f64,
    floor,
    from_storage,
    i32,
    kernel,
    log,
    log1p,
    pow,
    sigmoid,
    sin,
    tanh,
    thread_idx,
    to_storage,
    u32,
)
from argus.dsl.backends import backend_for, parse_target
from argus.dsl.frontend.calls import BUILDERS
from argus.dsl.ir.dialect import parse_module
from argus.dsl.ir.registry import meaning
from argus.dsl.ops import math as M
from xdsl.dialects import math

#: The functions of one operand, in the order the kernels below compute them (row k of `out`).
NAMES = ("exp", "log", "log1p", "expm1", "tanh", "erf", "sin", "cos", "abs", "floor", "ceil", "sigmoid")
_erf = np.vectorize(pymath.erf, otypes=[np.float64])
REFERENCE = {"exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "tanh": np.tanh, "erf": _erf,
             "sin": np.sin, "cos": np.cos, "abs": np.abs, "floor": np.floor, "ceil": np.ceil,
             "sigmoid": lambda x: 1 / (1 + np.exp(-x))}
#: The interpreter's bound in f32 ulps (docs/language.md): each function is computed in double
#: precision and rounded once (0.5 ulp, 1 allowing for numpy's double-precision error); sigmoid
#: is exp, an addition and a division, each rounded to the value's type.
INTERPRETER_ULP = {**dict.fromkeys(NAMES, 1.0), "sigmoid": 2.0}
#: The GPU forms with exact primitives (exp2, sine, cosine), in f32 ulps, or an absolute error
#: where it is larger (docs/language.md): what the composition itself loses.
COMPOSITION = {"exp": (1.0, 0.0), "log": (2.0, 0.0), "log1p": (3.0, 0.0), "expm1": (3.0, 0.0), "tanh": (4.0, 0.0),
               "erf": (3.0, 2e-7), "sin": (1.0, 2e-7), "cos": (1.0, 2e-7)}

N = 1024


@kernel(block=(256,))
def unary_f32(x: Tensor[f32, N], out: Tensor[f32, 12, N]):
    i = block_idx.x * 256 + thread_idx.x
    a = x[i]
    out[0, i] = exp(a)
    out[1, i] = log(a)
    out[2, i] = log1p(a)
    out[3, i] = expm1(a)
    out[4, i] = tanh(a)
    out[5, i] = erf(a)
    out[6, i] = sin(a)
    out[7, i] = cos(a)
    out[8, i] = abs(a)
    out[9, i] = floor(a)
    out[10, i] = ceil(a)
    out[11, i] = sigmoid(a)


def _inputs() -> np.ndarray:
    """Edge cases (signed zeros, infinities, NaN, subnormals, the ends of exp's range, near 1),
    then random values of every magnitude and a dense stretch of [-10, 10]."""
    edges = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, 1.1754944e-38, 3.4028235e38, -3.4028235e38,
             1.0, -1.0, 0.5, -0.5, 88.72, 88.73, -87.3, -103.9, -104.0, 1 + 2 ** -23, 1 - 2 ** -24, -1 + 2 ** -24,
             1e-8, -1e-8, 4.0, -4.0, 9.9, 10.5, 2.5, -2.5, np.pi, 3.0, -3.0]
    rng = np.random.default_rng(35)
    magnitudes = 10.0 ** rng.uniform(-38, 38, 400) * rng.choice([-1.0, 1.0], 400)
    dense = rng.uniform(-10, 10, N - len(edges) - 400)
    return np.concatenate([edges, magnitudes, dense]).astype(np.float32)


def ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in ulps of f32 at the exact value (subnormal spacing below)."""
    with np.errstate(over="ignore"):
        spacing = np.maximum(np.spacing(np.abs(exact.astype(np.float32))).astype(np.float64), 2.0 ** -149)
    return np.abs(got.astype(np.float64) - exact) / spacing


def assert_within(name: str, x: np.ndarray, got: np.ndarray, exact: np.ndarray, ulp: float, absolute: float = 0.0
                  ) -> None:
    """`got` is `exact` (double precision) within `ulp` ulps or `absolute`; where the exact value
    is NaN, infinite or outside f32, `got` is that value rounded to f32 (sign of zero included)."""
    with np.errstate(over="ignore"):  # past f32: infinity, as the functions give
        exact32 = exact.astype(np.float32)
    special = ~np.isfinite(exact32) | (exact32 == 0)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(exact32), err_msg=f"{name}: NaN where numpy has none")
    same = special & ~np.isnan(exact32)
    assert np.array_equal(got[same], exact32[same]) and np.array_equal(np.signbit(got[same]),
                                                                       np.signbit(exact32[same])), \
        f"{name}: {list(zip(x[same], got[same], exact32[same]))}"
    finite = ~special
    error = ulps(got[finite], exact[finite])
    bad = (error > ulp) & (np.abs(got[finite] - exact[finite]) > absolute)
    assert not bad.any(), f"{name}: x={x[finite][bad][:5]} gives {got[finite][bad][:5]}, exact {exact[finite][bad][:5]}" \
                          f" ({error[bad][:5]} ulps)"


# ---- the family -----------------------------------------------------------------------------

OPS = (math.ExpOp, math.LogOp, math.Log1pOp, math.ExpM1Op, math.TanhOp, math.ErfOp, math.SinOp, math.CosOp,
       math.PowFOp, math.AbsFOp, math.FloorOp, math.CeilOp)


@pytest.mark.parametrize("op_type", OPS, ids=lambda t: t.__name__)
def test_each_op_is_declared_once_as_computed_data(op_type):
    m = meaning(op_type)
    assert m is not None
    assert m.interpret is not None and m.translate is not None
    assert m.analyze is None and m.shadow is None  # float results: the checker's computed data


@pytest.mark.parametrize("name", [*M.UNARY, "abs", "pow", "sigmoid"])
def test_each_builtin_is_built_by_the_family(name):
    assert BUILDERS[name].__module__ == "argus.dsl.ops.math"


# ---- the interpreter ----------------------------------------------------------------------

def test_each_function_on_the_interpreter_is_numpys_in_double_precision_rounded():
    x = _inputs()
    out = np.zeros((12, N), np.float32)
    unary_f32[4](x, out)
    with np.errstate(all="ignore"):
        for k, name in enumerate(NAMES):
            assert_within(name, x, out[k], REFERENCE[name](x.astype(np.float64)), INTERPRETER_ULP[name])


@kernel(block=(64,))
def narrow(x: Tensor[f16, 64], y: Tensor[bf16, 64], out: Tensor[f16, 64], wide: Tensor[bf16, 64]):
    t = thread_idx.x
    out[t] = tanh(x[t]) + exp(x[t])
    wide[t] = erf(y[t]) * log1p(y[t])


def test_f16_and_bf16_compute_in_double_precision_rounded_to_their_type():
    x = np.linspace(-3, 3, 64).astype(np.float16)
    y = np.linspace(0.01, 6, 64).astype(np.float32)
    out = np.zeros(64, np.float16)
    wide = to_storage(np.zeros(64), bf16)
    narrow[1](x, to_storage(y, bf16), out, wide)
    xd = x.astype(np.float64)
    t, e = (f16.round(v) for v in (np.tanh(xd), np.exp(xd)))
    np.testing.assert_array_equal(out, (t.astype(np.float64) + e).astype(np.float16))
    yb = from_storage(to_storage(y, bf16), bf16).astype(np.float64)
    np.testing.assert_array_equal(from_storage(wide, bf16),
                                  bf16.round(bf16.round(_erf(yb)).astype(np.float64) * bf16.round(np.log1p(yb))))


@kernel(block=(256,))
def powers(x: Tensor[f32, 1024], y: Tensor[f32, 1024], out: Tensor[f32, 1024]):
    i = block_idx.x * 256 + thread_idx.x
    out[i] = pow(x[i], y[i])


SPECIAL = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, np.inf, -np.inf, np.nan, 1e-40, 2.5, -7.0]


def _pow_inputs() -> tuple[np.ndarray, np.ndarray]:
    """Every pair of special values (C's pow decides each), then positive bases with any exponent
    and negative bases with whole exponents."""
    rng = np.random.default_rng(7)
    pairs = [(a, b) for a in SPECIAL for b in SPECIAL]
    rest = 1024 - len(pairs)
    x = np.concatenate([[a for a, _ in pairs], rng.uniform(0, 10, rest // 2), -rng.integers(1, 5, rest - rest // 2)])
    y = np.concatenate([[b for _, b in pairs], rng.uniform(-10, 10, rest // 2), rng.integers(-6, 7, rest - rest // 2)])
    return x.astype(np.float32), y.astype(np.float32)


def test_pow_on_the_interpreter_is_cs_pow_rounded():
    x, y = _pow_inputs()
    out = np.zeros(1024, np.float32)
    powers[4](x, y, out)
    with np.errstate(all="ignore"):
        assert_within("pow", x, out, np.power(x.astype(np.float64), y.astype(np.float64)), 1.0)


@kernel(block=(32,))
def magnitudes(a: Tensor[i32, 32], u: Tensor[u32, 32], out: Tensor[i32, 32], uout: Tensor[u32, 32],
               c: Tensor[f32, 32]):
    t = thread_idx.x
    out[t] = abs(a[t])
    uout[t] = abs(u[t])
    c[t] = pow(2.0, 3) + abs(-5)  # compile-time numbers: Python's


def test_abs_of_integers_wraps_and_compile_time_calls_are_pythons():
    a = np.array([0, 1, -1, 7, -7, 2 ** 31 - 1, -2 ** 31] + list(range(-12, 13)), np.int32)
    u = np.arange(32, dtype=np.uint32) * np.uint32(0x0800_0001)
    out, uout, c = np.zeros(32, np.int32), np.zeros(32, np.uint32), np.zeros(32, np.float32)
    magnitudes[1](a, u, out, uout, c)
    np.testing.assert_array_equal(out, np.abs(a))  # numpy wraps too: abs(-2**31) is -2**31
    assert out[6] == -2 ** 31
    np.testing.assert_array_equal(uout, u)
    np.testing.assert_array_equal(c, 13.0)


def test_printed_ir_parses_back():
    compiled = unary_f32.compile()
    text = compiled.mlir()
    for op in ("math.exp", "math.log1p", "math.expm1", "math.tanh", "math.erf", "math.sin", "math.absf"):
        assert op in text, op
    assert parse_module(text).is_structurally_equivalent(compiled.module)


# ---- the GPU forms, run on this machine's CPU ---------------------------------------------

class _HostText:
    """Collects what a composition emits (the `argus.dsl.llvm.Translator` helpers it uses)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.declarations: set[str] = set()
        self.counter = 0

    def fresh(self, hint: str = "v") -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def let(self, text: str, hint: str = "v") -> str:
        out = self.fresh(hint)
        self.lines.append(f"  {out} = {text}")
        return out

    def declare(self, text: str) -> None:
        self.declarations.add(f"declare {text}")

    def call(self, ret: str, name: str, args: list[tuple[str, str]], hint: str = "v") -> str:
        self.declare(f"{ret} @{name}({', '.join(t for t, _ in args)})")
        return self.let(f"call {ret} @{name}({', '.join(f'{t} {v}' for t, v in args)})", hint)


def host_function(form: Any, arity: int) -> tuple[Any, Any]:
    """The composition as a native f32 function (its engine, which must outlive it, and it)."""
    llvm = pytest.importorskip("llvmlite.binding")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    text = _HostText()
    params = [f"%a{i}" for i in range(arity)]
    result = form(M._F32(text), *params)  # type: ignore[arg-type]
    source = "\n".join(sorted(text.declarations)) + (
        f"\ndefine float @f({', '.join('float ' + p for p in params)}) {{\n" + "\n".join(text.lines)
        + f"\n  ret float {result}\n}}\n")
    module = llvm.parse_assembly(source)
    module.verify()
    engine = llvm.create_mcjit_compiler(module, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    signature = ctypes.CFUNCTYPE(ctypes.c_float, *[ctypes.c_float] * arity)
    return engine, signature(engine.get_function_address("f"))


@pytest.mark.parametrize("name", list(COMPOSITION))
def test_each_gpu_form_with_exact_primitives_is_within_its_composition_bound(name):
    op_type = M.UNARY[name][0]
    engine, fn = host_function(M._FORMS[op_type][1], 1)
    x = _inputs()
    if name in ("sin", "cos"):  # the reduction to [-pi, pi] is documented for |x| up to 10^4
        x = x[np.isnan(x) | np.isinf(x) | (np.abs(x) <= 1e4)]
    got = np.array([fn(float(v)) for v in x], np.float32)
    with np.errstate(all="ignore"):
        assert_within(name, x, got, REFERENCE[name](x.astype(np.float64)), *COMPOSITION[name])


def test_the_gpu_pow_has_cs_special_cases_and_its_bound():
    engine, fn = host_function(M._pow, 2)
    x, y = _pow_inputs()
    got = np.array([fn(float(a), float(b)) for a, b in zip(x, y)], np.float32)
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64))
        scale = np.nan_to_num(np.abs(y.astype(np.float64) * np.log(np.abs(x.astype(np.float64)))))
    for k in range(len(x)):  # 2 + |y ln|x|| ulps (docs/language.md)
        assert_within("pow", x[k:k + 1], got[k:k + 1], exact[k:k + 1], 2.0 + scale[k])


# ---- both GPU targets -----------------------------------------------------------------------

@kernel(block=(32,), verify=False)
def every_function(x: Tensor["T", 32], y: Tensor["T", 32], out: Tensor["T", 32], T: constexpr):
    i = thread_idx.x
    a = x[i]
    out[i] = (exp(a) + log(a) + log1p(a) + expm1(a) + tanh(a) + erf(a) + sin(a) + cos(a) + pow(a, y[i])
              + abs(a) + floor(a) + ceil(a) + sigmoid(a))


TARGETS = {"nvptx:sm_90a": "ptx", "amdgpu:gfx942": "asm"}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("dtype", [f32, f16, bf16], ids=str)
def test_every_function_compiles_for_both_gpus_in_each_float_type(target, dtype):
    t = parse_target(target)
    code = backend_for(t).compiler(t).emit(every_function.specialize(T=dtype), TARGETS[target])
    if target.startswith("nvptx"):  # the hardware's exp2 and sine, no library call
        assert "ex2.approx" in code and "sin.approx.f32" in code and "cos.approx.f32" in code
        assert "call.uni" not in code and "lg2" not in code
    else:
        assert "v_exp_f32" in code and "v_sin_f32" in code and "v_cos_f32" in code


@kernel(block=(32,), verify=False)
def whole_f64(x: Tensor[f64, 32]):
    x[thread_idx.x] = floor(x[thread_idx.x]) + ceil(x[thread_idx.x]) + abs(x[thread_idx.x])


@pytest.mark.parametrize("target", list(TARGETS))
def test_abs_floor_and_ceil_of_f64_compile_for_both_gpus(target):
    t = parse_target(target)
    code = backend_for(t).compiler(t).emit(whole_f64.specialize(), TARGETS[target])
    assert ("cvt.rmi.f64.f64" in code and "cvt.rpi.f64.f64" in code) if target.startswith("nvptx") \
        else ("v_floor_f64" in code and "v_ceil_f64" in code)


def _f64_kernel(fn: Any) -> Any:
    binary = fn is pow

    @kernel(block=(32,), verify=False)
    def one_f64(x: Tensor[f64, 32]):
        x[thread_idx.x] = fn(x[thread_idx.x], x[thread_idx.x]) if binary else fn(x[thread_idx.x])

    return one_f64


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("fn", [exp, log, log1p, expm1, tanh, erf, sin, cos, sigmoid, pow],
                         ids=["exp", "log", "log1p", "expm1", "tanh", "erf", "sin", "cos", "sigmoid", "pow"])
def test_an_f64_transcendental_is_refused_at_its_line_on_both_gpus(target, fn):
    k = _f64_kernel(fn)
    t = parse_target(target)
    with pytest.raises(CodegenError, match="of an f64 value .*convert to f32") as info:
        backend_for(t).compiler(t).emit(k.specialize(), TARGETS[target])
    lines, first = inspect.getsourcelines(k.fn)
    assert info.value.location is not None
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if "fn(x[" in s)


# ---- bad calls ------------------------------------------------------------------------------

def _refused(build: Any, message: str) -> None:
    k = build()
    with pytest.raises(ArgusTypeError, match=message) as info:
        k.compile()
    lines, first = inspect.getsourcelines(k.fn)
    assert info.value.location is not None
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if "out[" in s)


def test_an_integer_argument_is_refused_at_its_line():
    def build() -> Any:
        @kernel(block=(32,))
        def int_exp(out: Tensor[f32, 32]):
            out[thread_idx.x] = exp(thread_idx.x)

        return int_exp

    _refused(build, r"exp takes a float, got i32; convert it")


def test_a_wrong_number_of_arguments_is_refused_at_its_line():
    def one() -> Any:
        @kernel(block=(32,))
        def two_args(x: Tensor[f32, 32], out: Tensor[f32, 32]):
            out[thread_idx.x] = tanh(x[thread_idx.x], x[thread_idx.x])

        return two_args

    def two() -> Any:
        @kernel(block=(32,))
        def one_arg(x: Tensor[f32, 32], out: Tensor[f32, 32]):
            out[thread_idx.x] = pow(x[thread_idx.x])

        return one_arg

    _refused(one, r"tanh\(x\) takes one argument, got 2")
    _refused(two, r"pow\(x, y\) takes two arguments, got 1")


def test_pow_of_integers_and_mixed_types_are_refused_at_their_line():
    def ints() -> Any:
        @kernel(block=(32,))
        def int_pow(out: Tensor[i32, 32]):
            out[thread_idx.x] = pow(thread_idx.x, 2)

        return int_pow

    def mixed() -> Any:
        @kernel(block=(32,))
        def mixed_pow(x: Tensor[f32, 32], h: Tensor[f16, 32], out: Tensor[f32, 32]):
            out[thread_idx.x] = pow(x[thread_idx.x], h[thread_idx.x])

        return mixed_pow

    _refused(ints, r"pow takes floats, got i32")
    _refused(mixed, r"different types|f16")
