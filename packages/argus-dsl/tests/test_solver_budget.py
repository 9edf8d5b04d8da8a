"""A check's solver queries share one time budget: a check the solver cannot finish in it ends
unknown within the budget, saying what ran out and how to give the solver less to do."""

from __future__ import annotations

import time

import numpy as np
import pytest
from argus.dsl import Tensor, assume, bf16, block_idx, kernel, make_local, tag, thread_idx
from argus.dsl.errors import ArgusError
from argus.verify import Verdict


@kernel(block=(32,), verify=False)
def strided_copy(x: Tensor[bf16, "n"], n: int, stride: int):
    assume(stride >= 1)
    assume(n == 32 * stride * 4)
    tag(x, lambda i: (i,))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    i = (block_idx.x % 4) * 32 * stride + thread_idx.x * stride
    got[0] = x[i]
    tag(want, lambda j: ((block_idx.x % 4) * 32 * stride + thread_idx.x * stride,))
    assert tag(got[...]) == tag(want[...])


def _checked(budget_s: float | None):
    from argus.dsl.check.verification import verify_kernel

    return verify_kernel(strided_copy.specialize(), "strided_copy", budget_s=budget_s)


def test_a_check_within_its_budget_is_decided():
    assert _checked(None).verdict is Verdict.PROVED


def test_a_spent_budget_ends_the_check_unknown_at_once_and_says_what_to_do():
    started = time.perf_counter()
    result = _checked(1e-6)
    assert time.perf_counter() - started < 5
    assert result.verdict is Verdict.UNKNOWN, result.text()
    assert "solver budget" in result.text() and "assume(" in result.text()


def test_a_budget_that_is_not_a_number_of_seconds_is_named(monkeypatch):
    monkeypatch.setenv("ARGUS_SOLVER_BUDGET", "a minute")
    with pytest.raises(ArgusError, match="ARGUS_SOLVER_BUDGET"):
        _checked(None)
