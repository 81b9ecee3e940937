"""The campaign simulator: seeded, reproducible, reports what it injected, and review/finalize run on it.

Covers: pipeline.brat.conf, pipeline.brat.modality, pipeline.brat.standoff, pipeline.campaign.conf,
pipeline.campaign.documents, pipeline.campaign.layout, pipeline.campaign.phase1, pipeline.campaign.simulate,
pipeline.cli, pipeline.cli.brat_commands, pipeline.cli.campaign_commands, pipeline.cli.release_commands,
pipeline.cli.simulate_commands, pipeline.schema
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.conf import annotation_conf, write_conf_files
from pipeline.brat.modality import NEGATED, parse_note
from pipeline.brat.standoff import read_collection
from pipeline.campaign import simulate
from pipeline.campaign.conf import undisputed_type
from pipeline.campaign.documents import is_done, is_finished
from pipeline.campaign.layout import DISAGREEMENT, DISCARD_TYPE, CampaignError
from pipeline.schema import load_schema

SCHEMA = load_schema()

# (text, entities as (type, phrase)); a genomic factor with a chemical and a phenotype in each sentence,
# so relations are proposed and every kind of disagreement can be injected
SENTENCES = {
    f"{100 + i}_1": (f"CYP2C9 genotype {i} modifies the warfarin dose requirement of patients with thrombosis "
                     f"treated by warfarin in cohort {i}.",
                     [("Gene_or_protein", "CYP2C9"), ("Limited_variation", "CYP2C9 genotype"),
                      ("Chemical", "warfarin"), ("Pharmacodynamic_phenotype", "warfarin dose requirement"),
                      ("Disease", "thrombosis")])
    for i in range(8)
}
ROSTER = "id\trole\nann1\tannotator\nann2\tannotator\nann3\tannotator\nsenior1\tsenior\nsenior2\tsenior\n"
ALWAYS = {kind: 1.0 for kind in simulate.PHASE1_RATES} | {"discarded": 0.0}


def source_collection(directory: Path) -> Path:
    directory.mkdir(parents=True)
    write_conf_files(directory, SCHEMA)
    (directory / "annotation.conf").write_text(annotation_conf(SCHEMA), encoding="utf-8")
    for name, (text, ents) in SENTENCES.items():
        lines = []
        for n, (type_, phrase) in enumerate(ents, 1):
            start = text.index(phrase)
            lines.append(f"T{n}\t{type_} {start} {start + len(phrase)}\t{phrase}\n")
        (directory / f"{name}.txt").write_text(text, encoding="utf-8")
        (directory / f"{name}.ann").write_text("".join(lines), encoding="utf-8")
    return directory


@pytest.fixture()
def campaign(tmp_path: Path) -> Path:
    src = source_collection(tmp_path / "brat")
    roster = tmp_path / "roster.tsv"
    roster.write_text(ROSTER, encoding="utf-8")
    out = tmp_path / "campaign"
    assert cli.main(["batches", "--collection", str(src), "--roster", str(roster), "--out", str(out)]) == 0
    return out


def collection_bytes(root: Path, phase: str) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / phase).glob("*/*.ann"))}


def test_same_seed_same_files_other_seed_other_files(campaign: Path, tmp_path: Path) -> None:
    copies = []
    for n, seed in enumerate((13, 13, 14)):
        root = tmp_path / f"copy{n}"
        root.mkdir()
        cli.main(["batches", "--collection", str(tmp_path / "brat"), "--roster", str(tmp_path / "roster.tsv"),
                  "--out", str(root / "campaign")])
        report = simulate.simulate_phase1(root / "campaign", root / "campaign" / "preannotation", seed)
        copies.append((collection_bytes(root / "campaign", "phase1"), report.as_json()))
    assert copies[0] == copies[1]
    assert copies[0][0] != copies[2][0]
    assert copies[0][1]["counts"]["documents_annotated"] == 16


def test_counts_are_the_edits_made(campaign: Path) -> None:
    report = simulate.simulate_phase1(campaign, campaign / "preannotation", 13, ALWAYS)
    kinds = Counter(edit.split(":", 1)[0] for edits in report.edits.values() for edit in edits)
    for kind in ("dropped_entity", "boundary_shift", "retyped_entity"):
        assert report.counts[kind] == kinds[kind] == 16, kind  # possible in every document
    for kind in ("missing_relation", "modality_flip"):  # unless the dropped entity took every relation
        assert report.counts[kind] == kinds[kind] >= 1, kind
    assert report.counts["disagreements_injected"] == sum(kinds.values())
    assert report.counts["relations_proposed"] > 0
    docs, issues = read_collection(campaign / "phase1" / "ann1")
    assert issues == []
    for doc in docs:
        assert is_done(doc)
        negated = [r for r in doc.relations if NEGATED in parse_note(" ".join(doc.notes_for(r.id))).modality]
        flipped = any(e.startswith("modality_flip") for e in report.edits[f"ann1/{doc.name}"])
        assert len(negated) == int(flipped), doc.name  # the modality flip, in the relation note grammar


def test_review_and_finalize_run_on_the_result(campaign: Path, tmp_path: Path) -> None:
    phase1 = simulate.simulate_phase1(campaign, campaign / "preannotation", 7)
    assert phase1.counts["disagreements_injected"] > 0
    assert cli.main(["campaign", "review", str(campaign)]) == 0
    report = json.loads((campaign / "review" / "report.json").read_text(encoding="utf-8"))
    states = report["counts"] if "counts" in report else report
    merged, _ = read_collection(campaign / "phase2" / "senior1")
    merged += read_collection(campaign / "phase2" / "senior2")[0]
    marks = sum(1 for d in merged for a in d.attributes if a.type == DISAGREEMENT)
    marks += sum(1 for d in merged for r in d.relations if undisputed_type(r.type))  # disputed relations
    assert marks > 0, states
    phase2 = simulate.simulate_phase2(campaign, 7)
    assert phase2.counts["marks_accepted"] + phase2.counts["marks_rejected"] <= marks
    assert phase2.counts["documents_signed_off"] == len(merged)
    for senior in ("senior1", "senior2"):
        for doc in read_collection(campaign / "phase2" / senior)[0]:
            assert is_done(doc) and not any(a.type == DISAGREEMENT for a in doc.attributes)
    final = tmp_path / "final"
    assert cli.main(["campaign", "finalize", str(campaign), "--out", str(final)]) == 0
    assert len(list(final.glob("*.ann"))) == len(merged)
    # a second run has nothing left to do and changes nothing
    before = collection_bytes(campaign, "phase2")
    again = simulate.simulate_phase2(campaign, 7)
    assert again.counts["skipped_finished"] == len(merged) and collection_bytes(campaign, "phase2") == before


def test_documents_people_touched_are_left_alone(campaign: Path) -> None:
    ann = sorted((campaign / "phase1" / "ann1").glob("*.ann"))
    started, finished = ann[0], ann[1]
    started.write_text(started.read_text(encoding="utf-8").split("\n", 1)[1], encoding="utf-8")  # T1 deleted
    text = finished.with_suffix(".txt").read_text(encoding="utf-8")
    word = text.split()[0]
    finished.write_text(finished.read_text(encoding="utf-8") + f"T99\tDone 0 {len(word)}\t{word}\n", encoding="utf-8")
    before = (started.read_bytes(), finished.read_bytes())
    report = simulate.simulate_phase1(campaign, campaign / "preannotation", 13)
    assert report.counts["skipped_started"] == 1 and report.counts["skipped_finished"] == 1
    assert (started.read_bytes(), finished.read_bytes()) == before


def test_a_reference_without_a_document_is_refused_before_writing(campaign: Path, tmp_path: Path) -> None:
    ref = tmp_path / "ref"
    ref.mkdir()
    for p in (campaign / "preannotation").glob("10[0-6]_1.*"):
        (ref / p.name).write_bytes(p.read_bytes())  # 107_1 missing
    before = collection_bytes(campaign, "phase1")
    with pytest.raises(CampaignError, match="107_1"):
        simulate.simulate_phase1(campaign, ref, 13)
    assert collection_bytes(campaign, "phase1") == before


def test_phase2_before_review_is_refused(campaign: Path) -> None:
    with pytest.raises(CampaignError, match="campaign review"):
        simulate.simulate_phase2(campaign, 13)


def test_discard_is_written_as_brat_writes_it(campaign: Path) -> None:
    rates = {kind: 0.0 for kind in simulate.PHASE1_RATES} | {"discarded": 1.0}
    report = simulate.simulate_phase1(campaign, campaign / "preannotation", 13, rates)
    assert report.counts["discarded"] == 16 and report.counts["disagreements_injected"] == 0
    for doc in read_collection(campaign / "phase1" / "ann2")[0]:
        discard = [t for t in doc.textbounds if t.type == DISCARD_TYPE]
        assert len(discard) == 1 and is_finished(doc) and not is_done(doc)
        assert [a.value for a in doc.attributes if a.target == discard[0].id] != [None]


def test_cli(campaign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["campaign", "simulate", str(campaign), "--phase", "1"]) == 2
    assert "--reference" in capsys.readouterr().err
    assert cli.main(["campaign", "simulate", str(campaign), "--phase", "1", "--reference",
                     str(campaign / "preannotation"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["phase"] == 1 and out["counts"]["documents_annotated"] == 16


def test_a_finished_reference_gives_its_relations_and_not_its_marks(campaign: Path, tmp_path: Path) -> None:
    """A gold-like reference: its relations (with their notes) are the annotators' starting point, its Done
    marks are not copied, and no relation is proposed."""
    ref = tmp_path / "gold"
    ref.mkdir()
    for txt in (campaign / "preannotation").glob("*.txt"):
        (ref / txt.name).write_bytes(txt.read_bytes())
        ann = txt.with_suffix(".ann").read_text(encoding="utf-8")
        ann += "R1\tinfluences Arg1:T2 Arg2:T4\t\n#9\tAnnotatorNotes R1\thtp\nT9\tDone 0 6\tCYP2C9\n"
        (ref / f"{txt.stem}.ann").write_text(ann, encoding="utf-8")
    none = {kind: 0.0 for kind in simulate.PHASE1_RATES}
    report = simulate.simulate_phase1(campaign, ref, 13, none)
    assert report.counts["relations_proposed"] == 0 and report.counts["disagreements_injected"] == 0
    for doc in read_collection(campaign / "phase1" / "ann3")[0]:
        assert [r.type for r in doc.relations] == ["influences"]
        assert doc.notes_for("R1") == ["htp"]
        assert sum(1 for t in doc.textbounds if t.type == "Done") == 1
