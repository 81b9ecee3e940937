"""``pgx-corpus campaign ...``: the subcommand group of the annotation campaign.

Other command modules add their ``campaign`` subcommands with :func:`add_campaign_command` from their own
``register`` (so they must come before this module in ``COMMAND_MODULES``); :func:`register` then builds the
``campaign`` group from that registry.
"""

from __future__ import annotations

import argparse

_REGISTRY: dict[str, tuple[str, argparse.ArgumentParser]] = {}


def add_campaign_command(name: str, help: str) -> argparse.ArgumentParser:
    """A parser for ``pgx-corpus campaign NAME``: add arguments and ``set_defaults(func=...)`` to it."""
    parser = argparse.ArgumentParser(prog=f"pgx-corpus campaign {name}", add_help=False)
    _REGISTRY[name] = (help, parser)
    return parser


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``campaign`` group with every registered subcommand to the ``pgx-corpus`` parser."""
    group = sub.add_parser("campaign", help="annotation campaign: " + ", ".join(sorted(_REGISTRY)),
                           description="Commands that run the annotation campaign of a built corpus.")
    commands = group.add_subparsers(dest="campaign_command", metavar="CAMPAIGN_COMMAND", required=True)
    for name, (help, parser) in sorted(_REGISTRY.items()):
        commands.add_parser(name, help=help, description=parser.description or help, parents=[parser])
