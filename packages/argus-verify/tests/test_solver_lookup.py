"""Finding a solver plugin (`solvers.solver`): the installed plugins are listed once, not at every
check that needs a solver, and the choice still follows the environment and the plugins listed."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest
from argus.verify import plugins
from argus.verify.plugins import PluginError
from argus.verify.solvers import solver


def _listing(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> list[str]:
    """Installed entry points are `eps`; the groups listed are recorded, one per listing."""
    listed: list[str] = []

    def entry_points(group: str) -> list[EntryPoint]:
        listed.append(group)
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(plugins, "entry_points", entry_points)
    return listed


Z3 = EntryPoint("z3", "argus.verify.solvers.z3_solver:Z3", "argus.solvers")


def test_the_installed_solvers_are_listed_once_and_each_call_makes_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGUS_DISABLE_PLUGINS", raising=False)
    monkeypatch.delenv("ARGUS_SOLVER", raising=False)
    listed = _listing(monkeypatch, Z3)
    first, second = solver(), solver()
    assert first.name == second.name == "z3" and first is not second
    assert listed == ["argus.solvers"]


def test_a_solver_turned_off_after_a_lookup_cannot_be_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARGUS_SOLVER", raising=False)
    monkeypatch.delenv("ARGUS_DISABLE_PLUGINS", raising=False)
    _listing(monkeypatch, Z3)
    assert solver().name == "z3"
    monkeypatch.setenv("ARGUS_DISABLE_PLUGINS", "argus.solvers:z3")
    with pytest.raises(PluginError, match="no solver plugin named 'z3'"):
        solver()


def test_other_installed_plugins_are_listed_anew(monkeypatch: pytest.MonkeyPatch) -> None:
    """A different listing of installed plugins (another environment) is read, not the one kept."""
    monkeypatch.delenv("ARGUS_SOLVER", raising=False)
    monkeypatch.delenv("ARGUS_DISABLE_PLUGINS", raising=False)
    _listing(monkeypatch, Z3)
    assert solver().name == "z3"
    listed = _listing(monkeypatch, EntryPoint("z3", "no_such_module_anywhere:Z3", "argus.solvers"))
    with pytest.raises(PluginError, match="unavailable.*ModuleNotFoundError"):
        solver()
    assert listed == ["argus.solvers"]
