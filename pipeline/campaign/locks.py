"""Per-document locks shared by ``campaign serve`` and every campaign command that writes.

People edit the collections of a running campaign through ``campaign serve``, while ``review``,
``append`` and the team commands may write into the same collections.  Each of them reads, modifies
and writes one document under :func:`document_lock`, so no edit is lost and no reader sees half a
document.  The lock is both:

* an in-process lock (``serve`` runs brat's actions on several threads), and
* an advisory ``fcntl.flock`` on ``CAMPAIGN_DIR/locks/<digest>.lock`` (the other commands are other
  processes).  The lock files live outside every served directory and are never removed, so two
  processes always lock the same inode.

A document is named by its path relative to the campaign directory without extension
(``phase1/ann1/100_1``); ``.txt`` and ``.ann`` share its lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

LOCKS_DIR = "locks"

_guard = threading.Lock()
_thread_locks: dict[str, threading.Lock] = {}


def document_key(campaign_dir: Path, document: Path) -> str:
    """The campaign-relative name of ``document`` (any of its files, or the name without extension).

    Raises ``ValueError`` when ``document`` is not inside ``campaign_dir``.
    """
    root = campaign_dir.resolve()
    path = document if document.is_absolute() else root / document
    path = Path(os.path.normpath(path))
    if path.suffix in (".txt", ".ann"):
        path = path.with_suffix("")
    rel = path.relative_to(root)
    return rel.as_posix()


def _lock_file(campaign_dir: Path, key: str) -> Path:
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    return campaign_dir.resolve() / LOCKS_DIR / f"{digest}.lock"


@contextmanager
def document_lock(campaign_dir: Path, document: Path) -> Iterator[str]:
    """Hold the lock of one document (in this process and across processes); yields its key."""
    key = document_key(campaign_dir, document)
    path = _lock_file(campaign_dir, key)
    with _guard:
        lock = _thread_locks.setdefault(key, threading.Lock())
    with lock:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield key
        finally:
            os.close(fd)  # closing the descriptor releases the flock
