"""A document's versions from the journal, and restoring one of them (``campaign history``).

A document is named as :func:`pipeline.campaign.locks.document_key` names it: its path relative to the
campaign directory without extension (``phase1/alice/100_1``); a path to one of its files, relative to
the campaign directory or to the current directory, or absolute, names it too.  A version is named by
its number in the listing (1 = the oldest) or by a prefix of its sha256 (at least 4 hex digits, naming
one content).

:func:`restore` writes the chosen version's bytes as the document's ``.ann`` under the document's lock
(written beside, flushed, renamed), and journals the write as ``restore``.  If the ``.ann`` held bytes
the journal does not have as the document's latest version (written by a command or by hand, not
through ``serve``), they are journaled first as ``snapshot``: a restore never loses a version.
"""

from __future__ import annotations

import hashlib
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from pipeline.brat.standoff import parse_ann
from pipeline.campaign.documents import MARKER_TYPES, is_done
from pipeline.campaign.durable import TMP_MARK, write_replace
from pipeline.campaign.journal import Journal, JournalError, Version
from pipeline.campaign.locks import document_key, document_lock

SHA_PREFIX_RE = re.compile(r"^[0-9a-f]{4,64}$")


class HistoryError(ValueError):
    """An unknown document or version, or a document that cannot be restored (nothing was written)."""


@dataclass(frozen=True)
class VersionInfo:
    """A journaled version with its place in the document's history and what it holds."""

    number: int  # 1 = the oldest version of the document
    version: Version
    entities: int  # text-bound annotations, the campaign's Done/Discard markers aside
    relations: int
    done: bool  # carries the Done marker


def resolve_document(campaign_dir: Path, name: str) -> str:
    """The document key of ``name`` (see the module docstring); HistoryError when it is not a document of
    the campaign (outside it, a ``..`` component, or neither a file nor a journaled version)."""
    root = Path(campaign_dir).resolve()
    if not name or ".." in Path(name).parts:
        raise HistoryError(f"{name!r}: a document is a path inside the campaign, without '..'")
    candidates = [Path(name)] if Path(name).is_absolute() else [root / name, Path(name).resolve()]
    for candidate in candidates:
        try:
            key = document_key(root, candidate)
        except ValueError:
            continue
        base = root / key
        if key and (base.with_name(base.name + ".ann").is_file() or base.with_name(base.name + ".txt").is_file()
                    or Journal(root).versions(key)):
            return key
    raise HistoryError(f"{name}: no such document in {root} (name it like phase1/PERSON/NAME)")


def describe(journal: Journal, number: int, version: Version) -> VersionInfo:
    """Counts of one version, read from its journaled bytes."""
    doc, _ = parse_ann(version.document.rsplit("/", 1)[-1], "", journal.content(version.sha256).decode("utf-8"))
    entities = sum(1 for t in doc.textbounds if t.type not in MARKER_TYPES)
    return VersionInfo(number, version, entities, len(doc.relations), is_done(doc))


def history(campaign_dir: Path, document: str) -> list[VersionInfo]:
    """Every journaled version of ``document`` (a key from :func:`resolve_document`), oldest first."""
    journal = Journal(Path(campaign_dir))
    try:
        return [describe(journal, n, v) for n, v in enumerate(journal.versions(document), 1)]
    except (JournalError, UnicodeDecodeError) as exc:
        raise HistoryError(f"{document}: {exc}") from exc


def find_version(versions: list[Version], spec: str, document: str) -> tuple[int, Version]:
    """The version ``spec`` names (number or sha256 prefix) with its number; HistoryError otherwise."""
    if spec.isdigit():
        number = int(spec)
        if 1 <= number <= len(versions):
            return number, versions[number - 1]
        raise HistoryError(f"{document}: no version {number} (the document has {len(versions)})")
    if not SHA_PREFIX_RE.match(spec):
        raise HistoryError(f"{document}: version {spec!r} is neither a number nor a sha256 prefix (4+ hex digits)")
    shas = {v.sha256 for v in versions if v.sha256.startswith(spec)}
    if not shas:
        raise HistoryError(f"{document}: no version whose sha256 starts with {spec}")
    if len(shas) > 1:
        raise HistoryError(f"{document}: sha256 prefix {spec} names {len(shas)} contents; give more digits")
    number = max(n for n, v in enumerate(versions, 1) if v.sha256 in shas)
    return number, versions[number - 1]


def restore(campaign_dir: Path, document: str, spec: str, person: str) -> tuple[int, str]:
    """Make version ``spec`` of ``document`` its current ``.ann``; returns (version number, sha256).

    HistoryError, before anything is written, for an unknown version or a document whose collection is
    gone.  The write is journaled as ``restore`` by ``person``.
    """
    root = Path(campaign_dir)
    journal = Journal(root)
    number, chosen = find_version(journal.versions(document), spec, document)
    try:
        content = journal.content(chosen.sha256)
    except JournalError as exc:
        raise HistoryError(f"{document}: {exc}") from exc
    ann = root / f"{document}.ann"
    if not ann.parent.is_dir():
        raise HistoryError(f"{document}: its collection {ann.parent} does not exist")
    with document_lock(root, ann):
        current = ann.read_bytes() if ann.is_file() else None
        mode = stat.S_IMODE(ann.stat().st_mode) if ann.is_file() else 0o644
        for leftover in ann.parent.glob(f".{ann.name}{TMP_MARK}*"):
            leftover.unlink(missing_ok=True)  # a killed restore's (we hold the document's lock)
        if current is not None and current != content:  # (equal: a killed restore wrote it, not its line)
            latest = journal.versions(document)  # again, under the lock: serve may have saved meanwhile
            if not latest or latest[-1].sha256 != hashlib.sha256(current).hexdigest():
                journal.record(person, document, current, "snapshot")
        write_replace(ann, content, mode)
        sha = journal.record(person, document, content, "restore")
    return number, sha
