"""Merging two (or more) annotators' versions of one document for the phase-2 senior.

Input: ``(annotator, document)`` pairs of the same text, campaign markers already removed.  Output:
one brat document where

* an annotation every version has (same key, see :mod:`pipeline.campaign.documents`: entities by
  fragments, type and attributes; relations by type, argument entities by role, and modality) appears
  once, unmarked;
* any other annotation appears once per annotator who made it, with the ``Disagreement`` attribute
  whose value is that annotator (an entity two annotators typed differently therefore appears twice,
  once per type, each marked).

Duplicates are matched as multisets: if one annotator has two identical entities and the other one,
one is agreed and one is marked.  Annotator notes and normalizations follow their annotation (those of
an agreed annotation are the union of both, without repeats).  Ids are renumbered ``T1``, ``R1``,
``A1``, ``N1``, ``#1`` in the order of the text; the result does not depend on the input ids.

So removing every ``Disagreement`` attribute gives the union of the versions, and deleting the marks
of one annotator (with the relations that lose an argument) and unmarking the rest gives back the
other annotator's annotations.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.brat.standoff import Attribute, BratDocument, Normalization, Note, Relation, TextBound
from pipeline.campaign.documents import attribute_key, entity_keys
from pipeline.campaign.layout import DISAGREEMENT

log = logging.getLogger(__name__)


@dataclass
class _Item:
    key: tuple
    owner: str | None  # None: agreed
    sources: list[tuple[int, str]] = field(default_factory=list)  # (version index, id)
    new_id: str = ""


def _group(keys_per_version: Sequence[dict[str, tuple]], names: Sequence[str]) -> list[_Item]:
    """Items of the merged document: agreed ones (one per matched tuple) and marked ones."""
    items: list[_Item] = []
    by_key: list[dict[tuple, list[str]]] = []
    for keys in keys_per_version:
        groups: dict[tuple, list[str]] = {}
        for ident, key in keys.items():
            groups.setdefault(key, []).append(ident)
        by_key.append(groups)
    all_keys = sorted({k for groups in by_key for k in groups}, key=repr)
    for key in all_keys:
        lists = [groups.get(key, []) for groups in by_key]
        agreed = min(len(ids) for ids in lists)
        for n in range(agreed):
            items.append(_Item(key, None, [(v, ids[n]) for v, ids in enumerate(lists)]))
        for v, ids in enumerate(lists):
            for ident in ids[agreed:]:
                items.append(_Item(key, names[v], [(v, ident)]))
    return items


def merge_versions(versions: Sequence[tuple[str, BratDocument]]) -> tuple[BratDocument, dict[str, int]]:
    """The merged document (see the module docstring) and counts: agreed/marked entities and relations."""
    if not versions:
        raise ValueError("nothing to merge")
    names = [name for name, _ in versions]
    docs = [doc for _, doc in versions]
    first = docs[0]
    for doc in docs[1:]:
        if doc.text != first.text:
            raise ValueError(f"{doc.name}: the versions to merge have different texts")
    for name, doc in versions:
        if doc.events or doc.equivs:
            log.warning("%s (%s): events and equivalences are not merged (%d, %d left out)",
                        doc.name, name, len(doc.events), len(doc.equivs))
    ent_keys = [entity_keys(doc) for doc in docs]
    entities = _group(ent_keys, names)

    def ent_sort(item: _Item) -> tuple:
        frags, type_, attrs = item.key
        return (frags[0][0], frags[-1][1], frags, type_, attrs, item.owner or "")

    entities.sort(key=ent_sort)
    tb_of: dict[tuple[int, str], str] = {}
    out = BratDocument(name=first.name, text=first.text)
    for n, item in enumerate(entities, 1):
        item.new_id = f"T{n}"
        for src in item.sources:
            tb_of[src] = item.new_id
        v, ident = item.sources[0]
        original = docs[v].textbound(ident)
        assert original is not None
        out.textbounds.append(TextBound(item.new_id, original.type, original.fragments, original.text))

    # relations: keyed by type, merged argument ids and modality
    rel_keys: list[dict[str, tuple]] = []
    for v, doc in enumerate(docs):
        keys: dict[str, tuple] = {}
        for r in doc.relations:
            if all((v, ref) in tb_of for _, ref in r.args):
                args = tuple(sorted((role, tb_of[(v, ref)]) for role, ref in r.args))
                keys[r.id] = (r.type, args, attribute_key(doc, r.id))
            else:
                log.warning("%s:%d: relation %s refers to an unknown entity; left out", doc.path or doc.name,
                            r.line, r.id)
        rel_keys.append(keys)
    relations = _group(rel_keys, names)
    ent_order = {item.new_id: k for k, item in enumerate(entities)}
    relations.sort(key=lambda it: ([ent_order[ref] for _, ref in it.key[1]], it.key[0], it.key[2], it.owner or ""))
    for n, item in enumerate(relations, 1):
        item.new_id = f"R{n}"
        v, ident = item.sources[0]
        r = next(r for r in docs[v].relations if r.id == ident)
        args = tuple((role, tb_of[(v, ref)]) for role, ref in r.args)
        out.relations.append(Relation(item.new_id, r.type, args))

    # attributes (the key's), then the disagreement marks; notes and normalizations follow their target
    n_attr = n_note = n_norm = 0
    for item in [*entities, *relations]:
        for type_, value in item.key[-1]:
            n_attr += 1
            out.attributes.append(Attribute(f"A{n_attr}", type_, item.new_id, value or None))
    for item in [*entities, *relations]:
        if item.owner is not None:
            n_attr += 1
            out.attributes.append(Attribute(f"A{n_attr}", DISAGREEMENT, item.new_id, item.owner))
    for item in [*entities, *relations]:
        seen_notes: set[tuple[str, str]] = set()
        seen_norms: set[tuple[str, str, str]] = set()
        for v, ident in item.sources:
            for q in docs[v].notes:
                if q.target == ident and (q.type, q.text) not in seen_notes:
                    seen_notes.add((q.type, q.text))
                    n_note += 1
                    out.notes.append(Note(f"#{n_note}", q.type, item.new_id, q.text))
            for m in docs[v].normalizations:
                if m.target == ident and (m.type, m.db, m.db_id) not in seen_norms:
                    seen_norms.add((m.type, m.db, m.db_id))
                    n_norm += 1
                    out.normalizations.append(Normalization(f"N{n_norm}", m.type, item.new_id, m.db, m.db_id, m.text))
    counts = {
        "entities_agreed": sum(1 for i in entities if i.owner is None),
        "entities_marked": sum(1 for i in entities if i.owner is not None),
        "relations_agreed": sum(1 for i in relations if i.owner is None),
        "relations_marked": sum(1 for i in relations if i.owner is not None),
    }
    return out, counts


def count_marks(doc: BratDocument) -> int:
    """``Disagreement`` attributes left in ``doc``."""
    return sum(1 for a in doc.attributes if a.type == DISAGREEMENT)

