"""The exceptions of `argus.dsl`: one class per kind of user error, each with its source location.

A message always says where (``file:line:col``), what was wrong, and what is accepted, so a
person or a language model can fix the kernel from the message alone.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SourceLocation:
    """A position in a kernel's source file (1-based line and column)."""

    file: str
    line: int
    col: int

    @classmethod
    def of(cls, node: ast.AST, file: str, line_offset: int = 0) -> SourceLocation:
        return cls(file, getattr(node, "lineno", 0) + line_offset, getattr(node, "col_offset", -1) + 1)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class ArgusError(Exception):
    """Base class of every error Argus reports about a user's kernel."""

    def __init__(self, message: str, location: SourceLocation | None = None, construct: str = "") -> None:
        self.message = message
        self.location = location
        self.construct = construct
        where = f"{location}: " if location else ""
        shown = f"\n    {construct}" if construct else ""
        super().__init__(f"{where}{message}{shown}")


class ArgusSyntaxError(ArgusError):
    """A Python construct outside the Argus language."""


class ArgusTypeError(ArgusError):
    """A construct of the language used with the wrong types, shapes, ranks or annotations."""


class ArgusLaunchError(ArgusError):
    """A launch whose arguments do not match the kernel's parameters."""


class CodegenError(ArgusError):
    """A kernel (or part of one) a backend cannot translate for the chosen target."""


class KernelFault(ArgusError):
    """The interpreter caught the kernel doing something undefined (a race, an out-of-bounds or
    uninitialized access, a barrier not reached by every thread).

    `kind` names the fault; `details` holds the block, threads, memory, index and anything
    else that pins it down.
    """

    def __init__(self, kind: str, message: str, location: SourceLocation | None, details: dict[str, object]) -> None:
        self.kind = kind
        self.details = details
        super().__init__(f"{kind}: {message}", location)


class ArgusVerificationWarning(UserWarning):
    """A kernel whose tag assertions could be neither proved nor refuted (the reason says why)."""


class VerificationError(ArgusError):
    """A kernel the static checker cannot take as written: an assertion on data no tag function
    reaches, a tag function using operations other than integer arithmetic, an address that
    depends on data read from memory."""


class TagAssertionError(ArgusError):
    """A tag assertion that does not hold for some launch: `result` holds the counterexamples,
    each replayed on the interpreter with shadow tags."""

    def __init__(self, result: Any) -> None:
        self.result = result
        super().__init__(result.text())
