r"""brat <-> PubTator: the ``export --format pubtator`` writer and its reverse.

Input of [`to_pubtator_records`][pipeline.brat.pubtator.to_pubtator_records]: brat documents (PGxCorpus names
them ``{PMID}_{k}``, one sentence each, k 1-based, title = 1), offsets half-open
into their ``.txt``.  Output: [`PubtatorRecord`][pipeline.sources.pubtator_format.PubtatorRecord]
blocks, written by [`format_record`][pipeline.sources.pubtator_format.format_record].

Levels
* ``abstract`` (the default): one PubTator document per PMID, its id the
  PMID (the name up to the first ``_``).  Title = the text of sentence 1
  (``{PMID}_1``; empty when the collection lacks it); abstract = the other
  sentences of the PMID in order of k, joined by one space
  (``SENTENCE_SEPARATOR``; the gold sentences are pre-tokenized, so this
  is their text, not PubMed's).  Offsets are document offsets into
  ``title + "\n" + abstract`` (PubTator's one separator character), i.e. a
  sentence's brat offset plus the sentence's start.  A brat document named
  by a bare PMID (no ``_k``) is one whole document: its text is split at its
  first newline into title and abstract (offsets unchanged).  Because
  PubTator cannot say where sentences start, a sidecar
  ``OUT.sentences.tsv`` (``document<TAB>sentence<TAB>start<TAB>end``,
  half-open document offsets, one row per brat document) is written beside
  the PubTator file; [`from_pubtator`][pipeline.brat.pubtator.from_pubtator] uses it to restore the brat
  documents.
* ``sentence``: one PubTator document per brat document, its id the brat
  name (``{PMID}_{k}``), the text in the title line (split at a first
  newline as above), offsets equal to brat offsets.

Lines (7 columns for entities, 5 for relations, all read by the ``bioc``
package's ``bioc.pubtator`` reader and by [`read_pubtator`][pipeline.sources.pubtator_format.read_pubtator]):
* entity: ``DOC<TAB>start<TAB>end<TAB>mention<TAB>type<TAB>identifier<TAB>key``.
  ``identifier``: the entity's normalizations (``N`` lines), ``NCBIGene:1559``
  written as the bare gene id ``1559`` (PubTator's convention), other
  references as ``DB:ID``, several joined by ``;``; ``NO_IDENTIFIER``
  (``-``) when there is none (an empty last column would be stripped by
  ``bioc.pubtator``, which then takes the line for a relation).  ``key`` is
  ``{brat document name}:{brat id}`` (``10070957_8:T3``), unique in the file.
  A discontiguous entity is one line per fragment, all with the same key,
  consecutive and in the order of its brat fragments.
* relation: ``DOC<TAB>type<TAB>key of Arg1<TAB>key of Arg2<TAB>modality``;
  ``modality`` is the schema's relation attributes found on the relation
  (brat attributes or AnnotatorNotes such as ``neg``/``hyp``), sorted and
  joined by ``+`` (``Hypothetical+Negated``), or ``-``.

What PubTator cannot hold (counted, and logged once per kind at WARNING):
AnnotatorNotes (``notes_dropped``; modality notes are carried by the
modality column), attributes other than relation modality
(``attributes_dropped``, e.g. ``Composite``), events, equivalences, relations
whose arguments are not ``Arg1``/``Arg2`` entities (``relations_dropped``),
discontiguous entities under ``pubtator_discontiguous: skip``
(``discontiguous_skipped``), empty fragments (``empty_fragments_dropped``),
and newlines/tabs inside a sentence or mention (replaced by spaces, same
length: ``whitespace_replaced``).  Brat ids of relations, attributes and
normalizations, the text column of normalizations and the order of
annotation lines are not kept: [`from_pubtator`][pipeline.brat.pubtator.from_pubtator] numbers them afresh.
"""

from __future__ import annotations

import csv
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.brat.modality import format_note, parse_note
from pipeline.brat.standoff import BratDocument, Normalization, Note, Relation, TextBound
from pipeline.brat.stats import relation_modality
from pipeline.documents import TITLE_SEPARATOR, pmid_sort_key
from pipeline.schema import Schema
from pipeline.sources.pubtator_format import (
    PubtatorAnnotation,
    PubtatorRecord,
    PubtatorRelation,
    read_pubtator,
)

log = logging.getLogger(__name__)

LEVELS = ("abstract", "sentence")
SENTENCE_SEPARATOR = " "
NO_IDENTIFIER = "-"
NO_MODALITY = "-"
GENE_DB = "NCBIGene"
SIDECAR_SUFFIX = ".sentences.tsv"
SIDECAR_HEADER = ("document", "sentence", "start", "end")

#: count keys whose non-zero value means something was not written (logged at WARNING)
DROP_KEYS = (
    "discontiguous_skipped", "empty_fragments_dropped", "relations_dropped", "notes_dropped", "attributes_dropped",
    "events_dropped", "equivalences_dropped", "whitespace_replaced",
)


@dataclass(frozen=True)
class SentenceSpan:
    r"""Where a brat document sits in a PubTator document: one row of the sidecar.

    Attributes:
        document: The PubTator document id (the PMID at abstract level).
        sentence: The brat document name (``{PMID}_{k}``).
        start: Start of the brat document's text, a half-open character offset into the PubTator
            document's text (``title + "\n" + abstract``).
        end: End of it (exclusive).
        line: The 1-based line of the sidecar it was read from (0 when built in code; not compared).
    """

    document: str
    sentence: str
    start: int
    end: int
    line: int = field(default=0, compare=False)


def sidecar_path(out: str | Path) -> Path:
    """Name the sidecar of a PubTator file.

    Args:
        out: The PubTator file ``OUT``.

    Returns:
        ``OUT.sentences.tsv`` beside it.
    """
    p = Path(out)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def _sentence_index(name: str) -> int | None:
    _, sep, k = name.partition("_")
    return int(k) if sep and k.isdigit() else None


def _flat(text: str, counts: Counter[str]) -> str:
    """Newlines and tabs as spaces (same length, offsets unchanged); counted when any were replaced."""
    out = text.replace("\r", " ").replace("\n", " ").replace("\t", " ")
    if out != text:
        counts["whitespace_replaced"] += 1
    return out


def _identifier(doc: BratDocument, tid: str) -> str:
    refs = [n.db_id if n.db == GENE_DB else f"{n.db}:{n.db_id}" for n in doc.normalizations if n.target == tid]
    return ";".join(refs) or NO_IDENTIFIER


def _layout(
    group: Sequence[BratDocument], level: str, counts: Counter[str]
) -> tuple[str, str, list[tuple[BratDocument, int]]]:
    """Title, abstract and each document's start offset for the brat documents of one PubTator document."""
    if level == "sentence" or (len(group) == 1 and _sentence_index(group[0].name) is None):
        # a whole document (title + "\n" + abstract): PubTator's own layout, offsets unchanged
        title, _, abstract = group[0].text.partition(TITLE_SEPARATOR)
        return _flat(title, counts), _flat(abstract, counts), [(group[0], 0)]
    ordered = sorted(group, key=lambda d: (_sentence_index(d.name) is None, _sentence_index(d.name) or 0, d.name))
    title_doc = ordered[0] if _sentence_index(ordered[0].name) == 1 else None
    title = _flat(title_doc.text, counts) if title_doc is not None else ""
    starts: list[tuple[BratDocument, int]] = [(title_doc, 0)] if title_doc is not None else []
    pieces: list[str] = []
    offset = len(title) + len(TITLE_SEPARATOR)
    for doc in ordered[1:] if title_doc is not None else ordered:
        starts.append((doc, offset))
        pieces.append(_flat(doc.text, counts))
        offset += len(doc.text) + len(SENTENCE_SEPARATOR)
    return title, SENTENCE_SEPARATOR.join(pieces), starts


def to_pubtator_records(
    docs: Iterable[BratDocument], schema: Schema, *, level: str = "abstract", discontiguous: str = "split",
    counts: Counter[str] | None = None, warn: bool = True,
) -> tuple[list[PubtatorRecord], list[SentenceSpan]]:
    """Convert brat documents to PubTator records, and say where each brat document went.

    See the module docstring for the layout and what is lost; each kind of loss with a non-zero count is
    logged once at WARNING.

    Args:
        docs: The brat documents, offsets half-open into each ``.txt``.
        schema: The corpus schema, whose ``relation_attributes`` name the modality attributes.
        level: ``abstract`` (one PubTator document per PMID) or ``sentence`` (one per brat document).
        discontiguous: ``split`` (one line per fragment, shared key) or ``skip``.
        counts: Updated in place when given: ``documents`` (PubTator documents), ``brat_documents``,
            ``entities`` and ``entity_lines`` written, ``discontiguous_entities`` written, ``relations``
            written, and the ``DROP_KEYS`` (what was not written).
        warn: Log each kind of loss at WARNING; ``False`` when the caller reports the losses itself (a
            release writes many PubTator files and names them in one line per loss).

    Returns:
        The records, by document id in PMID order (entity lines by start, end and key), and one sentence span per brat
            document: its half-open offsets in its PubTator document (for the sidecar).

    Raises:
        ValueError: If ``level`` is not ``abstract`` or ``sentence``.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown PubTator level {level!r} (expected one of {', '.join(LEVELS)})")
    total = counts if counts is not None else Counter()
    counts = Counter()  # this call's figures: the WARNING lines below report them, not a caller's running totals
    groups: dict[str, list[BratDocument]] = {}
    for doc in docs:
        groups.setdefault(doc.pmid if level == "abstract" else doc.name, []).append(doc)
    records: list[PubtatorRecord] = []
    spans: list[SentenceSpan] = []
    for doc_id in sorted(groups, key=pmid_sort_key):
        title, abstract, starts = _layout(groups[doc_id], level, counts)
        annotations: list[tuple[tuple[int, int, str], list[PubtatorAnnotation]]] = []
        relations: list[PubtatorRelation] = []
        for doc, offset in starts:
            counts["brat_documents"] += 1
            spans.append(SentenceSpan(doc_id, doc.name, offset, offset + len(doc.text)))
            keys = _entities(doc, doc_id, offset, discontiguous, annotations, counts)
            relations += _relations(doc, doc_id, keys, schema, counts)
        counts["documents"] += 1
        annotations.sort(key=lambda item: item[0])
        records.append(PubtatorRecord(
            pmid=doc_id, title=title, abstract=abstract,
            annotations=tuple(a for _, lines in annotations for a in lines), relations=tuple(relations),
        ))
    for key in DROP_KEYS if warn else ():
        if counts[key]:
            log.warning("PubTator export: %s: %d (the format cannot hold them; see pipeline/brat/pubtator.py)",
                        key, counts[key])
    total.update(counts)
    return records, spans


def _entities(
    doc: BratDocument, doc_id: str, offset: int, discontiguous: str,
    out: list[tuple[tuple[int, int, str], list[PubtatorAnnotation]]], counts: Counter[str],
) -> dict[str, str]:
    """Append the entity lines of ``doc`` to ``out``; returns brat id -> key of the entities written."""
    keys: dict[str, str] = {}
    for t in doc.textbounds:
        frags = [(s, e) for s, e in t.fragments if e > s]
        if len(frags) < len(t.fragments):
            counts["empty_fragments_dropped"] += len(t.fragments) - len(frags)
            log.debug("%s: %s has empty fragments: dropped", doc.path or doc.name, t.id)
        if not frags:
            continue
        if len(frags) > 1 and discontiguous == "skip":
            counts["discontiguous_skipped"] += 1
            log.debug("%s: discontiguous %s %s skipped (pubtator_discontiguous: skip)", doc.name, t.id, t.type)
            continue
        key = f"{doc.name}:{t.id}"
        ident = _identifier(doc, t.id)
        lines = [
            PubtatorAnnotation(s + offset, e + offset, _flat(doc.text[s:e], counts) if doc.text else t.text, t.type,
                               ident, 0, (key,))
            for s, e in frags
        ]
        counts["entities"] += 1
        counts["entity_lines"] += len(lines)
        counts["discontiguous_entities"] += len(lines) > 1
        out.append(((min(s for s, _ in frags) + offset, max(e for _, e in frags) + offset, key), lines))
        keys[t.id] = key
    return keys


def _relations(
    doc: BratDocument, doc_id: str, keys: Mapping[str, str], schema: Schema, counts: Counter[str]
) -> list[PubtatorRelation]:
    out = []
    kept: set[str] = set()
    unknown: Counter[str] = Counter()
    for r in doc.relations:
        roles = tuple(role for role, _ in r.args)
        if roles != ("Arg1", "Arg2") or any(ref not in keys for _, ref in r.args):
            counts["relations_dropped"] += 1
            log.debug("%s:%d: relation %s (%s) cannot be written: arguments %s", doc.path or doc.name, r.line,
                      r.id, r.type, " ".join(f"{role}:{ref}" for role, ref in r.args))
            continue
        kept.add(r.id)
        modality = relation_modality(doc, r.id, schema, unknown)
        out.append(PubtatorRelation(r.type, keys[r.args[0][1]], keys[r.args[1][1]], 0,
                                    ("+".join(modality) or NO_MODALITY,)))
        counts["relations"] += 1
    _count_unwritable(doc, kept, schema, counts)
    return out


def _count_unwritable(doc: BratDocument, relations: set[str], schema: Schema, counts: Counter[str]) -> None:
    """Count what of ``doc`` has no PubTator form (``relations``: ids of the relations written).

    A note on a written relation that holds modality tokens only (``neg``, ``hyp``..., read with
    [`pipeline.brat.modality`][pipeline.brat.modality]) is carried by the modality column; any other note is
    dropped, as are attributes other than binary modality attributes of written relations, events and
    equivalences.
    """
    for n in doc.notes:
        note = parse_note(n.text)
        carried = n.target in relations and bool(note.modality) and not note.free
        if not carried:
            counts["notes_dropped"] += 1
    for a in doc.attributes:
        if not (a.target in relations and a.type in schema.relation_attributes and a.value is None):
            counts["attributes_dropped"] += 1
    counts["events_dropped"] += len(doc.events)
    counts["equivalences_dropped"] += len(doc.equivs)


def write_sidecar(spans: Sequence[SentenceSpan], path: str | Path) -> Path:
    """Write the sentence map as TSV.

    The file is written in place (not atomically): a header ``document sentence start end``, then one
    row per span, tab-separated.

    Args:
        spans: The sentence spans ([`to_pubtator_records`][pipeline.brat.pubtator.to_pubtator_records]).
        path: The sidecar file ([`sidecar_path`][pipeline.brat.pubtator.sidecar_path] of the PubTator file).

    Returns:
        The path written.
    """
    p = Path(path)
    with p.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, delimiter="\t", lineterminator="\n")
        writer.writerow(SIDECAR_HEADER)
        for s in spans:
            writer.writerow((s.document, s.sentence, s.start, s.end))
    return p


def read_sidecar(path: str | Path) -> dict[str, list[SentenceSpan]]:
    """Read a sidecar ``OUT.sentences.tsv``.

    Args:
        path: The sidecar file.

    Returns:
        PubTator document id -> its sentence spans, in file order.

    Raises:
        ValueError: If the header is not ``document sentence start end``, a row does not have four
            columns with offsets ``start <= end``, or two rows name the same sentence (two brat documents
            of one name: one would overwrite the other), naming ``file:line`` (both lines for a duplicate).
    """
    p = Path(path)
    out: dict[str, list[SentenceSpan]] = {}
    first: dict[str, int] = {}  # sentence name, case-folded (one file on a case-insensitive system) -> line
    with p.open(encoding="utf-8", newline="") as fh:
        for lineno, row in enumerate(csv.reader(fh, delimiter="\t"), 1):
            if lineno == 1:
                if tuple(row) != SIDECAR_HEADER:
                    raise ValueError(f"{p}:1: expected the header {' '.join(SIDECAR_HEADER)}")
                continue
            if (len(row) != 4 or not row[2].isdigit() or not row[3].isdigit() or len(row[2]) > 15 or len(row[3]) > 15
                    or int(row[3]) < int(row[2])):
                raise ValueError(f"{p}:{lineno}: expected document, sentence, start, end")
            key = row[1].casefold()
            if key in first:
                raise ValueError(f"{p}:{lineno}: sentence {row[1]!r} of document {row[0]!r} is already named at line "
                                 f"{first[key]}: two documents of one name, refused")
            first[key] = lineno
            out.setdefault(row[0], []).append(SentenceSpan(row[0], row[1], int(row[2]), int(row[3]), lineno))
    return out


# --- PubTator -> brat ---------------------------------------------------------------

def _normalizations(identifier: str | None, counts: Counter[str]) -> list[tuple[str, str]]:
    out = []
    for ref in (identifier or "").split(";"):
        ref = ref.strip()
        if not ref or ref == NO_IDENTIFIER:
            continue
        if ref.isdigit():
            out.append((GENE_DB, ref))
        elif ":" in ref:
            db, _, db_id = ref.partition(":")
            out.append((db, db_id))
        else:
            counts["identifiers_unreadable"] += 1
            log.warning("PubTator identifier %r is neither a gene id nor DB:ID: not restored", ref)
    return out


def from_pubtator(
    records: Iterable[PubtatorRecord], sentences: Mapping[str, Sequence[SentenceSpan]] | None = None,
    counts: Counter[str] | None = None,
) -> list[BratDocument]:
    r"""Rebuild brat documents from PubTator records.

    The reverse of [`to_pubtator_records`][pipeline.brat.pubtator.to_pubtator_records].  With ``sentences``
    (the sidecar), each PubTator document is cut back into its brat documents (an entity goes to the
    document its key names); without, each PubTator document becomes one brat document named by its id.
    Entity ids come from the key column (lines without one get fresh ``T`` ids), relation ids ``R1...``
    in line order, modality as the relation's note in the grammar of
    [`pipeline.brat.modality`][pipeline.brat.modality] (``#1 AnnotatorNotes R1 neg``), identifiers as
    ``N`` lines (a bare number is an NCBI Gene id).  What cannot be placed is skipped and logged at
    WARNING.

    Args:
        records: The PubTator records, offsets into ``title + "\n" + abstract``.
        sentences: The sidecar ([`read_sidecar`][pipeline.brat.pubtator.read_sidecar]): PubTator document
            id -> its sentence spans; None for one brat document per PubTator document.
        counts: Updated in place when given: ``documents``, ``entities``, ``relations``,
            ``entities_unplaced`` and ``relations_unplaced`` (the key names no document of the sidecar,
            or offsets fall outside it), ``identifiers_unreadable``.

    Returns:
        The brat documents, record by record, offsets half-open into each document's own text (the
            sentence's, shifted back by its start).
    """
    counts = counts if counts is not None else Counter()
    out: list[BratDocument] = []
    for rec in records:
        text = rec.title + TITLE_SEPARATOR + rec.abstract if rec.abstract else rec.title
        spans = list((sentences or {}).get(rec.pmid, ())) or [SentenceSpan(rec.pmid, rec.pmid, 0, len(text))]
        by_name = {s.sentence: (s, BratDocument(s.sentence, text[s.start:s.end])) for s in spans}
        single = len(spans) == 1
        entity_home: dict[str, tuple[BratDocument, str]] = {}
        fragments: dict[str, list[tuple[int, int]]] = {}
        order: list[tuple[str, PubtatorAnnotation]] = []
        for i, a in enumerate(rec.annotations):
            key = a.extra[0] if a.extra else f"{rec.pmid}:line{a.line or i}"
            if key not in fragments:
                fragments[key] = []
                order.append((key, a))
            fragments[key].append((a.start, a.end))
        for key, first in order:
            name, _, tid = key.rpartition(":")
            home = by_name.get(name) or (by_name[spans[0].sentence] if single else None)
            frags = fragments[key]
            if home is None or any(s < home[0].start or e > home[0].end for s, e in frags):
                counts["entities_unplaced"] += 1
                log.warning("%s: entity %s at %s lies in no restored document: skipped", rec.source or rec.pmid,
                            key, frags)
                continue
            span, doc = home
            if not tid.startswith("T") or doc.textbound(tid) is not None:
                tid = f"T{len(doc.textbounds) + 1}"
            local = tuple((s - span.start, e - span.start) for s, e in frags)
            doc.textbounds.append(TextBound(tid, first.type, local, " ".join(doc.text[s:e] for s, e in local)))
            for db, db_id in _normalizations(first.identifier, counts):
                doc.normalizations.append(Normalization(f"N{len(doc.normalizations) + 1}", "Reference", tid, db,
                                                        db_id, " ".join(doc.text[s:e] for s, e in local)))
            entity_home[key] = (doc, tid)
            counts["entities"] += 1
        for r in rec.relations:
            home1, home2 = entity_home.get(r.arg1), entity_home.get(r.arg2)
            if home1 is None or home2 is None or home1[0] is not home2[0]:
                counts["relations_unplaced"] += 1
                log.warning("%s: relation %s %s %s: arguments not in one restored document: skipped",
                            rec.source or rec.pmid, r.type, r.arg1, r.arg2)
                continue
            doc = home1[0]
            rid = f"R{len(doc.relations) + 1}"
            doc.relations.append(Relation(rid, r.type, (("Arg1", home1[1]), ("Arg2", home2[1]))))
            modality = r.extra[0] if r.extra else NO_MODALITY
            if modality != NO_MODALITY:  # the relation's one note, in the modality grammar (hyp, neg)
                doc.notes.append(Note(f"#{len(doc.notes) + 1}", "AnnotatorNotes", rid,
                                      format_note(modality.split("+"))))
            counts["relations"] += 1
        for _, doc in by_name.values():
            out.append(doc)
            counts["documents"] += 1
    return out


def read_pubtator_export(
    path: str | Path, sidecar: str | Path | None = None, counts: Counter[str] | None = None
) -> list[BratDocument]:
    """Read brat documents back from a PubTator file written by ``export --format pubtator``.

    Args:
        path: The PubTator file (plain or gzip-compressed).
        sidecar: The sentence map; by default ``PATH.sentences.tsv`` when that file exists (abstract
            level); without one, each PubTator document becomes one brat document.
        counts: Updated in place when given: the counts of
            [`from_pubtator`][pipeline.brat.pubtator.from_pubtator].

    Returns:
        The brat documents ([`from_pubtator`][pipeline.brat.pubtator.from_pubtator]).

    Raises:
        PubtatorFormatError: If the PubTator file cannot be read or has a malformed line
            ([`PubtatorFormatError`][pipeline.sources.pubtator_format.PubtatorFormatError]).
        ValueError: If the sidecar is malformed.
    """
    counts = counts if counts is not None else Counter()
    side = Path(sidecar) if sidecar is not None else sidecar_path(path)
    sentences = read_sidecar(side) if side.is_file() else None
    return from_pubtator(read_pubtator(Path(path)), sentences, counts)
