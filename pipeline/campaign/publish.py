"""How campaign commands publish files: documents as units, a ledger of what ``review`` published.

Every file is written beside its target (``.NAME.tmpPID``, never ending in ``.txt``) and renamed over it
(:func:`pipeline.store.write_atomic`).  Collections people edit (``phase1/``, ``phase2/``) are never swapped
as a whole: they change document by document, each under :func:`pipeline.campaign.locks.document_lock`.

A brat document is a unit: brat lists ``.txt`` files and creates a missing ``.ann``, so the ``.ann`` is
written first and the ``.txt`` last (and removed first): a document exists exactly when its ``.txt`` does,
and then it is whole.

:class:`Ledger`: the documents ``campaign review`` has published (``review/published.tsv``, one
``senior<TAB>file`` line per document, appended after the document and its ``review/merged/`` reference are
written, and rewritten sorted at the end of each run).  A document missing from the ledger is (re)written
by the next run, whatever its files hold (a half-written document is never counted as there); a document
in the ledger whose ``.txt`` has gone is reported, never silently re-created.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path

from pipeline.campaign.locks import document_lock
from pipeline.store import clean_temporaries, write_atomic

log = logging.getLogger(__name__)

LEDGER_FILE = "published.tsv"


def _lock(campaign_dir: Path | None, directory: Path, name: str) -> AbstractContextManager[str]:
    return document_lock(campaign_dir, directory / name) if campaign_dir is not None else nullcontext(name)


def write_file(path: Path, data: bytes, *, only_if_changed: bool = False) -> bool:
    """Write ``data`` to ``path`` atomically (directory created); with ``only_if_changed``, leave a file that
    already holds these bytes untouched.  Returns True when written."""
    if only_if_changed:
        try:
            if path.read_bytes() == data:
                return False
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, data)
    return True


def write_text(path: Path, text: str, *, only_if_changed: bool = False) -> bool:
    """:func:`write_file` of UTF-8 ``text`` with ``\\n`` line ends as given."""
    return write_file(path, text.encode("utf-8"), only_if_changed=only_if_changed)


def write_document(directory: Path, name: str, txt: bytes, ann: bytes, *, campaign_dir: Path | None = None,
                   only_if_changed: bool = False) -> None:
    """Write the brat document ``NAME`` of ``directory``: ``.ann`` first, ``.txt`` last, each atomically, under
    the document's lock when ``campaign_dir`` is given (a collection people edit)."""
    directory.mkdir(parents=True, exist_ok=True)
    with _lock(campaign_dir, directory, name):
        write_file(directory / f"{name}.ann", ann, only_if_changed=only_if_changed)
        write_file(directory / f"{name}.txt", txt, only_if_changed=only_if_changed)


def remove_document(directory: Path, name: str, *, campaign_dir: Path | None = None) -> None:
    """Remove the brat document ``NAME`` of ``directory``: ``.txt`` first (it is gone for brat), then ``.ann``."""
    with _lock(campaign_dir, directory, name):
        (directory / f"{name}.txt").unlink(missing_ok=True)
        (directory / f"{name}.ann").unlink(missing_ok=True)


def document_names(directory: Path) -> set[str]:
    """Names of the documents of ``directory`` (its ``.txt`` and ``.ann`` files, not recursive)."""
    if not directory.is_dir():
        return set()
    return {p.stem for p in directory.iterdir() if p.suffix in (".txt", ".ann") and not p.name.startswith(".")}


def clean_tree(root: Path) -> list[Path]:
    """Remove the leftovers of killed writers (``.NAME.tmpPID`` files, staged directories) in ``root`` and
    every directory under it; returns them."""
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for here, dirs, _ in os.walk(root):
        removed += clean_temporaries(here)
        dirs[:] = [d for d in dirs if (Path(here) / d).exists()]
    return removed


class Ledger:
    """The documents ``campaign review`` has published, as ``(senior, file)`` (see the module docstring)."""

    def __init__(self, path: Path, entries: Iterable[tuple[str, str]] = (), *, existed: bool = True) -> None:
        self.path = path
        self.entries: set[tuple[str, str]] = set(entries)
        self.existed = existed

    @classmethod
    def read(cls, path: Path) -> Ledger:
        """The ledger at ``path`` (a last line without its newline, cut by a kill, is not an entry)."""
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls(path, existed=False)
        entries = []
        for line in raw.split("\n")[:-1]:
            senior, sep, file = line.partition("\t")
            if sep and senior and file:
                entries.append((senior, file))
        return cls(path, entries)

    def __contains__(self, item: object) -> bool:
        return item in self.entries

    def add(self, senior: str, file: str) -> None:
        """Record one published document (one appended line, after the document is written)."""
        if (senior, file) in self.entries:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            os.write(fd, f"{senior}\t{file}\n".encode())
        finally:
            os.close(fd)
        self.entries.add((senior, file))

    def save(self) -> None:
        """Rewrite the ledger sorted (atomically), so its bytes depend only on what it holds."""
        text = "".join(f"{s}\t{f}\n" for s, f in sorted(self.entries))
        write_text(self.path, text, only_if_changed=True)


@contextmanager
def ledger(path: Path) -> Iterator[Ledger]:
    """Read the ledger at ``path`` and save it sorted on the way out (even after an error)."""
    book = Ledger.read(path)
    try:
        yield book
    finally:
        if book.entries or book.existed:
            book.save()
