"""Command output to a reader that may stop reading, as in ``argus-layout eval ... | head -1``.

A reader that goes away is not the command failing: the command finishes its work, its exit
status stays the one it documents, the rest of its output is dropped, and no traceback (nor
Python's complaint about unflushed output at exit) appears.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Callable, TextIO, cast

__all__ = ["Output", "flush_quietly"]


class Output(io.TextIOBase):
    """A text stream that stops writing, quietly, once its reader has closed the pipe."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:  # type: ignore[override]
        if not self.closed_by_reader:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self.closed_by_reader = True
        _discard(self.stream)


def flush_quietly(*streams: TextIO) -> None:
    """Flush what is still buffered (e.g. argparse's help text); a gone reader is not an error."""
    for stream in streams:
        try:
            stream.flush()
        except BrokenPipeError:
            _discard(stream)
        except (OSError, ValueError):
            pass


def _discard(stream: TextIO) -> None:
    """Point the stream's file descriptor at the null device, so that what is still buffered,
    flushed again when Python exits, goes nowhere instead of failing once more."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return  # not a real file (a test's capture): nothing is flushed at exit
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, fd)
    finally:
        os.close(null)



def run_with_output(run: Callable[[TextIO, TextIO], int]) -> int:
    """Run a command's body on standard output and error wrapped as `Output`, and return its
    status: a reader that stops reading (``| head -1``) loses the rest of the output, never the
    status."""
    out, err = Output(sys.stdout), Output(sys.stderr)
    try:
        return run(cast(TextIO, out), cast(TextIO, err))
    finally:
        out.flush()
        err.flush()
        flush_quietly(sys.stdout, sys.stderr)
