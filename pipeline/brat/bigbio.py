"""brat documents as Hugging Face datasets: BigBIO's ``bigbio_kb`` schema and a lossless ``source`` schema.

Input: brat documents (offsets half-open into each ``.txt``).  Output: rows (plain dicts) and Parquet files
written with an explicit ``pyarrow`` schema, so an empty list keeps its type and ``datasets`` infers the
same features for every split.

``bigbio_kb`` (the schema of BigBIO's ``bigbiohub.kb_features``):

* one row per brat document: ``id`` = the document name, ``document_id`` = the document name (a PGxCorpus
  document is one sentence, ``{PMID}_{k}``; the PMID is in the source config);
* one passage (``{name}_passage``, type ``sentence``) holding the whole text at offsets ``[0, len]``, so
  every offset is relative to the document text, as in brat;
* entities ``{name}_{brat id}``: ``offsets`` one ``[start, end]`` (int32) per fragment, in brat's order (as
  BigBIO's own brat converter writes them), so the round trip gives back brat's ``.ann`` line;
  ``text`` one string per fragment, equal to the slice of the text (BigBIO's harness checks exactly this);
  ``normalized`` from the brat ``N`` lines (``db_name``, ``db_id``);
* relations ``{name}_{brat id}`` with the **annotated** type (no folding) and ``arg1_id``/``arg2_id``.
  A relation with a modality (Negated, Hypothetical; [`pipeline.brat.modality`][pipeline.brat.modality]) is
  **excluded**: a
  knowledge-base row states a fact, and a negated or hypothetical relation is not one.  The source config
  keeps them with their modality.  Relations whose roles are not ``Arg1``/``Arg2`` are excluded too;
* events from brat ``E`` lines (trigger text and offsets, arguments with ``{name}_{id}``), coreferences from
  ``Equiv`` lines (``{name}_equiv{k}``).

``source`` keeps what ``bigbio_kb`` cannot: the document's PMID, entity and relation notes as written,
attributes (name, value), every relation with its type as annotated, its arguments by role, its modality
(names) and the free text of its note, events and equivalences.  It reads back into the same brat annotations
([`from_source_rows`][pipeline.brat.bigbio.from_source_rows]; note, attribute and normalization ids
renumbered).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.brat.modality import MODALITIES, modality_label
from pipeline.brat.standoff import (
    Attribute,
    BratDocument,
    Equiv,
    Event,
    Normalization,
    Note,
    Relation,
    TextBound,
)
from pipeline.brat.stats import relation_note

log = logging.getLogger(__name__)

_NORMALIZED = pa.list_(pa.struct([("db_name", pa.string()), ("db_id", pa.string())]))
_OFFSETS = pa.list_(pa.list_(pa.int32()))
_STRINGS = pa.list_(pa.string())

KB_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("document_id", pa.string()),
    ("passages", pa.list_(pa.struct([("id", pa.string()), ("type", pa.string()), ("text", _STRINGS),
                                     ("offsets", _OFFSETS)]))),
    ("entities", pa.list_(pa.struct([("id", pa.string()), ("type", pa.string()), ("text", _STRINGS),
                                     ("offsets", _OFFSETS), ("normalized", _NORMALIZED)]))),
    ("events", pa.list_(pa.struct([
        ("id", pa.string()), ("type", pa.string()),
        ("trigger", pa.struct([("text", _STRINGS), ("offsets", _OFFSETS)])),
        ("arguments", pa.list_(pa.struct([("role", pa.string()), ("ref_id", pa.string())])))]))),
    ("coreferences", pa.list_(pa.struct([("id", pa.string()), ("entity_ids", _STRINGS)]))),
    ("relations", pa.list_(pa.struct([("id", pa.string()), ("type", pa.string()), ("arg1_id", pa.string()),
                                      ("arg2_id", pa.string()), ("normalized", _NORMALIZED)]))),
])
"""BigBIO ``kb_features`` as an Arrow schema (offsets int32)."""

_ATTRIBUTES = pa.list_(pa.struct([("name", pa.string()), ("value", pa.string())]))
_ARGUMENTS = pa.list_(pa.struct([("role", pa.string()), ("ref_id", pa.string())]))

SOURCE_SCHEMA = pa.schema([
    ("id", pa.string()),
    ("document_id", pa.string()),
    ("pmid", pa.string()),
    ("text", pa.string()),
    ("entities", pa.list_(pa.struct([("id", pa.string()), ("type", pa.string()), ("offsets", _OFFSETS),
                                     ("text", _STRINGS), ("normalized", _NORMALIZED), ("notes", _STRINGS),
                                     ("attributes", _ATTRIBUTES)]))),
    ("relations", pa.list_(pa.struct([("id", pa.string()), ("type", pa.string()), ("arguments", _ARGUMENTS),
                                      ("modality", _STRINGS), ("note_free_text", pa.string()),
                                      ("notes", _STRINGS), ("attributes", _ATTRIBUTES)]))),
    ("events", pa.list_(pa.struct([("id", pa.string()), ("type", pa.string()), ("trigger_id", pa.string()),
                                   ("arguments", _ARGUMENTS), ("notes", _STRINGS), ("attributes", _ATTRIBUTES)]))),
    ("equivalences", pa.list_(pa.struct([("type", pa.string()), ("entity_ids", _STRINGS)]))),
])
"""The source config: brat as annotated (entity, relation and event ids are the brat ids of the document)."""


def _gid(doc: BratDocument, local: str) -> str:
    return f"{doc.name}_{local}"


def _fragments(t: TextBound) -> list[tuple[int, int]]:
    return [(s, e) for s, e in t.fragments if e > s]  # brat's order, as BigBIO's brat parser keeps it


def _normalized(doc: BratDocument, target: str) -> list[dict[str, str]]:
    return [{"db_name": n.db, "db_id": n.db_id} for n in doc.normalizations if n.target == target]


def _attributes(doc: BratDocument, target: str) -> list[dict[str, str]]:
    return [{"name": a.type, "value": "true" if a.value is None else a.value} for a in doc.attributes
            if a.target == target]


def relation_modality_names(doc: BratDocument, relation_id: str) -> list[str]:
    """Read the modality of a relation: binary attributes named after a modality and its note's modality tokens.

    Args:
        doc: The document holding the relation.
        relation_id: The relation's brat id (``R1``).

    Returns:
        The modality names in canonical order (``Hypothetical`` before ``Negated``); empty for a
            plain relation.
    """
    found = {a.type for a in doc.attributes if a.target == relation_id and a.type in MODALITIES}
    found |= relation_note(doc, relation_id).modality
    return [m for m in MODALITIES if m in found]


def kb_row(doc: BratDocument, counts: Counter[str] | None = None) -> dict[str, Any]:
    """Convert a brat document to one ``bigbio_kb`` row (see the module docstring).

    Offsets are half-open, relative to the document text (the one passage starts at 0); empty
    fragments are dropped and an entity left without one is excluded.

    Args:
        doc: The brat document.
        counts: Updated in place when given: what is kept (``documents``, ``entities``,
            ``entities_discontiguous``, ``normalizations``, ``relations``, ``relations_annotated``,
            ``events``, ``coreferences``) and what is excluded and why (``entities_empty_excluded``,
            ``relations_excluded_arguments``, ``relations_excluded_modality`` and
            ``relations_excluded_modality:LABEL``).

    Returns:
        The row, a plain dict matching [`KB_SCHEMA`][pipeline.brat.bigbio.KB_SCHEMA].
    """
    counts = counts if counts is not None else Counter()
    counts["documents"] += 1
    entities = []
    known = set()
    for t in doc.textbounds:
        frags = _fragments(t)
        if not frags:
            counts["entities_empty_excluded"] += 1
            continue
        entities.append({"id": _gid(doc, t.id), "type": t.type, "text": [doc.text[s:e] for s, e in frags],
                         "offsets": [[s, e] for s, e in frags], "normalized": _normalized(doc, t.id)})
        known.add(t.id)
        counts["entities"] += 1
        counts["entities_discontiguous"] += len(frags) > 1
        counts["normalizations"] += len(entities[-1]["normalized"])
    relations = []
    for r in doc.relations:
        counts["relations_annotated"] += 1
        arg1, arg2 = r.arg("Arg1"), r.arg("Arg2")
        if arg1 not in known or arg2 not in known or len(r.args) != 2:
            counts["relations_excluded_arguments"] += 1
            continue
        modality = relation_modality_names(doc, r.id)
        if modality:
            counts["relations_excluded_modality"] += 1
            counts[f"relations_excluded_modality:{modality_label(modality)}"] += 1
            continue
        relations.append({"id": _gid(doc, r.id), "type": r.type, "arg1_id": _gid(doc, arg1),
                          "arg2_id": _gid(doc, arg2), "normalized": []})
        counts["relations"] += 1
    tb = {t.id: t for t in doc.textbounds}
    events = []
    for e in doc.events:
        trig = tb.get(e.trigger)
        frags = _fragments(trig) if trig else []
        events.append({"id": _gid(doc, e.id), "type": e.type,
                       "trigger": {"text": [doc.text[s:f] for s, f in frags], "offsets": [[s, f] for s, f in frags]},
                       "arguments": [{"role": role, "ref_id": _gid(doc, ref)} for role, ref in e.args]})
        counts["events"] += 1
    corefs = [{"id": _gid(doc, f"equiv{k}"), "entity_ids": [_gid(doc, i) for i in q.ids]}
              for k, q in enumerate(doc.equivs, 1)]
    counts["coreferences"] += len(corefs)
    return {"id": doc.name, "document_id": doc.name,
            "passages": [{"id": _gid(doc, "passage"), "type": "sentence", "text": [doc.text],
                          "offsets": [[0, len(doc.text)]]}],
            "entities": entities, "events": events, "coreferences": corefs, "relations": relations}


def source_row(doc: BratDocument, counts: Counter[str] | None = None) -> dict[str, Any]:
    """Convert a brat document to one ``source`` row: everything of it but the order of its lines.

    Entity fragments keep the order annotated and their empty fragments; offsets are half-open into
    the document text (the ``.txt``).

    Args:
        doc: The brat document.
        counts: Updated in place when given: ``documents``, ``entities``, ``relations``,
            ``relations_with_modality``, ``notes``, ``attributes``.

    Returns:
        The row, a plain dict matching [`SOURCE_SCHEMA`][pipeline.brat.bigbio.SOURCE_SCHEMA].
    """
    counts = counts if counts is not None else Counter()
    counts["documents"] += 1
    entities = []
    for t in doc.textbounds:
        frags = list(t.fragments)  # in the order annotated (brat allows any order), empty ones included
        entities.append({"id": t.id, "type": t.type, "offsets": [[s, e] for s, e in frags],
                         "text": [doc.text[s:e] for s, e in frags], "normalized": _normalized(doc, t.id),
                         "notes": doc.notes_for(t.id), "attributes": _attributes(doc, t.id)})
        counts["entities"] += 1
    relations = []
    for r in doc.relations:
        relations.append({"id": r.id, "type": r.type,
                          "arguments": [{"role": role, "ref_id": ref} for role, ref in r.args],
                          "modality": relation_modality_names(doc, r.id),
                          "note_free_text": relation_note(doc, r.id).free,
                          "notes": doc.notes_for(r.id), "attributes": _attributes(doc, r.id)})
        counts["relations"] += 1
        counts["relations_with_modality"] += bool(relations[-1]["modality"])
    events = [{"id": e.id, "type": e.type, "trigger_id": e.trigger,
               "arguments": [{"role": role, "ref_id": ref} for role, ref in e.args],
               "notes": doc.notes_for(e.id), "attributes": _attributes(doc, e.id)} for e in doc.events]
    counts["notes"] += len(doc.notes)
    counts["attributes"] += len(doc.attributes)
    return {"id": doc.name, "document_id": doc.name, "pmid": doc.pmid, "text": doc.text,
            "entities": entities, "relations": relations, "events": events,
            "equivalences": [{"type": q.type, "entity_ids": list(q.ids)} for q in doc.equivs]}


def write_parquet(rows: Sequence[Mapping[str, Any]], schema: pa.Schema, path: str | Path) -> Path:
    """Write rows as one Parquet file (deterministic bytes for the same rows).

    The file is written in place (not atomically), snappy-compressed, without column statistics.

    Args:
        rows: The rows, plain dicts.
        schema: Their Arrow schema ([`KB_SCHEMA`][pipeline.brat.bigbio.KB_SCHEMA] or
            [`SOURCE_SCHEMA`][pipeline.brat.bigbio.SOURCE_SCHEMA]), so that empty lists keep their type.
        path: The file written; its directory is created if missing.

    Returns:
        The path written.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(list(rows), schema=schema)
    pq.write_table(table, p, compression="snappy", write_statistics=False)
    return p


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Read the rows of a Parquet file.

    Args:
        path: The Parquet file.

    Returns:
        Its rows as plain dicts, in file order.
    """
    return list(pq.read_table(Path(path)).to_pylist())


# --- back to brat ---------------------------------------------------------------------------------

def _extras(doc: BratDocument, target: str, item: Mapping[str, Any]) -> None:
    """The notes and attributes of a source-row item back as brat lines of ``doc``."""
    for note in item.get("notes") or []:
        doc.notes.append(Note(f"#{len(doc.notes) + 1}", "AnnotatorNotes", target, note))
    for attr in item.get("attributes") or []:
        doc.attributes.append(Attribute(f"A{len(doc.attributes) + 1}", attr["name"], target,
                                        None if attr["value"] == "true" else attr["value"]))


def from_source_rows(rows: Iterable[Mapping[str, Any]]) -> list[BratDocument]:
    """Rebuild brat documents from ``source`` rows (the reverse of [`source_row`][pipeline.brat.bigbio.source_row]).

    Entities, relations and events keep their brat ids; notes, attributes and normalizations are numbered
    afresh (``#1``, ``A1``, ``N1``... in row order).  The modality travels in the notes as annotated.
    Text columns are recomputed from the text at the offsets.

    Args:
        rows: ``source`` rows ([`read_rows`][pipeline.brat.bigbio.read_rows] of a source Parquet file).

    Returns:
        One document per row, named by the row's ``id``, offsets half-open into its text.
    """
    out = []
    for row in rows:
        doc = BratDocument(str(row["id"]), str(row["text"]))
        text = doc.text
        for ent in row["entities"]:
            frags = tuple((int(s), int(e)) for s, e in ent["offsets"])
            doc.textbounds.append(TextBound(ent["id"], ent["type"], frags, " ".join(text[s:e] for s, e in frags)))
            for n in ent["normalized"]:
                doc.normalizations.append(Normalization(f"N{len(doc.normalizations) + 1}", "Reference", ent["id"],
                                                        n["db_name"], n["db_id"],
                                                        " ".join(text[s:e] for s, e in frags)))
            _extras(doc, ent["id"], ent)
        for rel in row["relations"]:
            doc.relations.append(Relation(rel["id"], rel["type"],
                                          tuple((a["role"], a["ref_id"]) for a in rel["arguments"])))
            _extras(doc, rel["id"], rel)
        for ev in row["events"]:
            doc.events.append(Event(ev["id"], ev["type"], ev["trigger_id"],
                                    tuple((a["role"], a["ref_id"]) for a in ev["arguments"])))
            _extras(doc, ev["id"], ev)
        doc.equivs = [Equiv(q["type"], tuple(q["entity_ids"])) for q in row["equivalences"]]
        out.append(doc)
    return out


def from_kb_rows(rows: Iterable[Mapping[str, Any]]) -> list[BratDocument]:
    """Rebuild brat documents from ``bigbio_kb`` rows.

    The text comes from the passages, each placed at its start offset (a gap is filled with spaces);
    entities get ``T`` ids from the part of the global id after the document name, else ``T1``... in
    order; normalizations become ``Reference`` lines, relations ``Arg1``/``Arg2``.  Events and
    coreferences have no brat form here and are counted by the caller through
    [`kb_losses`][pipeline.brat.bigbio.kb_losses]; modality is not in ``bigbio_kb``.

    Args:
        rows: ``bigbio_kb`` rows.

    Returns:
        One document per row, named by its ``document_id`` (else its ``id``), offsets half-open into
            the rebuilt text.

    Raises:
        KeyError: If a relation names an entity id the row does not have.
    """
    out = []
    for row in rows:
        name = str(row["document_id"] or row["id"])
        text = ""
        for passage in row["passages"]:
            for ptext, (start, _end) in zip(passage["text"], passage["offsets"], strict=True):
                text = text.ljust(int(start)) + ptext
        doc = BratDocument(name, text)
        prefix = f"{name}_"
        local: dict[str, str] = {}
        for k, ent in enumerate(row["entities"], 1):
            gid = str(ent["id"])
            tid = gid[len(prefix):] if gid.startswith(prefix) else f"T{k}"
            local[gid] = tid
            frags = tuple((int(s), int(e)) for s, e in ent["offsets"])
            doc.textbounds.append(TextBound(tid, ent["type"], frags, " ".join(text[s:e] for s, e in frags)))
            for n in ent["normalized"]:
                doc.normalizations.append(Normalization(f"N{len(doc.normalizations) + 1}", "Reference", tid,
                                                        n["db_name"], n["db_id"],
                                                        " ".join(text[s:e] for s, e in frags)))
        for k, rel in enumerate(row["relations"], 1):
            gid = str(rel["id"])
            rid = gid[len(prefix):] if gid.startswith(prefix) else f"R{k}"
            doc.relations.append(Relation(rid, rel["type"], (("Arg1", local[rel["arg1_id"]]),
                                                             ("Arg2", local[rel["arg2_id"]]))))
        out.append(doc)
    return out


def kb_losses(rows: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Count what [`from_kb_rows`][pipeline.brat.bigbio.from_kb_rows] cannot bring back into brat.

    Args:
        rows: ``bigbio_kb`` rows.

    Returns:
        Counts ``events`` and ``coreferences`` over all rows.
    """
    c: Counter[str] = Counter()
    for row in rows:
        c["events"] += len(row["events"])
        c["coreferences"] += len(row["coreferences"])
    return c
