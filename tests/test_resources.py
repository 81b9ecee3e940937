"""pipeline.resources: the shipped config/ files as paths, the user cache directory, and the package list
of pyproject.toml that installs config/ as pipeline.config.

Covers: pipeline.resources
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
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


def _copy_checkout(dest: Path) -> Path:
    # what `pip install .` reads, without the checkout's build leftovers, virtualenv or caches
    shutil.copytree(PROJECT, dest, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", ".cache", "out", "build", "site", "*.egg-info", "__pycache__", ".*_cache",
        "tests", "docs", "bench", "data"))
    return dest


@pytest.mark.slow
def test_a_non_editable_install_builds_the_demo_from_elsewhere(tmp_path: Path) -> None:
    """`pip install .` into a fresh virtualenv (the running one's packages lent to it by a .pth file, so
    nothing is fetched: the build backend is the dev extra's setuptools), the lexicon built into its cache
    directory, then `pgx-corpus build` from a directory outside the checkout: the configuration comes from
    the installed package."""
    from pipeline.nlp import lexicon

    wheels = lexicon.DEFAULT_WHEELS  # the pinned wheels `make setup` downloaded
    if not sorted(wheels.glob("*.whl")):
        pytest.skip(f"the lexicon's pinned wheels are missing ({wheels}): run `make setup`")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    lent = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "_pgx_test_dependencies.pth").write_text("".join(f"{p}\n" for p in sorted(lent)), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LUIGI_CONFIG_PATH")}
    env["PGX_CACHE_DIR"] = str(tmp_path / "cache")
    src = _copy_checkout(tmp_path / "src")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-build-isolation", str(src)],
                   check=True, env=env, timeout=900)
    shutil.rmtree(src)  # nothing may be read from the copy any more

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    installed = site / "pipeline" / "config"
    where = subprocess.run([str(python), "-c", "from pipeline import resources; print(resources.CONFIG_DIR)"],
                           check=True, capture_output=True, text=True, cwd=elsewhere, env=env).stdout.strip()
    assert Path(where) == installed.resolve()
    assert (installed / "luigi.cfg").is_file() and not (installed / "luigi.cfg").is_symlink()
    assert (installed / "luigi.cfg").read_bytes() == (PROJECT / "luigi.cfg").read_bytes()

    cli = str(venv / "bin" / "pgx-corpus")
    subprocess.run([cli, "lexicon", "build", "--wheels", str(wheels)], check=True, cwd=elsewhere, env=env,
                   timeout=1800)
    assert (tmp_path / "cache" / "lexicon" / "lexicon.json.gz").is_file()
    out = tmp_path / "out"
    proc = subprocess.run([cli, "build", "--pubmed-xml", str(PROJECT / "data" / "demo" / "pubmed"), "--out", str(out)],
                          capture_output=True, text=True, cwd=elsewhere, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted((out / "brat").glob("*.ann")), "the build wrote no brat document"
    manifests = sorted((out / "runs").glob("*/manifest.json"))
    assert manifests, "the build wrote no manifest"
    files = json.loads(manifests[-1].read_text(encoding="utf-8"))["config_files"]
    assert Path(files["schema"]).resolve() == (installed / "schema.yaml").resolve()
