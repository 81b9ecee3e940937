"""`pgx-corpus train` and `build --learned` (the model directory's content is part of the output hash).

Covers: pipeline.cli, pipeline.cli.build_commands, pipeline.cli.train_commands, pipeline.cli.training_input,
pipeline.documents, pipeline.nlp.learned, pipeline.store, pipeline.tasks.stages
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline import cli, store
from pipeline.cli import build_commands
from pipeline.tasks.stages import ExtendShard, FilterShard, MapShard
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def small_dev(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """20 gold sentences of the dev subset and their PubTator key entities (copies under tmp)."""
    dev = shared_path("data", "pgxcorpus-dev")
    root = tmp_path_factory.mktemp("dev")
    gold, keys = root / "gold", root / "pubtator"
    gold.mkdir()
    keys.mkdir()
    for txt in sorted((dev / "gold").glob("*.txt"))[:20]:
        shutil.copy(txt, gold / txt.name)
        shutil.copy(txt.with_suffix(".ann"), gold / f"{txt.stem}.ann")
        shutil.copy(dev / "pubtator" / f"{txt.stem}.ann", keys / f"{txt.stem}.ann")
    return gold, keys


def test_train_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["train", "--help"])
    assert info.value.code == 0
    assert "MODEL_DIR" in capsys.readouterr().out


def test_train_writes_a_versioned_deterministic_model(small_dev: tuple[Path, Path], tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    gold, keys = small_dev
    for name in ("a", "b"):
        assert cli.main(["train", str(gold), "--keys", str(keys), "--out", str(tmp_path / name),
                         "--c", "1", "--seed", "7"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["sentences"] == 20
    meta = json.loads((tmp_path / "a" / "meta.json").read_text(encoding="utf-8"))
    assert meta["seed"] == 7 and meta["train_config"]["c"] == 1
    assert len(meta["training_data_sha256"]) == 64 and meta["spacy_version"].startswith("3.")
    assert meta["parser_model"] and meta["key_entities"] == "brat pre-annotations"
    for f in ("model.json", "meta.json"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


def test_train_rejects_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["train", str(tmp_path / "nope"), "--out", str(tmp_path / "m")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_learned_model_is_part_of_the_output_path(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "model.json").write_text('{"format": "x", "v": 1}\n', encoding="utf-8")
    (model / "meta.json").write_text("{}\n", encoding="utf-8")
    common = {"out": str(tmp_path / "out"), "shard": 0}
    plain = MapShard(**common).stage_dir()
    with_model = MapShard(**common, learned=str(model)).stage_dir()
    assert plain != with_model
    assert ExtendShard(**common).stage_dir() == ExtendShard(**common).stage_dir()
    (model / "model.json").write_text('{"format": "x", "v": 2}\n', encoding="utf-8")
    store._DIGESTS.clear()
    assert MapShard(**common, learned=str(model)).stage_dir() != with_model
    assert FilterShard(**common, learned=str(model)).stage_dir() != FilterShard(**common).stage_dir()
    args = cli.make_parser().parse_args(["build", "--out", str(tmp_path / "o"), "--pubmed-xml", str(tmp_path),
                                         "--learned", str(model)])
    assert build_commands.build_params(args)["learned"] == str(model.resolve())


def test_mapped_stage_applies_the_learned_model(tmp_path: Path) -> None:
    from collections import Counter

    from pipeline.documents import Document, Sentence
    from pipeline.nlp import learned
    from tests.nlp.test_learned import CONFIG, EXAMPLES, example

    model = learned.save_model(learned.train(EXAMPLES, CONFIG), tmp_path / "model", {"seed": 13})
    new = example(25)
    doc = Document(pmid="1", title="", text=new.text, sentences=(Sentence(0, len(new.text)),),
                   annotations=new.rules)
    counts: Counter[str] = Counter()
    task = MapShard(out=str(tmp_path / "out"), shard=0, learned=str(model))
    out = list(task.transform(iter([doc]), counts))
    assert counts["learned_added"] >= 1 and counts["learned_dropped_rule"] >= 1
    assert {a.covered(new.text) for a in out[0].annotations} != {a.covered(new.text) for a in new.rules}


def test_build_refuses_a_model_of_another_schema_or_key_source(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Before any stage: a model whose meta records another schema, or other key entities, is refused (exit 2),
    its meta.json named, nothing written; ``--learned none`` builds without one."""
    from pipeline.nlp import learned
    from pipeline.schema import DEFAULT_SCHEMA
    from tests.conftest import PROJECT
    from tests.nlp.test_learned import CONFIG, EXAMPLES

    trained = learned.train(EXAMPLES, CONFIG)
    pubmed = str(PROJECT / "data" / "demo" / "pubmed")
    other_schema = {"schema_sha256": "0" * 64, "key_source": "local"}
    pubtator_keys = {"schema_sha256": learned.schema_digest(DEFAULT_SCHEMA), "key_source": "pubtator"}
    for meta, expected in ((other_schema, "trained with another schema"),
                           (pubtator_keys, "trained with pubtator key entities")):
        model = learned.save_model(trained, tmp_path / expected.replace(" ", "-"), meta)
        out = tmp_path / "out"
        code = cli.main(["build", "--out", str(out), "--pubmed-xml", pubmed, "--learned", str(model)])
        err = capsys.readouterr().err
        assert code == 2, err
        assert f"pgx-corpus build: {model / 'meta.json'}: {expected}" in err
        assert not out.exists()
    args = cli.make_parser().parse_args(["build", "--out", str(tmp_path / "o"), "--pubmed-xml", pubmed,
                                         "--learned", "none"])
    assert build_commands.build_params(args)["learned"] == "none"
    assert MapShard(out=str(tmp_path / "o"), shard=0, learned="none").learned_model() == ""
