"""The exit-code table every ``pgx-corpus`` command follows.

* **0** ``OK``: done; nothing is left to do for this command.
* **1** ``ERROR``: the command failed (I/O error, full disk, unreadable input, a service that did not
  answer); what it had published before stays as it was.
* **2** ``REFUSED``: usage error or refused before anything was written: bad arguments, invalid or hostile
  input, a campaign rule that would break, an output locked by another run, a port in use.
* **3** ``WORK_LEFT``: the command did its work, and work is left for people or for a rerun: documents
  held back or still pending, efetch batches to retry.

A discarded document is a finished decision, not work left.  Every failure ends with one line
``pgx-corpus COMMAND: …`` on stderr: an exception a command does not handle itself is reported in one
line by ``pgx-corpus`` (``REFUSED`` for input it refuses before writing anything, ``ERROR`` otherwise,
see [`refusal_code`][pipeline.cli.exitcodes.refusal_code]; the traceback only in the log at
``--log-level DEBUG``).  [`COMMAND_CODES`][pipeline.cli.exitcodes.COMMAND_CODES] says what each
code means for each command; the help epilog ([`EPILOG`][pipeline.cli.exitcodes.EPILOG]) prints both
tables.
"""

from __future__ import annotations

import textwrap
from enum import IntEnum

from pipeline.errors import has_written


class ExitCode(IntEnum):
    """Exit statuses of ``pgx-corpus`` (see the module docstring).

    Attributes:
        OK: 0, done; nothing is left to do.
        ERROR: 1, the command failed.
        REFUSED: 2, usage error or refused before anything was written.
        WORK_LEFT: 3, done, and work is left for people or for a rerun.
    """

    OK = 0
    ERROR = 1
    REFUSED = 2
    WORK_LEFT = 3


COMMAND_CODES: dict[str, dict[ExitCode, str]] = {
    "build": {ExitCode.OK: "built and published", ExitCode.ERROR: "a task failed (see the log), a full disk, "
              "a scheduler that does not answer", ExitCode.REFUSED: "bad arguments, a configuration file that "
              "does not read (ontology, schema, triggers, roster, relation rules, learned model), --out locked by "
              "another build", ExitCode.WORK_LEFT: "efetch batches left to retry (rerun): built without "
              "them, OUT/brat not published"},
    "worker": {ExitCode.OK: "the build is done", ExitCode.ERROR: "a task failed, or the scheduler does not "
               "answer", ExitCode.REFUSED: "bad arguments, or this host's configuration differs from the build's"},
    "validate": {ExitCode.OK: "no problem", ExitCode.ERROR: "problems found (file:line on stdout)",
                 ExitCode.REFUSED: "no such directory or annotation.conf"},
    "batches": {ExitCode.OK: "campaign written", ExitCode.ERROR: "an I/O error",
                ExitCode.REFUSED: "bad roster, manifest or collection (names, symbolic links), a started "
                "campaign: nothing written"},
    "stats": {ExitCode.OK: "computed (excluded documents listed on stderr)", ExitCode.REFUSED: "bad input"},
    "agreement": {ExitCode.OK: "computed (excluded documents listed on stderr)", ExitCode.REFUSED: "bad input"},
    "evaluate": {ExitCode.OK: "computed (excluded documents listed on stderr)", ExitCode.REFUSED: "bad input"},
    "harmonize": {ExitCode.OK: "merged", ExitCode.REFUSED: "bad input"},
    "export": {ExitCode.OK: "exported", ExitCode.REFUSED: "bad input or configuration"},
    "lexicon build": {ExitCode.OK: "built", ExitCode.REFUSED: "bad arguments or sources"},
    "lexicon info": {ExitCode.OK: "printed", ExitCode.REFUSED: "no such lexicon"},
    "campaign status": {ExitCode.OK: "reported, no document held back", ExitCode.REFUSED: "not a campaign",
                        ExitCode.WORK_LEFT: "reported, documents held back (listed on stderr)"},
    "campaign review": {ExitCode.OK: "every document reviewed, discarded or in phase 2",
                        ExitCode.REFUSED: "not a campaign, or a campaign rule would break",
                        ExitCode.WORK_LEFT: "documents held back or still pending in phase 1"},
    "campaign finalize": {ExitCode.OK: "FINAL written, every phase-2 document finished or discarded by its "
                          "senior", ExitCode.REFUSED: "bad campaign, schema or configuration",
                          ExitCode.WORK_LEFT: "FINAL written, documents held back (listed on stderr)"},
    "campaign append": {ExitCode.OK: "appended", ExitCode.REFUSED: "bad roster, manifest or collection",
                        ExitCode.WORK_LEFT: "appended, documents blocked by existing files (left unassigned)"},
    "find": {ExitCode.OK: "searched", ExitCode.REFUSED: "bad criteria or directory"},
    "decisions apply": {ExitCode.OK: "applied (or --dry-run printed)", ExitCode.REFUSED: "bad decisions "
                        "file, or a change would not validate: nothing written"},
    "release": {ExitCode.OK: "released", ExitCode.REFUSED: "bad input, or FINAL has problems: nothing "
                "written"},
    "train": {ExitCode.OK: "model written", ExitCode.REFUSED: "bad input or --out, or a document over a limit: "
              "nothing written"},
    "train-relations": {ExitCode.OK: "relation scorer written", ExitCode.REFUSED: "bad input or --out, or a "
                        "document over a limit: nothing written"},
    "suggest-relations": {ExitCode.OK: "DIR written (documents that do not parse or validate listed on stderr, "
                          "copied unchanged)", ExitCode.REFUSED: "bad collection, DIR not new or empty, bad rules, "
                          "scorer, schema or annotation.conf: nothing written"},
    "campaign users list": {ExitCode.OK: "listed", ExitCode.REFUSED: "not a campaign, or a broken users file"},
    "campaign users reset": {ExitCode.OK: "new password shown once", ExitCode.REFUSED: "unknown person"},
    "campaign users revoke": {ExitCode.OK: "access ended", ExitCode.REFUSED: "unknown person"},
    "campaign users logout": {ExitCode.OK: "every session ended", ExitCode.REFUSED: "unknown person"},
    "campaign history": {ExitCode.OK: "listed (or restored)", ExitCode.REFUSED: "unknown document or version"},
    "campaign backup": {ExitCode.OK: "archive written", ExitCode.REFUSED: "not a campaign, or OUT inside it"},
    "campaign replace": {ExitCode.OK: "replaced", ExitCode.REFUSED: "a campaign rule would break (named, with "
                         "the documents), or started documents need --started: nothing written"},
    "campaign add-person": {ExitCode.OK: "added", ExitCode.REFUSED: "a campaign rule would break: nothing "
                            "written"},
    "campaign reassign": {ExitCode.OK: "reassigned", ExitCode.REFUSED: "a campaign rule would break, or a "
                          "document has started: nothing written"},
    "campaign import": {ExitCode.OK: "imported", ExitCode.REFUSED: "bad directories (names, symbolic links) or "
                        "campaign: nothing written",
                        ExitCode.WORK_LEFT: "imported; documents held back (file:line on stderr)"},
    "campaign calibrate": {ExitCode.OK: "calibration round given", ExitCode.REFUSED: "bad documents or campaign"},
    "campaign calibration": {ExitCode.OK: "reported (or promoted)", ExitCode.REFUSED: "bad campaign or "
                             "document"},
    "import": {ExitCode.OK: "brat collection written", ExitCode.ERROR: "an I/O error",
               ExitCode.REFUSED: "unreadable, malformed or unknown input, a record that would not validate, or a "
               "limit passed (file and record on stderr): nothing written"},
    "campaign serve": {ExitCode.OK: "stopped cleanly (SIGTERM or Ctrl-C)", ExitCode.REFUSED: "missing or "
                       "half-written campaign, no users, a second serve on the campaign, the port out of range "
                       "or in use, the bare --trusted-proxy, or a non-loopback --host without --trusted-proxy "
                       "or --public: nothing started"},
    "campaign simulate": {ExitCode.OK: "documents annotated (phase 1) or signed off (phase 2)", ExitCode.ERROR:
                          "an I/O error", ExitCode.REFUSED: "bad campaign or reference: nothing written"},
    "campaign guideline": {ExitCode.OK: "guide version recorded", ExitCode.REFUSED: "bad campaign or guide"},
    "campaign retrain": {ExitCode.OK: "scorer and entity model written, judgement reported", ExitCode.ERROR:
                         "an I/O error, or another run took the version number", ExitCode.REFUSED:
                         "no finished document, a bad campaign, --also or --keys directory, rule, scorer or "
                         "schema file (named), a document over a limit, a key-entity source that cannot be had: "
                         "nothing written"},
}
"""Per command: the codes it can end with, and what each means for it (beyond the table above)."""


def epilog(width: int = 100) -> str:
    """Format the exit-code table and the per-command meanings, for ``pgx-corpus --help``.

    Args:
        width: The longest line, in characters.

    Returns:
        The epilog text, wrapped.
    """
    lines = ["exit codes:"]
    for c in ExitCode:
        lines += textwrap.wrap(f"{c.value}  {c.name:<9}  {_MEANING[c]}", width, initial_indent="  ",
                               subsequent_indent=" " * 16)
    lines += ["", "per command (1 ERROR also means an I/O error, a full disk or a bug, for every command):"]
    for command, codes in COMMAND_CODES.items():
        text = f"{command}: " + "; ".join(f"{c.value} {meaning}" for c, meaning in sorted(codes.items()))
        lines += textwrap.wrap(text, width, initial_indent="  ", subsequent_indent="      ")
    return "\n".join(lines)


_MEANING = {
    ExitCode.OK: "done, nothing is left to do for this command",
    ExitCode.ERROR: "failed (I/O error, full disk, unreadable input, a service that did not answer)",
    ExitCode.REFUSED: "usage error, or refused before anything was written (invalid or hostile input, a "
                      "campaign rule, a locked output, a port in use)",
    ExitCode.WORK_LEFT: "done, and work is left for people or a rerun (documents held back or pending, "
                        "efetch batches to retry)",
}

EPILOG = epilog()
"""The help epilog of ``pgx-corpus`` ([`epilog`][pipeline.cli.exitcodes.epilog] at 100 columns)."""


def refusal_code() -> ExitCode:
    """Return the exit code of bad input refused by the running command.

    ``REFUSED`` (2) only while the command has written nothing (a pre-flight refusal); once it has begun
    writing ([`has_written`][pipeline.errors.has_written]) the same error is a failure, ``ERROR`` (1), as
    the table says.

    Returns:
        ``ExitCode.REFUSED`` or ``ExitCode.ERROR``.
    """
    return ExitCode.ERROR if has_written() else ExitCode.REFUSED
