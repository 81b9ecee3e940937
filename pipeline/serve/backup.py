"""``campaign backup``: a consistent copy of a live campaign as one ``.tar.gz``.

What is copied: every file of the campaign directory (collections, pre-annotation, manifests, review
reports, ``access/users.json``, the journal), with its mode and mtime, but not ``locks/`` (empty lock
files, made again on demand), temporaries left by a killed writer (``.NAME.tmp…``) or symbolic links
(logged).  Consistency while ``serve`` and the campaign commands run:

* each document's ``.txt`` and ``.ann`` are read together under the document's lock
  ([`document_lock`][pipeline.campaign.locks.document_lock]), so a copy never holds half of an edit;
* the journal's log is read under its shared lock after every document, and its objects after the
  log: every version a copied document or log line names is in the copy (objects are written before
  their log line and never change).

Members are in sorted path order (directories before what they hold), owned by uid/gid 0 with empty
names; the gzip header carries no name or time.  The archive is written beside ``OUT`` (mode 0600: it
holds the password hashes), flushed and renamed, so ``OUT`` is the old archive or the new one.

Restore (also in the command's help)::

    mkdir NEW_DIR && tar -xzpf OUT.tar.gz -C NEW_DIR
    pgx-corpus campaign status NEW_DIR          # check: the campaign reads, the figures are as expected
"""

from __future__ import annotations

import gzip
import io
import logging
import os
import stat
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pipeline import durable
from pipeline.campaign.journal import Journal
from pipeline.campaign.layout import CAMPAIGN_MANIFEST, JOURNAL_DIR, JOURNAL_LOG, JOURNAL_OBJECTS_DIR, LOCKS_DIR
from pipeline.campaign.locks import document_lock
from pipeline.errors import InputError

log = logging.getLogger(__name__)

DOCUMENT_SUFFIXES = (".txt", ".ann")
"""The files of one brat document, copied together under its lock."""


class BackupError(InputError):
    """A backup refused before anything was written (the message names the path)."""


@dataclass(frozen=True)
class BackupSummary:
    """What [`backup`][pipeline.serve.backup.backup] wrote.

    Attributes:
        members: Archive members (directories and files).
        documents: brat documents copied (a ``.txt``/``.ann`` pair, or either alone).
        bytes: The archive's size in bytes.
    """

    members: int
    documents: int
    bytes: int


@dataclass(frozen=True)
class _Member:
    info: tarfile.TarInfo
    data: bytes | None  # None: read from ``source`` when written (immutable journal objects)
    source: Path | None = None


def _skipped(name: str) -> bool:
    # temporaries of pipeline.durable (.NAME.tmp-PID-X) and of earlier versions
    return durable.is_temporary(name) or (name.startswith(".") and ".tmp" in name)


def _info(name: str, st: os.stat_result, size: int = 0) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mode = stat.S_IMODE(st.st_mode)
    info.mtime = int(st.st_mtime)
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if stat.S_ISDIR(st.st_mode):
        info.type = tarfile.DIRTYPE
    else:
        info.size = size
    return info


def _walk(root: Path, skip_top: tuple[str, ...] = ()) -> Iterator[tuple[str, list[str]]]:
    """(relative directory, its regular files) for every directory to copy, sorted; symlinks logged.

    ``skip_top``: top-level directories left out (besides ``locks/``).
    """
    for current, dirs, files in os.walk(root):
        rel = os.path.relpath(current, root)
        rel = "" if rel == "." else rel.replace(os.sep, "/")
        keep_dirs = []
        for d in sorted(dirs):
            if (rel == "" and d in (LOCKS_DIR, *skip_top)) or _skipped(d):
                continue
            if os.path.islink(os.path.join(current, d)):
                log.warning("%s: symbolic link not copied", os.path.join(current, d))
                continue
            keep_dirs.append(d)
        dirs[:] = keep_dirs
        regular = []
        for f in sorted(files):
            path = os.path.join(current, f)
            if _skipped(f):
                continue
            if os.path.islink(path) or not os.path.isfile(path):
                log.warning("%s: not a regular file, not copied", path)
                continue
            regular.append(f)
        yield rel, regular


def _check(campaign_dir: Path, out: Path) -> tuple[Path, Path]:
    root = campaign_dir.resolve()
    if not (root / CAMPAIGN_MANIFEST).is_file():
        raise BackupError(f"{campaign_dir}: not a campaign directory (no campaign.json)")
    target = out.resolve()
    if target == root or root in target.parents:
        raise BackupError(f"{out}: the archive must be outside the campaign directory {root}")
    if not target.parent.is_dir():
        raise BackupError(f"{out}: directory {target.parent} does not exist")
    if target.is_dir():
        raise BackupError(f"{out}: is a directory")
    return root, target


def backup(campaign_dir: Path, out: Path) -> BackupSummary:
    """Write a consistent ``.tar.gz`` copy of a live campaign (see the module docstring).

    Documents are read under their locks, the journal's log under its shared lock after them; the
    archive (mode 0600) is written beside ``out``, flushed and renamed, after removing what a killed
    backup left there.  Skipped files (symbolic links, non-regular files, files removed meanwhile) are
    logged as warnings; the summary is logged at INFO.

    Args:
        campaign_dir: The campaign directory.
        out: The archive written; outside the campaign directory, in an existing directory.

    Returns:
        The numbers of members and documents, and the archive's size.

    Raises:
        BackupError: Before anything is written, if ``campaign_dir`` has no ``campaign.json``, or ``out``
            is inside it, is a directory, or its directory does not exist.
    """
    root, target = _check(Path(campaign_dir), Path(out))
    members: list[_Member] = []
    documents = 0
    for rel, files in _walk(root, skip_top=(JOURNAL_DIR,)):
        directory = root / rel
        if rel:
            members.append(_Member(_info(rel, directory.stat()), None))
        stems = sorted({f[: -len(s)] for f in files for s in DOCUMENT_SUFFIXES if f.endswith(s)})
        for stem in stems:
            with document_lock(root, directory / stem):  # the .txt and the .ann of one state
                for suffix in DOCUMENT_SUFFIXES:
                    path = directory / f"{stem}{suffix}"
                    if path.is_file():
                        data = path.read_bytes()
                        members.append(_Member(_info(_join(rel, path.name), path.stat(), len(data)), data))
            documents += 1
        for f in files:
            if not any(f.endswith(s) and f[: -len(s)] in stems for s in DOCUMENT_SUFFIXES):
                path = directory / f
                try:
                    data = path.read_bytes()
                    st = path.stat()
                except FileNotFoundError:  # replaced by a rename between the listing and now: gone, not lost
                    log.warning("%s: removed while the backup ran; not copied", path)
                    continue
                members.append(_Member(_info(_join(rel, f), st, len(data)), data))
    journal = Journal(root)
    if journal.root.is_dir():
        # after every document: the log names every version copied above; then the objects, which
        # are written before their line and never change, so each line's object is in the copy
        log_data = journal.log_bytes()
        for rel, files in _walk(journal.root):
            full = _join(JOURNAL_DIR, rel)
            members.append(_Member(_info(full, (root / full).stat()), None))
            for f in files:
                path = root / full / f
                if full == JOURNAL_DIR and f == JOURNAL_LOG:
                    members.append(_Member(_info(_join(full, f), path.stat(), len(log_data)), log_data))
                elif full.startswith(f"{JOURNAL_DIR}/{JOURNAL_OBJECTS_DIR}/"):
                    members.append(_Member(_info(_join(full, f), path.stat()), None, path))
                else:
                    data = path.read_bytes()
                    members.append(_Member(_info(_join(full, f), path.stat(), len(data)), data))
    members.sort(key=lambda m: m.info.name)
    size = _write(target, members)
    log.info("%s: %d members, %d documents, %d bytes", target, len(members), documents, size)
    return BackupSummary(len(members), documents, size)


def _join(directory: str, name: str) -> str:
    return f"{directory}/{name}" if directory and name else directory or name


def _write(target: Path, members: list[_Member]) -> int:
    durable.clean_leftovers(target.parent, target.name)  # what a killed backup left beside OUT
    with durable.replacing(target, mode=0o600, durable=True) as tmp:
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                    tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for m in members:
                    if m.info.type == tarfile.DIRTYPE:
                        tar.addfile(m.info)
                    elif m.data is not None:
                        tar.addfile(m.info, io.BytesIO(m.data))
                    elif m.source is not None:
                        data = m.source.read_bytes()  # an immutable journal object
                        m.info.size = len(data)
                        tar.addfile(m.info, io.BytesIO(data))
    return target.stat().st_size
