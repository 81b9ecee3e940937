"""The one base class for bad input, and whether the running command has begun writing.

A bad-input error ([`InputError`][pipeline.errors.InputError]) names what is wrong (``file:line``, the
PMID or record, the option).  The CLI reports one as exit 2 (``REFUSED``) only when the command has
written nothing yet, and as exit 1 (``ERROR``) once it has begun writing, as the exit-code table says
(docs/reference/exit-codes.md).  Whether it has begun is recorded by the writers every command writes
through ([`began_writing`][pipeline.errors.began_writing]: the writes of
[`pipeline.durable`][pipeline.durable], which replace, create, append and rename files and stage,
publish and exchange directories), and read by the CLI
([`has_written`][pipeline.errors.has_written]) after resetting it when a command starts.
"""

from __future__ import annotations

import threading


class InputError(ValueError):
    """Bad input: a file, record, option or campaign state the command cannot accept.

    The message names the file and line, the PMID or record, or the option.  A subclass of
    ``ValueError``, so that ``except ValueError`` still catches every one.
    """


_lock = threading.Lock()
_written = False


def began_writing() -> None:
    """Record that this process has begun writing an output (called by the project's writers).

    Side effects:
        Sets the process-wide flag that [`has_written`][pipeline.errors.has_written] reads.
    """
    global _written
    with _lock:
        _written = True


def has_written() -> bool:
    """Say whether this process has begun writing since the last [`reset_writes`][pipeline.errors.reset_writes].

    Returns:
        True once a writer has called [`began_writing`][pipeline.errors.began_writing].
    """
    with _lock:
        return _written


def reset_writes() -> None:
    """Forget earlier writes: called when a command starts, so only its own writes count.

    Side effects:
        Clears the process-wide flag.
    """
    global _written
    with _lock:
        _written = False
