"""Merging two (or more) annotators' versions of one document for the phase-2 senior.

Input: ``(annotator, document)`` pairs of the same text, campaign markers already removed.  Output: one
brat document that the senior reads and resolves in brat's own web client:

* **entities**: an entity every version has (same key, see [`pipeline.campaign.documents`][pipeline.campaign.documents]:
  fragments, type and attributes, the display-only ``Composite`` and the ``Disagreement`` mark aside) appears once,
  unmarked; any other entity appears once per annotator who made it, with the ``Disagreement`` attribute
  whose value is that annotator (an entity two annotators typed differently therefore appears twice, once
  per type, each marked).  Duplicates are matched as multisets.  ``Composite`` is kept when a version had
  it (it only draws the border).
* **relations** are grouped by (origin, type, target) on the merged entities: brat edits and deletes a
  relation by that triple, so the merged document never holds two relations with the same one.  A triple
  every version has, with the same modality in every version, is written once with its type: agreed.  Any
  other triple is written once with the generated type [`disputed_type`][pipeline.campaign.conf.disputed_type]
  (``Disputed_influences``, drawn as a dashed red arc labelled ``≠ influences``): drawn by only some of
  the annotators, or with another modality.  Its note carries the modality all the annotators who drew it
  agree on and, in free text, who said what ([`dispute_text`][pipeline.campaign.merge.dispute_text], e.g. ``neg [alice:
  neg; bob: no relation]``).  The senior accepts it by retyping it to the real type (and setting the modality in the
  note), or rejects it by deleting it.
* **notes**: one ``AnnotatorNotes`` per annotation (brat edits only the first one).  A relation's note is
  written with the grammar of [`pipeline.brat.modality`][pipeline.brat.modality] (modality first, then free text).  Free
  text every version has alike is written as it is; otherwise each annotator's is kept with its author
  (``alice: check the dose; bob: see 2nd sentence``).  Legacy ``Negated``/``Hypothetical`` attributes on
  relations (older campaigns) are read as modality and written as a note.
* normalizations follow their annotation (the union of the versions', without repeats).

Ids are renumbered ``T1``, ``R1``, ``A1``, ``N1``, ``#1`` in the order of the text; the result does not
depend on the input ids.  Removing every mark (and retyping every disputed relation to its type) gives the
union of the versions; deleting one annotator's marked entities and disputed relations and accepting the
rest gives back the other annotator's annotations.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pipeline.brat.modality import CANONICAL_TOKEN, MODALITIES, format_note
from pipeline.brat.standoff import Attribute, BratDocument, Normalization, Note, Relation, TextBound
from pipeline.campaign.conf import disputed_type, undisputed_type
from pipeline.campaign.documents import COMPOSITE_ATTRIBUTE, entity_keys, relation_note
from pipeline.campaign.layout import DISAGREEMENT

log = logging.getLogger(__name__)

NOTE_TYPE = "AnnotatorNotes"
NO_RELATION = "no relation"
NO_MODALITY = "none"
_VALUE = r"(?:hyp neg|hyp|neg|none)"
DISPUTE_RE = re.compile(
    r"\s*\[[A-Za-z0-9][A-Za-z0-9_.-]*: (?:no relation|" + _VALUE + r"(?:, " + _VALUE + r")*)"
    r"(?:; [A-Za-z0-9][A-Za-z0-9_.-]*: (?:no relation|" + _VALUE + r"(?:, " + _VALUE + r")*))*\]"
)
"""Matches the free text [`dispute_text`][pipeline.campaign.merge.dispute_text] writes.

That is ``[alice: neg; bob: no relation]``, matched so that ``finalize`` can remove it from a relation
the senior accepted.
"""


def modality_words(modality: frozenset[str]) -> str:
    """Write a modality as a person writes it in a note.

    Args:
        modality: The modalities (``Hypothetical``, ``Negated``); empty for none.

    Returns:
        ``hyp``, ``neg``, ``hyp neg`` or ``none``.
    """
    return " ".join(CANONICAL_TOKEN[m] for m in MODALITIES if m in modality) or NO_MODALITY


def dispute_text(said: Sequence[tuple[str, list[frozenset[str]] | None]]) -> str:
    """Write who said what about a disputed relation triple: ``[alice: neg; bob: no relation]``.

    Args:
        said: ``(annotator, modalities)`` in the versions' order: the modalities of each of that
            annotator's relations on the triple, or ``None`` when they drew none.

    Returns:
        The bracketed text; an annotator's distinct modalities are sorted and joined with ``, ``.
    """
    parts = []
    for name, modalities in said:
        if modalities is None:
            parts.append(f"{name}: {NO_RELATION}")
        else:
            words = sorted({modality_words(m) for m in modalities})
            parts.append(f"{name}: {', '.join(words)}")
    return "[" + "; ".join(parts) + "]"


def strip_dispute(free: str) -> tuple[str, int]:
    """Remove the dispute texts of [`dispute_text`][pipeline.campaign.merge.dispute_text] from a note's free text.

    The ``; `` left around them goes too.

    Args:
        free: The free text of a relation's note.

    Returns:
        The text without them (stripped), and how many were removed.
    """
    out, n = DISPUTE_RE.subn("", free)
    out = re.sub(r"^\s*;\s*|\s*;\s*$", "", out.strip())
    return out.strip(), n


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


def merge_free(texts: Sequence[tuple[str, str]], complete: bool) -> str:
    """Merge the free texts of the annotators' notes into one.

    Args:
        texts: ``(annotator, text)`` of each version that has the annotation.
        complete: Whether every version is listed (all the annotators have the annotation).

    Returns:
        The text itself when every version says the same (``complete``, or a single version), else each
        non-empty text with its author, ``alice: ...; bob: ...``.
    """
    distinct = {text for _, text in texts}
    if len(distinct) == 1 and (complete or len(texts) == 1):
        return texts[0][1]
    return "; ".join(f"{name}: {text}" for name, text in texts if text)


@dataclass
class _Triple:
    type: str
    args: tuple[tuple[str, str], ...]  # (role, merged entity id), in the order of the first version's line
    relations: dict[int, list[str]] = field(default_factory=dict)  # version -> relation ids


def merge_versions(versions: Sequence[tuple[str, BratDocument]]) -> tuple[BratDocument, dict[str, int]]:
    """Merge the annotators' versions of one document (see the module docstring).

    Events and equivalences are not merged (a warning is logged); a relation whose argument is not an
    entity of its version is left out (logged).  Offsets are kept as they are: half-open character
    offsets into the shared ``.txt``.

    Args:
        versions: ``(annotator, document)`` pairs of the same text, campaign markers already removed
            ([`without_markers`][pipeline.campaign.documents.without_markers]), in the order the
            annotators are named in notes.

    Returns:
        The merged document (named as the first version, no path) and counts: ``entities_agreed``,
        ``entities_marked``, ``relations_agreed``, ``relations_marked`` (disputed relations) and
        ``relations_modality_differs`` (disputed relations all annotators drew, with another modality).

    Raises:
        ValueError: If there is no version, or the versions have different texts.
    """
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

    # relations: one per (origin, type, target) on the merged entities
    triples: dict[tuple[str, tuple[tuple[str, str], ...]], _Triple] = {}
    for v, doc in enumerate(docs):
        for r in doc.relations:
            if not all((v, ref) in tb_of for _, ref in r.args):
                log.warning("%s:%d: relation %s refers to an unknown entity; left out", doc.path or doc.name,
                            r.line, r.id)
                continue
            args = tuple((role, tb_of[(v, ref)]) for role, ref in r.args)
            type_ = undisputed_type(r.type) or r.type
            triple = triples.setdefault((type_, tuple(sorted(args))), _Triple(type_, args))
            triple.relations.setdefault(v, []).append(r.id)
    ent_order = {item.new_id: k for k, item in enumerate(entities)}
    ordered = sorted(triples.values(), key=lambda t: ([ent_order[ref] for _, ref in t.args], t.type, t.args))
    counts = {"relations_agreed": 0, "relations_marked": 0, "relations_modality_differs": 0}
    rel_sources: list[tuple[str, list[tuple[int, str]]]] = []
    n_note = 0
    for n, triple in enumerate(ordered, 1):
        rid = f"R{n}"
        said: list[tuple[str, list[frozenset[str]] | None]] = []
        frees: list[tuple[str, str]] = []
        for v, name in enumerate(names):
            ids = triple.relations.get(v)
            if not ids:
                said.append((name, None))
                continue
            notes = [relation_note(docs[v], i) for i in ids]
            said.append((name, [note.modality for note in notes]))
            free = "; ".join(dict.fromkeys(note.free for note in notes if note.free))
            frees.append((name, free))
        modalities = [m for _, ms in said if ms is not None for m in ms]
        complete = all(ms is not None for _, ms in said)
        free = merge_free(frees, complete)
        common = frozenset.intersection(*modalities)
        if complete and all(m == modalities[0] for m in modalities):
            counts["relations_agreed"] += 1
            out.relations.append(Relation(rid, triple.type, triple.args))
            text = format_note(common, free)
        else:
            counts["relations_marked"] += 1
            counts["relations_modality_differs"] += int(complete)
            out.relations.append(Relation(rid, disputed_type(triple.type), triple.args))
            text = format_note(common, dispute_text(said) + (f"; {free}" if free else ""))
        if text:
            n_note += 1
            out.notes.append(Note(f"#{n_note}", NOTE_TYPE, rid, text))
        rel_sources.append((rid, [(v, i) for v, ids in sorted(triple.relations.items()) for i in ids]))

    # entity attributes (the key's, Composite when a version had it), then the disagreement marks
    n_attr = n_norm = 0
    for item in entities:
        composite = any(a.target == ident and a.type == COMPOSITE_ATTRIBUTE
                        for v, ident in item.sources for a in docs[v].attributes)
        for type_, value in sorted([*item.key[-1], *([(COMPOSITE_ATTRIBUTE, "")] if composite else [])]):
            n_attr += 1
            out.attributes.append(Attribute(f"A{n_attr}", type_, item.new_id, value or None))
    for item in entities:
        if item.owner is not None:
            n_attr += 1
            out.attributes.append(Attribute(f"A{n_attr}", DISAGREEMENT, item.new_id, item.owner))
    # entity notes: one per note type, authored when the versions differ
    for item in entities:
        types = sorted({q.type for v, ident in item.sources for q in docs[v].notes if q.target == ident})
        for note_type in types:
            texts = [(names[v], "; ".join(dict.fromkeys(q.text for q in docs[v].notes
                                                        if q.target == ident and q.type == note_type)))
                     for v, ident in item.sources]
            text = merge_free(texts, complete=True)
            if text:
                n_note += 1
                out.notes.append(Note(f"#{n_note}", note_type, item.new_id, text))
    for new_id, sources in [*((i.new_id, i.sources) for i in entities), *rel_sources]:
        seen_norms: set[tuple[str, str, str]] = set()
        for v, ident in sources:
            for m in docs[v].normalizations:
                if m.target == ident and (m.type, m.db, m.db_id) not in seen_norms:
                    seen_norms.add((m.type, m.db, m.db_id))
                    n_norm += 1
                    out.normalizations.append(Normalization(f"N{n_norm}", m.type, new_id, m.db, m.db_id, m.text))
    out.notes.sort(key=lambda q: int(q.id[1:]))
    counts = {
        "entities_agreed": sum(1 for i in entities if i.owner is None),
        "entities_marked": sum(1 for i in entities if i.owner is not None),
        **counts,
    }
    return out, counts


def marks_left(doc: BratDocument) -> list[tuple[str, int, str]]:
    """List what a senior still has to resolve in a document.

    Args:
        doc: The senior's document.

    Returns:
        ``(id, line, message)`` per ``Disagreement`` attribute (the id is its target's) and per disputed
        relation; ``line`` is the annotation's line in the ``.ann``.
    """
    types = {t.id: t.type for t in doc.textbounds}
    relations = {r.id: r.type for r in doc.relations}
    out = []
    for a in doc.attributes:
        if a.type == DISAGREEMENT:
            what = "entity" if a.target in types else "annotation"
            kind = types.get(a.target) or relations.get(a.target) or "undefined"
            out.append((a.target, a.line, f"{a.target} ({kind}) still carries {DISAGREEMENT}={a.value}: remove the "
                        f"attribute to accept it or delete the {what} to reject it"))
    for r in doc.relations:
        real = undisputed_type(r.type)
        if real is not None:
            out.append((r.id, r.line, f"{r.id} ({r.type}) is still disputed: retype it to {real} to accept it "
                        "or delete it to reject it"))
    return out


def count_marks(doc: BratDocument) -> int:
    """Count the ``Disagreement`` attributes and disputed relations left in a document.

    Args:
        doc: The senior's document.

    Returns:
        The number of marks left to resolve.
    """
    return len(marks_left(doc))
