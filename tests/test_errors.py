"""One base class for bad input (pipeline/errors.py) and the exit code the CLI gives it (pipeline/cli).

Every project error of bad input derives from ``InputError``; ``pgx-corpus`` reports one as 2
(``REFUSED``) when the command has written nothing, and as 1 (``ERROR``) once it has begun writing
(docs/reference/exit-codes.md).  Each subclass is raised in both places, through ``cli.main``, the
release command's own handler and the corpus commands' guard.

Covers: pipeline, pipeline.campaign.release.read, pipeline.cli, pipeline.cli.corpus_commands, pipeline.cli.exitcodes,
pipeline.cli.release_commands, pipeline.errors, pipeline.store
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from collections.abc import Callable
from pathlib import Path

import pytest

import pipeline
from pipeline import cli, durable, errors
from pipeline.campaign.release.read import ReleaseError
from pipeline.cli.exitcodes import ExitCode
from pipeline.errors import InputError


def _all_subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_all_subclasses(sub)}
    return found


def input_errors() -> list[type[InputError]]:
    """Every subclass of InputError defined in pipeline/ (every module imported first)."""
    for module in pkgutil.walk_packages(pipeline.__path__, "pipeline."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    return sorted((c for c in _all_subclasses(InputError) if c.__module__.startswith("pipeline.")),
                  key=lambda c: f"{c.__module__}.{c.__qualname__}")


ERRORS = input_errors()


def make(error: type[InputError], message: str) -> InputError:
    """An instance whose message is ``message`` (PubtatorLimitError also names the limit crossed)."""
    try:
        return error(message)
    except TypeError:
        return error(message, "max_lines")  # type: ignore[call-arg]


def test_the_domain_errors_of_bad_input_share_one_base() -> None:
    names = {c.__name__ for c in ERRORS}
    # the errors cli.refusal_types() listed one by one before, and the ones the command guards named
    assert {"NameError_", "SymlinkError", "RosterError", "ManifestError", "CampaignError", "SchemaError",
            "ReleaseError", "DecisionsError", "FinalizeError", "PatternError", "ExportConfigError",
            "DecisionError", "BratTextError"} <= names
    assert len(ERRORS) >= 25
    assert all(issubclass(c, ValueError) for c in ERRORS)  # `except ValueError` still catches them


def _probe_parser(action: Callable[[argparse.Namespace], int]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pgx-corpus")
    parser.add_argument("--log-level", default="WARNING")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("probe").set_defaults(func=action)
    return parser


def _raiser(exc: BaseException, out: Path, write_first: bool) -> Callable[[argparse.Namespace], int]:
    def run(_args: argparse.Namespace) -> int:
        if write_first:
            durable.replace_file(out / "part.txt", b"written before the error\n")
        raise exc

    return run


@pytest.mark.parametrize("error", ERRORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(("write_first", "expected"), [(False, ExitCode.REFUSED), (True, ExitCode.ERROR)],
                         ids=["pre-flight", "after-a-write"])
def test_main_refuses_before_writing_and_fails_after(error: type[InputError], write_first: bool,
                                                     expected: ExitCode, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    exc = make(error, "probe.txt:3: bad input")
    monkeypatch.setattr(cli, "make_parser", lambda command=None: _probe_parser(_raiser(exc, tmp_path, write_first)))
    assert cli.main(["probe"]) == expected
    assert capsys.readouterr().err.strip() == "pgx-corpus probe: probe.txt:3: bad input"
    assert (tmp_path / "part.txt").exists() == write_first


def test_an_earlier_commands_writes_do_not_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    errors.began_writing()  # e.g. a previous command in this process
    monkeypatch.setattr(cli, "make_parser",
                        lambda command=None: _probe_parser(_raiser(ReleaseError("x"), tmp_path, False)))
    assert cli.main(["probe"]) == ExitCode.REFUSED


@pytest.mark.parametrize(("write_first", "expected"), [(False, ExitCode.REFUSED), (True, ExitCode.ERROR)],
                         ids=["pre-flight", "after-a-write"])
def test_release_reports_its_refusal_by_what_it_wrote(write_first: bool, expected: ExitCode, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import release_commands

    def release(*_args: object) -> dict[str, object]:
        if write_first:
            durable.staging_directory(tmp_path / "out")
        raise ReleaseError("FINAL/1_1.ann:2: a problem")

    monkeypatch.setattr(release_commands, "release", release)
    (tmp_path / "final").mkdir()
    assert cli.main(["release", str(tmp_path / "final"), "--out", str(tmp_path / "out")]) == expected


@pytest.mark.parametrize("error", ERRORS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(("write_first", "expected"), [(False, ExitCode.REFUSED), (True, ExitCode.ERROR)],
                         ids=["pre-flight", "after-a-write"])
def test_the_command_guards_follow_the_same_rule(error: type[InputError], write_first: bool, expected: ExitCode,
                                                 tmp_path: Path) -> None:
    """The guards of the corpus and release commands, which catch some of these errors themselves."""
    from pipeline.cli import corpus_commands, release_commands

    errors.reset_writes()
    guarded = [corpus_commands._guard(_raiser(make(error, "bad"), tmp_path, write_first)),
               release_commands._guard("find", _raiser(make(error, "bad"), tmp_path, write_first))]
    for run in guarded:
        try:
            code = run(argparse.Namespace(command="stats"))
        except InputError as exc:  # not among the guard's own types: main reports it
            code = cli.report_failure("stats", exc)
        assert code == expected
