"""The documentation site: the CLI reference equals the parser, and `mkdocs build --strict` passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pipeline import cli
from pipeline.cli.exitcodes import ExitCode
from pipeline.cli.reference import cli_reference

PROJECT = Path(__file__).resolve().parents[1]
CLI_PAGE = PROJECT / "docs" / "reference" / "cli.md"


def test_cli_reference_equals_the_parser() -> None:
    """A renamed or added option changes the generated page: regenerate it with
    `python -m pipeline.cli.reference > docs/reference/cli.md`."""
    assert CLI_PAGE.read_text(encoding="utf-8") == cli_reference(cli.make_parser())


def test_every_option_is_on_the_reference_page() -> None:
    page = CLI_PAGE.read_text(encoding="utf-8")
    stack = [cli.make_parser()]
    missing = []
    while stack:
        parser = stack.pop()
        for action in parser._actions:
            if hasattr(action, "choices") and isinstance(action.choices, dict):
                stack.extend(action.choices.values())
            missing.extend(f"{parser.prog} {flag}" for flag in action.option_strings
                           if flag.startswith("--") and f"`{flag}`" not in page and flag != "--help")
    assert missing == []


def test_exit_code_page_lists_the_table() -> None:
    page = (PROJECT / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    for code in ExitCode:
        assert f"| {code.value} | `{code.name}` |" in page


def test_site_builds_strict(tmp_path: Path) -> None:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
                          cwd=PROJECT, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
