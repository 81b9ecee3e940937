"""Reading the people's documents back, and comparing annotations without looking at ids.

* :func:`read_checked`: an annotator's ``NAME.txt``/``NAME.ann`` parsed and validated against the
  collection's ``annotation.conf``, its text compared with the text handed out.  Any problem
  (``file:line: message``) holds the document back: it is reported and left as it is, never lost.
* Campaign markers: a document is *finished* when it holds a ``Done`` entity or a ``Discard`` entity
  (both annotated on any span, see :mod:`pipeline.brat.conf`); *discarded* when it holds a ``Discard``
  entity, its reason the value of the ``Reason`` attribute (``unspecified`` when none is set).
* Keys: an entity is keyed by its sorted fragments, its type and its attributes (type, value); a
  relation by its type, its arguments' entity keys (by role) and its attributes (the modality).  Two
  annotations with the same key are the same annotation, whatever their ids.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.brat.conf import CAMPAIGN_DONE_TYPE
from pipeline.brat.standoff import BratDocument, parse_ann
from pipeline.brat.validate import AnnotationConf, parse_annotation_conf, validate_document
from pipeline.campaign.layout import DISAGREEMENT, DISCARD_REASON, DISCARD_TYPE
from pipeline.documents import Span

MARKER_TYPES = (DISCARD_TYPE, CAMPAIGN_DONE_TYPE)
UNSPECIFIED_REASON = "unspecified"

EntityKey = tuple[tuple[Span, ...], str, tuple[tuple[str, str], ...]]
RelationKey = tuple[str, tuple[tuple[str, EntityKey], ...], tuple[tuple[str, str], ...]]


@dataclass
class Checked:
    """One person's version of a document: the document, or None when held back, and the problems."""

    doc: BratDocument | None
    problems: list[str] = field(default_factory=list)
    missing: bool = False


def load_conf(path: Path) -> AnnotationConf:
    conf, _ = parse_annotation_conf(path.read_text(encoding="utf-8"), str(path))
    return conf


def _first_difference(a: str, b: str) -> int:
    """1-based line of the first difference between two texts."""
    for i, (x, y) in enumerate(zip(a.split("\n"), b.split("\n"), strict=False), 1):
        if x != y:
            return i
    return min(a.count("\n"), b.count("\n")) + 1


def read_checked(txt: Path, original_text: str | None, conf: AnnotationConf) -> Checked:
    """Read, parse and validate one person's document (see the module docstring)."""
    ann = txt.with_suffix(".ann")
    if not txt.is_file():
        return Checked(None, [f"{txt}:0: document missing from the collection"], missing=True)
    try:
        text = txt.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Checked(None, [f"{txt}:0: cannot read: {exc}"])
    try:
        ann_text = ann.read_text(encoding="utf-8") if ann.is_file() else ""
    except UnicodeDecodeError as exc:
        # reported against the .ann, on the line holding the bad bytes
        raw = ann.read_bytes()
        line = raw[: exc.start].count(b"\n") + 1
        return Checked(None, [f"{ann}:{line}: not UTF-8 ({exc.reason} at byte {exc.start})"])
    except OSError as exc:
        return Checked(None, [f"{ann}:0: cannot read: {exc}"])
    problems: list[str] = []
    if not ann.exists():
        # brat never deletes an .ann: someone did; read as empty it would silently drop their work
        problems.append(f"{ann}:0: annotation file missing (deleted?); restore it (campaign history), or write "
                        "an empty one to start the document again")
    if original_text is not None and text != original_text:
        line = _first_difference(original_text, text)
        problems.append(f"{txt}:{line}: text differs from the text handed out (first difference on this line)")
    doc, issues = parse_ann(txt.stem, text, ann_text, str(ann))
    problems += [str(i) for i in issues]
    problems += [str(p) for p in sorted(validate_document(doc, ann_text, conf, str(ann)))]
    return Checked(None if problems else doc, problems)


# --- markers -----------------------------------------------------------------------------------

def discard_reasons(doc: BratDocument) -> list[str]:
    """Reasons of the ``Discard`` entities of ``doc`` (``unspecified`` for one without a reason)."""
    out = []
    for t in doc.textbounds:
        if t.type == DISCARD_TYPE:
            values = [a.value for a in doc.attributes if a.target == t.id and a.type == DISCARD_REASON]
            out.append(values[0] if values and values[0] else UNSPECIFIED_REASON)
    return out


def is_done(doc: BratDocument) -> bool:
    return any(t.type == CAMPAIGN_DONE_TYPE for t in doc.textbounds)


def is_finished(doc: BratDocument) -> bool:
    """Marked ``Done`` or discarded: the annotator says the document needs nothing more."""
    return is_done(doc) or bool(discard_reasons(doc))


def without_markers(doc: BratDocument) -> BratDocument:
    """A copy of ``doc`` without the campaign markers and what is attached to them."""
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
    doc: BratDocument, target: str, skip: Iterable[str] = (DISAGREEMENT,)
) -> tuple[tuple[str, str], ...]:
    """(type, value) of the attributes of ``target`` (``Disagreement`` left out), sorted."""
    skipped = set(skip)
    found = ((a.type, a.value or "") for a in doc.attributes if a.target == target and a.type not in skipped)
    return tuple(sorted(found))


def entity_keys(doc: BratDocument) -> dict[str, EntityKey]:
    """Entity id -> key (markers included; use :func:`without_markers` first to leave them out)."""
    return {t.id: (t.sorted_fragments, t.type, attribute_key(doc, t.id)) for t in doc.textbounds}


def relation_keys(doc: BratDocument, entities: dict[str, EntityKey] | None = None) -> dict[str, RelationKey]:
    """Relation id -> key; a relation whose argument is not an entity is left out."""
    entities = entities if entities is not None else entity_keys(doc)
    out: dict[str, RelationKey] = {}
    for r in doc.relations:
        if all(ref in entities for _, ref in r.args):
            args = tuple(sorted((role, entities[ref]) for role, ref in r.args))
            out[r.id] = (r.type, args, attribute_key(doc, r.id))
    return out


def canonical(doc: BratDocument) -> tuple[list[EntityKey], list[RelationKey], list[tuple[str, ...]]]:
    """Everything annotated in ``doc``, ids left out (equal for documents that say the same)."""
    ents = entity_keys(doc)
    notes: list[tuple[str, ...]] = sorted((q.type, repr(ents.get(q.target, q.target)), q.text) for q in doc.notes)
    notes += sorted((n.type, repr(ents.get(n.target, n.target)), n.db, n.db_id) for n in doc.normalizations)
    return sorted(ents.values()), sorted(relation_keys(doc, ents).values()), notes


def entity_changes(base: BratDocument, edited: BratDocument) -> Counter[str]:
    """Entities of ``edited`` against ``base`` (markers left out): kept, retyped, deleted, added.

    kept: same fragments and type; retyped: same fragments, another type (paired one to one); an
    entity whose span changed counts as deleted (the old span) and added (the new one).  Attributes do
    not enter this comparison.
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
    """Relations (with their modality) of ``edited`` against ``base``: kept, added, deleted."""
    b = Counter(relation_keys(without_markers(base)).values())
    e = Counter(relation_keys(without_markers(edited)).values())
    out: Counter[str] = Counter()
    out["relations_kept"] = sum((b & e).values())
    out["relations_added"] = sum((e - b).values())
    out["relations_deleted"] = sum((b - e).values())
    return out
