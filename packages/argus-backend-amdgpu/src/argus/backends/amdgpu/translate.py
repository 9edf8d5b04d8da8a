"""The ``argus`` dialect (layouts lowered) to LLVM IR for ``amdgcn-amd-amdhsa``, as text.

What every LLVM backend shares is `argus.dsl.llvm`; this is AMD's part: an ``amdgpu_kernel``
whose workgroup size is fixed when compiled (``amdgpu-flat-work-group-size``), work-item and
workgroup ids from the ``llvm.amdgcn`` intrinsics, the grid's size from the dispatch packet,
``s_barrier`` between workgroup-scope fences, shuffles through ``ds_bpermute``, and a thread's
own memory in the private address space (5).

Waves have 64 lanes. A kernel written for 32-lane warps (the language's default) runs with each
half-wave as one warp: lane and warp ids follow the declared warp size, and a shuffle stays
within its half-wave, as the interpreter defines it.
"""

from __future__ import annotations

from typing import Any

from argus.dsl.ir import dialect as D
from argus.dsl.atoms import MMAAtom, wave_mma_16x16x16, wave_mma_16x16x32, wave_mma_32x32x8, wave_mma_32x32x16
from argus.dsl.dtypes import f32
from argus.dsl.errors import CodegenError, SourceLocation
from argus.dsl.llvm import RULES as GENERIC_RULES
from argus.dsl.llvm import KernelABI, element_type, llvm_type, shared_layout
from argus.dsl.llvm import Translator as LLVMTranslator
from xdsl.ir import Operation

from .language import (
    AgprBudgetOp,
    BufferLoadAgprAtOp,
    BufferLoadAtOp,
    BufferLoadLdsAtOp,
    BufferStoreAtOp,
    ReadFirstLaneOp,
    RowMoveOp,
    SchedBarrierOp,
    SchedGroupBarrierOp,
    SetPrioOp,
    WaitCountOp,
)
from .targets import Chip

#: The data layout of the AMDGPU target (LLVM 22): allocas live in address space 5.
DATALAYOUT = ("e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-"
              "p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-"
              "v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9")
WAVE = 64
SIMDS_PER_CU = 4


class Translator(LLVMTranslator):
    """Translates one lowered kernel for an AMD chip."""

    BACKEND = "amdgpu"
    TRIPLE = "amdgcn-amd-amdhsa"
    DATALAYOUT = DATALAYOUT
    CALLING_CONVENTION = "amdgpu_kernel"
    PRIVATE_SPACE = 5

    def __init__(self, kernel: D.KernelOp, chip: Chip, locations: dict[Operation, SourceLocation] | None = None) -> None:
        super().__init__(kernel, chip, locations)
        self.chip = chip
        self.threads = self.block[0] * self.block[1] * self.block[2]
        if self.threads > 1024:
            raise CodegenError(f"a workgroup has at most 1024 work-items; the kernel's block has {self.threads}",
                               self.where(kernel))
        if kernel.cluster is not None:
            raise CodegenError(f"thread-block clusters are an NVIDIA sm_90 feature; {chip.name} has none (declare the "
                               "kernel without cluster=)", self.where(kernel))
        self.agprs: int | None = None
        """The AGPR budget the kernel asked for (`agprs(n)`), when it did."""
        self.agpr_loads = False
        """Whether the kernel loads into AGPRs (`buffer_load_agpr`), which a budget of 0 forbids."""
        starts, _ = shared_layout(kernel)  # every tile is declared statically, up to the chip's LDS
        for op, start in starts.items():
            end = start + op.result.type.footprint * op.result.type.dtype.nbytes  # type: ignore[attr-defined]
            if end > chip.lds_bytes:
                raise CodegenError(f"with this tile the kernel's shared memory reaches {end} bytes of LDS; a "
                                   f"{chip.name} workgroup has {chip.lds_bytes}", self.where(op))

    def function_attributes(self) -> str:
        attrs = f'"amdgpu-flat-work-group-size"="{self.threads},{self.threads}"'
        if self.agprs is not None:
            attrs += f' "amdgpu-agpr-alloc"="{self.agprs}"'
        if self.kernel.min_blocks_per_sm is not None:  # that many workgroups' waves on a CU's four SIMDs
            waves = -(-self.kernel.min_blocks_per_sm.data * -(-self.threads // WAVE) // SIMDS_PER_CU)
            attrs += f' "amdgpu-waves-per-eu"="{min(waves, self.chip.waves_per_simd)}"'
        if self.kernel.max_registers is not None:
            attrs += f' "amdgpu-num-vgpr"="{self.kernel.max_registers.data}"'
        return attrs

    def index(self, kind: str, axis: int) -> str:
        xyz = "xyz"[axis]
        if kind == "thread":
            return self.call("i32", f"llvm.amdgcn.workitem.id.{xyz}", [], "w")
        if kind == "block":
            return self.call("i32", f"llvm.amdgcn.workgroup.id.{xyz}", [], "g")
        # the grid in workgroups: the dispatch packet's grid size (in work-items) over the block's
        packet = self.call("ptr addrspace(4)", "llvm.amdgcn.dispatch.ptr", [], "d")
        field = self.let(f"getelementptr inbounds i8, ptr addrspace(4) {packet}, i64 {12 + 4 * axis}")
        items = self.let(f"load i32, ptr addrspace(4) {field}, align 4")
        return self.let(f"udiv i32 {items}, {self.block[axis]}")

    def barrier(self, op: Operation) -> None:
        self.emit('fence syncscope("workgroup") release')
        self.call("void", "llvm.amdgcn.s.barrier", [])
        self.emit('fence syncscope("workgroup") acquire')

    def shuffle_word(self, op: D.ShuffleOp, kind: str, word: str, lane: str) -> str:
        low = self.call("i32", "llvm.amdgcn.mbcnt.lo", [("i32", "-1"), ("i32", "0")])
        wave_lane = self.call("i32", "llvm.amdgcn.mbcnt.hi", [("i32", "-1"), ("i32", low)])
        width = self.warp_size
        mine = self.let(f"and i32 {wave_lane}, {width - 1}") if width < WAVE else wave_lane
        source = {"xor": lambda: self.let(f"xor i32 {mine}, {lane}"), "idx": lambda: lane,
                  "down": lambda: self.let(f"add i32 {mine}, {lane}"),
                  "up": lambda: self.let(f"sub i32 {mine}, {lane}")}[kind]()
        inside = self.let(f"icmp ult i32 {source}, {width}")  # outside the warp: the thread's own value
        if width < WAVE:
            base = self.let(f"and i32 {wave_lane}, {WAVE - width}")
            source = self.let(f"add i32 {base}, {source}")
        address = self.let(f"shl i32 {source}, 2")
        got = self.call("i32", "llvm.amdgcn.ds.bpermute", [("i32", address), ("i32", word)])
        return self.let(f"select i1 {inside}, i32 {got}, i32 {word}")

    def matrix_multiply(self, op: D.MmaOp, atom: MMAAtom) -> None:
        """A wave's matrix product: one MFMA, its A and B fragments as vectors of four (eight
        on CDNA4's wide products) 16-bit values or eight 8-bit ones, and its accumulators as
        one vector of floats (LLVM keeps them in AGPRs)."""
        found = mfma(atom, self.chip)
        if isinstance(found, str):
            raise CodegenError(f"no {self.chip.name} instruction runs the matrix-multiply atom {atom.name}: {found}",
                               self.where(op))
        name, element, count = found
        operand = f"<{count} x {element}>"
        vectors = []
        for tile in (op.a, op.b):
            memory, ty, offsets = self.fragment(tile, op)
            vector = "undef"
            for j, offset in enumerate(offsets):
                value = self.load(ty, memory, self.element_pointer(memory, ty, str(offset)))
                if element != ty:
                    value = self.let(f"bitcast {ty} {value} to {element}")
                vector = self.let(f"insertelement {operand} {vector}, {element} {value}, i32 {j}")
            if element == "i8":  # eight fp8 values travel as one 64-bit register pair
                vector = self.let(f"bitcast {operand} {vector} to i64")
            vectors.append(vector)
        operand = "i64" if element == "i8" else operand
        memory, ty, offsets = self.fragment(op.c, op)
        wide = f"<{len(offsets)} x {ty}>"
        pointers = [self.element_pointer(memory, ty, str(offset)) for offset in offsets]
        acc = "undef"
        for j, pointer in enumerate(pointers):
            acc = self.let(f"insertelement {wide} {acc}, {ty} {self.load(ty, memory, pointer)}, i32 {j}")
        out = self.call(wide, name, [(operand, vectors[0]), (operand, vectors[1]), (wide, acc),
                                     ("i32", "0"), ("i32", "0"), ("i32", "0")])
        for j, pointer in enumerate(pointers):
            self.store(ty, self.let(f"extractelement {wide} {out}, i32 {j}"), memory, pointer)


#: The MFMA behind each wave atom for 16-bit inputs: the LLVM intrinsic and its operands' element type.
_MFMA16 = {
    (wave_mma_16x16x16, "bf16"): ("llvm.amdgcn.mfma.f32.16x16x16bf16.1k", "i16"),
    (wave_mma_16x16x16, "f16"): ("llvm.amdgcn.mfma.f32.16x16x16f16", "half"),
    (wave_mma_32x32x8, "bf16"): ("llvm.amdgcn.mfma.f32.32x32x8bf16.1k", "i16"),
    (wave_mma_32x32x8, "f16"): ("llvm.amdgcn.mfma.f32.32x32x8f16", "half"),
}
#: CDNA4's 16-bit MFMAs with twice the K: eight values of A and of B per lane (gfx950 only).
_MFMA16_WIDE = {
    (wave_mma_16x16x32, "bf16"): ("llvm.amdgcn.mfma.f32.16x16x32.bf16", "bfloat"),
    (wave_mma_16x16x32, "f16"): ("llvm.amdgcn.mfma.f32.16x16x32.f16", "half"),
    (wave_mma_32x32x16, "bf16"): ("llvm.amdgcn.mfma.f32.32x32x16.bf16", "bfloat"),
    (wave_mma_32x32x16, "f16"): ("llvm.amdgcn.mfma.f32.32x32x16.f16", "half"),
}
#: The fp8 MFMAs (eight values of A and of B per lane, as one i64), by operand format: gfx942
#: reads the "fnuz" formats, gfx950 the OCP ones, under the same instructions.
_MFMA8 = {wave_mma_16x16x32: "16x16x32", wave_mma_32x32x16: "32x32x16"}
_FP8 = {"gfx942": {"f8e4m3fnuz": "fp8", "f8e5m2fnuz": "bf8"}, "gfx950": {"f8e4m3": "fp8", "f8e5m2": "bf8"}}


def mfma(atom: MMAAtom, chip: Chip) -> tuple[str, str, int] | str:
    """(intrinsic, operand element type, elements per operand) of the MFMA running `atom`
    exactly (same layouts and types) on `chip`, or why there is none."""
    if atom.c_dtype != f32:
        return "MFMA here accumulates into f32"
    if atom.a_dtype.bits == 8:
        formats = _FP8.get(chip.name, {})
        if atom.a_dtype.name not in formats or atom.b_dtype.name not in formats:
            return (f"{chip.name}'s MFMA reads 8-bit floats as {' and '.join(formats)}, not "
                    f"{atom.a_dtype} and {atom.b_dtype}")
        for make, shape in _MFMA8.items():
            if _same(make(atom.a_dtype, atom.b_dtype, atom.c_dtype), atom):
                name = f"llvm.amdgcn.mfma.f32.{shape}.{formats[atom.a_dtype.name]}.{formats[atom.b_dtype.name]}"
                return name, "i8", 8
    elif atom.a_dtype == atom.b_dtype:
        for (make, dtype), (name, element) in _MFMA16.items():
            if dtype == atom.a_dtype.name and _same(make(atom.a_dtype, atom.b_dtype, atom.c_dtype), atom):
                return name, element, 4
        for (make, dtype), (name, element) in _MFMA16_WIDE.items():
            if dtype == atom.a_dtype.name and _same(make(atom.a_dtype, atom.b_dtype, atom.c_dtype), atom):
                if not chip.wide_mfma:
                    instruction = "v_" + name.removeprefix("llvm.amdgcn.").replace(".", "_")
                    return (f"{instruction} is a CDNA4 instruction (amdgpu:gfx950); {chip.name} multiplies bf16 and "
                            "f16 with wave_mma_16x16x16 and wave_mma_32x32x8")
                return name, element, 8
    wide = ", or bf16 and f16 on gfx950" if chip.wide_mfma else ""
    return "the chip runs the wave atoms wave_mma_16x16x16 and wave_mma_32x32x8 (bf16 or f16), wave_mma_16x16x32 and " \
           f"wave_mma_32x32x16 (fp8{wide}), into f32, and universal_fma"


def _same(known: MMAAtom, atom: MMAAtom) -> bool:
    return (known.shape, known.threads) == (atom.shape, atom.threads) and all(
        str(getattr(known, f)) == str(getattr(atom, f)) for f in ("a_layout", "b_layout", "c_layout"))


def _synchronous(t: Any, op: D.MmaWaitOp) -> None:
    """Products run synchronously here: there is nothing to wait for."""


def _sched_barrier(t: Translator, op: SchedBarrierOp) -> None:
    t.call("void", "llvm.amdgcn.sched.barrier", [("i32", str(op.mask.data))])


def _sched_group_barrier(t: Translator, op: SchedGroupBarrierOp) -> None:
    t.call("void", "llvm.amdgcn.sched.group.barrier", [("i32", str(op.mask.data)), ("i32", str(op.size.data)),
                                                        ("i32", str(op.sync.data))])


def _setprio(t: Translator, op: SetPrioOp) -> None:
    t.call("void", "llvm.amdgcn.s.setprio", [("i16", str(op.priority.data))])


def _waitcnt(t: Translator, op: WaitCountOp) -> None:
    """s_waitcnt's gfx9 encoding: vmcnt in bits 3:0 and 15:14, expcnt (not waited on: 7) in
    6:4, lgkmcnt in 11:8."""
    vm, lgkm = op.vm.data, op.lgkm.data
    t.call("void", "llvm.amdgcn.s.waitcnt", [("i32", str((vm & 0xF) | (7 << 4) | (lgkm << 8) | ((vm >> 4) << 14)))])


#: The buffer resource's last word: the data format gfx9 chips need for raw (untyped) accesses.
BUFFER_FLAGS = 0x00020000
#: Raw buffer access types by size: the instruction moves words, the element is a bitcast away.
_WIDE = {2: "i16", 4: "i32", 8: "<2 x i32>", 16: "<4 x i32>"}
_SUFFIX = {"i16": "i16", "i32": "i32", "<2 x i32>": "v2i32", "<4 x i32>": "v4i32"}


def _resource(t: Translator, tensor: Any, op: Operation) -> tuple[str, int]:
    """A buffer resource over the whole tensor (its size in bytes from its dims), and the
    element size."""
    memory = t.memory(tensor, op)
    nbytes = tensor.type.dtype.nbytes
    size = str(nbytes)
    for axis in range(len(tensor.type.shape)):
        dim = t.dims[(tensor, axis)]
        wide = dim if dim.lstrip("-").isdigit() else t.let(f"zext i32 {dim} to i64")
        size = t.let(f"mul i64 {size}, {wide}")
    rsrc = t.call("ptr addrspace(8)", "llvm.amdgcn.make.buffer.rsrc.p8.p1",
                  [("ptr addrspace(1)", memory.pointer), ("i16", "0"), ("i64", size), ("i32", str(BUFFER_FLAGS))])
    return rsrc, nbytes


def _buffer_load(t: Translator, op: BufferLoadAtOp) -> None:
    rsrc, nbytes = _resource(t, op.tensor, op)
    wide = _WIDE[nbytes]
    offset = t.let(f"mul i32 {t.value(op.offset)}, {nbytes}")
    raw = t.call(wide, f"llvm.amdgcn.raw.ptr.buffer.load.{_SUFFIX[wide]}",
                 [("ptr addrspace(8)", rsrc), ("i32", offset), ("i32", "0"), ("i32", "0")])
    ty = llvm_type(op.result.type, t.where(op))
    t.names[op.result] = raw if ty == wide else t.let(f"bitcast {wide} {raw} to {ty}")


#: The buffer load moving each size, by the mnemonic inline assembly names it with.
_LOADS = {4: "buffer_load_dword", 8: "buffer_load_dwordx2", 16: "buffer_load_dwordx4"}


def _buffer_load_agpr(t: Translator, op: BufferLoadAgprAtOp) -> None:
    """A buffer load into AGPRs. No LLVM intrinsic chooses a load's destination registers, so
    it is inline assembly with an AGPR (``=a``) output; the compiler cannot see that the
    assembly loads, and would not wait for it, so the assembly waits itself (``s_waitcnt
    vmcnt(0)``) before anything reads the registers."""
    if t.agprs == 0:
        raise CodegenError("buffer_load_agpr loads into AGPRs, and the kernel asked for none (agprs(0))", t.where(op))
    t.agpr_loads = True
    rsrc, nbytes = _resource(t, op.tensor, op)
    wide = _WIDE[nbytes]
    offset = t.let(f"mul i32 {t.value(op.offset)}, {nbytes}")
    raw = t.let(f'call {wide} asm sideeffect "{_LOADS[nbytes]} $0, $1, $2, 0 offen\\0A\\09s_waitcnt vmcnt(0)", '
                f'"=a,v,s,~{{memory}}"(i32 {offset}, ptr addrspace(8) {rsrc})')
    ty = llvm_type(op.result.type, t.where(op))
    t.names[op.result] = raw if ty == wide else t.let(f"bitcast {wide} {raw} to {ty}")


def _buffer_store(t: Translator, op: BufferStoreAtOp) -> None:
    rsrc, nbytes = _resource(t, op.tensor, op)
    wide = _WIDE[nbytes]
    offset = t.let(f"mul i32 {t.value(op.offset)}, {nbytes}")
    ty = llvm_type(op.value.type, t.where(op))
    value = t.value(op.value) if ty == wide else t.let(f"bitcast {ty} {t.value(op.value)} to {wide}")
    t.call("void", f"llvm.amdgcn.raw.ptr.buffer.store.{_SUFFIX[wide]}",
           [(wide, value), ("ptr addrspace(8)", rsrc), ("i32", offset), ("i32", "0"), ("i32", "0")])


def _buffer_load_lds(t: Translator, op: BufferLoadLdsAtOp) -> None:
    """One buffer load whose data goes to LDS (``buffer_load_dword … lds``): the instruction
    takes the wave's LDS address in M0 and writes lane l's element l elements after it, so the
    address is the thread's element less its lane, read from the first active lane (the
    interpreter and the checker make sure every lane agrees). LLVM waits for the load (vmcnt)
    before the wave's next LDS access and before a barrier."""
    dtype = op.tile.type.dtype  # type: ignore[attr-defined]
    nbytes = dtype.nbytes
    if nbytes not in t.chip.lds_load_bytes:
        raise CodegenError(f"a buffer load into LDS moves {' or '.join(map(str, t.chip.lds_load_bytes))} bytes per "
                           f"lane on {t.chip.name}, not {nbytes} ({dtype}); 16 needs amdgpu:gfx950", t.where(op))
    rsrc, _ = _resource(t, op.tensor, op)
    offset = t.let(f"mul i32 {t.value(op.tensor_offset)}, {nbytes}")
    shared = t.memory(op.tile, op)
    pointer = t.element_pointer(shared, element_type(dtype, t.where(op)), t.value(op.tile_offset))
    address = t.let(f"ptrtoint ptr addrspace(3) {pointer} to i32")
    low = t.call("i32", "llvm.amdgcn.mbcnt.lo", [("i32", "-1"), ("i32", "0")])
    lane = t.call("i32", "llvm.amdgcn.mbcnt.hi", [("i32", "-1"), ("i32", low)])
    before = t.let(f"mul i32 {lane}, {nbytes}")
    start = t.call("i32", "llvm.amdgcn.readfirstlane.i32", [("i32", t.let(f"sub i32 {address}, {before}"))])
    base = t.let(f"inttoptr i32 {start} to ptr addrspace(3)")
    t.call("void", "llvm.amdgcn.raw.ptr.buffer.load.lds", [("ptr addrspace(8)", rsrc), ("ptr addrspace(3)", base),
                                                             ("i32", str(nbytes)), ("i32", offset), ("i32", "0"),
                                                             ("i32", "0"), ("i32", "0")])


def _agprs(t: Translator, op: AgprBudgetOp) -> None:
    if not isinstance(op.parent_op(), D.KernelOp):
        raise CodegenError("call agprs(n) at the kernel's top level: it sets the whole kernel's registers", t.where(op))
    if t.agprs is not None and t.agprs != op.registers.data:
        raise CodegenError(f"the kernel already asked for {t.agprs} AGPRs", t.where(op))
    if t.agpr_loads and op.registers.data == 0:
        raise CodegenError("the kernel loads into AGPRs (buffer_load_agpr); it cannot have none", t.where(op))
    t.agprs = op.registers.data


#: DPP control words: row_shr:n and row_ror:n.
_DPP = {"shift": 0x110, "rotate": 0x120}


def _row_move(t: Translator, op: RowMoveOp) -> None:
    """update.dpp with the value itself as the old one: a lane without a valid source keeps it."""
    x = t.value(op.value)
    control = _DPP[op.kind.data] + op.amount.data
    t.names[op.result] = t.call("i32", "llvm.amdgcn.update.dpp.i32", [("i32", x), ("i32", x), ("i32", str(control)),
                                                                      ("i32", "15"), ("i32", "15"), ("i1", "false")])


def _readfirstlane(t: Translator, op: ReadFirstLaneOp) -> None:
    t.names[op.result] = t.call("i32", "llvm.amdgcn.readfirstlane.i32", [("i32", t.value(op.value))])


RULES = {**GENERIC_RULES, D.MmaWaitOp: _synchronous, SchedBarrierOp: _sched_barrier,
         SchedGroupBarrierOp: _sched_group_barrier, SetPrioOp: _setprio, WaitCountOp: _waitcnt,
         ReadFirstLaneOp: _readfirstlane, BufferLoadAtOp: _buffer_load, BufferStoreAtOp: _buffer_store,
         BufferLoadLdsAtOp: _buffer_load_lds, BufferLoadAgprAtOp: _buffer_load_agpr, AgprBudgetOp: _agprs,
         RowMoveOp: _row_move}
Translator.RULES = RULES


def translate(kernel: D.KernelOp, chip: Chip, locations: dict[Operation, SourceLocation] | None = None
              ) -> tuple[str, KernelABI]:
    """LLVM IR text of a lowered kernel and the parameter layout a launch must pass."""
    return Translator(kernel, chip, locations).translate()
