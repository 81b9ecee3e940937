"""The campaign's journal: every version of every document written through ``campaign serve``.

Layout (outside every served directory; directories 0700, files 0600)::

    CAMPAIGN_DIR/journal/objects/<sha[:2]>/<sha>   the bytes of each .ann version, named by their sha256
    CAMPAIGN_DIR/journal/log.jsonl                 one JSON object per write, in the order of the writes

A log line is ``{"action", "document", "person", "sha256", "size", "time"}``: ``document`` is the
campaign-relative name without extension ([`document_key`][pipeline.campaign.locks.document_key]),
``time`` seconds since the epoch (UTC), ``action`` what wrote it (a brat action such as ``createSpan``,
``restore``, ...); a write made by relation suggestions (brat's ``tag`` and its undo) also has
``scorer``, the version of the relation scorer that made them.  The object is written (beside, flushed,
linked: never overwritten) *before* its log line, so every line names an object that exists.  Lines are
appended with ``O_APPEND`` under an exclusive ``flock`` of the log and flushed before the lock is
released: writers in several threads or processes never interleave or tear a line, and a line that is in
the file is on disk.  The journal is append-only: nothing here rewrites or removes a line or an object.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipeline.campaign.layout import JOURNAL_DIR, JOURNAL_LOG, JOURNAL_OBJECTS_DIR
from pipeline.durable import append_bytes, create_file, ensure_private_dir, flock, fsync_dir

log = logging.getLogger(__name__)

SHA_RE = re.compile(r"^[0-9a-f]{64}$")
"""A full sha256: 64 lowercase hex digits."""


class JournalError(ValueError):
    """A journal request that cannot be answered (unknown object, corrupt object or line)."""


@dataclass(frozen=True)
class Version:
    """One log line: ``document`` at ``time`` was ``sha256`` (``size`` bytes), written by ``person``.

    Attributes:
        time: When it was written, seconds since the epoch (UTC).
        person: Who wrote it.
        document: The document key (campaign-relative path without extension).
        sha256: The sha256 of the ``.ann`` bytes, the name of its object.
        action: What wrote it (a brat action such as ``createSpan``, ``restore``, ``snapshot`` ...).
        size: The ``.ann``'s size in bytes.
        line: Its 1-based line number in the log.
    """

    time: float
    person: str
    document: str
    sha256: str
    action: str
    size: int
    line: int


class Journal:
    """Append-only, content-addressed versions of a campaign's documents (see the module docstring).

    Args:
        campaign_dir: The campaign directory; the journal is its ``journal/`` directory (created, 0700,
            at the first write).
        clock: The time of a record made without ``when`` (``time.time`` by default; tests inject
            their own for reproducible logs).

    Attributes:
        root: The journal directory.
        log_path: The log file.
    """

    def __init__(self, campaign_dir: Path, *, clock: Callable[[], float] = time.time) -> None:
        self.root = Path(campaign_dir) / JOURNAL_DIR
        self.log_path = self.root / JOURNAL_LOG
        self._clock = clock

    def _object_path(self, sha: str) -> Path:
        if not SHA_RE.match(sha):
            raise JournalError(f"{sha!r} is not a sha256 (64 lowercase hex digits)")
        return self.root / JOURNAL_OBJECTS_DIR / sha[:2] / sha

    def record(self, person: str, document: str, content: bytes, action: str, when: float | None = None, *,
               scorer: str | None = None) -> str:
        """Journal a new version of a document.

        The object is written first (durably, never overwritten), then the log line is appended under
        an exclusive lock and flushed.

        Args:
            person: Who wrote it.
            document: The document key.
            content: The new ``.ann`` bytes.
            action: What wrote it (a brat action, ``restore``, ``snapshot`` ...).
            when: Its time, seconds since the epoch; None for the journal's clock.
            scorer: The relation scorer's version, for a write made by relation suggestions (the
                line's ``scorer``); None for any other write (no ``scorer`` key).

        Returns:
            The content's sha256.

        Raises:
            JournalError: If ``person``, ``document`` or ``action`` is empty or holds a newline.
            OSError: If the object or the line cannot be written (e.g. a full disk).
        """
        for name, value in (("person", person), ("document", document), ("action", action)):
            if not value or "\n" in value:
                raise JournalError(f"journal record: empty or multi-line {name} {value!r}")
        sha = hashlib.sha256(content).hexdigest()
        path = self._object_path(sha)
        ensure_private_dir(path.parent)
        if create_file(path, content, mode=0o600):
            fsync_dir(path.parent.parent)  # a new objects/<xx>/ directory entry must be durable too
        stamp = self._clock() if when is None else when
        fields: dict[str, object] = {"time": stamp, "person": person, "document": document, "sha256": sha,
                                     "action": action, "size": len(content)}
        if scorer is not None:
            fields["scorer"] = scorer
        line = json.dumps(fields, sort_keys=True, ensure_ascii=True) + "\n"
        ensure_private_dir(self.root)
        append_bytes(self.log_path, line.encode("ascii"), mode=0o600)
        return sha

    def entries(self) -> list[Version]:
        """Read every log line, in log order.

        A last line without its newline (a writer killed in the middle) is left out, with a warning.

        Returns:
            One [`Version`][pipeline.campaign.journal.Version] per line.

        Raises:
            JournalError: If any other line is unreadable; the message names it.
        """
        data = self.log_bytes()
        out = []
        lines = data.split(b"\n")
        if lines and lines[-1]:
            log.warning("%s:%d: unterminated last line left out", self.log_path, len(lines))
        for number, raw in enumerate(lines[:-1], 1):
            try:
                item = json.loads(raw)
                out.append(Version(float(item["time"]), str(item["person"]), str(item["document"]),
                                   str(item["sha256"]), str(item["action"]), int(item["size"]), number))
            except (ValueError, KeyError, TypeError) as exc:
                raise JournalError(f"{self.log_path}:{number}: unreadable journal line: {exc}") from exc
        return out

    def log_bytes(self) -> bytes:
        """Read the log as it is between two writes (under a shared lock), for a consistent copy.

        Returns:
            The log's bytes; empty when there is no log yet.
        """
        if not self.log_path.is_file():
            return b""
        ensure_private_dir(self.root)
        fd = os.open(self.log_path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            flock(fd, shared=True)  # appenders hold it exclusively (append_bytes)
            with os.fdopen(os.dup(fd), "rb") as fh:
                return fh.read()
        finally:
            os.close(fd)

    def versions(self, document: str) -> list[Version]:
        """List the versions of one document, oldest first.

        Args:
            document: The document key (campaign-relative path without extension).

        Returns:
            Its log lines, in log order.

        Raises:
            JournalError: If a log line is unreadable.
        """
        return [v for v in self.entries() if v.document == document]

    def content(self, sha: str) -> bytes:
        """Read the bytes of a journal object, checked against its name.

        Args:
            sha: The object's sha256.

        Returns:
            The ``.ann`` bytes.

        Raises:
            JournalError: If ``sha`` is not a sha256, or the object is missing or does not hash to its
                name.
        """
        path = self._object_path(sha)
        try:
            data = path.read_bytes()
        except FileNotFoundError as exc:
            raise JournalError(f"{path}: no such journal object") from exc
        if hashlib.sha256(data).hexdigest() != sha:
            raise JournalError(f"{path}: corrupt journal object (its bytes do not hash to its name)")
        return data
