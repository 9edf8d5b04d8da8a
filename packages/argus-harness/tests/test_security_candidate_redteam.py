"""Attacks that pass a simple reading of the candidate format and go for what comes after it:
the file the front-end reads the kernel from, the work the constant evaluator does inside the
language's functions, and what the kernel's code reaches once it is compiled. Each is refused
with a `CandidateError` (or the front-end's own located error) at its line, before anything
outside the language runs; the sentinels are files an attack would create."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import argus.dsl
import pytest
from argus.harness import CandidateError, parse_candidate
from argus.harness import candidate as candidate_format
from argus.harness.candidate import Candidate
from argus.harness.limits import (
    MAX_CALL_BITS,
    MAX_DICT_ENTRIES,
    MAX_FUNCTIONS,
    MAX_GRID,
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_STEPS,
)
from argus.harness.loader import load_candidate
from harness_testing import gemm_candidate

KERNEL_LINE = "    tid = thread_idx.x\n"


def base() -> str:
    return gemm_candidate()


def in_kernel(code: str) -> str:
    return base().replace(KERNEL_LINE, KERNEL_LINE + code + "\n", 1)


def line_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if marker in line)


def unchecked(text: str) -> Candidate:
    """`text` as a candidate that never went through the format check."""
    return Candidate(text, "gemm", (), None)


# ---- the file the front-end reads is the text that was checked ---------------------------------

def hidden_in_a_comment(encoding: str, hidden_newline: str, sentinel: Path,
                        first: str = "#!/usr/bin/env python") -> str:
    """A kernel with a comment that, decoded as `encoding`, ends and goes on as code writing
    `sentinel`. Checked as a string, the comment is a comment. `first`: its first line, before
    the declaration (Python reads one on line 2 after a comment)."""
    return (f"{first}\n# -*- coding: {encoding} -*-\n"
            '"""A vector fill."""\n'
            "from argus.dsl import Tensor, f32, kernel, thread_idx\n\n"
            "@kernel(block=(32,))\n"
            'def gemm(a: Tensor[f32, "N"], N: int):\n'
            "    i = thread_idx.x\n"
            f"    # {hidden_newline}    x = open('{sentinel}', 'w')\n"
            "    a[i] = 1.0\n")


HIDDEN = {"utf-7": "+AAo-", "unicode_escape": "\\n", "raw_unicode_escape": "\\u000a"}
"""Encodings under which a comment can hide a line of code, and how the newline is written."""


@pytest.mark.parametrize("encoding", HIDDEN, ids=HIDDEN)
def test_a_coding_declaration_other_than_utf8_is_refused(encoding: str, tmp_path: Path) -> None:
    """Python decodes a file by its coding declaration, and the front-end reads the kernel from
    the file: under utf-7 a comment of the checked text decodes to code calling ``open``."""
    sentinel = tmp_path / "written"
    text = hidden_in_a_comment(encoding, HIDDEN[encoding], sentinel)
    def build(text: str) -> object:
        return load_candidate(unchecked(text), tmp_path / "candidate.py").kernel.specialize()

    for check in (parse_candidate, build):
        with pytest.raises(CandidateError, match=f"declares the encoding '{encoding}'") as caught:
            check(text)
        assert caught.value.location is not None and caught.value.location.line == 2
    assert not sentinel.exists()


def test_the_loader_compiles_only_a_text_that_reads_back_as_checked(monkeypatch: pytest.MonkeyPatch,
                                                                     tmp_path: Path) -> None:
    """Were a declaration to slip past the format check, the loader still refuses a file that
    Python reads back otherwise than the text it was given."""
    monkeypatch.setattr(candidate_format, "_utf8_only", lambda text, filename: None, raising=False)
    sentinel = tmp_path / "written"
    text = hidden_in_a_comment("utf-7", HIDDEN["utf-7"], sentinel)
    with pytest.raises(CandidateError, match="does not read back from its file as it was checked") as caught:
        load_candidate(unchecked(text), tmp_path / "candidate.py").kernel.specialize()
    assert caught.value.location is not None and caught.value.location.line == 1
    assert not sentinel.exists()


@pytest.mark.parametrize("declaration", ["# -*- coding: utf-8 -*-", "# vim: set fileencoding=UTF8 :",
                                         "# coding=utf_8"])
def test_a_utf8_declaration_is_accepted(declaration: str, tmp_path: Path) -> None:
    text = f"{declaration}\n{base()}".replace("\n", "\r\n")
    loaded = load_candidate(parse_candidate(text), tmp_path / "candidate.py")
    assert loaded.kernel.specialize() is not None


def test_a_lone_surrogate_is_refused_by_the_check_and_the_loader(tmp_path: Path) -> None:
    text = in_kernel("    # \ud800")
    with pytest.raises(CandidateError, match="not valid Unicode"):
        parse_candidate(text)
    with pytest.raises(CandidateError, match="not valid Unicode"):
        load_candidate(unchecked(text), tmp_path / "candidate.py")


def test_a_candidate_loads_whatever_the_locale_encoding(tmp_path: Path) -> None:
    """The kernel file is written as UTF-8 (what Python reads source as), not in the locale's
    encoding: under an ASCII locale a docstring's ``·`` is still text."""
    script = ("import sys\nfrom pathlib import Path\nfrom argus.harness import parse_candidate\n"
              "from argus.harness.loader import load_candidate\n"
              "text = sys.stdin.read()\n"
              "load_candidate(parse_candidate(text), Path(sys.argv[1])).kernel.specialize()\n"
              "print('loaded')\n")
    environment = {**os.environ, "LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
                   "PYTHONIOENCODING": "utf-8", "ARGUS_CACHE_DIR": "off"}
    text = base()
    assert "·" in text
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "candidate.py")], input=text.encode(),
                          capture_output=True, env=environment, timeout=120)
    assert done.stdout.decode().strip() == "loaded", done.stderr.decode()[-2000:]


# ---- the constant evaluator counts the work inside what it computes ------------------------------

def constants(code: str) -> str:
    return base().replace("BK = 4\n", f"BK = 4\n{code}\n", 1)


LAYOUT_IMPORTS = "from argus.layout import ComposedLayout, Layout, Swizzle, prefix_product\n"
SHARED = "\n".join(["A0 = (0,)"] + [f"A{i} = (A{i - 1}, A{i - 1})" for i in range(1, 14)])
"""Thirteen tuples of two, each the one before twice: 24,574 elements, and the twelfth already
past `MAX_ITEMS` (walking ``Layout(A27, A27)`` would take hours)."""

WORK = {
    "one-tuple-many-times": (SHARED, "A12 = ", f"elements of a tuple (at every depth, repeats included); a "
                                               f"constant holds at most {MAX_ITEMS}"),
    "range-in-a-tuple": ("X = (range(3),)", "X = (range", "not a tuple holding a range, dict or slice"),
    "dict-in-a-tuple": ("X = ({1: 2},)", "X = ({", "not a tuple holding a range, dict or slice"),
    "products-of-big-numbers": (LAYOUT_IMPORTS + "X = prefix_product((1 << 500,) * 40)", "X = prefix",
                                f"the language's functions are given at most {MAX_CALL_BITS}"),
    "enumerating-a-layout-again-and-again": (
        LAYOUT_IMPORTS + "L = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((1 << 16,), (1,)))\n"
                         "X = tuple(L.cosize() for i in range(400))", "X = tuple", f"more than {MAX_STEPS} steps"),
    "walking-a-tuple-again-and-again": ("T = tuple(range(10000))\nX = tuple(max(T) for i in range(100))",
                                        "X = tuple", f"more than {MAX_STEPS} steps"),
    "walking-a-range-again-and-again": ("X = tuple(max(range(10000)) for i in range(100))", "X = tuple",
                                        f"more than {MAX_STEPS} steps"),
    "comparing-tuples-again-and-again": ("T = tuple(range(10000))\nU = tuple(range(10000))\n"
                                         "X = tuple(T == U for i in range(100))", "X = tuple",
                                         f"more than {MAX_STEPS} steps"),
    "hashing-a-tuple-again-and-again": ("T = tuple(range(10000))\nX = tuple({T: i}[T] for i in range(100))",
                                        "X = tuple", f"more than {MAX_STEPS} steps"),
    "keys-of-one-hash": ("P = 2 ** 61 - 1\nX = {" + ", ".join(f"P * {i}: {i}" for i in range(300)) + "}[0]",
                         "X = {", f"a constant holds at most {MAX_DICT_ENTRIES}"),
}
"""Each: constants whose work grows past what the evaluator counted, the line it is refused at,
and what the refusal says."""


@pytest.mark.parametrize("code, marker, message", WORK.values(), ids=WORK.keys())
def test_work_the_evaluator_did_not_count_is_refused(code: str, marker: str, message: str, tmp_path: Path) -> None:
    text = constants(code)
    with pytest.raises(CandidateError) as caught:
        load_candidate(unchecked(text), tmp_path / "candidate.py")
    assert message in str(caught.value)
    assert caught.value.location is not None and caught.value.location.line == line_of(text, marker)


def test_the_format_check_refuses_a_dict_past_the_limit() -> None:
    text = constants(WORK["keys-of-one-hash"][0])
    with pytest.raises(CandidateError, match=f"a dict of 300 entries; a constant's dict has at most "
                                             f"{MAX_DICT_ENTRIES}") as caught:
        parse_candidate(text)
    assert caught.value.location is not None and caught.value.location.line == line_of(text, "X = {")


def test_a_tuple_made_of_one_tuple_is_counted_once_walked(tmp_path: Path) -> None:
    """Sharing keeps the evaluator's own walk cheap; a value it holds is still counted whole."""
    text = constants("\n".join(["A0 = (0,)"] + [f"A{i} = (A{i - 1}, A{i - 1})" for i in range(1, 12)]))
    loaded = load_candidate(parse_candidate(text), tmp_path / "candidate.py")
    assert loaded.namespace["A11"][0] is loaded.namespace["A11"][1]


# ---- what the kernel's code reaches once the front-end reads it --------------------------------

def test_kernel_code_the_check_never_saw_reaches_no_python_builtin(tmp_path: Path) -> None:
    """The front-end looks a name up in the kernel's globals, then among Python's builtins, and
    calls what it finds. The format check refuses ``open``; kernel code it never saw (given to
    the loader directly) finds only a marker there, which it cannot call."""
    sentinel = tmp_path / "written"
    for code in (f"    x = open('{sentinel}', 'w')", "    x = __import__('os')", "    x = getattr(f32, 'numpy')"):
        loaded = load_candidate(unchecked(in_kernel(code)), tmp_path / "candidate.py")
        with pytest.raises(argus.dsl.ArgusError, match="a Python builtin outside the language") as caught:
            loaded.kernel.specialize()
        assert caught.value.location is not None and caught.value.location.line == line_of(in_kernel(code), code)
    assert not sentinel.exists()


def test_round_in_kernel_code_is_bounded_as_in_constants(tmp_path: Path) -> None:
    """``round(5, -10**8)`` folds ``10 ** 10**8``: kernel code calls the bounded ``round``."""
    text = in_kernel("    x = round(5, -100000)")
    loaded = load_candidate(parse_candidate(text), tmp_path / "candidate.py")
    with pytest.raises(argus.dsl.ArgusError, match="takes ndigits from -64 to 64") as caught:
        loaded.kernel.specialize()
    assert caught.value.location is not None and caught.value.location.line == line_of(text, "round(5")


def test_a_chain_of_helpers_past_the_limit_is_refused(tmp_path: Path) -> None:
    """Thousands of helpers calling each other took the compiler past Python's recursion limit
    (a RecursionError, not a located error)."""
    chain = "\n".join(f"@device\ndef h{i}(x):\n    return h{i + 1}(x)\n" for i in range(3000))
    text = base().replace("from argus.dsl import", "from argus.dsl import device,", 1).replace(
        "BK = 4\n", f"BK = 4\n\n{chain}\n@device\ndef h3000(x):\n    return x\n", 1).replace(
        KERNEL_LINE, "    tid = h0(thread_idx.x)\n", 1)
    for check in (parse_candidate, lambda t: load_candidate(unchecked(t), tmp_path / "candidate.py")):
        with pytest.raises(CandidateError, match=f"a candidate defines at most {MAX_FUNCTIONS} functions") as caught:
            check(text)
        assert caught.value.location is not None
        assert caught.value.location.line == line_of(text, f"def h{MAX_FUNCTIONS}(x)")


@pytest.mark.parametrize("grid", ["(1 << 500,)", "(1, 1 << 20)", f"({MAX_GRID[0] + 1},)"])
def test_a_grid_past_what_any_target_launches_is_refused(grid: str, tmp_path: Path) -> None:
    """A grid of 2**500 blocks reached the interpreter's launch, which failed with an
    OverflowError outside any located error."""
    text = base().replace("    return (N // BN, M // BM)", f"    return {grid}", 1)
    loaded = load_candidate(parse_candidate(text), tmp_path / "candidate.py")
    with pytest.raises(CandidateError, match=f"at most {MAX_GRID[0]} along x and {MAX_GRID[1]} along y and z"):
        loaded.grid({"M": 64, "N": 64, "K": 64})


ROUTINES = {
    "class-attribute": ("    x = Layout.shape", "Layout is a class of the language"),
    "class-held": ("    held = Layout\n    x = held.size", "Layout is a class of the language"),
    "class-in-an-expression": ("    x = (Layout if BK else tid).stride", "Layout is a class of the language"),
    "builtin-method-unbound": ("    x = int.bit_length(tid)", "int is a class of the language"),
    "module-function-held": ("    f = math.floor", "math.floor is a function of the language"),
    "function-in-a-tuple": ("    x = (make_layout, 1)", "make_layout is a function of the language"),
}
"""Kernel code that holds a class or function of the language (refused on its first line): the
front-end reads the attribute the language names of anything it holds (``Layout.shape`` is the
class's descriptor)."""


@pytest.mark.parametrize("code, message", ROUTINES.values(), ids=ROUTINES.keys())
def test_kernel_code_calls_the_languages_classes_and_functions_only(code: str, message: str) -> None:
    text = in_kernel(code).replace("from argus.dsl import", "import math\nfrom argus.layout import Layout, "
                                                            "make_layout\nfrom argus.dsl import", 1)
    with pytest.raises(CandidateError, match=message) as caught:
        parse_candidate(text)
    assert caught.value.location is not None and caught.value.location.line == line_of(text, code.splitlines()[0])


def test_kernel_code_still_calls_them_and_annotates_with_them(tmp_path: Path) -> None:
    code = "    n = Layout((4,), (1,)).size() + int(math.floor(2.5))\n    y: f32 = f32(1.0)"
    text = in_kernel(code).replace("from argus.dsl import", "import math\nfrom argus.layout import Layout\n"
                                                            "from argus.dsl import", 1)
    assert load_candidate(parse_candidate(text), tmp_path / "candidate.py").kernel.specialize() is not None


def test_a_candidate_cannot_build_an_element_type(tmp_path: Path) -> None:
    """The language's element types are its named values. A ``DType('f32', 16, ...)`` built in
    kernel code compiled: 2-byte elements to the front-end's checks, f32 in the IR."""
    code = "    t = make_local((2,), DType('f32', 16, 'float', f32))"
    text = in_kernel(code).replace("from argus.dsl import", "from argus.dsl import DType,", 1)
    for check in (parse_candidate, lambda t: load_candidate(unchecked(t), tmp_path / "candidate.py")):
        with pytest.raises(CandidateError, match="DType") as caught:
            check(text)
        assert caught.value.location is not None and caught.value.location.line == line_of(text, "import DType")


FORGED_ATOMS = {
    "copy-atom-named-like-a-target-instruction": (
        "CopyAtom", "A = CopyAtom('ldmatrix_x4', 16, 32, Layout((32, 8), (8, 1)), "
                    "Layout(((4, 8), (2, 4)), ((16, 1), (8, 64))))"),
    "matrix-atom": ("MMAAtom", "A = MMAAtom('mma', (1, 1, 1), 1, Layout((1, 1), (0, 0)), Layout((1, 1), (0, 0)), "
                               "Layout((1, 1), (0, 0)), f32, f32, f32)"),
}
"""Atoms built from layouts: each is a description the checker, the interpreter and the backends
must read alike (here ldmatrix's transposed fragment under the plain instruction's name, which
the nvptx backend refuses; a candidate is not let build one at all)."""


@pytest.mark.parametrize("name, constant", FORGED_ATOMS.values(), ids=FORGED_ATOMS.keys())
def test_a_candidate_cannot_build_an_atom(name: str, constant: str, tmp_path: Path) -> None:
    text = constants(f"from argus.layout import Layout\n{constant}").replace(
        "from argus.dsl import", f"from argus.dsl import {name},", 1)
    for check in (parse_candidate, lambda t: load_candidate(unchecked(t), tmp_path / "candidate.py")):
        with pytest.raises(CandidateError, match=f"{name}") as caught:
            check(text)
        assert caught.value.location is not None and caught.value.location.line == line_of(text, f"import {name}")


@pytest.mark.parametrize("code", ["X = E(0) * (1 << 400) * (1 << 400)",
                                  "X = Layout((2,), (E(0) * (1 << 400) * (1 << 400),))"],
                         ids=["basis", "stride-basis"])
def test_the_numbers_inside_a_layout_are_bounded_like_any_constant(code: str, tmp_path: Path) -> None:
    """A basis scaled past the integers' limit (``E(0) * big * big`` multiplies a basis, not two
    numbers) was held, and so was a layout holding one."""
    text = constants("from argus.layout import E, Layout\n" + code)
    with pytest.raises(CandidateError, match=f"constants hold integers of at most {MAX_INT_BITS} bits") as caught:
        load_candidate(parse_candidate(text), tmp_path / "candidate.py")
    assert caught.value.location is not None and caught.value.location.line == line_of(text, "X = ")
