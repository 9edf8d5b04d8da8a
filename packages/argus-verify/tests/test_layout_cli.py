"""``argus-verify layout`` exits as documented on every path: 0 proved, 1 violated, 2 unknown
or bad input (with one ``error:`` line), also when its reader stops reading."""

from __future__ import annotations

import subprocess
import sys

import pytest

from argus.verify.cli import main

DEEP = "(" * 2000 + "4" + ")" * 2000


@pytest.mark.parametrize(
    ("argv", "status", "stream", "words"),
    [
        (["layout", "injective", "(4,8):(8,1)"], 0, "out", "proved:"),
        (["layout", "injective", "(4,8):(1,2)"], 1, "out", "violated:"),
        (["layout", "injective", "(4096,2048):(3,5)"], 2, "out", "unknown:"),
        (["layout", "equal", "Sw<3,4,3> o 0 o 5000000:1", "Sw<3,4,3> o 0 o 5000000:1"], 0, "out", "proved:"),
        (["layout", "bijective", "Sw<3,4,3> o 5000000:1"], 1, "out", "violated:"),
        (["layout", "injective", "(8,8):(1@0,1@1)"], 2, "err", "basis (coordinate) strides"),
        (["layout", "injective", "Sw<3,4,3>"], 2, "err", "bare swizzle"),
        (["layout", "injective", "(4,8]:(1,2)"], 2, "err", "column 5"),
        (["layout", "injective", DEEP], 2, "err", "nested more than 32 levels"),
        (["layout", "injective", "9" * 5000 + ":1"], 2, "err", "at most 4000"),
        (["layout", "injective", "Sw<40,40,40> o 0 o 4:1"], 2, "err", "low 63 bits"),
        (["layout", "injective", ""], 2, "err", "empty layout text"),
        (["layout", "bijective", "Sw<3,4,3> o 4 o 8:-1"], 2, "err", "non-negative"),
        (["layout", "composition", "8:1", "Sw<3,4,3> o 0 o 8:1"], 2, "err", "B must be a plain layout"),
        (["layout", "composition", "Sw<1,1,1>", "4:-1"], 2, "err", "non-negative"),
        (["layout", "partition", "(32,4,2):(1,32,128)", "256"], 2, "err", "two modes"),
        (["layout", "partition", "(32,4):(1,32)", "9" * 5000], 2, "err", "TILE_SIZE must be a positive integer"),
        (["layout", "partition", "(32,4):(1,32)", "٣"], 2, "err", "TILE_SIZE must be a positive integer"),
        (["layout", "banks", "32:1", "4", "1000000000000"], 2, "err", "access_bytes"),
        (["layout", "banks", "32:1", "4", "12"], 2, "err", "power of two"),
        (["layout", "equal", "4:1"], 2, "err", "equal takes A B"),
        (["layout", "teleport", "4:1"], 2, "err", "invalid choice"),
        (["layout", "injective"], 2, "err", "required: ARG"),
        (["layout", "injective", "--bogus", "4:1"], 2, "err", "unrecognized arguments: --bogus"),
        (["layout"], 2, "err", "required: CHECK"),
        ([], 2, "err", "required: DOMAIN"),
        (["layout", "banks", "8:4", "4", "4"], 2, "err", "8 addresses for 32 threads"),
    ],
)
def test_every_path_exits_as_documented(capsys, argv, status, stream, words):
    assert main(argv) == status
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert words in (out if stream == "out" else err)
    if stream == "err":  # usage mistakes too: one line, with the usage in parentheses
        assert err.startswith("error: ") and len(err.splitlines()) == 1 and not out


def test_help_exits_0(capsys):
    assert main(["--help"]) == 0
    assert "usage:" in capsys.readouterr().out


class GoneReader:
    """stdout whose reader has closed the pipe."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize(("layout", "status"), [("(4,8):(8,1)", 0), ("(4,8):(1,2)", 1), ("(4096,2048):(3,5)", 2)])
def test_a_reader_that_stops_reading_does_not_change_the_status(monkeypatch, layout, status):
    monkeypatch.setattr(sys, "stdout", GoneReader())
    assert main(["layout", "injective", layout]) == status


@pytest.mark.parametrize(("layout", "status"), [("(4,8):(8,1)", 0), ("(4,8):(1,2)", 1), ("(4,8]:(1,2)", 2)])
def test_piped_to_a_closed_reader_the_command_keeps_its_status_and_says_nothing(layout, status):
    run = subprocess.Popen([sys.executable, "-m", "argus.verify", "layout", "injective", layout],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    run.stdout.close()  # the reader is gone before the verdict is printed
    err = run.stderr.read().decode()
    assert run.wait(timeout=60) == status
    assert "Traceback" not in err and "Broken pipe" not in err
