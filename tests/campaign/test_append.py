"""campaign append: a rebuild's new sentences join a running campaign; nothing assigned or annotated moves.

Covers: pipeline.brat.conf, pipeline.campaign.append, pipeline.campaign.publish, pipeline.cli,
pipeline.cli.release_commands, pipeline.corpus.brat_export
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from pipeline.brat.conf import write_conf_files
from pipeline.campaign.layout import APPEND_PENDING
from pipeline.cli import main
from tests.campaign.builders import SCHEMA, TEXTS, build_campaign
from tests.campaign.test_finalize import tree

NEW = {"400_1": "Clopidogrel response depends on CYP2C19.", "400_2": "No effect was seen.",
       "500_1": "SLCO1B1 transports simvastatin."}


def rebuild_collection(root: Path) -> Path:
    """What a rebuild writes to OUT/brat: the old sentences (re-pre-annotated differently) and new ones."""
    out = root / "rebuild" / "brat"
    out.mkdir(parents=True)
    write_conf_files(out, SCHEMA)
    for name, text in {**TEXTS, **NEW}.items():
        (out / f"{name}.txt").write_text(text)
        (out / f"{name}.ann").write_text(f"T1\tChemical 0 4\t{text[:4]}\n")
    return out


def roster(root: Path) -> Path:
    path = root / "roster.tsv"
    path.write_text("id\trole\nann1\tannotator\nann2\tannotator\nann3\tannotator\nsenior1\tsenior\nsenior2\tsenior\n")
    return path


def manifest_rows(campaign: Path) -> list[list[str]]:
    return list(csv.reader((campaign / "manifest.csv").open()))


def test_append_assigns_only_new_documents(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    collection = rebuild_collection(tmp_path)
    before = tree(campaign)
    old_rows = manifest_rows(campaign)
    assert main(["campaign", "append", str(campaign), "--collection", str(collection),
                 "--roster", str(roster(tmp_path)), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"]["documents_appended"] == 3 and report["counts"]["documents_assigned_before"] == 6
    after = tree(campaign)
    # every file that existed is byte-identical, except the manifest, whose old rows come first unchanged
    assert {k: v for k, v in after.items() if k in before and k != "manifest.csv"} == {
        k: v for k, v in before.items() if k != "manifest.csv"}
    rows = manifest_rows(campaign)
    assert rows[: len(old_rows)] == old_rows
    new_rows = rows[len(old_rows):]
    assert sorted({r[0] for r in new_rows}) == ["400_1", "400_2", "500_1"]
    for doc in NEW:
        phase1 = sorted(r[2] for r in new_rows if r[0] == doc and r[1] == "1")
        phase2 = [r[2] for r in new_rows if r[0] == doc and r[1] == "2"]
        assert len(phase1) == 2 and set(phase1) <= {"ann1", "ann2", "ann3"}
        assert len(phase2) == 1 and phase2[0] in ("senior1", "senior2")
        for person in phase1:
            assert after[f"phase1/{person}/{doc}.txt"] == NEW[doc].encode()
            assert after[f"phase1/{person}/{doc}.ann"] == (collection / f"{doc}.ann").read_bytes()
        assert not any(k.endswith(f"/{doc}.txt") and k.startswith("phase2/") for k in after)
    # new files are the new documents' phase-1 copies, nothing else
    # (and the lock files of the documents written, pipeline.campaign.locks)
    assert sorted(k for k in set(after) - set(before) if not k.startswith("locks/")) == sorted(
        f"phase1/{r[2]}/{r[0]}{ext}" for r in new_rows if r[1] == "1" for ext in (".ann", ".txt"))
    # appending again adds nothing and changes nothing
    assert main(["campaign", "append", str(campaign), "--collection", str(collection),
                 "--roster", str(roster(tmp_path))]) == 0
    assert tree(campaign) == after


def test_append_never_overwrites_and_checks_the_roster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    collection = rebuild_collection(tmp_path)
    bad = tmp_path / "bad.tsv"
    bad.write_text("id\trole\nann1\tannotator\nann2\tannotator\nann3\tannotator\n")
    before = tree(campaign)
    assert main(["campaign", "append", str(campaign), "--collection", str(collection), "--roster", str(bad)]) == 2
    assert "senior" in capsys.readouterr().err
    assert tree(campaign) == before
    # a stray file where a new document would go: that document waits, the others are appended
    for person in ("ann1", "ann2", "ann3"):
        (campaign / "phase1" / person / "400_2.ann").write_text("T1\tChemical 0 2\tNo\n")
    assert main(["campaign", "append", str(campaign), "--collection", str(collection),
                 "--roster", str(roster(tmp_path))]) == 3  # WORK_LEFT: a document is blocked
    assert "1 blocked by existing files" in capsys.readouterr().out
    docs = {r[0] for r in manifest_rows(campaign)[1:]}
    assert "400_2" not in docs and {"400_1", "500_1"} <= docs
    assert (campaign / "phase1" / "ann1" / "400_2.ann").read_text() == "T1\tChemical 0 2\tNo\n"


def part1_records(campaign: Path) -> dict[str, Any]:
    """What part 1's batches writes besides manifest.csv: campaign.json and preannotation/."""
    rows = manifest_rows(campaign)[1:]
    documents: dict[str, dict[str, Any]] = {}
    for doc, phase, person in rows:
        entry = documents.setdefault(doc, {"document": doc, "files": [doc], "phase1": [], "phase2": None})
        if phase == "1":
            entry["phase1"].append(person)
        else:
            entry["phase2"] = person
    people = [{"id": p, "role": "annotator", "phase1": True, "roster": True} for p in ("ann1", "ann2", "ann3")]
    people += [{"id": s, "role": "senior", "phase1": False, "roster": True} for s in ("senior1", "senior2")]
    record = {"format": "pgx-corpus campaign 1", "brat_path": "/", "seed": 13, "people": people,
              "documents": list(documents.values())}
    (campaign / "campaign.json").write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n")
    pre = campaign / "preannotation"
    pre.mkdir()
    for name, text in TEXTS.items():
        (pre / f"{name}.txt").write_text(text)
        (pre / f"{name}.ann").write_text("")
    return record


def test_append_extends_campaign_json_and_preannotation(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    record = part1_records(campaign)
    collection = rebuild_collection(tmp_path)
    assert main(["campaign", "append", str(campaign), "--collection", str(collection),
                 "--roster", str(roster(tmp_path))]) == 0
    after = json.loads((campaign / "campaign.json").read_text())
    assert after["people"] == record["people"]
    old = record["documents"]
    assert after["documents"][: len(old)] == old
    new = after["documents"][len(old):]
    assert [e["document"] for e in new] == ["400_1", "400_2", "500_1"]
    rows = manifest_rows(campaign)[1:]
    for entry in new:
        assert entry["files"] == [entry["document"]]
        assert entry["phase1"] == sorted(r[2] for r in rows if r[0] == entry["document"] and r[1] == "1")
        assert entry["phase2"] == next(r[2] for r in rows if r[0] == entry["document"] and r[1] == "2")
        assert (campaign / "preannotation" / f"{entry['document']}.ann").read_bytes() == (
            collection / f"{entry['document']}.ann").read_bytes()


def test_append_cannot_add_people_to_a_campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    part1_records(campaign)
    collection = rebuild_collection(tmp_path)
    before = tree(campaign)
    bigger = tmp_path / "bigger.tsv"
    bigger.write_text(roster(tmp_path).read_text() + "".join(f"new{i}\tannotator\n" for i in range(4)))
    assert main(["campaign", "append", str(campaign), "--collection", str(collection), "--roster", str(bigger)]) == 2
    assert "append cannot add people" in capsys.readouterr().err
    assert tree(campaign) == before


@pytest.mark.parametrize(("campaign_relations", "rebuild_relations"), [(False, True), (True, False)])
def test_append_refuses_a_rebuild_with_the_other_relation_setting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], campaign_relations: bool, rebuild_relations: bool,
) -> None:
    from pipeline.corpus.brat_export import write_settings

    campaign = build_campaign(tmp_path)
    (campaign / "preannotation").mkdir(exist_ok=True)
    write_settings(campaign / "preannotation", relations=campaign_relations)
    collection = rebuild_collection(tmp_path)
    write_settings(collection, relations=rebuild_relations)
    before = tree(campaign)
    assert main(["campaign", "append", str(campaign), "--collection", str(collection),
                 "--roster", str(roster(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pgx-corpus campaign append: ")
    assert f"rebuild with {'--relations' if campaign_relations else '--no-relations'}" in err
    assert tree(campaign) == before  # refused: nothing written


def test_append_accepts_the_same_relation_setting(tmp_path: Path) -> None:
    from pipeline.corpus.brat_export import write_settings

    campaign = build_campaign(tmp_path)
    (campaign / "preannotation").mkdir(exist_ok=True)
    write_settings(campaign / "preannotation", relations=True)
    collection = rebuild_collection(tmp_path)
    write_settings(collection, relations=True)
    assert main(["campaign", "append", str(campaign), "--collection", str(collection),
                 "--roster", str(roster(tmp_path))]) == 0


def test_an_interrupted_append_is_completed_not_blocked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after its first document: the next append writes the rest of the same rows; its own files
    never block the documents (they used to stay unassigned for good, unreviewed)."""
    from pipeline.campaign import append as append_mod
    from pipeline.campaign import publish

    campaign = build_campaign(tmp_path / "a")
    collection = rebuild_collection(tmp_path)
    reference = build_campaign(tmp_path / "b")
    args = ["--collection", str(collection), "--roster", str(roster(tmp_path))]
    assert main(["campaign", "append", str(reference), *args]) == 0

    written: list[str] = []
    real = publish.write_document

    def dies_after_one(directory: Path, name: str, txt: bytes, ann: bytes, **kw: Any) -> None:
        if written:
            raise KeyboardInterrupt  # stands for the kill (the crash tests kill for real)
        real(directory, name, txt, ann, **kw)
        written.append(name)

    monkeypatch.setattr(append_mod.publish, "write_document", dies_after_one)
    with pytest.raises(KeyboardInterrupt):
        append_mod.append_to_campaign(collection, campaign, roster(tmp_path))
    monkeypatch.setattr(append_mod.publish, "write_document", real)
    assert (campaign / APPEND_PENDING).is_file() and written
    assert main(["campaign", "append", str(campaign), *args]) == 0
    assert not (campaign / APPEND_PENDING).exists()
    strip = {k: v for k, v in tree(reference).items() if not k.startswith("locks/")}
    assert {k: v for k, v in tree(campaign).items() if not k.startswith("locks/")} == strip
