"""The edit model: how many brat edits turn what a person was given into the final annotation.

A corpus team judges pre-annotation by the annotators' work it takes away.  This module counts that work
for one sentence (one brat document), as the edits a person makes in brat's client, with the rules below.
``Done``, ``Discard`` and ``Reason`` entities (the campaign's marks) are not counted, and a ``Disputed_``
prefix on a type is ignored (``Disputed_influences`` is ``influences``).

**Entities** are matched one to one, greedily, in three passes; each pass takes the proposals in id order
(``T2`` before ``T10``) and gives each the first unmatched final entity, in id order, that fits:

1. same fragments and type: kept, 0 edits;
2. same fragments, other type: retype, 1;
3. an overlap of at least one character, a final entity of the same type preferred: move, 1, plus 1 more
   if the type differs.

Then a proposal left unmatched is a delete, 1; a final entity left unmatched is an add, 1 per fragment,
even where an overlapping proposal matched another entity.

**Relations** have their arguments mapped through the entity matching.  A proposal whose two arguments
are both matched is paired with a final relation between the same two entities in the same direction,
one to one, a relation of the same type preferred (proposals in id order, final relations in id order):

* same type: kept, 0; other type: retype, 1;
* no final relation left in that direction: delete, 1 (a reversed relation costs 2: delete plus add);
* a proposal with an unmatched argument costs nothing: deleting the entity deletes its relations;
* a final relation that no proposal matched: add, 1.

**Modality**, per final relation: +1 when it and the proposal paired with it differ in modality (the
leading modality tokens of their notes, read with [`pipeline.brat.modality`][pipeline.brat.modality]),
and +1 for an unmatched final relation that has a modality.

Relations with an argument that is not a counted entity (a mark, or an id the document lacks) are not
counted; events, attributes, normalizations and equivalences are not part of the model.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields

from pipeline.brat.matching import spans_overlap
from pipeline.brat.modality import join_notes
from pipeline.brat.standoff import BratDocument, Relation, TextBound

UNCOUNTED_TYPES: frozenset[str] = frozenset({"Done", "Discard", "Reason"})
"""Entity types the model does not count: the campaign's marks (``pipeline.campaign.layout`` names them
too; the brat layer cannot import it, and a test keeps the two equal)."""

DISPUTED_PREFIX = "Disputed_"
"""The prefix the campaign puts on a disputed type; the model ignores it."""

_ID_NUMBER = re.compile(r"^(\D*)(\d+)$")


@dataclass(frozen=True)
class Edits:
    """Edit counts of one sentence, or of several summed with ``+``.

    Attributes:
        entity_keep: Proposals kept as they are (0 edits each).
        entity_retype: Proposals with the same fragments and another type (1 edit each).
        entity_move: Proposals matched to an overlapping final entity with other fragments (1 edit each).
        entity_move_retype: Those moves whose type differs too (1 more edit each).
        entity_delete: Proposals left unmatched (1 edit each).
        entity_add: Fragments of the final entities left unmatched (1 edit each).
        relation_keep: Proposals paired with a final relation of the same type (0 edits each).
        relation_retype: Proposals paired with a final relation of another type (1 edit each).
        relation_delete: Proposals between matched entities with no final relation left in their
            direction (1 edit each).
        relation_add: Final relations that no proposal was paired with (1 edit each).
        modality: Modality edits: paired relations whose modality differs, and added relations with a
            modality (1 edit each).
    """

    entity_keep: int = 0
    entity_retype: int = 0
    entity_move: int = 0
    entity_move_retype: int = 0
    entity_delete: int = 0
    entity_add: int = 0
    relation_keep: int = 0
    relation_retype: int = 0
    relation_delete: int = 0
    relation_add: int = 0
    modality: int = 0

    @property
    def entity_edits(self) -> int:
        """The edits on entities: retypes, moves (and their retypes), deletes and added fragments."""
        return self.entity_retype + self.entity_move + self.entity_move_retype + self.entity_delete + self.entity_add

    @property
    def relation_edits(self) -> int:
        """The edits on relations: retypes, deletes, adds and modality edits."""
        return self.relation_retype + self.relation_delete + self.relation_add + self.modality

    @property
    def total(self) -> int:
        """All edits: those on entities plus those on relations."""
        return self.entity_edits + self.relation_edits

    def __add__(self, other: Edits) -> Edits:
        """Sum two counts field by field."""
        if not isinstance(other, Edits):
            return NotImplemented
        return Edits(**{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)})

    def as_dict(self) -> dict[str, int]:
        """List the counts.

        Returns:
            Every count by field name, then ``entity_edits``, ``relation_edits`` and ``total``.
        """
        counts = {f.name: getattr(self, f.name) for f in fields(self)}
        counts.update(entity_edits=self.entity_edits, relation_edits=self.relation_edits, total=self.total)
        return counts


def base_type(type_: str) -> str:
    """Strip the ``Disputed_`` prefix.

    Args:
        type_: An entity or relation type.

    Returns:
        The type without the prefix (the type itself when it has none).
    """
    return type_[len(DISPUTED_PREFIX):] if type_.startswith(DISPUTED_PREFIX) else type_


def id_order(ident: str) -> tuple[str, int, str]:
    """Give the sort key of a brat id.

    Args:
        ident: A brat id (``T2``).

    Returns:
        A key ordering ids by prefix, then number (``T2`` before ``T10``), then as written.
    """
    m = _ID_NUMBER.match(ident)
    if m is None:
        return (ident, -1, ident)
    return (m.group(1), int(m.group(2)), ident)


def _entities(doc: BratDocument) -> list[TextBound]:
    return sorted((t for t in doc.textbounds if base_type(t.type) not in UNCOUNTED_TYPES), key=lambda t: id_order(t.id))


def match_entities(proposed: Sequence[TextBound], final: Sequence[TextBound]) -> dict[str, str]:
    """Match proposed to final entities one to one with the model's three greedy passes.

    Args:
        proposed: The proposed entities (any order; taken in id order).
        final: The final entities of the same text (any order; taken in id order).

    Returns:
        ``{proposal id: final entity id}`` for the matched proposals.
    """
    props = sorted(proposed, key=lambda t: id_order(t.id))
    finals = sorted(final, key=lambda t: id_order(t.id))
    matched: dict[str, str] = {}
    used: set[str] = set()

    def frags(t: TextBound) -> frozenset[tuple[int, int]]:
        return frozenset(t.fragments)

    def assign(p: TextBound, candidates: Iterable[TextBound]) -> None:
        for f in candidates:
            if f.id not in used:
                matched[p.id] = f.id
                used.add(f.id)
                return

    for p in props:  # 1. same fragments, same type
        assign(p, (f for f in finals if frags(f) == frags(p) and base_type(f.type) == base_type(p.type)))
    for p in props:  # 2. same fragments, other type
        if p.id not in matched:
            assign(p, (f for f in finals if frags(f) == frags(p)))
    for p in props:  # 3. overlap, the same type first
        if p.id not in matched:
            overlapping = [f for f in finals if f.id not in used and spans_overlap(p.fragments, f.fragments)]
            same = [f for f in overlapping if base_type(f.type) == base_type(p.type)]
            assign(p, same + [f for f in overlapping if f not in same])
    return matched


def _modality(doc: BratDocument, rid: str) -> frozenset[str]:
    return join_notes(doc.notes_for(rid)).modality


def _relation_ends(r: Relation) -> tuple[str, str] | None:
    a1, a2 = r.arg("Arg1"), r.arg("Arg2")
    return None if a1 is None or a2 is None else (a1, a2)


def sentence_edits(proposed: BratDocument, final: BratDocument) -> Edits:
    """Count the edits that turn the proposed annotation of one sentence into the final one.

    Args:
        proposed: What the person was given: its entities, relations and relation notes are read.
        final: The final annotation of the same text.

    Returns:
        The edit counts of the model (see the module's documentation).
    """
    props, finals = _entities(proposed), _entities(final)
    matching = match_entities(props, finals)
    final_by_id = {f.id: f for f in finals}
    counts: Counter[str] = Counter()
    for p in props:
        fid = matching.get(p.id)
        if fid is None:
            counts["entity_delete"] += 1
            continue
        f = final_by_id[fid]
        same_type = base_type(f.type) == base_type(p.type)
        if frozenset(f.fragments) == frozenset(p.fragments):
            counts["entity_keep" if same_type else "entity_retype"] += 1
        else:
            counts["entity_move"] += 1
            if not same_type:
                counts["entity_move_retype"] += 1
    used_finals = set(matching.values())
    for f in finals:
        if f.id not in used_finals:
            counts["entity_add"] += len(f.fragments)

    _count_relations(proposed, final, matching, {p.id for p in props}, set(final_by_id), counts)
    return Edits(**counts)


def _count_relations(proposed: BratDocument, final: BratDocument, matching: Mapping[str, str],
                     proposed_ids: set[str], final_ids: set[str], counts: Counter[str]) -> None:
    prop_rels = sorted(proposed.relations, key=lambda r: id_order(r.id))
    final_rels = [r for r in sorted(final.relations, key=lambda r: id_order(r.id))
                  if (ends := _relation_ends(r)) is not None and ends[0] in final_ids and ends[1] in final_ids]
    # proposals whose two arguments are matched, with the ends they map to
    mapped: list[tuple[Relation, tuple[str, str]]] = []
    for r in prop_rels:
        ends = _relation_ends(r)
        if ends is None or ends[0] not in proposed_ids or ends[1] not in proposed_ids:
            continue
        m1, m2 = matching.get(ends[0]), matching.get(ends[1])
        if m1 is not None and m2 is not None:
            mapped.append((r, (m1, m2)))
    paired: dict[str, Relation] = {}  # final relation id -> the proposal paired with it
    done: set[str] = set()  # proposals paired
    for same_type in (True, False):
        for r, ends in mapped:
            if r.id in done:
                continue
            for f in final_rels:
                if f.id in paired or _relation_ends(f) != ends:
                    continue
                if same_type and base_type(f.type) != base_type(r.type):
                    continue
                paired[f.id] = r
                done.add(r.id)
                counts["relation_keep" if base_type(f.type) == base_type(r.type) else "relation_retype"] += 1
                break
    counts["relation_delete"] += sum(r.id not in done for r, _ends in mapped)
    for f in final_rels:
        p = paired.get(f.id)
        if p is None:
            counts["relation_add"] += 1
            if _modality(final, f.id):
                counts["modality"] += 1
        elif _modality(final, f.id) != _modality(proposed, p.id):
            counts["modality"] += 1


def collection_edits(pairs: Iterable[tuple[BratDocument, BratDocument]]) -> Edits:
    """Sum the edits of several sentences.

    Args:
        pairs: ``(proposed, final)`` documents, one pair per sentence.

    Returns:
        The sum of their [`sentence_edits`][pipeline.brat.edits.sentence_edits].
    """
    total = Edits()
    for proposed, final in pairs:
        total = total + sentence_edits(proposed, final)
    return total


def without_relations(doc: BratDocument) -> BratDocument:
    """Return a copy of a document with its relations and their notes removed (entities kept).

    Args:
        doc: A brat document.

    Returns:
        A new document: the same text, text-bounds, events, attributes, normalizations and equivalences,
            no relation, and only the notes that are not attached to a relation.
    """
    rel_ids = {r.id for r in doc.relations}
    return BratDocument(name=doc.name, text=doc.text, textbounds=list(doc.textbounds), relations=[],
                        events=list(doc.events), attributes=list(doc.attributes),
                        normalizations=list(doc.normalizations),
                        notes=[n for n in doc.notes if n.target not in rel_ids], equivs=list(doc.equivs), path=doc.path)


__all__ = ["DISPUTED_PREFIX", "UNCOUNTED_TYPES", "Edits", "base_type", "collection_edits", "id_order",
           "match_entities", "sentence_edits", "without_relations"]
