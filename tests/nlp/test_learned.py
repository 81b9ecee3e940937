"""Learned pre-annotation (pipeline.nlp.learned): training, decisions, versioned model directory.

Covers: pipeline.documents, pipeline.nlp.learned, pipeline.nlp.learned_data, pipeline.nlp.logistic
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline.documents import Annotation, Document, Sentence
from pipeline.nlp import learned, learned_data

DRUGS = ["warfarin", "clopidogrel", "tamoxifen", "codeine"]
GENES = ["CYP2C9", "CYP2C19", "CYP2D6", "VKORC1", "ABCB1", "SLCO1B1"]


def _ann(text: str, phrase: str, type_: str, source: str = "gold", nth: int = 0, rule: str | None = None
         ) -> Annotation:
    start = -1
    for _ in range(nth + 1):
        start = text.index(phrase, start + 1)
    return Annotation(((start, start + len(phrase)),), type_, source, text=phrase, rule=rule)


def example(i: int) -> learned.Example:
    """'Patients' is always a wrong rule Disease; '<drug> response' a phrase the rules miss."""
    drug, gene = DRUGS[i % len(DRUGS)], GENES[i % len(GENES)]
    text = f"Patients on {drug} showed a poor {drug} response and low {gene} expression ({i})."
    rules = (
        _ann(text, "Patients", "Disease", "local"),
        _ann(text, drug, "Chemical", "local"),
        _ann(text, drug, "Chemical", "local", nth=1),
        _ann(text, gene, "Gene_or_protein", "local"),
        _ann(text, f"{gene} expression", "Phenotype", "composite", rule="compound"),
    )
    gold = (
        _ann(text, drug, "Chemical"),
        _ann(text, drug, "Chemical", nth=1),
        _ann(text, f"{drug} response", "Pharmacodynamic_phenotype"),
        _ann(text, gene, "Gene_or_protein"),
        _ann(text, f"{gene} expression", "Phenotype"),
    )
    return learned.Example(f"{1000 + i}_1", text, gold, rules)


EXAMPLES = [example(i) for i in range(20)]
CONFIG = learned.TrainConfig(seed=13, c=1.0)


@pytest.fixture(scope="module")
def model() -> learned.LearnedModel:
    return learned.train(EXAMPLES, CONFIG)


def test_learns_to_drop_and_to_add(model: learned.LearnedModel) -> None:
    new = example(21)
    counts: Counter[str] = Counter()
    out = {(a.covered(new.text), a.type) for a in learned.predict(model, new.text, new.rules, counts)}
    assert ("Patients", "Disease") not in out
    assert (f"{DRUGS[21 % 4]} response", "Pharmacodynamic_phenotype") in out
    assert (f"{GENES[21 % 6]} expression", "Phenotype") in out
    assert counts["learned_dropped_rule"] >= 1 and counts["learned_added"] + counts["learned_anchored"] >= 1
    added = [a for a in learned.predict(model, new.text, new.rules) if a.source == learned.SOURCE]
    assert added and all(a.rule in ("learned:gazetteer", "learned:anchored") for a in added)


def test_anchored_candidates_generalize_beyond_seen_phrases(model: learned.LearnedModel) -> None:
    """'<drug> response' for a drug never seen in training: no gazetteer phrase, an anchored candidate."""
    assert model.anchors == {}  # off by default
    model = learned.train(EXAMPLES, learned.TrainConfig(seed=13, c=1.0, anchored=True))
    assert "Pharmacodynamic_phenotype" in model.anchors["R|Chemical"]
    assert model.meta["train_config"]["anchored"] is True
    text = "Patients on imatinib showed a poor imatinib response and low CYP2D6 expression (99)."
    rules = (
        _ann(text, "Patients", "Disease", "local"),
        _ann(text, "imatinib", "Chemical", "local"),
        _ann(text, "imatinib", "Chemical", "local", nth=1),
        _ann(text, "CYP2D6", "Gene_or_protein", "local"),
    )
    counts: Counter[str] = Counter()
    out = learned.predict(model, text, rules, counts)
    found = {(a.covered(text), a.type, a.rule) for a in out}
    assert ("imatinib response", "Pharmacodynamic_phenotype", "learned:anchored") in found
    assert ("imatinib", "Chemical", None) in found  # the anchor stays
    assert counts["learned_anchored"] >= 1
    plain = learned.train(EXAMPLES, CONFIG)
    assert ("imatinib response", "Pharmacodynamic_phenotype") not in {
        (a.covered(text), a.type) for a in learned.predict(plain, text, rules)}


def test_training_is_deterministic_and_versioned(model: learned.LearnedModel, tmp_path: Path) -> None:
    meta = {"training_data_sha256": learned.training_hash(EXAMPLES), "seed": 13, "spacy_version": "x"}
    a = learned.save_model(model, tmp_path / "a", meta)
    b = learned.save_model(learned.train(list(reversed(EXAMPLES)), CONFIG), tmp_path / "b", meta)
    assert (a / "model.json").read_bytes() == (b / "model.json").read_bytes()
    assert (a / "meta.json").read_bytes() == (b / "meta.json").read_bytes()
    loaded = learned.load_model(a)
    assert loaded.meta["train_config"]["seed"] == 13 and loaded.meta["sentences"] == 20
    assert loaded.meta["training_data_sha256"] == learned.training_hash(EXAMPLES)
    new = example(22)
    assert learned.predict(loaded, new.text, new.rules) == learned.predict(model, new.text, new.rules)
    other = learned.train(EXAMPLES, learned.TrainConfig(seed=14, c=1.0))
    assert other.weights != model.weights  # the seed decides the inner folds (cross-fitted gazetteer features)
    assert learned.training_hash(EXAMPLES[:-1]) != learned.training_hash(EXAMPLES)


def test_load_rejects_what_is_not_a_model(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a learned model directory"):
        learned.load_model(tmp_path)


def test_apply_documents_is_sentence_relative(model: learned.LearnedModel) -> None:
    first, second = example(23), example(24)
    text = first.text + " " + second.text
    offset = len(first.text) + 1
    shifted = tuple(learned._shift(a, offset) for a in second.rules)
    doc = Document(pmid="1", title="", text=text, sentences=(Sentence(0, len(first.text)), Sentence(offset, len(text))),
                   annotations=first.rules + shifted)
    out = next(learned.apply_documents([doc], model, Counter()))
    covered = {(a.covered(text), a.type) for a in out.annotations}
    assert ("Patients", "Disease") not in covered
    assert (f"{DRUGS[24 % 4]} response", "Pharmacodynamic_phenotype") in covered
    assert all(text[a.fragments[0][0]:a.fragments[0][1]] == a.text for a in out.annotations if a.text)


def test_out_of_fold_predicts_every_example_from_other_folds() -> None:
    oof = learned_data.out_of_fold(EXAMPLES, k=4, seed=13, config=CONFIG)
    assert sorted(oof) == sorted(ex.name for ex in EXAMPLES)
    with pytest.raises(ValueError):
        learned.train([], CONFIG)


def test_the_strength_is_chosen_on_inner_folds_of_the_training_data() -> None:
    """Without a fixed C, each strength of C_GRID is scored by inner cross-validation; the best is kept."""
    trained = learned.train(EXAMPLES)
    assert trained.meta["c_grid"] == list(learned.C_GRID)
    assert set(trained.meta["inner_f1_by_c"]) == {str(c) for c in learned.C_GRID}
    best = max(trained.meta["inner_f1_by_c"].values())
    assert trained.meta["inner_f1_by_c"][str(trained.meta["c"])] == best
    assert learned.train(EXAMPLES, learned.TrainConfig(c=0.3)).meta["inner_f1_by_c"].keys() == {"0.3"}


def test_resolve_the_build_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The default ('') is the model of the annotator's key-entity source when one is shipped; 'none' is none."""
    monkeypatch.setattr(learned, "SHIPPED_DIR", tmp_path)
    (tmp_path / "pubtator").mkdir()
    (tmp_path / "pubtator" / learned.MODEL_FILE).write_text("{}", encoding="utf-8")
    assert learned.resolve("", "pubtator-api") == str(tmp_path / "pubtator")
    assert learned.resolve("", "pubtator-file") == str(tmp_path / "pubtator")
    assert learned.resolve("", "local") == ""  # no model shipped for that source
    assert learned.resolve("none", "pubtator-api") == ""
    assert learned.resolve("/some/model", "local") == "/some/model"


def test_the_shipped_default_is_not_applied_with_another_schema(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    schema = tmp_path / "schema.yaml"
    schema.write_text("entities: []\n", encoding="utf-8")
    other = tmp_path / "own.yaml"
    other.write_text("entities: [X]\n", encoding="utf-8")
    monkeypatch.setattr(learned, "SHIPPED_DIR", tmp_path)
    (tmp_path / "pubtator").mkdir()
    (tmp_path / "pubtator" / learned.MODEL_FILE).write_text("{}", encoding="utf-8")
    meta = {"schema_sha256": learned.schema_digest(schema), "key_source": "pubtator"}
    (tmp_path / "pubtator" / learned.META_FILE).write_text(json.dumps(meta), encoding="utf-8")
    assert learned.resolve("", "pubtator-api", schema) == str(tmp_path / "pubtator")
    assert learned.resolve("", "pubtator-api", other) == ""  # the rules alone: the model knows other types
    assert learned.resolve(str(tmp_path / "pubtator"), "pubtator-api", other) == str(tmp_path / "pubtator")


def test_a_model_trained_with_another_schema_or_key_source_is_refused(model: learned.LearnedModel,
                                                                      tmp_path: Path) -> None:
    schema = tmp_path / "schema.yaml"
    schema.write_text("entities: []\n", encoding="utf-8")
    other = tmp_path / "other.yaml"
    other.write_text("entities: [X]\n", encoding="utf-8")
    meta = {"schema_sha256": learned.schema_digest(schema), "key_source": "pubtator"}
    directory = learned.save_model(model, tmp_path / "m", meta)
    loaded = learned.load_model(directory)
    assert learned.check_trained_with(loaded, directory, schema, "pubtator-api") is None
    problem = learned.check_trained_with(loaded, directory, other, "pubtator-api")
    assert problem and problem.startswith(f"{directory / 'meta.json'}: trained with another schema")
    problem = learned.check_trained_with(loaded, directory, schema, "local")
    assert problem and "trained with pubtator key entities" in problem and "local" in problem
    old = learned.load_model(learned.save_model(model, tmp_path / "old", {}))
    assert "records no schema_sha256" in (learned.check_trained_with(old, tmp_path / "old", schema, "local") or "")
    with pytest.raises(ValueError, match="unknown annotator"):
        learned.key_source("nope")
