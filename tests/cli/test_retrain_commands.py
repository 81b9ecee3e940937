"""``pgx-corpus campaign retrain``: a small finished campaign trains both models, twice to the same bytes; refusals
write nothing.

Covers: pipeline.campaign.models, pipeline.cli, pipeline.cli.retrain_commands, pipeline.serve.backup
"""

from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import pytest

from pipeline.campaign.models import select_scorer
from pipeline.cli import main
from pipeline.serve.backup import backup
from tests.campaign.builders import SCHEMA, build_campaign, build_preannotation


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_retrain_twice_gives_the_same_bytes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    keys = build_preannotation(tmp_path)
    also = tmp_path / "also"
    also.mkdir()
    (also / "400_1.txt").write_text("CYP2C19 metabolizes clopidogrel.", encoding="utf-8")
    (also / "400_1.ann").write_text("T1\tGene_or_protein 0 7\tCYP2C19\nT2\tChemical 20 31\tclopidogrel\n"
                                    "R1\tmetabolizes Arg1:T1 Arg2:T2\n", encoding="utf-8")
    argv = ["campaign", "retrain", str(campaign), "--keys", str(keys), "--also", str(also)]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv) == 0
    second = capsys.readouterr().out
    models = campaign / "models"
    assert (models / "relations" / "001.json").read_bytes() == (models / "relations" / "002.json").read_bytes()
    assert _files(models / "entities" / "001") == _files(models / "entities" / "002")
    assert sorted(_files(models / "entities" / "001")) == ["meta.json", "model.json"]
    scorer = json.loads((models / "relations" / "001.json").read_text(encoding="utf-8"))
    meta = scorer["meta"]
    assert [(d["name"], d["source"]) for d in meta["documents"]] == [
        ("100_1", "phase2/senior1"), ("100_2", "phase2/senior1"), ("300_1", "phase2/senior2"), ("400_1", "also:also")]
    assert meta["counts"]["campaign_documents"] == 3 and meta["counts"]["also_documents"] == 1
    assert meta["options"]["seed"] == 13 and re.fullmatch(r"[0-9a-f]{64}", meta["training_data_sha256"])
    assert not re.search(r"20\d\d-\d\d-\d\d", (models / "relations" / "001.json").read_text(encoding="utf-8"))
    entity_meta = json.loads((models / "entities" / "001" / "meta.json").read_text(encoding="utf-8"))
    assert (entity_meta["key_entities"], entity_meta["key_entities_from"]) == ("brat pre-annotations",
                                                                             "--keys preannotation")
    history = [json.loads(line) for line in (models / "history.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [h["version"] for h in history] == ["001", "002"] and all("time" in h for h in history)
    # the judgement: the new scorer out of fold, the shipped one (which lists no training documents) beside it
    assert "version 001" in first and "new, out of fold: 3 documents" in first
    assert "current (shipped), on every campaign document" in first and "better: the " in first
    assert "build --learned" in first
    # the second run's current scorer is 001, trained on every campaign PMID: not measured, not judged
    assert "current (001), on the documents it was not trained on: not measured" in second
    assert "better: not judged" in second
    # serve's choice: the newest that loads; backup copies models/
    assert select_scorer(campaign, SCHEMA, None, None).version == "002"
    assert (models / "relations" / "IN_USE").read_text(encoding="utf-8") == "002\n"
    (campaign / "campaign.json").write_text("{}", encoding="utf-8")  # backup's check of a campaign
    backup(campaign, tmp_path / "backup.tar.gz")
    with tarfile.open(tmp_path / "backup.tar.gz") as tar:
        names = tar.getnames()
    assert {"models/relations/001.json", "models/relations/IN_USE", "models/entities/002/model.json",
            "models/history.jsonl"} <= set(names)


def _without_sign_off(campaign: Path) -> None:
    for ann in (campaign / "phase2").rglob("*.ann"):
        ann.write_text("".join(line + "\n" for line in ann.read_text(encoding="utf-8").splitlines()
                               if "\tDone " not in line), encoding="utf-8")


def test_no_finished_document_is_refused_and_nothing_written(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    _without_sign_off(campaign)
    before = _files(campaign)
    assert main(["campaign", "retrain", str(campaign)]) == 2
    assert "no finished document" in capsys.readouterr().err
    assert _files(campaign) == before and not (campaign / "models").exists()


def test_a_rules_file_whose_scorer_does_not_load_is_refused_by_name(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "relations.yaml").write_text(
        (Path(__file__).resolve().parents[2] / "config" / "relations.yaml").read_text(encoding="utf-8"),
        encoding="utf-8")
    (rules / "relation_scorer.json").write_text("{broken", encoding="utf-8")
    before = _files(campaign)
    assert main(["campaign", "retrain", str(campaign), "--rules", str(rules / "relations.yaml")]) == 2
    assert str(rules / "relation_scorer.json") in capsys.readouterr().err
    assert _files(campaign) == before


def test_bad_directories_and_a_pubtator_build_without_keys_are_refused(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    before = _files(campaign)
    assert main(["campaign", "retrain", str(campaign), "--also", str(tmp_path / "nope")]) == 2
    assert "nope: not a directory" in capsys.readouterr().err
    assert main(["campaign", "retrain", str(campaign), "--also", str(campaign / "phase2")]) == 2
    assert "inside the campaign" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["campaign", "retrain", str(tmp_path / "empty")]) == 2
    assert "not a campaign" in capsys.readouterr().err
    manifest = tmp_path / "runs" / "r1" / "manifest.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"params": {"annotator": "pubtator-file"}}), encoding="utf-8")
    (campaign / "campaign.json").write_text(json.dumps({"provenance": {"build_manifest": str(manifest)}}),
                                            encoding="utf-8")
    before = _files(campaign)
    assert main(["campaign", "retrain", str(campaign)]) == 2
    err = capsys.readouterr().err
    assert "pubtator-file" in err and str(manifest) in err and "--keys" in err
    assert _files(campaign) == before
