"""Fixtures shared by the tests that hold the static checker to concrete launches."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from argus.dsl import ArgusError, KernelFault
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict

sys.path.insert(0, str(Path(__file__).parent))  # the tests' helper modules (warpgroup_products)


@pytest.fixture
def no_result_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check is a fresh analysis (no result from an earlier run is reused)."""
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


@pytest.fixture
def interpreter_only(no_result_cache: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Launches run on the interpreter alone (ARGUS_VERIFY=0): a test of what the interpreter
    faults on meets its fault, not the checker's verdict; the checker is asked where stated."""
    monkeypatch.setenv("ARGUS_VERIFY", "0")


def _no_proof(k: Any) -> None:
    try:
        result = k.verify()
    except ArgusError:  # refusing the kernel, with the line and what is needed, is no proof either
        return
    assert result.verdict is not Verdict.PROVED, result.text()


@pytest.fixture
def refuted(no_result_cache: None) -> Callable[..., None]:
    """`refuted(kernel, grid, *args)`: the launch violates an assertion under shadow tags, so the
    checker may give no proof for every launch."""

    def check(k: Any, grid: Any, *args: Any) -> None:
        shadow = check_launch(k, grid, *args)
        assert shadow.verdict is Verdict.VIOLATED, shadow.text()
        _no_proof(k)

    return check


@pytest.fixture
def races(no_result_cache: None) -> Callable[..., None]:
    """`races(kernel, grid, *args)`: the launch has a shared-memory race the interpreter reports,
    so the checker may give no proof for every launch."""

    def check(k: Any, grid: Any, *args: Any) -> None:
        with pytest.raises(KernelFault) as fault:
            check_launch(k, grid, *args)
        assert fault.value.kind == "data-race"
        _no_proof(k)

    return check


@pytest.fixture
def llvm_text() -> Callable[..., str]:
    """`llvm_text(kernel, **constants)`: the LLVM text the generic rules give the kernel (a
    stand-in target whose thread indices and block barrier are calls to named functions:
    ``@target.thread.0``, ``@target.barrier``), so that a core op's translation is tested
    without a backend."""
    from types import SimpleNamespace

    from argus.dsl.ir import dialect as D
    from argus.dsl.ir.lowering import lowered
    from argus.dsl.llvm import Translator

    class Target(Translator):
        BACKEND = "stand-in"

        def index(self, kind: str, axis: int) -> str:
            return self.call("i32", f"target.{kind}.{axis}", [])

        def barrier(self, op: Any) -> None:
            self.call("void", "target.barrier", [])

    def translate(k: Any, **constants: Any) -> str:
        module, locations = lowered(k.specialize(**constants))
        (op,) = [o for o in module.walk() if isinstance(o, D.KernelOp)]
        return Target(op, SimpleNamespace(name="none"), locations).translate()[0]

    return translate
