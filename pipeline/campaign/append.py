"""Rebuilds: append newly sampled sentences to a running campaign without moving anything.

Input: a campaign directory (``manifest.csv`` and ``phase1/<person>/`` collections, see
:mod:`pipeline.campaign.layout`), the brat collection of a rebuild (``OUT/brat``, a superset or an
overlapping set of the documents already assigned), the roster and the batch seed.

What :func:`append_to_campaign` does:

* reads the existing assignments of ``manifest.csv`` and keeps every row exactly (people no longer in the
  roster keep their documents); documents already assigned are never reassigned, copied or rewritten, so
  an annotator's started ``.ann`` is never touched, whatever the rebuild's pre-annotation says;
* assigns only the documents of the collection missing from the manifest, with the same balanced, seeded
  rule as ``pgx-corpus batches`` (:func:`pipeline.corpus.batches.assign`: two phase-1 annotators, one
  senior who is neither; loads count the existing rows);
* writes the new documents into the phase-1 collections of their annotators only (``NAME.txt`` and the
  pre-annotated ``NAME.ann``; a new person's collection gets the configuration files of an existing
  phase-1 collection, else the rebuild's); phase 2 is built later by ``campaign review``;
* rewrites ``manifest.csv`` (old rows first, as they were, then the new ones) atomically.

A file that already exists where a new document would go is never overwritten: the document is left out
of this append (reported, counted) and stays unassigned, so the next append retries it.

Count keys: ``documents``, ``documents_assigned_before``, ``documents_new``, ``documents_appended``,
``documents_blocked``, ``files_written``, ``assignments:phase1``, ``assignments:phase2``.
"""

from __future__ import annotations

import csv
import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

from pipeline.brat.conf import copy_conf_files
from pipeline.campaign.finalize import doc_key
from pipeline.campaign.layout import ASSIGNMENTS_CSV, PHASE1_DIR
from pipeline.corpus.batches import MANIFEST_FIELDS, ManifestError, assign, read_manifest, read_roster

log = logging.getLogger(__name__)


def _row_key(row: tuple[str, str, str]) -> tuple[Any, ...]:
    return doc_key(row[0]), row[1], row[2]


def append_to_campaign(
    collection: str | Path, campaign_dir: str | Path, roster: str | Path, *, seed: int = 13,
    counts: Counter[str] | None = None,
) -> list[tuple[str, str, str]]:
    """Assign and write the new documents of ``collection``; returns the new manifest rows.

    Raises RosterError, ManifestError or FileNotFoundError before anything is written.
    """
    counts = counts if counts is not None else Counter()
    campaign, src = Path(campaign_dir), Path(collection)
    people = read_roster(Path(roster))
    manifest = campaign / ASSIGNMENTS_CSV
    if not manifest.is_file():
        raise ManifestError(f"{manifest}: no campaign manifest (start the campaign with `pgx-corpus batches`)")
    previous = read_manifest(manifest)
    if not src.is_dir():
        raise FileNotFoundError(f"{src}: not a directory")
    txts = {p.stem: p for p in src.glob("*.txt")}
    assigned = {d for d, _, _ in previous}
    counts["documents"] += len(txts)
    counts["documents_assigned_before"] += len(assigned)
    new_docs = sorted(set(txts) - assigned, key=doc_key)
    counts["documents_new"] += len(new_docs)
    rows = assign(new_docs, people, seed, previous)
    old = set(previous)
    new_rows: list[tuple[str, str, str]] = [r for r in rows if r not in old]

    phase1 = campaign / PHASE1_DIR
    blocked = set()
    for doc, phase, person in new_rows:
        if phase == "1":
            for suffix in (".txt", ".ann"):
                if (phase1 / person / f"{doc}{suffix}").exists():
                    blocked.add(doc)
    for doc in sorted(blocked, key=doc_key):
        log.warning("%s: a file for this new document already exists in %s; left unassigned", doc, phase1)
    counts["documents_blocked"] += len(blocked)
    new_rows = [r for r in new_rows if r[0] not in blocked]

    conf_source = next((p for p in sorted(phase1.glob("*")) if (p / "annotation.conf").is_file()), src)
    for doc, phase, person in new_rows:
        counts[f"assignments:phase{phase}"] += 1
        if phase != "1":
            continue
        dest = phase1 / person
        if not (dest / "annotation.conf").exists():
            copy_conf_files(conf_source, dest)
        for suffix in (".txt", ".ann"):
            source = txts[doc].with_suffix(suffix)
            if source.exists():
                (dest / source.name).write_bytes(source.read_bytes())
                counts["files_written"] += 1
    counts["documents_appended"] += len({d for d, _, _ in new_rows})

    appended = sorted(new_rows, key=_row_key)
    tmp = manifest.with_name(f".{manifest.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(MANIFEST_FIELDS)
        writer.writerows(previous)
        writer.writerows(appended)
    os.replace(tmp, manifest)
    return new_rows
