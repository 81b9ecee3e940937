"""pgx-corpus import: unreadable or unknown input is refused (exit 2) and nothing is written.

Covers: pipeline.brat.intake, pipeline.cli, pipeline.cli.corpus_commands, pipeline.cli.import_commands
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.cli import main


@pytest.mark.parametrize(("name", "content", "message"), [
    ("bad.xml", "<collection><document>", "Premature end of data"),
    ("bad.json", '{"documents": [', "Expecting value"),
    ("bad.pubtator", "x|t|a\nx\tfoo\n", "bad.pubtator:2:"),
    ("bad.parquet", "not parquet", "Parquet"),
    ("notes.ann", "T1\tChemical 0 1\ta\n", "cannot tell the format"),
])
def test_import_refuses_unreadable_input(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                         content: str, message: str) -> None:
    src = tmp_path / name
    src.write_text(content)
    out = tmp_path / "out"
    assert main(["import", str(src), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pgx-corpus import: ") and message in err
    assert not out.exists() and not list(tmp_path.glob(".out*"))


def test_evaluate_refuses_unreadable_predictions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = tmp_path / "gold"
    gold.mkdir()
    (gold / "1_1.txt").write_text("a b")
    (gold / "1_1.ann").write_text("T1\tChemical 0 1\ta\n")
    bad = tmp_path / "pred.xml"
    bad.write_text("<collection>")
    assert main(["evaluate", str(gold), str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"pgx-corpus evaluate: {bad}: ")
