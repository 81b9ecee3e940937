"""``pgx-corpus``: the one command line of the project (``python -m pipeline`` is the same).

The top-level parser and the dispatch: every subcommand comes from a ``*_commands`` module
(``build`` from [`build_commands`][pipeline.cli.build_commands], which schedules the Luigi DAG).
Exit codes follow [`pipeline.cli.exitcodes`][pipeline.cli.exitcodes].
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from pipeline import __version__
from pipeline.cli.exitcodes import EPILOG, ExitCode, refusal_code
from pipeline.errors import InputError, reset_writes

log = logging.getLogger(__name__)

COMMAND_MODULES = ("pipeline.cli.build_commands", "pipeline.cli.worker_commands",
                   "pipeline.cli.lexicon_commands", "pipeline.cli.brat_commands", "pipeline.cli.corpus_commands",
                   # campaign_commands creates the `campaign` group that release_commands adds to
                   "pipeline.cli.campaign_commands", "pipeline.cli.release_commands", "pipeline.cli.train_commands",
                   "pipeline.cli.users_commands", "pipeline.cli.team_commands", "pipeline.cli.import_commands",
                   "pipeline.cli.simulate_commands", "pipeline.cli.serve_commands", "pipeline.cli.relation_commands",
                   "pipeline.cli.suggest_commands", "pipeline.cli.retrain_commands")
"""The modules whose ``register(sub)`` adds their subcommands, in this order."""

ONE_MODULE_COMMANDS = {
    "build": "pipeline.cli.build_commands", "worker": "pipeline.cli.worker_commands",
    "lexicon": "pipeline.cli.lexicon_commands", "import": "pipeline.cli.import_commands",
    "train": "pipeline.cli.train_commands", "train-relations": "pipeline.cli.relation_commands",
    "suggest-relations": "pipeline.cli.suggest_commands",
}
"""Commands that one module registers whole: running one of them imports that module only.

Importing every command module took most of a no-change rebuild's time (pyarrow, the brat and campaign
modules); a test checks that each of these commands parses and documents itself the same way either way.
"""


def make_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Build the ``pgx-corpus`` parser.

    Args:
        command: A command of [`ONE_MODULE_COMMANDS`][pipeline.cli.ONE_MODULE_COMMANDS] to register
            alone (the other commands are then unknown to the parser); ``None`` or any other name
            registers every subcommand.

    Returns:
        The parser; [`pipeline.cli.reference`][pipeline.cli.reference] renders the CLI reference from the
            one with every subcommand.
    """
    parser = argparse.ArgumentParser(
        prog="pgx-corpus",
        description="Build PGxCorpus-style annotated corpora from PubMed, reproducibly.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    only = ONE_MODULE_COMMANDS.get(command or "")
    for name in (only,) if only else COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def command_named(argv: list[str]) -> str | None:
    """Return the command an argument list names, without parsing it.

    Args:
        argv: The arguments after ``pgx-corpus``.

    Returns:
        The first argument that is not a top-level option (``--log-level`` takes a value), or ``None``.
    """
    values = iter(argv)
    for arg in values:
        if arg == "--log-level":
            next(values, None)
        elif not arg.startswith("-"):
            return arg
    return None


def main(argv: list[str] | None = None, *, fast_exit: bool = False) -> int:
    """Run one subcommand and return its exit status.

    Logging is configured from ``--log-level``; below DEBUG, logged tracebacks become one line
    ([`one_line_exceptions`][pipeline.cli.one_line_exceptions]).  An exception a command does not handle
    ends in one ``pgx-corpus COMMAND: ...`` line ([`report_failure`][pipeline.cli.report_failure]).

    Args:
        argv: The arguments after ``pgx-corpus``; None for ``sys.argv[1:]``.
        fast_exit: For the console script and ``python -m pipeline``: a ``build`` or ``worker`` ends the
            process as soon as it is done, with ``os._exit`` after flushing its output, instead of
            tearing the interpreter down: freeing a loaded lexicon and spaCy model took 0.4 s, a
            twentieth of a small rebuild.  Every output was already written atomically and every child
            process joined.

    Returns:
        The exit status ([`ExitCode`][pipeline.cli.exitcodes.ExitCode]; 130 after Ctrl-C).

    Raises:
        SystemExit: On a usage error (argparse, status 2), for ``--help`` and ``--version`` (0).
    """
    argv = sys.argv[1:] if argv is None else argv
    parser = make_parser(command_named(argv))
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    if args.log_level != "DEBUG":
        for handler in logging.getLogger().handlers:
            handler.addFilter(one_line_exceptions)
    label = command_label(args)
    reset_writes()  # only this command's own writes decide between REFUSED and ERROR
    try:
        code = int(args.func(args))
    except KeyboardInterrupt:
        code = 130
    except Exception as exc:  # noqa: BLE001 - every failure ends in one line, never a raw traceback
        code = report_failure(label, exc)
    # not under a profiler or a tracer (coverage): they write their results at exit
    if fast_exit and args.command in ("build", "worker") and sys.getprofile() is None and sys.gettrace() is None:
        sys.stdout.flush()
        sys.stderr.flush()
        logging.shutdown()
        os._exit(code)
    return code


def one_line_exceptions(record: logging.LogRecord) -> bool:
    """Turn an exception logged with its traceback into one line (a logging filter).

    Luigi logs a failed task's exception with its traceback; the record becomes
    ``message: ExceptionType: text``.  Installed unless ``--log-level DEBUG``, which keeps the tracebacks.

    Args:
        record: The log record, changed in place.

    Returns:
        Always True: the record is kept.
    """
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        record.msg = f"{record.getMessage()}: {type(exc).__name__}: {exc} (--log-level DEBUG shows where)"
        record.args = None
        record.exc_info = None
        record.exc_text = None
    return True


def command_label(args: argparse.Namespace) -> str:
    """Return the words that named the command, for its messages.

    Args:
        args: The parsed arguments.

    Returns:
        E.g. ``build``, ``campaign review``, ``decisions apply``.
    """
    sub = [v for k, v in sorted(vars(args).items()) if k.endswith("_command") and isinstance(v, str)]
    return " ".join([str(args.command), *sub])


def report_failure(label: str, exc: BaseException) -> int:
    """Print one ``pgx-corpus COMMAND: ...`` line on stderr for an exception a command did not handle.

    The traceback goes to the log at DEBUG (``--log-level DEBUG``), not to the person.

    Args:
        label: The command's words ([`command_label`][pipeline.cli.command_label]).
        exc: The exception.

    Returns:
        ``ExitCode.REFUSED`` for input refused before the command wrote anything (a hostile name, a
            symbolic link, a YAML file over its limits or with wrong types, any error type of
            [`refusal_types`][pipeline.cli.refusal_types]), ``ExitCode.ERROR`` for the same once it has
            begun writing ([`refusal_code`][pipeline.cli.exitcodes.refusal_code]); ``ExitCode.ERROR`` for
            anything else (a full disk, an I/O error, a scheduler that died, a bug).
    """
    log.debug("%s failed", label, exc_info=exc)
    if isinstance(exc, refusal_types()):
        print(f"pgx-corpus {label}: {exc}", file=sys.stderr)
        return refusal_code()
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        print(f"pgx-corpus {label}: {exc.strerror or exc}{where}", file=sys.stderr)
        return ExitCode.ERROR
    print(f"pgx-corpus {label}: {type(exc).__name__}: {exc} (--log-level DEBUG shows where)", file=sys.stderr)
    return ExitCode.ERROR


def refusal_types() -> tuple[type[BaseException], ...]:
    """Return the error types that mean "bad input, refused".

    Every project error of bad input derives from [`InputError`][pipeline.errors.InputError]; PyYAML's
    errors are imported here, when a command failed, not at start-up.

    Returns:
        The exception classes that [`report_failure`][pipeline.cli.report_failure] reports as
            ``REFUSED``.
    """
    import yaml

    return (InputError, yaml.YAMLError)


def console_main() -> int:
    """Run the ``pgx-corpus`` console script ([`main`][pipeline.cli.main] with ``fast_exit``).

    Returns:
        The exit status.
    """
    return main(fast_exit=True)
