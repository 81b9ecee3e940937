"""Relation suggestions on a brat document's entities (pipeline.nlp.relations.suggest).

Covers: pipeline.brat.modality, pipeline.brat.standoff, pipeline.campaign.conf, pipeline.campaign.layout,
pipeline.nlp.relations.rules, pipeline.nlp.relations.suggest, pipeline.nlp.spacy_models, pipeline.schema
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from pipeline.brat.modality import parse_note
from pipeline.brat.standoff import BratDocument, dumps, parse_ann
from pipeline.nlp.relations.rules import DEFAULT_RULES, RelationRules, load_rules
from pipeline.nlp.relations.suggest import FINISHED_MARKS, is_finished, schema_allowed, suggest_relations
from pipeline.schema import Schema, load_schema

TEXT = ("CYP2C9 polymorphisms decrease warfarin clearance and increase the risk of bleeding, and VKORC1 variants "
        "did not alter warfarin sensitivity.")


@functools.cache
def _setup() -> tuple[Schema, RelationRules, Any]:
    from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser

    schema = load_schema()
    return schema, load_rules(DEFAULT_RULES, schema), load_parser(DEFAULT_MODEL)


def _doc(ann: str, text: str = TEXT) -> BratDocument:
    doc, issues = parse_ann("1_1", text, ann)
    assert not issues
    return doc


ENTS = ("T1\tGene_or_protein 0 6\tCYP2C9\n"
        "T2\tPharmacokinetic_phenotype 30 48\twarfarin clearance\n"
        "T3\tDisease 74 82\tbleeding\n"
        "T5\tGene_or_protein 88 94\tVKORC1\n"
        "T6\tPharmacodynamic_phenotype 118 138\twarfarin sensitivity\n")


def _pairs(doc: BratDocument) -> set[frozenset[str]]:
    return {frozenset((r.arg("Arg1") or "", r.arg("Arg2") or "")) for r in doc.relations}


def test_suggestions_go_only_to_unrelated_pairs_with_ids_after_the_largest() -> None:
    schema, rules, nlp = _setup()
    doc = _doc(ENTS + "R7\tDisputed_influences Arg1:T2 Arg2:T1\t\n#9\tAnnotatorNotes T1\ta drug\n")
    counts: Counter[str] = Counter()
    new, added = suggest_relations(doc, rules, schema, nlp, schema_allowed(schema), counts)
    assert added, "the scorer proposes something in this sentence"
    assert counts["suggested"] == len(added)
    # the pair T1-T2 is related (a Disputed_ relation, reversed): no suggestion on it
    assert all(frozenset((s.relation.arg("Arg1"), s.relation.arg("Arg2"))) != {"T1", "T2"} for s in added)
    assert [s.relation.id for s in added] == [f"R{8 + i}" for i in range(len(added))]
    notes = [s.note for s in added if s.note is not None]
    assert notes, "the negated relation has a note"
    assert [n.id for n in notes] == [f"#{10 + i}" for i in range(len(notes))]
    for s in added:
        if s.note is not None:
            parsed = parse_note(s.note.text)
            assert parsed.free == "" and parsed.modality == frozenset(s.modality)
        else:
            assert s.modality == ()
    # what was there stays, in order; the new ones follow
    assert new.relations[: len(doc.relations)] == doc.relations
    assert new.notes[: len(doc.notes)] == doc.notes
    assert len(_pairs(new)) == len(new.relations), "at most one relation per pair"


def test_the_same_document_gives_the_same_suggestions() -> None:
    schema, rules, nlp = _setup()
    a, _ = suggest_relations(_doc(ENTS), rules, schema, nlp, schema_allowed(schema))
    b, _ = suggest_relations(_doc(ENTS), rules, schema, nlp, schema_allowed(schema))
    assert dumps(a) == dumps(b) and a.relations


def test_finished_documents_and_marks_get_nothing() -> None:
    from pipeline.campaign.conf import CAMPAIGN_DONE_TYPE
    from pipeline.campaign.layout import DISCARD_TYPE

    assert {CAMPAIGN_DONE_TYPE, DISCARD_TYPE} == FINISHED_MARKS
    schema, rules, nlp = _setup()
    for mark in sorted(FINISHED_MARKS):
        doc = _doc(ENTS + f"T9\t{mark} 0 6\tCYP2C9\n")
        assert is_finished(doc)
        new, added = suggest_relations(doc, rules, schema, nlp, schema_allowed(schema))
        assert new is doc and added == []
    # a Disagreement mark is no argument
    doc = _doc(ENTS + "T9\tDisagreement 0 6\tCYP2C9\n")
    _new, added = suggest_relations(doc, rules, schema, nlp, schema_allowed(schema))
    assert added and all("T9" not in (s.relation.arg("Arg1"), s.relation.arg("Arg2")) for s in added)


def test_types_are_those_allowed_or_their_nearest_allowed_ancestor() -> None:
    schema, rules, nlp = _setup()
    _new, added = suggest_relations(_doc(ENTS), rules, schema, nlp, lambda *_: False)
    assert added == []
    root_only = "isAssociatedWith"

    def allowed(type_: str, arg1: str, arg2: str) -> bool:
        return type_ == root_only

    _new, added = suggest_relations(_doc(ENTS), rules, schema, nlp, allowed)
    assert added and {s.relation.type for s in added} == {root_only}


def test_a_document_with_fewer_than_two_entities_is_returned_as_it_is() -> None:
    schema, rules, nlp = _setup()
    doc = _doc("T1\tGene_or_protein 0 6\tCYP2C9\n")
    new, added = suggest_relations(doc, rules, schema, nlp, schema_allowed(schema))
    assert new is doc and added == []
