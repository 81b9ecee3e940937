"""Durable small writes for the campaign's state (users, journal, restored documents).

A file is written beside its final name (``.NAME.tmp-PID-RANDOM``), flushed to disk, then renamed over
the final name (or linked to it when it must never be overwritten), and the directory is flushed too:
after a crash a reader finds the old file or the new one, never a part of one.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from pipeline import errors

TMP_MARK = ".tmp-"
"""What a temporary's name holds after the final name: ``.NAME.tmp-PID-RANDOM``."""


def is_temporary(name: str) -> bool:
    """Tell whether a file name is a temporary of this module (left behind by a killed writer).

    Args:
        name: A file name (not a path).

    Returns:
        True for the temporaries of [`write_replace`][pipeline.campaign.durable.write_replace] and
            [`write_new`][pipeline.campaign.durable.write_new].
    """
    return name.startswith(".") and TMP_MARK in name


def fsync_dir(directory: Path) -> None:
    """Flush a directory's entries (a rename is durable only once its directory is).

    Args:
        directory: The directory.

    Raises:
        OSError: If it cannot be opened or flushed.
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_private_dir(directory: Path) -> Path:
    """Create a directory and its missing parents with mode 0700, and make it 0700 if it exists.

    Each parent created is 0700 too (``mkdir -p`` would give the parents the umask's mode); existing
    parents are left as they are.

    Args:
        directory: The directory.

    Returns:
        ``directory``.
    """
    missing = []
    current = directory
    while not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            pass  # made by a concurrent writer meanwhile
        os.chmod(path, 0o700)  # mkdir's mode is narrowed by the umask, never widened: be exact
    os.chmod(directory, 0o700)
    return directory


def remove_dead_temporaries(target: Path) -> list[Path]:
    """Remove the temporaries that killed writers left beside a file.

    A temporary ``.NAME.tmp-PID-RANDOM`` whose process is gone is removed; one of a live process (another
    writer, now) is left alone.

    Args:
        target: The file whose temporaries to look for.

    Returns:
        The temporaries removed.
    """
    removed = []
    for tmp in sorted(target.parent.glob(f".{target.name}{TMP_MARK}*")):
        pid_text = tmp.name[len(f".{target.name}{TMP_MARK}"):].split("-", 1)[0]
        if not pid_text.isdigit():
            continue
        pid = int(pid_text)
        if pid != os.getpid():
            try:
                os.kill(pid, 0)
                continue  # a live writer's
            except ProcessLookupError:
                pass
            except PermissionError:
                continue  # alive, another user's
        tmp.unlink(missing_ok=True)
        removed.append(tmp)
    return removed


def _write_temporary(target: Path, data: bytes, mode: int) -> Path:
    errors.began_writing()
    tmp = target.with_name(f".{target.name}{TMP_MARK}{os.getpid()}-{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        os.fchmod(fd, mode)  # the umask may have narrowed or widened nothing, but be exact
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    os.close(fd)
    return tmp


def write_replace(target: Path, data: bytes, mode: int = 0o600) -> None:
    """Replace a file by new content atomically and durably.

    The data goes to a temporary beside ``target`` (created exclusively, never through a symbolic
    link), is flushed, renamed over ``target``, and the directory is flushed.  On failure the
    temporary is removed.

    Args:
        target: The file replaced (or created).
        data: Its new content.
        mode: Its permission bits (exactly these, whatever the umask).
    """
    tmp = _write_temporary(target, data, mode)
    try:
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(target.parent)


def write_new(target: Path, data: bytes, mode: int = 0o600) -> bool:
    """Create a file with some content unless it exists (then it is left as it is), durably.

    The temporary is hard-linked to ``target``: the link fails when ``target`` exists, so an existing
    file is never overwritten, even by a concurrent writer of the same name.

    Args:
        target: The file created.
        data: Its content.
        mode: Its permission bits (exactly these, whatever the umask).

    Returns:
        True if this call created ``target``, False if it existed.
    """
    if target.exists():
        return False
    tmp = _write_temporary(target, data, mode)
    try:
        os.link(tmp, target)
        created = True
    except FileExistsError:
        created = False
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(target.parent)
    return created
