"""Annotation batches: roster checks, assignment constraints, balance, determinism, appending, pages.

Covers: pipeline.brat.standoff, pipeline.brat.validate, pipeline.campaign.batches, pipeline.cli,
pipeline.cli.brat_commands, pipeline.corpus.brat_export, pipeline.documents, pipeline.schema
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.brat.standoff import BratDocument, Note, Relation, TextBound, read_document
from pipeline.brat.validate import validate_collection
from pipeline.campaign.batches import (
    Person,
    RosterError,
    assign,
    paginate,
    prepare_batches,
    read_manifest,
    read_roster,
)
from pipeline.corpus.brat_export import export_collection
from pipeline.documents import Annotation, SentenceRecord
from pipeline.schema import load_schema
from tests.conftest import FIXTURES

SCHEMA = load_schema()
ROSTER = FIXTURES / "brat" / "roster.csv"


def make_collection(directory: Path, n_docs: int, start: int = 100) -> Path:
    text = "Warfarin doses were lower in CYP2C9 carriers."
    records = [
        SentenceRecord(str(start + i // 3), i % 3, text, annotations=(
            Annotation(((0, 8),), "Chemical", "pubtator", text="Warfarin"),
            Annotation(((29, 35),), "Gene_or_protein", "pubtator", text="CYP2C9"),
        ))
        for i in range(n_docs)
    ]
    export_collection(records, directory, SCHEMA, Counter())
    return directory


def write_roster(path: Path, rows: list[str], header: str = "id,role,phase1") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def manifest(out: Path) -> list[tuple[str, str, str]]:
    return read_manifest(out / "manifest.csv")


def check_constraints(rows: list[tuple[str, str, str]], people: list[Person]) -> None:
    seniors = {p.id for p in people if p.role == "senior"}
    by_doc: dict[str, dict[str, list[str]]] = {}
    for doc, phase, person in rows:
        by_doc.setdefault(doc, {"1": [], "2": []})[phase].append(person)
    for phases in by_doc.values():
        assert len(phases["1"]) == 2 and len(set(phases["1"])) == 2
        assert len(phases["2"]) == 1
        assert phases["2"][0] in seniors and phases["2"][0] not in phases["1"]


def spread(rows: list[tuple[str, str, str]], phase: str, people: list[str]) -> int:
    load = Counter({p: 0 for p in people})
    load.update(person for _, ph, person in rows if ph == phase and person in load)
    return max(load.values()) - min(load.values())


def test_assignment_constraints_balance_and_files(tmp_path: Path) -> None:
    coll = make_collection(tmp_path / "coll", 23)
    out = tmp_path / "out"
    counts: Counter[str] = Counter()
    prepare_batches(coll, ROSTER, out, seed=4, counts=counts)
    rows = manifest(out)
    people = read_roster(ROSTER)
    check_constraints(rows, people)
    assert spread(rows, "1", ["alice", "bob", "carol"]) <= 1
    assert {p for _, ph, p in rows if ph == "2"} == {"dave"}
    assert counts["assignments:phase1"] == 46 and counts["assignments:phase2"] == 23
    # one blind brat collection per phase-1 annotator, with the configuration files, valid; no phase 2 yet
    for doc, phase, person in rows:
        if phase == "1":
            assert (out / "phase1" / person / f"{doc}.txt").is_file()
            assert (out / "phase1" / person / f"{doc}.ann").is_file()
    for person_dir in (out / "phase1").iterdir():
        if person_dir.is_dir():
            assert (person_dir / "annotation.conf").is_file() and (person_dir / "visual.conf").is_file()
            assert (person_dir / "guide.md").is_file() and not (person_dir / "acl.conf").exists()
            assert validate_collection(person_dir) == []
    assert sorted(p.name for p in (out / "phase1").iterdir() if p.is_dir()) == ["alice", "bob", "carol"]
    assert not (out / "phase2").exists()
    # the senior is chosen now and recorded in the campaign manifest
    campaign = json.loads((out / "campaign.json").read_text(encoding="utf-8"))
    assert {d["phase2"] for d in campaign["documents"]} == {"dave"}
    assert sum(len(d["phase1"]) for d in campaign["documents"]) == 46
    # manifest is sorted by document (PMID, index), then phase, then person
    with open(out / "manifest.csv", encoding="utf-8") as fh:
        assert next(csv.reader(fh)) == ["document", "phase", "annotator"]


def test_same_inputs_same_bytes(tmp_path: Path) -> None:
    coll = make_collection(tmp_path / "coll", 12)
    prepare_batches(coll, ROSTER, tmp_path / "a", seed=9, counts=Counter())
    prepare_batches(coll, ROSTER, tmp_path / "b", seed=9, counts=Counter())
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    # rerunning into the same directory replaces the generated parts and leaves the rest (users, journal)
    (tmp_path / "a" / "access").mkdir()
    (tmp_path / "a" / "access" / "users.json").write_text("kept")
    prepare_batches(coll, ROSTER, tmp_path / "a", seed=9, counts=Counter())
    assert manifest(tmp_path / "a") == manifest(tmp_path / "b")
    assert (tmp_path / "a" / "access" / "users.json").read_text() == "kept"
    seeds = {tuple(assign([f"1_{i}" for i in range(12)], read_roster(ROSTER), s)) for s in range(5)}
    assert len(seeds) > 1


def test_seniors_annotating_in_phase1_never_revise_their_own_work(tmp_path: Path) -> None:
    roster = write_roster(tmp_path / "r.tsv", ["s1\tsenior\tyes", "s2\tsenior\tyes", "s3\tsenior\tyes",
                                               "a1\tannotator\t"], header="id\trole\tphase1")
    people = read_roster(roster)
    rows = assign([f"5_{i}" for i in range(30)], people, seed=1)
    check_constraints(rows, people)
    assert spread(rows, "1", ["s1", "s2", "s3", "a1"]) <= 1
    assert spread(rows, "2", ["s1", "s2", "s3"]) <= 1
    # with two seniors who both annotate, no document may go to both of them: the constraint binds
    people = read_roster(write_roster(tmp_path / "r2.csv", ["s1,senior,yes", "s2,senior,yes", "a1,annotator,"]))
    rows = assign([f"5_{i}" for i in range(30)], people, seed=1)
    check_constraints(rows, people)
    assert sum(1 for _, ph, p in rows if ph == "1" and p == "a1") == 30
    assert spread(rows, "1", ["s1", "s2"]) <= 1


def test_previous_manifest_is_kept_and_new_documents_appended(tmp_path: Path) -> None:
    small = make_collection(tmp_path / "small", 9)
    prepare_batches(small, ROSTER, tmp_path / "first", seed=3, counts=Counter())
    before = manifest(tmp_path / "first")
    big = make_collection(tmp_path / "big", 21)
    counts: Counter[str] = Counter()
    prepare_batches(big, ROSTER, tmp_path / "second", seed=3,
                    previous_manifest=tmp_path / "first" / "manifest.csv", counts=counts)
    after = manifest(tmp_path / "second")
    assert set(before) <= set(after)
    assert counts["documents_new"] == 12 and counts["documents_previous"] == 9
    check_constraints(after, read_roster(ROSTER))
    assert spread(after, "1", ["alice", "bob", "carol"]) <= 1
    # the same final state is not what a fresh run gives necessarily, but appending twice changes nothing
    prepare_batches(big, ROSTER, tmp_path / "third", seed=3,
                    previous_manifest=tmp_path / "second" / "manifest.csv", counts=Counter())
    assert manifest(tmp_path / "third") == after


def test_previous_manifest_with_departed_people_and_documents(tmp_path: Path) -> None:
    coll = make_collection(tmp_path / "coll", 3)
    old = tmp_path / "old.csv"
    old.write_text("document,phase,annotator\n100_1,1,zoe\n100_1,1,alice\n100_1,2,dave\n999_1,1,bob\n",
                   encoding="utf-8")
    counts: Counter[str] = Counter()
    prepare_batches(coll, ROSTER, tmp_path / "out", seed=1, previous_manifest=old, counts=counts)
    rows = manifest(tmp_path / "out")
    assert ("100_1", "1", "zoe") in rows and ("999_1", "1", "bob") in rows
    assert counts["previous_unknown_people"] == 1 and counts["previous_missing_from_collection"] == 1
    assert (tmp_path / "out" / "phase1" / "zoe" / "100_1.txt").is_file()


@pytest.mark.parametrize(
    ("rows", "header", "message"),
    [
        (["a,annotator", "s,senior"], "id,role", "at least three"),
        (["a,annotator", "b,annotator", "c,annotator"], "id,role", "no senior"),
        (["a,annotator", "b,annotator,no", "s,senior"], "id,role,phase1", "no senior can revise"),
        (["a,annotator", "s,senior,yes", "t,senior,yes"], "id,role,phase1", None),
        (["a,annotator", "s,senior,yes"], "id,role,phase1", "at least three"),
        (["a,annotator", "a,annotator", "s,senior"], "id,role", "listed twice"),
        (["a,annotator", "b,boss", "s,senior"], "id,role", "must be annotator, senior or manager"),
        (["a,annotator", "m,manager", "s,senior"], "id,role", "at least three"),  # a manager annotates nothing
        (["a,annotator", "b,annotator", "m,manager,yes", "s,senior"], "id,role,phase1", "manager, who annotates"),
        (["a,annotator", "b,annotator", "m,manager", "s,senior"], "id,role", None),
        (["a,annotator", "b,annotator,maybe", "s,senior"], "id,role,phase1", "must be yes or no"),
        (["a,annotator", ",annotator", "s,senior"], "id,role", "empty id"),
        (["a/b,annotator", "c,annotator", "s,senior"], "id,role", "directory name"),
        (["a,annotator", "b,annotator", "s,senior"], "name,kind", "header"),
        (["b,annotator", "s,senior"], "a,annotator", None),  # no header row
    ],
)
def test_roster_errors_before_any_output(tmp_path: Path, rows: list[str], header: str, message: str | None) -> None:
    roster = write_roster(tmp_path / "roster.csv", rows, header)
    coll = make_collection(tmp_path / "coll", 3)
    out = tmp_path / "out"
    if message is None:
        prepare_batches(coll, roster, out, seed=1, counts=Counter())
        check_constraints(manifest(out), read_roster(roster))
        return
    with pytest.raises(RosterError, match=message) as err:
        prepare_batches(coll, roster, out, seed=1, counts=Counter())
    assert str(roster) in str(err.value)
    assert not out.exists()


def test_paginate_long_document() -> None:
    lines = [f"Paragraph {i} mentions warfarin." for i in range(5)]
    text = "\n".join(lines)
    starts = [text.index(line) for line in lines]
    doc = BratDocument(name="EP123", text=text)
    w = len("Paragraph 0 mentions ")
    doc.textbounds = [
        TextBound("T1", "Chemical", ((starts[0] + w, starts[0] + w + 8),), "warfarin"),
        TextBound("T2", "Chemical", ((starts[3] + w, starts[3] + w + 8),), "warfarin"),
        TextBound("T3", "Chemical", ((starts[1], starts[2] + 9),), text[starts[1]:starts[2] + 9]),  # crosses pages
        TextBound("T4", "Chemical", ((starts[2] + w, starts[2] + w + 8),), "warfarin"),
    ]
    doc.relations = [Relation("R1", "isEquivalentTo", (("Arg1", "T1"), ("Arg2", "T2")))]
    doc.notes = [Note("#1", "AnnotatorNotes", "T2", "page two")]
    counts: Counter[str] = Counter()
    pages = paginate(doc, 2, counts)
    assert [p.name for p in pages] == ["EP123_p001", "EP123_p002", "EP123_p003"]
    assert [p.text for p in pages] == ["\n".join(lines[0:2]), "\n".join(lines[2:4]), lines[4]]
    for page in pages:
        for t in page.textbounds:
            assert " ".join(page.text[s:e] for s, e in t.fragments) == t.text
    assert [t.id for t in pages[1].textbounds] == ["T2", "T4"] and pages[1].notes[0].target == "T2"
    assert counts["paging_dropped_entities"] == 1 and counts["paging_dropped_relations"] == 1
    assert counts["pages"] == 3 and counts["paged_documents"] == 1
    assert paginate(doc, 10, Counter()) == [doc]
    with pytest.raises(ValueError):
        paginate(doc, 0, Counter())


def test_batches_with_pages(tmp_path: Path) -> None:
    coll = make_collection(tmp_path / "coll", 2)
    long_text = "\n".join(f"Paragraph {i}: warfarin and CYP2C9." for i in range(7))
    (coll / "EP9_0.txt").write_text(long_text, encoding="utf-8")
    (coll / "EP9_0.ann").write_text(f"T1\tChemical {long_text.rindex('warfarin')} {long_text.rindex('warfarin') + 8}"
                                    "\twarfarin\n", encoding="utf-8")
    counts: Counter[str] = Counter()
    prepare_batches(coll, ROSTER, tmp_path / "out", seed=1, counts=counts, page_size=3)
    annotator = next(p for d, ph, p in manifest(tmp_path / "out") if d == "EP9_0" and ph == "1")
    collection = tmp_path / "out" / "phase1" / annotator
    assert sorted(p.name for p in collection.glob("EP9_0*.txt")) == ["EP9_0_p001.txt", "EP9_0_p002.txt",
                                                                     "EP9_0_p003.txt"]
    last, _ = read_document(collection / "EP9_0_p003.txt")
    assert [t.text for t in last.textbounds] == ["warfarin"]
    assert validate_collection(collection) == []
    campaign = json.loads((tmp_path / "out" / "campaign.json").read_text(encoding="utf-8"))
    entry = next(d for d in campaign["documents"] if d["document"] == "EP9_0")
    assert entry["files"] == ["EP9_0_p001", "EP9_0_p002", "EP9_0_p003"]
    assert counts["paged_documents"] == 1


def _cli(argv: list[str]) -> int:
    return cli.main(argv)


def test_batches_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    coll = make_collection(tmp_path / "coll", 6)
    assert _cli(["batches", "--sample-dir", str(coll), "--roster", str(ROSTER), "--out", str(tmp_path / "o"),
                 "--seed", "2"]) == 0
    assert "6 documents (6 new)" in capsys.readouterr().out
    assert _cli(["batches", "--collection", str(coll), "--roster", str(ROSTER), "--out", str(tmp_path / "p"),
                 "--seed", "2", "--previous", str(tmp_path / "o" / "manifest.csv")]) == 0
    assert manifest(tmp_path / "p") == manifest(tmp_path / "o")
    bad = write_roster(tmp_path / "bad.csv", ["a,annotator"])
    assert _cli(["batches", "--collection", str(coll), "--roster", str(bad), "--out", str(tmp_path / "q")]) == 2
    assert "at least three" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("ids", "message"),
    [(("alice", "bob", "acl.conf"), "reserved name"), (("alice", "bob", "annotation.conf"), "reserved name"),
     (("alice", "bob", "visual.conf"), "reserved name"), (("alice", "bob", "Alice"), "differs only in case"),
     (("alice", "bob", "../carol"), "refused"), (("alice", "bob", "/tmp/carol"), "refused")],
)
def test_roster_refuses_ids_that_cannot_name_a_directory(tmp_path: Path, ids: tuple[str, ...], message: str) -> None:
    """Refused with file:line by the roster reader, before a batch or campaign writes anything."""
    from pipeline.campaign.batches import RosterError, read_roster

    roster = tmp_path / "roster.tsv"
    roster.write_text("id\trole\n" + "".join(f"{pid}\t{'senior' if i == 2 else 'annotator'}\n"
                                              for i, pid in enumerate(ids)), encoding="utf-8")
    with pytest.raises(RosterError, match=rf"^{roster}:4: .*{message}"):
        read_roster(roster)
