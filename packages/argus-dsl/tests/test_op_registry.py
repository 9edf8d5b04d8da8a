"""The op registry: every op of the core language has exactly one meaning, declared by its
family's module; every consumer's dispatch table holds exactly the declared parts; a backend's
language is installed through the same registry, and a broken one is isolated."""

from __future__ import annotations

import importlib

import pytest
from argus.dsl import ops
from argus.dsl.check import rules as check_rules
from argus.dsl.frontend import calls
from argus.dsl.intrinsics import Language, Meaning
from argus.dsl.ir import dialect as D
from argus.dsl.ir import registry
from argus.dsl.llvm import translate
from argus.dsl.machine import interpreter, shadow
from xdsl.dialects import arith, scf
from xdsl.ir import Dialect
from xdsl.irdl import IRDLOperation, irdl_op_definition


def _core_ops() -> list[type]:
    """Every op class of the core dialect that kernels can contain."""
    return [op for op in D.Argus.operations if op is not D.KernelOp]


def test_every_core_op_has_one_meaning_from_its_family_module():
    registry.install()
    for op in _core_ops():
        m = registry.meaning(op)
        assert m is not None, f"{op.__name__} has no meaning"
        assert m.interpret is not None or m.wait is not None or m.walked, op.__name__
    families = {f"argus.dsl.ops.{f}" for f in ops.FAMILIES}
    for m in registry.meanings():
        rule = m.interpret or m.translate or m.analyze
        if m.op_type.__module__.startswith(("argus.dsl", "xdsl")) and rule is not None and m.interpret is not None:
            assert m.interpret.__module__ in families | {"argus.backends.nvptx.language", "argus.backends.amdgpu.language"}, \
                f"{m.op_type.__name__}'s interpreter rule lives in {m.interpret.__module__}"


def test_the_consumer_tables_hold_exactly_the_declared_parts():
    registry.install()
    for m in registry.meanings():
        if m.interpret is not None:
            assert interpreter.RULES[m.op_type] is m.interpret
        else:
            assert m.op_type not in interpreter.RULES
        if m.analyze is not None:
            assert check_rules.RULES[m.op_type] is m.analyze
        if m.shadow is not None:
            assert shadow.RULES[m.op_type] is m.shadow
        if m.translate is not None:
            assert translate.RULES[m.op_type] is m.translate
    declared = {m.op_type for m in registry.meanings()}
    for table in (interpreter.RULES, check_rules.RULES, shadow.RULES, translate.RULES):
        assert set(table) <= declared, "a consumer table holds an op no family declared"


def test_scf_and_arith_ops_of_kernels_are_declared():
    for op in (scf.ForOp, scf.IfOp, scf.YieldOp, arith.AddiOp, arith.ConstantOp, arith.SelectOp, arith.CmpiOp):
        assert registry.meaning(op) is not None, op.__name__


def test_an_op_is_defined_once():
    registry.install()
    with pytest.raises(ValueError, match="already has a meaning"):
        registry.define(D.LaneIdOp, interpret=interpreter.RULES[D.LaneIdOp])


def test_a_meaning_needs_its_semantics_and_names_unknown_parts():
    with pytest.raises(ValueError, match="exactly one of interpret= and wait="):
        Meaning(D.LaneIdOp)
    with pytest.raises(TypeError, match="unknown part"):
        registry.define(D.LaneIdOp, interpret=lambda *a: None, interpet=lambda *a: None)


def test_a_builtin_has_one_builder():
    registry.install()
    assert "lane_id" in calls.BUILDERS
    with pytest.raises(ValueError, match="already has a builder"):
        registry.builtin("lane_id")(lambda fe, node, args: None)


@irdl_op_definition
class _Redefining(IRDLOperation):
    name = "redefining.op"


def _language_spec(language):
    from argus.dsl.backends import BackendSpec

    return BackendSpec("broken", ("broken",), ("mlir",), lambda t: None, lambda t: None, language)


def _install_with(monkeypatch, specs) -> None:
    """Install the registry afresh with the backends `specs` (the core families stay defined)."""
    from argus.dsl import backends

    registry.install()
    monkeypatch.setattr(registry, "_INSTALLED", False)
    monkeypatch.setattr(registry, "_MEANINGS", dict(registry._MEANINGS))
    monkeypatch.setattr(registry, "_INSTALLED_LANGUAGES", set(registry._INSTALLED_LANGUAGES))
    monkeypatch.setattr(backends, "backends", lambda: specs)


def test_a_backend_redefining_a_core_op_is_left_out_with_a_warning(monkeypatch):
    bad = Language(Dialect("broken", [_Redefining]), [Meaning(_Redefining, interpret=lambda *a: None),
                                                      Meaning(D.LaneIdOp, interpret=lambda *a: None)])
    _install_with(monkeypatch, {"broken": _language_spec(lambda: bad)})
    before = interpreter.RULES[D.LaneIdOp]
    with pytest.warns(RuntimeWarning, match="backend 'broken'.*redefines LaneIdOp"):
        registry.install()
    assert interpreter.RULES[D.LaneIdOp] is before  # the core meaning stands
    assert registry._MEANINGS.get(_Redefining) is None  # refused whole, not half-installed


def test_a_backend_whose_language_fails_to_import_is_named(monkeypatch):
    def broken():
        return importlib.import_module("no_such_language_module_anywhere")

    _install_with(monkeypatch, {"broken": _language_spec(broken)})
    with pytest.warns(RuntimeWarning, match="backend 'broken'.*ModuleNotFoundError"):
        registry.install()
    assert registry.meaning(D.LaneIdOp) is not None
