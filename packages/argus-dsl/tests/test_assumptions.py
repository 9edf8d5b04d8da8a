"""Assumptions a launch is checked against on the host (argus.dsl.assumptions)."""

from __future__ import annotations

from argus.dsl import Tensor, assume, f32, kernel, thread_idx
from argus.dsl.assumptions import from_json, launch_conditions, to_json


@kernel(block=(32,))
def scaled(x: Tensor[f32, "n", "K"], y: Tensor[f32, "n"], K: int, step: int):
    assume(K % 64 == 0)
    assume(step > 0)
    assume(K // step >= 2)
    # a condition on a size alone is a launch condition too
    assume(x.shape[0] >= 32)
    assume(thread_idx.x < 32)  # depends on the thread: not a launch condition
    y[thread_idx.x] = x[thread_idx.x, K - 1]


def _conditions():
    compiled = scaled.compile()
    return launch_conditions(compiled.op, compiled.locations)


def _holds(condition, K: int, step: int) -> bool:
    args = {2: K, 3: step}
    return condition.holds(lambda i: args[i], lambda i, axis: (32, K)[axis])[0]


def test_only_assumptions_on_scalars_and_sizes_become_launch_conditions():
    conditions = _conditions()
    assert [c.text for c in conditions] == [
        "assume(K % 64 == 0)",
        "assume(step > 0)",
        "assume(K // step >= 2)",
        "assume(x.shape[0] >= 32)",
    ]
    assert all("test_assumptions.py" in c.where for c in conditions)


def test_conditions_evaluate_like_the_kernel():
    multiple, positive, ratio, rows = _conditions()
    assert _holds(multiple, 128, 1) and not _holds(multiple, 100, 1)
    assert not _holds(positive, 128, 0) and _holds(positive, 128, 3)
    assert _holds(ratio, 128, 64) and not _holds(ratio, 128, 65)
    assert _holds(ratio, 128, 0)  # K // 0 is K in the language, as in the interpreter
    assert _holds(rows, 128, 1)
    assert not rows.holds(lambda i: {2: 128, 3: 1}[i], lambda i, axis: (31, 128)[axis])[0]


def test_what_a_condition_read_is_reported():
    multiple = _conditions()[0]
    holds, seen = multiple.holds(lambda i: {2: 100}[i], lambda i, axis: 0)
    assert not holds and seen == [(2, -1, 100)]


def test_conditions_survive_the_cache():
    conditions = tuple(_conditions())
    assert from_json(to_json(conditions)) == conditions
