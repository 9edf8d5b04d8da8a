"""The on-disk cache of compiled stages, and stage dumps.

Entries are keyed by everything that decides the output: the kernel's source, its constexpr
values, the target, the options and the versions of the packages involved. Writes are atomic
(a temporary file renamed into place), so concurrent compiles never see half an entry.

``ARGUS_CACHE_DIR`` moves the cache (default ``~/.cache/argus``; ``off`` disables it).
``ARGUS_DUMP_DIR`` makes every compile write each stage it produces there, for reading.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any


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


@lru_cache(maxsize=1)
def _versions() -> str:
    found = [f"compiler={code_digest('argus.dsl', 'argus.verify', 'argus.layout')}"]
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


def load(key: str, stage: str) -> bytes | None:
    root = cache_dir()
    if root is None:
        return None
    path = root / key[:2] / f"{key}.{stage}"
    try:
        return path.read_bytes()
    except OSError:
        return None


def store(key: str, stage: str, data: bytes) -> None:
    root = cache_dir()
    if root is None:
        return
    try:
        _atomic_write(root / key[:2] / f"{key}.{stage}", data)
    except OSError:
        pass  # a cache that cannot be written only costs time


def dumping() -> bool:
    """Whether compile stages are written out for reading (ARGUS_DUMP_DIR is set)."""
    return bool(os.environ.get("ARGUS_DUMP_DIR"))


def dump(kernel_name: str, key: str, stage: str, text: str) -> None:
    """Write a stage for reading when ARGUS_DUMP_DIR is set."""
    where = os.environ.get("ARGUS_DUMP_DIR")
    if where:
        _atomic_write(Path(where) / f"{kernel_name}-{key[:8]}.{stage}", text.encode())
