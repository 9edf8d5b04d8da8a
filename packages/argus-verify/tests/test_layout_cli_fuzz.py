"""``argus-verify layout``, fuzzed: every input ends in a documented exit status.

Status 0 with "proved", 1 with "violated" and 2 with "unknown" on stdout, or 2 with an
``error:`` on stderr; never a traceback, never an internal error, never a verdict's status
without its verdict. The inputs are valid, large and mutated layouts from
`argus.layout.fuzzing` with a fixed seed; ``benchmarks/fuzz_layout.py`` runs many more.
"""

from __future__ import annotations

import pytest

from argus.layout.fuzzing import LayoutTexts, verify_command_problem
from argus.verify.cli import main

CASES = 300


def test_fuzzed_layout_checks_end_in_a_documented_status(capsys: pytest.CaptureFixture[str]) -> None:
    texts = LayoutTexts(seed=20240611)
    for _ in range(CASES):
        argv = texts.verify_command()
        code = main(argv)
        out, err = capsys.readouterr()
        assert verify_command_problem(code, out, err) is None, (argv, code, out[:300], err[:300])
