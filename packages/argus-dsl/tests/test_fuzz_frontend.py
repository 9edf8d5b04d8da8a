"""The front end never crashes on a malformed kernel: every kernel here either compiles or is
refused with the language's own error naming file:line:col — never an IndexError, KeyError,
TypeError, RecursionError, MemoryError or AssertionError from inside, and never a hang.

The kernels are a small host kernel with one edit each, of the kinds kernels go wrong in
(wrong arity, wrong types, negative, huge and zero sizes and strides, swizzles out of range,
bad dtypes, syntax outside the language, deep nesting, huge constants, device functions
calling each other, tilers that do not divide), and the small examples mutated at random
with fixed seeds. Each is only compiled (the front end and its passes), never launched."""

from __future__ import annotations

import ast
import copy
import importlib.util
import random
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from argus.dsl import ArgusError, ArgusSyntaxError, ArgusTypeError, Kernel, KernelFault, Tensor, f32, kernel
from argus.dsl import device, make_shared, thread_idx
from argus.dsl.frontend import core
from argus.dsl.frontend.limits import MAX_BLOCK_THREADS, MAX_CONSTANT_BITS, MAX_NESTING

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ARGUS = str(Path(__file__).resolve().parents[1] / "src" / "argus")

HOST = '''
import numpy as np
from argus.dsl import *
from argus.layout import ComposedLayout, Layout, Swizzle
{module}

@device
def twice(v):
    return v + v


@kernel(block=(128,))
def host(a: Tensor[f32, 128], b: Tensor[bf16, 64, 16], out: Tensor[f32, 128], n: int):
    t = thread_idx.x
    s = make_shared((128,), f32)
    r = make_local((8, 4), f32)
{body}
    s[t] = a[t]
    syncthreads()
    out[t] = s[127 - t]
'''

#: Edits of the host kernel's body (or, as a pair, code before it and the body's edit).
EDITS: list[str | tuple[str, str]] = [
    # syntax outside the language
    "while n > 0:\n    n = n - 1", "try:\n    pass\nexcept Exception:\n    pass", "with open('x') as f:\n    pass",
    "del t", "global t", "import os", "raise ValueError('x')", "class C:\n    pass", "def f():\n    pass",
    "x = [i for i in range(3)]", "x = f'{t}'", "x = (y := 3)", "x = {1: 2}", "x = {1, 2}", "x = lambda: 0",
    "x = yield 3", "x = *a, b", "print(*[1])", "x = b'bytes'", "x = 1j", "x = ...", "x = None", "a, *c = (1, 2)",
    "x = 3 < t < 5", "x @= 3", "x = not_defined", "return", "return t", "async def g():\n    pass",
    "x = await t", "assert t == 1", "assert tag(s[0]) == tag(s[...])", "t: str = 3", "t: f32", "x: f32 = t",
    "t.x = 3", "(t, n)[0] = 1", "for i, j in range(3):\n    pass", "for i in [1, 2]:\n    pass",
    "for i in range(3):\n    pass\nelse:\n    pass", "for i in range(1, 2, 3, 4):\n    pass", "for i in range(n, step=2):\n    pass",
    "if s:\n    pass", "if 'a':\n    pass", "x = s if t > 1 else r", "x = t if 1.5 else n",
    # wrong arity, wrong types
    "syncthreads(1)", "make_shared((8,))", "make_shared((8,), f32, 3)", "x = make_shared((8,), 'f32')",
    "x = make_shared((8,), None)", "x = make_shared(3.5, f32)", "x = make_shared('8', f32)", "x = make_local(s, f32)",
    "x = make_shared((8,), boolean)", "x = make_local((8,), u128)\nx[0] = 1", "x = thread_idx", "x = thread_idx.w",
    "x = block_dim.x * block_dim.w", "x = -thread_idx", "x = ~f32(1.0)", "x = ~1.5", "x = -'a'", "x = not t",
    "x = t and 1.5", "x = t ** 2", "x = t @ 2", "x = t * 1.5", "x = f32(t) // 2", "x = t / 2", "x = f32(t) % 2.0",
    "x = a + 1", "x = s + 1", "x = a[t] + t", "x = s[t, 0]", "x = a[t, 0]", "x = b[t]", "x = a[1.5]", "x = a[f32(t)]",
    "x = s[:]", "x = r[1:2, :]", "x = r[:, 9]", "x = r[t, :]", "s[t] = s", "a[t] = b", "s[0] = 'x'", "a = 3\na[0] = 1.0",
    "x = bitcast(t, f32, 3)", "x = bitcast(t, u128)", "x = bitcast(t, boolean)", "x = concat(t)", "x = concat(t, 1)",
    "x = byte_perm(t, t, (9,))", "x = byte_perm(t, t, ())", "x = byte_perm(t, t, 3)", "x = lo(bf16(1.0))",
    "x = hi(t, 2)", "x = lo(t > 1)", "x = shfl_xor(t, 2 ** 40)", "x = shfl_xor(1, 1)", "x = shfl_xor(t > 1, 1)",
    "x = warp_sum(True)", "x = warp_sum(t > 1)", "x = exp2(1.0)", "x = exp2(t)", "x = sqrt(t, t)",
    "x = select(t, 1, 2)", "x = select(t > 1, 1.0, t)", "x = select(t > 1)", "x = fma(1.0, 2.0, 3.0)", "x = fma(t, t, t)",
    "x = min(t, 1.0)", "x = max(t)", "x = min(1, 2, 3)", "x = min(t, 1, 2)", "x = rcp(2.0)", "x = rcp(t)",
    "x = min('a', 1)", "x = max((1,), 2)", "x = np.ones(3) and 1", "x = select(np.ones(3), 1, 2)", "x = i32(float('inf'))",
    "x = i32(float('nan'))", "x = 1 if np.ones(2) else 2", "x = a[np.ones(2)]", "x = (1, 2) < (1, 'a')",
    "matmul_wait(-1)", "matmul_wait(t)", "matmul_wait(1.5)", "assume(1)", "assume(t)", "assume(t > 1, 2)",
    "reset_tags(t)", "reset_tags(r)", "x = atomic_add(t, 1)", "x = atomic_add(r[0, 0], 1.0)",
    "x = atomic_add(s[0], t)", "x = atomic_max(s[0])", "x = atomic_exchange(a[t], s)",
    "x = twice(t, t)", "x = twice()", "x = twice(v=t)", "x = twice(s)", "x = twice(a)",
    "x = r.view((3,), f32)", "x = r.view((-2,), u128)", "x = r.view((0,), f32)", "x = r.view((8,), 'f32')",
    "x = r.view()", "x = r.shape", "x = a.shape[5]", "x = a.view((64, 2), f32)", "x = a.view((2, 'n'), f32)",
    "x = a.view((t,), f32)", "x = a.view((3,), f32)",
    "copy(s, s, 3)", "copy(s, s)", "copy(s, r, copy_vector(16))", "copy(s, make_local((128,), f32), copy_vector(3))",
    "copy(s, make_local((128,), f32), copy_vector(-16))", "copy(s, make_local((128,), i32), copy_vector(16))",
    "matmul(r, r, r, 3)", "matmul(r, r, r)", "matmul(r, r, r, universal_fma(f32))",
    "matmul(s, s, r, warpgroup_mma_64xNx16(16, bf16, bf16, f32))",
    "matmul(make_shared((64, 16), bf16), make_shared((16, 16), bf16), r, warpgroup_mma_64xNx16(16, bf16, bf16, f32))",
    "x = warpgroup_mma_64xNx16(12, bf16, bf16, f32)", "x = warpgroup_mma_64xNx16(16, f32, bf16, f32)",
    "x = Layout((4, 4), (1, 4))(t, 1, 2)", "x = Layout((4, 4), (1, 4))((t, 1, 2))", "x = Swizzle(3, 3, 3)(t, 1)",
    "x = Swizzle(3, 3, 3)()", "x = Layout((4, -4), (1, 4))(t)", "x = Layout((4,), (1,))(f32(t))",
    "tag(t, lambda i: (i,))", "tag(s, lambda i, j: (i,))", "tag(s, lambda i: ())", "tag(s, lambda i: (1.5,))",
    "tag(s, lambda i: i / 2)", "tag(s, lambda *i: i)", "tag(s)", "tag(s, 3)", "tag(s, lambda i: s)",
    "tag(a, lambda i: (i,))\nassert tag(s[0]) == tag(a[...])", "tag(a, lambda i: (i,))\nassert tag(t[...]) == tag(a[...])",
    "tag(a, lambda i: (i,))\nassert tag(s[...]) == tag(a[...]), 3",
    # negative, huge and zero sizes and strides; swizzles out of range; shapes that do not divide
    "x = make_shared((0,), f32)", "x = make_shared((-4, 8), f32)", "x = make_shared((2 ** 40,), f32)",
    "x = make_local((0,), f32)", "x = make_local((10 ** 9, 10 ** 9), f32)", "x = make_shared((), f32)",
    "x = make_shared(Layout((8, 8), (1, -8)), f32)", "x = make_shared(Layout((8, 8), (0, 0)), f32)",
    "x = make_shared(Layout((8,), (2 ** 40,)), f32)", "x = make_shared(Layout((8, 8), (1,)), f32)",
    "x = make_shared(ComposedLayout(Swizzle(3, 3, 3), -8, Layout((64,), (1,))), f32)",
    "x = make_shared(ComposedLayout(Swizzle(3, 3, 3), 2 ** 40, Layout((64,), (1,))), f32)",
    "x = make_shared(ComposedLayout(Swizzle(3, 3, 3), 0, Layout((64,), (-1,))), f32)",
    "x = make_shared(ComposedLayout(Swizzle(9, 9, 40), 0, Layout((64,), (1,))), f32)",
    "x = make_shared(ComposedLayout(Swizzle(-1, 3, 3), 0, Layout((64,), (1,))), f32)",
    "x = make_shared(ComposedLayout(Swizzle(3, 3, 70), 0, Layout((64,), (1,))), f32)",
    "x = make_shared(ComposedLayout(Swizzle(3, 3, -3), 0, Layout((64,), (1,))), f32)",
    "x = make_shared(ComposedLayout(Swizzle(3, 3, 3), 0, Layout((7,), (1,))), f32)",
    "x = make_local(ComposedLayout(Swizzle(3, 3, 3), 0, Layout((64,), (1,))), f32)",
    "x = make_shared(Layout(((2, 2), 2), ((1, 2), 4)), bf16)", "x = s.view(Layout((32,), (-1,)), f32)",
    "x = s.view(ComposedLayout(Swizzle(3, 3, 3), -4, Layout((128,), (1,))), f32)",
    "x = s.view(Layout((2 ** 20,), (1,)), u8)",
    "x = r[8, 0]", "x = r[-1, 0]", "r[2 ** 40, 0] = 1.0", "x = r[0, 0, 0]", "x = a[2 ** 40]", "x = a[-1]",
    "x = b[64, 0]", "x = r[9, :]", "x = partition(r, Layout((4, 2), (2, 1)), t)",
    "x = partition(r, Layout((64, 2), (2, 1)), t)", "x = partition(r, Layout((4,), (1,)), t)", "x = partition(r, 3, t)",
    "x = partition(s, Layout((128, 1), (1, 1)), 2 ** 40)", "x = local_tile(r, (3, 3), 0)",
    "x = local_tile(r, (0, 4), 0)", "x = local_tile(r, (16, 16), 0)", "x = local_tile(r, (-2, 4), 0)",
    "x = local_tile(r, (4,), 0)", "x = local_tile(r, 'x', 0)", "x = local_tile(r, (4, 4), 1.5)",
    "x = local_tile(s, (32,), t)",
    # huge constants and loops
    "x = t + 2 ** 40", "x = t << 40", "x = t >> -1", "x = t % 0", "x = t // 0", "x = i32(t) << 32",
    "x = 1 << 100000", "x = 10 ** 10 ** 10", "x = 2 ** 4096", "x = 1.0 / 0", "x = 1 // 0", "x = 'a' * (2 ** 40)",
    "x = (1,) * (2 ** 40)", "x = 1e308 * 10", "x = f32(1e308 * 10)", "x = f32(float('nan'))", "x = i32(1e30)",
    "x = bf16(10 ** 30)", "x = u8(-1)", "x = i32(2 ** 40)", "out[t] = 1e39", "out[t] = 10 ** 40",
    "for i in static_range(10 ** 9):\n    pass", "for i in static_range(0, 10, 0):\n    pass",
    "for i in static_range(t):\n    pass", "for i in static_range():\n    pass", "for i in static_range(1.5):\n    pass",
    "for i in static_range(64):\n    for j in static_range(64):\n        for k in static_range(64):\n            pass",
    "for i in range(0, 10, -1):\n    pass", "for i in range(0, 10, 0):\n    pass", "for i in range(2 ** 40):\n    pass",
    "for i in range(1.5):\n    pass", "for i in range(s):\n    pass",
    # names assigned under runtime control flow
    "if t > 1:\n    x = make_local((4,), f32)", "x = 1\nif t > 1:\n    x = make_local((4,), f32)",
    "if t > 1:\n    y = 1\nz = y", "for i in static_range(4):\n    y = i\nz = y + t", "if t > 1:\n    n = 'a'",
    "for i in range(4):\n    x = make_shared((4,), f32)", "x = (1, 2)\nc, d, e = x", "c, d = t",
    # deep nesting
    "x = t" + " + 1" * 300, "x = t" + " * 1" * 3000, "x = " + "(" * 150 + "t" + ")" * 150,
    "x = twice(" * 40 + "t" + ")" * 40,
    "if t > 1:\n" + "".join("    " * (i + 1) + f"if t > {i}:\n" for i in range(90)) + "    " * 91 + "pass",
    # device functions that call each other, or return badly
    ("@device\ndef ping(v):\n    return pong(v)\n\n\n@device\ndef pong(v):\n    return ping(v)\n", "x = ping(t)"),
    ("@device\ndef again(v):\n    return again(v)\n", "x = again(t)"),
    ("@device\ndef early(v):\n    if v > 1:\n        return v\n    return v\n", "x = early(t)"),
    ("@device\ndef starred(*v):\n    return v\n", "x = starred(t)"),
    ("@device\ndef keyed(v, w=1):\n    return v\n", "x = keyed(t)"),
    ("def plain(v):\n    return v + 1\n", "x = plain(t)"),
    ("def plain(v):\n    return v + 1\n", "x = plain(3)"),
    ("def boom(v):\n    raise KeyError(v)\n", "x = boom(3)"),
    ("def deep(v):\n    return deep(v)\n", "x = deep(3)"),
    ("def chain(v):\n    return v\n" + "".join(f"\n\n@device\ndef d{i}(v):\n    return d{i + 1}(v)\n" for i in range(40))
     + "\n\n@device\ndef d40(v):\n    return v\n", "x = d0(t)"),
    ("W = 3\n", "W = 4"), ("LAYOUT = Layout((8,), (1,))\n", "x = make_shared(LAYOUT * 2, f32)"),
    ("SW = Swizzle(3, 3, 3)\n", "x = make_shared(SW, f32)"),
]


def _edited(edit: str | tuple[str, str]) -> str:
    module, body = edit if isinstance(edit, tuple) else ("", edit)
    return HOST.format(module=module, body="\n".join("    " + line for line in body.splitlines()))


def _load(path: Path) -> Any | None:
    """The module at `path`, or None when its own code fails at import (with an error of the
    language's or of Python on the module's own lines, never from inside Argus)."""
    spec = importlib.util.spec_from_file_location(f"fuzzed_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            spec.loader.exec_module(module)
    except ArgusError:
        return None
    except Exception as err:  # the module's own code: an error on its lines is not the front end's
        frames = traceback.extract_tb(err.__traceback__)
        assert not frames[-1].filename.startswith(ARGUS), _crash(err, path)
        return None
    return module


def _compile_all(path: Path) -> list[str]:
    """Compile every kernel of the file at `path`: "ok", or the error the front end gave (which
    must name a line of that file)."""
    module = _load(path)
    if module is None:
        return ["refused at import"]
    outcomes = []
    for name, k in vars(module).items():
        if not isinstance(k, Kernel):
            continue
        make = getattr(module, f"example_{name}", None)
        constants = make(np.random.default_rng(0)).constants if make is not None else {}
        try:
            k.specialize(**constants)
            outcomes.append("ok")
        except ArgusError as err:
            assert err.location is not None and err.location.file == str(path) and err.location.line > 0, \
                f"no location in the file: {type(err).__name__}: {err}\n{path.read_text()}"
            outcomes.append(f"{type(err).__name__}: {err.message}")
        except Exception as err:  # noqa: BLE001 - the crash this test exists to find
            pytest.fail(_crash(err, path))
    return outcomes


def _crash(err: BaseException, path: Path) -> str:
    trace = "".join(traceback.format_exception(type(err), err, err.__traceback__, limit=-6))
    return f"{type(err).__name__} from inside while compiling {path}:\n{trace}\n{path.read_text()}"


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")
    monkeypatch.setenv("ARGUS_VERIFY", "0")


@pytest.mark.parametrize("edit", EDITS, ids=range(len(EDITS)))
def test_an_edited_kernel_compiles_or_is_refused_with_its_line(tmp_path: Path, edit: str | tuple[str, str]):
    path = tmp_path / "edited.py"
    path.write_text(_edited(edit))
    assert _compile_all(path)


# ---- seeded random mutations of the small examples ----------------------------------------------

SMALL = ("vector_add", "transpose", "softmax")
INTS = (-(2 ** 63), -(2 ** 31) - 1, -5, -1, 0, 1, 2, 3, 7, 33, 1000, 2 ** 31, 2 ** 40, 10 ** 30)
FLOATS = (float("nan"), float("inf"), -float("inf"), 1e308, -0.0, 5e-324)
NAMES = ("bf16", "f32", "u128", "i32", "u8", "f8e4m3", "u64", "boolean", "thread_idx", "block_idx", "syncthreads",
         "make_shared", "kernel", "tag", "print", "len", "range", "static_range", "min", "Layout", "np", "matmul",
         "copy", "None", "True", "out", "x")
OPERATORS = (ast.Pow, ast.Div, ast.MatMult, ast.LShift, ast.RShift, ast.Mod, ast.BitXor, ast.Sub, ast.FloorDiv)
STATEMENTS = [e for e in EDITS if isinstance(e, str) and "\n" not in e and "s[" not in e and "r[" not in e
              and len(e) < 200]


def _mutate(tree: ast.Module, rng: random.Random) -> None:
    """One edit of a kernel's body, chosen by `rng`."""
    fdef = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.decorator_list)
    nodes = [n for stmt in fdef.body for n in ast.walk(stmt)]
    kind = rng.randrange(8)
    pick = lambda cls, test=lambda n: True: [n for n in nodes if isinstance(n, cls) and test(n)]  # noqa: E731
    if kind == 0 and (found := pick(ast.Constant, lambda n: type(n.value) is int)):
        rng.choice(found).value = rng.choice(INTS)
    elif kind == 1 and (found := pick(ast.Constant, lambda n: type(n.value) is float)):
        rng.choice(found).value = rng.choice(FLOATS)
    elif kind == 2 and (found := pick(ast.Name, lambda n: isinstance(n.ctx, ast.Load))):
        rng.choice(found).id = rng.choice(NAMES)
    elif kind == 3 and (found := pick(ast.Call)):
        call = rng.choice(found)
        if call.args and rng.random() < 0.5:
            call.args.pop(rng.randrange(len(call.args)))
        else:
            call.args.append(copy.deepcopy(rng.choice(call.args)) if call.args else ast.Constant(rng.choice(INTS)))
    elif kind == 4 and (found := pick(ast.BinOp)):
        rng.choice(found).op = rng.choice(OPERATORS)()
    elif kind == 5 and (found := pick(ast.Subscript)):
        sub = rng.choice(found)
        items = list(sub.slice.elts) if isinstance(sub.slice, ast.Tuple) else [sub.slice]
        if len(items) > 1 and rng.random() < 0.5:
            items.pop()
        else:
            items.append(ast.Constant(rng.choice(INTS)))
        sub.slice = ast.Tuple(items, ast.Load()) if len(items) > 1 else items[0]
    elif kind == 6 and (found := pick(ast.BinOp)):
        chain = rng.choice(found)
        for _ in range(rng.choice((20, MAX_NESTING + 20, 2 * MAX_NESTING))):
            chain.left = ast.BinOp(chain.left, ast.Add(), ast.Constant(0))
    else:
        bodies = [fdef, *(n for n in nodes if isinstance(n, (ast.If, ast.For)))]
        body = rng.choice(bodies).body
        body.insert(rng.randrange(len(body) + 1), ast.parse(rng.choice(STATEMENTS)).body[0])


@pytest.mark.parametrize("seed", range(150))
def test_a_mutated_example_compiles_or_is_refused_with_its_line(tmp_path: Path, seed: int):
    rng = random.Random(seed)
    example = SMALL[seed % len(SMALL)]
    tree = ast.parse((EXAMPLES / f"{example}.py").read_text())
    for _ in range(1 + rng.randrange(2)):
        _mutate(tree, rng)
    path = tmp_path / f"{example}_{seed}.py"
    path.write_text(_unparsed(tree))
    _compile_all(path)


def _unparsed(tree: ast.Module) -> str:
    """The source of a mutated tree: two chains of `2 * MAX_NESTING` sums on one expression are
    deeper than `ast.unparse` recurses by default (the front end's refusal is what is tested)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        return ast.unparse(ast.fix_missing_locations(tree))
    finally:
        sys.setrecursionlimit(limit)


# ---- the crashes these found, each with what it says now ----------------------------------------


def _refusal(tmp_path: Path, edit: str | tuple[str, str]) -> str:
    path = tmp_path / "edited.py"
    path.write_text(_edited(edit))
    (outcome,) = _compile_all(path)
    assert outcome != "ok"
    return outcome


def test_a_swizzled_tile_starting_below_offset_zero_is_refused(tmp_path: Path):
    message = _refusal(tmp_path, "x = make_shared(ComposedLayout(Swizzle(3, 3, 3), -8, Layout((64,), (1,))), f32)")
    assert message.startswith("ArgusTypeError: the layout Sw<3,3,3> o -8 o (64):(1) cannot place a tile's elements")


def test_a_negative_stride_that_places_an_element_below_zero_is_refused(tmp_path: Path):
    message = _refusal(tmp_path, "x = s.view(Layout((32,), (-1,)), f32)")
    assert "places element 31 at offset -31; a tile's elements lie at offsets ≥ 0" in message


def test_nesting_past_the_limit_is_refused(tmp_path: Path):
    message = _refusal(tmp_path, "x = t" + " * 1" * (MAX_NESTING + 50))
    assert f"more than {MAX_NESTING} levels deep" in message


def test_a_chain_of_device_functions_past_the_limit_is_refused(tmp_path: Path):
    chain = "".join(f"\n\n@device\ndef d{i}(v):\n    return d{i + 1}(v)\n" for i in range(MAX_NESTING))
    last = f"\n\n@device\ndef d{MAX_NESTING}(v):\n    return v\n"
    message = _refusal(tmp_path, (chain + last, "x = d0(t)"))
    assert f"more than {MAX_NESTING} levels deep" in message


def test_compile_time_arithmetic_past_the_limit_is_refused_before_it_runs(tmp_path: Path):
    for edit in ("x = 10 ** 10 ** 10", "x = 1 << 100000", "x = 'a' * (2 ** 40)"):
        assert "the most a constant may have" in _refusal(tmp_path, edit)
    assert f"constants have at most {MAX_CONSTANT_BITS}" in _refusal(tmp_path, "x = 3 ** 200")


def test_compile_time_unary_operators_on_the_wrong_type_are_refused(tmp_path: Path):
    assert "compile-time ~ failed: bad operand type" in _refusal(tmp_path, "x = ~1.5")


def test_a_tiler_that_does_not_divide_the_tile_is_refused(tmp_path: Path):
    assert "local_tile: the tiler (3, 3) does not divide this tile of shape (8, 4)" in \
        _refusal(tmp_path, "x = local_tile(r, (3, 3), 0)")
    assert "partition: the TV layout (64,2):(2,1) does not divide" in \
        _refusal(tmp_path, "x = partition(r, Layout((64, 2), (2, 1)), t)")
    assert "a tiler is a Layout or a tuple of 2 positive ints" in _refusal(tmp_path, "x = local_tile(r, (0, 4), 0)")


def test_a_swizzle_applied_to_two_values_is_refused(tmp_path: Path):
    assert "the swizzle Sw<3,3,3> takes one offset, got 2 arguments" in \
        _refusal(tmp_path, "x = Swizzle(3, 3, 3)(t, 1)")


def test_an_error_of_a_constructor_called_in_a_kernel_names_the_call(tmp_path: Path):
    message = _refusal(tmp_path, "copy(s, make_local((128,), f32), copy_vector(3))")
    assert message.startswith("ArgusTypeError: copy atom copy_3B: vectors are 1, 2, 4, 8, 16 or 32 bytes")


def test_constant_shifts_and_divisions_the_gpu_leaves_undefined_are_refused(tmp_path: Path):
    assert "a shift of a i32 moves it 0 to 31 bits, not 40" in _refusal(tmp_path, "x = t << 40")
    assert "integer // by zero" in _refusal(tmp_path, "x = t // 0")
    assert "integer % by zero" in _refusal(tmp_path, "x = t % 0")


def test_compile_time_values_python_cannot_compare_or_convert_are_refused(tmp_path: Path):
    assert "compile-time min failed: '<' not supported" in _refusal(tmp_path, "x = min('a', 1)")
    assert "a condition must be a comparison or a compile-time bool, got ndarray" in \
        _refusal(tmp_path, "x = np.ones(3) and 1")
    assert "a condition must be a comparison or a compile-time bool" in _refusal(tmp_path, "x = select(np.ones(3), 1, 2)")
    assert "inf is no integer: it has no i32 value" in _refusal(tmp_path, "x = i32(float('inf'))")


def test_a_tensor_dim_of_zero_is_refused(tmp_path: Path):
    path = tmp_path / "zero.py"
    path.write_text(HOST.format(module="", body="    pass").replace("Tensor[f32, 128]", "Tensor[f32, 0]", 1))
    (outcome,) = _compile_all(path)
    assert "a tensor dim known at compile time is an int from 1 to 2**31 - 1, got 0" in outcome


def test_static_loops_nested_past_the_limit_are_refused_before_they_unroll(tmp_path: Path):
    nested = "for i in static_range(64):\n    for j in static_range(64):\n        for k in static_range(64):\n            pass"
    assert "unrolls its body 262144 times with the static loops around it; at most 65536" in _refusal(tmp_path, nested)


def test_a_kernel_tracing_past_the_operation_budget_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(core, "MAX_OPS", 500)
    message = _refusal(tmp_path, "for i in static_range(400):\n    s[t] = a[t] + 1.0")
    assert "the kernel traces into more than 500 operations" in message


def test_a_kernel_written_as_a_lambda_or_not_a_function_is_refused():
    lam = kernel(block=(32,))(lambda x: None)
    with pytest.raises(ArgusSyntaxError, match="<lambda> is not a function defined with def") as err:
        lam.specialize()
    assert err.value.location is not None and err.value.location.file == __file__
    with pytest.raises(ArgusSyntaxError, match="@kernel declares a function written with def, not int 3"):
        kernel(block=(32,))(3)
    with pytest.raises(ArgusSyntaxError, match="@device declares a function written with def"):
        device(3)
    with pytest.raises(ArgusSyntaxError, match="block is a tuple of 1 to 3 dims"):
        kernel(block=32)


def test_a_block_of_more_threads_than_a_gpu_has_is_refused():
    @kernel(block=(64, 32))
    def wide(x: Tensor[f32, 32]):
        x[thread_idx.x] = 1.0

    with pytest.raises(ArgusTypeError, match=f"a block has at most {MAX_BLOCK_THREADS} threads, got 2048"):
        wide.specialize()


def test_exhausting_the_stack_anywhere_in_the_front_end_is_a_located_error(monkeypatch: pytest.MonkeyPatch):
    @kernel(block=(32,))
    def plain(x: Tensor[f32, 32]):
        s = make_shared((32,), f32)
        s[thread_idx.x] = x[thread_idx.x]

    def exhausted(*args: Any) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(core.FrontEnd, "build", exhausted)
    with pytest.raises(ArgusSyntaxError, match="reading plain exhausted the compiler's stack") as err:
        plain.specialize()
    assert err.value.location is not None and err.value.location.file == __file__


@pytest.mark.parametrize("body, message", [
    ("x[thread_idx.x] = x[thread_idx.x] // (thread_idx.x - thread_idx.x)", "thread 0 divides by zero"),
    ("x[thread_idx.x] = x[thread_idx.x] % (thread_idx.x - 3)", "thread 3 divides by zero"),
    ("x[thread_idx.x] = x[thread_idx.x] << thread_idx.x", "thread 32 shifts a i32 by 32 bits (0 to 31 are defined)"),
    ("x[thread_idx.x] = x[thread_idx.x] >> (thread_idx.x - 1)", "thread 0 shifts a i32 by -1 bits"),
])
def test_the_interpreter_faults_on_arithmetic_the_gpu_leaves_undefined(tmp_path: Path, body: str, message: str):
    path = tmp_path / "arithmetic.py"
    path.write_text("from argus.dsl import *\n\n\n@kernel(block=(64,))\ndef k(x: Tensor[i32, 64]):\n"
                    f"    {body}\n")
    module = _load(path)
    with pytest.raises(KernelFault, match=f"undefined-arithmetic: {message.replace('(', '[(]').replace(')', '[)]')}"):
        module.k[(1,)](np.ones(64, np.int32))


def test_argus_compile_names_the_line_of_a_malformed_kernel(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    from argus.dsl.cli import main

    path = tmp_path / "edited.py"
    path.write_text(_edited("x = make_shared(ComposedLayout(Swizzle(3, 3, 3), -8, Layout((64,), (1,))), f32)"))
    assert main(["compile", f"{path}:host"]) == 2
    line = next(n for n, text in enumerate(path.read_text().splitlines(), 1) if "ComposedLayout(Swizzle" in text)
    assert f"error: {path}:{line}:" in capsys.readouterr().err

