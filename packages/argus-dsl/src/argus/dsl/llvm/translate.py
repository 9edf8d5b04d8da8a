"""LLVM IR, as text, of a lowered kernel: what every LLVM-based backend shares.

A kernel becomes one function of the target's kernel calling convention. Its parameters: a
``ptr addrspace(1)`` per global tensor followed by an ``i32`` for each of that tensor's dims
named at launch, then the scalars in order (`KernelABI` says which is which, for the runtime).
Shared tiles become ``addrspace(3)`` globals, local tiles and variables ``alloca``s (in the
target's private address space) that LLVM promotes to registers once every index is constant.
Integer ops mean what `argus.dsl.ops.integers` defines; where the interpreter faults and the
GPU's result would be undefined, the lowering still gives that table's answer: a division or
remainder by zero divides by one, shifts by the width or more (the amount read unsigned) give
0, or the sign for an arithmetic right shift. Only the most negative value divided by -1 is
left to the target. Float-to-int conversions saturate and send NaN to 0, and a shuffle from a
lane outside the warp returns the thread's own value.

A backend subclasses `Translator`: its target triple and kernel attributes, where thread and
block indices come from, the block barrier, the cross-lane move under shuffles, and rules for
the ops only it has (its intrinsics, its matrix instructions, cooperative copies). Nothing here
imports LLVM itself: the text goes to llvmlite in the backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

from argus.layout import ComposedLayout, Layout
from xdsl.ir import Attribute, Block, Operation, SSAValue

from .. import assumptions
from ..ir import dialect as D
from ..assumptions import LaunchCondition, launch_conditions
from ..atoms import CopyAtom, MMAAtom
from ..dtypes import DType
from ..errors import CodegenError, SourceLocation
from ..ir.types import dtype_of_mlir

#: LLVM type of each DSL element type that the backend handles. 128-bit values are vectors of
#: words: they load and store as one access and views of them as words need no 128-bit shifts.
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
    shape: tuple[int | str, ...] = ()
    """For a pointer: the tensor's declared dims, each an int or a dim's name (a launch's array
    must have that many dims, and the int ones)."""


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

    def to_json(self) -> dict[str, Any]:
        """What a backend's disk cache stores, so that a cached kernel launches without its IR."""
        return {"name": self.name, "arguments": list(self.arguments), "params": [asdict(p) for p in self.params],
                "block": list(self.block), "shared_bytes": self.shared_bytes,
                "conditions": assumptions.to_json(self.conditions)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> KernelABI:
        params = tuple(Param(**{**p, "box": tuple(p.get("box", ())), "shape": tuple(p.get("shape", ()))})
                       for p in data["params"])
        return cls(data["name"], tuple(data["arguments"]), params, tuple(data["block"]),  # type: ignore[arg-type]
                   data.get("shared_bytes", 0), assumptions.from_json(data.get("conditions", [])))


@dataclass
class Memory:
    """Where a tile's elements live: the base pointer of its allocation and its address space."""

    pointer: str
    space: int
    tensor: int = -1
    """For global memory: which tensor argument it belongs to."""


@dataclass
class FunctionBody:
    """The LLVM function a translation writes: its instructions, the allocas of its entry
    block, and the label of the block being written (a rule's text goes in `lines`)."""

    lines: list[str] = field(default_factory=list)
    entry: list[str] = field(default_factory=list)
    """Allocas, kept in the entry block so that LLVM promotes them."""
    label: str = "entry"


def llvm_type(t: Attribute, where: SourceLocation | None = None) -> str:
    """The LLVM type of a value of MLIR type `t`."""
    return element_type(_dtype(t, where), where)


def arith_type(t: Attribute, where: SourceLocation | None = None) -> str:
    """The LLVM type of a value computed with: an 8-bit float is only moved (copies and
    tensor-core products read it), never computed with or converted in registers."""
    dtype = _dtype(t, where)
    if dtype.minifloat:
        raise CodegenError(f"{dtype} values are moved and multiplied by tensor cores here; arithmetic on one, or "
                           "converting one, in registers is not supported", where)
    return element_type(dtype, where)


def _dtype(t: Attribute, where: SourceLocation | None) -> DType:
    try:
        return dtype_of_mlir(t)
    except TypeError:
        raise CodegenError(f"no register type for {t}", where) from None


def element_type(dtype: DType, where: SourceLocation | None = None) -> str:
    """The LLVM type of a DSL element type in memory (8-bit floats as their bits)."""
    found = "i8" if dtype.minifloat else _TYPES.get(dtype.name)
    if found is None:
        raise CodegenError(f"no register type for {dtype}; the LLVM backends handle "
                           f"{', '.join(sorted(_TYPES))}", where)
    return found


def natural_alignment(llvm: str) -> int:
    return max(_bits(llvm) // 8, 1)


def _bits(llvm: str) -> int:
    return {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "<4 x i32>": 128, "half": 16, "bfloat": 16,
            "float": 32, "double": 64}[llvm]


bit_width = _bits
"""The width in bits of an LLVM type the translation emits (for op families' rules)."""


Rule = Callable[["Translator", Any], None]


class Translator:
    """Translates one lowered kernel; `translate()` returns the LLVM module text and its ABI.

    A backend's subclass sets `TRIPLE`, `CALLING_CONVENTION`, `PRIVATE_SPACE` and `RULES` (the
    generic `RULES` plus its own) and implements the target hooks below."""

    BACKEND: ClassVar[str] = "llvm"
    TRIPLE: ClassVar[str] = ""
    DATALAYOUT: ClassVar[str] = ""
    CALLING_CONVENTION: ClassVar[str] = ""
    PRIVATE_SPACE: ClassVar[int] = 0
    STATIC_SHARED: ClassVar[int | None] = None
    """The shared memory a kernel may declare statically; past it, its tiles go in one dynamic
    allocation the launch sizes (None: every tile is declared statically)."""
    """The address space of a thread's own memory (allocas)."""
    RULES: ClassVar[dict[type, Rule]] = {}

    def __init__(self, kernel: D.KernelOp, target: Any, locations: dict[Operation, SourceLocation] | None = None) -> None:
        from ..ir.registry import install

        install()  # every op family's meaning, the core language's and every backend's
        self.kernel = kernel
        self.target = target
        self.locations = locations or {}
        self.names: dict[SSAValue, str] = {}
        self.memories: dict[SSAValue, Memory] = {}
        self.dims: dict[tuple[SSAValue, int], str] = {}
        self.alignment: dict[int, int] = {}
        """Per tensor argument, the widest element it is read or written as."""
        self.declarations: set[str] = set()
        self.globals: list[str] = []
        self.fn = FunctionBody()
        self.counter = 0
        self.shared_offsets, self.shared_bytes = _shared_plan(kernel, self.STATIC_SHARED)
        """Where each shared tile starts in dynamic shared memory, and its size (0: static tiles)."""
        block = tuple(kernel.block_dims) + (1,) * (3 - len(kernel.block_dims))
        self.block: tuple[int, int, int] = block  # type: ignore[assignment]
        self.warp_size = kernel.warp_size.data

    # ---- target hooks ------------------------------------------------------------------
    def function_attributes(self) -> str:
        """The kernel function's attributes (``attributes #0 = { ... }``)."""
        return ""

    def extra_params(self) -> list[Param]:
        """Parameters the translation added after the kernel's own (a backend's descriptors)."""
        return []

    def index(self, kind: str, axis: int) -> str:
        """An i32: the thread's index in its block ("thread"), the block's in the grid
        ("block"), or the grid's size ("grid") along axis 0, 1 or 2."""
        raise NotImplementedError

    def barrier(self, op: Operation) -> None:
        """Every thread of the block waits here; shared-memory accesses before are ordered
        before those after."""
        raise NotImplementedError

    def shuffle_word(self, op: D.ShuffleOp, kind: str, word: str, lane: str) -> str:
        """The i32 `word` of another lane of the warp: `kind` is "xor", "idx", "down" or "up"
        with `lane` the mask, the lane or the distance; a lane outside the warp gives `word`."""
        raise NotImplementedError

    def matrix_multiply(self, op: D.MmaOp, atom: MMAAtom) -> None:
        """A matrix-multiply atom other than the scalar multiply-add every target has."""
        raise self.unsupported(op, f"the matrix-multiply atom {atom.name}")

    def cooperative_copy(self, op: D.CopyOp, atom: CopyAtom) -> None:
        """A copy atom that redistributes values among threads."""
        raise self.unsupported(op, f"the cooperative copy atom {atom.name}")

    def before(self, op: Operation) -> None:
        """Called before each op is translated (a target may close a batch of instructions)."""

    def after_block(self) -> None:
        """Called at the end of each block."""

    # ---- output ------------------------------------------------------------------------
    def translate(self) -> tuple[str, KernelABI]:
        name = self.kernel.sym_name.data
        params = self._parameters()
        self.translate_block(self.kernel.body.block)
        params = [replace(p, align=self.alignment[p.tensor]) if p.kind == "pointer" else p for p in params]
        params += self.extra_params()
        arguments = tuple(n.data for n in self.kernel.arg_names.data)
        signature = [_signature(p, arguments) for p in params]
        self.emit("ret void")
        body = "\n".join(["entry:", *self.fn.entry, *self.fn.lines])
        text = "\n".join([
            *([f'target datalayout = "{self.DATALAYOUT}"'] if self.DATALAYOUT else []),
            f'target triple = "{self.TRIPLE}"',
            "",
            *self.globals,
            *(["@argus_dynamic_shared = external addrspace(3) global [0 x i8], align 1024"] if self.shared_bytes else []),
            "",
            f"define {self.CALLING_CONVENTION} void @{name}({', '.join(signature)}) #0 {{",
            body,
            "}",
            "",
            *sorted(self.declarations),
            "",
            f"attributes #0 = {{ {self.function_attributes()} }}",
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
                params.append(Param("pointer", name, "ptr addrspace(1)", index, dtype=t.dtype.name,
                                    shape=tuple(t.shape)))
                self.memories[arg] = Memory(f"%{ident(name)}", 1, index)
                self.alignment[index] = t.dtype.nbytes
                for axis, dim in enumerate(t.shape):
                    if isinstance(dim, str):
                        params.append(Param("dim", f"{name}.shape[{axis}]", "i32", index, axis, dim))
                        self.dims[(arg, axis)] = f"%{ident(name)}.dim{axis}"
                    else:
                        self.dims[(arg, axis)] = str(dim)
            else:
                params.append(Param("scalar", name, llvm_type(t), index))
                self.names[arg] = f"%{ident(name)}"
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
        return CodegenError(f"{what} is not supported by the {self.BACKEND} backend ({self.target.name})", self.where(op))

    @property
    def current_label(self) -> str:
        """The label of the basic block being emitted (a phi names where its values come from)."""
        return self.fn.label

    def reserve_line(self) -> Callable[[str], None]:
        """Hold the next line's place for an instruction known only later (a loop's phi, once
        its latch block is): call what it returns with the instruction."""
        at = len(self.fn.lines)
        self.fn.lines.append("")

        def fill(text: str) -> None:
            self.fn.lines[at] = f"  {text}"

        return fill

    # ---- walking -----------------------------------------------------------------------
    def translate_block(self, block: Block) -> None:
        """Emit every op of `block` in order, each by its rule (the backend's first)."""
        for op in block.ops:
            rule = self.RULES.get(type(op)) or RULES.get(type(op))
            if rule is None:
                raise self.unsupported(op, f"the operation {op.name}")
            self.before(op)
            try:
                rule(self, op)
            except CodegenError as err:
                if err.location is not None or self.where(op) is None:
                    raise
                raise CodegenError(err.message, self.where(op), err.construct) from None  # the op's line
        self.after_block()

    # ---- indices -----------------------------------------------------------------------
    def linear_thread(self) -> str:
        bx, by, bz = self.block
        x = self.index("thread", 0)
        if by == 1 and bz == 1:
            return x
        y, z = self.index("thread", 1), self.index("thread", 2)
        yz = self.let(f"mul nuw nsw i32 {z}, {by}")
        row = self.let(f"add nuw nsw i32 {yz}, {y}")
        scaled = self.let(f"mul nuw nsw i32 {row}, {bx}")
        out = self.let(f"add nuw nsw i32 {scaled}, {x}")
        return out

    # ---- memory ------------------------------------------------------------------------
    def memory(self, v: SSAValue, op: Operation) -> Memory:
        found = self.memories.get(v)
        if found is None:
            raise CodegenError(f"internal: no memory for {v}", self.where(op))
        return found

    def element_pointer(self, memory: Memory, element: str, offset: str) -> str:
        space = f" addrspace({memory.space})" if memory.space else ""
        out = self.fresh("p")
        self.emit(f"{out} = getelementptr inbounds {element}, ptr{space} {memory.pointer}, i32 {offset}")
        return out

    def load(self, ty: str, memory: Memory, pointer: str) -> str:
        """A load of one element, naturally aligned (tensors are checked at launch to be)."""
        space = f" addrspace({memory.space})" if memory.space else ""
        return self.let(f"load {ty}, ptr{space} {pointer}, align {natural_alignment(ty)}")

    def store(self, ty: str, value: str, memory: Memory, pointer: str) -> None:
        space = f" addrspace({memory.space})" if memory.space else ""
        self.emit(f"store {ty} {value}, ptr{space} {pointer}, align {natural_alignment(ty)}")

    def alloca(self, llvm: str, count: int, align: int = 16) -> str:
        out = self.fresh("a")
        space = f", addrspace({self.PRIVATE_SPACE})" if self.PRIVATE_SPACE else ""
        self.fn.entry.append(f"  {out} = alloca [{count} x {llvm}], align {align}{space}")
        return out

    @property
    def private(self) -> Memory:
        """Where variables live: the thread's own memory (promoted to registers)."""
        return Memory("", self.PRIVATE_SPACE)

    def fragment(self, tile: SSAValue, op: Operation) -> tuple[Memory, str, list[int]]:
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
    name = ident(arguments[param.tensor])
    if param.kind == "tensormap":
        return f"ptr addrspace(1) align 64 %{ident(param.name)}"
    if param.kind == "pointer":
        return f"ptr addrspace(1) align {param.align} %{name}"
    if param.kind == "dim":
        return f"i32 %{name}.dim{param.axis}"
    return f"{param.llvm_type} %{name}"


def ident(name: str) -> str:
    """A name as an LLVM identifier."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name)


# ---- for op families' rules ---------------------------------------------------------------------

def _suffix(ty: str) -> str:
    return {"float": "f32", "double": "f64", "half": "f16", "bfloat": "bf16"}.get(ty, ty)


intrinsic_suffix = _suffix
"""For op families (`argus.dsl.ops`): an LLVM type's name in an intrinsic's ("llvm.fma.f32")."""


def shared_layout(kernel: D.KernelOp) -> tuple[dict[Operation, int], int]:
    """Where each shared tile would start in one allocation (each aligned as `shared_alignment`
    says), and the allocation's size."""
    offsets: dict[Operation, int] = {}
    end = 0
    for op in kernel.walk():
        if isinstance(op, D.MakeSharedOp):
            tile: D.TileType = op.result.type  # type: ignore[assignment]
            align = shared_alignment(tile)
            start = -(-end // align) * align
            offsets[op] = start
            end = start + tile.footprint * tile.dtype.nbytes
    return offsets, end


def _shared_plan(kernel: D.KernelOp, static: int | None) -> tuple[dict[Operation, int], int]:
    """The tiles' offsets in one dynamic allocation and its size, when they need more than a
    kernel may declare statically (otherwise each tile is its own global: nothing)."""
    offsets, end = shared_layout(kernel)
    return (offsets, end) if static is not None and end > static else ({}, 0)


def shared_alignment(tile: D.TileType) -> int:
    """Where a shared tile starts: at least 128 bytes; a swizzled tile is aligned to its
    swizzle's period, so that a unit that swizzles addresses (wgmma, TMA) sees the layout's
    swizzle of offsets."""
    layout = tile.layout
    if isinstance(layout, ComposedLayout) and getattr(layout.outer, "bits", 0):
        sw = layout.outer
        return max(128, (1 << (sw.bits + sw.base + sw.shift)) * tile.dtype.nbytes)
    return 128


RULES: dict[type, Rule] = {}
"""The rules every LLVM backend shares (`argus.dsl.ir.registry.define(translate=...)` fills it); a
backend's `Translator.RULES` holds its own, which come first."""
