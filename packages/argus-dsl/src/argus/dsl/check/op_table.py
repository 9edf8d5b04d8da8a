"""A kernel's ops read off the IR once, as plain lists of integers.

The checker's preparation — tag liveness (`tag_liveness`) and the plan of which copies of an
unrolled loop run together (`batching`) — reads every op's kind, operands and results several
times, and for each value who made it and how often it is used. Read through xDSL's objects,
each of those reads costs about a microsecond; read once here, those walks run on integers.

Ops are numbered in program order (an op before the ops of its regions); values are named by
identity (the IR holds them, so an identity names one value while the kernel lives).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from itertools import chain
from typing import Any

from xdsl.ir import Block, Operation, SSAValue


def _operand_tuple(op: Operation) -> tuple[SSAValue, ...]:
    """An op's operands. xDSL keeps them as a tuple; its public `operands` wraps that tuple in a
    new view object on every access, which would cost this walk more than everything else."""
    found = getattr(op, "_operands", None)
    return found if isinstance(found, tuple) else tuple(op.operands)


def _block_ops(block: Block) -> Iterator[Operation]:
    """A block's ops in order, following xDSL's links between them directly (its public
    iterator is a Python object whose steps double the cost of reading a block)."""
    op = getattr(block, "_first_op", _UNLINKED)
    if op is _UNLINKED:
        yield from block.ops
        return
    while op is not None:
        yield op
        op = op._next_op  # type: ignore[union-attr]


_UNLINKED = object()


class OpTable:
    """Every op of a kernel, in program order, with what the preparation's walks read of it."""

    def __init__(self, kernel: Operation) -> None:
        self.ops: list[Operation] = []
        self.ends: list[int] = []
        """Per op, the number after the last op of its regions (its own number plus one when it
        has none): the ops inside it are those in between."""
        self.blocks: dict[int, list[int]] = {}
        """Per block (by identity), its ops' numbers in program order."""
        self.bodies: dict[int, Block] = {}
        """Per op with regions (by number), the first block of its first region (a loop's body)."""
        for region in kernel.regions:
            for block in region.blocks:
                self._collect(block)
        ops = self.ops
        self.kinds: list[type] = list(map(type, ops))
        self.operand_values: list[tuple[SSAValue, ...]] = list(map(_operand_tuple, ops))
        """Per op, its operands."""
        self.operands: list[tuple[int, ...]] = [tuple(map(id, values)) for values in self.operand_values]
        """Per op, its operands by identity."""
        self.results: list[tuple[int, ...]] = [tuple(map(id, op.results)) for op in ops]
        """Per op, its results by identity."""
        self.maker: dict[int, int] = {r: number for number, results in enumerate(self.results) for r in results}
        """Per result (by identity), the number of the op that makes it."""
        self.uses: Counter[int] = Counter(chain.from_iterable(self.operands))
        """Per value (by identity), how many operands name it."""

    def _collect(self, block: Block) -> None:
        """The block's ops in program order, each followed by the ops of its regions."""
        ops, ends = self.ops, self.ends
        own = []
        for op in _block_ops(block):
            own.append(len(ops))
            ops.append(op)
            regions = op.regions
            if regions:
                number = len(ops) - 1
                ends.append(0)
                for region in regions:
                    for inner in region.blocks:
                        self.bodies.setdefault(number, inner)
                        self._collect(inner)
                ends[number] = len(ops)
            else:
                ends.append(len(ops))
        self.blocks[id(block)] = own

    def block(self, block: Block) -> list[int]:
        """A block's ops' numbers, in program order."""
        return self.blocks[id(block)]

    def body(self, number: int) -> list[int]:
        """The numbers of the ops of an op's body (its first region's first block), in order."""
        return self.blocks[id(self.bodies[number])]

    def of_kind(self, kind: type) -> list[Any]:
        """The ops of this kind, in program order."""
        return [op for op, k in zip(self.ops, self.kinds) if k is kind]

    def holds(self, block: Block, kind: type) -> bool:
        """Whether an op of `kind` sits in `block` (in its ops' regions too, at any depth)."""
        numbers = self.blocks[id(block)]
        return bool(numbers) and kind in self.kinds[numbers[0]:self.ends[numbers[-1]]]
