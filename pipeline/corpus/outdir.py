"""The output directory of a build (``--out OUT``): one writer, no stale temporaries, atomic publication.

* [`acquire_lock`][pipeline.corpus.outdir.acquire_lock] makes the build command the only writer of ``OUT``:
  ``OUT/.build.lock`` holds the host, pid and start time of the running build,
  and an ``flock`` on it lives as long as that process.  A second build is
  refused by [`OutputLocked`][pipeline.corpus.outdir.OutputLocked], whose message names the running build's
  host and pid.  A lock left by a dead process on this host (``kill -9``, a
  crash, a reboot) is stale: the kernel released its ``flock``, so it is taken
  over (logged).  A lock written on another host is never taken over: the
  message says how to remove it.
* [`clean_stale_temporaries`][pipeline.corpus.outdir.clean_stale_temporaries] removes what killed writers
  leave behind (every name [`LEFTOVER_NAMES`][pipeline.durable.LEFTOVER_NAMES] lists, e.g.
  ``*-luigi-tmp-*`` files and directories, ``.NAME.tmp-PID-RANDOM`` files, cache ``.tmp-*`` files,
  ``.brat.tmp-*`` staging links) and restores ``OUT/brat`` from an interrupted swap.  Call it while holding the lock.
* [`publish_collection`][pipeline.corpus.outdir.publish_collection] replaces ``OUT/brat`` with a complete
  collection
  in one step: ``OUT/brat`` is a symbolic link to the build's collection,
  staged beside it and renamed over it (a directory published by an older
  version is swapped out with ``renameat2(RENAME_EXCHANGE)`` where the kernel
  has it, else by two renames that [`clean_stale_temporaries`][pipeline.corpus.outdir.clean_stale_temporaries]
  can
  complete after a kill).  Readers never see a half-written ``OUT/brat``.

Only the ``build`` command takes the lock; Luigi workers started with
``pgx-corpus worker`` run tasks for a build that already holds it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import shutil
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from pipeline import durable

logger = logging.getLogger(__name__)

LOCK_NAME = ".build.lock"
PUBLISHED = "brat"
RUN_MARKER = ".run"

class OutputLocked(RuntimeError):
    """Another build holds ``OUT``; the message names its host and pid."""


@dataclass(frozen=True)
class LockInfo:
    """Who holds (or held) an output directory, as written in ``OUT/.build.lock``.

    Attributes:
        host: Host name of the build.
        pid: Process id of the build, on that host.
        started: When it took the lock, ISO 8601 in UTC to the second (``"?"`` when not recorded).
    """

    host: str
    pid: int
    started: str

    def describe(self) -> str:
        """Describe the holder for messages.

        Returns:
            ``"pid N on host H, started T"``.
        """
        return f"pid {self.pid} on host {self.host}, started {self.started}"


def _read_info(path: Path) -> LockInfo | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return LockInfo(str(data["host"]), int(data["pid"]), str(data.get("started", "?")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pid_alive(pid: int) -> bool:
    """Tell whether a process with this pid exists on this host.

    Args:
        pid: The process id; 0 or negative is never alive.

    Returns:
        True when the process exists, even if it belongs to another user.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


class OutLock:
    """The held lock of one output directory.

    Release it with [`release`][pipeline.corpus.outdir.OutLock.release] or use it as a context manager.
    Returned by [`acquire_lock`][pipeline.corpus.outdir.acquire_lock], not built directly.

    Args:
        out: The output directory.
        fd: The open, ``flock``-ed descriptor of ``OUT/.build.lock``.
        info: What was written in the lock file.
    """

    def __init__(self, out: Path, fd: int, info: LockInfo) -> None:
        self.out = out
        self.path = out / LOCK_NAME
        self.info = info
        self._fd: int | None = fd

    def release(self) -> None:
        """Remove the lock file (if it is still ours) and release the lock; a second call does nothing."""
        if self._fd is None:
            return
        # Unlink while still holding the flock, so nobody locks a file that is going away
        # (acquire_lock checks it locked the file that is at the path).
        try:
            if _read_info(self.path) == self.info:
                self.path.unlink()
        except OSError:
            pass
        os.close(self._fd)
        self._fd = None

    def __enter__(self) -> OutLock:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
                 ) -> None:
        self.release()


def acquire_lock(out: Path, *, host: str | None = None, pid: int | None = None) -> OutLock:
    """Lock an output directory for this process (see the module docstring).

    Writes ``OUT/.build.lock`` (host, pid, start time; fsynced) and holds an ``flock`` on it until
    released or the process ends.  A stale lock (its process dead, on this host) is taken over and
    logged.

    Args:
        out: The output directory, created if needed.
        host: Host name recorded; None for this host (tests override it).
        pid: Process id recorded; None for this process (tests override it).

    Returns:
        The held lock.

    Raises:
        OutputLocked: If a live build holds ``out``, if the lock was written on another host (the message
            says how to remove it), or if the lock file keeps changing.
    """
    out.mkdir(parents=True, exist_ok=True)
    path = out / LOCK_NAME
    me = LockInfo(host or socket.gethostname(), os.getpid() if pid is None else pid,
                  dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"))
    for _ in range(10):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            previous = _read_info(path)
            if durable.CAN_LOCK:
                if not durable.flock(fd, blocking=False):
                    raise OutputLocked(_refusal(out, previous))
                if os.fstat(fd).st_ino != _inode(path):
                    os.close(fd)  # released and removed by its holder meanwhile: lock the new file
                    continue
            if previous is not None and previous != me:
                if previous.host != me.host:
                    raise OutputLocked(
                        _refusal(out, previous)
                        + f"; it was taken on another host, so it cannot be checked from {me.host}: if that "
                        f"build is gone, remove {path}"
                    )
                if not durable.CAN_LOCK and pid_alive(previous.pid):
                    raise OutputLocked(_refusal(out, previous))
                logger.warning("%s: taking over the stale lock of a dead build (%s)", out, previous.describe())
            durable.write_lock_note(fd, (json.dumps(me.__dict__) + "\n").encode(), durable=True)
            return OutLock(out, fd, me)
        except BaseException:
            os.close(fd)
            raise
    raise OutputLocked(f"{out}: could not lock {path} (it keeps changing)")


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except FileNotFoundError:
        return None


def _refusal(out: Path, holder: LockInfo | None) -> str:
    who = holder.describe() if holder is not None else "a process that has not written its name yet"
    return f"{out} is in use by another build ({who}); wait for it to finish or use another --out"


def clean_stale_temporaries(out: Path) -> list[Path]:
    """Remove the temporaries of killed writers under an output directory.

    Restores ``OUT/brat`` from ``.brat.old-PID`` when a publication was
    killed between its two renames.  Never walks into a brat ``collection`` directory, and removes a
    staged link without its target.  Call only while holding the lock.

    Args:
        out: The output directory; nothing happens when it does not exist.

    Returns:
        The paths removed, sorted (logged too).
    """
    if not out.is_dir():
        return []
    durable.restore_directory(out / PUBLISHED)  # killed between its two renames: the old one is complete
    removed: list[Path] = []
    for root, dirs, _files in os.walk(out):
        here = Path(root)
        removed += durable.clean_leftovers(here, owned=True)
        # nothing writes temporaries inside a brat collection (tens of thousands of files each)
        dirs[:] = [name for name in dirs if name != "collection" and os.path.lexists(here / name)]
    if removed:
        logger.warning("%s: removed %d temporary file(s) left by an interrupted build: %s", out, len(removed),
                       ", ".join(str(p.relative_to(out)) for p in sorted(removed)[:10])
                       + (" ..." if len(removed) > 10 else ""))
    return sorted(removed)


def publish_collection(source: Path, dest: Path, run_name: str) -> Path:
    """Make the complete collection ``source`` the published ``dest`` (``OUT/brat``), in one step.

    ``dest`` becomes a symbolic link to ``source`` (relative, so ``OUT`` can be
    moved or mounted elsewhere), swapped in with one rename: publishing tens of
    thousands of files costs no copy and no link per file (a hard-linked copy
    and the removal of the previous one took about 1 s at 19,000 sentences).
    Call only for a build that completed without failures.

    ``source`` is a stage output, never modified in place by the pipeline:
    edit a copy of ``OUT/brat`` (a campaign deploys copies), not ``OUT/brat``.
    A ``dest`` that is a directory (published by an older version) is swapped
    out and removed.

    Args:
        source: The complete collection, a stage output directory.
        dest: Where it is published (``OUT/brat``).
        run_name: The run that publishes it, written (atomically) to ``source/.run``.

    Returns:
        ``dest``.
    """
    # the marker's temporary is written beside the collection, not in it: a killed run leaves it where
    # clean_stale_temporaries looks (it never walks a collection's tens of thousands of files)
    durable.replace_file(source / RUN_MARKER, f"{run_name}\n".encode(),
                         temporary_beside=source.parent / f"{source.name}{RUN_MARKER}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    durable.clean_leftovers(dest.parent, dest.name, owned=True)  # a staged link of a killed run
    staging = durable.temporary_name(dest)
    staging.symlink_to(os.path.relpath(source, dest.parent), target_is_directory=True)
    durable.publish_directory(staging, dest)
    return dest


def finish_run(manifest: Mapping[str, Any], manifest_path: Path, out: Path, collection: Path | None,
               run_name: str) -> None:
    """Publish a build's collection unless the build had failures, then write its manifest.

    The manifest is replaced, not only created: going back to an earlier build (its manifest written, a
    later build's collection published since) publishes its collection again and rewrites the manifest.
    An incomplete collection is never published (the build reports its failures).

    Args:
        manifest: The run's manifest (see [`build_manifest`][pipeline.corpus.manifest.build_manifest]);
            its ``failures`` decide.
        manifest_path: Where the manifest goes (``OUT/runs/<hash>/manifest.json``).
        out: The build's output directory (``--out``): the collection is published as ``OUT/brat``.
        collection: The brat stage's collection; None when the build stops before it.
        run_name: The run's name, recorded in the published collection's marker.
    """
    from pipeline import store

    if collection is not None and not manifest["failures"]:
        publish_collection(collection, out / PUBLISHED, run_name)
    elif collection is not None:
        logger.error("not publishing %s: the build had failures; its partial collection is %s",
                  out / PUBLISHED, collection)
    manifest_path.parent.mkdir(parents=True, exist_ok=True)
    durable.replace_file(manifest_path, store.dumps_json(manifest).encode("utf-8"))
    if manifest["failures"]:
        logger.error("build finished with failures: %s", json.dumps(manifest["failures"]))


def remove_stage_outputs(directories: Iterable[Path]) -> None:
    """Remove stage outputs so that a rerun computes them again (after a fetch with failed batches).

    Args:
        directories: Stage output directories: ``OUT/work/<stage>/<hash>`` is removed whole, and so is the
            ``<hash>`` directory above an output nested in it (``OUT/work/08_brat/<hash>/collection``).
    """
    for directory in directories:
        stage_root = directory if directory.parent.parent.name == "work" else directory.parent
        if stage_root.exists():
            shutil.rmtree(stage_root)


def failure_note(out: Path, partial: Path | None) -> str:
    """Say what a failed build tells its operator about ``OUT/brat`` and where its partial output is.

    Args:
        out: The output directory.
        partial: This build's partial output; None when there is none to show.

    Returns:
        Whether ``OUT/brat`` was kept (and whose run it is) or no collection was published, and where
        the partial output is.
    """
    dest = out / PUBLISHED
    marker = dest / RUN_MARKER
    if marker.exists():
        kept = f"{dest} was not replaced (still the collection of run {marker.read_text().strip()})"
    else:
        kept = f"no collection was published to {dest}"
    where = f"; this build's partial output is under {partial}" if partial is not None else ""
    return kept + where


__all__ = [
    "LOCK_NAME",
    "LockInfo",
    "OutLock",
    "OutputLocked",
    "acquire_lock",
    "clean_stale_temporaries",
    "failure_note",
    "finish_run",
    "pid_alive",
    "publish_collection",
    "remove_stage_outputs",
]
