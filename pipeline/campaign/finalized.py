"""The finalize record, ``CAMPAIGN_DIR/finalized.json``: which FINAL the campaign was finalized to, and what it took.

``campaign finalize`` writes it ([`write_record`][pipeline.campaign.finalized.write_record]) once ``FINAL`` is in
place, replacing it atomically (a reader finds the previous record or the new one, never a part); a second
finalize, to the same or another ``--out``, replaces it whole.  It is a JSON object (keys sorted, two-space
indent, mode 0600):

* ``format``: [`RECORD_FORMAT`][pipeline.campaign.finalized.RECORD_FORMAT];
* ``final``: the absolute path of ``FINAL``;
* ``documents``: one entry per document in ``FINAL``, by brat document name: ``senior`` (whose
  ``phase2/<senior>/`` collection it was taken from) and ``ann_sha256`` (the sha256 of that phase-2 ``.ann``
  as finalize read it, under the document's lock).

Readers: ``campaign serve`` makes the documents it names read-only in phase 2 and shows the manager the
``FINAL`` it names; ``campaign status`` lists the finalized documents whose phase-2 ``.ann`` changed since
([`changed_since`][pipeline.campaign.finalized.changed_since]).  Campaigns finalized before the record
existed have none: ``CAMPAIGN_DIR/final/`` stands for it then.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipeline import durable
from pipeline.campaign.layout import FINALIZE_RECORD, PHASE2_DIR

RECORD_FORMAT = "pgx-corpus/finalized/1"
"""The value of the record's ``format`` key."""


class RecordError(ValueError):
    """The record cannot be read; the message names the file and what is wrong."""


@dataclass(frozen=True)
class Finalized:
    """One finalized document: where finalize took it, and the sha256 of the ``.ann`` it took.

    Attributes:
        senior: The senior whose ``phase2/<senior>/`` collection held it.
        ann_sha256: The sha256 (hex) of that ``.ann``'s bytes as finalize read them.
    """

    senior: str
    ann_sha256: str


@dataclass(frozen=True)
class Record:
    """The finalize record (see the module docstring).

    Attributes:
        final: The absolute path of ``FINAL``.
        documents: Document name -> what finalize took.
    """

    final: Path
    documents: Mapping[str, Finalized] = field(default_factory=dict)


def sha256_text(text: str) -> str:
    """Give the sha256 of a file's content as read (UTF-8, newlines untouched: the file's own bytes).

    Args:
        text: The content, as [`read_text`][pipeline.brat.standoff.read_text] returns it.

    Returns:
        The hex digest.
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def record_path(campaign_dir: Path) -> Path:
    """Give the record's path in a campaign.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        ``CAMPAIGN_DIR/finalized.json``.
    """
    return Path(campaign_dir) / FINALIZE_RECORD


def dumps_record(record: Record) -> bytes:
    """Write a record as the file's bytes.

    Args:
        record: The record.

    Returns:
        The JSON text (keys sorted, two-space indent, a final newline), UTF-8.
    """
    data = {"format": RECORD_FORMAT, "final": str(record.final),
            "documents": {name: {"senior": d.senior, "ann_sha256": d.ann_sha256}
                          for name, d in sorted(record.documents.items())}}
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def write_record(campaign_dir: Path, record: Record) -> Path:
    """Replace the campaign's record atomically and durably (mode 0600).

    Args:
        campaign_dir: The campaign directory.
        record: The record; ``final`` is made absolute.

    Returns:
        The record's path.

    Raises:
        OSError: If it cannot be written (the previous record is left as it was).
    """
    path = record_path(campaign_dir)
    absolute = Record(Path(record.final).resolve(), record.documents)
    durable.clean_leftovers(path.parent, path.name)  # a killed finalize's
    durable.replace_file(path, dumps_record(absolute), mode=0o600, umask=False, durable=True)
    return path


def read_record(campaign_dir: Path) -> Record | None:
    """Read the campaign's record.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        The record, or None when the campaign has none (never finalized, or finalized before the record).

    Raises:
        RecordError: If the file exists but cannot be read, is not JSON, or lacks a key or has a wrong one
            (the message names the file).
    """
    path = record_path(campaign_dir)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise RecordError(f"{path}: cannot read the finalize record: {exc.strerror or exc}") from exc
    try:
        data = json.loads(raw.decode("utf-8"))
        if data.get("format") != RECORD_FORMAT:
            raise RecordError(f"{path}: format {data.get('format')!r}, expected {RECORD_FORMAT!r}")
        documents = {str(name): Finalized(str(d["senior"]), str(d["ann_sha256"]))
                     for name, d in data["documents"].items()}
        return Record(Path(str(data["final"])), documents)
    except RecordError:
        raise
    except (UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RecordError(f"{path}: not a finalize record ({type(exc).__name__}: {exc}); "
                          "run `pgx-corpus campaign finalize` again to rewrite it") from exc


def changed_since(campaign_dir: Path, record: Record) -> list[tuple[str, str, str]]:
    """List the finalized documents whose phase-2 ``.ann`` is no longer the one finalize took.

    Args:
        campaign_dir: The campaign directory.
        record: Its record.

    Returns:
        ``(document, senior, what)`` in document-name order, ``what`` being ``changed`` (other bytes) or
            ``missing`` (no ``.ann`` any more, or unreadable).
    """
    out = []
    for name, doc in sorted(record.documents.items()):
        ann = Path(campaign_dir) / PHASE2_DIR / doc.senior / f"{name}.ann"
        try:
            digest = hashlib.sha256(ann.read_bytes()).hexdigest()
        except OSError:
            out.append((name, doc.senior, "missing"))
            continue
        if digest != doc.ann_sha256:
            out.append((name, doc.senior, "changed"))
    return out
