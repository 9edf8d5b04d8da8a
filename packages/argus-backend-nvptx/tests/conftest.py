"""Shared helpers: the example kernels, and whether a CUDA GPU is here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from argus.dsl import Kernel
from argus.dsl.cli import load_module

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def example_kernels() -> list[Any]:
    """The example kernels written for NVIDIA GPUs (all but those whose TARGETS name none)."""
    out = []
    for path in sorted(EXAMPLES.glob("*.py")):
        module = load_module(path)
        targets = getattr(module, "TARGETS", None)
        if targets is not None and not any(t.startswith("nvptx:") for t in targets):
            continue
        for name, value in vars(module).items():
            if isinstance(value, Kernel):
                out.append(pytest.param(module, name, id=f"{path.stem}:{name}"))
    return out


def language_kernels() -> list[Any]:
    """The kernels without constexprs that argus-dsl's own tests define: together they use
    every construct of the language, correctly and not."""
    out = []
    for path in sorted((Path(__file__).resolve().parents[2] / "argus-dsl" / "tests").glob("test_*.py")):
        module = load_module(path)
        for name, value in vars(module).items():
            if isinstance(value, Kernel) and not value.constexpr_names:
                out.append(pytest.param(value, id=f"{path.stem}:{name}"))
    return out


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def example_variant(tmp_path: Path, name: str, *edits: tuple[str, str]) -> Any:
    """examples/NAME.py with each `old` replaced by `new` (each must apply), loaded as a module."""
    source = (EXAMPLES / f"{name}.py").read_text()
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, new, 1)
    path = tmp_path / f"{name}_variant_{abs(hash(edits))}.py"
    path.write_text(source)
    sys.path.insert(0, str(EXAMPLES))  # an example may import another (gemm_ws.py: gemm_tma.py's pipeline)
    try:
        return load_module(path)
    finally:
        sys.path.remove(str(EXAMPLES))
