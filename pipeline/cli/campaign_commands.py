"""``pgx-corpus campaign status | review``: the annotation campaign after ``pgx-corpus batches``.

The ``campaign`` group is built from a module-level registry:
[`add_campaign_command`][pipeline.cli.campaign_commands.add_campaign_command] returns the parser of a new
``campaign NAME`` subcommand; other modules (e.g. ``release_commands``) add theirs with it from their own
``register(sub)``, which must run after this module's (list them after
``pipeline.cli.campaign_commands`` in [`COMMAND_MODULES`][pipeline.cli.COMMAND_MODULES]).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from pipeline.campaign import review as review_mod
from pipeline.campaign import status as status_mod
from pipeline.campaign.journal import Journal, JournalError
from pipeline.campaign.layout import REVIEW_DIR, CampaignError
from pipeline.cli.corpus_commands import _existing_dir
from pipeline.cli.exitcodes import ExitCode
from pipeline.schema import DEFAULT_SCHEMA, SchemaError, load_schema

_GROUP: dict[str, argparse._SubParsersAction] = {}
COMMANDS: dict[str, argparse.ArgumentParser] = {}
"""The ``campaign`` subcommands registered so far on the current parser, by name."""


def _campaign_group() -> argparse._SubParsersAction:
    if "sub" not in _GROUP:
        raise RuntimeError("the campaign command group is created by pipeline.cli.campaign_commands.register")
    return _GROUP["sub"]


def add_campaign_command(name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002 - argparse's name
    """Add a ``pgx-corpus campaign NAME`` subcommand.

    Args:
        name: The subcommand's name.
        help: Its one-line help, also its description.

    Returns:
        Its parser: add its arguments and set its ``func`` default (the handler).

    Raises:
        RuntimeError: If the ``campaign`` group was not created yet
            ([`register`][pipeline.cli.campaign_commands.register] runs first).
    """
    parser = _campaign_group().add_parser(name, help=help, description=help)
    COMMANDS[name] = parser
    return parser


def journal_progress(campaign_dir: Path) -> dict[str, list[tuple[float, int]]] | None:
    """Compute the documents done over time from the journal, for ``campaign status --png``.

    An unreadable journal is reported on stderr (one line) and gives None.

    Args:
        campaign_dir: The campaign directory.

    Returns:
        ``{"<person> (phase N)": [(time, documents done), ...]}`` (time in seconds since the epoch, see
            [`done_over_time`][pipeline.campaign.status.done_over_time]); None without a journal or with an
            unreadable one.
    """
    journal = Journal(campaign_dir)
    contents: dict[str, bytes] = {}
    try:
        entries = journal.entries()
        for e in entries:
            if e.sha256 not in contents:
                contents[e.sha256] = journal.content(e.sha256)
    except JournalError as exc:
        print(f"pgx-corpus campaign status: no progress over time: {exc}", file=sys.stderr)
        return None
    if not entries:
        return None
    return status_mod.done_over_time((e.time, e.document, contents[e.sha256]) for e in entries)


def run_status(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign status``: progress per person and phase, and the team.

    Prints Markdown (or one JSON object with ``--json``) on stdout and each held-back document's problem
    on stderr; ``--png`` also writes a progress chart.  Reads the campaign only (and writes the chart).

    Args:
        args: The parsed arguments (``campaign_dir``, ``json``, ``png``).

    Returns:
        ``ExitCode.OK`` reported with no document held back; ``ExitCode.WORK_LEFT`` documents held back;
            2 (``REFUSED``) not a campaign.
    """
    try:
        status = status_mod.campaign_status(args.campaign_dir)
        team = status_mod.team_status(Path(args.campaign_dir))
    except CampaignError as exc:
        print(f"pgx-corpus campaign status: {exc}", file=sys.stderr)
        return 2
    for row in status["rows"]:
        for problem in row["problems"]:
            print(f"pgx-corpus campaign status: held back: {problem}", file=sys.stderr)
    if args.png is not None:
        path = status_mod.write_png(status, args.png, journal_progress(args.campaign_dir))
        print(f"pgx-corpus campaign status: wrote {path}", file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps({**status, "team": team}, ensure_ascii=False, sort_keys=True, indent=2) + "\n")
    else:
        sys.stdout.write(status_mod.format_markdown(status) + status_mod.format_team_status(team))
    return ExitCode.WORK_LEFT if any(row["held_back"] for row in status["rows"]) else ExitCode.OK


def run_review(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign review``: build phase 2 and report agreement.

    ``--remerge`` first merges the given documents again.  Then every document both phase-1 annotators
    marked Done (and neither discarded) is merged into its senior's collection (documents already there
    are never touched), and the reports are written in ``review/``
    ([`review`][pipeline.campaign.review.review]).  A summary (or ``--json``) goes to stdout, each
    held-back document's problem to stderr.

    Args:
        args: The parsed arguments (``campaign_dir``, ``json``, ``schema``, ``remerge``).

    Returns:
        ``ExitCode.OK`` every document reviewed, discarded or in phase 2; ``ExitCode.WORK_LEFT``
            documents held back or still pending in phase 1; 2 (``REFUSED``) not a campaign, a bad schema,
            or a campaign rule would break.
    """
    counts: Counter[str] = Counter()
    if args.remerge:
        from pipeline.campaign.remerge import remerge

        try:
            done = remerge(args.campaign_dir, args.remerge)
        except CampaignError as exc:
            print(f"pgx-corpus campaign review: {exc}", file=sys.stderr)
            return 2
        print(f"{len(done)} document(s) merged again: {', '.join(done)}")
    try:
        report = review_mod.review(args.campaign_dir, load_schema(args.schema), counts)
    except (CampaignError, SchemaError) as exc:
        print(f"pgx-corpus campaign review: {exc}", file=sys.stderr)
        return 2
    for item in report["held_back"]:
        for problem in item["problems"]:
            print(f"pgx-corpus campaign review: held back: {problem}", file=sys.stderr)
    d = report["documents"]
    code = ExitCode.WORK_LEFT if d["held_back"] or d["pending"] else ExitCode.OK
    if args.json:
        sys.stdout.write(json.dumps({**report, "added": counts["added"]}, ensure_ascii=False, sort_keys=True,
                                    indent=2) + "\n")
        return code
    print(f"{d['assigned']} documents: {d['ready']} ready ({counts['added']} added to the seniors' collections "
          f"now), {d['discarded']} discarded, {d['held_back']} held back, {d['pending']} pending; reports in "
          f"{Path(args.campaign_dir) / REVIEW_DIR}")
    return code


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``campaign`` group with ``status`` and ``review`` to the ``pgx-corpus`` parser.

    Handlers: [`run_status`][pipeline.cli.campaign_commands.run_status],
    [`run_review`][pipeline.cli.campaign_commands.run_review].

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    group = sub.add_parser(
        "campaign",
        help="the annotation campaign after batches: status, review (phase 2), ...",
        description="Work on a campaign directory written by pgx-corpus batches.",
    )
    _GROUP["sub"] = group.add_subparsers(dest="campaign_command", metavar="CAMPAIGN_COMMAND", required=True)
    COMMANDS.clear()

    p = add_campaign_command(
        "status",
        "progress per person and phase: documents assigned, untouched, edited, done, discarded (by reason), "
        "held back; entities kept, deleted, added, retyped and relations added against the pre-annotation "
        "(phase 1) or the merged document (phase 2). Markdown on stdout; --json prints one JSON object.",
    )
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--png", type=Path, metavar="PATH", help="also write a progress chart (PNG) here; with a "
                   "journal (campaign serve), also the documents done per person over time")
    p.set_defaults(func=run_status)

    p = add_campaign_command(
        "review",
        "build phase 2: merge both annotators' work on every document both marked Done and neither discarded "
        "into its senior's collection (phase2/<senior>/; documents already there are never touched), list "
        "discarded, held-back and pending documents, and report pairwise agreement (Tables 8 and 9 settings) "
        "in review/.",
    )
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("--json", action="store_true", help="print the report as one JSON object on stdout")
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="schema file (default config/schema.yaml)")
    p.add_argument("--remerge", nargs="+", metavar="DOC", help="first merge these documents again (a phase-1 "
                   "correction after the merge), replacing the senior's copy; refused for one the senior started")
    p.set_defaults(func=run_review)
