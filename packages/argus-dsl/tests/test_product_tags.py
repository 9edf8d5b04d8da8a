"""What a product computes: operands tagged with their rows (``tag(a, fn, rows=...)``), the
accumulator holding the product of A's and B's rows over the set of k it summed, and
``assert_tags(c, lambda m, n: product(...))`` checked at every store into C — statically for
every launch, and on a launch by the shadow tags. The GEMM example states it; the bugs it
catches are the ones pairing alone let through: wrong rows of A or B, operands swapped, a skipped
K slice, a store to the wrong rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from argus.dsl import ArgusSyntaxError, ArgusTypeError, Tensor, assert_tags, f32, kernel, tag
from argus.dsl.cli import load_module
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

pytestmark = pytest.mark.usefixtures("no_result_cache")


#: The GEMM example's product claim: rows for A and B, and what C holds.
CLAIM = ("    tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))\n"
         "    tag(b, lambda n, k: (k,), rows=lambda n, k: (n,))\n"
         "    assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))\n")


def _gemm(tmp_path: Path, *edits: tuple[str, str]):
    source = (EXAMPLES / "gemm.py").read_text()
    assert source.count(CLAIM) == 1, "examples/gemm.py no longer states its product claim"
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / "gemm_edited.py"
    path.write_text(source.replace("@kernel(block=(THREADS,))", "@kernel(block=(THREADS,), verify=False)"))
    return load_module(path)


def test_the_gemm_example_proves_every_element_of_c_is_its_full_product(tmp_path):
    result = _gemm(tmp_path).gemm.verify()
    assert result.verdict is Verdict.PROVED, result.text()


BUGS = [
    pytest.param(("for k0 in range(0, K, BK):", "for k0 in range(0, K - BK, BK):"), "k over (0..16)",
                 id="the last K slice skipped"),
    pytest.param(("for k0 in range(0, K, BK):", "for k0 in range(BK, K, BK):"), "k over (16..",
                 id="the first K slice skipped"),
    pytest.param(("afrag[mi, v] = sA[wm * 32", "afrag[mi, v] = sA[wn * 32"), "product of A rows",
                 id="A's fragment from the other warp's rows"),
    pytest.param(("bfrag[ni, v] = sB[wn * 32", "bfrag[ni, v] = sB[wm * 32"), "product of",
                 id="B's fragment from the other warp's rows"),
    pytest.param(("c[bm + wm * 32", "c[bm + wn * 32"), "product of A rows", id="C stored at the other warp's rows"),
    pytest.param(("sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]",
                  "sA[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK]"), "product of A rows",
                 id="A's stage filled from B"),
]


@pytest.mark.parametrize("edit, shown", BUGS)
def test_a_gemm_computing_something_else_is_violated_with_a_replayed_witness(tmp_path, edit, shown):
    module = _gemm(tmp_path, edit)
    result = module.gemm.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "violated" and witness["message"].startswith("stored into 'c' at "), witness
    assert witness["replayed"].startswith("reproduced in block"), witness
    assert shown in str(witness["lhs tag"]), witness
    # and the same launch, run with shadow tags, finds it too
    m, n, k = witness["sizes"]["M"], witness["sizes"]["N"], witness["sizes"]["K"]
    problem = module.example_gemm(np.random.default_rng(0), m=m, n=n, k=k)
    assert check_launch(module.gemm, problem.grid, *problem.args).verdict is Verdict.VIOLATED


def test_every_store_of_a_wider_view_is_checked_element_by_element(tmp_path):
    """gemm_tma stores C as bf16 pairs through a u128 view of it, after rounding each f32
    accumulator to bf16: each bf16 element is the product, and a wrong column pair is found."""
    from argus.dsl.check.verification import verify_kernel

    source = (EXAMPLES / "gemm_tma.py").read_text()
    for old, new in (("        tag(a, lambda m, k: (k,))  # the product pairs A[m, k] with B[n, k]: the tags say which k\n"
                      "        tag(b, lambda n, k: (k,))\n",
                      "        tag(a, lambda m, k: (k,), rows=lambda m, k: (m,))\n"
                      "        tag(b, lambda n, k: (k,), rows=lambda n, k: (n,))\n"
                      "        assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))\n"),
                     ("    Tensor,\n", "    Tensor,\n    assert_tags,\n    product,\n")):
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    right = tmp_path / "gemm_tma_claimed.py"
    right.write_text(source)
    constants = load_module(right).example_gemm_tma(np.random.default_rng(0)).constants
    proved = verify_kernel_of(right, constants)
    assert proved.verdict is Verdict.PROVED, proved.text()
    wrong = source.replace("pairs[row, ((pair // 4) ^ (row % 8)) * 4 + pair % 4] = concat(bf16(acc[2 * p, half]),\n"
                           "                                                                             bf16(acc[2 * p + 1, half]))",
                           "pairs[row, ((pair // 4) ^ (row % 8)) * 4 + pair % 4] = concat(bf16(acc[2 * p + 1, half]),\n"
                           "                                                                             bf16(acc[2 * p, half]))")
    assert wrong != source
    path = tmp_path / "gemm_tma_pairs.py"
    path.write_text(wrong)
    module = load_module(path)
    constants = module.example_gemm_tma(np.random.default_rng(0)).constants
    result = verify_kernel(module.gemm_tma.specialize(**constants), "gemm_tma")
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert "product of" in str(result.witnesses[0]["lhs tag"])


def verify_kernel_of(path: Path, constants: dict) -> object:
    from argus.dsl.check.verification import verify_kernel

    return verify_kernel(load_module(path).gemm_tma.specialize(**constants), "gemm_tma")


def test_an_accumulator_restarted_under_a_branch_is_never_proved(tmp_path):
    """Zeroing C inside the loop under a runtime condition restarts the sum in some iterations:
    what C holds at the store is no one span of k, so no proof (and where it is wrong, a
    witness)."""
    zeroing = ("    for mi in static_range(2):\n        for ni in static_range(4):\n            for v in static_range(4):\n"
               "                acc[mi, ni, v] = 0.0\n")
    loop = "    for k0 in range(0, K, BK):\n"
    restart = loop + "        if k0 == BK:\n" + "".join("        " + line + "\n" for line in zeroing.splitlines())
    module = _gemm(tmp_path, (loop, zeroing + restart))
    result = module.gemm.verify()
    assert result.verdict is not Verdict.PROVED, result.text()


def test_an_atomic_into_a_tensor_with_asserted_tags_is_not_taken_for_checked(tmp_path):
    from argus.dsl import atomic_add, thread_idx

    @kernel(block=(32,), verify=False)
    def summed(x: Tensor[f32, 32], out: Tensor[f32, 32]):
        tag(x, lambda i: (i,))
        assert_tags(out, lambda i: (i,))
        t = thread_idx.x
        atomic_add(out[t], x[t])

    result = summed.verify()
    assert result.verdict is Verdict.UNKNOWN and "assert_tags" in result.text(), result.text()


def test_stores_of_the_right_data_prove_and_of_the_wrong_data_are_violated():
    from argus.dsl import thread_idx

    @kernel(block=(32,), verify=False)
    def shifted(x: Tensor[f32, 32], out: Tensor[f32, 32]):
        tag(x, lambda i: (i,))
        assert_tags(out, lambda i: (i,))
        t = thread_idx.x
        out[t] = x[(t + 1) % 32]

    @kernel(block=(32,), verify=False)
    def copied(x: Tensor[f32, 32], out: Tensor[f32, 32]):
        tag(x, lambda i: (i,))
        assert_tags(out, lambda i: (i,))
        t = thread_idx.x
        out[t] = x[t]

    assert copied.verify().verdict is Verdict.PROVED
    result = shifted.verify()
    assert result.verdict is Verdict.VIOLATED and result.witnesses[0]["replayed"].startswith("reproduced")
    x = np.arange(32, dtype=np.float32)
    assert check_launch(shifted, 1, x, np.zeros(32, np.float32)).verdict is Verdict.VIOLATED
    assert check_launch(copied, 1, x, np.zeros(32, np.float32)).verdict is Verdict.PROVED


@pytest.mark.parametrize("body, error, words", [
    ("tag(x, lambda i: product(x[i], x[i], (range(0, 4),)))", ArgusTypeError, "assert_tags"),
    ("assert_tags(x, lambda i: product(x[i], x[i], (i,)))", ArgusTypeError, "one range"),
    ("assert_tags(x, lambda i: (i,), rows=lambda i: (i,))", ArgusSyntaxError, "keyword 'rows'"),
    ("tag(x, lambda i: (i,), rows=lambda i, j: (i,))", ArgusTypeError, "one coordinate per mode"),
    ("tag(x, lambda i: (i,), extra=lambda i: (i,))", ArgusSyntaxError, "keyword 'extra'"),
    ("x[0] = product(x[1], x[1], (range(0, 1),))", ArgusSyntaxError, "tag function"),
])
def test_product_tags_written_wrongly_are_refused_at_their_line(tmp_path, body, error, words):
    path = tmp_path / "bad.py"
    path.write_text("from argus.dsl import Tensor, assert_tags, f32, kernel, product, tag\n\n\n"
                    "@kernel(block=(32,), verify=False)\n"
                    f"def bad(x: Tensor[f32, 8]):\n    {body}\n")
    with pytest.raises(error) as caught:
        load_module(path).bad.specialize()
    assert words in str(caught.value) and "bad.py:6:" in str(caught.value), str(caught.value)


#: The CDNA attention's second product: each sums every other group of four keys (lane group g
#: holds keys 8·g + 4·t … +3), the one with the other t fills the gaps.
CDNA_PRODUCT = "                    matmul(vf[t, :], pf[p, t, :], o_acc[n, :], MMA)\n"


def _attention_cdna(tmp_path: Path, *edits: tuple[str, str]):
    source = (EXAMPLES / "attention_cdna.py").read_text()
    assert source.count("assert_tags(o, lambda s, h, d: product(v[d], pf[s, h]") == 1, \
        "examples/attention_cdna.py no longer states its product claim"
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / "attention_cdna_edited.py"
    path.write_text(source.replace("@kernel(block=(THREADS,), warp_size=64)",
                                   "@kernel(block=(THREADS,), warp_size=64, verify=False)"))
    return load_module(path)


def test_products_that_each_sum_every_other_group_of_keys_prove_the_whole_sum(tmp_path):
    """Each of the CDNA attention's products of Oᵀ sums keys 8·g + 4·t … +3 (every other group
    of four); with the other t's they make every key of the tiles up to the query's own."""
    module = _attention_cdna(tmp_path)
    result = module.attention_cdna.verify(**module.example_attention_cdna(np.random.default_rng(0)).constants)
    assert result.verdict is Verdict.PROVED, result.text()


@pytest.mark.parametrize("edit, shown", [
    pytest.param((CDNA_PRODUCT, CDNA_PRODUCT.replace("vf[t, :], pf[p, t, :]", "vf[0, :], pf[p, 0, :]")),
                 None, id="one group of four keys summed twice, the other never"),
    pytest.param(("                for t in static_range(2):\n" + CDNA_PRODUCT,
                  "                for t in static_range(1):\n" + CDNA_PRODUCT),
                 "every 8", id="every other group of four keys skipped"),
])
def test_products_that_skip_a_group_of_keys_are_violated_with_a_replayed_witness(tmp_path, edit, shown):
    module = _attention_cdna(tmp_path, edit)
    problem = module.example_attention_cdna(np.random.default_rng(0))
    result = module.attention_cdna.verify(**problem.constants)
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["message"].startswith("stored into 'o' at "), witness
    assert witness["replayed"].startswith("reproduced in block"), witness
    if shown is not None:
        assert shown in str(witness["lhs tag"]), witness
    # and a launch run with shadow tags finds it too
    assert check_launch(module.attention_cdna, problem.grid, *problem.args, **problem.constants).verdict \
        is Verdict.VIOLATED


def test_data_brought_before_a_loop_sums_as_its_index_only_at_the_first_iteration(tmp_path):
    """The first pass over the key loop sums V's keys 0..64 (fetched before it) as P's
    k0..k0 + 64: one set at the first iteration only. With the fetch of the next tile dropped,
    every iteration reads tile 0 again, which the passes after it find."""
    module = _attention_cdna(tmp_path, ("        fetch(kv, vv, kr, vrv, k0 + KT, hk, tid, D)  # in flight while this tile is used\n", ""))
    result = module.attention_cdna.verify(**module.example_attention_cdna(np.random.default_rng(0)).constants)
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["replayed"].startswith("reproduced in block") and witness["loops"]["k0"] > 0, witness
