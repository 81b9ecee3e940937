"""brat -> BioC -> brat and brat -> PubTator -> brat: what comes back, what is counted as lost, what bioc reads.

Covers: pipeline.brat.export, pipeline.brat.pubtator, pipeline.brat.standoff, pipeline.brat.stats, pipeline.cli,
pipeline.cli.corpus_commands, pipeline.schema, pipeline.sources.pubtator_format
"""

from __future__ import annotations

import io
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from bioc import biocjson, biocxml
from bioc import pubtator as bioc_pubtator

from pipeline import cli
from pipeline.brat.export import ExportConfig, export, from_bioc, to_bioc, to_pubtator
from pipeline.brat.pubtator import from_pubtator, read_pubtator_export, read_sidecar, sidecar_path
from pipeline.brat.standoff import BratDocument, parse_ann, read_directory
from pipeline.brat.stats import relation_modality
from pipeline.schema import load_schema
from pipeline.sources.pubtator_format import read_pubtator
from tests.conftest import shared_path

SCHEMA = load_schema()
RAW = ExportConfig()  # no relation map: the round trips compare relation types as annotated


def snapshot(docs: list[BratDocument], *, notes: bool = True, attributes: bool = True) -> dict[str, Any]:
    """Everything a brat document says, ids of notes/attributes/normalizations aside.

    Fragments are compared in ascending order and the text column as the covered text joined in that
    order: BioC writes locations in ascending order (brat allows any order; the order is the declared
    loss), and the PGxCorpus release pads some recorded texts with a space (README, declared).
    """
    out = {}
    for d in docs:
        unknown: Counter[str] = Counter()
        out[d.name] = {
            "text": d.text,
            "entities": sorted((t.id, t.type, t.sorted_fragments,
                                " ".join(d.text[s:e] for s, e in t.sorted_fragments) if d.text else t.text.rstrip())
                               for t in d.textbounds),
            "relations": sorted(
                (r.id if notes else "", r.type, r.args, relation_modality(d, r.id, SCHEMA, unknown))
                for r in d.relations
            ),
            "normalizations": sorted((n.target, n.type, n.db, n.db_id) for n in d.normalizations),
            "notes": sorted((n.target, n.type, n.text) for n in d.notes) if notes else None,
            "attributes": sorted((a.target, a.type, a.value) for a in d.attributes) if attributes else None,
        }
    return out


def relation_keys(docs: list[BratDocument]) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for d in docs:
        unknown: Counter[str] = Counter()
        out[d.name] = sorted((r.type, r.args, relation_modality(d, r.id, SCHEMA, unknown)) for r in d.relations)
    return out


# a sentence collection with everything brat can say that the pipeline writes
FIXTURE = {
    "1559_1": ("Warfarin and CYP2C9 .", (
        "T1\tChemical 0 8\tWarfarin\nT2\tGene_or_protein 13 19\tCYP2C9\n"
        "N1\tReference T2 NCBIGene:1559\tCYP2C9\nN2\tReference T1 MESH:D014859\tWarfarin\n"
        "#1\tAnnotatorNotes T1\tsource=pubtator\n"
    )),
    "1559_3": ("Levels of warfarin were decreased by CYP2C9 *3 .", (
        "T1\tChemical 10 18\twarfarin\nT2\tPharmacokinetic_phenotype 10 18;0 9\twarfarin Levels of\n"
        "T3\tLimited_variation 37 46\tCYP2C9 *3\nT4\tGene_or_protein 37 43\tCYP2C9\n"
        "N1\tReference T4 NCBIGene:1559\tCYP2C9\n"
        "A1\tComposite T2\nA2\tComposite T3\n"
        "R1\tdecreases Arg1:T3 Arg2:T2\t\nA3\tNegated R1\n"
        "R2\tisAssociatedWith Arg1:T4 Arg2:T1\t\n#1\tAnnotatorNotes R2\thyp\n"
        "R3\tinfluences Arg1:T4 Arg2:T2\t\n#2\tAnnotatorNotes R3\tin liver microsomes\n"
        "#3\tAnnotatorNotes T2\tsource=ontology; class=Pharmacokinetic\n"
    )),
    "1560_2": ("No title here .", "T1\tChemical 3 8\ttitle\n"),
}


@pytest.fixture
def fixture_docs() -> list[BratDocument]:
    docs = []
    for name, (text, ann) in FIXTURE.items():
        doc, issues = parse_ann(name, text, ann)
        assert issues == []
        docs.append(doc)
    return docs


# --- BioC -----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["bioc-xml", "bioc-json"])
def test_bioc_keeps_notes_attributes_and_modality(tmp_path: Path, fixture_docs: list[BratDocument], fmt: str) -> None:
    out = tmp_path / "c"
    export(fixture_docs, fmt, out, SCHEMA, config=RAW)
    with out.open(encoding="utf-8") as fh:
        collection = biocxml.load(fh) if fmt == "bioc-xml" else biocjson.load(fh)
    p = {d.id: d.passages[0] for d in collection.documents}["1559_3"]
    anns = {a.id: a for a in p.annotations}
    assert anns["T2"].infons["Composite"] == "true"
    assert anns["T2"].infons["note"] == "source=ontology; class=Pharmacokinetic"
    # ascending offsets, whatever the brat order (10 18;0 9), and the text joined in that order
    assert [(loc.offset, loc.length) for loc in anns["T2"].locations] == [(0, 9), (10, 8)]
    assert anns["T2"].text == p.text[0:9] + " " + p.text[10:18]
    assert anns["T2"].infons["fragment_order"] == "2,1"  # brat's order: the second location first
    assert "fragment_order" not in anns["T1"].infons  # only where brat's order is not the ascending one
    assert anns["T4"].infons["identifier"] == "NCBIGene:1559"
    rels = {r.id: r for r in p.relations}
    assert rels["R1"].infons["Negated"] == "true"
    assert rels["R2"].infons["Hypothetical"] == "true" and rels["R2"].infons["note"] == "hyp"
    assert rels["R3"].infons["note"] == "in liver microsomes"
    back = from_bioc(collection, SCHEMA)
    assert snapshot(back) == snapshot(fixture_docs)
    t2 = {d.name: d for d in back}["1559_3"].textbound("T2")
    assert t2 is not None and (t2.fragments, t2.text) == (((10, 18), (0, 9)), "warfarin Levels of")  # as annotated


@pytest.mark.parametrize("order", ["1,1", "3,1", "2", "a,b", ""])
def test_bioc_fragment_order_that_is_no_order_is_an_error(fixture_docs: list[BratDocument], order: str) -> None:
    collection = to_bioc(fixture_docs, SCHEMA)
    ann = {a.id: a for a in collection.documents[1].passages[0].annotations}["T2"]
    ann.infons["fragment_order"] = order
    with pytest.raises(ValueError, match="document '1559_3', annotation 'T2': infon fragment_order"):
        from_bioc(collection, SCHEMA)


def test_bioc_several_notes_and_valued_attribute() -> None:
    doc, _ = parse_ann("9_1", "abc def", "T1\tChemical 0 3\tabc\n#1\tAnnotatorNotes T1\tfirst\n"
                                         "#2\tAnnotatorNotes T1\tsecond\nA1\tConfidence T1 high\n")
    collection = biocjson.loads(biocjson.dumps(to_bioc([doc], SCHEMA)))
    ann = collection.documents[0].passages[0].annotations[0]
    assert (ann.infons["note"], ann.infons["note_2"], ann.infons["Confidence"]) == ("first", "second", "high")
    assert snapshot(from_bioc(collection, SCHEMA)) == snapshot([doc])


def test_bioc_round_trip_dev_gold_loses_nothing(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    docs, issues = read_directory(gold)
    assert issues == []
    counts: Counter[str] = Counter()
    export(docs, "bioc-xml", tmp_path / "dev.xml", SCHEMA, config=RAW, counts=counts)
    with (tmp_path / "dev.xml").open(encoding="utf-8") as fh:
        back = from_bioc(biocxml.load(fh), SCHEMA)
    assert snapshot(back) == snapshot(docs)
    assert (counts["entities"], counts["relations"]) == (2178, 920)
    assert sum(len(d.notes) for d in back) == 266


# --- PubTator -------------------------------------------------------------------

def test_pubtator_abstract_level_layout(fixture_docs: list[BratDocument]) -> None:
    counts: Counter[str] = Counter()
    text, spans = to_pubtator(fixture_docs, SCHEMA, counts=counts)
    blocks = text.split("\n\n")
    lines = blocks[0].splitlines()
    # one document per PMID, numeric id; title = sentence 1, abstract = the other sentences joined by a space
    assert lines[:2] == ["1559|t|Warfarin and CYP2C9 .", "1559|a|Levels of warfarin were decreased by CYP2C9 *3 ."]
    start = len("Warfarin and CYP2C9 .") + 1
    assert [(s.document, s.sentence, s.start, s.end) for s in spans] == [
        ("1559", "1559_1", 0, 21), ("1559", "1559_3", start, start + 48), ("1560", "1560_2", 1, 16),
    ]
    assert "1559\t13\t19\tCYP2C9\tGene_or_protein\t1559\t1559_1:T2" in lines  # bare NCBI gene id
    assert "1559\t0\t8\tWarfarin\tChemical\tMESH:D014859\t1559_1:T1" in lines
    # a discontiguous entity: one line per fragment, consecutive, brat order, same key
    i = lines.index(f"1559\t{start + 10}\t{start + 18}\twarfarin\tPharmacokinetic_phenotype\t-\t1559_3:T2")
    assert lines[i + 1] == f"1559\t{start}\t{start + 9}\tLevels of\tPharmacokinetic_phenotype\t-\t1559_3:T2"
    assert "1559\tdecreases\t1559_3:T3\t1559_3:T2\tNegated" in lines
    assert "1559\tisAssociatedWith\t1559_3:T4\t1559_3:T1\tHypothetical" in lines
    assert "1559\tinfluences\t1559_3:T4\t1559_3:T2\t-" in lines
    # no sentence 1 in the collection: empty title, the abstract starts at 1
    assert blocks[1].splitlines()[:3] == [
        "1560|t|", "1560|a|No title here .", "1560\t4\t9\ttitle\tChemical\t-\t1560_2:T1"]
    # honest counts: what was written, what the format cannot hold
    assert counts["entities"] == 7 and counts["entity_lines"] == 8 and counts["relations"] == 3
    assert counts["documents"] == 2 and counts["brat_documents"] == 3 and counts["discontiguous_entities"] == 1
    assert counts["notes_dropped"] == 3  # two entity notes and the free-text relation note; "hyp" travels
    assert counts["attributes_dropped"] == 2  # Composite x2; Negated travels


def test_pubtator_is_read_by_bioc_without_loss(fixture_docs: list[BratDocument]) -> None:
    counts: Counter[str] = Counter()
    text, _ = to_pubtator(fixture_docs, SCHEMA, counts=counts)
    docs = bioc_pubtator.load(io.StringIO(text))
    assert [d.pmid for d in docs] == ["1559", "1560"]
    anns = [a for d in docs for a in d.annotations]
    assert len(anns) == counts["entity_lines"] and len({a.others[0] for a in anns}) == counts["entities"]
    assert all(a.id for a in anns) and {a.id for a in anns} >= {"-", "1559", "MESH:D014859"}
    for d in docs:  # every mention is where its offsets say, in bioc's own title + "\n" + abstract
        assert all(d.text[a.start:a.end] == a.text for a in d.annotations)
        keys = {a.others[0] for a in d.annotations}
        assert all(r.id1 in keys and r.id2 in keys for r in d.relations)
    assert sorted((r.type, r.neg) for d in docs for r in d.relations) == [
        ("decreases", "Negated"), ("influences", "-"), ("isAssociatedWith", "Hypothetical")]


def test_pubtator_round_trip_fixture(tmp_path: Path, fixture_docs: list[BratDocument]) -> None:
    out = tmp_path / "f.pubtator"
    summary = export(fixture_docs, "pubtator", out, SCHEMA, config=RAW)
    assert summary["sentences"] == str(sidecar_path(out)) and summary["pubtator_level"] == "abstract"
    back = read_pubtator_export(out)
    got, want = snapshot(back, notes=False, attributes=False), snapshot(fixture_docs, notes=False, attributes=False)
    assert got == want  # texts, entities (ids, fragments in order), normalizations, relations with modality
    # modality comes back as attributes; notes and the Composite attribute are the declared losses
    # modality comes back as each relation's one note, in the grammar of pipeline.brat.modality
    assert sorted((q.target, q.text) for d in back for q in d.notes) == [("R1", "neg"), ("R2", "hyp")]
    assert [a for d in back for a in d.attributes if a.target.startswith("R")] == []
    assert all(q.target.startswith("R") for d in back for q in d.notes)  # entity notes are not carried


def test_pubtator_sentence_level_and_skip(caplog: pytest.LogCaptureFixture, fixture_docs: list[BratDocument]) -> None:
    counts: Counter[str] = Counter()
    with caplog.at_level(logging.WARNING):
        text, _ = to_pubtator(fixture_docs, SCHEMA, level="sentence", discontiguous="skip", counts=counts)
    assert text.startswith("1559_1|t|Warfarin and CYP2C9 .\n1559_1|a|\n1559_1\t0\t8\t")
    assert counts["documents"] == 3 and counts["discontiguous_skipped"] == 1 and counts["entities"] == 6
    # the relations of the skipped entity cannot be written either; each kind is one WARNING with its count
    assert counts["relations_dropped"] == 2 and counts["relations"] == 1
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("discontiguous_skipped: 1" in m for m in messages) and any("relations_dropped: 2" in m for m in messages)
    records = list(_records(text))
    back = from_pubtator(records)
    assert [d.name for d in back] == ["1559_1", "1559_3", "1560_2"]
    assert sorted(t.id for t in back[1].textbounds) == ["T1", "T3", "T4"]  # T2, discontiguous, skipped


def _records(text: str):  # type: ignore[no-untyped-def]
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "x.pubtator"
        path.write_text(text, encoding="utf-8")
        yield from read_pubtator(path)


def test_pubtator_whole_document_and_foreign_lines() -> None:
    doc, _ = parse_ann("321", "A title.\nAn abstract with aspirin.", "T1\tChemical 26 33\taspirin\n")
    text, spans = to_pubtator([doc], SCHEMA)
    assert text.splitlines()[:3] == ["321|t|A title.", "321|a|An abstract with aspirin.",
                                     "321\t26\t33\taspirin\tChemical\t-\t321:T1"]
    assert [(s.start, s.end) for s in spans] == [(0, 34)]
    back = from_pubtator(_records(text), {"321": spans})
    assert snapshot(back) == snapshot([doc])
    # a PubTator file from elsewhere (no key column): entities numbered, bare ids read as NCBI Gene
    foreign = ("7|t|CYP2D6 and codeine\n7|a|\n7\t0\t6\tCYP2D6\tGene\t1565\n"
               "7\t11\t18\tcodeine\tChemical\tMESH:D003061\n\n")
    (back,) = from_pubtator(_records(foreign))
    assert [(t.id, t.type, t.fragments) for t in back.textbounds] == [("T1", "Gene", ((0, 6),)),
                                                                     ("T2", "Chemical", ((11, 18),))]
    assert [(n.target, n.db, n.db_id) for n in back.normalizations] == [("T1", "NCBIGene", "1565"),
                                                                        ("T2", "MESH", "D003061")]


def test_pubtator_round_trip_dev_gold(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    docs, issues = read_directory(gold)
    assert issues == []
    out = tmp_path / "dev.pubtator"
    counts: Counter[str] = Counter()
    export(docs, "pubtator", out, SCHEMA, config=RAW, counts=counts)
    assert (counts["documents"], counts["brat_documents"]) == (299, 300)
    assert (counts["entities"], counts["discontiguous_entities"], counts["relations"]) == (2178, 134, 920)
    assert counts["entity_lines"] == 2178 + sum(len(t.fragments) - 1 for d in docs for t in d.textbounds) == 2315
    # the only loss on the gold: 4 free-text relation comments ("htp neg" is modality, carried by its column)
    assert counts["notes_dropped"] == 4 and counts["attributes_dropped"] == 0 and counts["relations_dropped"] == 0
    loaded = bioc_pubtator.load(out.open(encoding="utf-8"))
    assert sum(len(d.annotations) for d in loaded) == 2315 and sum(len(d.relations) for d in loaded) == 920
    assert all(d.pmid.isdigit() for d in loaded) and len(loaded) == 299
    errors: list[str] = []
    for d in loaded:
        bioc_pubtator.validate(d, errors.append)
    # bioc's validate() checks every mention text; it also looks relation arguments up in the identifier
    # column (concept-level relations), which mention-level relations keyed in column 7 do not use
    assert errors and all("Cannot find" in e for e in errors)
    assert len(read_sidecar(sidecar_path(out))) == 299
    back_counts: Counter[str] = Counter()
    back = read_pubtator_export(out, counts=back_counts)
    assert back_counts == Counter({"documents": 300, "entities": 2178, "relations": 920})
    assert snapshot(back, notes=False, attributes=False) == snapshot(docs, notes=False, attributes=False)
    # the relations' modality survives although the notes that carried it became attributes
    assert relation_keys(back) == relation_keys(docs)


def test_export_command_pubtator_levels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    out = tmp_path / "s.pubtator"
    assert cli.main(["export", str(gold), "--format", "pubtator", "--out", str(out), "--pubtator-level", "sentence",
                     "--no-relation-map"]) == 0
    printed = capsys.readouterr().out
    assert "entities 2178" in printed and "entity_lines 2315" in printed and "documents 300" in printed
    assert not sidecar_path(out).exists()
    back = read_pubtator_export(out)
    assert len(back) == 300 and sum(len(d.textbounds) for d in back) == 2178


def test_exports_read_modality_by_whole_tokens() -> None:
    """BioC and PubTator carry the modality the grammar reads: `not`/`htp` count, `hypertension` does not."""
    ann = ("T1\tChemical 0 1\ta\nT2\tDisease 2 3\tb\n"
           "R1\ttreats Arg1:T1 Arg2:T2\t\nR2\ttreats Arg1:T2 Arg2:T1\t\nR3\tcauses Arg1:T1 Arg2:T2\t\n"
           "#1\tAnnotatorNotes R1\tnot\n#2\tAnnotatorNotes R2\thypertension noted\n#3\tAnnotatorNotes R3\thtp\n")
    doc, issues = parse_ann("1_1", "a b", ann)
    assert issues == []
    rels = {r.id: r.infons for r in to_bioc([doc], SCHEMA).documents[0].passages[0].relations}
    assert rels["R1"].get("Negated") == "true" and "Hypothetical" not in rels["R1"]
    assert "Hypothetical" not in rels["R2"] and "Negated" not in rels["R2"]
    assert rels["R3"].get("Hypothetical") == "true"
    text, _ = to_pubtator([doc], SCHEMA, level="sentence")
    lines = [line.split("\t") for line in text.splitlines() if line.count("\t") == 4]
    assert sorted(line[-1] for line in lines) == ["-", "Hypothetical", "Negated"]
