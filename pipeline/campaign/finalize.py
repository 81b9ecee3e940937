"""``campaign finalize``: the seniors' phase-2 collections -> the final corpus (one brat collection).

Input: ``CAMPAIGN_DIR/phase2/<senior>/NAME.txt|NAME.ann`` (see [`pipeline.campaign.layout`][pipeline.campaign.layout]),
each collection with its campaign ``annotation.conf`` (the one beside the documents, else the nearest one up,
else the one generated from the schema).  Offsets are half-open character offsets into each ``.txt``.

A document goes to the final corpus when its senior **signed it off** (a ``Done`` marker entity, as
annotators mark their documents in phase 1) and it is *finished*:

* it parses and validates against its collection's ``annotation.conf``
  ([`pipeline.brat.validate`][pipeline.brat.validate]);
* nothing is left to adjudicate: no annotation carries the [`DISAGREEMENT`][pipeline.campaign.layout.DISAGREEMENT]
  attribute (the senior accepts a marked entity by removing the attribute, rejects it by deleting it) and
  no relation has a generated ``Disputed_<type>`` type (accepted by retyping to ``<type>``, rejected by
  deleting it); what is left is named in the finding;
* its text equals the phase-1 text of the same document (when a phase-1 copy exists), and it appears in
  one senior's collection only;
* it can be read: a ``.txt`` beside the ``.ann``, both UTF-8.

With ``accept_agreed`` (``--accept-agreed``), a document the two annotators agreed on (its merged version,
``review/merged/<senior>/NAME.ann``, had nothing to adjudicate) goes through without a sign-off too.

A document a senior discarded (a [`DISCARD_TYPE`][pipeline.campaign.layout.DISCARD_TYPE] entity) is a finished
decision: listed in ``discarded`` with its reasons, kept out of the corpus, not work left.  A document not
signed off yet is *pending* (listed with what is left in it).  Every other document is *held back*: listed
with ``file:line: reason`` in the report (``held_back.tsv``, ``finalize.json``) and returned to the caller,
never dropped silently.  Documents the campaign assigns to phase 2 that no senior collection holds are
listed as ``discarded_in_phase1`` (an annotator discarded them: finished) or ``not_in_phase2`` (not
reviewed yet: work left).  [`work_left`][pipeline.campaign.finalize.FinalizeResult.work_left] says whether anything is
held back or pending.

What a finished document becomes (campaign-only marks removed, relation types kept as annotated):

* attributes of type ``Disagreement`` (none are left by definition) and the pre-annotation's
  ``Composite`` presentation attribute are removed, and so are the campaign's ``Done`` marker entities;
* each relation gets one note in the PGxCorpus form ([`pipeline.brat.modality`][pipeline.brat.modality]: ``hyp``,
  ``neg``, then the free text): legacy ``Negated``/``Hypothetical`` relation attributes of older campaigns become note
  words, several notes are folded into one, and the merge's ``[alice: neg; bob: none]`` dispute text is
  removed ([`strip_dispute`][pipeline.campaign.merge.strip_dispute]);
* relation types are **kept as annotated** (``metabolizes`` and ``transports`` stay): ``config/export.yaml``
  ``relation_map`` is a training view that ``pgx-corpus export`` applies and declares, never the final corpus
  (a deliberate retyping goes through ``decisions apply``, which records it); a relation identical to an
  earlier one of the same document (type, arguments, attributes, notes) is merged into it (counted);
* the result must validate against the final ``annotation.conf`` (generated from the schema, without the
  campaign types); otherwise the document is held back too.

Output ``FINAL``: the finished documents (``.ann`` in the canonical order of
[`dumps`][pipeline.brat.standoff.dumps]), ``annotation.conf``, ``visual.conf``, ``tools.conf``,
``kb_shortcuts.conf``, ``held_back.tsv`` and ``finalize.json``.  ``FINAL`` is written beside itself and
swapped in whole, so a failed run leaves the previous result; the same campaign gives byte-identical
output (report paths are relative to ``CAMPAIGN_DIR``; nothing records a time).

Each phase-2 document is read under its lock ([`document_lock`][pipeline.campaign.locks.document_lock]).
Once ``FINAL`` is in place, the campaign's finalize record ``CAMPAIGN_DIR/finalized.json`` is replaced
atomically: ``FINAL``'s path and, for each document in it, the sha256 of the phase-2 ``.ann`` it was made
from ([`pipeline.campaign.finalized`][pipeline.campaign.finalized]); ``campaign serve`` makes those
documents read-only, ``campaign status`` lists those changed since.

Count keys: ``documents_phase2``, ``documents_final``, ``signed_off``, ``accepted_agreed``, ``pending``,
``discarded``, ``held_back``, ``held_back:<reason kind>``, ``not_in_phase2``, ``discarded_in_phase1``,
``relations_mapped``, ``relations_dropped``, ``relations_merged``, ``attributes_removed:<type>``,
``modality_attributes_to_notes``, ``relation_notes_folded``, ``dispute_texts_removed``.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import shutil
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat import validate as validate_mod
from pipeline.brat.conf import BratSettings, annotation_conf, load_settings, write_conf_files
from pipeline.brat.export import ExportConfig, load_export_config, map_relations
from pipeline.brat.modality import MODALITIES, format_note
from pipeline.brat.standoff import BratDocument, BratTextError, Note, dumps, parse_ann, read_document, read_text
from pipeline.campaign.conf import CAMPAIGN_DONE_TYPE
from pipeline.campaign.documents import discard_reasons, is_done, relation_note
from pipeline.campaign.finalized import Finalized, Record, sha256_text, write_record
from pipeline.campaign.layout import (
    ASSIGNMENTS_CSV,
    CAMPAIGN_MANIFEST,
    DISAGREEMENT,
    DISCARD_TYPE,
    PHASE1_DIR,
    PHASE2_DIR,
    REVIEW_DIR,
    REVIEW_MERGED_DIR,
)
from pipeline.campaign.locks import document_lock
from pipeline.campaign.merge import NOTE_TYPE, count_marks, marks_left, strip_dispute
from pipeline.documents import pmid_sort_key
from pipeline.errors import InputError
from pipeline.paths import list_files
from pipeline.schema import Schema

log = logging.getLogger(__name__)

HELD_BACK_TSV = "held_back.tsv"
REPORT_JSON = "finalize.json"
REPORT_FILES = (HELD_BACK_TSV, REPORT_JSON)
DONE_TYPE = CAMPAIGN_DONE_TYPE
"""The campaign's "finished" marker entity type.

It means nothing in the corpus, so a senior's leftover marker is dropped rather than holding the
document back.
"""


class FinalizeError(InputError):
    """The campaign directory or the output cannot be used (nothing is written)."""


@dataclass(frozen=True, order=True)
class Finding:
    """Why a document is held back: ``file:line: message``.

    Attributes:
        file: The file, relative to the campaign directory (``phase2/<senior>/NAME.ann``).
        line: The 1-based line in it, 0 for the whole file.
        kind: The reason kind, counted as ``held_back:<kind>`` (``duplicate``, ``symlink``, ``unreadable``,
            ``missing_ann``, ``unparseable``, ``invalid``, ``disagreement``, ``text_changed``,
            ``invalid_after_homogenization``).
        message: What is wrong, for a person.
    """

    file: str
    line: int
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class FinalizeResult:
    """What [`finalize`][pipeline.campaign.finalize.finalize] did with each phase-2 document.

    Attributes:
        documents: The documents in the final corpus, in document order.
        held_back: Document -> why it is held back.
        senior_of: Document -> the senior whose collection holds it.
        not_in_phase2: Documents the campaign assigns to phase 2 that no senior collection holds and no
            phase-1 annotator discarded (not reviewed yet: work left).
        counts: The counts (see the module docstring for the keys).
        pending: Document -> what is left in it, for a document not signed off yet.
        discarded: Document -> the reasons, for a document a senior discarded.
        discarded_in_phase1: Documents missing from phase 2 because a phase-1 annotator discarded them.
        accepted_agreed: Documents in the final corpus without a sign-off, because the annotators agreed
            (``accept_agreed``).
        taken: Document in the final corpus -> the sha256 of the phase-2 ``.ann`` it was made from (read
            under the document's lock), for the finalize record.
    """
    documents: list[str] = field(default_factory=list)
    held_back: dict[str, list[Finding]] = field(default_factory=dict)
    senior_of: dict[str, str] = field(default_factory=dict)
    not_in_phase2: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    pending: dict[str, str] = field(default_factory=dict)  # not signed off yet: what is left
    discarded: dict[str, list[str]] = field(default_factory=dict)  # by a senior: reasons
    discarded_in_phase1: list[str] = field(default_factory=list)
    accepted_agreed: list[str] = field(default_factory=list)
    taken: dict[str, str] = field(default_factory=dict)

    @property
    def work_left(self) -> bool:
        """Documents held back, pending a senior's sign-off, or not reviewed yet (discards are decisions)."""
        return bool(self.held_back or self.pending or self.not_in_phase2)

    def report(self) -> dict[str, Any]:
        """Give the report written to ``finalize.json``.

        Returns:
            ``documents`` (how many are final), ``held_back``, ``pending`` and ``discarded`` (each a list of
            objects with ``document`` and ``senior``, in document order), ``accepted_agreed``,
            ``discarded_in_phase1``, ``not_in_phase2`` and ``counts`` (sorted).
        """
        return {
            "documents": len(self.documents),
            "held_back": [
                {"document": name, "senior": self.senior_of.get(name, ""), "problems": [str(f) for f in found]}
                for name, found in sorted(self.held_back.items(), key=lambda kv: doc_key(kv[0]))
            ],
            "pending": [{"document": name, "senior": self.senior_of.get(name, ""), "left": left}
                        for name, left in sorted(self.pending.items(), key=lambda kv: doc_key(kv[0]))],
            "discarded": [{"document": name, "senior": self.senior_of.get(name, ""), "reasons": reasons}
                          for name, reasons in sorted(self.discarded.items(), key=lambda kv: doc_key(kv[0]))],
            "accepted_agreed": self.accepted_agreed,
            "discarded_in_phase1": self.discarded_in_phase1,
            "not_in_phase2": self.not_in_phase2,
            "counts": dict(sorted(self.counts.items())),
        }


def doc_key(name: str) -> tuple[tuple[int, int | str], int, str]:
    """Sort key of document names ``{PMID}_{k}``: PMID numerically, then sentence index, then name.

    Args:
        name: A brat document name; a name without a numeric ``_k`` suffix sorts before its sentences.

    Returns:
        The key.
    """
    pmid, _, rest = name.partition("_")
    return pmid_sort_key(pmid), int(rest) if rest.isdigit() else -1, name


# --- document edits shared with decisions ---------------------------------------------------------

def remove_annotations(doc: BratDocument, ids: Iterable[str]) -> tuple[BratDocument, set[str]]:
    """Copy a document without some annotations and everything that depends on them.

    Relations and events with a removed argument go too, then attributes, notes and normalizations of any
    removed annotation; an equivalence keeps its other members (dropped when fewer than two remain).

    Args:
        doc: The document; left unchanged.
        ids: The ids of the annotations removed (any kind: ``T``, ``R``, ``E``, ``A``, ``#``, ``N``).

    Returns:
        The copy, and the set of every id removed (those given and those that depended on them).
    """
    gone = set(ids)
    relations = [r for r in doc.relations if r.id not in gone and not any(ref in gone for _, ref in r.args)]
    gone |= {r.id for r in doc.relations} - {r.id for r in relations}
    events = [e for e in doc.events
              if e.id not in gone and e.trigger not in gone and not any(ref in gone for _, ref in e.args)]
    gone |= {e.id for e in doc.events} - {e.id for e in events}
    attributes = [a for a in doc.attributes if a.id not in gone and a.target not in gone]
    notes = [n for n in doc.notes if n.id not in gone and n.target not in gone]
    norms = [n for n in doc.normalizations if n.id not in gone and n.target not in gone]
    equivs = []
    for eq in doc.equivs:
        members = tuple(i for i in eq.ids if i not in gone)
        if len(members) >= 2:
            equivs.append(replace(eq, ids=members))
    gone |= {a.id for a in doc.attributes} - {a.id for a in attributes}
    gone |= {n.id for n in doc.notes} - {n.id for n in notes}
    gone |= {n.id for n in doc.normalizations} - {n.id for n in norms}
    kept = replace(
        doc,
        textbounds=[t for t in doc.textbounds if t.id not in gone],
        relations=relations, events=events, attributes=attributes, notes=notes, normalizations=norms,
        equivs=equivs,
    )
    return kept, gone


def merge_duplicate_relations(doc: BratDocument, counts: Counter[str] | None = None) -> BratDocument:
    """Remove relations identical to an earlier one of the same document.

    Identical: same type, arguments, attributes and notes.  The later copy goes, with what is attached to
    it.

    Args:
        doc: The document; left unchanged.
        counts: Counters updated in place (``relations_merged``); a new one when ``None``.

    Returns:
        ``doc`` itself when it has no duplicate, else a copy without them.
    """
    counts = counts if counts is not None else Counter()
    seen: set[tuple[Any, ...]] = set()
    duplicates = []
    for r in doc.relations:
        key = (
            r.type, tuple(sorted(r.args)),
            tuple(sorted((a.type, a.value or "") for a in doc.attributes if a.target == r.id)),
            tuple(sorted(n.text for n in doc.notes if n.target == r.id)),
        )
        if key in seen:
            duplicates.append(r.id)
        seen.add(key)
    if not duplicates:
        return doc
    counts["relations_merged"] += len(duplicates)
    return remove_annotations(doc, duplicates)[0]


def strip_attributes(doc: BratDocument, types: Sequence[str], counts: Counter[str] | None = None) -> BratDocument:
    """Remove the attributes of the given types.

    Args:
        doc: The document; left unchanged.
        types: The attribute types removed.
        counts: Counters updated in place (``attributes_removed:<type>``); a new one when ``None``.

    Returns:
        A copy without them.
    """
    counts = counts if counts is not None else Counter()
    kept = []
    for a in doc.attributes:
        if a.type in types:
            counts[f"attributes_removed:{a.type}"] += 1
        else:
            kept.append(a)
    return replace(doc, attributes=kept)


def strip_markers(doc: BratDocument, counts: Counter[str] | None = None) -> BratDocument:
    """Remove the campaign's ``Done`` marker entities, with anything attached to them.

    Args:
        doc: The document; left unchanged.
        counts: Counters updated in place (``done_markers_removed``); a new one when ``None``.

    Returns:
        ``doc`` itself when it has no marker, else a copy without them.
    """
    counts = counts if counts is not None else Counter()
    done = [t.id for t in doc.textbounds if t.type == DONE_TYPE]
    if not done:
        return doc
    counts["done_markers_removed"] += len(done)
    return remove_annotations(doc, done)[0]


def relation_notes_in_corpus_form(doc: BratDocument, counts: Counter[str] | None = None) -> BratDocument:
    """Give every relation one note in the PGxCorpus form (``hyp``, ``neg``, then free text).

    Legacy modality attributes on relations become note words, several notes are folded into one, the
    merge's dispute text is removed (each written back in canonical form,
    [`format_note`][pipeline.brat.modality.format_note]).  A relation's single note that needs none of
    this is kept as written (``htp`` stays ``htp``).  Entity notes are left as they are.

    Args:
        doc: The document; left unchanged.
        counts: Counters updated in place (``modality_attributes_to_notes``, ``relation_notes_folded``,
            ``dispute_texts_removed``); a new one when ``None``.

    Returns:
        ``doc`` itself when it has no relation note or legacy attribute, else a copy.
    """
    counts = counts if counts is not None else Counter()
    rel_ids = {r.id for r in doc.relations}
    if not rel_ids:
        return doc
    legacy = [a for a in doc.attributes if a.target in rel_ids and a.type in MODALITIES]
    rel_notes = [q for q in doc.notes if q.target in rel_ids and q.type == NOTE_TYPE]
    if not legacy and not rel_notes:
        return doc
    counts["modality_attributes_to_notes"] += len(legacy)
    notes = [q for q in doc.notes if q not in rel_notes]
    n = max((int(q.id[1:]) for q in doc.notes if q.id[1:].isdigit()), default=0)
    for r in doc.relations:
        mine = [q for q in rel_notes if q.target == r.id]
        counts["relation_notes_folded"] += max(len(mine) - 1, 0)
        note = relation_note(doc, r.id)
        free, removed = strip_dispute(note.free)
        counts["dispute_texts_removed"] += removed
        if len(mine) == 1 and not removed and not any(a.target == r.id for a in legacy):
            notes.append(mine[0])  # already one note in the grammar: kept as the person wrote it
            continue
        text = format_note(note.modality, free)
        if text:
            if mine:
                notes.append(replace(mine[0], text=text))
            else:
                n += 1
                notes.append(Note(f"#{n}", NOTE_TYPE, r.id, text))
    order = {q.id: k for k, q in enumerate(doc.notes)}
    notes.sort(key=lambda q: (order.get(q.id, len(order)), q.id))
    return replace(doc, notes=notes, attributes=[a for a in doc.attributes if a not in legacy])


def homogenize(doc: BratDocument, relation_map: Mapping[str, str | None], *, campaign_attributes: Sequence[str],
               counts: Counter[str] | None = None) -> BratDocument:
    """Turn a finished phase-2 document into its corpus form.

    Campaign markers and attributes removed, relation notes in the corpus form, relation types mapped,
    duplicate relations merged.  Offsets are not changed.

    Args:
        doc: The document; left unchanged.
        relation_map: Relation type -> its new type (``None`` drops the relation), as
            [`map_relations`][pipeline.brat.export.map_relations] applies it; ``finalize`` passes an empty
            map (types kept as annotated).
        campaign_attributes: The attribute types removed (``Disagreement``, ``Composite``).
        counts: Counters updated in place (see the module docstring for the keys); a new one when ``None``.

    Returns:
        The homogenized copy.
    """
    counts = counts if counts is not None else Counter()
    doc = strip_markers(doc, counts)
    doc = strip_attributes(doc, campaign_attributes, counts)
    doc = relation_notes_in_corpus_form(doc, counts)
    doc = map_relations([doc], relation_map, counts)[0]
    return merge_duplicate_relations(doc, counts)


# --- writing ----------------------------------------------------------------------------------------

def publish_dir(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the finished directory ``tmp`` in one step.

    Done by [`publish_directory`][pipeline.durable.publish_directory]: a reader sees the previous version
    or the new one.

    Args:
        tmp: The finished directory, a sibling of ``out`` (from
            [`staging_dir`][pipeline.campaign.finalize.staging_dir]).
        out: The output directory replaced.
    """
    durable.publish_directory(tmp, out)


def staging_dir(out: Path) -> Path:
    """Make a fresh empty directory beside ``out`` to build into.

    Staging and old copies left by killed runs are removed.

    Args:
        out: The output directory it will replace.

    Returns:
        The staging directory.
    """
    return durable.staging_directory(out)


def check_output(out: Path, marker: str) -> None:
    """Refuse to replace an existing non-empty directory that is not an earlier output.

    Args:
        out: The output directory; it may not exist.
        marker: The file an earlier output holds (``finalize.json``).

    Raises:
        FinalizeError: If ``out`` is a file, or a non-empty directory without ``marker``.
    """
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / marker).exists())):
        raise FinalizeError(f"{out}: exists and is not an earlier output (no {marker}); choose another --out")


# --- finalize ---------------------------------------------------------------------------------------

def _conf_for(directory: Path, fallback: validate_mod.AnnotationConf,
              cache: dict[Path, validate_mod.AnnotationConf]) -> validate_mod.AnnotationConf:
    found = validate_mod.find_conf(directory)
    if found is None:
        return fallback
    if found not in cache:
        cache[found] = validate_mod.parse_annotation_conf(found.read_text(encoding="utf-8"), str(found))[0]
    return cache[found]


def _phase1_texts(campaign: Path) -> dict[str, tuple[str, str]]:
    """Document name -> (relative path, text) of one phase-1 copy (first person by name)."""
    out: dict[str, tuple[str, str]] = {}
    root = campaign / PHASE1_DIR
    if root.is_dir():
        for txt in sorted(root.glob("*/*.txt")):
            if txt.stem in out:
                continue
            try:
                out[txt.stem] = (txt.relative_to(campaign).as_posix(), read_text(txt))
            except BratTextError as exc:  # held back in review; another person's copy may serve
                log.warning("%s", exc)
    return out


def _assigned_phase2(campaign: Path) -> list[str]:
    """Documents the campaign manifest assigns to phase 2 (empty without a manifest)."""
    path = campaign / ASSIGNMENTS_CSV
    if not path.is_file():
        return []
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")))
    if not reader.fieldnames or not {"document", "phase"} <= set(reader.fieldnames):
        raise FinalizeError(f"{path}:1: header needs document and phase columns, got {reader.fieldnames}")
    return sorted({row["document"] for row in reader if (row.get("phase") or "").strip() in ("2", "phase2")},
                  key=doc_key)


def check_document(
    doc: BratDocument, ann_text: str, conf: validate_mod.AnnotationConf, where: str
) -> list[Finding]:
    """List why a signed-off phase-2 document cannot be final yet.

    Args:
        doc: The document.
        ann_text: The text of its ``.ann``, for the validator's line numbers.
        conf: Its collection's ``annotation.conf``.
        where: Its ``.ann`` path relative to the campaign directory, used in the findings.

    Returns:
        One finding per validation problem (kind ``invalid``) and per mark left to resolve (kind
        ``disagreement``: ``Disagreement`` attributes, disputed relations); empty when it can be final.
    """
    found = [Finding(p.file, p.line, "invalid", p.message) for p in validate_mod.validate_document(
        doc, ann_text, conf, where)]
    found += [Finding(where, line, "disagreement", message) for _, line, message in marks_left(doc)]
    return found


def _without_legacy_modality(doc: BratDocument) -> BratDocument:
    """``doc`` without ``Negated``/``Hypothetical`` attributes on relations.

    They are an older campaign's modality, read as modality (and written as a note) by
    ``relation_notes_in_corpus_form``, so a collection whose configuration ``campaign review`` has since
    rewritten without them does not hold them back.
    """
    rel_ids = {r.id for r in doc.relations}
    legacy = [a for a in doc.attributes if a.target in rel_ids and a.type in MODALITIES]
    return replace(doc, attributes=[a for a in doc.attributes if a not in legacy]) if legacy else doc


def _reference(campaign: Path, senior: str, name: str) -> BratDocument | None:
    """The merged document ``campaign review`` wrote for ``senior`` (``review/merged/``), or None."""
    txt = campaign / REVIEW_DIR / REVIEW_MERGED_DIR / senior / f"{name}.txt"
    if not txt.is_file():
        return None
    try:
        return read_document(txt)[0]
    except (OSError, UnicodeDecodeError):
        return None


def _phase1_discarded(campaign: Path) -> set[str]:
    """Brat documents that a phase-1 annotator discarded (a ``Discard`` entity in their ``.ann``)."""
    out = set()
    root = campaign / PHASE1_DIR
    for ann in sorted(root.glob("*/*.ann")) if root.is_dir() else []:
        try:
            text = ann.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        doc, _ = parse_ann(ann.stem, "", text)
        if any(t.type == DISCARD_TYPE for t in doc.textbounds):
            out.add(ann.stem)
    return out


def _assigned_files(campaign: Path) -> list[str]:
    """The brat documents (pages included) the campaign assigns to phase 2.

    From ``campaign.json`` when the campaign has one, else the documents of ``manifest.csv``.
    """
    path = campaign / CAMPAIGN_MANIFEST
    if path.is_file():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            files = {f for entry in data.get("documents", []) if entry.get("phase2") for f in entry.get("files", [])}
            return sorted(files, key=doc_key)
        except (OSError, ValueError, AttributeError, TypeError) as exc:
            raise FinalizeError(f"{path}: cannot read the campaign manifest: {exc}") from exc
    return _assigned_phase2(campaign)


def _homogenized(name: str, doc: BratDocument, text: str, where: str, final_conf: validate_mod.AnnotationConf,
                 settings: BratSettings, counts: Counter[str], findings: list[Finding]) -> BratDocument:
    """Homogenize a document that passed its checks, and validate it as its final file will read.

    Relation types stay as annotated (no relation map, see the module docstring).  The document is parsed
    again from the text it will have, so line numbers are those of the final file; what that validation
    finds is added to ``findings`` (kind ``invalid_after_homogenization``).
    """
    doc = homogenize(doc, {}, campaign_attributes=(DISAGREEMENT, settings.composite_attribute), counts=counts)
    dumped = dumps(doc)
    doc, _ = parse_ann(name, text, dumped, where + " (final)")
    findings += [Finding(p.file, p.line, "invalid_after_homogenization", p.message)
                 for p in validate_mod.validate_document(doc, dumped, final_conf, where + " (final)")]
    return doc


def collect(
    campaign_dir: str | Path,
    schema: Schema,
    *,
    export_config: ExportConfig | None = None,
    settings: BratSettings | None = None,
    accept_agreed: bool = False,
) -> tuple[FinalizeResult, dict[str, BratDocument]]:
    """Check and homogenize every phase-2 document (see the module docstring); nothing is written.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        schema: The schema the final ``annotation.conf`` is generated from.
        export_config: The export configuration; loaded when ``None``, but not applied: relation types
            are kept as annotated.
        settings: The brat settings (the ``Composite`` attribute's name, the final configuration);
            loaded when ``None``.
        accept_agreed: Let a document the annotators agreed on through without a sign-off.

    Returns:
        The result, and the final documents by name (with no path).

    Raises:
        FinalizeError: If the campaign has no ``phase2/``, or its ``campaign.json`` (or ``manifest.csv``)
            cannot be read.
    """
    campaign = Path(campaign_dir)
    phase2 = campaign / PHASE2_DIR
    if not phase2.is_dir():
        raise FinalizeError(f"{phase2}: no phase-2 collections (run `pgx-corpus campaign review` first)")
    export_config = export_config if export_config is not None else load_export_config()
    settings = settings or load_settings()
    result = FinalizeResult()
    counts = result.counts
    final_conf = validate_mod.parse_annotation_conf(annotation_conf(schema, settings), "annotation.conf")[0]
    confs: dict[Path, validate_mod.AnnotationConf] = {}
    originals = _phase1_texts(campaign)
    final: dict[str, BratDocument] = {}
    seen: dict[str, str] = {}
    for senior_dir in sorted(p for p in phase2.iterdir() if p.is_dir()):
        conf = _conf_for(senior_dir, final_conf, confs)
        listing = list_files(senior_dir, (".txt", ".ann"))
        stems = {p.name[: -len(p.suffix)] for p in [*listing.files, *listing.symlinks]}
        links = {p.name for p in listing.symlinks}
        for name in sorted(stems, key=doc_key):
            txt, ann = senior_dir / f"{name}.txt", senior_dir / f"{name}.ann"
            counts["documents_phase2"] += 1
            where = ann.relative_to(campaign).as_posix()
            findings: list[Finding] = []
            if name in seen:
                findings.append(Finding(where, 0, "duplicate", f"{name} is also in {seen[name]}"))
                result.held_back.setdefault(name, []).append(findings[0])
                counts["held_back:duplicate"] += 1
                final.pop(name, None)
                continue
            seen[name] = where
            result.senior_of[name] = senior_dir.name
            if f"{name}.txt" in links or f"{name}.ann" in links:
                # never followed: its target lies outside the campaign, or may
                result.held_back[name] = [Finding(where, 0, "symlink", "symbolic link in the senior's collection, "
                                                  "not followed (replace it by the file itself)")]
                counts["held_back:symlink"] += 1
                continue
            # under the document's lock: serve or a team command may be writing it right now.  A lock
            # that cannot be taken (a full disk) fails the command: only the reading may hold a document back
            unreadable: Exception | None = None
            with document_lock(campaign, Path(PHASE2_DIR) / senior_dir.name / name):
                try:
                    text = read_text(txt)
                    ann_text = read_text(ann) if ann.exists() else ""
                except (OSError, BratTextError) as exc:
                    unreadable = exc
            if unreadable is not None:
                # no text (an .ann alone) or bytes that are not UTF-8: nothing to check, hold it back
                result.held_back[name] = [Finding(where, 0, "unreadable", f"cannot read the document: {unreadable}")]
                counts["held_back:unreadable"] += 1
                continue
            if not ann.exists():
                # every phase-2 document is written with its .ann: one gone was deleted, and an empty one
                # would put the document in FINAL without a single annotation
                result.held_back[name] = [Finding(where, 0, "missing_ann", "annotation file missing (deleted?); "
                                                  "restore it, or create an empty one if the document has none")]
                counts["held_back:missing_ann"] += 1
                continue
            doc, issues = parse_ann(name, text, ann_text, where)
            reasons = discard_reasons(doc)
            if reasons and not issues:
                result.discarded[name] = reasons
                counts["discarded"] += 1
                continue
            if reasons or is_done(doc):  # a discard with a broken line: a decision that cannot be read yet
                counts["signed_off"] += int(is_done(doc))
            else:
                reference = _reference(campaign, senior_dir.name, name)
                if accept_agreed and reference is not None and count_marks(reference) == 0:
                    result.accepted_agreed.append(name)
                    counts["accepted_agreed"] += 1
                else:
                    left = marks_left(doc)
                    result.pending[name] = (f"not signed off ({len(left)} mark(s) left)" if left
                                            else "not signed off")
                    counts["pending"] += 1
                    continue
            findings += [Finding(i.file, i.line, "unparseable", i.message) for i in issues]
            findings += check_document(_without_legacy_modality(doc), ann_text, conf, where)
            if name in originals and originals[name][1] != text:
                findings.append(Finding(where.removesuffix(".ann") + ".txt", 0, "text_changed",
                                        f"text differs from {originals[name][0]}"))
            if not findings:
                doc = _homogenized(name, doc, text, where, final_conf, settings, counts, findings)
            if findings:
                result.held_back[name] = sorted(set(findings))
                for kind in sorted({f.kind for f in findings}):
                    counts[f"held_back:{kind}"] += 1
                continue
            final[name] = replace(doc, path="")
            result.taken[name] = sha256_text(ann_text)
    counts["held_back"] = len(result.held_back)
    for name in result.held_back:
        final.pop(name, None)
    result.documents = sorted(final, key=doc_key)
    counts["documents_final"] = len(result.documents)
    missing = [d for d in _assigned_files(campaign) if d not in seen]
    discarded = _phase1_discarded(campaign) if missing else set()
    result.discarded_in_phase1 = [d for d in missing if d in discarded]
    result.not_in_phase2 = [d for d in missing if d not in discarded]
    counts["not_in_phase2"] = len(result.not_in_phase2)
    counts["discarded_in_phase1"] = len(result.discarded_in_phase1)
    result.accepted_agreed = [d for d in result.accepted_agreed if d in final]
    result.taken = {name: result.taken[name] for name in result.documents}
    return result, final


def held_back_tsv(result: FinalizeResult) -> str:
    """Render the findings of a result as ``held_back.tsv``.

    Args:
        result: The result of [`collect`][pipeline.campaign.finalize.collect].

    Returns:
        The TSV text: a ``document, senior, location, kind, message`` header, then one row per finding, in
        document order (``location`` is ``file:line``).
    """
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", lineterminator="\n")
    writer.writerow(("document", "senior", "location", "kind", "message"))
    for name, found in sorted(result.held_back.items(), key=lambda kv: doc_key(kv[0])):
        for f in found:
            writer.writerow((name, result.senior_of.get(name, ""), f"{f.file}:{f.line}", f.kind, f.message))
    return buf.getvalue()


def finalize(
    campaign_dir: str | Path,
    out: str | Path,
    schema: Schema,
    *,
    export_config: ExportConfig | None = None,
    settings: BratSettings | None = None,
    accept_agreed: bool = False,
) -> FinalizeResult:
    """Write the final corpus of a campaign (see the module docstring).

    Built in a staging directory beside ``out`` and swapped in whole; a failed run leaves the previous
    output.  Then the campaign's finalize record is replaced
    ([`write_record`][pipeline.campaign.finalized.write_record]).

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        out: The output directory ``FINAL``: absent, empty, or an earlier output.
        schema: The schema the final ``annotation.conf`` is generated from.
        export_config: Passed to [`collect`][pipeline.campaign.finalize.collect] (not applied).
        settings: The brat settings; loaded when ``None``.
        accept_agreed: Let a document the annotators agreed on through without a sign-off.

    Returns:
        What happened to each document; [`work_left`][pipeline.campaign.finalize.FinalizeResult.work_left]
        tells whether anything is held back or pending.

    Raises:
        FinalizeError: Before writing anything, if the campaign has no ``phase2/``, its manifest cannot be
            read, or ``out`` is an unrelated non-empty directory.
    """
    out_dir = Path(out)
    check_output(out_dir, REPORT_JSON)
    settings = settings or load_settings()
    result, final = collect(campaign_dir, schema, export_config=export_config, settings=settings,
                            accept_agreed=accept_agreed)
    tmp = staging_dir(out_dir)
    try:
        write_conf_files(tmp, schema, settings)
        for name in result.documents:
            doc = final[name]
            (tmp / f"{name}.txt").write_text(doc.text, encoding="utf-8", newline="\n")
            (tmp / f"{name}.ann").write_text(dumps(doc), encoding="utf-8", newline="\n")
        (tmp / HELD_BACK_TSV).write_text(held_back_tsv(result), encoding="utf-8", newline="\n")
        (tmp / REPORT_JSON).write_text(json.dumps(result.report(), indent=2, sort_keys=True) + "\n",
                                       encoding="utf-8", newline="\n")
        publish_dir(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # only once FINAL is in place: the record never names a FINAL that is not there
    write_record(Path(campaign_dir), Record(out_dir, {
        name: Finalized(result.senior_of[name], result.taken[name]) for name in result.documents}))
    for name, found in sorted(result.held_back.items(), key=lambda kv: doc_key(kv[0])):
        for f in found:
            log.debug("held back %s: %s", name, f)  # the command line prints them, once
    return result
