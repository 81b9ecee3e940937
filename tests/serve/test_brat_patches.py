"""Each named patch of pipeline/serve/brat_adapter.py: the defect shows on brat without the patch, and is
gone with it.  brat is loaded in a child process per probe (tests/serve/brat_probe.py), on a copy of a
phase-1 collection of a campaign written by the project's commands.

Covers: pipeline.serve.brat_adapter
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.serve.brat_adapter import ALL_PATCHES
from tests.serve.builders import build_served_campaign

PROJECT = Path(__file__).resolve().parents[2]
N_LINE = "N1\tReference T1 PubChem:54678486\tWarfarin\n"


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    demo = build_served_campaign(tmp_path_factory.mktemp("patches"))
    return demo.root, demo.editable["alice"]


def run_probe(probe: str, without: set[str], campaign: tuple[Path, str], tmp_path: Path) -> dict[str, Any]:
    """Run ``probe`` on a fresh copy of the campaign with brat patched by every patch but ``without``."""
    root, doc = campaign
    copy = tmp_path / "campaign"
    shutil.copytree(root, copy)
    coll = copy / "phase1" / "alice"
    ann = coll / f"{doc}.ann"
    ann.write_text(ann.read_text(encoding="utf-8") + N_LINE, encoding="utf-8")
    patches = sorted(ALL_PATCHES - without)
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    proc = subprocess.run([sys.executable, "-m", "tests.serve.brat_probe", probe, json.dumps(patches), str(coll), doc],
                          capture_output=True, text=True, cwd=PROJECT, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# --- n_line_tab (nlplab/brat#1375) ------------------------------------------------------------------

def test_n_line_tab_defect_and_patch(campaign: tuple[Path, str], tmp_path: Path) -> None:
    # brat opens a document for writing on every read and saves it when it differs from what it parsed;
    # the other patches would keep the save from happening, so they are left out on both sides
    others = {"no_empty_ann", "atomic_save", "document_lock"}
    unpatched = run_probe("open", {"n_line_tab"} | others, campaign, tmp_path / "a")
    assert unpatched["after"] != unpatched["before"]
    assert "\t\tWarfarin" in unpatched["after"]
    # with the N-line patch, even brat's read-for-write open changes no byte
    patched = run_probe("open", others, campaign, tmp_path / "b")
    assert patched["after"] == patched["before"]


def test_edit_keeps_the_n_line(campaign: tuple[Path, str], tmp_path: Path) -> None:
    unpatched = run_probe("edit", {"n_line_tab"}, campaign, tmp_path / "a")
    assert N_LINE not in unpatched["after"]
    patched = run_probe("edit", set(), campaign, tmp_path / "b")
    before, after = patched["before"].splitlines(), patched["after"].splitlines()
    assert after[: len(before)] == before and len(after) == len(before) + 1 and "Phenotype 9 14" in after[-1]


# --- atomic_save ------------------------------------------------------------------------------------

def test_crash_mid_save_defect_and_patch(campaign: tuple[Path, str], tmp_path: Path) -> None:
    unpatched = run_probe("crash_mid_save", {"atomic_save"}, campaign, tmp_path / "a")
    assert unpatched["after"] != unpatched["before"]  # brat's copyfile left half a document
    assert len(unpatched["after"]) < len(unpatched["before"])
    patched = run_probe("crash_mid_save", set(), campaign, tmp_path / "b")
    assert patched["after"] == patched["before"]  # the failed save left the previous version
    assert patched["leftovers"] == [] and patched["exception"]


def test_a_save_reads_the_ann_once_and_asks_once_whether_it_changed(campaign: tuple[Path, str],
                                                                      tmp_path: Path) -> None:
    result = run_probe("save_reads", set(), campaign, tmp_path)
    # one read by the adapter under the lock, one by brat's own parse; brat's parse and the project's check
    assert result["save"] == {"reads": 2, "parses": 1, "brat_parses": 1, "changed": True, "file_changed": True,
                              "exception": None}
    assert result["refused"]["changed"] is False and result["refused"]["file_changed"] is False
    assert result["refused"]["reads"] == 2 and result["refused"]["parses"] == 0
    assert result["changes"] == 1 and result["journaled_is_file"]


# --- document_lock ------------------------------------------------------------------------------------

def test_two_edits_defect_and_patch(campaign: tuple[Path, str], tmp_path: Path) -> None:
    unpatched = run_probe("two_edits", {"document_lock"}, campaign, tmp_path / "a")
    spans = [line for line in unpatched["after"].splitlines() if "Phenotype" in line]
    assert len(spans) == 1  # one of the two edits was lost
    patched = run_probe("two_edits", set(), campaign, tmp_path / "b")
    spans = [line for line in patched["after"].splitlines() if "Phenotype" in line]
    assert len(spans) == 2


def test_save_outside_the_lock_is_refused(campaign: tuple[Path, str], tmp_path: Path) -> None:
    unpatched = run_probe("save_outside_lock", {"document_lock"}, campaign, tmp_path / "a")
    assert unpatched["changed"] and unpatched["error"] is None
    patched = run_probe("save_outside_lock", set(), campaign, tmp_path / "b")
    assert not patched["changed"] and patched["error"] == "SaveRefused"


# --- request_session ----------------------------------------------------------------------------------

def test_sessions_defect_and_patch(campaign: tuple[Path, str], tmp_path: Path) -> None:
    unpatched = run_probe("sessions", {"request_session"}, campaign, tmp_path / "a")
    assert unpatched["alice"]["user"] == "bob"  # alice's request ran under bob's session
    assert unpatched["bob"]["messages"] == ["message for alice"]  # bob was answered alice's message
    assert unpatched["alice"]["messages"] == []
    patched = run_probe("sessions", set(), campaign, tmp_path / "b")
    assert patched["alice"] == {"user": "alice", "messages": ["message for alice"]}
    assert patched["bob"] == {"user": "bob", "messages": []}


# --- no_empty_ann ---------------------------------------------------------------------------------------

def test_missing_ann_defect_and_patch(campaign: tuple[Path, str], tmp_path: Path) -> None:
    unpatched = run_probe("missing_ann", {"no_empty_ann"}, campaign, tmp_path / "a")
    assert unpatched["created"]
    patched = run_probe("missing_ann", set(), campaign, tmp_path / "b")
    assert not patched["created"] and patched["entities"] == [] and patched["exception"] is None


# --- no_stats_cache ---------------------------------------------------------------------------------------

def test_stats_cache_defect_and_patch(campaign: tuple[Path, str], tmp_path: Path) -> None:
    unpatched = run_probe("listing", {"no_stats_cache"}, campaign, tmp_path / "a")
    assert ".stats_cache" in unpatched["new_files"]
    patched = run_probe("listing", set(), campaign, tmp_path / "b")
    assert patched["new_files"] == [] and patched["items"] > 1 and patched["messages"] == []
