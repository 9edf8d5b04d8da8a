"""Copies of an unrolled loop's ops checked together: the same findings as checking them one by
one, on every example and on kernels made to defeat the grouping."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.dsl import Tensor, bf16, block_idx, i32, kernel, make_local, static_range, tag
from argus.dsl import batching, thread_idx
from argus.dsl.analysis import Preparation, TagAnalysis
from argus.dsl.cli import load_module
from argus.dsl.verification import verify_kernel
from argus.verify import Verdict

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
KERNELS = {"transpose": "transpose", "gemm": "gemm", "flash_attention": "attention", "gemm_sm90": "gemm_sm90",
           "gemm_tma": "gemm_tma", "gemm_sm80": "gemm_sm80", "gemm_cdna": "gemm_cdna",
           "attention_cdna": "attention_cdna"}


def _example(folder: Path, name: str, edits: tuple[tuple[str, str], ...] = ()) -> Any:
    source = (EXAMPLES / f"{name}.py").read_text()
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new, 1)
    path = folder / f"batching_{name}.py"
    path.write_text(source)
    module = load_module(path)
    kernel_name = KERNELS[name]
    constants = getattr(module, f"example_{kernel_name}")(np.random.default_rng(0)).constants
    return getattr(module, kernel_name).specialize(**constants)


def _one_by_one(compiled: Any) -> Any:
    """The same IR, checked op by op."""
    plain = dataclasses.replace(compiled)
    plain.__dict__["preparation"] = Preparation(compiled.op, compiled.locations, batch=False)
    return plain


def _findings(result: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(str(w.get(k)) for k in ("assertion", "kind", "thread", "block", "element", "lhs written at",
                                                "rhs written at")) for w in result.witnesses)


def _runs(compiled: Any) -> list[batching.Run]:
    prep = compiled.preparation
    return [step for op in compiled.op.walk() for region in op.regions for block in region.blocks
            for step in prep.steps(block) if isinstance(step, batching.Run)]


def _groups(compiled: Any) -> list[batching.Group]:
    return [g for run in _runs(compiled) for g in run.groups]


def _domain(compiled: Any) -> dict[tuple[str, str], int]:
    """The facts an analysis leaves, as the least constant per kind and symbolic part (a fact
    ``e + k ≥ 0`` with a larger k follows from one with a smaller)."""
    analysis = TagAnalysis(compiled.op, compiled.locations, None, compiled.preparation).run()
    least: dict[tuple[str, str], int] = {}
    for kind, (k, part), *rest in analysis.facts:
        key = (kind + "".join(map(str, rest)), analysis.space.describe((0, part)))
        least[key] = min(k, least.get(key, k)) if kind == "ge0" else k
    return least


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_every_example_checks_the_same_with_copies_together(name: str, tmp_path: Path) -> None:
    compiled = _example(tmp_path, name)
    together, alone = verify_kernel(compiled, name), verify_kernel(_one_by_one(compiled), name)
    assert together.verdict is alone.verdict is Verdict.PROVED
    assert _domain(compiled) == _domain(_one_by_one(compiled))  # the same launches considered
    assert max(len(g.ops) for g in _groups(compiled)) >= 4  # the unrolled loops did run together
    assert not any(run.walked_again for run in _runs(compiled))  # and never had to be walked again


MUTANTS = [
    ("flash_attention", ("sVt[d, key] = v[kj * TILE + key, hk, d]", "sVt[d, key] = v[kj * TILE + key + 1, hk, d]")),
    ("flash_attention", ("kf[v0, v1, j] = sK[j * 8 + t1, ks * 16 + 2 * t0 + v0 + 8 * v1]",
                         "kf[v0, v1, j] = sK[j * 8 + t1, ks * 16 + 2 * t0 + v1 + 8 * v0]")),
    ("gemm", ("sA[e // BK, e % BK] = a[bm + e // BK, k0 + e % BK]", "sA[e // BK, e % BK] = a[bm + e // BK, 2 * k0 + e % BK]")),
    ("gemm", ("idx = MMA.b_layout(lane, v)", "idx = MMA.b_layout(lane, (v + 2) % 4)")),
]


@pytest.mark.parametrize("name, edit", MUTANTS)
def test_a_broken_example_gives_the_same_witnesses_with_copies_together(name: str, edit: tuple[str, str],
                                                                      tmp_path: Path) -> None:
    compiled = _example(tmp_path, name, (edit,))
    together, alone = verify_kernel(compiled, name), verify_kernel(_one_by_one(compiled), name)
    assert together.verdict is alone.verdict is Verdict.VIOLATED
    assert _findings(together) == _findings(alone)


@kernel(block=(32,), verify=False)
def through_one_register(x: Tensor[bf16, "n", 4], out: Tensor[bf16, "n", 4], n: int):
    """Every copy of the unrolled loop passes its element through the same register byte."""
    tag(x, lambda r, c: (r, c))
    row = block_idx.x * 32 + thread_idx.x
    tmp = make_local((1,), bf16)
    got = make_local((4,), bf16)
    want = make_local((4,), bf16)
    tag(want, lambda c: (row, c))
    for i in static_range(4):
        tmp[0] = x[row, i]
        got[i] = tmp[0]
    assert tag(got[...]) == tag(want[...]), "each column lands in its place"
    out[row, 0] = got[0]


@kernel(block=(32,), verify=False)
def through_one_register_late(x: Tensor[bf16, "n", 4], out: Tensor[bf16, "n", 4], n: int):
    """The same with the register read before it is written: copy i gets copy i - 1's element."""
    tag(x, lambda r, c: (r, c))
    row = block_idx.x * 32 + thread_idx.x
    tmp = make_local((1,), bf16)
    got = make_local((4,), bf16)
    want = make_local((4,), bf16)
    tag(want, lambda c: (row, c))
    tmp[0] = x[row, 0]
    for i in static_range(4):
        got[i] = tmp[0]
        tmp[0] = x[row, i]
    assert tag(got[...]) == tag(want[...]), "each column lands in its place"
    out[row, 0] = got[0]


def test_copies_sharing_a_register_are_walked_again_op_by_op() -> None:
    good = verify_kernel(through_one_register.specialize(), "through_one_register")
    assert good.verdict is Verdict.PROVED, good.text()
    late = through_one_register_late.specialize()
    bad = verify_kernel(late, "through_one_register_late")
    assert bad.verdict is Verdict.VIOLATED, bad.text()
    # running the copies together reordered the register's accesses: walked again, op by op
    assert any(run.walked_again for run in _runs(late))
    assert _findings(bad) == _findings(verify_kernel(_one_by_one(late), "through_one_register_late"))


@kernel(block=(32,), verify=False)
def chained(x: Tensor[i32, "n", 32], out: Tensor[i32, "n", 32], n: int):
    """An index accumulated over an unrolled loop: each copy reads the one before."""
    at = thread_idx.x
    for i in static_range(4):
        at = (at + 8) % 32
        out[block_idx.x, at] = x[block_idx.x, i]


@kernel(block=(32,), verify=False)
def unchained(x: Tensor[i32, "n", 32], out: Tensor[i32, "n", 32], n: int):
    """The same indices, each copy computing its own from the thread's index."""
    for i in static_range(4):
        at = (thread_idx.x + 8 * (i + 1)) % 32
        out[block_idx.x, at] = x[block_idx.x, i]


def _largest_group(compiled: Any, name: str) -> int:
    return max((len(g.ops) for g in _groups(compiled) if g.ops[0].name == name), default=1)


def test_copies_that_depend_on_each_other_run_one_by_one() -> None:
    assert _largest_group(unchained.specialize(), "arith.addi") >= 3
    assert _largest_group(unchained.specialize(), "argus.store") == 4
    assert _largest_group(chained.specialize(), "arith.addi") == 1  # copy i adds to copy i - 1's index
    assert _largest_group(chained.specialize(), "argus.store") == 4  # the stores do not depend on each other
    assert verify_kernel(chained.specialize(), "chained").verdict is Verdict.PROVED
