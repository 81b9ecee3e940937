"""Append-only, content-addressed journal of every write through ``campaign serve``.

Minimal local version written by serve-core so that serve can be tested before serve-state's branch is
merged; serve-state owns this module and its version replaces this one (same ``Journal.record``).

``CAMPAIGN_DIR/journal/objects/<sha256>``: each saved ``.ann`` content once;
``CAMPAIGN_DIR/journal/journal.jsonl``: one line per write ``{"time", "person", "document", "sha256",
"action"}``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from pathlib import Path

JOURNAL_DIR = "journal"


class Journal:
    def __init__(self, campaign_dir: Path) -> None:
        self.root = Path(campaign_dir) / JOURNAL_DIR
        self._lock = threading.Lock()

    def record(self, person: str, document: str, content: bytes, action: str, when: float | None = None) -> str:
        """Keep ``content`` (the new ``.ann`` bytes of ``document``) and append one line; its sha256."""
        digest = hashlib.sha256(content).hexdigest()
        objects = self.root / "objects"
        objects.mkdir(mode=0o700, parents=True, exist_ok=True)
        obj = objects / digest
        if not obj.exists():
            tmp = objects / f".{digest}.{os.getpid()}.{threading.get_ident()}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(content)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, obj)
        line = json.dumps({"time": time.time() if when is None else when, "person": person, "document": document,
                           "sha256": digest, "action": action}, sort_keys=True) + "\n"
        with self._lock, open(self.root / "journal.jsonl", "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        return digest
