"""Checked reading of files from outside (BioC, PubTator, Parquet) into brat documents, for ``pgx-corpus import``.

A file that comes from outside is hostile until checked.  The readers of
[`pipeline.brat.export`][pipeline.brat.export], [`pipeline.brat.pubtator`][pipeline.brat.pubtator] and
[`pipeline.brat.bigbio`][pipeline.brat.bigbio] trust what they read (they read back the project's own
exports); here every record is checked before they see it, and every document they make is checked
before it is written:

* **Structure**: each field has the type the format says (a JSON number where a string belongs, a null
  Parquet id, an XML file whose root is not a BioC ``collection``: refused), and nothing is left out
  unread (BioC annotations outside a passage, BioC sentences: refused rather than lost).
* **Limits** ([`Limits`][pipeline.brat.intake.Limits]): offsets are checked against the text they point
  into before any text is built (a passage at offset 300,000,000 would make a 300 MB text); a document's
  text length, its annotations, and the size of the whole input once decompressed are bounded.  A
  refusal names the limit and its option.
* **Fields**: the document name ([`check_document_name`][pipeline.names.check_document_name]), annotation
  ids ([`check_annotation_id`][pipeline.names.check_annotation_id]: brat tells a line's kind by its id)
  and every field of every ``.ann`` line ([`dumps`][pipeline.brat.standoff.dumps], with the rules of
  [`pipeline.names`][pipeline.names]); the text must be encodable as UTF-8 (no lone surrogate).
* **Validity**: the ``.ann`` that would be written is parsed back and validated against the schema's
  ``annotation.conf`` ([`validate_document`][pipeline.brat.validate.validate_document]), as
  ``pgx-corpus validate`` would: bad offsets, unknown types, relations to missing entities are refused.
* **Uniqueness**: two documents of one name (duplicate BioC ids, one id in two Parquet splits, two
  sentences of one name in a PubTator sidecar), compared case-insensitively, are refused with both
  records named ([`Names`][pipeline.brat.intake.Names]).

Every refusal is an [`IntakeError`][pipeline.brat.intake.IntakeError] (a ``ValueError``) whose message starts
with the file and the record (``file:line: document 'x'``, ``file: row 3 (id 'x')``).  Documents are
yielded one at a time ([`iter_documents`][pipeline.brat.intake.iter_documents]); PubTator is streamed
record by record.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bioc
import pyarrow.parquet as pq
from lxml import etree

from pipeline.brat import bigbio
from pipeline.brat.export import from_bioc
from pipeline.brat.pubtator import SentenceSpan, from_pubtator, read_sidecar, sidecar_path
from pipeline.brat.standoff import BratDocument, dumps, parse_ann
from pipeline.brat.validate import AnnotationConf, validate_document
from pipeline.documents import TITLE_SEPARATOR
from pipeline.errors import InputError
from pipeline.names import NameError_, check_annotation_id, check_document_name
from pipeline.schema import Schema
from pipeline.sources.pubtator_format import PubtatorFormatError, PubtatorLimitError, PubtatorRecord, read_pubtator


class IntakeError(InputError):
    """An input refused by ``import``; the message starts with its file and record."""


@dataclass(frozen=True)
class Limits:
    """The bounds of an import (none reached by a real corpus), each raised by an ``import`` option.

    Attributes:
        max_text: The most characters a document's text may hold (``--max-text-chars``); an offset
            beyond it is refused before any text is built.
        max_annotations: The most annotations (every ``.ann`` line) a document may hold
            (``--max-annotations``).
        max_input: The most bytes the whole input may hold once decompressed (``--max-input-mb``):
            the files' sizes (a Parquet file's uncompressed size, a gzip PubTator file's decompressed
            size, its sidecar included).
    """

    max_text: int = 1_000_000
    max_annotations: int = 10_000
    max_input: int = 256 * 2**20


@dataclass(frozen=True)
class Item:
    """A document read from an input, with where it came from.

    Attributes:
        doc: The brat document (offsets half-open into its text).
        where: Its file and record, the start of every message about it.
    """

    doc: BratDocument
    where: str


@dataclass
class Names:
    """The document names written so far (case-folded: one file on a case-insensitive file system).

    Attributes:
        seen: Case-folded name -> where the document of that name came from.
    """

    seen: dict[str, str] = field(default_factory=dict)

    def add(self, item: Item) -> None:
        """Record a document's name.

        Args:
            item: The document and where it came from.

        Raises:
            IntakeError: If a document of that name (in any case) came before; both records named.
        """
        key = item.doc.name.casefold()
        if key in self.seen:
            raise IntakeError(f"{item.where}: document name {item.doc.name!r} is already taken by {self.seen[key]}: "
                              "two documents of one name, refused (one would overwrite the other)")
        self.seen[key] = item.where


def _refuse(where: str, message: str) -> IntakeError:
    return IntakeError(f"{where}: {message}")


def _limit(where: str, what: str, value: int, limit: int, option: str) -> IntakeError:
    return _refuse(where, f"{what} {value:,} is beyond the limit of {limit:,} ({option} raises it)")


def _check_size(path: Path, limits: Limits, used: int = 0) -> int:
    size = path.stat().st_size + used
    if size > limits.max_input:
        raise _limit(str(path), "input size (bytes)", size, limits.max_input, "--max-input-mb")
    return size


@contextlib.contextmanager
def _malformed(where: str) -> Iterator[None]:
    """What a reader raises on a record the checks let through is still a refusal naming the record."""
    try:
        yield
    except (TypeError, AttributeError, IndexError, KeyError, ValueError) as exc:
        raise _refuse(where, f"malformed record ({type(exc).__name__}: {exc})") from None


# --- checked structure --------------------------------------------------------------------------------

def _str(value: Any, where: str, what: str, *, optional: bool = False) -> str:
    if value is None and optional:
        return ""
    if not isinstance(value, str):
        raise _refuse(where, f"{what} is {_kind(value)}, not a string")
    return value


def _int(value: Any, where: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _refuse(where, f"{what} is {_kind(value)}, not an integer")
    if value < 0:
        raise _refuse(where, f"{what} {value} is negative")
    return value


def _list(value: Any, where: str, what: str, *, optional: bool = False) -> list[Any]:
    if value is None and optional:
        return []
    if not isinstance(value, list):
        raise _refuse(where, f"{what} is {_kind(value)}, not a list")
    return value


def _dict(value: Any, where: str, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _refuse(where, f"{what} is {_kind(value)}, not an object")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "missing (null)"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:37] + '...'}"


def _infons(value: Any, where: str, what: str) -> dict[str, str]:
    infons = _dict(value if value is not None else {}, where, f"{what} infons")
    for key, val in infons.items():
        _str(val, where, f"{what} infon {key!r}")
    return infons


def _check_count(n: int, where: str, limits: Limits) -> None:
    if n > limits.max_annotations:
        raise _limit(where, "annotations", n, limits.max_annotations, "--max-annotations")


# --- BioC ------------------------------------------------------------------------------------------

def _xml_infons(element: Any, where: str, what: str) -> dict[str, str]:
    out = {}
    for infon in element.findall("infon"):
        key = infon.get("key")
        if key is None:
            raise _refuse(f"{where} (line {infon.sourceline})", f"{what} infon without a key")
        out[key] = infon.text or ""
    return out


def _xml_int(element: Any, name: str, where: str, what: str) -> int:
    raw = element.get(name) if name in element.attrib else element.findtext(name)
    if raw is None or not raw.strip().isdigit() or len(raw.strip()) > 12:
        raise _refuse(f"{where} (line {element.sourceline})", f"{what} {name} {raw!r} is not a whole number")
    return int(raw.strip())


def _xml_document(element: Any, where: str) -> dict[str, Any]:
    """A BioC XML document as the dict of BioC JSON (what ``import`` reads of it)."""
    for tag in ("annotation", "relation"):
        if element.find(tag) is not None:
            raise _refuse(f"{where} (line {element.find(tag).sourceline})",
                          f"{tag}s outside a passage are not read by import: refused rather than lost")
    passages = []
    for p in element.findall("passage"):
        if p.find("sentence") is not None:
            raise _refuse(f"{where} (line {p.find('sentence').sourceline})",
                          "BioC sentences are not read by import: refused rather than lost")
        anns = [{"id": a.get("id"), "infons": _xml_infons(a, where, "annotation"), "line": a.sourceline,
                 "locations": [{"offset": _xml_int(loc, "offset", where, "location"),
                                "length": _xml_int(loc, "length", where, "location")}
                               for loc in a.findall("location")]}
                for a in p.findall("annotation")]
        rels = [{"id": r.get("id"), "infons": _xml_infons(r, where, "relation"), "line": r.sourceline,
                 "nodes": [{"refid": n.get("refid"), "role": n.get("role")} for n in r.findall("node")]}
                for r in p.findall("relation")]
        passages.append({"offset": _xml_int(p, "offset", where, "passage"), "text": p.findtext("text") or "",
                         "annotations": anns, "relations": rels, "line": p.sourceline})
    return {"id": element.findtext("id"), "passages": passages}


def _bioc_document(obj: Any, where: str, limits: Limits) -> bioc.BioCCollection:
    """Check one BioC document (as a JSON dict) and build it; offsets checked before any text is built."""
    obj = _dict(obj, where, "document")
    _str(obj.get("id"), where, "document id")
    for key in ("annotations", "relations"):
        if _list(obj.get(key), where, f"document {key}", optional=True):
            raise _refuse(where, f"{key} outside a passage are not read by import: refused rather than lost")
    bdoc = bioc.BioCDocument()
    bdoc.id = obj["id"]
    length, count = 0, 0
    for i, pobj in enumerate(_list(obj.get("passages"), where, "passages"), 1):
        pwhere = f"{where}, passage {i}" + (f" (line {pobj['line']})" if isinstance(pobj, dict) and "line" in pobj
                                            else "")
        pobj = _dict(pobj, pwhere, "passage")
        if _list(pobj.get("sentences"), pwhere, "sentences", optional=True):
            raise _refuse(pwhere, "BioC sentences are not read by import: refused rather than lost")
        offset = _int(pobj.get("offset"), pwhere, "passage offset")
        text = _str(pobj.get("text"), pwhere, "passage text", optional=True)
        if offset > limits.max_text:
            raise _limit(pwhere, "passage offset", offset, limits.max_text, "--max-text-chars")
        if offset < length:
            raise _refuse(pwhere, f"passage offset {offset} falls inside the text before it ({length} characters)")
        length = offset + len(text)
        if length > limits.max_text:
            raise _limit(pwhere, "text length", length, limits.max_text, "--max-text-chars")
        passage = bioc.BioCPassage()
        passage.offset, passage.text = offset, text
        anns = _list(pobj.get("annotations"), pwhere, "annotations", optional=True)
        rels = _list(pobj.get("relations"), pwhere, "relations", optional=True)
        count += len(anns) + len(rels)
        _check_count(count, where, limits)
        for aobj in anns:
            aobj = _dict(aobj, pwhere, "annotation")
            awhere = f"{where}, annotation {aobj.get('id')!r}" + (f" (line {aobj['line']})" if "line" in aobj else "")
            ann = bioc.BioCAnnotation()
            ann.id = _str(aobj.get("id"), awhere, "annotation id")
            ann.infons = _infons(aobj.get("infons"), awhere, "annotation")
            for lobj in _list(aobj.get("locations"), awhere, "locations"):
                lobj = _dict(lobj, awhere, "location")
                start, size = _int(lobj.get("offset"), awhere, "location offset"), _int(lobj.get("length"), awhere,
                                                                                         "location length")
                if start + size > limits.max_text:
                    raise _limit(awhere, "location end", start + size, limits.max_text, "--max-text-chars")
                ann.add_location(bioc.BioCLocation(start, size))
            passage.add_annotation(ann)
        for robj in rels:
            robj = _dict(robj, pwhere, "relation")
            rwhere = f"{where}, relation {robj.get('id')!r}" + (f" (line {robj['line']})" if "line" in robj else "")
            rel = bioc.BioCRelation()
            rel.id = _str(robj.get("id"), rwhere, "relation id")
            rel.infons = _infons(robj.get("infons"), rwhere, "relation")
            for nobj in _list(robj.get("nodes"), rwhere, "nodes"):
                nobj = _dict(nobj, rwhere, "node")
                rel.add_node(bioc.BioCNode(_str(nobj.get("refid"), rwhere, "node refid"),
                                           _str(nobj.get("role"), rwhere, "node role")))
            passage.add_relation(rel)
        bdoc.add_passage(passage)
    for passage in bdoc.passages:  # every location inside the text it points into
        for ann in passage.annotations:
            for loc in ann.locations:
                if loc.offset + loc.length > length:
                    raise _refuse(f"{where}, annotation {ann.id!r}", f"location {loc.offset}+{loc.length} ends "
                                  f"beyond the document's text ({length} characters)")
    collection = bioc.BioCCollection()
    collection.add_document(bdoc)
    return collection


def _bioc(path: Path, schema: Schema, limits: Limits) -> Iterator[Item]:
    _check_size(path, limits)
    if path.suffix == ".json":
        try:
            with path.open(encoding="utf-8") as fh:
                data = json.load(fh)
        except RecursionError:
            raise _refuse(str(path), "JSON nested too deeply to be BioC") from None
        if not isinstance(data, dict) or not isinstance(data.get("documents"), list):
            raise _refuse(str(path), "not a BioC JSON collection (an object with a 'documents' list)")
        docs: list[tuple[Any, str]] = [(d, f"{path}: document {i}" + (f" (id {d.get('id')!r})"
                                                                       if isinstance(d, dict) else ""))
                                       for i, d in enumerate(data["documents"], 1)]
    else:
        with path.open("rb") as fh:
            root = etree.parse(fh).getroot()  # lxml's defaults: no network, no external entity
        if root.tag != "collection":
            raise _refuse(str(path), f"not a BioC XML collection (its root element is <{root.tag}>, not "
                          "<collection>)")
        docs = []
        for i, element in enumerate(root.findall("document"), 1):
            where = f"{path}:{element.sourceline}: document {i} (id {element.findtext('id')!r})"
            docs.append((_xml_document(element, where), where))
    for obj, where in docs:
        collection = _bioc_document(obj, where, limits)
        with _malformed(where):
            (doc,) = from_bioc(collection, schema)
        yield Item(doc, where)


# --- Parquet --------------------------------------------------------------------------------------

def _offsets(value: Any, where: str, what: str) -> list[tuple[int, int]]:
    out = []
    for pair in _list(value, where, f"{what} offsets"):
        pair = _list(pair, where, f"{what} offset pair")
        if len(pair) != 2:
            raise _refuse(where, f"{what} offset pair {pair!r} is not [start, end]")
        out.append((_int(pair[0], where, f"{what} start"), _int(pair[1], where, f"{what} end")))
    return out


def _check_extras(item: Mapping[str, Any], where: str) -> int:
    notes = _list(item.get("notes"), where, "notes", optional=True)
    for note in notes:
        _str(note, where, "note")
    attributes = _list(item.get("attributes"), where, "attributes", optional=True)
    for attr in attributes:
        attr = _dict(attr, where, "attribute")
        _str(attr.get("name"), where, "attribute name")
        _str(attr.get("value"), where, "attribute value")
    return len(notes) + len(attributes)


def _check_source_row(row: dict[str, Any], where: str, limits: Limits) -> None:
    _str(row.get("id"), where, "id")
    text = _str(row.get("text"), where, "text")
    if len(text) > limits.max_text:
        raise _limit(where, "text length", len(text), limits.max_text, "--max-text-chars")
    count = 0
    for ent in _list(row.get("entities"), where, "entities"):
        ent = _dict(ent, where, "entity")
        ewhere = f"{where}, entity {ent.get('id')!r}"
        _str(ent.get("id"), ewhere, "entity id")
        _offsets(ent.get("offsets"), ewhere, "entity")
        normalized = _list(ent.get("normalized"), ewhere, "normalized")
        for n in normalized:
            n = _dict(n, ewhere, "normalization")
            _str(n.get("db_name"), ewhere, "db_name")
            _str(n.get("db_id"), ewhere, "db_id")
        count += 1 + len(normalized) + _check_extras(ent, ewhere)
    for rel in _list(row.get("relations"), where, "relations"):
        rel = _dict(rel, where, "relation")
        rwhere = f"{where}, relation {rel.get('id')!r}"
        for arg in _list(rel.get("arguments"), rwhere, "arguments"):
            arg = _dict(arg, rwhere, "argument")
            _str(arg.get("role"), rwhere, "argument role")
            _str(arg.get("ref_id"), rwhere, "argument ref_id")
        count += 1 + _check_extras(rel, rwhere)
    for ev in _list(row.get("events"), where, "events"):
        ev = _dict(ev, where, "event")
        vwhere = f"{where}, event {ev.get('id')!r}"
        for arg in _list(ev.get("arguments"), vwhere, "arguments"):
            arg = _dict(arg, vwhere, "argument")
            _str(arg.get("role"), vwhere, "argument role")
            _str(arg.get("ref_id"), vwhere, "argument ref_id")
        count += 1 + _check_extras(ev, vwhere)
    for eq in _list(row.get("equivalences"), where, "equivalences"):
        eq = _dict(eq, where, "equivalence")
        for member in _list(eq.get("entity_ids"), where, "equivalence entity_ids"):
            _str(member, where, "equivalence member")
        count += 1
    _check_count(count, where, limits)


def _check_kb_row(row: dict[str, Any], where: str, limits: Limits) -> None:
    if row.get("document_id") is None:
        _str(row.get("id"), where, "id (and document_id)")
    else:
        _str(row.get("document_id"), where, "document_id")
    length = 0
    for passage in _list(row.get("passages"), where, "passages"):
        passage = _dict(passage, where, "passage")
        texts = _list(passage.get("text"), where, "passage text")
        offsets = _offsets(passage.get("offsets"), where, "passage")
        if len(texts) != len(offsets):
            raise _refuse(where, f"passage {passage.get('id')!r} has {len(texts)} texts and {len(offsets)} offsets")
        for text, (start, _end) in zip(texts, offsets, strict=True):
            _str(text, where, "passage text")
            if start > limits.max_text:
                raise _limit(where, "passage offset", start, limits.max_text, "--max-text-chars")
            if start < length:
                raise _refuse(where, f"passage {passage.get('id')!r} at {start} falls inside the text before it "
                              f"({length} characters)")
            length = start + len(text)
            if length > limits.max_text:
                raise _limit(where, "text length", length, limits.max_text, "--max-text-chars")
    count = 0
    ids = set()
    for ent in _list(row.get("entities"), where, "entities"):
        ent = _dict(ent, where, "entity")
        ewhere = f"{where}, entity {ent.get('id')!r}"
        ids.add(_str(ent.get("id"), ewhere, "entity id"))
        _offsets(ent.get("offsets"), ewhere, "entity")
        normalized = _list(ent.get("normalized"), ewhere, "normalized")
        for n in normalized:
            n = _dict(n, ewhere, "normalization")
            _str(n.get("db_name"), ewhere, "db_name")
            _str(n.get("db_id"), ewhere, "db_id")
        count += 1 + len(normalized)
    for rel in _list(row.get("relations"), where, "relations"):
        rel = _dict(rel, where, "relation")
        rwhere = f"{where}, relation {rel.get('id')!r}"
        _str(rel.get("id"), rwhere, "relation id")
        for key in ("arg1_id", "arg2_id"):
            if _str(rel.get(key), rwhere, key) not in ids:
                raise _refuse(rwhere, f"{key} {rel[key]!r} is no entity of this row")
        count += 1
    _list(row.get("events"), where, "events", optional=True)
    _list(row.get("coreferences"), where, "coreferences", optional=True)
    _check_count(count, where, limits)


def _parquet(paths: list[Path], config: str, limits: Limits, counts: Counter[str]) -> Iterator[Item]:
    used = 0
    files = []
    for path in paths:  # every file's size, and its uncompressed size, before any row is read
        pf = pq.ParquetFile(path)
        meta = pf.metadata
        uncompressed = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
        used += max(uncompressed, path.stat().st_size)
        if used > limits.max_input:
            raise _limit(str(path), "input size once decompressed (bytes)", used, limits.max_input, "--max-input-mb")
        files.append((path, pf))
    for path, pf in files:
        index = 0
        for batch in pf.iter_batches(batch_size=64):
            used += batch.nbytes
            if used > limits.max_input:
                raise _limit(f"{path}: row {index + 1}", "input size once decompressed (bytes)", used,
                             limits.max_input, "--max-input-mb")
            for row in batch.to_pylist():
                index += 1
                name = row.get("id") if config == "source" else (row.get("document_id") or row.get("id"))
                where = f"{path}: row {index} (id {name!r})"
                if config == "source":
                    _check_source_row(row, where, limits)
                    with _malformed(where):
                        (doc,) = bigbio.from_source_rows([row])
                else:
                    _check_kb_row(row, where, limits)
                    with _malformed(where):
                        (doc,) = bigbio.from_kb_rows([row])
                    lost = bigbio.kb_losses([row])
                    counts["events_not_imported"] += lost["events"]
                    counts["coreferences_not_imported"] += lost["coreferences"]
                yield Item(doc, where)


# --- PubTator -------------------------------------------------------------------------------------

def _pubtator(path: Path, limits: Limits, counts: Counter[str], require_key: bool) -> Iterator[Item]:
    side = sidecar_path(path)
    sentences = None
    used = 0
    if side.is_file():
        used = _check_size(side, limits)
        sentences = read_sidecar(side)
    records = read_pubtator(path, max_bytes=limits.max_input - used, max_line=limits.max_text + 100,
                            max_block_lines=limits.max_annotations, refuse_duplicates=True)
    try:
        yield from _pubtator_records(path, records, sentences, limits, counts, require_key)
    except PubtatorLimitError as exc:
        raise IntakeError(f"{exc} ({_OPTIONS[exc.limit]} raises it)") from None


_OPTIONS = {"max_bytes": "--max-input-mb", "max_line": "--max-text-chars", "max_block_lines": "--max-annotations"}


def _pubtator_records(path: Path, records: Iterator[PubtatorRecord], sentences: dict[str, list[SentenceSpan]] | None,
                      limits: Limits, counts: Counter[str], require_key: bool) -> Iterator[Item]:
    side = sidecar_path(path)
    for rec in records:
        for a in rec.annotations:
            if a.extra:
                continue
            # six columns: nothing links the fragments of a discontiguous entity, so each line becomes an
            # entity of its own, and how many were split cannot be counted: refused unless asked for
            if require_key:
                raise _refuse(f"{path}:{a.line}", f"entity line of document {rec.pmid!r} has no key column (six "
                              "columns): the fragments of a discontiguous entity cannot be told apart from "
                              "separate entities; refused (--no-key-column reads each line as one entity)")
            counts["entity_lines_without_key"] += 1
        where = f"{path}:{rec.line}: document {rec.pmid!r}"
        text = rec.title + TITLE_SEPARATOR + rec.abstract if rec.abstract else rec.title
        if len(text) > limits.max_text:
            raise _limit(where, "text length", len(text), limits.max_text, "--max-text-chars")
        for a in rec.annotations:
            if not a.start <= a.end <= len(text):
                raise _refuse(f"{path}:{a.line}", f"offsets {a.start} {a.end} lie outside the text of document "
                              f"{rec.pmid!r} ({len(text)} characters)")
        for span in (sentences or {}).get(rec.pmid, ()):
            check_document_name(span.sentence, f"{side}:{span.line}")
            if span.end > len(text):
                raise _refuse(f"{side}:{span.line}", f"sentence {span.sentence!r} ends at {span.end}, beyond the "
                              f"text of document {rec.pmid!r} ({len(text)} characters)")
        with _malformed(where):
            docs = from_pubtator([rec], sentences, counts)
        for doc in docs:
            yield Item(doc, f"{where}, sentence {doc.name!r}" if sentences and rec.pmid in sentences else where)


# --- every format ---------------------------------------------------------------------------------

def iter_documents(src: Path, fmt: str, schema: Schema, limits: Limits | None = None,
                   counts: Counter[str] | None = None, *, require_key: bool = True) -> Iterator[Item]:
    """Read an input's documents one at a time, each checked (structure and limits) before it is built.

    Args:
        src: The input: a BioC ``.xml``/``.json`` file, a PubTator file (plain or gzip; its
            ``.sentences.tsv`` beside it is read when there), a Parquet file or a directory of them.
        fmt: ``bioc``, ``pubtator``, ``bigbio_kb`` or ``source``.
        schema: The corpus schema (the BioC reader's modality attributes).
        limits: The bounds; the defaults of [`Limits`][pipeline.brat.intake.Limits] when None.
        counts: Updated in place when given: what a reader counts (PubTator's ``entities_unplaced``,
            ``relations_unplaced``, ``identifiers_unreadable``, ``entity_lines_without_key``; bigbio_kb's
            ``events_not_imported`` and ``coreferences_not_imported``...).
        require_key: PubTator only: refuse an entity line without the key column (the seventh, which links
            the fragments of a discontiguous entity); when False, each such line is one entity (counted as
            ``entity_lines_without_key``).

    Yields:
        The documents with their file and record, in input order; not yet checked as documents (see
            [`check_document`][pipeline.brat.intake.check_document]).

    Raises:
        IntakeError: For a record refused (its file and record named), a limit passed, or a PubTator entity
            line without the key column while ``require_key``.
        PubtatorFormatError: For a malformed PubTator line or file (``file:line``).
        ValueError: Also for a malformed sidecar, unreadable JSON or XML (lxml's ``XMLSyntaxError`` is a
            ``SyntaxError``), an unknown format (``KeyError``).
        OSError: If the input cannot be read.
    """
    limits = limits or Limits()
    counts = counts if counts is not None else Counter()
    if fmt == "bioc":
        yield from _bioc(src, schema, limits)
    elif fmt == "pubtator":
        yield from _pubtator(src, limits, counts, require_key)
    elif fmt in ("bigbio_kb", "source"):
        paths = sorted(src.glob("*.parquet")) if src.is_dir() else [src]
        yield from _parquet(paths, fmt, limits, counts)
    else:
        raise KeyError(f"unknown input format {fmt!r}")


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def check_document(item: Item, conf: AnnotationConf, limits: Limits | None = None) -> str:
    """Check a document before it is written, and give its ``.ann`` content.

    Args:
        item: The document and where it came from.
        conf: The ``annotation.conf`` it will be written with (parsed).
        limits: The bounds (defaults when None).

    Returns:
        The ``.ann`` content to write.

    Raises:
        IntakeError: If its name, an annotation id or a field cannot be written as it is, its text cannot be
            encoded (a lone surrogate), it holds more annotations than the limit, or what would be written
            does not validate; the message names the file and record (and the problems, the first five).
    """
    limits = limits or Limits()
    doc, where = item.doc, item.where
    try:
        check_document_name(doc.name, where)
        for group, kind in ((doc.textbounds, "T"), (doc.relations, "R"), (doc.events, "E"), (doc.attributes, "A"),
                            (doc.normalizations, "N"), (doc.notes, "#")):
            for a in group:
                check_annotation_id(a.id, kind, where)
        ann = dumps(doc, where)
    except NameError_ as exc:
        raise IntakeError(str(exc)) from None
    total = sum(len(g) for g in (doc.textbounds, doc.relations, doc.events, doc.attributes, doc.normalizations,
                                 doc.notes, doc.equivs))
    _check_count(total, where, limits)
    if len(doc.text) > limits.max_text:
        raise _limit(where, "text length", len(doc.text), limits.max_text, "--max-text-chars")
    bad = _SURROGATE.search(doc.text)
    if bad is not None:
        raise _refuse(where, f"the text holds a lone surrogate at {bad.start()} (not encodable as UTF-8)")
    parsed, issues = parse_ann(doc.name, doc.text, ann, where)
    problems = [f".ann line {i.line}: {i.message}" for i in issues]
    problems += [f".ann line {p.line}: {p.message}" for p in validate_document(parsed, ann, conf, where)]
    if problems:
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise _refuse(where, f"document {doc.name!r} would not validate: " + "; ".join(problems[:5]) + more)
    return ann


__all__ = ["IntakeError", "Item", "Limits", "Names", "PubtatorFormatError", "check_document", "iter_documents"]
