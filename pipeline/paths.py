"""Listing the files of a collection without ever following a symbolic link out of it.

A collection (a brat directory, a stage directory of shards, FINAL, a release) given on the command line
may itself be a symbolic link (the build publishes ``OUT/brat`` as one): the operating system resolves it
once, when the directory is opened.  Inside it, a symbolic link (to a file or to a directory) is never
followed: [`list_files`][pipeline.paths.list_files] leaves it out and returns it in
[`Listing.symlinks`][pipeline.paths.Listing], for the caller to refuse (a command that copies or
publishes files) or report (a command that reads them).  Without this, a link
``100_1.txt -> /home/someone/secret`` had ``batches`` copy the secret into annotators' collections
and ``release`` publish it in every format.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import InputError


class SymlinkError(InputError):
    """A collection holds symbolic links, which a command that copies or publishes files refuses."""


@dataclass
class Listing:
    """What [`list_files`][pipeline.paths.list_files] found in a collection.

    Attributes:
        files: The regular files found, sorted by path.
        symlinks: The symbolic links left out (not followed), sorted by path.
    """

    files: list[Path] = field(default_factory=list)
    symlinks: list[Path] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Describe the symbolic links left out, for a command that reports them.

        Returns:
            One ``path: ...`` message per symbolic link, in path order.
        """
        return [f"{p}: symbolic link inside the collection, not followed (replace it by the file itself)"
                for p in self.symlinks]

    def refuse_symlinks(self, command: str) -> None:
        """Refuse a collection that holds symbolic links, for a command that copies or publishes files.

        Args:
            command: The command's name, the start of the error message (``"release"``).

        Raises:
            SymlinkError: If there is any symbolic link; the message counts them and names the first five.
        """
        if self.symlinks:
            shown = "; ".join(self.problems()[:5]) + (" ..." if len(self.symlinks) > 5 else "")
            raise SymlinkError(f"{command} refused: {len(self.symlinks)} symbolic link(s) in the collection "
                               f"(their targets lie outside it, or may): {shown}")


def resolve_collection(root: str | os.PathLike[str]) -> Path:
    """Return a collection's directory, resolving it once when it is itself a symbolic link.

    ``OUT/brat`` is a link the build replaces atomically when it publishes: a command reading the
    collection reads the one the link named when it started, never half of each.  Other paths are
    returned as given (messages keep the names people typed).

    Args:
        root: The collection path, as given on the command line.

    Returns:
        ``root``'s fully resolved target when ``root`` is a symbolic link, else ``root`` unchanged.

    Raises:
        FileNotFoundError: If ``root`` is a symbolic link whose target does not exist.
    """
    path = Path(root)
    return path.resolve(strict=True) if path.is_symlink() else path


def _wanted(name: str, suffixes: Iterable[str] | None) -> bool:
    return suffixes is None or any(name.endswith(s) for s in suffixes)


def list_files(root: str | os.PathLike[str], suffixes: Iterable[str] | None = None, *,
               recursive: bool = False) -> Listing:
    """List the regular files of a collection without following symbolic links inside it.

    ``root`` is read through [`resolve_collection`][pipeline.paths.resolve_collection] (paths are
    returned under its target when it is a link).  Symbolic links inside ``root`` are never followed: a
    link whose name has a wanted suffix, and any link to a directory when ``recursive``, goes to
    [`Listing.symlinks`][pipeline.paths.Listing].

    Args:
        root: The collection directory (it may itself be a symbolic link).
        suffixes: Wanted name endings (e.g. ``(".txt", ".ann")``); None for every file.
        recursive: Descend into subdirectories (never through a link); else only the files directly
            in ``root``.

    Returns:
        The files found and the links left out, each sorted by path.

    Raises:
        NotADirectoryError: If ``root`` is not a directory (or does not exist).
    """
    top = resolve_collection(root) if Path(root).exists() else Path(root)
    if not top.is_dir():
        raise NotADirectoryError(f"{top}: not a directory")
    wanted = tuple(suffixes) if suffixes is not None else None
    out = Listing()
    stack = [top]
    while stack:
        directory = stack.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                path = directory / entry.name
                if entry.is_symlink():
                    if _wanted(entry.name, wanted) or (recursive and entry.is_dir(follow_symlinks=True)):
                        out.symlinks.append(path)
                elif entry.is_dir(follow_symlinks=False):
                    if recursive:
                        stack.append(path)
                elif entry.is_file(follow_symlinks=False) and _wanted(entry.name, wanted):
                    out.files.append(path)
    out.files.sort()
    out.symlinks.sort()
    return out
