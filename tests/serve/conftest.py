"""Fixtures of the browser tests: one Chromium per test module, and screenshots saved on failure."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest


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
