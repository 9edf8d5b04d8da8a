"""Code for the language's asynchronous copies (`cp_async`, `cp_async_commit`, `cp_async_wait`
of `language`): ``cp.async`` from global to shared memory, in commit groups.

A 16-byte copy bypasses L1 (``.cg``: the data is staged once, in shared memory); 4- and
8-byte copies go through it (``.ca``, the only form they have). The thread's view of the
copied bytes is settled by its wait; other threads see them after a barrier that follows.
"""

from __future__ import annotations

from .errors import CodegenError
from .language import CpAsyncAtOp, CpAsyncCommitOp, CpAsyncWaitOp
from .translate import RULES, Translator, element_type, inline_asm


def _cp_async(t: Translator, op: CpAsyncAtOp) -> None:
    if not t.arch.has("cp.async"):
        raise CodegenError(f"cp_async needs nvptx:sm_80 or later; nvptx:{t.arch.name} does not have it", t.where(op))
    nbytes = op.tile.type.dtype.nbytes  # type: ignore[attr-defined]
    shared = t.memory(op.tile, op)
    base = t.let(f"ptrtoint ptr addrspace(3) {shared.pointer} to i32")
    offset = t.let(f"mul i32 {t.value(op.tile_offset)}, {nbytes}")
    destination = t.let(f"add i32 {base}, {offset}")
    tensor = t.memory(op.tensor, op)
    pointer = t.element_pointer(tensor, element_type(op.tensor.type.dtype, t.where(op)),  # type: ignore[attr-defined]
                                t.value(op.tensor_offset))
    source = t.let(f"ptrtoint ptr addrspace(1) {pointer} to i64")
    cache = "cg" if nbytes == 16 else "ca"
    inline_asm(t, f"cp.async.{cache}.shared.global [$0], [$1], {nbytes};", [("i32", destination), ("i64", source)])


def _commit(t: Translator, op: CpAsyncCommitOp) -> None:
    inline_asm(t, "cp.async.commit_group;")


def _wait(t: Translator, op: CpAsyncWaitOp) -> None:
    inline_asm(t, f"cp.async.wait_group {op.pending.data};")


RULES.update({CpAsyncAtOp: _cp_async, CpAsyncCommitOp: _commit, CpAsyncWaitOp: _wait})
