"""The defects the crash sweep of the later campaign commands found, each shown directly (fails without its
fix): the state a kill leaves is made by hand, then the command is run again.

Covers: pipeline.brat.conf, pipeline.campaign.assignments, pipeline.campaign.guidelines, pipeline.campaign.importing,
pipeline.campaign.journal, pipeline.campaign.phase1, pipeline.campaign.team, pipeline.cli.import_commands,
pipeline.cli.team_commands, pipeline.cli.users_commands
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pipeline.brat.conf import CONF_FILES
from pipeline.campaign import guidelines
from pipeline.campaign.journal import Journal
from pipeline.campaign.layout import ASSIGNMENTS_HISTORY, IMPORT_PENDING, TEAM_PENDING, read_campaign
from pipeline.campaign.team import _prepare_collection
from tests.crash.scenarios import CHEM, _batches, _finished_copy, _journal, _quiet, collection, names

DOC = "phase1/ann1/100_1"
DEAD_PID = 4_000_000  # above the kernel's pid_max: no live process


@pytest.fixture(scope="module")
def batched_once(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``coll``, ``roster.csv`` and the ``campaign`` batches wrote from them (one document a batch), once."""
    root = tmp_path_factory.mktemp("batched")
    _batches(root, 1)
    return root


@pytest.fixture()
def batched(batched_once: Path, tmp_path: Path) -> None:
    """The module's batched campaign copied into the test's ``tmp_path``."""
    shutil.copytree(batched_once, tmp_path, dirs_exist_ok=True)


def test_a_restore_killed_after_its_write_journals_no_snapshot_on_rerun(tmp_path: Path, batched: None) -> None:
    _journal(tmp_path)
    ann = tmp_path / "campaign" / f"{DOC}.ann"
    ann.write_text(CHEM + "\n", encoding="utf-8")  # version 1 written, the run killed before its journal line
    (ann.parent / f".{ann.name}.tmp-{DEAD_PID}-0a1b2c3d").write_text("half", encoding="utf-8")
    assert _quiet(tmp_path, ["campaign", "history", "campaign", DOC, "--restore", "1"]) == 0
    assert [v.action for v in Journal(tmp_path / "campaign").versions(DOC)] == ["createSpan", "createSpan",
                                                                               "restore"]
    assert sorted(p.name for p in ann.parent.glob(".100_1*")) == []


def test_backup_removes_a_killed_backups_temporary(tmp_path: Path, batched: None) -> None:
    left = tmp_path / f".backup.tar.gz.tmp-{DEAD_PID}"
    left.write_bytes(b"half an archive")
    assert _quiet(tmp_path, ["campaign", "backup", "campaign", "backup.tar.gz"]) == 0
    assert not left.exists() and (tmp_path / "backup.tar.gz").is_file()


def test_team_commands_remove_killed_writers_temporaries(tmp_path: Path, batched: None) -> None:
    left = tmp_path / "campaign" / f".campaign.json.tmp{DEAD_PID}"
    left.write_text("{", encoding="utf-8")
    assert _quiet(tmp_path, ["campaign", "guideline", "campaign", "2", "Genes"]) == 0
    assert not left.exists()


def test_a_guideline_rerun_with_the_same_description_stamps_the_guides_a_kill_left(tmp_path: Path,
                                                                                   batched: None) -> None:
    root = tmp_path / "campaign"
    guide = root / "phase1" / "ann2" / "guide.md"
    before = guide.read_text(encoding="utf-8")
    entry = guidelines.record_version(root, "2", "Genes", when="2026-05-01T00:00:00+00:00")
    stamped = guide.read_text(encoding="utf-8")
    guide.write_text(before, encoding="utf-8")  # killed before this guide was stamped
    assert guidelines.record_version(root, "2", "Genes") == entry
    assert guide.read_text(encoding="utf-8") == stamped
    assert [v["version"] for v in guidelines.versions(read_campaign(root))].count("2") == 1


def test_a_collection_a_kill_left_with_part_of_its_configuration_is_completed(tmp_path: Path, batched: None) -> None:
    root = tmp_path / "campaign"
    dest = root / "phase1" / "ann4"
    dest.mkdir()
    shutil.copy(root / "phase1" / "ann1" / "annotation.conf", dest / "annotation.conf")  # killed after the first
    _prepare_collection(root, "1", "ann4", read_campaign(root))
    written = [n for n in CONF_FILES if (root / "preannotation" / n).is_file()]
    assert written and all((dest / n).read_bytes() == (root / "phase1" / "ann1" / n).read_bytes() for n in written)
    assert (dest / "guide.md").is_file()


def test_an_import_killed_before_its_users_creates_them_on_rerun(tmp_path: Path) -> None:
    collection(tmp_path / "coll", names(range(100, 101), 2))
    _finished_copy(tmp_path, "coll", "work1", "Gene_or_protein")
    _finished_copy(tmp_path, "coll", "work2", "Genomic_factor")
    argv = ["campaign", "import", "imported", "--work", "ann1=work1", "--work", "ann2=work2", "--reference", "coll",
            "--senior", "senior1"]
    assert _quiet(tmp_path, argv) == 0
    shutil.rmtree(tmp_path / "imported" / "access")  # killed before the users file was written
    assert _quiet(tmp_path, argv) in (0, 3)
    people = json.loads((tmp_path / "imported" / "access" / "users.json").read_text(encoding="utf-8"))
    assert {"ann1", "ann2", "senior1"} <= set(json.dumps(people).replace('"', " ").split())


def _killed_after_campaign_json(root: Path) -> tuple[dict[str, object], list[dict[str, object]]]:
    """A reassignment of ann1's 100_1 to ann2 killed right after campaign.json was written."""
    from pipeline.campaign import assignments as asg
    from pipeline.campaign.team import write_pending

    campaign = read_campaign(root)
    entry = next(e for e in campaign["documents"] if e["document"] == "100_1")
    entry["phase1"] = sorted(p if p != "ann1" else "ann2" for p in entry["phase1"])
    changes = [asg.change("reassign", "100_1", 1, "ann1", "unassigned", "2026-05-01T00:00:00+00:00", "to ann2")]
    write_pending(root, campaign, changes, [("1", "ann1", "100_1")], "2026-05-01T00:00:00+00:00")
    (root / "campaign.json").write_text(json.dumps(campaign, ensure_ascii=False, indent=1) + "\n",
                                        encoding="utf-8")
    return campaign, changes


def test_the_next_team_command_finishes_a_change_killed_after_campaign_json(tmp_path: Path, batched: None) -> None:
    from pipeline.campaign.assignments import manifest_text

    root = tmp_path / "campaign"
    assert (root / "phase1" / "ann1" / "100_1.ann").is_file()
    campaign, _ = _killed_after_campaign_json(root)
    assert _quiet(tmp_path, ["campaign", "guideline", "campaign", "2", "Genes"]) == 0
    assert not (root / TEAM_PENDING).exists()
    assert not (root / "phase1" / "ann1" / "100_1.ann").exists()  # archived, not left with its giver
    assert list((root / "archive").glob("*/phase1/ann1/100_1.ann"))
    assert (root / "manifest.csv").read_text(encoding="utf-8") == manifest_text(campaign)
    assert '"event": "unassigned"' in (root / "assignments.jsonl").read_text(encoding="utf-8")


def test_a_change_killed_before_campaign_json_is_dropped(tmp_path: Path, batched: None) -> None:
    from pipeline.campaign.team import finish_pending

    root = tmp_path / "campaign"
    before = (root / "campaign.json").read_bytes()
    _killed_after_campaign_json(root)
    (root / "campaign.json").write_bytes(before)  # as if killed before campaign.json was written
    history = root / "assignments.jsonl"
    kept = history.read_bytes() if history.exists() else None
    assert finish_pending(root) == {"archived": 0, "revoked": 0}
    assert not (root / TEAM_PENDING).exists() and (root / "phase1" / "ann1" / "100_1.ann").is_file()
    assert (history.read_bytes() if history.exists() else None) == kept


def test_an_import_killed_after_campaign_json_finishes_the_new_campaign_on_rerun(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed after the new campaign's campaign.json, before its manifest.csv and history: the rerun still
    treats it as new (its marker is there) and writes them; the marker goes."""
    from pipeline.campaign import assignments

    collection(tmp_path / "coll", names(range(100, 103), 1))
    _finished_copy(tmp_path, "coll", "work1", "Gene_or_protein")
    _finished_copy(tmp_path, "coll", "work2", "Genomic_factor")
    argv = ["campaign", "import", "imported", "--work", "ann1=work1", "--work", "ann2=work2", "--reference",
            "coll", "--senior", "senior1"]

    def killed(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt  # stands for the kill, after write_phase1 wrote campaign.json

    monkeypatch.setattr(assignments, "start_history", killed)
    assert _quiet(tmp_path, argv) != 0  # the command line turns the interruption into its exit status
    root = tmp_path / "imported"
    assert (root / "campaign.json").is_file() and (root / IMPORT_PENDING).is_file()
    monkeypatch.undo()
    assert _quiet(tmp_path, argv) == 0
    assert not (root / IMPORT_PENDING).exists()
    assert (root / "manifest.csv").is_file() and (root / ASSIGNMENTS_HISTORY).is_file()
    assert read_campaign(root)["provenance"]["imported"]
