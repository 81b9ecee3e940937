"""Shared fixtures: the read-only ../shared data (skipped when absent) and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def shared_path(*parts: str) -> Path:
    """A path under ../shared, or skip the test with a clear message when it is absent."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path} (put the shared/ folder beside the project)")
    return path


@pytest.fixture
def shared() -> Path:
    return shared_path()


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
