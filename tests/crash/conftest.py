"""Fixtures of the crash tests: one harness per scenario, set up once per module."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.crash.harness import Harness, Outcome


def check(harness: Harness, outcome: Outcome) -> None:
    """After one rerun: the directory of an uninterrupted run, no leftover, nothing published half."""
    where = f"{harness.scenario.name}: {outcome.kind} at {outcome.point} ({outcome.status})"
    assert outcome.partial == [], f"{where}: published directories neither old nor new: {outcome.partial}"
    assert outcome.leftovers == [], f"{where}: leftovers {outcome.leftovers}"
    assert outcome.differences == [], f"{where}: differs from an uninterrupted run: {outcome.differences[:20]}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("crash")


HarnessFactory = Callable[[str], Harness]
