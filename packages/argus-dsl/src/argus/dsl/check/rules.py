"""The rule table: which rule moves tags for each kind of op, and how a backend adds its own.

A rule is ``rule(analysis, op, mask)``: the `TagAnalysis` walking the kernel, the op, and the
mask of threads (points) that run it. Every op family declares its rule with the rest of its
meaning (`argus.dsl.ir.registry.define(analyze=...)`), which puts it in `RULES`. An op without a
rule computes new data (`computed_rule`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.ir import Operation

if TYPE_CHECKING:
    from .analysis import TagAnalysis

Rule = Callable[["TagAnalysis", Any, np.ndarray], None]

RULES: dict[type, Rule] = {}
"""Each op kind's rule (read through this module, `rules.RULES`, so that a test may swap it)."""


def rule_of(op: Operation) -> Rule:
    """The rule of an op: its kind's, or `computed_rule`."""
    return RULES.get(type(op)) or computed_rule


def computed_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """Results are new data: ⊤ unless every input is ⊥."""
    a.computed(op)


def nothing_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """An op that moves no tags (a loop's yield)."""


def float_op_rule(a: TagAnalysis, op: Operation, mask: np.ndarray) -> None:
    """A float op: computed data."""
    a.computed(op)
