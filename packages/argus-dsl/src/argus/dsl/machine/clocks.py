"""Happens-before for one block (or one cluster of blocks run together): vector clocks and
the per-byte access history that turns two unordered accesses into a data race.

Who has a clock (a *unit*):
- each warp (its lanes run in lockstep here, so they share the warp's clock; accesses by
  two lanes of one warp are also told apart, see `History`);
- each asynchronous *stream*: the matrix products a warpgroup started with `matmul_async`
  (retired in order by `matmul_wait`), the bulk copies counted on one memory barrier, the
  `cp.async` copies of one warp. An agent of a stream (one product, one copy) carries the
  clock its issuer had when it issued it, plus its own tick of the stream.

An access is stamped with its unit and that unit's own clock. An access B is ordered after an
access A (A happens before B) exactly when B's unit's clock has seen A's stamp: `C[b][a.unit]
>= a.clock`. Releases (an arrival on a barrier, a copy landing) fold the releaser's clock into
the barrier's; acquires (leaving a barrier, a satisfied wait) fold it into the waiter's, and a
releasing unit ticks its own clock, so that what it does afterwards is not covered.

Every shared byte remembers its last write (unit, clock, thread, program point) and, per
reading unit, the clock of the last read since that write; a write must be ordered after the
last write and after every recorded read; a read after the last write.

Lanes of a warp share its clock, so the clock alone cannot order two lanes' accesses: those are
ordered only when the warp synchronized between them (its sync count moved). A copy's landing
is checked the same way against the lanes of its issuer's warp, with the sync count the warp
had when the copy was issued: another lane's read before the issue, with no sync between, is
not ordered before the landing, however late it lands.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: Stamp of "no access".
NEVER = 0
#: The sync count of a per-thread copy not yet retired by its thread's wait.
PENDING = -2


@dataclass
class Stream:
    """An asynchronous stream's unit and the next tick it hands out."""

    unit: int
    name: str
    ticks: int = 0

    def tick(self) -> int:
        self.ticks += 1
        return self.ticks


class Clocks:
    """The vector clocks of `warps` warps and of the streams added as they start."""

    def __init__(self, warps: int, warp_size: int) -> None:
        self.warps = warps
        self.warp_size = warp_size
        self.names: list[str] = [f"warp {w}" for w in range(warps)]
        self.matrix = np.zeros((warps, warps), np.int64)
        self.matrix[np.arange(warps), np.arange(warps)] = 1
        self.syncs = np.zeros(warps, np.int64)
        """Per warp: how many times its lanes were ordered among themselves (barriers, waits)."""
        self.streams: dict[object, Stream] = {}
        self.reader_units: list[int] = list(range(warps))
        """The units that read shared memory (warps, product streams), one history column each."""
        self.column: dict[int, int] = {w: w for w in range(warps)}

    @property
    def units(self) -> int:
        return self.matrix.shape[1]

    # ---- units ---------------------------------------------------------------------------
    def stream(self, key: object, name: str, reads: bool = False) -> Stream:
        """The stream named by `key` (made on first use: one more unit in every clock; a stream
        whose agents read shared memory gets a column in the access history too)."""
        found = self.streams.get(key)
        if found is None:
            unit = self.units
            self.matrix = np.pad(self.matrix, ((0, 0), (0, 1)))
            self.names.append(name)
            found = self.streams[key] = Stream(unit, name)
            if reads:
                self.column[unit] = len(self.reader_units)
                self.reader_units.append(unit)
        return found

    def widen(self, vc: np.ndarray) -> np.ndarray:
        """A clock taken when there were fewer units, as wide as today's."""
        if vc.size == self.units:
            return vc
        out = np.zeros(self.units, vc.dtype)  # np.pad costs some 20 times as much on a clock
        out[:vc.size] = vc
        return out

    def warp_of(self, threads: np.ndarray) -> np.ndarray:
        return threads // self.warp_size  # type: ignore[no-any-return]

    # ---- synchronization -----------------------------------------------------------------
    def joined(self, warps: np.ndarray) -> np.ndarray:
        """The join of the clocks of `warps` (a release by all of them, as one clock)."""
        return self.matrix[np.unique(warps)].max(axis=0)  # type: ignore[no-any-return]

    def release(self, warps: np.ndarray) -> np.ndarray:
        """`warps` publish what they did so far; they tick, so what follows is not covered."""
        warps = _distinct(warps)
        vc = self.matrix[warps].max(axis=0)
        self.matrix[warps, warps] += 1
        return vc  # type: ignore[no-any-return]

    def acquire(self, warps: np.ndarray, vc: np.ndarray, lanes: bool = True) -> None:
        """`warps` have seen `vc`: whatever it covers happens before what they do next. `lanes`:
        the wait also orders the warp's lanes among themselves (a barrier all of them met), not
        only one thread's own asynchronous work (its copies, its products)."""
        warps = _distinct(warps)
        vc = self.widen(vc)
        self.matrix[warps] = np.maximum(self.matrix[warps], vc)
        if lanes:
            self.syncs[warps] += 1

    def agent_clock(self, warps: np.ndarray, stream: Stream) -> tuple[int, np.ndarray]:
        """A new agent of `stream` issued by `warps`: its tick and its clock (what its issuers
        did before it, and its own tick). The issuers tick too: what they do after issuing is
        not ordered before the agent's accesses."""
        vc = self.release(warps)  # a new array: the issuers' clocks' join
        tick = stream.tick()
        vc = self.widen(vc)
        vc[stream.unit] = tick
        return tick, vc


@dataclass
class Access:
    """One side of a race, for the report."""

    who: str
    op: int
    """Index of the op in the interpreter's table of program points (-1: unknown)."""
    thread: int = -1


@dataclass
class History:
    """Per shared byte: the last write and, per reading unit, the last read since it."""

    nbytes: int
    readers: int
    """Units that read (warps and product streams); later units only write."""
    write_unit: np.ndarray = field(init=False)
    write_clock: np.ndarray = field(init=False)
    write_thread: np.ndarray = field(init=False)
    write_sync: np.ndarray = field(init=False)
    write_op: np.ndarray = field(init=False)
    read_clock: np.ndarray = field(init=False)
    read_thread: np.ndarray = field(init=False)
    """Per byte: the one thread that read it since the last write, -2 several, -1 none."""
    read_sync: np.ndarray = field(init=False)
    read_op: np.ndarray = field(init=False)
    read_any: np.ndarray = field(init=False)
    """Per byte: whether any unit read it since the last write."""

    def __post_init__(self) -> None:
        n = self.nbytes
        self.write_unit = np.full(n, -1, np.int64)
        self.write_clock = np.zeros(n, np.int64)
        self.write_thread = np.full(n, -1, np.int64)
        self.write_sync = np.zeros(n, np.int64)
        self.write_op = np.full(n, -1, np.int64)
        self.read_clock = np.zeros((n, self.readers), np.int64)
        self.read_thread = np.full(n, -1, np.int64)
        self.read_sync = np.zeros(n, np.int64)
        self.read_op = np.full(n, -1, np.int64)
        self.read_any = np.zeros(n, bool)

    def widen_readers(self, readers: int) -> None:
        if readers > self.readers:
            self.read_clock = np.pad(self.read_clock, ((0, 0), (0, readers - self.readers)))
            self.readers = readers


class Race(Exception):
    """Two unordered accesses to one byte: `earlier` (recorded) and `later` (now), each with
    its verb ("writes", "read", ...)."""

    def __init__(self, byte: int, earlier: Access, later: Access, verbs: tuple[str, str]) -> None:
        super().__init__(f"{later.who} {verbs[1]} byte {byte} and {earlier.who} {verbs[0]} it")
        self.byte = byte
        self.earlier = earlier
        self.later = later
        self.verbs = verbs


class Tracker:
    """Checks and records shared-memory accesses against the clocks."""

    def __init__(self, clocks: Clocks) -> None:
        self.clocks = clocks
        self.histories: dict[int, History] = {}

    def history(self, memory_id: int, nbytes: int) -> History:
        found = self.histories.get(memory_id)
        if found is None:
            found = self.histories[memory_id] = History(nbytes, len(self.clocks.reader_units))
        return found

    # ---- threads -------------------------------------------------------------------------
    def thread_read(self, h: History, idx: np.ndarray, threads: np.ndarray, op: int) -> None:
        """`threads[r]` read bytes `idx[r]` (rows broadcast against idx)."""
        flat, owners = _flatten(idx, threads)
        if flat.size == 0:
            return
        clocks = self.clocks
        warps = owners // clocks.warp_size
        self._after_write(h, flat, owners, warps, _WarpClocks(clocks.matrix, warps), op, "reads", thread=True)
        h.widen_readers(len(clocks.reader_units))
        h.read_clock[flat, warps] = clocks.matrix[warps, warps]
        # one reader thread per byte since its warp last synchronized, or several (-2): several
        # before, or another thread of the warp now (scattering the owners, a byte two of them
        # read keeps only one, so the others see it differ)
        syncs = clocks.syncs[warps]
        old = h.read_thread[flat]
        h.read_thread[flat] = owners
        several = h.read_thread[flat] != owners
        if (old != -1).any():
            several |= (old == -2) | ((old >= 0) & (old != owners) & (old // clocks.warp_size == warps)
                                      & (h.read_sync[flat] == syncs))
        if several.any():
            h.read_thread[flat[several]] = -2
        h.read_sync[flat] = syncs
        h.read_op[flat] = op
        h.read_any[flat] = True

    def thread_write(self, h: History, idx: np.ndarray, threads: np.ndarray, op: int) -> None:
        flat, owners = _flatten(idx, threads)
        if flat.size == 0:
            return
        order = np.argsort(flat, kind="stable")
        sf, so = flat[order], owners[order]
        clash = np.flatnonzero((sf[1:] == sf[:-1]) & (so[1:] != so[:-1]))
        if clash.size:
            k = clash[0]
            raise Race(int(sf[k]), Access(f"thread {int(so[k])}", op, int(so[k])),
                       Access(f"thread {int(so[k + 1])}", op, int(so[k + 1])), ("writes", "writes"))
        clocks = self.clocks
        warps = owners // clocks.warp_size
        vcs = _WarpClocks(clocks.matrix, warps)
        self._after_write(h, flat, owners, warps, vcs, op, "writes", thread=True)
        self._after_reads(h, flat, owners, warps, vcs, op, thread=True)
        self._record_write(h, flat, warps, clocks.matrix[warps, warps], owners, clocks.syncs[warps], op)

    # ---- agents --------------------------------------------------------------------------
    def agent_read(self, h: History, flat: np.ndarray, unit: int, tick: int, vc: np.ndarray, issuer: int,
                   name: str, op: int) -> None:
        """An agent (a product) reads `flat` bytes, ordered after what its clock `vc` covers."""
        if flat.size == 0:
            return
        vc = self.clocks.widen(vc)
        units = np.full(flat.size, unit)
        owners = np.full(flat.size, issuer)
        self._after_write(h, flat, owners, units, _OneClock(vc), op, "reads", agent=name)
        h.widen_readers(len(self.clocks.reader_units))
        h.read_clock[flat, self.clocks.column[unit]] = tick
        h.read_op[flat] = op
        h.read_any[flat] = True

    def agent_write(self, h: History, flat: np.ndarray, unit: int | np.ndarray, tick: int | np.ndarray,
                    vc: np.ndarray, issuer: int | np.ndarray, name: str, op: int, per_thread: bool = False,
                    issued_sync: int | np.ndarray | None = None) -> None:
        """An agent (a copy) writes `flat` bytes at the moment the schedule picked. `unit`,
        `tick`, `issuer` and `issued_sync` may be per byte, and `vc` a clock per byte (copies of
        several threads, each its own stream, landing together). `issued_sync`: the sync count
        of the issuer's warp when it issued the copy; the accesses its other lanes made at that
        count are not ordered before the landing (the warp's clock, in `vc`, covers them all).
        `name` may hold ``{thread}``, the issuer of the byte a race is reported on."""
        if flat.size == 0:
            return
        units = np.broadcast_to(np.asarray(unit, np.int64), flat.shape)
        owners = np.broadcast_to(np.asarray(issuer, np.int64), flat.shape)
        vcs: _Clock = _OneClock(self.clocks.widen(vc)) if vc.ndim == 1 else \
            _RowClocks(np.broadcast_to(_widen_rows(vc, self.clocks.units), (flat.size, self.clocks.units)))
        lanes = None if issued_sync is None else \
            (owners // self.clocks.warp_size, np.broadcast_to(np.asarray(issued_sync, np.int64), flat.shape))
        self._after_write(h, flat, owners, units, vcs, op, "writes", agent=name, lanes=lanes)
        self._after_reads(h, flat, owners, units, vcs, op, agent=name, lanes=lanes)
        self._record_write(h, flat, units, np.broadcast_to(np.asarray(tick, np.int64), flat.shape), owners,
                           np.full(flat.size, PENDING if per_thread else -1), op)

    def retired(self, h: History, flat: np.ndarray, unit: int, tick: int) -> None:
        """A per-thread copy (`agent_write(per_thread=True)`) is retired by its thread's wait: the
        other lanes of its warp see it only after their warp synchronizes from here on."""
        if flat.size == 0:
            return
        mine = (h.write_unit[flat] == unit) & (h.write_clock[flat] == tick) & (h.write_sync[flat] == PENDING)
        warp = int(h.write_thread[flat[0]]) // self.clocks.warp_size
        h.write_sync[flat[mine]] = self.clocks.syncs[warp]

    # ---- checks --------------------------------------------------------------------------
    def _after_write(self, h: History, flat: np.ndarray, owners: np.ndarray, units: np.ndarray, vcs: _Clock,
                     op: int, verb: str, agent: str | None = None, thread: bool = False,
                     lanes: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """The access must be ordered after the byte's last write (another lane of the same
        warp: only after the warp synchronized since). `thread`: the access is by threads
        (`units` are their warps), else by an agent (`units` are streams), which `lanes` (per
        byte: its issuer's warp and that warp's sync count at the issue) checks against the
        issuer's warp's other lanes. Only bytes with a recorded write are looked at."""
        wu = h.write_unit[flat]
        rows = np.flatnonzero(wu >= 0)
        if rows.size == 0:
            return
        if rows.size != flat.size:
            flat, owners, units, wu = flat[rows], owners[rows], units[rows], wu[rows]
            if lanes is not None:
                lanes = (lanes[0][rows], lanes[1][rows])
        seen = vcs.at(rows, wu) >= h.write_clock[flat]
        if thread:
            bad = (~seen & (wu != units)) | self._lane_wrote(h, flat, owners, wu, units, self.clocks.syncs[units])
        elif lanes is not None:
            bad = ~seen | self._lane_wrote(h, flat, owners, wu, *lanes)
        else:
            bad = ~seen
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            byte = int(flat[k])
            earlier = Access(self._who(int(wu[k]), int(h.write_thread[byte])), int(h.write_op[byte]),
                             int(h.write_thread[byte]))
            later = Access(_named(agent, int(owners[k])), op, int(owners[k]))
            raise Race(byte, earlier, later, ("wrote", verb))

    def _lane_wrote(self, h: History, flat: np.ndarray, owners: np.ndarray, wu: np.ndarray, warps: np.ndarray,
                    syncs: np.ndarray) -> np.ndarray:
        """Per byte: its last write is another lane's of `warps` (the accessing threads' or the
        copy issuers' warps), not ordered by a sync of that warp since (`syncs`: the warp's sync
        count at the access, or at the issue)."""
        ws, wt = h.write_sync[flat], h.write_thread[flat]
        other = wt != owners
        lane_race = (wu == warps) & other & (ws == syncs)
        # a copy of one thread, retired by that thread's wait: its warp's other lanes need a sync
        lane_copy = (wu >= self.clocks.warps) & (ws != -1) & other & (wt // self.clocks.warp_size == warps) & (
            (ws == PENDING) | (ws == syncs))
        return lane_race | lane_copy  # type: ignore[no-any-return]

    def _after_reads(self, h: History, flat: np.ndarray, owners: np.ndarray, units: np.ndarray, vcs: _Clock,
                     op: int, agent: str | None = None, thread: bool = False,
                     lanes: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        """A write must be ordered after every read recorded since the last write (`lanes`: as
        in `_after_write`). Only bytes read since their last write are looked at."""
        rows = np.flatnonzero(h.read_any[flat])
        if rows.size == 0:
            return
        if rows.size != flat.size:
            flat, owners, units = flat[rows], owners[rows], units[rows]
            if lanes is not None:
                lanes = (lanes[0][rows], lanes[1][rows])
        readers = h.read_clock.shape[1]
        reads = h.read_clock[flat]
        unseen = reads > vcs.columns(rows, self.clocks.reader_units[:readers])
        rt = h.read_thread[flat]
        bad = bad_unit = unseen.any(axis=1)
        if thread:
            # a warp's own earlier reads are in program order with its writes, except another lane's
            unseen[np.arange(flat.size), units] = False
            bad_unit = unseen.any(axis=1)
            bad = bad_unit | self._lane_read(h, flat, owners, reads, units, self.clocks.syncs[units])
        elif lanes is not None:
            bad = bad_unit | self._lane_read(h, flat, owners, reads, *lanes)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            byte = int(flat[k])
            if bad_unit[k]:
                unit = self.clocks.reader_units[int(np.flatnonzero(unseen[k])[0])]
                thread_id = int(rt[k]) if rt[k] >= 0 and rt[k] // self.clocks.warp_size == unit else -1
                earlier = Access(self._who(unit, thread_id), int(h.read_op[byte]), thread_id)
            else:
                earlier = Access("another thread of its warp" if rt[k] == -2 else f"thread {int(rt[k])}",
                                 int(h.read_op[byte]), int(rt[k]))
            later = Access(_named(agent, int(owners[k])), op, int(owners[k]))
            raise Race(byte, earlier, later, ("read", "writes"))

    def _lane_read(self, h: History, flat: np.ndarray, owners: np.ndarray, reads: np.ndarray, warps: np.ndarray,
                   syncs: np.ndarray) -> np.ndarray:
        """Per byte: another lane of `warps` read it, not ordered by a sync of that warp since
        (`syncs`, as in `_lane_wrote`). `reads`: the bytes' read clocks, a column per reader."""
        rt = h.read_thread[flat]
        return (h.read_sync[flat] == syncs) & (  # type: ignore[no-any-return]
            ((rt >= 0) & (rt // self.clocks.warp_size == warps) & (rt != owners))
            | ((rt == -2) & (reads[np.arange(flat.size), warps] > 0)))

    def _record_write(self, h: History, flat: np.ndarray, units: np.ndarray, clocks: np.ndarray, owners: np.ndarray,
                      syncs: np.ndarray, op: int) -> None:
        h.write_unit[flat] = units
        h.write_clock[flat] = clocks
        h.write_thread[flat] = owners
        h.write_sync[flat] = syncs
        h.write_op[flat] = op
        read = flat[h.read_any[flat]]  # only bytes read since their last write hold a read to forget
        if read.size:
            h.read_clock[read] = NEVER
            h.read_thread[read] = -1
            h.read_any[read] = False

    def _who(self, unit: int, thread: int) -> str:
        if unit < self.clocks.warps:
            return f"thread {thread}" if thread >= 0 else self.clocks.names[unit]
        return self.clocks.names[unit]


class _WarpClocks:
    """The clocks of the accessing threads' warps, one row per accessed byte, read without
    building the (bytes × units) array."""

    def __init__(self, matrix: np.ndarray, warps: np.ndarray) -> None:
        self.matrix, self.warps = matrix, warps

    def at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Row `rows[i]`'s clock of unit `cols[i]` (`rows` index the accessed bytes)."""
        return self.matrix[self.warps[rows], cols]  # type: ignore[no-any-return]

    def columns(self, rows: np.ndarray, cols: list[int]) -> np.ndarray:
        """Rows `rows`' clocks of units `cols`, as a (rows × cols) array."""
        return self.matrix[:, cols][self.warps[rows]]  # type: ignore[no-any-return]


class _OneClock:
    """One clock for every accessed byte (an agent)."""

    def __init__(self, vc: np.ndarray) -> None:
        self.vc = vc

    def at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return self.vc[cols]  # type: ignore[no-any-return]

    def columns(self, rows: np.ndarray, cols: list[int]) -> np.ndarray:
        return self.vc[cols][None, :]  # type: ignore[no-any-return]


class _RowClocks:
    """A clock per accessed byte (copies of several threads landing together)."""

    def __init__(self, vcs: np.ndarray) -> None:
        self.vcs = vcs

    def at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return self.vcs[rows, cols]  # type: ignore[no-any-return]

    def columns(self, rows: np.ndarray, cols: list[int]) -> np.ndarray:
        return self.vcs[rows][:, cols]  # type: ignore[no-any-return]


_Clock = _WarpClocks | _OneClock | _RowClocks


def _named(agent: str | None, thread: int) -> str:
    """Who made an access: `thread`, or the agent (its name may hold the issuing ``{thread}``)."""
    return f"thread {thread}" if agent is None else agent.replace("{thread}", str(thread))


def _distinct(warps: np.ndarray) -> np.ndarray:
    """The distinct warps of `warps` (most often one already)."""
    return warps if warps.size <= 1 else np.unique(warps)


def _widen_rows(vcs: np.ndarray, units: int) -> np.ndarray:
    return vcs if vcs.shape[1] == units else np.pad(vcs, ((0, 0), (0, units - vcs.shape[1])))


def _flatten(idx: np.ndarray, threads: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    flat = idx.reshape(-1).astype(np.int64, copy=False)
    if idx.ndim > 1 and threads.size == idx.shape[0]:  # a row per thread
        return flat, np.repeat(threads.astype(np.int64, copy=False), flat.size // max(1, threads.size))
    owners = np.broadcast_to(threads.reshape(-1, *([1] * (idx.ndim - 1))), idx.shape) if idx.ndim > 1 else \
        np.broadcast_to(threads, idx.shape)
    return flat, np.asarray(owners).reshape(-1).astype(np.int64)
