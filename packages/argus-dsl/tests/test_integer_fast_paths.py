"""The checker's integer functions (`IntegerOp.on_int64`, `comparison_on_int64`) against the
table's general definition: the fast paths for 32- and 64-bit numbers must give the same result
for every operand, wrapped, undefined (a divisor of 0, an overflowing quotient, a shift past the
width) or not, and whatever dtype or shape the operands come in."""

from __future__ import annotations

import numpy as np
import pytest
from argus.dsl.ops.integers import INTEGER_OPS, WIDTHS, comparison_on_int64, compare

EDGES = [0, 1, -1, 2, 3, 5, 7, 15, 16, 31, 32, 33, 63, 64, 65, 127, 128, 255, 256, 2**15 - 1, -(2**15), 2**16,
         2**31 - 1, -(2**31), 2**31, 2**32 - 1, 2**32, 2**32 + 16, -(2**32) - 3, 2**63 - 1, -(2**63), 12345, -12345]
"""Numbers at and around every width's limits, and int64 numbers whose low bits differ from them."""


def _operands() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    values = np.array(EDGES + list(rng.integers(-(2**63), 2**63 - 1, 40, dtype=np.int64))
                      + list(rng.integers(-300, 300, 20)), np.int64)
    return np.repeat(values, len(values)), np.tile(values, len(values))


A, B = _operands()
OPS = sorted(INTEGER_OPS.values(), key=lambda op: op.name)


@pytest.mark.parametrize("bits", WIDTHS)
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_an_op_on_int64_numbers_is_the_tables_op(op, bits):
    numbers = op.on_int64(bits)
    cases = {"every pair": (A, B), "positive divisors": (A, np.abs(B % 1000) + 1),
             "small amounts, some negative or past the width": (A, B % 70 - 3)}
    for case, (a, b) in cases.items():
        got, want = numbers(a, b), op(a, b, bits).astype(np.int64)
        assert got.dtype == np.int64, case
        wrong = np.flatnonzero(got != want)
        assert not len(wrong), (f"{op.name} at {bits} bits, {case}: {a[wrong[0]]} and {b[wrong[0]]} give "
                                f"{got[wrong[0]]}, the table {want[wrong[0]]}")


@pytest.mark.parametrize("bits", (32, 64))
@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_other_dtypes_and_shapes_give_the_tables_answer(op, bits):
    numbers = op.on_int64(bits)
    a32, b32 = A[:500].astype(np.int32), (B[:500] % 40 + 1).astype(np.int32)
    assert np.array_equal(numbers(a32, b32), op(a32, b32, bits).astype(np.int64))
    column, row = A[:6].reshape(6, 1), (B[:5] % 9 + 1).reshape(1, 5)  # a rolled loop's index against threads
    got = numbers(column, row)
    assert got.shape == (6, 5)
    assert np.array_equal(got, op(column, row, bits).astype(np.int64))


def test_an_ops_function_is_made_once_per_width():
    op = next(iter(INTEGER_OPS.values()))
    assert op.on_int64(32) is op.on_int64(32)
    assert op.on_int64(32) is not op.on_int64(64)


@pytest.mark.parametrize("bits", WIDTHS)
@pytest.mark.parametrize("predicate", range(10))
def test_a_comparison_on_int64_numbers_is_the_tables(predicate, bits):
    got = comparison_on_int64(predicate, bits)(A, B)
    assert got.dtype == np.int64
    assert np.array_equal(got, compare(predicate, A, B, bits).astype(np.int64))
    assert comparison_on_int64(predicate, bits) is comparison_on_int64(predicate, bits)


def test_a_comparison_with_an_unknown_predicate_is_refused():
    with pytest.raises(ValueError, match="predicates 0 to 9"):
        comparison_on_int64(10, 32)
