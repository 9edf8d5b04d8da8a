"""The ``argus`` dialect (layouts lowered) to LLVM IR for ``nvptx64-nvidia-cuda``, as text.

What every LLVM backend shares is `argus.dsl.llvm`; this is NVIDIA's part: the ``ptx_kernel``
function with its launch attributes, thread and block indices from the special registers,
``bar.sync`` (after ``fence.proxy.async`` when an asynchronous unit reads shared memory),
``shfl.sync``, tensor-core instructions (``mma.sync`` from `instructions`, ``wgmma`` with
shared-memory descriptors from `warpgroup`), and the hooks the other modules of this package
fill: their intrinsics' rules (`RULES`) and the cooperative copy atoms (`COOPERATIVE_COPIES`),
each of which runs only the atom described exactly as the language's atom of that name
(`COPY_ATOMS`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from argus.dsl.ir import dialect as D
from argus.dsl.atoms import CopyAtom, MMAAtom
from argus.dsl.errors import SourceLocation
from argus.dsl.llvm import RULES as GENERIC_RULES
from argus.dsl.llvm import KernelABI, Memory, Param, arith_type, element_type, ident, natural_alignment
from argus.dsl.llvm import Translator as LLVMTranslator
from argus.layout import same_function
from xdsl.dialects import builtin, math
from xdsl.ir import Operation, SSAValue

from .errors import CodegenError
from .instructions import Instruction, mma_instruction
from .language import LDMATRIX_X4, LDMATRIX_X4_TRANS, STMATRIX_X4, STMATRIX_X4_TRANS
from .targets import Arch
from .warpgroup import NotDescribable, descriptor_form, runs_as_wgmma, wgmma_text

_SREG = {"thread": "tid", "block": "ctaid", "grid": "nctaid"}



#: What marks a warp-collective PTX instruction: every thread of the warp (or warpgroup, or
#: cluster) must execute the same instance of it.
_COLLECTIVE = (".aligned", "bar.sync", "elect.sync")


def convergent(ptx: str) -> str:
    """The call attribute inline PTX `ptx` needs: ``convergent`` for a collective instruction,
    which LLVM then never copies into divergent paths (a copy per path hangs a barrier)."""
    return " convergent" if any(mark in ptx for mark in _COLLECTIVE) else ""


def inline_asm(t: Translator, text: str, operands: Sequence[tuple[str, str]] = ()) -> None:
    """`text` as a statement of inline PTX on `operands` ((i32 or i64, value) pairs), clobbering
    memory; a collective instruction is a convergent call."""
    constraints = ",".join([{"i32": "r", "i64": "l"}[ty] for ty, _ in operands] + ["~{memory}"])
    args = ", ".join(f"{ty} {v}" for ty, v in operands)
    t.emit(f'call void asm sideeffect "{text}", "{constraints}"({args}){convergent(text)}')

class Translator(LLVMTranslator):
    """Translates one lowered kernel for an NVIDIA architecture."""

    BACKEND = "nvptx"
    TRIPLE = "nvptx64-nvidia-cuda"
    CALLING_CONVENTION = "ptx_kernel"
    STATIC_SHARED = 48 * 1024  # more is dynamic, and asked for at launch

    def __init__(self, kernel: D.KernelOp, arch: Arch, locations: dict[Operation, SourceLocation] | None = None) -> None:
        super().__init__(kernel, arch, locations)
        self.arch = arch
        self.wgmma_group: dict[str, str] | None = None
        """While warpgroup MMAs are in flight: their accumulators (pointer -> memory type)."""
        self.started: dict[tuple[str, int], str] = {}
        """Accumulators of warpgroup MMAs started asynchronously (matmul_async), pinned after
        every wait so that no use of them moves before it."""
        self.wgmma_streak = False
        """Whether the last op that did anything was a warpgroup MMA (no fence needed before the next)."""
        self.async_shared = any(isinstance(o, D.MmaOp) and o.starts for o in kernel.walk())
        """Whether an asynchronous unit reads shared memory (the barrier must order writes for it)."""
        self.tensor_maps: dict[tuple[int, tuple[int, ...], int], Param] = {}
        if self.warp_size != 32:
            raise CodegenError(f"NVIDIA warps have 32 threads; the kernel declares warp_size={self.warp_size}", None)
        if kernel.cluster is not None and not arch.has("clusters"):
            raise CodegenError(f"thread-block clusters need nvptx:sm_90 or nvptx:sm_90a; nvptx:{arch.name} does not "
                               "have them", self.where(kernel))

    def function_attributes(self) -> str:
        attrs = f'"nvvm.reqntid"="{",".join(map(str, self.block))}"'  # the block is fixed when compiled
        if self.kernel.min_blocks_per_sm is not None:
            attrs += f' "nvvm.minctasm"="{self.kernel.min_blocks_per_sm.data}"'
        if self.kernel.max_registers is not None:
            attrs += f' "nvvm.maxnreg"="{self.kernel.max_registers.data}"'
        if self.kernel.cluster is not None:  # blocks per cluster, fixed when compiled (.reqnctapercluster)
            attrs += f' "nvvm.cluster_dim"="{",".join(map(str, self.kernel.cluster_dims))}"'
        return attrs

    def extra_params(self) -> list[Param]:
        return list(self.tensor_maps.values())

    def index(self, kind: str, axis: int) -> str:
        return self.sreg(f"{_SREG[kind]}.{'xyz'[axis]}")

    def sreg(self, name: str) -> str:
        return self.call("i32", f"llvm.nvvm.read.ptx.sreg.{name}", [], "s")

    def barrier(self, op: Operation) -> None:
        if self.async_shared:  # the threads' shared writes become visible to the async proxy (wgmma)
            inline_asm(self, "fence.proxy.async.shared::cta;")
        self.call("void", "llvm.nvvm.barrier.cta.sync.aligned.all", [("i32", "0")])

    def shuffle_word(self, op: D.ShuffleOp, kind: str, word: str, lane: str) -> str:
        mode = {"xor": "bfly", "idx": "idx", "down": "down", "up": "up"}[kind]
        clamp = "0" if mode == "up" else "31"
        got = self.call("i32", f"llvm.nvvm.shfl.sync.{mode}.i32", [("i32", "-1"), ("i32", word), ("i32", lane),
                                                                    ("i32", clamp)])
        if mode == "idx":  # a source lane outside the warp: the thread's own value (PTX would wrap)
            inside = self.let(f"icmp ult i32 {lane}, 32")
            got = self.let(f"select i1 {inside}, i32 {got}, i32 {word}")
        return got

    def matrix_multiply(self, op: D.MmaOp, atom: MMAAtom) -> None:
        if atom.a_layout is None or atom.b_layout is None:
            _warpgroup_mma(self, op, atom)
        else:
            _warp_mma(self, op, atom)

    def cooperative_copy(self, op: D.CopyOp, atom: CopyAtom) -> None:
        name = copy_instruction(atom)
        if name is not None:
            COOPERATIVE_COPIES[name](self, op, name)
            return
        known = COPY_ATOMS.get(atom.name)
        if known is not None:
            raise CodegenError(f"the copy atom {atom.name} is not NVIDIA's {known.name}: its "
                               f"{'; its '.join(copy_differences(atom, known))} (the checker and the interpreter "
                               "move data as an atom's own layouts say; argus.backends.nvptx.language's "
                               f"{known.name.upper()} is the instruction)", self.where(op))
        raise self.unsupported(op, f"the cooperative copy atom {atom.name} (NVIDIA GPUs run the copy atoms of "
                                   f"argus.backends.nvptx.language: {', '.join(sorted(COOPERATIVE_COPIES))})")

    def before(self, op: Operation) -> None:
        """Warpgroup MMAs in a row form one group; anything else first waits for the group."""
        quiet = _leaves_wgmma_in_flight(op)
        if self.wgmma_group is not None and not quiet:
            _wait_wgmma(self)
        if not quiet:
            self.wgmma_streak = False

    def after_block(self) -> None:
        if self.wgmma_group is not None:
            _wait_wgmma(self)


Rule = Callable[[Translator, Any], None]

def _warp_mma(t: Translator, op: D.MmaOp, atom: MMAAtom) -> None:
    """An atom with operands in registers: one tensor-core instruction (mma.sync) per use."""
    instruction = mma_instruction(atom, t.arch)
    if instruction is None:
        raise CodegenError(f"no {t.arch.name} instruction runs the matrix-multiply atom {atom.name} "
                           f"(shape {atom.shape}, {atom.a_dtype}·{atom.b_dtype} → {atom.c_dtype})", t.where(op))
    registers = [reg for role, tile in (("a", op.a), ("b", op.b)) for reg in _operand(t, instruction, role, tile, op)]
    memory, ty, offsets = t.fragment(op.c, op)
    pointers = [t.element_pointer(memory, ty, str(offset)) for offset in offsets]
    accumulators = [t.load(ty, memory, p) for p in pointers]
    registers += [(instruction.register_type["c"], v) for v in accumulators]
    for pointer, value in zip(pointers, _inline(t, instruction, ty, len(accumulators), registers)):
        t.store(ty, value, memory, pointer)


def _warpgroup_mma(t: Translator, op: D.MmaOp, atom: MMAAtom) -> None:
    """``wgmma.mma_async`` with both operands described in shared memory. Consecutive ones form
    one group: a fence before the first, a commit and a wait for all after the last
    (`_wait_wgmma`), so the language's synchronous semantics hold."""
    if not t.arch.has("wgmma"):
        raise CodegenError(f"the matrix-multiply atom {atom.name} runs as wgmma, which nvptx:{t.arch.name} does not "
                           "have (it needs nvptx:sm_90a)", t.where(op))
    reason = runs_as_wgmma(atom)
    if reason is not None:
        raise CodegenError(f"no {t.arch.name} instruction runs the matrix-multiply atom {atom.name}: {reason}",
                           t.where(op))
    descriptors = [_descriptor(t, op, tile, rows, start, label)
                   for (tile, rows, label), start in zip(((op.a, atom.shape[0], "a"), (op.b, atom.shape[1], "b")),
                                                         op.starts)]
    memory, ty, offsets = t.fragment(op.c, op)
    pointers = [t.element_pointer(memory, ty, str(o)) for o in offsets]
    started = op.asynchronous is not None
    if started and t.wgmma_group is not None:  # a synchronous group before it finishes first
        _wait_wgmma(t)
    if not t.wgmma_streak:
        inline_asm(t, "wgmma.fence.sync.aligned;")
    t.wgmma_streak = True
    if not started and t.wgmma_group is None:
        t.wgmma_group = {}
    values = [t.load(ty, memory, p) for p in pointers]
    count = len(values)
    struct_ty = "{ " + ", ".join(["float"] * count) + " }"
    constraints = ",".join(["=f"] * count + [str(i) for i in range(count)] + ["l", "l", "r"])
    args = ", ".join([f"float {v}" for v in values] + [f"i64 {d}" for d in descriptors] + ["i32 1"])
    text = wgmma_text(atom, 2 * count)
    result = t.let(f'call {struct_ty} asm sideeffect "{text}", "{constraints}"({args}){convergent(text)}')
    for i, pointer in enumerate(pointers):
        t.store(ty, t.let(f"extractvalue {struct_ty} {result}, {i}"), memory, pointer)
        if started:  # the accumulator by allocation and offset: its pointer here may not reach the wait
            t.started[(memory.pointer, offsets[i])] = ty
        else:
            t.wgmma_group[pointer] = ty  # type: ignore[index]
    if started:
        inline_asm(t, "wgmma.commit_group.sync.aligned;")


def _mma_wait(t: Translator, op: D.MmaWaitOp) -> None:
    """matmul_wait: the warpgroup MMAs started asynchronously, all but the last `pending`."""
    if not t.started:
        return  # every product ran synchronously
    inline_asm(t, f"wgmma.wait_group.sync.aligned {op.pending.data};")
    _pin(t, {t.element_pointer(Memory(base, 0), ty, str(offset)): ty for (base, offset), ty in t.started.items()})


def _wait_wgmma(t: Translator) -> None:
    """Commit the group in flight, wait for it, and pin its accumulators after the wait (so no
    use of them is scheduled before it)."""
    group = t.wgmma_group or {}
    t.wgmma_group = None
    inline_asm(t, "wgmma.commit_group.sync.aligned;")
    inline_asm(t, "wgmma.wait_group.sync.aligned 0;")
    _pin(t, group)


def _pin(t: Translator, accumulators: dict[str, str]) -> None:
    """Pass each accumulator through an empty asm after a wait: uses of them stay after it."""
    for pointer, ty in accumulators.items():  # accumulators are registers (allocas promoted)
        value = t.let(f"load {ty}, ptr {pointer}, align {natural_alignment(ty)}")
        pinned = t.let(f'call {ty} asm sideeffect "", "=f,0"({ty} {value})')
        t.emit(f"store {ty} {pinned}, ptr {pointer}, align {natural_alignment(ty)}")


def _leaves_wgmma_in_flight(op: Operation) -> bool:
    """Ops that may sit between the warpgroup MMAs of one group: more of them, and integer
    arithmetic and tile views (which touch neither their accumulators nor shared memory)."""
    if isinstance(op, D.MmaOp):
        return bool(op.starts)
    if isinstance(op, (D.SliceOp, D.ViewOp, D.PartitionOp)):
        return True
    return op.name.startswith("arith.") and all(
        isinstance(r.type, builtin.IntegerType) for r in op.results)


def _descriptor(t: Translator, op: D.MmaOp, tile: SSAValue, rows: int, start: SSAValue, label: str) -> str:
    """The 64-bit matrix descriptor of a shared operand tile starting at element `start`."""
    tile_type: D.TileType = tile.type  # type: ignore[assignment]
    nbytes = tile_type.dtype.nbytes
    try:
        form = descriptor_form(tile_type.layout, rows, nbytes)
    except NotDescribable as err:
        raise CodegenError(f"wgmma cannot read operand {label} laid out as {tile_type.layout}: {err}; it reads K-major "
                           "tiles either swizzled over 128-, 64- or 32-byte rows (Swizzle(3 | 2 | 1, 3, 3) for 16-bit "
                           "types) or in 8×16-byte core matrices", t.where(op)) from None
    memory = t.memory(tile, op)
    base = t.let(f"ptrtoint ptr addrspace(3) {memory.pointer} to i32")
    offset = t.let(f"mul i32 {t.value(start)}, {nbytes}")
    address = t.let(f"add i32 {base}, {offset}")
    low = t.let(f"lshr i32 {address}, 4")
    low = t.let(f"and i32 {low}, 16383")
    low = t.let(f"or i32 {low}, {(form.leading_bytes >> 4) << 16}")
    high = str((form.stride_bytes >> 4) | (form.mode << 30))
    if form.mode:  # the row within the swizzle pattern where the operand starts
        row = t.let(f"lshr i32 {address}, 7")
        row = t.let(f"and i32 {row}, 7")
        row = t.let(f"shl i32 {row}, 17")
        high = t.let(f"or i32 {row}, {high}")
    wide_low = t.let(f"zext i32 {low} to i64")
    wide_high = t.let(f"zext i32 {high} to i64")
    shifted = t.let(f"shl i64 {wide_high}, 32")
    return t.let(f"or i64 {shifted}, {wide_low}")


def _operand(t: Translator, instruction: Instruction, role: str, tile: SSAValue, op: Operation) -> list[tuple[str, str]]:
    """The instruction's registers holding fragment `role`: values packed `per_register` to a
    32-bit register, loaded as one word where they sit side by side in memory."""
    memory, ty, offsets = t.fragment(tile, op)
    per = instruction.per_register[role]
    if per == 1:
        return [(instruction.register_type[role], t.load(ty, memory, t.element_pointer(memory, ty, str(o))))
                for o in offsets]
    registers = []
    for i in range(0, len(offsets), per):
        group = offsets[i:i + per]
        pointer = t.element_pointer(memory, ty, str(group[0]))
        if group == list(range(group[0], group[0] + per)) and group[0] * natural_alignment(ty) % 4 == 0:
            registers.append(("i32", t.load("i32", memory, pointer)))
            continue
        vector = "undef"
        for j, offset in enumerate(group):
            value = t.load(ty, memory, t.element_pointer(memory, ty, str(offset)))
            vector = t.let(f"insertelement <{per} x {ty}> {vector}, {ty} {value}, i32 {j}")
        registers.append(("i32", t.let(f"bitcast <{per} x {ty}> {vector} to i32")))
    return registers


def _inline(t: Translator, instruction: Instruction, out_ty: str, outs: int, registers: list[tuple[str, str]]
            ) -> list[str]:
    """Calls the instruction as inline PTX on `registers` and returns its `outs` results."""
    struct_ty = "{ " + ", ".join([out_ty] * outs) + " }"
    constraints = ",".join(["=f" if out_ty == "float" else "=r"] * outs + [_constraint(ty) for ty, _ in registers])
    args = ", ".join(f"{ty} {v}" for ty, v in registers)
    result = t.let(f'call {struct_ty} asm sideeffect "{instruction.text}", "{constraints}"({args})'
                   f'{convergent(instruction.text)}')
    return [t.let(f"extractvalue {struct_ty} {result}, {i}") for i in range(outs)]


def _constraint(ty: str) -> str:
    return {"float": "f", "i32": "r", "i64": "l", "double": "d"}[ty]


#: Code for cooperative copy atoms (a warp's matrix loads and stores), by atom name.
COOPERATIVE_COPIES: dict[str, Callable[[Translator, D.CopyOp, str], None]] = {}

#: The atom each name of `COOPERATIVE_COPIES` stands for: the language's atom of that name.
#: The checker and the interpreter move data as an atom's own description says, never by its
#: name, so a copy runs as an instruction only when its whole description is the instruction's.
COPY_ATOMS: dict[str, CopyAtom] = {atom.name: atom for atom in (LDMATRIX_X4, LDMATRIX_X4_TRANS, STMATRIX_X4,
                                                                 STMATRIX_X4_TRANS)}


def copy_differences(atom: CopyAtom, known: CopyAtom) -> list[str]:
    """How `atom` moves data other than `known` does (empty when it moves it the same way): its
    vector width, thread count, and source and target layouts as functions of (thread, value).
    The element type is the tiles', which each instruction's rule checks."""
    found = []
    if atom.vector_bytes != known.vector_bytes:
        found.append(f"vectors are {atom.vector_bytes} bytes, not {known.vector_bytes}")
    if atom.threads != known.threads:
        found.append(f"threads are {atom.threads}, not {known.threads}")
    for label, mine, theirs in (("source layout", atom.src_layout, known.src_layout),
                                ("target layout", atom.dst_layout, known.dst_layout)):
        same = mine is theirs if mine is None or theirs is None else same_function(mine, theirs)
        if not same:
            found.append(f"{label} is {mine}, not {theirs}")
    return found


def copy_instruction(atom: CopyAtom) -> str | None:
    """The name of the registered copy that moves data exactly as `atom` does, or None when no
    instruction does. An atom bearing a registered name must be that atom; one named otherwise
    runs as the registered atom it is described as, if any."""
    named = COPY_ATOMS.get(atom.name)
    candidates = [named] if named is not None else list(COPY_ATOMS.values())
    for known in candidates:
        if known.name in COOPERATIVE_COPIES and not copy_differences(atom, known):
            return known.name
    return None


def _log2(t: Translator, op: math.Log2Op) -> None:
    """log2 through the GPU's lg2 instruction (f32, relative error below 2^-22; f16 and bf16 widen
    to f32 and round back): LLVM's NVPTX target has no lowering of its own for llvm.log2 and aborts
    the process on one."""
    ty = arith_type(op.result.type, t.where(op))
    if ty == "double":
        raise t.unsupported(op, "log2 of an f64 value (the GPU has no instruction for it; convert to f32)")
    x = t.value(op.operands[0])
    wide = x if ty == "float" else t.fresh("wide")
    if ty != "float":
        t.emit(f"{wide} = fpext {ty} {x} to float")
    result = t.call("float", "llvm.nvvm.lg2.approx.f", [("float", wide)], "log2")
    if ty == "float":
        t.names[op.result] = result
    else:
        t.define(op.result, f"fptrunc float {result} to {ty}")


#: The rules this backend has of its own, before the shared ones; its intrinsic modules add theirs.
RULES: dict[type, Rule] = {**GENERIC_RULES, D.MmaWaitOp: _mma_wait, math.Log2Op: _log2}
Translator.RULES = RULES


def translate(kernel: D.KernelOp, arch: Arch, locations: dict[Operation, SourceLocation] | None = None
              ) -> tuple[str, KernelABI]:
    """LLVM IR text of a lowered kernel and the parameter layout the runtime must pass."""
    return Translator(kernel, arch, locations).translate()


__all__ = ["COOPERATIVE_COPIES", "COPY_ATOMS", "RULES", "KernelABI", "Param", "Translator", "convergent",
           "copy_differences", "copy_instruction", "element_type", "ident", "inline_asm", "translate"]
