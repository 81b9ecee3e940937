"""Crash consistency of the later writing commands of a live campaign: ``campaign users reset``/``revoke``,
``campaign history --restore``, ``campaign backup`` and the team commands (``replace``, ``add-person``,
``reassign``, ``import``, ``calibrate``, ``guideline``).  Each is killed at a few sampled file-system
mutations (first and last included), then rerun: the directory equals an uninterrupted run's (new
passwords' hashes and clock times masked, see :mod:`tests.crash.harness`), with no leftover.
``bench/crash.py`` sweeps every point.

Covers: pipeline.campaign.importing, pipeline.campaign.team, pipeline.campaign.users, pipeline.cli.import_commands,
pipeline.cli.team_commands, pipeline.cli.users_commands, pipeline.serve.backup, pipeline.serve.history
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crash.conftest import check
from tests.crash.harness import Harness, sample_points
from tests.crash.scenarios import by_name

pytestmark = pytest.mark.slow  # ten commands, each killed at up to 6 points and rerun

NAMES = ["users-reset", "users-revoke", "history-restore", "backup", "replace", "add-person", "reassign",
         "import", "calibrate", "guideline"]
SAMPLES = {"import": 4, "replace": 5, "add-person": 5}


@pytest.fixture(scope="module", params=NAMES)
def harness(request: pytest.FixtureRequest, workdir: Path) -> Iterator[Harness]:
    yield Harness(by_name()[request.param], workdir)


def test_every_sampled_kill_point_recovers(harness: Harness) -> None:
    assert harness.mutations > 0
    for point in sample_points(harness.mutations, SAMPLES.get(harness.scenario.name, 6), harness.exchanges):
        check(harness, harness.trial(point))
