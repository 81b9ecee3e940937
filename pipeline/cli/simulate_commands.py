"""``pgx-corpus campaign simulate``: the campaign simulator.

The work is done by [`pipeline.campaign.simulate`][pipeline.campaign.simulate].  Exit codes
([`pipeline.cli.exitcodes`][pipeline.cli.exitcodes]): 0 done; 1 an I/O error; 2 refused before anything
was written (no campaign, a reference document missing or with another text, no senior collection for
phase 2, a phase 1 without ``--reference``).  The summary goes to stdout (``--json``: one JSON object).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pipeline.campaign import simulate as simulate_mod
from pipeline.campaign.layout import CampaignError
from pipeline.cli.campaign_commands import add_campaign_command
from pipeline.cli.exitcodes import ExitCode


def _fail(message: object, code: ExitCode = ExitCode.REFUSED) -> int:
    print(f"pgx-corpus campaign simulate: {message}", file=sys.stderr)
    return int(code)


def format_summary(report: simulate_mod.SimulationReport) -> str:
    """Format the Markdown summary of a simulation run.

    Args:
        report: The run's report.

    Returns:
        A heading naming the phase and a table of the counts by kind, sorted by name.
    """
    lines = [f"# Simulated phase {report.phase}", "", "| what | count |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in sorted(report.counts.items())]
    return "\n".join(lines) + "\n"


def run_simulate(args: argparse.Namespace) -> int:
    """Run ``pgx-corpus campaign simulate``: annotate phase 1 or sign off phase 2 as people would.

    Each document is written under its lock
    ([`simulate_phase1`][pipeline.campaign.simulate.simulate_phase1],
    [`simulate_phase2`][pipeline.campaign.simulate.simulate_phase2]); the summary (or ``--json``) goes
    to stdout.

    Args:
        args: The parsed arguments (``campaign_dir``, ``phase``, ``reference``, ``seed``, ``json``).

    Returns:
        ``ExitCode.OK`` documents annotated or signed off; ``ExitCode.REFUSED`` no campaign, a bad
            reference, no senior collection for phase 2, or phase 1 without ``--reference`` (nothing
            written); ``ExitCode.ERROR`` an I/O error.
    """
    try:
        if args.phase == 1:
            if args.reference is None:
                return _fail("--phase 1 needs --reference DIR (e.g. CAMPAIGN_DIR/preannotation or a gold collection)")
            report = simulate_mod.simulate_phase1(args.campaign_dir, args.reference, args.seed)
        else:
            report = simulate_mod.simulate_phase2(args.campaign_dir, args.seed)
    except CampaignError as exc:
        return _fail(exc)
    except OSError as exc:
        return _fail(exc, ExitCode.ERROR)
    if args.json:
        print(json.dumps(report.as_json(), indent=2, sort_keys=True))
    else:
        print(format_summary(report), end="")
    return int(ExitCode.OK)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``campaign simulate`` to the ``pgx-corpus`` parser.

    [`pipeline.cli.campaign_commands`][pipeline.cli.campaign_commands] must have created the ``campaign``
    group first.  Handler: [`run_simulate`][pipeline.cli.simulate_commands.run_simulate].

    Args:
        sub: The subparsers of ``pgx-corpus``.
    """
    p = add_campaign_command(
        "simulate",
        "annotate a campaign as people would, for a demonstration or a test: --phase 1 gives every untouched "
        "phase-1 document its annotator's version of the --reference document with seeded disagreements "
        "(dropped entity, boundary shift, retyped entity, missing relation, Negated flipped in the relation "
        "note, an occasional Discard) and marks it Done; --phase 2 resolves every Disagreement mark of the "
        "seniors' collections (accepted or deleted, seeded) and signs each document off with Done. Each "
        "document is written under its lock; the same campaign, reference and seed give the same files.",
    )
    p.add_argument("campaign_dir", type=Path, metavar="CAMPAIGN_DIR")
    p.add_argument("--phase", type=int, choices=(1, 2), required=True, help="1: annotators; 2: seniors")
    p.add_argument("--reference", type=Path, metavar="DIR",
                   help="phase 1: brat collection the annotators start from (same document names and texts), "
                   "e.g. CAMPAIGN_DIR/preannotation or a gold collection")
    p.add_argument("--seed", type=int, default=13, help="seed of the simulated decisions (default 13)")
    p.add_argument("--json", action="store_true", help="print the report (counts and edits per document) as JSON")
    p.set_defaults(func=run_simulate)
