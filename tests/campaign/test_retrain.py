"""campaign retrain's judgement (pipeline.campaign.retrain): no figure about a scorer on documents it was trained on.

Covers: pipeline.brat.standoff, pipeline.campaign.models, pipeline.campaign.retrain, pipeline.documents,
pipeline.nlp.relations.rules, pipeline.nlp.relations.training
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pipeline.brat.standoff import BratDocument
from pipeline.campaign import retrain
from pipeline.documents import Document
from pipeline.nlp.relations.rules import DEFAULT_RULES, RelationRules, RelationScorer, load_rules
from pipeline.nlp.relations.training import TrainingSentence
from tests.campaign.builders import SCHEMA

BASE = load_rules(DEFAULT_RULES, SCHEMA, with_scorer=False)
NAMES = ["100_1", "100_2", "200_1", "300_1", "400_1", "500_1", "600_1"]


def _example(name: str) -> TrainingSentence:
    return TrainingSentence(Document(name, "x", "x", origin="brat"), (), name.split("_")[0])


def _run(monkeypatch: pytest.MonkeyPatch, current: RelationScorer | None, also: Sequence[str] = ()
         ) -> tuple[retrain.Judgement, list[tuple[set[str], list[str]]], list[tuple[str, list[str]]]]:
    trained: list[set[str]] = []
    measured: list[tuple[str, list[str]]] = []
    folds: list[tuple[set[str], list[str]]] = []

    def fake_train(examples: Sequence[TrainingSentence], *_a: Any, **_k: Any) -> tuple[RelationScorer, list[Any]]:
        groups = {e.group for e in examples}
        trained.append(groups)
        return RelationScorer({}, {}, 0.0, meta={"trained": sorted(groups)}), []

    def fake_measure(rules: RelationRules, docs: Sequence[BratDocument], *_a: Any) -> retrain.Figures:
        assert rules.scorer is not None
        who = "current" if rules.scorer is current else ",".join(rules.scorer.meta["trained"])
        measured.append((who, [d.name for d in docs]))
        return retrain.Figures(documents=len(docs))

    monkeypatch.setattr(retrain, "train_scorer", fake_train)
    monkeypatch.setattr(retrain, "measure", fake_measure)
    docs = {n: BratDocument(n, "x") for n in NAMES}
    examples = [_example(n) for n in [*NAMES, *also]]
    judgement = retrain.judge(examples, docs, BASE, dataclasses.replace(BASE, scorer=current), SCHEMA, None,
                              seed=13, train_options={})
    for groups in trained:
        key = ",".join(sorted(groups))
        folds.append((groups, [n for who, names in measured if who == key for n in names]))
    return judgement, folds, measured


def test_each_fold_is_measured_by_a_scorer_trained_without_its_pmids(monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = RelationScorer({}, {}, 0.0, meta={"training_dirs": ["gold"]})
    judgement, folds, measured = _run(monkeypatch, shipped, also=["100_9", "700_1"])
    assert judgement.folds == 5 and judgement.new is not None and judgement.new.documents == len(NAMES)
    for groups, names in folds:
        assert not groups & {n.split("_")[0] for n in names}  # an --also document of a held PMID is left out too
    assert sorted(n for _g, names in folds for n in names) == NAMES
    # the shipped scorer lists no training document: measured on every campaign document, and said so
    assert measured[-1] == ("current", NAMES) and not judgement.current_documents_known


def test_a_campaign_scorer_is_not_measured_on_pmids_it_was_trained_on(monkeypatch: pytest.MonkeyPatch) -> None:
    current = RelationScorer({}, {}, 0.0, meta={"documents": [{"name": "100_7"}, {"name": "300_1"}]})
    judgement, _folds, measured = _run(monkeypatch, current)
    assert measured[-1] == ("current", ["200_1", "400_1", "500_1", "600_1"])
    assert judgement.current_documents_known and judgement.current is not None
    assert judgement.new_common is not None and judgement.new_common.documents == 4
    assert retrain.trained_on(current) == {"100", "300"} and retrain.trained_on(None) == set()


def test_stage_keeps_the_campaign_document_when_also_has_the_same_name(tmp_path: Path) -> None:
    from collections import Counter

    from pipeline.campaign.models import finished_documents
    from tests.campaign.builders import build_campaign

    campaign = build_campaign(tmp_path)
    also = tmp_path / "also"
    also.mkdir()
    (also / "100_1.txt").write_text("Other text.", encoding="utf-8")
    (also / "100_1.ann").write_text("", encoding="utf-8")
    (also / "700_1.txt").write_text("Out of scope.", encoding="utf-8")
    (also / "700_1.ann").write_text("T1\tDiscard 0 3\tOut\n", encoding="utf-8")
    (also / "800_1.txt").write_text("Aspirin.", encoding="utf-8")
    (also / "800_1.ann").write_text("T1\tChemical 0 7\tAspirin\nT2\tDone 0 7\tAspirin\n", encoding="utf-8")
    staging = tmp_path / "staging"
    staging.mkdir()
    counts: Counter[str] = Counter()
    staged, docs = retrain.stage(finished_documents(campaign), [also], staging, counts)
    assert [(s.name, s.campaign) for s in staged] == [("100_1", True), ("100_2", True), ("300_1", True),
                                                      ("800_1", False)]
    assert counts["also_duplicates"] == 1 and counts["also_discarded"] == 1
    assert "Done" not in (staging / "100_1.ann").read_text(encoding="utf-8")
    assert (staging / "800_1.ann").read_text(encoding="utf-8") == "T1\tChemical 0 7\tAspirin\n"
    assert retrain.data_digest(staging, staged) == retrain.data_digest(staging, list(reversed(staged)))
