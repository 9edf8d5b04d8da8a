"""False claims about what C holds are never proved: GEMMs whose C is not the product of A's
and B's rows over every k, though each step looks like one — an accumulator that starts from
something other than zero, operands or a result read as halves of wider elements. Each case
also runs: the interpreter's C differs from A·Bᵀ, so a proof would be a false one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from argus.dsl import bf16, from_storage, to_storage
from argus.dsl.cli import load_module
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
M = N = 64
K = 32

from test_product_tags import CLAIM  # noqa: E402

pytestmark = pytest.mark.usefixtures("no_result_cache")


def _edited(tmp_path: Path, name: str, *edits: tuple[str, str]):
    """examples/gemm.py, which makes its product claim (`test_product_tags.CLAIM`), with each
    (old, new) edit made (each old text once in it)."""
    source = (EXAMPLES / "gemm.py").read_text()
    assert source.count(CLAIM) == 1, "examples/gemm.py no longer states its product claim"
    for old, new in edits:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace("@kernel(block=(THREADS,))", "@kernel(block=(THREADS,), verify=False)"))
    return load_module(path)


def _operands(dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A, B (as the kernel takes them) and A·Bᵀ."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((M, K)), rng.standard_normal((N, K))
    if dtype == "f32":
        a, b = a.astype(np.float32), b.astype(np.float32)
        return a, b, a.astype(np.float64) @ b.astype(np.float64).T
    a, b = to_storage(a, bf16), to_storage(b, bf16)
    return a, b, from_storage(a, bf16).astype(np.float64) @ from_storage(b, bf16).astype(np.float64).T


def _never_proved(module, args: tuple, c: np.ndarray, reference: np.ndarray) -> None:
    """The kernel's C is not A·Bᵀ on this launch, and neither the checker nor the launch's shadow
    tags claim it is."""
    module.gemm[(1, 1)](*args)
    values = from_storage(c, bf16) if c.dtype == np.uint16 else c
    assert not np.allclose(values, reference, atol=1e-2, rtol=1e-2)
    result = module.gemm.verify()
    assert result.verdict is not Verdict.PROVED, result.text()
    assert check_launch(module.gemm, (1, 1), *args).verdict is not Verdict.PROVED


STORE = "acc[mi, ni, v] = 0.0"


def test_an_accumulator_started_at_a_constant_other_than_zero_is_not_the_product(tmp_path, interpreter_only):
    module = _edited(tmp_path, "from_one", (STORE, "acc[mi, ni, v] = 1.0"))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_an_accumulator_started_from_untagged_data_is_not_the_product(tmp_path, interpreter_only):
    module = _edited(tmp_path, "from_bias",
                     ('c: Tensor[f32, "M", "N"],', 'c: Tensor[f32, "M", "N"], bias: Tensor[f32, "M", "N"],'),
                     (STORE, "acc[mi, ni, v] = bias[0, 0]"))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    _never_proved(module, (a, b, c, np.ones((M, N), np.float32), M, N, K), c, reference)


ASSERTED = "    assert_tags(c, lambda m, n: product(a[m], b[n], (range(0, K),)))"
LOOP = "    for k0 in range(0, K, BK):\n"


@pytest.mark.parametrize("edits", [
    pytest.param([(STORE, "acc[mi, ni, v] = -0.0")], id="cleared with -0.0"),
    pytest.param([(ASSERTED, "    pass"), (LOOP, ASSERTED + "\n" + LOOP)], id="assert_tags after the clearing"),
])
def test_a_zeroed_accumulator_still_proves(tmp_path, interpreter_only, edits):
    """The controls: clearing the accumulator is what makes C the product, wherever the kernel
    states its assert_tags."""
    module = _edited(tmp_path, "cleared", *edits)
    assert module.gemm.verify().verdict is Verdict.PROVED
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    assert check_launch(module.gemm, (1, 1), a, b, c, M, N, K).verdict is Verdict.PROVED


def test_an_accumulator_scaled_by_zero_is_not_the_product(tmp_path, interpreter_only):
    """A scale keeps a product's terms (``alpha * acc``), but a scale by the constant zero leaves
    none: C is 0."""
    module = _edited(tmp_path, "times_zero", ("= acc[mi, ni, v]", "= acc[mi, ni, v] * 0.0"))
    a, b, reference = _operands("bf16")
    c = np.ones((M, N), np.float32)
    _never_proved(module, (a, b, c, M, N, K), c, reference)


CLEARED = ("    bfrag = make_local((4, 4), bf16)", "    bfrag = make_local((4, 4), bf16)\n    zero = make_local((1,), f32)\n"
                                                  "    zero[0] = 0.0")


@pytest.mark.parametrize("edits", [
    pytest.param([CLEARED, ("= acc[mi, ni, v]", "= acc[mi, ni, v] * zero[0]")], id="times a cleared register"),
    pytest.param([CLEARED, ("= acc[mi, ni, v]", "= zero[0] * acc[mi, ni, v]")], id="a cleared register times it"),
    pytest.param([("= acc[mi, ni, v]", "= acc[mi, ni, v] * (acc[mi, ni, v] * 0.0)")], id="times itself times 0.0"),
    pytest.param([CLEARED, ("= acc[mi, ni, v]", "= acc[mi, ni, v] / zero[0]")], id="over a cleared register"),
    pytest.param([("= acc[mi, ni, v]", "= acc[mi, ni, v] / 0.0")], id="over the constant zero"),
    pytest.param([(LOOP, "    for mi in static_range(2):\n        for ni in static_range(4):\n            for v in static_range(4):\n"
                         "                acc[mi, ni, v] = acc[mi, ni, v] / 0.0\n" + LOOP)],
                 id="cleared, then over the constant zero (no number, not nothing summed)"),
])
def test_an_accumulator_scaled_by_a_value_known_zero_is_not_the_product(tmp_path, interpreter_only, edits):
    """A scale by a value that holds no product keeps the product, but a register cleared to
    0.0 (or anything times the constant zero) is zero: C is 0 (or, divided, no number)."""
    module = _edited(tmp_path, "times_known_zero", *edits)
    a, b, reference = _operands("bf16")
    c = np.ones((M, N), np.float32)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)

SOMETIMES_CLEARED = ("    bfrag = make_local((4, 4), bf16)",
                    "    bfrag = make_local((4, 4), bf16)\n    zero = make_local((1,), f32)\n    zero[0] = 1.0\n"
                    "    if K > BK:\n        zero[0] = 0.0")


IN_A_VARIABLE = ("    for mi in static_range(2):\n        for ni in static_range(4):\n            for v in static_range(4):\n"
                 "                idx = MMA.c_layout",
                 "    z = 1.0\n    if K > BK:\n        z = 0.0\n"
                 "    for mi in static_range(2):\n        for ni in static_range(4):\n            for v in static_range(4):\n"
                 "                idx = MMA.c_layout")
SELECTED = (IN_A_VARIABLE[0], IN_A_VARIABLE[1].replace("    z = 1.0\n    if K > BK:\n        z = 0.0\n",
                                                       "    z = select(K > BK, 0.0, 1.0)\n"))


@pytest.mark.parametrize("edits", [
    pytest.param([SOMETIMES_CLEARED, ("= acc[mi, ni, v]", "= acc[mi, ni, v] * zero[0]")], id="times it"),
    pytest.param([SOMETIMES_CLEARED, ("= acc[mi, ni, v]", "= acc[mi, ni, v] / zero[0]")], id="over it"),
    pytest.param([IN_A_VARIABLE, ("= acc[mi, ni, v]", "= acc[mi, ni, v] * z")], id="a variable set to 0.0 on one path"),
    pytest.param([SELECTED, ("    tag,\n", "    select,\n    tag,\n"), ("= acc[mi, ni, v]", "= acc[mi, ni, v] * z")],
                 id="select(c, 0.0, 1.0)"),
])
def test_an_accumulator_scaled_by_a_register_cleared_on_one_path_is_not_the_product(tmp_path, interpreter_only,
                                                                                       edits):
    """A register cleared to 0.0 on one path and set to 1.0 on the other may be zero: the join
    of the two is no computed data, which a product may be scaled by, and C (0 where K > BK) is
    never proved to be the product."""
    module = _edited(tmp_path, "times_sometimes_zero", *edits)
    a, b, reference = _operands("bf16")
    c = np.ones((M, N), np.float32)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_operands_read_as_the_low_halves_of_wider_elements_are_not_the_product(tmp_path, interpreter_only):
    """A and B are f32, read through bf16 views: each bf16 read is the low half of an f32
    element (its low mantissa bits), not the element."""
    module = _edited(tmp_path, "low_halves",
                     ('def gemm(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"],',
                      'def gemm(a: Tensor[f32, "M", "K"], b: Tensor[f32, "N", "K"],'),
                     ("    sA = make_shared", "    av = a.view((M, 2 * K), bf16)\n    bv = b.view((N, 2 * K), bf16)\n"
                                             "    sA = make_shared"),
                     ("sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]",
                      "sA[e // BK, e % BK] = av[bm + e // BK, 2 * (k0 + e % BK)]"),
                     ("sB[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK]",
                      "sB[e // BK, e % BK] = bv[bn + e // BK, 2 * (k0 + e % BK)]"))
    a, b, reference = _operands("f32")
    c = np.zeros((M, N), np.float32)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_the_low_half_of_an_accumulator_stored_as_bf16_is_not_the_product(tmp_path, interpreter_only):
    """C is bf16; storing the low 16 bits of each f32 accumulator (not the accumulator rounded to
    bf16) stores no product."""
    module = _edited(tmp_path, "low_half_stored",
                     ('c: Tensor[f32, "M", "N"]', 'c: Tensor[bf16, "M", "N"]'),
                     ("= acc[mi, ni, v]", "= bitcast(lo(bitcast(acc[mi, ni, v], u32)), bf16)"),
                     ("    warp_mma_16x8x16,\n)", "    warp_mma_16x8x16,\n    bitcast,\n    lo,\n    u32,\n)"))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.uint16)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_a_stage_filled_from_b_at_a_s_rows_is_not_the_product_on_a_square_problem(tmp_path, interpreter_only):
    """With M == N, A's stage filled from B's rows bm + r (instead of A's) is in bounds in every
    launch, and C is B·Bᵀ."""
    module = _edited(tmp_path, "b_times_b",
                     ("assume(K % BK == 0)", "assume(K % BK == 0)\n    assume(M == N)"),
                     ("sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]",
                      "sA[e // BK, e % BK] = b[bm + e // BK, k0 + e % BK]"))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_k_slices_summed_out_of_order_are_no_violation(tmp_path, interpreter_only):
    """Two loops over K, the odd slices then the even ones: C is A·Bᵀ. The odd slices make a
    progression of runs, which the even ones fill, so the shadow tags see the full product and
    no candidate counterexample replays. (Not proved either: the progression's count, K / 32,
    is symbolic, and the checker's spans have counts known when the kernel is compiled.)"""
    source = (EXAMPLES / "gemm.py").read_text()
    start, end = source.index("    for k0 in range(0, K, BK):\n"), source.index("    for mi in static_range(2):\n        "
                                                                                "for ni in static_range(4):\n"
                                                                                "            for v in static_range(4):\n"
                                                                                "                idx = MMA.c_layout")
    loop = source[start:end]
    module = _edited(tmp_path, "odd_then_even", ("assume(K % BK == 0)", "assume(K % (2 * BK) == 0)"),
                     (loop, loop.replace("range(0, K, BK)", "range(BK, K, 2 * BK)")
                      + loop.replace("range(0, K, BK)", "range(0, K, 2 * BK)")))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    module.gemm[(1, 1)](a, b, c, M, N, K)
    assert np.allclose(c, reference, atol=1e-3, rtol=1e-3)
    result = module.gemm.verify()
    assert result.verdict is not Verdict.VIOLATED, result.text()


BITS = ("    warp_mma_16x8x16,\n)", "    warp_mma_16x8x16,\n    bitcast,\n    byte_perm,\n    concat,\n    hi,\n    lo,\n    u8,\n"
        "    u16,\n)")
FILL_A = "sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]"
FILL_B = "sB[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK]"
# An operand with rows (and a product) is laid out in bytes as two elements, told apart by their
# places only (`argus.verify.byte_moves`): bytes moved one at a time (byte_perm, concat of halves,
# a u8 view) must not put one element's even bytes next to another's odd bytes, or skip the bytes
# in between, and read as a whole element that no load gave.


@pytest.mark.parametrize("edits", [
    pytest.param([(FILL_A, "sA[e // BK, e % BK] = bitcast(byte_perm(b[bn + e // BK, k0 + e % BK], "
                           "a[bm + e // BK, k0 + e % BK], (0, 3)), bf16)")], id="byte_perm: B's low byte, A's high"),
    pytest.param([(FILL_A, "sA[e // BK, e % BK] = bitcast(concat(lo(bitcast(b[bn + e // BK, k0 + e % BK], u16)), "
                           "hi(bitcast(a[bm + e // BK, k0 + e % BK], u16))), bf16)")], id="concat of halves"),
    pytest.param([("    sB = make_shared((BN, BK), bf16)", "    sB = make_shared((BN, BK), bf16)\n"
                                                             "    bytes_a = sA.view((BM, 2 * BK), u8)"),
                  (FILL_A, "bytes_a[e // BK, 2 * (e % BK)] = lo(bitcast(b[bn + e // BK, k0 + e % BK], u16))\n"
                           "            bytes_a[e // BK, 2 * (e % BK) + 1] = hi(bitcast(a[bm + e // BK, k0 + e % BK], u16))")],
                 id="one byte at a time through a u8 view of the stage"),
])
def test_an_operand_made_of_bytes_of_two_elements_is_no_operand(tmp_path, interpreter_only, edits):
    """A's stage holds, at each element, the low byte of B[n, k] and the high byte of A[m, k]:
    the pair (k) of one and the rows (m) of the other, and neither value."""
    module = _edited(tmp_path, "mixed_bytes", BITS, *edits)
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_bytes_0_and_3_of_f32_operands_are_no_bf16_operands(tmp_path, interpreter_only):
    """A and B are f32; their stages hold bytes 0 and 3 of each element as a bf16 (the lowest
    mantissa byte and the sign and exponent), which is neither the element nor it rounded."""
    module = _edited(tmp_path, "bytes_0_and_3", BITS,
                     ('def gemm(a: Tensor[bf16, "M", "K"], b: Tensor[bf16, "N", "K"],',
                      'def gemm(a: Tensor[f32, "M", "K"], b: Tensor[f32, "N", "K"],'),
                     (FILL_A, "sA[e // BK, e % BK] = bitcast(byte_perm(a[bm + e // BK, k0 + e % BK], "
                              "a[bm + e // BK, k0 + e % BK], (0, 3)), bf16)"),
                     (FILL_B, "sB[e // BK, e % BK] = bitcast(byte_perm(b[bn + e // BK, k0 + e % BK], "
                              "b[bn + e // BK, k0 + e % BK], (0, 3)), bf16)"))
    a, b, reference = _operands("f32")
    c = np.zeros((M, N), np.float32)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)


@pytest.mark.parametrize("stored, dtype", [
    pytest.param("bitcast(byte_perm(acc[mi, ni ^ 1, v], acc[mi ^ 1, ni, v], (0, 5, 2, 7)), f32)", "f32",
                 id="A's rows from one accumulator, B's rows and k from another"),
    pytest.param("bitcast(byte_perm(acc[mi, ni, v], acc[mi, ni, v], (0, 3)), bf16)", "bf16",
                 id="bytes 0 and 3 of an f32 accumulator as bf16"),
])
def test_a_result_made_of_bytes_of_accumulators_is_not_the_product(tmp_path, interpreter_only, stored, dtype):
    module = _edited(tmp_path, "mixed_result", BITS, ("= acc[mi, ni, v]", f"= {stored}"),
                     *([('c: Tensor[f32, "M", "N"]', 'c: Tensor[bf16, "M", "N"]')] if dtype == "bf16" else []))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.uint16 if dtype == "bf16" else np.float32)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)


EPILOGUE = ("    for mi in static_range(2):\n        for ni in static_range(4):\n            for v in static_range(4):\n"
            "                idx = MMA.c_layout(lane, v)\n"
            "                c[bm + wm * 32 + mi * 16 + idx % 16, bn + wn * 32 + ni * 8 + idx // 16] = acc[mi, ni, v]\n")
EACH = "    for mi in static_range(2):\n        for ni in static_range(4):\n            for v in static_range(4):\n"
VIEWS = "    tmp = make_local((2, 4, 4), f32)\n    tb = tmp.view((2, 4, 16), u8)\n    ab = acc.view((2, 4, 16), u8)\n"
TMP_STORED = EPILOGUE.replace("= acc[mi, ni, v]", "= tmp[mi, ni, v]")
EVEN_BYTES = ("                tb[mi, ni, 4 * v] = ab[mi, ni ^ 1, 4 * v]\n"
              "                tb[mi, ni, 4 * v + 2] = ab[mi, ni ^ 1, 4 * v + 2]\n")
ODD_BYTES = ("                tb[mi, ni, 4 * v + 1] = ab[mi ^ 1, ni, 4 * v + 1]\n"
             "                tb[mi, ni, 4 * v + 3] = ab[mi ^ 1, ni, 4 * v + 3]\n"
             "                tb[mi, ni, 4 * v + 3] = ab[mi ^ 1, ni, 4 * v + 3]\n")
BYTE_BY_BYTE = EVEN_BYTES + ODD_BYTES


@pytest.mark.parametrize("epilogue", [
    pytest.param(VIEWS + EACH + "                tmp[mi, ni, v] = acc[mi ^ 1, ni, v]\n" + EACH + EVEN_BYTES
                 + TMP_STORED.removeprefix(EACH), id="even bytes written over, the rest as before the loop"),
    pytest.param(VIEWS + EACH + BYTE_BY_BYTE + TMP_STORED.removeprefix(EACH),
                 id="last byte written alone (twice), read in the loop"),
    pytest.param(VIEWS + EACH + BYTE_BY_BYTE + TMP_STORED, id="last byte written alone (twice), read after the loop"),
])
def test_accumulator_bytes_written_in_a_static_loop_make_no_product(tmp_path, interpreter_only, epilogue):
    """A static loop's copies are checked together, their register writes kept in a journal: a
    read there must see what program order leaves, where a write over part of an element cut it
    (the even bytes of `acc[mi, ni ^ 1, v]` written over `acc[mi ^ 1, ni, v]`, copied before the
    loop) and where a last byte was written without its first (one byte at a time through a u8
    view, a byte written twice so that reads search the journal by place). C holds A's rows of
    one accumulator with B's rows of another, which is no product."""
    module = _edited(tmp_path, "bytes_in_a_loop", BITS, (EPILOGUE, epilogue))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)


ATOMICS = ("    warp_mma_16x8x16,\n)", "    warp_mma_16x8x16,\n    atomic_add,\n)")
C_AT = "c[bm + wm * 32 + mi * 16 + idx % 16, bn + wn * 32 + ni * 8 + idx // 16]"
S_AT = "sC[wm * 32 + mi * 16 + idx % 16, wn * 32 + ni * 8 + idx // 16]"


@pytest.mark.parametrize("epilogue", [
    pytest.param("    sC = make_shared((BM, BN), f32)\n" + EACH + "                idx = MMA.c_layout(lane, v)\n"
                 f"                {S_AT} = acc[mi, ni, v]\n                atomic_add({S_AT}, 1.0)\n"
                 f"                {C_AT} = {S_AT}\n", id="added to in a shared tile, then stored"),
    pytest.param(EPILOGUE + f"                atomic_add({C_AT}, 1.0)\n", id="stored, then added to in C"),
])
def test_a_product_updated_by_an_atomic_is_not_the_product(tmp_path, interpreter_only, epilogue):
    """An atomic leaves computed data where it updates (C is A·Bᵀ + 1): in a tile, the tags
    there are ⊤ for the checker and the shadow tags alike; in C, whose stores are checked but
    whose atomics are not, neither proves the launch."""
    module = _edited(tmp_path, "atomic_update", ATOMICS, (EPILOGUE, epilogue))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_a_copy_gathering_bytes_of_two_accumulators_makes_no_product(tmp_path, interpreter_only):
    """A u8 view of the accumulators whose elements interleave bytes 0 and 2 of `acc[0, 0, 0]`
    with bytes 1 and 3 of `acc[1, 1, 0]`, copied into one f32: A's rows of one with B's rows and
    k of the other, stored where `acc[0, 1, 0]` goes. The copy writes contiguous bytes, but they
    were no run of the source."""
    module = _edited(tmp_path, "copy_gather", BITS,
                     ("    u16,\n)", "    u16,\n    copy,\n    copy_vector,\n)"),
                     ("import numpy as np\n", "import numpy as np\nfrom argus.layout import Layout\n"),
                     (EPILOGUE, "    mixed = acc.view(Layout((2, 2, 2), (81, 2, 44)), u8)\n"
                                "    tmp = make_local((1,), f32)\n"
                                "    copy(mixed[:, :, 0], tmp.view((4,), u8), copy_vector(1))\n" + EPILOGUE +
                                "    idx = MMA.c_layout(lane, 0)\n"
                                "    c[bm + wm * 32 + idx % 16, bn + wn * 32 + 8 + idx // 16] = tmp[0]\n"))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    _never_proved(module, (a, b, c, M, N, K), c, reference)


def test_bits_of_one_type_multiplied_as_another_s_are_no_product_of_the_data(tmp_path, interpreter_only):
    """bf16 A and B staged through f16 views and multiplied by an f16 atom: the fragments carry
    A's and B's tags, but the numbers multiplied are not A's and B's (a product takes operands
    read as the type their tag functions described)."""
    module = _edited(tmp_path, "as_f16",
                     ("    f32,\n", "    f16,\n    f32,\n"),
                     ("MMA = warp_mma_16x8x16(bf16, bf16, f32)", "MMA = warp_mma_16x8x16(f16, f16, f32)"),
                     ("    sA = make_shared((BM, BK), bf16)\n    sB = make_shared((BN, BK), bf16)\n",
                      "    sA = make_shared((BM, BK), f16)\n    sB = make_shared((BN, BK), f16)\n"
                      "    ah = a.view((M, K), f16)\n    bh = b.view((N, K), f16)\n"),
                     ("    afrag = make_local((2, 8), bf16)\n    bfrag = make_local((4, 4), bf16)\n",
                      "    afrag = make_local((2, 8), f16)\n    bfrag = make_local((4, 4), f16)\n"),
                     ("sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]", "sA[e // BK, e % BK] = ah[bm + e // BK, k0 + e % BK]"),
                     ("sB[e // BK, e % BK] = b[bn + e // BK, k0 + e % BK]", "sB[e // BK, e % BK] = bh[bn + e // BK, k0 + e % BK]"))
    a, b, reference = _operands("bf16")
    c = np.zeros((M, N), np.float32)
    with np.errstate(all="ignore"):
        _never_proved(module, (a, b, c, M, N, K), c, reference)
