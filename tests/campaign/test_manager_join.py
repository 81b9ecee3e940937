"""A manager joins a running campaign (``campaign add-person ID --role manager``), read-only everywhere on
the live server; ``campaign append`` says what it did with each roster row it does not act on.

Covers: pipeline.campaign.users, pipeline.cli, pipeline.cli.release_commands, pipeline.cli.team_commands,
pipeline.serve.app
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.campaign.users import UserStore
from pipeline.cli import main
from pipeline.serve.app import ServeApp
from tests.campaign.builders import build_campaign
from tests.campaign.test_append import part1_records, rebuild_collection, roster
from tests.serve.builders import build_served_campaign, tree_digest
from tests.serve.live import HttpClient, LiveServer


def test_add_person_manager_joins_read_only_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    demo = build_served_campaign(tmp_path)
    with LiveServer(ServeApp(demo.root)) as live:  # running while the manager is added
        assert main(["campaign", "add-person", str(demo.root), "mia", "--role", "manager"]) == 0
        out = capsys.readouterr().out
        assert "0 document(s) moved" in out
        password = next(line.split("\t")[1] for line in out.splitlines() if line.startswith("  mia\t"))
        people = {p["id"]: p for p in json.loads((demo.root / "campaign.json").read_text())["people"]}
        assert people["mia"]["role"] == "manager" and people["mia"]["phase1"] is False
        person = UserStore(demo.root).get("mia")
        assert person is not None and person.roles == frozenset({"manager"})
        assert "mia" in (demo.root / "DEPLOY.md").read_text(encoding="utf-8")
        assert not (demo.root / "phase1" / "mia").exists()

        mia = HttpClient(live.port)
        assert not mia.login("mia", password).get("exception")
        listing = mia.ajax("getCollectionInformation", collection="/phase1/")
        assert {item[2] for item in listing["items"] if item[0] == "c"} >= {"alice", "bob", ".."}
        before = tree_digest(demo.root)
        for collection, document in (("/phase1/alice/", demo.editable["alice"]), ("/phase2/dave/", demo.merged)):
            doc = mia.ajax("getDocument", collection=collection, document=document)
            assert not doc.get("exception") and doc["text"]
            reply = mia.ajax("createSpan", collection=collection, document=document, offsets="[[0,4]]",
                             type="Phenotype")
            assert reply.get("exception") is True
        assert tree_digest(demo.root) == before
    # a second time: refused, nothing written
    before = tree_digest(demo.root)
    assert main(["campaign", "add-person", str(demo.root), "mia", "--role", "manager"]) == 2
    assert "already a person of the campaign" in capsys.readouterr().err
    assert tree_digest(demo.root) == before


def test_append_says_what_it_did_with_each_roster_row_it_does_not_act_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    campaign = build_campaign(tmp_path)
    record = part1_records(campaign)
    record["people"].append({"id": "boss", "role": "manager", "phase1": False, "roster": True})
    next(p for p in record["people"] if p["id"] == "senior2")["left"] = "2026-11-01T00:00:00+00:00"
    (campaign / "campaign.json").write_text(json.dumps(record, indent=1) + "\n")
    collection = rebuild_collection(tmp_path)
    rows = roster(tmp_path)
    rows.write_text(rows.read_text() + "boss\tmanager\nmia\tmanager\n")
    assert main(["campaign", "append", str(campaign), "--collection", str(collection), "--roster", str(rows)]) == 0
    out = capsys.readouterr().out.splitlines()
    notes = [line for line in out if line.startswith("roster row ")]
    assert notes == [
        "roster row senior2: left the campaign: ignored, no new documents",
        "roster row boss: manager: takes no documents (campaign serve shows them every collection read-only)",
        "roster row mia: manager in the roster, not a person of the campaign: ignored, no user created "
        "(`pgx-corpus campaign add-person CAMPAIGN_DIR mia --role manager` adds them)",
    ]
    assert out[-1].startswith("3 new document(s) appended")
