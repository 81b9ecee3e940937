"""bench/effort.py's document conversions: what a person is given in each workflow.

Covers: pipeline.brat.edits, pipeline.brat.standoff, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.brat.edits import sentence_edits
from pipeline.brat.standoff import parse_ann
from pipeline.documents import Annotation, Document, Relation, Sentence
from pipeline.schema import load_schema
from tests.bench_loader import load_bench

PROJECT = Path(__file__).resolve().parents[2]
TEXT = "CYP2D6 poor metabolizers had higher plasma levels of codeine and morphine."


def _bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    return load_bench(monkeypatch, "effort")


def test_a_build_sentence_becomes_the_brat_document_a_person_is_given(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench(monkeypatch)
    anns = (Annotation(((0, 6),), "Gene_or_protein", "pubtator", text="CYP2D6"),
            Annotation(((7, 11),), "Chemical_family_xx", "pubtator", text="poor"),  # not a schema type: left out
            Annotation(((53, 60),), "Chemical", "pubtator", text="codeine"))
    doc = Document("1_1", TEXT, TEXT, origin="brat", sentences=(Sentence(0, len(TEXT)),), annotations=anns,
                   relations=(Relation("influences", 0, 2, ("Negated",)), Relation("influences", 0, 1)))
    out = bench.to_brat(doc, load_schema())
    assert [(t.id, t.type) for t in out.textbounds] == [("T1", "Gene_or_protein"), ("T2", "Chemical")]
    assert [(r.id, r.type, r.args) for r in out.relations] == [("R1", "influences", (("Arg1", "T1"), ("Arg2", "T2")))]
    assert [(n.target, n.text) for n in out.notes] == [("R1", "neg")]


def test_build_relations_kept_in_phase_1_follow_their_corrected_entities(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench(monkeypatch)
    build, _ = parse_ann("1_1", TEXT, "T1\tGene_or_protein 0 11\tCYP2D6 poor\nT2\tChemical 53 60\tcodeine\n"
                         "T3\tChemical 36 42\tplasma\nR1\tinfluences Arg1:T1 Arg2:T2\t\n"
                         "R2\tinfluences Arg1:T1 Arg2:T3\t\n"
                         "#1\tAnnotatorNotes R1\tneg\n")
    final, _ = parse_ann("1_1", TEXT, "T5\tGene_or_protein 0 6\tCYP2D6\nT6\tChemical 53 60\tcodeine\n"
                         "#1\tAnnotatorNotes T5\ta gene\nR9\tinfluences Arg1:T5 Arg2:T6\t\n")
    corrected = bench.corrected_with_build_relations(build, final)
    # R1 survives onto the moved T1 (now T5); R2 goes with the deleted T3; the entity note stays
    assert [(r.type, r.args) for r in corrected.relations] == [("influences", (("Arg1", "T5"), ("Arg2", "T6")))]
    assert [(n.id, n.target, n.text) for n in corrected.notes] == [("#1", "T5", "a gene"), ("#2", "R1", "neg")]
    e = sentence_edits(corrected, final)
    assert (e.entity_edits, e.relation_keep, e.modality) == (0, 1, 1)
