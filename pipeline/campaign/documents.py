"""Reading the people's documents back, and comparing annotations without looking at ids.

* [`read_checked`][pipeline.campaign.documents.read_checked]: an annotator's ``NAME.txt``/``NAME.ann`` parsed and
  validated against the collection's ``annotation.conf``, its text compared with the text handed out.  Any problem
  (``file:line: message``) holds the document back: it is reported and left as it is, never lost.
* Campaign markers: a document is *finished* when it holds a ``Done`` entity or a ``Discard`` entity
  (both annotated on any span, see [`pipeline.brat.conf`][pipeline.brat.conf]); *discarded* when it holds a ``Discard``
  entity, its reason the value of the ``Reason`` attribute (``unspecified`` when none is set).
* Keys: an entity is keyed by its sorted fragments, its type and its attributes (type, value) but the
  campaign's ``Disagreement`` mark and the display-only ``Composite`` attribute; a relation by its type, its
  arguments' entity keys (by role) and its modality.  Two annotations with the same key are the same
  annotation, whatever their ids.
* Modality ([`relation_note`][pipeline.campaign.documents.relation_note]): a relation's modality and free note are read
  from its ``AnnotatorNotes`` with the project's grammar ([`pipeline.brat.modality`][pipeline.brat.modality]: ``hyp``,
  ``neg``, ``|`` before free text); older campaigns stored modality as ``Negated``/``Hypothetical`` attributes on the
  relation, which are read as modality too (never written).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline.brat.conf import BratSettings
from pipeline.brat.modality import MODALITIES, RelationNote, join_notes, modality_label
from pipeline.brat.standoff import BratDocument, BratTextError, parse_ann, read_text
from pipeline.brat.validate import AnnotationConf, parse_annotation_conf, validate_document
from pipeline.campaign.conf import CAMPAIGN_DONE_TYPE
from pipeline.campaign.layout import DISAGREEMENT, DISCARD_REASON, DISCARD_TYPE
from pipeline.documents import Span

MARKER_TYPES = (DISCARD_TYPE, CAMPAIGN_DONE_TYPE)
UNSPECIFIED_REASON = "unspecified"

EntityKey = tuple[tuple[Span, ...], str, tuple[tuple[str, str], ...]]
RelationKey = tuple[str, tuple[tuple[str, EntityKey], ...], str]
COMPOSITE_ATTRIBUTE = BratSettings().composite_attribute
"""The pre-annotation's display-only attribute of composite entities: not part of what an entity is."""
UNKEYED_ATTRIBUTES = (DISAGREEMENT, COMPOSITE_ATTRIBUTE)
"""Attributes that never make two entities different (``Disagreement`` and ``Composite``)."""


@dataclass
class Checked:
    """One person's version of a document, as [`read_checked`][pipeline.campaign.documents.read_checked] read it.

    Attributes:
        doc: The parsed document, or ``None`` when it is held back (any problem, or missing).
        problems: Why it is held back, each ``file:line: message`` (line 0 for the whole file); empty
            when ``doc`` is set.
        missing: True when the ``.txt`` is not in the collection at all.
    """

    doc: BratDocument | None
    problems: list[str] = field(default_factory=list)
    missing: bool = False


def load_conf(path: Path) -> AnnotationConf:
    """Read a collection's ``annotation.conf``.

    Args:
        path: The ``annotation.conf`` file.

    Returns:
        The parsed configuration; what the parser reports about the file itself is ignored here.

    Raises:
        OSError: If the file cannot be read.
    """
    conf, _ = parse_annotation_conf(path.read_text(encoding="utf-8"), str(path))
    return conf


def _first_difference(a: str, b: str) -> int:
    """1-based line of the first difference between two texts."""
    for i, (x, y) in enumerate(zip(a.split("\n"), b.split("\n"), strict=False), 1):
        if x != y:
            return i
    return min(a.count("\n"), b.count("\n")) + 1


def read_checked(txt: Path, original_text: str | None, conf: AnnotationConf) -> Checked:
    """Read, parse and validate one person's document (see the module docstring).

    Never raises for a bad document: every problem holds it back and is returned.

    Args:
        txt: The person's ``NAME.txt``; ``NAME.ann`` is read beside it.
        original_text: The text handed out, compared with the ``.txt``; ``None`` skips the comparison.
        conf: The collection's ``annotation.conf`` the annotations are validated against.

    Returns:
        The document when it passes, else ``doc=None`` and the problems (``file:line: message``: a
        missing ``.txt`` or ``.ann``, an unreadable or badly encoded file, a text that differs from the
        one handed out, a parse or validation error).
    """
    ann = txt.with_suffix(".ann")
    if not txt.is_file():
        return Checked(None, [f"{txt}:0: document missing from the collection"], missing=True)
    if not ann.is_file():
        # every document is handed out with its .ann: one gone was deleted (brat would show the text
        # without a single annotation, and an empty one would pass for "nothing to annotate")
        return Checked(None, [f"{ann}:0: annotation file missing (deleted?); restore it (campaign history), or "
                              "write an empty one to start the document again"])
    try:
        text = read_text(txt)
        ann_text = read_text(ann)
    except BratTextError as exc:  # names the file (.txt or .ann) and line
        return Checked(None, [str(exc)])
    except OSError as exc:
        return Checked(None, [f"{exc.filename or txt}:0: cannot read: {exc}"])
    problems: list[str] = []
    if original_text is not None and text != original_text:
        line = _first_difference(original_text, text)
        problems.append(f"{txt}:{line}: text differs from the text handed out (first difference on this line)")
    doc, issues = parse_ann(txt.stem, text, ann_text, str(ann))
    problems += [str(i) for i in issues]
    problems += [str(p) for p in sorted(validate_document(doc, ann_text, conf, str(ann)))]
    return Checked(None if problems else doc, problems)


# --- markers -----------------------------------------------------------------------------------

def discard_reasons(doc: BratDocument) -> list[str]:
    """List the reasons of the ``Discard`` entities of a document.

    Args:
        doc: The document.

    Returns:
        One reason per ``Discard`` entity, in file order: the value of its ``Reason`` attribute, or
        ``unspecified`` when it has none; empty when the document is not discarded.
    """
    out = []
    for t in doc.textbounds:
        if t.type == DISCARD_TYPE:
            values = [a.value for a in doc.attributes if a.target == t.id and a.type == DISCARD_REASON]
            out.append(values[0] if values and values[0] else UNSPECIFIED_REASON)
    return out


def is_done(doc: BratDocument) -> bool:
    """Tell whether a document holds a ``Done`` marker entity.

    Args:
        doc: The document.

    Returns:
        True when any entity of the document has the ``Done`` type.
    """
    return any(t.type == CAMPAIGN_DONE_TYPE for t in doc.textbounds)


def is_finished(doc: BratDocument) -> bool:
    """Tell whether the annotator says the document needs nothing more: marked ``Done`` or discarded.

    Args:
        doc: The document.

    Returns:
        True when the document holds a ``Done`` or a ``Discard`` entity.
    """
    return is_done(doc) or bool(discard_reasons(doc))


def without_markers(doc: BratDocument) -> BratDocument:
    """Copy a document without the campaign markers and what is attached to them.

    Removes the ``Done`` and ``Discard`` entities, the relations with one of them as an argument, and
    their attributes, normalizations, notes and equivalences.  Events are kept as they are.

    Args:
        doc: The document; left unchanged.

    Returns:
        A new document with the same name, text and path.
    """
    gone = {t.id for t in doc.textbounds if t.type in MARKER_TYPES}
    out = BratDocument(name=doc.name, text=doc.text, path=doc.path)
    out.textbounds = [t for t in doc.textbounds if t.id not in gone]
    out.relations = [r for r in doc.relations if not any(ref in gone for _, ref in r.args)]
    out.events = list(doc.events)
    out.attributes = [a for a in doc.attributes if a.target not in gone]
    out.normalizations = [n for n in doc.normalizations if n.target not in gone]
    out.notes = [q for q in doc.notes if q.target not in gone]
    out.equivs = [q for q in doc.equivs if not any(i in gone for i in q.ids)]
    return out


# --- keys --------------------------------------------------------------------------------------

def attribute_key(
    doc: BratDocument, target: str, skip: Iterable[str] = UNKEYED_ATTRIBUTES
) -> tuple[tuple[str, str], ...]:
    """Key the attributes of one annotation.

    Args:
        doc: The document.
        target: The id of the annotation (``T3``, ``R1``).
        skip: Attribute types left out; by default
            [`UNKEYED_ATTRIBUTES`][pipeline.campaign.documents.UNKEYED_ATTRIBUTES].

    Returns:
        The (type, value) pairs of the attributes of ``target``, sorted; a binary attribute's value is ``""``.
    """
    skipped = set(skip)
    found = ((a.type, a.value or "") for a in doc.attributes if a.target == target and a.type not in skipped)
    return tuple(sorted(found))


def relation_note(doc: BratDocument, relation_id: str) -> RelationNote:
    """Read the modality and free note of a relation.

    Its ``AnnotatorNotes`` are read with the project's grammar (several folded into one), plus legacy
    ``Negated``/``Hypothetical`` attributes on the relation.

    Args:
        doc: The document.
        relation_id: The relation's id (``R1``).

    Returns:
        The relation's modality, free text and note tokens.
    """
    note = join_notes(doc.notes_for(relation_id))
    legacy = {a.type for a in doc.attributes if a.target == relation_id and a.type in MODALITIES}
    if legacy - note.modality:
        return RelationNote(note.modality | legacy, note.free, note.tokens)
    return note


def relation_modality(doc: BratDocument, relation_id: str) -> str:
    """Give the modality label of a relation.

    Args:
        doc: The document.
        relation_id: The relation's id (``R1``).

    Returns:
        ``none``, or the modality label (``Negated``, ``Hypothetical+Negated``).
    """
    return modality_label(relation_note(doc, relation_id).modality)


def entity_keys(doc: BratDocument) -> dict[str, EntityKey]:
    """Key the entities of a document.

    Markers are included; use [`without_markers`][pipeline.campaign.documents.without_markers] first to
    leave them out.

    Args:
        doc: The document.

    Returns:
        Entity id -> key: (sorted fragments, type, [`attribute_key`][pipeline.campaign.documents.attribute_key]);
        fragments are half-open character offsets into the ``.txt``.
    """
    return {t.id: (t.sorted_fragments, t.type, attribute_key(doc, t.id)) for t in doc.textbounds}


def relation_keys(doc: BratDocument, entities: dict[str, EntityKey] | None = None) -> dict[str, RelationKey]:
    """Key the relations of a document.

    A relation whose argument is not an entity (an event, a missing id) is left out.

    Args:
        doc: The document.
        entities: The document's entity keys, if already computed; by default
            [`entity_keys`][pipeline.campaign.documents.entity_keys] of ``doc``.

    Returns:
        Relation id -> key: (type, argument entity keys sorted by role, modality label).
    """
    entities = entities if entities is not None else entity_keys(doc)
    out: dict[str, RelationKey] = {}
    for r in doc.relations:
        if all(ref in entities for _, ref in r.args):
            args = tuple(sorted((role, entities[ref]) for role, ref in r.args))
            out[r.id] = (r.type, args, relation_modality(doc, r.id))
    return out


def canonical(doc: BratDocument) -> tuple[list[Any], list[Any], list[tuple[str, ...]]]:
    """Describe everything annotated in a document, ids left out.

    Equal for two documents that say the same.  Unlike the keys, every attribute counts here (a
    ``Disagreement`` mark removed, a ``Composite`` cleared, a note edited is a change), so
    [`pipeline.campaign.status`][pipeline.campaign.status] sees any edit.

    Args:
        doc: The document.

    Returns:
        The sorted entities (fragments, type, attributes), the sorted relations (type, arguments,
        attributes), and the notes and normalizations keyed by what they annotate.
    """
    ents = {t.id: (t.sorted_fragments, t.type, attribute_key(doc, t.id, skip=())) for t in doc.textbounds}
    rels = []
    keys: dict[str, Any] = dict(ents)
    for r in doc.relations:
        args = tuple(sorted((role, repr(ents.get(ref, ref))) for role, ref in r.args))
        rels.append((r.type, args, attribute_key(doc, r.id, skip=())))
        keys[r.id] = (r.type, args)
    notes: list[tuple[str, ...]] = sorted((q.type, repr(keys.get(q.target, q.target)), q.text) for q in doc.notes)
    notes += sorted((n.type, repr(keys.get(n.target, n.target)), n.db, n.db_id) for n in doc.normalizations)
    return sorted(ents.values()), sorted(rels), notes


def entity_changes(base: BratDocument, edited: BratDocument) -> Counter[str]:
    """Count the entities of an edited document against a base version (markers left out).

    Kept: same fragments and type; retyped: same fragments, another type (paired one to one); an
    entity whose span changed counts as deleted (the old span) and added (the new one).  Attributes do
    not enter this comparison.

    Args:
        base: The version handed out (or an earlier one).
        edited: The person's version.

    Returns:
        Counts under ``entities_kept``, ``entities_retyped``, ``entities_deleted`` and ``entities_added``.
    """
    def spans(doc: BratDocument) -> Counter[tuple[tuple[Span, ...], str]]:
        return Counter((t.sorted_fragments, t.type) for t in without_markers(doc).textbounds)

    b, e = spans(base), spans(edited)
    kept = b & e
    b_left, e_left = b - kept, e - kept
    by_span_b: Counter[tuple[Span, ...]] = Counter()
    by_span_e: Counter[tuple[Span, ...]] = Counter()
    for (frags, _), n in b_left.items():
        by_span_b[frags] += n
    for (frags, _), n in e_left.items():
        by_span_e[frags] += n
    retyped = sum((by_span_b & by_span_e).values())
    out: Counter[str] = Counter()
    out["entities_kept"] = sum(kept.values())
    out["entities_retyped"] = retyped
    out["entities_deleted"] = sum(b_left.values()) - retyped
    out["entities_added"] = sum(e_left.values()) - retyped
    return out


def relation_changes(base: BratDocument, edited: BratDocument) -> Counter[str]:
    """Count the relations (with their modality) of an edited document against a base version.

    Relations are compared by key ([`relation_keys`][pipeline.campaign.documents.relation_keys]), markers
    left out.

    Args:
        base: The version handed out (or an earlier one).
        edited: The person's version.

    Returns:
        Counts under ``relations_kept``, ``relations_added`` and ``relations_deleted``.
    """
    b = Counter(relation_keys(without_markers(base)).values())
    e = Counter(relation_keys(without_markers(edited)).values())
    out: Counter[str] = Counter()
    out["relations_kept"] = sum((b & e).values())
    out["relations_added"] = sum((e - b).values())
    out["relations_deleted"] = sum((b - e).values())
    return out
