"""bench/learned_miss_probe.py: the class of a missed final entity, from its candidates and the rules.

Covers: pipeline.nlp.learned
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.documents import Annotation
from pipeline.nlp import learned
from tests.bench_loader import load_bench

PROJECT = Path(__file__).resolve().parents[2]
TEXT = "Warfarin response and alcohol -related suicide were often much higher in CYP2C9 carriers ."


def _probe(monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_bench(monkeypatch, "learned_miss_probe")


def _a(phrase: str, type_: str) -> Annotation:
    start = TEXT.index(phrase)
    return Annotation(((start, start + len(phrase)),), type_, "test", text=phrase)


def test_boundary_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _probe(monkeypatch)
    gold = _a("alcohol -related suicide", "Phenotype")
    assert probe._boundary_kind(gold, TEXT, [_a("alcohol", "Chemical")]) == \
        "built around other types' annotations (key entity inside)"
    assert probe._boundary_kind(gold, TEXT, [_a("suicide", "Phenotype")]) == "wider than a rule annotation of its type"
    assert probe._boundary_kind(_a("suicide", "Phenotype"), TEXT, [gold]) == \
        "narrower than a rule annotation of its type"
    assert probe._boundary_kind(gold, TEXT, []) == "only re-bounded or gazetteer candidates overlap"


def test_each_gold_entity_of_the_types_gets_one_class(monkeypatch: pytest.MonkeyPatch) -> None:
    probe = _probe(monkeypatch)
    rules = (_a("Warfarin response", "Pharmacodynamic_phenotype"), _a("alcohol", "Chemical"),
             _a("CYP2C9", "Gene_or_protein"))
    gold = (_a("Warfarin response", "Pharmacodynamic_phenotype"), _a("alcohol -related suicide", "Phenotype"),
            _a("often", "Phenotype"), _a("CYP2C9", "Gene_or_protein"))
    ex = learned.Example("1_1", TEXT, gold, rules)
    seen = (gold[0], gold[3])  # the training sentences never mark the phenotypes: no gazetteer candidate
    model = learned.train([learned.Example("2_1", TEXT, seen, rules), learned.Example("3_1", TEXT, seen, rules)],
                          learned.TrainConfig(c=1.0))
    rows = probe.classify(model, ex, {}, ("Phenotype", "Pharmacodynamic_phenotype"))
    classes = {TEXT[g.fragments[0][0]:g.fragments[0][1]]: cls for g, cls, _detail, _p in rows}
    assert classes == {"Warfarin response": "exact",
                       "alcohol -related suicide": "boundary: overlapping candidates only",
                       "often": "no overlapping candidate"}
