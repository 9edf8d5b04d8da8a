"""Control flow: runtime loops (`scf.for`), branches (`scf.if`) and the yield that ends their
regions.

The front end builds them from ``for`` statements over a runtime range and ``if`` statements
on a runtime condition (`argus.dsl.frontend.statements`); they carry no values (a variable
assigned inside is a `var`). Their regions are walked by each consumer itself: the scheduler
(`argus.dsl.machine.schedule`) runs a loop's iterations and a branch's sides under the mask of
the threads that take them, the checker runs or summarizes them (`argus.dsl.check.control`),
tag liveness iterates a loop's body to its fixpoint, and the LLVM translation emits the basic
blocks below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.dialects import scf

from ..check import tag_liveness
from ..check.control import for_rule, if_rule
from ..check.rules import nothing_rule
from ..ir.registry import define

if TYPE_CHECKING:
    from ..llvm import Translator


# ---- LLVM ---------------------------------------------------------------------------------

def _translate_if(t: Translator, op: scf.IfOp) -> None:
    then, other, join = t.label("then"), t.label("else"), t.label("endif")
    has_else = bool(op.false_region.blocks) and any(not isinstance(o, scf.YieldOp) for o in op.false_region.block.ops)
    t.emit(f"br i1 {t.value(op.cond)}, label %{then}, label %{other if has_else else join}")
    t.start(then)
    t.translate_block(op.true_region.block)
    t.emit(f"br label %{join}")
    if has_else:
        t.start(other)
        t.translate_block(op.false_region.block)
        t.emit(f"br label %{join}")
    t.start(join)


def _translate_for(t: Translator, op: scf.ForOp) -> None:
    """``for (i = lb; i < ub; i += step)``, as the interpreter runs it (a signed comparison)."""
    if op.results:
        raise t.unsupported(op, "a loop carrying values (scf.for with results)")
    lb, ub, step = t.value(op.lb), t.value(op.ub), t.value(op.step)
    before = t.current_label
    head, body, done = t.label("loop"), t.label("body"), t.label("done")
    t.emit(f"br label %{head}")
    t.start(head)
    iv = t.fresh("i")
    t.names[op.body.block.args[0]] = iv
    phi = t.reserve_line()  # filled in once the latch block is known
    more = t.let(f"icmp slt i32 {iv}, {ub}")
    t.emit(f"br i1 {more}, label %{body}, label %{done}")
    t.start(body)
    t.translate_block(op.body.block)
    latch = t.current_label
    nxt = t.fresh("i")
    t.emit(f"{nxt} = add i32 {iv}, {step}")
    t.emit(f"br label %{head}")
    phi(f"{iv} = phi i32 [ {lb}, %{before} ], [ {nxt}, %{latch} ]")
    t.start(done)


def _translate_yield(t: Translator, op: scf.YieldOp) -> None:
    if op.operands:
        raise t.unsupported(op, "a region yielding values")


# ---- the ops ------------------------------------------------------------------------------

define(scf.ForOp, walked=True, analyze=for_rule, liveness=tag_liveness.loop, translate=_translate_for)
define(scf.IfOp, walked=True, analyze=if_rule, liveness=tag_liveness.branch, translate=_translate_if)
define(scf.YieldOp, walked=True, analyze=nothing_rule, liveness=tag_liveness.always, translate=_translate_yield)
