"""The exceptions of `argus.kb`: one hierarchy, every message saying where and what is accepted."""

from __future__ import annotations

from pathlib import PurePath


class KbError(Exception):
    """Base class of every error the knowledge base reports."""


class EntryError(KbError):
    """An entry file that breaks the front-matter syntax or the schema, at ``file:line``."""

    def __init__(self, path: str | PurePath, line: int, message: str) -> None:
        self.path = str(path)
        self.line = line
        self.message = message
        super().__init__(f"{self.path}:{line}: {message}")


class PackError(KbError):
    """A pack that cannot be used: duplicated, disabled, failing to import, or not a pack."""


class UnknownNameError(KbError):
    """A name (entry id, target, family, kind) the knowledge base does not know."""
