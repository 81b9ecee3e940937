"""The campaign on real data: the 300 PGxCorpus dev sentences, the gold as one annotator's result and the
PubTator pre-annotation (mapped to the schema) as the other's.

Covers: pipeline.brat.conf, pipeline.brat.modality, pipeline.brat.standoff, pipeline.brat.validate,
pipeline.campaign.batches, pipeline.campaign.conf, pipeline.campaign.documents, pipeline.campaign.merge,
pipeline.campaign.review, pipeline.corpus.brat_export, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

import re
import shutil
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from pipeline.brat.conf import write_conf_files
from pipeline.brat.modality import format_note, parse_note
from pipeline.brat.standoff import BratDocument, parse_ann, read_document, to_annotations
from pipeline.brat.validate import validate_collection
from pipeline.campaign.batches import prepare_batches
from pipeline.campaign.conf import campaign_annotation_conf, undisputed_type
from pipeline.campaign.documents import entity_keys, relation_keys, without_markers
from pipeline.campaign.merge import strip_dispute
from pipeline.campaign.review import review
from pipeline.corpus.brat_export import export_collection
from pipeline.documents import SentenceRecord
from pipeline.schema import load_schema
from tests.brat.brat_shim import documents_with_messages
from tests.conftest import shared_path

SCHEMA = load_schema()


def test_gold_validates_against_the_campaign_configuration(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    write_conf_files(tmp_path, SCHEMA)
    conf = tmp_path / "annotation.conf"
    conf.write_text(campaign_annotation_conf(conf.read_text(encoding="utf-8"), ["gold", "pubtator"]),
                    encoding="utf-8")
    assert validate_collection(gold, conf) == []
    assert len(list(gold.glob("*.ann"))) == 300


def keys(doc: BratDocument) -> tuple[Counter, Counter]:
    """Entity and relation keys; a disputed relation counts under its real type (what accepting it gives)."""
    doc = without_markers(doc)
    ents = entity_keys(doc)
    rels = Counter((undisputed_type(t) or t, args, mod) for t, args, mod in relation_keys(doc, ents).values())
    return Counter(ents.values()), rels


def drop_marks_of(doc: BratDocument, person: str) -> BratDocument:
    """What a senior gets by deleting ``person``'s marked entities (brat deletes their relations too) and the
    disputed relations only ``person`` drew (their note says another annotator drew ``no relation``),
    removing every other mark and retyping every other disputed relation (brat keeps its note; the merge's
    who-said-what text is taken out as finalize does)."""
    gone = {a.target for a in doc.attributes if a.type == "Disagreement" and a.value == person}
    notes = {q.target: q.text for q in doc.notes if q.target.startswith("R")}
    for r in doc.relations:
        absent = set(re.findall(r"([A-Za-z0-9_.-]+): no relation", notes.get(r.id, "")))
        if undisputed_type(r.type) and absent and person not in absent:
            gone.add(r.id)
    out = BratDocument(doc.name, doc.text)
    out.textbounds = [t for t in doc.textbounds if t.id not in gone]
    kept = {t.id for t in out.textbounds}
    out.relations = [replace(r, type=undisputed_type(r.type) or r.type) for r in doc.relations
                     if r.id not in gone and all(ref in kept for _, ref in r.args)]
    alive = kept | {r.id for r in out.relations}
    out.attributes = [a for a in doc.attributes if a.type != "Disagreement" and a.target in alive]
    out.notes = [replace(q, text=format_note(parse_note(q.text).modality, strip_dispute(parse_note(q.text).free)[0]))
                 if q.target.startswith("R") else q for q in doc.notes if q.target in alive]
    return out


def pubtator_records() -> list[SentenceRecord]:
    """The shared PubTator pre-annotations of the dev sentences, as sentence records (texts from the gold)."""
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    pubtator = shared_path("data", "pgxcorpus-dev", "pubtator")
    records = []
    for ann in sorted(pubtator.glob("*.ann")):
        text = (gold / f"{ann.stem}.txt").read_text(encoding="utf-8")
        doc, issues = parse_ann(ann.stem, text, ann.read_text(encoding="utf-8"))
        assert issues == []
        pmid, _, k = ann.stem.partition("_")
        records.append(SentenceRecord(pmid, int(k) - 1, text, annotations=tuple(to_annotations(doc, "pubtator"))))
    return records


@pytest.mark.slow  # the real gold and PubTator
def test_gold_and_pubtator_merge_into_a_valid_phase2(tmp_path: Path) -> None:
    gold = shared_path("data", "pgxcorpus-dev", "gold")
    records = pubtator_records()
    counts: Counter[str] = Counter()
    export_collection(records, tmp_path / "coll", SCHEMA, counts)
    assert counts["documents"] == 300
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\ngold,annotator\npubtator,annotator\nsenior,senior\n", encoding="utf-8")
    campaign = tmp_path / "campaign"
    prepare_batches(tmp_path / "coll", roster, campaign, seed=1, counts=Counter())
    names = sorted(p.stem for p in gold.glob("*.txt"))
    assert sorted(p.stem for p in (campaign / "phase1" / "gold").glob("*.txt")) == names

    # the annotators' results: the gold, and the pre-annotation as handed out; both marked Done
    for name in names:
        text = (gold / f"{name}.txt").read_text(encoding="utf-8")
        assert (campaign / "phase1" / "gold" / f"{name}.txt").read_text(encoding="utf-8") == text
        first = re.search(r"\S+", text)
        assert first is not None
        done = f"T99999\tDone {first.start()} {first.end()}\t{first.group()}\n"
        gold_ann = (gold / f"{name}.ann").read_text(encoding="utf-8")
        (campaign / "phase1" / "gold" / f"{name}.ann").write_text(gold_ann.rstrip("\n") + "\n" + done,
                                                                  encoding="utf-8")
        pub = campaign / "phase1" / "pubtator" / f"{name}.ann"
        pub.write_text(pub.read_text(encoding="utf-8") + done, encoding="utf-8")

    counts = Counter()
    report = review(campaign, SCHEMA, counts)
    assert report["documents"]["ready"] == 300 and counts["added"] == 300, report["held_back"][:3]
    senior = campaign / "phase2" / "senior"
    assert validate_collection(senior) == []
    # brat's own document loading and verification show nothing on any of the 300 documents
    for k, coll in enumerate((campaign / "phase1" / "gold", campaign / "phase1" / "pubtator", senior)):
        assert documents_with_messages(coll, tmp_path / f"scratch{k}") == {}, coll

    n_gold_entities = 0
    for name in names:
        merged, issues = read_document(senior / f"{name}.txt")
        assert issues == []
        g, _ = read_document(campaign / "phase1" / "gold" / f"{name}.txt")
        p, _ = read_document(campaign / "phase1" / "pubtator" / f"{name}.txt")
        g_ents, g_rels = keys(g)
        p_ents, p_rels = keys(p)
        m_ents, m_rels = keys(merged)
        n_gold_entities += sum(g_ents.values())
        # every annotation of both exactly once: accepting every mark gives the union
        assert m_ents == g_ents | p_ents, name
        assert m_rels == g_rels | p_rels, name
        # an unmarked annotation is one both made; a marked one, one only its annotator made
        marks = {a.target: a.value for a in merged.attributes if a.type == "Disagreement"}
        ents = entity_keys(merged)
        for tid, key in ents.items():
            if p_ents[key] == 0:
                assert marks.get(tid) == "gold", name
            elif g_ents[key] == 0:
                assert marks.get(tid) == "pubtator", name
            elif g_ents[key] == p_ents[key] == 1:
                assert tid not in marks, name
        # deleting the pubtator annotator's marks and unmarking the rest gives back the gold
        back = drop_marks_of(merged, "pubtator")
        b_ents, b_rels = keys(back)
        assert b_ents == g_ents and b_rels == g_rels, name
        # every entity note of the gold is kept, on the same entity (with its author where the versions differ)
        back_ents = entity_keys(back)
        back_notes = {back_ents[q.target]: q.text for q in back.notes if q.target in back_ents}
        for q in g.notes:
            key = entity_keys(g).get(q.target)
            if key is not None:
                assert q.text in back_notes.get(key, ""), (name, q.text)
        # never two relations with one (origin, type, target): brat could not tell them apart
        triples = [(r.arg("Arg1"), r.type, r.arg("Arg2")) for r in merged.relations]
        assert len(triples) == len(set(triples)), name
    # the agreement report: the gold is the reference of the pair
    pair = report["agreement"]["pairs"][0]
    assert (pair["reference"], pair["predicted"], pair["documents"]["common"]) == ("gold", "pubtator", 300)
    exact = pair["entities"]["exact_strict"]["micro"]
    assert exact["tp"] + exact["fn"] == n_gold_entities
    assert 0.3 < exact["f1"] < 0.9, exact
    assert pair["relations"]["exact_strict_directed"]["micro"]["fn"] > 800  # the pre-annotation has no relations

    # a second run adds nothing and changes nothing
    before = {p: p.read_bytes() for p in sorted(campaign.rglob("*")) if p.is_file()}
    counts = Counter()
    review(campaign, SCHEMA, counts)
    assert counts["added"] == 0
    assert {p: p.read_bytes() for p in sorted(campaign.rglob("*")) if p.is_file()} == before
    shutil.rmtree(campaign)
