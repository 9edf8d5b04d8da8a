"""Checking a kernel's tag assertions for every launch: analysis, decision, replay.

1. `analysis.TagAnalysis` walks the kernel once for all threads, with block indices, sizes and
   runtime loop indices symbolic, and collects what each assertion compares.
2. `argus.verify.obligations` settles the comparisons: numpy where the tags are concrete, one
   solver query per assertion where they are symbolic, after checking that the domain itself
   is satisfiable (a proof over an empty domain proves nothing).
3. Every candidate counterexample is replayed on the interpreter with shadow tags, on the
   launch the witness describes (its sizes, its block); only a reproduced finding is reported
   as a violation. One that does not reproduce makes the result `unknown`, never a pass.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
from argus.verify.affine import Space, add_keys, sub_keys
from argus.verify.obligations import Candidate
from argus.verify.results import Result, nothing_to_prove, proved, unknown, violated
from argus.verify.solvers import Budgeted, Query
from argus.verify.solvers import solver as find_solver
from xdsl.ir import Operation

from ..ir import dialect as D
from . import Analysis, Preparation, TagAnalysis, Undecidable
from ..errors import ArgusError, KernelFault
from .bounds import Refuter
from .findings import Conditional
from ..machine.interpreter import storage_dtype

#: Largest tensor (bytes) a replay allocates; a witness needing more is reported unreplayed.
REPLAY_BYTES = 1 << 28
#: Replayed witnesses reported per finding (assertion line and kind); further candidates of
#: the same finding are not replayed.
WITNESSES_PER_FINDING = 2
#: Sizes tried first for a small witness (every size symbol at most this).
SMALL = 256


class WitnessTooLarge(Exception):
    """A witness's tensors would take more than `REPLAY_BYTES`: it is not replayed (the one
    reason a replay is skipped; any other failure while making its arguments is a bug)."""


def verify_kernel(compiled: Any, name: str = "kernel", *, grid: Sequence[int] | None = None,
                  solver: str | None = None, replay: bool = True, timeout_ms: int = 10_000,
                  budget_s: float | None = None) -> Result:
    """Prove the tag assertions (and MMA operand pairing) of a compiled kernel for every launch,
    or refute them with a replayed counterexample. A kernel that states no assertion and has no
    product of tagged operands has nothing to prove, but its accesses are checked all the same
    (out of bounds, uninitialized reads, races). An assertion no launch reaches is no proof.
    The solver's queries share `budget_s` seconds (`solver_budget`): what is left undecided
    when it runs out is unknown, named, with how to make it decidable."""
    op: D.KernelOp = compiled.op
    launches = "every launch" + (f" of grid {tuple(grid)}" if grid else "")
    started = time.perf_counter()
    with _no_collection():
        preparation = getattr(compiled, "preparation", None) or Preparation(op, compiled.locations)
        asserts = preparation.assertions
        claimless = preparation.claimless
        claim = (f"{name} states no tag assertion and has no product of tagged operands; its accesses are checked "
                 f"for {launches}"
                 if claimless else f"the tag assertions of {name} hold for {launches}")
        chosen = find_solver(solver) if solver else None  # a solver asked for by name must exist, used or not
        try:
            analysis = TagAnalysis(op, compiled.locations, tuple(grid) if grid else None, preparation).run()
        except Undecidable as err:
            where = f"{err.location}: {err.reason}" if err.location else err.reason
            if preparation.table.of_kind(D.AssertWrittenOp):  # (its launch's sizes are the analysis's to pick)
                return unknown(claim, f"the checker cannot follow the kernel ({where}), so whether it writes every "
                                      "element of the outputs it asserts written (assert_written) was not tested")
            if claimless:  # no claim was made: the accesses are the interpreter's to check
                return nothing_to_prove(claim, f"the checker cannot follow the kernel ({where}); its accesses are "
                                               "left to the interpreter")
            return unknown(claim, where)
    reached = set(analysis.obligations.pending)
    unreached = [str(compiled.locations.get(a)) for a in asserts if str(compiled.locations.get(a)) not in reached]
    facts = _tightest(analysis.facts)
    undecided: list[str] = []
    engine = None
    _refute_bounds(analysis)
    settled = not any(p.pairs for p in analysis.obligations.pending.values()) and not analysis.obligations.candidates
    # when nothing is left to decide, a launch satisfying every fact shows that the domain is not
    # empty and that no access overruns in every launch: no solver is needed
    if not (settled and _sample(analysis.space, facts + _tightest(analysis.replay_facts))):
        engine = Budgeted(chosen or find_solver(None), solver_budget() if budget_s is None else budget_s)
        extra = _tightest(analysis.replay_facts)

        def domain(facts: list[Any]) -> tuple[Any, Any]:
            """Whether launches satisfy `facts` and the replay facts (one query answers the common
            case: no access runs out of bounds in the first or last iteration of its loop in every
            launch), and whether some satisfy `facts`."""
            everything = engine.solve(Query(analysis.space, facts + extra, [[]]), timeout_ms)
            return everything, everything if everything.status == "sat" or not extra else \
                engine.solve(Query(analysis.space, facts, [[]]), timeout_ms)

        everything, empty = domain(facts)
        if empty.status == "unsat":  # an access out of bounds in every launch, or contradictory assumptions
            facts = _tightest(_without_overruns(analysis, engine, list(analysis.facts), timeout_ms))
            everything, empty = domain(facts)
        if empty.status == "unsat":
            return unknown(claim, f"the domain is empty: {_why_empty(analysis, engine, timeout_ms)}, so any proof "
                                  "would be vacuous")
        if empty.status == "unknown":
            return unknown(claim, f"the solver could not decide the domain: {empty.reason}{_budget_advice(engine)}")
        kept = _first_block_overruns(analysis, engine, facts, timeout_ms)
        if kept is not facts:
            facts = kept
            everything, empty = domain(facts)
        undecided = analysis.obligations.decide(engine, facts, timeout_ms, lambda scope: _scoped(analysis, scope))
        undecided += _decide_conditional(analysis, engine, facts, timeout_ms)
        base_model = empty.model
        if everything.status != "sat":
            _overruns(analysis, engine, facts, timeout_ms)
    never, unsettled = _never_reached(analysis, facts, engine or chosen, timeout_ms)
    undecided += unsettled
    candidates = analysis.obligations.candidates
    took = f"{op.block_dims and _threads(op)} threads in {1000 * (time.perf_counter() - started):.1f} ms"
    if not candidates and not undecided and not unreached and not never:
        timing = ""
        if replay and preparation.hands_off:
            solver_engine = engine or chosen or find_solver(None)
            proof = prove_timing(analysis, preparation, solver_engine, facts, timeout_ms)
            shown, ran, missed = _explore_schedules(compiled, analysis, facts, solver_engine, timeout_ms,
                                                    None if proof.proved else proof.model, proof.failed)
            if shown is not None:
                if shown["replayed"].startswith("reproduced"):
                    return violated(claim, f"the static proof of the kernel's asynchronous protocol fails: {proof.why}; "
                                           + shown["replayed"], shown)
                return violated(claim, "the interpreter shows a fault of the kernel's synchronization"
                                       + ("" if proof.proved else f" (the static proof of its protocol did not go "
                                                                   f"through: {proof.why})")
                                       + ": " + shown["replayed"], shown)
            if proof.proved:
                timing = (f"; its asynchronous protocol (barrier phases and parities, announced bytes, stages "
                          f"refilled only once released) is proved for every launch ({proof.obligations} "
                          f"obligation(s)), and ran without fault on the interpreter under schedules {', '.join(ran)}"
                          + (f"; not under {missed}" if missed else ""))
            elif not ran:
                return unknown(claim, "the kernel hands data between warps or asynchronous agents; the static proof "
                                      f"of that protocol did not go through ({proof.why}), and the interpreter could "
                                      f"not run it under any schedule to test it: {missed}")
            else:
                timing = (f"; its asynchronous hand-offs ran without fault on the interpreter under schedules "
                          f"{', '.join(ran)} (block (0, 0, 0) unless named, of a launch with sizes of a few hundred"
                          f"{' and of the launch the static proof named' if proof.model else ''}: tested, "
                          f"not proved: the static proof of the protocol did not go through: {proof.why})"
                          + (f"; not under {missed}" if missed else ""))
        if replay and preparation.table.of_kind(D.AssertWrittenOp):
            shown, tested = _written_whole(compiled, analysis, facts, engine or chosen or find_solver(None), timeout_ms)
            if shown is not None:
                return violated(claim, "the kernel leaves part of an output it asserts written as it was: "
                                       + shown["replayed"], shown)
            timing += f"; {tested}"
        if claimless:
            return nothing_to_prove(claim, "static analysis found none of the faults it looks for: a global access "
                                           "out of bounds in some launch, a read of bytes nothing "
                                           f"wrote, a shared-memory race (over {took}){timing}")
        return proved(claim, "static tag analysis: every assertion holds "
                             f"({analysis.obligations.compared} comparison(s) over {took}){timing}")
    witnesses: list[dict[str, Any]] = []
    unconfirmed: list[tuple[Candidate, str, tuple[str, str] | None]] = []
    shown: dict[tuple[str, str], int] = {}
    masked: dict[tuple[str, str], tuple[str, str]] = {}
    """Findings whose replay stops at a finding already shown, earlier in the kernel."""
    met: dict[tuple[str, str], dict[str, Any]] = {}
    """Faults the interpreter met first while replaying a candidate, as witnesses: a bug of the
    kernel all the same, found and pinned down by the interpreter, reported where no candidate
    found statically shows it."""
    for c in candidates:
        if shown.get((c.site, c.kind), 0) >= WITNESSES_PER_FINDING or (c.site, c.kind) in masked:
            continue  # enough replayed witnesses of this finding (each replay runs a block), or it hides
            # behind one: its replay stopped at a finding already shown, earlier in the kernel
        model = _small_model(analysis, c, engine, facts, base_model, timeout_ms) if engine else c.model
        c.model = model
        w = c.witness(analysis.table, analysis.space)
        if replay:
            confirmed, note, fault = replay_witness(compiled, analysis, c, w)
            if not confirmed and fault is None and engine is not None and not _is_bound(c):
                for grown in _grown_models(analysis, c, engine, facts, model, timeout_ms):
                    c.model = grown  # (a larger launch: the finding may need a loop to go round more)
                    again = c.witness(analysis.table, analysis.space)
                    confirmed, _, fault = found = replay_witness(compiled, analysis, c, again)
                    if confirmed:
                        w, note = again, found[1]
                        break
                    if fault is not None:
                        break
                else:
                    c.model = model
            w["replayed"] = note
            if confirmed:
                witnesses.append(w)
                shown[(c.site, c.kind)] = shown.get((c.site, c.kind), 0) + 1
                continue
            stopped_at = None if fault is None else (str(fault.location), fault.kind)
            if stopped_at in shown:
                masked[(c.site, c.kind)] = stopped_at  # type: ignore[assignment]
                continue
            unconfirmed.append((c, f"{c.site}: a candidate counterexample ({c.kind}) did not replay: {note}",
                                stopped_at))
            if fault is not None and fault.kind not in NOT_THE_KERNELS:
                met.setdefault(stopped_at, _fault_witness(fault, w, c))  # type: ignore[arg-type]
        else:
            witnesses.append(w)
    met = {at: w for at, w in met.items() if at not in shown}
    witnesses += met.values()
    shown.update(dict.fromkeys(met, 1))
    masked.update({(c.site, c.kind): at for c, _, at in unconfirmed if at in shown})  # type: ignore[misc]
    unconfirmed = [item for item in unconfirmed if item[2] not in shown]
    if witnesses:
        behind = "".join(f"; also found, not replayed: {site} ({kind}), whose replay stops first at the reported "
                         f"{at} ({what})" for (site, kind), (at, what) in masked.items()
                         if (site, kind) not in shown)
        how = (["counterexample(s) found statically and reproduced on the interpreter with shadow tags"]
               if len(witnesses) > len(met) else []) + \
            [f"the interpreter met {site} ({kind}) first, replaying a candidate found statically" for site, kind in met]
        return violated(claim, "; ".join(how) + behind, *witnesses)
    reasons = undecided + [f"{u}: this assertion is never reached by any thread" for u in unreached] + \
        [f"{site}: this is reached in no launch (the runtime loops or branches around it never run there), so a "
         "proof of it would be vacuous" for site in never]
    if unconfirmed:
        more = f" ({len(unconfirmed) - 1} more)" if len(unconfirmed) > 1 else ""
        reasons.append(f"{len(unconfirmed)} candidate counterexample(s) did not replay, so none is reported; "
                       f"the first: {unconfirmed[0][1]}{more}")
    return unknown(claim, "; ".join(reasons) + (_budget_advice(engine) if isinstance(engine, Budgeted) else ""))


SOLVER_BUDGET_S = 60.0
"""Seconds of solver time one check may spend in all, unless `ARGUS_SOLVER_BUDGET` or the
caller says otherwise (each query also has its own timeout)."""


def solver_budget() -> float:
    """The solver budget of a check: `ARGUS_SOLVER_BUDGET` (seconds) or `SOLVER_BUDGET_S`."""
    given = os.environ.get("ARGUS_SOLVER_BUDGET")
    if given is None:
        return SOLVER_BUDGET_S
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise ArgusError(f"ARGUS_SOLVER_BUDGET: a number of seconds above 0, got {given!r}")
    return seconds


def _budget_advice(engine: Budgeted) -> str:
    """What to do about a spent solver budget (nothing when it was not)."""
    if not engine.spent:
        return ""
    return (f" (the solver budget of this check, {engine.seconds:g} s, ran out with {engine.refused} "
            "quer" + ("y" if engine.refused == 1 else "ies") + " left undecided: give it more with "
            "ARGUS_SOLVER_BUDGET or verify_kernel(budget_s=...), or make the queries smaller: state how "
            "sizes relate with assume(...) (n == 64 * grid_dim.x, n % 64 == 0, bounds), or make sizes "
            "constants)")


@contextmanager
def _no_collection() -> Iterator[None]:
    """The cyclic garbage collector paused while the preparation and the analysis run: they
    allocate many small objects, each collection would walk the kernel's whole IR, and what
    they leave behind is collected afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _decide_conditional(analysis: Analysis, engine: Any, facts: list[Any], timeout_ms: int) -> list[str]:
    """Settle the findings that hold in some launches only (`findings.Conditional`: a read of
    bytes written on some paths only, an access out of bounds in some launch): one stands when a
    launch of the domain satisfies one of its alternatives (the solver picks the launch and the
    thread), and is dropped when none does; the reasons of those the solver could not settle.
    An access's bounds are decided over the kernel's assumptions alone (`_bound_domain`), never
    over the in-bounds facts they would prove."""
    undecided, kept = [], []
    assumed = None
    bounds = [c for c in analysis.obligations.candidates if _is_bound(c)]
    if len(bounds) > 1:  # one query for all: usually none is out of bounds, and then none is asked again
        assumed = _bound_domain(analysis)
        ways = [_scoped(analysis, c.scope, bounds=True) + list(alternative)
                for c in bounds for alternative in c.alternatives]
        if engine.solve(Query(analysis.space, assumed, ways), timeout_ms).status == "unsat":
            analysis.obligations.candidates[:] = [c for c in analysis.obligations.candidates if not _is_bound(c)]
    for c in analysis.obligations.candidates:
        if not isinstance(c, Conditional):
            kept.append(c)
            continue
        if _is_bound(c):
            assumed = _bound_domain(analysis) if assumed is None else assumed
            domain = assumed + _scoped(analysis, c.scope, bounds=True)
        else:
            domain = facts + _scoped(analysis, c.scope)
        answer = engine.solve(Query(analysis.space, domain, c.alternatives), timeout_ms)
        if answer.status == "sat" and answer.alternative is not None:
            c.choose(answer.alternative, answer.model)
            kept.append(c)
        elif answer.status != "unsat":
            what = "access is out of bounds in some launch" if _is_bound(c) else f"launch has this {c.kind}"
            undecided.append(f"{c.site}: whether some {what} could not be decided: "
                             f"{answer.reason or 'the solver found no usable model'}")
    analysis.obligations.candidates[:] = kept
    return undecided


def _refute_bounds(analysis: Analysis) -> None:
    """Drop the ways out of bounds that arithmetic alone shows no launch takes (`bounds.Refuter`,
    over the same domain as `_decide_conditional`), and the bounds obligations left with none:
    the common ones (a tile inside a tensor whose size the kernel assumes a multiple of the tile)
    need no solver."""
    refuters: dict[tuple[int, ...], Refuter] = {}
    kept = []
    for c in analysis.obligations.candidates:
        if _is_bound(c):
            refuter = refuters.get(c.scope)
            if refuter is None:
                refuter = refuters[c.scope] = Refuter(analysis.space, _bound_domain(analysis) +
                                                      _scoped(analysis, c.scope, bounds=True))
            left = [i for i, conjunction in enumerate(c.alternatives) if not refuter.refutes(conjunction)]
            if not left:
                continue
            if len(left) < len(c.alternatives):
                c.alternatives = [c.alternatives[i] for i in left]
                c.points = [c.points[i] for i in left]
                c.point = c.points[0]
        kept.append(c)
    analysis.obligations.candidates[:] = kept


def _is_bound(c: Candidate) -> bool:
    """Whether `c` is an access's in-bounds obligation (`GlobalAccess.bound_obligation`)."""
    return isinstance(c, Conditional) and c.kind == "out-of-bounds"


def _bound_domain(analysis: Analysis) -> list[Any]:
    """The domain an access's bounds are decided over: the facts of the kernel's symbols and
    assumptions, and that the grid covers the data written (`GlobalAccess.grid_covers`), without
    the in-bounds facts of accesses, which are what is to be proved."""
    return _tightest(_assumed(analysis, analysis.facts, None))


def _assumed(analysis: Analysis, facts: Iterable[Any], container: int | None) -> list[Any]:
    """`facts` (of `container`: a runtime loop's symbol, None for the kernel's) without the
    in-bounds facts of accesses."""
    walk = analysis.walk
    given = set(analysis.space.constraints) if container is None else ()
    accesses, covers = walk.access_facts, walk.cover_facts
    return [f for f in facts if (container, f) not in accesses or f in given or (container, f) in covers]


def _never_reached(analysis: Analysis, facts: list[Any], engine: Any, timeout_ms: int) -> tuple[list[str], list[str]]:
    """The assertions (and product pairings) compared only where no launch of the domain gets:
    inside runtime loops that run no iteration, or branches on runtime conditions none takes;
    and the reasons of those the solver could not settle. (One compared outside every runtime
    loop and branch is reached: the domain has a launch.)"""
    never, undecided = [], []
    for site, places in analysis.walk.reached.items():
        if ((), ()) in places:
            continue
        wanted = [facts + _scoped(analysis, scope) + list(path) for scope, path in places]
        if any(_sample(analysis.space, w) is not None for w in wanted):
            continue
        engine = engine or find_solver(None)
        statuses = [engine.solve(Query(analysis.space, w, [[]]), timeout_ms).status for w in wanted]
        if "sat" in statuses:
            continue
        if "unknown" in statuses:
            undecided.append(f"{site}: whether any launch reaches it could not be decided")
        else:
            never.append(site)
    return never, undecided


def _scoped(analysis: Analysis, scope: tuple[int, ...], bounds: bool = False) -> list[Any]:
    """The bounds of the loops of `scope` (facts where those loops run); with `bounds`, without
    the in-bounds facts of the accesses in them (`_bound_domain`)."""
    loop_facts = analysis.walk.loop_facts
    if bounds:
        return [f for symbol in scope for f in _assumed(analysis, loop_facts.get(symbol, []), symbol)]
    return [f for symbol in scope for f in loop_facts.get(symbol, [])]


def _sample(space: Space, facts: list[Any]) -> dict[int, int] | None:
    """A launch satisfying `facts`, found without a solver when an obvious one does: block 0
    of a one-block grid, every size one large power of two, every loop at its first iteration.
    A size that an assumption equates to another form (``hq == 2·hkv``) takes that form's value.
    Each fact is checked exactly; None when these launches do not satisfy all of them."""
    for size in (1 << 12, 1 << 16, 3 << 12):
        values: dict[int, int] = {}
        for ident, symbol in space.symbols.items():  # in creation order: bounds name earlier ones
            low = space.evaluate(symbol.lo, values) if symbol.lo is not None else 0
            values[ident] = max(low, size) if symbol.role == "size" else low
        for kind, key in facts:
            if kind == "eq0" and key[0] == -1 and len(key[1]) == 1 and key[1][0][1] == 1 and \
                    space.atoms[key[1][0][0]].kind == "eq":
                x, y = space.atoms[key[1][0][0]].args
                for one, other in ((x, y), (y, x)):
                    if one[0] == 0 and len(one[1]) == 1 and one[1][0][1] == 1 and \
                            getattr(space.symbols.get(one[1][0][0]), "role", None) == "size":
                        values[one[1][0][0]] = space.evaluate(other, values)
                        break
        for ident, symbol in space.symbols.items():  # (bounds naming a size follow it)
            if symbol.role != "size":
                values[ident] = space.evaluate(symbol.lo, values) if symbol.lo is not None else 0
        if all(_holds(kind, space.evaluate(key, values)) for kind, key in facts):
            return values
    return None


def _holds(kind: str, value: int) -> bool:
    """Whether a comparison of `kind` ("ge0", "eq0", "ne0") holds of `value`."""
    return value >= 0 if kind == "ge0" else value == 0 if kind == "eq0" else value != 0


def _tightest(facts: Any) -> list[Any]:
    """The facts without those another implies: of ``e + k ≥ 0`` for one symbolic part e, only
    the one with the smallest k (fewer, equivalent constraints for the solver)."""
    best: dict[Any, Any] = {}
    others = []
    for kind, key in facts:
        if kind != "ge0":
            others.append((kind, key))
            continue
        known = best.get(key[1])
        if known is None or key[0] < known[0]:
            best[key[1]] = key
    return sorted(others) + sorted(("ge0", key) for key in best.values())


def _without_overruns(analysis: Analysis, engine: Any, facts: list[Any], timeout_ms: int,
                      pinned: Sequence[Any] = ()) -> list[Any]:
    """`facts` without the in-bounds facts that no launch satisfying the others (and `pinned`)
    satisfies, each reported as an out-of-bounds finding: its access is out of bounds in every
    such launch. `facts` itself when there is none, or when the others contradict each other."""
    space, origins = analysis.space, analysis.walk.fact_origins
    others = [f for f in facts if f not in origins] + list(pinned)
    if engine.solve(Query(space, others, [[]]), timeout_ms).status != "sat":
        return facts
    kept, found = [f for f in facts if f not in origins], False
    for fact in sorted(f for f in facts if f in origins):
        if engine.solve(Query(space, others + [fact], [[]]), timeout_ms).status == "unsat":
            analysis.walk.out_of_bounds(*origins[fact])
            found = True
        else:
            kept.append(fact)
    return kept if found else facts


def _first_block_overruns(analysis: Analysis, engine: Any, facts: list[Any], timeout_ms: int) -> list[Any]:
    """The domain without the in-bounds facts that the first block breaks in every launch the
    rest of the domain allows, each reported (`_without_overruns`): block (0, 0, 0) runs in every
    launch, and so do the accesses these facts come from (outside runtime loops and branches), so
    the domain may not leave that block out. (An access in a loop is not held to it: the loop may
    run no iteration in that block.) A kernel whose own assumptions leave the first block out is
    left to the interpreter, which faults on them."""
    first = [("eq0", (0, ((s, 1),))) for s in analysis.block_symbols]
    if engine.solve(Query(analysis.space, facts + first, [[]]), timeout_ms).status != "unsat":
        return facts
    kept = _without_overruns(analysis, engine, facts, timeout_ms, pinned=first)
    return facts if kept is facts else _tightest(kept)


def _why_empty(analysis: Analysis, engine: Any, timeout_ms: int) -> str:
    """Why no launch satisfies the domain's facts: an assumption no launch satisfies (its line),
    assumptions that contradict each other, or accesses whose in-bounds facts do together."""
    walk = analysis.walk
    given = [f for f in analysis.facts if f not in walk.fact_origins and f not in walk.assumed]
    assumed = sorted(f for f in analysis.facts if f in walk.assumed)
    for fact in assumed:
        if engine.solve(Query(analysis.space, _tightest(given + [fact]), [[]]), timeout_ms).status == "unsat":
            return f"the assumption at {walk.where(walk.assumed[fact])} holds in no launch"
    if engine.solve(Query(analysis.space, _tightest(given + assumed), [[]]), timeout_ms).status == "unsat":
        return "the kernel's assumptions contradict each other"
    return "the kernel's bounds and in-bounds facts contradict each other"


def _overruns(analysis: Analysis, engine: Any, facts: list[Any], timeout_ms: int) -> None:
    """Accesses in bounds in the iteration a proof considers but out of bounds in the first or
    last iteration of their loop in every launch: reported as out-of-bounds findings."""
    for fact in sorted(analysis.replay_facts):
        if engine.solve(Query(analysis.space, facts + [fact], [[]]), timeout_ms).status == "unsat":
            analysis.walk.out_of_bounds(*analysis.walk.fact_origins[fact])


def _threads(op: D.KernelOp) -> str:
    """How many threads the analysis enumerated: a block's, or a cluster's."""
    blocks = int(np.prod(op.cluster_dims))
    threads = int(np.prod(tuple(op.block_dims))) * blocks
    return f"{threads}" + (f" (a cluster of {blocks} blocks)" if blocks > 1 else "")


def _small_model(analysis: Analysis, c: Candidate, engine: Any, facts: list[Any], base: dict[int, int],
                 timeout_ms: int) -> dict[int, int]:
    """A model of the same finding with every size, integer argument and grid dim in
    [0, SMALL] (or, failing that, in the smallest of a few larger ranges), so that its witness
    replays quickly; the finding's own model when there is none."""
    space = analysis.space
    sizes = [s for s, sym in space.symbols.items() if sym.role in ("size", "grid")]
    in_bounds = sorted(analysis.replay_facts)
    facts = _bound_domain(analysis) + _scoped(analysis, c.scope, bounds=True) if _is_bound(c) else \
        facts + _scoped(analysis, c.scope)
    for limit in (SMALL, 2 * SMALL, 4 * SMALL, 16 * SMALL):
        bounds = [("ge0", (limit, ((s, -1),))) for s in sizes] + [("ge0", (0, ((s, 1),))) for s in sizes]
        for extra in (in_bounds + bounds, bounds):
            answer = engine.solve(Query(space, facts + extra, [c.condition]), timeout_ms)
            if answer.status == "sat":
                return _tidy(analysis, c, engine, facts + extra, answer.model, timeout_ms)
    answer = engine.solve(Query(space, facts + in_bounds, [c.condition]), timeout_ms)
    return answer.model if answer.status == "sat" else c.model or base


def _grown_models(analysis: Analysis, c: Candidate, engine: Any, facts: list[Any], model: dict[int, int],
                  timeout_ms: int) -> Iterator[dict[int, int]]:
    """Models of the finding with every size at least twice what `model` gives it, then four
    times (at most `16 · SMALL`): what shows only once a loop goes round more than once (a
    pipeline refilling a stage) does not show in the smallest launch, whose replay runs clean."""
    space = analysis.space
    sizes = [s for s, sym in space.symbols.items() if sym.role == "size"]
    if not sizes:
        return
    scoped = facts + _scoped(analysis, c.scope)
    for factor in (2, 4):
        wanted = [("ge0", (-factor * max(1, space.atom_value(s, model)), ((s, 1),))) for s in sizes] + \
            [("ge0", (16 * SMALL, ((s, -1),))) for s in sizes]
        answer = engine.solve(Query(space, scoped + wanted, [c.condition]), timeout_ms)
        if answer.status != "sat":
            return
        yield _tidy(analysis, c, engine, scoped + wanted, answer.model, timeout_ms)


def _tidy(analysis: Analysis, c: Candidate, engine: Any, facts: list[Any], model: dict[int, int],
          timeout_ms: int) -> dict[int, int]:
    """The model with as many block indices at 0 (z, then y, then x) and grid dims just large
    enough for the block as the finding allows: a 1-D kernel's witness names block (5, 0, 0)
    of grid (6, 1, 1), not block (5, 255, 255) of grid (238, 256, 256)."""
    space = analysis.space
    pins: list[Any] = []
    block = [(0, ((s, 1),)) for s in analysis.block_symbols]
    grid = [(0, ((s, 1),)) for s in analysis.grid_symbols]
    wanted = [("eq0", b) for b in reversed(block)] + [("ge0", sub_keys(add_keys(b, (1, ())), g))
                                                       for b, g in zip(block, grid)]
    answer = engine.solve(Query(space, facts + wanted, [c.condition]), timeout_ms)
    if answer.status == "sat":  # every pin at once (the usual case): one query instead of six
        return answer.model
    for pin in wanted:
        answer = engine.solve(Query(space, facts + pins + [pin], [c.condition]), timeout_ms)
        if answer.status == "sat":
            pins.append(pin)
            model = answer.model
    return model


def replay_witness(compiled: Any, analysis: Analysis, candidate: Candidate, witness: dict[str, Any]
                   ) -> tuple[bool, str, KernelFault | None]:
    """Run the witness's block on the interpreter with shadow tags: whether the same assertion
    fails there the same way, what happened, and the fault that stopped the replay before it
    got there, if one did."""
    from ..machine.shadow import Reached, ShadowInterpreter

    op: D.KernelOp = compiled.op
    model = candidate.model
    try:
        args = _replay_arguments(op, analysis, model)
    except WitnessTooLarge as err:
        return False, str(err), None
    grid = analysis.walk.grid_of(model)
    block = witness.get("block") or analysis.walk.block_of(0, model)
    if any(not 0 <= b < g for b, g in zip(block, grid)):  # whole clusters, holding the block
        grid = tuple(max(g, -(-(b + 1) // c) * c) for b, g, c in zip(block, grid, analysis.walk.cluster))
    shadow = ShadowInterpreter(op, compiled.locations)
    shadow.stop_at = lambda f: _reproduces(f, candidate)
    stopped: ArgusError | None = None
    fault: KernelFault | None = None
    try:
        shadow.launch(grid, args, blocks=[(block[0], block[1], block[2])])
    except Reached:  # the finding showed: the rest of the block need not run
        pass
    except KernelFault as err:
        if err.kind == candidate.kind and str(err.location) == candidate.site:
            return True, f"the interpreter faults the same way in block {block} of grid {grid}", None
        stopped = fault = err
    except ArgusError as err:
        stopped = err
    for finding in shadow.findings:  # findings before a fault still count
        if _reproduces(finding, candidate):
            if finding.get("kind") == candidate.kind:
                return True, f"reproduced in block {block} of grid {grid}", None
            # conflicting data found statically, a definite failure when run: the run's finding is the witness
            witness.update({k: finding[k] for k in _SHOWN if k in finding})
            return True, f"reproduced in block {block} of grid {grid}, where the tags compared are known", None
    if stopped is not None:
        return False, f"the replay stopped: {stopped}", fault
    return False, f"block {block} of grid {grid} runs without this finding under shadow tags", None


_SHOWN = ("kind", "block", "thread", "threads", "loops", "element", "lhs tag", "rhs tag", "lhs written at",
          "rhs written at")
"""What a run's finding tells of itself where it stands for a static one (`_reproduces`)."""


def _reproduces(finding: dict[str, Any], candidate: Candidate) -> bool:
    """Whether a run's finding is the candidate's: the same assertion failing the same way, or —
    for conflicting data (⊤: the checker saw several possible tags, say joined from two paths)
    — failing in any way, the run knowing which tags meet there."""
    if finding.get("assertion") != candidate.site:
        return False
    kind = finding.get("kind")
    return kind == candidate.kind or (candidate.kind == "conflicting" and kind in ("violated", "unwritten"))


NOT_THE_KERNELS = frozenset(("assumption", "runaway-loop", "unsupported", "tag-function"))
"""Faults of a replay that are not bugs of the kernel: a launch outside its assumptions, the
interpreter's own limits, a tag function the shadow tags cannot evaluate."""


#: Schedules a kernel with asynchronous hand-offs runs under before a proof is given.
EXPLORED = ("round-robin", "delay-async", "random:1")


def hands_off(ops: Iterable[Operation]) -> bool:
    """Whether the kernel whose ops (every one, at any depth) are `ops` hands data between warps
    or asynchronous agents through anything but block barriers (memory barriers, bulk or
    cp.async copies, products started asynchronously): the timing the static analysis does not
    follow, which the interpreter must run. (A check asks its preparation, which reads its op
    table's list once per kernel: walking the IR in every check cost GEMM's check about 5%.)"""
    from ..machine.schedule import is_sync_point, is_wait

    for o in ops:
        kind = type(o)
        if (is_wait(o) and kind is not D.SyncThreadsOp) or (is_sync_point(o) and kind is not D.AtomicOp):
            return True
        if kind is D.MmaOp and o.asynchronous is not None:  # type: ignore[attr-defined]
            return True
    return False


@dataclass
class TimingProof:
    """What the static proof of a kernel's asynchronous protocol found (`prove_timing`)."""

    proved: bool
    obligations: int = 0
    why: str = ""
    model: dict[int, int] | None = None
    """A launch (by symbol) for the interpreter to run: where an obligation fails (`failed`), or
    one that exercises what the model does not follow."""
    failed: bool = False


def prove_timing(analysis: Analysis, preparation: Preparation, engine: Any, facts: list[Any],
                 timeout_ms: int) -> TimingProof:
    """Prove the timing of a kernel's hand-offs with the walk's observers that model it (a
    backend's `prove(a, engine, facts, timeout_ms)` and `covers(op)`): proved only where every
    asynchronous or synchronizing op of the kernel is one some model covers, and each proves it."""
    from ..machine.schedule import is_sync_point, is_wait

    models = [o for o in analysis.walk.observers if hasattr(o, "prove")]
    for o in preparation.table.ops:
        kind = type(o)
        timed = (is_wait(o) and kind is not D.SyncThreadsOp) or (is_sync_point(o) and kind is not D.AtomicOp) or \
            (kind is D.MmaOp and o.asynchronous is not None)  # type: ignore[attr-defined]
        if timed and not any(m.covers(o) for m in models):
            return TimingProof(False, why=f"no model of the checker follows the {o.name.rsplit('.', 1)[-1]} at "
                                          f"{analysis.walk.where(o)}")
    if not models:
        return TimingProof(False, why="no model of the checker follows the kernel's hand-offs")
    total = 0
    for m in models:
        found = m.prove(analysis.walk, engine, facts, timeout_ms)
        if not found.proved:
            return TimingProof(False, found.obligations, found.why, found.model or None, found.failed)
        total += found.obligations
    return TimingProof(True, total)


def _witness_launch(op: D.KernelOp, analysis: Analysis, model: dict[int, int]) -> tuple[Any, list[Any], Any] | None:
    """The grid, arguments and sizes of the launch `model` gives, None where its tensors would
    be too large to run."""
    try:
        args = _replay_arguments(op, analysis, model)
    except WitnessTooLarge:
        return None
    launch = {name: analysis.space.atom_value(symbol, model) for name, symbol in analysis.parameters.items()}
    return analysis.walk.grid_of(model), args, launch


def _explore_schedules(compiled: Any, analysis: Analysis, facts: list[Any], engine: Any,
                       timeout_ms: int, witness: dict[int, int] | None = None, failed: bool = False
                       ) -> tuple[dict[str, Any] | None, list[str], str]:
    """Run block 0 of a launch whose sizes are a few hundred (so that pipelines go round more than
    once, or as small as the kernel's assumptions allow) under each of `EXPLORED`: the first fault
    of the kernel as a witness (or None), the schedules that ran to the end, and why the others
    did not ("" if none was left out). A schedule that could not run tested nothing. With
    `witness` (a launch where the static proof of the protocol failed — an obligation fails
    there where `failed`, and a fault there is that finding reproduced —, or one exercising what
    the proof does not follow), that launch's block 0 runs first, under each schedule, where its
    tensors are small enough."""
    from ..machine import using
    from ..machine.shadow import ShadowInterpreter

    op: D.KernelOp = compiled.op
    space = analysis.space
    sizes = [s for s, sym in space.symbols.items() if sym.role == "size"]
    grids = [s for s, sym in space.symbols.items() if sym.role == "grid"]
    model = None
    # a grid of one or two clusters along x: a kernel whose tiles follow the grid (grid_dim as the
    # tile count) meets sizes it was written for, not a grid past its tiles
    cluster = analysis.walk.cluster
    tight = [("ge0", (limit, ((s, -1),))) for s, limit in zip(analysis.walk.grid_symbols, (2 * cluster[0], *cluster[1:]))
             if s in grids]
    # more than one block along x where the kernel allows it, so that blocks besides block 0 run
    across = [("ge0", (-2, ((s, 1),))) for s in analysis.walk.grid_symbols[:1] if s in grids]
    for several, low, high in [(True, *r) for r in ((2 * SMALL, 4 * SMALL), (0, SMALL))] + \
            [(False, *r) for r in ((2 * SMALL, 4 * SMALL), (0, SMALL), (0, 16 * SMALL), (0, None))]:
        bounds = [("ge0", (-low, ((s, 1),))) for s in sizes] + tight + \
            ([("ge0", (high, ((s, -1),))) for s in sizes] if high is not None else []) + (across if several else [])
        answer = engine.solve(Query(space, facts + sorted(analysis.replay_facts) + bounds, [[]]), timeout_ms)
        if answer.status == "sat":
            model = answer.model
            break
    if model is None:
        return None, [], f"no launch with at most {SMALL} blocks satisfies the kernel's assumptions ({answer.status})"
    try:
        args = _replay_arguments(op, analysis, model)
    except WitnessTooLarge as err:
        return None, [], str(err)
    grid = analysis.walk.grid_of(model)
    launch = {name: space.atom_value(symbol, model) for name, symbol in analysis.parameters.items()}
    ran: list[str] = []
    missed: list[str] = []
    others = _other_blocks(grid, analysis.walk.cluster)
    runs: list[tuple[str, tuple[int, ...], Any]] = [(schedule, (0, 0, 0), None) for schedule in EXPLORED] + \
        [(EXPLORED[0], block, None) for block in others]
    if witness is not None:  # first: a fault there is the static finding, reproduced
        shown = _witness_launch(op, analysis, witness)
        if shown is not None:
            runs = [(schedule, (0, 0, 0), shown) for schedule in EXPLORED] + runs
    for schedule, block, at in runs:
        shadow = ShadowInterpreter(op, compiled.locations)
        what = schedule if block == (0, 0, 0) else f"{schedule} in block {block}"
        run_grid, run_args, run_launch = (grid, args, launch) if at is None else at
        if at is not None:
            what += f" at {run_launch}"
        try:
            with using(schedule):
                shadow.launch(run_grid, [a.copy() if isinstance(a, np.ndarray) else a for a in run_args],
                              blocks=[block])
        except KernelFault as fault:
            if fault.kind in NOT_THE_KERNELS or fault.kind in NOT_THE_TIMING:
                missed.append(f"{what} ({fault.message})")
                continue
            details = {k: v for k, v in fault.details.items() if k != "block"}
            where = (f"the interpreter faults at {fault.location} under schedule {schedule}, in block "
                     f"{fault.details.get('block', block)} of grid {tuple(run_grid)} with {run_launch}")
            return {"assertion": str(fault.location), "kind": fault.kind, "block": fault.details.get("block"),
                    **details, "message": fault.message.removeprefix(f"{fault.kind}: "), "sizes": run_launch,
                    "replayed": where if at is None or not failed else
                    f"reproduced at the launch where the static proof of the protocol fails: {where}"}, ran, ""
        except ArgusError as err:
            missed.append(f"{what} ({err})")
            continue
        for finding in shadow.findings:
            where = f"shadow tags show it under schedule {schedule}, in block {block} of grid {tuple(run_grid)} " \
                    f"with {run_launch}"
            return {**finding, "sizes": run_launch,
                    "replayed": where if at is None or not failed else
                    f"reproduced at the launch where the static proof of the protocol fails: {where}"}, ran, ""
        ran.append(what)
    return None, ran, "; ".join(missed)


WHOLE_GRID = 8
"""The most blocks along each axis of the launch that tests `assert_written` (`_written_whole`):
every block of it runs, on the interpreter."""

WIDE_LAUNCH = (256, 4096, 1024)
"""Where no launch that small satisfies the assumptions (a grid pinned to 132 blocks, sizes
multiples of 1024): the most blocks along each axis, the largest size and the most blocks in
all of the launch that tests `assert_written` instead."""


def _written_whole(compiled: Any, analysis: Analysis, facts: list[Any], engine: Any,
                   timeout_ms: int) -> tuple[dict[str, Any] | None, str]:
    """Run whole launches (every block of each) and read what they left unwritten of the
    tensors the kernel asserts it writes (`assert_written`): a witness if some element was, and
    what was tested, for the verdict. Two launches (`_written_launches`): a wide one, with sizes
    as large as the kernel's assumptions allow, and a lean one, with sizes that differ from each
    other and the fewest blocks those assumptions allow (a bound on the wrong size, or a block
    that covers fewer elements than the assumptions say, leaves elements there). Whether every
    element is written is tested on these launches, not proved."""
    models, why = _written_launches(analysis, facts, engine, timeout_ms)
    tested: list[str] = []
    names: set[str] = set()
    for n, model in enumerate(models):
        shown, ran, note = _written_launch(compiled, analysis, model)
        if shown is not None:
            return shown, ""
        if ran is not None:
            launch, outputs = ran
            names.update(outputs)
            if launch not in tested:
                tested.append(launch)
        elif n == 0:
            return None, note  # (the wide launch could not be run: say why)
    if not tested:
        return None, why
    return None, f"every element of {', '.join(sorted(names))} was written in {' and in '.join(tested)} " \
                 "(tested, not proved)"


def _written_launches(analysis: Analysis, facts: list[Any], engine: Any,
                      timeout_ms: int) -> tuple[list[dict[int, int]], str]:
    """The models of the launches that test `assert_written`: the wide one (at most
    `WHOLE_GRID` blocks along each axis, two along x where the assumptions allow, sizes of at
    most 256, as large as those allow, about 4096 in product; where no such launch satisfies the
    assumptions, one within `WIDE_LAUNCH`), then, where the assumptions allow one, the lean one
    (sizes pairwise different, the grid as small as the assumptions allow for them). Empty, with
    why, when no small launch satisfies the assumptions."""
    space = analysis.space
    sizes = [s for s, sym in space.symbols.items() if sym.role == "size"]
    grids = [s for s, sym in space.symbols.items() if sym.role == "grid"]
    across = [("ge0", (-2, ((s, 1),))) for s in analysis.walk.grid_symbols[:1] if s in grids]
    model = None
    domain: list[Any] = []
    wanted: list[Any] = []
    for most_blocks, largest in ((WHOLE_GRID, 256), WIDE_LAUNCH[:2]):
        domain = facts + sorted(analysis.replay_facts) + \
            [("ge0", (most_blocks, ((s, -1),))) for s in grids] + [("ge0", (largest, ((s, -1),))) for s in sizes]
        for wanted in ([("ge0", (-1, ((s, 1),))) for s in sizes] + across, [("ge0", (-1, ((s, 1),))) for s in sizes]):
            answer = engine.solve(Query(space, domain + wanted, [[]]), timeout_ms)
            if answer.status == "sat":
                model = answer.model
                break
        if model is not None:
            break
    if model is None:
        return [], "whether every element of an output is written was not tested: no small launch satisfies the " \
                   "kernel's assumptions"
    wanted, model = _largest_sizes(space, engine, domain + wanted, sizes, model, timeout_ms)
    models = [model]
    # the lean launch: sizes pairwise different (a bound on the wrong one shows), then each grid
    # axis as small as the assumptions allow for them (a block covering fewer elements than they say)
    lean = domain + [("ge0", (-2, ((s, 1),))) for s in sizes] + \
        [("ne0", (0, ((a, 1), (b, -1)))) for n, a in enumerate(sizes) for b in sizes[n + 1:]]
    answer = engine.solve(Query(space, lean, [[]]), timeout_ms)
    if answer.status == "sat":
        found = answer.model
        for g in grids:
            for most in (1, 2, 4):
                bound = ("ge0", (most, ((g, -1),)))
                answer = engine.solve(Query(space, lean + [bound], [[]]), timeout_ms)
                if answer.status == "sat":
                    lean, found = lean + [bound], answer.model
                    break
        models.append(_largest_sizes(space, engine, lean, sizes, found, timeout_ms)[1])
    return models, ""


SIZES_TRIED = (128, 64, 16, 4, 2)
"""The lower bounds each size of a launch testing `assert_written` is pushed to, largest first."""


def _largest_sizes(space: Space, engine: Any, domain: list[Any], sizes: list[int], model: dict[int, int],
                   timeout_ms: int) -> tuple[list[Any], dict[int, int]]:
    """`domain` with each size as large as the others' allow, one after another (from one of
    `SIZES_TRIED` to just under twice it), all of them together at most about 4096 (three sizes
    of 64 are 262144 iterations of a loop nest: a minute): the bounds added and a model."""
    budget = 4096
    for n, s in enumerate(sizes):
        left = len(sizes) - n - 1  # (sizes after this one get 2 at least)
        for low in SIZES_TRIED:
            if low * 2 ** left > budget and low > 2:
                continue
            bounds = [("ge0", (-low, ((s, 1),))), ("ge0", (2 * low - 1, ((s, -1),)))]  # (low … 2·low − 1)
            answer = engine.solve(Query(space, domain + bounds, [[]]), timeout_ms)
            if answer.status == "sat":
                domain, model = domain + bounds, answer.model
                budget //= low
                break
    return domain, model


def _written_launch(compiled: Any, analysis: Analysis, model: dict[int, int]
                    ) -> tuple[dict[str, Any] | None, tuple[str, list[str]] | None, str]:
    """Run the launch of `model` with shadow tags: a witness where it faults or leaves an element
    of an output asserted written as it was; else, where it ran, the launch in words and the
    outputs it wrote whole, or why it could not run (too large, or faulting where the checker's
    domain does not reach)."""
    from ..machine.shadow import ShadowInterpreter

    op: D.KernelOp = compiled.op
    space = analysis.space
    untested = "whether every element of an output is written was not tested: "
    try:
        args = _replay_arguments(op, analysis, model)
    except WitnessTooLarge as err:
        return None, None, untested + str(err)
    grid = analysis.walk.grid_of(model)
    launch = {name: space.atom_value(symbol, model) for name, symbol in analysis.parameters.items()}
    if int(np.prod(grid)) > WIDE_LAUNCH[2]:
        return None, None, f"{untested}the smallest launch the kernel's assumptions allow, of grid {tuple(grid)} " \
                            f"with {launch}, has over {WIDE_LAUNCH[2]} blocks"
    shadow = ShadowInterpreter(op, compiled.locations)
    try:
        shadow.launch(grid, args)
    except KernelFault as fault:
        if fault.kind in NOT_THE_TIMING or fault.kind in NOT_THE_KERNELS:  # (a grid past the tensors: the
            # checker's domain holds launches whose blocks stay inside them, which its assumptions did not pin)
            return None, None, f"{untested}the launch of grid {tuple(grid)} with {launch} faults " \
                                f"({fault.message}); state the grid the kernel is launched with, e.g. " \
                                "assume(grid_dim.x * BLOCK == n)"
        return {"assertion": str(fault.location), "kind": fault.kind, **fault.details,
                "message": fault.message.removeprefix(f"{fault.kind}: "), "sizes": launch,
                "replayed": f"the interpreter faults at {fault.location} in a launch of grid {tuple(grid)} with "
                            f"{launch}"}, None, ""
    for finding in shadow.unwritten() + shadow.findings:
        return {**finding, "sizes": launch,
                "replayed": f"the interpreter's launch of grid {tuple(grid)} with {launch}: "
                            f"{finding.get('message', finding['kind'])}"}, None, ""
    names = sorted(tensor.name for _, tensor in shadow.written_claims.values())
    return None, (f"a launch of grid {tuple(grid)} with {launch}", names), ""


#: Faults of an explored launch that are not the hand-off's timing: the launch's sizes and grid are
#: the solver's pick, which a kernel need not be written for (the checker finds out-of-bounds
#: accesses of every launch itself).
NOT_THE_TIMING = frozenset(("out-of-bounds", "view-size"))


def _other_blocks(grid: Sequence[int], cluster: Sequence[int]) -> list[tuple[int, int, int]]:
    """Blocks run besides block 0 (whose cluster they are not in): the first of the next cluster
    along x and the last block, where a kernel that treats blocks differently (a wait skipped
    by some of them, a boundary tile) shows what block 0 does not."""
    def origin(block: tuple[int, ...]) -> tuple[int, ...]:
        return tuple(b - b % c for b, c in zip(block, cluster))

    candidates = [(cluster[0], 0, 0), tuple(g - 1 for g in grid)]
    out: list[tuple[int, int, int]] = []
    for block in candidates:
        if all(b < g for b, g in zip(block, grid)) and origin(block) != (0, 0, 0) and \
                origin(block) not in {origin(o) for o in out}:
            out.append(block)  # type: ignore[arg-type]
    return out


def _fault_witness(fault: KernelFault, witness: dict[str, Any], candidate: Candidate) -> dict[str, Any]:
    """A fault the interpreter met first while replaying `candidate` (its `witness`), as a
    witness of its own: where, in which launch, and what the interpreter says."""
    details = {k: v for k, v in fault.details.items() if k != "block"}
    return {"assertion": str(fault.location), "kind": fault.kind, "block": fault.details.get("block"), **details,
            "message": fault.message.removeprefix(f"{fault.kind}: "), "sizes": witness.get("sizes", {}),
            "replayed": f"the interpreter faults here first while replaying the candidate at {candidate.site} "
                        f"({candidate.kind}) in the launch above"}


def _replay_arguments(op: D.KernelOp, analysis: Analysis, model: dict[int, int]) -> list[Any]:
    rng = np.random.default_rng(0)
    space = analysis.space
    names = [n.data for n in op.arg_names.data]
    args: list[Any] = []
    for name, param in zip(names, op.body.block.args):
        t = param.type
        if isinstance(t, D.TensorType):
            shape = tuple(d if isinstance(d, int) else _size(space, analysis.parameters.get(str(d)), model)
                          for d in t.shape)
            nbytes = int(np.prod(shape)) * t.dtype.nbytes
            if nbytes > REPLAY_BYTES:
                raise WitnessTooLarge(f"tensor {name!r} of the witness would take {nbytes} bytes")
            dtype = storage_dtype(t.dtype)
            data = rng.integers(0, 2**8, size=int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
            array = data.view(dtype).reshape(shape).copy()
            if dtype.kind == "f":
                array = rng.standard_normal(shape).astype(dtype)
            args.append(array)
        else:
            symbol = analysis.parameters.get(name)
            value = space.atom_value(symbol, model) if symbol is not None else 0
            args.append(value if t.__class__.__name__.startswith("Integer") or symbol is not None else float(value))
    return args


def _size(space: Space, symbol: int | None, model: dict[int, int]) -> int:
    return max(1, space.atom_value(symbol, model)) if symbol is not None else 1
