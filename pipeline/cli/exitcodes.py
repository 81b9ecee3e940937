"""The exit-code table every ``pgx-corpus`` command follows.

=====  ===========  ==========================================================================
code   name         meaning
=====  ===========  ==========================================================================
0      OK           done; nothing is left to do for this command
1      ERROR        the command failed (I/O error, full disk, unreadable input, a service that
                    did not answer); what it had published before stays as it was
2      REFUSED      usage error or refused before anything was written: bad arguments, invalid
                    or hostile input, a campaign rule that would break, an output locked by
                    another run, a port in use
3      WORK_LEFT    the command did its work, and work is left for people or for a rerun:
                    documents held back or still pending, efetch batches to retry
=====  ===========  ==========================================================================

A discarded document is a finished decision, not work left.  Every failure ends with one line
``pgx-corpus COMMAND: …`` on stderr.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Exit statuses of ``pgx-corpus`` (see the module docstring)."""

    OK = 0
    ERROR = 1
    REFUSED = 2
    WORK_LEFT = 3
