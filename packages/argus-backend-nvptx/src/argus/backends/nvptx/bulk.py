"""Code for the language's NVIDIA intrinsics (`language`): memory barriers (``mbarrier``), bulk
tensor copies (``cp.async.bulk.tensor``, the tensor memory accelerator, multicast to the
blocks of a cluster), ``elect.sync``, named barriers (``bar.sync id, count``) and clusters
(``%cluster_ctarank``, ``barrier.cluster``, ``mapa``).

A bulk copy reads its tensor through a tensor map, which the runtime encodes at launch from
the tensor argument and the box and swizzle recorded here as a kernel parameter. The shared
tile a copy writes must be laid out the way the copy engine writes: the box's elements row by
row (the tensor's last dim contiguous), either plainly or under one of the engine's swizzles
(`Swizzle(b, log2(16 / element bytes), 3)`, whose 16·2^b-byte rows are exactly the box's
rows). Anything else is refused with the reason.
"""

from __future__ import annotations


from typing import Any

from argus.dsl.ir import dialect as D
from argus.layout import ComposedLayout, Layout, Swizzle

from .errors import CodegenError
from .language import (
    ClusterRankOp,
    ClusterSyncOp,
    ElectOneOp,
    MbarrierArriveClusterOp,
    MbarrierArriveOp,
    MbarrierInitOp,
    MbarrierWaitOp,
    NamedBarrierOp,
    SetMaxRegistersOp,
    TmaLoadOp,
    register_shortfall,
)
from .translate import RULES, Param, Translator, convergent, ident, inline_asm

MAX_BOX = 256


def box_form(layout: Layout | ComposedLayout, nbytes: int) -> tuple[tuple[int, ...], int, int]:
    """(box dims, swizzle bytes, required alignment in bytes) of a copy's destination tile, or
    ValueError saying why the copy engine cannot write it."""
    swizzle, inner, offset = ((layout.outer, layout.inner, layout.offset) if isinstance(layout, ComposedLayout)
                              else (Swizzle(0, 0, 0), layout, 0))
    shape = tuple(inner.shape) if isinstance(inner.shape, tuple) else (inner.shape,)
    stride = tuple(inner.stride) if isinstance(inner.stride, tuple) else (inner.stride,)
    if not all(isinstance(x, int) for x in (*shape, *stride)):
        raise ValueError(f"the tile {layout} has nested modes; a box has one mode per tensor dim")
    expected = [1] * len(shape)
    for i in range(len(shape) - 2, -1, -1):
        expected[i] = expected[i + 1] * shape[i + 1]
    if tuple(expected) != stride:
        raise ValueError(f"the tile {layout} is not the box's elements row by row (strides {tuple(expected)})")
    if any(n > MAX_BOX for n in shape):
        raise ValueError(f"a box has at most {MAX_BOX} elements per dim, not {shape}")
    row = shape[-1] * nbytes
    if row % 16:
        raise ValueError(f"a box row is a multiple of 16 bytes, not {row}")
    if not isinstance(swizzle, Swizzle):
        raise ValueError(f"the tile {layout} is not a swizzle over a plain layout")
    if swizzle.bits == 0:
        swizzled, align = 0, 128
    else:
        base = (16 // nbytes).bit_length() - 1
        swizzled = 16 << swizzle.bits
        if swizzle.base != base or swizzle.shift != 3 or swizzle.bits > 3 or row != swizzled:
            raise ValueError(f"the copy engine swizzles 32-, 64- or 128-byte rows as Swizzle(b, {base}, 3) for "
                             f"{nbytes}-byte elements, with box rows of 16·2^b bytes; this tile is {swizzle} over "
                             f"{row}-byte rows")
        align = 8 * swizzled
    if (offset * nbytes) % align:
        raise ValueError(f"the tile starts {offset * nbytes} bytes into its allocation; the copy needs a multiple of "
                         f"{align}")
    return shape, swizzled, align


def _require(t: Translator, op: Any, feature: str, what: str) -> None:
    if not t.arch.has(feature):
        raise CodegenError(f"{what} needs nvptx:sm_90 or nvptx:sm_90a; nvptx:{t.arch.name} does not have it",
                           t.where(op))


def _shared_address(t: Translator, tile: Any, element: str, op: Any) -> str:
    """The 32-bit shared-memory address of element offset `element` of `tile`'s memory."""
    memory = t.memory(tile, op)
    base = t.let(f"ptrtoint ptr addrspace(3) {memory.pointer} to i32")
    nbytes = tile.type.dtype.nbytes
    offset = t.let(f"mul i32 {element}, {nbytes}")
    return t.let(f"add i32 {base}, {offset}")


def _static_start(t: Translator, tile: Any, op: Any, what: str) -> int:
    """The element offset where a tile starts, known at compile time (slices, not partitions)."""
    chain = tile
    while isinstance(chain.owner, (D.SliceOp, D.ViewOp)):
        chain = chain.owner.source  # type: ignore[union-attr]
    if isinstance(chain.owner, D.PartitionOp):
        raise t.unsupported(op, f"{what} in a partition chosen at run time (use a slice, t[i, :, :])")
    layout = tile.type.layout
    return int(layout.offset) if isinstance(layout, ComposedLayout) else 0


def _barrier(t: Translator, op: Any) -> str:
    """The address of barrier `op.index` of `op.barriers`."""
    layout = op.barriers.type.layout
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    offsets = [int(x) for x in inner.offsets()]
    stride = offsets[1] - offsets[0] if len(offsets) > 1 else 1
    if (isinstance(layout, ComposedLayout) and layout.outer.bits) or offsets != [offsets[0] + i * stride
                                                                             for i in range(len(offsets))]:
        raise t.unsupported(op, f"barriers in a tile laid out as {layout} (use make_shared((count,), u64))")
    start = _static_start(t, op.barriers, op, "a barrier") + offsets[0]
    index = t.let(f"mul i32 {t.value(op.index)}, {stride}")
    element = t.let(f"add i32 {index}, {start}")
    return _shared_address(t, op.barriers, element, op)


def _init(t: Translator, op: MbarrierInitOp) -> None:
    _require(t, op, "mbarrier.tx", "a memory barrier")
    inline_asm(t, "mbarrier.init.shared::cta.b64 [$0], $1;", [("i32", _barrier(t, op)), ("i32", t.value(op.count))])
    inline_asm(t, "fence.mbarrier_init.release.cluster;", [])


def _arrive(t: Translator, op: MbarrierArriveOp) -> None:
    _require(t, op, "mbarrier.tx", "a memory barrier")
    address = _barrier(t, op)
    if op.nbytes:
        inline_asm(t, "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", [("i32", address),
                                                                            ("i32", t.value(op.nbytes[0]))])
    else:
        inline_asm(t, "mbarrier.arrive.shared::cta.b64 _, [$0];", [("i32", address)])


def _wait(t: Translator, op: MbarrierWaitOp) -> None:
    _require(t, op, "mbarrier.tx", "a memory barrier")
    parity = t.let(f"and i32 {t.value(op.parity)}, 1")
    inline_asm(t, "{ .reg .pred p; LAB_WAIT: mbarrier.try_wait.parity.shared::cta.b64 p, [$0], $1; "
            "@!p bra LAB_WAIT; }", [("i32", _barrier(t, op)), ("i32", parity)])


def _tma_load(t: Translator, op: TmaLoadOp) -> None:
    _require(t, op, "tma", "a bulk tensor copy")
    tile_type: D.TileType = op.tile.type  # type: ignore[assignment]
    nbytes = tile_type.dtype.nbytes
    try:
        box, swizzle, _ = box_form(tile_type.layout, nbytes)
    except ValueError as err:
        raise CodegenError(f"the copy engine cannot write this tile: {err}", t.where(op)) from None
    args = list(t.kernel.body.block.args)
    if op.tensor not in args:
        raise t.unsupported(op, "a bulk copy from a tensor view (copy from the kernel's tensor parameter)")
    index = args.index(op.tensor)
    key = (index, box, swizzle)
    param = t.tensor_maps.get(key)
    if param is None:
        name = f"{t.kernel.arg_names.data[index].data}.tensormap{len(t.tensor_maps)}"
        param = t.tensor_maps[key] = Param("tensormap", name, "ptr addrspace(1)", index,
                                           dtype=tile_type.dtype.name, box=box, swizzle=swizzle)
    generic = t.let(f"addrspacecast ptr addrspace(1) %{ident(param.name)} to ptr")
    descriptor = t.let(f"ptrtoint ptr {generic} to i64")
    start = _static_start(t, op.tile, op, "the destination of a bulk copy")
    destination = _shared_address(t, op.tile, str(start), op)
    coords = [t.value(c) for c in reversed(op.coords)]  # the copy engine counts dims innermost first
    rank = len(coords)
    places = ", ".join(f"${i + 2}" for i in range(rank))
    copy = (f"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
            f"{'' if op.multicast is None else '.multicast::cluster'} [$0], [$1, {{{places}}}], [${rank + 2}]")
    if op.multicast is None:
        copy += ";"
    else:  # the blocks it lands in: a 16-bit mask of cluster ranks
        _require(t, op, "clusters", "a multicast bulk copy")
        blocks = 1
        for d in t.kernel.cluster_dims:
            blocks *= d
        if op.multicast.data >> blocks:
            raise CodegenError(f"the copy lands in block rank {op.multicast.data.bit_length() - 1}, but the kernel's "
                               f"clusters have {blocks} block(s) (declare @kernel(..., cluster=...))", t.where(op))
        copy = f"{{ .reg .b16 m; mov.b16 m, {op.multicast.data}; {copy}, m; }}"
    inline_asm(t, copy, [("i32", destination), ("i64", descriptor), *(("i32", c) for c in coords),
                         ("i32", _barrier(t, op))])


def _cluster_rank(t: Translator, op: ClusterRankOp) -> None:
    _require(t, op, "clusters", "cluster_rank")
    t.names[op.result] = t.sreg("cluster.ctarank")


def _cluster_sync(t: Translator, op: ClusterSyncOp) -> None:
    _require(t, op, "clusters", "cluster_sync")
    if t.async_shared:  # as before syncthreads: the threads' writes become visible to the async proxy
        inline_asm(t, "fence.proxy.async.shared::cta;")
    inline_asm(t, "barrier.cluster.arrive.aligned; barrier.cluster.wait.aligned;", [])


def _arrive_cluster(t: Translator, op: MbarrierArriveClusterOp) -> None:
    _require(t, op, "clusters", "an arrival on another block's barrier")
    inline_asm(t, "{ .reg .b32 r; mapa.shared::cluster.u32 r, $0, $1; "
            "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [r]; }",
         [("i32", _barrier(t, op)), ("i32", t.value(op.rank))])


def _elect(t: Translator, op: ElectOneOp) -> None:
    _require(t, op, "tma", "elect_one")  # elect.sync is sm_90's
    text = "{ .reg .pred p; .reg .b32 m; activemask.b32 m; elect.sync _|p, m; selp.b32 $0, 1, 0, p; }"
    word = t.let(f'call i32 asm sideeffect "{text}", "=r"(){convergent(text)}')
    t.define(op.result, f"trunc i32 {word} to i1")


def _named_barrier(t: Translator, op: NamedBarrierOp) -> None:
    if t.async_shared:  # as before syncthreads: the threads' writes become visible to the async proxy
        inline_asm(t, "fence.proxy.async.shared::cta;")
    inline_asm(t, f"bar.sync {op.id.data}, {op.threads.data};", [])


def _setmaxnreg(t: Translator, op: SetMaxRegistersOp) -> None:
    if not t.arch.has("setmaxnreg"):
        raise CodegenError(f"setmaxnreg needs nvptx:sm_90a; nvptx:{t.arch.name} does not have it", t.where(op))
    if t.kernel.max_registers is None:
        raise CodegenError("setmaxnreg needs the kernel's register count at entry: declare "
                           "@kernel(..., max_registers=N)", t.where(op))
    shortfall = register_shortfall(t.kernel, op)
    if shortfall:
        raise CodegenError(shortfall, t.where(op))
    change = "inc" if op.increase.data else "dec"
    inline_asm(t, f"setmaxnreg.{change}.sync.aligned.u32 {op.registers.data};", [])


RULES.update({SetMaxRegistersOp: _setmaxnreg, MbarrierInitOp: _init, MbarrierArriveOp: _arrive, MbarrierWaitOp: _wait,
              TmaLoadOp: _tma_load, ElectOneOp: _elect, NamedBarrierOp: _named_barrier, ClusterRankOp: _cluster_rank,
              ClusterSyncOp: _cluster_sync, MbarrierArriveClusterOp: _arrive_cluster})
