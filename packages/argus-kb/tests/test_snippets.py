"""Every DSL snippet of every built-in entry is a real kernel: it compiles, the tag checker
proves its assertions for every launch, it matches its numpy reference on the interpreter,
and it builds for the targets it declares. The entry's data agrees with its code: the
invariant templates instantiate to what the verified code states, the parameters are names
the code sets (to their defaults), and the recipe applies to its own 'before' kernel."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("argus.dsl")

from argus.dsl import Kernel  # noqa: E402
from argus.dsl.cli import load_module  # noqa: E402
from argus.kb import KernelDescription, KnowledgeBase, Truth, describe_source  # noqa: E402
from argus.kb.packs import BUILTIN  # noqa: E402
from argus.kb.targets import TARGETS  # noqa: E402
from argus.verify import Verdict  # noqa: E402

KB = KnowledgeBase.load([BUILTIN])
#: After snippets whose GEMM product claim the checker leaves unknown (no proof, no violation):
#: expected to fail until it proves them, and to say so once it does.
UNPROVED = {
    "split-k": "the checker does not check an atomic_add into a tensor with assert_tags (unknown)",
    "stagger-k": "the claim's candidate counterexamples (conflicting, at the store into c) do not replay (unknown)",
}


def _unproved(entry: Any, role: str = "after") -> list[Any]:
    reason = UNPROVED.get(entry.id) if role == "after" else None
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


SNIPPETS = [pytest.param(e, s, id=f"{e.id}:{s.role}", marks=_unproved(e, s.role)) for e in KB.entries
            for s in e.snippets]


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


def load(entry: Any, snippet: Any, tmp_path: Path) -> Any:
    path = tmp_path / f"{entry.id.replace('-', '_')}_{snippet.role}.py"
    path.write_text(snippet.code)
    return load_module(path)


def kernels(module: Any) -> list[tuple[str, Kernel]]:
    found = [(n, v) for n, v in vars(module).items() if isinstance(v, Kernel)]
    assert found, "the snippet defines no kernel"
    return found


def where(entry: Any, snippet: Any) -> str:
    return f"{entry.path}:{snippet.line}"


@pytest.mark.parametrize("entry, snippet", SNIPPETS)
def test_snippet_is_proved_runs_and_builds(entry: Any, snippet: Any, tmp_path: Path) -> None:
    module = load(entry, snippet, tmp_path)
    targets = getattr(module, "TARGETS", ())
    for t in targets:
        assert entry.covers_target(t), f"{where(entry, snippet)}: TARGETS names {t}, which the entry does not cover"
    for name, k in kernels(module):
        make = getattr(module, f"example_{name}", None)
        assert make is not None, f"{where(entry, snippet)}: kernel {name} needs example_{name}(rng) -> Problem"
        problem = make(np.random.default_rng(0))
        result = k.verify(**problem.constants)
        assert result.verdict is Verdict.PROVED, f"{where(entry, snippet)}: {result.text()}"
        assert "states no tag assertions" not in result.text(), f"{where(entry, snippet)}: {name} tags nothing"
        k[problem.grid](*problem.args, **problem.constants)
        problem.check()
        build(k, problem.constants, targets)


def build(k: Kernel, constants: dict[str, Any], targets: Any) -> None:
    """Compile `k` for each target: PTX for NVIDIA, AMDGPU assembly for AMD."""
    for t in targets:
        kind, arch = t.split(":")
        if kind == "nvptx":
            from argus.backends.nvptx import compiler
            from argus.backends.nvptx.targets import arch as nv_arch

            binary = compiler.build(k.specialize(**constants), nv_arch(arch), assemble=False)
            assert f".target {arch}" in binary.ptx
        else:
            from argus.backends.amdgpu import compiler as amd_compiler
            from argus.backends.amdgpu.targets import chip

            assert "v_" in amd_compiler.build(k.specialize(**constants), chip(arch)).assembly


def _lines(text: str) -> list[str]:
    """The statements' lines of `text`, comments dropped and spaces normalized."""
    lines = text.strip().split("\n")
    for token in tokenize.generate_tokens(io.StringIO(text.strip() + "\n").readline):
        if token.type == tokenize.COMMENT:
            row, col = token.start
            lines[row - 1] = lines[row - 1][:col]
    return [" ".join(line.split()) for line in lines if line.strip()]


def _in_order(wanted: list[str], code: list[str]) -> bool:
    """Whether each wanted line is a line of the code, in this order (statements of a template
    go to their use sites, so they need not be adjacent)."""
    rest = iter(code)
    return all(any(line == c for c in rest) for line in wanted)


@pytest.mark.parametrize("entry", [e for e in KB.entries if e.invariants and e.snippets], ids=lambda e: e.id)
def test_invariant_templates_are_what_the_verified_code_states(entry: Any) -> None:
    code = _lines((entry.snippet("after") or entry.snippet("example")).code)
    for inv in entry.invariants:
        assert _in_order(_lines(inv.instantiate_example()), code), (
            f"{entry.path}: invariant {inv.id}, instantiated with its example, is not in the snippet:\n"
            f"{inv.instantiate_example()}")


def _module_ints(code: str) -> dict[str, int]:
    values = {}
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and type(node.value.value) is int:
            for t in node.targets:
                if isinstance(t, ast.Name):
                    values[t.id] = node.value.value
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Tuple):
            for t, v in zip(node.targets[0].elts, node.value.elts):
                if isinstance(t, ast.Name) and isinstance(v, ast.Constant) and type(v.value) is int:
                    values[t.id] = v.value
    return values


@pytest.mark.parametrize("entry", [e for e in KB.entries if e.parameters.parameters and e.snippet("after")],
                         ids=lambda e: e.id)
def test_parameters_are_names_the_code_sets_to_their_defaults(entry: Any, tmp_path: Path) -> None:
    snippet = entry.snippet("after")
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", snippet.code))
    constants = _module_ints(snippet.code)
    for p in entry.parameters.parameters:
        assert p.name in words, f"{entry.path}: parameter {p.name} does not appear in the after snippet"
        if p.name in constants:
            assert constants[p.name] == p.default, f"{entry.path}: {p.name} is {constants[p.name]} in the code"
    module = load(entry, snippet, tmp_path)
    name, k = kernels(module)[0]
    sizes = _sizes(module, name, k, getattr(module, f"example_{name}")(np.random.default_rng(0)))
    assert entry.parameters.admits(entry.parameters.default(), sizes), \
        f"{entry.path}: the defaults break the constraints for the snippet's own sizes"


def _sizes(module: Any, name: str, k: Kernel, problem: Any) -> dict[str, int]:
    sizes = {n: v for n, v in vars(module).items() if type(v) is int}
    params = list(k.signature.parameters)
    for pname, value in zip(params, problem.args):
        if type(value) is int:
            sizes[pname] = value
    sizes.update({n: v for n, v in problem.constants.items() if type(v) is int})
    return sizes


@pytest.mark.parametrize("entry", [e for e in KB.entries if e.kind == "recipe" and e.snippet("before")],
                         ids=lambda e: e.id)
def test_a_recipe_applies_to_its_own_before_kernel(entry: Any, tmp_path: Path) -> None:
    snippet = entry.snippet("before")
    module = load(entry, snippet, tmp_path)
    name, k = kernels(module)[0]
    problem = getattr(module, f"example_{name}")(np.random.default_rng(0))
    declared = getattr(module, "TARGETS", ()) or [t for t in entry.targets if t in TARGETS]
    target = declared[0] if declared else None
    described = describe_source(snippet.code, target=target, family=entry.families[0],
                                sizes=_sizes(module, name, k, problem))
    verdict = entry.applicability(described)
    assert verdict.truth is Truth.YES, f"{entry.path}: on its own before kernel ({target}): {verdict}"
    assert isinstance(described, KernelDescription)


#: The mistake each recipe invites, as an edit of its after snippet, which its invariants must
#: catch (a violation with a replayed counterexample, not merely "no proof").
MISTAKES = [
    ("software-pipelining", "ahead = min(k0 + (s + STAGES - 1) * BK, K - BK)",
     "ahead = min(k0 + (s + STAGES) * BK, K - BK)"),
    # (the TMA pipelines' slice summed twice shows only once the loop goes round twice: its
    # witness replays at a K larger than the smallest launch's)
    ("tma-mbarrier-pipeline", "ahead = min(k0 + (s + STAGES - 1) * BK, K - BK)",
     "ahead = min(k0 + (s + STAGES) * BK, K - BK)"),
    ("async-warpgroup-gemm", "ahead = min(k0 + (s + STAGES - 1) * BK, K - BK)",
     "ahead = min(k0 + (s + STAGES) * BK, K - BK)"),
    ("vectorized-loads", "rx.view((1,), WIDE)[0] = xv[i]", "rx.view((1,), WIDE)[0] = xv[i + 1]"),
    ("matrix-core-matmul", "af[v] = a[bm + idx % BM, k0 + idx // BM]", "af[v] = a[bm + idx // BM, k0 + idx % BM]"),
    ("gqa-packing", "qf[j] = q[qt * rows + r % rows, hk * GQA + r // rows, idx // 16]",
     "qf[j] = q[qt * rows + r % rows, hk + r // rows, idx // 16]"),
    ("v-transpose", "sVt[d, key] = v[k0 + key, d]", "sVt[key, d] = v[k0 + key, d]"),
    ("expert-parallel-grid", "wf[j] = w[e, bn + idx % BN, k0 + idx // BN]",
     "wf[j] = w[E - 1 - e, bn + idx % BN, k0 + idx // BN]"),
    ("wgmma", "VA = ComposedLayout(Swizzle(3, 0, 3), 0,", "VA = ComposedLayout(Swizzle(2, 0, 3), 0,"),
]


@pytest.mark.parametrize("ident, right, wrong", MISTAKES, ids=[getattr(m, "id", None) or m[0] for m in MISTAKES])
def test_the_invariants_catch_the_mistake_the_recipe_invites(ident: str, right: str, wrong: str,
                                                             tmp_path: Path) -> None:
    entry = KB.get(ident)
    snippet = entry.snippet("after")
    assert right in snippet.code, f"{entry.path}: the after snippet no longer has {right!r}"
    mutated = type(snippet)(snippet.role, snippet.code.replace(right, wrong), snippet.line)
    module = load(entry, mutated, tmp_path)
    name, k = kernels(module)[0]
    problem = getattr(module, f"example_{name}")(np.random.default_rng(0))
    result = k.verify(**problem.constants)
    assert result.verdict is Verdict.VIOLATED, result.text()
    # The mistake breaks a tag assertion, replayed (a GEMM's claim on C sees a slice summed twice
    # as a store of no product: "conflicting"); a mistake that also reads past the end (an
    # off-by-one index) may add an out-of-bounds finding, which the interpreter must fault on.
    assert any(w["kind"] in ("violated", "conflicting") and w["replayed"].startswith("reproduced")
               for w in result.witnesses), \
        result.text()
    assert all(w["replayed"].startswith("reproduced") or (w["kind"] == "out-of-bounds" and w["replayed"].startswith(
        "the interpreter faults the same way")) for w in result.witnesses), result.text()


def _set_constants(code: str, values: dict[str, Any]) -> str:
    """`code` with the module-level constants named in `values` (plain or in a tuple
    assignment) set to those values."""
    spans = []
    for node in ast.parse(code).body:
        if not isinstance(node, ast.Assign) or len(node.targets) != 1:
            continue
        target = node.targets[0]
        pairs = [(target, node.value)]
        if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
            pairs = list(zip(target.elts, node.value.elts))
        spans += [(v, values[t.id]) for t, v in pairs if isinstance(t, ast.Name) and t.id in values]
    assert len(spans) == len(values), f"not every one of {sorted(values)} is a module constant"
    lines = code.split("\n")
    for node, value in sorted(spans, key=lambda s: (s[0].lineno, s[0].col_offset), reverse=True):
        line = lines[node.lineno - 1]
        lines[node.lineno - 1] = line[:node.col_offset] + repr(value) + line[node.end_col_offset:]
    return "\n".join(lines)


def _variants() -> list[Any]:
    """Each parameter at the ends of its domain, the others at their defaults."""
    out = []
    for e in KB.entries:
        space = e.parameters
        if not space.parameters or e.snippet("after") is None:
            continue
        for p in space.parameters:
            for value in dict.fromkeys((p.values[0], p.values[-1])):
                if value != p.default:
                    out.append(pytest.param(e, {**space.default(), p.name: value}, id=f"{e.id}:{p.name}={value}",
                                            marks=_unproved(e)))
    return out


@pytest.mark.parametrize("entry, point", _variants())
def test_the_parameters_really_tune_the_code(entry: Any, point: dict[str, Any], tmp_path: Path) -> None:
    """A search sets a recipe's parameters in its after snippet: at the ends of each domain (where
    the constraints admit them for the snippet's sizes) the kernel is still proved, and still
    builds for its first target."""
    snippet = entry.snippet("after")
    module = load(entry, snippet, tmp_path)
    name, k = kernels(module)[0]
    sizes = _sizes(module, name, k, getattr(module, f"example_{name}")(np.random.default_rng(0)))
    if not entry.parameters.admits(point, {n: v for n, v in sizes.items() if n not in point}):
        pytest.skip(f"the constraints exclude {point} for the snippet's sizes")
    changed = type(snippet)(snippet.role, _set_constants(snippet.code, point), snippet.line)
    variant_dir = tmp_path / "variant"
    variant_dir.mkdir()
    module = load(entry, changed, variant_dir)
    for name, k in kernels(module):
        problem = getattr(module, f"example_{name}")(np.random.default_rng(0))
        result = k.verify(**problem.constants)
        assert result.verdict is Verdict.PROVED, f"{entry.path} at {point}: {result.text()}"
        build(k, problem.constants, getattr(module, "TARGETS", ())[:1])
