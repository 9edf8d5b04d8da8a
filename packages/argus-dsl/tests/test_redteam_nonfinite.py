"""A product scaled by a NaN or an infinity is no product: ``acc * float("nan")`` stores NaN,
``acc * float("inf")`` infinities (or NaN), ``acc / float("inf")`` zeros — none of them A·Bᵀ,
though a scale by any finite value that holds no data keeps a product. Neither a constant nor a
register (or variable) holding one scales a product into itself. Each kernel runs: its C is not
A·Bᵀ, so a proof would be a false one."""

from __future__ import annotations

import numpy as np
import pytest
from argus.verify import Verdict
from test_product_tags_redteam import K, M, N, _edited, _never_proved, _operands

pytestmark = pytest.mark.usefixtures("no_result_cache")

HELD = ("    bfrag = make_local((4, 4), bf16)", "    bfrag = make_local((4, 4), bf16)\n    odd = make_local((1,), f32)\n"
                                               "    odd[0] = {value}")
IN_A_VARIABLE = ("    for mi in static_range(2):\n        for ni in static_range(4):\n            for v in static_range(4):\n"
                 "                idx = MMA.c_layout",
                 "    odd = {value}\n"
                 "    for mi in static_range(2):\n        for ni in static_range(4):\n            for v in static_range(4):\n"
                 "                idx = MMA.c_layout")
INSIDE = ("                matmul(afrag[mi, :], bfrag[ni, :], acc[mi, ni, :], MMA)\n",
          "                matmul(afrag[mi, :], bfrag[ni, :], acc[mi, ni, :], MMA)\n"
          "                for v in static_range(4):\n                    acc[mi, ni, v] = acc[mi, ni, v] * {value}\n")


def _with(edit: tuple[str, str], value: str) -> tuple[str, str]:
    return edit[0], edit[1].format(value=value)


@pytest.mark.parametrize("edits", [
    pytest.param([("= acc[mi, ni, v]", '= acc[mi, ni, v] * float("nan")')], id="times NaN"),
    pytest.param([("= acc[mi, ni, v]", '= float("inf") * acc[mi, ni, v]')], id="infinity times it"),
    pytest.param([("= acc[mi, ni, v]", '= acc[mi, ni, v] / float("-inf")')], id="over an infinity"),
    pytest.param([_with(INSIDE, 'float("nan")')], id="times NaN after each product, in the loop"),
    pytest.param([_with(HELD, 'float("nan")'), ("= acc[mi, ni, v]", "= acc[mi, ni, v] * odd[0]")],
                 id="times a register holding NaN"),
    pytest.param([_with(HELD, 'float("inf")'), ("= acc[mi, ni, v]", "= acc[mi, ni, v] / odd[0]")],
                 id="over a register holding an infinity"),
    pytest.param([_with(IN_A_VARIABLE, 'float("inf")'), ("= acc[mi, ni, v]", "= acc[mi, ni, v] * odd")],
                 id="times a variable holding an infinity"),
])
def test_a_product_scaled_by_a_nan_or_an_infinity_is_not_the_product(tmp_path, interpreter_only, edits):
    module = _edited(tmp_path, "nonfinite", *edits)
    a, b, reference = _operands("bf16")
    c = np.ones((M, N), np.float32)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_a_product_scaled_by_a_finite_constant_still_proves(tmp_path, interpreter_only):
    """The control: ``alpha * acc`` keeps the product (its terms are the same)."""
    module = _edited(tmp_path, "finite", ("= acc[mi, ni, v]", "= acc[mi, ni, v] * 0.5"))
    assert module.gemm.verify().verdict is Verdict.PROVED
