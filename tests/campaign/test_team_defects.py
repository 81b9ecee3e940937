"""The smaller defects of issue 24 (each test fails without its fix), ``review --remerge`` and the exit code
of ``review`` with documents held back.

Covers: pipeline.campaign.batches, pipeline.campaign.decisions, pipeline.campaign.phase1, pipeline.campaign.remerge,
pipeline.campaign.review, pipeline.campaign.status, pipeline.campaign.users, pipeline.cli,
pipeline.cli.campaign_commands, pipeline.schema
"""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.campaign.batches import prepare_batches
from pipeline.campaign.decisions import apply_decisions, load_decisions
from pipeline.campaign.layout import CampaignError, read_campaign
from pipeline.campaign.remerge import remerge
from pipeline.campaign.review import review
from pipeline.campaign.status import campaign_status
from pipeline.schema import load_schema
from tests.campaign.test_team import annotate, make_collection, names

SCHEMA = load_schema()


def campaign(tmp_path: Path, docs: list[str] | None = None) -> Path:
    coll = make_collection(tmp_path / "coll", docs or names(range(100, 101)))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nalice,annotator\nbob,annotator\ndave,senior\n", encoding="utf-8")
    prepare_batches(coll, roster, tmp_path / "campaign", seed=1, counts=Counter())
    return tmp_path / "campaign"


def test_batches_without_annotation_conf_names_it_and_leaves_nothing(tmp_path: Path) -> None:
    coll = make_collection(tmp_path / "coll", ["100_1", "100_2"])
    (coll / "annotation.conf").unlink()
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nalice,annotator\nbob,annotator\ndave,senior\n", encoding="utf-8")
    with pytest.raises(FileNotFoundError, match=str(coll / "annotation.conf")):
        prepare_batches(coll, roster, tmp_path / "out", seed=1, counts=Counter())
    assert not (tmp_path / "out").exists()


def test_discard_note_and_other_reason_are_in_the_review_report(tmp_path: Path) -> None:
    root = campaign(tmp_path)
    path = root / "phase1" / "alice" / "100_1.ann"
    path.write_text(path.read_text(encoding="utf-8") + "T9\tDiscard 0 8\tWarfarin\nA9\tReason T9 other\n"
                    "#9\tAnnotatorNotes T9\tretracted article\n", encoding="utf-8")
    annotate(root, "bob", "100_1")
    report = review(root, SCHEMA)
    assert report["discarded"][0]["notes"] == {"alice": ["retracted article"]}
    assert "| 100_1 | alice: other (retracted article) |" in (root / "review" / "report.md").read_text(encoding="utf-8")


def test_unmatched_decisions_entry_warns(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    coll = make_collection(tmp_path / "coll", ["100_1"])
    decisions = tmp_path / "decisions.yaml"
    decisions.write_text("retype:\n  - term: warfarin\n    to: Phenotype\n  - term: wafarin\n    to: Phenotype\n"
                         "remove:\n  - term: nothing like this\n", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        apply_decisions(coll, load_decisions(decisions, SCHEMA), SCHEMA)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("retype entry 2 (term 'wafarin' -> Phenotype) matched nothing" in w for w in warnings)
    assert any("remove entry 1" in w for w in warnings)
    assert not any("retype entry 1 " in w for w in warnings)


def test_held_back_printed_once_and_review_exits_3(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    root = campaign(tmp_path)
    bad = root / "phase1" / "alice" / "100_1.ann"
    bad.write_text("T1\tChemical zero 8\tWarfarin\n", encoding="utf-8")
    with caplog.at_level(logging.INFO):
        code = cli.main(["campaign", "review", str(root)])
    assert code == 3
    err = capsys.readouterr().err
    assert err.count(str(bad)) == 1
    assert not [r for r in caplog.records if str(bad) in r.getMessage()]  # not logged besides


def test_a_deleted_ann_is_reported(tmp_path: Path) -> None:
    root = campaign(tmp_path)
    (root / "phase1" / "bob" / "100_2.ann").unlink()
    rows = {r["person"]: r for r in campaign_status(root)["rows"] if r["phase"] == 1}
    assert rows["bob"]["held_back"] == 1
    assert rows["bob"]["problems"] == [f"{root / 'phase1' / 'bob' / '100_2.ann'}:0: annotation file missing "
                                       "(deleted?); restore it (campaign history), or write an empty one to start "
                                       "the document again"]


def test_non_utf8_bytes_in_an_ann_are_reported_against_the_ann(tmp_path: Path) -> None:
    root = campaign(tmp_path)
    bad = root / "phase1" / "bob" / "100_2.ann"
    before = bad.read_bytes()
    assert before.count(b"\n") == 2
    bad.write_bytes(before + b"T9\tChemical 0 8\tWarf\xe9rin\n")
    at = len(before) + len(b"T9\tChemical 0 8\tWarf")
    rows = {r["person"]: r for r in campaign_status(root)["rows"] if r["phase"] == 1}
    assert rows["bob"]["problems"] == [f"{bad}:3: not valid UTF-8 (invalid continuation byte at byte {at})"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_campaign_secrets_are_not_committable(tmp_path: Path) -> None:
    from pipeline.campaign import users

    root = campaign(tmp_path)
    users.create_users(root, {"alice": ["annotator"]})
    (root / "journal").mkdir()
    (root / "journal" / "log.jsonl").write_text("{}\n", encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    listed = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                            check=True, capture_output=True, text=True).stdout
    assert "campaign/campaign.json" in listed
    assert "access/" not in listed and "journal/" not in listed and "locks/" not in listed


def test_campaign_records_build_run_schema_and_guideline_version(tmp_path: Path) -> None:
    out = tmp_path / "build"
    coll = make_collection(out / "brat", ["100_1"])
    (coll / ".run").write_text("abc123\n", encoding="utf-8")
    (out / "runs" / "abc123").mkdir(parents=True)
    (out / "runs" / "abc123" / "manifest.json").write_text(json.dumps({"config_hashes": {"schema": "f" * 64}}),
                                                          encoding="utf-8")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nalice,annotator\nbob,annotator\ndave,senior\n", encoding="utf-8")
    prepare_batches(coll, roster, tmp_path / "campaign", seed=1, counts=Counter())
    provenance = read_campaign(tmp_path / "campaign")["provenance"]
    assert provenance["build_run"] == "abc123" and provenance["schema_sha256"] == "f" * 64
    assert provenance["build_manifest"] == str(out / "runs" / "abc123" / "manifest.json")
    assert provenance["guideline_version"] == "1" and len(provenance["annotation_conf_sha256"]) == 64


def test_remerge_brings_a_phase1_correction_to_the_senior(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    root = campaign(tmp_path)
    for person in ("alice", "bob"):
        annotate(root, person, "100_1")
        annotate(root, person, "100_2")
    review(root, SCHEMA)
    senior = root / "phase2" / "dave"
    first = (senior / "100_1.ann").read_text(encoding="utf-8")
    # the manager reopens 100_1 and 100_2 for bob, who corrects them (drops the phenotype) and finishes again
    for name in ("100_1", "100_2"):
        path = root / "phase1" / "bob" / f"{name}.ann"
        path.write_text("T1\tGene_or_protein 29 35\tCYP2C9\nT2\tChemical 0 8\tWarfarin\nT4\tDone 20 25\tlower\n",
                        encoding="utf-8")
    report = review(root, SCHEMA)
    assert sorted(c["file"] for c in report["changed_after_merge"]) == ["100_1", "100_2"]
    assert (senior / "100_1.ann").read_text(encoding="utf-8") == first  # review alone never overwrites
    # dave has started 100_2: refused, naming it, nothing written
    merged_2 = (senior / "100_2.ann").read_text(encoding="utf-8")
    (senior / "100_2.ann").write_text(merged_2.split("\n", 1)[1], encoding="utf-8")  # dave deleted an entity
    before = (senior / "100_1.ann").read_bytes()
    with pytest.raises(CampaignError, match="100_2: dave has started it"):
        remerge(root, ["100_1", "100_2"])
    assert (senior / "100_1.ann").read_bytes() == before
    assert cli.main(["campaign", "review", str(root), "--remerge", "100_1"]) == 3  # WORK_LEFT: others pending
    assert "1 document(s) merged again: 100_1" in capsys.readouterr().out
    merged = (senior / "100_1.ann").read_text(encoding="utf-8")
    assert merged != first and "Disagreement" in merged and "Phenotype" in merged  # alice's, now marked
    assert (root / "review" / "merged" / "dave" / "100_1.ann").read_text(encoding="utf-8") == merged
    assert [c["file"] for c in review(root, SCHEMA)["changed_after_merge"]] == ["100_2"]
    with pytest.raises(CampaignError, match="not a document"):
        remerge(root, ["999_1"])
