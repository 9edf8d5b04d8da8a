"""Code for the warp's matrix loads and stores (the `LDMATRIX_X4` and `STMATRIX_X4` copy atoms of
`language`): ``ldmatrix`` and ``stmatrix`` on four 8×8 matrices of 16-bit elements.

Each lane passes the shared-memory address of one matrix row (the first element of its
row fragment, which layout lowering provides) and four 32-bit registers, the atom's eight
values in order. That the fragments are 16 contiguous bytes in each thread, aligned, is what
the interpreter checks on every launch it runs (``misaligned-copy``).
"""

from __future__ import annotations

from typing import Any

from argus.dsl.ir import dialect as D

from .errors import CodegenError
from .translate import COOPERATIVE_COPIES, Translator, convergent

_WORDS = 4


def _operands(t: Translator, op: D.CopyOp, name: str) -> tuple[Any, Any, str, str]:
    """(shared tile, register tile, shared address of the row, pointer to the first register)."""
    if op.source.type.dtype.nbytes != 2:  # type: ignore[attr-defined]
        raise CodegenError(f"{name} moves 16-bit elements; these tiles hold {op.source.type.dtype}",  # type: ignore[attr-defined]
                           t.where(op))
    load = name.startswith("ldmatrix")
    shared, registers = (op.source, op.target) if load else (op.target, op.source)
    shared_start, register_start = (op.starts[0], op.starts[1]) if load else (op.starts[1], op.starts[0])
    if shared.type.space.data != "shared" or registers.type.space.data != "local":  # type: ignore[attr-defined]
        raise CodegenError(f"{name} copies between shared memory and registers: "
                           + ("copy(shared_rows, registers, atom)" if load else "copy(registers, shared_rows, atom)"),
                           t.where(op))
    memory = t.memory(shared, op)
    base = t.let(f"ptrtoint ptr addrspace(3) {memory.pointer} to i32")
    offset = t.let(f"mul i32 {t.value(shared_start)}, 2")
    address = t.let(f"add i32 {base}, {offset}")
    local = t.memory(registers, op)
    return shared, registers, address, t.element_pointer(local, "i16", t.value(register_start))


def _ldmatrix(t: Translator, op: D.CopyOp, name: str) -> None:
    _, _, address, first = _operands(t, op, name)
    trans = ".trans" if name.endswith("_trans") else ""
    text = f"ldmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 {{$0, $1, $2, $3}}, [$4];"
    words = t.let(f'call {{ i32, i32, i32, i32 }} asm sideeffect "{text}", "=r,=r,=r,=r,r,~{{memory}}"(i32 {address})'
                  f'{convergent(text)}')
    for j in range(_WORDS):
        word = t.let(f"extractvalue {{ i32, i32, i32, i32 }} {words}, {j}")
        pointer = t.let(f"getelementptr inbounds i32, ptr {first}, i32 {j}")
        t.emit(f"store i32 {word}, ptr {pointer}, align 4")


def _stmatrix(t: Translator, op: D.CopyOp, name: str) -> None:
    if not t.arch.has("stmatrix"):
        raise CodegenError(f"{name} (stmatrix) needs nvptx:sm_90 or nvptx:sm_90a; nvptx:{t.arch.name} does not "
                           "have it", t.where(op))
    _, _, address, first = _operands(t, op, name)
    words = []
    for j in range(_WORDS):
        pointer = t.let(f"getelementptr inbounds i32, ptr {first}, i32 {j}")
        words.append(t.let(f"load i32, ptr {pointer}, align 4"))
    trans = ".trans" if name.endswith("_trans") else ""
    text = f"stmatrix.sync.aligned.m8n8.x4{trans}.shared.b16 [$0], {{$1, $2, $3, $4}};"
    args = ", ".join(f"i32 {w}" for w in [address, *words])
    t.emit(f'call void asm sideeffect "{text}", "r,r,r,r,r,~{{memory}}"({args}){convergent(text)}')


COOPERATIVE_COPIES.update({"ldmatrix_x4": _ldmatrix, "ldmatrix_x4_trans": _ldmatrix,
                           "stmatrix_x4": _stmatrix, "stmatrix_x4_trans": _stmatrix})
