"""The exit-code table (pipeline/cli/exitcodes.py) for every subcommand: each is documented in
COMMAND_CODES and the help epilog, usage errors are 2, and failures a command does not handle itself
(a full disk, a dead scheduler, bad YAML types, hostile names) end in one ``pgx-corpus COMMAND:`` line.

Covers: pipeline.campaign.batches, pipeline.campaign.status, pipeline.cli, pipeline.cli.brat_commands,
pipeline.cli.build_commands, pipeline.cli.campaign_commands, pipeline.cli.exitcodes, pipeline.cli.release_commands
"""

from __future__ import annotations

import argparse
import errno
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.cli.exitcodes import COMMAND_CODES, EPILOG, ExitCode
from tests.cli.scheduler_client import no_retry_wait


def subcommands(parser: argparse.ArgumentParser, prefix: str = "") -> Iterator[str]:
    """Every leaf command of the parser (``build``, ``campaign review``, ``decisions apply``, ...)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                inner = list(subcommands(sub, f"{prefix}{name} "))
                yield from inner or [f"{prefix}{name}"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_every_subcommand_has_its_codes_documented() -> None:
    commands = set(subcommands(cli.make_parser()))
    assert commands == set(COMMAND_CODES), "document the exit codes of a new command in exitcodes.COMMAND_CODES"
    for command, codes in COMMAND_CODES.items():
        assert ExitCode.OK in codes and all(text for text in codes.values()), command
        assert f"  {command}: " in EPILOG


def test_the_table_is_in_the_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out and "3  WORK_LEFT" in out and "campaign finalize: 0 " in out


@pytest.mark.parametrize("command", sorted(COMMAND_CODES))
def test_usage_errors_exit_2(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main([*command.split(), "--no-such-option"])
    assert exit_.value.code == ExitCode.REFUSED
    assert "usage: pgx-corpus" in capsys.readouterr().err


def _one_failure_line(err: str, command: str) -> None:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.startswith(f"pgx-corpus {command}:")]
    assert len(lines) == 1, err


def test_a_full_disk_is_one_line_and_exit_1(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """ENOSPC injected where batches writes the campaign (a full tmpfs needs privileges CI lacks)."""
    from pipeline.campaign import batches
    from tests.campaign.test_campaign import make_collection, write_roster

    coll = make_collection(tmp_path / "coll")
    roster = write_roster(tmp_path / "roster.csv", ["alice,annotator,yes", "bob,annotator,yes", "dave,senior,no"])

    def full(*_args: object, **_kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "campaign" / "phase1"))

    monkeypatch.setattr(batches, "write_phase1", full)
    code = cli.main(["batches", "--collection", str(coll), "--roster", str(roster), "--out", str(tmp_path / "c")])
    assert code == ExitCode.ERROR
    err = capsys.readouterr().err
    _one_failure_line(err, "batches")
    assert "pgx-corpus batches: No space left on device: " in err


def test_a_dead_scheduler_is_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with no_retry_wait():
        code = cli.main(["build", "--out", str(tmp_path / "out"), "--pubmed-xml", str(tmp_path),
                         "--scheduler-host", "127.0.0.1", "--scheduler-port", str(free_port())])
    assert code == ExitCode.ERROR
    err = capsys.readouterr().err
    _one_failure_line(err, "build")
    assert "cannot reach the Luigi scheduler" in err


def test_bad_yaml_types_are_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "brat").mkdir()
    decisions = tmp_path / "d.yaml"
    decisions.write_text("retype:\n  - {term: [a, b], to: Chemical}\n", encoding="utf-8")
    assert cli.main(["decisions", "apply", str(tmp_path / "brat"), str(decisions)]) == ExitCode.REFUSED
    err = capsys.readouterr().err
    _one_failure_line(err, "decisions apply")
    assert "term must be a string, got list" in err


def test_an_unhandled_error_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from pipeline.campaign import status

    def broken(_path: object) -> None:
        raise KeyError("documents")

    monkeypatch.setattr(status, "campaign_status", broken)
    assert cli.main(["campaign", "status", str(tmp_path)]) == ExitCode.ERROR
    err = capsys.readouterr().err
    _one_failure_line(err, "campaign status")
    assert "KeyError" in err and "--log-level DEBUG" in err


def test_a_hostile_manifest_is_refused_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.campaign.test_campaign import make_collection, write_roster

    coll = make_collection(tmp_path / "coll")
    roster = write_roster(tmp_path / "roster.csv", ["alice,annotator,yes", "bob,annotator,yes", "dave,senior,no"])
    previous = tmp_path / "previous.csv"
    previous.write_text("document,phase,annotator\n../../etc/x,1,alice\n", encoding="utf-8")
    code = cli.main(["batches", "--collection", str(coll), "--roster", str(roster), "--out", str(tmp_path / "c"),
                     "--previous", str(previous)])
    assert code == ExitCode.REFUSED
    err = capsys.readouterr().err
    _one_failure_line(err, "batches")
    assert f"{previous}:2: document name '../../etc/x' refused" in err
    assert not (tmp_path / "c").exists()


def test_a_failed_task_is_logged_in_one_line_without_traceback(tmp_path: Path) -> None:
    """Luigi logs a failed task with its traceback; pgx-corpus keeps it for --log-level DEBUG."""
    import subprocess
    import sys

    source = tmp_path / "in.pubtator"
    source.write_text("1|t|T\n1|a|Warfarin.\n\n../x|t|T\n../x|a|A\n\n", encoding="utf-8")
    project = Path(__file__).resolve().parents[2]
    cmd = [sys.executable, "-m", "pipeline", "build", "--out", str(tmp_path / "out"), "--pubtator", str(source)]
    proc = subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(project), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == ExitCode.ERROR
    assert "Traceback" not in proc.stderr
    assert f"{source}:4: document id (PMID) '../x' refused" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1].startswith("pgx-corpus build: build failed")
    debug = subprocess.run([*cmd[:3], "--log-level", "DEBUG", *cmd[3:]], cwd=project, capture_output=True,
                           text=True, timeout=300, env={"PYTHONPATH": str(project), "PATH": "/usr/bin:/bin"})
    assert "Traceback" in debug.stderr


def test_the_documented_table_is_the_generated_one() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "exit-codes.md").read_text(encoding="utf-8")
    assert EPILOG in page, ("paste `python -c 'from pipeline.cli.exitcodes import EPILOG; print(EPILOG)'` into "
                            "docs/reference/exit-codes.md")
