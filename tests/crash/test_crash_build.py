"""Crash consistency of ``pgx-corpus build`` (demo data, every stage up to batches, an earlier build
replaced): killed at a few sampled file-system mutations, then rerun, the output directory equals an
uninterrupted build's (passwords masked, see tests/crash/harness.py), with no leftover; ``OUT/brat`` is
never seen half-written.  ``bench/crash.py`` sweeps more points.

Covers: pipeline.cli.build_commands, pipeline.nlp.lexicon, pipeline.tasks.build
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.nlp.lexicon import DEFAULT_LEXICON
from tests.crash.conftest import check
from tests.crash.harness import Harness, sample_points
from tests.crash.scenarios import build_scenario

pytestmark = pytest.mark.skipif(
    not DEFAULT_LEXICON.exists(), reason=f"local annotator lexicon missing ({DEFAULT_LEXICON}): run `make setup`"
)


@pytest.fixture(scope="module")
def harness(workdir: Path) -> Harness:
    return Harness(build_scenario(), workdir)


@pytest.mark.slow  # four builds killed and rerun
def test_sampled_kill_points_of_a_build_recover(harness: Harness) -> None:
    assert harness.mutations > 100
    for point in sample_points(harness.mutations, 4, harness.exchanges[:2]):
        check(harness, harness.trial(point))


@pytest.mark.slow  # records a build's mutations, then two builds
def test_a_full_disk_during_a_build_then_a_rerun_recovers(harness: Harness) -> None:
    check(harness, harness.trial(harness.writes // 2, "enospc"))
