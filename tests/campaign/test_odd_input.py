"""Odd input in a campaign (issue 23): an undecodable pre-annotation copy holds back its document with
file:line and the rest of the review goes on; ``status`` reports it instead of crashing; bytes that are
not UTF-8 in a person's ``.ann`` are reported against the ``.ann``.

Covers: pipeline.campaign.review, pipeline.campaign.status, pipeline.cli, pipeline.cli.brat_commands,
pipeline.cli.campaign_commands
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pipeline.campaign.review import review
from pipeline.campaign.status import campaign_status
from tests.campaign.test_campaign import DONE, SCHEMA, add_lines, campaign  # noqa: F401 - the fixture

PRE = "preannotation"


def _finish_all(campaign: Path) -> None:  # noqa: F811 - the fixture's name
    for name in ("100_1", "100_2", "100_3"):
        for person in ("alice", "bob"):
            add_lines(campaign, person, name, [DONE])


def test_undecodable_preannotation_text_holds_back_that_document_only(campaign: Path) -> None:  # noqa: F811
    _finish_all(campaign)
    bad = campaign / PRE / "100_2.txt"
    bad.write_bytes(b"Warfarin doses\nwere \xff lower.")
    counts: Counter[str] = Counter()
    report = review(campaign, SCHEMA, counts)
    assert report["documents"]["held_back"] == 1 and report["documents"]["ready"] == 2
    (held,) = report["held_back"]
    assert held["file"] == "100_2" and held["problems"] == [f"{bad}:2: not valid UTF-8 (invalid start byte at byte 20)"]
    assert sorted(p.stem for p in (campaign / "phase2" / "dave").glob("*.txt")) == ["100_1", "100_3"]
    from pipeline.cli import main

    assert main(["campaign", "review", str(campaign)]) == 3  # WORK_LEFT: one document held back, none pending
    assert main(["campaign", "status", str(campaign)]) == 3
    rows = {(r["person"], r["phase"]): r for r in campaign_status(campaign)["rows"]}
    for person in ("alice", "bob"):
        assert rows[(person, 1)]["held_back"] == 1
        assert any(p.startswith(f"{bad}:2: not valid UTF-8") for p in rows[(person, 1)]["problems"])


def test_undecodable_ann_is_reported_against_the_ann(campaign: Path) -> None:  # noqa: F811
    _finish_all(campaign)
    ann = campaign / "phase1" / "alice" / "100_1.ann"
    ann.write_bytes(ann.read_bytes() + b"#1\tAnnotatorNotes T1\tbad \xc3\x28\n")
    report = review(campaign, SCHEMA, Counter())
    (held,) = report["held_back"]
    assert held["person"] == "alice" and held["problems"][0].startswith(f"{ann}:")
    assert "not valid UTF-8" in held["problems"][0]


def test_batches_refuses_a_symlink_in_the_collection(tmp_path: Path) -> None:
    """Issue 23, defect 9: ``batches`` never copies a link's target into annotators' collections."""
    from pipeline.cli import main
    from tests.campaign.test_campaign import make_collection, write_roster

    coll = make_collection(tmp_path / "coll")
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET\n", encoding="utf-8")
    (coll / "100_2.txt").unlink()
    (coll / "100_2.txt").symlink_to(secret)
    roster = write_roster(tmp_path / "roster.csv", ["alice,annotator,yes", "bob,annotator,yes", "dave,senior,no"])
    out = tmp_path / "campaign"
    assert main(["batches", "--collection", str(coll), "--roster", str(roster), "--out", str(out)]) == 2
    assert not out.exists()
    # the collection itself may be a link (the build publishes OUT/brat as one)
    (coll / "100_2.txt").unlink()
    link = tmp_path / "brat"
    link.symlink_to(coll, target_is_directory=True)
    assert main(["batches", "--collection", str(link), "--roster", str(roster), "--out", str(out)]) == 0
    assert not any("SECRET" in p.read_text(encoding="utf-8") for p in out.rglob("*.txt"))


@pytest.mark.parametrize(("field", "value"), [("phase2", "../../outside"), ("files", ["../x_1"]),
                                               ("phase1", ["alice", "/tmp/bob"])])
def test_a_tampered_campaign_json_is_refused(campaign: Path, tmp_path: Path, field: str,  # noqa: F811
                                             value: object, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from pipeline.cli import main

    path = campaign / "campaign.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["documents"][0][field] = value
    path.write_text(json.dumps(data), encoding="utf-8")
    before = sorted(p for p in tmp_path.rglob("*"))
    assert main(["campaign", "review", str(campaign)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: documents[0]:" in err and "refused" in err
    assert sorted(p for p in tmp_path.rglob("*")) == before
