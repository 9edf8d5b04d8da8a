"""Tags and assumptions: what a kernel claims and assumes, which only checks read.

- A tag function (``tag(t, lambda i, j: ...)``, `D.TagOp`: its body is the lambda's, ending in the
  `D.YieldTagOp` of an element's tag components) describes the data of a tile or tensor: it
  gives every element its tag.
- A tag assertion (``assert tag(a[...]) == tag(b[...])``, `D.TagAssertOp`) states which data an
  element holds.
- ``reset_tags(t)`` (`D.ResetTagsOp`) forgets the tags of a shared tile before its memory is reused.
- ``assume(cond)`` (`D.AssumeOp`) states what every launch satisfies; the checker reasons under it.

Tag functions, assertions and resets do nothing at run time: the static checker
(`argus.dsl.check.tags`) and the shadow-tag interpreter (below) read them, and the LLVM
translation emits nothing for them. The shadow interpreter evaluates a tag function's body
itself (`ShadowInterpreter.evaluate_tag_function`: a load past a tensor's end reads its tags
too), as the checker does (`TagAnalysis.evaluate_tag_function`). An assumption is checked by
the interpreter for every thread that reaches it, and becomes ``llvm.assume`` on the GPU. The
front end builds tag functions and assertions itself (`attach_tag`, the ``assert`` statement:
they are statements, not calls); ``reset_tags`` and ``assume`` are builtins, built here.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.assertions import check
from argus.verify.tags import resize
from xdsl.ir import Operation

from ..check import tag_liveness
from ..check.tags import assert_rule, assert_written_rule, assume_rule, reset_rule, store_tags_rule, tag_rule
from ..dtypes import boolean
from ..frontend.values import TensorRef, TileRef, Value
from ..ir import dialect as D
from ..ir.registry import builtin, define
from ..machine.interpreter import Frame, Interpreter, TensorValue, TileValue, scalars, value_of
from ..machine.shadow import ShadowInterpreter, buffer_key, row_major

if TYPE_CHECKING:
    from ..llvm import Translator


# ---- the front end ------------------------------------------------------------------------

@builtin("assume")
def _build_assume(fe: Any, node: ast.Call, args: list[Any]) -> None:
    if len(args) != 1 or not isinstance(args[0], Value) or args[0].dtype is not boolean:
        raise fe.type_error(node, "assume(condition) takes one runtime condition, e.g. assume(n % 64 == 0)")
    fe.emit(D.AssumeOp.create(operands=[args[0].ssa]))


@builtin("assert_written")
def _build_assert_written(fe: Any, node: ast.Call, args: list[Any]) -> None:
    if len(args) != 1 or not isinstance(args[0], TensorRef):
        given = (f"{len(args)} arguments" if len(args) != 1
                 else "a tile (a block's own memory; the claim is about a global tensor the launch writes)"
                 if isinstance(args[0], TileRef)
                 else f"a {args[0].dtype} value (an element, not the tensor)" if isinstance(args[0], Value)
                 else f"{type(args[0]).__name__}")
        raise fe.type_error(node, f"assert_written(t) takes one tensor, e.g. assert_written(out); got {given}")
    fe.emit(D.AssertWrittenOp.create(operands=[args[0].ssa]))


@builtin("reset_tags")
def _build_reset_tags(fe: Any, node: ast.Call, args: list[Any]) -> None:
    if len(args) != 1 or not isinstance(args[0], TileRef) or args[0].type.space.data != "shared":
        raise fe.type_error(node, "reset_tags(t) takes one shared tile")
    fe.emit(D.ResetTagsOp.create(operands=[args[0].ssa]))


# ---- the interpreter ----------------------------------------------------------------------

def _interpret_assume(interp: Interpreter, op: D.AssumeOp, frame: Frame, mask: np.ndarray) -> None:
    broken = mask & ~scalars(frame, op.cond).astype(bool)
    if broken.any():
        thread = int(np.flatnonzero(broken)[0])
        raise interp.fault("assumption", f"this launch breaks the kernel's assumption for thread {thread}; every "
                           "launch must satisfy what the kernel assumes", op, frame, thread=thread)


def _compile_time_only(interp: Interpreter, op: Operation, frame: Frame, mask: np.ndarray) -> None:
    """Tag functions, assertions and resets are read by the checks and do nothing at run time."""


# ---- shadow tags --------------------------------------------------------------------------

def _shadow_assert_written(s: ShadowInterpreter, op: D.AssertWrittenOp, frame: Frame, mask: np.ndarray) -> None:
    """The launch must write every element of the tensor: what it left unwritten is read off its
    memory's write sites when it ends (`ShadowInterpreter.unwritten`)."""
    tensor = value_of(frame, op.target)
    s.written_claims.setdefault(buffer_key(tensor), (op, tensor))


def _shadow_reset(s: ShadowInterpreter, op: D.ResetTagsOp, frame: Frame, mask: np.ndarray) -> None:
    s.memory_tags(value_of(frame, op.target), frame).reset()


def _shadow_tag(s: ShadowInterpreter, op: D.TagOp, frame: Frame, mask: np.ndarray) -> None:
    target = value_of(frame, op.target)
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    if isinstance(target, TensorValue):
        s.tag_functions[buffer_key(target)] = (op, target)
    coords = s.coordinates(target)
    per_thread = isinstance(target, TileValue) and target.memory.space == "local"
    rows = threads if per_thread else threads[:1]  # shared data and tensors: one description, the first thread's
    components = s.evaluate_tag_function(op, frame, coords, rows)  # list of (rows, elements)
    elements = coords[0].size if coords else 1
    nbytes = target.dtype.nbytes
    stacked = np.stack(components, axis=-1) if components else np.zeros((rows.size, elements, 0), np.int64)
    idx = s.element_bytes(target, rows)
    ids = s.table.rows_to_ids(stacked[:rows.size].reshape(-1, stacked.shape[-1]), nbytes).reshape(rows.size, -1, nbytes)
    s.table.note_format(ids, target.dtype.name)
    memory = s.memory_tags(target, frame)
    if memory.per_thread:
        memory.write(idx.reshape(rows.size, -1), ids.reshape(rows.size, -1), rows, s.site(op))
    else:  # a tag function describes data: nothing is written, nothing races
        memory.relabel(idx.reshape(-1), ids.reshape(-1), s.site(op))


def _shadow_store_tags(s: ShadowInterpreter, op: D.StoreTagsOp, frame: Frame, mask: np.ndarray) -> None:
    """`assert_tags`: every later store into the tensor is checked (`check_stored`)."""
    if mask.any():
        tensor = value_of(frame, op.target)
        s.store_functions[buffer_key(tensor)] = (op, tensor)


def check_stored(s: ShadowInterpreter, op: Operation, frame: Frame, tensor: TensorValue, byte_indices: np.ndarray,
                 tags: np.ndarray, threads: np.ndarray) -> None:
    """A store by `threads` of data with byte tags `tags` (threads, bytes) into `tensor` at
    `byte_indices` (threads, bytes): where the tensor has asserted tags, each stored element must
    carry the tag its coordinates get; a violation is reported as the checker reports it."""
    found = s.store_functions.get(buffer_key(tensor))
    if found is None or threads.size == 0:
        return
    function, root = found
    width = root.dtype.nbytes
    flat = byte_indices[:, ::width] // width  # the root's elements each store writes (threads, parts), row-major
    coords = row_major(flat.reshape(-1), root.array.shape)
    # asserted tags give every thread the same tags (the checker requires it): one evaluation
    components = s.evaluate_tag_function(function, frame, coords, threads[:1])  # (1, elements)
    rows = np.stack([c[0] for c in components], axis=-1) if components else np.zeros((flat.size, 0), np.int64)
    expected = s.table.at_width(s.table.rows_to_ids(rows, width).reshape(threads.size, -1, width))
    stored = s.table.at_width(resize(tags, tags.shape[-1], s.table).reshape(threads.size, -1, width))
    coords = [c.reshape(flat.shape) for c in coords]
    where = s.locations.get(function)
    for f in check(stored, expected, equal=True, limit=4):
        thread = int(threads[f.point])
        s.report({
            "assertion": str(where), "kind": f.kind, "block": frame.block_of(thread), "thread": thread,
            "loops": {(loop.body.block.args[0].name_hint or "i"): int(frame.values[loop.body.block.args[0]][thread])
                      for loop in s.loops},
            "element": tuple(int(c[f.point, f.element]) for c in coords),
            "lhs tag": s.table.element_tag(f.lhs), "rhs tag": s.table.element_tag(f.rhs),
            "lhs written at": str(s.locations.get(op)), "rhs written at": str(where),
            "message": f"stored into {root.name!r} at {s.locations.get(op)}",
        })


def _shadow_assert(s: ShadowInterpreter, op: D.TagAssertOp, frame: Frame, mask: np.ndarray) -> None:
    """Check the assertion for every active thread; each violation is reported with the block,
    thread, loop indices, element, tags and the lines that wrote them."""
    threads = np.flatnonzero(mask)
    if threads.size == 0:
        return
    lhs_target, rhs_target = value_of(frame, op.lhs), value_of(frame, op.rhs)
    sides = []
    for target in (lhs_target, rhs_target):
        idx = s.element_bytes(target, threads)
        memory = s.memory_tags(target, frame)
        tags = memory.read(idx.reshape(threads.size, -1), threads).reshape(idx.shape)
        sites = (memory.site[threads[:, None], idx.reshape(threads.size, -1)] if memory.per_thread
                 else memory.site[idx.reshape(threads.size, -1)]).reshape(idx.shape)
        sides.append((target, tags, sites))
    (_, lhs, lhs_sites), (_, rhs, rhs_sites) = sides
    where = s.locations.get(op)
    if lhs.shape != rhs.shape:
        s.report({"assertion": str(where), "kind": "shapes differ",
                  "lhs elements": lhs.shape[1:], "rhs elements": rhs.shape[1:]})
        return
    for f in check(lhs, rhs, equal=op.kind.data == "eq", limit=4):
        thread = int(threads[f.point])
        element = tuple(int(c[f.element]) for c in s.coordinates(lhs_target))
        witness = {
            "assertion": str(where), "kind": f.kind, "block": frame.block_of(thread), "thread": thread,
            "loops": {(loop.body.block.args[0].name_hint or "i"): int(frame.values[loop.body.block.args[0]][thread])
                      for loop in s.loops},
            "element": element,
            "lhs tag": s.table.element_tag(f.lhs), "rhs tag": s.table.element_tag(f.rhs),
            "lhs written at": _site_text(s, lhs_sites[f.point, f.element]),
            "rhs written at": _site_text(s, rhs_sites[f.point, f.element]),
        }
        if op.message.data:
            witness["message"] = op.message.data
        s.report(witness)


def _site_text(s: ShadowInterpreter, sites: np.ndarray) -> str:
    known = [int(x) for x in np.ravel(sites) if x >= 0]
    if not known:
        return "never written"
    loc = s.sites[known[0]]
    return str(loc) if loc is not None else "an op without a source line"


# ---- LLVM ---------------------------------------------------------------------------------

def _translate_assume(t: Translator, op: D.AssumeOp) -> None:
    t.call("void", "llvm.assume", [("i1", t.value(op.cond))])


def _translate_nothing(t: Translator, op: Operation) -> None:
    """Tag functions, tag assertions and tag resets are checked at compile time only."""


# ---- the ops ------------------------------------------------------------------------------

define(D.TagOp, interpret=_compile_time_only, analyze=tag_rule, liveness=tag_liveness.tag_function,
       shadow=_shadow_tag, translate=_translate_nothing)
define(D.StoreTagsOp, interpret=_compile_time_only, analyze=store_tags_rule, liveness=tag_liveness.store_tags,
       shadow=_shadow_store_tags, translate=_translate_nothing)
define(D.YieldTagOp, walked=True)  # (the end of a tag function's body, read where the function is evaluated)
define(D.TagAssertOp, interpret=_compile_time_only, analyze=assert_rule, liveness=tag_liveness.always,
       shadow=_shadow_assert, translate=_translate_nothing)
define(D.ResetTagsOp, interpret=_compile_time_only, analyze=reset_rule, liveness=tag_liveness.reset,
       shadow=_shadow_reset, translate=_translate_nothing)
define(D.AssertWrittenOp, interpret=_compile_time_only, analyze=assert_written_rule, liveness=tag_liveness.always,
       shadow=_shadow_assert_written, translate=_translate_nothing)
define(D.AssumeOp, interpret=_interpret_assume, analyze=assume_rule, liveness=tag_liveness.always,
       translate=_translate_assume)
