"""config/relation_scorer.json is what its documented command writes, byte for byte.

The command is the one docs/how-to/retrain-preannotation.md and config/relations.yaml give:
``train-relations ../shared/data/pgxcorpus-dev/gold ../shared/data/pgxcorpus-more/gold --out FILE
--target-precision 0.75``.  It needs the shared PGxCorpus data (skipped without it) and trains on 650
sentences: minutes.

Covers: pipeline.cli, pipeline.cli.relation_commands
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline import cli
from tests.conftest import PROJECT, shared_path

SHIPPED = PROJECT / "config" / "relation_scorer.json"


@pytest.mark.slow
def test_the_documented_command_reproduces_the_shipped_scorer(tmp_path: Path) -> None:
    dev = shared_path("data", "pgxcorpus-dev", "gold")
    more = shared_path("data", "pgxcorpus-more", "gold")
    out = tmp_path / "relation_scorer.json"
    assert cli.main(["train-relations", str(dev), str(more), "--out", str(out), "--target-precision", "0.75"]) == 0
    assert out.read_bytes() == SHIPPED.read_bytes()


def test_the_docs_give_that_command() -> None:
    command = ("train-relations ../shared/data/pgxcorpus-dev/gold ../shared/data/pgxcorpus-more/gold "
               "--out config/relation_scorer.json --target-precision 0.75")
    for doc in (PROJECT / "docs" / "how-to" / "retrain-preannotation.md", PROJECT / "config" / "relations.yaml"):
        # the YAML file gives it in a comment: its lines' '#' go
        assert command in " ".join(doc.read_text(encoding="utf-8").replace("#", " ").split()), doc
