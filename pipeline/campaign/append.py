"""Rebuilds: append newly sampled sentences to a running campaign without moving anything.

Input: a campaign directory (``manifest.csv`` and ``phase1/<person>/`` collections, see
[`pipeline.campaign.layout`][pipeline.campaign.layout]), the brat collection of a rebuild (``OUT/brat``, a superset or
an overlapping set of the documents already assigned), the roster and the batch seed.

What [`append_to_campaign`][pipeline.campaign.append.append_to_campaign] does:

* reads the existing assignments (of ``campaign.json`` when the campaign has one, whose team then counts
  rather than the roster's, else of ``manifest.csv``) and keeps every row exactly (people no longer in the
  roster keep their documents); documents already assigned are never reassigned, copied or rewritten, so
  an annotator's started ``.ann`` is never touched, whatever the rebuild's pre-annotation says;
* assigns only the documents of the collection missing from the manifest, with the same balanced, seeded
  rule as ``pgx-corpus batches`` ([`assign`][pipeline.campaign.batches.assign]: two phase-1 annotators, one
  senior who is neither; loads count the existing rows);
* writes the new documents into the phase-1 collections of their annotators only (``NAME.txt`` and the
  pre-annotated ``NAME.ann``; a new person's collection gets the configuration files of an existing
  phase-1 collection, else the rebuild's); phase 2 is built later by ``campaign review``;
* rewrites ``manifest.csv`` (old rows first, as they were, then the new ones) atomically;
* in a campaign written by part 1's ``batches`` (with ``campaign.json`` and ``preannotation/``), also
  appends the new documents to ``campaign.json`` (``{"document", "files", "phase1", "phase2"}`` entries
  after the existing ones, which stay as they are) and copies them to ``preannotation/`` (the reference
  of ``campaign status`` and of the text check); such a campaign gives each person a collection with
  a guide and a user, so a new document may only go to people who already have a phase-1 collection
  (RosterError otherwise, before anything is written).

Each roster row it does not act on is reported ``(person, what was done with it)``: a manager (takes no
documents; one who is not a person of the campaign yet gets no user: ``campaign add-person ID --role
manager`` adds them), a person who left the campaign (no new documents), a person who is not a person
of the campaign and took no document (ignored: ``campaign add-person`` adds them).

A file that already exists where a new document would go is never overwritten: the document is left out
of this append (reported, counted) and stays unassigned, so the next append retries it.

Count keys: ``documents``, ``documents_assigned_before``, ``documents_new``, ``documents_appended``,
``documents_blocked``, ``files_written``, ``assignments:phase1``, ``assignments:phase2``.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections import Counter
from pathlib import Path
from typing import Any

from pipeline import durable, names
from pipeline.brat.conf import copy_conf_files
from pipeline.campaign import assignments as asg
from pipeline.campaign import publish
from pipeline.campaign.batches import (
    MANIFEST_FIELDS,
    ManifestError,
    Person,
    RosterError,
    assign,
    read_manifest,
    read_roster,
)
from pipeline.campaign.finalize import doc_key
from pipeline.campaign.layout import (
    APPEND_PENDING,
    ASSIGNMENTS_CSV,
    ASSIGNMENTS_HISTORY,
    CAMPAIGN_MANIFEST,
    PHASE1_DIR,
    PREANNOTATION_DIR,
)
from pipeline.corpus.brat_export import read_settings
from pipeline.paths import list_files, resolve_collection

log = logging.getLogger(__name__)


class SettingsMismatchError(ManifestError):
    """The rebuild's pre-annotation settings differ from the campaign's (the message says how)."""


def _check_settings(collection: Path, reference: Path) -> None:
    """Refuse a collection pre-annotated with other settings than the campaign (relations on or off).

    The campaign's ``preannotation/`` keeps the build's ``preannotation.json``; a campaign or a
    collection without one was built before relations were pre-annotated (relations off).
    """
    if not reference.is_dir():
        return
    try:
        mine, theirs = read_settings(collection), read_settings(reference)
    except ValueError as exc:
        raise ManifestError(str(exc)) from exc
    if bool(mine.get("relations")) != bool(theirs.get("relations")):
        def said(on: bool) -> str:
            return ("with relations pre-annotated (--relations)" if on
                    else "without relation pre-annotation (--no-relations, the default)")

        raise SettingsMismatchError(
            f"{collection} was built {said(bool(mine.get('relations')))}, but the campaign {reference.parent} "
            f"was built {said(bool(theirs.get('relations')))}: appending would mix the two in one campaign; "
            f"rebuild with {'--no-relations' if mine.get('relations') else '--relations'}")


def _row_key(row: tuple[str, str, str]) -> tuple[Any, ...]:
    return doc_key(row[0]), row[1], row[2]


def _drop_blocked(new_rows: list[tuple[str, str, str]], campaign: Path, counts: Counter[str], *,
                  check: bool) -> list[tuple[str, str, str]]:
    """The new rows less those of a document that already has a file where it would be written.

    Such a document is left unassigned (logged, counted as ``documents_blocked``): its file is not this
    command's to replace.  Without ``check`` (the rows of an interrupted append, whose files are this
    command's) every row is kept.
    """
    phase1, pre = campaign / PHASE1_DIR, campaign / PREANNOTATION_DIR
    blocked = set()
    for doc, phase, person in new_rows if check else []:
        targets = [phase1 / person] if phase == "1" else []
        targets += [pre] if pre.is_dir() else []
        if any((d / f"{doc}{suffix}").exists() for d in targets for suffix in (".txt", ".ann")):
            blocked.add(doc)
    for doc in sorted(blocked, key=doc_key):
        log.warning("%s: a file for this new document already exists in %s; left unassigned", doc, campaign)
    counts["documents_blocked"] += len(blocked)
    return [r for r in new_rows if r[0] not in blocked]


def append_to_campaign(
    collection: str | Path, campaign_dir: str | Path, roster: str | Path, *, seed: int = 13,
    counts: Counter[str] | None = None, skipped: list[tuple[str, str]] | None = None,
) -> list[tuple[str, str, str]]:
    """Assign and write the new documents of a rebuild's collection into a running campaign.

    See the module docstring.  Every check comes before anything is written; the rows being written are
    kept in a journal ([`APPEND_PENDING`][pipeline.campaign.layout.APPEND_PENDING]) so that a killed append is completed
    by the next one.  Each new document is written atomically, ``.ann`` first, into its annotators'
    collections under the document's lock.

    Args:
        collection: The rebuild's brat collection (``OUT/brat``; a link is resolved once).
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        roster: The roster file (its people take the new documents, unless ``campaign.json`` says
            otherwise).
        seed: The batch seed of the assignment.
        counts: Counters updated in place (see the module docstring for the keys); a new one when ``None``.
        skipped: Filled in place with ``(person, what was done with the row)`` for each roster row this
            append does not act on (see the module docstring), in roster order; not filled when refused.

    Returns:
        The new assignment rows ``(document, phase, person)``.

    Raises:
        RosterError: If the roster is unusable, or a new document would go to a person without a
            phase-1 collection in a campaign written by ``batches``.
        ManifestError: If the campaign has no ``manifest.csv``, its ``campaign.json`` or an interrupted
            append's journal cannot be read, that journal names documents the collection lacks, or
            ([`SettingsMismatchError`][pipeline.campaign.append.SettingsMismatchError]) the collection
            was built with relations pre-annotated and the campaign without, or the other way round.
        FileNotFoundError: If ``collection`` is not a directory.
        SymlinkError: If the collection holds symbolic links.
        NameError_: If a document name cannot name a file.
    """
    counts = counts if counts is not None else Counter()
    campaign, src = Path(campaign_dir), Path(collection)
    people = read_roster(Path(roster))
    roster_people = list(people)
    manifest = campaign / ASSIGNMENTS_CSV
    if not manifest.is_file():
        raise ManifestError(f"{manifest}: no campaign manifest (start the campaign with `pgx-corpus batches`)")
    campaign_json = campaign / CAMPAIGN_MANIFEST
    record = _read_campaign_json(campaign_json) if campaign_json.is_file() else None
    # campaign.json is the one source of truth when there is one (manifest.csv is derived from it), and
    # its team (people who left, people who joined) counts, not the roster's
    previous = asg.rows(record) if record is not None else read_manifest(manifest)
    if record is not None:
        people = _campaign_team(record, people, Path(roster))
    if not src.is_dir():
        raise FileNotFoundError(f"{src}: not a directory")
    src = resolve_collection(src)  # OUT/brat is a link a new build may swap: read one collection
    _check_settings(src, campaign / PREANNOTATION_DIR)
    listing = list_files(src, (".txt", ".ann", ".conf"))
    listing.refuse_symlinks("campaign append")  # a link would copy its target into annotators' collections
    txts = {p.stem: p for p in listing.files if p.suffix == ".txt"}
    for name, path in txts.items():
        names.check_document_name(name, str(path))
    assigned = {d for d, _, _ in previous}
    counts["documents"] += len(txts)
    counts["documents_assigned_before"] += len(assigned)
    new_docs = sorted(set(txts) - assigned, key=doc_key)
    counts["documents_new"] += len(new_docs)
    rows = assign(new_docs, people, seed, previous)
    old = set(previous)
    new_rows: list[tuple[str, str, str]] = [r for r in rows if r not in old]

    phase1 = campaign / PHASE1_DIR
    pre = campaign / PREANNOTATION_DIR
    # a killed append's rows (its journal) are written to the end now: their files are this command's,
    # never "blocked"
    journal = campaign / APPEND_PENDING
    pending = [r for r in _read_journal(journal) if r[0] not in assigned]
    missing = sorted({d for d, _, _ in pending if d not in txts}, key=doc_key)
    if missing:
        raise ManifestError(f"{journal}: an interrupted append was writing {', '.join(missing[:5])}, which "
                            f"{src} does not hold; rerun it with the collection it was given")
    if pending:
        log.warning("%s: completing an interrupted append (%d document(s))", campaign,
                    len({d for d, _, _ in pending}))
        new_rows = pending
    new_rows = _drop_blocked(new_rows, campaign, counts, check=not pending)

    if record is not None:
        # a campaign written by `batches` has a user and a guide per person: append cannot add people
        newcomers = sorted({p for _, phase, p in new_rows if phase == "1" and not (phase1 / p).is_dir()})
        if newcomers:
            raise RosterError(f"{roster}: {', '.join(newcomers)} would get documents but have no collection in "
                              f"{phase1} (append cannot add people to a campaign; rerun batches for that)")

    if skipped is not None:
        skipped.extend(_not_acted_on(roster_people, record, new_rows))
    # checks done: the temporaries of a killed append go
    durable.clean_leftovers(campaign)
    publish.clean_tree(phase1)
    durable.clean_leftovers(pre)
    if new_rows and not pending:
        durable.replace_file(journal, json.dumps([list(r) for r in new_rows]).encode("utf-8"))
    conf_source = next((p for p in sorted(phase1.glob("*")) if (p / "annotation.conf").is_file()), src)
    for doc, phase, person in new_rows:
        counts[f"assignments:phase{phase}"] += 1
        if phase != "1":
            continue
        dest = phase1 / person
        if not (dest / "annotation.conf").exists():
            copy_conf_files(conf_source, dest)
        if (dest / f"{doc}.txt").exists():
            continue  # written by the interrupted run (and maybe started since): never rewritten
        publish.write_document(dest, doc, *_document_bytes(txts[doc]), campaign_dir=campaign)
        counts["files_written"] += 2
    docs_appended = sorted({d for d, _, _ in new_rows}, key=doc_key)
    counts["documents_appended"] += len(docs_appended)
    if pre.is_dir():
        for doc in docs_appended:
            if not (pre / f"{doc}.txt").exists():
                publish.write_document(pre, doc, *_document_bytes(txts[doc]))
    if record is not None:
        listed = {e.get("document") for e in record["documents"] if isinstance(e, dict)}
        for doc in docs_appended:
            if doc in listed:
                continue  # appended by the interrupted run
            record["documents"].append({
                "document": doc, "files": [doc],
                "phase1": sorted(p for d, phase, p in new_rows if d == doc and phase == "1"),
                "phase2": next((p for d, phase, p in new_rows if d == doc and phase == "2"), None),
            })
        _write_atomically(campaign_json, json.dumps(record, ensure_ascii=False, indent=1) + "\n")
        if (campaign / ASSIGNMENTS_HISTORY).exists():
            when = asg.now()
            asg.record(campaign, [asg.change("append", d, ph, p, "assigned", when) for d, ph, p in new_rows])
        asg.write_manifest_csv(campaign, record)
        return new_rows

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(MANIFEST_FIELDS)
    writer.writerows(previous)
    appended = sorted(new_rows, key=_row_key)
    writer.writerows(appended)
    _write_atomically(manifest, buf.getvalue())
    journal.unlink(missing_ok=True)
    return new_rows


def _not_acted_on(roster: list[Person], record: dict[str, Any] | None,
                  new_rows: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """The roster rows an append does not act on, each with what it did with it (roster order)."""
    known = {str(p["id"]): p for p in record.get("people", [])} if record is not None else None
    takers = {p for _, _, p in new_rows}
    out = []
    for r in roster:
        entry = known.get(r.id) if known is not None else None
        if r.role == "manager":
            if known is not None and entry is None:
                out.append((r.id, "manager in the roster, not a person of the campaign: ignored, no user created "
                                  f"(`pgx-corpus campaign add-person CAMPAIGN_DIR {r.id} --role manager` adds them)"))
            else:
                out.append((r.id, "manager: takes no documents (campaign serve shows them every collection "
                                  "read-only)"))
        elif entry is not None and entry.get("left"):
            out.append((r.id, "left the campaign: ignored, no new documents"))
        elif known is not None and entry is None and r.id not in takers:
            out.append((r.id, f"not a person of the campaign: ignored, no documents and no user "
                              f"(`pgx-corpus campaign add-person CAMPAIGN_DIR {r.id} --role {r.role}` adds them)"))
    return out


def _campaign_team(record: dict[str, Any], roster: list[Person], path: Path) -> list[Person]:
    """The people who take new documents.

    The roster's, without those who left the campaign, with those who joined it since
    (``campaign add-person``/``replace``); a warning names each difference.
    """
    left = {p["id"] for p in record.get("people", []) if p.get("left")}
    joined = [p for p in asg.active_people(record) if p["id"] not in {r.id for r in roster}]
    for pid in sorted(left & {r.id for r in roster}):
        log.warning("%s: %s left the campaign; they get no new documents", path, pid)
    for p in joined:
        log.warning("%s: %s is in the campaign but not in the roster; they take new documents too", path, p["id"])
    return [r for r in roster if r.id not in left] + [
        Person(p["id"], p["role"], bool(p.get("phase1", p["role"] == "annotator"))) for p in joined]
def _document_bytes(txt: Path) -> tuple[bytes, bytes]:
    """``.txt`` and ``.ann`` bytes of a source document.

    A document without ``.ann`` gets an empty one, as batches writes it.
    """
    ann = txt.with_suffix(".ann")
    return txt.read_bytes(), ann.read_bytes() if ann.exists() else b""


def _read_journal(path: Path) -> list[tuple[str, str, str]]:
    """The rows an interrupted append was writing (none when it finished)."""
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path}: cannot read the journal of an interrupted append: {exc}") from exc
    return [(str(d), str(ph), str(p)) for d, ph, p in rows]


def _read_campaign_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{path}: cannot read the campaign manifest: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
        raise ManifestError(f"{path}: not a campaign manifest (no documents list)")
    return data


def _write_atomically(path: Path, text: str) -> None:
    durable.replace_file(path, text.encode("utf-8"))
