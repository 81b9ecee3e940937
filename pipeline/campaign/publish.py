"""How campaign commands publish files: documents as units, a ledger of what ``review`` published.

Every file is written beside its target (``.NAME.tmp-PID-RANDOM``, never ending in ``.txt``) and renamed over it
([`replace_file`][pipeline.durable.replace_file]).  Collections people edit (``phase1/``, ``phase2/``) are never swapped
as a whole: they change document by document, each under [`document_lock`][pipeline.campaign.locks.document_lock].

A brat document is a unit: brat lists ``.txt`` files and creates a missing ``.ann``, so the ``.ann`` is
written first and the ``.txt`` last (and removed first): a document exists exactly when its ``.txt`` does,
and then it is whole.

[`Ledger`][pipeline.campaign.publish.Ledger]: the documents ``campaign review`` has published (``review/published.tsv``,
one ``senior<TAB>file`` line per document, appended after the document and its ``review/merged/`` reference are
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

from pipeline import durable
from pipeline.campaign.locks import document_lock

log = logging.getLogger(__name__)


def _lock(campaign_dir: Path | None, directory: Path, name: str) -> AbstractContextManager[str]:
    return document_lock(campaign_dir, directory / name) if campaign_dir is not None else nullcontext(name)


def write_file(path: Path, data: bytes, *, only_if_changed: bool = False) -> bool:
    """Write bytes to a file atomically, creating its directory.

    Written beside the target and renamed over it ([`replace_file`][pipeline.durable.replace_file]).

    Args:
        path: The file written.
        data: Its new content.
        only_if_changed: Leave a file that already holds these bytes untouched (not even renamed over).

    Returns:
        True when the file was written, False when it was left as it was.
    """
    if only_if_changed:
        try:
            if path.read_bytes() == data:
                return False
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            pass
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.replace_file(path, data)
    return True


def write_text(path: Path, text: str, *, only_if_changed: bool = False) -> bool:
    """Write text to a file atomically, as [`write_file`][pipeline.campaign.publish.write_file] does.

    Args:
        path: The file written.
        text: Its new content, encoded as UTF-8; line ends are written as given
            (no newline translation).
        only_if_changed: Leave a file that already holds this text untouched.

    Returns:
        True when the file was written, False when it was left as it was.
    """
    return write_file(path, text.encode("utf-8"), only_if_changed=only_if_changed)


def write_document(directory: Path, name: str, txt: bytes, ann: bytes, *, campaign_dir: Path | None = None,
                   only_if_changed: bool = False) -> None:
    """Write one brat document of a directory: ``.ann`` first, ``.txt`` last, each atomically.

    Under the document's lock when ``campaign_dir`` is given (a collection people edit).

    Args:
        directory: The brat collection, created if needed.
        name: The document's name, without extension.
        txt: The bytes of the ``.txt``.
        ann: The bytes of the ``.ann``.
        campaign_dir: The campaign directory whose
            [`document_lock`][pipeline.campaign.locks.document_lock] to hold; ``None`` for a collection
            nobody edits (no lock).
        only_if_changed: Leave each file that already holds these bytes untouched.
    """
    directory.mkdir(parents=True, exist_ok=True)
    with _lock(campaign_dir, directory, name):
        write_file(directory / f"{name}.ann", ann, only_if_changed=only_if_changed)
        write_file(directory / f"{name}.txt", txt, only_if_changed=only_if_changed)


def remove_document(directory: Path, name: str, *, campaign_dir: Path | None = None) -> None:
    """Remove one brat document of a directory: ``.txt`` first (it is then gone for brat), then ``.ann``.

    Missing files are not an error.

    Args:
        directory: The brat collection.
        name: The document's name, without extension.
        campaign_dir: The campaign directory whose lock to hold; ``None`` for no lock.
    """
    with _lock(campaign_dir, directory, name):
        (directory / f"{name}.txt").unlink(missing_ok=True)
        (directory / f"{name}.ann").unlink(missing_ok=True)


def document_names(directory: Path) -> set[str]:
    """List the brat documents of a directory (not recursive).

    Args:
        directory: The brat collection; it may not exist.

    Returns:
        The names (without extension) of its ``.txt`` and ``.ann`` files, hidden files aside; empty when
        the directory does not exist.
    """
    if not directory.is_dir():
        return set()
    return {p.stem for p in directory.iterdir() if p.suffix in (".txt", ".ann") and not p.name.startswith(".")}


def clean_tree(root: Path) -> list[Path]:
    """Remove what killed writers left in a directory tree.

    Removes the temporaries and staged directories of dead writers (any name
    [`LEFTOVER_NAMES`][pipeline.durable.LEFTOVER_NAMES] lists) in ``root`` and every directory under it.

    Args:
        root: The top directory; it may not exist.

    Returns:
        The paths removed.
    """
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for here, dirs, _ in os.walk(root):
        removed += durable.clean_leftovers(here)
        dirs[:] = [d for d in dirs if (Path(here) / d).exists()]
    return removed


class Ledger:
    """The documents ``campaign review`` has published, as ``(senior, file)`` (see the module docstring).

    Args:
        path: The ledger file (``review/published.tsv``).
        entries: The ``(senior, file)`` entries already published.
        existed: Whether the ledger file existed when read; a ledger that never existed and holds
            nothing is not written.
    """

    def __init__(self, path: Path, entries: Iterable[tuple[str, str]] = (), *, existed: bool = True) -> None:
        self.path = path
        self.entries: set[tuple[str, str]] = set(entries)
        self.existed = existed

    @classmethod
    def read(cls, path: Path) -> Ledger:
        """Read the ledger at a path.

        A last line without its newline (cut by a kill) is not an entry; a missing file is an empty ledger.

        Args:
            path: The ledger file.

        Returns:
            The ledger.
        """
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
        """Record one published document: one line appended, after the document is written.

        Nothing is written for a document already recorded.

        Args:
            senior: The senior whose phase-2 collection holds the document.
            file: The brat document name, without extension.
        """
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
    """Read the ledger at a path and save it sorted on the way out, even after an error.

    Args:
        path: The ledger file (``review/published.tsv``).

    Yields:
        The ledger; entries added are appended at once, and the file is rewritten sorted at the end.
    """
    book = Ledger.read(path)
    try:
        yield book
    finally:
        if book.entries or book.existed:
            book.save()
