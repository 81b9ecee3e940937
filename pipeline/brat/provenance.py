"""Provenance of pre-annotated entities, kept beside a brat collection instead of in AnnotatorNotes.

brat highlights every annotation that has an AnnotatorNotes line, so a note
on every pre-annotated entity makes the whole text glow and hides the notes
that mean something.  The brat export ([`pipeline.corpus.brat_export`][pipeline.corpus.brat_export])
therefore writes a note only on composite entities (class, rule and key
entity, which help the annotator judge the proposal) and records the
provenance of *every* entity in one sidecar per collection,
``provenance.jsonl`` (``PROVENANCE_FILE``) in the collection root.

brat never shows it: a brat collection lists as documents only the files
whose name ends in ``txt`` (``server/src/document.py``,
``get_directory_information``: ``fn.endswith('txt')``; hidden files, starting
with ``.`` or ``hidden_``, are skipped too), and this project's readers take
only ``.txt``/``.ann`` files.

One JSON object per line, sorted by document (PMID order) and entity number::

    {"document": "123_4", "id": "T3", "type": "Chemical", "fragments": [[0, 8]],
     "sources": ["pubtator"], "original_types": ["Chemical"], "classes": [], "rules": [],
     "keys": [[[0, 8]]], "identifiers": ["MESH:D014859"]}

``fragments`` are half-open offsets into ``123_4.txt`` as written in the
``.ann``; ``keys`` the fragments of the key entity a composite extends.

A pre-annotated relation has a row of its own (``id`` ``R<n>``), with what
proposed it (the rule, the trigger word as written, the source; several when
proposals were merged), never written into the brat files::

    {"document": "123_4", "id": "R1", "type": "increases", "arg1": "T1", "arg2": "T3",
     "modality": ["Hypothetical"], "sources": ["rules"], "rules": ["trigger"], "triggers": ["elevated"]}

Annotators edit the ``.ann`` files, not the sidecar, and brat gives a new
annotation the lowest free id (possibly a deleted one's), so a row describes
entity ``id`` only while its type and fragments are unchanged:
[`entity_provenance`][pipeline.brat.provenance.entity_provenance] checks that and reports anything else as
``edited`` (changed or re-used id) or ``unknown`` (no row: added by hand).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.brat.standoff import BratDocument, Relation, TextBound
from pipeline.documents import Annotation, Span, pmid_sort_key
from pipeline.documents import Relation as ModelRelation

log = logging.getLogger(__name__)

PROVENANCE_FILE = "provenance.jsonl"
#: provenance status of an entity of a brat document against the sidecar
STATUSES = ("preannotated", "edited", "unknown")


def provenance_row(document: str, textbound: TextBound, members: Sequence[Annotation]) -> dict[str, Any]:
    """Build the sidecar row of one written entity.

    Args:
        document: The brat document's name (``123_4``).
        textbound: The entity as written in the ``.ann``; its fragments are half-open offsets into the
            ``.txt``.
        members: The pre-annotations merged into it.

    Returns:
        The row (see the module docstring): the entity's id, type and fragments, and the sorted,
        de-duplicated sources, original types, classes, rules, key fragments and identifiers of
        ``members``.
    """
    def values(attr: str) -> list[str]:
        return sorted({str(getattr(a, attr)) for a in members if getattr(a, attr)})

    keys = sorted({tuple(a.key) for a in members if a.key})
    return {
        "document": document,
        "id": textbound.id,
        "type": textbound.type,
        "fragments": [list(f) for f in textbound.fragments],
        "sources": values("source"),
        "original_types": values("original_type"),
        "classes": values("ontology_class"),
        "rules": values("rule"),
        "keys": [[list(f) for f in key] for key in keys],
        "identifiers": values("identifier"),
    }


def relation_provenance_row(document: str, relation: Relation, members: Sequence[ModelRelation]) -> dict[str, Any]:
    """Build the sidecar row of one written relation.

    Args:
        document: The brat document's name (``123_4``).
        relation: The relation as written in the ``.ann``.
        members: The relation proposals merged into it.

    Returns:
        The row (see the module docstring): the relation's id, type and arguments (entity ids), and the
        sorted, de-duplicated modalities, sources, rules and trigger words of ``members``.
    """
    return {
        "document": document,
        "id": relation.id,
        "type": relation.type,
        "arg1": relation.arg("Arg1"),
        "arg2": relation.arg("Arg2"),
        "modality": sorted({m for r in members for m in r.modality}),
        "sources": sorted({r.source for r in members}),
        "rules": sorted({r.rule for r in members if r.rule}),
        "triggers": sorted({r.trigger for r in members if r.trigger}),
    }


def _order(row: Mapping[str, Any]) -> tuple[Any, ...]:
    doc = str(row["document"])
    pmid, _, k = doc.partition("_")
    ident = str(row["id"])
    # entities (T) first, then relations (R), each by number
    return (pmid_sort_key(pmid), int(k) if k.isdigit() else -1, doc, ident[:1] == "R",
            int(ident[1:]) if ident[1:].isdigit() else 0, ident)


def write_provenance(directory: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    r"""Write the provenance sidecar of a collection.

    Args:
        directory: The collection root.
        rows: The rows, in any order (see [`provenance_row`][pipeline.brat.provenance.provenance_row]
            and [`relation_provenance_row`][pipeline.brat.provenance.relation_provenance_row]).

    Returns:
        The path written, ``directory/provenance.jsonl``: sorted rows, UTF-8, ``\n`` line ends, so
        reruns are byte-identical.  The file is overwritten in place (not atomically).
    """
    return write_provenance_text(directory, provenance_text(rows))


def provenance_text(rows: Iterable[Mapping[str, Any]]) -> str:
    """Serialize provenance rows as [`write_provenance`][pipeline.brat.provenance.write_provenance] writes them.

    Args:
        rows: The rows, in any order.

    Returns:
        One JSON object per line (keys sorted, non-ASCII kept), sorted by document (PMID order), then
        entities before relations, each by number.
    """
    lines = [json.dumps(dict(r), ensure_ascii=False, sort_keys=True) for r in sorted(rows, key=_order)]
    return "".join(line + "\n" for line in lines)


def write_provenance_text(directory: str | Path, text: str) -> Path:
    """Write already serialized, sorted provenance lines as the sidecar.

    Args:
        directory: The collection root.
        text: The lines, as [`provenance_text`][pipeline.brat.provenance.provenance_text] returns them.

    Returns:
        The path written, ``directory/provenance.jsonl`` (overwritten in place, not atomically).
    """
    path = Path(directory) / PROVENANCE_FILE
    path.write_text(text, encoding="utf-8", newline="\n")
    return path


def read_provenance(directory: str | Path) -> dict[tuple[str, str], dict[str, Any]] | None:
    """Read the provenance sidecar of a collection.

    A line that is not a JSON object with ``document`` and ``id`` is skipped and logged (file:line).

    Args:
        directory: The collection root.

    Returns:
        ``{(document, id): row}`` for entities and relations (a later row of the same key wins); None
        when there is no sidecar.
    """
    path = Path(directory) / PROVENANCE_FILE
    if not path.is_file():
        return None
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            log.warning("%s:%d: not JSON (%s): line skipped", path, lineno, exc.msg)
            continue
        if not isinstance(row, dict) or "document" not in row or "id" not in row:
            log.warning("%s:%d: expected an object with document and id: line skipped", path, lineno)
            continue
        out[(str(row["document"]), str(row["id"]))] = row
    return out


def _fragments(row: Mapping[str, Any]) -> tuple[Span, ...]:
    return tuple((int(s), int(e)) for s, e in row.get("fragments", ()))


def entity_provenance(
    doc: BratDocument, provenance: Mapping[tuple[str, str], Mapping[str, Any]]
) -> dict[str, tuple[str, Mapping[str, Any] | None]]:
    """Say, for each entity of a brat document, whether the sidecar still describes it.

    Args:
        doc: The brat document, as annotators left it.
        provenance: The sidecar, as [`read_provenance`][pipeline.brat.provenance.read_provenance]
            returns it.

    Returns:
        ``{entity id: (status, row)}``: ``preannotated`` (the row matches its type and fragments, compared
        as sets of half-open offsets into the ``.txt``), ``edited`` (a row for the id, but type or fragments
        differ) or ``unknown`` (no row: added by hand; row None).
    """
    out: dict[str, tuple[str, Mapping[str, Any] | None]] = {}
    for t in doc.textbounds:
        row = provenance.get((doc.name, t.id))
        if row is None:
            out[t.id] = ("unknown", None)
        elif row.get("type") == t.type and sorted(_fragments(row)) == sorted(t.fragments):
            out[t.id] = ("preannotated", row)
        else:
            out[t.id] = ("edited", row)
    return out


def provenance_summary(
    docs: Iterable[BratDocument], provenance: Mapping[tuple[str, str], Mapping[str, Any]]
) -> dict[str, Any]:
    """Summarize what the sidecar says about a collection's entities.

    Args:
        docs: The collection's brat documents.
        provenance: The sidecar, as [`read_provenance`][pipeline.brat.provenance.read_provenance]
            returns it.

    Returns:
        ``{"entities": {"preannotated", "edited", "unknown"}, "by_source": {SOURCE: {TYPE: n}},
        "composites": n}``; ``by_source`` counts the unchanged pre-annotated entities under each of their
        sources (an entity found by two sources counts under both); composites are the unchanged ones whose
        only source is ``ontology``.
    """
    statuses: Counter[str] = Counter({s: 0 for s in STATUSES})
    by_source: dict[str, Counter[str]] = {}
    composites = 0
    for doc in docs:
        for status, row in entity_provenance(doc, provenance).values():
            statuses[status] += 1
            if status != "preannotated" or row is None:
                continue
            type_ = str(row.get("type"))
            for source in row.get("sources", ()):
                by_source.setdefault(str(source), Counter())[type_] += 1
            composites += list(row.get("sources", ())) == ["ontology"]
    return {
        "entities": dict(statuses),
        "by_source": {s: dict(sorted(c.items())) for s, c in sorted(by_source.items())},
        "composites": composites,
    }
