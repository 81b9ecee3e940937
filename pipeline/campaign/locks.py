"""Per-document locks shared by ``campaign serve`` and every campaign command that writes.

People edit the collections of a running campaign through ``campaign serve``, while ``review``,
``append`` and the team commands may write into the same collections.  Each of them reads, modifies
and writes one document under [`document_lock`][pipeline.campaign.locks.document_lock], so no edit is lost and no reader
sees half a document.  The lock is a [`lock_path`][pipeline.durable.lock_path], both:

* an in-process lock (``serve`` runs brat's actions on several threads), and
* an advisory ``fcntl.flock`` on ``CAMPAIGN_DIR/locks/<digest>.lock`` (the other commands are other
  processes).  The lock files live outside every served directory and are never removed, so two
  processes always lock the same inode.

A document is named by its path relative to the campaign directory without extension
(``phase1/ann1/100_1``); ``.txt`` and ``.ann`` share its lock.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.campaign.layout import LOCKS_DIR
from pipeline.durable import lock_path


def document_key(campaign_dir: Path, document: Path) -> str:
    """Name a document by its path relative to the campaign directory, without extension.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        document: Any file of the document (``.txt`` or ``.ann``) or its path without extension;
            absolute, relative to ``campaign_dir``, or (when ``campaign_dir`` is itself a relative path)
            ``campaign_dir / ...`` as the caller built it.

    Returns:
        The document's key, a POSIX path relative to ``campaign_dir`` without extension
        (``phase1/ann1/100_1``).

    Raises:
        ValueError: If ``document`` is not inside ``campaign_dir``.
    """
    root = campaign_dir.resolve()
    if not document.is_absolute() and not campaign_dir.is_absolute() and campaign_dir.parts \
            and document.parts[:len(campaign_dir.parts)] == campaign_dir.parts:
        # `out/campaign/phase1/ann1/x` from a command given `out/campaign`: the same lock as serve's
        document = root.joinpath(*document.parts[len(campaign_dir.parts):])
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
    """Hold the lock of one document, in this process and across processes.

    Blocks until the lock is free.  Creates ``CAMPAIGN_DIR/locks/`` (mode 0700) and the document's lock
    file (mode 0600) if needed; the lock file is never removed.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        document: Any file of the document (``.txt`` or ``.ann``) or its path without extension;
            absolute, or relative to ``campaign_dir``.

    Yields:
        The document's key ([`document_key`][pipeline.campaign.locks.document_key]), while the lock is held.

    Raises:
        ValueError: If ``document`` is not inside ``campaign_dir``.
    """
    key = document_key(campaign_dir, document)
    with lock_path(_lock_file(campaign_dir, key), mode=0o600):
        yield key
