"""The op registry: what every op means, to every consumer of the IR, declared in one place.

An op's meaning has several readers: the interpreter (the executable semantics), the scheduler
(whether the op may block, ends a turn, or is run by a whole warpgroup), the static tag checker
(how the op moves tags, and whether tag liveness must keep it), the shadow-tag interpreter, layout
lowering, and the LLVM translator. Each op family — the core language's (`argus.dsl.ops`) and
each backend's intrinsics (`argus.dsl.intrinsics.Language`) — declares all of them side by side,
in one `define` per op, so that adding an op is one module and one test file.

The consumers keep fast dispatch tables of their own; `define` is the only thing that fills
them, and `install` makes sure every family is defined before a consumer first dispatches (the
core families, then every discovered backend's language), whatever the program imported first.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from xdsl.ir import Dialect

__all__ = ["Language", "Meaning", "builtin", "define", "install", "meaning", "meanings"]

Collective = int | Callable[[Any, Any], int]


@dataclass(frozen=True)
class Meaning:
    """What one op means to each consumer of the IR.

    - `interpret(interpreter, op, frame, mask)` runs it for the threads of `mask`; an op that may
      block (a barrier, a wait) gives `wait`, a `argus.dsl.machine.schedule.WaitRule`, instead.
    - `sync`: a group's turn ends after the op (it orders memory or starts an asynchronous agent,
      so other warps' order around it matters).
    - `collective`: the threads (more than a warp) that run the op together, or
      ``collective(interpreter, op)`` giving them; warps of a group that get there first wait.
    - `lockstep`: lanes (more than a warp) the op reads across; a kernel using it runs in lockstep
      groups of that many.
    - `analyze(analysis, op, mask)` moves its tags in the static checker (`argus.dsl.check`);
      without one its results are computed data (⊤ unless every input is ⊥).
    - `liveness(walk, number, live)` tells tag liveness what of the op a check may need
      (`argus.dsl.check.tag_liveness.always` keeps it whatever is used of it); without one, the op
      is kept when a check needs one of its results.
    - `shadow(shadow_interpreter, op, frame, mask)` runs after `interpret` in shadow-tag runs.
    - `lower(op, offset_of)`: an op addressing tiles or tensors by coordinates becomes one on
      element offsets (``offset_of(tile_or_tensor, coords)`` inserts one offset's arithmetic
      before `op` and returns it).
    - `translate(translator, op)` emits its LLVM text, shared by every LLVM backend (a backend
      may override it in its own translator's table).
    - `walked`: the interpreter walks the op's regions itself (a loop, a branch, a loop's yield),
      so the op has no interpreter rule of its own.
    """

    op_type: type
    interpret: Callable[..., None] | None = None
    wait: Any = None
    analyze: Callable[..., None] | None = None
    liveness: Callable[..., None] | None = None
    shadow: Callable[..., None] | None = None
    lower: Callable[..., Any] | None = None
    translate: Callable[..., None] | None = None
    walked: bool = False
    sync: bool = False
    collective: Collective = 0
    lockstep: int = 0

    def __post_init__(self) -> None:
        if not self.walked and (self.interpret is None) == (self.wait is None):
            raise ValueError(f"{self.op_type.__name__}: give exactly one of interpret= and wait=")


@dataclass(frozen=True)
class Language:
    """A family of ops outside the core dialect (a backend's intrinsics): its dialect, so that
    printed IR of its ops parses back, and each op's meaning."""

    dialect: Dialect
    meanings: Sequence[Meaning]


_MEANINGS: dict[type, Meaning] = {}
_DIALECTS: list[Dialect] = []
_INSTALLED_LANGUAGES: set[str] = set()
_INSTALLING = False
_INSTALLED = False


def define(op_type: type, **parts: Any) -> Meaning:
    """Give `op_type` its meaning (the keyword arguments are `Meaning`'s fields) and hand each
    part to the consumer that reads it. An op is defined once."""
    unknown = set(parts) - {f.name for f in fields(Meaning)}
    if unknown:
        raise TypeError(f"{op_type.__name__}: unknown part(s) of a meaning: {', '.join(sorted(unknown))}")
    return _enter(Meaning(op_type, **parts))


def _enter(m: Meaning, keep: bool = False) -> Meaning:
    if m.op_type in _MEANINGS:
        raise ValueError(f"{m.op_type.__name__} already has a meaning")
    _MEANINGS[m.op_type] = m
    _hand_out(m, keep)
    return m


def _hand_out(m: Meaning, keep: bool) -> None:
    """Fill each consumer's dispatch table with its part of `m` (`keep`: tag liveness always
    keeps the op, even without a tag rule)."""
    from ..check import rules as check_rules
    from ..check import tag_liveness
    from ..llvm import translate
    from ..machine import interpreter, schedule, shadow
    from . import lowering

    if m.interpret is not None:
        interpreter.RULES[m.op_type] = m.interpret
    elif m.wait is not None:
        schedule.register_wait(m.op_type, m.wait)
    if m.sync:
        schedule.register_sync_point(m.op_type)
    if m.collective:
        size = m.collective
        schedule.register_collective(m.op_type, size if callable(size) else (lambda interp, op, threads=size: threads))
    if m.lockstep:
        schedule.register_lockstep(m.op_type, m.lockstep)
    if m.analyze is not None:
        check_rules.RULES[m.op_type] = m.analyze
    if m.liveness is not None:
        tag_liveness.RULES[m.op_type] = m.liveness
    elif keep:
        tag_liveness.keep_always(m.op_type)
    if m.shadow is not None:
        shadow.RULES[m.op_type] = m.shadow
    if m.lower is not None:
        lowering.RULES[m.op_type] = m.lower
    if m.translate is not None:
        translate.RULES[m.op_type] = m.translate


def builtin(name: str, *, syntax: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare the front-end builder of the language's builtin `name` (`argus.dsl.lang`):
    ``build(frontend, call, arguments)`` (see `argus.dsl.frontend.calls.BUILDERS`). With
    `syntax`, `arguments` are the call's argument nodes, not evaluated: for a builtin whose
    argument names a place (``atomic_add(t[i], v)`` updates ``t[i]``; evaluating it would load it)."""

    def declare(build: Callable[..., Any]) -> Callable[..., Any]:
        from ..frontend.calls import BUILDERS, SYNTAX_BUILDERS

        if name in BUILDERS or name in SYNTAX_BUILDERS:
            raise ValueError(f"the builtin {name}() already has a builder")
        (SYNTAX_BUILDERS if syntax else BUILDERS)[name] = build
        return build

    return declare


def meaning(op_type: type) -> Meaning | None:
    """The meaning `op_type` was given, if any (after `install`)."""
    install()
    return _MEANINGS.get(op_type)


def meanings() -> list[Meaning]:
    """Every op's meaning, in the order they were defined."""
    install()
    return list(_MEANINGS.values())


def install_language(language: Language) -> None:
    """Define `language`'s ops (once) and make its printed IR parse. A backend's op is always
    kept by tag liveness: without a tag rule, it may still touch memory."""
    if language.dialect.name in _INSTALLED_LANGUAGES:
        return
    taken = [m.op_type.__name__ for m in language.meanings if m.op_type in _MEANINGS]
    if taken:  # refused whole, before any of its ops is entered
        raise ValueError(f"the language {language.dialect.name!r} redefines {', '.join(taken)}, which already "
                         "have a meaning")
    _INSTALLED_LANGUAGES.add(language.dialect.name)
    if all(d.name != language.dialect.name for d in _DIALECTS):
        _DIALECTS.append(language.dialect)
    for m in language.meanings:
        _enter(m, keep=True)


def install() -> None:
    """Define every op family before a consumer first dispatches: the core language's families
    (`argus.dsl.ops`), then the language of every backend the `argus.backends` entry points name.
    Cheap after the first call."""
    global _INSTALLING, _INSTALLED
    if _INSTALLED or _INSTALLING:
        return
    _INSTALLING = True
    try:
        from .. import ops
        from ..backends import backends

        ops.define_core()
        for name, spec in backends().items():
            if spec.language is not None:
                _install_backend_language(name, spec.language)
        _INSTALLED = True
    finally:
        _INSTALLING = False


def _install_backend_language(backend: str, language: Callable[[], Language]) -> None:
    """Install one backend's language; a backend whose language is broken (its module fails to
    import, or it redefines an op that already has a meaning) is named in a warning and left out,
    so that it never breaks the core language or the other backends."""
    try:
        found = language()
        if not isinstance(found, Language):
            raise TypeError(f"its language is a {type(found).__name__}, not an argus.dsl.intrinsics.Language")
        install_language(found)
    except Exception as err:  # a plugin's failure, reported: the plugin boundary
        warnings.warn(f"backend {backend!r}: its intrinsics are not available: {type(err).__name__}: {err}",
                      RuntimeWarning, stacklevel=3)


def dialects() -> list[Dialect]:
    """The dialects of every installed backend language (for parsing printed IR)."""
    install()
    return list(_DIALECTS)
