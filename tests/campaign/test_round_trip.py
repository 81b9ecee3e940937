"""The whole campaign in code: batches, simulated annotators, review, seniors, finalize, decisions, release, and a
rebuild appended to the running campaign.  Needs part 1 (``campaign review``); skipped where it is absent.

Covers: pipeline.brat.standoff, pipeline.campaign.batches, pipeline.cli, pipeline.cli.campaign_commands,
pipeline.cli.release_commands, pipeline.corpus.brat_export, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline.brat.standoff import parse_ann
from pipeline.campaign.batches import prepare_batches
from pipeline.cli import main
from pipeline.corpus.brat_export import export_collection
from pipeline.documents import Annotation, SentenceRecord
from pipeline.schema import load_schema
from tests.campaign.test_finalize import tree

review_mod = pytest.importorskip("pipeline.campaign.review", reason="part 1 (campaign review) is not in this tree")

SCHEMA = load_schema()
TEXT = "Warfarin doses were lower in CYP2C9 carriers."
CHEM, GENE, DOSES, DONE = "T1\tChemical 0 8\tWarfarin", "T2\tGene_or_protein 29 35\tCYP2C9", "doses", "Done"


def collection(directory: Path, names: list[str]) -> Path:
    records = [
        SentenceRecord(name.split("_")[0], int(name.split("_")[1]) - 1, TEXT, annotations=(
            Annotation(((0, 8),), "Chemical", "pubtator", text="Warfarin"),
            Annotation(((29, 35),), "Gene_or_protein", "pubtator", text="CYP2C9"),
        ))
        for name in names
    ]
    export_collection(records, directory, SCHEMA, Counter())
    return directory


def write(path: Path, lines: list[str]) -> None:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


def resolve(path: Path, accept: set[str], sign_off: bool = True) -> None:
    """A senior's work: accept the marks of ``accept`` (drop the attribute), reject the others (drop the
    annotation, what refers to it and its attributes and notes), then sign off (a Done marker)."""
    doc, issues = parse_ann(path.stem, "", path.read_text(encoding="utf-8"))
    assert issues == []
    drop: set[str] = set()
    for a in doc.attributes:
        if a.type == "Disagreement":
            drop.add(a.id)
            if a.value not in accept:
                drop.add(a.target)
    drop |= {r.id for r in doc.relations if any(ref in drop for _, ref in r.args)}
    drop |= {a.id for a in doc.attributes if a.target in drop}
    drop |= {q.id for q in doc.notes if q.target in drop}
    lines = path.read_text(encoding="utf-8").splitlines()
    write(path, [line for line in lines if line.split("\t", 1)[0] not in drop]
          + ([f"T99\t{DONE} 20 25\tlower"] if sign_off else []))


def test_campaign_round_trip(tmp_path: Path, charts_not_drawn: list[str]) -> None:
    """Its two releases write each chart as a PNG signature (charts_not_drawn): a chart's bytes are compared in
    tests/campaign/test_release.py; the tables the charts would show are checked here."""
    names = ["100_1", "100_2", "100_3", "101_1", "101_2", "101_3"]
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nalice,annotator\nbob,annotator\ncarol,annotator\ndave,senior\nerin,senior\n")
    campaign = tmp_path / "campaign"
    prepare_batches(collection(tmp_path / "coll", names), roster, campaign, seed=5, counts=Counter())
    plan = {d["document"]: d for d in json.loads((campaign / "campaign.json").read_text())["documents"]}

    def phase1(doc: str, k: int) -> Path:
        return campaign / "phase1" / plan[doc]["phase1"][k] / f"{doc}.ann"

    # 100_1: both add the same relation (metabolizes, homogenized to influences at finalize)
    for k in (0, 1):
        write(phase1("100_1", k), [CHEM, GENE, "R1\tmetabolizes Arg1:T2 Arg2:T1\t", f"T9\t{DONE} 20 25\tlower"])
    # 100_2: the first annotator adds a phenotype, the second only finishes: the senior accepts the addition
    write(phase1("100_2", 0), [CHEM, GENE, f"T3\tPhenotype 9 14\t{DOSES}", f"T9\t{DONE} 20 25\tlower"])
    write(phase1("100_2", 1), [CHEM, GENE, f"T9\t{DONE} 20 25\tlower"])
    # 100_3: the first retypes the gene; the senior keeps the second annotator's type
    write(phase1("100_3", 0), [CHEM, "T2\tGenomic_factor 29 35\tCYP2C9", f"T9\t{DONE} 20 25\tlower"])
    write(phase1("100_3", 1), [CHEM, GENE, f"T9\t{DONE} 20 25\tlower"])
    # 101_1: discarded in phase 1
    write(phase1("101_1", 0), [CHEM, GENE, "T9\tDiscard 0 8\tWarfarin", "A1\tReason T9 scope"])
    write(phase1("101_1", 1), [CHEM, GENE, f"T9\t{DONE} 20 25\tlower"])
    # 101_2: a mark the senior leaves: held back at finalize
    write(phase1("101_2", 0), [CHEM, GENE, f"T3\tPhenotype 9 14\t{DOSES}", f"T9\t{DONE} 20 25\tlower"])
    write(phase1("101_2", 1), [CHEM, GENE, f"T9\t{DONE} 20 25\tlower"])
    # 101_3: untouched, pending
    assert main(["campaign", "review", str(campaign)]) == 3  # WORK_LEFT: 101_3 is pending

    def phase2(doc: str) -> Path:
        return campaign / "phase2" / plan[doc]["phase2"] / f"{doc}.ann"

    assert "Disagreement" not in phase2("100_1").read_text()
    assert not phase2("101_1").exists() and not phase2("101_3").exists()
    resolve(phase2("100_1"), accept=set())  # agreed: the senior only signs off
    resolve(phase2("100_2"), accept={plan["100_2"]["phase1"][0]})
    resolve(phase2("100_3"), accept={plan["100_3"]["phase1"][1]})
    # 101_2: the senior signs off but leaves the mark
    write(phase2("101_2"), [*phase2("101_2").read_text().splitlines(), f"T99\t{DONE} 20 25\tlower"])

    final = tmp_path / "final"
    assert main(["campaign", "finalize", str(campaign), "--out", str(final)]) == 3  # 101_2 held back
    report = json.loads((final / "finalize.json").read_text())
    assert [h["document"] for h in report["held_back"]] == ["101_2"]
    assert report["not_in_phase2"] == ["101_3"] and report["discarded_in_phase1"] == ["101_1"]
    docs = {n: parse_ann(n, TEXT, (final / f"{n}.ann").read_text())[0] for n in ("100_1", "100_2", "100_3")}
    assert sorted(p.stem for p in final.glob("*.ann")) == ["100_1", "100_2", "100_3"]
    assert [r.type for r in docs["100_1"].relations] == ["metabolizes"]  # kept as annotated
    assert sorted(t.type for t in docs["100_2"].textbounds) == ["Chemical", "Gene_or_protein", "Phenotype"]
    assert sorted(t.type for t in docs["100_3"].textbounds) == ["Chemical", "Gene_or_protein"]
    assert not any(a.type == "Disagreement" for d in docs.values() for a in d.attributes)

    decisions = tmp_path / "decisions.yaml"
    decisions.write_text("retype:\n  - {term: doses, from: Phenotype, to: Pharmacokinetic_phenotype}\n")
    assert main(["decisions", "apply", str(final), str(decisions)]) == 0
    assert "Pharmacokinetic_phenotype 9 14" in (final / "100_2.ann").read_text()

    first, second = tmp_path / "release1", tmp_path / "release2"
    for out in (first, second):
        assert main(["release", str(final), "--out", str(out), "--campaign", str(campaign),
                     "--preannotation", str(campaign / "preannotation")]) == 0
    assert tree(first) == tree(second)
    readme = (first / "README.md").read_text()
    assert "Of the 6 sentences assigned, 1 was discarded in phase 1 by at least one annotator (scope 1)" in readme
    assert "1 document(s) were held back" in readme
    assert "tables/table9_relations_agreement.csv" in tree(first)
    assert "table9_relations_agreement.png" in charts_not_drawn
    assert "tables/table9_relations_agreement.png" in tree(first)

    # a rebuild samples two more sentences: appended without touching anything, then reviewed as they finish
    before = tree(campaign)
    rebuilt = collection(tmp_path / "rebuilt", [*names, "102_1", "102_2"])
    assert main(["campaign", "append", str(campaign), "--collection", str(rebuilt), "--roster", str(roster)]) == 0
    after = tree(campaign)
    changed = {k for k in before if before[k] != after.get(k)}
    assert changed == {"campaign.json", "manifest.csv"}
    plan = {d["document"]: d for d in json.loads((campaign / "campaign.json").read_text())["documents"]}
    for k in (0, 1):
        write(phase1("102_1", k), [CHEM, GENE, f"T9\t{DONE} 20 25\tlower"])
    assert main(["campaign", "review", str(campaign)]) == 3  # WORK_LEFT: 101_3 and 102_2 still pending
    assert phase2("102_1").is_file()
    assert {k: v for k, v in tree(campaign).items() if k.startswith("phase2/") and k in before} == {
        k: v for k, v in before.items() if k.startswith("phase2/")}
