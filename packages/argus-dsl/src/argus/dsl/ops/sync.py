"""Barriers: ``syncthreads()``, every thread of the block meets at the same op.

The interpreter's scheduler makes the threads that reach it wait for the rest of the block
(`argus.dsl.machine.barriers.BlockBarrier`: threads at different barriers, or a block that
cannot all get there, is a fault); the checker ends a barrier interval there
(`argus.dsl.check.tags.sync_rule`) and tag liveness always keeps it (it orders shared-memory
accesses, so it changes which of them race); each backend emits its own block barrier
(`Translator.barrier`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from ..check import tag_liveness
from ..check.tags import sync_rule
from ..ir import dialect as D
from ..ir.registry import builtin, define
from ..machine.barriers import BlockBarrier

if TYPE_CHECKING:
    from ..llvm import Translator


@builtin("syncthreads")
def _build_syncthreads(fe: Any, node: ast.Call, args: list[Any]) -> None:
    if args:
        raise fe.type_error(node, "syncthreads() takes no arguments")
    fe.emit(D.SyncThreadsOp())


def _translate_sync(t: Translator, op: D.SyncThreadsOp) -> None:
    t.barrier(op)


define(D.SyncThreadsOp, wait=BlockBarrier(), analyze=sync_rule, liveness=tag_liveness.always, translate=_translate_sync)
