"""A document's versions from the journal, and restoring one of them (``campaign history``).

A document is named as [`document_key`][pipeline.campaign.locks.document_key] names it: its path
relative to the campaign directory without extension (``phase1/alice/100_1``); a path to one of its files, relative to
the campaign directory or to the current directory, or absolute, names it too.  A version is named by
its number in the listing (1 = the oldest) or by a prefix of its sha256 (at least 4 hex digits, naming
one content).

[`restore`][pipeline.serve.history.restore] writes the chosen version's bytes as the document's
``.ann`` under the document's lock (written beside, flushed, renamed), and journals the write as
``restore``.  If the ``.ann`` held bytes the journal does not have as the document's latest version
(written by a command or by hand, not through ``serve``), they are journaled first as ``snapshot``: a
restore never loses a version.
"""

from __future__ import annotations

import hashlib
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from pipeline import durable
from pipeline.brat.standoff import parse_ann
from pipeline.campaign.documents import MARKER_TYPES, is_done
from pipeline.campaign.journal import Journal, JournalError, Version
from pipeline.campaign.locks import document_key, document_lock
from pipeline.errors import InputError

SHA_PREFIX_RE = re.compile(r"^[0-9a-f]{4,64}$")
"""A version named by a prefix of its sha256: 4 to 64 lowercase hex digits."""


class HistoryError(InputError):
    """An unknown document or version, or a document that cannot be restored (nothing was written)."""


@dataclass(frozen=True)
class VersionInfo:
    """A journaled version with its place in the document's history and what it holds.

    Attributes:
        number: Its number in the document's history, 1 = the oldest version.
        version: The journal's log line for it.
        entities: Its text-bound annotations, the campaign's Done/Discard markers aside.
        relations: Its relations.
        done: Whether it carries the Done marker.
    """

    number: int
    version: Version
    entities: int
    relations: int
    done: bool


def resolve_document(campaign_dir: Path, name: str) -> str:
    """Resolve a document name given on the command line to its document key.

    Args:
        campaign_dir: The campaign directory.
        name: A document key (``phase1/alice/100_1``) or a path to one of its files, relative to the
            campaign directory or to the current directory, or absolute.

    Returns:
        The document key: its campaign-relative path without extension.

    Raises:
        HistoryError: If ``name`` is empty, has a ``..`` component, lies outside the campaign, or is
            neither a ``.ann``/``.txt`` file nor a journaled document.
    """
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
    """Describe one version from its journaled bytes.

    Args:
        journal: The campaign's journal.
        number: The version's number in the document's history (1 = oldest).
        version: The version's log line.

    Returns:
        Its number, entity and relation counts and whether it is marked Done.

    Raises:
        JournalError: If the object is missing or corrupt.
        UnicodeDecodeError: If its bytes are not UTF-8.
    """
    doc, _ = parse_ann(version.document.rsplit("/", 1)[-1], "", journal.content(version.sha256).decode("utf-8"))
    entities = sum(1 for t in doc.textbounds if t.type not in MARKER_TYPES)
    return VersionInfo(number, version, entities, len(doc.relations), is_done(doc))


def history(campaign_dir: Path, document: str) -> list[VersionInfo]:
    """List every journaled version of a document, oldest first.

    Args:
        campaign_dir: The campaign directory.
        document: A document key, from [`resolve_document`][pipeline.serve.history.resolve_document].

    Returns:
        One [`VersionInfo`][pipeline.serve.history.VersionInfo] per version (empty when the journal
            has none).

    Raises:
        HistoryError: If the journal or one of its objects cannot be read.
    """
    journal = Journal(Path(campaign_dir))
    try:
        return [describe(journal, n, v) for n, v in enumerate(journal.versions(document), 1)]
    except (JournalError, UnicodeDecodeError) as exc:
        raise HistoryError(f"{document}: {exc}") from exc


def find_version(versions: list[Version], spec: str, document: str) -> tuple[int, Version]:
    """Find the version a command-line ``spec`` names.

    Args:
        versions: The document's versions, oldest first.
        spec: A version number (1 = oldest) or a prefix of its sha256 (4+ hex digits; a content
            journaled several times names its latest version).
        document: The document key, for messages.

    Returns:
        The version's number and log line.

    Raises:
        HistoryError: If there is no such number, ``spec`` is neither form, no version matches, or the
            prefix names several contents.
    """
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
    """Make an earlier version of a document its current ``.ann``.

    Under the document's lock ([`document_lock`][pipeline.campaign.locks.document_lock]): a killed
    restore's temporaries are removed; current bytes the journal does not hold as the latest version
    are journaled first as ``snapshot``; the chosen bytes are written durably (beside, flushed,
    renamed; the file's mode kept, 0644 for a new one) and journaled as ``restore``.

    Args:
        campaign_dir: The campaign directory.
        document: The document key.
        spec: The version: a number or a sha256 prefix (see
            [`find_version`][pipeline.serve.history.find_version]).
        person: Who restores, recorded in the journal.

    Returns:
        The restored version's number and sha256.

    Raises:
        HistoryError: Before anything is written, for an unknown version, a missing or corrupt
            object, or a document whose collection is gone.
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
        durable.clean_leftovers(ann.parent, ann.name, owned=True)  # a killed restore's (we hold the lock)
        if current is not None and current != content:  # (equal: a killed restore wrote it, not its line)
            latest = journal.versions(document)  # again, under the lock: serve may have saved meanwhile
            if not latest or latest[-1].sha256 != hashlib.sha256(current).hexdigest():
                journal.record(person, document, current, "snapshot")
        durable.replace_file(ann, content, mode=mode, umask=False, durable=True)
        sha = journal.record(person, document, content, "restore")
    return number, sha
