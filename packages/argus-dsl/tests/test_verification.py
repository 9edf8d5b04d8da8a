"""The static tag checker on kernels: proofs for every launch, replayed counterexamples, unknown
never a pass, clear errors for what it cannot take, and compile-time checking."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from argus.dsl import (
    ArgusVerificationWarning,
    KernelFault,
    Tensor,
    assume,
    TagAssertionError,
    VerificationError,
    bf16,
    block_idx,
    constexpr,
    exp2,
    f32,
    i32,
    kernel,
    local_tile,
    make_local,
    make_shared,
    reset_tags,
    static_range,
    syncthreads,
    tag,
    thread_idx,
)
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict


@kernel(block=(32,))
def staged(x: Tensor[bf16, "n", 32], out: Tensor[bf16, "n", 32], n: int):
    """Each block stages row block_idx.x through shared memory, reversed, and reads it back."""
    tag(x, lambda r, c: (r, c))
    row = block_idx.x
    s = make_shared((32,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (row, thread_idx.x))
    s[31 - thread_idx.x] = x[row, thread_idx.x]
    syncthreads()
    got[0] = s[31 - thread_idx.x]
    assert tag(got[...]) == tag(want[...]), "every thread gets its own element back"
    out[row, thread_idx.x] = got[0]


@kernel(block=(32,), verify=False)
def misread(x: Tensor[bf16, "n", 32], out: Tensor[bf16, "n", 32], n: int):
    """The same, reading the staged row without the reversal: a wrong thread→data mapping."""
    tag(x, lambda r, c: (r, c))
    row = block_idx.x
    s = make_shared((32,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (row, thread_idx.x))
    s[31 - thread_idx.x] = x[row, thread_idx.x]
    syncthreads()
    got[0] = s[thread_idx.x]
    assert tag(got[...]) == tag(want[...]), "every thread gets its own element back"
    out[row, thread_idx.x] = got[0]


def test_a_correct_kernel_is_proved_for_every_launch():
    result = staged.verify()
    assert result.verdict is Verdict.PROVED and "every launch" in result.claim


def test_a_violation_comes_with_a_replayed_witness():
    result = misread.verify()
    assert result.verdict is Verdict.VIOLATED
    w = result.witnesses[0]
    assert w["kind"] == "violated" and w["message"] == "every thread gets its own element back"
    assert w["replayed"].startswith("reproduced")
    thread, row = w["thread"], w["block"][0]
    assert w["lhs tag"] == (row, 31 - thread) and w["rhs tag"] == (row, thread)
    assert w["lhs written at"].endswith(f":{_line(misread, 'got[0] = s[thread_idx.x]')}:5")
    assert w["rhs written at"] == "never written (its tag from a tag function)"  # expected tags, no data
    assert w["assertion"].endswith(f":{_line(misread, 'assert tag')}:5")
    # the same launch, run with shadow tags, fails the same way
    n = w["sizes"]["n"]
    shadow = check_launch(misread, (n,), np.zeros((n, 32), np.uint16), np.zeros((n, 32), np.uint16), n)
    assert shadow.verdict is Verdict.VIOLATED


def test_compiling_refuses_a_violated_kernel_unless_checks_are_off(monkeypatch):
    checked = kernel(block=(32,))(misread.fn)
    with pytest.raises(TagAssertionError, match="every thread gets its own element back"):
        checked.compile()
    misread.compile()  # declared verify=False
    monkeypatch.setenv("ARGUS_VERIFY", "0")
    kernel(block=(32,))(misread.fn).compile()


def test_results_are_cached_with_the_kernel(monkeypatch, tmp_path):
    monkeypatch.setenv("ARGUS_CACHE_DIR", str(tmp_path))
    first = kernel(block=(32,))(staged.fn).verify()
    calls = []
    import argus.dsl.check.verification as verification

    monkeypatch.setattr(verification, "verify_kernel", lambda *a, **k: calls.append(a) or first)
    again = kernel(block=(32,))(staged.fn).verify()  # a new Kernel object: read from disk
    assert again.verdict is first.verdict and not calls


@kernel(block=(32,), verify=False)
def not_equal(x: Tensor[bf16, 64], out: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    a = make_local((1,), bf16)
    b = make_local((1,), bf16)
    a[0] = x[thread_idx.x]
    b[0] = x[thread_idx.x + 32]
    assert tag(a[...]) != tag(b[...]), "the two halves never meet"
    out[thread_idx.x] = a[0] + b[0]


def test_non_conformity_assertions():
    assert not_equal.verify().verdict is Verdict.PROVED


@kernel(block=(32,), verify=False)
def symbolic_address(x: Tensor[bf16, "n"], out: Tensor[bf16, "n"], n: int):
    tag(x, lambda i: (i,))
    s = make_shared((64,), bf16)
    got = make_local((1,), bf16)
    s[(block_idx.x + thread_idx.x) % 64] = x[thread_idx.x]
    syncthreads()
    got[0] = s[thread_idx.x]
    assert tag(got[...]) == tag(got[...])
    out[thread_idx.x] = got[0]


def test_what_the_checker_cannot_follow_is_unknown_never_a_pass():
    result = symbolic_address.verify()
    assert result.verdict is Verdict.UNKNOWN
    assert "depends on" in result.reason and "block_x" in result.reason
    assert f":{_line(symbolic_address, 's[(block_idx.x')}:" in result.reason
    with pytest.warns(ArgusVerificationWarning, match="depends on"):
        kernel(block=(32,))(symbolic_address.fn).compile()


@kernel(block=(32,), verify=False)
def untagged(x: Tensor[bf16, 32], y: Tensor[bf16, 32]):
    tag(y, lambda i: (i,))
    a = make_local((1,), bf16)
    b = make_local((1,), bf16)
    a[0] = x[thread_idx.x]
    b[0] = y[thread_idx.x]
    assert tag(a[...]) == tag(b[...])


@kernel(block=(32,), verify=False)
def data_address(x: Tensor[bf16, 32], idx: Tensor[i32, 32]):
    tag(x, lambda i: (i,))
    s = make_shared((32,), bf16)
    a = make_local((1,), bf16)
    s[idx[thread_idx.x] % 32] = x[thread_idx.x]
    syncthreads()
    a[0] = s[thread_idx.x]
    assert tag(a[...]) == tag(a[...])


def test_bad_input_is_refused_with_the_line_and_what_is_needed():
    with pytest.raises(VerificationError, match=r"left side of this tag assertion carries no tags.*tag the tensors") as err:
        untagged.verify()
    assert err.value.location is not None and err.value.location.line == _line(untagged, "assert tag")
    with pytest.raises(VerificationError, match="depends on data read from memory") as err:
        data_address.verify()
    assert err.value.location is not None and err.value.location.line == _line(data_address, "s[idx")


@kernel(block=(32,), verify=False)
def racy(x: Tensor[bf16, 64]):
    tag(x, lambda i: (i,))
    s = make_shared((32,), bf16)
    s[thread_idx.x // 2] = x[thread_idx.x]  # two threads, one element, no barrier
    got = make_local((1,), bf16)
    syncthreads()
    got[0] = s[thread_idx.x // 2]
    assert tag(got[...]) == tag(got[...])


def test_write_conflicts_are_found_and_replayed_as_races():
    result = racy.verify()
    w = _finding(result, "data-race", racy, 's[thread_idx.x // 2]')
    assert w["replayed"].startswith("the interpreter faults the same way")


@kernel(block=(32,), verify=False)
def overrun(x: Tensor[bf16, "n"], out: Tensor[bf16, "n"], n: int):
    tag(x, lambda i: (i,))
    a = make_local((1,), bf16)
    b = make_local((1,), bf16)
    for k in range(0, n, 32):
        a[0] = x[k + thread_idx.x + 32]  # reads one tile ahead: past the end in the last iteration
        b[0] = x[k + thread_idx.x]
        assert tag(a[...]) != tag(b[...])
        out[k + thread_idx.x] = b[0]


def test_an_access_out_of_bounds_in_every_launch_is_reported():
    result = overrun.verify()
    _finding(result, "out-of-bounds", overrun, 'a[0] = x', col=9)


@kernel(block=(32,), verify=False)
def part_overrun(x: Tensor[bf16, "n"], n: int):
    tag(x, lambda i: (i,))
    assume(n >= 32)  # one block's threads each read their element
    s = make_shared((32, 8), bf16)
    a = make_local((1,), bf16)
    s[thread_idx.x, 0] = x[thread_idx.x]
    syncthreads()
    row = local_tile(s, (1, 8), thread_idx.x + 1)  # thread 31 asks for part 32 of 32
    a[0] = row[0, 0]
    assert tag(a[...]) == tag(a[...])


def test_a_part_outside_its_tile_is_reported_as_the_interpreter_reports_it():
    result = part_overrun.verify()
    assert result.verdict is Verdict.VIOLATED
    [w] = result.witnesses  # (one finding, described once)
    assert w["kind"] == "out-of-bounds" and w["assertion"].endswith(f":{_line(part_overrun, 'local_tile(s')}:5")
    assert (w["thread"], w["index"], w["extent"]) == (31, 32, "a tile of 32 parts")
    assert w["replayed"].startswith("the interpreter faults the same way")


@kernel(block=(32,), verify=False)
def reread_after_reset(x: Tensor[bf16, "n"], out: Tensor[bf16, "n"], n: int):
    tag(x, lambda i: (i,))
    assume(n >= 32)
    s = make_shared((32,), bf16)
    s[thread_idx.x] = x[thread_idx.x]
    syncthreads()
    reset_tags(s)
    out[thread_idx.x] = s[31 - thread_idx.x]  # written data whose tag is gone: no fault


def test_reading_shared_data_whose_tag_was_reset_is_not_an_uninitialized_read():
    assert reread_after_reset.verify().verdict is Verdict.NOTHING_TO_PROVE
    x = np.arange(32, dtype=np.float32).astype(np.uint16)  # (any bit patterns)
    out = np.zeros(32, np.uint16)
    reread_after_reset[1](x, out, 32)  # and the interpreter runs it without a fault
    assert (out == x[::-1]).all()


@kernel(block=(32,), verify=False)
def far_past_the_end(x: Tensor[bf16, "n"], out: Tensor[bf16, "n"], n: int):
    tag(x, lambda i: (i,))
    assume(n >= 32)  # x[thread_idx.x] is in bounds; x[2n + thread_idx.x] never is
    a = make_local((1,), bf16)
    b = make_local((1,), bf16)
    a[0] = x[thread_idx.x]
    b[0] = x[2 * n + thread_idx.x]  # past the end in every launch: its in-bounds fact has no launch
    assert tag(a[...]) != tag(b[...])
    out[thread_idx.x] = b[0]


def test_an_access_no_launch_keeps_in_bounds_is_reported_rather_than_emptying_the_domain():
    result = far_past_the_end.verify()
    w = _finding(result, "out-of-bounds", far_past_the_end, 'b[0] = x')
    assert w["index"] == (2 * w["sizes"]["n"] + w["thread"],)  # the coordinate in the witness's launch
    assert w["replayed"].startswith("the interpreter faults the same way")


@kernel(block=(32,), verify=False)
def behind_by(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, lag: constexpr):
    tag(x, lambda i: (i,))
    assume(n % 32 == 0)  # whole blocks
    a = make_local((1,), f32)
    i = block_idx.x * 32 + thread_idx.x
    a[0] = x[i - lag]  # lag > 0: the first block, which every launch runs, reads before x
    assert tag(a[...]) == tag(a[...])
    out[i] = a[0]


@pytest.mark.parametrize("lag, verdict", [(0, Verdict.PROVED), (32, Verdict.VIOLATED)])
def test_an_access_the_first_block_makes_out_of_bounds_is_reported_rather_than_leaving_the_block_out(lag, verdict):
    result = behind_by.verify(lag=lag)
    assert result.verdict is verdict, result.text()
    if verdict is Verdict.VIOLATED:  # its in-bounds fact held for blocks 1 and up: that was proved
        w = _finding(result, "out-of-bounds", behind_by, "a[0] = x[i")
        assert w["block"] == (0, 0, 0) and w["replayed"].startswith("the interpreter faults the same way")


@kernel(block=(32,), verify=False)
def clamped(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, last: constexpr):
    tag(x, lambda i: (i,))
    assume(n >= 32)
    a = make_local((1,), f32)
    a[0] = x[min(thread_idx.x + n, n - last)]  # each thread its own unknown; last = 0 reads x[n]
    assert tag(a[...]) == tag(a[...])
    out[thread_idx.x] = a[0]


@pytest.mark.parametrize("last, verdict", [(1, Verdict.PROVED), (0, Verdict.VIOLATED)])
def test_a_coordinate_each_thread_computes_its_own_way_is_held_in_bounds(last, verdict):
    result = clamped.verify(last=last)
    assert result.verdict is verdict
    if verdict is Verdict.VIOLATED:  # out of bounds in every launch: it was proved, with no in-bounds fact at all
        w = _finding(result, "out-of-bounds", clamped, "a[0] = x[min(")
        assert w["replayed"].startswith("the interpreter faults the same way")


@kernel(block=(32,), verify=False)
def unchecked_registers(x: Tensor[f32, "n"], out: Tensor[f32, "n"], n: int, store: constexpr, load: constexpr):
    tag(x, lambda i: (i,))
    assume(n >= 32)
    scratch = make_local((4,), f32)  # nothing any check reads
    for k in static_range(4):
        scratch[k] = 0.0
    scratch[thread_idx.x % store] = 1.0  # threads 4..7 (mod 8) store past the end when store = 8
    a = make_local((1,), f32)
    a[0] = x[thread_idx.x]
    assert tag(a[...]) == tag(a[...])
    out[thread_idx.x] = scratch[thread_idx.x % load]  # its data reach no check either


@pytest.mark.parametrize("store, load, faulting", [(4, 4, None), (8, 4, "scratch[thread_idx.x % store] ="),
                                                   (4, 8, "out[thread_idx.x] = scratch")])
def test_a_tile_access_no_check_reads_is_still_held_inside_its_tile(store, load, faulting):
    result = unchecked_registers.verify(store=store, load=load)
    assert result.verdict is (Verdict.PROVED if faulting is None else Verdict.VIOLATED)
    if faulting is not None:
        w = _finding(result, "out-of-bounds", unchecked_registers, faulting)
        assert w["index"] == (4,) and w["replayed"].startswith("the interpreter faults the same way")
        with pytest.raises(KernelFault, match="out-of-bounds"):
            unchecked_registers[1](np.zeros(32, np.float32), np.zeros(32, np.float32), 32, store=store, load=load)


@kernel(block=(32,), verify=False)
def unread_shared(x: Tensor[f32, "n"], n: int):
    tag(x, lambda i: (i,))
    s = make_shared((32,), f32)  # written, never read
    s[thread_idx.x + 1] = 1.0  # thread 31 stores past the end
    a = make_local((1,), f32)
    a[0] = x[thread_idx.x]
    assert tag(a[...]) == tag(a[...])


def test_a_shared_store_nothing_reads_is_still_held_inside_its_tile():
    result = unread_shared.verify()
    w = _finding(result, "out-of-bounds", unread_shared, 's[thread_idx.x + 1]')
    assert (w["thread"], w["index"]) == (31, (32,))


@kernel(block=(32,), verify=False)
def data_indexed_registers(x: Tensor[f32, "n"], idx: Tensor[i32, "n"], n: int):
    tag(x, lambda i: (i,))
    assume(n >= 32)
    scratch = make_local((4,), f32)
    scratch[idx[thread_idx.x]] = 1.0  # a coordinate read from memory, in an access no check reads
    a = make_local((1,), f32)
    a[0] = x[thread_idx.x]
    assert tag(a[...]) == tag(a[...])


def test_an_unchecked_access_at_a_coordinate_read_from_memory_is_left_to_the_interpreter():
    assert data_indexed_registers.verify().verdict is Verdict.PROVED


@kernel(block=(32,), verify=False)
def divergent_barrier(x: Tensor[bf16, 32]):
    tag(x, lambda i: (i,))
    a = make_local((1,), bf16)
    b = make_local((1,), bf16)
    a[0] = x[thread_idx.x]
    if thread_idx.x < 16:
        syncthreads()  # not reached by every thread of the block (the checker does not look for this)
    b[0] = x[(thread_idx.x + 1) % 32]
    assert tag(a[...]) == tag(b[...])  # violated, found statically


def test_a_fault_met_first_while_replaying_a_candidate_is_the_finding_reported():
    result = divergent_barrier.verify()
    assert result.verdict is Verdict.VIOLATED
    [w] = result.witnesses
    assert w["kind"] == "divergent-barrier" and w["assertion"].endswith(f":{_line(divergent_barrier, 'syncthreads()')}:9")
    assert w["block"] == (0, 0, 0) and w["thread"] == 16
    assert w["replayed"].startswith("the interpreter faults here first while replaying the candidate at")
    assert "whose replay stops first at the reported" in result.reason  # the assertion's finding, named


def test_an_assumption_no_launch_satisfies_is_named():
    @kernel(block=(32,), verify=False)
    def impossible(x: Tensor[bf16, "n"], n: int):
        tag(x, lambda i: (i,))
        assume(n % 32 < 0)  # a remainder is never negative
        a = make_local((1,), bf16)
        b = make_local((1,), bf16)
        a[0] = x[thread_idx.x]
        b[0] = x[thread_idx.x]
        assert tag(a[...]) == tag(b[...])

    result = impossible.verify()
    assert result.verdict is Verdict.UNKNOWN
    assert f"the assumption at {impossible.fn.__code__.co_filename}:{_line(impossible, 'assume(')}:5 holds in no " \
           "launch" in result.reason


def test_a_proof_is_never_vacuous(monkeypatch):
    @kernel(block=(32,), verify=False)
    def empty_range(x: Tensor[bf16, "n"], n: int):
        tag(x, lambda i: (i,))
        a = make_local((1,), bf16)
        b = make_local((1,), bf16)
        for k in range(n, n - 1):  # no launch runs this loop
            a[0] = x[k]
            b[0] = x[k + 1]
            assert tag(a[...]) == tag(b[...])

    result = empty_range.verify()
    assert result.verdict is Verdict.UNKNOWN and "domain of this assertion is empty" in result.reason


def test_examples_are_proved_and_never_fail_on_random_launches():
    """Differential: what the checker proves for every launch holds on real launches."""
    import importlib.util
    from pathlib import Path

    root = Path(__file__).resolve().parents[3] / "examples"
    for example, name in (("transpose", "transpose"), ("gemm", "gemm"), ("flash_attention", "attention")):
        spec = importlib.util.spec_from_file_location(f"verified_{example}", root / f"{example}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        k = getattr(module, name)
        make = getattr(module, f"example_{name}")
        assert k.verify(**make(np.random.default_rng(0)).constants).verdict is Verdict.PROVED, example
        for seed in (1, 2):
            rng = np.random.default_rng(seed)
            sizes = {"transpose": dict(rows=int(rng.integers(1, 80)), cols=int(rng.integers(1, 80))),
                     "gemm": dict(m=64 * int(rng.integers(1, 3)), n=64, k=16 * int(rng.integers(1, 4))),
                     "flash_attention": dict(seq=16 * int(rng.integers(1, 3)), heads=2, kv_heads=int(rng.integers(1, 3)))}
            problem = make(rng, **sizes[example])
            shadow = check_launch(k, problem.grid, *problem.args, **problem.constants)
            assert shadow.verdict is Verdict.PROVED, (example, seed, shadow.text())


def _tail(assumed: bool):
    @kernel(block=(32,), verify=False)
    def tail(x: Tensor[bf16, "n"], n: int):
        if assumed:
            assume(n % 32 == 0)
        tag(x, lambda i: (i % 32,))
        got = make_local((1,), bf16)
        want = make_local((1,), bf16)
        tag(want, lambda i: (thread_idx.x,))
        got[0] = x[n - 32 + thread_idx.x]  # the last 32 elements: lane t gets element t of a 32-block
        assert tag(got[...]) == tag(want[...])

    return tail


def test_declared_assumptions_are_part_of_the_domain():
    assert _tail(True).verify().verdict is Verdict.PROVED
    broken = _tail(False).verify()
    assert broken.verdict is Verdict.VIOLATED and broken.witnesses[0]["sizes"]["n"] % 32 != 0
    with pytest.raises(KernelFault, match="assumption"):
        _tail(True)[1](np.zeros(40, np.uint16), 40)


def _line(k, text: str) -> int:
    """The source line of `k` containing `text`."""
    import inspect

    lines, start = inspect.getsourcelines(k.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _finding(result, kind: str, k, text: str, col: int = 5) -> dict:
    """The first witness of a violated result, checked to be a `kind` finding at the line of
    `k` containing `text` (column `col`)."""
    assert result.verdict is Verdict.VIOLATED, result.text()
    w = result.witnesses[0]
    assert w["kind"] == kind and w["assertion"].endswith(f":{_line(k, text)}:{col}"), w
    return w


def test_no_warning_for_proved_kernels():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kernel(block=(32,))(staged.fn).compile()


def test_an_op_family_teaches_the_analysis_its_ops(monkeypatch):
    """An op without a tag rule computes new data (⊤); an op family (or a backend's language)
    that defines one can say the op moves tags; an op is defined once."""
    from argus.dsl.check import rules, tag_liveness
    from argus.dsl.ir import registry
    from argus.dsl.machine import interpreter
    from xdsl.dialects import math

    @kernel(block=(32,), verify=False)
    def passes_through(x: Tensor[f32, 32]):
        tag(x, lambda i: (i,))
        got = make_local((1,), f32)
        want = make_local((1,), f32)
        tag(want, lambda i: (thread_idx.x,))
        got[0] = exp2(x[thread_idx.x])
        assert tag(got[...]) == tag(want[...])

    assert passes_through.verify().verdict is not Verdict.PROVED  # ⊤: computed data
    registry.install()
    monkeypatch.setattr(rules, "RULES", dict(rules.RULES))
    monkeypatch.setattr(tag_liveness, "RULES", dict(tag_liveness.RULES))
    monkeypatch.setattr(registry, "_MEANINGS", {k: v for k, v in registry._MEANINGS.items() if k is not math.Exp2Op})

    def same_tags(a, op, mask):
        a.values[op.results[0]] = None
        a.tags[op.results[0]] = a.tags_of(op.operands[0])

    monkeypatch.setattr(interpreter, "RULES", dict(interpreter.RULES))
    registry.define(math.Exp2Op, interpret=interpreter.RULES[math.Exp2Op], analyze=same_tags)
    from argus.dsl.check.verification import verify_kernel

    assert verify_kernel(passes_through.specialize(), "passes_through").verdict is Verdict.PROVED
    with pytest.raises(ValueError, match="already has a meaning"):
        registry.define(math.Exp2Op, interpret=interpreter.RULES[math.Exp2Op], analyze=same_tags)


@kernel(block=(32,), verify=False)
def tagged_by_variable(x: Tensor[bf16, "m"], m: int, n: int):
    tag(x, lambda i: (i,))
    assume(m >= 32 * n)  # the loop's n tiles of x
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    base = 0
    for k in range(n):
        base = 32 * k  # a variable: assigned in a runtime loop
        tag(want, lambda i: (base + thread_idx.x,))
        got[0] = x[32 * k + thread_idx.x]
        assert tag(got[...]) == tag(want[...])


def test_tag_functions_may_use_variables():
    assert tagged_by_variable.verify().verdict is Verdict.PROVED
    shadow = check_launch(tagged_by_variable, (1,), np.zeros(64, np.uint16), 64, 2)
    assert shadow.verdict is Verdict.PROVED


@kernel(block=(32,), verify=False)
def racy_computed(x: Tensor[f32, 64]):
    tag(x, lambda i: (i,))
    s = make_shared((16,), f32)
    got = make_local((1,), f32)
    s[thread_idx.x // 2] = x[thread_idx.x] * 2.0  # computed data, two threads per element, no barrier
    syncthreads()
    got[0] = s[thread_idx.x // 2]
    assert tag(got[...]) == tag(got[...])


def test_two_threads_writing_computed_data_to_one_byte_race():
    result = racy_computed.verify()
    assert result.verdict is Verdict.VIOLATED and result.witnesses[0]["kind"] == "data-race"


@kernel(block=(32,), verify=False)
def never_reached(x: Tensor[bf16, 32]):
    tag(x, lambda i: (i,))
    a = make_local((1,), bf16)
    a[0] = x[thread_idx.x]
    if thread_idx.x > 40:  # no thread of the block
        assert tag(a[...]) == tag(a[...])


def test_an_assertion_no_thread_reaches_is_unknown_not_proved():
    result = never_reached.verify()
    assert result.verdict is Verdict.UNKNOWN and "never reached" in result.reason


@kernel(block=(32,), verify=False)
def no_barrier(x: Tensor[bf16, 32]):
    tag(x, lambda i: (i,))
    s = make_shared((32,), bf16)
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (31 - thread_idx.x,))
    s[thread_idx.x] = x[thread_idx.x]
    got[0] = s[31 - thread_idx.x]  # another thread's element, and no syncthreads() before it
    assert tag(got[...]) == tag(want[...])


def test_reading_another_threads_write_before_a_barrier_is_a_race():
    result = no_barrier.verify()
    _finding(result, "data-race", no_barrier, 'got[0] = s[31')


def test_a_malformed_grid_is_refused():
    from argus.dsl import ArgusLaunchError

    for grid in ((1, 2, 3, 4), (0,), (1.5,)):
        with pytest.raises(ArgusLaunchError, match="1 to 3 positive ints"):
            staged.verify(grid=grid)


def test_checking_leaves_the_garbage_collector_as_it_found_it(no_result_cache):
    import gc

    from argus.dsl.check.verification import verify_kernel

    assert gc.isenabled()
    assert verify_kernel(staged.specialize(), "staged").verdict is Verdict.PROVED
    assert gc.isenabled()
    gc.disable()
    try:
        assert verify_kernel(misread.specialize(), "misread").verdict is Verdict.VIOLATED
        assert not gc.isenabled()
    finally:
        gc.enable()


@kernel(block=(32,), verify=False)
def ragged_loop(x: Tensor[bf16, "n", 32], out: Tensor[bf16, "n", 32], n: int):
    """A runtime loop whose bound differs from thread to thread and depends on a size."""
    tag(x, lambda r, c: (r, c))
    got = make_local((1,), bf16)
    want = make_local((1,), bf16)
    tag(want, lambda i: (0, thread_idx.x))
    got[0] = x[0, thread_idx.x]
    for i in range(0, n - thread_idx.x):
        got[0] = x[0, thread_idx.x]
    assert tag(got[...]) == tag(want[...]), "every thread keeps its element"
    out[0, thread_idx.x] = got[0]


def test_a_runtime_loop_whose_threads_disagree_on_its_bounds_is_followed(no_result_cache):
    # (its iterations are numbered by a counter the threads share: test_divergent_loops.py)
    result = ragged_loop.verify()
    assert result.verdict is Verdict.PROVED, result.text()


@kernel(block=(32,), verify=False)
def wrong_from_block_5(x: Tensor[f32, "n"], n: int):
    tag(x, lambda i: (i,))
    assume(block_idx.x * 32 + 32 <= n)  # the grid covers x
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(want, lambda i: (block_idx.x * 32 + thread_idx.x + block_idx.x // 5,))  # one off from block 5 on
    got[0] = x[block_idx.x * 32 + thread_idx.x]
    assert tag(got[...]) == tag(want[...])


def test_a_witness_names_the_smallest_block_that_shows_the_finding():
    result = wrong_from_block_5.verify()
    assert result.verdict is Verdict.VIOLATED
    assert [w["block"] for w in result.witnesses] and all(w["block"] == (5, 0, 0) for w in result.witnesses)
