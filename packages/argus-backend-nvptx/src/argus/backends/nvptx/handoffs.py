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
consumer's: iteration n of the one for iteration n of the other. This is done only where the
kernel says so as written:

- both loops are on the same grid of indices (first index and step);
- the barrier's phases are the producer loop's alone: no copy lands on it and no thread
  arrives on it anywhere else (a round of copies before the loop shifts every phase);
- the wait's parity is its iteration's number, n mod 2, in every launch (the solver decides):
  the consumer waits for phase n, the one iteration n of the producer completes;
- the bytes are still last written by that copy.

What is left — that the producer's arrivals and bytes complete each phase, that it never runs
two phases ahead of the consumers (its "empty" waits), and that the wait of each pairing made
here awaits the copy's phase — is the protocol's timing, which `protocol` proves for every
launch where its model follows the kernel (each pairing is told to it), and the interpreter's
schedules test otherwise (`argus.dsl.check.verification`); a verdict of such a kernel says which.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from argus.dsl.check.control import Renamer
from argus.verify.affine import sub_keys

from .protocol import KEY as PROTOCOL

KEY = "nvptx.handoffs"
"""The analysis extension holding the copies recorded per barrier (`TagAnalysis.extensions`)."""


@dataclass
class Landed:
    """A bulk copy's bytes in a shared memory, their tags as functions of loop `symbol`'s index
    (which moves by `step`), written at program point `site`."""

    memory: Any
    idx: np.ndarray
    ids: np.ndarray
    symbol: int
    step: int
    site: int
    record: Any = None
    """The copy's record in the protocol's model (`protocol.Recorder`), None if it has none."""


def barrier_key(a: Any, op: Any, barriers: Any, index: Any) -> tuple[int, int] | None:
    """The barrier an op names, as (its memory, its element offset in its block's segment), when
    the index is one number for every thread that runs the op and the tile puts it at one
    offset (a view's layout may place index i anywhere); None otherwise."""
    value = a.int_value(index, op)
    if not value.concrete or value.const.size == 0 or (value.const != value.const[0]).any():
        return None
    tile = a.values[barriers]
    i = int(value.const[0])
    if not hasattr(tile, "offsets") or not 0 <= i < int(tile.layout.size()):
        return None
    threads = np.arange(1 if tile.base is None else tile.base.shape[0])
    offsets = replace(tile, segment=None).offsets(np.full(threads.size, i), threads)
    if (offsets != offsets[0]).any():
        return None
    return id(tile.memory), int(offsets[0])


def _events(a: Any) -> dict[tuple[int, int], set[Any]]:
    """Per barrier, the runtime loops (symbols; None: none, or one the rebinding does not follow)
    that land copies or arrivals on it."""
    return a.extensions.setdefault(KEY + ".events", {})  # type: ignore[no-any-return]


def _loop_of(a: Any) -> Any:
    """The innermost runtime loop's symbol where the walk is, None outside (or in a loop whose
    threads run iterations of their own)."""
    loop = a.loops[-1] if a.loops else None
    return None if loop is None or loop.symbol is None or loop.index is not None else loop.symbol


def arrived(a: Any, key: tuple[int, int] | None, followed: bool = True) -> None:
    """A thread arrives on barrier `key` (with or without bytes announced): the loop it does it in
    (none where it is not `followed`: an arrival on another block's copy of the barrier)."""
    if key is not None:
        _events(a).setdefault(key, set()).add(_loop_of(a) if followed else None)


def record(a: Any, op: Any, key: tuple[int, int] | None, memory: Any, idx: np.ndarray, ids: np.ndarray,
           thread: int, protocol_record: Any = None) -> None:
    """A bulk copy by `thread` wrote `ids` at bytes `idx` of `memory`, landing on barrier `key`:
    kept when the copy runs in a runtime loop (its tags are then functions of the loop's index)."""
    copies: dict[tuple[Any, ...], Landed] = a.extensions.setdefault(KEY, {})
    arrived(a, key)
    loop = a.loops[-1] if a.loops else None
    if key is None or loop is None or loop.symbol is None or loop.index is not None:
        return  # (a copy outside a runtime loop, or one counted per thread: not followed)
    where = (key, op, thread, int(idx.reshape(-1)[0]), loop.symbol)  # (a loop's first iteration walked
    # on its own has a symbol of its own: the waits of another loop's first iteration take its copies)
    copies[where] = Landed(memory, idx.copy(), ids.copy(), loop.symbol, loop.step, a.site(op), protocol_record)


def rebind(a: Any, op: Any, key: tuple[int, int] | None, wait_record: Any = None) -> None:
    """A wait (`op`) on barrier `key` by threads of a runtime loop: the bytes that copies of
    another loop's iterations land on it hold what that loop's iteration with this one's index
    wrote, where the kernel says so as written (the module's docstring). Each pairing made is
    told to the protocol's model (`protocol`), with the wait's record there (`wait_record`),
    which must prove that the wait awaits that copy's phase."""
    copies: dict[tuple[Any, ...], Landed] = a.extensions.get(KEY, {})
    loop = a.loops[-1] if a.loops else None
    if key is None or not copies or loop is None or loop.symbol is None or loop.index is not None:
        return
    enclosing = {context.symbol for context in a.loops}
    symbol = a.space.symbols[loop.symbol]
    first = symbol.lo
    # (a loop's first iteration walked on its own has a symbol pinned to one value: that value)
    index = symbol.lo if symbol.lo is not None and symbol.lo == symbol.hi else (0, ((loop.symbol, 1),))
    on_it = [(where, landed) for where, landed in copies.items() if where[0] == key]
    matched = [landed for _, landed in on_it
               if landed.symbol not in enclosing and landed.step == loop.step
               and a.space.symbols[landed.symbol].lo == first]
    if not matched:
        return
    chosen = {id(landed) for landed in matched}
    ops = {where[1] for where, landed in on_it if id(landed) in chosen}
    producer = {landed.symbol for where, landed in on_it if where[1] in ops}  # (its first iteration's too)
    if any(where[1] not in ops for where, _ in on_it) or not _events(a).get(key, set()) <= producer:
        return  # (the barrier's phases are not the producer loop's alone)
    start = a.loop_starts.get(loop.symbol)
    if start is None or any(a.loop_starts.get(landed.symbol) != start for landed in matched) or \
            not _waits_for_its_iteration(a, op, index, start, loop.step):
        return
    renamers: dict[int, Renamer] = {}
    for landed in matched:
        flat = landed.idx.reshape(-1)
        if not (landed.memory.site.reshape(-1)[flat] == landed.site).all():
            continue  # (written since by something else: what the copy left is gone)
        renamer = renamers.get(landed.symbol)
        if renamer is None:
            renamer = renamers[landed.symbol] = Renamer(a, landed.symbol, index)
        landed.memory.tags.reshape(-1)[flat] = renamer.ids(landed.ids).reshape(-1)
        recorder = a.extensions.get(PROTOCOL)
        if recorder is not None:
            if wait_record is None or landed.record is None:
                recorder.unsupported.append(f"{a.where(op)}: a hand-off the tags follow, whose wait or copy the "
                                            "protocol's model has no record of")
            else:
                recorder.rebound.add((wait_record, landed.record))


def _waits_for_its_iteration(a: Any, op: Any, index: Any, first: Any, step: int) -> bool:
    """Whether the wait's parity is its iteration's number mod 2 in every launch: iteration
    ``(index - first) / step`` of its loop waits for that phase of the barrier."""
    sp = a.space
    if not isinstance(index, tuple):
        index = (int(index), ())
    count = sp.floordiv(sp.of_key(sub_keys(index, first if isinstance(first, tuple) else (int(first), ())), 1),
                        sp.of_key((step, ()), 1))
    wanted = sp.mod(count, sp.of_key((2, ()), 1)).row(0)
    forms, _ = a.int_value(op.parity, op).forms()
    return all(a.always_equal(form, wanted) for form in forms)
