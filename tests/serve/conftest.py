"""Fixtures of the serve tests: scrypt computed once per input, and for the browser tests one Chromium per test
module and screenshots saved on failure."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.campaign import users

# scrypt is a pure function of (password, salt, cost): the same login typed again, or the same wrong guess
# against the same salt, gives the same key, so a test process computes each input once (the real
# hashlib.scrypt, ~0.1 s and 32 MiB each) instead of for every request
_scrypt_once = functools.cache(users._scrypt)


@pytest.fixture(autouse=True)
def _scrypt_once_per_input(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(users, "_scrypt", _scrypt_once)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.serve.browser import new_driver  # selenium only where a browser test asks for it

    drv = new_driver(tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield drv
    finally:
        drv.quit()


@pytest.fixture()
def shots(driver: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[str], Path]]:
    from tests.serve.browser import screenshots

    yield from screenshots(driver, tmp_path, request)
