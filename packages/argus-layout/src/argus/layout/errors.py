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
        shown, at = excerpt(text, column)
        pointer = " " * at + "^"
        super().__init__("parse", f"{reason} at column {column + 1}\n  {shown}\n  {pointer}")
        self.reason = reason
        self.operands = (text,)


def _show(value: Any) -> str:
    """An operand in a message: shortened, and never an error of its own (an operand too large
    or too deep to print is the reason the message is being written)."""
    try:
        text = str(value)
    except (ValueError, RecursionError):
        return f"<{type(value).__name__} too large to print>"
    return text if len(text) <= 200 else text[:197] + "..."


def excerpt(text: str, column: int, width: int = 80) -> tuple[str, int]:
    """The part of a long text around `column` (elided with "..."), and the column within it."""
    if len(text) <= width:
        return text, column
    start = max(0, min(column - width // 2, len(text) - width))
    shown = text[start : start + width]
    if start > 0:
        shown, column = "..." + shown, column + 3
    if start + width < len(text):
        shown += "..."
    return shown, column - start
