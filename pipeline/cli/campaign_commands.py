"""``pgx-corpus campaign ...``: the subcommand group of the annotation campaign.

The group is built by :func:`register`; :func:`add_campaign_command` returns the parser of a new
``campaign NAME`` subcommand.  Other command modules (``release_commands``) add theirs with it from
their own ``register(sub)``, which therefore runs after this module's: list them after
``pipeline.cli.campaign_commands`` in :data:`pipeline.cli.COMMAND_MODULES`.
"""

from __future__ import annotations

import argparse

_GROUP: dict[str, argparse._SubParsersAction] = {}
#: the ``campaign`` subcommands registered so far on the current parser, by name
COMMANDS: dict[str, argparse.ArgumentParser] = {}


def add_campaign_command(name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002 - argparse's name
    """The parser of a new ``pgx-corpus campaign NAME`` subcommand (set its ``func`` default)."""
    if "sub" not in _GROUP:
        raise RuntimeError("the campaign command group is created by pipeline.cli.campaign_commands.register")
    parser = _GROUP["sub"].add_parser(name, help=help, description=help)
    COMMANDS[name] = parser
    return parser


def register(sub: argparse._SubParsersAction) -> None:
    """Add the (empty) ``campaign`` group to the ``pgx-corpus`` parser; subcommands come from other modules."""
    group = sub.add_parser("campaign", help="the annotation campaign: finalize, append, ...",
                           description="Commands that run the annotation campaign of a built corpus.")
    _GROUP["sub"] = group.add_subparsers(dest="campaign_command", metavar="CAMPAIGN_COMMAND", required=True)
    COMMANDS.clear()
