"""Hand-offs through memory barriers, for the static checker: what a consumer's loop reads from
a shared stage that a producer's loop filled with bulk tensor copies.

The checker walks a block's threads in lockstep, so a warp-specialized kernel's producer loop
runs to its end before the consumers' loop starts (`argus.dsl.check.control`): after it, a stage
holds the slice of the producer's *last* iteration, and a consumer summing one slice per
iteration would seem to sum that one slice again and again. What the kernel means is the
hand-off: the consumer's iteration n waits on the stage's "full" barrier for the phase the
producer's iteration n completes, and reads what that iteration copied.

So each bulk copy that lands on a barrier from inside a runtime loop is recorded with its tags
as functions of that loop's index; when a thread of another loop waits on the same barrier,
the bytes the copy wrote hold those tags again, the producer's index renamed to the
consumer's: iteration n of the one for iteration n of the other. This is done only where it
holds as written — both loops on the same grid of indices (first index and step), the bytes
still last written by that copy — and takes the protocol as the kernel states it: that each
consumer's wait is for the phase of its own iteration is what the interpreter's schedules test
(`argus.dsl.check.verification`), and a verdict of such a kernel says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from argus.dsl.check.control import Renamer

KEY = "nvptx.handoffs"
"""The analysis extension holding the copies recorded per barrier (`TagAnalysis.extensions`)."""


@dataclass
class Landed:
    """A bulk copy's bytes in a shared memory, their tags as functions of loop `symbol`'s index
    (whose grid starts at `first` and moves by `step`), written at program point `site`."""

    memory: Any
    idx: np.ndarray
    ids: np.ndarray
    symbol: int
    first: Any
    step: int
    site: int


def barrier_key(a: Any, op: Any, barriers: Any, index: Any) -> tuple[int, int] | None:
    """The barrier an op names, as (its memory, its index), when the index is one number for
    every thread that runs the op; None otherwise."""
    value = a.int_value(index, op)
    if not value.concrete or value.const.size == 0 or (value.const != value.const[0]).any():
        return None
    return id(a.values[barriers].memory), int(value.const[0])


def record(a: Any, op: Any, key: tuple[int, int] | None, memory: Any, idx: np.ndarray, ids: np.ndarray,
           thread: int) -> None:
    """A bulk copy by `thread` wrote `ids` at bytes `idx` of `memory`, landing on barrier `key`:
    kept when the copy runs in a runtime loop (its tags are then functions of the loop's index)."""
    copies: dict[tuple[Any, ...], Landed] = a.extensions.setdefault(KEY, {})
    loop = a.loops[-1] if a.loops else None
    if key is None or loop is None or loop.symbol is None or loop.index is not None:
        return  # (a copy outside a runtime loop, or one counted per thread: not followed)
    where = (key, op, thread, int(idx.reshape(-1)[0]), loop.symbol)  # (a loop's first iteration walked
    # on its own has a symbol of its own: the waits of another loop's first iteration take its copies)
    copies[where] = Landed(memory, idx.copy(), ids.copy(), loop.symbol, a.space.symbols[loop.symbol].lo, loop.step,
                           a.site(op))


def rebind(a: Any, key: tuple[int, int] | None) -> None:
    """A wait on barrier `key` by threads of a runtime loop: the bytes that copies of another
    loop's iterations land on it hold what that loop's iteration with this one's index wrote."""
    copies: dict[tuple[Any, ...], Landed] = a.extensions.get(KEY, {})
    loop = a.loops[-1] if a.loops else None
    if key is None or not copies or loop is None or loop.symbol is None or loop.index is not None:
        return
    enclosing = {context.symbol for context in a.loops}
    symbol = a.space.symbols[loop.symbol]
    first = symbol.lo
    # (a loop's first iteration walked on its own has a symbol pinned to one value: that value)
    index = symbol.lo if symbol.lo is not None and symbol.lo == symbol.hi else (0, ((loop.symbol, 1),))
    renamers: dict[int, Renamer] = {}
    for (on, *_), landed in copies.items():
        if on != key or landed.symbol in enclosing or landed.step != loop.step or landed.first != first:
            continue
        flat = landed.idx.reshape(-1)
        if not (landed.memory.site.reshape(-1)[flat] == landed.site).all():
            continue  # (written since by something else: what the copy left is gone)
        renamer = renamers.get(landed.symbol)
        if renamer is None:
            renamer = renamers[landed.symbol] = Renamer(a, landed.symbol, index)
        landed.memory.tags.reshape(-1)[flat] = renamer.ids(landed.ids).reshape(-1)
