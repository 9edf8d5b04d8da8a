"""Each distribution builds its own wheel and installs alone, with only its declared dependencies."""

from __future__ import annotations

import json
import subprocess
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def layout_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    env = tmp_path_factory.mktemp("argus-layout-venv")
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(ROOT / "packages" / "argus-layout")],
        check=True,
    )
    return python


def test_argus_layout_pulls_only_numpy(layout_venv: Path) -> None:
    listed = subprocess.run(
        [layout_venv, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
        check=True, capture_output=True, text=True,
    ).stdout
    installed = {p["name"].lower() for p in json.loads(listed)} - {"pip", "setuptools", "wheel"}
    assert installed == {"argus-layout", "numpy"}


def test_argus_layout_is_a_namespace_package_that_works_alone(layout_venv: Path) -> None:
    code = (
        "import argus, argus.layout as al; "
        "assert not hasattr(argus, '__file__') or argus.__file__ is None, 'argus must be a PEP 420 namespace'; "
        "print(al.composition(al.parse('(6,2):(8,2)'), al.parse('(4,3):(3,1)')))"
    )
    out = subprocess.run([layout_venv, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "((2,2),3):((24,2),8)"


def test_argus_layout_ships_type_information(layout_venv: Path) -> None:
    code = "import argus.layout, pathlib; print(pathlib.Path(argus.layout.__file__).with_name('py.typed').exists())"
    out = subprocess.run([layout_venv, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "True"



def test_argus_verify_installs_without_the_dsl(tmp_path: Path) -> None:
    """The layout checker needs only argus-layout: no xDSL, no DSL."""
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         str(ROOT / "packages" / "argus-layout"), str(ROOT / "packages" / "argus-verify")],
        check=True,
    )
    listed = subprocess.run([python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
                            check=True, capture_output=True, text=True).stdout
    installed = {p["name"].lower() for p in json.loads(listed)} - {"pip", "setuptools", "wheel"}
    assert installed == {"argus-layout", "argus-verify", "numpy", "z3-solver"}
    result = subprocess.run([env / "bin" / "argus-verify", "layout", "injective", "(4,8):(1,2)"], capture_output=True, text=True)
    assert result.returncode == 1 and "offset = 2" in result.stdout
    plugin = subprocess.run([python, "-c", "from argus.verify.solvers import solver; print(solver().name)"],
                            capture_output=True, text=True, check=True)
    assert plugin.stdout.strip() == "z3"  # the default solver plugin is found through its entry point


def test_argus_kb_installs_alone_with_its_entries(tmp_path: Path) -> None:
    """The knowledge base is data and a reader: no other Argus package, no dependency; its
    entries travel in the wheel and its command works without the DSL."""
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    str(ROOT / "packages" / "argus-kb")], check=True)
    listed = subprocess.run([python, "-m", "pip", "list", "--format=json", "--disable-pip-version-check"],
                            check=True, capture_output=True, text=True).stdout
    assert {p["name"].lower() for p in json.loads(listed)} - {"pip", "setuptools", "wheel"} == {"argus-kb"}
    result = subprocess.run([env / "bin" / "argus-kb", "show", "split-k", "--json"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["pack"] == "argus"  # found through its installed entry point
