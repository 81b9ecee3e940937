"""Blind phase 1: the campaign directory written by ``pgx-corpus batches``.

Input: the source brat collection, the assignment rows of [`assign`][pipeline.campaign.batches.assign]
(``(document, phase, person)``), the roster.  Output in ``CAMPAIGN_DIR`` (layout in
[`pipeline.campaign.layout`][pipeline.campaign.layout]):

* ``phase1/<person>/``: the person's documents as pre-annotated (pages when paging), the
  collection's configuration extended with the campaign types (``Discard`` + ``Reason``, ``Done``)
  and ``guide.md``;
* ``preannotation/``: one copy of every document as handed out plus the source configuration, the
  reference of ``campaign status`` and of the text check (nobody sees it in brat);
* ``DEPLOY.md``, ``campaign.json``.

Who may reach which collection is decided by ``campaign serve`` (not by files in the collections), from
the roles [`access_roles`][pipeline.campaign.layout.access_roles] gives each person; the command line creates their
users ([`create_users`][pipeline.campaign.users.create_users], ``CAMPAIGN_DIR/access/``) and shows new passwords once.

No phase-2 collection is written here: the phase-2 senior of each document is chosen now and recorded,
and ``campaign review`` writes the seniors' collections from the annotators' results.

``campaign.json`` is described in [`pipeline.campaign.layout`][pipeline.campaign.layout].  Everything is a
deterministic function of the inputs.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat.conf import copy_conf_files
from pipeline.brat.standoff import BratDocument, dumps
from pipeline.campaign import deploy, publish
from pipeline.campaign.conf import write_campaign_conf_files
from pipeline.campaign.guide import GUIDE_FILE, annotator_guide
from pipeline.campaign.layout import (
    CAMPAIGN_MANIFEST,
    DEPLOY_NOTE,
    MANIFEST_FORMAT,
    PHASE1_DIR,
    PHASE2_DIR,
    PREANNOTATION_DIR,
    CampaignError,
    access_roles,
    check_ids,
)
from pipeline.campaign.origin import provenance, write_gitignore
from pipeline.corpus.brat_export import SETTINGS_FILE

log = logging.getLogger(__name__)

def edited_documents(campaign_dir: Path) -> list[str]:
    """List the documents of a campaign that people have edited.

    Compares bytes: a phase-1 ``.ann`` is edited when it differs from its pre-annotation copy (or has
    none); any phase-2 ``.ann`` counts.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.

    Returns:
        ``person/NAME`` for phase-1 documents, then ``phase2/senior/NAME``, each sorted.
    """
    root = Path(campaign_dir)
    pre = root / PREANNOTATION_DIR
    out = []
    for ann in sorted((root / PHASE1_DIR).glob("*/*.ann")):
        original = pre / ann.name
        if not original.is_file() or original.read_bytes() != ann.read_bytes():
            out.append(f"{ann.parent.name}/{ann.stem}")
    out += [f"{PHASE2_DIR}/{p.parent.name}/{p.stem}" for p in sorted((root / PHASE2_DIR).glob("*/*.ann"))]
    return out


def _as_written(out: Path, edited: str, txts: Mapping[str, Path],
                pages: Mapping[str, list[BratDocument]] | None) -> bool:
    """Whether the phase-1 document ``edited`` (``person/NAME``) holds what ``write_phase1`` writes.

    That is the ``.ann`` written for ``NAME`` from the source collection (what a killed earlier run may
    have left).
    """
    person, _, name = edited.partition("/")
    if person == PHASE2_DIR:
        return False
    try:
        current = (out / PHASE1_DIR / person / f"{name}.ann").read_bytes()
    except OSError:
        return False
    for doc_pages in (pages or {}).values():
        for page in doc_pages:
            if page.name == name:
                return current == dumps(page).encode("utf-8")
    source = txts.get(name)
    if source is None:
        return False
    ann = source.with_suffix(".ann")
    return current == (ann.read_bytes() if ann.exists() else b"")


def write_phase1(
    src: Path,
    txts: Mapping[str, Path],
    rows: Sequence[tuple[str, str, str]],
    roster: Sequence[tuple[str, str, bool]],
    out: Path,
    *,
    seed: int,
    counts: Counter[str],
    pages: Mapping[str, list[BratDocument]] | None = None,
) -> dict[str, frozenset[str]]:
    """Write the campaign directory of phase 1 (see the module docstring).

    Checks (ids usable, campaign not started) come before anything is written.  Each document is written
    beside itself and renamed, ``.ann`` before ``.txt``, and only when changed, so a rerun after a kill
    finishes the job; documents and phase-1 collections the campaign no longer holds are removed, and
    ``phase2/`` (configuration only, since nobody has started) is removed.  No document lock is taken:
    nobody has edited the campaign.

    Args:
        src: The source brat collection (its configuration files are copied).
        txts: Document -> its ``.txt`` in ``src`` (the ``.ann`` beside it is the pre-annotation); a
            document missing here gets no files.
        rows: The assignments ``(document, phase, person)`` of
            [`assign`][pipeline.campaign.batches.assign], phase ``"1"`` or ``"2"``.
        roster: ``(id, role, phase1)`` of the people of the roster; people named only by ``rows`` (a
            previous manifest) are added with ``roster: false``.
        out: The campaign directory ``CAMPAIGN_DIR``, created if needed.
        seed: The seed the assignment was drawn with, recorded in ``campaign.json``.
        counts: Counters updated in place: ``collections:phase1`` and ``files_written``.
        pages: Document -> its pages when paging (each page a brat document of its own); ``None`` when not.

    Returns:
        Person -> roles, as [`access_roles`][pipeline.campaign.layout.access_roles] gives them.

    Raises:
        CampaignError: If an id is not usable ([`check_ids`][pipeline.campaign.layout.check_ids]), or the
            campaign in ``out`` has started (a document edited); nothing is written then.
    """
    people: dict[str, dict[str, Any]] = {
        pid: {"id": pid, "role": role, "phase1": phase1, "roster": True} for pid, role, phase1 in roster
    }
    for _, phase, person in rows:
        if person not in people:
            people[person] = {"id": person, "role": "annotator" if phase == "1" else "senior",
                              "phase1": phase == "1", "roster": False}
    check_ids(list(people), "roster")
    started = edited_documents(out) if out.is_dir() else []
    # a phase-1 .ann that already holds what this run writes was written by a run killed before it had
    # updated the pre-annotation copy too: not an edit
    started = [e for e in started if not _as_written(out, e, txts, pages)]
    if started:
        raise CampaignError(f"{out}: the campaign has started ({len(started)} document(s) edited, e.g. "
                            f"{', '.join(started[:3])}); refusing to rewrite it")
    documents: dict[str, dict[str, Any]] = {}
    for doc, phase, person in rows:
        entry = documents.setdefault(doc, {"document": doc, "files": [], "phase1": [], "phase2": None})
        if phase == "1":
            entry["phase1"].append(person)
        else:
            entry["phase2"] = person
    for doc, entry in documents.items():
        if doc in txts:
            entry["files"] = [p.name for p in pages[doc]] if pages and doc in pages else [doc]

    # Generated collections are updated document by document (each written beside itself and renamed,
    # .ann before .txt), never removed and written again: a killed run leaves whole documents, and the
    # rerun finishes the job; what the campaign no longer holds is removed at the end.  No document lock:
    # nobody has edited this campaign (checked above), and the build writes it too (no locks/ in its output).
    if (out / PHASE2_DIR).exists():
        shutil.rmtree(out / PHASE2_DIR)  # not started (checked above): configuration files only
    durable.clean_leftovers(out)
    for sub in (PHASE1_DIR, PREANNOTATION_DIR):
        publish.clean_tree(out / sub)
    pre = out / PREANNOTATION_DIR
    copy_conf_files(src, pre)
    copy_conf_files(src, pre, (SETTINGS_FILE,))  # whether relations were pre-annotated (campaign append)
    # every brat document as handed out: its .txt and .ann bytes
    handed: dict[str, tuple[bytes, bytes]] = {}
    for doc in documents:
        if doc not in txts:
            continue
        if pages and doc in pages:
            for page in pages[doc]:
                handed[page.name] = (page.text.encode("utf-8"), dumps(page).encode("utf-8"))
        else:
            ann_source = txts[doc].with_suffix(".ann")
            handed[doc] = (txts[doc].read_bytes(), ann_source.read_bytes() if ann_source.exists() else b"")
    annotators = sorted({p for e in documents.values() for p in e["phase1"]})
    seniors = sorted({p["id"] for p in people.values() if p["role"] == "senior"})
    written: dict[Path, set[str]] = {}
    for person in annotators:
        dest = out / PHASE1_DIR / person
        write_campaign_conf_files(src, dest)
        publish.write_text(dest / GUIDE_FILE, annotator_guide(dest, person, 1))
        written[dest] = set()
        counts["collections:phase1"] += 1
    # The phase-1 copies before the pre-annotation copy, and removed before it: after a kill, a phase-1
    # .ann equals its pre-annotation copy or what this run writes (edited_documents sees no edit)
    for entry in documents.values():
        for person in entry["phase1"]:
            dest = out / PHASE1_DIR / person
            for name in entry["files"]:
                publish.write_document(dest, name, *handed[name], only_if_changed=True)
                written[dest].add(name)
                counts["files_written"] += 2
    for name, (txt, ann) in handed.items():
        publish.write_document(pre, name, txt, ann, only_if_changed=True)
    written[pre] = set(handed)
    for stale in sorted((out / PHASE1_DIR).glob("*/")) if (out / PHASE1_DIR).is_dir() else []:
        if stale.is_dir() and stale not in written:
            shutil.rmtree(stale)
    for directory, kept in written.items():  # documents an earlier run wrote that the campaign no longer has
        for name in sorted(publish.document_names(directory) - kept):
            publish.remove_document(directory, name)
    (out / PHASE1_DIR).mkdir(parents=True, exist_ok=True)
    managers = sorted(p["id"] for p in people.values() if p["role"] == "manager")
    publish.write_text(out / DEPLOY_NOTE, deploy.deployment_note(annotators, seniors, managers))
    manifest = {
        "format": MANIFEST_FORMAT,
        "seed": seed,
        "people": list(people.values()),
        "documents": list(documents.values()),
        "provenance": provenance(src),
    }
    publish.write_text(out / CAMPAIGN_MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    write_gitignore(out)
    return access_roles(manifest)
