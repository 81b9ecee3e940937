"""Luigi targets of the build: output files and stage output directories, written through `pipeline.durable`."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import luigi

from pipeline import durable
from pipeline.tasks.params import RunParams

log = logging.getLogger(__name__)

# --- file targets ------------------------------------------------------------------------------


class FileTarget(luigi.LocalTarget):
    """An output file of a task, written through [`replacing`][pipeline.durable.replacing].

    Luigi's own ``temporary_path`` names a temporary ``NAME-luigi-tmp-N``, leaves it behind when the task
    fails and renames it with its own code; here the temporary is the project's one temporary name
    (``.NAME.tmp-PID-RANDOM``, created empty with the mode a new file gets), removed on failure, and renamed
    by `pipeline.durable`.
    """

    @contextlib.contextmanager
    def temporary_path(self) -> Iterator[str]:
        """Give a temporary file to write, renamed over the output when the block ends without error.

        Yields:
            The temporary's path, beside the output (its directory is created).
        """
        final = Path(self.path)
        final.parent.mkdir(parents=True, exist_ok=True)
        with durable.replacing(final) as tmp:
            yield str(tmp)


# --- directory targets -------------------------------------------------------------------------

COMPLETE_MARKER = ".complete"
"""Written last into a directory target's staging copy: the directory is complete exactly when it holds it."""


class DirectoryTarget(luigi.LocalTarget):
    """A stage output directory (path ending in ``/``), complete only when it holds the marker written last.

    Luigi's own directory targets count any existing directory as complete, and ``LocalFileSystem.move``
    creates the (empty) target directory before renaming into it: a kill between the two left an empty
    ``07_sampled/<h>/`` that every later run took for the output.  Here the staging directory
    ([`staging_directory`][pipeline.durable.staging_directory], ``.NAME.tmp-PID-RANDOM``; a killed run's is
    cleaned by [`clean_stale_temporaries`][pipeline.corpus.outdir.clean_stale_temporaries]) gets the marker
    ([`COMPLETE_MARKER`][pipeline.tasks.targets.COMPLETE_MARKER]) and is then published in one step
    ([`publish_directory`][pipeline.durable.publish_directory]); an incomplete directory left by an older
    version is replaced.
    """

    def exists(self) -> bool:
        """Return whether the directory is complete.

        Returns:
            True when the directory holds the complete marker.
        """
        return os.path.isfile(os.path.join(self.path, COMPLETE_MARKER))

    @contextlib.contextmanager
    def temporary_path(self) -> Iterator[str]:
        """Give a staging directory to write, then publish it with the complete marker in one step.

        Yields:
            The staging directory's path (created, empty), ending in ``/``.
        """
        final = Path(self.path.rstrip("/"))
        tmp = durable.staging_directory(final)
        yield str(tmp) + "/"
        durable.replace_file(tmp / COMPLETE_MARKER, b"")
        durable.publish_directory(tmp, final)


def output_dir(target: luigi.LocalTarget) -> str:
    """Return the directory holding a stage's output.

    Args:
        target: A stage task's output target.

    Returns:
        The target itself for a directory target (path ending in ``/``), its parent for a file.
    """
    path = target.path
    return str(Path(path)) if path.endswith("/") else str(Path(path).parent)


# --- the lock of OUT under `luigi --module` ---------------------------------------------------

#: ``OUT`` -> the lock this process took as ``luigi --module pipeline.tasks`` (see hold_out_lock)
_CMDLINE_LOCKS: dict[str, Any] = {}


def hold_out_lock(task: RunParams) -> None:
    """Take the ``--out`` lock under plain ``luigi --module pipeline.tasks ROOT ...``, as ``pgx-corpus build`` does.

    When ``task`` is the command line's root task, this process takes the lock
    ([`acquire_lock`][pipeline.corpus.outdir.acquire_lock]) for the rest of its life, and cleans what killed
    writers left, as the build does.  Called by the root tasks' ``requires()``, i.e. while Luigi schedules,
    before any task runs; Luigi does not call it for a root task that is already complete (nothing is
    written then).  Tasks of a ``pgx-corpus build`` (``config_digest`` set; the build holds the lock) and
    ``luigi.build`` calls (no command line) take nothing.  The lock is released at exit.

    Args:
        task: A root task.

    Raises:
        OutputLocked: If another process holds the lock
            ([`OutputLocked`][pipeline.corpus.outdir.OutputLocked]): Luigi reports a scheduling error
            (``[retcode] scheduling_error`` in ``luigi.cfg``: exit 2).
    """
    from luigi.cmdline_parser import CmdlineParser

    parser = CmdlineParser.get_instance()
    if parser is None or task.config_digest:
        return
    if parser.get_task_obj().task_id != task.task_id:  # type: ignore[attr-defined]
        return
    out = str(Path(task.out).resolve())
    if out in _CMDLINE_LOCKS:
        return
    import atexit

    from pipeline.corpus import outdir

    lock = outdir.acquire_lock(Path(out))
    _CMDLINE_LOCKS[out] = lock
    atexit.register(lock.release)  # forked task processes end with os._exit: only this process releases
    outdir.clean_stale_temporaries(Path(out))
