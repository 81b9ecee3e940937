"""docs/reference/campaign-layout.md against the code: every part of a campaign directory that a module names is
listed on the page, and every part the page lists is one the code names.

Covers: pipeline.campaign.assignments, pipeline.campaign.calibration, pipeline.campaign.deploy,
pipeline.campaign.finalized, pipeline.campaign.guidelines, pipeline.campaign.journal, pipeline.campaign.layout,
pipeline.campaign.locks, pipeline.campaign.models, pipeline.campaign.suggestions, pipeline.campaign.team,
pipeline.campaign.users, pipeline.serve.policy
"""

from __future__ import annotations

import re
from pathlib import Path

from pipeline.campaign import (
    assignments,
    calibration,
    finalized,
    guidelines,
    journal,
    layout,
    locks,
    models,
    suggestions,
    team,
    users,
)
from pipeline.campaign.deploy import PREANNOTATION_DIR
from pipeline.serve.policy import FINAL_DIR

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "campaign-layout.md"

#: the top-level parts of CAMPAIGN_DIR, as the modules that write them name them
CODE_PARTS = {
    layout.PHASE1_DIR, layout.PHASE2_DIR, layout.REVIEW_DIR, PREANNOTATION_DIR, layout.CAMPAIGN_MANIFEST,
    layout.ASSIGNMENTS_CSV, users.ACCESS_DIR, journal.JOURNAL_DIR, locks.LOCKS_DIR, assignments.HISTORY_FILE,
    calibration.CALIBRATION_DIR, guidelines.SNAPSHOT_DIR, team.ARCHIVE_DIR, FINAL_DIR, finalized.RECORD_FILE,
    suggestions.SUGGESTIONS_DIR, "DEPLOY.md", models.MODELS_DIR,
}


def listed_parts() -> set[str]:
    """The top-level names of the page's table (its first column, up to the first slash)."""
    table = PAGE.read_text(encoding="utf-8").split("## In brat")[0]
    return {m.group(1) for m in re.finditer(r"^\| `([^`/<]+)", table, re.M)}


def test_every_part_the_code_names_is_listed() -> None:
    assert sorted(CODE_PARTS - listed_parts()) == []


def test_every_listed_part_is_one_the_code_names() -> None:
    assert sorted(listed_parts() - CODE_PARTS) == []
