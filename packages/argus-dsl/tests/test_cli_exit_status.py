"""The argus command's exit status is its answer: 0 proved (or nothing to prove), 1 violated,
2 unknown or bad input. It stays so when the reader of the output goes away early, and every
malformed invocation ends with one ``error:`` line and status 2, never a traceback (a crash
exiting 1 would read as "violated")."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from argus.dsl.cli import main

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

pytestmark = pytest.mark.usefixtures("no_result_cache")


def _with_stdout_closed(*argv: str) -> tuple[int, str]:
    """Run ``python -m argus.dsl ARGV`` whose reader closes its end of the output pipe before
    reading anything (as ``| head -0`` would): the exit status and what went to stderr."""
    process = subprocess.Popen([sys.executable, "-m", "argus.dsl", *argv], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read()
    return process.wait(timeout=120), err


def _violated_transpose(tmp_path: Path) -> Path:
    source = (EXAMPLES / "transpose.py").read_text()
    wrong = tmp_path / "transpose.py"
    wrong.write_text(source.replace("got[k] = tile[tx, ty + k * ROWS_PER_PASS]",
                                    "got[k] = tile[ty + k * ROWS_PER_PASS, tx]"))
    return wrong


def test_a_proof_piped_to_a_closed_reader_still_exits_0():
    status, err = _with_stdout_closed("verify", str(EXAMPLES / "transpose.py"))
    assert status == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_a_violation_piped_to_a_closed_reader_still_exits_1(tmp_path):
    status, err = _with_stdout_closed("verify", str(_violated_transpose(tmp_path)))
    assert status == 1, err
    assert "Traceback" not in err


def test_a_plugin_subcommand_piped_to_a_closed_reader_keeps_its_status():
    status, err = _with_stdout_closed("kb", "list")
    assert status == 0, err
    assert "Traceback" not in err


def test_an_error_with_stderr_closed_still_exits_2():
    result = subprocess.run([sys.executable, "-m", "argus.dsl", "verify", "nowhere.py"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, check=False, close_fds=True,
                            preexec_fn=lambda: __import__("os").close(2))
    assert result.returncode == 2


# ---- malformed invocations ----------------------------------------------------------------------

_NO_KERNEL = "x = 1\n"
_IMPORT_FAILS = "raise RuntimeError('boom')\n"
_DOES_NOT_COMPILE = """\
from argus.dsl import Tensor, f32, kernel, thread_idx


@kernel(block=(32,))
def k(x: Tensor[f32, 32]):
    x[thread_idx.x] = undefined_name
"""
_EXAMPLE_FAILS = """\
from argus.dsl import Tensor, f32, kernel, thread_idx


@kernel(block=(32,))
def k(x: Tensor[f32, 32]):
    x[thread_idx.x] = 1.0


def example_k(rng):
    return 1 // 0
"""


@pytest.mark.parametrize(
    "command, spec, message",
    [
        ("verify", "{dir}/missing.py", "no such file"),
        ("verify", "{dir}", "is a directory"),
        ("verify", "{dir}:k", "is a directory"),
        ("compile", "{dir}:k", "is a directory"),
        ("run", "{dir}", "FILE:KERNEL"),
        ("run", "{dir}/fails_to_compile.py:", "FILE:KERNEL"),
        ("verify", ":k", "FILE:KERNEL"),
        ("verify", "{dir}/fails_to_compile.py:other", "no kernel named 'other'"),
        ("verify", "{dir}/no_kernel.py", "defines no kernel"),
        ("verify", "{dir}/import_fails.py", "RuntimeError: boom"),
        ("verify", "{dir}/fails_to_compile.py", "fails_to_compile.py:6:"),
        ("compile", "{dir}/fails_to_compile.py:k", "fails_to_compile.py:6:"),
        ("run", "{dir}/example_fails.py:k", "example_k(rng) failed: ZeroDivisionError"),
    ],
)
def test_malformed_invocations_exit_2_with_one_error_line(tmp_path, capsys, command, spec, message):
    for name, text in (("no_kernel.py", _NO_KERNEL), ("import_fails.py", _IMPORT_FAILS),
                       ("fails_to_compile.py", _DOES_NOT_COMPILE), ("example_fails.py", _EXAMPLE_FAILS)):
        (tmp_path / name).write_text(text)
    assert main([command, spec.format(dir=tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and message in err, err
    assert "Traceback" not in err


def test_a_failure_of_the_checker_itself_exits_2_not_1(monkeypatch, capsys):
    from argus.dsl.kernel import Kernel

    def broken(*args, **kwargs):
        raise IndexError("index 3 is out of bounds")

    monkeypatch.setattr(Kernel, "verify", broken)
    assert main(["verify", str(EXAMPLES / "transpose.py")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: argus verify failed: IndexError: index 3 is out of bounds"), err


def test_an_interrupt_exits_130_not_1(monkeypatch, capsys):
    from argus.dsl.kernel import Kernel

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Kernel, "verify", interrupted)
    assert main(["verify", str(EXAMPLES / "transpose.py")]) == 130
    assert capsys.readouterr().err == "error: interrupted\n"
