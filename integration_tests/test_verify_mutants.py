"""Every mutant of the mutation benchmark is caught with a replayed witness, and every
equivalent mutant and original is proved (the benchmark's targets, kept by the suite)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("verify_mutants", ROOT / "benchmarks" / "verify_mutants.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["verify_mutants"] = bench  # its dataclasses look their module up
_spec.loader.exec_module(bench)


@pytest.mark.parametrize("mutant", bench.MUTANTS, ids=lambda m: m.name)
def test_mutant(mutant, tmp_path):
    module = bench.load(mutant.example, mutant.edits, tmp_path, "m")
    result, _ = bench.check(module, mutant.kernel)
    if mutant.equivalent:
        assert result.verdict.value == "proved", result.text()
    else:
        assert result.verdict.value == "violated", result.text()
        assert all(str(w["replayed"]).startswith(("reproduced", "the interpreter")) for w in result.witnesses)


def _speed_benchmark():
    """benchmarks/verify_speed.py, loaded as a module."""
    spec = importlib.util.spec_from_file_location("verify_speed", ROOT / "benchmarks" / "verify_speed.py")
    assert spec is not None and spec.loader is not None
    speed = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(speed)
    return speed


def test_the_speed_benchmark_times_both_checks_of_proved_examples(tmp_path):
    speed = _speed_benchmark()
    out = tmp_path / "speed.json"
    assert speed.main(["--repeat", "1", "--parts", "--json", str(out)]) == 0
    import json

    report = json.loads(out.read_text())
    assert report.pop("machine_ms") > 0  # the fixed loop that tells one sitting's speed from another's
    assert set(report) == {"gemm", "flash_attention"}
    for row in report.values():
        assert row["verdict"] == "proved" and row["check_ms"] > 0 and row["first_check_ms"] > 0
        assert set(row["preparation_ms"]) == {"table", "liveness", "known", "plan"} and all(
            ms > 0 for ms in row["preparation_ms"].values())


def test_the_speed_benchmark_checks_the_kernels_asked_for_in_this_process_and_a_new_one_and_names_the_examples_it_knows(tmp_path, capsys):
    speed = _speed_benchmark()
    out = tmp_path / "speed.json"
    assert speed.main(["--repeat", "1", "--cold", "1", "--kernels", "gemm_cdna:gemm_cdna", "--json", str(out)]) == 0
    import json

    report = json.loads(out.read_text())
    assert set(report) == {"machine_ms", "gemm_cdna"} and report["gemm_cdna"]["verdict"] == "proved"
    assert report["gemm_cdna"]["cold_check_ms"] > 0  # a first check in a new interpreter
    with pytest.raises(SystemExit) as exit_:
        speed.main(["--kernels", "gemm_cuda:gemm"])
    assert exit_.value.code == 2
    assert "gemm_cdna" in capsys.readouterr().err  # the examples it knows


def test_the_speed_benchmark_prepares_a_kernel_part_by_part_as_a_first_check_does(monkeypatch):
    speed = _speed_benchmark()
    from argus.dsl.check import Preparation

    ir = speed.compiled("gemm", "gemm")
    prep = Preparation(ir.op, ir.locations)
    names = []
    for name, part in speed.preparation_steps(prep):  # each part runs before the next is asked for
        names.append(name)
        part()
    assert names == ["table", "liveness", "known", "plan"]
    assert prep.steps(prep.kernel.body.block) is prep.steps(prep.kernel.body.block)  # planned once, kept
    speed.counted_part("gemm", "gemm", 1, "plan")  # (outside callgrind the counted call simply runs)
    speed.counted_cold_check("gemm", "gemm")
    monkeypatch.setattr(speed.shutil, "which", lambda _: None)
    for counting in (lambda: speed.instructions_per_part("gemm", "gemm", 1),
                     lambda: speed.instructions_of_cold_check("gemm", "gemm")):
        with pytest.raises(RuntimeError, match="needs valgrind"):
            counting()


def test_the_speed_benchmark_compares_this_checker_with_another_tree_round_by_round(tmp_path, capsys):
    speed = _speed_benchmark()
    out = tmp_path / "against.json"
    assert speed.main(["--against", str(ROOT), "--rounds", "2", "--repeat", "1", "--parts",
                       "--kernels", "gemm_cdna:gemm_cdna", "--json", str(out)]) == 0
    import json

    report = json.loads(out.read_text())
    assert report["against"] == str(ROOT) and len(report["rounds"]) == 2
    for pair in report["rounds"]:  # both trees timed in each round, each in its own interpreter
        for side in ("this", "against"):
            row = pair[side]["gemm_cdna"]
            assert row["verdict"] == "proved" and row["check_ms"] > 0 and set(row["preparation_ms"]) >= {"plan"}
    printed = capsys.readouterr().out
    assert "round 2:" in printed and "median ratio" in printed and "first check" in printed
    revision = speed.tree_path("HEAD")  # a revision: its packages, extracted
    assert revision != ROOT and list(revision.glob("packages/*/src/argus"))
    with pytest.raises(SystemExit) as exit_:
        speed.main(["--against", str(tmp_path)])
    assert exit_.value.code == 2
    assert "neither a checkout of Argus" in capsys.readouterr().err


def test_the_speed_benchmark_takes_its_figures_in_several_interpreters_and_their_median(tmp_path, capsys):
    speed = _speed_benchmark()
    out = tmp_path / "interpreters.json"
    assert speed.main(["--interpreters", "3", "--repeat", "1", "--kernels", "gemm_cdna:gemm_cdna",
                       "--json", str(out)]) == 0
    import json

    report = json.loads(out.read_text())
    runs, summary = report["interpreters"], report["summary"]["gemm_cdna"]
    assert len(runs) == 3 and all(run["gemm_cdna"]["verdict"] == "proved" for run in runs)
    for key in ("check_ms", "first_check_ms"):  # the middle one of each interpreter's figure, and the range
        values = sorted(run["gemm_cdna"][key] for run in runs)
        assert summary[key] == {"median": values[1], "least": values[0], "most": values[2]}
    assert "median over 3 interpreters" in capsys.readouterr().out
    for wrong, named in ((["--interpreters", "2", "--against", "HEAD"], "give one of them"),
                         (["--interpreters", "-1"], "--interpreters"), (["--repeat", "0"], "--repeat")):
        with pytest.raises(SystemExit) as exit_:
            speed.main(wrong)
        assert exit_.value.code == 2
        assert named in capsys.readouterr().err
