"""The ``argus-layout`` command line: golden outputs, one-line errors, the demo."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from argus.layout import LayoutError, parse
from argus.layout.cli import CliError, evaluate, main

SRC = Path(__file__).resolve().parents[1] / "src"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_error(code: int, out: str, err: str, *fragments: str) -> None:
    assert code == 2
    assert "Traceback" not in out + err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    for f in fragments:
        assert f in lines[0], lines[0]


# ---- eval ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("composition((6,2):(8,2), (4,3):(3,1))", "((2,2),3):((24,2),8)"),
        ("logical_divide((4,2,3):(2,1,8), 4:2)", "((2,2),(2,3)):((4,1),(2,8))"),
        ("complement(4:2, 24)", "(2,3):(1,8)"),
        ("zipped_divide((12,32):(32,1), (4,8))", "((4,8),(3,4)):((32,1),(128,8))"),
        ("upcast((128,64):(64,1), 8)", "(128,8):(8,1)"),
        ("size(zipped_divide((12,32):(32,1), (4,8)))", "384"),
        ("cosize(4:2)", "7"),
        ("composition(Sw<3,4,3> o 0 o (8,64):(64,1), (8,8))", "Sw<3,4,3> o 0 o (8,8):(64,1)"),
        ("coalesce(((2,2),8):((1,2),4))", "32:1"),
        ("  composition ( (6,2) : (8,2) ,(4,3):(3,1) )  ", "((2,2),3):((24,2),8)"),
        ("(4,8)", "(4,8)"),
    ],
)
def test_eval_golden(capsys: pytest.CaptureFixture[str], expr: str, expected: str) -> None:
    code, out, err = run(capsys, "eval", expr)
    assert (code, out, err) == (0, expected + "\n", "")


def test_eval_nests_calls_and_tuples_of_tilers() -> None:
    inner = evaluate("composition((6,2):(8,2), (4,3):(3,1))")
    assert str(evaluate("coalesce(composition((6,2):(8,2), (4,3):(3,1)))")) == str(
        __import__("argus.layout", fromlist=["coalesce"]).coalesce(inner)
    )
    by_layouts = evaluate("zipped_divide((12,32):(32,1), (4:1, 8:1))")
    by_ints = evaluate("zipped_divide((12,32):(32,1), (4,8))")
    assert by_layouts == by_ints
    assert evaluate("size(4)") == 4
    assert evaluate("make_layout((4,8), (8,1))") == parse("(4,8):(8,1)")


def test_eval_refused_composition(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "eval", "composition((4,3):(1,10), 6:1)")
    assert_error(code, out, err, "composition((4,3):(1,10), 6:1)", "divisibility")
    assert out == ""


def test_eval_unknown_function(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "eval", "foo(4:1)")
    assert_error(code, out, err, "unknown function 'foo'", "column 1")


@pytest.mark.parametrize(
    ("expr", "fragment"),
    [
        ("composition((4,3]:(1,4), 2)", "column 17"),
        ("composition((4,8):(1,4],2)", "column 23"),
        ("composition((4,3):(1,4)", "end of input"),
        ("composition(4:, 2)", "column 15"),
        ("composition(4:1, 2) extra", "column 21"),
        ("composition(4:1)", "argument"),
        ("composition(Sw<3,4>, 2)", "column 19"),
        ("upcast(4:1, (2,3))", "upcast"),
        ("cosize(4)", "cosize"),
        ("__import__('os').system('true')", "expected an integer"),
        ("os.system('true')", "unknown function 'os'"),
        ("", "empty"),
        ("(4,8):(1,4,2)", "column"),
    ],
)
def test_eval_bad_input(capsys: pytest.CaptureFixture[str], expr: str, fragment: str) -> None:
    code, out, err = run(capsys, "eval", expr)
    assert_error(code, out, err, fragment)


def test_evaluate_raises_library_errors() -> None:
    with pytest.raises(LayoutError):
        evaluate("composition((3,4):(4,1), 8:2)")
    with pytest.raises(CliError, match="unknown function"):
        evaluate("print(1)")


# ---- show ----------------------------------------------------------------------------------


def test_show_prints_facts_and_grid(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show", "(4,8):(8,1)")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:4] == ["layout  (4,8):(8,1)", "size    32", "cosize  32", "rank    2"]
    grid = lines[4:]
    assert grid[0].split() == [str(n) for n in range(8)]
    assert [row.split("|")[1].split() for row in grid[2:]] == [
        [str(8 * m + n) for n in range(8)] for m in range(4)
    ]
    assert len({len(row) for row in grid}) == 1  # aligned columns


def test_show_rank1_swizzle_and_rank3(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "show", "8:2")
    assert code == 0 and out.splitlines()[-1].split() == [str(2 * i) for i in range(8)]
    code, out, _ = run(capsys, "show", "Sw<3,4,3> o 0 o (8,64):(64,1)")
    assert code == 0 and "layout  Sw<3,4,3> o 0 o (8,64):(64,1)" in out
    assert out.splitlines()[8].split()[2:6] == ["144", "145", "146", "147"]  # row 2 is swizzled
    code, out, _ = run(capsys, "show", "(2,3,4)")
    assert code == 0 and "rank    3" in out and "no grid" in out
    code, out, _ = run(capsys, "show", "Sw<3,4,3>")
    assert code == 0 and "period  1024" in out


def test_show_writes_svg(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "l.svg"
    code, out, err = run(capsys, "show", "((2,2),8):((1,4),16)", "-o", str(target))
    assert (code, err) == (0, "")
    assert f"wrote {target}" in out
    ET.fromstring(target.read_text(encoding="utf-8"))


def test_show_tv(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    target = tmp_path / "tv.svg"
    code, out, _ = run(capsys, "show", "((4,8),(2,2)):((32,1),(16,8))", "--tv", "16,8", "-o", str(target))
    assert code == 0
    assert "128 of 128 elements owned, 0 by more than one" in out
    assert "T31V3" in out and target.exists()
    code, out, err = run(capsys, "show", "((4,8),(2,2)):((32,1),(16,8))", "--tv", "8,8")
    assert_error(code, out, err, "(t=2, v=0)", "8x8")
    assert out == ""
    code, out, err = run(capsys, "show", "4:1", "--tv", "two,2")
    assert_error(code, out, err, "--tv")


def test_show_malformed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show", "(4,3]:(1,4)")
    assert_error(code, out, err, "cannot parse '(4,3]:(1,4)'", "column 5")
    assert out == ""


def test_show_unwritable_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "show", "4:1", "-o", str(tmp_path / "missing" / "x.svg"))
    assert_error(code, out, err, "x.svg")


# ---- usage ---------------------------------------------------------------------------------


def test_help_lists_commands_with_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for command in ("show LAYOUT", "eval EXPR", "demo"):
        assert command in out
    assert out.count("e.g. argus-layout ") == 3


def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys)
    assert_error(code, out, err, "COMMAND")
    code, out, err = run(capsys, "show", "4:1", "--bogus")
    assert_error(code, out, err, "--bogus")
    code, out, err = run(capsys, "frobnicate")
    assert_error(code, out, err, "frobnicate")


# ---- demo ----------------------------------------------------------------------------------


def test_demo_in_process(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, "demo", "-o", str(tmp_path))
    assert (code, err) == (0, "")
    assert "((2,2),3):((24,2),8)" in out
    assert "((64,16),(2,4)):((64,1),(4096,16))" in out
    assert "(128,8):(8,1)" in out
    assert "LayoutError: stride divisibility fails" in out
    written = [Path(line.strip()) for line in out.splitlines() if line.strip().endswith(".svg")]
    assert len(written) >= 5
    for path in written:
        ET.fromstring(path.read_text(encoding="utf-8"))


def test_demo_subprocess(tmp_path: Path) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    outdir = tmp_path / "demo"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "argus.layout", "demo", "-o", str(outdir)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    svgs = sorted(outdir.glob("*.svg"))
    assert len(svgs) >= 5
    for path in svgs:
        assert str(path) in proc.stdout
        ET.fromstring(path.read_text(encoding="utf-8"))
    assert elapsed < 5


# ---- limits and readers that leave ---------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["eval", "composition(" * 40 + "4:1" + ", 2)" * 40], "nested more than 32 levels"),
        (["eval", "(" * 2000 + "4:1" + ")" * 2000], "nested more than 32 levels"),
        (["eval", "size((" + ",".join(["9" * 3000] * 3) + "))"], "too long to print"),
        (["eval", "coalesce(" + "9" * 5000 + ":1)"], "at most 4000"),
        (["eval", "composition(4:1, Sw<40,40,40> o 0 o 4:1)"], "low 63 bits"),
        (["eval", "cosize(Sw<3,4,3> o 0 o (4096,4096):(1,4096))"], "enumerating"),
        (["show", "(" * 2000 + "4" + ")" * 2000], "nested more than 32 levels"),
        (["show", "(8,8):(1@0,1@1)"], "basis strides"),
        (["show", "4:1", "--tv", ""], "--tv expects M,N"),
        (["show", "4:1", "-o", "a\0b.svg"], "NUL"),
        (["demo", "-o", "a\0b"], "NUL"),
    ],
)
def test_input_past_the_limits_is_one_error_line(capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    code, out, err = run(capsys, *argv)
    assert_error(code, out, err, fragment)
    assert len(err) < 1000  # a long input is shown around the error, not whole


def test_show_of_a_large_composed_layout_does_not_enumerate_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "show", "Sw<3,4,3> o 0 o (8192,8192):(1,8192)")
    assert (code, err) == (0, "")
    assert "cosize  (not computed:" in out and "no grid" in out


class GoneReader:
    """stdout whose reader has closed the pipe."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_stops_reading_does_not_change_the_status(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sys, "stdout", GoneReader())
    assert main(["eval", "composition(4:1, 2:1)"]) == 0
    picture = tmp_path / "l.svg"
    assert main(["show", "(8,8):(8,1)", "-o", str(picture)]) == 0
    assert picture.exists()  # the command finished its work after the reader left
    assert main(["eval", "composition((3,4):(4,1), 8:2)"]) == 2


@pytest.mark.parametrize(("argv", "status"), [(["eval", "composition(4:1, 2:1)"], 0), (["eval", "nope(1)"], 2)])
def test_piped_to_a_closed_reader_the_command_keeps_its_status_and_says_nothing(argv: list[str], status: int) -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen([sys.executable, "-m", "argus.layout", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    proc.stdout.close()  # type: ignore[union-attr]  # the reader is gone before anything is printed
    err = proc.stderr.read().decode()  # type: ignore[union-attr]
    assert proc.wait(timeout=60) == status
    assert "Traceback" not in err and "Broken pipe" not in err
