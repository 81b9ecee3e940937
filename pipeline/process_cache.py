"""Process-level cache of loaded configuration: each file is read once per process and content.

A worker process runs many shard tasks; [`loaded`][pipeline.process_cache.loaded] returns the object a
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
    """Return the SHA-256 of a file's content, remembered per (resolved path, mtime, size).

    Args:
        path: The file.

    Returns:
        The hex digest.

    Raises:
        OSError: If the file cannot be read (e.g. ``FileNotFoundError``).
    """
    p = Path(path).resolve()
    stat = p.stat()
    key = (str(p), stat.st_mtime_ns, stat.st_size)
    if key not in _DIGESTS:
        _DIGESTS[key] = hashlib.sha256(p.read_bytes()).hexdigest()
    return _DIGESTS[key]


def loaded(loader: Callable[..., T], *paths: str | os.PathLike[str], extra: tuple[Any, ...] = ()) -> T:
    """Return ``loader(*paths, *extra)`` from this process's cache.

    The cache is keyed by the loader (module and qualified name), the paths' contents (SHA-256) and
    ``extra``: a file edited since is loaded again, an unchanged one is not, whatever its path.

    Args:
        loader: The function that builds the object; called with the paths as ``Path`` objects, then
            ``extra``. It must return an object callers do not modify.
        *paths: The files the object is built from.
        extra: Further hashable arguments passed to ``loader`` and part of the key.

    Returns:
        The object the loader made, possibly in an earlier call.

    Raises:
        OSError: If a file cannot be read; whatever ``loader`` raises.
    """
    key = (loader.__module__, loader.__qualname__, *(file_digest(p) for p in paths), *extra)
    if key not in _CACHE:
        _CACHE[key] = loader(*(Path(p) for p in paths), *extra)
    return _CACHE[key]  # type: ignore[no-any-return]


__all__ = ["file_digest", "loaded"]
