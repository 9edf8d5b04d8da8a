"""The run store and resuming: a line cut short by a kill is dropped, a damaged line before
finished rounds is an error, a record whose newline was lost keeps the next one readable,
a resumed run rewrites best.py from its records, the round under way is known until its record
is written, and a directory that cannot be made is a store error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from argus.harness import Optimizer, RunStore, StoreError, load_task
from harness_testing import DATA


def _line(n: int, **more: object) -> str:
    return json.dumps({"round": n, "reward": {"total": 0.0}, **more}) + "\n"


def test_only_a_cut_last_line_is_dropped(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.rounds_path.write_text(_line(0) + _line(1) + '{"round": 2, "te')
    assert [r["round"] for r in store.rounds()] == [0, 1]
    assert store.rounds_path.read_text() == _line(0) + _line(1)
    store.rounds_path.write_bytes((_line(0) + _line(1)).encode() + '{"text": "µ'.encode()[:-1])  # a cut character
    assert [r["round"] for r in store.rounds()] == [0, 1]


def test_a_damaged_line_before_finished_rounds_is_an_error(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.rounds_path.write_text(_line(0) + "{not json\n" + _line(1) + _line(2))
    with pytest.raises(StoreError, match=r"rounds.jsonl:2: a damaged round record"):
        store.rounds()
    assert len(store.rounds_path.read_text().splitlines()) == 4  # nothing was cut away


def test_a_record_whose_newline_was_lost_keeps_the_next_readable(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.rounds_path.write_text(_line(0) + _line(1).rstrip("\n"))
    assert [r["round"] for r in store.rounds()] == [0, 1]
    store.append({"round": 2, "reward": {"total": 0.0}})
    assert [r["round"] for r in store.rounds()] == [0, 1, 2]


class _Idle:
    """A planner for a run whose rounds are all on disk: nothing is asked of it but restore."""

    name = "idle"

    def restore(self, records: list[dict]) -> None:
        self.restored = [r["round"] for r in records]


def test_a_resumed_run_rewrites_best_py_from_its_records(tmp_path: Path) -> None:
    task = load_task(str(DATA / "gemm_task.py"))
    store = RunStore(tmp_path)
    store.rounds_path.write_text(_line(0, text="baseline", kept=True, validation={"validated": True})
                                 + _line(1, text="faster", kept=True, validation={"validated": True}))
    store.save_best("baseline")  # killed after round 1's record, before best.py was written
    planner = _Idle()
    records = Optimizer(task, planner, None, store, 1, progress=lambda line: None).run()  # type: ignore[arg-type]
    assert len(records) == 2 and planner.restored == [1]
    assert (tmp_path / "best.py").read_text() == "faster"


def test_the_round_under_way_is_known_until_its_record_is_written(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    store.rounds_path.write_text(_line(0))
    assert store.unfinished(1) is None  # nothing was under way
    store.begin(1)
    assert store.unfinished(1) == 1  # the run stopped in round 1, which has no record
    store.append({"round": 1, "reward": {"total": 0.0}})
    assert store.unfinished(len(store.rounds())) is None  # the mark of a round on disk means nothing
    store.begin(2)
    store.forget()  # stopped on purpose: round 2 is done again
    assert store.unfinished(2) is None
    store.current_path.write_text('["not", "a", "mark"]')
    assert store.unfinished(2) is None


def test_a_run_directory_that_cannot_be_made_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("a file where the run directory would be")
    with pytest.raises(StoreError, match=r"cannot make the run directory .*taken"):
        RunStore(tmp_path / "taken").open({"task": "t", "planner": "search", "target": "interp"})
