"""Process-level cache of loaded configuration: each file is read once per process and content.

A worker process runs many shard tasks; :func:`loaded` returns the object a
loader made from a file the last time, as long as the file's content (SHA-256)
is the same, so an ontology, a schema or a parse gate is built once per
process, not once per shard.  Loaders must return objects the callers do not
modify (the project's are frozen dataclasses or used read-only).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

_CACHE: dict[tuple[Any, ...], Any] = {}
_DIGESTS: dict[tuple[str, int, int], str] = {}


def file_digest(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's content, remembered per (path, mtime, size)."""
    p = Path(path).resolve()
    stat = p.stat()
    key = (str(p), stat.st_mtime_ns, stat.st_size)
    if key not in _DIGESTS:
        _DIGESTS[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return _DIGESTS[key]


def loaded(loader: Callable[..., T], *paths: str | os.PathLike[str], extra: tuple[Any, ...] = ()) -> T:
    """``loader(*paths, *extra)`` from this process's cache, keyed by the loader, the paths' contents and ``extra``."""
    key = (loader.__module__, loader.__qualname__, *(file_digest(p) for p in paths), *extra)
    if key not in _CACHE:
        _CACHE[key] = loader(*(Path(p) for p in paths), *extra)
    return _CACHE[key]  # type: ignore[no-any-return]


__all__ = ["file_digest", "loaded"]
