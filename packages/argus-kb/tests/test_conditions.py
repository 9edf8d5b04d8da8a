"""Applicability conditions are data evaluated against a kernel description, in three values:
a condition that needs what the description leaves out is undecided, never true or false."""

from __future__ import annotations

import pytest
from argus.kb import KbError, KernelDescription, Truth, describe_source
from argus.kb.conditions import parse_conditions
from argus.kb.errors import EntryError
from argus.kb.expressions import Expression, ExpressionError
from argus.kb.frontmatter import parse
from argus.kb.vocabulary import LANGUAGE


def conditions(*lines: str):
    data = parse(["applies-when:", *(f"  {line}" for line in lines)], "c.md")
    return parse_conditions(data["applies-when"], "c.md", 1, LANGUAGE)


GEMM = KernelDescription(target="nvptx:sm_90a", family="gemm", uses=frozenset({"matmul", "make_shared", "range"}),
                         dtypes=frozenset({"bf16", "f32"}), sizes={"M": 4096, "N": 4096, "K": 8192})


@pytest.mark.parametrize("lines, truth, reason", [
    (["- uses: [matmul, range]"], Truth.YES, "uses matmul"),
    (["- uses: cp_async"], Truth.NO, "does not use cp_async"),
    (["- not: {uses: cp_async}"], Truth.YES, "does not use cp_async"),
    (["- target: nvptx:*"], Truth.YES, "target nvptx:sm_90a is nvptx:*"),
    (["- target: [amdgpu:gfx942, amdgpu:gfx950]"], Truth.NO, "is not amdgpu:gfx942 or amdgpu:gfx950"),
    (["- feature: wgmma"], Truth.YES, "target nvptx:sm_90a has wgmma"),
    (["- feature: mfma"], Truth.NO, "lacks mfma"),
    (["- dtype: bf16"], Truth.YES, "has bf16 data"),
    (["- divisible: {K: 64, M: 3}"], Truth.NO, "M = 4096 is not a multiple of 3"),
    (["- shape: K >= 2 * max(M, N)"], Truth.YES, "K >= 2 \\* max\\(M, N\\) holds \\(K = 8192, M = 4096, N = 4096\\)"),
    (["- shape: seq >= 128"], Truth.UNKNOWN, "needs sizes seq"),
    (["- uses: matmul", "- shape: seq >= 128"], Truth.UNKNOWN, "needs sizes seq"),
    (["- uses: cp_async", "- shape: seq >= 128"], Truth.NO, "does not use cp_async"),
    (["- any:", "    - feature: mfma", "    - shape: seq > 1"], Truth.UNKNOWN, "needs sizes seq"),
    (["- any:", "    - feature: mfma", "    - uses: matmul"], Truth.YES, "uses matmul"),
    (["- not:", "    shape: seq > 1"], Truth.UNKNOWN, "needs sizes seq"),
    (["- all:", "    - uses: matmul", "    - feature: tma"], Truth.YES, "has tma"),
])
def test_three_valued_evaluation(lines: list[str], truth: Truth, reason: str) -> None:
    result = conditions(*lines).evaluate(GEMM)
    assert result.truth is truth
    assert any(__import__("re").search(reason, r) for r in result.reasons), result.reasons


def test_an_empty_description_decides_nothing() -> None:
    nothing = KernelDescription()
    for line in ("- uses: matmul", "- target: nvptx:*", "- feature: wgmma", "- dtype: bf16", "- divisible: {K: 8}"):
        assert conditions(line).evaluate(nothing).truth is Truth.UNKNOWN
    explicit = KernelDescription(target="riscv:rv64", features=frozenset({"wgmma"}))
    assert conditions("- feature: wgmma").evaluate(explicit).truth is Truth.YES


def test_conditions_round_trip_as_data() -> None:
    c = conditions("- uses: [matmul, range]", "- not: {feature: tma}", "- shape: K % 64 == 0")
    assert [p.as_data() for p in c.parts] == [{"uses": ["matmul", "range"]}, {"not": {"feature": "tma"}},
                                             {"shape": "K % 64 == 0"}]


def test_describing_source_reads_names_not_imports() -> None:
    source = '''
from argus.dsl import kernel, matmul, make_shared, bf16, f32, copy
from argus.backends.nvptx import language as nv
MMA = warp_mma_16x8x16(bf16, bf16, f32)

@kernel(block=(32,))
def k(a: Tensor[bf16, "M", "K"], c: Tensor[f32, "M", 8]):
    s = make_shared((16, 16), bf16)
    nv.cp_async(s, (0, 0), a, (0, 0))
    for k0 in range(0, 4):
        matmul(x, y, z, MMA)
'''
    d = describe_source(source, target="nvptx:sm_80", sizes={"K": 64})
    assert d.uses == {"warp_mma_16x8x16", "make_shared", "cp_async", "range", "matmul"}
    assert d.dtypes == {"bf16", "f32"} and d.sizes["K"] == 64 and "copy" not in d.uses
    with pytest.raises(KbError, match="kernel.py:1: the kernel source is not Python"):
        describe_source("def (:", filename="kernel.py")
    with pytest.raises(KbError, match="size K of a kernel description must be an int"):
        KernelDescription(sizes={"K": "64"})


def test_expressions_accept_only_integer_arithmetic() -> None:
    e = Expression.parse("K >= 4 * max(M, N) and K % 64 == 0")
    assert e.names == {"K", "M", "N"} and e.evaluate({"K": 512, "M": 64, "N": 128}) is True
    assert Expression.parse("1 < K <= 8").evaluate({"K": 9}) is False
    for bad in ("__import__('os')", "K.real", "[K]", "K ** 2", "1.5 * K", "lambda: 1", "min(K, key=1)", "K if M else N"):
        with pytest.raises(ExpressionError, match="accepted: integers, names"):
            Expression.parse(bad)
    with pytest.raises(ExpressionError, match="needs a value for N"):
        Expression.parse("M + N").evaluate({"M": 1})
    with pytest.raises(ExpressionError, match="divides by zero"):
        Expression.parse("M // N").evaluate({"M": 1, "N": 0})


def test_bad_conditions_name_their_line() -> None:
    with pytest.raises(EntryError, match="c.md:3: 'uses' names tma, which the language does not have"):
        conditions("- uses: matmul", "- uses: tma")
    with pytest.raises(EntryError, match="c.md:2: a condition is a mapping with one key"):
        conditions("- uses: matmul", "  feature: tma")
