"""The ``argus`` dialect (layouts lowered) to LLVM IR for ``nvptx64-nvidia-cuda``, as text.

One kernel becomes one ``ptx_kernel`` function. Its parameters: a ``ptr addrspace(1)`` per
global tensor followed by an ``i32`` for each of that tensor's dims named at launch, then
the scalars in order (`KernelABI` says which is which, for the runtime). Shared tiles become
``addrspace(3)`` globals, local tiles and variables ``alloca``s that LLVM promotes to
registers once every index is constant. The semantics follow the reference interpreter: a
floor division or remainder by zero divides by one, shifts past the width give 0 (left) or
the sign/zero fill (right), float-to-int conversions saturate and send NaN to 0, and a shuffle
from a lane outside the warp returns the thread's own value.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from argus.dsl import dialect as D
from argus.dsl.assumptions import LaunchCondition, launch_conditions
from argus.dsl.atoms import CopyAtom, MMAAtom
from argus.dsl.dtypes import DType
from argus.dsl.errors import SourceLocation
from argus.dsl.types import dtype_of_mlir
from argus.layout import ComposedLayout, Layout
from xdsl.dialects import arith, builtin, math, scf
from xdsl.ir import Attribute, Block, Operation, SSAValue

from .errors import CodegenError
from .instructions import Instruction, mma_instruction
from .targets import Arch
from .warpgroup import NotDescribable, descriptor_form, runs_as_wgmma, wgmma_text

#: 128-bit values are vectors of words: they load and store as one access and views of them as
#: words need no 128-bit shifts.
_WORDS = "<4 x i32>"
#: LLVM type of each DSL element type that the backend handles.
_TYPES = {"bool": "i1", "i8": "i8", "i16": "i16", "i32": "i32", "i64": "i64", "u8": "i8", "u16": "i16",
          "u32": "i32", "u64": "i64", "u128": "<4 x i32>", "f16": "half", "bf16": "bfloat", "f32": "float",
          "f64": "double"}


@dataclass(frozen=True)
class Param:
    """One kernel parameter as the runtime passes it: a tensor's pointer, one of its named dims,
    or a scalar."""

    kind: str  # "pointer" | "dim" | "scalar" | "tensormap"
    name: str
    llvm_type: str
    tensor: int = -1
    """For a pointer or a dim: the index of its tensor among the kernel's runtime arguments."""
    axis: int = -1
    symbol: str = ""
    """For a dim: the size's name in the kernel's signature (dims named alike must agree)."""
    dtype: str = ""
    """For a pointer: the tensor's element type (checked against the argument's)."""
    align: int = 1
    """For a pointer: the alignment in bytes the kernel relies on (its widest view's element)."""
    box: tuple[int, ...] = ()
    """For a tensor map (a bulk copy's description of its tensor, made at launch): the box
    copied, in elements per tensor dim (the tensor's own order)."""
    swizzle: int = 0
    """For a tensor map: the bytes of the shared-memory swizzle the copy writes (0: none)."""


@dataclass(frozen=True)
class KernelABI:
    name: str
    arguments: tuple[str, ...]
    """The runtime arguments' names, in order."""
    params: tuple[Param, ...]
    block: tuple[int, int, int]
    shared_bytes: int = 0
    """Dynamic shared memory the launch must give (the kernel's tiles, when they pass the 48 KB
    a kernel may declare statically)."""
    conditions: tuple[LaunchCondition, ...] = ()
    """The kernel's assumptions a launch is checked against (see argus.dsl.assumptions)."""


@dataclass
class _Memory:
    """Where a tile's elements live: the base pointer of its allocation and its address space."""

    pointer: str
    space: int
    tensor: int = -1
    """For global memory: which tensor argument it belongs to."""


@dataclass
class _Function:
    lines: list[str] = field(default_factory=list)
    entry: list[str] = field(default_factory=list)
    """Allocas, kept in the entry block so that LLVM promotes them."""
    label: str = "entry"


def llvm_type(t: Attribute, where: SourceLocation | None = None) -> str:
    """The LLVM type of a value of MLIR type `t`."""
    try:
        dtype = dtype_of_mlir(t)
    except TypeError:
        raise CodegenError(f"the nvptx backend has no register type for {t}", where) from None
    if dtype.minifloat:
        raise CodegenError(f"the nvptx backend keeps {dtype} values in memory (copies and tensor-core products "
                           "read them); arithmetic on one in registers is not supported", where)
    return element_type(dtype, where)


def element_type(dtype: DType, where: SourceLocation | None = None) -> str:
    """The LLVM type of a DSL element type in memory (8-bit floats as their bits)."""
    found = "i8" if dtype.minifloat else _TYPES.get(dtype.name)
    if found is None:
        raise CodegenError(f"the nvptx backend has no register type for {dtype}; it handles "
                           f"{', '.join(sorted(_TYPES))}", where)
    return found


def _align(llvm: str) -> int:
    return max(_bits(llvm) // 8, 1)


def _bits(llvm: str) -> int:
    return {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "<4 x i32>": 128, "half": 16, "bfloat": 16,
            "float": 32, "double": 64}[llvm]


def _float_literal(value: float, llvm: str) -> str:
    if llvm == "double" or llvm == "float":  # LLVM writes float constants as the exact double
        if llvm == "float":
            value = struct.unpack("<f", struct.pack("<f", value))[0]
        return "0x%016X" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if llvm == "half":
        return "0xH%04X" % struct.unpack("<H", struct.pack("<e", value))[0]
    bits = struct.unpack("<I", struct.pack("<f", value))[0]  # bfloat: round to nearest even
    if value != value:
        return "0xR7FC0"
    return "0xR%04X" % (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)


class Translator:
    """Translates one lowered kernel. `translate()` returns the LLVM module text and its ABI."""

    def __init__(self, kernel: D.KernelOp, arch: Arch, locations: dict[Operation, SourceLocation] | None = None) -> None:
        self.kernel = kernel
        self.arch = arch
        self.locations = locations or {}
        self.names: dict[SSAValue, str] = {}
        self.memories: dict[SSAValue, _Memory] = {}
        self.dims: dict[tuple[SSAValue, int], str] = {}
        self.alignment: dict[int, int] = {}
        """Per tensor argument, the widest element it is read or written as."""
        self.declarations: set[str] = set()
        self.globals: list[str] = []
        self.fn = _Function()
        self.counter = 0
        self.wgmma_group: dict[str, str] | None = None
        """While warpgroup MMAs are in flight: their accumulators (pointer -> memory type)."""
        self.started: dict[tuple[str, int], str] = {}
        """Accumulators of warpgroup MMAs started asynchronously (matmul_async), pinned after
        every wait so that no use of them moves before it."""
        self.wgmma_streak = False
        """Whether the last op that did anything was a warpgroup MMA (no fence needed before the next)."""
        self.async_shared = any(isinstance(o, D.MmaOp) and o.starts for o in kernel.walk())
        """Whether an asynchronous unit reads shared memory (the barrier must order writes for it)."""
        self.shared_offsets, self.shared_bytes = _shared_plan(kernel)
        """Where each shared tile starts in dynamic shared memory, and its size (0: static tiles)."""
        self.tensor_maps: dict[tuple[int, tuple[int, ...], int], Param] = {}
        block = tuple(kernel.block_dims) + (1,) * (3 - len(kernel.block_dims))
        self.block: tuple[int, int, int] = block  # type: ignore[assignment]
        if kernel.warp_size.data != 32:
            raise CodegenError(f"NVIDIA warps have 32 threads; the kernel declares warp_size={kernel.warp_size.data}",
                               None)

    # ---- output ------------------------------------------------------------------------
    def translate(self) -> tuple[str, KernelABI]:
        name = self.kernel.sym_name.data
        params = self._parameters()
        self._block(self.kernel.body.block)
        params = [replace(p, align=self.alignment[p.tensor]) if p.kind == "pointer" else p for p in params]
        params += list(self.tensor_maps.values())
        arguments = tuple(n.data for n in self.kernel.arg_names.data)
        signature = [_signature(p, arguments) for p in params]
        self.emit("ret void")
        attrs = f'"nvvm.reqntid"="{",".join(map(str, self.block))}"'  # the block is fixed when compiled
        if self.kernel.min_blocks_per_sm is not None:
            attrs += f' "nvvm.minctasm"="{self.kernel.min_blocks_per_sm.data}"'
        if self.kernel.max_registers is not None:
            attrs += f' "nvvm.maxnreg"="{self.kernel.max_registers.data}"'
        body = "\n".join(["entry:", *self.fn.entry, *self.fn.lines])
        text = "\n".join([
            'target triple = "nvptx64-nvidia-cuda"',
            "",
            *self.globals,
            *(["@argus_dynamic_shared = external addrspace(3) global [0 x i8], align 1024"] if self.shared_bytes else []),
            "",
            f"define ptx_kernel void @{name}({', '.join(signature)}) #0 {{",
            body,
            "}",
            "",
            *sorted(self.declarations),
            "",
            f"attributes #0 = {{ {attrs} }}",
            "",
        ])
        conditions = tuple(launch_conditions(self.kernel, self.locations))
        return text, KernelABI(name, arguments, tuple(params), self.block, self.shared_bytes, conditions)

    def _parameters(self) -> list[Param]:
        names = [n.data for n in self.kernel.arg_names.data]
        params: list[Param] = []
        for index, (name, arg) in enumerate(zip(names, self.kernel.body.block.args)):
            t = arg.type
            if isinstance(t, D.TensorType):
                params.append(Param("pointer", name, "ptr addrspace(1)", index, dtype=t.dtype.name))
                self.memories[arg] = _Memory(f"%{_ident(name)}", 1, index)
                self.alignment[index] = t.dtype.nbytes
                for axis, dim in enumerate(t.shape):
                    if isinstance(dim, str):
                        params.append(Param("dim", f"{name}.shape[{axis}]", "i32", index, axis, dim))
                        self.dims[(arg, axis)] = f"%{_ident(name)}.dim{axis}"
                    else:
                        self.dims[(arg, axis)] = str(dim)
            else:
                params.append(Param("scalar", name, llvm_type(t), index))
                self.names[arg] = f"%{_ident(name)}"
        return params

    # ---- helpers -----------------------------------------------------------------------
    def emit(self, text: str) -> None:
        self.fn.lines.append(f"  {text}")

    def let(self, text: str, hint: str = "v") -> str:
        """Emit ``%new = text`` and return %new."""
        out = self.fresh(hint)
        self.emit(f"{out} = {text}")
        return out

    def fresh(self, hint: str = "v") -> str:
        self.counter += 1
        return f"%{hint}{self.counter}"

    def label(self, hint: str) -> str:
        self.counter += 1
        return f"{hint}{self.counter}"

    def start(self, label: str) -> None:
        self.fn.lines.append(f"{label}:")
        self.fn.label = label

    def declare(self, text: str) -> None:
        self.declarations.add(f"declare {text}")

    def call(self, ret: str, name: str, args: list[tuple[str, str]], hint: str = "v") -> str:
        self.declare(f"{ret} @{name}({', '.join(t for t, _ in args)})")
        arglist = ", ".join(f"{t} {v}" for t, v in args)
        if ret == "void":
            self.emit(f"call void @{name}({arglist})")
            return ""
        out = self.fresh(hint)
        self.emit(f"{out} = call {ret} @{name}({arglist})")
        return out

    def value(self, v: SSAValue) -> str:
        name = self.names.get(v)
        if name is None:
            raise CodegenError(f"internal: a value used before its definition ({v})", None)
        return name

    def define(self, v: SSAValue, text: str, hint: str = "v") -> str:
        out = self.fresh(hint)
        self.emit(f"{out} = {text}")
        self.names[v] = out
        return out

    def where(self, op: Operation) -> SourceLocation | None:
        return self.locations.get(op)

    def unsupported(self, op: Operation, what: str) -> CodegenError:
        return CodegenError(f"{what} is not supported by the nvptx backend ({self.arch.name})", self.where(op))

    # ---- walking -----------------------------------------------------------------------
    def _block(self, block: Block) -> None:
        for op in block.ops:
            rule = _RULES.get(type(op))
            if rule is None:
                raise self.unsupported(op, f"the operation {op.name}")
            quiet = _leaves_wgmma_in_flight(op)
            if self.wgmma_group is not None and not quiet:
                _wait_wgmma(self)
            if not quiet:
                self.wgmma_streak = False
            try:
                rule(self, op)
            except CodegenError as err:
                if err.location is not None or self.where(op) is None:
                    raise
                raise CodegenError(err.message, self.where(op), err.construct) from None  # the op's line
        if self.wgmma_group is not None:
            _wait_wgmma(self)

    # ---- indices -----------------------------------------------------------------------
    def sreg(self, name: str) -> str:
        return self.call("i32", f"llvm.nvvm.read.ptx.sreg.{name}", [], "s")

    def linear_thread(self) -> str:
        bx, by, bz = self.block
        x = self.sreg("tid.x")
        if by == 1 and bz == 1:
            return x
        y, z = self.sreg("tid.y"), self.sreg("tid.z")
        yz = self.let(f"mul nuw nsw i32 {z}, {by}")
        row = self.let(f"add nuw nsw i32 {yz}, {y}")
        scaled = self.let(f"mul nuw nsw i32 {row}, {bx}")
        out = self.let(f"add nuw nsw i32 {scaled}, {x}")
        return out

    # ---- memory ------------------------------------------------------------------------
    def memory(self, v: SSAValue, op: Operation) -> _Memory:
        found = self.memories.get(v)
        if found is None:
            raise CodegenError(f"internal: no memory for {v}", self.where(op))
        return found

    def element_pointer(self, memory: _Memory, element: str, offset: str) -> str:
        space = f" addrspace({memory.space})" if memory.space else ""
        out = self.fresh("p")
        self.emit(f"{out} = getelementptr inbounds {element}, ptr{space} {memory.pointer}, i32 {offset}")
        return out

    def load(self, ty: str, memory: _Memory, pointer: str) -> str:
        """A load of one element, naturally aligned (tensors are checked at launch to be)."""
        space = f" addrspace({memory.space})" if memory.space else ""
        return self.let(f"load {ty}, ptr{space} {pointer}, align {_align(ty)}")

    def store(self, ty: str, value: str, memory: _Memory, pointer: str) -> None:
        space = f" addrspace({memory.space})" if memory.space else ""
        self.emit(f"store {ty} {value}, ptr{space} {pointer}, align {_align(ty)}")

    def alloca(self, llvm: str, count: int, align: int = 16) -> str:
        out = self.fresh("a")
        self.fn.entry.append(f"  {out} = alloca [{count} x {llvm}], align {align}")
        return out

    def fragment(self, tile: SSAValue, op: Operation) -> tuple[_Memory, str, list[int]]:
        """A tile's memory, element type and the element offsets of its values in order."""
        t = tile.type
        assert isinstance(t, D.TileType)
        chain = tile
        while isinstance(chain.owner, (D.SliceOp, D.ViewOp)):
            chain = chain.owner.source  # type: ignore[union-attr]
        if isinstance(chain.owner, D.PartitionOp):
            raise self.unsupported(op, "a fragment of a partition chosen at run time")
        return self.memory(tile, op), element_type(t.dtype, self.where(op)), _offsets(t.layout)


def _offsets(layout: Layout | ComposedLayout) -> list[int]:
    return [int(x) for x in layout.offsets()]


def _signature(param: Param, arguments: tuple[str, ...]) -> str:
    """A parameter in the function's signature, with the register name the body uses."""
    ident = _ident(arguments[param.tensor])
    if param.kind == "tensormap":
        return f"ptr addrspace(1) align 64 %{_ident(param.name)}"
    if param.kind == "pointer":
        return f"ptr addrspace(1) align {param.align} %{ident}"
    if param.kind == "dim":
        return f"i32 %{ident}.dim{param.axis}"
    return f"{param.llvm_type} %{ident}"


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


# ---- rules -------------------------------------------------------------------------------------

_PRIVATE = _Memory("", 0)
"""Where variables live: a thread's own memory (address space 0, promoted to registers)."""

Rule = Callable[[Translator, Any], None]


def _constant(t: Translator, op: arith.ConstantOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    attr = op.value
    if ty == "i1":
        t.names[op.result] = "true" if attr.value.data else "false"  # type: ignore[union-attr]
    elif ty.startswith("i"):
        t.names[op.result] = str(attr.value.data)  # type: ignore[union-attr]
    elif ty == _WORDS:  # 128 bits as four 32-bit words, the lowest first
        bits = int(attr.value.data) % (1 << 128)  # type: ignore[union-attr]
        t.names[op.result] = "<" + ", ".join(f"i32 {(bits >> (32 * i)) & 0xFFFFFFFF}" for i in range(4)) + ">"
    else:
        t.names[op.result] = _float_literal(float(attr.value.data), ty)  # type: ignore[union-attr]


_INT_BINARY = {arith.AddiOp: "add", arith.SubiOp: "sub", arith.MuliOp: "mul", arith.AndIOp: "and",
               arith.OrIOp: "or", arith.XOrIOp: "xor"}
_FLOAT_BINARY = {arith.AddfOp: "fadd", arith.SubfOp: "fsub", arith.MulfOp: "fmul", arith.DivfOp: "fdiv"}
_MINMAX = {arith.MinSIOp: "smin", arith.MaxSIOp: "smax", arith.MinUIOp: "umin", arith.MaxUIOp: "umax",
           arith.MinimumfOp: "minimum", arith.MaximumfOp: "maximum"}


def _binary(t: Translator, op: Any) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    a, b = t.value(op.lhs), t.value(op.rhs)
    instr = _INT_BINARY.get(type(op)) or _FLOAT_BINARY[type(op)]
    t.define(op.result, f"{instr} {ty} {a}, {b}")


def _minmax(t: Translator, op: Any) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    name = _MINMAX[type(op)]
    out = t.call(ty, f"llvm.{name}.{_suffix(ty)}", [(ty, t.value(op.lhs)), (ty, t.value(op.rhs))])
    t.names[op.result] = out


def _suffix(ty: str) -> str:
    return {"float": "f32", "double": "f64", "half": "f16", "bfloat": "bf16"}.get(ty, ty)


def _nonzero(t: Translator, ty: str, b: str) -> str:
    """The divisor, with 0 replaced by 1 (the interpreter's division by zero)."""
    if b.lstrip("-").isdigit():
        return b if int(b) != 0 else "1"
    zero = t.let(f"icmp eq {ty} {b}, 0")
    safe = t.let(f"select i1 {zero}, {ty} 1, {ty} {b}")
    return safe


def _floordiv(t: Translator, op: arith.FloorDivSIOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    a, b = t.value(op.lhs), _nonzero(t, ty, t.value(op.rhs))
    q = t.let(f"sdiv {ty} {a}, {b}")
    r = t.let(f"srem {ty} {a}, {b}")
    # floor: one less when the remainder is nonzero and its sign differs from the divisor's
    nonzero = t.let(f"icmp ne {ty} {r}, 0")
    signs = t.let(f"xor {ty} {r}, {b}")
    differ = t.let(f"icmp slt {ty} {signs}, 0")
    fix = _zext(t, t.let(f"and i1 {nonzero}, {differ}"), ty)
    t.names[op.result] = t.let(f"sub {ty} {q}, {fix}")


def _zext(t: Translator, bit: str, ty: str) -> str:
    out = t.let(f"zext i1 {bit} to {ty}")
    return out


def _division(t: Translator, op: Any) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    instr = {arith.DivUIOp: "udiv", arith.RemUIOp: "urem", arith.RemSIOp: "srem"}[type(op)]
    t.define(op.result, f"{instr} {ty} {t.value(op.lhs)}, {_nonzero(t, ty, t.value(op.rhs))}")


def _shift(t: Translator, op: Any) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    width = _bits(ty)
    a, b = t.value(op.lhs), t.value(op.rhs)
    instr = {arith.ShLIOp: "shl", arith.ShRSIOp: "ashr", arith.ShRUIOp: "lshr"}[type(op)]
    if b.lstrip("-").isdigit() and 0 <= int(b) < width:
        t.define(op.result, f"{instr} {ty} {a}, {b}")
        return
    # out-of-range amounts: shl gives 0; right shifts shift by width - 1 (interpreter semantics)
    inside = t.let(f"icmp ult {ty} {b}, {width}")
    if instr == "shl":
        shifted = t.let(f"shl {ty} {a}, {b}")
        t.define(op.result, f"select i1 {inside}, {ty} {shifted}, {ty} 0")
        return
    negative = t.let(f"icmp slt {ty} {b}, 0")
    clamped = t.let(f"select i1 {inside}, {ty} {b}, {ty} {width - 1}")
    amount = t.let(f"select i1 {negative}, {ty} 0, {ty} {clamped}")
    t.define(op.result, f"{instr} {ty} {a}, {amount}")


_ICMP = {0: "eq", 1: "ne", 2: "slt", 3: "sle", 4: "sgt", 5: "sge", 6: "ult", 7: "ule", 8: "ugt", 9: "uge"}
_FCMP = {0: "false", 1: "oeq", 2: "ogt", 3: "oge", 4: "olt", 5: "ole", 6: "one", 7: "ord", 8: "ueq", 9: "ugt",
         10: "uge", 11: "ult", 12: "ule", 13: "une", 14: "uno", 15: "true"}


def _compare(t: Translator, op: arith.CmpiOp | arith.CmpfOp) -> None:
    ty = llvm_type(op.lhs.type, t.where(op))
    instr, predicates = ("icmp", _ICMP) if isinstance(op, arith.CmpiOp) else ("fcmp", _FCMP)
    t.define(op.result, f"{instr} {predicates[op.predicate.value.data]} {ty} {t.value(op.lhs)}, {t.value(op.rhs)}")


def _select(t: Translator, op: arith.SelectOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    t.define(op.result, f"select i1 {t.value(op.cond)}, {ty} {t.value(op.lhs)}, {ty} {t.value(op.rhs)}")


def _negf(t: Translator, op: arith.NegfOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    t.define(op.result, f"fneg {ty} {t.value(op.operand)}")


_CASTS = {arith.ExtFOp: "fpext", arith.TruncFOp: "fptrunc", arith.SIToFPOp: "sitofp", arith.UIToFPOp: "uitofp",
          arith.TruncIOp: "trunc", arith.ExtSIOp: "sext", arith.ExtUIOp: "zext"}


def _cast(t: Translator, op: Any) -> None:
    src = llvm_type(op.operands[0].type, t.where(op))
    dst = llvm_type(op.result.type, t.where(op))
    x = t.value(op.operands[0])
    if isinstance(op, (arith.FPToSIOp, arith.FPToUIOp)):  # saturating, NaN -> 0, like the interpreter
        kind = "fptosi" if isinstance(op, arith.FPToSIOp) else "fptoui"
        t.names[op.result] = t.call(dst, f"llvm.{kind}.sat.{dst}.{_suffix(src)}", [(src, x)])
        return
    t.define(op.result, f"{_CASTS[type(op)]} {src} {x} to {dst}")


_MATH = {math.Exp2Op: "exp2", math.Log2Op: "log2", math.SqrtOp: "sqrt"}


def _math(t: Translator, op: Any) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    x = t.value(op.operands[0])
    if isinstance(op, math.RsqrtOp):
        root = t.call(ty, f"llvm.sqrt.{_suffix(ty)}", [(ty, x)])
        t.define(op.result, f"fdiv {ty} {_float_literal(1.0, ty)}, {root}")
        return
    t.names[op.result] = t.call(ty, f"llvm.{_MATH[type(op)]}.{_suffix(ty)}", [(ty, x)])


def _fma(t: Translator, op: math.FmaOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    a, b, c = (t.value(v) for v in op.operands)
    t.names[op.result] = t.call(ty, f"llvm.fma.{_suffix(ty)}", [(ty, a), (ty, b), (ty, c)])


def _index(t: Translator, op: Any) -> None:
    dim = op.dim.data
    axis = "xyz".index(dim)
    if isinstance(op, D.BlockDimOp):
        t.names[op.result] = str(t.block[axis])
        return
    if isinstance(op, D.ThreadIdxOp) and t.block[axis] == 1:
        t.names[op.result] = "0"
        return
    name = {D.ThreadIdxOp: "tid", D.BlockIdxOp: "ctaid", D.GridDimOp: "nctaid"}[type(op)]
    t.names[op.result] = t.sreg(f"{name}.{dim}")


def _lane_or_warp(t: Translator, op: Any) -> None:
    tid = t.linear_thread()
    instr = "and" if isinstance(op, D.LaneIdOp) else "lshr"
    t.define(op.result, f"{instr} i32 {tid}, {31 if isinstance(op, D.LaneIdOp) else 5}")


def _dim(t: Translator, op: D.DimOp) -> None:
    found = t.dims.get((op.tensor, op.index.data))
    if found is None:
        raise CodegenError(f"internal: no size for dim {op.index.data}", t.where(op))
    t.names[op.result] = found


def _tensor_view(t: Translator, op: D.TensorViewOp) -> None:
    memory = t.memories[op.result] = t.memory(op.source, op)
    t.alignment[memory.tensor] = max(t.alignment[memory.tensor], op.result.type.dtype.nbytes)  # type: ignore[attr-defined]
    runtime = iter(op.dims)
    shape = op.result.type.shape  # type: ignore[attr-defined]
    for axis, dim in enumerate(shape):
        t.dims[(op.result, axis)] = t.value(next(runtime)) if isinstance(dim, str) else str(dim)


#: The shared memory a kernel may declare statically; more is dynamic (and asked for at launch).
STATIC_SHARED = 48 * 1024


def _shared_plan(kernel: D.KernelOp) -> tuple[dict[Operation, int], int]:
    """Offsets of the shared tiles in one dynamic allocation, and its size, when the tiles need
    more than a kernel may declare statically (otherwise each tile is its own global)."""
    offsets: dict[Operation, int] = {}
    end = 0
    for op in kernel.walk():
        if isinstance(op, D.MakeSharedOp):
            tile: D.TileType = op.result.type  # type: ignore[assignment]
            align = _shared_alignment(tile)
            start = -(-end // align) * align
            offsets[op] = start
            end = start + tile.footprint * tile.dtype.nbytes
    return (offsets, end) if end > STATIC_SHARED else ({}, 0)


def _make_shared(t: Translator, op: D.MakeSharedOp) -> None:
    tile: D.TileType = op.result.type  # type: ignore[assignment]
    ty = element_type(tile.dtype, t.where(op))
    if t.shared_bytes:
        offset = t.shared_offsets[op]
        t.memories[op.result] = _Memory(f"getelementptr (i8, ptr addrspace(3) @argus_dynamic_shared, i32 {offset})", 3)
        return
    count = tile.footprint
    name = f"@smem{len(t.globals)}"
    t.globals.append(f"{name} = internal addrspace(3) global [{count} x {ty}] undef, align {_shared_alignment(tile)}")
    t.memories[op.result] = _Memory(name, 3)


def _shared_alignment(tile: D.TileType) -> int:
    """At least 128 bytes; a swizzled tile is aligned to its swizzle's period, so that a unit
    that swizzles addresses (wgmma, TMA) sees the layout's swizzle of offsets."""
    layout = tile.layout
    if isinstance(layout, ComposedLayout) and getattr(layout.outer, "bits", 0):
        sw = layout.outer
        return max(128, (1 << (sw.bits + sw.base + sw.shift)) * tile.dtype.nbytes)
    return 128


def _make_local(t: Translator, op: D.MakeLocalOp) -> None:
    tile: D.TileType = op.result.type  # type: ignore[assignment]
    ty = element_type(tile.dtype, t.where(op))
    t.memories[op.result] = _Memory(t.alloca(ty, tile.footprint), 0)


def _same_memory(t: Translator, op: Any) -> None:
    t.memories[op.result] = t.memory(op.source, op)


def _load_at(t: Translator, op: D.LoadAtOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    memory = t.memory(op.source, op)
    t.names[op.result] = t.load(ty, memory, t.element_pointer(memory, ty, t.value(op.offset)))


def _store_at(t: Translator, op: D.StoreAtOp) -> None:
    ty = llvm_type(op.value.type, t.where(op))
    memory = t.memory(op.target, op)
    t.store(ty, t.value(op.value), memory, t.element_pointer(memory, ty, t.value(op.offset)))


def _var(t: Translator, op: D.VarOp) -> None:
    ty = element_type(op.result.type.dtype, t.where(op))  # type: ignore[attr-defined]
    t.names[op.result] = t.alloca(ty, 1, 8)


def _var_load(t: Translator, op: D.VarLoadOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    t.names[op.result] = t.load(ty, _PRIVATE, t.value(op.var))


def _var_store(t: Translator, op: D.VarStoreOp) -> None:
    ty = llvm_type(op.value.type, t.where(op))
    t.store(ty, t.value(op.value), _PRIVATE, t.value(op.var))


def _sync(t: Translator, op: D.SyncThreadsOp) -> None:
    if t.async_shared:  # the threads' shared writes become visible to the async proxy (wgmma)
        t.emit('call void asm sideeffect "fence.proxy.async.shared::cta;", "~{memory}"()')
    t.call("void", "llvm.nvvm.barrier.cta.sync.aligned.all", [("i32", "0")])


def _assume(t: Translator, op: D.AssumeOp) -> None:
    t.call("void", "llvm.assume", [("i1", t.value(op.cond))])


def _nothing(t: Translator, op: Operation) -> None:
    """Tag functions, tag assertions and tag resets are checked at compile time only."""


def _if(t: Translator, op: scf.IfOp) -> None:
    then, other, join = t.label("then"), t.label("else"), t.label("endif")
    has_else = bool(op.false_region.blocks) and any(not isinstance(o, scf.YieldOp) for o in op.false_region.block.ops)
    t.emit(f"br i1 {t.value(op.cond)}, label %{then}, label %{other if has_else else join}")
    t.start(then)
    t._block(op.true_region.block)
    t.emit(f"br label %{join}")
    if has_else:
        t.start(other)
        t._block(op.false_region.block)
        t.emit(f"br label %{join}")
    t.start(join)


def _for(t: Translator, op: scf.ForOp) -> None:
    """``for (i = lb; i < ub; i += step)``, as the interpreter runs it (a signed comparison)."""
    if op.results:
        raise t.unsupported(op, "a loop carrying values (scf.for with results)")
    lb, ub, step = t.value(op.lb), t.value(op.ub), t.value(op.step)
    before = t.fn.label
    head, body, done = t.label("loop"), t.label("body"), t.label("done")
    t.emit(f"br label %{head}")
    t.start(head)
    iv = t.fresh("i")
    t.names[op.body.block.args[0]] = iv
    phi_at = len(t.fn.lines)
    t.fn.lines.append("")  # the phi, filled in once the latch block is known
    more = t.let(f"icmp slt i32 {iv}, {ub}")
    t.emit(f"br i1 {more}, label %{body}, label %{done}")
    t.start(body)
    t._block(op.body.block)
    latch = t.fn.label
    nxt = t.fresh("i")
    t.emit(f"{nxt} = add i32 {iv}, {step}")
    t.emit(f"br label %{head}")
    t.fn.lines[phi_at] = f"  {iv} = phi i32 [ {lb}, %{before} ], [ {nxt}, %{latch} ]"
    t.start(done)


def _yield(t: Translator, op: scf.YieldOp) -> None:
    if op.operands:
        raise t.unsupported(op, "a region yielding values")


def _shuffle(t: Translator, op: D.ShuffleOp) -> None:
    ty = llvm_type(op.value.type, t.where(op))
    bits = _bits(ty)
    if bits > 32:
        raise t.unsupported(op, f"a shuffle of a {bits}-bit value")
    mode = op.mode.data
    kind = {"xor": "bfly", "idx": "idx", "down": "down", "up": "up"}[mode]
    x = t.value(op.value)
    word = x
    if ty != "i32":
        raw = x
        if ty in ("half", "bfloat", "float"):
            raw = t.let(f"bitcast {ty} {x} to i{bits}")
        if bits < 32:
            word = t.let(f"zext i{bits} {raw} to i32")
        else:
            word = raw
    lane = t.value(op.lane)
    clamp = "0" if kind == "up" else "31"
    got = t.call("i32", f"llvm.nvvm.shfl.sync.{kind}.i32", [("i32", "-1"), ("i32", word), ("i32", lane), ("i32", clamp)])
    if kind == "idx":  # a source lane outside the warp: the thread's own value (PTX would wrap)
        inside = t.let(f"icmp ult i32 {lane}, 32")
        picked = t.let(f"select i1 {inside}, i32 {got}, i32 {word}")
        got = picked
    if ty == "i32":
        t.names[op.result] = got
        return
    narrow = got
    if bits < 32:
        narrow = t.let(f"trunc i32 {got} to i{bits}")
    if ty in ("half", "bfloat", "float"):
        t.define(op.result, f"bitcast i{bits} {narrow} to {ty}")
    else:
        t.names[op.result] = narrow


def _as_int(t: Translator, x: str, ty: str) -> str:
    if ty.startswith("i"):
        return x
    out = t.let(f"bitcast {ty} {x} to i{_bits(ty)}")
    return out


def _from_int(t: Translator, x: str, ty: str, result: SSAValue) -> None:
    if ty.startswith("i"):
        t.names[result] = x
    else:
        t.define(result, f"bitcast i{_bits(ty)} {x} to {ty}")


def _bitcast(t: Translator, op: D.BitcastOp) -> None:
    src, dst = llvm_type(op.value.type, t.where(op)), llvm_type(op.result.type, t.where(op))
    t.define(op.result, f"bitcast {src} {t.value(op.value)} to {dst}")


def _concat(t: Translator, op: D.ConcatOp) -> None:
    dst = llvm_type(op.result.type, t.where(op))
    width = _bits(dst)
    total, shift = "0", 0
    for v in op.values:
        ty = llvm_type(v.type, t.where(op))
        part = _as_int(t, t.value(v), ty)
        wide = t.let(f"zext i{_bits(ty)} {part} to i{width}") if _bits(ty) < width else part
        if shift:
            wide = t.let(f"shl i{width} {wide}, {shift}")
        total, shift = t.let(f"or i{width} {total}, {wide}"), shift + _bits(ty)
    _from_int(t, total, dst, op.result)


def _extract(t: Translator, op: D.ExtractOp) -> None:
    src, dst = llvm_type(op.value.type, t.where(op)), llvm_type(op.result.type, t.where(op))
    word = _as_int(t, t.value(op.value), src)
    shift = 8 * op.byte.data
    if shift:
        moved = t.let(f"lshr i{_bits(src)} {word}, {shift}")
        word = moved
    if _bits(dst) < _bits(src):
        narrow = t.let(f"trunc i{_bits(src)} {word} to i{_bits(dst)}")
        word = narrow
    _from_int(t, word, dst, op.result)


def _byte_perm(t: Translator, op: D.BytePermOp) -> None:
    a_ty, b_ty = llvm_type(op.a.type, t.where(op)), llvm_type(op.b.type, t.where(op))
    dst = llvm_type(op.result.type, t.where(op))
    wa, wb, width = _bits(a_ty), _bits(b_ty), _bits(dst)
    both = wa + wb
    a = _as_int(t, t.value(op.a), a_ty)
    b = _as_int(t, t.value(op.b), b_ty)
    wide_a = t.let(f"zext i{wa} {a} to i{both}")
    wide_b = t.let(f"zext i{wb} {b} to i{both}")
    high = t.let(f"shl i{both} {wide_b}, {wa}")
    joined = t.let(f"or i{both} {wide_a}, {high}")
    total = "0"
    for k, pick in enumerate(i.data for i in op.selector.data):
        byte = t.let(f"lshr i{both} {joined}, {8 * pick}")
        low = t.let(f"trunc i{both} {byte} to i8")
        wide = t.let(f"zext i8 {low} to i{width}")
        placed = t.let(f"shl i{width} {wide}, {8 * k}")
        acc = t.let(f"or i{width} {total}, {placed}")
        total = acc
    _from_int(t, total, dst, op.result)


_ATOMIC_INT = {"add": "add", "max": "max", "min": "min", "exchange": "xchg"}
_ATOMIC_FLOAT = {"add": "fadd", "max": "fmax", "min": "fmin", "exchange": "xchg"}


def _atomic(t: Translator, op: D.AtomicOp) -> None:
    ty = llvm_type(op.result.type, t.where(op))
    kind = op.kind.data
    table = _ATOMIC_INT if ty.startswith("i") else _ATOMIC_FLOAT
    if kind not in table:
        raise t.unsupported(op, f"atomic {kind!r}")
    if op.coords and len(op.coords) != 1:
        raise t.unsupported(op, "an atomic addressed by coordinates (lower layouts first)")
    memory = t.memory(op.target, op)
    pointer = t.element_pointer(memory, ty, t.value(op.coords[0]))
    space = f" addrspace({memory.space})" if memory.space else ""
    t.define(op.result, f"atomicrmw {table[kind]} ptr{space} {pointer}, {ty} {t.value(op.value)} monotonic")


def _mma(t: Translator, op: D.MmaOp) -> None:
    atom = MMAAtom.from_properties({k: v.data for k, v in op.atom.data.items()})  # type: ignore[attr-defined]
    if atom.threads == 1 and atom.shape == (1, 1, 1):
        _scalar_fma(t, op, atom)
        return
    if atom.a_layout is None or atom.b_layout is None:
        _warpgroup_mma(t, op, atom)
        return
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
        t.emit('call void asm sideeffect "wgmma.fence.sync.aligned;", "~{memory}"()')
    t.wgmma_streak = True
    if not started and t.wgmma_group is None:
        t.wgmma_group = {}
    values = [t.load(ty, memory, p) for p in pointers]
    count = len(values)
    struct_ty = "{ " + ", ".join(["float"] * count) + " }"
    constraints = ",".join(["=f"] * count + [str(i) for i in range(count)] + ["l", "l", "r"])
    args = ", ".join([f"float {v}" for v in values] + [f"i64 {d}" for d in descriptors] + ["i32 1"])
    result = t.let(f'call {struct_ty} asm sideeffect "{wgmma_text(atom, 2 * count)}", "{constraints}"({args})')
    for i, pointer in enumerate(pointers):
        t.store(ty, t.let(f"extractvalue {struct_ty} {result}, {i}"), memory, pointer)
        if started:  # the accumulator by allocation and offset: its pointer here may not reach the wait
            t.started[(memory.pointer, offsets[i])] = ty
        else:
            t.wgmma_group[pointer] = ty  # type: ignore[index]
    if started:
        t.emit('call void asm sideeffect "wgmma.commit_group.sync.aligned;", "~{memory}"()')


def _mma_wait(t: Translator, op: D.MmaWaitOp) -> None:
    """matmul_wait: the warpgroup MMAs started asynchronously, all but the last `pending`."""
    if not t.started:
        return  # every product ran synchronously
    t.emit(f'call void asm sideeffect "wgmma.wait_group.sync.aligned {op.pending.data};", "~{{memory}}"()')
    _pin(t, {t.element_pointer(_Memory(base, 0), ty, str(offset)): ty for (base, offset), ty in t.started.items()})


def _wait_wgmma(t: Translator) -> None:
    """Commit the group in flight, wait for it, and pin its accumulators after the wait (so no
    use of them is scheduled before it)."""
    group = t.wgmma_group or {}
    t.wgmma_group = None
    t.emit('call void asm sideeffect "wgmma.commit_group.sync.aligned;", "~{memory}"()')
    t.emit('call void asm sideeffect "wgmma.wait_group.sync.aligned 0;", "~{memory}"()')
    _pin(t, group)


def _pin(t: Translator, accumulators: dict[str, str]) -> None:
    """Pass each accumulator through an empty asm after a wait: uses of them stay after it."""
    for pointer, ty in accumulators.items():  # accumulators are registers (allocas promoted)
        value = t.let(f"load {ty}, ptr {pointer}, align {_align(ty)}")
        pinned = t.let(f'call {ty} asm sideeffect "", "=f,0"({ty} {value})')
        t.emit(f"store {ty} {pinned}, ptr {pointer}, align {_align(ty)}")


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
                           "tiles either 128-byte swizzled (Swizzle(3, 3, 3) over 64-element rows for 16-bit types) "
                           "or in 8×16-byte core matrices", t.where(op)) from None
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
        if group == list(range(group[0], group[0] + per)) and group[0] * _align(ty) % 4 == 0:
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
    result = t.let(f'call {struct_ty} asm sideeffect "{instruction.text}", "{constraints}"({args})')
    return [t.let(f"extractvalue {struct_ty} {result}, {i}") for i in range(outs)]


def _constraint(ty: str) -> str:
    return {"float": "f", "i32": "r", "i64": "l", "double": "d"}[ty]


def _scalar_fma(t: Translator, op: D.MmaOp, atom: MMAAtom) -> None:
    loaded = []
    for tile in (op.a, op.b, op.c):
        memory, ty, offsets = t.fragment(tile, op)
        pointer = t.element_pointer(memory, ty, str(offsets[0]))
        loaded.append((ty, t.load(ty, memory, pointer), pointer, memory))
    (ta, a, _, _), (tb, b, _, _), (tc, c, cp, cm) = loaded
    for ty, name in ((ta, "a"), (tb, "b")):
        if ty != tc:
            raise t.unsupported(op, f"a scalar multiply-add with {name} of type {ty} and an accumulator of type {tc}")
    if tc.startswith("i"):
        prod = t.let(f"mul {tc} {a}, {b}")
        acc = t.let(f"add {tc} {prod}, {c}")
    else:
        acc = t.call(tc, f"llvm.fma.{_suffix(tc)}", [(tc, a), (tc, b), (tc, c)])
    t.store(tc, acc, cm, cp)


#: Code for cooperative copy atoms (a warp's matrix loads and stores), by atom name.
COOPERATIVE_COPIES: dict[str, Callable[[Translator, D.CopyOp, str], None]] = {}


def _copy(t: Translator, op: D.CopyOp) -> None:
    atom = CopyAtom.from_properties({k: v.data for k, v in op.atom.data.items()})  # type: ignore[attr-defined]
    if atom.threads != 1:
        cooperative = COOPERATIVE_COPIES.get(atom.name)
        if cooperative is None:
            raise t.unsupported(op, f"the cooperative copy atom {atom.name} (NVIDIA GPUs run "
                                    f"{', '.join(sorted(COOPERATIVE_COPIES))})")
        cooperative(t, op, atom.name)
        return
    src_memory, ty, src_offsets = t.fragment(op.source, op)
    dst_memory, _, dst_offsets = t.fragment(op.target, op)
    for s, d in zip(src_offsets, dst_offsets):
        value = t.load(ty, src_memory, t.element_pointer(src_memory, ty, str(s)))
        t.store(ty, value, dst_memory, t.element_pointer(dst_memory, ty, str(d)))


_RULES: dict[type, Rule] = {
    arith.ConstantOp: _constant,
    **{cls: _binary for cls in (*_INT_BINARY, *_FLOAT_BINARY)},
    **{cls: _minmax for cls in _MINMAX},
    arith.FloorDivSIOp: _floordiv,
    arith.DivUIOp: _division, arith.RemUIOp: _division, arith.RemSIOp: _division,
    arith.ShLIOp: _shift, arith.ShRSIOp: _shift, arith.ShRUIOp: _shift,
    arith.CmpiOp: _compare, arith.CmpfOp: _compare, arith.SelectOp: _select, arith.NegfOp: _negf,
    **{cls: _cast for cls in (*_CASTS, arith.FPToSIOp, arith.FPToUIOp)},
    **{cls: _math for cls in (*_MATH, math.RsqrtOp)},
    math.FmaOp: _fma,
    D.ThreadIdxOp: _index, D.BlockIdxOp: _index, D.BlockDimOp: _index, D.GridDimOp: _index,
    D.LaneIdOp: _lane_or_warp, D.WarpIdOp: _lane_or_warp,
    D.DimOp: _dim, D.TensorViewOp: _tensor_view,
    D.MakeSharedOp: _make_shared, D.MakeLocalOp: _make_local,
    D.SliceOp: _same_memory, D.ViewOp: _same_memory, D.PartitionOp: _same_memory,
    D.LoadAtOp: _load_at, D.StoreAtOp: _store_at,
    D.VarOp: _var, D.VarLoadOp: _var_load, D.VarStoreOp: _var_store,
    D.SyncThreadsOp: _sync, D.AssumeOp: _assume,
    D.TagOp: _nothing, D.TagAssertOp: _nothing, D.ResetTagsOp: _nothing,
    scf.IfOp: _if, scf.ForOp: _for, scf.YieldOp: _yield,
    D.ShuffleOp: _shuffle, D.BitcastOp: _bitcast, D.ConcatOp: _concat, D.ExtractOp: _extract,
    D.BytePermOp: _byte_perm, D.AtomicOp: _atomic, D.MmaOp: _mma, D.MmaWaitOp: _mma_wait, D.CopyOp: _copy,
}


def translate(kernel: D.KernelOp, arch: Arch, locations: dict[Operation, SourceLocation] | None = None
              ) -> tuple[str, KernelABI]:
    """LLVM IR text of a lowered kernel and the parameter layout the runtime must pass."""
    return Translator(kernel, arch, locations).translate()
