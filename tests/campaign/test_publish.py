"""Publication of campaign documents: documents as units, and the ledger of ``campaign review``.

Covers: pipeline.campaign.batches, pipeline.campaign.publish, pipeline.campaign.review, pipeline.campaign.status
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path

import pytest

from pipeline.campaign import publish
from pipeline.campaign.batches import prepare_batches
from pipeline.campaign.layout import REVIEW_LEDGER
from pipeline.campaign.review import review
from tests.campaign.test_campaign import SCHEMA, make_collection, simulate, write_roster


@pytest.fixture()
def reviewed(tmp_path: Path) -> Path:
    coll = make_collection(tmp_path / "coll")
    roster = write_roster(tmp_path / "roster.csv", ["alice,annotator,yes", "bob,annotator,yes", "dave,senior,no"])
    campaign = tmp_path / "campaign"
    prepare_batches(coll, roster, campaign, seed=5, counts=Counter())
    simulate(campaign)
    counts: Counter[str] = Counter()
    review(campaign, SCHEMA, counts)
    assert counts["added"] == 1
    return campaign


def test_a_half_written_phase2_document_is_written_again(reviewed: Path) -> None:
    doc = reviewed / "phase2" / "dave" / "100_1.ann"
    merged = (reviewed / "review" / "merged" / "dave" / "100_1.ann").read_bytes()
    assert doc.read_bytes() == merged and merged
    ledger = reviewed / "review" / REVIEW_LEDGER
    assert ledger.read_text(encoding="utf-8") == "dave\t100_1\n"
    # an earlier version killed between the .txt and the .ann: the .ann empty, the ledger without it
    doc.write_bytes(b"")
    ledger.write_text("", encoding="utf-8")
    counts: Counter[str] = Counter()
    review(reviewed, SCHEMA, counts)
    assert counts["added"] == 1 and counts["already_in_phase2"] == 0
    assert doc.read_bytes() == merged
    assert ledger.read_text(encoding="utf-8") == "dave\t100_1\n"


def test_a_published_document_that_has_gone_is_reported_not_recreated(
        reviewed: Path, caplog: pytest.LogCaptureFixture) -> None:
    for suffix in (".txt", ".ann"):
        (reviewed / "phase2" / "dave" / f"100_1{suffix}").unlink()
    with caplog.at_level(logging.WARNING):
        report = review(reviewed, SCHEMA, Counter())
    assert not (reviewed / "phase2" / "dave" / "100_1.txt").exists()
    assert report["published_missing"] == [{"file": "100_1", "senior": "dave"}]
    assert "no longer there (not re-created)" in caplog.text


def test_a_campaign_reviewed_before_the_ledger_keeps_its_senior_work(reviewed: Path) -> None:
    (reviewed / "review" / REVIEW_LEDGER).unlink()
    doc = reviewed / "phase2" / "dave" / "100_1.ann"
    doc.write_text("T1\tChemical 0 8\tWarfarin\n", encoding="utf-8")  # the senior's work
    counts: Counter[str] = Counter()
    review(reviewed, SCHEMA, counts)
    assert counts["added"] == 0 and doc.read_text(encoding="utf-8") == "T1\tChemical 0 8\tWarfarin\n"
    assert (reviewed / "review" / REVIEW_LEDGER).read_text(encoding="utf-8") == "dave\t100_1\n"


def test_ledger_ignores_a_line_cut_by_a_kill(tmp_path: Path) -> None:
    path = tmp_path / REVIEW_LEDGER
    path.write_text("s1\ta_1\ns2\tb_", encoding="utf-8")
    book = publish.Ledger.read(path)
    assert book.entries == {("s1", "a_1")}
    book.add("s2", "b_1")
    book.save()
    assert path.read_text(encoding="utf-8") == "s1\ta_1\ns2\tb_1\n"


def test_a_document_is_written_ann_first_and_removed_txt_first(tmp_path: Path) -> None:
    import sys

    order: list[str] = []

    def hook(event: str, args: tuple[object, ...]) -> None:
        if event == "os.rename" and str(args[1]).startswith(str(tmp_path)):
            order.append(Path(str(args[1])).name)
        if event == "os.remove" and str(args[0]).startswith(str(tmp_path)):
            order.append("-" + Path(str(args[0])).name)

    sys.addaudithook(hook)  # stays installed (harmless: it only records paths under tmp_path)
    publish.write_document(tmp_path, "1_1", b"text", b"T1\tX 0 4\ttext\n")
    publish.remove_document(tmp_path, "1_1")
    assert order == ["1_1.ann", "1_1.txt", "-1_1.txt", "-1_1.ann"]
    assert list(tmp_path.iterdir()) == []


def test_status_reports_a_published_document_that_has_gone(reviewed: Path) -> None:
    """Issue 24: a phase-2 document a senior deleted is reported by status too (review never re-creates it)."""
    from pipeline.campaign.status import campaign_status

    for suffix in (".txt", ".ann"):
        (reviewed / "phase2" / "dave" / f"100_1{suffix}").unlink()
    rows = {(r["person"], r["phase"]): r for r in campaign_status(reviewed)["rows"]}
    dave = rows[("dave", 2)]
    assert dave["held_back"] == 1
    assert any("100_1.txt:0: published by campaign review but no longer in the collection" in p
               for p in dave["problems"])


def test_review_removes_a_killed_guide_stamp_in_phase1(reviewed: Path) -> None:
    """review stamps the phase-1 guides: a temporary a killed review left there goes on the next run (the
    crash sweep's leftovers), a live writer's stays."""
    import os

    dead = reviewed / "phase1" / "alice" / ".guide.md.tmp4000000"  # above pid_max: no live process
    live = reviewed / "phase1" / "alice" / f".guide.md.tmp{os.getppid()}"  # a live process (not ours)
    dead.write_text("half", encoding="utf-8")
    live.write_text("being written", encoding="utf-8")
    review(reviewed, SCHEMA, Counter())
    assert not dead.exists() and live.exists()
