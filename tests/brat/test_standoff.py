"""brat reader/writer: every line kind, bad lines reported with file and line, round trip.

Covers: pipeline.brat.standoff, pipeline.names
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline.brat import standoff
from pipeline.names import NameError_
from tests.conftest import shared_path

TEXT = "estradiol levels of CYP2C9 carriers"
ANN = (
    "T1\tChemical 0 9\testradiol\n"
    "T2\tPharmacodynamic_phenotype 0 9;10 19\testradiol levels of \n"
    "T3\tGene_or_protein 20 26\tCYP2C9\n"
    "R1\tincreases Arg1:T3 Arg2:T2\t\n"
    "A1\tNegated R1\n"
    "M2\tConfidence T1 High\n"
    "N1\tReference T1 MESH:D004958\testradiol\n"
    "#1\tAnnotatorNotes R1\thyp\n"
    "*\tEquiv T1 T3\n"
)


def test_parse_every_line_kind() -> None:
    doc, issues = standoff.parse_ann("123_4", TEXT, ANN)
    assert issues == []
    assert [t.id for t in doc.textbounds] == ["T1", "T2", "T3"]
    assert doc.textbounds[1].fragments == ((0, 9), (10, 19))
    assert doc.relations[0].arg("Arg1") == "T3"
    assert (doc.attributes[0].value, doc.attributes[1].value) == (None, "High")
    assert (doc.normalizations[0].db, doc.normalizations[0].db_id) == ("MESH", "D004958")
    assert doc.notes_for("R1") == ["hyp"]
    assert doc.equivs[0].ids == ("T1", "T3")
    assert doc.pmid == "123"


def test_bad_lines_are_reported_not_raised() -> None:
    ann = "T1\tChemical 0 x\tfoo\nR1\tcauses Arg1:T1\t\nQ1\tWhat T1\nT2\tGene 20 26\tCYP2C9\n"
    doc, issues = standoff.parse_ann("d", TEXT, ann, path="d.ann")
    assert [t.id for t in doc.textbounds] == ["T2"]
    assert [(i.line, i.file) for i in issues] == [(1, "d.ann"), (2, "d.ann"), (3, "d.ann")]
    assert str(issues[0]).startswith("d.ann:1: ")


def test_round_trip_through_files(tmp_path: Path) -> None:
    doc, _ = standoff.parse_ann("123_4", TEXT, ANN)
    standoff.write_document(tmp_path, doc)
    again, issues = standoff.read_document(tmp_path / "123_4.txt")
    assert issues == []
    assert standoff.dumps(again) == standoff.dumps(doc)
    assert again.text == TEXT


def test_to_annotations_sorts_fragments_and_reads_ids() -> None:
    ann_text = "T1\tPhenotype 10 19;0 9\tlevels of estradiol\nN1\tReference T1 MESH:D1\tx\n"
    doc, _ = standoff.parse_ann("x", TEXT, ann_text)
    (ann,) = standoff.to_annotations(doc)
    assert ann.fragments == ((0, 9), (10, 19))
    assert ann.identifier == "MESH:D1"
    assert ann.text == "estradiol levels of"


def test_real_pgxcorpus_gold_parses_cleanly() -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    docs, issues = standoff.read_collection(gold)
    assert len(docs) == 300
    assert issues == []
    assert sum(len(d.textbounds) for d in docs) == 2178
    assert sum(len(d.relations) for d in docs) == 920
    for d in docs:
        for t in d.textbounds:
            assert " ".join(d.text[s:e] for s, e in t.fragments) == t.text.rstrip()


def _one_of_each() -> standoff.BratDocument:
    doc = standoff.BratDocument("1_1", "Warfarin and CYP2C9")
    doc.textbounds = [standoff.TextBound("T1", "Chemical", ((0, 8),), "Warfarin"),
                      standoff.TextBound("T2", "Gene_or_protein", ((13, 19),), "CYP2C9")]
    doc.relations = [standoff.Relation("R1", "influences", (("Arg1", "T2"), ("Arg2", "T1")))]
    doc.attributes = [standoff.Attribute("A1", "Composite", "T1")]
    doc.normalizations = [standoff.Normalization("N1", "Reference", "T2", "NCBIGene", "1559", "CYP2C9")]
    doc.notes = [standoff.Note("#1", "AnnotatorNotes", "R1", "neg")]
    doc.equivs = [standoff.Equiv("Equiv", ("T1", "T2"))]
    return doc


@pytest.mark.parametrize(("change", "what"), [
    (lambda d: d.notes.__setitem__(0, standoff.Note("#1", "AnnotatorNotes", "R1", "x\nT9\tChemical 0 8\tW")),
     "text of #1"),
    (lambda d: d.textbounds.__setitem__(0, standoff.TextBound("T1", "Chemical\tX", ((0, 8),), "Warfarin")),
     "type of T1"),
    (lambda d: d.textbounds.__setitem__(0, standoff.TextBound("T1\nT9", "Chemical", ((0, 8),), "Warfarin")),
     "text-bound id"),
    (lambda d: d.textbounds.__setitem__(0, standoff.TextBound("T1", "Chemical", ((0, 8),), "War\u2028farin")),
     "text of T1"),
    (lambda d: d.relations.__setitem__(0, standoff.Relation("R1", "influences", (("Arg1", "T2\tx"), ("Arg2", "T1")))),
     "argument of R1"),
    (lambda d: d.attributes.__setitem__(0, standoff.Attribute("A1", "Composite", "T1", "a b")), "value of A1"),
    (lambda d: d.normalizations.__setitem__(0, standoff.Normalization("N1", "Reference", "T2", "NCBI Gene", "1559")),
     "database of N1"),
    (lambda d: d.normalizations.__setitem__(0, standoff.Normalization("N1", "Reference", "T2", "NCBIGene", "1\n5")),
     "identifier of N1"),
    (lambda d: d.events.append(standoff.Event("E1", "Binding", "T1", (("Theme", "T2\n"),))), "argument of E1"),
    (lambda d: d.equivs.__setitem__(0, standoff.Equiv("Equiv", ("T1", "T2\r"))), "equivalence member"),
])
def test_dumps_refuses_a_line_that_would_split(change: Callable[[standoff.BratDocument], None], what: str) -> None:
    doc = _one_of_each()
    assert standoff.parse_ann("1_1", doc.text, standoff.dumps(doc))[1] == []  # the sound document is written
    change(doc)
    with pytest.raises(NameError_, match=f"^1_1.ann: {re.escape(what)} refused"):
        standoff.dumps(doc)
    with pytest.raises(NameError_, match=f"^in.xml:3: {re.escape(what)} refused"):
        standoff.dumps(doc, "in.xml:3")
