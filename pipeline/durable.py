"""Durable files and directories: every replace, create-once, append, lock and directory swap of the project.

Guarantees, one sentence each:

* **Replace** ([`replace_file`][pipeline.durable.replace_file], [`replacing`][pipeline.durable.replacing]): a
  reader sees the old file or the new one, never a part, because the new content is written to a
  temporary beside the file and renamed over it.
* **Durable replace** (``durable=True``): once the call returns, the new content and its name survive a
  power cut, because the temporary is fsynced before the rename and the directory after it.
* **Mode**: a new file gets exactly the mode asked for (``umask=False``), or that mode less the umask, or
  (``keep_mode=True``) the mode of the file it replaces.
* **Create once** ([`create_file`][pipeline.durable.create_file]): an existing file is never overwritten,
  even by a concurrent writer of the same name, because the complete temporary is hard-linked to the name.
* **Append** ([`append_bytes`][pipeline.durable.append_bytes]): concurrent appenders never interleave
  their lines (``O_APPEND`` under an exclusive ``flock``), a short write is an error, and the data is
  fsynced before the call returns.
* **Lock** ([`lock_path`][pipeline.durable.lock_path]): one holder at a time across the threads of this
  process (a thread lock) and across processes (an ``flock`` on a lock file that is never removed).
* **Stage and publish a directory** ([`staging_directory`][pipeline.durable.staging_directory],
  [`publish_directory`][pipeline.durable.publish_directory]): a reader sees the previous directory or the
  complete new one, never none and never a mix, and a kill between two renames is undone by
  [`restore_directory`][pipeline.durable.restore_directory].  The files a command writes inside a staging
  directory are plain writes, not fsynced: a publication is atomic for readers and after a kill, not
  durable against a power cut.
* **Exchange** ([`exchange`][pipeline.durable.exchange]): two paths swap names in one step
  (``renameat2(RENAME_EXCHANGE)``) or not at all.
* **Clean** ([`clean_leftovers`][pipeline.durable.clean_leftovers]): what a killed writer left (under the
  one temporary name of new writes, or under a name an earlier version used) is removed, and a live
  writer's temporary is kept.

Every new temporary, file or staged directory, is named ``.NAME.tmp-PID-RANDOM`` beside ``NAME``
([`temporary_name`][pipeline.durable.temporary_name]); [`LEFTOVER_NAMES`][pipeline.durable.LEFTOVER_NAMES]
also lists the names that earlier versions used, so a rerun cleans them.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import shutil
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from pipeline import errors

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows has no flock; locks are then advisory by content only
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger(__name__)

CAN_LOCK = fcntl is not None
"""Whether this platform has ``flock`` (every POSIX system; not Windows)."""

TMP_MARK = ".tmp-"
"""What a temporary's name holds after the final name: ``.NAME.tmp-PID-RANDOM``."""

OLD_MARK = ".old-"
"""What the previous version of a directory is named while a publication swaps it: ``.NAME.old-PID``."""

LEFTOVER_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^\..+\.tmp-(\d+)-[0-9a-f]+$"), "this module: .NAME.tmp-PID-RANDOM (files, staged directories)"),
    (re.compile(r"^\..+\.tmp-?(\d+)$"), "store.write_atomic, memo: .NAME.tmpPID; staged directories and "
                                        "serve backups: .NAME.tmp-PID"),
    (re.compile(r"^\..+\.old-(\d+)$"), "a directory replaced by a killed publication: .NAME.old-PID"),
    (re.compile(r"^\..+\.(\d+)\.\d+\.tmp$"), "serve's brat adapter (write_beside): .NAME.PID.THREAD.tmp"),
    (re.compile(r"-luigi-tmp-\d+"), "luigi.LocalTarget.temporary_path, DirectoryTarget: NAME-luigi-tmp-N"),
    (re.compile(r"^\.tmp-"), "tempfile.mkstemp(prefix='.tmp-') of the PubTator cache: .tmp-RANDOM"),
    (re.compile(r"^params\.json\.tmp\d+$"), "StageTask.write_params of older versions: params.json.tmpPID"),
    (re.compile(r"^\..+\.import-tmp$"), "pgx-corpus import of earlier versions: .OUT.import-tmp"),
)
"""Every name a temporary of this project's writers had, new or old, with who wrote it.

The first group of a pattern, when it has one, is the writer's process id; a name without one is removed
only by a caller that owns the directory (``owned=True``).
"""


def temporary_name(target: str | os.PathLike[str]) -> Path:
    """Name a new temporary beside a file or directory: ``.NAME.tmp-PID-RANDOM``.

    Args:
        target: The final path.

    Returns:
        A path beside ``target`` that no other writer uses (its process id and 8 random hex digits).
    """
    path = Path(target)
    return path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}-{secrets.token_hex(4)}")


def leftover_pid(name: str) -> tuple[bool, int | None]:
    """Tell whether a file name is a temporary of one of our writers (see ``LEFTOVER_NAMES``), and whose.

    Args:
        name: A file name (not a path).

    Returns:
        ``(True, pid)`` for a temporary naming its writer's process, ``(True, None)`` for one that names
        none, ``(False, None)`` for any other name.
    """
    for pattern, _ in LEFTOVER_NAMES:
        m = pattern.search(name)
        if m is not None:
            return True, int(m.group(1)) if pattern.groups else None
    return False, None


def is_temporary(name: str) -> bool:
    """Tell whether a file name is a temporary (or a replaced copy) of one of our writers.

    Args:
        name: A file name (not a path).

    Returns:
        True for a name ``LEFTOVER_NAMES`` lists.
    """
    return leftover_pid(name)[0]


def pid_alive(pid: int) -> bool:
    """Tell whether another live process has this pid (this process's own pid: a dead writer's, reused).

    Args:
        pid: A process id.

    Returns:
        True when a process other than this one has it (also another user's).
    """
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_leftovers(directory: str | os.PathLike[str], name: str = "", *, owned: bool = False) -> list[Path]:
    """Remove what killed writers left in a directory (not recursive).

    An entry named as ``LEFTOVER_NAMES`` says is removed when its writer's process is gone; a staged
    symbolic link is removed without its target.  What was removed is logged as a warning.

    Args:
        directory: The directory cleaned; a missing one is not an error.
        name: Only remove the temporaries and replaced copies of this one name (``.NAME.…``); empty for
            every temporary.
        owned: The caller holds the directory alone (the build's lock of ``OUT``): a live process's
            temporaries and those naming no process are removed too.

    Returns:
        The paths removed, in name order.
    """
    d = Path(directory)
    removed: list[Path] = []
    try:
        entries = sorted(os.scandir(d), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        if name and not entry.name.startswith(f".{name}."):
            continue
        found, pid = leftover_pid(entry.name)
        if not found or (not owned and (pid is None or pid_alive(pid))):
            continue
        path = d / entry.name
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
        removed.append(path)
    if removed:
        log.warning("%s: removed %d leftover(s) of an interrupted writer: %s", d, len(removed),
                    ", ".join(p.name for p in removed[:10]) + (" ..." if len(removed) > 10 else ""))
    return removed


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Flush a directory's entries (a rename is durable only once its directory is).

    Args:
        directory: The directory.

    Raises:
        OSError: If it cannot be opened or flushed.
    """
    _fsync_path(directory, os.O_RDONLY | os.O_DIRECTORY)


def fsync_file(path: str | os.PathLike[str]) -> None:
    """Flush a file's content to disk.

    Args:
        path: The file (not followed if it is a symbolic link).

    Raises:
        OSError: If it cannot be opened or flushed.
    """
    _fsync_path(path, os.O_RDONLY | os.O_NOFOLLOW)


def _fsync_path(path: str | os.PathLike[str], flags: int) -> None:
    """Open ``path`` with ``flags``, flush it, and close it (also when the flush fails)."""
    fd = os.open(path, flags)
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


def _open_temporary(target: Path, mode: int, umask: bool, keep_mode: bool,
                    beside: Path | None = None) -> tuple[Path, int]:
    """Create a temporary beside ``target`` exclusively, never through a link, with its final mode; open."""
    errors.began_writing()
    tmp = temporary_name(beside or target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        if keep_mode:
            with contextlib.suppress(FileNotFoundError):
                os.fchmod(fd, os.stat(target).st_mode & 0o7777)
        elif not umask:
            os.fchmod(fd, mode)  # exactly these bits, whatever the umask
    except BaseException:
        os.close(fd)
        tmp.unlink(missing_ok=True)
        raise
    return tmp, fd


@contextlib.contextmanager
def replacing(target: str | os.PathLike[str], *, mode: int = 0o666, umask: bool = True, keep_mode: bool = False,
              durable: bool = False, temporary_beside: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """Give a temporary path to write, then rename it over ``target`` (see the module docstring).

    The temporary is created empty, exclusively and never through a symbolic link, before it is given;
    the caller writes it (``open(tmp, "wb")`` keeps its mode).  When the block raises, the temporary is
    removed and ``target`` is left as it was.

    Args:
        target: The file replaced (or created); its directory must exist.
        mode: The new file's permission bits.
        umask: Narrow ``mode`` by the process's umask, as ``open`` does; False gives exactly ``mode``.
        keep_mode: An existing ``target`` keeps its own mode (``mode`` is then only for a new file).
        durable: Flush the content before the rename and the directory after it.
        temporary_beside: Name the temporary after this path instead of ``target`` (on the same file
            system): a temporary that must not appear in ``target``'s directory.

    Yields:
        The temporary's path, ``.NAME.tmp-PID-RANDOM`` beside ``target``.

    Raises:
        OSError: If the temporary cannot be created, flushed or renamed.
    """
    final = Path(target)
    tmp, fd = _open_temporary(final, mode, umask, keep_mode,
                              None if temporary_beside is None else Path(temporary_beside))
    os.close(fd)
    try:
        yield tmp
        if durable:
            fsync_file(tmp)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(final.parent)


def _write_all(fd: int, data: bytes, where: Path) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, f"{where}: wrote {len(data) - len(view)} of {len(data)} bytes")
        view = view[written:]


def replace_file(target: str | os.PathLike[str], data: bytes, *, mode: int = 0o666, umask: bool = True,
                 keep_mode: bool = False, durable: bool = False,
                 temporary_beside: str | os.PathLike[str] | None = None) -> None:
    """Replace a file's content atomically (and durably with ``durable=True``).

    Args:
        target: The file replaced (or created); its directory must exist.
        data: Its new content.
        mode: The new file's permission bits.
        umask: Narrow ``mode`` by the process's umask, as ``open`` does; False gives exactly ``mode``.
        keep_mode: An existing ``target`` keeps its own mode.
        durable: Flush the content before the rename and the directory after it.
        temporary_beside: Name the temporary after this path instead of ``target`` (same file system).

    Raises:
        OSError: If the file cannot be written; ``target`` is then left as it was.
    """
    final = Path(target)
    tmp, fd = _open_temporary(final, mode, umask, keep_mode,
                              None if temporary_beside is None else Path(temporary_beside))
    try:
        try:
            _write_all(fd, data, tmp)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(final.parent)


def create_file(target: str | os.PathLike[str], data: bytes, *, mode: int = 0o600) -> bool:
    """Create a file with some content unless it exists (then it is left as it is), durably.

    The complete, flushed temporary is hard-linked to ``target``: the link fails when ``target`` exists,
    so an existing file is never overwritten, even by a concurrent writer of the same name; the directory
    is flushed after.

    Args:
        target: The file created.
        data: Its content.
        mode: Its permission bits (exactly these, whatever the umask).

    Returns:
        True if this call created ``target``, False if it existed.

    Raises:
        OSError: If the file cannot be written.
    """
    final = Path(target)
    if final.exists():
        return False
    tmp, fd = _open_temporary(final, mode, False, False)
    try:
        try:
            _write_all(fd, data, tmp)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, final)
        created = True
    except FileExistsError:
        created = False
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(final.parent)
    return created


def flock(fd: int, *, shared: bool = False, blocking: bool = True) -> bool:
    """Take an advisory ``flock`` on an open file (released when the file is closed).

    Args:
        fd: The open file's descriptor.
        shared: A shared lock (readers) rather than an exclusive one.
        blocking: Wait until the lock is free; False returns at once.

    Returns:
        True when the lock is held; False when ``blocking`` is False and another holds it.  Always True
        where the platform has no ``flock`` (``CAN_LOCK``).

    Raises:
        OSError: If the lock cannot be taken for another reason.
    """
    if fcntl is None:  # pragma: no cover - Windows
        return True
    operation = (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB)
    try:
        fcntl.flock(fd, operation)
    except OSError as err:
        if not blocking and err.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def unlock(fd: int) -> None:
    """Release an ``flock`` while keeping the file open.

    Args:
        fd: The open, locked file's descriptor.
    """
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)


def write_lock_note(fd: int, data: bytes, *, durable: bool = False) -> None:
    """Replace the content of an open lock file in place (who holds it), while holding its ``flock``.

    The file is truncated and ``data`` written at its start: a lock file must keep its inode, so it is
    never replaced by a rename.  A reader that does not hold the lock may see it empty or partial.

    Args:
        fd: The lock file's open, locked descriptor (opened for writing).
        data: The note (e.g. the holder's pid).
        durable: Flush it to disk before returning.

    Raises:
        OSError: If it cannot be written.
    """
    # not a write of the command's output: a command refused after taking its lock has written nothing
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
    if durable:
        os.fsync(fd)


_guard = threading.Lock()
_thread_locks: dict[str, threading.Lock] = {}


@contextlib.contextmanager
def lock_path(path: str | os.PathLike[str], *, mode: int = 0o600) -> Iterator[int]:
    """Hold the lock of a lock file, in this process (threads) and across processes (``flock``).

    Blocks until the lock is free.  Creates the lock file's directory (mode 0700, not its parents) and
    the lock file (``mode``) if needed; the lock file is never removed, so every holder locks the same
    inode.

    Args:
        path: The lock file.
        mode: The lock file's permission bits, less the umask.

    Yields:
        The lock file's open descriptor, while the lock is held.
    """
    file = Path(path)
    with _guard:
        lock = _thread_locks.setdefault(str(file.absolute()), threading.Lock())
    with lock:
        file.parent.mkdir(mode=0o700, exist_ok=True)
        fd = os.open(file, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, mode)
        try:
            flock(fd)
            yield fd
        finally:
            os.close(fd)  # closing the descriptor releases the flock


_append_guard = threading.Lock()


def append_bytes(path: str | os.PathLike[str], data: bytes, *, mode: int = 0o644, lock: bool = True) -> None:
    """Append to a file, durably, without interleaving with other appenders.

    Opened with ``O_APPEND`` (never through a symbolic link) and created with ``mode`` (less the umask)
    if missing; under an exclusive ``flock`` of the file (with ``lock``) and a thread lock; the data is
    written whole (a short write raises) and flushed before the lock is released.  Nothing is written
    for empty data.

    Args:
        path: The file; its directory must exist.
        data: The bytes appended (whole lines, each ending in a newline).
        mode: The permission bits of a new file.
        lock: Take the ``flock`` (False for a file only one writer appends to).

    Raises:
        OSError: If the data cannot be written whole (e.g. a full disk; the message names the file).
    """
    if not data:
        return
    errors.began_writing()
    where = Path(path)
    with _append_guard:
        fd = os.open(where, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, mode)
        try:
            if lock:
                flock(fd)
            written = os.write(fd, data)
            if written != len(data):  # a full disk: say so rather than leave part of a line unreported
                raise OSError(errno.ENOSPC, f"{where}: wrote {written} of {len(data)} bytes")
            os.fsync(fd)
        finally:
            os.close(fd)


def exchange(a: str | os.PathLike[str], b: str | os.PathLike[str]) -> bool:
    """Swap two paths atomically with ``renameat2(RENAME_EXCHANGE)``.

    Raises the audit event ``pgx.exchange`` first (a kill point of the crash tests).

    Args:
        a: One path (it must exist).
        b: The other path (it must exist).

    Returns:
        True when swapped; False where the C library, kernel or file system cannot exchange.

    Raises:
        OSError: If the exchange fails for another reason (e.g. a path does not exist).
    """
    errors.began_writing()
    import ctypes
    import ctypes.util

    sys.audit("pgx.exchange", os.fspath(a), os.fspath(b))
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), os.fspath(a))


def rename(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Rename a file or directory over another name in one step (``os.replace``).

    For a caller that stages several files itself and renames them in its own order.

    Args:
        source: The complete file or directory.
        target: Its new name (an existing file there is replaced).

    Raises:
        OSError: If the rename fails.
    """
    errors.began_writing()
    os.replace(source, target)


def staging_directory(target: str | os.PathLike[str]) -> Path:
    """Create a fresh empty directory beside ``target`` to build its next version in.

    A previous version left as ``.NAME.old-PID`` by a killed publication is put back first
    ([`restore_directory`][pipeline.durable.restore_directory]), and the staging and replaced copies of
    killed writers beside it are removed.

    Args:
        target: The directory to be published later with
            [`publish_directory`][pipeline.durable.publish_directory]; its parent is created.

    Returns:
        The staging directory, ``.NAME.tmp-PID-RANDOM`` beside ``target``.
    """
    errors.began_writing()
    out = Path(target)
    out.parent.mkdir(parents=True, exist_ok=True)
    restore_directory(out)
    clean_leftovers(out.parent, out.name)
    tmp = temporary_name(out)
    tmp.mkdir()
    return tmp


def publish_directory(staging: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Make a complete staging directory (or a link to one) the directory ``target`` in one step.

    ``staging`` must be a sibling of ``target``.  A reader sees the previous directory or the new one,
    never none.  The previous one is removed (a previous symbolic link without its target).

    ``renameat2(RENAME_EXCHANGE)`` swaps them; with no previous directory (or a previous link) one rename
    does.  Where the file system cannot exchange, two renames (``target`` -> ``.NAME.old-PID``, staging ->
    ``target``): a kill between them leaves the previous version as ``.NAME.old-PID``, which
    [`restore_directory`][pipeline.durable.restore_directory] puts back.

    Args:
        staging: The complete new directory (from [`staging_directory`][pipeline.durable.staging_directory])
            or a symbolic link to one, consumed.
        target: The directory replaced (or created); a symbolic link there is replaced too.
    """
    errors.began_writing()
    new, out = Path(staging), Path(target)
    if not out.exists() and not out.is_symlink():
        os.replace(new, out)
        return
    if out.is_symlink() and new.is_symlink():
        os.replace(new, out)  # a link over a link: one rename
        return
    if out.is_dir() and not out.is_symlink() and exchange(new, out):
        _remove(new)  # the previous version, now under the staging name
        return
    old = out.with_name(f".{out.name}{OLD_MARK}{os.getpid()}")
    os.replace(out, old)
    os.replace(new, out)
    _remove(old)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def restore_directory(target: str | os.PathLike[str]) -> bool:
    """Put back a directory from its ``.NAME.old-PID`` when a publication was killed between its renames.

    Only acts when ``target`` is missing; logs a warning when it restores.

    Args:
        target: The published directory.

    Returns:
        True when restored, False when there was nothing to do.
    """
    out = Path(target)
    if out.exists() or out.is_symlink() or not out.parent.is_dir():
        return False
    prefix = f".{out.name}{OLD_MARK}"
    olds = sorted(p for p in out.parent.glob(f"{prefix}*") if p.name[len(prefix):].isdigit())
    if not olds:
        return False
    os.replace(olds[-1], out)
    log.warning("%s: restored the previous version of an interrupted publication", out)
    return True
