"""``campaign simulate``: annotate and sign off a campaign as people would, with seeded disagreements.

The simulator lets a tutorial, a demonstration or a test run the whole campaign (review, finalize,
homogenization, release) without people.  It writes into the campaign's brat collections exactly what
brat would write when a person saves: the same ``.txt``, an ``.ann`` with the person's annotations, the
lowest free ids for new annotations, and the campaign markers of [`pipeline.campaign.layout`][pipeline.campaign.layout]
and [`pipeline.brat.conf`][pipeline.brat.conf] (a ``Done`` entity on the first word when finished, or a ``Discard``
entity there with its ``Reason`` attribute).  Each document is read, changed and written under
[`document_lock`][pipeline.campaign.locks.document_lock], its ``.ann`` replaced in one rename (the ``.txt`` is
never changed).

**Phase 1** ([`simulate_phase1`][pipeline.campaign.simulate.simulate_phase1]).  For every phase-1 document of every
annotator, the annotator's version starts from the document of the same name in a *reference* collection (the
pre-annotation, or a gold collection with the same texts).  When the reference document has no relation, the simulated
annotators add the relations a person would ([`proposed_relations`][pipeline.campaign.simulate.proposed_relations]: a
genomic factor ``isAssociatedWith`` each chemical, and ``influences`` each phenotype of the sentence, at most
[`MAX_RELATIONS`][pipeline.campaign.simulate.MAX_RELATIONS]), the same for both annotators.  Then, per annotator and
document, seeded disagreements are injected, each with its probability in
[`PHASE1_RATES`][pipeline.campaign.simulate.PHASE1_RATES]:

* ``dropped_entity``: an entity (with its relations) is deleted;
* ``boundary_shift``: an entity's end moves to the end of the next word (or its start to the next word
  when it is the last word of the text);
* ``retyped_entity``: an entity gets a related type (a sibling, parent or child in the hierarchy of the
  collection's ``annotation.conf``);
* ``missing_relation``: a relation is deleted;
* ``modality_flip``: ``Negated`` is toggled on a relation, in the relation's one ``AnnotatorNotes``
  written in the grammar of [`pipeline.brat.modality`][pipeline.brat.modality] (free text kept);
* ``discarded``: the document is discarded (``Discard`` entity, ``Reason`` seeded) instead of marked
  ``Done``.

A document a person already changed (its annotations differ from the pre-annotation handed out) or
finished is left alone and counted (``skipped_started``, ``skipped_finished``).

**Phase 2** ([`simulate_phase2`][pipeline.campaign.simulate.simulate_phase2]).  For every document of every senior's
collection (written by ``campaign review``) that is not finished yet, each ``Disagreement`` mark is resolved, seeded:
accepted (the attribute removed) with probability [`ACCEPT_RATE`][pipeline.campaign.simulate.ACCEPT_RATE], otherwise
rejected (the annotation deleted, with the relations that lose an argument and everything attached to it), and each
disputed relation is accepted (retyped to its real type) or rejected (deleted) with the same probability; then the
senior signs the document off with ``Done``.

Randomness: one ``random.Random`` per (seed, phase, person, document), so a document's result does
not depend on which other documents exist or on the order they are visited.  Same campaign, reference and
seed: byte-identical collections.

Offsets are half-open character offsets into each document's text, as in brat.
"""

from __future__ import annotations

import logging
import random
import re
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat.modality import NEGATED, format_note, parse_note
from pipeline.brat.standoff import Attribute, BratDocument, Note, Relation, TextBound, dumps, parse_ann
from pipeline.brat.validate import AnnotationConf, parse_annotation_conf, validate_document
from pipeline.campaign.conf import CAMPAIGN_DONE_TYPE, undisputed_type
from pipeline.campaign.documents import canonical, is_finished, without_markers
from pipeline.campaign.finalize import remove_annotations
from pipeline.campaign.layout import (
    DISAGREEMENT,
    DISCARD_REASON,
    DISCARD_REASONS,
    DISCARD_TYPE,
    PHASE1_DIR,
    PHASE2_DIR,
    PREANNOTATION_DIR,
    CampaignError,
    read_campaign,
)
from pipeline.campaign.locks import document_lock

log = logging.getLogger(__name__)

PHASE1_RATES: Mapping[str, float] = {
    "dropped_entity": 0.15,
    "boundary_shift": 0.15,
    "retyped_entity": 0.10,
    "missing_relation": 0.15,
    "modality_flip": 0.10,
    "discarded": 0.03,
}
"""Probability of each injected disagreement per annotator and document."""

ACCEPT_RATE = 0.6
"""Probability that a senior accepts a ``Disagreement`` mark (otherwise the annotation is deleted)."""

MAX_RELATIONS = 3
"""At most this many relations proposed per document when the reference has none."""

GENOMIC_ROOT = "Genomic_factor"
PHENOTYPE_ROOT = "Phenotype"
CHEMICAL = "Chemical"
ASSOCIATED = "isAssociatedWith"
INFLUENCES = "influences"
NOTE_TYPE = "AnnotatorNotes"
_WORD = re.compile(r"\S+")


@dataclass
class SimulationReport:
    """What a simulation run did.

    Attributes:
        phase: 1 or 2.
        counts: Kinds of edits made, documents written (``documents_annotated``,
            ``documents_signed_off``) or skipped (``skipped_finished``, ``skipped_started``,
            ``skipped_changed_meanwhile``), ``relations_proposed``, ``disagreements_injected``, and in
            phase 2 ``marks_accepted``/``marks_rejected``.
        edits: Per document written (``person/NAME``), the edits made to it (``kind: detail``) or, in phase
            2, the decisions (``accepted: T3``, ``rejected: R1``).
    """

    phase: int
    counts: Counter[str] = field(default_factory=Counter)
    edits: dict[str, list[str]] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """Give the report as JSON-ready data, keys sorted.

        Returns:
            ``{"phase", "counts", "edits"}``.
        """
        return {"phase": self.phase, "counts": dict(sorted(self.counts.items())),
                "edits": {k: self.edits[k] for k in sorted(self.edits)}}


# --- pure helpers --------------------------------------------------------------------------------

def document_rng(seed: int, phase: int, person: str, name: str) -> random.Random:
    """Make the random source of one person's document, independent of every other document.

    Args:
        seed: The simulation's seed.
        phase: 1 or 2.
        person: The annotator or senior.
        name: The brat document name.

    Returns:
        A ``random.Random`` seeded with all four.
    """
    return random.Random(f"pgx-corpus simulate:{seed}:{phase}:{person}:{name}")


def descendants(conf: AnnotationConf, root: str) -> set[str]:
    """List an entity type and every entity type below it in a configuration's hierarchy.

    Args:
        conf: The collection's ``annotation.conf``.
        root: The entity type.

    Returns:
        ``root`` (when the configuration has it) and its descendants.
    """
    out = {root} if root in conf.entity_types else set()
    changed = True
    while changed:
        changed = False
        for t, parent in conf.entity_parent.items():
            if parent in out and t not in out:
                out.add(t)
                changed = True
    return out


def related_types(conf: AnnotationConf, type_: str) -> list[str]:
    """List the types an annotator may confuse with a type: its parent, siblings and children.

    Campaign marker types are left out.

    Args:
        conf: The collection's ``annotation.conf``.
        type_: The entity type.

    Returns:
        The related types, sorted; empty when there is none.
    """
    parent = conf.entity_parent.get(type_)
    near = {t for t, p in conf.entity_parent.items() if p == type_ or (parent is not None and p == parent)}
    if parent is not None:
        near.add(parent)
    near.discard(type_)
    return sorted(t for t in near if t in conf.entity_types and t not in (DISCARD_TYPE, CAMPAIGN_DONE_TYPE))


def _next_id(doc: BratDocument, prefix: str) -> str:
    """The lowest free id with ``prefix`` (``T``, ``R``, ``A``, ``#``), as brat chooses it."""
    used = {i for i in doc.ids() if i.startswith(prefix)}
    n = 1
    while f"{prefix}{n}" in used:
        n += 1
    return f"{prefix}{n}"


def _fragment_text(text: str, fragments: Sequence[tuple[int, int]]) -> str:
    return " ".join(text[s:e] for s, e in fragments)


def remove_annotation(doc: BratDocument, ident: str) -> BratDocument:
    """Delete one annotation and what depends on it, as brat deletes it.

    Done with [`remove_annotations`][pipeline.campaign.finalize.remove_annotations].

    Args:
        doc: The document; left unchanged.
        ident: The annotation's id.

    Returns:
        A copy without it.
    """
    return remove_annotations(doc, [ident])[0]


def _copy(doc: BratDocument) -> BratDocument:
    out = BratDocument(name=doc.name, text=doc.text, path=doc.path)
    out.textbounds = list(doc.textbounds)
    out.relations = list(doc.relations)
    out.events = list(doc.events)
    out.attributes = list(doc.attributes)
    out.normalizations = list(doc.normalizations)
    out.notes = list(doc.notes)
    out.equivs = list(doc.equivs)
    return out


def proposed_relations(doc: BratDocument, conf: AnnotationConf) -> list[tuple[str, str, str]]:
    """Propose the relations a person would add to a document that has none.

    From each genomic factor to each chemical (``isAssociatedWith``) and each phenotype (``influences``),
    outermost entities first, skipping overlapping spans, kept only where ``conf`` admits them; at most
    [`MAX_RELATIONS`][pipeline.campaign.simulate.MAX_RELATIONS].

    Args:
        doc: The reference document.
        conf: The collection's ``annotation.conf``.

    Returns:
        ``(type, arg1 id, arg2 id)`` per relation, in that order.
    """
    genomic = descendants(conf, GENOMIC_ROOT)
    phenotype = descendants(conf, PHENOTYPE_ROOT)

    def outermost(types: set[str]) -> list[TextBound]:
        ents = [t for t in doc.textbounds if t.type in types]
        return sorted((t for t in ents if not any(o is not t and o.start <= t.start and t.end <= o.end
                                                   and (o.end - o.start) > (t.end - t.start) for o in ents)),
                      key=lambda t: (t.start, t.end, t.id))

    out: list[tuple[str, str, str]] = []
    for g in outermost(genomic):
        for other in outermost(phenotype | {CHEMICAL}):
            if other.start < g.end and g.start < other.end:
                continue  # overlapping spans: a composite and its key entity, not two things related
            rel_type = ASSOCIATED if other.type == CHEMICAL else INFLUENCES
            if conf.relation_allowed(rel_type, ("Arg1", "Arg2"), (g.type, other.type)):
                out.append((rel_type, g.id, other.id))
            if len(out) >= MAX_RELATIONS:
                return out
    return out


def with_relations(doc: BratDocument, relations: Sequence[tuple[str, str, str]]) -> BratDocument:
    """Add relations to a document, with the lowest free ``R`` ids, as brat assigns them.

    Args:
        doc: The document; left unchanged.
        relations: ``(type, arg1 id, arg2 id)`` per relation, as
            [`proposed_relations`][pipeline.campaign.simulate.proposed_relations] gives them.

    Returns:
        A copy with the relations.
    """
    out = _copy(doc)
    for rel_type, a1, a2 in relations:
        out.relations.append(Relation(_next_id(out, "R"), rel_type, (("Arg1", a1), ("Arg2", a2))))
    return out


def _entities(doc: BratDocument) -> list[TextBound]:
    return [t for t in doc.textbounds if t.type not in (DISCARD_TYPE, CAMPAIGN_DONE_TYPE)]


def shift_boundary(doc: BratDocument, ent: TextBound) -> TextBound | None:
    """Move an entity's boundary by one word, as an annotator's boundary disagreement.

    The last fragment's end moves to the end of the next word; when the entity ends inside a word or no
    word follows on the same line, the first fragment's start moves to its second word instead.  Offsets
    are half-open character offsets into the document's text.

    Args:
        doc: The document holding the entity.
        ent: The entity.

    Returns:
        The moved entity (its text updated), or ``None`` when neither move is possible.
    """
    frags = list(ent.sorted_fragments)
    s, e = frags[-1]
    m = _WORD.search(doc.text, e)
    if m is not None and "\n" not in doc.text[e:m.start()] and not doc.text[e:m.start()] == "":
        frags[-1] = (s, m.end())
    else:
        s0, e0 = frags[0]
        inner = [w for w in _WORD.finditer(doc.text, s0, e0)]
        if len(inner) < 2:
            return None
        frags[0] = (inner[1].start(), e0)
    frags_t = tuple(frags)
    return replace(ent, fragments=frags_t, text=_fragment_text(doc.text, frags_t))


def toggle_negation(doc: BratDocument, rel: Relation) -> BratDocument:
    """Toggle ``Negated`` in a relation's note.

    The relation keeps one ``AnnotatorNotes`` written in the project's grammar, its free text kept; the
    note is removed when nothing is left in it.

    Args:
        doc: The document; left unchanged.
        rel: The relation.

    Returns:
        A copy with the note changed.
    """
    out = _copy(doc)
    notes = [q for q in out.notes if q.target == rel.id and q.type == NOTE_TYPE]
    current = parse_note(notes[0].text) if notes else parse_note("")
    modality = set(current.modality) ^ {NEGATED}
    text = format_note(modality, current.free)
    out.notes = [q for q in out.notes if not (q.target == rel.id and q.type == NOTE_TYPE)]
    if text:
        ident = notes[0].id if notes else _next_id(out, "#")
        out.notes.append(Note(ident, NOTE_TYPE, rel.id, text))
    return out


def mark(doc: BratDocument, type_: str, reason: str | None = None) -> BratDocument:
    """Add a campaign marker entity on the first word of a document.

    Args:
        doc: The document; left unchanged.
        type_: The marker type (``Done`` or ``Discard``).
        reason: The ``Reason`` attribute's value, for a discard; ``None`` for no attribute.

    Returns:
        A copy with the marker.

    Raises:
        ValueError: If the document's text has no word.
    """
    out = _copy(doc)
    m = _WORD.search(doc.text)
    if m is None:
        raise ValueError(f"{doc.path or doc.name}: empty text, no word to mark {type_}")
    tid = _next_id(out, "T")
    out.textbounds.append(TextBound(tid, type_, ((m.start(), m.end()),), m.group()))
    if reason is not None:
        out.attributes.append(Attribute(_next_id(out, "A"), DISCARD_REASON, tid, reason))
    return out


def annotate_phase1(
    reference: BratDocument, conf: AnnotationConf, rng: random.Random, rates: Mapping[str, float] = PHASE1_RATES,
) -> tuple[BratDocument, list[str]]:
    """Make one annotator's finished version of a reference document, with seeded disagreements.

    Each disagreement of the module docstring is drawn once, in that order; a retyping that would not
    validate is not made.  The document is then marked ``Done``, or discarded with a seeded reason.

    Args:
        reference: The reference document, relations already proposed; left unchanged.
        conf: The annotator's collection's ``annotation.conf``.
        rng: The document's random source ([`document_rng`][pipeline.campaign.simulate.document_rng]).
        rates: The probability of each disagreement kind.

    Returns:
        The document, and the edits made (``kind: detail``).
    """
    doc = _copy(reference)
    edits: list[str] = []
    ents = _entities(doc)
    if ents and rng.random() < rates["dropped_entity"]:
        ent = rng.choice(ents)
        doc = remove_annotation(doc, ent.id)
        edits.append(f"dropped_entity: {ent.type} {ent.text!r}")
    ents = _entities(doc)
    if ents and rng.random() < rates["boundary_shift"]:
        ent = rng.choice(ents)
        moved = shift_boundary(doc, ent)
        if moved is not None:
            doc.textbounds = [moved if t.id == ent.id else t for t in doc.textbounds]
            edits.append(f"boundary_shift: {ent.type} {ent.text!r} -> {moved.text!r}")
    ents = [t for t in _entities(doc) if related_types(conf, t.type)]
    if ents and rng.random() < rates["retyped_entity"]:
        ent = rng.choice(ents)
        new_type = rng.choice(related_types(conf, ent.type))
        candidate = _copy(doc)
        candidate.textbounds = [replace(t, type=new_type) if t.id == ent.id else t for t in doc.textbounds]
        text = dumps(candidate)
        parsed, issues = parse_ann(doc.name, doc.text, text, doc.path or doc.name)
        if not issues and not validate_document(parsed, text, conf, doc.path or doc.name):
            doc = candidate
            edits.append(f"retyped_entity: {ent.text!r} {ent.type} -> {new_type}")
    if doc.relations and rng.random() < rates["missing_relation"]:
        rel = rng.choice(doc.relations)
        doc = remove_annotation(doc, rel.id)
        edits.append(f"missing_relation: {rel.type}")
    if doc.relations and rng.random() < rates["modality_flip"]:
        rel = rng.choice(doc.relations)
        doc = toggle_negation(doc, rel)
        edits.append(f"modality_flip: {rel.type} {rel.id}")
    if rng.random() < rates["discarded"]:
        reason = rng.choice(DISCARD_REASONS)
        doc = mark(doc, DISCARD_TYPE, reason)
        edits.append(f"discarded: {reason}")
    else:
        doc = mark(doc, CAMPAIGN_DONE_TYPE)
    return doc, edits


def sign_off(doc: BratDocument, rng: random.Random, accept_rate: float = ACCEPT_RATE) -> tuple[BratDocument, list[str]]:
    """Make a senior's finished phase-2 document.

    Every ``Disagreement`` mark is accepted (attribute removed) or rejected (annotation deleted), and
    every disputed relation accepted (retyped to its real type) or rejected (deleted), seeded, in id
    order; then the document is marked ``Done``.

    Args:
        doc: The senior's document; left unchanged.
        rng: The document's random source.
        accept_rate: The probability of accepting each mark.

    Returns:
        The document, and the decisions (``accepted: T3``, ``rejected: R1``).
    """
    out = _copy(doc)
    decisions: list[str] = []
    marks = sorted(((a.target, a.id) for a in doc.attributes if a.type == DISAGREEMENT), key=lambda m: _id_key(m[0]))
    for target, attr_id in marks:
        if not any(i == target for i in out.ids()):
            continue  # removed with an argument rejected earlier
        if rng.random() < accept_rate:
            out.attributes = [a for a in out.attributes if a.id != attr_id]
            decisions.append(f"accepted: {target}")
        else:
            out = remove_annotation(out, target)
            decisions.append(f"rejected: {target}")
    # a disputed relation (generated ``Disputed_<type>``) is accepted by retyping it, rejected by deleting it
    disputed = sorted((r.id for r in out.relations if undisputed_type(r.type)), key=_id_key)
    for rid in disputed:
        rel = next((r for r in out.relations if r.id == rid), None)
        if rel is None:
            continue
        if rng.random() < accept_rate:
            real = undisputed_type(rel.type) or rel.type
            out.relations = [replace(r, type=real) if r.id == rid else r for r in out.relations]
            decisions.append(f"accepted: {rid}")
        else:
            out = remove_annotation(out, rid)
            decisions.append(f"rejected: {rid}")
    return mark(out, CAMPAIGN_DONE_TYPE), decisions


def _id_key(ident: str) -> tuple[str, int]:
    digits = ident.lstrip("TRAN#E")
    return (ident[:len(ident) - len(digits)], int(digits) if digits.isdigit() else 0)


# --- the campaign directory ----------------------------------------------------------------------

def _read(txt: Path) -> BratDocument:
    ann = txt.with_suffix(".ann")
    text = txt.read_text(encoding="utf-8")
    ann_text = ann.read_text(encoding="utf-8") if ann.is_file() else ""
    doc, issues = parse_ann(txt.stem, text, ann_text, str(ann))
    if issues:
        raise CampaignError(f"{issues[0]} (fix the file, or leave it to a person)")
    return doc


def _load_conf(path: Path) -> AnnotationConf:
    conf, _ = parse_annotation_conf(path.read_text(encoding="utf-8"), str(path))
    return conf


def _phase1_work(campaign: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(person, brat document name) of every phase-1 assignment, in a stable order."""
    pairs = {(person, name) for entry in campaign["documents"] for name in entry["files"]
             for person in entry["phase1"]}
    yield from sorted(pairs)


def _write_ann(path: Path, doc: BratDocument) -> None:
    """Replace ``path``'s ``.ann`` in one rename (the ``.txt`` is never rewritten)."""
    durable.replace_file(path.with_suffix(".ann"), dumps(doc).encode("utf-8"))


def simulate_phase1(campaign_dir: Path, reference_dir: Path, seed: int,
                    rates: Mapping[str, float] = PHASE1_RATES) -> SimulationReport:
    """Annotate every untouched phase-1 document of a campaign from a reference collection.

    See the module docstring.  Every check (campaign, reference documents and texts, every simulated
    document valid) comes before anything is written; then each ``.ann`` is replaced atomically under
    the document's lock, unless the document changed meanwhile.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        reference_dir: The reference collection (the pre-annotation, or a gold collection with the same
            texts); its campaign markers are not copied.
        seed: The seed of every document's random source.
        rates: The probability of each disagreement kind.

    Returns:
        What was done.

    Raises:
        CampaignError: If the campaign cannot be read, the reference collection or one of its documents
            is missing, a reference text differs from the text handed out, a document does not parse, or
            a simulated document would not validate; the message names the file.
    """
    root = Path(campaign_dir)
    campaign = read_campaign(root)
    pre = root / PREANNOTATION_DIR
    if not Path(reference_dir).is_dir():
        raise CampaignError(f"{reference_dir}: no such reference collection")
    work = list(_phase1_work(campaign))
    references: dict[str, BratDocument] = {}
    for _, name in work:
        if name in references:
            continue
        txt = Path(reference_dir) / f"{name}.txt"
        if not txt.is_file():
            raise CampaignError(f"{txt}: the reference collection has no document {name}")
        ref = _read(txt)
        handed = (pre / f"{name}.txt").read_text(encoding="utf-8") if (pre / f"{name}.txt").is_file() else None
        if handed is not None and handed != ref.text:
            raise CampaignError(f"{txt}:1: the reference text differs from the text handed out ({pre / name}.txt)")
        references[name] = without_markers(ref)  # a finished collection as reference: its marks are not copied
    confs: dict[str, AnnotationConf] = {}
    report = SimulationReport(phase=1)
    planned: list[tuple[Path, str, BratDocument, list[str]]] = []
    for person, name in work:
        collection = root / PHASE1_DIR / person
        if person not in confs:
            confs[person] = _load_conf(collection / "annotation.conf")
        conf = confs[person]
        ref = references[name]
        if not ref.relations:
            ref = with_relations(ref, proposed_relations(ref, conf))
        txt = collection / f"{name}.txt"
        current = _read(txt)
        if is_finished(current):
            report.counts["skipped_finished"] += 1
            continue
        handed_out = pre / f"{name}.txt"
        if handed_out.is_file() and canonical(_read(handed_out)) != canonical(current):
            report.counts["skipped_started"] += 1
            continue
        ann = txt.with_suffix(".ann")
        doc, edits = annotate_phase1(replace(ref, path=str(ann)), conf, document_rng(seed, 1, person, name), rates)
        check_valid(doc, conf, ann)
        if not references[name].relations:
            report.counts["relations_proposed"] += len(ref.relations)
        planned.append((txt, dumps(current), doc, edits))
    # everything computed and valid: now write, document by document, each under its lock
    for txt, before, doc, edits in planned:
        with document_lock(root, txt):
            if dumps(_read(txt)) != before:
                report.counts["skipped_changed_meanwhile"] += 1
                continue
            _write_ann(txt, doc)
        report.counts["documents_annotated"] += 1
        for edit in edits:
            report.counts[edit.split(":", 1)[0]] += 1
        report.edits[f"{txt.parent.name}/{txt.stem}"] = edits
    report.counts["disagreements_injected"] = sum(report.counts[k] for k in PHASE1_RATES if k != "discarded")
    return report


def check_valid(doc: BratDocument, conf: AnnotationConf, ann: Path) -> None:
    """Check that a document as it would be written validates.

    Args:
        doc: The document.
        conf: Its collection's ``annotation.conf``.
        ann: The ``.ann`` it would be written to, named in the message.

    Raises:
        CampaignError: If it does not parse back or validate, naming ``ann`` and the line.
    """
    text = dumps(doc)
    parsed, issues = parse_ann(doc.name, doc.text, text, str(ann))
    problems = [str(i) for i in issues] + [str(p) for p in validate_document(parsed, text, conf, str(ann))]
    if problems:
        raise CampaignError(f"{problems[0]} (the simulated annotation would not validate; nothing written)")


def simulate_phase2(campaign_dir: Path, seed: int, accept_rate: float = ACCEPT_RATE) -> SimulationReport:
    """Resolve the marks of every unfinished document of every senior's collection and sign it off.

    See the module docstring and [`sign_off`][pipeline.campaign.simulate.sign_off].  Each document is
    read, resolved and its ``.ann`` replaced atomically under the document's lock, one at a time.

    Args:
        campaign_dir: The campaign directory ``CAMPAIGN_DIR``.
        seed: The seed of every document's random source.
        accept_rate: The probability of accepting each mark.

    Returns:
        What was done.

    Raises:
        CampaignError: If the campaign cannot be read, has no senior collection yet, or a document does
            not parse (documents before it are already written).
    """
    root = Path(campaign_dir)
    read_campaign(root)
    seniors = sorted(p for p in (root / PHASE2_DIR).iterdir() if p.is_dir()) if (root / PHASE2_DIR).is_dir() else []
    if not seniors:
        raise CampaignError(f"{root / PHASE2_DIR}: no senior collection yet (run `pgx-corpus campaign review` first)")
    report = SimulationReport(phase=2)
    for collection in seniors:
        for txt in sorted(collection.glob("*.txt")):
            with document_lock(root, txt):
                current = _read(txt)
                if is_finished(current):
                    report.counts["skipped_finished"] += 1
                    continue
                doc, decisions = sign_off(current, document_rng(seed, 2, collection.name, txt.stem), accept_rate)
                _write_ann(txt, doc)
            report.counts["documents_signed_off"] += 1
            for d in decisions:
                report.counts["marks_" + d.split(":", 1)[0]] += 1
            report.edits[f"{collection.name}/{txt.stem}"] = decisions
    return report
