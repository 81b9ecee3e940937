r"""Sentence records -> a brat collection for annotators.

One ``{PMID}_{k}.txt`` / ``{PMID}_{k}.ann`` pair per sentence (UTF-8, ``\n``
line ends), ``k`` = ``index + 1`` of the [`SentenceRecord`][pipeline.documents.SentenceRecord] (1-based,
the title is sentence 1); offsets in the ``.ann`` are the record's sentence-relative half-open offsets, i.e.
offsets into the ``.txt``.  The collection also gets ``annotation.conf``, ``visual.conf``, ``tools.conf`` and
``kb_shortcuts.conf`` ([`pipeline.brat.conf`][pipeline.brat.conf]).

Per annotation:

* a ``T`` line; ids ``T1..Tn`` are assigned over the entities sorted by
  (start, end, type) (then fragments and source, for ties).  Discontiguous
  entities are written ``start end;start end`` with the fragment texts
  joined by single spaces.  A fragment never crosses a newline: it is split
  at each ``\n`` and the pieces are stripped of surrounding whitespace;
  fragments that touch or overlap are merged (brat rejects both).
* no ``AnnotatorNotes`` by default (``notes="none"``): machine provenance
  never goes into brat notes, which belong to the annotators (and, on a
  relation, hold its modality: [`pipeline.brat.modality`][pipeline.brat.modality]).
  ``notes="composites"`` writes on a composite entity an ``AnnotatorNotes``
  line ``source=...; class=...; rule=...; key=start-end,...`` (whatever is
  known), ``notes="all"`` one on every entity (for inspection outside a
  campaign only).  The provenance of *every* entity (sources,
  original types, ontology classes, rules, key entities, identifiers) goes to
  the collection's ``provenance.jsonl`` ([`pipeline.brat.provenance`][pipeline.brat.provenance]),
  which brat does not list and ``stats`` and ``agreement --preannotation``
  read;
* a ``Reference`` normalization line per identifier that has a database
  form brat can link ([`normalize_identifier`][pipeline.corpus.brat_export.normalize_identifier]:
  ``MESH:D014859``,
  ``NCBIGene:1559``, ``dbSNP:rs1057910``, ``HGNC:...``, ``CHEBI:...``, ``OMIM:...``,
  ``NCBITaxon:...``);
* an ``A`` line ``Composite`` for a composite entity (source ``ontology``),
  which visual.conf draws with a dashed border.

Per relation of the record (pre-annotated by the relation stage):

* a plain ``R`` line ``R<n><TAB>type Arg1:T<i> Arg2:T<j>``, ids assigned
  over the relations sorted by (Arg1 id, Arg2 id, type); its modality, if any,
  in the relation's one ``AnnotatorNotes`` line in the grammar of
  [`pipeline.brat.modality`][pipeline.brat.modality] (``hyp``, ``neg``); rule, trigger and source
  go to ``provenance.jsonl`` only.  A relation whose type is not a schema
  relation type (``relation_unknown_type``) or one of whose arguments was
  not written (``relation_argument_dropped``) is not written; two relations
  that became one (same type and ids once duplicate entities are merged)
  are written once, with the union of their modalities
  (``relation_duplicates_merged``).

Exact duplicates (same fragments and type, e.g. PubTator and the local
annotator finding the same mention) are written once; their notes list
every source.  An annotation is never written when its offsets fall outside
the sentence or its recorded text differs from the sentence text at those
offsets (``misaligned``), when its type is not a schema type and cannot be
mapped to one (``unknown_type``) or maps to nothing (``unmapped_type``), or
when nothing is left of it after splitting at newlines
(``empty_fragments``); each is counted and logged with the sentence name.

Count keys: ``records``, ``documents``, ``entities``, ``relations``, ``relation_notes``,
``relation_unknown_type``, ``relation_argument_dropped``, ``relation_duplicates_merged``,
``notes``, ``provenance_rows``,
``normalizations``, ``composite_entities``, ``duplicates_merged``,
``misaligned``, ``out_of_bounds``, ``unknown_type``, ``unmapped_type``,
``empty_fragments``, ``fragments_split_at_newline``, ``fragments_merged``,
``identifier_unmapped``, ``duplicate_names``.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline import durable
from pipeline.brat.conf import BratSettings, load_settings, write_conf_files
from pipeline.brat.modality import format_note
from pipeline.brat.provenance import provenance_row, relation_provenance_row, write_provenance
from pipeline.brat.standoff import Attribute, BratDocument, Normalization, Note, Relation, TextBound, write_document
from pipeline.documents import Annotation, SentenceRecord, Span, record_sort_key
from pipeline.schema import Schema
from pipeline.store import MemberLine

log = logging.getLogger(__name__)

NOTE_MODES = ("composites", "all", "none")

#: Database prefixes written as they are (after case normalisation).
_KNOWN_DBS = {
    "mesh": "MESH",
    "chebi": "CHEBI",
    "omim": "OMIM",
    "hgnc": "HGNC",
    "ncbigene": "NCBIGene",
    "gene": "NCBIGene",
    "entrez": "NCBIGene",
    "ncbitaxon": "NCBITaxon",
    "taxonomy": "NCBITaxon",
    "dbsnp": "dbSNP",
    "rs#": "dbSNP",
    "cvcl": "Cellosaurus",
}
_RS_RE = re.compile(r"^rs\d+$", re.IGNORECASE)
_GENE_TYPES = {"Gene", "Gene_or_protein", "GeneProduct"}
_SPECIES_TYPES = {"Species", "Organism"}


def normalize_identifier(identifier: str | None, type_: str | None = None) -> list[tuple[str, str]]:
    """Turn a pre-annotation identifier into brat's ``DB:ID`` normalizations.

    Handles the PubTator forms: ``MESH:D014859``; bare numbers (NCBI Gene ids
    for genes, taxonomy ids for species, told apart by ``type_``); several
    ids joined by ``;`` or ``,``; ``rs1057910``; tmVar/PubTator3 variant
    strings (``tmVar:p|SUB|...;HGVS:...;RS#:1799853;CorrespondingGene:1559``)
    of which only the dbSNP id is kept (the gene is the gene's, not the
    variant's).  Anything else that has no known database prefix is left out.

    Args:
        identifier: The annotation's identifier as the source wrote it; None, ``""`` and ``-`` give nothing.
        type_: The annotation's (original) type, telling a bare number's database; None reads it as a gene.

    Returns:
        ``(db, id)`` pairs (``("MESH", "D014859")``), de-duplicated, in the identifier's order.
    """
    if not identifier:
        return []
    out: list[tuple[str, str]] = []
    for part in re.split(r"[;,]", identifier):
        part = part.strip()
        if not part or part == "-":
            continue
        if _RS_RE.match(part):
            out.append(("dbSNP", "rs" + part[2:]))
            continue
        if part.isdigit():
            if type_ in _SPECIES_TYPES:
                out.append(("NCBITaxon", part))
            elif type_ is None or type_ in _GENE_TYPES:
                out.append(("NCBIGene", part))
            continue
        db, sep, local = part.partition(":")
        if not sep or not local or " " in local or "\t" in local:
            continue
        key = db.strip().lower()
        if key == "correspondinggene":
            continue
        if key == "rs#" or (key == "dbsnp" and local.isdigit()):
            out.append(("dbSNP", "rs" + local.strip()))
        elif key in _KNOWN_DBS:
            name = _KNOWN_DBS[key]
            # HGNC/CHEBI ids are written without their repeated prefix (HGNC:HGNC:123 -> HGNC:123)
            local = local.strip()
            if local.upper().startswith(name.upper() + ":"):
                local = local[len(name) + 1 :]
            out.append((name, local))
    return list(dict.fromkeys(out))  # de-duplicated, first occurrence order


def brat_fragments(text: str, fragments: Sequence[Span], counts: Counter[str]) -> tuple[Span, ...]:
    """Make fragments brat-safe: split at newlines, stripped, touching or overlapping ones merged.

    Args:
        text: The text the fragments index (the sentence).
        fragments: Half-open offsets into ``text``.
        counts: ``fragments_split_at_newline`` and ``fragments_merged``, updated in place.

    Returns:
        The new fragments, half-open offsets into ``text``, sorted; empty when nothing but whitespace
        was covered.
    """
    pieces: list[Span] = []
    for start, end in sorted(fragments):
        segment_start = start
        split = False
        for i in range(start, end + 1):
            if i == end or text[i] == "\n":
                if i < end:
                    split = True
                s, e = segment_start, i
                while s < e and text[s].isspace():
                    s += 1
                while e > s and text[e - 1].isspace():
                    e -= 1
                if e > s:
                    pieces.append((s, e))
                segment_start = i + 1
        if split:
            counts["fragments_split_at_newline"] += 1
    merged: list[Span] = []
    for s, e in sorted(pieces):
        # brat rejects fragments that overlap or even touch (end == next start)
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            counts["fragments_merged"] += 1
        else:
            merged.append((s, e))
    return tuple(merged)


@dataclass
class _Entity:
    fragments: tuple[Span, ...]
    type: str
    members: list[Annotation]

    @property
    def start(self) -> int:
        return self.fragments[0][0]

    @property
    def end(self) -> int:
        return max(e for _, e in self.fragments)


def _schema_type(annotation: Annotation, schema: Schema) -> tuple[str | None, str]:
    """(schema type or None, reason when None)."""
    if annotation.type in schema.entity_parent:
        return annotation.type, ""
    try:
        mapped = schema.map_type(annotation.source, annotation.type)
    except KeyError:
        return None, "unknown_type"
    return (mapped, "") if mapped is not None else (None, "unmapped_type")


def _note(entity: _Entity) -> str:
    parts: list[str] = []
    sources = sorted({a.source for a in entity.members})
    parts.append("source=" + ",".join(sources))
    originals = sorted({a.original_type for a in entity.members if a.original_type and a.original_type != entity.type})
    if originals:
        parts.append("original_type=" + ",".join(originals))
    classes = sorted({a.ontology_class for a in entity.members if a.ontology_class})
    if classes:
        parts.append("class=" + ",".join(classes))
    rules = sorted({a.rule for a in entity.members if a.rule})
    if rules:
        parts.append("rule=" + ",".join(rules))
    keys = sorted({a.key for a in entity.members if a.key})
    if keys:
        parts.append("key=" + ",".join("+".join(f"{s}-{e}" for s, e in key) for key in keys))
    # a note is one line of one tab-separated column
    return re.sub(r"[\t\r\n]+", " ", "; ".join(parts))


def sentence_document(
    record: SentenceRecord, schema: Schema, counts: Counter[str], *, composite_attribute: str = "Composite",
    notes: str = "none", provenance: list[dict[str, Any]] | None = None,
) -> BratDocument:
    """Build the brat document of one sentence record (see the module docstring for what is dropped).

    Args:
        record: The sentence; its annotations' offsets are sentence-relative, half-open.
        schema: The annotation schema: entity and relation types, and the mapping of source types.
        counts: Count keys (see the module docstring), updated in place.
        composite_attribute: Name of the attribute marking a composite entity.
        notes: Which entities get an AnnotatorNotes line: ``"none"``, ``"composites"`` or ``"all"``
            (``NOTE_MODES``).
        provenance: A list that receives one
            [`provenance_row`][pipeline.brat.provenance.provenance_row] per entity written, then one
            [`relation_provenance_row`][pipeline.brat.provenance.relation_provenance_row] per relation;
            None to skip them.

    Returns:
        The document, named ``{pmid}_{index + 1}``; its offsets are half-open, into the sentence text
        (the ``.txt``).  Nothing is written.

    Raises:
        ValueError: If ``notes`` is not one of ``NOTE_MODES``.
    """
    if notes not in NOTE_MODES:
        raise ValueError(f"notes must be one of {', '.join(NOTE_MODES)}, got {notes!r}")
    text = record.text
    name = record.name
    grouped: dict[tuple[tuple[Span, ...], str], _Entity] = {}
    entity_of: dict[int, tuple[tuple[Span, ...], str]] = {}  # annotation index -> written entity
    for index, ann in enumerate(record.annotations):
        if ann.start < 0 or ann.end > len(text):
            counts["out_of_bounds"] += 1
            log.warning("%s: %s %r %s lies outside the sentence (length %d); not written",
                        name, ann.type, ann.text, ann.fragments, len(text))
            continue
        if ann.text and ann.covered(text) != ann.text:
            counts["misaligned"] += 1
            log.warning("%s: %s %s covers %r, not %r; not written",
                        name, ann.type, ann.fragments, ann.covered(text), ann.text)
            continue
        type_, why = _schema_type(ann, schema)
        if type_ is None:
            counts[why] += 1
            log.warning("%s: %s type %r of %r is not a schema type (%s); not written",
                        name, ann.source, ann.type, ann.text, why)
            continue
        fragments = brat_fragments(text, ann.fragments, counts)
        if not fragments:
            counts["empty_fragments"] += 1
            log.warning("%s: %s %r covers only whitespace; not written", name, ann.type, ann.text)
            continue
        key = (fragments, type_)
        entity_of[index] = key
        if key in grouped:
            counts["duplicates_merged"] += 1
            grouped[key].members.append(ann)
        else:
            grouped[key] = _Entity(fragments, type_, [ann])

    doc = BratDocument(name=name, text=text)
    entities = sorted(
        grouped.values(),
        key=lambda e: (e.start, e.end, e.type, e.fragments, sorted(a.source for a in e.members)),
    )
    tids: dict[tuple[tuple[Span, ...], str], str] = {}
    for i, entity in enumerate(entities, 1):
        tid = f"T{i}"
        tids[(entity.fragments, entity.type)] = tid
        covered = " ".join(text[s:e] for s, e in entity.fragments)
        textbound = TextBound(tid, entity.type, entity.fragments, covered)
        doc.textbounds.append(textbound)
        composite = all(a.source == "ontology" for a in entity.members)
        if notes == "all" or (notes == "composites" and composite):
            doc.notes.append(Note(f"#{len(doc.notes) + 1}", "AnnotatorNotes", tid, _note(entity)))
        if provenance is not None:
            provenance.append(provenance_row(name, textbound, entity.members))
        if composite:
            doc.attributes.append(Attribute(f"A{len(doc.attributes) + 1}", composite_attribute, tid))
            counts["composite_entities"] += 1
        for member in entity.members:
            pairs = normalize_identifier(member.identifier, member.original_type or member.type)
            if member.identifier and not pairs and member.identifier.strip() not in ("", "-"):
                counts["identifier_unmapped"] += 1
            for db, db_id in pairs:
                if any(n.target == tid and (n.db, n.db_id) == (db, db_id) for n in doc.normalizations):
                    continue
                doc.normalizations.append(
                    Normalization(f"N{len(doc.normalizations) + 1}", "Reference", tid, db, db_id, covered)
                )
    _write_relations(record, doc, schema, {i: tids[k] for i, k in entity_of.items()}, counts, provenance)
    counts["entities"] += len(doc.textbounds)
    counts["notes"] += len(doc.notes)
    counts["normalizations"] += len(doc.normalizations)
    return doc


def _write_relations(
    record: SentenceRecord, doc: BratDocument, schema: Schema, tid_of: Mapping[int, str], counts: Counter[str],
    provenance: list[dict[str, Any]] | None,
) -> None:
    """The record's relations as ``R`` lines (and modality notes) of ``doc``; see the module docstring."""
    merged: dict[tuple[str, str, str], list[Any]] = {}
    for rel in record.relations:
        if rel.type not in schema.relation_parent:
            counts["relation_unknown_type"] += 1
            log.warning("%s: relation type %r is not a schema relation type; not written", record.name, rel.type)
            continue
        arg1, arg2 = tid_of.get(rel.arg1), tid_of.get(rel.arg2)
        if arg1 is None or arg2 is None or arg1 == arg2:
            counts["relation_argument_dropped"] += 1
            log.warning("%s: %s relation between annotations %d and %d: an argument was not written; not written",
                        record.name, rel.type, rel.arg1, rel.arg2)
            continue
        key = (arg1, arg2, rel.type)
        if key in merged:
            counts["relation_duplicates_merged"] += 1
            merged[key].append(rel)
        else:
            merged[key] = [rel]
    def order(key: tuple[str, str, str]) -> tuple[int, int, str]:
        return (int(key[0][1:]), int(key[1][1:]), key[2])

    for n, key in enumerate(sorted(merged, key=order), 1):
        arg1, arg2, type_ = key
        members = merged[key]
        rid = f"R{n}"
        doc.relations.append(Relation(rid, type_, (("Arg1", arg1), ("Arg2", arg2))))
        note = format_note({m for rel in members for m in rel.modality})
        if note:
            doc.notes.append(Note(f"#{len(doc.notes) + 1}", "AnnotatorNotes", rid, note))
            counts["relation_notes"] += 1
        if provenance is not None:
            provenance.append(relation_provenance_row(record.name, doc.relations[-1], members))
    counts["relations"] += len(merged)


def export_collection(
    records: Sequence[SentenceRecord],
    out_dir: Path,
    schema: Schema,
    counts: Counter[str],
    *,
    settings: BratSettings | None = None,
    notes: str = "none",
) -> None:
    """Write sentence records as a brat collection, with its configuration files and ``provenance.jsonl``.

    Documents are written in (PMID, index) order; a second record with the
    same name is skipped and counted (``duplicate_names``).  Files are written in place, not
    atomically.

    Args:
        records: The sentences, in any order.
        out_dir: The collection directory, created when missing.
        schema: The annotation schema.
        counts: Count keys (see the module docstring), updated in place.
        settings: The brat settings; None to read ``config/brat/brat.yaml`` with
            [`load_settings`][pipeline.brat.conf.load_settings].
        notes: Which entities get an AnnotatorNotes line; see
            [`sentence_document`][pipeline.corpus.brat_export.sentence_document].
    """
    settings = settings or load_settings()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_conf_files(out, schema, settings)
    seen: set[str] = set()
    provenance: list[dict[str, Any]] = []
    for record in sorted(records, key=record_sort_key):
        counts["records"] += 1
        if record.name in seen:
            counts["duplicate_names"] += 1
            log.warning("sentence %s appears twice; writing the first only", record.name)
            continue
        seen.add(record.name)
        doc = sentence_document(record, schema, counts, composite_attribute=settings.composite_attribute,
                                notes=notes, provenance=provenance)
        write_document(out, doc)
        counts["documents"] += 1
    write_provenance(out, provenance)
    counts["provenance_rows"] += len(provenance)


SETTINGS_FILE = "preannotation.json"
"""The collection's pre-annotation settings, beside the documents (brat lists only ``.txt`` files).

A campaign keeps a copy in ``preannotation/`` so that ``campaign append`` can refuse another setting.
"""


def write_settings(directory: Path, *, relations: bool) -> Path:
    """Write a collection's pre-annotation settings.

    Args:
        directory: The collection root.
        relations: Whether relations were pre-annotated.

    Returns:
        The path written, ``directory/preannotation.json`` (overwritten in place, not atomically).
    """
    import json

    path = Path(directory) / SETTINGS_FILE
    path.write_text(json.dumps({"relations": relations}, sort_keys=True) + "\n", encoding="utf-8", newline="\n")
    return path


def read_settings(directory: Path) -> dict[str, Any]:
    """Read a collection's pre-annotation settings.

    Args:
        directory: The collection root.

    Returns:
        The settings object of ``directory/preannotation.json``; ``{"relations": False}`` when there is no
        such file (a collection written before relations existed).

    Raises:
        ValueError: Naming the file, when it cannot be read, is not JSON or not a JSON object.
    """
    import json

    path = Path(directory) / SETTINGS_FILE
    if not path.is_file():
        return {"relations": False}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: not readable as JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return data


def _line(item: bytes | MemberLine) -> bytes:
    return item.line if isinstance(item, MemberLine) else item


#: version of the memo ``export_collection_reusing`` returns (an older one is not used)
EXPORT_MEMO_FORMAT = 4  # 4: relations (R lines, modality notes, provenance rows)


def export_collection_reusing(
    record_lines: Iterable[bytes | MemberLine],
    out_dir: Path,
    schema: Schema,
    counts: Counter[str],
    earlier: Mapping[str, Any] | None,
    *,
    settings: BratSettings | None = None,
    notes: str = "none",
    recycle_within: Path | None = None,
    keep: Collection[Path] = (),
) -> dict[str, Any]:
    """Write a brat collection from the store's JSON lines, reusing earlier exports.

    Like [`export_collection`][pipeline.corpus.brat_export.export_collection], but
    ``earlier`` is what a previous call returned (its memo): a record whose
    line is unchanged gets hard links to the ``.txt``/``.ann`` files written
    then (files are never modified in place) and its counts and provenance
    lines back (read from that export's ``provenance.jsonl``), without being
    decoded.  The collection is byte-identical to
    [`export_collection`][pipeline.corpus.brat_export.export_collection]'s
    (records in (PMID, index) order, numeric PMIDs: each record's provenance
    rows then sort together).

    With ``recycle_within``, the export before the earlier one (the memo's
    ``spare``), when it lies under that directory and is none of ``keep`` (the
    published collection), becomes ``out_dir`` by one rename: its files of
    unchanged sentences stay, only changed and new sentences are linked or
    written, and every other file is removed.  A rebuild then costs file
    operations for what changed, not one hard link per sentence.

    Args:
        record_lines: The sentence records as store lines (or member lines carrying their digest), in
            (PMID, index) order.
        out_dir: The collection directory, created when missing.
        schema: The annotation schema.
        counts: Count keys (see the module docstring), updated in place.
        earlier: The memo a previous call returned; None (or a memo of another format or ``notes``
            setting) to write every sentence.
        settings: The brat settings; None to read ``config/brat/brat.yaml`` with
            [`load_settings`][pipeline.brat.conf.load_settings].
        notes: Which entities get an AnnotatorNotes line; see
            [`sentence_document`][pipeline.corpus.brat_export.sentence_document].
        recycle_within: Directory under which the memo's spare collection may be recycled; None never
            recycles.
        keep: Collections never recycled (the published one); the earlier export is never recycled either.

    Returns:
        The memo of this export (JSON-ready): ``format``, ``collection`` (``out_dir``), ``notes``,
        ``records`` (line digest -> ``[name, counts, provenance rows, byte offset, byte length]`` in
        ``provenance.jsonl``) and ``spare`` (the earlier export, for the next call to recycle, or None).
    """
    import contextlib
    import json
    import os

    from pipeline.brat.provenance import PROVENANCE_FILE, provenance_text
    from pipeline.documents import from_dict
    from pipeline.memo import digest_line

    settings = settings or load_settings()
    out = Path(out_dir)
    known: Mapping[str, Any] = {}
    before, after = "", str(out)
    files = contextlib.ExitStack()
    # earlier provenance rows are read by byte range and new ones written as they come: the file
    # is as large as the memo once was (27 MB at 19,000 sentences) and is never held whole
    before_rows = -1
    if earlier and earlier.get("format") == EXPORT_MEMO_FORMAT and earlier.get("notes") == notes:
        before = str(earlier["collection"])
        try:
            before_rows = files.enter_context(open(Path(before) / PROVENANCE_FILE, "rb")).fileno()
            known = earlier["records"]
        except OSError:
            known = {}  # the earlier export is gone: write everything
    with files:
        kept = [*keep, *([Path(before)] if before else [])]
        present = _recycle(out, earlier if known else None, recycle_within, kept)
        out.mkdir(parents=True, exist_ok=True)
        write_conf_files(out, schema, settings)
        seen: set[str] = set()
        rows_out = files.enter_context(open(out / PROVENANCE_FILE, "wb"))
        offset = 0
        records: dict[str, Any] = {}
        for item in record_lines:
            # a MemberLine carries its digest and is decompressed only for a record to write
            digest = item.digest if isinstance(item, MemberLine) else digest_line(item)
            entry = known.get(digest)
            counts["records"] += 1
            if entry is not None:
                name, delta, n_rows, start, length = entry
                prov = os.pread(before_rows, length, start)
                if len(prov) != length:  # the earlier file was cut short: make this sentence again
                    entry = None
            if entry is None:
                record = from_dict(SentenceRecord, json.loads(_line(item)))
                name = record.name
            if name in seen:
                counts["duplicate_names"] += 1
                log.warning("sentence %s appears twice; writing the first only", name)
                continue
            seen.add(name)
            there = present.pop(name, None)
            done = entry is not None and there == digest  # recycled: this sentence's files are already here
            if not done and there is not None:
                for suffix in (".txt", ".ann"):
                    os.unlink(f"{after}/{name}{suffix}")  # never written in place: other exports share them
            if not done and entry is not None:
                try:
                    for suffix in (".txt", ".ann"):
                        os.link(f"{before}/{name}{suffix}", f"{after}/{name}{suffix}")
                    done = True
                except OSError:
                    for suffix in (".txt", ".ann"):
                        (out / f"{name}{suffix}").unlink(missing_ok=True)
            if not done:
                if entry is not None:
                    record = from_dict(SentenceRecord, json.loads(_line(item)))
                own: Counter[str] = Counter()
                rows: list[dict[str, Any]] = []
                doc = sentence_document(record, schema, own, notes=notes, provenance=rows,
                                        composite_attribute=settings.composite_attribute)
                write_document(out, doc)
                delta, prov, n_rows = dict(own), provenance_text(rows).encode("utf-8"), len(rows)
            for key, value in delta.items():
                counts[key] += value
            rows_out.write(prov)
            records[digest] = [name, delta, n_rows, offset, len(prov)]
            offset += len(prov)
            counts["documents"] += 1
            counts["provenance_rows"] += n_rows
        for name in present:  # recycled sentences that are no longer in the pool
            for suffix in (".txt", ".ann"):
                os.unlink(f"{after}/{name}{suffix}")
    spare = None
    if known and Path(before).is_dir():
        spare = {"collection": before, "names": {entry[0]: digest for digest, entry in known.items()}}
    return {"format": EXPORT_MEMO_FORMAT, "collection": str(out), "notes": notes, "records": records,
            "spare": spare}


def _recycle(out: Path, earlier: Mapping[str, Any] | None, within: Path | None,
             keep: Sequence[Path]) -> dict[str, str]:
    """Move the memo's spare collection to ``out`` (absent) and clear it; ``{sentence name: line digest}`` kept.

    Nothing happens (``{}``) unless the spare exists under ``within`` and is none of ``keep``.  What
    stays are the ``.txt``/``.ann`` pairs of the spare's sentences; anything else in it (the
    configuration and provenance files, a publication marker, a brat server's caches, half a pair)
    is removed, since the export writes it again.
    """
    import os
    import shutil

    spare = (earlier or {}).get("spare")
    if not spare or within is None:
        return {}
    source = Path(spare["collection"])
    try:
        resolved = source.resolve(strict=True)
        if not resolved.is_relative_to(within.resolve()) or any(resolved == k.resolve() for k in keep):
            return {}
        durable.rename(resolved, out)
    except OSError:
        return {}
    names: Mapping[str, str] = spare["names"]
    pairs: Counter[str] = Counter()
    with os.scandir(out) as entries:
        for entry in entries:
            stem, _, suffix = entry.name.rpartition(".")
            if suffix in ("txt", "ann") and stem in names and entry.is_file(follow_symlinks=False):
                pairs[stem] += 1
            elif entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            else:
                os.unlink(entry.path)
    present = {}
    for stem, n in pairs.items():
        if n == 2:
            present[stem] = names[stem]
        else:
            for suffix in (".txt", ".ann"):
                (out / f"{stem}{suffix}").unlink(missing_ok=True)
    log.info("brat export: recycled %s (%d sentences already there)", source, len(present))
    return present


@dataclass(frozen=True)
class ExportMemo:
    """Where a stage's brat export keeps its memo, and what it may recycle.

    Attributes:
        path: The memo file (``OUT/cache/memo/08_brat/<key>.json``, the key a hash of the stage's
            parameters without the sources).
        out: The build's output directory (``--out``): the memo names collections relative to it, so that
            a copied output directory is self-contained.
        collection: The final path of the collection being written (not the temporary it is written in).
        recycle_within: The stage's directory of exports (``OUT/work/08_brat``): only an export in it is
            recycled.
        keep: Collections never recycled (the published ``OUT/brat``).
    """

    path: Path
    out: Path
    collection: Path
    recycle_within: Path
    keep: tuple[Path, ...] = ()


def _read_export_memo(memo: ExportMemo) -> dict[str, Any] | None:
    from pipeline import store

    try:
        earlier = store.read_json(memo.path) if memo.path.is_file() else None
    except (OSError, ValueError) as exc:
        # a cache, as the shard memos and the sample's keys are: unreadable means absent
        log.warning("%s: brat export memo not readable (%s); exporting every sentence again", memo.path, exc)
        return None
    for part in (earlier, (earlier or {}).get("spare")):
        if isinstance(part, dict) and "collection" in part:
            part["collection"] = str(memo.out / part["collection"])
    return earlier


def export_shards(shard_dir: Path, out_dir: Path, schema: Schema, counts: Counter[str], *, relations: bool,
                  memo: ExportMemo) -> None:
    """Write the sentence records of a stage's shards as a brat collection, reusing the previous export's files.

    Unchanged sentences are hard links to the previous export's files (see
    [`export_collection_reusing`][pipeline.corpus.brat_export.export_collection_reusing]), whose memo is
    read from and written back to ``memo.path`` before the collection appears.  With non-numeric PMIDs
    (shard ``-1``, which sorts first although its records sort last) the records are decoded and
    exported the plain way ([`export_collection`][pipeline.corpus.brat_export.export_collection]),
    without a memo.  Either way the collection is the same bytes, its settings file included.

    Args:
        shard_dir: The stage's input: a directory of sentence record shards.
        out_dir: The collection's directory, written (the temporary of ``memo.collection``).
        schema: The annotation schema, written as the collection's configuration.
        counts: Updated with the export's counts (``records``, ``documents``, ``entities``...).
        relations: Whether relations were pre-annotated, recorded in the collection's settings file.
        memo: Where the export's memo is, and what may be recycled.
    """
    import json
    import os

    from pipeline import store

    shards = store.list_shards(shard_dir)
    # shard -1 is named shard--00001: compare numbers (comparing the text with "-1" never matched)
    if -1 in store.shard_ids(shard_dir):
        records = list(store.iter_directory(shard_dir, SentenceRecord))
        export_collection(records, out_dir, schema, counts)
        write_settings(out_dir, relations=relations)
        return
    earlier = _read_export_memo(memo)
    # lines with their digests from the member headers: unchanged ones are never decompressed
    lines = (line for path in shards for line in store.iter_member_lines(path))
    # the memo of this very export, written by a run killed before it published the collection
    own = earlier is not None and os.path.abspath(str(earlier.get("collection"))) == os.path.abspath(memo.collection)
    # unchanged sentences are hard links to the previous export's files, or already there in the export
    # before it, which is recycled unless it is one to keep
    found = export_collection_reusing(lines, out_dir, schema, counts, earlier,
                                      recycle_within=memo.recycle_within, keep=list(memo.keep))
    write_settings(out_dir, relations=relations)
    if own and earlier is not None:
        found["spare"] = earlier.get("spare")  # what the killed run had found, gone from its memo
    found["collection"] = os.path.relpath(memo.collection, memo.out)
    if found.get("spare"):
        found["spare"]["collection"] = os.path.relpath(found["spare"]["collection"], memo.out)
    # before the collection appears, so that the memo is never older than the output
    memo.path.parent.mkdir(parents=True, exist_ok=True)
    durable.replace_file(memo.path, json.dumps(found, sort_keys=True, separators=(",", ":")).encode("utf-8"))
