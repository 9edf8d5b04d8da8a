"""Integer semantics are defined once (argus.dsl.ops.integers) and every consumer agrees with it:
the interpreter, the shadow interpreter's tag functions, the checker's evaluation of numbers,
launch conditions and the LLVM lowering (run on this CPU)."""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest
from xdsl.dialects import arith, builtin
from xdsl.ir import Block, Operation
from xdsl.rewriter import Rewriter

from argus.dsl import KernelFault, Tensor, i32, kernel, make_local, tag, thread_idx
from argus.dsl.assumptions import LaunchCondition
from argus.dsl.check import arithmetic, tag_liveness
from argus.dsl.llvm import translate as llvm
from argus.dsl.machine.interpreter import Frame, Interpreter
from argus.dsl.ops.integers import INTEGER_CASTS, INTEGER_OPS, compare, held
from argus.dsl.machine.shadow import check_launch
from argus.dsl.check.verification import verify_kernel
from argus.verify import Verdict
from argus.verify.affine import Affine, Space

WIDTHS = (32, 64)
TYPES = {32: builtin.i32, 64: builtin.i64}
C_TYPES = {32: ctypes.c_int32, 64: ctypes.c_int64}


def edge_values(bits: int) -> list[int]:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return [0, 1, -1, 2, -2, 3, -3, 7, -7, low, low + 1, high, high - 1, bits - 1, bits, bits + 1, -bits]


def operand_pairs(bits: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values, every shift count 0 … width + 1, and random pairs."""
    edges = edge_values(bits)
    a = [x for x in edges for _ in edges] + [x for x in edges for _ in range(bits + 2)]
    b = [y for _ in edges for y in edges] + [s for _ in edges for s in range(bits + 2)]
    rng = np.random.default_rng(seed)
    kind = np.int32 if bits == 32 else np.int64
    info = np.iinfo(kind)
    random_a = rng.integers(info.min, info.max, 300, dtype=kind, endpoint=True)
    random_b = np.concatenate([rng.integers(info.min, info.max, 150, dtype=kind, endpoint=True),
                               rng.integers(-40, 40, 150, dtype=kind)])
    return (np.concatenate([np.array(a, kind), random_a]), np.concatenate([np.array(b, kind), random_b]))


def binary_op(cls: type, bits: int) -> tuple[Operation, Block]:
    block = Block(arg_types=[TYPES[bits], TYPES[bits]])
    op = cls(block.args[0], block.args[1])
    block.add_op(op)
    return op, block


@kernel(block=(32,), verify=False)
def _host(x: Tensor[i32, 32]):
    x[thread_idx.x] = x[thread_idx.x]


def interpret(op: Operation, values: dict[Any, np.ndarray], mask: np.ndarray) -> np.ndarray:
    """One op run by the interpreter for as many threads as there are values."""
    n = mask.size
    interp = Interpreter(_host.specialize().op)
    frame = Frame(dict(values), n, np.arange(n), (0, 0, 0), n)
    interp.run_op(op, frame, mask)
    return frame.values[op.results[0]]


# ---- the table itself ---------------------------------------------------------------------------

def test_signed_division_truncates_floor_division_floors_and_remainders_follow_the_dividend():
    ops = {name: INTEGER_OPS[cls] for name, cls in (("div", arith.DivSIOp), ("floor", arith.FloorDivSIOp),
                                                    ("rem", arith.RemSIOp), ("udiv", arith.DivUIOp))}
    a, b = np.array([-7, 7, -7, 7], np.int32), np.array([2, -2, -2, 2], np.int32)
    assert ops["div"](a, b, 32).tolist() == [-3, -3, 3, 3]
    assert ops["floor"](a, b, 32).tolist() == [-4, -4, 3, 3]
    assert ops["rem"](a, b, 32).tolist() == [-1, 1, -1, 1]
    assert ops["udiv"](np.int32(-2), np.int32(2), 32) == 2**31 - 1  # the same bits read unsigned


def test_wrapping_and_the_undefined_cases():
    add = INTEGER_OPS[arith.AddiOp]
    assert add(np.int32(2**31 - 1), np.int32(1), 32) == -(2**31)
    assert add(np.int64(2**63 - 1), np.int64(1), 64) == -(2**63)
    div = INTEGER_OPS[arith.DivSIOp]
    assert div.undefined(np.array([-(2**31), 5, -(2**31)]), np.array([-1, 0, 1]), 32).tolist() == [True, True, False]
    shl = INTEGER_OPS[arith.ShLIOp]
    assert shl.undefined(np.int32(1), np.array([-1, 0, 31, 32]), 32).tolist() == [True, False, False, True]
    assert not INTEGER_OPS[arith.DivUIOp].undefined(np.int32(-(2**31)), np.int32(-1), 32)
    assert compare(6, -1, 5, 32) == np.False_ and compare(2, -1, 5, 32) == np.True_  # ult reads -1 as 2^32 - 1


# ---- the interpreter ------------------------------------------------------------------------------

@pytest.mark.parametrize("bits", WIDTHS)
@pytest.mark.parametrize("cls", list(INTEGER_OPS), ids=lambda c: INTEGER_OPS[c].name)
def test_the_interpreter_computes_what_the_table_defines_and_faults_where_it_is_undefined(cls: type, bits: int):
    kind = INTEGER_OPS[cls]
    a, b = operand_pairs(bits)
    op, block = binary_op(cls, bits)
    undefined = kind.undefined(a, b, bits)
    got = interpret(op, {block.args[0]: a, block.args[1]: b}, ~undefined)
    expected = kind(a, b, bits)
    assert got.dtype == expected.dtype
    np.testing.assert_array_equal(got[~undefined], expected[~undefined])
    for thread in np.flatnonzero(undefined)[:6]:
        mask = np.zeros(a.size, bool)
        mask[thread] = True
        with pytest.raises(KernelFault, match=f"undefined-arithmetic: thread {thread} "):
            interpret(op, {block.args[0]: a, block.args[1]: b}, mask)


def test_the_interpreter_faults_on_the_most_negative_value_divided_by_minus_one():
    op, block = binary_op(arith.FloorDivSIOp, 32)
    a, b = np.array([-(2**31), 6], np.int32), np.array([-1, -1], np.int32)
    with pytest.raises(KernelFault, match="thread 0 divides -2147483648 by -1"):
        interpret(op, {block.args[0]: a, block.args[1]: b}, np.ones(2, bool))


CAST_CASES = [  # (op, source type, target type)
    (arith.TruncIOp, builtin.i64, builtin.i32), (arith.ExtSIOp, builtin.i32, builtin.i64),
    (arith.ExtUIOp, builtin.i32, builtin.i64), (arith.ExtSIOp, builtin.i1, builtin.i32),
    (arith.ExtUIOp, builtin.i1, builtin.i32), (arith.TruncIOp, builtin.i32, builtin.i8),
    (arith.FPToSIOp, builtin.f32, builtin.i32), (arith.FPToUIOp, builtin.f32, builtin.i32),
    (arith.FPToSIOp, builtin.f64, builtin.i64), (arith.FPToUIOp, builtin.f64, builtin.i64),
    (arith.SIToFPOp, builtin.i32, builtin.f32), (arith.UIToFPOp, builtin.i32, builtin.f32),
    (arith.SIToFPOp, builtin.i64, builtin.f64), (arith.UIToFPOp, builtin.i64, builtin.f64),
    (arith.SIToFPOp, builtin.i64, builtin.f32),
]


def cast_sources(t: Any) -> np.ndarray:
    if t == builtin.i1:
        return np.array([False, True])
    if isinstance(t, builtin.IntegerType):
        bits = t.width.data
        return np.array(edge_values(bits) + [(1 << (bits - 2)) + 1, 123456789 % (1 << (bits - 1))],
                        np.int32 if bits == 32 else np.int64)
    kind = np.float32 if t == builtin.f32 else np.float64
    return np.array([0.0, -0.0, 0.5, -0.5, 1.9, -1.9, -1.0, 2.0**31, 2.0**31 - 128, -(2.0**31), 2.0**32, 2.0**63,
                     -(2.0**63), 2.0**64, 1e30, -1e30, np.inf, -np.inf, np.nan, 3e9, -3e9], kind)


def cast_op(cls: type, source: Any, target: Any) -> tuple[Operation, Block]:
    block = Block(arg_types=[source])
    op = cls(block.args[0], target)
    block.add_op(op)
    return op, block


def expected_cast(cls: type, source: Any, target: Any, x: np.ndarray) -> np.ndarray:
    kind = INTEGER_CASTS[cls]
    bits = 0 if kind.from_float else source.width.data
    return kind(x, bits, np.dtype(np.float32 if target == builtin.f32 else np.float64) if kind.to_float
                else target.width.data)


@pytest.mark.parametrize("cls, source, target", CAST_CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_the_interpreter_converts_as_the_table_does(cls: type, source: Any, target: Any):
    op, block = cast_op(cls, source, target)
    x = cast_sources(source)
    got = interpret(op, {block.args[0]: x}, np.ones(x.size, bool))
    np.testing.assert_array_equal(got, expected_cast(cls, source, target, x))


def test_float_to_integer_conversions_saturate_and_send_nan_to_zero():
    x = np.array([np.nan, 1e20, -1e20, -3.7, 3.7, -0.5], np.float32)
    assert INTEGER_CASTS[arith.FPToSIOp](x, 0, 32).tolist() == [0, 2**31 - 1, -(2**31), -3, 3, 0]
    assert INTEGER_CASTS[arith.FPToUIOp](x, 0, 32).tolist() == [0, -1, 0, 0, 3, 0]  # held: 2^32 - 1 is -1
    assert INTEGER_CASTS[arith.ExtUIOp](np.int32(-1), 32, 64) == 2**32 - 1


# ---- the checker and the launch conditions ---------------------------------------------------------

@pytest.mark.parametrize("bits", WIDTHS)
@pytest.mark.parametrize("cls", list(INTEGER_OPS), ids=lambda c: INTEGER_OPS[c].name)
def test_the_checker_computes_numbers_as_the_table_does(cls: type, bits: int):
    """Numbers at every point (`_int_op`), and the integer rules tag functions use."""
    kind = INTEGER_OPS[cls]
    a, b = operand_pairs(bits)
    op, _ = binary_op(cls, bits)
    expected = kind(a, b, bits).astype(np.int64)
    np.testing.assert_array_equal(arithmetic.numeric_rule(op)(a.astype(np.int64), b.astype(np.int64)), expected)
    value = arithmetic.INT_RULES[cls](Space(), op, [Affine(a.astype(np.int64)), Affine(b.astype(np.int64))])
    assert value.concrete
    np.testing.assert_array_equal(value.const, expected)
    assert cls in tag_liveness._INTEGER_ARITHMETIC


@pytest.mark.parametrize("predicate", range(10))
def test_the_checker_compares_numbers_as_the_interpreter_does(predicate: int):
    a, b = operand_pairs(32)
    block = Block(arg_types=[builtin.i32, builtin.i32])
    op = arith.CmpiOp(block.args[0], block.args[1], predicate)
    block.add_op(op)
    expected = compare(predicate, a, b, 32)
    np.testing.assert_array_equal(interpret(op, {block.args[0]: a, block.args[1]: b}, np.ones(a.size, bool)), expected)
    np.testing.assert_array_equal(arithmetic.numeric_rule(op)(a.astype(np.int64), b.astype(np.int64)), expected)


@pytest.mark.parametrize("cls", list(INTEGER_OPS), ids=lambda c: INTEGER_OPS[c].name)
def test_launch_conditions_compute_as_the_table_does(cls: type):
    """A condition `x op y == table's answer` on two scalar arguments holds for every pair."""
    a, b = operand_pairs(32)
    kind = INTEGER_OPS[cls]
    for x, y in zip(a[:400].tolist(), b[:400].tolist()):
        expected = int(kind(np.int32(x), np.int32(y), 32))
        steps = (("arg", (), 0, 0), ("arg", (), 1, 0), (kind.name, (0, 1), 32, 0), ("const", (), expected, 0),
                 ("cmp", (2, 3), 0, 0))  # predicate 0: equal
        holds, _ = LaunchCondition("here", f"x {kind.name} y == {expected}", steps).holds(lambda i: (x, y)[i], None)
        assert holds, (x, y, expected)


# ---- the LLVM lowering, run on this CPU --------------------------------------------------------------

@pytest.fixture(scope="module")
def jit():
    binding = pytest.importorskip("llvmlite.binding")
    binding.initialize_native_target()
    binding.initialize_native_asmprinter()
    engines: list[Any] = []

    def compile_function(text: str, restype: Any, argtypes: list[Any]) -> Any:
        module = binding.parse_assembly(text)
        module.verify()
        machine = binding.Target.from_default_triple().create_target_machine()  # owned by its engine
        engine = binding.create_mcjit_compiler(module, machine)
        engine.finalize_object()
        engines.append(engine)  # the code lives as long as its engine
        return ctypes.CFUNCTYPE(restype, *argtypes)(engine.get_function_address("f"))

    return compile_function


def lowered(op: Operation, params: list[tuple[str, Any]]) -> str:
    """The function `f` computing `op` with the LLVM lowering's own rule for it."""
    t = llvm.Translator.__new__(llvm.Translator)
    t.names, t.counter, t.declarations, t.fn, t.locations = {}, 0, set(), llvm.FunctionBody(), {}
    for k, (_, v) in enumerate(params):
        t.names[v] = f"%p{k}"
    llvm.RULES[type(op)](t, op)
    ret = llvm.llvm_type(op.results[0].type)
    args = ", ".join(f"{ty} %p{k}" for k, (ty, _) in enumerate(params))
    body = "\n".join(t.fn.lines)
    return "\n".join(sorted(t.declarations)) + f"\ndefine {ret} @f({args}) {{\nentry:\n{body}\n" \
        f"  ret {ret} {t.names[op.results[0]]}\n}}\n"


@pytest.mark.parametrize("bits", WIDTHS)
@pytest.mark.parametrize("cls", list(INTEGER_OPS), ids=lambda c: INTEGER_OPS[c].name)
def test_the_llvm_lowering_computes_what_the_table_defines(jit: Any, cls: type, bits: int):
    """Everywhere LLVM defines the result; where only the interpreter faults (a division by zero,
    a shift past the width) the lowering gives the table's answer as well."""
    kind = INTEGER_OPS[cls]
    op, block = binary_op(cls, bits)
    ty = f"i{bits}"
    fn = jit(lowered(op, [(ty, block.args[0]), (ty, block.args[1])]), C_TYPES[bits], [C_TYPES[bits]] * 2)
    a, b = operand_pairs(bits)
    expected = kind(a, b, bits)
    low = -(1 << (bits - 1))
    poison = (a == low) & (b == -1) if kind.overflows else np.zeros(a.size, bool)  # LLVM: undefined (x86 traps)
    assert kind.undefined(a, b, bits)[poison].all()  # where the interpreter faults instead
    for x, y, want in zip(a[~poison].tolist(), b[~poison].tolist(), expected[~poison].tolist()):
        assert fn(x, y) == want, (kind.name, x, y)


@pytest.mark.parametrize("cls, source, target", CAST_CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_the_llvm_lowering_converts_as_the_table_does(jit: Any, cls: type, source: Any, target: Any):
    op, block = cast_op(cls, source, target)
    c_of = {builtin.i1: ctypes.c_bool, builtin.i8: ctypes.c_int8, builtin.i32: ctypes.c_int32,
            builtin.i64: ctypes.c_int64, builtin.f32: ctypes.c_float, builtin.f64: ctypes.c_double}
    fn = jit(lowered(op, [(llvm.llvm_type(source), block.args[0])]), c_of[target], [c_of[source]])
    x = cast_sources(source)
    expected = expected_cast(cls, source, target, x)
    for value, want in zip(x.tolist(), expected.tolist()):
        assert fn(value) == want, (cls.name, value)


# ---- end to end -------------------------------------------------------------------------------------

def swap(compiled: Any, old: type, new: type, which: list[int]) -> None:
    """Replace the `which`-th ops of kind `old` (in program order, tag bodies included) by `new`."""
    found = [op for op in compiled.op.walk() if type(op) is old]
    for k in which:
        op = found[k]
        Rewriter.replace_op(op, new(op.operands[0], op.operands[1]))


def make_quotients() -> Any:
    @kernel(block=(32,), verify=False)
    def quotients(x: Tensor[i32, 32], out: Tensor[i32, 64]):
        tag(x, lambda i: (i,))
        t = thread_idx.x
        q = (t - 17) // 4  # (17, not a multiple of 4: the front end keeps the division of a sum)
        r = (t - 17) % 4
        got = make_local((1,), i32)
        want = make_local((1,), i32)
        got[0] = x[4 * q + r + 17]  # x[t]: q and r are the floor quotient and remainder
        tag(want, lambda i: (t,))
        assert tag(got[...]) == tag(want[...])
        out[t] = q
        out[t + 32] = r

    return quotients


def run(k: Any) -> np.ndarray:
    out = np.zeros(64, np.int32)
    Interpreter(k.specialize().op, k.specialize().locations).launch((1,), [np.arange(32, dtype=np.int32), out])
    return out


def test_floor_division_and_remainder_of_negative_numbers_agree_end_to_end():
    k = make_quotients()
    t = np.arange(32) - 17
    np.testing.assert_array_equal(run(k), np.concatenate([t // 4, t % 4]))
    assert verify_kernel(k.specialize(), "quotients").verdict is Verdict.PROVED


def test_a_truncating_division_agrees_end_to_end():
    """With the quotient a divsi (q and r share it), the interpreter gives C's quotients and
    remainders, and the checker still proves x[4 * q + r + 17] is x[t]: they are a pair."""
    k = make_quotients()
    compiled = k.specialize()
    swap(compiled, arith.FloorDivSIOp, arith.DivSIOp, [0])
    t = np.arange(32) - 17
    np.testing.assert_array_equal(run(k), np.concatenate([np.trunc(t / 4), np.fmod(t, 4)]).astype(np.int32))
    result = verify_kernel(compiled, "quotients")
    assert result.verdict is Verdict.PROVED, result.text()
    assert check_launch(k, (1,), np.arange(32, dtype=np.int32), np.zeros(64, np.int32)).verdict is Verdict.PROVED


def make_tagged_quotients() -> Any:
    @kernel(block=(32,), verify=False)
    def tagged(x: Tensor[i32, 32]):
        tag(x, lambda i: ((i - 17) // 4,))
        t = thread_idx.x
        got = make_local((1,), i32)
        want = make_local((1,), i32)
        got[0] = x[t]
        tag(want, lambda i: ((t - 17) // 4,))
        assert tag(got[...]) == tag(want[...])

    return tagged


@pytest.mark.parametrize("division", [arith.FloorDivSIOp, arith.DivSIOp])
def test_tag_functions_divide_alike_in_the_checker_and_the_shadow_interpreter(division: type):
    """x[t] is tagged (t - 17) // 4 with a floor; `want` is tagged the same, or with a truncating
    division, which differs for t < 17 but t = 13, 9, 5, 1: the checker and the shadow
    interpreter, each evaluating both tag functions, say the same."""
    k = make_tagged_quotients()
    compiled = k.specialize()
    swap(compiled, arith.FloorDivSIOp, division, [1])  # the division in `want`'s tag function
    expected = Verdict.PROVED if division is arith.FloorDivSIOp else Verdict.VIOLATED
    assert verify_kernel(compiled, "tagged").verdict is expected
    assert check_launch(k, (1,), np.arange(32, dtype=np.int32)).verdict is expected
