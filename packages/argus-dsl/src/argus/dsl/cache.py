"""The on-disk cache of compiled stages, and stage dumps.

Entries are keyed by everything that decides the output: the kernel's source, its constexpr
values, the target, the options and the versions of the packages involved. Writes are atomic
(a temporary file renamed into place), so concurrent compiles never see half a file.

The cache never serves what it did not write for that name. Every file starts with a header
line holding two SHA-256 checksums, of its content and of its name (the key and the kind of
stage), checked on every load. A file that is empty, truncated, overwritten, written by an
older version or moved there from another key is discarded with an `ArgusCacheWarning` and its
stages are compiled again. The checksums catch damage, not forgery: the cache is as trustworthy
as whoever can write its folder.

An entry of several files (`store_entry`) writes its first file last, so that file stands for
the whole entry: while it is missing the entry is not there (a writer may still be at work);
once it is there, a missing sibling is damage.

``ARGUS_CACHE_DIR`` moves the cache (default ``~/.cache/argus``; ``off`` disables it).
``ARGUS_DUMP_DIR`` makes every compile write each stage it produces there, for reading.
A cache or dump folder that cannot be written costs a warning (and time), never the compile.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

HEADER_TAG = b"argus-cache/1"
"""The first word of every cache file; a file without it is not trusted."""


class ArgusCacheWarning(UserWarning):
    """A cache entry found damaged (it is discarded and built again), or a cache or dump folder
    that cannot be used (the compile goes on without it)."""


@lru_cache(maxsize=None)
def code_digest(*packages: str) -> str:
    """A hash of the Python code of `packages` (importable names): a key that includes the
    digest of the code that compiles never reuses entries an older compiler wrote. A backend
    adds its own package to its keys."""
    import importlib

    h = hashlib.sha256()
    for name in packages:
        root = Path(importlib.import_module(name).__file__ or "").parent
        for path in sorted(root.rglob("*.py")):
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


@lru_cache(maxsize=None)
def installed_version(distribution: str) -> str:
    """``name=version`` of an installed distribution (``name=?`` when it is not installed), for
    the keys of a backend whose output depends on a tool (llvmlite's LLVM)."""
    try:
        return f"{distribution}={version(distribution)}"
    except PackageNotFoundError:
        return f"{distribution}=?"


def _backend_packages() -> list[str]:
    """The packages of the installed backends (entry points ``argus.backends``): each defines
    the meaning of its intrinsics to the checker and the shadow tags, so the verdicts and
    traces the cache keeps depend on their code too."""
    from importlib.metadata import entry_points

    found = set()
    for point in entry_points(group="argus.backends"):
        package = point.value.partition(":")[0]
        if not package.startswith("argus.dsl"):
            found.add(package)
    return sorted(found)


@lru_cache(maxsize=1)
def _versions() -> str:
    found = [f"compiler={code_digest('argus.dsl', 'argus.verify', 'argus.layout')}"]
    for package in _backend_packages():  # (a backend that fails to import is keyed as absent)
        try:
            found.append(f"{package}={code_digest(package)}")
        except Exception:  # noqa: BLE001 - any import failure leaves that backend out of the key
            found.append(f"{package}=absent")
    for dist in ("argus-dsl", "argus-layout", "xdsl"):
        try:
            found.append(f"{dist}={version(dist)}")
        except PackageNotFoundError:
            found.append(f"{dist}=source")
    return ",".join(found)


def cache_key(*parts: Any) -> str:
    """A stable hash of the inputs of a compile (plus the package versions)."""
    text = json.dumps([_versions(), *[repr(p) for p in parts]], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def cache_dir() -> Path | None:
    setting = os.environ.get("ARGUS_CACHE_DIR", "")
    if setting.lower() == "off":
        return None
    return Path(setting) if setting else Path.home() / ".cache" / "argus"


def entry_path(root: Path, key: str, kind: str) -> Path:
    """Where the `kind` file of entry `key` lives under the cache folder `root`."""
    return root / key[:2] / f"{key}.{kind}"


def load(key: str, kind: str) -> bytes | None:
    """The content stored for (`key`, `kind`), or None when there is none or it was damaged."""
    entry = load_entry(key, (kind,))
    return None if entry is None else entry[kind]


def store(key: str, kind: str, data: bytes) -> None:
    """Keep `data` as (`key`, `kind`)."""
    store_entry(key, {kind: data})


def load_entry(key: str, kinds: Sequence[str]) -> dict[str, bytes] | None:
    """The contents of every file of entry `key` (by kind), or None when the entry is not there
    or any of its files is damaged or missing (the entry is then discarded, with a warning)."""
    root = cache_dir()
    if root is None:
        return None
    found: dict[str, bytes] = {}
    for kind in kinds:
        path = entry_path(root, key, kind)
        try:
            stored = path.read_bytes()
        except FileNotFoundError:
            if found:
                discard(key, kinds, f"its {kind} file is missing")
            return None
        except OSError as err:
            _warn_once(root, f"compile cache: cannot read {path} ({err.strerror or err}); "
                             "compiling without it")
            return None
        problem = _damage(key, kind, stored)
        if problem is not None:
            discard(key, kinds, f"its {kind} file {problem}")
            return None
        found[kind] = stored.partition(b"\n")[2]
    return found


def load_as(key: str, kinds: Sequence[str], read: Callable[[dict[str, bytes]], T]) -> T | None:
    """`read` of the files of entry `key`, or None when the entry is not there or is damaged. The
    files passed their checksums, so `read` failing (ValueError, KeyError, TypeError) means they
    are not what this version writes: the entry is discarded as well."""
    found = load_entry(key, kinds)
    if found is None:
        return None
    try:
        return read(found)
    except (ValueError, KeyError, TypeError) as err:
        discard(key, kinds, f"it cannot be read back ({type(err).__name__}: {err})")
        return None


def store_entry(key: str, parts: Mapping[str, bytes]) -> None:
    """Keep every file of entry `key`, its first one last (see the module's docstring)."""
    root = cache_dir()
    if root is None or not parts:
        return
    ordered = list(parts.items())
    try:
        for kind, data in ordered[1:] + ordered[:1]:
            _atomic_write(entry_path(root, key, kind), _header(key, kind, data) + data)
    except OSError as err:
        _warn_once(root, f"compile cache: cannot write to {root} ({err.strerror or err}); "
                         "compiling without it (set ARGUS_CACHE_DIR to a writable folder, or to off)")


def discard(key: str, kinds: Sequence[str], problem: str) -> None:
    """Remove entry `key` (its first file first: the entry is gone at once), saying why."""
    root = cache_dir()
    if root is None:
        return
    _warn(f"compile cache: discarded the entry {root / key[:2] / key} ({', '.join(kinds)}): {problem}; "
          "building it again")
    for kind in kinds:
        try:
            entry_path(root, key, kind).unlink(missing_ok=True)
        except OSError:
            pass  # a folder that cannot be written: the entry is rebuilt each time, never served


def output_file(name: str, data: bytes) -> Path:
    """Write `data` as a file named `name` for the user to pick up: in the cache folder, or a
    temporary folder when there is none or it cannot be written."""
    root = cache_dir()
    if root is not None:
        try:
            _atomic_write(root / name, data)
            return root / name
        except OSError as err:
            _warn_once(root, f"compile cache: cannot write to {root} ({err.strerror or err}); "
                             "writing to a temporary folder instead")
    path = Path(tempfile.mkdtemp(prefix="argus-")) / name
    _atomic_write(path, data)
    return path


def dumping() -> bool:
    """Whether compile stages are written out for reading (ARGUS_DUMP_DIR is set)."""
    return bool(os.environ.get("ARGUS_DUMP_DIR"))


def dump(kernel_name: str, key: str, stage: str, text: str) -> None:
    """Write a stage for reading when ARGUS_DUMP_DIR is set."""
    where = os.environ.get("ARGUS_DUMP_DIR")
    if not where:
        return
    try:
        _atomic_write(Path(where) / f"{kernel_name}-{key[:8]}.{stage}", text.encode())
    except OSError as err:
        _warn_once(Path(where), f"stage dumps: cannot write to {where} ({err.strerror or err}); "
                                "compiling without dumping (set ARGUS_DUMP_DIR to a writable folder)")


def _header(key: str, kind: str, data: bytes) -> bytes:
    return b"%s %s %s\n" % (HEADER_TAG, _digest(data), _name_digest(key, kind))


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).hexdigest().encode()


def _name_digest(key: str, kind: str) -> bytes:
    return _digest(f"{key}\0{kind}".encode())


def _damage(key: str, kind: str, stored: bytes) -> str | None:
    """What is wrong with a file read as (`key`, `kind`), or None when it is what was written."""
    if not stored:
        return "is empty"
    first, newline, content = stored.partition(b"\n")
    fields = first.split(b" ")
    if not newline or len(fields) != 3 or fields[0] != HEADER_TAG:
        return "has no valid checksum header (damaged, or written by an older version)"
    if fields[1] != _digest(content):
        return "does not match its checksum (truncated or altered)"
    if fields[2] != _name_digest(key, kind):
        return "was written for another entry (moved or copied from another key or stage)"
    return None


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_reported: set[Path] = set()
"""Folders already warned about in this process: one warning each, not one per file."""


def _warn_once(folder: Path, message: str) -> None:
    if folder not in _reported:
        _reported.add(folder)
        _warn(message)


def _warn(message: str) -> None:
    """Warn in one line: the message says which entry or folder and what is wrong, so no line of
    code is shown with it (line 0 has none)."""
    warnings.warn_explicit(ArgusCacheWarning(message), ArgusCacheWarning, __file__, 0, module=__name__)
