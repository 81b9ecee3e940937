"""Relation suggestions on a brat document's current entities (``pgx-corpus suggest-relations``).

The build proposes relations once, on its own entities; annotators then correct the entities, and half
of the final relations touch an entity the build never proposed.  A suggestion runs the same relation
step (the rules and the learned scorer the rule file names,
[`relate_documents`][pipeline.nlp.relations.documents.relate_documents]) on the entities as they are
now, and adds what it proposes to the document, leaving everything already there alone:

* only pairs of entities with **no relation in either direction** get one (a ``Disputed_x`` relation
  counts as a relation);
* the entities are the text-bounds whose type is a schema entity type; campaign marks (``Done``,
  ``Discard``, ``Reason``, ``Disagreement``) are never arguments, and a document holding a ``Done`` or
  ``Discard`` mark gets nothing;
* the type is the scorer's, or its nearest ancestor that ``allowed`` admits between the two entity types
  (the collection's ``annotation.conf``, or the schema when there is none); a pair no type fits gets none;
* new relations take the ids after the largest ``R`` id of the document, in the order of their
  arguments' offsets; a new relation with a modality gets a note (ids after the largest ``#`` id) that
  holds only the modality, in the project's grammar ([`format_note`][pipeline.brat.modality.format_note]).

The same document, rules and parser give the same result.  Nothing is read or written here: callers
(the command, and later ``campaign serve``) read and write the files.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from pipeline.brat.modality import format_note
from pipeline.brat.standoff import BratDocument, Note, Relation, TextBound
from pipeline.documents import Annotation, Document, Sentence
from pipeline.nlp.relations.documents import relate_documents
from pipeline.nlp.relations.rules import RelationRules
from pipeline.schema import Schema

FINISHED_MARKS: frozenset[str] = frozenset({"Done", "Discard"})
"""Entity types that mark a document as finished or discarded: such a document gets no suggestion
(``pipeline.campaign`` names them too; the nlp layer cannot import it, and a test keeps them equal)."""

#: a type admitted between two entity types: (relation type, Arg1 type, Arg2 type) -> allowed
Allowed = Callable[[str, str, str], bool]

_NUMBER = re.compile(r"^[A-Za-z#]*?(\d+)$")


@dataclass(frozen=True)
class Suggestion:
    """One relation added to a document.

    Attributes:
        relation: The ``R`` line added.
        modality: Its modality (a subset of ``pipeline.documents.MODALITIES``, canonical order).
        note: The ``#`` line holding the modality, or None when it has none.
    """

    relation: Relation
    modality: tuple[str, ...] = ()
    note: Note | None = None


def _largest(ids: Iterable[str], prefix: str) -> int:
    best = 0
    for ident in ids:
        if ident.startswith(prefix):
            m = _NUMBER.match(ident)
            if m is not None:
                best = max(best, int(m.group(1)))
    return best


def is_finished(doc: BratDocument) -> bool:
    """Tell whether a document holds a ``Done`` or ``Discard`` mark.

    Args:
        doc: A brat document.

    Returns:
        True when one of its text-bounds is a ``Done`` or ``Discard`` mark.
    """
    return any(t.type in FINISHED_MARKS for t in doc.textbounds)


def schema_allowed(schema: Schema) -> Allowed:
    """Admit the relation types the schema's argument constraints allow.

    Args:
        schema: The corpus schema.

    Returns:
        ``allowed(type, arg1_type, arg2_type)``: True when the schema's ``relation_arguments`` admit the
            two entity types for the relation type.
    """

    def allowed(type_: str, arg1: str, arg2: str) -> bool:
        if type_ not in schema.relation_parent:
            return False
        return arg1 in schema.allowed_arguments(type_, "Arg1") and arg2 in schema.allowed_arguments(type_, "Arg2")

    return allowed


def _fitting(type_: str, arg1: str, arg2: str, schema: Schema, allowed: Allowed) -> str | None:
    current: str | None = type_
    while current is not None:
        if allowed(current, arg1, arg2):
            return current
        current = schema.relation_parent.get(current)
    return None


def suggest_relations(doc: BratDocument, rules: RelationRules, schema: Schema, nlp: Any, allowed: Allowed,
                      counts: Counter[str] | None = None) -> tuple[BratDocument, list[Suggestion]]:
    """Add suggested relations to one brat document, on the entities it holds now.

    Args:
        doc: The document as it is (its relations and notes are kept as they are).
        rules: The relation rules, with the scorer the rule file names.
        schema: The corpus schema (entity types, relation hierarchy).
        nlp: The spaCy pipeline that parses the text (the build's).
        allowed: Which relation types may join two entity types (``annotation.conf``'s or the schema's).
        counts: Counter of ``suggested``, ``suggestions_dropped_type`` and ``suggestions_skipped_related``
            (updated when given).

    Returns:
        A new document (``doc`` itself when nothing is added) and the suggestions added, in id order.
    """
    counts = counts if counts is not None else Counter()
    if is_finished(doc):
        return doc, []
    entities: list[TextBound] = []
    annotations: list[Annotation] = []
    for t in doc.textbounds:
        frags = tuple(sorted((s, e) for s, e in t.fragments if e > s))
        if t.type not in schema.entity_parent or not frags or frags[-1][1] > len(doc.text):
            continue
        entities.append(t)
        annotations.append(Annotation(frags, t.type, "gold", None, " ".join(doc.text[s:e] for s, e in frags)))
    if len(entities) < 2:
        return doc, []
    from pipeline.nlp.extend import sentence_parse

    text = doc.text
    model = Document(doc.name, text, text, origin="brat", sentences=(Sentence(0, len(text)),),
                     annotations=tuple(annotations), parses=(sentence_parse(nlp(text), 0, len(text)),))
    related: set[frozenset[str]] = set()
    for r in doc.relations:
        a1, a2 = r.arg("Arg1"), r.arg("Arg2")
        if a1 is not None and a2 is not None:
            related.add(frozenset((a1, a2)))
    proposed = next(iter(relate_documents([model], rules, schema, Counter())))
    chosen: list[tuple[TextBound, TextBound, str, tuple[str, ...]]] = []
    for rel in proposed.relations:
        first, second = entities[rel.arg1], entities[rel.arg2]
        pair = frozenset((first.id, second.id))
        if first.id == second.id or pair in related:
            counts["suggestions_skipped_related"] += 1
            continue
        type_ = _fitting(rel.type, first.type, second.type, schema, allowed)
        if type_ is None:
            counts["suggestions_dropped_type"] += 1
            continue
        related.add(pair)
        chosen.append((first, second, type_, tuple(rel.modality)))
    if not chosen:
        return doc, []
    chosen.sort(key=lambda c: (c[0].sorted_fragments, c[1].sorted_fragments, c[2]))
    next_r = _largest((r.id for r in doc.relations), "R")
    next_note = _largest((n.id for n in doc.notes), "#")
    added: list[Suggestion] = []
    for first, second, type_, modality in chosen:
        next_r += 1
        relation = Relation(f"R{next_r}", type_, (("Arg1", first.id), ("Arg2", second.id)))
        note = None
        if modality:
            next_note += 1
            note = Note(f"#{next_note}", "AnnotatorNotes", relation.id, format_note(modality))
        added.append(Suggestion(relation, modality, note))
    counts["suggested"] += len(added)
    out = replace(doc, relations=[*doc.relations, *(s.relation for s in added)],
                  notes=[*doc.notes, *(s.note for s in added if s.note is not None)])
    return out, added


__all__ = ["FINISHED_MARKS", "Allowed", "Suggestion", "is_finished", "schema_allowed", "suggest_relations"]
