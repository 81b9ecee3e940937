"""Build the offline entity lexicon and, next to it, its lookup form.

[`build_lexicon`][pipeline.nlp.lexicon_build.build_lexicon] reads the pinned wheels
([`pipeline.nlp.lexicon`][pipeline.nlp.lexicon]) and writes the lexicon file, then its lookup form
([`pipeline.nlp.lexicon_lookup`][pipeline.nlp.lexicon_lookup]).
"""

from __future__ import annotations

import collections
import gzip
import json
import logging
import time
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.nlp.lexicon import LEXICON_FORMAT, WHEELS, collect_candidates, resolve

logger = logging.getLogger(__name__)


def build_lexicon(wheels_dir: Path, out: Path) -> dict[str, Any]:
    """Read the pinned wheels in ``wheels_dir`` and write the lexicon to ``out`` (gzip JSON).

    Same wheels -> same bytes (sorted entries, gzip mtime 0).  The file is
    written to a temporary beside ``out`` and renamed over it
    ([`replacing`][pipeline.durable.replacing]); its lookup form is then
    written beside it (``<out>.lookup``, by
    [`write_lookup`][pipeline.nlp.lexicon_lookup.write_lookup]).  Parent
    directories are created.

    Args:
        wheels_dir: The directory holding the pinned wheels.
        out: The lexicon file to write (``lexicon.json.gz``).

    Returns:
        A summary: ``path``, ``lookup`` (the sidecar's path), ``bytes``,
            ``wheels`` (the versions), ``counts`` (entry counts per table and type,
            candidate counts per source, dropped counts per reason: see the module
            docstring) and ``seconds`` (build time).

    Raises:
        FileNotFoundError: If a pinned wheel is missing.
    """
    started = time.monotonic()
    counts: collections.Counter[str] = collections.Counter()
    tables = resolve(collect_candidates(Path(wheels_dir), counts), counts)
    for table, entries in tables.items():
        counts[f"entries.{table}"] = len(entries)
        for _surface, type_, _ident in entries:
            counts[f"type.{type_}"] += 1
    payload = {"format": LEXICON_FORMAT, "wheels": WHEELS, "tables": tables}
    data = json.dumps(payload, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with durable.replacing(out) as tmp, open(tmp, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6) as gz:
        gz.write(data)
    # The lookup form next to it: pre-tokenized keys, so that loading the annotator takes no re-keying.
    from pipeline.nlp.lexicon_lookup import write_lookup

    lookup = write_lookup(out, tables)
    summary: dict[str, Any] = {
        "path": str(out),
        "lookup": str(lookup),
        "bytes": out.stat().st_size,
        "wheels": dict(WHEELS),
        "counts": dict(sorted(counts.items())),
        "seconds": round(time.monotonic() - started, 1),
    }
    logger.info("lexicon %s: %s", out, {k: v for k, v in counts.items() if k.startswith(("entries", "type"))})
    return summary
