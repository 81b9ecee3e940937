"""pipeline.campaign.layout against a real campaign directory: every entry the campaign commands and
``campaign serve``'s writers leave at the top of ``CAMPAIGN_DIR`` is one the module names, and every name of
[`TOP_LEVEL`] (the pending markers of a command under way aside) is one they write.  Also the reading of
``campaign.json`` and the person ids (``read_campaign``, ``check_ids``, ``access_roles``).

Covers: pipeline.campaign.layout
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline import names
from pipeline.campaign import calibration, guidelines, layout, models, suggestions, team
from pipeline.campaign.journal import Journal
from pipeline.nlp.relations.rules import DEFAULT_RULES, load_rules
from pipeline.serve.server import ServeLock
from tests.campaign.test_team import make_collection
from tests.serve.builders import SCHEMA, build_served_campaign


def _full_campaign(tmp: Path) -> Path:
    """A campaign that every writer of a part has written into (see the module docstring)."""
    demo = build_served_campaign(tmp)  # batches, users, review, finalize into CAMPAIGN_DIR/final, review again
    root = demo.root
    # alice starts a document and leaves: her partial version is archived, the history of assignments begins
    name = demo.editable["alice"]
    text = (root / layout.PHASE1_DIR / "alice" / f"{name}.txt").read_text(encoding="utf-8")
    ann = root / layout.PHASE1_DIR / "alice" / f"{name}.ann"
    ann.write_text(ann.read_text(encoding="utf-8") + f"T91\tPhenotype 0 8\t{text[:8]}\n", encoding="utf-8")
    team.replace(root, "alice", "frank", started="move", when="2026-03-01T09:00:00+00:00")
    calib = make_collection(tmp / "calib", ["900_1"])
    calibration.add_round(root, calib, ["900_1"], reference=calib, when="2026-03-02T09:00:00+00:00")
    guidelines.record_version(root, "2", "clearer discards", when="2026-03-03T09:00:00+00:00")
    # what campaign serve writes: its lock, a journaled save, a suggestion record, the relation scorer in use
    lock = ServeLock(root)
    lock.acquire()
    lock.release()
    document = f"{layout.PHASE1_DIR}/bob/{demo.editable['bob']}"
    Journal(root).record("bob", document, (root / f"{document}.ann").read_bytes(), "createSpan")
    suggestions.append_records(suggestions.records_path(root, f"{layout.PHASE1_DIR}/bob", demo.editable["bob"]),
                               [{"undone": "p1"}])
    models.select_scorer(root, SCHEMA, load_rules(DEFAULT_RULES, SCHEMA).scorer, None)
    return root


@pytest.fixture(scope="module")
def campaign_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _full_campaign(tmp_path_factory.mktemp("layout"))


def test_every_top_level_entry_on_disk_is_named(campaign_dir: Path) -> None:
    on_disk = {p.name for p in campaign_dir.iterdir()}
    assert sorted(on_disk - layout.TOP_LEVEL) == []


def test_every_name_but_the_pending_markers_is_written(campaign_dir: Path) -> None:
    on_disk = {p.name for p in campaign_dir.iterdir()}
    assert sorted(layout.TOP_LEVEL - layout.PENDING_FILES - on_disk) == []
    assert layout.PENDING_FILES <= layout.TOP_LEVEL


def test_the_named_parts_inside_are_the_ones_written(campaign_dir: Path) -> None:
    root = campaign_dir
    inside = [
        root / layout.ACCESS_DIR / layout.USERS_FILE, root / layout.ACCESS_DIR / layout.USERS_LOCK,
        root / layout.JOURNAL_DIR / layout.JOURNAL_LOG, root / layout.JOURNAL_DIR / layout.JOURNAL_OBJECTS_DIR,
        root / layout.REVIEW_DIR / layout.REVIEW_MERGED_DIR, root / layout.REVIEW_DIR / layout.REVIEW_LEDGER,
        root / layout.REVIEW_DIR / layout.REVIEW_REPORT_JSON, root / layout.REVIEW_DIR / layout.REVIEW_REPORT_MD,
        root / layout.REVIEW_DIR / layout.REVIEW_AGREEMENT_JSON, root / layout.REVIEW_DIR / layout.REVIEW_AGREEMENT_MD,
        root / layout.CALIBRATION_DIR / layout.CALIBRATION_REFERENCE_DIR, root / layout.LOCKS_DIR / layout.SERVE_LOCK,
        root / layout.MODELS_DIR / layout.MODELS_RELATIONS_DIR / layout.MODELS_IN_USE,
    ]
    assert [p for p in inside if not p.exists()] == []
    assert {p.name for p in (root / layout.ACCESS_DIR).iterdir()} == {layout.USERS_FILE, layout.USERS_LOCK}
    assert {p.name for p in (root / layout.JOURNAL_DIR).iterdir()} == {layout.JOURNAL_LOG, layout.JOURNAL_OBJECTS_DIR}
    assert {p.name for p in (root / layout.REVIEW_DIR).iterdir()} == {
        layout.REVIEW_MERGED_DIR, layout.REVIEW_LEDGER, layout.REVIEW_REPORT_JSON, layout.REVIEW_REPORT_MD,
        layout.REVIEW_AGREEMENT_JSON, layout.REVIEW_AGREEMENT_MD}


def test_the_reserved_person_ids_hold_the_campaign_names_they_stand_for() -> None:
    """names.py (below campaign in the stack) spells some campaign names itself: they are layout's."""
    campaign_names = {"campaign.json", "manifest.csv", "phase1", "phase2", "review", "final", "locks", "users.json"}
    assert campaign_names <= names.RESERVED_NAMES
    assert campaign_names == {layout.CAMPAIGN_MANIFEST, layout.ASSIGNMENTS_CSV, layout.PHASE1_DIR, layout.PHASE2_DIR,
                              layout.REVIEW_DIR, layout.FINAL_DIR, layout.LOCKS_DIR, layout.USERS_FILE}


def test_read_campaign_refuses_a_missing_or_foreign_manifest_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(layout.CampaignError, match=r"campaign\.json: no campaign manifest"):
        layout.read_campaign(tmp_path)
    (tmp_path / layout.CAMPAIGN_MANIFEST).write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(layout.CampaignError, match=r"campaign\.json:1: not a campaign manifest"):
        layout.read_campaign(tmp_path)
    (tmp_path / layout.CAMPAIGN_MANIFEST).write_text(json.dumps(
        {"format": layout.MANIFEST_FORMAT, "people": [{"id": "../x"}], "documents": []}), encoding="utf-8")
    with pytest.raises(layout.CampaignError, match=r"people\[0\]"):
        layout.read_campaign(tmp_path)


def test_check_ids_and_access_roles() -> None:
    layout.check_ids(["ann1", "sen.1"], "roster")
    for bad, match in ((["a b"], "must be letters"), (["phase1"], "phase1"), (["Ann", "ann"], "differ only in case")):
        with pytest.raises(layout.CampaignError, match=match):
            layout.check_ids(bad, "roster")
    campaign = {"people": [{"id": "s", "role": "senior"}, {"id": "m", "role": "manager"}, {"id": "a", "role": "x"}],
                "documents": [{"phase1": ["a", "s"], "phase2": "s"}, {"phase1": ["a"], "phase2": None}]}
    assert layout.access_roles(campaign) == {"a": frozenset({"annotator"}), "m": frozenset({"manager"}),
                                             "s": frozenset({"annotator", "senior"})}
