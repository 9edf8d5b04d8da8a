"""Shared helpers: the example kernels, and whether a CUDA GPU is here."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest
from argus.dsl import Kernel

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def load_example(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"argus_nvptx_example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_kernels() -> list[Any]:
    out = []
    for path in sorted(EXAMPLES.glob("*.py")):
        module = load_example(path)
        for name, value in vars(module).items():
            if isinstance(value, Kernel):
                out.append(pytest.param(module, name, id=f"{path.stem}:{name}"))
    return out


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())
