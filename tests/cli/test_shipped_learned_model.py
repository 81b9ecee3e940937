"""config/learned/pubtator/ is what its documented command writes, byte for byte, and build applies it.

The command is the one docs/how-to/retrain-preannotation.md gives, run from the project directory:
``train ../shared/data/pgxcorpus-dev/gold ../shared/data/pgxcorpus-more/gold --keys
../shared/data/pgxcorpus-dev/pubtator ../shared/data/pgxcorpus-more/pubtator --out config/learned/pubtator``.
The slow test runs it from a scratch directory whose ``../shared`` is the shared data (the model's meta
records the training directories as given).  It needs the shared PGxCorpus data (skipped without it)
and parses and trains on 650 sentences: minutes.

Covers: pipeline.cli.train_commands, pipeline.nlp.learned
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.nlp import learned
from pipeline.schema import DEFAULT_SCHEMA
from tests.conftest import PROJECT, shared_path

SHIPPED = PROJECT / "config" / "learned" / "pubtator"
ARGS = ["../shared/data/pgxcorpus-dev/gold", "../shared/data/pgxcorpus-more/gold", "--keys",
        "../shared/data/pgxcorpus-dev/pubtator", "../shared/data/pgxcorpus-more/pubtator"]
COMMAND = "train " + " ".join(ARGS) + " --out config/learned/pubtator"


@pytest.mark.slow
def test_the_documented_command_reproduces_the_shipped_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    data = shared_path("data")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(data)
    (tmp_path / "project").mkdir()
    monkeypatch.chdir(tmp_path / "project")
    assert cli.main(["train", *ARGS, "--out", "model"]) == 0
    for name in (learned.MODEL_FILE, learned.META_FILE):
        assert (Path("model") / name).read_bytes() == (SHIPPED / name).read_bytes(), name
    assert os.getcwd() == str(tmp_path / "project")


def test_the_shipped_model_fits_the_shipped_schema_and_pubtator_keys() -> None:
    model = learned.load_model(SHIPPED)
    assert learned.check_trained_with(model, SHIPPED, DEFAULT_SCHEMA, "pubtator-api") is None
    assert learned.resolve(learned.SHIPPED, "pubtator-api") == str(SHIPPED)
    assert learned.resolve(learned.SHIPPED, "local") == ""  # trained with PubTator's key entities only
    assert model.meta["sentences"] == 650


def test_the_docs_give_that_command() -> None:
    doc = PROJECT / "docs" / "how-to" / "retrain-preannotation.md"
    assert COMMAND in " ".join(doc.read_text(encoding="utf-8").split()), doc


def test_a_pubtator_build_applies_it_by_default_and_a_local_one_does_not(tmp_path: Path) -> None:
    from pipeline.tasks.stages import MapShard

    common = {"out": str(tmp_path / "out"), "shard": 0}
    pubtator = MapShard(**common, annotator="pubtator-file")
    assert pubtator.learned_model() == str(SHIPPED)
    assert str(SHIPPED / learned.MODEL_FILE) in pubtator.config_inputs()
    assert MapShard(**common, annotator="pubtator-file", learned="none").learned_model() == ""
    assert MapShard(**common, annotator="local").learned_model() == ""
