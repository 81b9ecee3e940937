"""The build's configuration record, as every worker must see it.

``pgx-corpus build`` writes what decides where and how its tasks write (the code version, the content of
every versioned configuration file, the sources' sizes and mtimes, the spaCy model's version) to
``OUT/cache/config/<digest>.json`` and passes the digest to every task.  Before a task runs, the process
that runs it compares what it sees with the record: a worker on another host, with other configuration
contents or without the shared output directory, refuses instead of mixing outputs
([`ConfigMismatchError`][pipeline.corpus.config_record.ConfigMismatchError]).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pipeline import __version__, durable, store
from pipeline.corpus.manifest import model_version


class ConfigMismatchError(RuntimeError):
    """This process does not see the configuration the build was started with (the message says what differs)."""


def record_path(out: str | os.PathLike[str], digest: str) -> Path:
    """Return where a build's configuration record is kept.

    Args:
        out: The build's output directory (``--out``).
        digest: The record's digest, as [`write_record`][pipeline.corpus.config_record.write_record]
            returns it.

    Returns:
        ``OUT/cache/config/<digest>.json``.
    """
    return Path(out) / "cache" / "config" / f"{digest}.json"


def make_record(config_inputs: Iterable[str], sources: Iterable[Sequence[Any]], model: str) -> dict[str, Any]:
    """Return what decides where and how a build's tasks write.

    Args:
        config_inputs: The versioned files the build's result depends on (configuration, lexicon, roster...).
        sources: The ``(path, size, mtime)`` of every offline input file (see
            [`file_fingerprint`][pipeline.store.file_fingerprint]).
        model: The name of the spaCy pipeline used for parsing.

    Returns:
        The record: ``version`` (the package's), ``files`` (path -> SHA-256 of the content, None when
        absent), ``sources`` and ``model`` (name -> installed version).
    """
    return {
        "version": __version__,
        "files": {path: store.content_digest(path) for path in sorted(set(config_inputs))},
        "sources": [list(f) for f in sources],
        "model": {model: model_version(model)},
    }


def write_record(out: str | os.PathLike[str], record: dict[str, Any]) -> str:
    """Write a configuration record under the build's output directory, once per content.

    Args:
        out: The build's output directory (``--out``).
        record: The record, from [`make_record`][pipeline.corpus.config_record.make_record].

    Returns:
        The record's digest, which names the file and which the build passes to every task.
    """
    blob = store.dumps_json(record)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
    path = record_path(out, digest)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        durable.replace_file(path, blob.encode("utf-8"))
    return digest


def _sha(value: str | None) -> str:
    return "missing" if value is None else f"sha256 {value[:12]}"


def differences(
    out: str | os.PathLike[str],
    digest: str,
    config_inputs: Iterable[str],
    *,
    sources: Iterable[Sequence[Any]] | None = None,
    data_inputs: Iterable[str] = (),
    model: str | None = None,
) -> list[str]:
    """Return how what this process sees differs from a build's configuration record.

    Args:
        out: The build's output directory (``--out``).
        digest: The record's digest (a task's ``config_digest``).
        config_inputs: The versioned files the task's result depends on; their contents here are compared
            with the record's.
        sources: The ``(path, size, mtime)`` of the offline input files the task reads, as seen here; None
            when the task reads none.
        data_inputs: The files and directories those sources were found under: the record's sources
            outside them are not the task's, and are not compared.
        model: The spaCy pipeline the task parses with, whose installed version is compared; None when it
            parses nothing.

    Returns:
        One message per difference (the first differing source file only), empty when there is none.
    """
    path = record_path(out, digest)
    if not path.is_file():
        return [
            f"{path} not found: this process does not see the build's output directory (every worker needs "
            "--out on a shared filesystem, at the same path)"
        ]
    record = store.read_json(path)
    problems = []
    if record.get("version") != __version__:
        problems.append(f"pgx-corpus version {__version__} here, {record.get('version')} in the build")
    files = record.get("files", {})
    for name in sorted(set(config_inputs)):
        mine, theirs = store.content_digest(name), files.get(name, "not recorded")
        if mine != theirs:
            problems.append(f"{name}: {_sha(mine)} here, {_sha(theirs) if theirs != 'not recorded' else theirs} "
                            "in the build")
    if sources is not None:
        mine_sources = {f[0]: list(f[1:]) for f in sources}
        # The record holds every source of the build; a stage compares the ones it reads (its own
        # data_inputs): the documents stage does not read the --annotations files of pre-annotation.
        roots = [str(Path(value)) for value in data_inputs]
        theirs_sources = {
            f[0]: list(f[1:]) for f in record.get("sources", [])
            if any(f[0] == root or f[0].startswith(root.rstrip("/") + "/") for root in roots)
        }
        for name in sorted(set(mine_sources) | set(theirs_sources)):
            if mine_sources.get(name) != theirs_sources.get(name):
                problems.append(f"source file {name}: (size, mtime) {mine_sources.get(name)} here, "
                                f"{theirs_sources.get(name)} in the build")
                break
    if model is not None:
        mine_model = model_version(model)
        theirs_model = record.get("model", {}).get(model)
        if mine_model != theirs_model:
            problems.append(f"spaCy model {model} {mine_model} here, {theirs_model} in the build")
    return problems
