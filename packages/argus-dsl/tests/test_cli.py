"""The argus command: compile and run example kernels; one-line errors, status 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from argus.dsl.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_compile_prints_mlir_that_parses(capsys):
    from argus.dsl.ir.dialect import parse_module

    assert main(["compile", f"{EXAMPLES / 'transpose.py'}:transpose", "--emit", "mlir"]) == 0
    text = capsys.readouterr().out
    assert '"argus.kernel"' in text and "Sw<5,0,5> o 0 o (32,32):(32,1)" in text
    parse_module(text)


def test_compile_emits_the_lowered_stage(capsys):
    assert main(["compile", f"{EXAMPLES / 'transpose.py'}:transpose", "--emit", "lowered"]) == 0
    text = capsys.readouterr().out
    assert '"argus.load_at"' in text and '"argus.load"(' not in text and "arith.xori" in text


def test_run_checks_against_the_reference(capsys):
    assert main(["run", f"{EXAMPLES / 'vector_add.py'}:vector_add", "--seed", "5"]) == 0
    assert "matches the reference" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["compile", "nowhere.py:k"], "no such file"),
        (["compile", "examples"], "FILE:KERNEL"),
        (["compile", f"{EXAMPLES / 'transpose.py'}:missing"], "no kernel named 'missing'"),
        (["compile", f"{EXAMPLES / 'transpose.py'}:transpose", "--target", "tpu:v5"], "no installed backend"),
        (["compile", f"{EXAMPLES / 'transpose.py'}:transpose", "--target", "NV PTX"], "malformed target"),
        (["compile", f"{EXAMPLES / 'transpose.py'}:transpose", "--emit", "ptx"], "emits mlir, lowered"),
        (["compile", f"{EXAMPLES / 'transpose.py'}:transpose", "-D", "x"], "NAME=VALUE"),
    ],
)
def test_errors_are_one_line_with_status_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err and "Traceback" not in err


def test_module_entry_point_runs_in_a_fresh_interpreter():
    result = subprocess.run(
        [sys.executable, "-m", "argus.dsl", "run", f"{EXAMPLES / 'transpose.py'}:transpose"],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "matches the reference" in result.stdout


def test_verify_proves_every_kernel_of_a_file(capsys):
    assert main(["verify", str(EXAMPLES / "transpose.py")]) == 0
    assert capsys.readouterr().out.startswith("proved: the tag assertions of transpose hold for every launch")


def test_verify_prints_a_counterexample_and_exits_1(tmp_path, capsys):
    import json

    source = (EXAMPLES / "transpose.py").read_text()
    wrong = tmp_path / "transpose.py"
    wrong.write_text(source.replace("got[k] = tile[tx, ty + k * ROWS_PER_PASS]", "got[k] = tile[ty + k * ROWS_PER_PASS, tx]"))
    assert main(["verify", f"{wrong}:transpose", "--json"]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["kernel"] == "transpose" and result["verdict"] == "violated"
    witness = result["witnesses"][0]
    assert {"block", "thread", "element", "lhs tag", "rhs tag", "lhs written at", "replayed"} <= set(witness)
    assert witness["assertion"].startswith(str(wrong))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["verify", "nowhere.py"], "no such file"),
        (["verify", f"{EXAMPLES / 'gemm.py'}", "--grid", "0,1"], "--grid takes"),
        (["verify", f"{EXAMPLES / 'gemm.py'}", "--solver", "nope"], "no solver plugin named 'nope'"),
    ],
)
def test_verify_errors_exit_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err
