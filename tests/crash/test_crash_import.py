"""Crash consistency of ``pgx-corpus import`` (BioC XML, and PubTator with its sentence sidecar): killed at
every file-system mutation (its directory rename included), or failing on a full disk at sampled writes,
then rerun: the directory equals an uninterrupted run's, with no leftover (the ``.OUT.tmp-PID-RANDOM`` a killed
run leaves is removed by the rerun), and ``--out`` is never seen half-written.

Covers: pipeline.cli.corpus_commands, pipeline.cli.import_commands
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crash.conftest import check
from tests.crash.harness import Harness, Scenario, sample_points
from tests.crash.scenarios import _quiet, collection, names

pytestmark = pytest.mark.slow  # every kill point of two imports


def _setup(fmt: str, name: str) -> Scenario:
    def setup(root: Path) -> None:
        collection(root / "coll", names(range(100, 104), 2))
        assert _quiet(root, ["export", "coll", "--format", fmt, "--out", name, "--no-relation-map"]) == 0

    return Scenario(f"import-{fmt}", setup, lambda r: ["import", name, "--out", "back"], published=("back",),
                    ok_codes=(0,))


SCENARIOS = {s.name: s for s in (_setup("bioc-xml", "corpus.xml"), _setup("pubtator", "corpus.pubtator"))}


@pytest.fixture(scope="module", params=sorted(SCENARIOS))
def harness(request: pytest.FixtureRequest, workdir: Path) -> Iterator[Harness]:
    yield Harness(SCENARIOS[request.param], workdir)


def test_every_kill_point_recovers(harness: Harness) -> None:
    assert harness.mutations > 0
    for point in range(1, harness.mutations + 1):  # a small import: every mutation, the rename included
        check(harness, harness.trial(point))


def test_a_full_disk_then_a_rerun_with_space_recovers(harness: Harness) -> None:
    assert harness.writes > 0
    for point in sample_points(harness.writes, 3):
        check(harness, harness.trial(point, "enospc"))
