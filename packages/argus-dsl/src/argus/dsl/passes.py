"""Target-independent passes over the argus dialect.

The front-end already folds everything known at compile time (constexpr values, layouts,
``static_range`` bodies, which it unrolls). What remains is cleaning the IR it builds:
canonicalization (constant folding and MLIR's algebraic rewrites) and common-subexpression
elimination of pure ops, so each thread index, constant and repeated index computation
appears once.
"""

from __future__ import annotations

from xdsl.dialects import builtin
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from .dialect import context

PIPELINE = (CanonicalizePass(), CommonSubexpressionElimination())


def canonicalize(module: builtin.ModuleOp) -> builtin.ModuleOp:
    """Run the pipeline in place and return the module."""
    ctx = context()
    for p in PIPELINE:
        p.apply(ctx, module)
    return module
