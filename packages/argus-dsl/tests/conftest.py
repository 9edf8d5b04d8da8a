"""Fixtures shared by the tests that hold the static checker to concrete launches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from argus.dsl import ArgusError, KernelFault
from argus.dsl.machine.shadow import check_launch
from argus.verify import Verdict


@pytest.fixture
def no_result_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every check is a fresh analysis (no result from an earlier run is reused)."""
    monkeypatch.setenv("ARGUS_CACHE_DIR", "off")


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
