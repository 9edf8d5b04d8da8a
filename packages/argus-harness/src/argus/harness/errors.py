"""The exceptions of `argus.harness`: one class per kind of problem, each saying where and what is
accepted, so that a person (or a model reading its own feedback) can act on the message alone."""

from __future__ import annotations

from argus.dsl.errors import ArgusError, SourceLocation


class HarnessError(ArgusError):
    """Base class of the harness's errors (an `ArgusError`, so ``argus`` prints it as one line)."""


class TaskError(HarnessError):
    """A task file or task option that cannot be used."""


class CandidateError(HarnessError):
    """A candidate kernel source outside the accepted format: the harness refuses it before any
    of it runs."""


class PlannerError(HarnessError):
    """A planner that cannot be found, configured or understood."""


class LLMError(HarnessError):
    """An endpoint that failed after every retry, or a reply that cannot be read."""


class StoreError(HarnessError):
    """A run directory that cannot be read back or does not belong to this task."""


__all__ = ["CandidateError", "HarnessError", "LLMError", "PlannerError", "SourceLocation", "StoreError", "TaskError"]
