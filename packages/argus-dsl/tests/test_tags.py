"""Tag functions and tag assertions: parsed into the IR, no effect at run time, misuse refused."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (
    ArgusSyntaxError,
    ArgusTypeError,
    Tensor,
    bf16,
    constexpr,
    kernel,
    make_shared,
    reset_tags,
    syncthreads,
    tag,
    thread_idx,
)
from argus.dsl.ir.dialect import TagAssertOp, TagOp, parse_module


@kernel(block=(32,))
def staged(q: Tensor[bf16, 32, 8], out: Tensor[bf16, 32, 8], gqa: constexpr):
    tag(q, lambda s, d: (s % 32, d // gqa))
    sq = make_shared((32, 8), bf16)
    for d in range(8):
        sq[thread_idx.x, d] = q[thread_idx.x, d]
    syncthreads()
    assert tag(sq[...]) == tag(q[...]), "staging keeps every element's tag"
    for d in range(8):
        out[thread_idx.x, d] = sq[thread_idx.x, d]
    reset_tags(sq)


def test_tags_and_assertions_are_in_the_ir_and_round_trip():
    compiled = staged.compile(gqa=2)
    ops = list(compiled.module.walk())
    assert sum(isinstance(op, TagOp) for op in ops) == 1
    (assertion,) = [op for op in ops if isinstance(op, TagAssertOp)]
    assert assertion.kind.data == "eq" and assertion.message.data == "staging keeps every element's tag"
    assert parse_module(compiled.mlir()).is_structurally_equivalent(compiled.module)


def test_tags_have_no_runtime_effect():
    q = np.arange(32 * 8, dtype=np.uint16).reshape(32, 8)
    out = np.zeros_like(q)
    staged[1](q, out, gqa=2)
    assert np.array_equal(out, q)


@kernel(block=(32,))
def asserts_without_tags(q: Tensor[bf16, 32], k: Tensor[bf16, 32]):
    assert tag(q[...]) == tag(k[...])


@kernel(block=(32,))
def asserts_something_else(q: Tensor[bf16, 32]):
    assert thread_idx.x < 32


@kernel(block=(32,))
def wrong_arity(q: Tensor[bf16, 4, 8]):
    tag(q, lambda s: s)


@kernel(block=(32,))
def without_ellipsis(q: Tensor[bf16, 32]):
    tag(q, lambda s: s)
    assert tag(q[0]) == tag(q[...])


@pytest.mark.parametrize(
    "k, error, words",
    [
        (asserts_without_tags, ArgusTypeError, "attaches no tag function"),
        (asserts_something_else, ArgusSyntaxError, "only tag assertions"),
        (wrong_arity, ArgusTypeError, "one coordinate per mode: 2"),
        (without_ellipsis, ArgusSyntaxError, "[...]"),
    ],
)
def test_misused_tags_are_refused(k, error, words):
    with pytest.raises(error, match=None) as info:
        k.compile()
    assert words in str(info.value)
