"""The campaign as its people meet it in brat: every edit below is made by brat's own server code
(``annotator.create_span``/``create_arc``/``delete_arc``, what brat's web client calls), and every collection
the project writes is opened with brat's own document loading and verification (0 messages).

Phase 1: two annotators correct entities (a pre-annotated composite redrawn, a discontiguous entity), draw
relations with their modality in the relation's note (``neg``, ``hyp``, ``hyp | comment``), mark Done or
discard.  ``campaign review`` merges; the senior sees entity disagreements (``Disagreement``) and relation
disagreements (``Disputed_<type>``, modality differences included), accepts by retyping, rejects by
deleting, and signs off with Done.  ``campaign finalize`` takes signed-off documents only (and agreed ones
with ``--accept-agreed``); FINAL and the release keep the modality notes in the PGxCorpus form.

Covers: pipeline.brat.standoff, pipeline.campaign.batches, pipeline.campaign.release.command,
pipeline.campaign.release.read, pipeline.campaign.review, pipeline.campaign.status, pipeline.cli,
pipeline.cli.release_commands, pipeline.corpus.brat_export, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline.brat.standoff import BratDocument, read_document
from pipeline.campaign.batches import prepare_batches
from pipeline.campaign.release.command import release
from pipeline.campaign.release.read import ReleaseInputs
from pipeline.campaign.review import review
from pipeline.campaign.status import campaign_status
from pipeline.cli import main
from pipeline.corpus.brat_export import export_collection
from pipeline.documents import Annotation, SentenceRecord
from pipeline.schema import load_schema
from tests.brat.brat_shim import BratClient, documents_with_messages

SCHEMA = load_schema()
TEXT = "Warfarin doses were lower in CYP2C9 carriers."
NAMES = ["100_1", "100_2", "100_3", "101_1", "101_2", "101_3"]
CHEM, DOSES, LOWER, GENE, CARRIERS = (0, 8), (9, 14), (20, 25), (29, 35), (29, 44)


def collection(directory: Path) -> Path:
    records = [
        SentenceRecord(name.split("_")[0], int(name.split("_")[1]) - 1, TEXT, annotations=(
            Annotation((CHEM,), "Chemical", "pubtator", "MESH:D014859", "Warfarin"),
            Annotation((GENE,), "Gene_or_protein", "pubtator", "1559", "CYP2C9"),
            Annotation((CARRIERS,), "Genomic_variation", "ontology", None, "CYP2C9 carriers"),
        ))
        for name in NAMES
    ]
    export_collection(records, directory, SCHEMA, Counter())
    return directory


def ids(path: Path) -> BratDocument:
    doc, issues = read_document(path.with_suffix(".txt"))
    assert issues == [], issues
    return doc


def tid(doc: BratDocument, span: tuple[int, int], type_: str | None = None) -> str:
    return next(t.id for t in doc.textbounds if t.fragments == (span,) and (type_ is None or t.type == type_))


def relation_lines(doc: BratDocument) -> list[str]:
    """``type Arg1text -> Arg2text | note`` per relation, in file order."""
    text = {t.id: t.text for t in doc.textbounds}
    return [f"{r.type} {text[r.arg('Arg1') or '']} -> {text[r.arg('Arg2') or '']} | "
            + " / ".join(doc.notes_for(r.id)) for r in doc.relations]


def no_messages(tmp_path: Path, *collections: Path) -> None:
    for k, coll in enumerate(collections):
        assert documents_with_messages(coll, tmp_path / f"scratch{k}") == {}, coll


@pytest.fixture()
def campaign(tmp_path: Path) -> Path:
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role,phase1\nalice,annotator,yes\nbob,annotator,yes\ndave,senior,no\n", encoding="utf-8")
    out = tmp_path / "campaign"
    prepare_batches(collection(tmp_path / "coll"), roster, out, seed=5, counts=Counter())
    return out


def phase1_work(campaign: Path, brat: BratClient) -> None:
    """Both annotators' phase-1 work, through brat's own editing code."""
    a, b = "/phase1/alice", "/phase1/bob"
    # 100_1 (to adjudicate)
    doc = ids(campaign / "phase1" / "alice" / "100_1.ann")
    chem, gene, comp = tid(doc, CHEM), tid(doc, GENE), tid(doc, CARRIERS)
    # alice redraws the pre-annotated composite identically: brat drops its Composite attribute
    brat.delete_span(a, "100_1", comp)
    brat.create_span(a, "100_1", [CARRIERS], "Genomic_variation")
    comp_a = tid(ids(campaign / "phase1" / "alice" / "100_1.ann"), CARRIERS)
    brat.create_span(a, "100_1", [DOSES], "Pharmacokinetic_phenotype")  # only alice: an entity disagreement
    # a discontiguous entity, only alice: as brat's client makes it (the first part, then Add Frag.)
    brat.create_span(a, "100_1", [CHEM], "Phenotype")
    disc = next(t.id for t in ids(campaign / "phase1" / "alice" / "100_1.ann").textbounds if t.type == "Phenotype")
    brat.create_span(a, "100_1", [CHEM, LOWER], "Phenotype", id_=disc)
    brat.create_arc(a, "100_1", chem, gene, "isAssociatedWith", comment="neg")  # bob: hyp
    brat.create_arc(a, "100_1", gene, chem, "isAssociatedWith")  # only alice
    brat.create_arc(a, "100_1", comp_a, chem, "influences", comment="hyp | check the dose")  # bob: hyp
    brat.create_span(a, "100_1", [LOWER], "Done")
    brat.create_arc(b, "100_1", chem, gene, "isAssociatedWith", comment="hyp")
    brat.create_arc(b, "100_1", comp, chem, "influences", comment="hyp")
    brat.create_span(b, "100_1", [LOWER], "Done")
    # 100_2: nothing to change, both finish it (agreed)
    for person in (a, b):
        brat.create_span(person, "100_2", [LOWER], "Done")
    # 100_3: alice discards it; bob finishes it
    brat.create_span(a, "100_3", [CHEM], "Discard", attributes={"Reason": "scope"})
    brat.create_span(b, "100_3", [LOWER], "Done")
    # 101_1: alice adds an entity bob does not; both finish (the senior will discard it)
    brat.create_span(a, "101_1", [DOSES], "Phenotype")
    for person in (a, b):
        brat.create_span(person, "101_1", [LOWER], "Done")
    # 101_2, 101_3: bob discards them
    for name in ("101_2", "101_3"):
        brat.create_span(a, name, [LOWER], "Done")
        brat.create_span(b, name, [CHEM], "Discard", attributes={"Reason": "typo"})


@pytest.mark.slow  # the whole campaign through brat's server code
def test_campaign_in_brats_own_code(campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    brat = BratClient(campaign, tmp_path / "brat-work")
    # phase 1 as handed out, and as the annotators leave it, opens in brat with no message
    no_messages(tmp_path, tmp_path / "coll", campaign / "phase1" / "alice", campaign / "phase1" / "bob")
    phase1_work(campaign, brat)
    assert brat.messages == []
    no_messages(tmp_path, campaign / "phase1" / "alice", campaign / "phase1" / "bob")
    assert '#1\tAnnotatorNotes R1\tneg' in (campaign / "phase1" / "alice" / "100_1.ann").read_text()

    report = review(campaign, SCHEMA)
    assert report["documents"] == {"assigned": 6, "ready": 3, "discarded": 3, "held_back": 0, "pending": 0}
    senior = campaign / "phase2" / "dave"
    merged = ids(senior / "100_1.ann")
    marks = sorted((t.type, t.fragments, a.value) for a in merged.attributes if a.type == "Disagreement"
                   for t in merged.textbounds if t.id == a.target)
    # alice's redrawn composite is not a disagreement (Composite is display only, and kept)
    assert marks == [("Pharmacokinetic_phenotype", (DOSES,), "alice"), ("Phenotype", (CHEM, LOWER), "alice")]
    comp = tid(merged, CARRIERS)
    assert [a.type for a in merged.attributes if a.target == comp] == ["Composite"]
    # a modality difference is a disagreement; what only one drew is too; the note says who said what
    assert relation_lines(merged) == [
        "Disputed_isAssociatedWith Warfarin -> CYP2C9 | [alice: neg; bob: hyp]",
        "Disputed_isAssociatedWith CYP2C9 -> Warfarin | [alice: none; bob: no relation]",
        "influences CYP2C9 carriers -> Warfarin | hyp alice: check the dose",
    ]
    # never two relations with one (origin, type, target): brat edits and deletes by it
    triples = [(r.arg("Arg1"), r.type, r.arg("Arg2")) for r in merged.relations]
    assert len(triples) == len(set(triples))
    assert not [a for a in merged.attributes if a.target.startswith("R")]
    pair = report["agreement"]["pairs"][0]
    assert pair["modality"] == {"matched": 2, "same_modality": 1, "agreement": 0.5}
    # phase 2, disagreements and all, opens in brat with no message
    no_messages(tmp_path, senior)

    dave = next(r for r in campaign_status(campaign)["rows"] if r["person"] == "dave")
    assert (dave["in_collection"], dave["untouched"], dave["done"], dave["agreed"],
            dave["disagreements_left"]) == (3, 3, 0, 1, 5)

    # the senior signs 100_1 off too early: held back, naming what is left; 100_2 not signed off: pending
    d = "/phase2/dave"
    brat.create_span(d, "100_1", [LOWER], "Done")
    final = tmp_path / "final"
    assert main(["campaign", "finalize", str(campaign), "--out", str(final)]) == 3
    err = capsys.readouterr().err
    assert "held back 100_1" in err and "still carries Disagreement=alice" in err
    assert "is still disputed: retype it to isAssociatedWith to accept it or delete it to reject it" in err
    assert "pending 100_2 (dave): not signed off" in err and "pending 101_1 (dave): not signed off (1 mark" in err

    # the senior resolves 100_1 in brat: accepts one entity (the attribute set to '?'), rejects the other,
    # accepts the modality-disputed relation by retyping it (and writes the modality), rejects the other
    merged = ids(senior / "100_1.ann")
    chem, gene = tid(merged, CHEM), tid(merged, GENE)
    doses = tid(merged, DOSES)
    brat.create_span(d, "100_1", [DOSES], "Pharmacokinetic_phenotype", attributes={"Composite": False}, id_=doses)
    brat.delete_span(d, "100_1", next(t.id for t in merged.textbounds if t.fragments == (CHEM, LOWER)))
    brat.create_arc(d, "100_1", chem, gene, "isAssociatedWith", comment="neg",
                    old_type="Disputed_isAssociatedWith", old_target=gene)
    brat.delete_arc(d, "100_1", gene, chem, "Disputed_isAssociatedWith")
    # 101_1: the senior discards it (a decision, not work left)
    brat.create_span(d, "101_1", [CHEM], "Discard", attributes={"Reason": "ambiguous"})
    assert brat.messages == []
    no_messages(tmp_path, senior)
    resolved = ids(senior / "100_1.ann")
    assert relation_lines(resolved) == ["isAssociatedWith Warfarin -> CYP2C9 | neg",
                                        "influences CYP2C9 carriers -> Warfarin | hyp alice: check the dose"]
    dave = next(r for r in campaign_status(campaign)["rows"] if r["person"] == "dave")
    assert (dave["untouched"], dave["edited"], dave["done"], dave["discarded"], dave["disagreements_left"]) == (
        1, 2, 1, 1, 0)

    # finalize takes signed-off documents only; 100_2 (agreed) waits for a sign-off or --accept-agreed
    assert main(["campaign", "finalize", str(campaign), "--out", str(final), "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["documents"] == 1 and [p["document"] for p in out["pending"]] == ["100_2"]
    assert out["discarded"] == [{"document": "101_1", "senior": "dave", "reasons": ["ambiguous"]}]
    assert out["discarded_in_phase1"] == ["100_3", "101_2", "101_3"] and out["not_in_phase2"] == []
    assert main(["campaign", "finalize", str(campaign), "--out", str(final), "--accept-agreed", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["documents"] == 2 and out["accepted_agreed"] == ["100_2"] and out["pending"] == []
    # FINAL: the modality in the relation's note, in the PGxCorpus form; no campaign mark
    doc = ids(final / "100_1.ann")
    assert relation_lines(doc) == ["isAssociatedWith Warfarin -> CYP2C9 | neg",
                                   "influences CYP2C9 carriers -> Warfarin | hyp alice: check the dose"]
    assert sorted(t.type for t in doc.textbounds) == ["Chemical", "Gene_or_protein", "Genomic_variation",
                                                      "Pharmacokinetic_phenotype"]
    assert not doc.attributes
    assert "<RELATION>" not in (final / "annotation.conf").read_text()

    rel = tmp_path / "release"
    release(ReleaseInputs(final=final, campaign=campaign, name="demo", version="1", date="2026-01-01"), rel, SCHEMA)
    assert (rel / "brat" / "100_1.ann").read_bytes() == (final / "100_1.ann").read_bytes()
    assert "#1\tAnnotatorNotes R1\tneg\n" in (rel / "brat" / "100_1.ann").read_text()
    # FINAL and the release open in brat with no message
    no_messages(tmp_path, final, rel / "brat")


def test_an_older_campaigns_modality_attributes_are_read_and_never_written(campaign: Path, tmp_path: Path) -> None:
    """A campaign started before modality moved to notes: Negated/Hypothetical attributes on relations."""
    for person in ("alice", "bob"):
        coll = campaign / "phase1" / person
        conf = coll / "annotation.conf"
        conf.write_text(conf.read_text().rstrip("\n") + "\nNegated\tArg:<RELATION>\nHypothetical\tArg:<RELATION>\n")
    pre = campaign / "preannotation" / "annotation.conf"
    pre.write_text(pre.read_text().rstrip("\n") + "\nNegated\tArg:<RELATION>\nHypothetical\tArg:<RELATION>\n")
    for person, extra in (("alice", ["A9\tNegated R1"]), ("bob", ["#9\tAnnotatorNotes R1\tneg"])):
        ann = campaign / "phase1" / person / "100_1.ann"
        ann.write_text(ann.read_text() + "".join(line + "\n" for line in (
            "R1\tisAssociatedWith Arg1:T1 Arg2:T2\t", *extra, "T9\tDone 20 25\tlower")))
    report = review(campaign, SCHEMA)
    assert report["documents"]["ready"] == 1, (report["held_back"], report["pending"])
    senior = campaign / "phase2" / "dave"
    merged = ids(senior / "100_1.ann")
    # the same modality either way: agreed, written as a note
    assert relation_lines(merged) == ["isAssociatedWith Warfarin -> CYP2C9 | neg"]
    assert not [a for a in merged.attributes if a.target.startswith("R")]
    conf = (senior / "annotation.conf").read_text()
    assert "Negated" not in conf and "Hypothetical" not in conf and "<RELATION>" not in conf
    assert "Negated" not in (senior / "visual.conf").read_text()
    no_messages(tmp_path, senior)
    # a legacy attribute in a phase-2 document written before the upgrade (its configuration since rewritten
    # without it) is read as modality and becomes a note in FINAL
    ann = senior / "100_1.ann"
    ann.write_text(ann.read_text() + "T9\tDone 20 25\tlower\nA9\tHypothetical R1\n")
    assert main(["campaign", "finalize", str(campaign), "--out", str(tmp_path / "final")]) == 3  # others pending
    assert relation_lines(ids(tmp_path / "final" / "100_1.ann")) == ["isAssociatedWith Warfarin -> CYP2C9 | hyp neg"]
    no_messages(tmp_path, tmp_path / "final")
