"""Kernels mutated at random compile and run into a result or an Argus error, never an
internal exception: whatever a person or a model writes, the message is about their code."""

from __future__ import annotations

import ast
import copy
import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argus.dsl import ArgusError, Kernel
from argus.dsl.errors import ArgusVerificationWarning

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.py"))

_BINOPS = [ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Div, ast.BitAnd, ast.BitXor, ast.LShift, ast.Pow]
_CMPOPS = [ast.Lt, ast.LtE, ast.Gt, ast.Eq, ast.NotEq, ast.Is, ast.In]
_NAMES = ["thread_idx", "block_idx", "tile", "x", "n", "f32", "u128", "range", "print", "syncthreads", "make_local"]


def _kernel_nodes(tree: ast.Module) -> list[tuple[ast.AST, str]]:
    """The nodes of the module's kernels, each with the name of the kernel function it is in:
    functions decorated with @kernel(...) and functions wrapped as kernel(...)(fn) (a kernel
    built by a function, like gemm_tma's)."""
    wrapped = {arg.id for call in ast.walk(tree) if isinstance(call, ast.Call) and isinstance(call.func, ast.Call)
               and getattr(call.func.func, "id", "") == "kernel" for arg in call.args if isinstance(arg, ast.Name)}
    nodes = []
    for fdef in ast.walk(tree):
        if isinstance(fdef, ast.FunctionDef) and (fdef.name in wrapped or any(
            isinstance(d, ast.Call) and getattr(d.func, "id", "") == "kernel" for d in fdef.decorator_list
        )):
            nodes.extend((n, fdef.name) for stmt in fdef.body for n in ast.walk(stmt))
    return nodes


def mutate(tree: ast.Module, draw: st.DrawFn) -> tuple[ast.Module, set[str]]:
    """A copy of `tree` with 1 to 3 nodes of its kernels edited, and the names of the kernel
    functions whose code an edit changed."""
    tree = copy.deepcopy(tree)
    nodes = _kernel_nodes(tree)
    changed = set()
    for _ in range(draw(st.integers(1, 3))):
        node, function = draw(st.sampled_from(nodes))
        choice = draw(st.integers(0, 6))
        if isinstance(node, ast.BinOp) and choice < 3:
            node.op = draw(st.sampled_from(_BINOPS))()
        elif isinstance(node, ast.Compare) and choice < 3:
            node.ops = [draw(st.sampled_from(_CMPOPS))()]
        elif isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            node.value = draw(st.sampled_from([0, 1, -1, 3, 2.5, 10**12, "s", None, True]))
        elif isinstance(node, ast.Name):
            node.id = draw(st.sampled_from(_NAMES))
        elif isinstance(node, ast.Subscript) and choice < 4:
            index = node.slice
            node.slice = index.elts[0] if isinstance(index, ast.Tuple) and index.elts else ast.Tuple(
                [index, ast.Constant(0)], ast.Load()
            )
        elif isinstance(node, ast.Attribute):
            node.attr = draw(st.sampled_from(["x", "y", "w", "view", "shape", "T"]))
        elif isinstance(node, ast.Call) and node.args and choice < 5:
            node.args = node.args[:-1] if choice % 2 else node.args + [ast.Constant(1)]
        else:
            continue
        changed.add(function)
    ast.fix_missing_locations(tree)
    return tree, changed


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_kernels_fail_only_with_argus_errors(path: Path, data: st.DataObject, tmp_path_factory) -> None:
    tree, changed = mutate(ast.parse(path.read_text()), data.draw)
    tmp = tmp_path_factory.mktemp("mutant") / path.name
    tmp.write_text(ast.unparse(tree))
    spec = importlib.util.spec_from_file_location(f"mutant_{path.stem}", tmp)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    sys.path.insert(0, str(path.parent))  # as argus loads an example: gemm_ws builds on gemm_tma
    try:
        spec.loader.exec_module(module)
        for name, k in vars(module).items():
            # only the kernels an edit changed: the others are the example's own, run and checked
            # by test_examples.py (a check of gemm_tma's is seconds, and it has three kernels)
            if isinstance(k, Kernel) and k.fn.__name__ in changed:
                problem = getattr(module, f"example_{name}")(np.random.default_rng(0))
                try:
                    with warnings.catch_warnings():  # a mutant's check may well end unknown: that is said, not a failure
                        warnings.simplefilter("ignore", ArgusVerificationWarning)
                        k[problem.grid](*problem.args, **problem.constants)
                except ArgusError:
                    pass
    finally:
        sys.path.remove(str(path.parent))
        sys.modules.pop(spec.name, None)
