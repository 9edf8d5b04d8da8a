"""`argus verify` never takes "written on one path" for "written": a byte a branch on a runtime
condition, or a runtime loop that may run no iteration, leaves unwritten in some launches is an
`uninitialized-read` where it is read, with a witness launch (sizes, block, thread) that the
interpreter replays; where no launch reaching the read leaves it unwritten, nothing is
reported."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from argus.dsl import (
    Tensor,
    bf16,
    block_idx,
    copy,
    copy_vector,
    exp2,
    f32,
    kernel,
    lane_id,
    make_local,
    make_shared,
    matmul,
    reset_tags,
    static_range,
    syncthreads,
    tag,
    thread_idx,
    u128,
    warp_mma_16x8x16,
)
from argus.dsl.cli import load_module
from argus.verify import Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ZEROING = """    for mi in static_range(2):
        for ni in static_range(4):
            for v in static_range(4):
                acc[mi, ni, v] = 0.0
"""

pytestmark = pytest.mark.usefixtures("no_result_cache")


def _pairing_only(source: str) -> str:
    """A GEMM's source claiming only that its products' operands pair up: a sum started under a
    branch is no one span of k the checker follows (what C holds is not the claim of these
    tests, whether its registers are written is)."""
    return "\n".join(line for line in source.split("\n") if "assert_tags(c," not in line)


def _gemm_zeroing_only(tmp_path: Path, condition: str):
    """The GEMM example with its accumulators zeroed only under `condition`."""
    source = _pairing_only((EXAMPLES / "gemm.py").read_text())
    assert ZEROING in source
    guarded = f"    if {condition}:\n" + "".join(f"    {line}\n" for line in ZEROING.splitlines())
    path = tmp_path / "gemm_guarded.py"
    path.write_text(source.replace(ZEROING, guarded).replace("@kernel(block=(THREADS,))",
                                                             "@kernel(block=(THREADS,), verify=False)"))
    return load_module(path).gemm


def _uninitialized(result, site_text: str) -> dict:
    """The replayed uninitialized-read witness of `result` at the line holding `site_text`."""
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "uninitialized-read", witness
    assert witness["replayed"].startswith(("the interpreter faults the same way", "reproduced")), witness
    from argus.verify.results import _source_line

    assert site_text in (_source_line(witness["assertion"]) or ""), witness
    return witness


def test_accumulators_zeroed_only_in_the_first_row_of_blocks(tmp_path):
    result = _gemm_zeroing_only(tmp_path, "block_idx.y < 1").verify()
    witness = _uninitialized(result, "matmul(")
    assert witness["block"][1] >= 1, witness  # a block the zeroing skips


def test_accumulators_zeroed_only_for_long_k(tmp_path):
    result = _gemm_zeroing_only(tmp_path, "K > 64").verify()
    witness = _uninitialized(result, "matmul(")
    assert witness["sizes"]["K"] <= 64, witness


def test_accumulators_zeroed_under_a_condition_every_launch_meets_are_written(tmp_path):
    result = _gemm_zeroing_only(tmp_path, "K > 0").verify()  # K is a tensor's size: at least 1
    assert result.verdict is Verdict.PROVED, result.text()


# ---- a runtime loop that may run no iteration ---------------------------------------------------


@kernel(block=(32,), verify=False)
def written_in_a_loop(x: Tensor[f32, 32], out: Tensor[f32, 32], m: int):
    s = make_shared((32,), f32)
    for i in range(0, m):  # m may be 0 or less: then nothing writes s
        s[thread_idx.x] = x[thread_idx.x]
    syncthreads()
    out[thread_idx.x] = s[thread_idx.x]


@kernel(block=(32,), verify=False)
def written_in_a_loop_that_always_runs(x: Tensor[f32, "n"], out: Tensor[f32, 32], n: int):
    s = make_shared((32,), f32)
    for i in range(0, n):  # n is a tensor's size: the loop runs
        s[thread_idx.x] = 1.0
    syncthreads()
    out[thread_idx.x] = s[thread_idx.x]


@kernel(block=(32,), verify=False)
def written_in_a_pipelined_loop(x: Tensor[f32, 32], out: Tensor[f32, 32], m: int):
    s = make_shared((64,), f32)
    s[thread_idx.x] = x[thread_idx.x]  # a prologue fills the first half (the loop is peeled)
    for i in range(0, m):
        s[32 + thread_idx.x] = x[thread_idx.x]
    syncthreads()
    out[thread_idx.x] = s[32 + thread_idx.x]


@pytest.mark.parametrize("k", [written_in_a_loop, written_in_a_pipelined_loop])
def test_bytes_written_only_in_a_loop_that_may_not_run(k):
    witness = _uninitialized(k.verify(), "out[thread_idx.x] = s[")
    assert witness["sizes"]["m"] <= 0, witness


def test_bytes_written_in_a_loop_every_launch_runs_are_written():
    assert written_in_a_loop_that_always_runs.verify().verdict is Verdict.NOTHING_TO_PROVE


# ---- branches --------------------------------------------------------------------------------


@kernel(block=(32,), verify=False)
def each_side_writes_half(out: Tensor[f32, 32], n: int):
    s = make_shared((32,), f32)
    if n > 4:
        if thread_idx.x < 16:
            s[thread_idx.x] = 1.0
    else:
        if thread_idx.x >= 16:
            s[thread_idx.x] = 2.0
    syncthreads()
    out[thread_idx.x] = s[thread_idx.x]


@kernel(block=(32,), verify=False)
def each_side_writes_all(out: Tensor[f32, 32], n: int):
    s = make_shared((32,), f32)
    if n > 4:
        s[thread_idx.x] = 1.0
    else:
        s[thread_idx.x] = 2.0
    syncthreads()
    out[thread_idx.x] = s[thread_idx.x]


@kernel(block=(32,), verify=False)
def read_under_the_same_guard(out: Tensor[f32, 32], n: int):
    s = make_shared((32,), f32)
    if n > 4:
        s[thread_idx.x] = 1.0
    syncthreads()
    if n > 4:  # (the guard of the rest of a kernel, in place of an early return)
        out[thread_idx.x] = s[thread_idx.x]


@kernel(block=(32,), verify=False)
def read_after_the_guard(out: Tensor[f32, 32], n: int):
    s = make_shared((32,), f32)
    if n > 4:
        s[thread_idx.x] = 1.0
    syncthreads()
    out[thread_idx.x] = s[thread_idx.x]


@kernel(block=(32,), verify=False)
def registers_written_by_some_threads(out: Tensor[f32, 32], n: int):
    r = make_local((1,), f32)
    s = make_shared((32,), f32)
    if thread_idx.x < n:  # a condition of its own for each thread
        r[0] = 1.0
    s[thread_idx.x] = r[0]
    syncthreads()
    out[thread_idx.x] = s[thread_idx.x]


def test_each_side_of_a_branch_writing_its_own_half():
    _uninitialized(each_side_writes_half.verify(), "out[thread_idx.x] = s[")


def test_each_side_of_a_branch_writing_everything():
    assert each_side_writes_all.verify().verdict is Verdict.NOTHING_TO_PROVE


def test_a_read_under_the_guard_of_the_write_is_no_finding():
    assert read_under_the_same_guard.verify().verdict is Verdict.NOTHING_TO_PROVE


def test_a_read_after_the_guard_of_the_write():
    witness = _uninitialized(read_after_the_guard.verify(), "out[thread_idx.x] = s[")
    assert witness["sizes"]["n"] <= 4, witness


def test_registers_written_under_a_condition_of_each_thread():
    witness = _uninitialized(registers_written_by_some_threads.verify(), "s[thread_idx.x] = r[0]")
    assert witness["thread"] >= witness["sizes"]["n"], witness  # a thread the condition leaves out


@kernel(block=(32,), verify=False)
def written_where_the_data_says(x: Tensor[f32, 32], out: Tensor[f32, 32]):
    s = make_shared((32,), f32)
    if x[thread_idx.x] > 0.0:  # a condition the checker does not follow
        s[thread_idx.x] = 1.0
    syncthreads()
    out[thread_idx.x] = s[thread_idx.x]


def test_bytes_written_where_the_data_says_are_never_taken_for_written():
    result = written_where_the_data_says.verify()
    assert result.verdict in (Verdict.VIOLATED, Verdict.UNKNOWN), result.text()


# ---- what keeps a byte written on some paths only so ---------------------------------------------


@kernel(block=(32,), verify=False)
def reset_after_a_guarded_write(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    s = make_shared((32,), f32)
    if n > 4:
        s[thread_idx.x] = x[thread_idx.x]
    syncthreads()
    reset_tags(s)  # forgets the tags, not whether the bytes were written
    out[thread_idx.x] = s[thread_idx.x]


@kernel(block=(32,), verify=False)
def tagged_after_a_guarded_write(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    s = make_shared((32,), f32)
    if n > 4:
        s[thread_idx.x] = x[thread_idx.x]
    syncthreads()
    tag(s, lambda i: (i,))  # gives tags, writes no data
    out[thread_idx.x] = s[thread_idx.x]


@kernel(block=(32,), verify=False)
def read_in_a_loop_after_a_guarded_write(out: Tensor[f32, 32], n: int, m: int):
    s = make_shared((32,), f32)
    if n > 4:
        s[thread_idx.x] = 1.0
    syncthreads()
    for i in range(0, m):
        out[thread_idx.x] = s[thread_idx.x]  # the first iteration reads what the branch left
        syncthreads()
        s[thread_idx.x] = 2.0
        syncthreads()


@pytest.mark.parametrize("k, site", [(reset_after_a_guarded_write, "out[thread_idx.x] = s["),
                                     (tagged_after_a_guarded_write, "out[thread_idx.x] = s["),
                                     (read_in_a_loop_after_a_guarded_write, "out[thread_idx.x] = s[")])
def test_a_byte_written_on_some_paths_stays_so(k, site):
    witness = _uninitialized(k.verify(), site)
    assert witness["sizes"]["n"] <= 4, witness


def test_the_witness_replays_on_the_interpreter():
    """The witness's launch faults when run as it says (block, sizes)."""
    from argus.dsl import KernelFault

    result = read_after_the_guard.verify()
    witness = _uninitialized(result, "out[thread_idx.x] = s[")
    with pytest.raises(KernelFault, match="uninitialized-read"):
        read_after_the_guard[(1,)](np.zeros(32, np.float32), witness["sizes"]["n"])
    read_after_the_guard[(1,)](np.zeros(32, np.float32), 5)  # (a launch taking the branch is fine)


# ---- variables ---------------------------------------------------------------------------------


@kernel(block=(32,), verify=False)
def variable_assigned_under_a_branch(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    if n > 4:
        v = x[thread_idx.x]
    out[thread_idx.x] = v


@kernel(block=(32,), verify=False)
def variable_assigned_in_a_loop(x: Tensor[f32, 32], out: Tensor[f32, 32], m: int):
    for i in range(0, m):
        v = x[thread_idx.x]
    out[thread_idx.x] = v


@kernel(block=(32,), verify=False)
def variable_assigned_on_every_path(x: Tensor[f32, 32], out: Tensor[f32, 32], n: int):
    v = 0.0
    if n > 4:
        v = x[thread_idx.x]
    out[thread_idx.x] = v


@pytest.mark.parametrize("k, size", [(variable_assigned_under_a_branch, "n"), (variable_assigned_in_a_loop, "m")])
def test_a_variable_assigned_on_some_paths_only(k, size):
    witness = _uninitialized(k.verify(), "out[thread_idx.x] = v")
    assert witness["sizes"][size] <= (4 if size == "n" else 0), witness


def test_a_variable_assigned_on_every_path_is_no_finding():
    assert variable_assigned_on_every_path.verify().verdict is Verdict.NOTHING_TO_PROVE


def test_accumulators_zeroed_from_a_variable_assigned_only_for_long_k(tmp_path):
    source = _pairing_only((EXAMPLES / "gemm.py").read_text())
    path = tmp_path / "gemm_variable.py"
    path.write_text(source.replace(ZEROING, "    if K > 64:\n        z = 0.0\n" + ZEROING.replace("= 0.0", "= z"))
                    .replace("@kernel(block=(THREADS,))", "@kernel(block=(THREADS,), verify=False)"))
    witness = _uninitialized(load_module(path).gemm.verify(), "acc[mi, ni, v] = z")
    assert witness["sizes"]["K"] <= 64, witness


# ---- runtime loops that write in some iterations only ---------------------------------------------

ZEROED_IN_THE_LOOP = """    for k0 in range(0, K, BK):
        if {condition}:
            for mi in static_range(2):
                for ni in static_range(4):
                    for v in static_range(4):
                        acc[mi, ni, v] = 0.0
"""


def _gemm_zeroing_in_the_loop(tmp_path: Path, condition: str):
    """The GEMM example with its accumulators zeroed in the loop over K, in the iterations
    `condition` picks (`_pairing_only`)."""
    source = _pairing_only((EXAMPLES / "gemm.py").read_text().replace(ZEROING, ""))
    loop = "    for k0 in range(0, K, BK):\n"
    assert loop in source
    path = tmp_path / "gemm_in_loop.py"
    path.write_text(source.replace(loop, ZEROED_IN_THE_LOOP.format(condition=condition))
                    .replace("@kernel(block=(THREADS,))", "@kernel(block=(THREADS,), verify=False)"))
    return load_module(path).gemm


def test_accumulators_zeroed_in_the_first_iteration_are_written_in_every_later_one(tmp_path):
    result = _gemm_zeroing_in_the_loop(tmp_path, "k0 == 0").verify()
    assert result.verdict is Verdict.PROVED, result.text()


def test_accumulators_zeroed_in_the_second_iteration_are_read_unwritten_in_the_first(tmp_path):
    witness = _uninitialized(_gemm_zeroing_in_the_loop(tmp_path, "k0 == BK").verify(), "matmul(")
    assert witness["loops"]["k0"] == 0, witness


# ---- registers whose values no check reads -------------------------------------------------------
# A read of registers faults on bytes nothing wrote whatever becomes of the value it reads (a
# running sum stored to global memory, no assertion on it): such reads are walked, and so are
# the writes before them (as writes).


@kernel(block=(32,), verify=False)
def running_sum_never_set(x: Tensor[f32, 32, "n"], out: Tensor[f32, 32], n: int):
    stats = make_local((2,), f32)  # the running maximum and sum of the row
    stats[0] = float("-inf")
    for k in range(0, n):
        peak = max(stats[0], x[thread_idx.x, k])
        stats[1] = stats[1] * exp2(stats[0] - peak) + exp2(x[thread_idx.x, k] - peak)
        stats[0] = peak
    out[thread_idx.x] = stats[1]


@kernel(block=(32,), verify=False)
def running_max_never_set(x: Tensor[f32, 32, "n"], out: Tensor[f32, 32], n: int):
    stats = make_local((2,), f32)
    stats[1] = 0.0
    for k in range(0, n):
        peak = max(stats[0], x[thread_idx.x, k])
        stats[1] = stats[1] * exp2(stats[0] - peak) + exp2(x[thread_idx.x, k] - peak)
        stats[0] = peak
    out[thread_idx.x] = stats[1]


@kernel(block=(32,), verify=False)
def running_sum_set_in_later_iterations(x: Tensor[f32, 32, "n"], out: Tensor[f32, 32], n: int):
    acc = make_local((1,), f32)
    for k in range(0, n):
        if k > 0:  # (meant: k == 0)
            acc[0] = 0.0
        acc[0] = acc[0] + x[thread_idx.x, k]
    out[thread_idx.x] = acc[0]


@kernel(block=(32,), verify=False)
def running_sum_set_in_the_first_iteration(x: Tensor[f32, 32, "n"], out: Tensor[f32, 32], n: int):
    acc = make_local((1,), f32)
    for k in range(0, n):
        if k == 0:
            acc[0] = 0.0
        acc[0] = acc[0] + x[thread_idx.x, k]
    out[thread_idx.x] = acc[0]


@kernel(block=(32,), verify=False)
def running_sum_variable_set_in_later_iterations(x: Tensor[f32, 32, "n"], out: Tensor[f32, 32], n: int):
    for k in range(0, n):
        if k > 0:
            total = 0.0
        total = total + x[thread_idx.x, k]
    out[thread_idx.x] = total


@kernel(block=(32,), verify=False)
def running_sum_set(x: Tensor[f32, 32, "n"], out: Tensor[f32, 32], n: int):
    stats = make_local((2,), f32)
    stats[0] = float("-inf")
    stats[1] = 0.0
    for k in range(0, n):
        peak = max(stats[0], x[thread_idx.x, k])
        stats[1] = stats[1] * exp2(stats[0] - peak) + exp2(x[thread_idx.x, k] - peak)
        stats[0] = peak
    out[thread_idx.x] = stats[1]


@kernel(block=(32,), verify=False)
def registers_set_in_a_loop_that_may_not_run(x: Tensor[f32, 32], out: Tensor[f32, 32], m: int):
    r = make_local((1,), f32)
    for i in range(0, m):
        r[0] = x[thread_idx.x]
    out[thread_idx.x] = r[0]


@kernel(block=(32,), verify=False)
def registers_copied_partly_written(x: Tensor[f32, 32], out: Tensor[f32, 32]):
    r = make_local((4,), f32)
    q = make_local((4,), f32)
    for i in static_range(3):  # (one element short)
        r[i] = x[thread_idx.x]
    copy(r, q, copy_vector(16))


@kernel(block=(32,), verify=False)
def accumulators_added_to_never_set(x: Tensor[f32, 32, "n"], out: Tensor[f32, 32], n: int):
    acc = make_local((4,), f32)
    for k in range(0, n):
        for i in static_range(4):
            acc[i] += x[thread_idx.x, k]
    out[thread_idx.x] = acc[0] + acc[3]


@kernel(block=(32,), verify=False)
def accumulators_all_but_one_set(x: Tensor[f32, 32, "n"], out: Tensor[f32, 32], n: int):
    acc = make_local((4,), f32)
    for i in static_range(1, 4):  # (acc[0] left out)
        acc[i] = 0.0
    for k in range(0, n):
        for i in static_range(4):
            acc[i] += x[thread_idx.x, k]
    out[thread_idx.x] = acc[1]


@pytest.mark.parametrize("k, site, iteration", [
    (accumulators_added_to_never_set, "acc[i] += x", 0),
    (accumulators_all_but_one_set, "acc[i] += x", 0),
    (running_sum_never_set, "stats[1] = stats[1] *", None),
    (running_max_never_set, "peak = max(stats[0]", None),
    (running_sum_set_in_later_iterations, "acc[0] = acc[0] +", 0),
    (running_sum_variable_set_in_later_iterations, "total = total +", 0),
])
def test_a_running_statistic_no_check_reads_is_read_unwritten(k, site, iteration):
    witness = _uninitialized(k.verify(), site)
    if iteration is not None:
        assert witness["loops"]["k"] == iteration, witness


def test_registers_set_only_in_a_loop_that_may_not_run():
    witness = _uninitialized(registers_set_in_a_loop_that_may_not_run.verify(), "out[thread_idx.x] = r[0]")
    assert witness["sizes"]["m"] <= 0, witness


def test_a_copy_from_registers_partly_written():
    _uninitialized(registers_copied_partly_written.verify(), "copy(r, q")


@pytest.mark.parametrize("k", [running_sum_set, running_sum_set_in_the_first_iteration])
def test_a_running_statistic_set_before_its_first_read_is_no_finding(k):
    assert k.verify().verdict is Verdict.NOTHING_TO_PROVE


MMA = warp_mma_16x8x16(bf16, bf16, f32)


@kernel(block=(32,), verify=False)
def product_filling_half_the_accumulators(a: Tensor[bf16, 16, 16], b: Tensor[bf16, 8, 16], c: Tensor[f32, 32, 8]):
    tag(a, lambda m, k: (k,))
    tag(b, lambda n, k: (k,))
    af = make_local((8,), bf16)
    bf = make_local((4,), bf16)
    acc = make_local((2, 4), f32)
    for v in static_range(8):
        af[v] = a[0, 0]
    for v in static_range(4):
        bf[v] = b[0, 0]
        acc[0, v] = 0.0
    matmul(af, bf, acc[0, :], MMA)  # (its operands pair up: the claim holds)
    for v in static_range(4):
        c[lane_id(), v] = acc[0, v]
        c[lane_id(), 4 + v] = acc[1, v]  # no product nor store wrote these


@kernel(block=(32,), verify=False)
def vector_read_of_registers_partly_written(x: Tensor[bf16, 32], out: Tensor[bf16, 32, 8]):
    r = make_local((8,), bf16)
    for i in static_range(7):
        r[i] = x[thread_idx.x]
    out.view((32, 1), u128)[thread_idx.x, 0] = r.view((1,), u128)[0]


def test_registers_next_to_a_products_accumulators_read_unwritten():
    """The product's claim holds (it was proved before registers no check reads were walked):
    the other half of the tile is read unwritten all the same."""
    _uninitialized(product_filling_half_the_accumulators.verify(), "c[lane_id(), 4 + v] = acc[1, v]")


def test_a_vector_read_of_registers_partly_written():
    _uninitialized(vector_read_of_registers_partly_written.verify(), "r.view((1,), u128)[0]")


@kernel(block=(32,), verify=False)
def registers_read_at_a_runtime_index(x: Tensor[f32, 32], out: Tensor[f32, "n"], n: int):
    r = make_local((4,), f32)
    for i in static_range(4):
        r[i] = x[thread_idx.x]
    for k in range(0, n):
        out[k] = r[k % 4]


def test_registers_all_written_need_no_address_to_be_read():
    """Registers every byte of which is written are read written wherever the read lands: an
    address the checker cannot enumerate (a runtime loop's index) leaves the check decided."""
    result = registers_read_at_a_runtime_index.verify()
    assert result.verdict is Verdict.NOTHING_TO_PROVE and "cannot follow" not in result.reason, result.text()


ATTENTION_SUM_SET = "    stats[1] = 0.0\n"


def test_attention_with_its_running_sum_never_set(tmp_path):
    """The CDNA attention example without its running sum's initial value: its checks (the
    operands of both products pair up) still hold, and the sum is read unwritten in the first
    key tile."""
    source = (EXAMPLES / "attention_cdna.py").read_text()
    assert source.count(ATTENTION_SUM_SET) == 1
    path = tmp_path / "attention_cdna_unset.py"
    path.write_text(source.replace(ATTENTION_SUM_SET, "").replace("@kernel(block=(THREADS,), warp_size=64)",
                                                                  "@kernel(block=(THREADS,), warp_size=64, verify=False)"))
    module = load_module(path)
    result = module.attention_cdna.verify(D=64, GQA=2)
    witness = _uninitialized(result, "stats[1] = stats[1] * correction")
    assert witness["loops"]["k0"] == 0, witness
