"""Where a campaign came from: the build run, the schema and the guideline version it started with.

Recorded in ``campaign.json`` under ``provenance`` when the campaign is written (``batches`` or
``campaign import``)::

    {"build_run": "<run id>" | null, "build_manifest": "<path>" | null,
     "schema_sha256": "<sha256>" | null, "annotation_conf_sha256": "<sha256>" | null,
     "guideline_version": "1"}

``build_run`` is the run that published the collection (its ``.run`` marker, written by the build) and
``build_manifest`` that run's ``runs/<run>/manifest.json`` beside the collection, whose config hashes give
the schema's; without a build (a collection made by hand) they are null and the collection's own
``annotation.conf`` hash still says which schema it reflects.  Guideline versions after the first are
recorded by [`pipeline.campaign.guidelines`][pipeline.campaign.guidelines].  Nothing here is dated, so the same inputs
still give the same campaign directory.

[`write_gitignore`][pipeline.campaign.origin.write_gitignore] writes ``CAMPAIGN_DIR/.gitignore``: a campaign directory
kept in git never offers its secrets and private state for a commit (``access/``: users and password hashes;
``journal/``: every version of every document, with who wrote it; ``locks/``; temporaries).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pipeline.campaign.layout import GITIGNORE_FILE

FIRST_GUIDELINE_VERSION = "1"
RUN_MARKER = ".run"


def _sha(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


GITIGNORE = """# written by pgx-corpus: a campaign's secrets and private state are never committed
/access/
/journal/
/locks/
.*.tmp*
"""


def write_gitignore(campaign_dir: Path) -> None:
    """Write ``CAMPAIGN_DIR/.gitignore`` (see the module docstring), unless the file exists.

    A manager's own ``.gitignore`` is kept as it is.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
    """
    path = Path(campaign_dir) / GITIGNORE_FILE
    if not path.exists():
        path.write_text(GITIGNORE, encoding="utf-8")


def provenance(collection: Path, schema: Path | None = None) -> dict[str, Any]:
    """Describe where a campaign written from a collection came from.

    Reads the collection's ``.run`` marker and, if present, that run's ``runs/<run>/manifest.json``
    beside the collection; an unreadable manifest is ignored (its path is still recorded when it exists).

    Args:
        collection: The brat collection the campaign is written from (a build's output, or made by hand).
        schema: The schema file the campaign uses, if known; its hash takes precedence over the one in the
            build's manifest.

    Returns:
        The ``provenance`` object of ``campaign.json``: ``build_run``, ``build_manifest``,
        ``schema_sha256``, ``annotation_conf_sha256`` (each ``None`` when unknown) and
        ``guideline_version`` (always the first version).
    """
    src = Path(collection)
    marker = src / RUN_MARKER
    run = marker.read_text(encoding="utf-8").strip() if marker.is_file() else None
    manifest = src.parent / "runs" / run / "manifest.json" if run else None
    schema_sha = _sha(schema) if schema is not None else None
    if manifest is not None and manifest.is_file():
        try:
            hashes = json.loads(manifest.read_text(encoding="utf-8")).get("config_hashes", {})
            schema_sha = schema_sha or hashes.get("schema")
        except (OSError, json.JSONDecodeError):
            pass
    return {"build_run": run, "build_manifest": str(manifest) if manifest and manifest.is_file() else None,
            "schema_sha256": schema_sha, "annotation_conf_sha256": _sha(src / "annotation.conf"),
            "guideline_version": FIRST_GUIDELINE_VERSION}
