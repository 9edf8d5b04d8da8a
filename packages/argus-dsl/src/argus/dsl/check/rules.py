"""The rule table: which rule moves tags for each kind of op, and how a backend adds its own.

A rule is ``rule(analysis, op, mask)``: the `TagAnalysis` walking the kernel, the op, and the
mask of threads (points) that run it. The built-in rules are put in by `analysis`; a backend's
intrinsics come through `register_rule` (`argus.dsl.intrinsics.define(analyze=...)`). An op
without a rule computes new data (`computed_rule`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.ir import Operation

from . import tag_liveness

if TYPE_CHECKING:
    from .analysis import TagAnalysis

Rule = Callable[["TagAnalysis", Any, np.ndarray], None]

RULES: dict[type, Rule] = {}
"""Each op kind's rule (read through this module, `rules.RULES`, so that a test may swap it)."""


def register_rule(op_type: type, rule: Rule) -> None:
    """Teach the analysis an op of another dialect (a backend's intrinsic): `rule(analysis, op,
    mask)` sets the op's result values (`analysis.values`) and byte tags (`analysis.tags`) and
    moves tags through memories as the op does. Without a rule, an op's results are computed
    data (⊤ unless every input is ⊥)."""
    if op_type in RULES:
        raise ValueError(f"{op_type.__name__} already has a tag rule")
    RULES[op_type] = rule
    tag_liveness.keep_always(op_type)


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
