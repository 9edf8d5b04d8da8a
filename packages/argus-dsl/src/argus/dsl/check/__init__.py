"""The static tag checker: an engine that walks a kernel once for every launch, and rules that
say what each kind of op does to values and byte tags.

Layout:

- `analysis` — the walker (`TagAnalysis`) and the table of built-in rules, with the walker's
  parts `memory` (the abstract memory: byte tags, access checks), `bounds` (global tensors:
  tag functions at symbolic coordinates, in-bounds facts) and `joins` (snapshots and joins of
  the walk's state at branches and loops);
- `state` — what the walk holds and returns (`GlobalRef`, `Slot`, `State`, `Analysis`, `Undecidable`);
- `preparation` — what a check prepares once per kernel (`Preparation`: op table, liveness,
  values known before the walk, the batching plan);
- `rules` — the rule table the op registry fills;
- rule families: `arithmetic` (integers, indices, casts), `access` (tiles, views, loads,
  stores, copies, variables), `products` (matrix products), `tags` (tag functions,
  assertions, barriers), `control` (branches and loops), with `reports` (findings about
  unwritten bytes and how a finding names its place);
- runs of loop copies checked together: `run_plan` (which copies run as one, in what order),
  `rolled_loops` (the run of a static loop kept rolled), `batching` (running a run, or walking it
  again op by op), `footprint` (what a run did to memory, to tell whether its order was sound),
  `copies` (what a rule sees of copies: `TileCopies`, `CannotBatch`);
- `op_table`, `tag_liveness`, `product_reads`, `initialization`, `findings` — the machinery the
  walker uses (integer op tables, the ops that matter, reads by asynchronous products, bytes
  written on some paths only, findings that hold under conditions).

The rule API. A rule is ``rule(a, op, mask) -> None``, declared with the rest of its op's
meaning, ``argus.dsl.ir.registry.define(op_type, analyze=rule, ...)`` (an op family of
`argus.dsl.ops`, or a backend's `Language`):

- it receives the `TagAnalysis` ``a``, the op, and ``mask``, a boolean array over the walk's
  points (``a.n`` of them: threads, or threads times loop copies when copies run together)
  saying which run the op;
- it reads its operands with ``a.values[ssa]`` (an `Affine` integer, a tile, a `GlobalRef`, a
  `Slot`) or ``a.int_value(ssa, op)``, and their byte tags with ``a.tags_of(ssa)``;
- it sets its results in ``a.values`` and ``a.tags`` (or calls ``a.computed(op)``: new data,
  ⊤ unless every input is ⊥);
- it moves tags through memory with ``a.tile_bytes``, ``a.read_tags``, ``a.write_tags``,
  ``a.global_tags``, and checks accesses with ``a.check_read``, ``a.check_overwrite`` and
  ``a.in_bounds``;
- it reports through the walker: ``a.obligations`` (claims to prove, with a `describer` for
  witnesses), ``a.add_fact`` (facts a launch must satisfy), ``a.undecidable(op, reason)`` (raise
  it: the check answers unknown, never proved), ``a.where(op)`` for the source location;
- a rule that follows data across loops (a backend's hand-offs through memory barriers) reads
  the runtime loops around it in ``a.loops`` (each with its index symbol and step; where its
  grid of indices starts: ``a.loop_starts``), keeps its own state in ``a.extensions``, renames
  tags from one loop's index to another's with `control.Renamer`, and asks whether two integer
  forms are equal in every launch with ``a.always_equal``;
- while copies of an unrolled loop run together, a rule that cannot take them together raises
  `copies.CannotBatch` (reading a tile's attribute off a `copies.TileCopies` does): the run is
  walked again op by op. Any other exception is a bug of the rule and fails the check (the
  command exits 2); it is never retried.

A rule never says "proved": it adds obligations, and `argus.dsl.check.verification` decides them.
"""

from .analysis import TagAnalysis
from .preparation import Preparation
from .rules import Rule
from .state import Analysis, GlobalRef, Undecidable

__all__ = ["Analysis", "GlobalRef", "Preparation", "Rule", "TagAnalysis", "Undecidable"]
