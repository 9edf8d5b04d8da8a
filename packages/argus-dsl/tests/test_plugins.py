"""Plugin discovery: lazy, duplicates refused, broken plugins isolated, switchable by environment."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest
from argus.verify import plugins
from argus.dsl.backends import INTERPRETER, TargetError, backend_for, parse_target
from argus.dsl.plugins import PluginError, discover


def fake(monkeypatch, *eps: EntryPoint) -> None:
    monkeypatch.setattr(plugins, "entry_points", lambda group: [ep for ep in eps if ep.group == group])


def test_entry_points_are_listed_without_importing_and_loaded_on_use(monkeypatch):
    fake(monkeypatch, EntryPoint("interp", "argus.dsl.backends:INTERPRETER", "argus.backends"),
         EntryPoint("ghost", "no_such_module_anywhere:SPEC", "argus.backends"))
    found = discover("argus.backends")
    assert set(found) == {"interp", "ghost"}
    assert found["interp"].load() is INTERPRETER
    with pytest.raises(PluginError, match="ghost.*unavailable.*ModuleNotFoundError"):
        found["ghost"].load()


def test_a_name_claimed_twice_is_an_error(monkeypatch):
    fake(monkeypatch, EntryPoint("x", "a:b", "argus.solvers"), EntryPoint("x", "c:d", "argus.solvers"))
    with pytest.raises(PluginError, match="claimed twice"):
        discover("argus.solvers")


def test_plugins_can_be_disabled(monkeypatch):
    fake(monkeypatch, EntryPoint("z3", "a:b", "argus.solvers"), EntryPoint("cvc", "c:d", "argus.solvers"))
    monkeypatch.setenv("ARGUS_DISABLE_PLUGINS", "argus.solvers:cvc")
    assert set(discover("argus.solvers")) == {"z3"}


def test_unknown_groups_and_targets_are_refused():
    with pytest.raises(PluginError, match="unknown plugin group"):
        discover("argus.nope")
    assert parse_target("nvptx:sm_90a").arch == "sm_90a"
    with pytest.raises(TargetError, match="malformed"):
        parse_target("sm 90")
    with pytest.raises(TargetError, match="no installed backend"):
        backend_for(parse_target("riscv:rv64"))


def test_importing_the_language_loads_no_gpu_toolchain():
    import subprocess
    import sys

    code = "import sys, argus.dsl; print(sorted(m for m in ('llvmlite', 'cuda', 'cupy', 'torch', 'hip') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
