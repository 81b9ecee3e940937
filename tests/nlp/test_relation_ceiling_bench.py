"""bench/relation_ceiling.py's fate of each gold relation given the final entities.

Covers: pipeline.nlp.relations.scorer, pipeline.nlp.relations.features, pipeline.nlp.relations.proposals
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import pytest

from pipeline.documents import Annotation, Document, Sentence, SentenceParse
from pipeline.nlp.relations.rules import DEFAULT_RULES, RelationScorer, load_rules
from pipeline.nlp.relations.training import TrainingSentence
from pipeline.schema import load_schema
from tests.bench_loader import load_bench

PROJECT = Path(__file__).resolve().parents[2]
SCHEMA = load_schema()
RULES = dataclasses.replace(load_rules(DEFAULT_RULES, SCHEMA, with_scorer=False), enabled=None)
TEXT = "CYP2C9 variants may decrease warfarin clearance ."
ROWS = [("CYP2C9", 1, "compound", "PROPN", "cyp2c9"), ("variants", 3, "nsubj", "NOUN", "variant"),
        ("may", 3, "aux", "AUX", "may"), ("decrease", 3, "ROOT", "VERB", "decrease"),
        ("warfarin", 5, "compound", "NOUN", "warfarin"), ("clearance", 3, "dobj", "NOUN", "clearance"),
        (".", 3, "punct", "PUNCT", ".")]


def _bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_bench(monkeypatch, "relation_ceiling", bench_on_path=True)


def _example(gold: tuple[tuple[int, int, str], ...]) -> TrainingSentence:
    tokens, at = [], 0
    for word, *_ in ROWS:
        at = TEXT.index(word, at)
        tokens.append((at, at + len(word)))
        at += len(word)
    parse = SentenceParse(0, len(TEXT), tuple(tokens), tuple(r[1] for r in ROWS), tuple(r[2] for r in ROWS),
                          tuple(r[3] for r in ROWS), tuple(r[4] for r in ROWS))
    anns = [Annotation(((0, 15),), "Limited_variation", "gold", None, "CYP2C9 variants"),
            Annotation(((29, 47),), "Pharmacokinetic_phenotype", "gold", None, "warfarin clearance")]
    doc = Document("1_1", TEXT, TEXT, sentences=(Sentence(0, len(TEXT)),), annotations=tuple(anns),
                   parses=(parse,))
    return TrainingSentence(doc, gold, "1")


def _scorer(p: float, q: float, pair_types: frozenset[str] = frozenset()) -> RelationScorer:
    # the pair model is its bias alone (both directions alike, so the first entity is Arg1); the type model
    # gives influences q and shares 1 - q among four others
    weights = {"influences": {"bias": math.log(q * 4 / (1 - q))},
               **{t: {} for t in ("increases", "decreases", "causes", "treats")}}
    return RelationScorer({"bias": math.log(p / (1 - p))}, weights, threshold=0.0, decision="actions",
                          pair_types=pair_types)


@pytest.mark.parametrize(("gold", "p", "q", "pair_types", "fate"), [
    ((0, 1, "influences"), 0.9, 0.9, frozenset(), "right"),
    ((1, 0, "influences"), 0.9, 0.9, frozenset(), "proposed, wrong direction"),
    ((0, 1, "decreases"), 0.9, 0.9, frozenset(), "proposed, wrong type"),
    ((0, 1, "influences"), 0.3, 0.9, frozenset(), "candidate, pair probability below the floor"),
    ((0, 1, "influences"), 0.6, 0.5, frozenset(), "candidate, expected gain below the threshold"),
    ((0, 1, "influences"), 0.9, 0.9, frozenset({"Chemical|Gene_or_protein"}),
     "not a candidate: entity type pair not scored"),
])
def test_each_gold_relation_gets_the_fate_of_the_scorers_decision(
        monkeypatch: pytest.MonkeyPatch, gold: tuple[int, int, str], p: float, q: float, pair_types: frozenset[str],
        fate: str) -> None:
    bench = _bench(monkeypatch)
    rules = dataclasses.replace(RULES, scorer=_scorer(p, q, pair_types))
    assert bench.fates(_example((gold,)), rules, SCHEMA) == [(gold[2], fate)]
