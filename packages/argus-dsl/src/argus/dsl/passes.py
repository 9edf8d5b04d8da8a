"""Target-independent passes over the argus dialect.

The front-end already folds everything known at compile time (constexpr values, layouts,
``static_range`` bodies, which it unrolls). What remains is cleaning the IR it builds:

- canonicalization (constant folding and MLIR's algebraic rewrites);
- promotion of per-thread variables: a name assigned inside a runtime ``if`` or ``for`` is a
  variable (``argus.var``) so that its value can flow across the region's boundary, but most
  of its reads follow a write in the same block and can use the written value directly, and a
  variable nobody reads is dead;
- common-subexpression elimination of pure ops, so each thread index, constant and repeated
  index computation appears once (promotion first: a load hides its equal value from it).

Every later consumer (the tag checker, the interpreter, the backends) walks fewer ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.ir import Block, SSAValue
from xdsl.passes import ModulePass
from xdsl.transforms.canonicalize import CanonicalizePass
from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination

from . import dialect as D
from .dialect import context


@dataclass(frozen=True)
class PromoteVariables(ModulePass):
    """Forward each variable's last write in a block to the reads after it in that block,
    reuse one read for the reads after it, then drop writes nobody can read and variables
    nobody reads."""

    name = "argus-promote-variables"

    def apply(self, ctx: Context, op: builtin.ModuleOp) -> None:
        for inner in list(op.walk()):
            for region in inner.regions:
                for block in region.blocks:
                    _forward(block)
        _drop_dead(op)


def _forward(block: Block) -> None:
    known: dict[SSAValue, SSAValue] = {}  # variable -> its value at this point of the block
    pending: dict[SSAValue, D.VarStoreOp] = {}  # variable -> its last write, not yet read
    for op in list(block.ops):
        if isinstance(op, D.VarLoadOp):
            var = op.var
            pending.pop(var, None)
            value = known.get(var)
            if value is None:
                known[var] = op.result
            else:
                op.result.replace_all_uses_with(value)
                block.erase_op(op)
        elif isinstance(op, D.VarStoreOp):
            var = op.var
            dead = pending.get(var)
            if dead is not None:  # overwritten in this block before anything read it
                block.erase_op(dead)
            known[var] = op.value
            pending[var] = op
        elif op.regions:
            # a nested region may read any variable and write those it stores to
            pending.clear()
            for nested in op.walk():
                if isinstance(nested, D.VarStoreOp):
                    known.pop(nested.var, None)


def _drop_dead(module: builtin.ModuleOp) -> None:
    for var in [o for o in module.walk() if isinstance(o, D.VarOp)]:
        users = list(var.result.uses)
        if any(isinstance(use.operation, D.VarLoadOp) for use in users):
            continue
        for use in users:
            use.operation.detach()
            use.operation.erase()
        var.detach()
        var.erase()


PIPELINE: tuple[ModulePass, ...] = (PromoteVariables(), CanonicalizePass(),
                                    CommonSubexpressionElimination())


def canonicalize(module: builtin.ModuleOp) -> builtin.ModuleOp:
    """Run the pipeline in place and return the module."""
    ctx = context()
    for p in PIPELINE:
        p.apply(ctx, module)
    return module
