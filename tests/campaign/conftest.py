"""Fixtures of the campaign tests: a cheap scrypt cost, releases without drawn charts, directories built once.

Passwords: every campaign test that makes people (``batches``, ``team``, ``create_users``) hashes their
passwords, and scrypt at the production cost (``pipeline.campaign.users.SCRYPT_N``, 32 MiB per hash) is most of
what those tests spend.  Their point is the files and the checks, not the cost, so they hash with
``N = TEST_SCRYPT_N``; a test that checks the production cost asks for the ``production_scrypt`` fixture.

Charts: a test that reads a release's datasheet, metadata or refusals asks for ``charts_not_drawn``; the
charts are drawn in the tests of tests/campaign/test_release.py that check them.

Shared builds: ``built_once`` makes an expensive directory (the release of the dev gold) once per test session
for every pytest-xdist worker, for tests that only read it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pipeline import durable
from pipeline.campaign import users
from pipeline.campaign.release import tables

PRODUCTION_SCRYPT_N = users.SCRYPT_N
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"  # what charts_not_drawn writes instead of a chart
TEST_SCRYPT_N = 2**8  # the hash format and every check are the same; a hash costs ~0.3 ms instead of ~60 ms


@pytest.fixture(autouse=True)
def _cheap_scrypt(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hash new passwords (and the store's decoy) with ``TEST_SCRYPT_N`` unless the test asks for
    ``production_scrypt``.  Only this process: a CLI run in a subprocess hashes at the production cost."""
    if "production_scrypt" not in request.fixturenames:
        monkeypatch.setattr(users, "SCRYPT_N", TEST_SCRYPT_N)


@pytest.fixture
def production_scrypt() -> int:
    """The production scrypt cost, left in place for this test (see ``_cheap_scrypt``)."""
    assert users.SCRYPT_N == PRODUCTION_SCRYPT_N
    return PRODUCTION_SCRYPT_N


@pytest.fixture
def charts_not_drawn(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Releases in this test write each table's PNG as a bare PNG signature instead of drawing it.

    Drawing the charts with matplotlib is most of a small release's time (about 0.25 s a chart).  Tests of
    the datasheet, the metadata and the refusals never look at a chart; the charts themselves are drawn and
    checked by tests/campaign/test_release.py.  Returns the names of the PNG files the release asked for.
    """
    asked: list[str] = []

    def signature_only(path: Path, title: str, chart: tuple[str, list[str], dict[str, list[float]]]) -> None:
        assert title and chart[1]  # what the real chart needs: a title and labels
        asked.append(path.name)
        path.write_bytes(PNG_SIGNATURE)

    monkeypatch.setattr(tables, "write_chart", signature_only)
    return asked


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """A directory made by ``build(path)`` once per test session, shared by every pytest-xdist worker.

    The first worker that asks builds it in place (paths written into it stay true), holding
    ``pipeline.durable.lock_path``, and marks it done when ``build`` returns; the others wait for it and
    reuse it.  The directory is shared: tests only read it.

    Args:
        tmp_path_factory: pytest's factory; the directory lives under the session's temporary root.
        name: The directory's name, unique per kind of build.
        build: Writes the directory at the path given (which does not exist yet).

    Returns:
        The built directory.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the session's root, shared by the workers (each has its own basetemp under it)
    shared = root / "built-once"
    shared.mkdir(exist_ok=True)
    target, done = shared / name, shared / f"{name}.done"
    with durable.lock_path(shared / f"{name}.lock"):
        if not done.exists():
            shutil.rmtree(target, ignore_errors=True)  # what a failed build left
            build(target)
            done.touch()
    return target

