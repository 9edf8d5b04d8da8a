"""Differential fuzz of what kernels mean: random well-formed kernels (`argus.dsl.fuzzing`) go
through the static checker and the interpreter with shadow tags, and the two must agree — no
proof of a kernel a launch refutes or faults in a way the checker looks for, no reported
witness that does not replay. The runs are derandomized, so CI sees the same kernels each time;
`benchmarks/fuzz_semantics.py` runs the long fuzz."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from argus.dsl.fuzzing import (
    KernelCase,
    LaunchSpec,
    Outcome,
    check_case,
    compile_case,
    draw_kernel,
    runner_within,
    shadow_runner,
)
from argus.verify.results import proved, violated
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def _fuzz(examples: int) -> settings:
    """Reproducible in CI: derandomized, no example database, no deadline (a case takes a tenth
    of a second, a slow machine more)."""
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                    print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


#: A solver query of the short fuzz gives up after this long (an answer becomes unknown, never
#: wrong): a few drawn kernels nest floor divisions of symbolic rows that take the solver seconds.
SOLVER_MS = 1500


def _agree(case: KernelCase) -> None:
    report = check_case(case, solver_timeout_ms=SOLVER_MS)
    assert not report.findings, "\n\n".join(f.text() for f in report.findings)


# Two tests of copy kernels (hypothesis derives each one's examples from its name), so that two
# workers share the fuzz; about 185 kernels in all with the matrix products and the seeded ones below.
@_fuzz(70)
@given(st.data())
def test_random_copy_kernels_get_no_false_verdict(data: Any) -> None:
    _agree(draw_kernel(data, "tile"))


@_fuzz(70)
@given(st.data())
def test_more_random_copy_kernels_get_no_false_verdict(data: Any) -> None:
    _agree(draw_kernel(data, "tile"))


@_fuzz(25)
@given(st.data())
def test_random_matrix_products_get_no_false_verdict(data: Any) -> None:
    _agree(draw_kernel(data, "mma"))


WRONG = '''from argus.dsl import *


@kernel(block=(32,))
def off(src: Tensor[f32, 32], dst: Tensor[f32, 32]):
    tag(src, lambda i: (i,))
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(want, lambda v: (thread_idx.x,))
    got[0] = src[(thread_idx.x + 1) % 32]
    assert tag(got[...]) == tag(want[...]), "each thread holds its own element"
    dst[thread_idx.x] = got[0]
'''
"""A kernel whose mapping is off by one: every launch breaks its assertion."""

WRONG_CASE = KernelCase(WRONG, "off", (LaunchSpec((1,), (("tensor", "f32", (32,)), ("tensor", "f32", (32,))), 7),))


def test_the_checker_refutes_the_wrong_mapping_with_a_replayed_witness() -> None:
    report = check_case(WRONG_CASE)
    assert report.verdict == "violated", report.result.text() if report.result else report.findings
    assert not report.findings


def test_a_proof_of_a_wrong_mapping_is_a_false_proof() -> None:
    """A checker that proves a kernel a launch refutes is caught, with the source and the launch."""
    report = check_case(WRONG_CASE, verify=lambda compiled: proved("every launch", "planted"))
    kinds = [f.kind for f in report.findings]
    assert kinds == ["false-proof"], kinds
    text = report.findings[0].text()
    assert "(thread_idx.x + 1) % 32" in text and "grid (1,)" in text


def test_a_witness_the_checker_did_not_replay_is_reported() -> None:
    witness = {"assertion": "x:1:1", "kind": "violated", "block": (0, 0, 0), "sizes": {},
               "replayed": "not replayed: the launch is too large"}
    report = check_case(WRONG_CASE, verify=lambda compiled: violated("every launch", "planted", witness))
    assert [f.kind for f in report.findings] == ["unreplayed-witness"]


def test_a_witness_that_runs_clean_is_irreproducible() -> None:
    right = WRONG.replace("(thread_idx.x + 1) % 32", "thread_idx.x")
    case = KernelCase(right, "off", WRONG_CASE.launches)
    witness = {"assertion": "x:1:1", "kind": "violated", "block": (0, 0, 0), "sizes": {},
               "replayed": "reproduced in block (0, 0, 0) of grid (1, 1, 1)"}
    report = check_case(case, verify=lambda compiled: violated("every launch", "planted", witness))
    assert [f.kind for f in report.findings] == ["irreproducible-witness"]


def test_runners_that_leave_different_outputs_disagree() -> None:
    """A second runner (another schedule, a GPU) is held to the same outputs as the first."""

    def scribbling(compiled: Any, grid: tuple[int, ...], args: list[Any], blocks: Any = None) -> Outcome:
        outcome = shadow_runner(compiled, grid, args, blocks)
        outcome.outputs[1][0] += 1.0
        return outcome

    right = WRONG.replace("(thread_idx.x + 1) % 32", "thread_idx.x")
    report = check_case(KernelCase(right, "off", WRONG_CASE.launches), runners=[shadow_runner, scribbling])
    assert report.verdict == "proved"
    assert [f.kind for f in report.findings] == ["runner-disagreement"]


def test_a_runner_runs_inside_its_context() -> None:
    """An interpreter setting (a schedule of its warps) plugs in as a runner run inside a context."""
    entered: list[str] = []

    @contextlib.contextmanager
    def setting() -> Iterator[None]:
        entered.append("in")
        yield

    right = WRONG.replace("(thread_idx.x + 1) % 32", "thread_idx.x")
    report = check_case(KernelCase(right, "off", WRONG_CASE.launches), runners=[shadow_runner, runner_within(setting)])
    assert entered == ["in"] and len(report.runs[0]) == 2 and not report.findings


def test_a_race_under_a_proof_is_a_disagreement_but_a_later_write_is_left_to_the_interpreter() -> None:
    racy = '''from argus.dsl import *


@kernel(block=(32,))
def racy(src: Tensor[f32, 32], dst: Tensor[f32, 32]):
    tag(src, lambda i: (i,))
    s = make_shared((32,), f32)
    got = make_local((1,), f32)
    want = make_local((1,), f32)
    tag(want, lambda v: ((thread_idx.x + 1) % 32,))
    s[thread_idx.x] = src[thread_idx.x]
    got[0] = s[(thread_idx.x + 1) % 32]
    assert tag(got[...]) == tag(want[...])
    dst[thread_idx.x] = got[0]
'''
    case = KernelCase(racy, "racy", WRONG_CASE.launches)
    report = check_case(case, verify=lambda compiled: proved("every launch", "planted"))
    assert [f.kind for f in report.findings] == ["fault-under-proof"]
    store = "    dst[thread_idx.x] = got[0]\n"
    later = racy.replace(store, "    s[thread_idx.x] = 0.0\n" + store)
    later = later.replace("    got[0] = s[", "    syncthreads()\n    got[0] = s[")
    report = check_case(KernelCase(later, "racy", WRONG_CASE.launches),
                        verify=lambda compiled: proved("every launch", "planted"))
    assert report.runs[0][0].fault is not None and report.runs[0][0].fault.kind == "data-race"
    assert not report.findings, "a write after another thread's read is the interpreter's to find"


UNWRITTEN_REGISTERS = '''from argus.dsl import *


@kernel(block=(32,))
def last(src: Tensor[f32, "n", 32], dst: Tensor[f32, "n", 32], n: int, steps: int):
    tag(src, lambda r, c: (c,))
    got = make_local((1,), f32)
    for it in range(steps):
        got[0] = src[it, thread_idx.x]
    dst[0, thread_idx.x] = got[0]
'''
"""No claim, and registers a loop of no iteration leaves unwritten: what the long fuzz met three
times in 3000 kernels (a claim-free kernel reading, after a runtime loop, the registers its
iterations fill), minimized."""


def test_unwritten_registers_no_check_reads_are_the_checkers() -> None:
    """A read of registers nothing wrote is the checker's even where no check reads them, as
    the same read of shared memory is: it refutes the kernel, and the launch's fault is no
    disagreement."""
    launch = LaunchSpec((1,), (("tensor", "f32", (2, 32)), ("tensor", "f32", (2, 32)), ("int", 2), ("int", 0)), 3)
    report = check_case(KernelCase(UNWRITTEN_REGISTERS, "last", (launch,)))
    assert report.verdict == "violated" and not report.findings, report.result
    fault = report.runs[0][0].fault
    assert fault is not None and fault.kind == "uninitialized-read" and "local tile" in str(fault)
    shared = UNWRITTEN_REGISTERS.replace("got = make_local((1,), f32)", "got = make_shared((1, 32), f32)") \
        .replace("got[0]", "got[0, thread_idx.x]")
    report = check_case(KernelCase(shared, "last", (launch,)))
    assert report.verdict == "violated" and not report.findings, report.result


def test_generated_kernels_are_reproducible_from_their_seed() -> None:
    first, again = draw_kernel(random.Random(11)), draw_kernel(random.Random(11))
    assert first == again
    assert [np.asarray(a).tolist() for a in first.launches[0].arguments()] == \
        [np.asarray(a).tolist() for a in again.launches[0].arguments()]
    compile_case(first)  # the source text alone builds the kernel


def test_every_kind_of_verdict_is_drawn() -> None:
    """The generator is no use if everything it draws is proved, or refuted: over twenty seeds,
    both happen, and kernels drawn without a deliberate mistake are proved."""
    verdicts: dict[str, int] = {}
    right = 0
    for seed in range(20):
        case = draw_kernel(random.Random(seed))
        report = check_case(case, solver_timeout_ms=SOLVER_MS)
        assert not report.findings, report.findings[0].text()
        verdicts[str(report.verdict)] = verdicts.get(str(report.verdict), 0) + 1
        right += not case.mutations and report.verdict == "proved"
    assert verdicts.get("proved", 0) >= 3 and verdicts.get("violated", 0) >= 3, verdicts
    assert right >= 1, verdicts


def test_an_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="family"):
        draw_kernel(random.Random(0), "warp")
