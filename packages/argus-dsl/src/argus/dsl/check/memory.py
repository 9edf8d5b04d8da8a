"""The abstract memory a rule reads and writes through: byte tags of tiles and registers (read,
written, each byte's write status), the byte indices of tile accesses, the checks every access
makes (unwritten bytes, overwrites of tags still to be read, registers a product still
computes), and interned tags of global elements.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from argus.verify.affine import Uniform, runs, uniform_key, unique_rows
from argus.verify.products import PRODUCT, PRODUCT_A, PRODUCT_B, ROW_PART, ROWS, layout
from argus.verify.tags import BYTES, TOP

from ..errors import VerificationError
from ..machine.tiles import offset_table
from .initialization import written
from .product_reads import OperandMemory
from .shared_reads import SEVERAL, SharedMemory
from .reports import describer
from .state import address_fingerprint, key_component, same_objects

if TYPE_CHECKING:
    from argus.verify.affine import Affine
    from argus.verify.memory import TagMemory
    from xdsl.ir import Operation
    from ..machine.interpreter import TileValue


class AbstractMemory:
    """The abstract memory part of `TagAnalysis` (a mixin: its state is set in `TagAnalysis.__init__`)."""

    def read_tags(self, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray,
                  sites: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
        """Tags at byte indices `idx` (rows: `threads`, those of `points`), and the sites that
        wrote them if asked; in a run of copies, as program order leaves them (`batching`)."""
        if self.footprint is not None:
            return self.footprint.read(memory, idx, threads, points, sites)
        tags = memory.read(idx, threads)
        if not sites:
            return tags, None
        return tags, (memory.site.reshape(-1)[threads[:, None] * memory.tags.shape[1] + idx] if memory.per_thread
                      else memory.site[idx])

    def write_status(self, memory: TagMemory, idx: np.ndarray, threads: np.ndarray, points: np.ndarray
                     ) -> np.ndarray:
        """Whether something wrote bytes `idx` (rows: `threads`, of `points`) before the points
        read them (in a run of copies, in program order), as sites: a write's (or `RESET`) where
        one did, `NEVER` where none did, a code of `initialization` where one did on some paths
        only. While a loop tracks what its body reads before writing, this is such a read where
        the bytes are not known to be written (what the iteration before wrote may change that)."""
        if self.footprint is not None:
            return self.footprint.write_status(memory, idx, threads, points)
        at = threads[:, None] * memory.tags.shape[1] + idx if memory.per_thread else idx
        status = memory.site.reshape(-1)[at]
        if memory.exposed is not None and memory.fresh is not None:
            open_ = at[~written(status)]
            memory.exposed.reshape(-1)[open_] |= ~memory.fresh.reshape(-1)[open_]
        return status  # type: ignore[no-any-return]

    def write_tags(self, memory: TagMemory, idx: np.ndarray, tags: np.ndarray, threads: np.ndarray,
                   points: np.ndarray, site: int) -> None:
        """Thread `threads[r]` (of `points[r]`) writes `tags[r]` at bytes `idx[r]`."""
        if self.footprint is not None:
            self.footprint.write(memory, idx, tags, threads, points, site)
        else:
            memory.write(idx, tags, threads, site)

    def _product_bytes(self, comps: list[Affine], nbytes: int) -> np.ndarray | None:
        """`intern` of products a tag function gives (``product(a_rows, b_rows, k)``), laid out
        as an accumulator holds them: A's rows and B's rows with the span are interned apart (a
        tile of C has as many elements as rows times columns, but few rows and few columns).
        None where the form is not one this can take apart (the table then does, per element)."""
        lengths = [uniform_key(c) for c in comps[1:2]]
        if lengths[0] is None or lengths[0][1]:
            return None
        la = int(lengths[0][0])
        lb_key = uniform_key(comps[2 + la]) if len(comps) > 2 + la else None
        if lb_key is None or lb_key[1]:
            return None
        lb = int(lb_key[0])
        rows_a, rows_b, span = comps[2:2 + la], comps[3 + la:3 + la + lb], list(comps[3 + la + lb:])
        pos_key = uniform_key(span[0]) if len(span) > 2 else None
        if pos_key is None or pos_key[1]:
            return None
        pos = int(pos_key[0])
        if pos >= 0:
            width = self.space.sub(span[-1], span[1 + pos])
            one = ~width.symbolic_points() & (width.const == 1)
            if one.all():  # (a span of one value is that point)
                span = [self.space.constant(-1, len(comps[0])), *span[1:-1], self.space.constant(0, len(comps[0]))]
            elif one.any():
                return None
        if nbytes < 2:
            return np.full((self.n, nbytes), TOP, np.int64)
        constant, points = self.space.constant, len(comps[0])
        a = self._elements([constant(PRODUCT_A, points), *rows_a])
        b = self._elements([constant(PRODUCT_B, points), constant(lb, points), *rows_b, *span])
        return layout(a, b, nbytes)

    def _operand_bytes(self, comps: list[Affine], nbytes: int) -> np.ndarray | None:
        """`intern` of operand tags with rows (``tag(a, ..., rows=...)``), laid out as the table
        lays them (`argus.verify.products`): the pair tags and the row parts interned apart (a
        tile of A has as many elements as rows times k, but few rows and few k). None where the
        form is not one this can take apart, or the elements are one byte wide (kept whole)."""
        count = uniform_key(comps[1]) if len(comps) > 1 else None
        if nbytes < 2 or count is None or count[1]:
            return None
        npair = int(count[0])
        pair = self._elements(comps[2:2 + npair])
        rows = self._elements([self.space.constant(ROW_PART, len(comps[0])), *comps[2 + npair:]])
        self.table.rowed = True
        return layout(pair, rows, nbytes)

    # ---- memories ----------------------------------------------------------------------
    def concrete_offsets(self, op: Operation, value: Affine, what: str) -> np.ndarray:
        if value.concrete:
            return value.const
        symbols = sorted({self.space.describe_atom(a) for a in value.terms})
        if any(self.space.atoms[a].kind == "opaque" for a in value.terms):
            raise VerificationError(
                f"the {what} depends on data read from memory; the checker needs shared and register addresses "
                "computed from thread ids, unrolled loop indices and constants", self.where(op))
        raise self.undecidable(op, f"the {what} depends on {', '.join(symbols)}; the checker enumerates shared and "
                                   "register addresses and needs them to depend only on thread ids, unrolled loop "
                                   "indices and constants")

    def tile_bytes(self, op: Operation, tile: TileValue, coords: list[Affine] | None, offset: Affine | None,
                   mask: np.ndarray) -> np.ndarray:
        """Byte indices (active threads, bytes) of one element per active thread of a tile
        (remembered per op, like global tags)."""
        inputs = [tile, mask, *([offset] if offset is not None else coords or [])]
        memo = self._addresses.get(op)
        # a later pass over a loop body: the same objects, or equal ones (compared only then:
        # most ops are visited once, and values are never changed in place)
        if memo is not None and (same_objects(memo[2], inputs)
                                 or address_fingerprint(memo[2]) == address_fingerprint(inputs)):
            self.refault(memo[1])
            return memo[0]  # type: ignore[no-any-return]
        mark = len(self.faults)
        idx = self._tile_bytes(op, tile, coords, offset, mask)
        self._addresses[op] = (idx, self.faults[mark:], inputs)
        return idx

    def _tile_bytes(self, op: Operation, tile: TileValue, coords: list[Affine] | None, offset: Affine | None,
                    mask: np.ndarray) -> np.ndarray:
        active = self.active(mask)
        if offset is not None:
            offsets = self.concrete_offsets(op, offset, "address")[active]
        else:
            assert coords is not None
            table, sizes = offset_table(tile.layout)
            sizes = sizes if len(coords) > 1 else [table.size]
            values = [self.concrete_offsets(op, c, "tile coordinate") for c in coords]
            if active is not self.tid:
                values = [v[active] for v in values]
            flat, reported, stride = None, False, 1
            checked = id(op) in self.preparation.traced_accesses  # (by the front end, as it traced them)
            for axis, (v, n) in enumerate(zip(values, sizes)):
                if not checked and v.size and (v.min() < 0 or v.max() >= n):
                    bad = (v < 0) | (v >= n)
                    if not reported:  # the first offender is reported; the others read inside, as clipped
                        row = int(np.flatnonzero(bad)[0])
                        self.out_of_bounds(op, int(active[row]), tuple(int(w[row]) for w in values),
                                           f"{'shared' if not tile.memory.per_thread else 'register'} tile "  # type: ignore[attr-defined]
                                           f"{tile.layout}, mode {axis} has size {n}")
                        reported = True
                    v = np.clip(v, 0, n - 1)
                term = v * stride if stride != 1 else v  # mode 0 fastest, as tiles number their elements
                flat = term if flat is None else flat + term
                stride *= n
            offsets = tile.offsets(np.zeros(active.size, np.int64) if flat is None else flat, self.thread_of(active))
        nbytes = tile.dtype.nbytes
        return runs(offsets * nbytes, nbytes) if nbytes > 1 else offsets[:, None]

    def check_read(self, op: Operation, memory: TagMemory, idx: np.ndarray, threads: np.ndarray,
                   by_group: bool = False) -> None:
        """A thread reading shared bytes another thread wrote since the last barrier: a race.
        A read `by_group` (an atom's shared operand, read by the group led by each of
        `threads`) races with a write by any thread, its own included. A thread's read is
        noted for the writes after it (`check_overwrite`; a group's, by `products`), in every
        pass: a loop carries the reads its body leaves unordered into its next iteration."""
        if memory.per_thread:
            return
        if not by_group and self.observers:
            for observer in self.observers:
                observer.read(self, op, memory, idx, threads, False)
        if not by_group and isinstance(memory, SharedMemory):
            if self.footprint is not None:
                self.footprint.keep(memory.reads)  # type: ignore[arg-type]  # (a run undone forgets them)
            memory.note_thread_reads(idx, threads)
        if not self.checking:
            return
        writers = memory.epoch_writer[idx.reshape(threads.size, -1)]
        orders = getattr(memory, "orders", None)  # a named barrier's codes, as these readers see them
        if orders is not None:
            writers = orders.resolve(writers, None if by_group else threads[:, None])
        unordered = (writers != -1) if by_group else (writers != -1) & (writers != threads[:, None])
        if unordered.any():
            row, col = (int(x[0]) for x in np.nonzero(unordered))
            reader, writer = int(threads[row]), int(writers[row, col])
            site = str(self.where(op))
            self.obligations.fault(site, "data-race", reader, describer(self, op, site, np.arange(self.n)),
                                   {"memory": memory.name, "byte": int(idx.reshape(threads.size, -1)[row, col]),
                                    "threads": (writer, reader), "why": "read before a barrier orders the write"},
                                   condition=self.path_of(reader))

    def check_overwrite(self, op: Operation, memory: TagMemory, idx: np.ndarray, threads: np.ndarray) -> None:
        """A thread writing shared bytes that another thread, or the product of a group it is
        not in (`product_reads`), read since the last barrier: a race (write after read; a
        read in an earlier iteration of a loop that no barrier ended included). The write that
        follows is the one checked: a write no rule checks forgets the reads (`shared_reads`)."""
        if not isinstance(memory, SharedMemory):
            return
        for observer in self.observers:
            observer.write(self, op, memory, idx, threads)
        memory.checked = True
        if not self.checking or self.check_in_flight(op, memory, idx, threads):
            return
        rows = idx.reshape(threads.size, -1)
        unordered = memory.unordered_reads(rows, threads)
        if unordered.any():
            row, col = (int(x[0]) for x in np.nonzero(unordered))
            writer, byte = int(threads[row]), int(rows[row, col])
            reader = memory.reader(byte)
            site = str(self.where(op))
            self.obligations.fault(site, "data-race", writer, describer(self, op, site, np.arange(self.n)),
                                   {"memory": memory.name, "byte": byte,
                                    "threads": ("several" if reader == SEVERAL else reader, writer),
                                    "why": "written before a barrier orders another thread's read of it"},
                                   condition=self.path_of(writer))
            return
        if not isinstance(memory, OperandMemory):
            return
        unordered = memory.unordered(rows, threads)
        if unordered.any():
            row, col = (int(x[0]) for x in np.nonzero(unordered))
            writer, byte = int(threads[row]), int(rows[row, col])
            site = str(self.where(op))
            reader = int(memory.readers.epoch_writer[byte])  # type: ignore[union-attr]
            self.obligations.fault(site, "data-race", writer, describer(self, op, site, np.arange(self.n)),
                                   {"memory": memory.name, "byte": byte, "threads": (reader, writer),
                                    "why": "written before a barrier orders a matrix product that read it"},
                                   condition=self.path_of(writer))

    def check_in_flight(self, op: Operation, memory: TagMemory, idx: np.ndarray, threads: np.ndarray) -> bool:
        """Thread `threads[r]` writing shared bytes `idx[r]` that a product started with
        `matmul_async` may still read: a race, whoever writes (its own group too, a backend's
        bulk copy) and whatever barriers came between, until the `matmul_wait` that retires
        the product. Whether one was reported."""
        pending = memory.pending if isinstance(memory, OperandMemory) else None
        if pending is None or not self.checking:
            return False
        rows = idx.reshape(threads.size, -1)
        running, leaders = pending.running(rows)
        if not running.any():
            return False
        row, col = (int(x[0]) for x in np.nonzero(running))
        writer, byte = int(threads[row]), int(rows[row, col])
        site = str(self.where(op))
        self.obligations.fault(site, "data-race", writer, describer(self, op, site, np.arange(self.n)),
                               {"memory": memory.name, "byte": byte, "threads": (int(leaders[row, col]), writer),
                                "why": "written while a product started with matmul_async may still read it (a "
                                       "barrier does not retire it: the matmul_wait that does comes later)"},
                               condition=self.path_of(writer))
        return True

    def intern(self, comps: list[Affine], nbytes: int) -> np.ndarray:
        """Byte ids (points, nbytes) of the tags whose components are `comps`."""
        mark = uniform_key(comps[0]) if comps else None
        if mark == (PRODUCT, ()) or mark == (ROWS, ()):
            laid = (self._product_bytes if mark == (PRODUCT, ()) else self._operand_bytes)(comps, nbytes)
            if laid is not None:
                return laid
        return self.table.bytes_of(self._elements(comps), nbytes)

    def _elements(self, comps: list[Affine]) -> np.ndarray:
        """Element ids (points,) of the tags whose components are `comps`."""
        if all(type(c) is Uniform or all(t.min() == t.max() for t in c.terms.values()) for c in comps):
            # every point shares each component's symbolic part: only the constants vary, and
            # tags of one shape are looked up by their constants alone
            parts = tuple(c.key[1] if type(c) is Uniform else tuple((a, int(t[0])) for a, t in sorted(c.terms.items()))
                          for c in comps)  # (a `Uniform` keeps its form as a key: no arrays made from it)
            known = self._shapes.get(parts)
            if known is None:
                known = self._shapes[parts] = {}
            element = self.table.element_id
            if not comps:
                return np.full(self.n, element(()), np.int64)
            if len(comps[0]) <= 64:  # a lookup per point: cheaper than finding the distinct rows first
                def ident(key: tuple[int, ...]) -> int:
                    found = known.get(key)
                    if found is None:
                        found = known[key] = element(tuple((v, part) if part else v for v, part in zip(key, parts)))
                    return found

                rows = np.stack([c.const for c in comps], axis=1)
                ids = np.fromiter(map(ident, map(tuple, rows.tolist())), np.int64, len(rows))
                return ids
            # one lookup per distinct row of constants (a tile's elements share few), the tags
            # made column by column; a component with one form everywhere is no column to search
            varying = [c.const for c in comps if type(c) is not Uniform]
            unique, inverse = unique_rows(np.stack(varying, axis=1) if varying else np.zeros((len(comps[0]), 0), np.int64))
            found = iter(unique.T.tolist())
            columns = [next(found) if type(c) is not Uniform else [c.key[0]] * len(unique) for c in comps]
            columns = [[(v, part) for v in column] if part else column for column, part in zip(columns, parts)]
            ids = np.fromiter(map(element, zip(*columns)), np.int64, len(unique))
            return ids[np.reshape(inverse, -1)]
        # component by component: each point's component as an index into its distinct values,
        # then one tag per distinct combination of indices
        n = len(comps[0])
        values: list[list[Any]] = []
        indices = np.empty((n, len(comps)), np.int64)
        for j, c in enumerate(comps):
            seen: dict[Any, int] = {}
            if c.concrete:
                indices[:, j] = [seen.setdefault(v, len(seen)) for v in c.const.tolist()]
            else:
                forms, inverse = c.forms()
                places = [seen.setdefault(key_component(key), len(seen)) for key in forms]
                indices[:, j] = np.asarray(places, np.int64)[inverse]
            values.append(list(seen))
        unique, inverse = unique_rows(indices)
        element = self.table.element_id
        ids = np.fromiter((element(tuple(values[j][i] for j, i in enumerate(row))) for row in unique.tolist()),
                          np.int64, len(unique))
        return ids[np.reshape(inverse, -1)]
