"""Attacks on the candidate format. A candidate is data: each attack below is refused by the
format check, naming its line, and — given to the loader directly, as if the check had been
passed by — refused again by the loader and its constant evaluator, with nothing written,
called or read on the way."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import argus.dsl
import pytest
from argus.harness import CandidateError, parse_candidate
from argus.harness.candidate import Candidate
from argus.harness.constants import Evaluator
from argus.harness.loader import load_candidate
from argus.harness.limits import (
    MAX_INT_BITS,
    MAX_ITEMS,
    MAX_LAYOUT_SIZE,
    MAX_NESTING,
    MAX_STEPS,
    MAX_STRING_CHARS,
    MAX_TEXT_CHARS,
    MAX_VALUE_NESTING,
)
from harness_testing import gemm_candidate

EXTRA_IMPORTS = ("from argus.dsl import bf16, device, u8\nfrom argus.layout import ComposedLayout, Layout, Swizzle\n"
                 "from argus.backends.nvptx import language as nv\nimport math\n")


def base() -> str:
    """The small tiled GEMM, with a few more language imports to attack with."""
    text = gemm_candidate()
    first = text.index("\n", text.index("from argus.dsl import")) + 1
    return text[:first] + EXTRA_IMPORTS + text[first:]


def constants(code: str) -> str:
    return base().replace("BK = 4\n", f"BK = 4\n{code}\n", 1)


def in_kernel(code: str) -> str:
    return base().replace("    tid = thread_idx.x\n", f"    tid = thread_idx.x\n{code}\n", 1)


def replaced(old: str, new: str) -> str:
    text = base()
    assert old in text
    return text.replace(old, new, 1)


@dataclass(frozen=True)
class Attack:
    text: str
    marker: str
    """A piece of the line both layers must name."""
    message: str
    """What the format check says there."""
    loader: bool = True
    """Whether the loader alone refuses it too (False: only kernel code, which the loader never
    computes and the format check alone guards, or a harmless rename)."""

    def written(self, sentinel: Path) -> str:
        return self.text.replace("{sentinel}", str(sentinel))

    def line(self, text: str) -> int:
        return next(i for i, line in enumerate(text.splitlines(), 1) if self.marker in line)


WRITES_A_FILE = """nv = u8
nv = nv.numpy
nv = nv.type
B = nv(65)
nv = B
nv = nv.repeat
A = nv(5)
nv = A
nv = nv.tofile
R = nv("{sentinel}")"""

ATTACKS: dict[str, Attack] = {
    # the language's names cannot be rebound, so no alias comes to stand for another object
    "alias-rebound-to-write-a-file": Attack(constants(WRITES_A_FILE), "nv = u8", "'nv' is a name of the language"),
    "import-rebound": Attack(constants("f32 = 3"), "f32 = 3", "'f32' is a name of the language"),
    "builtin-rebound": Attack(constants("range = 3"), "range = 3", "'range' is a name of the language"),
    "rebound-in-a-tuple": Attack(constants("BM, nv = 1, 2"), "BM, nv", "'nv' is a name of the language"),
    "function-named-like-an-alias": Attack(constants("@device\ndef nv(x):\n    return x"), "def nv",
                                           "'nv' is a name of the language"),
    "local-rebinds-an-alias": Attack(in_kernel("    nv = u8"), "nv = u8", "'nv' is a name of the language"),
    "loop-rebinds-a-builtin": Attack(in_kernel("    for range in static_range(2):\n        pass"), "for range",
                                     "'range' is a name of the language"),
    "parameter-shadows-an-alias": Attack(replaced("M: int,", "nv: int,"), "nv: int", "'nv' is a name of the language"),
    "lambda-shadows-a-builtin": Attack(replaced("lambda m, k: (k,)", "lambda range, k: (k,)"), "lambda range",
                                       "'range' is a name of the language"),
    "comprehension-shadows-an-import": Attack(constants("X = tuple(f32 for f32 in range(3))"), "X = tuple",
                                              "'f32' is a name of the language"),
    "import-renamed-to-a-builtin": Attack(constants("from math import floor as range"), "floor as range",
                                          "cannot be renamed to 'range'"),
    "import-binds-a-name-twice": Attack(constants("from argus.dsl import f32 as real\n"
                                                  "from argus.dsl import i32 as real"), "i32 as real",
                                        "'real' is already bound"),
    "import-renamed-to-a-language-name": Attack(constants("from argus.dsl import kernel as lane_id"),
                                                "kernel as lane_id", "cannot be renamed to 'lane_id'", loader=False),
    "module-alias-rebinds-an-alias": Attack(constants("import math as nv"), "import math as nv",
                                            "'nv' is already bound"),
    # strings never format and never reach objects
    "format-through-a-dunder-field": Attack(constants('S = "{0.__init__.__globals__}"\nX = S.format(make_shared)'),
                                            'S = "', "strings with '__' are not accepted"),
    "format-method": Attack(constants('S = "{0.x}"\nX = S.format(thread_idx)'), "X = S.format",
                            "attribute 'format' is not part of the language"),
    "format-map": Attack(constants('X = "{a}".format_map({"a": 1})'), "format_map",
                         "attribute 'format_map' is not part of the language"),
    "percent-format": Attack(constants('X = "%s" % (u8,)'), 'X = "%s"', "%-formatting"),
    "percent-format-width": Attack(constants('X = "%*d" % (1000000000, 1)'), 'X = "%*d"', "%-formatting"),
    "f-string-conversion": Attack(constants('X = f"{u8!r:>10}"'), 'X = f"', "JoinedStr is not part of the language"),
    "join": Attack(constants('X = ",".join(("a", "b"))'), "join", "attribute 'join' is not part of the language"),
    "format-in-a-kernel": Attack(in_kernel('    s = "%s" % (tid,)'), '"%s"', "%-formatting", loader=False),
    # no attribute beyond the language's, never a private one
    "dtype-internals": Attack(constants("X = u8.numpy"), "X = u8", "attribute 'numpy' is not part"),
    "class-walk": Attack(constants("X = (1).__class__"), "X = (1)", "private attribute '__class__'"),
    "alias-dict": Attack(constants("X = nv.__dict__"), "X = nv", "private attribute '__dict__'"),
    "module-loader": Attack(constants("X = math.__loader__"), "X = math", "private attribute '__loader__'"),
    "constructor-globals": Attack(constants("X = Layout.__init__"), "X = Layout",
                                  "private attribute '__init__'"),
    "alias-offers-no-such-name": Attack(constants("X = nv.numpy"), "X = nv",
                                        "argus.backends.nvptx.language.numpy is not accepted"),
    "dtype-internals-in-a-kernel": Attack(in_kernel("    x = u8.numpy"), "u8.numpy",
                                          "attribute 'numpy' is not part of the language", loader=False),
    "dunder-string-as-a-key": Attack(constants('X = {"__class__": 1}["__class__"]'), "X = {",
                                     "strings with '__' are not accepted"),
    # Python's reflective builtins
    **{f"builtin-{call.split('(')[0]}": Attack(constants(f"X = {call}"), "X = ", message)
       for call, message in [
           ("getattr(u8, 'numpy')", "'getattr' is a Python builtin outside the language"),
           ("type(u8)", "'type' is a Python builtin outside the language"),
           ("vars(nv)", "'vars' is a Python builtin outside the language"),
           ("dir()", "'dir' is a Python builtin outside the language"),
           ("globals()", "'globals' is a Python builtin outside the language"),
           ("eval('1')", "'eval' is a Python builtin outside the language"),
           ("exec('1')", "'exec' is a Python builtin outside the language"),
           ("open('{sentinel}', 'w')", "'open' is a Python builtin outside the language"),
           ("__import__('os')", "names starting with '_' are not accepted"),
           ("compile('1', 'f', 'eval')", "'compile' is a Python builtin outside the language"),
           ("setattr(nv, 'x', 1)", "'setattr' is a Python builtin outside the language"),
           ("print(1)", "'print' is a Python builtin outside the language"),
           ("breakpoint()", "'breakpoint' is a Python builtin outside the language"),
       ]},
    # a constant holds data and the language's values, and calls only its compile-time functions
    **{f"value-{name.replace('.', '-')}": Attack(constants(f"X = {name}"), "X = ", message)
       for name, message in [
           ("make_shared", "not usable in a constant"),
           ("nv", "nv is a module"),
           ("math", "math is a module"),
           ("Layout", "Layout is a function; a constant holds what it returns"),
           ("kernel", "kernel is a decorator"),
           ("range", "range is a function"),
           ("thread_idx", "not usable in a constant"),
           ("Tensor", "not usable in a constant"),
           ("nv.cp_async", "not usable in a constant"),
           ("math.log2", "math.log2 is a function"),
       ]},
    **{f"call-{call.split('(')[0].replace('.', '-')}": Attack(constants(f"X = {call}"), "X = ", message)
       for call, message in [
           ("make_shared((4,), f32)", "not a function a constant may call"),
           ("syncthreads()", "not a function a constant may call"),
           ("nv.cp_async(1)", "not a function a constant may call"),
           ("f32(1)", "not a function a constant may call"),
           ("nv.LDMATRIX_X4(1)", "not a function a constant may call"),
           ("kernel(block=(1,))", "kernel is a decorator"),
           ("device(None)", "device is a decorator"),
           ("min(*(1, 2))", "Starred is not part of the language"),
           ("max(**{'a': 1})", "** unpacking is not accepted"),
       ]},
    "constant-names-a-later-import": Attack(constants("X = barrier\nfrom argus.dsl import syncthreads as barrier"),
                                            "X = barrier", "barrier is not usable in a constant"),
    "walrus": Attack(constants("X = (Y := 3)"), "X = (Y", "NamedExpr is not part of the language"),
    "starred-tuple": Attack(constants("X = (*(1, 2),)"), "X = (*", "Starred is not part of the language"),
    # decorators and their options
    "decorator-option-calls-a-builtin": Attack(replaced("@kernel(block=(THREADS,))",
                                                        "@kernel(block=(open('{sentinel}', 'w'),))"), "@kernel",
                                               "'open' is a Python builtin outside the language"),
    "decorator-option-outside-the-list": Attack(replaced("@kernel(block=(THREADS,))",
                                                         "@kernel(block=(THREADS,), num_warps=4)"), "@kernel",
                                                "@kernel has no option 'num_warps'"),
    "decorator-options-unpacked": Attack(replaced("@kernel(block=(THREADS,))",
                                                  "@kernel(block=(THREADS,), **{'verify': False})"), "@kernel",
                                         "@kernel takes named options"),
    "decorator-turns-checks-off": Attack(replaced("@kernel(block=(THREADS,))",
                                                  "@kernel(block=(THREADS,), verify=False)"), "@kernel",
                                         "cannot turn its tag checks off"),
    "decorator-option-calls-a-kernel-operation": Attack(
        replaced("@kernel(block=(THREADS,))", "@kernel(block=(THREADS,), max_registers=make_shared((1,), f32))"),
        "@kernel", "not a function a constant may call"),
    "two-decorators": Attack(replaced("@kernel(block=(THREADS,))", "@device\n@kernel(block=(THREADS,))"), "def gemm",
                             "a function takes one decorator"),
    "foreign-decorator": Attack(constants("@staticmethod\ndef helper(x):\n    return x"), "@staticmethod",
                                "accepted decorators: @kernel(block=(...), ...) and @device"),
    "function-defined-twice": Attack(constants("@device\ndef helper(x):\n    return x\n@device\ndef helper(y):\n"
                                               "    return y"), "def helper(y)", "'helper' is defined twice"),
    "plain-helper": Attack(constants("def helper(x):\n    return x"), "def helper",
                           "function 'helper' needs @kernel(...) or @device"),
    # nothing a def evaluates when it is created
    "default-argument": Attack(constants("@device\ndef helper(x=open('{sentinel}', 'w')):\n    return x"),
                               "def helper", "parameters are plain positional names without defaults"),
    "keyword-only-default": Attack(replaced("K: int):", "K: int, *, z=open('{sentinel}', 'w')):"), "def gemm",
                                   "parameters are plain positional names without defaults"),
    "return-annotation": Attack(replaced("K: int):", "K: int) -> open('{sentinel}', 'w'):"), "def gemm",
                                "no return annotation"),
    "lambda-default": Attack(replaced("lambda m, k: (k,)", "lambda m, k=open('{sentinel}', 'w'): (k,)"),
                             "lambda m, k=", "a tag function takes plain coordinates", loader=False),
    # statements a candidate does not hold
    "class": Attack(constants("class A:\n    pass"), "class A", "ClassDef statements are not accepted"),
    "del": Attack(constants("del BK"), "del BK", "Delete statements are not accepted"),
    "top-level-call": Attack(constants("open('{sentinel}', 'w')"), "open(", "Expr statements are not accepted"),
    "top-level-loop": Attack(constants("for i in range(3):\n    pass"), "for i", "For statements are not accepted"),
    "global": Attack(in_kernel("    global BK"), "global BK", "Global statements are not part of the language",
                     loader=False),
    "nested-function": Attack(in_kernel("    def inner():\n        pass"), "def inner",
                              "FunctionDef statements are not part of the language", loader=False),
    "keywords-unpacked-in-a-kernel": Attack(in_kernel("    x = make_local(**{'shape': (2,)})"), "make_local(**",
                                            "** unpacking is not accepted", loader=False),
    "decorator-called-in-kernel-code": Attack(in_kernel("    k = kernel(block=(1,))"), "k = kernel",
                                              "kernel is a decorator", loader=False),
    "kernel-launched-from-its-code": Attack(in_kernel("    x = gemm[(1,)]"), "gemm[", "this candidate's kernel",
                                            loader=False),
    "grid-called-from-kernel-code": Attack(in_kernel("    x = grid(1, 1, 1)"), "grid(1", "this candidate's grid",
                                           loader=False),
    # imports
    "import-star": Attack(constants("from argus.dsl import *"), "import *", "import * is not accepted"),
    "import-os": Attack(constants("import os"), "import os", "import os is not accepted"),
    "import-host-helper": Attack(constants("from argus.dsl import to_storage"), "to_storage",
                                 "'to_storage' is not part of the language"),
    "future-import": Attack(constants("from __future__ import barry_as_FLUFL"), "barry_as_FLUFL",
                            "the only __future__ import accepted"),
}


@pytest.mark.parametrize("attack", ATTACKS.values(), ids=ATTACKS.keys())
def test_the_format_check_refuses_it_naming_the_line(attack: Attack, tmp_path: Path) -> None:
    sentinel = tmp_path / "written"
    text = attack.written(sentinel)
    with pytest.raises(CandidateError) as caught:
        parse_candidate(text)
    assert attack.message in str(caught.value)
    assert caught.value.location is not None and caught.value.location.line == attack.line(text)
    assert not sentinel.exists()


@pytest.mark.parametrize("attack", [a for a in ATTACKS.values() if a.loader],
                         ids=[k for k, a in ATTACKS.items() if a.loader])
def test_the_loader_refuses_it_without_the_format_check(attack: Attack, tmp_path: Path) -> None:
    """Defense in depth: the loader, handed the text unchecked, refuses at the same line."""
    sentinel = tmp_path / "written"
    text = attack.written(sentinel)
    with pytest.raises(CandidateError) as caught:
        load_candidate(Candidate(text, "gemm", (), None), tmp_path / "candidate.py")
    assert caught.value.location is not None and caught.value.location.line == attack.line(text), str(caught.value)
    assert not sentinel.exists()


def test_annotations_are_never_evaluated(tmp_path: Path) -> None:
    """A parameter annotation is text to the loader: the check refuses a call in one, and a
    loader handed it anyway creates the function without running it."""
    sentinel = tmp_path / "written"
    text = replaced("K: int):", f"K: open({str(sentinel)!r}, 'w')):")
    with pytest.raises(CandidateError, match="'open' is a Python builtin outside the language"):
        parse_candidate(text)
    try:
        load_candidate(Candidate(text, "gemm", (), None), tmp_path / "candidate.py").kernel.specialize()
    except argus.dsl.ArgusError:
        pass
    assert not sentinel.exists()


class Spy:
    """An object outside the language that records every attribute read of it."""

    def __init__(self) -> None:
        object.__setattr__(self, "reads", [])

    def __getattribute__(self, name: str) -> object:
        object.__getattribute__(self, "reads").append(name)
        return object.__getattribute__(self, name)

    def __call__(self, *args: object) -> object:
        return self


@pytest.mark.parametrize("expression", ["spy.numpy", "spy.size()", "spy(1)", "spy == 1", "(spy,)", "spy if 1 else 0"])
def test_the_evaluator_reads_nothing_of_an_object_outside_the_language(expression: str) -> None:
    spy = Spy()
    with pytest.raises(CandidateError, match="candidate.py:1:"):
        Evaluator({"spy": spy}, "candidate.py").value(ast.parse(expression, mode="eval").body)
    assert object.__getattribute__(spy, "reads") == []


def test_a_language_name_bound_to_a_foreign_object_is_never_read(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    """Were an import to resolve to an object outside the language, neither the check nor the
    loader reads any attribute of it: it is not a value a constant may hold."""
    spy = Spy()
    monkeypatch.setattr(argus.dsl, "u8", spy)
    text = constants("X = u8.numpy.type(0)")
    with pytest.raises(CandidateError, match="u8"):
        parse_candidate(text)
    with pytest.raises(CandidateError, match="u8 is a function of the language, not a value"):
        load_candidate(Candidate(text, "gemm", (), None), tmp_path / "candidate.py")
    assert object.__getattribute__(spy, "reads") == []


LIMITS = {
    "exponent-tower": ("X = 2 ** 2 ** 2 ** 2 ** 2 ** 2", f"at most {MAX_INT_BITS} bits"),
    "huge-power": ("X = 10 ** 10 ** 8", f"at most {MAX_INT_BITS} bits"),
    "big-shift": ("X = 1 << 10 ** 9", f"at most {MAX_INT_BITS} bits"),
    "big-literal-shift": ("X = 1 << 1000000000", f"at most {MAX_INT_BITS} bits"),
    "long-string": ("X = 'a' * 10 ** 9", f"at most {MAX_STRING_CHARS}"),
    "long-tuple": ("X = (0,) * 10 ** 9", f"at most {MAX_ITEMS}"),
    "huge-range": ("X = tuple(x for x in range(10 ** 12))", f"at most {MAX_ITEMS}"),
    "max-of-a-huge-range": ("X = max(range(10 ** 12))", f"at most {MAX_ITEMS}"),
    "nested-loop-filtering-everything": (
        "X = tuple(0 for a in range(1000) for b in range(1000) for c in range(1000) if 0)", f"more than {MAX_STEPS}"),
    "tuples-of-tuples": ("X = tuple(tuple(range(5000)) for i in range(5000))", f"more than {MAX_STEPS}"),
    "int-of-a-long-string": ("X = int('9' * 4000 + '9' * 1000)", f"at most {MAX_STRING_CHARS}"),
    "int-of-many-digits": ("X = int('9' * 4000)", f"at most {MAX_INT_BITS} bits"),
    "round-to-huge-digits": ("X = round(5, -10 ** 8)", "ndigits from -64 to 64"),
    "huge-hex-literal": ("X = 0x" + "f" * 20_000, f"at most {MAX_INT_BITS}"),
    "huge-layout": ("X = Layout((1 << 30,), (1,))", f"at most {MAX_LAYOUT_SIZE}"),
    "huge-swizzle": ("X = Swizzle(20, 0, 20)", f"at most {MAX_LAYOUT_SIZE}"),
    "huge-swizzled-layout": ("X = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((1 << 30,), (1,))).cosize()",
                             f"at most {MAX_LAYOUT_SIZE}"),
    "deep-tuples-through-constants": ("\n".join(["A0 = (0,)"] + [f"A{i} = (A{i - 1},)" for i in range(1, 40)]),
                                      f"more than {MAX_VALUE_NESTING} deep"),
    "lambda-chain": ("X = " + "lambda: " * 2000 + "1", f"more than {MAX_NESTING} levels"),
    "deep-lists": ("X = " + "[" * 150 + "]" * 150, f"more than {MAX_NESTING} levels"),
    "deep-string-annotation": ("Y: '" + "-" * 150 + "1' = 1", f"more than {MAX_NESTING} levels"),
}
"""Each bomb and the limit its refusal states; the line named is its own (for the chain of
constants, the first one nested too deep)."""


@pytest.mark.parametrize("code, limit", LIMITS.values(), ids=LIMITS.keys())
def test_bombs_are_refused_naming_the_line_and_the_limit(code: str, limit: str, tmp_path: Path) -> None:
    """Each is refused by the check when the text shows it, else by the evaluator before it is
    computed: a CandidateError at its line that states the limit."""
    text = constants(code)
    start = f"A{MAX_VALUE_NESTING + 1} = " if code.startswith("A0") else code.splitlines()[0]
    line = next(i for i, row in enumerate(text.splitlines(), 1) if row.startswith(start))
    with pytest.raises(CandidateError) as caught:
        load_candidate(parse_candidate(text), tmp_path / "candidate.py")
    assert limit in str(caught.value)
    assert caught.value.location is not None and caught.value.location.line == line


@pytest.mark.parametrize("text, message", [
    ("X = " + "(" * 10_000 + "1" + ")" * 10_000, "too many nested parentheses"),
    ("X = " + "-" * 100_000 + "1", "the text cannot be parsed"),
    ("X = a" + ".b" * 10_000, "the text cannot be parsed"),
    ("X = " + "9" * 5000, "Exceeds the limit"),
    ("X = 1\n" * 40_000, f"at most {MAX_TEXT_CHARS}"),
    ("X = '\0'", "null bytes"),
], ids=["parentheses", "unary-chain", "attribute-chain", "digits", "length", "null-byte"])
def test_text_past_pythons_own_limits_is_refused_at_line_one(text: str, message: str) -> None:
    with pytest.raises(CandidateError) as caught:
        parse_candidate(text)
    assert message in str(caught.value)
    assert caught.value.location is not None and caught.value.location.line == 1


def test_a_long_comparison_is_computed() -> None:
    text = constants("X = " + " < ".join(str(i) for i in range(500)))
    assert parse_candidate(text).kernel == "gemm"


def test_a_comprehension_neither_leaks_nor_keeps_its_name(tmp_path: Path) -> None:
    text = constants("X = tuple(BK for BK in range(3))\nY = BK")
    loaded = load_candidate(parse_candidate(text), tmp_path / "candidate.py")
    assert loaded.namespace["X"] == (0, 1, 2) and loaded.namespace["Y"] == 4
