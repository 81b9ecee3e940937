"""bigbio_kb and source rows of brat documents, their Parquet files and the way back.

Covers: pipeline.brat.bigbio, pipeline.brat.standoff
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq

from pipeline.brat import bigbio
from pipeline.brat.standoff import parse_ann

TEXT = "Tamoxifen raised levels of CYP2D6 in hypertension patients"
ANN = (
    "T1\tChemical 0 9\tTamoxifen\n"
    "T2\tPharmacokinetic_phenotype 17 26;0 9\tlevels of Tamoxifen\n"  # fragments out of order, as brat allows
    "T3\tGene_or_protein 27 33\tCYP2D6\n"
    "T4\tDisease 37 49\thypertension\n"
    "R1\tinfluences Arg1:T3 Arg2:T2\t\n"
    "R2\ttreats Arg1:T1 Arg2:T4\t\n"
    "R3\tmetabolizes Arg1:T3 Arg2:T1\t\n"
    "#1\tAnnotatorNotes R1\tnot\n"  # a whole modality token: Negated
    "#2\tAnnotatorNotes R2\thypertension is discussed\n"  # free text, never a prefix match
    "#3\tAnnotatorNotes T4\tcheck\n"
    "A1\tComposite T2\n"
    "N1\tReference T3 NCBIGene:1565\tCYP2D6\n"
    "*\tEquiv T1 T1\n"
)


def doc():  # type: ignore[no-untyped-def]
    d, issues = parse_ann("100_2", TEXT, ANN)
    assert issues == []
    return d


def test_kb_row_offsets_texts_ids_and_modality_exclusion() -> None:
    counts: Counter[str] = Counter()
    row = bigbio.kb_row(doc(), counts)
    assert row["id"] == "100_2" and row["passages"] == [
        {"id": "100_2_passage", "type": "sentence", "text": [TEXT], "offsets": [[0, len(TEXT)]]}]
    ents = {e["id"]: e for e in row["entities"]}
    assert ents["100_2_T2"]["offsets"] == [[17, 26], [0, 9]]  # brat's order, as BigBIO's brat converter keeps it
    assert ents["100_2_T2"]["text"] == ["levels of", "Tamoxifen"]  # one string per fragment, the slices
    assert ents["100_2_T3"]["normalized"] == [{"db_name": "NCBIGene", "db_id": "1565"}]
    # R1 is negated: excluded; R2's note is free text; R3 keeps its annotated type
    assert [(r["id"], r["type"]) for r in row["relations"]] == [("100_2_R2", "treats"), ("100_2_R3", "metabolizes")]
    assert counts["relations_excluded_modality"] == 1 and counts["relations_excluded_modality:Negated"] == 1
    assert row["coreferences"] == [{"id": "100_2_equiv1", "entity_ids": ["100_2_T1", "100_2_T1"]}]


def test_parquet_keeps_types_of_empty_lists_and_bytes(tmp_path: Path) -> None:
    rows = [bigbio.kb_row(doc())]
    a = bigbio.write_parquet(rows, bigbio.KB_SCHEMA, tmp_path / "a.parquet")
    b = bigbio.write_parquet(rows, bigbio.KB_SCHEMA, tmp_path / "b.parquet")
    assert a.read_bytes() == b.read_bytes()
    schema = pq.read_schema(a)
    assert schema.field("events").type.equals(bigbio.KB_SCHEMA.field("events").type)  # empty, still typed
    offsets = schema.field("entities").type.value_type.field("offsets").type
    assert str(offsets.value_type.value_type) == "int32"
    empty = bigbio.write_parquet([], bigbio.SOURCE_SCHEMA, tmp_path / "e.parquet")
    assert pq.read_schema(empty).equals(bigbio.SOURCE_SCHEMA, check_metadata=False)


def test_source_rows_give_back_the_brat_document(tmp_path: Path) -> None:
    original = doc()
    row = bigbio.source_row(original)
    rel = {r["id"]: r for r in row["relations"]}
    assert rel["R1"]["modality"] == ["Negated"] and rel["R1"]["notes"] == ["not"]
    assert rel["R2"]["modality"] == [] and rel["R2"]["note_free_text"] == "hypertension is discussed"
    assert row["entities"][1]["offsets"] == [[17, 26], [0, 9]]  # as annotated
    path = bigbio.write_parquet([row], bigbio.SOURCE_SCHEMA, tmp_path / "s.parquet")
    (back,) = bigbio.from_source_rows(bigbio.read_rows(path))
    # the same annotations; only the ids of notes, attributes and normalizations are renumbered
    assert [(t.id, t.type, t.fragments) for t in back.textbounds] == [
        (t.id, t.type, t.fragments) for t in original.textbounds]
    assert sorted((n.target, n.text) for n in back.notes) == sorted((n.target, n.text) for n in original.notes)
    assert [(r.id, r.type, r.args) for r in back.relations] == [(r.id, r.type, r.args) for r in original.relations]
    assert [(a.target, a.type, a.value) for a in back.attributes] == [("T2", "Composite", None)]
    assert [(q.type, q.ids) for q in back.equivs] == [("Equiv", ("T1", "T1"))]
    assert [(n.target, n.db, n.db_id) for n in back.normalizations] == [("T3", "NCBIGene", "1565")]


def test_kb_rows_back_to_brat() -> None:
    (back,) = bigbio.from_kb_rows([bigbio.kb_row(doc())])
    assert back.name == "100_2" and back.text == TEXT
    assert [(t.id, t.type, t.fragments) for t in back.textbounds][:2] == [
        ("T1", "Chemical", ((0, 9),)), ("T2", "Pharmacokinetic_phenotype", ((17, 26), (0, 9)))]
    assert back.textbounds[1].text == "levels of Tamoxifen"  # the .ann line of T2 as annotated
    assert [(r.id, r.type, r.args) for r in back.relations] == [
        ("R2", "treats", (("Arg1", "T1"), ("Arg2", "T4"))), ("R3", "metabolizes", (("Arg1", "T3"), ("Arg2", "T1")))]
    assert [(n.target, n.db, n.db_id) for n in back.normalizations] == [("T3", "NCBIGene", "1565")]
