"""``campaign reassign``, ``calibrate`` and ``calibration`` through the command line on a small campaign (the
crash tests, marked slow, run them too; tests/campaign/test_team.py tests the library behind them).

Covers: pipeline.campaign.calibration, pipeline.campaign.team, pipeline.cli.team_commands
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.campaign.layout import read_campaign
from tests.campaign.test_team import make_collection, mine, names


@pytest.fixture
def campaign(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    coll = make_collection(tmp_path / "coll", names(range(100, 103)))
    roster = tmp_path / "roster.csv"
    roster.write_text("id,role\nann1,annotator\nann2,annotator\nann3,annotator\nsen1,senior\n", encoding="utf-8")
    root = tmp_path / "campaign"
    assert cli.main(["batches", "--collection", str(coll), "--roster", str(roster), "--out", str(root),
                     "--seed", "1"]) == 0
    capsys.readouterr()
    return root


def test_reassign_moves_an_unstarted_document(campaign: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = read_campaign(campaign)
    document = next(d for d in mine(before, "ann1") if d not in mine(before, "ann3"))
    assert cli.main(["campaign", "reassign", str(campaign), document, "--from", "ann1", "--to", "ann3"]) == 0
    assert f"{document}: phase 1 ann1 -> ann3" in capsys.readouterr().out
    after = read_campaign(campaign)
    assert document in mine(after, "ann3") and document not in mine(after, "ann1")
    # a rule break is refused: ann3 cannot take a document it already holds
    held = mine(after, "ann3")[0]
    giver = next(p for p in ("ann1", "ann2") if held in mine(after, p))
    assert cli.main(["campaign", "reassign", str(campaign), held, "--from", giver, "--to", "ann3"]) == 2
    assert capsys.readouterr().err.startswith("pgx-corpus campaign reassign:")
    assert read_campaign(campaign) == after


def test_calibrate_then_report(campaign: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = make_collection(tmp_path / "extra", names(range(200, 202)))
    assert cli.main(["campaign", "calibrate", str(campaign), str(extra), "200_1", "201_1"]) == 0
    assert capsys.readouterr().out == "calibration round 1: 2 document(s) to ann1, ann2, ann3\n"
    assert cli.main(["campaign", "calibration", str(campaign), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    # nobody has finished a calibration document yet: assigned, nothing scored
    assert (report["rounds"], report["documents"], report["pairs"]) == ([1], ["200_1", "201_1"], [])
    assert [(row["person"], row["assigned"], row["finished"]) for row in report["people"]] == [
        ("ann1", 2, 0), ("ann2", 2, 0), ("ann3", 2, 0)]
    assert cli.main(["campaign", "calibrate", str(campaign), str(extra), "999_1"]) == 2
    assert capsys.readouterr().err.startswith("pgx-corpus campaign calibrate:")
