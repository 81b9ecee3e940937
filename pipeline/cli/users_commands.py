"""``pgx-corpus campaign users | history | backup``: the state ``campaign serve`` keeps beside a campaign.

Thin handlers over [`pipeline.campaign.users`][pipeline.campaign.users],
[`pipeline.serve.history`][pipeline.serve.history] and [`pipeline.serve.backup`][pipeline.serve.backup].
Exit codes ([`pipeline.cli.exitcodes`][pipeline.cli.exitcodes]): 0 done; 1 an I/O error;
2 refused before anything was written (no campaign, unknown person, document or version, an archive
inside the campaign).  A password is printed once, on stdout, by ``users reset``; nothing else prints
or logs one.
"""

from __future__ import annotations

import argparse
import datetime as dt
import getpass
import sys
from pathlib import Path

from pipeline.campaign import users as users_mod
from pipeline.campaign.journal import JournalError
from pipeline.campaign.layout import CampaignError, read_campaign
from pipeline.cli.brat_commands import print_passwords
from pipeline.cli.campaign_commands import add_campaign_command
from pipeline.cli.exitcodes import ExitCode
from pipeline.serve import backup as backup_mod
from pipeline.serve import history as history_mod


def _fail(command: str, message: object, code: ExitCode = ExitCode.REFUSED) -> int:
    print(f"pgx-corpus campaign {command}: {message}", file=sys.stderr)
    return int(code)


def run_users(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign users list | reset | revoke | logout``.

    ``list`` prints one line per person (id, roles, revoked or active); ``reset`` gives a person a new
    password, printed once on stdout (it also lifts a revocation, and ends the person's sessions);
    ``revoke`` ends a person's access; ``logout`` ends every session of a person, who keeps their
    password.  A running ``campaign serve`` refuses an ended session at its next request.  The users file
    is replaced durably under its lock.

    Args:
        args: The parsed arguments (``campaign_dir``, ``users_command``, ``person``).

    Returns:
        ``ExitCode.OK`` done; ``ExitCode.REFUSED`` not a campaign, a broken users file, or an unknown
            person (nothing written); ``ExitCode.ERROR`` an I/O error.
    """
    root: Path = args.campaign_dir
    try:
        read_campaign(root)
        if args.users_command == "list":
            people = users_mod.list_people(root)
            if not people:
                print(f"no people in {users_mod.users_path(root)}")
            for person in people:
                state = "revoked" if person.revoked else "active"
                print(f"{person.id}\t{','.join(sorted(person.roles))}\t{state}")
        elif args.users_command == "reset":
            print_passwords({args.person: users_mod.reset_password(root, args.person)}, root)
        elif args.users_command == "logout":
            users_mod.logout_everywhere(root, args.person)
            print(f"{args.person}: every session ended (a running serve refuses each at its next request; "
                  "the password stays)")
        else:
            users_mod.revoke(root, args.person)
            print(f"{args.person}: access revoked (a running serve refuses them from now on; "
                  f"`campaign users {root} reset {args.person}` gives a new password)")
    except (CampaignError, users_mod.UsersError) as exc:
        return _fail("users", exc)
    except OSError as exc:
        return _fail("users", exc, ExitCode.ERROR)
    return int(ExitCode.OK)


def _when(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def operator() -> str:
    """Name who restores a version, for the journal.

    Returns:
        The OS user running the command, else ``manager`` (no user name, or an unprintable one).
    """
    try:
        name = getpass.getuser()
    except (KeyError, OSError):
        return "manager"
    return name if name and name.isprintable() else "manager"


def run_history(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign history``: list a document's journaled versions, or restore one.

    The listing (oldest first: time in UTC, person, action, sha256 prefix, counts, Done) goes to stdout.
    ``--restore`` makes a version the current ``.ann`` under the document's lock, journaled as
    ``restore`` by the OS user ([`restore`][pipeline.serve.history.restore]).

    Args:
        args: The parsed arguments (``campaign_dir``, ``document``, ``restore``).

    Returns:
        ``ExitCode.OK`` listed (or restored); ``ExitCode.REFUSED`` not a campaign, an unknown document or
            version, an unreadable journal (nothing written); ``ExitCode.ERROR`` an I/O error.
    """
    root: Path = args.campaign_dir
    try:
        read_campaign(root)
        document = history_mod.resolve_document(root, args.document)
        if args.restore is not None:
            number, sha = history_mod.restore(root, document, args.restore, operator())
            print(f"{document}: version {number} restored ({sha[:12]}), journaled as restore by {operator()}")
            return int(ExitCode.OK)
        versions = history_mod.history(root, document)
    except (CampaignError, history_mod.HistoryError, JournalError) as exc:
        return _fail("history", exc)
    except OSError as exc:
        return _fail("history", exc, ExitCode.ERROR)
    if not versions:
        print(f"{document}: no journaled version (nothing was saved through campaign serve yet)")
        return int(ExitCode.OK)
    print(f"{document}: {len(versions)} version(s), oldest first")
    rows = [("#", "time (UTC)", "person", "action", "sha256", "entities", "relations", "done")]
    rows += [(str(v.number), _when(v.version.time), v.version.person, v.version.action, v.version.sha256[:12],
              str(v.entities), str(v.relations), "yes" if v.done else "no") for v in versions]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())
    return int(ExitCode.OK)


def run_backup(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign backup``: a consistent ``.tar.gz`` copy of a live campaign.

    See [`backup`][pipeline.serve.backup.backup]: documents read under their locks, the archive (mode
    0600) written beside ``OUT`` and renamed.  A one-line summary on stdout.

    Args:
        args: The parsed arguments (``campaign_dir``, ``out``).

    Returns:
        ``ExitCode.OK`` the archive written; ``ExitCode.REFUSED`` not a campaign, or ``OUT`` inside it
            (nothing written); ``ExitCode.ERROR`` an I/O error.
    """
    try:
        read_campaign(args.campaign_dir)
        summary = backup_mod.backup(args.campaign_dir, args.out)
    except (CampaignError, backup_mod.BackupError) as exc:
        return _fail("backup", exc)
    except OSError as exc:
        return _fail("backup", exc, ExitCode.ERROR)
    print(f"{args.out}: {summary.documents} documents, {summary.members} members, {summary.bytes} bytes")
    return int(ExitCode.OK)


RESTORE_HELP = """\
restore a backup: mkdir NEW_DIR && tar -xzpf OUT.tar.gz -C NEW_DIR (-p keeps the modes: access/
and journal/ stay private), then check it with
`pgx-corpus campaign status NEW_DIR` (and `campaign history NEW_DIR DOC` for a document), and serve
NEW_DIR in place of the lost directory."""
"""The epilog of ``campaign backup --help``: how to restore an archive."""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``campaign users``, ``campaign history`` and ``campaign backup`` to the ``pgx-corpus`` parser.

    [`pipeline.cli.campaign_commands`][pipeline.cli.campaign_commands] must have created the ``campaign``
    group first.

    Args:
        sub: The subparsers of ``pgx-corpus`` (the commands go to the ``campaign`` group).
    """
    p = add_campaign_command(
        "users",
        "the people who may log in to campaign serve: list them (roles, revoked), reset a password (the new "
        "one is shown once, here), revoke an access, or log a person out everywhere. People are created by "
        "batches from the roster.",
    )
    p.add_argument("campaign_dir", type=Path, metavar="CAMPAIGN_DIR")
    actions = p.add_subparsers(dest="users_command", metavar="ACTION", required=True)
    actions.add_parser("list", help="people, roles, revoked or active", description="people, roles, state")
    for name, what in (("reset", "a new password for PERSON, shown once (also lifts a revocation)"),
                       ("revoke", "end PERSON's access (their password is dropped)"),
                       ("logout", "end every session of PERSON (log out everywhere; the password stays)")):
        a = actions.add_parser(name, help=what, description=what)
        a.add_argument("person", metavar="PERSON")
    p.set_defaults(func=run_users)

    p = add_campaign_command(
        "history",
        "the versions of a document journaled by campaign serve (time, person, action, sha256 prefix, entity "
        "and relation counts, Done), oldest first; --restore makes one of them current again (under the "
        "document's lock, journaled as restore by the OS user).",
    )
    p.add_argument("campaign_dir", type=Path, metavar="CAMPAIGN_DIR")
    p.add_argument("document", metavar="DOC",
                   help="the document, e.g. phase1/alice/100_1 (campaign-relative, extension optional)")
    p.add_argument("--restore", metavar="VERSION",
                   help="version number from the listing, or a sha256 prefix of 4+ hex digits")
    p.set_defaults(func=run_history)

    p = add_campaign_command(
        "backup",
        "a consistent copy of a live campaign (documents read under their locks, users and journal "
        "included) as one .tar.gz, written beside OUT and renamed; OUT must be outside the campaign.",
    )
    p.epilog = RESTORE_HELP
    p.add_argument("campaign_dir", type=Path, metavar="CAMPAIGN_DIR")
    p.add_argument("out", type=Path, metavar="OUT.tar.gz", help="the archive (mode 0600: it holds the "
                   "password hashes)")
    p.set_defaults(func=run_backup)
