"""`argus verify` says "proved" only with a proof of a claim the kernel makes: a kernel that
states no tag assertion and has no product of tagged operands has nothing to prove (its own
verdict, exit status 0), and its accesses are checked all the same, as every kernel's are; an
assertion that no launch reaches is not proved either."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from argus.dsl import Tensor, block_idx, f32, kernel, make_local, make_shared, syncthreads, tag, thread_idx
from argus.dsl.cli import main
from argus.dsl.machine.shadow import check_launch
from argus.verify import Result, Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

pytestmark = pytest.mark.usefixtures("no_result_cache")


@kernel(block=(32,), verify=False)
def store_past_the_end(x: Tensor[f32, 32]):
    x[thread_idx.x + 1] = 1.0  # thread 31 stores x[32], in every launch


@kernel(block=(32,), verify=False)
def store_past_a_runtime_size(x: Tensor[f32, "n"], n: int):
    x[n + thread_idx.x] = 1.0


@kernel(block=(32,), verify=False)
def read_of_unwritten_shared(out: Tensor[f32, 32]):
    s = make_shared((64,), f32)
    s[thread_idx.x] = 1.0
    syncthreads()
    out[thread_idx.x] = s[thread_idx.x + 32]  # nothing wrote the upper half


@kernel(block=(32,), verify=False)
def copy_within_bounds(x: Tensor[f32, 32], out: Tensor[f32, 32]):
    out[thread_idx.x] = x[thread_idx.x]


@pytest.mark.parametrize("k, args", [(store_past_the_end, (np.zeros(32, np.float32),)),
                                     (store_past_a_runtime_size, (np.zeros(8, np.float32), 8))])
def test_an_out_of_bounds_store_in_a_kernel_without_assertions_is_violated(k, args):
    with pytest.raises(Exception, match="out-of-bounds"):
        k[(1,)](*args)  # the interpreter faults on it
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "out-of-bounds" and witness["block"] == (0, 0, 0), witness
    assert witness["replayed"].startswith("the interpreter faults the same way"), witness


def test_an_uninitialized_read_in_a_kernel_without_assertions_is_violated():
    result = read_of_unwritten_shared.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    assert result.witnesses[0]["kind"] == "uninitialized-read"


def test_a_kernel_with_nothing_to_prove_says_so_and_is_no_proof():
    result = copy_within_bounds.verify()
    assert result.verdict is Verdict.NOTHING_TO_PROVE, result.text()
    assert not result.proved and not result
    assert result.text().startswith("nothing to prove: copy_within_bounds states no tag assertion and has no product "
                                    "of tagged operands")
    assert "none of the faults it looks for" in result.reason
    assert Verdict.NOTHING_TO_PROVE.exit_status == 0
    assert Result.from_dict(json.loads(result.json())) == result  # (results are cached as JSON)
    launch = check_launch(copy_within_bounds, (1,), np.zeros(32, np.float32), np.zeros(32, np.float32))
    assert launch.verdict is Verdict.NOTHING_TO_PROVE and not launch, launch.text()  # (as on every launch)


@kernel(block=(32,), verify=False)
def barrier_in_per_lane_loop(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int):
    s = make_shared((32,), f32)
    for c in range(thread_idx.x, n, 32):  # lanes run different numbers of iterations
        s[thread_idx.x] = x[c]
        syncthreads()
        out[c] = s[(thread_idx.x + 1) % 32]
        syncthreads()


def test_a_kernel_the_checker_cannot_follow_with_nothing_to_prove_says_both():
    result = barrier_in_per_lane_loop.verify()
    assert result.verdict is Verdict.NOTHING_TO_PROVE, result.text()
    assert "cannot follow" in result.reason and "left to the interpreter" in result.reason


def test_argus_verify_prints_nothing_to_prove_and_exits_0(capsys, tmp_path):
    source = (EXAMPLES / "softmax.py").read_text()  # the softmax example without its claim
    claimless = "".join(line for line in source.splitlines(True) if "tag(x," not in line and "assert_tags(" not in line)
    assert claimless != source
    (tmp_path / "softmax.py").write_text(claimless)
    assert main(["verify", str(tmp_path / "softmax.py")]) == 0
    assert capsys.readouterr().out.startswith("nothing to prove: softmax states no tag assertion")
    assert main(["verify", f"{tmp_path / 'softmax.py'}:softmax", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "nothing to prove"


@kernel(block=(32,), verify=False)
def tags_without_a_claim(x: Tensor[f32, 32], out: Tensor[f32, 32]):
    tag(x, lambda i: (i,))
    out[thread_idx.x] = x[thread_idx.x]


def test_tags_without_an_assertion_or_a_product_are_nothing_to_prove():
    result = tags_without_a_claim.verify()
    assert result.verdict is Verdict.NOTHING_TO_PROVE, result.text()


# ---- assertions no launch reaches ----------------------------------------------------------------


@kernel(block=(32,), verify=False)
def asserted_in_a_loop_that_never_runs(x: Tensor[f32, "n"], n: int, m: int):
    tag(x, lambda i: (i,))
    a = make_local((1,), f32)
    b = make_local((1,), f32)
    a[0] = x[0]
    b[0] = x[0]
    for i in range(m, m):
        assert tag(a[...]) == tag(b[...])


@kernel(block=(32,), verify=False)
def asserted_in_a_branch_no_launch_takes(x: Tensor[f32, "n"], n: int):
    tag(x, lambda i: (i,))
    a = make_local((1,), f32)
    b = make_local((1,), f32)
    a[0] = x[0]
    b[0] = x[0]
    if n < 1:  # a tensor's size is at least 1
        assert tag(a[...]) == tag(b[...])


@kernel(block=(32,), verify=False)
def asserted_in_a_branch_some_launches_take(x: Tensor[f32, "n"], n: int):
    tag(x, lambda i: (i,))
    a = make_local((1,), f32)
    b = make_local((1,), f32)
    a[0] = x[0]
    b[0] = x[0]
    if n < 5:
        assert tag(a[...]) == tag(b[...])


@pytest.mark.parametrize("k", [asserted_in_a_loop_that_never_runs, asserted_in_a_branch_no_launch_takes])
def test_an_assertion_no_launch_reaches_is_not_proved(k):
    result = k.verify()
    assert result.verdict is Verdict.UNKNOWN, result.text()
    assert "reached in no launch" in result.reason and "vacuous" in result.reason


def test_an_assertion_some_launches_reach_is_proved():
    result = asserted_in_a_branch_some_launches_take.verify()
    assert result.verdict is Verdict.PROVED, result.text()


# ---- accesses under branches on runtime conditions -------------------------------------------------


@kernel(block=(32,), verify=False)
def guarded_store_past_the_end(x: Tensor[f32, 32], n: int):
    if n > 0:
        x[thread_idx.x + 1] = 1.0  # thread 31 stores x[32] wherever the branch is taken


@kernel(block=(32,), verify=False)
def guarded_store_past_a_runtime_size(x: Tensor[f32, "n"], n: int):
    i = block_idx.x * 32 + thread_idx.x
    if i < n:
        x[i + n] = 1.0  # past the end for every thread that gets here


@kernel(block=(32,), verify=False)
def guarded_store_within_bounds(x: Tensor[f32, "n"], n: int):
    i = block_idx.x * 32 + thread_idx.x
    if i < n:
        x[i] = 1.0


@pytest.mark.parametrize("k, args", [(guarded_store_past_the_end, (np.zeros(32, np.float32), 1)),
                                     (guarded_store_past_a_runtime_size, (np.zeros(8, np.float32), 8))])
def test_a_store_under_a_branch_out_of_bounds_wherever_it_runs_is_violated(k, args):
    result = k.verify()
    assert result.verdict is Verdict.VIOLATED, result.text()
    witness = result.witnesses[0]
    assert witness["kind"] == "out-of-bounds", witness
    assert witness["replayed"].startswith("the interpreter faults the same way"), witness


def test_a_store_under_a_branch_within_bounds_is_no_finding():
    assert guarded_store_within_bounds.verify().verdict is Verdict.NOTHING_TO_PROVE
