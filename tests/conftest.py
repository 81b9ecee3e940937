"""Shared fixtures: the read-only ../shared data (skipped when absent) and small helpers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PGX_SHARED", PROJECT.parent / "shared"))
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# The lexicon is built in the user cache directory (pipeline.resources.cache_dir; `make` exports
# PGX_CACHE_DIR).  A checkout that still holds one in .cache/, where `make setup` built it before it
# moved, lends it to its tests; set before any pipeline module computes its default paths.
if not os.environ.get("PGX_CACHE_DIR") and (PROJECT / ".cache" / "lexicon" / "lexicon.json.gz").is_file():
    os.environ["PGX_CACHE_DIR"] = str(PROJECT / ".cache")


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


@pytest.fixture(autouse=True)
def _private_rate_limit_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own host-wide rate-limit directory: tests with fake clocks must not share
    (or pollute) the real one, and parallel test runs must not slow each other down."""
    monkeypatch.setenv("PGX_RATELIMIT_DIR", str(tmp_path_factory.mktemp("ratelimit")))


MAX_SLOW = 150
"""At most this many tests are marked ``slow``, so that the everyday loop keeps covering what it covers."""


def slow_count_error(items: list[pytest.Item]) -> str:
    """The error for a collection with too many tests marked ``slow``, or "" (a subset has fewer, never more)."""
    slow = sum(1 for item in items if item.get_closest_marker("slow") is not None)
    if slow <= MAX_SLOW:
        return ""
    return (f"{slow} tests are marked slow, more than {MAX_SLOW}: make one faster instead of marking it, "
            "so that the everyday loop (-m 'not slow') still runs it")


@pytest.hookimpl(tryfirst=True)  # before -m deselects them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    error = slow_count_error(items)
    if error:
        raise pytest.UsageError(error)
