"""``pgx-corpus validate`` and ``pgx-corpus batches``: thin wrappers over validate and batches.

The work is done by [`pipeline.brat.validate`][pipeline.brat.validate] and
[`pipeline.campaign.batches`][pipeline.campaign.batches].
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from pipeline.brat import validate
from pipeline.campaign import batches, users
from pipeline.campaign.layout import CampaignError
from pipeline.schema import DEFAULT_SCHEMA, SchemaError, load_schema

log = logging.getLogger(__name__)


def _validate(args: argparse.Namespace) -> int:
    try:
        problems = validate.validate_collection(Path(args.brat_dir), Path(args.conf) if args.conf else None)
    except FileNotFoundError as exc:
        print(f"pgx-corpus validate: {exc}", file=sys.stderr)
        return 2
    for problem in problems:
        print(problem)
    if args.strict:
        try:
            warnings = _strict_warnings(args)
        except SchemaError as exc:
            print(f"pgx-corpus validate: {exc}", file=sys.stderr)
            return 2
        for warning in warnings:
            print(warning)
        print(f"{len(warnings)} strict-constraint warning(s) in {args.brat_dir}", file=sys.stderr)
    if problems:
        print(f"{len(problems)} problem(s) in {args.brat_dir}", file=sys.stderr)
        return 1
    return 0


def _strict_warnings(args: argparse.Namespace) -> list[validate.Problem]:
    """``validate --strict``: relations the schema's strict_relation_arguments reject (warnings only)."""
    schema = load_schema(args.schema or DEFAULT_SCHEMA)
    return validate.strict_relation_warnings(Path(args.brat_dir), schema)


def _batches(args: argparse.Namespace) -> int:
    counts: Counter[str] = Counter()
    if args.page_size is not None and args.page_size < 1:
        print("pgx-corpus batches: --page-size must be >= 1", file=sys.stderr)
        return 2
    out = Path(args.out)
    try:
        users.list_people(out)  # an unreadable users file refuses the command before anything is written
        roles = batches.prepare_batches(
            Path(args.collection), Path(args.roster), out,
            seed=args.seed, previous_manifest=Path(args.previous) if args.previous else None,
            counts=counts, page_size=args.page_size,
        )
        passwords = users.create_users(out, roles)
    except (batches.RosterError, batches.ManifestError, FileNotFoundError, CampaignError, ValueError) as exc:
        print(f"pgx-corpus batches: {exc}", file=sys.stderr)
        return 2
    print(
        f"{counts['documents']} documents ({counts['documents_new']} new), "
        f"{counts['assignments:phase1']} phase-1 and {counts['assignments:phase2']} phase-2 assignments "
        f"-> {out / 'manifest.csv'}; {counts['collections:phase1']} phase-1 collections; {len(roles)} people "
        f"({len(passwords)} new) in {users.users_path(out)}; set-up in {out / 'DEPLOY.md'}"
    )
    print_passwords(passwords, out)
    return 0


def print_passwords(passwords: Mapping[str, str], campaign_dir: Path) -> None:
    """Show new passwords once, on stdout, to the manager who ran the command.

    Nothing is printed when there is none; the passwords are never logged.

    Args:
        passwords: Person id -> new clear password.
        campaign_dir: The campaign directory (for the ``campaign users ... reset`` hint).
    """
    if not passwords:
        return
    print(f"new passwords, shown this once (give each person theirs privately; `pgx-corpus campaign users "
          f"{campaign_dir} reset PERSON` makes a new one):")
    for person, password in sorted(passwords.items()):
        print(f"  {person}\t{password}")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``validate`` and ``batches`` subcommands to the ``pgx-corpus`` parser.

    ``validate`` exits 0 with no problem, 1 with problems (``file:line`` on stdout; ``--strict`` warnings
    do not change it), 2 for a missing directory, ``annotation.conf`` or schema.  ``batches`` exits 0
    with the campaign written (new passwords shown once), 2 for a bad roster, manifest, collection or
    users file, or a started campaign, before anything is written.

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = sub.add_parser(
        "validate",
        help="check a brat collection as brat does when loading it",
        description="Check every NAME.txt/NAME.ann under BRAT_DIR against its annotation.conf (the nearest "
        "one walking up from each document, or --conf): offsets and texts, ids, types, references, relation "
        "argument types, overlaps, attributes. Prints file:line: message per problem; exit 1 if any.",
    )
    p.add_argument("brat_dir", metavar="BRAT_DIR", help="brat collection directory (searched recursively)")
    p.add_argument("--conf", metavar="FILE", help="annotation.conf to use for every document")
    p.add_argument("--strict", action="store_true",
                   help="also report relations outside the schema's strict_relation_arguments (the paper's "
                   "stricter constraints) as warnings; they do not change the exit status")
    p.add_argument("--schema", metavar="SCHEMA", help="schema for --strict (default config/schema.yaml)")
    p.set_defaults(func=_validate)

    b = sub.add_parser(
        "batches",
        help="start an annotation campaign: two blind phase-1 annotators and a phase-2 senior per document",
        description="Write the campaign directory --out: one blind brat collection per phase-1 annotator "
        "(phase1/<id>/ with the Discard/Done types and guide.md), the pre-annotation copy, "
        "campaign.json and manifest.csv (the senior of each document is chosen now; campaign review writes "
        "phase2/ later) and DEPLOY.md, and the people's users (access/users.json, scrypt hashes; each new "
        "person's password is printed once, here; people who already exist keep theirs). Same collection, "
        "roster and seed give the same batches; with --previous, earlier assignments are kept and only new "
        "documents are assigned. A campaign whose documents were edited is never rewritten.",
    )
    b.add_argument("--collection", "--sample-dir", dest="collection", required=True, metavar="BRAT_DIR",
                   help="brat collection to distribute (e.g. OUT/brat)")
    b.add_argument("--roster", required=True, metavar="FILE",
                   help="CSV/TSV with columns id, role (annotator|senior|manager) and optional phase1 (yes|no)")
    b.add_argument("--out", required=True, metavar="DIR", help="output directory")
    b.add_argument("--seed", type=int, default=13, help="seed for tie-breaking (default 13)")
    b.add_argument("--previous", metavar="MANIFEST", help="manifest.csv of an earlier run to extend")
    b.add_argument("--page-size", type=int, metavar="N",
                   help="split long documents into pages of N lines/paragraphs (e.g. 50 for patents)")
    b.set_defaults(func=_batches)
