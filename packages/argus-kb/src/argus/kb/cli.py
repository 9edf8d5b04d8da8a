"""``argus kb list|show|search``: the knowledge base from a shell (also ``argus-kb ...``).

    argus kb list [--target T] [--family F] [--kind K] [--json]
    argus kb show ID [--json]
    argus kb search [QUERY ...] [--target T] [--family F] [--kind K] [--kernel FILE]
                    [--size NAME=VALUE ...] [--exclude-undecided] [--limit N] [--json]

The ``kb`` verb reaches the ``argus`` command as a plugin of the ``argus.commands`` group; the
object registered there has the shape the command expects (name, help, configure, run), so
this package does not import the DSL. Errors print one ``error:`` line and exit with status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .conditions import Truth
from .description import describe_source
from .errors import KbError
from .library import KnowledgeBase
from .vocabulary import FAMILIES, KINDS


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--target", help="one target, kind:arch (nvptx:sm_90a, amdgpu:gfx942)")
    p.add_argument("--family", help=f"a kernel family: {', '.join(FAMILIES)}")
    p.add_argument("--kind", action="append", help=f"an entry kind (repeatable): {', '.join(KINDS)}")
    p.add_argument("--json", action="store_true", help="print JSON for programs")


def configure(p: argparse.ArgumentParser) -> None:
    verbs = p.add_subparsers(dest="kb_command", metavar="VERB")
    listing = verbs.add_parser("list", help="list the entries", description="List the entries (id, kind, title).")
    _filters(listing)
    show = verbs.add_parser("show", help="print one entry", description="Print one entry's file, or its data.")
    show.add_argument("id")
    show.add_argument("--json", action="store_true", help="print the entry's data as JSON")
    find = verbs.add_parser("search", help="find and rank entries",
                            description="Filter by target, family, kind and a kernel's applicability; rank the "
                                        "rest (docs/kb.md says how).")
    find.add_argument("query", nargs="*", help="words to look for")
    _filters(find)
    find.add_argument("--kernel", metavar="FILE", help="a kernel file whose applicability decides (read, never run)")
    find.add_argument("--size", action="append", default=[], metavar="NAME=VALUE", help="a problem size (repeatable)")
    find.add_argument("--exclude-undecided", action="store_true",
                      help="drop entries whose conditions cannot be decided for the kernel")
    find.add_argument("--limit", type=int, help="print at most this many")


def run(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except KbError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    if getattr(args, "kb_command", None) is None:
        print("error: say what to do: argus kb list | show ID | search [QUERY ...]", file=sys.stderr)
        return 2
    kb = KnowledgeBase.load()
    for reason in kb.unavailable.values():
        print(f"warning: {reason}", file=sys.stderr)
    if args.kb_command == "list":
        entries = kb.select(target=args.target, family=args.family, kinds=args.kind)
        if args.json:
            print(json.dumps([{"id": e.id, "kind": e.kind, "title": e.title, "targets": list(e.targets),
                               "families": list(e.families), "pack": e.pack} for e in entries], indent=2))
        else:
            width = max((len(e.id) for e in entries), default=0)
            for e in entries:
                print(f"{e.id:<{width}}  {e.kind:<13}  {e.title}")
        return 0
    if args.kb_command == "show":
        entry = kb.get(args.id)
        if args.json:
            print(json.dumps(entry.as_dict(), indent=2))
        else:
            print(Path(entry.path).read_text(encoding="utf-8") if Path(entry.path).is_file() else entry.body, end="")
        return 0
    kernel = None
    sizes = _sizes(args.size)
    if args.kernel:
        path = Path(args.kernel)
        if not path.is_file():
            raise KbError(f"no such kernel file: {path}")
        kernel = describe_source(path.read_text(encoding="utf-8"), target=args.target, family=args.family,
                                 sizes=sizes, filename=str(path), language=kb.language)
    elif sizes:
        raise KbError("--size describes a kernel: give --kernel FILE too")
    if args.limit is not None and args.limit < 1:
        raise KbError(f"--limit takes a positive int, got {args.limit}")
    hits = kb.search(" ".join(args.query), target=args.target, family=args.family, kinds=args.kind, kernel=kernel,
                     include_unknown=not args.exclude_undecided, limit=args.limit)
    if args.json:
        print(json.dumps([{"id": h.entry.id, "score": h.score, "title": h.entry.title,
                           "applies": h.applicability.truth.value if h.applicability else None,
                           "why": list(h.applicability.reasons) if h.applicability else [],
                           "reasons": list(h.reasons)} for h in hits], indent=2))
        return 0
    if not hits:
        print("no entry matches")
        return 0
    for h in hits:
        print(f"{h.score:5.1f}  {h.entry.id}  ({h.entry.kind}) {h.entry.title}")
        print(f"       score: {'; '.join(h.reasons) or 'no bonus'}")
        if h.applicability is not None:
            verdict = {Truth.YES: "applies", Truth.UNKNOWN: "undecided"}[h.applicability.truth]
            print(f"       {verdict}: {'; '.join(h.applicability.reasons)}")
    return 0


def _sizes(items: Sequence[str]) -> dict[str, int]:
    sizes = {}
    for item in items:
        name, sep, text = item.partition("=")
        try:
            value = int(text)
        except ValueError:
            value = None
        if not sep or not name.isidentifier() or value is None:
            raise KbError(f"--size takes NAME=INT, got {item!r}")
        sizes[name] = value
    return sizes


KB = Command("kb", "the knowledge base: list, show and search its entries", configure, run)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="argus-kb", description=KB.help)
    configure(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0) and 2
    return run(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
