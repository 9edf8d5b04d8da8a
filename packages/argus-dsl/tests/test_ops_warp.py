"""The warp-collective family (argus.dsl.ops.warp): the shuffles and the warp reductions built
from them are declared once, and each consumer — the interpreter, the shadow tags, the static
checker, the LLVM translation, the front end — reads its part from there."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from argus.dsl import (
    ArgusTypeError,
    CodegenError,
    KernelFault,
    Tensor,
    f32,
    f64,
    i32,
    kernel,
    shfl_down,
    shfl_idx,
    shfl_up,
    shfl_xor,
    tag,
    thread_idx,
    warp_max,
    warp_min,
    warp_sum,
)
from argus.dsl.check import rules as check_rules
from argus.dsl.check.access import shuffle_rule
from argus.dsl.frontend.calls import BUILDERS
from argus.dsl.ir import dialect as D
from argus.dsl.ir.registry import meaning
from argus.dsl.llvm import Translator, translate
from argus.dsl.machine import interpreter, shadow
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict


def test_the_shuffle_is_declared_once_with_every_consumers_part():
    m = meaning(D.ShuffleOp)
    assert m is not None and m.analyze is shuffle_rule
    assert m.interpret is not None and m.shadow is not None and m.translate is not None
    assert m.liveness is None and not m.sync and not m.collective  # a value: kept when a check needs it
    assert interpreter.RULES[D.ShuffleOp] is m.interpret and shadow.RULES[D.ShuffleOp] is m.shadow
    assert translate.RULES[D.ShuffleOp] is m.translate and check_rules.RULES[D.ShuffleOp] is shuffle_rule


@pytest.mark.parametrize("name", ["shfl_xor", "shfl_idx", "shfl_down", "shfl_up", "warp_sum", "warp_max", "warp_min"])
def test_each_builtin_is_built_by_the_family(name):
    assert BUILDERS[name].__module__ == "argus.dsl.ops.warp"


@kernel(block=(64,))
def moved(x: Tensor[f32, 64], xor: Tensor[f32, 64], idx: Tensor[f32, 64], down: Tensor[f32, 64],
          up: Tensor[f32, 64]):
    t = thread_idx.x
    v = x[t]
    xor[t] = shfl_xor(v, 5)
    idx[t] = shfl_idx(v, 3)
    down[t] = shfl_down(v, 4)
    up[t] = shfl_up(v, 4)


def test_each_shuffle_reads_its_lane_of_the_same_warp():
    x = np.arange(64, dtype=np.float32) * 1.5
    outs = [np.zeros(64, np.float32) for _ in range(4)]
    moved[1](x, *outs)
    t = np.arange(64)
    lane, base = t % 32, t - t % 32
    assert np.array_equal(outs[0], x[base + (lane ^ 5)])
    assert np.array_equal(outs[1], x[base + 3])
    assert np.array_equal(outs[2], x[np.where(lane + 4 < 32, t + 4, t)])  # past the warp: its own
    assert np.array_equal(outs[3], x[np.where(lane >= 4, t - 4, t)])


@kernel(block=(64,))
def reduced(x: Tensor[i32, 64], total: Tensor[i32, 64], most: Tensor[i32, 64], least: Tensor[i32, 64]):
    t = thread_idx.x
    total[t] = warp_sum(x[t])
    most[t] = warp_max(x[t])
    least[t] = warp_min(x[t])


def test_the_warp_reductions_give_every_lane_its_warps_result():
    x = np.random.default_rng(0).integers(-1000, 1000, 64).astype(np.int32)
    outs = [np.zeros(64, np.int32) for _ in range(3)]
    reduced[1](x, *outs)
    for out, fn in zip(outs, (np.sum, np.max, np.min)):
        assert np.array_equal(out, np.repeat([fn(x[:32]), fn(x[32:])], 32))


@kernel(block=(32,), verify=False)
def half_the_warp_shuffles(x: Tensor[f32, 32], out: Tensor[f32, 32]):
    t = thread_idx.x
    if t < 16:
        out[t] = shfl_xor(x[t], 16)


def test_a_shuffle_reading_an_inactive_lane_is_a_fault():
    with pytest.raises(KernelFault) as info:
        half_the_warp_shuffles[1](np.zeros(32, np.float32), np.zeros(32, np.float32))
    assert info.value.kind == "inactive-lane" and "shuffles from lane 16" in str(info.value)


@kernel(block=(32,))
def neighbours_in_place(x: Tensor[f32, 32], y: Tensor[f32, 32]):
    tag(x, lambda i: (i,))
    tag(y, lambda i: (i,))
    t = thread_idx.x
    y[t ^ 1] = shfl_xor(x[t], 1)  # lane t gets x[t ^ 1], and stores it where it belongs
    assert tag(y[...]) == tag(x[...]), "y holds x's elements in place"


@kernel(block=(32,))
def neighbours_swapped(x: Tensor[f32, 32], y: Tensor[f32, 32]):
    tag(x, lambda i: (i,))
    tag(y, lambda i: (i,))
    t = thread_idx.x
    y[t] = shfl_xor(x[t], 1)  # lane t gets x[t ^ 1]: y[t] holds its neighbour's element
    assert tag(y[...]) == tag(x[...]), "y holds x's elements in place"


def test_tags_move_with_the_shuffled_values():
    x = np.arange(32, dtype=np.float32)
    assert check_launch(neighbours_in_place, 1, x, np.zeros(32, np.float32)).verdict is Verdict.PROVED
    result = check_launch(neighbours_swapped, 1, x, np.zeros(32, np.float32))
    assert result.verdict is Verdict.VIOLATED
    w = result.witnesses[0]
    assert w["lhs tag"] == (w["rhs tag"][0] ^ 1,)  # y's element came from the neighbouring lane


# ---- LLVM ------------------------------------------------------------------------------------

@pytest.fixture
def lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in target's cross-lane move: a call naming the shuffle."""
    monkeypatch.setattr(Translator, "shuffle_word", lambda t, op, kind, word, lane:
                        t.call("i32", f"target.shuffle.{kind}", [("i32", word), ("i32", lane)]))


def test_a_float_moves_across_lanes_as_its_bits(llvm_text, lanes):
    text = llvm_text(moved)
    for kind in ("xor", "idx", "down", "up"):
        assert text.count(f"call i32 @target.shuffle.{kind}(") == 1
    assert text.count("bitcast float") == 4 and text.count("to float") >= 4


@kernel(block=(32,))
def wide(x: Tensor[f64, 32], out: Tensor[f64, 32]):
    out[thread_idx.x] = shfl_xor(x[thread_idx.x], 1)


def test_a_shuffle_of_more_than_32_bits_is_refused_by_the_translation(llvm_text, lanes):
    with pytest.raises(CodegenError, match="a shuffle of a 64-bit value is not supported"):
        llvm_text(wide)


# ---- the front end ---------------------------------------------------------------------------

@kernel(block=(32,))
def shuffles_without_a_lane(x: Tensor[f32, 32]):
    x[thread_idx.x] = shfl_xor(x[thread_idx.x])


@kernel(block=(32,))
def shuffles_a_condition(x: Tensor[f32, 32]):
    x[thread_idx.x] = f32(shfl_xor(x[thread_idx.x] > 0.0, 1))


@kernel(block=(32,))
def sums_a_constant(x: Tensor[f32, 32]):
    x[thread_idx.x] = warp_sum(1.0)


@pytest.mark.parametrize("k, call, message", [
    (shuffles_without_a_lane, "shfl_xor(x[thread_idx.x])", r"shfl_xor\(value, lane_or_offset\) with a runtime value"),
    (shuffles_a_condition, "shfl_xor(x[thread_idx.x] > 0.0, 1)", "shuffles move numbers, not bool"),
    (sums_a_constant, "warp_sum(1.0)", r"warp_sum\(value\) with a runtime value"),
], ids=["lane", "bool", "constant"])
def test_a_bad_call_is_refused_at_its_line(k, call, message):
    with pytest.raises(ArgusTypeError, match=message) as info:
        k.compile()
    lines, first = inspect.getsourcelines(k.fn)
    assert info.value.location.line == first + next(i for i, s in enumerate(lines) if call in s)
