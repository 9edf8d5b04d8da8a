"""Every example kernel runs in the interpreter on fresh random inputs and matches its float64
numpy reference; its printed MLIR parses back to an equal module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from argus.dsl import Kernel
from argus.dsl.ir.dialect import parse_module

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(path: Path):
    """Import an example as `argus` does: with its folder on the import path (gemm_ws builds on
    gemm_tma's pipeline)."""
    spec = importlib.util.spec_from_file_location(f"argus_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(path.parent))
    return module


def example_kernels():
    for path in sorted(EXAMPLES.glob("*.py")):
        module = load(path)
        for name, value in vars(module).items():
            if isinstance(value, Kernel):
                yield pytest.param(module, name, id=f"{path.stem}:{name}")


@pytest.mark.parametrize("module, name", list(example_kernels()))
@pytest.mark.parametrize("seed", [0, 1])
def test_example_matches_reference(module, name, seed):
    problem = getattr(module, f"example_{name}")(np.random.default_rng(seed))
    getattr(module, name)[problem.grid](*problem.args, **problem.constants)
    problem.check()


@pytest.mark.parametrize("module, name", list(example_kernels()))
def test_printed_mlir_parses_back_to_an_equal_module(module, name):
    problem = getattr(module, f"example_{name}")(np.random.default_rng(0))
    compiled = getattr(module, name).compile(**problem.constants)
    reparsed = parse_module(compiled.mlir())
    assert reparsed.is_structurally_equivalent(compiled.module)
    assert str(reparsed) == compiled.mlir()


@pytest.mark.parametrize("module, name", list(example_kernels()))
def test_lowering_layouts_to_index_arithmetic_keeps_the_results(module, name):
    from argus.dsl.ir.dialect import LoadOp, StoreOp
    from argus.dsl.machine.interpreter import Interpreter
    from argus.dsl.ir.lowering import lower_layouts
    from argus.dsl.ir.passes import canonicalize

    problem = getattr(module, f"example_{name}")(np.random.default_rng(2))
    lowered = canonicalize(lower_layouts(getattr(module, name).compile(**problem.constants).module.clone()))
    lowered.verify()
    assert not any(isinstance(op, (LoadOp, StoreOp)) for op in lowered.walk())
    assert parse_module(str(lowered)).is_structurally_equivalent(lowered)
    Interpreter(lowered.ops.first).launch(problem.grid, problem.args)
    problem.check()


@pytest.mark.parametrize("module, name", list(example_kernels()))
def test_tag_assertions_hold_on_the_example_launch(module, name):
    from argus.dsl.machine.shadow import check_launch
    from argus.verify import Verdict

    problem = getattr(module, f"example_{name}")(np.random.default_rng(3))
    result = check_launch(getattr(module, name), problem.grid, *problem.args, **problem.constants)
    # an example that states no claim has nothing to prove, and runs clean
    claimless = "states no tag assertion" in result.text()
    assert result.verdict is (Verdict.NOTHING_TO_PROVE if claimless else Verdict.PROVED), result.text()
