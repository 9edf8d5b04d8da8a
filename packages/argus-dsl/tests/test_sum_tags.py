"""Sum tags (`argus.verify.sums`): ``assert_tags(out, lambda i: sum_of((0, i), (1, i)))`` states
that every stored element is the sum of the elements tagged (0, i) and (1, i). The terms are a
multiset: either order of the operands is the same sum, an operand added twice is not; anything
but a sum of two tagged elements (a difference, a scaled term, a constant added) is computed
data. A violation is found statically and replayed by the shadow tags."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl import (ArgusError, Tensor, assert_tags, assume, bf16, block_idx, f16, f32, grid_dim, kernel, sum_of,
                       tag, thread_idx)
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict
from argus.verify import sums

pytestmark = pytest.mark.usefixtures("no_result_cache")


def added(expression: str) -> object:
    """A vector add claiming out[i] = x[i] + y[i] (x tagged (0, i), y (1, i)), storing `expression`."""
    source = f'''
@kernel(block=(32,), verify=False)
def add(x: Tensor[f32, "n"], y: Tensor[f32, "n"], z: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    tag(x, lambda i: (0, i))
    tag(y, lambda i: (1, i))
    tag(z, lambda i: (2, i))
    assert_tags(out, lambda i: sum_of((0, i), (1, i)))
    i = block_idx.x * 32 + thread_idx.x
    if i < n:
        out[i] = {expression}
'''
    return compiled(source, "add")


def compiled(source: str, name: str) -> object:
    """The kernel `name` that `source` defines (the front end reads its lines, kept for it)."""
    from argus.dsl import bitcast, lo, u32

    scope = dict(kernel=kernel, Tensor=Tensor, f32=f32, f16=f16, u32=u32, bitcast=bitcast, lo=lo, assume=assume,
                 grid_dim=grid_dim, tag=tag, assert_tags=assert_tags, sum_of=sum_of, block_idx=block_idx,
                 thread_idx=thread_idx)
    import linecache
    where = f"<{name} {abs(hash(source))}>"
    linecache.cache[where] = (len(source), None, source.splitlines(True), where)
    exec(compile(source, where, "exec"), scope)
    return scope[name]


@pytest.mark.parametrize("expression", ["x[i] + y[i]", "y[i] + x[i]", "(x[i] + y[i])"])
def test_the_sum_of_the_claimed_elements_in_either_order_is_proved(expression):
    result = added(expression).verify()
    assert result.verdict is Verdict.PROVED, result.text()


@pytest.mark.parametrize("expression", ["x[i] + x[i]", "x[i] + z[i]", "x[i] + y[n - 1 - i]", "x[i // 2] + y[i // 2]"])
def test_a_sum_of_other_elements_is_violated_with_a_replayed_witness(expression):
    k = added(expression)
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "violated" and str(witness["lhs tag"]).startswith("sum of "), witness
    assert witness["replayed"].startswith("reproduced"), witness
    n = 64
    data = [np.arange(n + 1, dtype=np.float32)[:n] for _ in range(3)]
    assert check_launch(k, (2,), *data, np.zeros(n, np.float32), n).verdict is Verdict.VIOLATED


@pytest.mark.parametrize("expression", ["x[i] - y[i]", "x[i] + y[i] * 2.0", "x[i] + 1.0", "x[i] + y[i] + z[i]",
                                        "x[i] * y[i]"])
def test_anything_else_is_never_proved_to_be_the_sum(expression):
    result = added(expression).verify()
    assert result.verdict is not Verdict.PROVED, result.text()


def test_a_sum_of_three_matches_a_claim_of_three_in_any_grouping():
    """Terms are a multiset: (x + y) + z and x + (z + y) are the same sum of three."""
    for expression in ("(x[i] + y[i]) + z[i]", "x[i] + (z[i] + y[i])"):
        k = added(expression)
        k_source = k  # (the claim is of two terms: a sum of three is not it)
        assert k_source.verify().verdict is Verdict.VIOLATED
    table_terms = sums.of([sums.of([(0, 1), (1, 1)]), (2, 1)])
    assert table_terms == sums.of([(2, 1), (1, 1), (0, 1)])
    assert sums.terms(table_terms) == [(0, 1), (1, 1), (2, 1)]


def test_sum_of_is_a_claim_only(tmp_path):
    from argus.dsl.cli import load_module

    path = tmp_path / "operand.py"
    path.write_text(
        "from argus.dsl import Tensor, f32, kernel, sum_of, tag, thread_idx\n"
        "@kernel(block=(32,))\n"
        "def k(x: Tensor[f32, 32], out: Tensor[f32, 32]):\n"
        "    tag(x, lambda i: sum_of((0, i), (1, i)))\n"
        "    out[thread_idx.x] = x[thread_idx.x]\n")
    with pytest.raises(ArgusError, match=r"operand.py:4:.*sum_of\(\.\.\.\) states what a stored sum holds"):
        load_module(path).k.specialize()
    path.write_text(
        "from argus.dsl import Tensor, assert_tags, f32, kernel, sum_of, thread_idx\n"
        "@kernel(block=(32,))\n"
        "def k(x: Tensor[f32, 32], out: Tensor[f32, 32]):\n"
        "    assert_tags(out, lambda i: sum_of((0, i)))\n"
        "    out[thread_idx.x] = x[thread_idx.x]\n")
    with pytest.raises(ArgusError, match=r"operand.py:4:.*sum_of\(t1, t2, \.\.\.\) takes the tags"):
        load_module(path).k.specialize()


@pytest.mark.parametrize("claim, stored", [
    pytest.param("sum_of((0, i), (1, i))", "bitcast(lo(bitcast(x[i] + y[i], u32)), f16)", id="the low half of a sum"),
    pytest.param("(0, i)", "bitcast(lo(bitcast(x[i], u32)), f16)", id="the low half of an element"),
])
def test_the_low_half_of_a_wider_element_is_no_element_of_half_its_width(claim, stored):
    """An f16 store of the low 16 bits of an f32 sum (or of an f32 element) carries those bytes'
    tags, but they are a part of a wider element, not an f16 element tagged alike."""
    source = f'''
@kernel(block=(32,), verify=False)
def half(x: Tensor[f32, "n"], y: Tensor[f32, "n"], out: Tensor[f16, "n"], n: int):
    assume(grid_dim.x * 32 >= n)
    tag(x, lambda i: (0, i))
    tag(y, lambda i: (1, i))
    assert_tags(out, lambda i: {claim})
    i = block_idx.x * 32 + thread_idx.x
    if i < n:
        out[i] = {stored}
'''
    result = compiled(source, "half").verify()
    assert result.verdict is not Verdict.PROVED, result.text()


def test_bits_of_one_type_added_as_another_s_are_no_sum_of_the_data():
    """bf16 data added through f16 views of it: the bytes carry x's and y's tags, but the
    numbers added are not x's and y's (a sum adds up elements read as the numbers they are)."""
    @kernel(block=(32,), verify=False)
    def reinterpreted(x: Tensor[bf16, "n"], y: Tensor[bf16, "n"], out: Tensor[bf16, "n"], n: int):
        assume(grid_dim.x * 32 >= n)
        tag(x, lambda i: (0, i))
        tag(y, lambda i: (1, i))
        assert_tags(out, lambda i: sum_of((0, i), (1, i)))
        xh = x.view((n,), f16)
        yh = y.view((n,), f16)
        oh = out.view((n,), f16)
        i = block_idx.x * 32 + thread_idx.x
        if i < n:
            oh[i] = xh[i] + yh[i]

    result = reinterpreted.verify()
    assert result.verdict is not Verdict.PROVED, result.text()
