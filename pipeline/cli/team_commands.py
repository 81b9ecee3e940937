"""The team and the work of a running campaign: ``pgx-corpus campaign replace | add-person | ...``.

The commands are ``campaign replace | add-person | reassign | import | calibrate | calibration |
guideline``, and the team part of ``campaign status``.  Thin handlers over
[`pipeline.campaign.team`][pipeline.campaign.team], [`pipeline.campaign.importing`][pipeline.campaign.importing],
[`pipeline.campaign.calibration`][pipeline.campaign.calibration],
[`pipeline.campaign.guidelines`][pipeline.campaign.guidelines] and
[`pipeline.campaign.assignments`][pipeline.campaign.assignments].  Exit codes
([`pipeline.cli.exitcodes`][pipeline.cli.exitcodes]): 0 done; 1 an I/O
error; 2 refused before anything was written (a campaign rule that would break, named with the
documents; an unknown person or document); 3 done, with documents held back (``import``).  New
passwords are printed once, on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from pipeline.campaign import calibration as calibration_mod
from pipeline.campaign import guidelines as guidelines_mod
from pipeline.campaign import importing as importing_mod
from pipeline.campaign import team as team_mod
from pipeline.campaign import users as users_mod
from pipeline.campaign.layout import ASSIGNMENTS_HISTORY, CAMPAIGN_MANIFEST, CampaignError
from pipeline.campaign.publish import clean_tree
from pipeline.cli.brat_commands import print_passwords
from pipeline.cli.campaign_commands import add_campaign_command
from pipeline.cli.corpus_commands import _existing_dir
from pipeline.cli.exitcodes import ExitCode
from pipeline.schema import DEFAULT_SCHEMA, SchemaError, load_schema


def _fail(command: str, message: object, code: ExitCode = ExitCode.REFUSED) -> int:
    print(f"pgx-corpus campaign {command}: {message}", file=sys.stderr)
    return int(code)


def _report(command: str, root: Path, result: team_mod.Result) -> int:
    for m in result.moves:
        how = " (started; their version archived)" if m.started else ""
        print(f"{m.document}: phase {m.phase} {m.giver} -> {m.receiver}{how}")
    for doc in result.kept_started:
        print(f"{doc}: started, left with its annotator to finish or discard")
    for person in result.revoked:
        print(f"{person}: access revoked")
    print(f"{len(result.moves)} document(s) moved; history in {root / ASSIGNMENTS_HISTORY}")
    print_passwords(result.passwords, root)
    return int(ExitCode.OK)


def _clean(campaign_dir: Path) -> None:
    """Remove what a killed team command left in the campaign, then finish a killed team change.

    The temporaries of its state files and staged directories go before writing again; a live
    writer's temporaries are kept (``pipeline.durable.clean_leftovers``); then what a killed team change left undone is
    finished (``pipeline.campaign.team.finish_pending``).
    """
    if Path(campaign_dir).is_dir():
        clean_tree(Path(campaign_dir))
        if (Path(campaign_dir) / CAMPAIGN_MANIFEST).is_file():
            team_mod.finish_pending(Path(campaign_dir))  # a killed team change that campaign.json records


def _run(command: str, args: argparse.Namespace, action: object) -> int:
    _clean(args.campaign_dir)
    try:
        result = action()  # type: ignore[operator]
    except (CampaignError, users_mod.UsersError, SchemaError, ValueError) as exc:
        return _fail(command, exc)
    except OSError as exc:
        return _fail(command, exc, ExitCode.ERROR)
    return _report(command, args.campaign_dir, result)


def run_replace(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign replace``: OLD leaves and NEW joins in their role.

    What a killed team command left is cleaned, and a killed team change finished, first.  OLD's unstarted
    documents go to NEW (a new blind collection), OLD's access is revoked and
    NEW gets a user (password shown once on stdout).

    Args:
        args: The parsed arguments (``campaign_dir``, ``old``, ``new``, ``started``).

    Returns:
        ``ExitCode.OK`` done (the moves, revocations and new passwords printed on stdout);
            ``ExitCode.REFUSED`` a campaign rule would break (named, with the documents), or started documents need
            ``--started``: nothing written; ``ExitCode.ERROR`` an I/O error.
    """
    return _run("replace", args, lambda: team_mod.replace(args.campaign_dir, args.old, args.new,
                                                          started=args.started))


def run_add_person(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign add-person``: a person joins and takes a fair share of the unstarted documents.

    What a killed team command left is cleaned, and a killed team change finished, first.  A user is created
    (password shown once on stdout).

    Args:
        args: The parsed arguments (``campaign_dir``, ``person``, ``role``).

    Returns:
        ``ExitCode.OK`` done (the moves, revocations and new passwords printed on stdout);
            ``ExitCode.REFUSED`` a campaign rule would break or the person is invalid: nothing written;
            ``ExitCode.ERROR`` an I/O error.
    """
    return _run("add-person", args, lambda: team_mod.add_person(args.campaign_dir, args.person, args.role))


def run_reassign(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign reassign``: give documents held by ``--from`` to ``--to``.

    What a killed team command left is cleaned, and a killed team change finished, first.

    Args:
        args: The parsed arguments (``campaign_dir``, ``documents``, ``to``, ``giver``, ``started``).

    Returns:
        ``ExitCode.OK`` done (the moves, revocations and new passwords printed on stdout);
            ``ExitCode.REFUSED`` a campaign rule would break, or a document has started (without ``--started
            move``): nothing written; ``ExitCode.ERROR`` an I/O error.
    """
    return _run("reassign", args, lambda: team_mod.reassign(args.campaign_dir, args.documents, args.to,
                                                            giver=args.giver, started=args.started))


def _pair(value: str) -> tuple[str, Path]:
    person, sep, directory = value.partition("=")
    if not sep or not person or not directory:
        raise argparse.ArgumentTypeError(f"expected PERSON=DIRECTORY, got {value!r}")
    return person, Path(directory)


def run_import(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign import``: bring finished brat directories in as phase-1 work.

    What a killed team command left is cleaned, and a killed team change finished, first.  Each version is
    checked and held back (``file:line`` on stderr) when it fails; a new
    campaign's people get users (passwords shown once on stdout).

    Args:
        args: The parsed arguments (``campaign_dir``, ``work``, ``reference``, ``senior``, ``seed``,
            ``schema``).

    Returns:
        ``ExitCode.OK`` imported; ``ExitCode.WORK_LEFT`` imported, documents held back;
            ``ExitCode.REFUSED`` bad directories (a symbolic link, a bad document name), campaign, schema
            or users file, nothing written (a new campaign's files removed); ``ExitCode.ERROR`` an I/O
            error (a new campaign's files removed).
    """
    counts: Counter[str] = Counter()
    _clean(args.campaign_dir)
    before = importing_mod.snapshot(args.campaign_dir)
    try:
        report = importing_mod.import_work(args.campaign_dir, args.work, load_schema(args.schema),
                                           reference=args.reference, seniors=args.senior or (), seed=args.seed,
                                           counts=counts)
        # a new campaign's people get users; so do those of a campaign whose import was killed before
        # its users file was written (the rerun finds the campaign, not its users)
        new = report["new_campaign"] or not users_mod.users_path(args.campaign_dir).is_file()
        passwords = users_mod.create_users(args.campaign_dir, {p: r for p, r in report["roles"].items()}) \
            if new else {}
    except (CampaignError, users_mod.UsersError, SchemaError) as exc:
        importing_mod.undo(args.campaign_dir, before)  # a new campaign without its users: removed
        return _fail("import", exc)
    except OSError as exc:
        importing_mod.undo(args.campaign_dir, before)
        return _fail("import", exc, ExitCode.ERROR)
    for item in report["left_out"]:
        print(f"pgx-corpus campaign import: left out {item['document']}: {item['reason']}", file=sys.stderr)
    for item in report["held_back"]:
        for problem in item["problems"]:
            print(f"pgx-corpus campaign import: held back: {problem}", file=sys.stderr)
    print(f"{len(report['imported'])} version(s) imported as finished, {len(report['held_back'])} held back, "
          f"{len(report['left_out'])} left out, into {args.campaign_dir}")
    print_passwords(passwords, args.campaign_dir)
    return int(ExitCode.WORK_LEFT if report["held_back"] else ExitCode.OK)


def run_calibrate(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign calibrate``: give a calibration round to every active annotator.

    What a killed team command left is cleaned, and a killed team change finished, first.

    Args:
        args: The parsed arguments (``campaign_dir``, ``collection``, ``documents``, ``reference``).

    Returns:
        ``ExitCode.OK`` the round given; ``ExitCode.REFUSED`` bad documents or campaign (nothing
            written); ``ExitCode.ERROR`` an I/O error.
    """
    _clean(args.campaign_dir)
    try:
        result = calibration_mod.add_round(args.campaign_dir, args.collection, args.documents,
                                           reference=args.reference)
    except CampaignError as exc:
        return _fail("calibrate", exc)
    except OSError as exc:
        return _fail("calibrate", exc, ExitCode.ERROR)
    print(f"calibration round {result['round']}: {len(result['documents'])} document(s) to "
          f"{', '.join(result['annotators'])}")
    return int(ExitCode.OK)


def run_calibration(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign calibration``: report the calibration rounds, or promote a document.

    The report (or ``--json``) goes to stdout; ``--promote`` adds a calibration document to the campaign
    with two of its annotators and a senior.

    Args:
        args: The parsed arguments (``campaign_dir``, ``round``, ``json``, ``schema``, ``promote``).

    Returns:
        ``ExitCode.OK`` reported (or promoted); ``ExitCode.REFUSED`` a bad campaign, document or schema;
            ``ExitCode.ERROR`` an I/O error.
    """
    try:
        if args.promote:
            doc, a, b, senior = args.promote
            calibration_mod.promote(args.campaign_dir, doc, [a, b], senior)
            print(f"{doc}: added to the campaign (phase 1: {a}, {b}; phase 2: {senior})")
            return int(ExitCode.OK)
        result = calibration_mod.report(args.campaign_dir, load_schema(args.schema), args.round)
    except (CampaignError, SchemaError) as exc:
        return _fail("calibration", exc)
    except OSError as exc:
        return _fail("calibration", exc, ExitCode.ERROR)
    sys.stdout.write(json.dumps(result, indent=2, sort_keys=True) + "\n" if args.json
                     else calibration_mod.format_report(result))
    return int(ExitCode.OK)


def run_guideline(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign guideline``: record a new guideline version (today) and what changed.

    What a killed team command left is cleaned, and a killed team change finished, first.  Every ``guide.md``
    shows the version.

    Args:
        args: The parsed arguments (``campaign_dir``, ``version``, ``changes``).

    Returns:
        ``ExitCode.OK`` recorded; ``ExitCode.REFUSED`` a bad campaign or guide; ``ExitCode.ERROR`` an I/O
            error.
    """
    _clean(args.campaign_dir)
    try:
        entry = guidelines_mod.record_version(args.campaign_dir, args.version, args.changes)
    except CampaignError as exc:
        return _fail("guideline", exc)
    except OSError as exc:
        return _fail("guideline", exc, ExitCode.ERROR)
    print(f"guidelines version {entry['version']} current from {entry['date']}; every guide.md says so")
    return int(ExitCode.OK)


def register(sub: argparse._SubParsersAction) -> None:
    """Add the team commands to the ``campaign`` group.

    [`pipeline.cli.campaign_commands`][pipeline.cli.campaign_commands] must have created the group first.

    Args:
        sub: The subparsers of ``pgx-corpus`` (not used: the commands go to the ``campaign`` group).
    """
    del sub
    started_help = ("what to do with documents the person has started and not finished: keep (they stay with "
                    "them to finish or discard) or move (fresh from what was handed out, their version archived "
                    "under archive/)")
    p = add_campaign_command(
        "replace", "OLD leaves and NEW joins in their role: OLD's unstarted documents go to NEW (a new blind "
        "collection), finished work stays, OLD's access is revoked and NEW gets a user (password shown once).")
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("old", metavar="OLD")
    p.add_argument("new", metavar="NEW")
    p.add_argument("--started", choices=team_mod.STARTED_CHOICES,
                   help=started_help + "; required when there are such documents")
    p.set_defaults(func=run_replace)

    p = add_campaign_command(
        "add-person", "PERSON joins as annotator or senior and takes a fair share of the unstarted documents "
        "(and of the documents appended later), or as manager (no documents; campaign serve shows them every "
        "collection read-only); a user is created (password shown once).")
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("person", metavar="PERSON")
    p.add_argument("--role", choices=("annotator", "senior", "manager"), required=True)
    p.set_defaults(func=run_add_person)

    p = add_campaign_command(
        "reassign", "give documents held by --from (in phase 1 or 2) to --to; refused, naming the rule and the "
        "documents, when a campaign rule would break or the holder has started them.")
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("documents", nargs="+", metavar="DOC")
    p.add_argument("--to", required=True, metavar="PERSON", help="who takes the documents (a person of the campaign)")
    p.add_argument("--from", dest="giver", required=True, metavar="PERSON", help="who gives them (their phase-1 or "
                   "phase-2 holder)")
    p.add_argument("--started", choices=("move",), help="move started documents too (their version archived)")
    p.set_defaults(func=run_reassign)

    p = add_campaign_command(
        "import", "bring finished brat directories in as the phase-1 work of named annotators (a new campaign "
        "when CAMPAIGN_DIR has none); each version is checked (text, parse, annotation.conf) and held back with "
        "file:line when it fails; imported versions count as finished.")
    p.add_argument("campaign_dir", type=Path, metavar="CAMPAIGN_DIR")
    p.add_argument("--work", type=_pair, action="append", required=True, metavar="PERSON=DIR",
                   help="one annotator's finished brat directory (repeat)")
    p.add_argument("--reference", type=_existing_dir, metavar="DIR",
                   help="the pre-annotation the work started from (a brat collection)")
    p.add_argument("--senior", action="append", metavar="PERSON", help="a senior of a new campaign (repeat)")
    p.add_argument("--seed", type=int, default=13, help="tie-break of the seniors' loads (default 13)")
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="schema whose brat configuration a new "
                   "campaign gets without --reference (default config/schema.yaml)")
    p.set_defaults(func=run_import)

    p = add_campaign_command(
        "calibrate", "a calibration round: DOCUMENTS of COLLECTION go to every active annotator, outside the "
        "two-annotators rule; they are not reviewed, finalized or released (see `campaign calibration`).")
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("collection", type=_existing_dir, metavar="COLLECTION")
    p.add_argument("documents", nargs="+", metavar="DOC")
    p.add_argument("--reference", type=_existing_dir, metavar="DIR", help="a reference annotation to score against")
    p.set_defaults(func=run_calibrate)

    p = add_campaign_command(
        "calibration", "agreement of the calibration rounds per person (against each other and the reference); "
        "--promote adds a calibration document to the campaign.")
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("--round", type=int, help="one round only")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA, help="schema file (default config/schema.yaml)")
    p.add_argument("--promote", nargs=4, metavar=("DOC", "ANNOTATOR1", "ANNOTATOR2", "SENIOR"),
                   help="add DOC to the campaign with two of its annotators and a senior who is neither")
    p.set_defaults(func=run_calibration)

    p = add_campaign_command(
        "guideline", "record a new guideline version (today) and what changed; every guide.md shows it, and "
        "status tells who has worked since.")
    p.add_argument("campaign_dir", type=_existing_dir, metavar="CAMPAIGN_DIR")
    p.add_argument("version", metavar="VERSION")
    p.add_argument("changes", metavar="WHAT_CHANGED")
    p.set_defaults(func=run_guideline)
