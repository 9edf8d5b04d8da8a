"""The candidate format: what is refused (with the line and what is accepted), what is taken, and
that taking a candidate runs none of its module-level Python."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from argus.harness import CandidateError, extract_candidate, parse_candidate
from argus.harness.extract import kernel_functions
from argus.harness.kb import failed_assumption, set_constants, tunables
from argus.harness.loader import load_candidate
from harness_testing import gemm_candidate

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("text, message", [
    ("import os\n", "candidate.py:1:1: import os is not accepted; a candidate imports only from argus.dsl"),
    ("from subprocess import run\n", "import from 'subprocess' is not accepted"),
    ("from argus.dsl import *\n", "import * is not accepted"),
    ("from argus.dsl import to_storage\n", "'to_storage' is not part of the language"),
    ("from . import x\n", "relative imports are not accepted"),
    ("X = __import__('os')\n", "names starting with '_' are not accepted ('__import__')"),
    ("X = open('f')\n", "'open' is a Python builtin outside the language"),
    ("X = (1).__class__\n", "private attribute '__class__' is not accepted"),
    ("X = lambda: 1\n", "lambdas are accepted only as tag functions inside kernels"),
    ("if True:\n    pass\n", "If statements are not accepted at the top level"),
    ("def helper():\n    pass\n", "function 'helper' needs @kernel(...) or @device"),
    ("x = {1, 2}\n", "Set is not part of the language"),
    ("def f(:\n", "not Python syntax"),
    ("from argus.dsl import Tensor, f32, kernel\n@kernel(block=(32,))\ndef k(a: Tensor[f32, True]):\n    pass\n",
     "candidate.py:3:22: a tensor dim is an int or a name"),
])
def test_refused_with_the_line_and_what_is_accepted(text: str, message: str) -> None:
    with pytest.raises(CandidateError) as caught:
        parse_candidate(text)
    assert message in str(caught.value)


def test_calls_outside_the_language_inside_a_kernel_are_refused() -> None:
    text = gemm_candidate().replace("    tid = thread_idx.x\n", "    tid = thread_idx.x\n    leak = eval('1')\n")
    with pytest.raises(CandidateError, match=r"candidate.py:\d+:\d+: 'eval' is a Python builtin outside"):
        parse_candidate(text)
    text = gemm_candidate().replace("    tid = thread_idx.x\n", "    tid = thread_idx.x.__reduce__\n")
    with pytest.raises(CandidateError, match="private attribute"):
        parse_candidate(text)
    with pytest.raises(CandidateError, match="cannot turn its tag checks off"):
        parse_candidate(gemm_candidate().replace("@kernel(block=(THREADS,))", "@kernel(block=(THREADS,), verify=False)"))


def test_the_examples_become_candidates(tmp_path: Path) -> None:
    for name, kernel in [("gemm", "gemm"), ("gemm_sm80", "gemm_sm80"), ("flash_attention", "attention")]:
        candidate = extract_candidate((ROOT / "examples" / f"{name}.py").read_text(), kernel)
        assert candidate.kernel == kernel and "numpy" not in candidate.text and "example_" not in candidate.text
    gemm = extract_candidate((ROOT / "examples" / "gemm.py").read_text(), "gemm")
    assert gemm.signature() == ("a: Tensor[bf16, 'M', 'K'], b: Tensor[bf16, 'N', 'K'], c: Tensor[f32, 'M', 'N'], "
                                "M: int, N: int, K: int")


def test_tag_assertions_are_counted_wherever_they_are_written() -> None:
    """`Candidate.assertions` counts the text: a helper the kernel never calls counts too."""
    text = gemm_candidate()
    assert parse_candidate(text).assertions == 1
    helper = ("from argus.dsl import device\n\n@device\ndef unused(x):\n"
              "    assert tag(x[0]) == tag(x[1]), 'never reached'\n    return x\n\n@kernel(block=(THREADS,))")
    assert parse_candidate(text.replace("@kernel(block=(THREADS,))", helper, 1)).assertions == 2


@pytest.mark.parametrize("text", ["X = " + "-" * 100_000 + "1", "X = " + "(" * 10_000 + "1" + ")" * 10_000,
                                  "X = 1\n" * 40_000], ids=["nested", "parentheses", "long"])
def test_recipe_helpers_read_any_text_within_the_candidate_limits(text: str) -> None:
    """A planner's text that Python cannot even parse is refused (`set_constants`) or left
    unjudged (`failed_assumption`, `tunables`), never a crash of the harness."""
    assert failed_assumption(text, {"M": 64}) is None
    assert tunables(text, {}) == {}
    with pytest.raises(CandidateError, match="recipe.py:1:"):
        set_constants(text, {"X": 2})

def test_loading_builds_the_kernel_without_running_module_code(tmp_path: Path) -> None:
    text = set_constants(gemm_candidate(), {"BK": 8})
    candidate = parse_candidate(text)
    loaded = load_candidate(candidate, tmp_path / "candidate.py")
    assert loaded.grid({"M": 64, "N": 32, "K": 16}) == (2, 4)
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((32, 16)).astype(np.float32), rng.standard_normal((32, 16)).astype(np.float32)
    c = np.zeros((32, 32), np.float32)
    loaded.kernel[loaded.grid({"M": 32, "N": 32, "K": 16})](a, b, c, 32, 32, 16)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-4, atol=1e-4)
    assert loaded.kernel.verify().proved


def test_a_constant_that_fails_names_its_line(tmp_path: Path) -> None:
    text = gemm_candidate().replace("BK = 4", "BK = 4 // 0")
    with pytest.raises(CandidateError, match=r"candidate.py:\d+:\d+: this constant cannot be computed: "
                                              "ZeroDivisionError"):
        load_candidate(parse_candidate(text), tmp_path / "candidate.py")


def test_set_constants_rewrites_tuple_assignments() -> None:
    text = set_constants("BM, BN = 16, 16\nBK = 4\n", {"BN": 32, "BK": 8})
    assert text == "BM, BN = 16, 32\nBK = 8\n"
    with pytest.raises(CandidateError, match="no module constant STAGES"):
        set_constants(text, {"STAGES": 2})


def test_comprehensions_are_for_constants_only(tmp_path: Path) -> None:
    text = gemm_candidate().replace("BK = 4\n", "BK = 4\nFREED = tuple((s + 1) % 3 for s in range(3))\n")
    loaded = load_candidate(parse_candidate(text), tmp_path / "candidate.py")
    assert loaded.namespace["FREED"] == (1, 2, 0)
    inside = gemm_candidate().replace("    tid = thread_idx.x\n", "    tid = [thread_idx.x for q in range(2)]\n")
    with pytest.raises(CandidateError, match="ListComp is not part of the language"):
        parse_candidate(inside)


@pytest.mark.parametrize("text", ["X = " + "-" * 100_000 + "1\n", "X = " + "+".join(["1"] * 200_000) + "\n"],
                         ids=["deep", "long"])
def test_text_past_the_parsers_limits_is_refused_not_raised(text: str) -> None:
    with pytest.raises(CandidateError, match="candidate.py:1:1: the text cannot be parsed"):
        parse_candidate(text)


def test_constants_compare_and_combine_as_python_does_or_are_refused(tmp_path: Path) -> None:
    guarded = gemm_candidate().replace("BK = 4\n", "BK = 4\nSAFE = 0 and 1 // 0\n")
    assert load_candidate(parse_candidate(guarded), tmp_path / "guarded.py").namespace["SAFE"] == 0
    membership = gemm_candidate().replace("BK = 4\n", "BK = 4\nWIDE = BK in (4, 8)\n")
    with pytest.raises(CandidateError, match=r"membership.py:\d+:\d+: the comparison In is not accepted"):
        load_candidate(parse_candidate(membership), tmp_path / "membership.py")


def test_the_languages_constants_are_computed(tmp_path: Path) -> None:
    """What a constant may do: call the language's constructors and compile-time functions,
    read the attributes and call the methods of its values, and compute with numbers, strings,
    tuples, dicts and comprehensions."""
    code = """
from argus.dsl import bf16, u32, u64, warp_mma_16x8x16
from argus.layout import ComposedLayout, E, Layout, Swizzle, composition, make_layout
from argus.backends.nvptx import language as nv
import math
ATOM = warp_mma_16x8x16(bf16, bf16, f32)
PER_THREAD = ATOM.values("c")
C_THREADS = ATOM.c_layout.shape[0]
TILE = Layout((4, 8), (8, 1))
SIZE, FIRST, AT = TILE.size(), TILE[0].size(), TILE(3)
SMEM = ComposedLayout(Swizzle((BK * 2 // 16).bit_length() + 2, 3, 3), 0, make_layout((8, 64), (64, 1)))
COMPOSED = composition(TILE, Layout(4, 1)).size()
LOG2E = math.log2(math.e)
WIDE = {1: u32, 2: u64}[2]
BITS = WIDE.bits
COPY = nv.LDMATRIX_X4.vector_bytes
FREED = tuple((s + 2) % 3 for s in range(3) if s != 1)
MIXED = (min(3, 4), max(1, 2), abs(-2), divmod(7, 2), round(2.6), int(2.9), float(1), bool(0), len("ab"))
NAME = "tile_" + "ab" * 2 if BK > 2 else "tile"
STRIDE = E(0) * 2
"""
    text = gemm_candidate().replace("BK = 4\n", "BK = 4\n" + code, 1)
    namespace = load_candidate(parse_candidate(text), tmp_path / "candidate.py").namespace
    assert (namespace["PER_THREAD"], namespace["C_THREADS"]) == (4, (4, 8))
    assert (namespace["SIZE"], namespace["FIRST"], namespace["AT"]) == (32, 4, 24)
    assert namespace["SMEM"].size() == 512 and namespace["COMPOSED"] == 4
    assert namespace["LOG2E"] == pytest.approx(1.4426950408889634)
    assert (namespace["BITS"], namespace["COPY"]) == (64, 16)
    assert namespace["FREED"] == (2, 1)
    assert namespace["MIXED"] == (3, 2, 2, (3, 1), 3, 2, 1.0, False, 2)
    assert namespace["NAME"] == "tile_abab" and str(namespace["STRIDE"]) == "2@0"


def test_every_example_kernel_loads(tmp_path: Path) -> None:
    """The examples (the baselines of tasks) stay in the format: each kernel's candidate loads
    and its grid computes."""
    loaded = 0
    for path in sorted((ROOT / "examples").glob("*.py")):
        text = path.read_text()
        for fn in kernel_functions(ast.parse(text)):
            candidate = extract_candidate(text, fn.name, path.name)
            kernel = load_candidate(candidate, tmp_path / f"{fn.name}.py")
            if kernel.grid_node is not None:
                assert kernel.grid({a.arg: 256 for a in kernel.grid_node.args.args})
            loaded += 1
    assert loaded >= 8
