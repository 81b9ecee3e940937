"""The no-change check of ``pgx-corpus build``, made before Luigi is imported.

A build from offline sources that ends well records, in ``OUT/cache/nochange.json``, what decided its
result and what it left: the command's parameters, the Luigi configuration files it read, its
configuration record ([`make_record`][pipeline.corpus.config_record.make_record]: the content of every
configuration file, the sizes and mtimes of the sources, the package and spaCy model versions), and the
identity (inode, size, mtime) of the run's manifest, the published ``brat/`` marker and every stage's
output directory.  The same command again compares all of that with what it sees now and, when nothing
differs, prints what the build printed and exits without loading Luigi, the lexicon or the model.  Any
difference, an online query, a central scheduler or a missing record runs the build as before; a build
that goes on to Luigi removes the record first, and only a build that ends well writes it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

from pipeline import __version__, durable, store
from pipeline.corpus import config_record

log = logging.getLogger(__name__)

RECORD_FORMAT = 1


def record_path(out: Path) -> Path:
    """Return where a build's no-change record is kept.

    Args:
        out: The output directory (``--out``), resolved.

    Returns:
        ``OUT/cache/nochange.json``.
    """
    return out / "cache" / "nochange.json"


def applies(args: argparse.Namespace) -> bool:
    """Whether a build's command can be checked for no change before Luigi.

    Args:
        args: The parsed ``build`` arguments.

    Returns:
        True for offline sources only (``--pubmed-xml``/``--pubtator``, no query) run by this process
            alone (no central scheduler, no workers waited for).
    """
    return bool(
        (args.pubmed_xml or args.pubtator) and not args.query and not args.query_file
        and not args.scheduler_host and not args.wait_for_workers
    )


def _luigi_config_files() -> list[str]:
    """The configuration files Luigi may read in this process (its defaults, ``LUIGI_CONFIG_PATH``, the project's)."""
    project = Path(__file__).resolve().parents[2]
    paths = ["/etc/luigi/client.cfg", "/etc/luigi/luigi.cfg", "client.cfg", "luigi.cfg", "luigi.toml",
             str(project / "luigi.cfg"), *filter(None, os.environ.get("LUIGI_CONFIG_PATH", "").split(os.pathsep))]
    return [str(Path(p).resolve()) for p in paths]


def command_key(params: dict[str, Any]) -> str:
    """Return the digest of what a build's command says, with the Luigi configuration it would read.

    Args:
        params: The build's parameters ([`build_params`][pipeline.cli.build_commands.build_params]).

    Returns:
        A SHA-256, hexadecimal.
    """
    luigi_files = {p: store.content_digest(p) for p in _luigi_config_files()}
    blob = store.dumps_json({"params": params, "luigi": luigi_files, "version": __version__,
                             "env": os.environ.get("LUIGI_CONFIG_PATH", "")})
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _identity(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_ino, st.st_size, st.st_mtime_ns]


def _outputs(out: Path, manifest_path: Path) -> dict[str, Any]:
    """The identity of what a finished build left: its manifest, the ``brat/`` marker, each stage's output."""
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    marker = out / "brat" / ".run"
    return {
        "manifest": [str(manifest_path), _identity(manifest_path)],
        "marker": [marker.read_text(encoding="utf-8") if marker.is_file() else None, _identity(marker)],
        "stages": {name: [path, _identity(Path(path))] for name, path in sorted(manifest["outputs"].items())},
    }


def write(out: Path, params: dict[str, Any], config_inputs: list[str], data_inputs: list[str], model: str,
          manifest_path: Path, printed: list[str]) -> None:
    """Record a build that ended well, for the next build's check.

    Args:
        out: The output directory, resolved.
        params: The build's parameters.
        config_inputs: The configuration files its result depends on (the root task's ``config_inputs``).
        data_inputs: Its offline source files and directories.
        model: The spaCy pipeline's name.
        manifest_path: The run's manifest.
        printed: The lines the build printed on stdout.

    Side effects:
        Writes ``OUT/cache/nochange.json`` atomically.
    """
    record = {
        "format": RECORD_FORMAT,
        "key": command_key(params),
        "inputs": {"config": sorted(set(config_inputs)), "data": list(data_inputs), "model": model},
        "config": config_record.make_record(config_inputs, store.file_fingerprint(data_inputs), model),
        "outputs": _outputs(out, manifest_path),
        "printed": printed,
    }
    path = record_path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    durable.replace_file(path, store.dumps_json(record).encode("utf-8"))


def forget(out: Path) -> None:
    """Remove the record before a build changes anything (a build that fails leaves none).

    Args:
        out: The output directory, resolved.
    """
    record_path(out).unlink(missing_ok=True)


def unchanged(out: Path, params: dict[str, Any]) -> list[str] | None:
    """Check whether the last build of ``out`` was this command and nothing it depends on has changed.

    Args:
        out: The output directory, resolved.
        params: This build's parameters.

    Returns:
        The lines the last build printed when nothing changed; ``None`` otherwise (the build must run).
    """
    try:
        record = json.loads(record_path(out).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    try:
        if record.get("format") != RECORD_FORMAT or record["key"] != command_key(params):
            return None
        inputs = record["inputs"]
        sources = store.file_fingerprint(inputs["data"])
        if record["config"] != json.loads(store.dumps_json(
                config_record.make_record(inputs["config"], sources, inputs["model"]))):
            return None
        manifest_path = Path(record["outputs"]["manifest"][0])
        if record["outputs"] != json.loads(store.dumps_json(_outputs(out, manifest_path))):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return [str(line) for line in record["printed"]]
