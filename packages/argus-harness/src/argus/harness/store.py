"""The run store: one directory per run, one JSON line per finished round.

    run.json       the task, planner and settings the run was started with
    rounds.jsonl   per round: proposals, plan, diff, validation, profile, reward, tokens, ICRL
    current.json   the round under way (see `begin`)
    llm.jsonl      every model exchange (replayed on resume instead of asked again)
    best.py        the fastest validated kernel so far
    probe/         the worker's folder of the task's probe
    candidates/    one worker's folder per round: its request (which holds the candidate's text)
                   and the end of the worker's log. What the worker writes (the candidate's file,
                   its own home, tmp and compile cache) is in a tmpfs of its own where it has a
                   mount namespace, gone with it, else in this folder. No result file: the
                   verdict travels on a pipe.

A round's line is written and synced to disk in one piece after the round is over, so a run
killed at any moment (even with SIGKILL) has every finished round on disk; a line cut short by
the kill is dropped when the run is taken up again. The round the run died in is then recorded
as failed, not played again: what killed the run may be that round's candidate or reply, which
would kill it again on every resume. A deliberate stop (an interrupt, SIGTERM) withdraws the
mark of the round under way, and that round is done again.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .errors import StoreError


class RunStore:
    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory).absolute()  # the same folder wherever the process stands later
        directory = self.directory
        self.rounds_path = directory / "rounds.jsonl"
        self.meta_path = directory / "run.json"
        self.current_path = directory / "current.json"

    def open(self, meta: dict[str, Any]) -> dict[str, Any]:
        """Start the run, or check that the directory holds this same run; returns its metadata."""
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"cannot make the run directory {self.directory}: {err}") from None
        if self.meta_path.is_file():
            try:
                stored = json.loads(self.meta_path.read_text())
            except json.JSONDecodeError as err:
                raise StoreError(f"{self.meta_path} is damaged ({err}); use another --out") from None
            for key in ("task", "planner", "target"):
                if stored.get(key) != meta.get(key):
                    raise StoreError(f"{self.directory} holds a run of {key} {stored.get(key)!r}, not {meta.get(key)!r};"
                                     " use another --out to start a new run")
            return dict(stored)
        self._write(self.meta_path, json.dumps(meta, indent=2))
        return meta

    def rounds(self) -> list[dict[str, Any]]:
        """The finished rounds, in order. Only the last line can be cut short (by a kill while
        it was written): it is removed, and that round is done again. A damaged line before
        the last is an error, never a reason to drop the rounds after it."""
        if not self.rounds_path.is_file():
            return []
        raw = self.rounds_path.read_bytes()
        lines = raw.split(b"\n")
        records: list[dict[str, Any]] = []
        good = 0
        for number, line in enumerate(lines, 1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except (json.JSONDecodeError, UnicodeDecodeError) as err:
                    if any(rest.strip() for rest in lines[number:]):
                        raise StoreError(f"{self.rounds_path}:{number}: a damaged round record ({err}) with "
                                         "finished rounds after it; repair or remove the line") from None
                    break
            good += len(line) + (number < len(lines))
        if good < len(raw):
            with open(self.rounds_path, "r+b") as f:
                f.truncate(good)
        elif raw and not raw.endswith(b"\n"):  # the last record is whole but its newline was not written
            with open(self.rounds_path, "ab") as f:
                f.write(b"\n")
        numbers = [r.get("round") if isinstance(r, dict) else None for r in records]
        if numbers != list(range(len(records))):
            raise StoreError(f"{self.rounds_path} holds rounds {numbers}; expected 0, 1, 2, ... in order")
        return records

    def append(self, record: dict[str, Any]) -> None:
        """Add one finished round, durably."""
        line = json.dumps(record, default=_jsonable) + "\n"
        try:
            with open(self.rounds_path, "a") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
        except OSError as err:
            raise StoreError(f"cannot record round {record.get('round')} in {self.rounds_path}: {err}") from None

    def begin(self, number: int) -> None:
        """Round `number` is under way (until its record is appended)."""
        self._write(self.current_path, json.dumps({"round": number}))

    def unfinished(self, finished: int) -> int | None:
        """The round that was under way when the run stopped, when it is the one after the
        `finished` rounds on disk (it never got its record); else None."""
        try:
            marked = json.loads(self.current_path.read_text())
        except (OSError, ValueError):
            return None
        number = marked.get("round") if isinstance(marked, dict) else None
        return number if number == finished else None

    def forget(self) -> None:
        """The round under way was stopped on purpose: taken up again, it is done again."""
        self.current_path.unlink(missing_ok=True)

    def save_best(self, text: str) -> None:
        self._write(self.directory / "best.py", text)

    def _write(self, path: Path, text: str) -> None:
        part = path.with_name(path.name + ".part")
        try:
            part.write_text(text)
            os.replace(part, path)
        except OSError as err:
            raise StoreError(f"cannot write {path}: {err}") from None


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)
