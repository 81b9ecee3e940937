"""``pgx-corpus lexicon build`` and ``lexicon info`` on tiny synthetic wheels, and their refusals (exit 2).

Covers: pipeline.cli.lexicon_commands, pipeline.nlp.lexicon, pipeline.nlp.lexicon_build
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.nlp import lexicon as lx
from tests.nlp.test_lexicon import make_wheels


def test_build_then_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = make_wheels(tmp_path / "wheels")
    out, summary = tmp_path / "lexicon.json.gz", tmp_path / "summary.json"
    assert main(["lexicon", "build", "--wheels", str(wheels), "--out", str(out), "--summary", str(summary)]) == 0
    built = capsys.readouterr().out
    assert built.startswith(f"lexicon {out} (") and "tables: " in built
    counts = json.loads(summary.read_text(encoding="utf-8"))["counts"]
    payload = lx.read_lexicon(out)
    assert sum(len(entries) for entries in payload["tables"].values()) == sum(
        counts[f"type.{t}"] for t in lx.TYPES)

    assert main(["lexicon", "info", "--lexicon", str(out)]) == 0
    info = capsys.readouterr().out
    assert "wheels: " + ", ".join(f"{d}=={v}" for d, v in sorted(lx.WHEELS.items())) in info
    for table, entries in payload["tables"].items():
        assert f"  {table:8} {len(entries):>9,} entries" in info


def test_missing_wheels_or_lexicon_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "lexicon.json.gz"
    assert main(["lexicon", "build", "--wheels", str(tmp_path / "none"), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("pgx-corpus lexicon build: ")
    assert not out.exists()
    assert main(["lexicon", "info", "--lexicon", str(out)]) == 2
    assert "not found; build it with `pgx-corpus lexicon build`" in capsys.readouterr().err
