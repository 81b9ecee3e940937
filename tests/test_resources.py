"""pipeline.resources: the shipped config/ files as paths, the user cache directory, and the package list
of pyproject.toml that installs config/ as pipeline.config."""

from __future__ import annotations

from pathlib import Path

import platformdirs
import pytest
from setuptools import find_packages

from pipeline import resources

PROJECT = Path(__file__).resolve().parent.parent


def _setuptools_table() -> dict:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in Python 3.11+")
    return tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def test_a_checkout_reads_its_own_config_directory() -> None:
    # a source checkout (or an editable install) keeps today's paths: the builds record and hash them
    assert resources.CONFIG_DIR == (PROJECT / "config").resolve()
    assert resources.config_file("schema.yaml").read_text(encoding="utf-8")
    assert resources.config_file("brat/tools.conf").is_file()


def test_luigi_cfg_ships_as_a_link_to_the_top_level_file() -> None:
    assert (PROJECT / "config" / "luigi.cfg").is_symlink()
    assert resources.LUIGI_CFG == (PROJECT / "luigi.cfg").resolve()


def test_the_packages_of_pyproject_are_those_of_pipeline_and_config() -> None:
    setuptools = _setuptools_table()
    found = set(find_packages(str(PROJECT), include=["pipeline", "pipeline.*"]))
    assert set(setuptools["packages"]) == found | {"pipeline.config"}, "list every package in pyproject.toml"
    assert setuptools["package-dir"] == {"pipeline.config": "config"}


def test_every_config_file_is_package_data() -> None:
    patterns = _setuptools_table()["package-data"]["pipeline.config"]
    config = PROJECT / "config"
    shipped = {p for pattern in patterns for p in config.glob(pattern)}
    files = {p for p in config.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".py"}
    assert files <= shipped, sorted(str(p) for p in files - shipped)


def test_the_cache_directory_is_the_users_unless_overridden(monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    monkeypatch.delenv(resources.CACHE_ENV, raising=False)
    assert resources.cache_dir() == Path(platformdirs.user_cache_dir("pgx-corpus", appauthor=False))
    monkeypatch.setenv(resources.CACHE_ENV, str(tmp_path))
    assert resources.cache_dir() == tmp_path
