"""Differential testing of what a kernel means: random well-formed kernels, run past the static
checker and the interpreter with shadow tags, whose answers must agree.

Argus defines a kernel's meaning three times: the reference interpreter (with shadow tags,
`argus.dsl.machine.shadow`), the static tag checker (`argus.dsl.check.verification.verify_kernel`) and the
compiled code. The checker may say "unknown" as often as it likes, but what it says must be
true: a kernel it *proves* runs on the interpreter without a tag finding and without a fault
of the kinds the checker looks for, and a kernel it finds *violated* comes with witnesses that
replay — the checker replays them before reporting, and `check_case` replays each once more,
independently, on the launch the witness names.

`draw_kernel` builds a small kernel as Python source text (so that a failure prints as a file
one can run), from choices drawn either by hypothesis (`st.data()`) or by a seeded
`random.Random`: global tensors with tag functions, shared tiles with plain, padded and
swizzled layouts, register tiles, copies global → shared → registers → global whose thread →
data mappings are right or subtly wrong (off by one, swapped coordinates, a swizzle on one
side only, a store some threads skip, a read past the tile's edge), barriers present or
missing, branches on thread and block indices, static and runtime loops, warp shuffles, tag
assertions on what each thread reads (right or wrong claims), and a small warp-level matrix
product. `check_case` runs the oracles and returns the disagreements found; each carries the
source and the launch.

The interpreter runs are pluggable: `check_case(case, runners=[...])` takes any number of
`Runner`s (the interpreter under another schedule of its warps, a GPU), holds each run to the
checker's verdict, and holds fault-free runs to the same outputs. `GpuRunner` is the third
oracle, the compiled kernel on an NVIDIA GPU: it runs the launches the interpreter ran without a
fault (where the semantics determine the outputs) and must leave what the interpreter left.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from argus.verify.results import Result, Verdict

from .errors import ArgusError, KernelFault, VerificationError

__all__ = [
    "FAMILIES",
    "Finding",
    "GpuRunner",
    "KernelCase",
    "LaunchSpec",
    "Outcome",
    "Report",
    "Runner",
    "argument_dtypes",
    "check_case",
    "checks_faults",
    "compile_case",
    "draw_kernel",
    "kernel_from_source",
    "output_difference",
    "runner_within",
    "shadow_runner",
]


# ---- cases ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchSpec:
    """One launch of a case: the grid, the arguments in order — a tensor as ("tensor", dtype
    name, shape), an integer as ("int", value) — and the seed their data is drawn from."""

    grid: tuple[int, ...]
    args: tuple[tuple[Any, ...], ...]
    seed: int

    def arguments(self) -> list[Any]:
        """The launch's arguments: numpy arrays of seeded random data, and integers."""
        rng = np.random.default_rng(self.seed)
        out: list[Any] = []
        for spec in self.args:
            if spec[0] == "int":
                out.append(int(spec[1]))
                continue
            _, dtype, shape = spec
            out.append(_random_array(rng, dtype, tuple(shape)))
        return out

    def text(self) -> str:
        shown = ", ".join(f"{s[1]}{list(s[2])}" if s[0] == "tensor" else str(s[1]) for s in self.args)
        return f"grid {self.grid}, args ({shown}), data seed {self.seed}"


def _random_array(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Random data of a kernel argument's type (bf16 as its uint16 bits, as hosts hold it)."""
    if dtype == "bf16":
        from . import to_storage
        from .dtypes import bf16

        return to_storage(rng.standard_normal(shape), bf16)
    if dtype in ("i32", "u32"):
        return rng.integers(-1000, 1000, size=shape).astype(np.int32)
    return rng.standard_normal(shape).astype({"f32": np.float32, "f16": np.float16}[dtype])


@dataclass(frozen=True)
class KernelCase:
    """A generated kernel: its source text, the kernel's name in it, the launches to run it on,
    and the deliberate mistakes it was built with (for statistics: a kernel built without any
    may still be wrong, and one built with some may happen to be right)."""

    source: str
    name: str
    launches: tuple[LaunchSpec, ...]
    mutations: tuple[str, ...] = ()
    family: str = "tile"

    def text(self) -> str:
        """The case as one prints it: the source, then the launches."""
        lines = [self.source.rstrip(), "", f"# kernel {self.name}; mutations: {', '.join(self.mutations) or 'none'}"]
        lines += [f"# launch {i}: {launch.text()}" for i, launch in enumerate(self.launches)]
        return "\n".join(lines)


def kernel_from_source(source: str, name: str) -> Any:
    """The `Kernel` named `name` defined by `source`, compiled under a file name derived from
    the text (registered with `linecache`, so that errors and witnesses quote its lines)."""
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    filename = f"<argus-fuzz-{digest}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"argus_fuzz_{digest}"}
    exec(compile(source, filename, "exec"), namespace)
    return namespace[name]


@contextmanager
def _no_disk_cache() -> Iterator[None]:
    """Builds inside leave nothing in the disk cache (thousands of throwaway kernels would fill it)."""
    previous = os.environ.get("ARGUS_CACHE_DIR")
    os.environ["ARGUS_CACHE_DIR"] = "off"
    try:
        yield
    finally:
        if previous is None:
            del os.environ["ARGUS_CACHE_DIR"]
        else:
            os.environ["ARGUS_CACHE_DIR"] = previous


def compile_case(case: KernelCase) -> Any:
    """The case's compiled kernel, built without the disk cache."""
    with _no_disk_cache():
        return kernel_from_source(case.source, case.name).specialize()


# ---- drawing choices ------------------------------------------------------------------------


class _Choices:
    """Choices drawn from hypothesis's `st.data()` (which can shrink them) or from a seeded
    `random.Random` (the long runs: every kernel reproducible from its seed)."""

    def __init__(self, data: Any) -> None:
        self.data = data
        self.mistakes = True
        """Whether this kernel may be drawn with deliberate mistakes (else every `mistake` is
        False and every `pick_mistake` its first, right, option)."""

    def pick(self, options: Sequence[Any]) -> Any:
        if isinstance(self.data, random.Random):
            return self.data.choice(list(options))
        from hypothesis import strategies as st

        return self.data.draw(st.sampled_from(list(options)))

    def chance(self, p: float) -> bool:
        """True with probability about `p` (hypothesis shrinks towards False)."""
        if isinstance(self.data, random.Random):
            return self.data.random() < p
        from hypothesis import strategies as st

        return self.data.draw(st.integers(0, 99)) < round(100 * p)

    def mistake(self, p: float) -> bool:
        """A deliberate mistake, with probability about `p` where mistakes are drawn."""
        return self.mistakes and self.chance(p)

    def pick_mistake(self, options: Sequence[Any]) -> Any:
        """One of `options`, whose first is the right one, the others mistakes."""
        return self.pick(options) if self.mistakes else options[0]

    def number(self, low: int, high: int) -> int:
        if isinstance(self.data, random.Random):
            return self.data.randint(low, high)
        from hypothesis import strategies as st

        return self.data.draw(st.integers(low, high))


FAMILIES = ("tile", "mma")
"""The kinds of kernel drawn: copies through shared memory and registers with a tag assertion,
and a warp's matrix product whose operand pairing is the claim."""


def draw_kernel(data: Any, family: str | None = None) -> KernelCase:
    """A random well-formed kernel (source text) with its launches. `data` is hypothesis's
    `st.data()` object or a `random.Random`; `family` (one of `FAMILIES`) fixes the kind of
    kernel, else one in five is a matrix product."""
    if family is not None and family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    c = _Choices(data)
    c.mistakes = c.chance(0.6)  # two kernels in five are drawn right: proofs to hold to the runs
    if family == "mma" or (family is None and c.chance(0.2)):
        return _mma_kernel(c)
    return _tile_kernel(c)


HEADER = """from argus.dsl import *
from argus.layout import ComposedLayout, Layout, Swizzle
"""


class _Lines:
    """Source lines at an indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def add(self, *lines: str) -> None:
        self.lines.extend("    " * self.depth + line for line in lines)

    def indent(self) -> _Lines:
        self.depth += 1
        return self

    def dedent(self) -> None:
        self.depth -= 1


def _tile_kernel(c: _Choices) -> KernelCase:
    """Global → shared → registers (→ a shuffle) → global, with a tag assertion on what each
    thread holds. The claim is what the code intends; mutations of the code or of the claim
    make one of the two wrong."""
    mutations: list[str] = []
    threads = c.pick((32, 64, 128))
    tx = c.pick([x for x in (8, 16, 32) if threads // x <= 16])
    ty = threads // tx
    shapes = [(cols, per) for cols in (8, 16, 32) for per in (1, 2, 4) if threads * per // cols <= 32]
    cols, per = c.pick(shapes)
    rows = threads * per // cols
    dtype = c.pick(("f32", "f32", "i32", "f16"))
    bits = (rows * cols).bit_length() - 1
    layouts = ["row", "col", "pad"] + (["swizzle", "swizzle"] if bits >= 2 else [])
    layout = c.pick(layouts)
    if layout == "row":
        smem = f"Layout(({rows}, {cols}), ({cols}, 1))"
    elif layout == "col":
        smem = f"Layout(({rows}, {cols}), (1, {rows}))"
    elif layout == "pad":
        smem = f"Layout(({rows}, {cols}), ({cols + 1}, 1))"
    else:
        b = c.number(1, bits // 2)
        m = c.number(0, bits - 2 * b)
        s = c.number(b, bits - m - b)
        smem = f"ComposedLayout(Swizzle({b}, {m}, {s}), 0, Layout(({rows}, {cols}), ({cols}, 1)))"
    source_mode = c.pick(("fixed", "assume", "clamp"))
    loop = c.pick(("none", "none", "static", "runtime"))
    iters = 2 if loop == "static" else 1
    end_barrier = loop == "none" or not c.mistake(0.3)
    if not end_barrier:
        mutations.append("no-end-barrier")
    tags = c.pick(("rc", "rc", "c", "r", "rdiv", "rmod", "linear", "sum"))
    write_map = c.pick(("rowmajor", "colmajor"))
    read_map = c.pick(("same", "rowmajor", "colmajor", "reverse", "xor"))
    stride = c.pick(("blocked", "grid")) if loop == "runtime" else "blocked"
    write_mutation = c.pick_mistake(("none",) * 6 + ("shift", "partial", "reset") +
                            (("first-only",) if loop == "runtime" else ()))
    read_mutation = c.pick_mistake(("none",) * 8 + ("edge", "select-data") +
                           (("unswizzled",) * 2 if layout == "swizzle" else ()))
    branch = c.pick(("none", "none", "select-thread", "select-block", "guard") +
                    (("guard-size",) if source_mode != "fixed" else ()))
    # the claim checked after a runtime loop, on what its last iteration left in the registers
    # (nothing, where the loop runs no iteration, unless the kernel assumes it runs)
    # each source row read twice: the kernel loads row x // 2, and the claim says so in the same,
    # an equal or (rounding up) a different form
    halve = c.pick((None, None, None, "same", "shifted") + (("rounded-up",) if c.mistakes else ()))
    mutations += ["claim-half-rounding"] if halve == "rounded-up" else []
    # a second grid dimension picks the column tile: columns become symbolic too
    col_tiles = c.pick((1, 1, 2, 3))
    col_claim_mutation = col_tiles > 1 and c.mistake(0.15)
    mutations += ["claim-column-block"] if col_claim_mutation else []
    # the read through `partition` with a thread/value layout instead of computed coordinates
    partitioned = c.chance(0.25)
    after = loop == "runtime" and c.chance(0.3)
    after_claim = c.pick_mistake(("last", "last", "first")) if after else "last"
    runs = after and c.chance(0.5)
    if after:
        branch = "select-block" if branch == "select-block" else "none"
        mutations += ["claim-after-first"] if after_claim == "first" else []
    shuffle = c.pick(("none", "none", "xor", "rotate")) if branch != "guard" else "none"
    claim_mutation = c.pick_mistake(("none",) * 6 + ("offby1", "swap", "no-row", "no-shuffle", "no-roundtrip"))
    # a round trip through a second tile: each thread stores what it read, and reads back what
    # the thread at a permuted linear index stored
    roundtrip = c.pick(("reverse", "xor")) if branch == "none" and shuffle == "none" and c.chance(0.3) else None
    second_map = c.pick(("rowmajor", "colmajor")) if roundtrip else None
    missing_second_sync = roundtrip is not None and c.mistake(0.15)
    if (claim_mutation == "no-shuffle" and shuffle == "none") or (claim_mutation == "no-roundtrip" and not roundtrip):
        claim_mutation = "none"
    mutations += ["no-second-sync"] if missing_second_sync else []
    missing_sync = c.mistake(0.12)
    unequal = c.chance(0.2) and (tags != "r" or c.mistakes)
    mutations += ["claim-unequal-row-only"] if unequal and tags == "r" else []  # a neighbour has the same tag
    no_assert = c.mistake(0.05)
    mutations += [f"write-{write_mutation}"] if write_mutation != "none" else []
    mutations += [f"read-{read_mutation}"] if read_mutation != "none" else []
    mutations += [f"claim-{claim_mutation}"] if claim_mutation != "none" else []
    mutations += ["no-sync"] if missing_sync else []
    mutations += ["no-assert"] if no_assert else []

    grid_blocks = c.number(1, 3)
    steps = c.number(1 if runs else 0, 3) if loop == "runtime" else 1
    total = iters * steps
    if source_mode == "fixed":
        nrows = rows * grid_blocks * max(total, 1)
        dims = f"{nrows}, {cols * col_tiles}"
    else:
        dims = f'"n", {cols * col_tiles}'
    params = [f"src: Tensor[{dtype}, {dims}]", f"dst: Tensor[{dtype}, {dims}]"]
    if source_mode != "fixed":
        params.append("n: int")
    if loop == "runtime":
        params.append("steps: int")
    name = "fz"
    out = _Lines()
    out.add(f"@kernel(block=({tx}, {ty}))", f"def {name}({', '.join(params)}):")
    out.indent()
    tid = "thread_idx.x" if ty == 1 else f"thread_idx.x + thread_idx.y * {tx}"
    out.add(f"tid = {tid}")
    if col_tiles > 1:
        out.add(f"col0 = block_idx.y * {cols}")
        out.add(f"assume(col0 + {cols} <= {cols * col_tiles})")  # the grid's columns: the tiles there are
    tag_of = _tag_function(tags, "r", "c", cols)
    out.add(f"tag(src, lambda r, c: {tag_of})")
    if source_mode == "assume":
        out.add(f"assume(n % {rows} == 0)")
    if runs:
        out.add("assume(steps > 0)")
    out.add(f"s = make_shared({smem}, {dtype})")
    if read_mutation == "unswizzled":
        out.add(f"plain = s.view(Layout(({rows}, {cols}), ({cols}, 1)), {dtype})")
    out.add(f"got = make_local(({per},), {dtype})", f"want = make_local(({per},), {dtype})")
    if unequal:
        out.add(f"beside = make_local(({per},), {dtype})")
    partition_at = len(out.lines)
    if roundtrip:
        out.add(f"mid = make_local(({per},), {dtype})", f"s2 = make_shared(({rows}, {cols}), {dtype})")
    if loop == "runtime":
        out.add("for it in range(steps):")
        out.indent()
        if stride == "grid":  # a grid-stride loop: block b takes slices b, b + grid, ...
            out.add(f"row0 = (it * grid_dim.x + block_idx.x) * {rows}")
        else:
            out.add(f"row0 = (block_idx.x * steps + it) * {rows}")
    elif loop == "static":
        out.add(f"for it in static_range({iters}):")
        out.indent()
        out.add(f"row0 = (block_idx.x * {iters} + it) * {rows}")
    else:
        out.add(f"row0 = block_idx.x * {rows}")

    def mapping(kind: str, e: str) -> tuple[str, str]:
        """(row, column) of the tile that linear index `e` names in a mapping."""
        if kind == "rowmajor":
            return f"({e}) // {cols}", f"({e}) % {cols}"
        if kind == "colmajor":
            return f"({e}) % {rows}", f"({e}) // {rows}"
        if kind == "reverse":
            return f"{rows - 1} - ({e}) // {cols}", f"{cols - 1} - ({e}) % {cols}"
        return f"({e}) // {cols}", f"(({e}) % {cols}) ^ 1"

    def global_row(r: str, base: str = "row0") -> str:
        return f"min({base} + {r}, n - 1)" if source_mode == "clamp" else f"{base} + {r}"

    # the claim's first row: the kernel's `row0`, or the same (or a subtly different) quantity
    # written another way, which the checker has to see through (products of symbols, floor
    # divisions of sums)
    row_form = c.pick(("var", "var", "inline") + (("inline-wrong",) if c.mistakes else ()))
    if loop == "runtime" and stride == "grid":
        forms = (f"it * grid_dim.x * {rows} + block_idx.x * {rows}", f"it * grid_dim.x * {rows} + block_idx.x")
    elif loop == "runtime":
        forms = (f"block_idx.x * steps * {rows} + it * {rows}", f"block_idx.x * steps * {rows} + it")
    elif loop == "static":
        forms = (f"(block_idx.x * {4 * rows} + it * {2 * rows}) // 2", f"(block_idx.x * {4 * rows} + it) // 2")
    else:
        forms = (f"(block_idx.x * {rows} + tid % {rows}) // {rows} * {rows}", f"block_idx.x * {rows} + block_idx.x % 2")
    row_base = {"var": "row0", "inline": f"({forms[0]})", "inline-wrong": f"({forms[1]})"}[row_form]
    if row_form == "inline-wrong":
        mutations.append("claim-row-form")
    if after:  # the row of the last (or, wrongly, the first) iteration
        last = "steps - 1" if after_claim == "last" else "0"
        row_base = (f"(({last}) * grid_dim.x + block_idx.x) * {rows}" if stride == "grid"
                    else f"(block_idx.x * steps + {last}) * {rows}")

    # stage: global -> shared
    out.add(f"for k in static_range({per}):")
    out.indent()
    wr, wc = mapping(write_map, f"tid + k * {threads}")
    out.add(f"wr = {wr}", f"wc = {wc}")
    column = f"(wc + 1) % {cols}" if write_mutation == "shift" else "wc"
    if col_tiles > 1:
        column = f"col0 + {column}"
    loaded = f"({global_row('wr')}) // 2" if halve else global_row("wr")
    store = f"s[wr, wc] = src[{loaded}, {column}]"
    if write_mutation in ("partial", "first-only"):
        out.add(f"if tid < {threads - 1}:" if write_mutation == "partial" else "if it == 0:")
        out.add("    " + store)
    else:
        out.add(store)
    out.dedent()
    if not missing_sync:
        out.add("syncthreads()")
    if write_mutation == "reset":  # the data stays, its tags are gone
        out.add("reset_tags(s)")

    # read: shared -> registers, with the claim
    if read_map == "same":
        read_map = write_map
    other_map = {"rowmajor": "reverse", "colmajor": "xor", "reverse": "rowmajor", "xor": "colmajor"}[read_map]
    cond = {"select-thread": "tid % 2 == 0", "select-block": "block_idx.x % 2 == 0", "guard-size": f"n > {rows}",
            "guard": c.pick(("tid < 16", "thread_idx.x % 2 == 1", "block_idx.x == 0"))}.get(branch)
    partner = {"none": "tid", "xor": f"(tid ^ {c.pick((1, 2, 16))})",
               "rotate": "(tid - tid % 32 + (tid + 1) % 32)"}[shuffle]
    claimed = "tid" if claim_mutation == "no-shuffle" else partner

    def permuted(e: str) -> str:
        """The linear index whose value a round trip brings to linear index `e`."""
        return f"{threads * per - 1} - ({e})" if roundtrip == "reverse" else f"(({e}) ^ 1)"

    def claim(who: str) -> tuple[str, str]:
        """The intended (row, column) of the element thread `who` holds at value k."""
        linear = f"{who} + k * {threads}"
        if roundtrip and claim_mutation != "no-roundtrip":
            linear = permuted(linear)
        r, col = mapping(read_map, linear)
        if branch in ("select-thread", "select-block"):
            r2, col2 = mapping(other_map, f"{who} + k * {threads}")
            which = cond if branch == "select-block" else cond.replace("tid", who)
            r, col = f"select({which}, {r}, {r2})", f"select({which}, {col}, {col2})"
        return r, col

    cr, cc = claim(claimed)
    row_claim = cr if claim_mutation == "no-row" else global_row(cr, row_base)
    if halve and claim_mutation != "no-row":
        row_claim = {"same": f"({row_claim}) // 2", "shifted": f"(({row_claim}) + 2) // 2 - 1",
                     "rounded-up": f"(({row_claim}) + 1) // 2"}[halve]
    col_claim = f"{cc} + 1" if claim_mutation == "offby1" else cc
    if col_tiles > 1:
        col_claim = f"{'block_idx.x' if col_claim_mutation else 'block_idx.y'} * {cols} + {col_claim}"
    if claim_mutation == "swap":
        row_claim, col_claim = col_claim, row_claim
    want = _tag_function(tags, row_claim, col_claim, cols)

    def state_claims() -> None:
        out.add(f"tag(want, lambda k: {want})")
        if unequal:  # a second claim: what each thread holds is not its right-hand neighbour
            out.add(f"tag(beside, lambda k: {_tag_function(tags, row_claim, f'({col_claim}) + 1', cols)})")

    if not after:
        state_claims()
    if branch in ("guard", "guard-size"):
        out.add(f"if {cond}:")
        out.indent()
    tile = "plain" if read_mutation == "unswizzled" else "s"
    if partitioned and branch not in ("select-thread", "select-block") and read_mutation in ("none", "unswizzled") \
            and read_map in ("rowmajor", "colmajor") and threads % cols == 0:
        # value v of thread t is linear index e = t + v * threads, at (e // cols, e % cols) (rowmajor)
        # or (e % rows, e // rows) (colmajor); a tile's index is colexicographic: row + col * rows
        tv = {"rowmajor": f"Layout((({cols}, {threads // cols}), {per}), (({rows}, 1), {threads // cols}))",
              "colmajor": f"Layout(({threads}, {per}), (1, {threads}))"}
        wrong = c.mistake(0.2)
        mutations.append("read-partition-other") if wrong else None
        chosen = {"rowmajor": "colmajor", "colmajor": "rowmajor"}[read_map] if wrong else read_map
        partition_line = f"mine = partition({tile}, {tv[chosen]}, tid)"  # before any loop (a tile is not a variable)
        out.lines.insert(partition_at, "    " + partition_line)
        read_map_text = "mine[k]"
    else:
        read_map_text = None
    out.add(f"for k in static_range({per}):")
    out.indent()

    def read(kind: str) -> str:
        r, col = mapping(kind, f"tid + k * {threads}")
        if read_mutation == "edge":
            col = f"({col}) + 1"
        if read_mutation == "select-data":  # which element a thread keeps depends on the data
            mine, next_ = f"{tile}[{r}, {col}]", f"{tile}[{r}, (({col}) + 1) % {cols}]"
            return f"select({mine} >= {next_}, {mine}, {next_})"
        return f"{tile}[{r}, {col}]"

    if branch in ("select-thread", "select-block"):
        out.add(f"if {cond}:", f"    x = {read(read_map)}", "else:", f"    x = {read(other_map)}")
    else:
        out.add(f"x = {read_map_text or read(read_map)}")
    if shuffle == "xor":
        out.add(f"got[k] = shfl_xor(x, {partner.split('^ ')[1].rstrip(')')})")
    elif shuffle == "rotate":
        out.add("got[k] = shfl_idx(x, (lane_id() + 1) % 32)")
    else:
        out.add("mid[k] = x" if roundtrip else "got[k] = x")
    out.dedent()
    if roundtrip:
        assert second_map is not None
        out.add(f"for k in static_range({per}):")
        r2, c2 = mapping(second_map, f"tid + k * {threads}")
        out.add(f"    s2[{r2}, {c2}] = mid[k]")
        if not missing_second_sync:
            out.add("syncthreads()")
        out.add(f"for k in static_range({per}):")
        r2, c2 = mapping(second_map, permuted(f"tid + k * {threads}"))
        out.add(f"    got[k] = s2[{r2}, {c2}]")
    if after:
        if end_barrier:
            out.add("syncthreads()")
        out.dedent()
        state_claims()
    if not no_assert:
        out.add('assert tag(got[...]) == tag(want[...]), "each thread holds the elements it meant to read"')
    if unequal:
        out.add('assert tag(got[...]) != tag(beside[...]), "no thread holds its neighbour\'s element"')
    out.add(f"for k in static_range({per}):")
    out.indent()
    orow, ocol = mapping("rowmajor", f"tid + k * {threads}")
    base = row_base if after else "row0"
    if source_mode == "clamp":
        ocol = f"col0 + {ocol}" if col_tiles > 1 else ocol
        out.add(f"if {base} + {orow} < n:", f"    dst[{base} + {orow}, {ocol}] = got[k]")
    else:
        ocol = f"col0 + {ocol}" if col_tiles > 1 else ocol
        out.add(f"dst[{base} + {orow}, {ocol}] = got[k]")
    out.dedent()
    if branch in ("guard", "guard-size"):
        out.dedent()
    if loop != "none" and end_barrier and not after:
        out.add("syncthreads()")
    source = HEADER + "\n\n" + "\n".join(out.lines) + "\n"

    launches = []
    for number in range(c.number(1, 2)):
        blocks = grid_blocks if number == 0 else c.number(1, 3)
        run_steps = steps if number == 0 or source_mode == "fixed" else c.number(1 if runs else 0, 3)
        if source_mode == "fixed":
            blocks = grid_blocks
            n = rows * grid_blocks * max(total, 1)
        elif source_mode == "assume":
            n = rows * blocks * iters * max(run_steps, 1)
        else:
            n = c.number(1, rows * blocks * iters * max(run_steps, 1))
        shape = (n, cols * col_tiles)
        args: list[tuple[Any, ...]] = [("tensor", dtype, shape), ("tensor", dtype, shape)]
        if source_mode != "fixed":
            args.append(("int", n))
        if loop == "runtime":
            args.append(("int", run_steps))
        grid = (blocks, col_tiles) if col_tiles > 1 else (blocks,)
        launches.append(LaunchSpec(grid, tuple(args), c.number(0, 2**16)))
    return KernelCase(source, name, tuple(launches), tuple(mutations), "tile")


def _tag_function(kind: str, r: str, c: str, cols: int) -> str:
    """The tag of element (r, c) of the source: both coordinates, one, or integer functions of
    them that the checker must follow through symbolic rows (floor division, remainder, a
    linear index, a sum that gives different elements the same tag)."""
    return {"rc": f"({r}, {c})", "c": f"({c},)", "r": f"({r},)", "rdiv": f"(({r}) // 2, {c})",
            "rmod": f"(({r}) % 3, {c})", "linear": f"(({r}) * {cols} + ({c}),)", "sum": f"(({r}) + ({c}),)"}[kind]


def _mma_kernel(c: _Choices) -> KernelCase:
    """One warp stages A (16×K) and B (8×K) in shared memory, loads the fragments of the
    16×8×16 matrix-multiply atom and multiplies; the product pairs A[m, k] with B[n, k] by
    their tags (an implicit claim), and an optional assertion states the fragment pairing."""
    mutations: list[str] = []
    runtime = c.chance(0.5)
    a_mutation = c.pick_mistake(("none",) * 5 + ("swap",))
    b_mutation = c.pick_mistake(("none",) * 5 + ("shift",))
    tag_mutation = c.pick_mistake(("none",) * 6 + ("shift",))
    missing_sync = c.mistake(0.15)
    end_barrier = not runtime or not c.mistake(0.3)
    zero = not c.mistake(0.1)
    swizzled = c.chance(0.4)
    layouts = [f"ComposedLayout(Swizzle({c.number(1, 2)}, {c.number(0, 2)}, 3), 0, Layout(({rows}, 16), (16, 1)))"
               if swizzled else f"({rows}, 16)" for rows in (16, 8)]
    stated = c.chance(0.4)  # the pairing also stated as an assertion on A's fragment
    mutations += [f"a-{a_mutation}"] if a_mutation != "none" else []
    mutations += [f"b-{b_mutation}"] if b_mutation != "none" else []
    mutations += [f"tag-{tag_mutation}"] if tag_mutation != "none" else []
    mutations += ["no-sync"] if missing_sync else []
    mutations += ["no-end-barrier"] if not end_barrier else []
    mutations += ["no-zero"] if not zero else []
    k_dim = '"K"' if runtime else "16"
    out = _Lines()
    out.add("MMA = warp_mma_16x8x16(bf16, bf16, f32)", "", "")
    out.add("@kernel(block=(32,))")
    params = [f"a: Tensor[bf16, 16, {k_dim}]", f"b: Tensor[bf16, 8, {k_dim}]", "c: Tensor[f32, 16, 8]"]
    if runtime:
        params.append("K: int")
    out.add(f"def mm({', '.join(params)}):")
    out.indent()
    out.add("tag(a, lambda m, k: (k,))")
    out.add("tag(b, lambda n, k: ((k + 1) % 16,))" if tag_mutation == "shift" else "tag(b, lambda n, k: (k,))")
    if runtime:
        out.add("assume(K % 16 == 0)")
    out.add(f"sA = make_shared({layouts[0]}, bf16)", f"sB = make_shared({layouts[1]}, bf16)",
            "afrag = make_local((8,), bf16)", "bfrag = make_local((4,), bf16)", "acc = make_local((4,), f32)",
            "want = make_local((8,), bf16)", "t = thread_idx.x")
    if zero:
        out.add("for v in static_range(4):", "    acc[v] = 0.0")
    if runtime:
        out.add("for k0 in range(0, K, 16):")
        out.indent()
    else:
        out.add("k0 = 0")
    out.add("for i in static_range(8):", "    e = t + i * 32", "    sA[e // 16, e % 16] = a[e // 16, k0 + e % 16]")
    out.add("for i in static_range(4):", "    e = t + i * 32", "    sB[e // 16, e % 16] = b[e // 16, k0 + e % 16]")
    if not missing_sync:
        out.add("syncthreads()")
    a_read = "sA[idx // 16, idx % 16]" if a_mutation == "swap" else "sA[idx % 16, idx // 16]"
    b_read = "sB[idx % 8, (idx // 8 + 1) % 16]" if b_mutation == "shift" else "sB[idx % 8, idx // 8]"
    out.add("for v in static_range(8):", "    idx = MMA.a_layout(t, v)", f"    afrag[v] = {a_read}")
    if stated:
        out.add("tag(want, lambda v: (k0 + MMA.a_layout(t, v) // 16,))",
                'assert tag(afrag[...]) == tag(want[...]), "value v of A\'s fragment is at k of the atom\'s layout"')
    out.add("for v in static_range(4):", "    idx = MMA.b_layout(t, v)", f"    bfrag[v] = {b_read}")
    out.add("matmul(afrag, bfrag, acc, MMA)")
    if runtime:
        if end_barrier:
            out.add("syncthreads()")
        out.dedent()
    out.add("for v in static_range(4):", "    idx = MMA.c_layout(t, v)", "    c[idx % 16, idx // 16] = acc[v]")
    source = HEADER + "\n\n" + "\n".join(out.lines) + "\n"
    launches = []
    for _ in range(c.number(1, 2)):
        k = 16 * c.number(1, 3) if runtime else 16  # a named dim is at least 1 at every launch
        args: list[tuple[Any, ...]] = [("tensor", "bf16", (16, k)), ("tensor", "bf16", (8, k)),
                                       ("tensor", "f32", (16, 8))]
        if runtime:
            args.append(("int", k))
        launches.append(LaunchSpec((1,), tuple(args), c.number(0, 2**16)))
    return KernelCase(source, "mm", tuple(launches), tuple(mutations), "mma")


# ---- running --------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one run of a launch did: the fault that stopped it (if one did), the tag findings
    of the shadow run, and the arguments afterwards (the outputs)."""

    fault: KernelFault | None = None
    findings: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    error: str | None = None
    """An error of Argus itself (not the kernel's): an exception other than a `KernelFault`."""
    skipped: str | None = None
    """Why the runner did not run this launch (a device runner, where no interpreter run was
    fault-free: what the launch leaves is then not determined)."""


class Runner(Protocol):
    """Runs a compiled kernel on a launch (or only some of its blocks) and says what happened.

    A runner with an attribute ``checks_faults = False`` (compiled code on a device, which has
    no shadow tags and does not stop at a fault) is a *device runner*: `check_case` runs it only
    on launches that a checking runner ran without a fault, never asks it to replay a witness,
    and holds its outputs to that run's within the runner's ``rtol`` and ``atol``."""

    def __call__(self, compiled: Any, grid: tuple[int, ...], args: list[Any],
                 blocks: Sequence[tuple[int, int, int]] | None = None) -> Outcome: ...


def checks_faults(runner: Runner) -> bool:
    """Whether a runner reports faults and tag findings (an interpreter) rather than outputs only."""
    return bool(getattr(runner, "checks_faults", True))


def shadow_runner(compiled: Any, grid: tuple[int, ...], args: list[Any],
                  blocks: Sequence[tuple[int, int, int]] | None = None) -> Outcome:
    """The reference interpreter with shadow tags (warps in lockstep, blocks one by one)."""
    from .machine.shadow import ShadowInterpreter

    shadow = ShadowInterpreter(compiled.op, compiled.locations)
    outcome = Outcome(outputs=args)
    try:
        shadow.launch(grid, args, blocks=blocks)
    except KernelFault as fault:
        outcome.fault = fault
    except ArgusError as err:
        outcome.error = f"{type(err).__name__}: {err}"
    except Exception as err:  # noqa: BLE001 - a crash of the interpreter is a finding
        outcome.error = f"the interpreter crashed: {type(err).__name__}: {err}"
    outcome.findings = list(shadow.findings)
    return outcome


def runner_within(context: Callable[[], AbstractContextManager[Any]], runner: Runner = shadow_runner) -> Runner:
    """`runner`, each run inside a fresh `context()`: the way to add an interpreter setting as
    one more oracle, e.g. a schedule of its warps (``runner_within(lambda: using("random:3"))``)
    beside the default run."""

    def run(compiled: Any, grid: tuple[int, ...], args: list[Any],
            blocks: Sequence[tuple[int, int, int]] | None = None) -> Outcome:
        with context():
            return runner(compiled, grid, args, blocks)

    return run


class GpuRunner:
    """The compiled kernel on an NVIDIA GPU through the NVPTX backend: the third oracle.

    Each launch builds the kernel for the device (no disk cache), copies the arguments to the
    GPU, runs the whole grid and copies them back. A device runner (`Runner`): it reports no
    faults, so `check_case` runs it only where the interpreter ran the launch without one, and
    holds what it leaves to the interpreter's outputs — integers bit for bit, floating-point
    values within `rtol`/`atol` (a matrix unit may round partial sums differently)."""

    checks_faults = False

    def __init__(self, device: int = 0, arch: str | None = None, *, rtol: float = 1e-4, atol: float = 1e-4) -> None:
        try:
            import torch
            from argus.backends.nvptx import runtime, targets
        except ImportError as err:
            raise ArgusError(f"the GPU oracle needs argus-backend-nvptx and PyTorch: {err}") from None
        if not torch.cuda.is_available() or device >= torch.cuda.device_count():
            raise ArgusError(f"the GPU oracle needs CUDA device {device}; torch sees "
                             f"{torch.cuda.device_count() if torch.cuda.is_available() else 'no CUDA device'}")
        if arch is not None and arch not in targets.ARCHS:
            raise ArgusError(f"unknown NVIDIA target {arch!r}; known: {', '.join(sorted(targets.ARCHS))}")
        self.device = device
        self.target = runtime.device_arch(device) if arch is None else targets.ARCHS[arch]
        self.rtol, self.atol = rtol, atol
        self.broken: str | None = None
        """Set once a launch leaves the device unusable (a fault poisons its context): the
        later launches are reported as errors, not run."""

    def __call__(self, compiled: Any, grid: tuple[int, ...], args: list[Any],
                 blocks: Sequence[tuple[int, int, int]] | None = None) -> Outcome:
        import torch
        from argus.backends.nvptx import compiler, runtime
        from argus.backends.nvptx.bench import to_gpu, to_numpy

        outcome = Outcome(outputs=args)
        if blocks is not None:
            outcome.error = "a GPU runs whole grids, not chosen blocks"
            return outcome
        if self.broken is not None:
            outcome.error = f"the GPU is unusable since an earlier launch: {self.broken}"
            return outcome
        try:
            with _no_disk_cache():
                binary = compiler.build(compiled, self.target)
        except ArgusError as err:
            outcome.error = f"the NVPTX backend refused the kernel: {type(err).__name__}: {err}"
            return outcome
        except Exception as err:  # noqa: BLE001 - a crash of the backend is a finding
            outcome.error = f"the NVPTX backend crashed: {type(err).__name__}: {err}"
            return outcome
        loaded = None
        try:
            device = [to_gpu(a) for a in args]
            loaded = runtime.LoadedKernel(binary, self.device)
            loaded.launch(grid, device)
            torch.cuda.synchronize(self.device)
            outcome.outputs = [to_numpy(d, a) for d, a in zip(device, args)]
            from cuda.bindings import driver

            module, loaded = loaded.module, None
            runtime.check(driver.cuModuleUnload(module), "unloading the kernel")  # hundreds are run
        except Exception as err:  # noqa: BLE001 - a launch the interpreter ran clean must run here too
            outcome.error = f"the GPU run failed: {type(err).__name__}: {err}"
            self.broken = self._unusable()
        return outcome

    def _unusable(self) -> str | None:
        """Why the device takes no more work, or None when it still does."""
        import torch

        try:
            torch.cuda.synchronize(self.device)
            probe = torch.ones(4, device=f"cuda:{self.device}")
            if float(probe.sum()) != 4.0:
                return "a probe computed a wrong sum"
        except Exception as err:  # noqa: BLE001
            return f"{type(err).__name__}: {err}"
        return None


def output_difference(reference: Sequence[Any], got: Sequence[Any], dtypes: Sequence[Any], *,
                      rtol: float = 0.0, atol: float = 0.0) -> str | None:
    """None where `got` holds what `reference` holds (arguments after a launch, in host
    storage); else which argument and element differ first, both values, and how many differ.
    `dtypes` gives each argument's Argus type (None for scalars): floating-point values are
    compared decoded, within ``atol + rtol·|reference|``, NaN matching NaN only; everything
    else bit for bit."""
    from . import from_storage

    if len(reference) != len(got):
        return f"{len(got)} arguments instead of {len(reference)}"
    for index, (want, have, dtype) in enumerate(zip(reference, got, dtypes)):
        if not isinstance(want, np.ndarray):
            continue
        if not isinstance(have, np.ndarray) or have.shape != want.shape or have.dtype != want.dtype:
            shown = f"{have.dtype}{list(have.shape)}" if isinstance(have, np.ndarray) else type(have).__name__
            return f"argument {index}: {shown} instead of {want.dtype}{list(want.shape)}"
        if dtype is not None and dtype.is_float:
            w = np.asarray(from_storage(want, dtype), np.float64)
            h = np.asarray(from_storage(have, dtype), np.float64)
            bad = ~np.isclose(h, w, rtol=rtol, atol=atol, equal_nan=True)
        else:
            w, h = want, have
            bad = want != have
        if bad.any():
            first = tuple(int(i) for i in np.argwhere(bad)[0])
            return (f"argument {index}: {int(bad.sum())} of {bad.size} elements differ, the first at {first}: "
                    f"{h[first]!r} instead of {w[first]!r}")
    return None


def argument_dtypes(compiled: Any) -> list[Any]:
    """Each parameter's element type (an Argus `DType`), None for scalars."""
    from .ir import dialect as D

    return [a.type.dtype if isinstance(a.type, D.TensorType) else None for a in compiled.op.body.block.args]


# ---- oracles --------------------------------------------------------------------------------


#: Fault kinds the checker looks for on the data its claims read (docs/verify.md): a proof
#: with one of these on a launch is a disagreement. Others (a barrier some threads skip, a
#: shuffle reading an inactive lane, a global access outside the tensor, which it assumes
#: away) are the interpreter's to find.
CLAIMED_FAULTS = frozenset(("uninitialized-read", "data-race", "out-of-bounds"))

#: The start of the note of a witness the checker replayed.
REPLAYED = ("the interpreter faults", "reproduced")


@dataclass(frozen=True)
class Finding:
    """A disagreement between the checker and a run, or an error of Argus itself."""

    kind: str
    """false-proof, fault-under-proof, unreplayed-witness, irreproducible-witness,
    runner-disagreement, device-disagreement, device-error, crash or refused."""
    message: str
    case: KernelCase

    def text(self) -> str:
        return f"{self.kind}: {self.message}\n{self.case.text()}"


@dataclass
class Report:
    """What `check_case` found for one case."""

    case: KernelCase
    verdict: str | None = None
    """The checker's verdict, "refused" where it cannot take the kernel as written, None where
    the kernel did not compile or the checker crashed."""
    result: Result | None = None
    findings: list[Finding] = field(default_factory=list)
    runs: list[list[Outcome]] = field(default_factory=list)
    """Per launch, the outcome of each runner."""
    seconds: float = 0.0
    device_runs: int = 0
    """Device runs compared with the interpreter's outputs (`Runner`'s device runners)."""
    device_exact: int = 0
    """Of those, the runs whose outputs were the same bit for bit."""
    device_skipped: int = 0
    """Device runs not made: no interpreter run of the launch was fault-free."""


def check_case(case: KernelCase, runners: Sequence[Runner] = (shadow_runner,), *,
               verify: Callable[[Any], Result] | None = None, solver_timeout_ms: int | None = None) -> Report:
    """Compile the case, check it statically, run each launch with every runner, and hold the
    answers to each other:

    - proved (or nothing to prove): no run has a tag finding, nor a fault of a kind the
      checker looks for (`CLAIMED_FAULTS`; a race whose earlier access is a read is left to the
      interpreter, as the docs say);
    - violated: every witness says it was replayed, and running the launch it names once more
      shows a fault or a tag finding;
    - every runner's fault-free run of a launch leaves the same outputs;
    - a device runner (`Runner`), run only where an interpreter run was fault-free (so that what
      the launch leaves is determined: no race, no read of unwritten data, no access out of
      bounds), runs without error and leaves those outputs within its tolerance.

    `verify` replaces the checker (for tests of the oracles themselves); `solver_timeout_ms`
    bounds each of the checker's solver queries (a query that runs out makes an answer unknown,
    never wrong: a short fuzz trades a few verdicts for time)."""
    started = time.perf_counter()
    report = Report(case)
    try:
        compiled = compile_case(case)
    except ArgusError as err:
        report.findings.append(Finding("refused", f"the front end refused a generated kernel: {err}", case))
        return report
    except Exception as err:  # noqa: BLE001 - a crash of the front end is a finding
        report.findings.append(Finding("crash", f"the front end crashed: {type(err).__name__}: {err}", case))
        return report
    try:
        if verify is not None:
            result = verify(compiled)
        else:
            from .check.verification import verify_kernel

            result = verify_kernel(compiled, case.name, **({} if solver_timeout_ms is None
                                                           else {"timeout_ms": solver_timeout_ms}))
    except VerificationError:  # a kernel the checker cannot take as written (an assertion on untagged
        report.verdict = "refused"  # data): no verdict, so nothing to hold it to
        return report
    except ArgusError as err:
        report.findings.append(Finding("refused", f"the checker refused the kernel: {err}", case))
        return report
    except Exception as err:  # noqa: BLE001
        report.findings.append(Finding("crash", f"the checker crashed: {type(err).__name__}: {err}", case))
        return report
    report.result, report.verdict = result, result.verdict.value
    add = report.findings.append
    checking = [runner for runner in runners if checks_faults(runner)]
    if not checking:
        raise ValueError("check_case needs a runner that checks faults (an interpreter) beside device runners")
    dtypes = argument_dtypes(compiled)
    for number, launch in enumerate(case.launches):
        where = f"launch {number} ({launch.text()})"
        ran = {i: runner(compiled, launch.grid, launch.arguments()) for i, runner in enumerate(runners)
               if checks_faults(runner)}
        reference = next((o for o in ran.values() if o.fault is None and o.error is None), None)
        for index, runner in enumerate(runners):
            if index in ran:
                continue
            if reference is None:
                ran[index] = Outcome(skipped="no interpreter run of the launch was fault-free")
                report.device_skipped += 1
                continue
            outcome = ran[index] = runner(compiled, launch.grid, launch.arguments())
            if outcome.error is not None:
                add(Finding("device-error", f"{where}, runner {index}: {outcome.error}", case))
                continue
            report.device_runs += 1
            difference = output_difference(reference.outputs, outcome.outputs, dtypes,
                                           rtol=getattr(runner, "rtol", 0.0), atol=getattr(runner, "atol", 0.0))
            if difference is not None:
                add(Finding("device-disagreement", f"{where}: runner {index} leaves other outputs than the "
                                                   f"interpreter: {difference}", case))
            elif _same_outputs(reference.outputs, outcome.outputs):
                report.device_exact += 1
        outcomes = [ran[i] for i in range(len(runners))]
        report.runs.append(outcomes)
        for index, outcome in enumerate(outcomes):
            if not checks_faults(runners[index]):
                continue
            run = f"{where}, runner {index}"
            if outcome.error is not None:
                add(Finding("crash", f"{run}: {outcome.error}", case))
            if result.verdict in (Verdict.PROVED, Verdict.NOTHING_TO_PROVE):
                if outcome.findings:
                    add(Finding("false-proof", f"the checker says {result.verdict.value}, but {run} finds "
                                               f"{_finding_text(outcome.findings[0])}", case))
                if outcome.fault is not None and _claimed(outcome.fault, result.verdict):
                    add(Finding("fault-under-proof", f"the checker says {result.verdict.value}, but {run} faults: "
                                                     f"{outcome.fault} at {outcome.fault.location}", case))
        clean = [o for o, r in zip(outcomes, runners) if checks_faults(r) and o.fault is None and o.error is None]
        for other in clean[1:]:
            if not _same_outputs(clean[0].outputs, other.outputs):
                add(Finding("runner-disagreement", f"{where}: two fault-free runs leave different outputs", case))
                break
    if result.verdict is Verdict.VIOLATED:
        for witness in result.witnesses:
            note = str(witness.get("replayed", ""))
            if not note.startswith(REPLAYED):
                add(Finding("unreplayed-witness", f"a reported witness was not replayed: {witness}", case))
                continue
            for runner in checking:
                shown = _replay(compiled, witness, runner)
                if shown is not None:
                    add(Finding("irreproducible-witness", shown, case))
    report.seconds = time.perf_counter() - started
    return report


def _claimed(fault: KernelFault, verdict: Verdict) -> bool:
    """Whether the verdict rules this fault out (`CLAIMED_FAULTS`, but not a race that a write
    makes with an earlier read, nor an access outside a global tensor: docs/verify.md leaves
    those to the interpreter). A race is the checker's when its earlier access is a write: the
    interpreter says that thread "wrote it"."""
    if fault.kind not in CLAIMED_FAULTS:
        return False
    text = str(fault)
    if fault.kind == "data-race" and "wrote it" not in text and "both write it" not in text:
        return False
    if fault.kind == "out-of-bounds" and "tile" not in text:
        return False
    return True


def _finding_text(finding: dict[str, Any]) -> str:
    keys = ("assertion", "kind", "block", "thread", "element", "lhs tag", "rhs tag")
    return ", ".join(f"{k} = {finding[k]}" for k in keys if k in finding)


def _same_outputs(first: list[Any], second: list[Any]) -> bool:
    return all(not isinstance(a, np.ndarray) or np.array_equal(a, b, equal_nan=True) for a, b in zip(first, second))


_GRID = re.compile(r"of grid \((\d+), (\d+), (\d+)\)")


def _replay(compiled: Any, witness: dict[str, Any], runner: Runner) -> str | None:
    """Run the launch a witness names (its sizes, grid and block) once more; None when it
    shows a fault or a tag finding, else what went wrong."""
    from .ir import dialect as D

    sizes = dict(witness.get("sizes") or {})
    block = tuple(witness.get("block") or (0, 0, 0))
    found = _GRID.search(str(witness.get("replayed", "")))
    grid = tuple(int(g) for g in found.groups()) if found else tuple(b + 1 for b in block)
    op = compiled.op
    names = [n.data for n in op.arg_names.data]
    rng = np.random.default_rng(0)
    args: list[Any] = []
    for name, param in zip(names, op.body.block.args):
        t = param.type
        if isinstance(t, D.TensorType):
            shape = tuple(d if isinstance(d, int) else max(1, int(sizes.get(str(d), 1))) for d in t.shape)
            args.append(_random_array(rng, str(t.dtype), shape))
        else:
            args.append(int(sizes.get(name, 0)))
    outcome = runner(compiled, grid, args, blocks=[block])  # type: ignore[list-item]
    if outcome.fault is not None or outcome.findings:
        return None
    if outcome.error is not None:
        return f"the replay of witness {witness} failed: {outcome.error}"
    return f"the witness {witness} does not reproduce: block {block} of grid {grid} runs clean"
