"""The command line: subcommands, help, and how build options become task parameters.

Covers: pipeline.__main__, pipeline.cli, pipeline.cli.brat_commands, pipeline.cli.build_commands,
pipeline.cli.corpus_commands, pipeline.cli.relation_commands, pipeline.nlp.relations.rules,
pipeline.nlp.relations.training, pipeline.schema
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.cli import build_commands

PROJECT = Path(__file__).resolve().parents[2]


def parse(*argv: str) -> argparse.Namespace:
    return cli.make_parser().parse_args(list(argv))


@pytest.mark.parametrize(
    "command",
    ["build", "validate", "batches", "stats", "agreement", "evaluate", "harmonize", "export", "lexicon", "campaign"],
)
def test_every_subcommand_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main([command, "--help"])
    assert info.value.code == 0
    assert "usage: pgx-corpus" in capsys.readouterr().out


def test_python_dash_m_is_the_same_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "pipeline", "--help"], cwd=PROJECT, capture_output=True, text=True)
    assert proc.returncode == 0
    assert "build" in proc.stdout and "validate" in proc.stdout


def test_offline_sources_default_to_local_annotator(tmp_path: Path) -> None:
    params = build_commands.build_params(parse("build", "--out", str(tmp_path), "--pubmed-xml", "data/demo/pubmed"))
    assert params["annotator"] == "local"
    assert "query" not in params and "search_date" not in params
    assert params["pubmed_xml"] == (str((Path("data/demo/pubmed")).resolve()),)


def test_pubtator_files_default_to_pubtator_file_annotator(tmp_path: Path) -> None:
    params = build_commands.build_params(parse("build", "--out", str(tmp_path), "--pubtator", "x.txt"))
    assert params["annotator"] == "pubtator-file"


def test_default_query_and_date(tmp_path: Path) -> None:
    params = build_commands.build_params(parse("build", "--out", str(tmp_path)))
    assert '"Pharmacogenetics"[MeSH Terms]' in params["query"]
    assert "#" not in params["query"]
    assert params["search_date"] == dt.date.today().isoformat()
    assert params["annotator"] == "pubtator-api"


def test_options_left_out_are_not_set(tmp_path: Path) -> None:
    """So that luigi.cfg's [BuildCorpus] section applies to them."""
    params = build_commands.build_params(parse("build", "--out", str(tmp_path), "--query", "x", "--date", "2024-01-02"))
    assert set(params) == {"out", "query", "search_date", "annotator"}


def test_selection_options(tmp_path: Path) -> None:
    params = build_commands.build_params(parse(
        "build", "--out", str(tmp_path), "--pubmed-xml", "d", "--sample", "all", "--seed", "7",
        "--per-abstract", "2", "--filter", "none", "--no-extend", "--until", "filtered", "--no-fallback-local",
    ))
    assert params["sample"] == "all" and params["seed"] == 7 and params["per_abstract"] == 2
    assert params["filter"] == "none" and params["extend"] is False and params["until"] == "filtered"
    assert params["fallback_local"] is False


@pytest.mark.parametrize("bad", ["0", "-3", "some"])
def test_bad_sample_size_rejected(bad: str, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        parse("build", "--out", str(tmp_path), "--sample", bad)


def test_query_file_comments_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qf = tmp_path / "q.txt"
    qf.write_text("# comment\n warfarin[MeSH Terms]\nAND humans[MeSH Terms]\n")
    assert build_commands.read_query_file(qf) == "warfarin[MeSH Terms] AND humans[MeSH Terms]"
    qf.write_text("# only comments\n")
    with pytest.raises(SystemExit) as exit_:
        build_commands.read_query_file(qf)
    assert exit_.value.code == 2 and "pgx-corpus build: query file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        build_commands.read_query_file(tmp_path / "missing.txt")
    assert exit_.value.code == 2 and "pgx-corpus build: cannot read query file" in capsys.readouterr().err


def test_bad_roster_fails_before_any_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    roster = tmp_path / "roster.tsv"
    roster.write_text("id\trole\nann1\tannotator\nann2\tannotator\n")
    out = tmp_path / "out"
    code = cli.main(["build", "--out", str(out), "--pubmed-xml", str(PROJECT / "data" / "demo" / "pubmed"),
                     "--roster", str(roster)])
    assert code == 2
    assert "at least three are needed" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(("option", "content", "expected"), [
    ("--ontology", "classes:\n  Foo: [\n", ":3: invalid YAML"),
    ("--ontology", "nonsense: 1\n", ":1: unknown section 'nonsense'"),
    ("--ontology", None, "cannot read"),
    ("--schema", "nonsense: 1\n", "unknown section"),
    ("--triggers", "trigger_phrases: [\n", ":2: invalid YAML"),
    ("--relation-rules", "nonsense: 1\n", ":1: unknown section 'nonsense'"),
    ("--learned", None, "not a learned model directory"),
])
def test_every_configuration_file_is_read_before_any_stage(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str, content: str | None, expected: str
) -> None:
    """A broken configuration file is refused (exit 2) with its file (and line) named, before any stage
    writes: the ontology was found only by the extension stage, after three stages were written."""
    path = tmp_path / "config.yaml"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    out = tmp_path / "out"
    # the relation rules are read only with build-time relations on (off by default)
    on = ["--relations"] if option == "--relation-rules" else []
    code = cli.main(["build", "--out", str(out), "--pubmed-xml", str(PROJECT / "data" / "demo" / "pubmed"),
                     *on, option, str(path)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"pgx-corpus build: {path}" in err and expected in err
    assert not out.exists()


def test_relation_rules_without_relations_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Build-time relations are off by default: rules given without --relations would never be read."""
    out = tmp_path / "out"
    code = cli.main(["build", "--out", str(out), "--pubmed-xml", str(PROJECT / "data" / "demo" / "pubmed"),
                     "--relation-rules", str(PROJECT / "config" / "relations.yaml")])
    assert code == 2
    assert "--relation-rules is read only with --relations" in capsys.readouterr().err
    assert not out.exists()


def test_build_relations_option_sets_the_parameter(tmp_path: Path) -> None:
    from pipeline.cli.build_commands import build_params

    parser = cli.make_parser()
    base = ["build", "--out", str(tmp_path / "out"), "--pubmed-xml", str(PROJECT / "data" / "demo" / "pubmed")]
    assert "relations" not in build_params(parser.parse_args(base))  # luigi.cfg, else off
    assert build_params(parser.parse_args([*base, "--relations"]))["relations"] is True
    assert build_params(parser.parse_args([*base, "--no-relations"]))["relations"] is False


def test_console_build_exits_fast_with_its_status_and_output(tmp_path: Path) -> None:
    """``python -m pipeline build`` ends with os._exit: the status and everything printed still arrive."""
    roster = tmp_path / "roster.tsv"
    roster.write_text("id\trole\nann1\tannotator\nann2\tannotator\n")
    proc = subprocess.run([sys.executable, "-m", "pipeline", "build", "--out", str(tmp_path / "out"),
                           "--pubmed-xml", str(PROJECT / "data" / "demo" / "pubmed"), "--roster", str(roster)],
                          cwd=PROJECT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert "at least three are needed" in proc.stderr


@pytest.mark.slow  # trains the relation scorer four times (test_hostile_train refuses its bad input fast)
def test_train_relations_writes_a_scorer_the_rules_can_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    from pipeline.nlp.relations import rules as relations
    from pipeline.nlp.relations.training import TYPE_HIERARCHY_COST
    from pipeline.schema import load_schema

    collection = PROJECT / "tests" / "fixtures" / "brat" / "release_relations"
    out = tmp_path / "scorer.json"
    assert cli.main(["train-relations", str(collection), "--out", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["sentences"] == 7 and summary["training_relations"] > 0
    assert summary["type_thresholds"] == json.loads(out.read_text(encoding="utf-8"))["type_thresholds"]
    assert summary["threshold"] == 0.0  # the actions decision: the least expected net actions saved
    first = out.read_bytes()
    assert cli.main(["train-relations", str(collection), "--out", str(out)]) == 0
    assert out.read_bytes() == first  # same data and seed, same bytes
    rules = tmp_path / "relations.yaml"
    rules.write_text("version: 1\nscorer: scorer.json\n", encoding="utf-8")
    assert relations.load_rules(rules, load_schema()).scorer is not None
    assert cli.main(["train-relations", str(tmp_path / "missing"), "--out", str(out)]) == 2
    # the decision: expected actions saved unless told; the thresholds decision records its hierarchy budget
    # (the library's default unless given: a share, or refused)
    assert summary["decision"] == json.loads(first)["decision"] == relations.DEFAULT_DECISION == "actions"
    # the parser's choices mirror the library's, without importing it
    from pipeline.cli.relation_commands import DECISION_CHOICES

    assert set(DECISION_CHOICES) == set(relations.DECISIONS) and DECISION_CHOICES[0] == relations.DEFAULT_DECISION
    assert "type_hierarchy_budget" not in json.loads(first)["meta"]
    thresholds = tmp_path / "thresholds.json"
    assert cli.main(["train-relations", str(collection), "--out", str(thresholds), "--decision", "thresholds"]) == 0
    data = json.loads(thresholds.read_text(encoding="utf-8"))
    assert data["decision"] == "thresholds" and data["meta"]["type_hierarchy_budget"] == TYPE_HIERARCHY_COST
    strict = tmp_path / "strict.json"
    assert cli.main(["train-relations", str(collection), "--out", str(strict), "--decision", "thresholds",
                     "--type-hierarchy-budget", "0"]) == 0
    assert json.loads(strict.read_text(encoding="utf-8"))["meta"]["type_hierarchy_budget"] == 0.0
    capsys.readouterr()
    for bad in ("1", "-0.1", "many"):
        refused = tmp_path / f"refused-{bad}.json"
        with pytest.raises(SystemExit) as exit_info:
            cli.main(["train-relations", str(collection), "--out", str(refused), "--type-hierarchy-budget", bad])
        assert exit_info.value.code == 2 and not refused.exists()
        assert "--type-hierarchy-budget" in capsys.readouterr().err
