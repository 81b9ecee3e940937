"""``campaign finalize``: the seniors' phase-2 collections -> the final corpus (one brat collection).

Input: ``CAMPAIGN_DIR/phase2/<senior>/NAME.txt|NAME.ann`` (see :mod:`pipeline.campaign.layout`), each
collection with its campaign ``annotation.conf`` (the one beside the documents, else the nearest one up,
else the one generated from the schema).  Offsets are half-open character offsets into each ``.txt``.

A document goes to the final corpus when it is *finished*:

* it parses and validates against its collection's ``annotation.conf`` (:mod:`pipeline.brat.validate`);
* no annotation still carries the :data:`~pipeline.campaign.layout.DISAGREEMENT` attribute (the senior
  accepts a mark by removing the attribute, rejects it by deleting the annotation);
* it holds no :data:`~pipeline.campaign.layout.DISCARD_TYPE` entity (a senior who discards a sentence in
  phase 2 keeps it out of the corpus; it is held back with the reason);
* its text equals the phase-1 text of the same document (when a phase-1 copy exists), and it appears in
  one senior's collection only;
* it can be read: a ``.txt`` beside the ``.ann``, both UTF-8.

Every other document is *held back*: listed with ``file:line: reason`` in the report (``held_back.tsv``,
``finalize.json``) and returned to the caller, never dropped silently.  Documents the campaign manifest
assigns to phase 2 that no senior collection holds (discarded in phase 1, or not reviewed yet) are listed
as ``not_in_phase2``.

What a finished document becomes (campaign-only marks removed, relation types homogenized):

* attributes of type ``Disagreement`` (none are left by definition) and the pre-annotation's
  ``Composite`` presentation attribute are removed, and so are the campaign's ``Done`` marker entities;
* relation types are rewritten by ``config/export.yaml`` ``relation_map`` (:func:`pipeline.brat.export.
  map_relations`: ``metabolizes``/``transports`` -> ``influences``; a type mapped to null is dropped);
  a relation that becomes identical to an earlier one of the same document (type, arguments, attributes,
  notes) is merged into it (counted);
* the result must validate against the final ``annotation.conf`` (generated from the schema, without the
  campaign types); otherwise the document is held back too.

Output ``FINAL``: the finished documents (``.ann`` in the canonical order of
:func:`pipeline.brat.standoff.dumps`), ``annotation.conf``, ``visual.conf``, ``tools.conf``,
``kb_shortcuts.conf``, ``held_back.tsv`` and ``finalize.json``.  ``FINAL`` is written beside itself and
swapped in whole, so a failed run leaves the previous result; the same campaign gives byte-identical
output (report paths are relative to ``CAMPAIGN_DIR``; nothing records a time).

Count keys: ``documents_phase2``, ``documents_final``, ``held_back``, ``held_back:<reason kind>``,
``not_in_phase2``, ``relations_mapped``, ``relations_dropped``, ``relations_merged``,
``attributes_removed:<type>``.
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

from pipeline import store
from pipeline.brat import validate as validate_mod
from pipeline.brat.conf import CAMPAIGN_DONE_TYPE, BratSettings, annotation_conf, load_settings, write_conf_files
from pipeline.brat.export import ExportConfig, load_export_config, map_relations
from pipeline.brat.standoff import BratDocument, dumps, parse_ann
from pipeline.campaign.layout import (
    ASSIGNMENTS_CSV,
    DISAGREEMENT,
    DISCARD_REASON,
    DISCARD_TYPE,
    PHASE1_DIR,
    PHASE2_DIR,
)
from pipeline.documents import pmid_sort_key
from pipeline.schema import Schema

log = logging.getLogger(__name__)

HELD_BACK_TSV = "held_back.tsv"
REPORT_JSON = "finalize.json"
REPORT_FILES = (HELD_BACK_TSV, REPORT_JSON)
#: the campaign's "finished" marker entity; it means nothing in the corpus, so a senior's leftover marker is
#: dropped rather than holding the document back
DONE_TYPE = CAMPAIGN_DONE_TYPE


class FinalizeError(ValueError):
    """The campaign directory or the output cannot be used (nothing is written)."""


@dataclass(frozen=True, order=True)
class Finding:
    """Why a document is held back: ``file:line: message`` (``file`` relative to the campaign directory)."""

    file: str
    line: int
    kind: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class FinalizeResult:
    documents: list[str] = field(default_factory=list)
    held_back: dict[str, list[Finding]] = field(default_factory=dict)
    senior_of: dict[str, str] = field(default_factory=dict)
    not_in_phase2: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)

    def report(self) -> dict[str, Any]:
        return {
            "documents": len(self.documents),
            "held_back": [
                {"document": name, "senior": self.senior_of.get(name, ""), "problems": [str(f) for f in found]}
                for name, found in sorted(self.held_back.items(), key=lambda kv: doc_key(kv[0]))
            ],
            "not_in_phase2": self.not_in_phase2,
            "counts": dict(sorted(self.counts.items())),
        }


def doc_key(name: str) -> tuple[tuple[int, int | str], int, str]:
    """Sort key of document names ``{PMID}_{k}``: PMID numerically, then sentence index, then name."""
    pmid, _, rest = name.partition("_")
    return pmid_sort_key(pmid), int(rest) if rest.isdigit() else -1, name


# --- document edits shared with decisions ---------------------------------------------------------

def remove_annotations(doc: BratDocument, ids: Iterable[str]) -> tuple[BratDocument, set[str]]:
    """A copy of ``doc`` without the annotations ``ids`` and everything that depends on them.

    Relations and events with a removed argument go too, then attributes, notes and normalizations of any
    removed annotation; an equivalence keeps its other members (dropped when fewer than two remain).
    Returns the copy and the set of every id removed.
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
    """``doc`` without relations identical to an earlier one (type, arguments, attributes and notes)."""
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
    """``doc`` without the attributes of the given types (counted per type)."""
    counts = counts if counts is not None else Counter()
    kept = []
    for a in doc.attributes:
        if a.type in types:
            counts[f"attributes_removed:{a.type}"] += 1
        else:
            kept.append(a)
    return replace(doc, attributes=kept)


def strip_markers(doc: BratDocument, counts: Counter[str] | None = None) -> BratDocument:
    """``doc`` without the campaign's ``Done`` markers (entities, with anything attached to them)."""
    counts = counts if counts is not None else Counter()
    done = [t.id for t in doc.textbounds if t.type == DONE_TYPE]
    if not done:
        return doc
    counts["done_markers_removed"] += len(done)
    return remove_annotations(doc, done)[0]


def homogenize(doc: BratDocument, relation_map: Mapping[str, str | None], *, campaign_attributes: Sequence[str],
               counts: Counter[str] | None = None) -> BratDocument:
    """Campaign markers and attributes removed, relation types mapped, duplicate relations merged."""
    counts = counts if counts is not None else Counter()
    doc = strip_markers(doc, counts)
    doc = strip_attributes(doc, campaign_attributes, counts)
    doc = map_relations([doc], relation_map, counts)[0]
    return merge_duplicate_relations(doc, counts)


# --- writing ----------------------------------------------------------------------------------------

def publish_dir(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the finished directory ``tmp`` (its sibling) in one step
    (:func:`pipeline.store.publish_directory`): a reader sees the previous version or the new one."""
    store.publish_directory(tmp, out)


def staging_dir(out: Path) -> Path:
    """A fresh empty directory beside ``out`` to build into (staging and old copies of killed runs removed)."""
    return store.staging_directory(out)


def check_output(out: Path, marker: str) -> None:
    """Refuse to replace an existing non-empty directory that is not an earlier output (holds ``marker``)."""
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
            out.setdefault(txt.stem, (txt.relative_to(campaign).as_posix(), txt.read_text(encoding="utf-8")))
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
    """Why ``doc`` (a phase-2 document, ``where`` its ``.ann`` path) cannot be final yet."""
    found = [Finding(p.file, p.line, "invalid", p.message) for p in validate_mod.validate_document(
        doc, ann_text, conf, where)]
    types = {t.id: t.type for t in doc.textbounds} | {r.id: r.type for r in doc.relations}
    for a in doc.attributes:
        if a.type == DISAGREEMENT:
            what = types.get(a.target, "undefined")
            found.append(Finding(where, a.line, "disagreement", f"{a.target} ({what}) still carries "
                                 f"{DISAGREEMENT}={a.value}: remove the attribute to accept it or delete "
                                 "the annotation to reject it"))
    for t in doc.textbounds:
        if t.type == DISCARD_TYPE:
            reasons = sorted(a.value or "?" for a in doc.attributes if a.target == t.id and a.type == DISCARD_REASON)
            found.append(Finding(where, t.line, "discarded", f"{t.id}: discarded in phase 2 ({DISCARD_REASON}="
                                 f"{','.join(reasons) or 'none given'})"))
    return found


def collect(
    campaign_dir: str | Path,
    schema: Schema,
    *,
    export_config: ExportConfig | None = None,
    settings: BratSettings | None = None,
) -> tuple[FinalizeResult, dict[str, BratDocument]]:
    """Check and homogenize every phase-2 document; returns the result and the final documents by name."""
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
        stems = {p.stem for p in senior_dir.glob("*.txt")} | {p.stem for p in senior_dir.glob("*.ann")}
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
            try:
                text = txt.read_text(encoding="utf-8")
                ann_text = ann.read_text(encoding="utf-8") if ann.exists() else ""
            except (OSError, UnicodeDecodeError) as exc:
                # no text (an .ann alone) or bytes that are not UTF-8: nothing to check, hold it back
                result.held_back[name] = [Finding(where, 0, "unreadable", f"cannot read the document: {exc}")]
                counts["held_back:unreadable"] += 1
                continue
            doc, issues = parse_ann(name, text, ann_text, where)
            findings += [Finding(i.file, i.line, "unparseable", i.message) for i in issues]
            findings += check_document(doc, ann_text, conf, where)
            if name in originals and originals[name][1] != text:
                findings.append(Finding(where.removesuffix(".ann") + ".txt", 0, "text_changed",
                                        f"text differs from {originals[name][0]}"))
            if not findings:
                doc = homogenize(doc, export_config.relation_map,
                                 campaign_attributes=(DISAGREEMENT, settings.composite_attribute), counts=counts)
                # parsed again from the text it will have, so line numbers are those of the final file
                dumped = dumps(doc)
                doc, _ = parse_ann(name, text, dumped, where + " (final)")
                findings += [Finding(p.file, p.line, "invalid_after_homogenization", p.message)
                             for p in validate_mod.validate_document(doc, dumped, final_conf, where + " (final)")]
            if findings:
                result.held_back[name] = sorted(set(findings))
                for kind in sorted({f.kind for f in findings}):
                    counts[f"held_back:{kind}"] += 1
                continue
            final[name] = replace(doc, path="")
    counts["held_back"] = len(result.held_back)
    for name in result.held_back:
        final.pop(name, None)
    result.documents = sorted(final, key=doc_key)
    counts["documents_final"] = len(result.documents)
    result.not_in_phase2 = [d for d in _assigned_phase2(campaign) if d not in seen]
    counts["not_in_phase2"] = len(result.not_in_phase2)
    return result, final


def held_back_tsv(result: FinalizeResult) -> str:
    """``document, senior, location, kind, message`` rows, one per finding."""
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
) -> FinalizeResult:
    """Write the final corpus of a campaign to ``out`` (see the module docstring); returns what happened.

    Raises FinalizeError before writing anything when the campaign has no ``phase2/`` or ``out`` is an
    unrelated non-empty directory.
    """
    out_dir = Path(out)
    check_output(out_dir, REPORT_JSON)
    settings = settings or load_settings()
    result, final = collect(campaign_dir, schema, export_config=export_config, settings=settings)
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
    for name, found in sorted(result.held_back.items(), key=lambda kv: doc_key(kv[0])):
        for f in found:
            log.warning("held back %s: %s", name, f)
    return result
