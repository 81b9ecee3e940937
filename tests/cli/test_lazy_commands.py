"""Running one command imports only its module: the same parser for it, no pyarrow or numpy at start-up.

Covers: pipeline.cli, pipeline.cli.import_commands
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli

PROJECT = Path(__file__).resolve().parents[2]


def helps(parser: argparse.ArgumentParser, path: str = "") -> dict[str, str]:
    """Every (sub)parser's help text under ``parser``, by its command path."""
    out = {path: parser.format_help()}
    for action in parser._actions:  # argparse has no public accessor of subparsers
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out.update(helps(child, f"{path} {name}"))
    return out


@pytest.mark.parametrize("command", sorted(cli.ONE_MODULE_COMMANDS))
def test_one_module_command_parses_and_documents_the_same(command: str) -> None:
    full = helps(cli.make_parser())
    alone = helps(cli.make_parser(command))
    sub = {path: text for path, text in full.items() if path == f" {command}" or path.startswith(f" {command} ")}
    assert sub and {path: text for path, text in alone.items() if path} == sub
    # the module registers that command and nothing else
    assert [p for p in alone if p and p.count(" ") == 1] == [f" {command}"]


@pytest.mark.parametrize(
    ("argv", "command"),
    [(["build", "--out", "x"], "build"), (["--log-level", "DEBUG", "worker"], "worker"),
     (["--log-level=ERROR", "campaign", "status"], "campaign"), (["--version"], None), ([], None)],
)
def test_command_named(argv: list[str], command: str | None) -> None:
    assert cli.command_named(argv) == command


def test_build_starts_without_pyarrow_numpy_or_luigi() -> None:
    code = ("import sys; from pipeline import cli; cli.make_parser(cli.command_named(['build', '--out', 'x'])); "
            "print(sorted(m for m in ('pyarrow', 'numpy', 'luigi', 'spacy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(PROJECT), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "[]"


def test_read_errors_still_name_pyarrow_errors() -> None:
    import pyarrow as pa

    from pipeline.cli import import_commands

    assert pa.ArrowException in import_commands.READ_ERRORS
    assert set(import_commands.READ_ERRORS) < set(import_commands.REFUSALS)
