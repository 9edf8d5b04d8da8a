"""``argus-layout``, fuzzed: every input either succeeds (status 0) or says what is wrong
in one ``error:`` line (status 2); never a traceback and never an internal error.

The inputs are valid and mutated layouts and expressions from `argus.layout.fuzzing` with a
fixed seed; ``benchmarks/fuzz_layout.py`` runs many more.
"""

from __future__ import annotations

import pytest
from argus.layout.cli import FUNCTIONS, main
from argus.layout.fuzzing import LayoutTexts, layout_command_problem

CASES = 300


def test_fuzzed_commands_succeed_or_say_what_is_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    texts = LayoutTexts(seed=7)
    for _ in range(CASES):
        argv = texts.layout_command(sorted(FUNCTIONS))
        code = main(argv)
        out, err = capsys.readouterr()
        assert layout_command_problem(code, out, err) is None, (argv, code, out[:300], err[:300])
