"""Crash consistency of the campaign's writing commands (``batches`` new, rerun and with changed
pre-annotations, ``review``, ``finalize``, ``decisions apply``, ``release``, ``append``) and of ``train`` on
FINAL: each killed at sampled file-system mutations (and every directory swap), or failing on a full disk at
sampled writes, then rerun: the directory equals an uninterrupted run's, with no leftover, and no published
directory is ever seen half-written.  ``bench/crash.py`` sweeps every point.

Covers: pipeline.campaign.append, pipeline.campaign.batches, pipeline.campaign.decisions, pipeline.campaign.finalize,
pipeline.campaign.review, pipeline.cli.brat_commands, pipeline.cli.campaign_commands, pipeline.cli.release_commands,
pipeline.cli.train_commands
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crash.conftest import check
from tests.crash.harness import Harness, sample_points
from tests.crash.scenarios import by_name

pytestmark = pytest.mark.slow  # every writing command of the campaign, killed at 8 points and on a full disk at 3

COMMANDS = ("batches", "batches-rerun", "batches-changed", "review", "finalize", "decisions-apply", "release",
            "append", "train")


@pytest.fixture(scope="module", params=COMMANDS)
def harness(request: pytest.FixtureRequest, workdir: Path) -> Iterator[Harness]:
    yield Harness(by_name()[request.param], workdir)


def test_every_sampled_kill_point_recovers(harness: Harness) -> None:
    assert harness.mutations > 0
    for point in sample_points(harness.mutations, 8, harness.exchanges):
        check(harness, harness.trial(point))


def test_a_full_disk_then_a_rerun_with_space_recovers(harness: Harness) -> None:
    assert harness.writes > 0
    for point in sample_points(harness.writes, 3):
        check(harness, harness.trial(point, "enospc"))
