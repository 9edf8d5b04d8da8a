"""The one exception family of `argus.layout`.

Every refusal names the operation, the operands and the condition that failed, so a user
sees *why* a layout does not exist instead of receiving a wrong one.
"""

from __future__ import annotations

from typing import Any


class LayoutError(ValueError):
    """A layout operation has no mathematical answer, or its input is malformed.

    `operation` names the function that refused (``"composition"``), `operands` holds the
    inputs as they were given, and `reason` states the condition that failed.
    """

    def __init__(self, operation: str, reason: str, *operands: Any) -> None:
        self.operation = operation
        self.reason = reason
        self.operands = operands
        shown = ", ".join(_show(o) for o in operands)
        call = f"{operation}({shown})" if operands else operation
        super().__init__(f"{call}: {reason}")


class LayoutParseError(LayoutError):
    """Malformed CuTe notation; `column` is the 0-based position of the offending character."""

    def __init__(self, text: str, column: int, reason: str) -> None:
        self.text = text
        self.column = column
        pointer = " " * column + "^"
        super().__init__("parse", f"{reason} at column {column + 1}\n  {text}\n  {pointer}")
        self.reason = reason
        self.operands = (text,)


def _show(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 200 else text[:197] + "..."
