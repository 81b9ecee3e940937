"""The campaign's models (pipeline.campaign.models): its finished documents, the scorer serve picks, IN_USE, status.

Covers: pipeline.campaign.finalized, pipeline.campaign.models, pipeline.campaign.status, pipeline.nlp.relations.rules
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections import Counter
from pathlib import Path

import pytest

from pipeline.campaign import models
from pipeline.campaign.finalized import Finalized, Record, write_record
from pipeline.campaign.status import format_markdown
from pipeline.nlp.relations.rules import DEFAULT_RULES, load_rules
from tests.campaign.builders import SCHEMA, TEXTS, build_campaign, span

SHIPPED = load_rules(DEFAULT_RULES, SCHEMA).scorer


def test_finished_documents_take_each_signed_off_document_once_without_campaign_marks(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    counts: Counter[str] = Counter()
    found = models.finished_documents(campaign, counts)
    # 100_1, 100_2 (signed off, a disputed relation left) and 300_1; 200_1 does not parse, 200_2 discarded
    assert [(f.name, f.source) for f in found] == [("100_1", "phase2/senior1"), ("100_2", "phase2/senior1"),
                                                  ("300_1", "phase2/senior2")]
    by = {f.name: f.doc for f in found}
    assert [r.type for r in by["100_1"].relations] == ["metabolizes", "influences"]
    assert by["100_2"].relations == [] and by["100_2"].notes == []  # the Disputed_treats relation and its note
    assert all(t.type != "Done" for f in found for t in f.doc.textbounds)
    assert counts["disputed_relations_removed"] == 1 and counts["discarded"] == 1 and counts["parse_issues"] == 1
    assert found[0].ann_sha256 == hashlib.sha256(
        (campaign / "phase2" / "senior1" / "100_1.ann").read_bytes()).hexdigest()


def test_disagreement_marks_are_removed(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    ann = campaign / "phase2" / "senior2" / "300_1.ann"
    ann.write_text(ann.read_text(encoding="utf-8") + "A3\tDisagreement T1 ann1\n", encoding="utf-8")
    doc = {f.name: f.doc for f in models.finished_documents(campaign)}["300_1"]
    assert [a.type for a in doc.attributes] == ["Composite"]
    assert [t.type for t in doc.textbounds] == ["Chemical", "Disease"]


def test_finalized_documents_are_read_from_final(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    final = tmp_path / "FINAL"
    final.mkdir()
    (final / "300_1.txt").write_text(TEXTS["300_1"], encoding="utf-8")
    (final / "300_1.ann").write_text(f"T1\tChemical {span('300_1', 'Tamoxifen')}\tTamoxifen\n", encoding="utf-8")
    write_record(campaign, Record(final, {"300_1": Finalized("senior2", "0" * 64)}))
    found = {f.name: f for f in models.finished_documents(campaign)}
    assert found["300_1"].source == "final" and found["300_1"].doc.relations == []
    assert found["100_1"].source == "phase2/senior1"
    (final / "300_1.ann").unlink()
    with pytest.raises(models.ModelsError, match="300_1.ann"):
        models.finished_documents(campaign)


def _write_scorer(campaign: Path, number: int, data: bytes | None = None) -> Path:
    assert SHIPPED is not None
    directory = campaign / "models" / "relations"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{number:03d}.json"
    path.write_bytes(data if data is not None else json.dumps(SHIPPED.to_json(), sort_keys=True).encode())
    return path


def test_serve_picks_the_newest_scorer_that_loads_and_logs_the_newer_broken_one(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    campaign = build_campaign(tmp_path)
    _write_scorer(campaign, 1)
    good = _write_scorer(campaign, 2)
    broken = _write_scorer(campaign, 3, b"{not json")
    assert SHIPPED is not None
    wrong_type = _write_scorer(campaign, 4, json.dumps({**SHIPPED.to_json(), "types": {"nope": {}}}).encode())
    with caplog.at_level(logging.WARNING, logger="pipeline.campaign.models"):
        choice = models.select_scorer(campaign, SCHEMA, SHIPPED, Path("config/relation_scorer.json"))
    assert (choice.version, choice.path, choice.newest) == ("002", good, "004")
    assert [p for p, _m in choice.broken] == [wrong_type, broken]
    assert str(broken) in caplog.text and str(wrong_type) in caplog.text and "nope" in caplog.text
    assert (campaign / "models" / "relations" / "IN_USE").read_text(encoding="utf-8") == "002\n"
    assert models.read_in_use(campaign) == "002"
    assert models.next_version(campaign) == 5


def test_serve_falls_back_to_the_shipped_scorer_and_writes_in_use(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    choice = models.select_scorer(campaign, SCHEMA, SHIPPED, Path("config/relation_scorer.json"))
    assert (choice.version, choice.scorer, choice.newest, choice.broken) == ("shipped", SHIPPED, None, ())
    assert models.read_in_use(campaign) == "shipped"
    _write_scorer(campaign, 1, b"[]")  # every campaign scorer broken: still the shipped one, never an error
    assert models.select_scorer(campaign, SCHEMA, SHIPPED, None).version == "shipped"
    # retrain only reads
    shutil.rmtree(campaign / "models")
    assert models.select_scorer(campaign, SCHEMA, SHIPPED, None, write_in_use=False).version == "shipped"
    assert not (campaign / "models").exists()


def test_in_use_that_cannot_be_written_is_logged_not_raised(tmp_path: Path, caplog: pytest.LogCaptureFixture
                                                             ) -> None:
    campaign = build_campaign(tmp_path)
    (campaign / "models").write_text("a file where the directory goes", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="pipeline.campaign.models"):
        assert models.select_scorer(campaign, SCHEMA, SHIPPED, None).version == "shipped"
    assert "IN_USE" in caplog.text


def test_status_names_the_scorer_in_use_and_the_newest(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    _write_scorer(campaign, 1)
    models.select_scorer(campaign, SCHEMA, SHIPPED, None)
    _write_scorer(campaign, 2, b"{}")
    (campaign / "models" / "entities" / "002").mkdir(parents=True)
    got = models.models_status(campaign)
    assert got == {"in_use": "001", "newest": "002", "newest_entities": "002"}
    text = format_markdown({"campaign": str(campaign), "rows": [], "models": got})
    assert "relation scorer in use (serve, models/relations/IN_USE): 001; newest: 002" in text
