"""The knowledge base: every entry of every available pack, checked as a whole, looked up by id.

Loading reads each pack's entry files against the schema, then checks what no single file
can: ids are unique across packs, and every ``requires`` names an entry that exists.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from importlib.resources.abc import Traversable
from pathlib import Path

from .description import KernelDescription
from .entry import Entry, read_entry
from .errors import EntryError, PackError, UnknownNameError
from .packs import Pack, discover
from .retrieval import Hit, search
from .targets import check_pattern
from .vocabulary import FAMILIES, KINDS, LANGUAGE


class KnowledgeBase:
    """Entries by id; `search` filters and ranks them."""

    def __init__(self, entries: Iterable[Entry], unavailable: Mapping[str, str] | None = None,
                 language: frozenset[str] = LANGUAGE) -> None:
        self.entries = tuple(entries)
        self.unavailable = dict(unavailable or {})
        """Packs that could not be loaded, with the reason (they never stop the others)."""
        self.language = language
        """The language names conditions may use: the core's, the bundled backends' and the packs'."""
        self._by_id: dict[str, Entry] = {}
        for e in self.entries:
            if e.id in self._by_id:
                raise EntryError(e.path, e.line_of("id"), f"id {e.id!r} is already used by {self._by_id[e.id].path}")
            self._by_id[e.id] = e
        for e in self.entries:
            for r in e.requires:
                if r not in self._by_id:
                    raise EntryError(e.path, e.line_of("requires"),
                                     f"requires {r!r}, which no loaded entry is" + _close(r, self._by_id))
        self._check_acyclic()

    def _check_acyclic(self) -> None:
        """``requires`` orders recipes; a cycle would leave no order to apply them in."""
        done: set[str] = set()

        def visit(ident: str, path: list[str]) -> None:
            if ident in path:
                loop = path[path.index(ident):] + [ident]
                first = self._by_id[loop[0]]
                raise EntryError(first.path, first.line_of("requires"), f"requires form a cycle: {' -> '.join(loop)}")
            if ident in done:
                return
            for r in self._by_id[ident].requires:
                visit(r, path + [ident])
            done.add(ident)

        for ident in self._by_id:
            visit(ident, [])

    def requirements(self, ident: str) -> list[Entry]:
        """The entries `ident` builds on, transitively, each before those that need it."""
        order: list[Entry] = []

        def visit(e: Entry) -> None:
            for r in e.requires:
                dep = self._by_id[r]
                if dep not in order:
                    visit(dep)
                    order.append(dep)

        visit(self.get(ident))
        return order

    @classmethod
    def load(cls, packs: Iterable[Pack] | None = None) -> KnowledgeBase:
        """The entries of `packs`, or of every available pack (the built-in one and the
        installed add-ons of the ``argus.kb`` entry-point group)."""
        unavailable: dict[str, str] = {}
        chosen: list[Pack] = []
        if packs is None:
            for name, found in sorted(discover().items()):
                try:
                    chosen.append(found.load())
                except PackError as err:
                    unavailable[name] = str(err)
        discovered = packs is None
        entries = []
        language = LANGUAGE
        for pack in chosen if discovered else packs:
            try:
                files = pack.files()
            except PackError as err:  # an installed pack without its directory: set aside, like one that fails to import
                if not discovered:
                    raise
                unavailable[pack.name] = str(err)
                continue
            language |= pack.language
            for f in files:
                entries.append(read_entry(str(f), _text(f), pack=pack.name, language=LANGUAGE | pack.language))
        return cls(tuple(entries), unavailable, language)

    @property
    def packs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.pack for e in self.entries))

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, ident: object) -> bool:
        return ident in self._by_id

    def get(self, ident: str) -> Entry:
        found = self._by_id.get(ident)
        if found is None:
            raise UnknownNameError(f"no entry {ident!r}" + _close(ident, self._by_id))
        return found

    def select(self, *, target: str | None = None, family: str | None = None,
               kinds: Sequence[str] | None = None) -> list[Entry]:
        """The entries for `target` and `family` (either may be left out) of the given kinds, by id."""
        check_filters(target, family, kinds)
        return sorted((e for e in self.entries
                       if (target is None or e.covers_target(target)) and (family is None or e.covers_family(family))
                       and (kinds is None or e.kind in kinds)), key=lambda e: e.id)

    def search(self, query: str = "", *, target: str | None = None, family: str | None = None,
               kinds: Sequence[str] | None = None, kernel: KernelDescription | None = None,
               include_unknown: bool = True, limit: int | None = None) -> list[Hit]:
        """Entries filtered by target, family, kind and (given a kernel) applicability, ranked
        best first (`argus.kb.retrieval` says how)."""
        check_filters(target, family, kinds)
        return search(self.entries, query, target=target, family=family, kinds=kinds, kernel=kernel,
                      include_unknown=include_unknown, limit=limit)


def check_filters(target: str | None, family: str | None, kinds: Sequence[str] | None) -> None:
    """Refuse filters that name nothing the knowledge base knows (they would silently match nothing)."""
    if target is not None:
        problem = check_pattern(target)
        if problem or target == "any" or target.endswith(":*"):
            raise UnknownNameError(problem or f"filter on one target (nvptx:sm_90a), not on {target!r}")
    if family is not None and family not in FAMILIES:
        raise UnknownNameError(f"unknown family {family!r}; known: {', '.join(FAMILIES)}")
    for k in kinds or ():
        if k not in KINDS:
            raise UnknownNameError(f"unknown kind {k!r}; known: {', '.join(KINDS)}")


def _text(file: Traversable | Path) -> str:
    """An entry file's text; one that cannot be read is an `EntryError` naming it."""
    try:
        return file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise EntryError(str(file), 1, f"cannot read the entry: {err}") from None


def _close(name: str, known: Iterable[str]) -> str:
    near = difflib.get_close_matches(name, list(known), n=3)
    return f" (did you mean {', '.join(near)}?)" if near else ""
