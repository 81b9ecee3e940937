"""Run manifests: what a build did, so a corpus and its statistics can be reproduced.

A manifest (``OUT/runs/<hash>/manifest.json``) records:

* ``params``: the build's significant parameters (the API key is never one);
* ``search``: query, search date, Count and number of PMIDs (the PMID list
  stays in the search record under ``OUT/searches/``);
* ``fetch``: the fetch report without its failed batches;
* ``stages``: each stage's counts (its ``counts.json``) and ``outputs``: where
  each stage wrote;
* ``versions``: Python and package versions, the spaCy model's name and version;
* ``config_hashes``: SHA-256 of every versioned input (schema, ontology,
  filter settings, lexicon, roster, trigger list), and ``config_files``: their paths;
* ``seeds`` and ``failures`` (failed fetch batches with their PMIDs).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pipeline import __version__, store

PACKAGES = ("luigi", "lxml", "requests", "spacy", "PyYAML", "bioc", "wordfreq")


def package_versions(model: str | None = None) -> dict[str, str]:
    """List the installed versions of the packages a build depends on (and of the spaCy model).

    Args:
        model: The spaCy model's package name; None for no model.

    Returns:
        ``python``, ``pgx-corpus`` and each package of ``PACKAGES`` -> its version (``"not installed"``
        when absent), plus ``model:<name>`` -> [`model_version`][pipeline.corpus.manifest.model_version].
    """
    versions = {"python": platform.python_version(), "pgx-corpus": __version__}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    if model:
        versions[f"model:{model}"] = model_version(model)
    return versions


_VERSIONS: dict[tuple[Any, ...], str] = {}


def model_version(name: str) -> str:
    """Return the installed version of a spaCy model package.

    Remembered while no directory of ``sys.path`` changes (installing or removing a
    package changes its directory): every output path of the parse stages asks for it.

    Args:
        name: The model's name (``en_core_sci_sm``); ``_`` is read as ``-`` in the package name.

    Returns:
        The version, or ``"unknown"`` when the model is not an installed package (a directory, say).
    """
    key = (name, *(_mtime(p) for p in sys.path))
    if key not in _VERSIONS:
        try:
            _VERSIONS[key] = importlib.metadata.version(name.replace("_", "-"))
        except importlib.metadata.PackageNotFoundError:
            _VERSIONS[key] = "unknown"
    return _VERSIONS[key]


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return None


def sha256_file(path: str | Path) -> str | None:
    """Hash a file's content.

    Args:
        path: The file.

    Returns:
        The SHA-256 of its bytes, in hexadecimal; None when it is not a file (missing, a directory).
    """
    p = Path(path)
    if not p.is_file():
        return None
    digest = hashlib.sha256()
    with open(p, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def config_file_names(paths: Iterable[str], named: Mapping[str, str]) -> dict[str, str]:
    """Name a build's versioned input files for its manifest.

    Args:
        paths: The files whose content decides the build's result.
        named: Names of the files given by an option (path -> name, e.g. the ``--schema`` file ->
            ``schema``); empty paths are ignored.

    Returns:
        Name -> path: a named file by its name, the lexicon as ``lexicon``, a file of ``config/brat/`` as
        ``brat/<file name>``, any other by its file name without suffix.
    """
    files = {}
    for path in paths:
        p = Path(path)
        name = named.get(path) or ("lexicon" if p.name.startswith("lexicon") else
                                   f"brat/{p.name}" if p.parent.name == "brat" else p.stem)
        files[name] = path
    return files


def build_manifest(
    *,
    params: Mapping[str, Any],
    outputs: Mapping[str, str],
    search: Mapping[str, Any] | None,
    fetch: Mapping[str, Any] | None,
    config_files: Mapping[str, str],
    seeds: Mapping[str, int],
    model: str | None,
) -> dict[str, Any]:
    """Assemble the manifest of a finished build from its stage outputs (nothing is written here).

    Args:
        params: The build's significant parameters.
        outputs: Stage name -> its output directory; each stage's counts are read from
            ``counts.json`` in that directory or its parent (``{}`` when neither exists).
        search: The search record (JSON of [`SearchRecord`][pipeline.sources.retrieval.SearchRecord]);
            None for a build without a query.
        fetch: The fetch report (JSON of [`FetchReport`][pipeline.sources.retrieval.FetchReport]); None
            for a build without a query.
        config_files: Name -> path of every versioned input, hashed here.
        seeds: Name -> seed of every random choice (sample, batches).
        model: The spaCy model's name when a stage used it; None otherwise.

    Returns:
        The manifest, a JSON object (see the module docstring); output paths resolved.
    """
    stages: dict[str, Any] = {}
    for stage, directory in outputs.items():
        counts = Path(directory) / "counts.json"
        if not counts.exists():
            counts = Path(directory).parent / "counts.json"
        stages[stage] = store.read_json(counts) if counts.exists() else {}
    failures = list((fetch or {}).get("failed", []))
    return {
        "params": dict(params),
        "search": None
        if search is None
        else {
            "query": search.get("query"),
            "search_date": search.get("search_date"),
            "count": search.get("count"),
            "pmids": len(search.get("pmids", [])),
        },
        "fetch": None if fetch is None else {k: v for k, v in fetch.items() if k != "failed"},
        "stages": stages,
        "outputs": {k: str(Path(v).resolve()) for k, v in outputs.items()},
        "versions": package_versions(model),
        "config_hashes": {name: sha256_file(path) for name, path in sorted(config_files.items())},
        "config_files": {name: str(path) for name, path in sorted(config_files.items())},
        "seeds": dict(seeds),
        "failures": failures,
    }
