"""``campaign import``: finished brat directories come in as the phase-1 work of named annotators.

Input: ``work``, pairs ``(person, directory)`` of brat directories (``NAME.txt``/``NAME.ann``), done in
an earlier round, in another tool, or a gold standard to adjudicate against; optionally a
``reference``, the pre-annotation the work started from (a brat collection; its ``annotation.conf``
is the campaign's configuration when it has one, else the schema's).

* Into a **new** campaign directory (no ``campaign.json``): the documents are the reference's (or,
  without one, those of the work directories); each goes to the two people whose directories hold it
  (a document held by fewer or more than two is left out and reported) and to the least-loaded of the
  ``seniors`` (seeded tie-break); the campaign is written by [`write_phase1`][pipeline.campaign.phase1.write_phase1],
  exactly as ``batches`` writes one, with the reference's annotations (or none) as pre-annotation.
* Into an **existing** campaign: each person's imported documents replace the versions assigned to
  them that they have not started ([`started`][pipeline.campaign.assignments.started]); a started one is
  held back, never overwritten; a document not assigned to them is reported and left out.

Each imported version is checked as ``review`` checks a person's work: its text must be the
campaign's, and it must parse and validate against the person's collection ``annotation.conf``.  A
version that fails is **held back**: not written (the person's collection keeps what was handed out),
and reported with ``file:line``.  Relation notes are read with [`pipeline.brat.modality`][pipeline.brat.modality] (the
PGxCorpus form ``hyp``, ``neg``, also ``hypo``, ``htp``, ``not``) and written back in its canonical
form, one note per relation.  An imported version counts as finished: it gets a ``Done`` marker
unless it holds a ``Discard``.  Each document is written under its lock, ``.ann`` first, ``.txt`` last.

Files that come from outside are hostile until checked.  Before anything is written, the directories
are listed without following a link: a symbolic link to a ``.txt``, ``.ann`` (or, in the reference, a
``.conf``) is refused with its path, as ``batches`` refuses one, and its target is never read; and every
document name must be one ([`check_document_name`][pipeline.names.check_document_name]).  A new
campaign whose import fails is removed: no half-written campaign is left.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace as dc_replace
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline import names as names_mod
from pipeline.brat.conf import write_conf_files
from pipeline.brat.modality import format_note, join_notes
from pipeline.brat.standoff import BratDocument, BratTextError, Note, TextBound, dumps, parse_ann, read_text
from pipeline.brat.validate import validate_document
from pipeline.campaign import assignments as asg
from pipeline.campaign.batches import _by_load, _doc_key
from pipeline.campaign.conf import CAMPAIGN_DONE_TYPE
from pipeline.campaign.documents import _first_difference, discard_reasons, is_finished, load_conf
from pipeline.campaign.layout import (
    CAMPAIGN_MANIFEST,
    IMPORT_PENDING,
    PHASE1_DIR,
    PREANNOTATION_DIR,
    CampaignError,
    access_roles,
    check_ids,
    read_campaign,
)
from pipeline.campaign.locks import document_lock
from pipeline.campaign.phase1 import write_phase1
from pipeline.paths import SymlinkError, list_files
from pipeline.schema import Schema

ANNOTATION_NOTE = "AnnotatorNotes"


def normalize_modality(doc: BratDocument) -> BratDocument:
    """Fold each relation's notes into one, in the canonical modality form.

    Read with the project's grammar ([`join_notes`][pipeline.brat.modality.join_notes]) and written back
    with [`format_note`][pipeline.brat.modality.format_note]; the first note keeps its id, a relation left
    with nothing loses its note.  Other notes are kept.

    Args:
        doc: The document; left unchanged.

    Returns:
        A copy with the relation notes normalized.
    """
    relations = {r.id for r in doc.relations}
    by_target: dict[str, list[Note]] = {}
    for q in doc.notes:
        if q.target in relations and q.type == ANNOTATION_NOTE:
            by_target.setdefault(q.target, []).append(q)
    notes = [q for q in doc.notes if not (q.target in relations and q.type == ANNOTATION_NOTE)]
    for found in by_target.values():
        joined = join_notes(q.text for q in found)
        text = format_note(joined.modality, joined.free)
        if text:
            notes.append(dc_replace(found[0], text=text))
    out = copy.copy(doc)
    out.notes = sorted(notes, key=lambda q: (int(q.id[1:]) if q.id[1:].isdigit() else 0, q.id))
    return out


def with_done(doc: BratDocument) -> BratDocument:
    """Mark a document finished: a ``Done`` entity on its first word, with the next free ``T`` id.

    Args:
        doc: The document; left unchanged.

    Returns:
        ``doc`` itself when it is finished already (``Done`` or ``Discard``) or has no word, else a copy
        with the marker.
    """
    if is_finished(doc):
        return doc
    first = re.search(r"\S+", doc.text)
    if first is None:
        return doc
    used = [int(t.id[1:]) for t in doc.textbounds if t.id[1:].isdigit()]
    out = copy.copy(doc)
    out.textbounds = [*doc.textbounds, TextBound(f"T{max(used, default=0) + 1}", CAMPAIGN_DONE_TYPE,
                                                 ((first.start(), first.end()),), first.group())]
    return out


def check_version(txt: Path, original: str, conf_path: Path) -> tuple[BratDocument | None, list[str]]:
    """Read an imported version and check it as ``review`` checks a person's work.

    Args:
        txt: The imported ``NAME.txt``; ``NAME.ann`` is read beside it.
        original: The campaign's text of the document.
        conf_path: The ``annotation.conf`` of the person's collection, validated against.

    Returns:
        The document and no problem, or ``None`` and the problems (``file:line: message``): unreadable
        files, a missing ``.ann``, a text that differs from the campaign's, parse and validation errors.
    """
    ann = txt.with_suffix(".ann")
    links = [p for p in (txt, ann) if p.is_symlink()]
    if links:  # refused by import_work; never read here either (a target's lines would be shown)
        return None, [f"{p}:0: symbolic link, not followed" for p in links]
    try:
        text = txt.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{txt}:0: cannot read: {exc}"]
    try:
        ann_text = ann.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, [f"{ann}:0: no annotation file beside the text"]
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{ann}:0: cannot read: {exc}"]
    if text != original:
        line = _first_difference(original, text)
        return None, [f"{txt}:{line}: text differs from the campaign's text (first difference on this line)"]
    doc, issues = parse_ann(txt.stem, text, ann_text, str(ann))
    problems = [str(i) for i in issues]
    problems += [str(p) for p in sorted(validate_document(doc, ann_text, load_conf(conf_path), str(ann)))]
    return (None, problems) if problems else (doc, [])


def _write_version(root: Path, collection: Path, doc: BratDocument) -> None:
    with document_lock(root, collection / doc.name):
        (collection / f"{doc.name}.ann").write_text(dumps(doc), encoding="utf-8", newline="\n")
        (collection / f"{doc.name}.txt").write_text(doc.text, encoding="utf-8", newline="\n")


def _documents(directory: Path, what: str, suffixes: tuple[str, ...] = (".txt", ".ann")) -> dict[str, Path]:
    """The ``NAME.txt`` files of an imported directory by name, checked before anything is written.

    Raises:
        CampaignError: If the directory holds a symbolic link (named, its target never read) or a
            ``NAME.txt`` whose name cannot be a document's
            ([`check_document_name`][pipeline.names.check_document_name]).
    """
    listing = list_files(directory, suffixes)
    try:
        # a link would copy its target into the campaign and show it to the annotators, as in batches
        listing.refuse_symlinks("import")
    except SymlinkError as exc:
        raise CampaignError(f"{exc} ({what})") from None
    found: dict[str, Path] = {}
    for path in listing.files:
        if path.suffix != ".txt":
            continue
        # a name with a newline or a control character is shown quoted, never as it is
        where = str(path) if path.name.isprintable() else f"{path.parent}/{path.name!r}"
        try:
            found[names_mod.check_document_name(path.name[: -len(".txt")], where)] = path
        except names_mod.NameError_ as exc:
            raise CampaignError(f"{exc} ({what}; rename the file)") from None
    return found


@dataclass(frozen=True)
class _NewCampaign:
    """A new campaign's assignments, decided (and checked) before anything is written."""

    rows: list[tuple[str, str, str]]
    kept: list[str]
    texts: dict[str, Path]  # name -> the .txt its text comes from
    annotations: dict[str, Path | None]  # name -> the reference's .ann (its pre-annotation), if any


def _plan_new_campaign(work: Sequence[tuple[str, Path]], found: dict[str, dict[str, Path]], reference: Path | None,
                       reference_docs: dict[str, Path], seniors: Sequence[str], seed: int,
                       report: dict[str, Any]) -> _NewCampaign:
    if reference is not None:
        names = sorted(reference_docs, key=_doc_key)
    else:
        names = sorted({n for docs in found.values() for n in docs}, key=_doc_key)
    if not names:
        raise CampaignError(f"{reference or work[0][1]}: no document (NAME.txt) to import")
    if not seniors:
        raise CampaignError("a new campaign needs at least one senior (--senior)")
    people = [p for p, _ in work]
    check_ids([*people, *seniors], "import")
    clash = sorted(set(people) & set(seniors))
    if clash:
        raise CampaignError(f"refused, it would break the rule 'a senior who annotated none of their documents': "
                            f"{', '.join(clash)} both imported and senior")
    rows: list[tuple[str, str, str]] = []
    load: Counter[str] = Counter({s: 0 for s in seniors})
    for name in names:
        holders = [p for p, _ in work if name in found[p]]
        if len(holders) != 2:
            report["left_out"].append({"document": name, "reason": f"held by {len(holders)} imported directories "
                                       f"({', '.join(holders) or 'none'}); a document needs two annotators"})
            continue
        senior = _by_load(list(seniors), load, seed, name)[0]
        load[senior] += 1
        rows += [(name, "1", holders[0]), (name, "1", holders[1]), (name, "2", senior)]
    kept = sorted({r[0] for r in rows}, key=_doc_key)
    texts, annotations = {}, {}
    for name in kept:
        if reference is not None:
            texts[name] = reference_docs[name]
            ann = reference_docs[name].with_name(f"{name}.ann")
            annotations[name] = ann if ann.is_file() else None
        else:
            texts[name] = next(found[p][name] for p, _ in work if name in found[p])
            annotations[name] = None
    # what is copied into the campaign is read now: a file that is not UTF-8 is refused with its line
    conf_files = list_files(reference, (".conf",)).files if reference is not None else []
    for path in [*(texts[n] for n in kept), *(a for a in annotations.values() if a is not None), *conf_files]:
        try:
            read_text(path)
        except BratTextError as exc:
            raise CampaignError(f"{exc} (nothing imported)") from None
    return _NewCampaign(rows, kept, texts, annotations)


def _new_campaign(root: Path, work: Sequence[tuple[str, Path]], schema: Schema, reference: Path | None,
                  plan: _NewCampaign, seed: int, seniors: Sequence[str], counts: Counter[str], when: str) -> None:
    people = [p for p, _ in work]
    with tempfile.TemporaryDirectory(prefix="pgx-import-") as tmp:
        src = Path(tmp)
        if reference is not None and (reference / "annotation.conf").is_file():
            from pipeline.brat.conf import copy_conf_files

            copy_conf_files(reference, src)
        else:
            write_conf_files(src, schema)
        for name in plan.kept:
            (src / f"{name}.txt").write_bytes(plan.texts[name].read_bytes())
            ann = plan.annotations[name]
            (src / f"{name}.ann").write_bytes(ann.read_bytes() if ann is not None else b"")
        txts = {n: src / f"{n}.txt" for n in plan.kept}
        roster = [(p, "annotator", True) for p in people] + [(s, "senior", False) for s in seniors]
        write_phase1(src, txts, plan.rows, roster, root, seed=seed, counts=counts)
    campaign = read_campaign(root)
    # where it came from: the imported directories and the reference (not a build run)
    campaign["provenance"]["imported"] = {p: str(Path(d).resolve()) for p, d in work}
    campaign["provenance"]["reference"] = str(Path(reference).resolve()) if reference is not None else None
    asg.save_campaign(root, campaign)
    asg.start_history(root, campaign, "import", when)


@dataclass(frozen=True)
class Before:
    """What a campaign directory held before a new campaign's import.

    See [`snapshot`][pipeline.campaign.importing.snapshot].

    Attributes:
        existed: The directory existed.
        entries: The paths it held, relative to it.
    """

    existed: bool
    entries: frozenset[str]


def snapshot(root: Path) -> Before | None:
    """Note what a campaign directory holds before an import, to undo a new campaign's that fails.

    Args:
        root: The campaign directory.

    Returns:
        ``None`` when it holds a whole campaign (an import into it writes nothing before every check
        passed, then one document at a time); else whether it existed and its entries.
    """
    root = Path(root)
    if (root / CAMPAIGN_MANIFEST).is_file() and not (root / IMPORT_PENDING).is_file():
        return None
    return Before(root.exists(), frozenset(_entries(root)) if root.is_dir() else frozenset())


def _entries(root: Path) -> list[str]:
    """Every path under ``root``, relative to it, without following links."""
    out = []
    for directory, dirs, files in os.walk(root):
        base = Path(directory).relative_to(root)
        out += [str(base / name) for name in [*dirs, *files]]
    return out


def undo(root: Path, before: Before | None) -> None:
    """Remove what a failed import of a new campaign wrote: no half-written campaign is left.

    The directory goes when it did not exist; else each file and directory it did not hold before (what
    a killed earlier import left stays, for its rerun).  Nothing for an existing campaign (``before`` is ``None``).

    Args:
        root: The campaign directory.
        before: What [`snapshot`][pipeline.campaign.importing.snapshot] returned before the import.
    """
    root = Path(root)
    if before is None or not root.is_dir() or root.is_symlink():
        return
    if not before.existed:
        shutil.rmtree(root, ignore_errors=True)
        return
    for name in sorted(set(_entries(root)) - before.entries):  # a directory before what it holds
        path = root / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists() or path.is_symlink():  # gone with its directory, or still there
            path.unlink(missing_ok=True)


def import_work(
    root: Path, work: Sequence[tuple[str, Path]], schema: Schema, *, reference: Path | None = None,
    seniors: Sequence[str] = (), seed: int = 13, when: str = "", counts: Counter[str] | None = None,
) -> dict[str, Any]:
    """Import finished brat directories as the phase-1 work of named annotators (see the module docstring).

    Every file of the directories is listed, and every name checked, before anything is written; every
    version is checked before the first is written.  A new campaign is written under a marker file
    (``.import.pending``) removed once its state files are whole, so that a rerun of an import killed
    meanwhile is still a new campaign; when it fails (an error is raised) what it wrote is removed
    ([`undo`][pipeline.campaign.importing.undo]).  Each accepted version is written under the document's
    lock, ``.ann`` first, ``.txt`` last.

    Args:
        root: The campaign directory ``CAMPAIGN_DIR``: new (no ``campaign.json``) or existing.
        work: ``(person, directory)`` pairs, each person once.
        schema: The schema, for the configuration when there is no reference ``annotation.conf``.
        reference: The pre-annotation the work started from (a brat collection); ``None`` for none.
        seniors: The seniors of a new campaign (at least one, none of them imported).
        seed: The seed of the seniors' seeded tie-break, for a new campaign.
        when: The time recorded in a new campaign's history, ISO 8601; now (UTC) when empty.
        counts: Counters updated in place (``imported``, ``imported_discarded``, ``held_back`` and those
            of [`write_phase1`][pipeline.campaign.phase1.write_phase1]); a new one when ``None``.

    Returns:
        ``{"imported": [{person, document}], "held_back": [{person, document, problems}],
        "left_out": [{document, reason}], "new_campaign": bool, "roles": {person: roles}}``.

    Raises:
        CampaignError: Before anything is written, for a missing directory, a person named twice, a bad
            id, a symbolic link in an imported or reference directory (named; never followed), a
            ``NAME.txt`` whose name cannot be a document's, fewer than two annotators or no senior for a
            new campaign, a senior who is also imported, no document to import, or a campaign text that
            cannot be read.
    """
    counts = counts if counts is not None else Counter()
    root = Path(root)
    when = when or asg.now()
    for person, d in work:
        if not Path(d).is_dir():
            raise CampaignError(f"{d}: not a directory (imported work of {person})")
    if reference is not None and not Path(reference).is_dir():
        raise CampaignError(f"{reference}: not a directory (reference)")
    if len({p for p, _ in work}) != len(work):
        raise CampaignError("each person's work is imported once (a person named twice)")
    check_ids([p for p, _ in work], "import")
    # every file is listed and every name checked before anything is written
    found = {person: _documents(Path(d), f"imported work of {person}") for person, d in work}
    reference_docs = _documents(Path(reference), "reference", (".txt", ".ann", ".conf")) \
        if reference is not None else {}
    report: dict[str, Any] = {"imported": [], "held_back": [], "left_out": [], "new_campaign": False}
    # a new campaign is written under a marker removed once its state files are whole: an import killed
    # while writing them is still a new campaign for its rerun (campaign.json alone does not make one)
    pending = root / IMPORT_PENDING
    new = not (root / CAMPAIGN_MANIFEST).is_file() or pending.is_file()
    before = snapshot(root)
    try:
        if new:
            if len(work) < 2:
                raise CampaignError("a new campaign needs the work of two annotators or more")
            plan = _plan_new_campaign(work, found, reference, reference_docs, seniors, seed, report)
            root.mkdir(parents=True, exist_ok=True)
            durable.replace_file(pending, b"a new campaign is being imported; rerun the same campaign import\n")
            _new_campaign(root, work, schema, reference, plan, seed, seniors, counts, when)
            pending.unlink()
            report["new_campaign"] = True
        _import_versions(root, work, found, new, counts, report)
    except Exception:
        # a refused or failed new campaign is removed: whole or absent (an interrupted one, like a killed
        # one, keeps its marker for the rerun)
        undo(root, before if new else None)
        raise
    report["roles"] = {p: sorted(r) for p, r in access_roles(read_campaign(root)).items()}
    return report


def _import_versions(root: Path, work: Sequence[tuple[str, Path]], found: dict[str, dict[str, Path]], new: bool,
                     counts: Counter[str], report: dict[str, Any]) -> None:
    """Check every imported version, then write the accepted ones (nothing written when a check raises)."""
    campaign = read_campaign(root)
    pre = root / PREANNOTATION_DIR
    accepted: list[tuple[Path, BratDocument, str, str]] = []
    for person, _directory in work:
        collection = root / PHASE1_DIR / person
        mine = [e for e in campaign["documents"] if person in e["phase1"]]
        assigned = {name for e in mine for name in e["files"]}
        if not new:
            report["left_out"] += [{"document": name, "reason": f"not assigned to {person}"}
                                   for name in sorted(found[person], key=_doc_key) if name not in assigned]
        for entry in mine:
            for name in entry["files"]:
                source = found[person].get(name)
                if source is None:
                    continue
                if not new and asg.file_started(root, "1", person, name):
                    report["held_back"].append({"person": person, "document": name, "problems": [
                        f"{collection / name}.ann:0: {person} has started this document in the campaign; "
                        "not overwritten"]})
                    continue
                try:
                    original = (pre / f"{name}.txt").read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    raise CampaignError(f"{pre / name}.txt: the campaign's text cannot be read: {exc}") from None
                doc, problems = check_version(source, original, collection / "annotation.conf")
                if doc is None:
                    report["held_back"].append({"person": person, "document": name, "problems": problems})
                    counts["held_back"] += 1
                    continue
                accepted.append((collection, with_done(normalize_modality(doc)), person, name))
    for collection, doc, person, name in accepted:
        _write_version(root, collection, doc)
        counts["imported"] += 1
        if discard_reasons(doc):
            counts["imported_discarded"] += 1
        report["imported"].append({"person": person, "document": name})
