"""The command-line reference page, generated from the argparse parser so that it cannot drift.

``python -m pipeline.cli.reference > docs/reference/cli.md`` writes it; ``tests/test_docs.py`` fails
when the committed page and the parser differ.  Input: the parser of
[`make_parser`][pipeline.cli.make_parser]; output: Markdown, one section per command (nested for
``campaign ...``), with its usage and a table of its arguments (flags, help with defaults expanded,
choices).
"""

from __future__ import annotations

import argparse
import sys

from pipeline import resources

WIDTH = 100
"""The width usage lines and help texts are formatted to (argparse would follow the terminal)."""
# Shipped configuration files are shown as config/...: the page must not depend on where the project is
# cloned or installed.
CONFIG_PARENT = str(resources.CONFIG_DIR.parent) + "/"
"""The directory holding ``config/``, with a trailing slash, removed from the defaults shown."""


def _formatter(parser: argparse.ArgumentParser) -> argparse.HelpFormatter:
    # A fixed width: argparse otherwise wraps to the terminal, and the page must not depend on it.
    return argparse.HelpFormatter(prog=parser.prog, width=WIDTH, max_help_position=40)


def _usage(parser: argparse.ArgumentParser) -> str:
    formatter = _formatter(parser)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups)
    return formatter.format_help().strip()


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return _cell(_formatter(parser)._expand_help(action).replace(CONFIG_PARENT, ""))


def _names(action: argparse.Action) -> str:
    if action.option_strings:
        names = ", ".join(f"`{flag}`" for flag in action.option_strings)
        if action.nargs != 0:
            metavar = action.metavar or action.dest.upper()
            names += f" `{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"
        return names
    metavar = action.metavar or action.dest
    return f"`{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"


def _section(parser: argparse.ArgumentParser, depth: int, summary: str, out: list[str]) -> None:
    out.append(f"{'#' * min(depth, 6)} `{parser.prog}`")
    out.append("")
    text = parser.description or summary
    if text:
        out.extend([" ".join(text.split()), ""])
    out.extend(["```text", _usage(parser), "```", ""])
    rows = []
    children: list[tuple[str, argparse.ArgumentParser, str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, child in action.choices.items():
                children.append((name, child, helps.get(name, "")))
            continue
        if action.help == argparse.SUPPRESS:
            continue
        choices = ", ".join(f"`{c}`" for c in action.choices) if action.choices else ""
        rows.append(f"| {_names(action)} | {_help(parser, action)} | {choices} |")
    if rows:
        out.extend(["| argument | meaning | choices |", "| --- | --- | --- |", *rows, ""])
    if parser.epilog:
        out.extend(["```text", parser.epilog.strip("\n"), "```", ""])
    if children:
        out.extend([f"Commands: {', '.join(f'`{name}`' for name, _, _ in children)}.", ""])
    for _name, child, child_help in children:
        _section(child, depth + 1, child_help, out)


def cli_reference(parser: argparse.ArgumentParser) -> str:
    """Render the Markdown reference of every command and option of a parser.

    Args:
        parser: The ``pgx-corpus`` parser ([`make_parser`][pipeline.cli.make_parser]).

    Returns:
        The page: one section per command (nested for subcommand groups) with its usage and a table of
            its arguments; the same bytes wherever the project is cloned and whatever the terminal.
    """
    out = [
        "# Command-line reference",
        "",
        "Every command and option of `pgx-corpus`, generated from its parser by",
        "`python -m pipeline.cli.reference`; a test fails when this page and the parser differ.",
        "Exit codes are the same for every command: see [exit codes](exit-codes.md).",
        "",
    ]
    _section(parser, 2, "", out)
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> int:
    """Print the reference page of ``pgx-corpus`` on stdout (``python -m pipeline.cli.reference``).

    Returns:
        0.
    """
    from pipeline.cli import make_parser

    sys.stdout.write(cli_reference(make_parser()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
