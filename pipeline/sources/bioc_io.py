"""BioC XML / BioC JSON reader: one per-document structure for every BioC-shaped source.

PubTator3 API responses (``pipeline.sources.pubtator_api``), BioC XML files and BioC JSON
files all become [`BiocDocument`][pipeline.sources.bioc_io.BiocDocument] records: the passages (text, offset,
infons) and every annotation found at document, passage or sentence level.

Offset semantics: every offset is exactly as the source gives it, i.e. a
character offset into the *source* document (BioC offsets are
document-relative; a passage's text starts at ``passage.offset``).  A location
is ``(offset, length)``; several locations are one discontiguous mention.
Nothing here knows about ``Document.text``; [`pipeline.nlp.align`][pipeline.nlp.align] maps source
offsets onto it.  [`BiocDocument.source_text`][pipeline.sources.bioc_io.BiocDocument.source_text] rebuilds
the source text of the chosen passages with the unknown gaps (between passages, or passages
with empty ``<text>`` as in annotation-only stand-off files) filled with
[`UNKNOWN`][pipeline.sources.bioc_io.UNKNOWN] characters, so an annotation over a gap is recognisably
stand-off.

XML is parsed with lxml without DTD loading, entity resolution or network
access (``<!DOCTYPE collection SYSTEM 'BioC.dtd'>`` is never fetched) and
streamed document by document.

Count keys (incremented in the ``counts`` passed to the readers):

* ``bioc_documents``: documents read.
* ``bioc_annotations``: annotations read.
* ``bioc_bad_records``: malformed annotations/passages skipped (``skip_bad=True``).
* ``bioc_concept_relations``: PubTator3 document-level relations read (JSON only);
  ``bioc_concept_relations_incomplete``: those without a type or both concept identifiers (not used).
"""

from __future__ import annotations

import gzip
import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lxml import etree

from pipeline import names
from pipeline.errors import InputError

logger = logging.getLogger(__name__)

UNKNOWN = "\x00"
"""Placeholder for source characters that are not known (gaps between passages, passages given without text).

Never appears in real text.
"""

#: Infon keys that carry an annotation's identifier, most specific first.
#: PubTator/PTC uses ``identifier``; TeamTat and older tools ``Identifier``;
#: legacy PubTator BioC put the id under the database name.
IDENTIFIER_KEYS = (
    "identifier",
    "Identifier",
    "MESH",
    "MeSH",
    "NCBI Gene",
    "NCBI GENE",
    "NCBI Taxonomy",
    "tmVar",
    "CHEBI",
    "ChEBI",
    "normalized",
    "normalized_id",
)

#: Infon keys that carry an annotation's type.
TYPE_KEYS = ("type", "Type")


class BiocFormatError(InputError):
    """Malformed BioC input; the message names the file and line or document."""


def infon_value(value: Any) -> str | None:
    """Read an infon value as a string.

    Args:
        value: The infon's value as decoded (string, number, boolean, list or None).

    Returns:
        The value stripped (booleans as ``true``/``false``, list items joined with ``;``), or None when
        it is empty.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        parts = [infon_value(v) for v in value]
        joined = ";".join(p for p in parts if p)
        return joined or None
    text = str(value).strip()
    return text or None


@dataclass(frozen=True)
class BiocAnnotation:
    """One BioC annotation.

    Attributes:
        id: The annotation's id in the source, or None.
        locations: ``(offset, length)`` pairs, character offsets into the source document as the source
            gives them, sorted; several locations are one discontiguous mention.
        text: The annotation's text as given (``""`` when absent).
        infons: The annotation's infons (type, identifier ...).
        passage: Index of the passage it was found in (in a passage or one of its sentences); None for
            document-level annotations.
    """

    id: str | None
    locations: tuple[tuple[int, int], ...]
    text: str
    infons: Mapping[str, Any] = field(default_factory=dict)
    passage: int | None = None

    @property
    def type(self) -> str | None:
        """The annotation's type: the first non-empty ``type``/``Type`` infon, or None."""
        for key in TYPE_KEYS:
            value = infon_value(self.infons.get(key))
            if value:
                return value
        return None

    @property
    def identifier(self) -> str | None:
        """The annotation's identifier: the first non-empty infon of ``IDENTIFIER_KEYS``, or None."""
        for key in IDENTIFIER_KEYS:
            if key in self.infons:
                value = infon_value(self.infons[key])
                if value is not None:
                    return value
        return None

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        """Half-open ``(start, end)`` spans of the locations, in source-document offsets."""
        return tuple((offset, offset + length) for offset, length in self.locations)


@dataclass(frozen=True)
class BiocPassage:
    """A BioC passage.

    Attributes:
        offset: Where the passage's text starts, a character offset into the source document.
        text: The passage's text (``""`` when given without text).
        infons: The passage's infons (``type``, ``section_type`` ...).
        sentences: ``(offset, text)`` of the BioC sentences, offsets into the source document; used when
            the passage itself carries no text.
    """

    offset: int
    text: str
    infons: Mapping[str, Any] = field(default_factory=dict)
    sentences: tuple[tuple[int, str], ...] = ()

    @property
    def type(self) -> str | None:
        """The ``type`` infon (``title``, ``abstract``, ``front`` ...), or None."""
        return infon_value(self.infons.get("type"))

    @property
    def section_type(self) -> str | None:
        """The ``section_type`` infon of PMC full texts (``TITLE``, ``ABSTRACT``, ``INTRO`` ...), or None."""
        return infon_value(self.infons.get("section_type"))

    def pieces(self) -> tuple[tuple[int, str], ...]:
        """List the known text of the passage.

        Returns:
            ``(offset, text)`` pieces, offsets into the source document: the passage's text, or else its
            non-empty sentences; empty when no text is known.
        """
        if self.text:
            return ((self.offset, self.text),)
        return tuple((o, t) for o, t in self.sentences if t)

    @property
    def is_title_or_abstract(self) -> bool:
        """Title/abstract passage of a PubMed or PMC BioC document.

        PMC full texts mark sections with ``section_type`` (TITLE, ABSTRACT,
        INTRO...), PubMed documents with ``type`` title/abstract; the title of a
        PMC article has type ``front`` and section_type ``TITLE``.
        """
        section = self.section_type
        if section is not None:
            return section.upper() in ("TITLE", "ABSTRACT")
        kind = (self.type or "").lower()
        return kind in ("title", "front") or kind.startswith("abstract")


@dataclass(frozen=True)
class BiocDocument:
    """A BioC document: id, PMID (when known), passages and all annotations.

    Attributes:
        id: The document's id (``id``, else ``_id``; ``""`` when absent).
        pmid: The PMID, when known (see [`document_pmid`][pipeline.sources.bioc_io.document_pmid]).
        passages: The passages, in source order.
        annotations: Every annotation, at document, passage or sentence level.
        infons: The document's infons.
        concept_relations: PubTator3's document-level relations: (type, concept id of role1, concept id of
            role2).
    """

    id: str
    pmid: str | None
    passages: tuple[BiocPassage, ...]
    annotations: tuple[BiocAnnotation, ...]
    infons: Mapping[str, Any] = field(default_factory=dict)
    #: PubTator3's document-level relations: (type, concept id of role1, concept id of role2)
    concept_relations: tuple[tuple[str, str, str], ...] = ()

    def selected_passages(self) -> list[int]:
        """Choose the passages whose text is used.

        Returns:
            Indices of the title/abstract passages, or of all passages when none is typed so.
        """
        chosen = [i for i, p in enumerate(self.passages) if p.is_title_or_abstract]
        return chosen or list(range(len(self.passages)))

    def source_text(self, passages: Iterable[int] | None = None) -> str:
        """Rebuild the source text of the chosen passages.

        Each passage's text is placed at its offset; characters not covered by
        any chosen passage are [`UNKNOWN`][pipeline.sources.bioc_io.UNKNOWN], and so is the last character
        when the last passage has no text (an unknown tail).  Overlapping passages keep the earlier
        one's characters (logged).

        Args:
            passages: Indices of the passages; None for
                [`selected_passages`][pipeline.sources.bioc_io.BiocDocument.selected_passages].

        Returns:
            The text, indexed by source-document offsets (character ``i`` is at offset ``i``); ``""`` when
            no chosen passage has text.
        """
        indices = self.selected_passages() if passages is None else list(passages)
        pieces = sorted(piece for i in indices for piece in self.passages[i].pieces())
        if not pieces:
            return ""
        end = max(offset + len(text) for offset, text in pieces)
        # A passage given without text leaves an unknown tail from its offset on.
        for i in indices:
            if not self.passages[i].pieces() and self.passages[i].offset >= end:
                end = self.passages[i].offset + 1
        chars = [UNKNOWN] * end
        filled = 0
        for offset, text in pieces:
            if offset < 0:
                continue
            if offset < filled:
                logger.warning(
                    "document %s: passage at %d overlaps the previous one; kept the earlier",
                    self.id, offset,
                )
                text = text[filled - offset :]
                offset = filled
            chars[offset : offset + len(text)] = text
            filled = max(filled, offset + len(text))
        return "".join(chars)

    def selected_annotations(self) -> tuple[list[BiocAnnotation], int]:
        """Choose the annotations of the selected passages.

        Returns:
            The annotations of the [`selected_passages`][pipeline.sources.bioc_io.BiocDocument.selected_passages]
            and of document level, in the order they were read, and how many others were left out.
        """
        chosen = set(self.selected_passages())
        kept = [a for a in self.annotations if a.passage is None or a.passage in chosen]
        return kept, len(self.annotations) - len(kept)


# --- JSON ------------------------------------------------------------------

def _int(value: Any, what: str, where: str) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        return int(value)
    except (TypeError, ValueError):
        raise BiocFormatError(f"{where}: {what} is not an integer: {value!r}") from None


def _infons(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BiocFormatError(f"{where}: infons is not an object")
    return dict(value)


def _json_annotation(data: Any, passage: int | None, where: str) -> BiocAnnotation:
    if not isinstance(data, Mapping):
        raise BiocFormatError(f"{where}: annotation is not an object")
    ann_id = infon_value(data.get("id"))
    where = f"{where} annotation {ann_id}"
    locations = []
    for loc in data.get("locations") or []:
        if not isinstance(loc, Mapping):
            raise BiocFormatError(f"{where}: location is not an object")
        locations.append((_int(loc.get("offset"), "offset", where), _int(loc.get("length"), "length", where)))
    if not locations:
        raise BiocFormatError(f"{where}: no location")
    text = data.get("text")
    return BiocAnnotation(
        id=ann_id,
        locations=tuple(sorted(locations)),
        text=text if isinstance(text, str) else "",
        infons=_infons(data.get("infons"), where),
        passage=passage,
    )


def _annotations(
    items: Iterable[Any], parse: Callable[[Any], BiocAnnotation], counts: Counter[str], skip_bad: bool
) -> list[BiocAnnotation]:
    """Parse each item; a malformed one raises, or with ``skip_bad`` is counted and logged."""
    out = []
    for item in items:
        try:
            out.append(parse(item))
        except BiocFormatError as err:
            if not skip_bad:
                raise
            counts["bioc_bad_records"] += 1
            logger.warning("skipped malformed annotation: %s", err)
    return out


def _json_annotations(
    items: Any, passage: int | None, where: str, counts: Counter[str], skip_bad: bool
) -> list[BiocAnnotation]:
    return _annotations(items or [], lambda item: _json_annotation(item, passage, where), counts, skip_bad)


def document_pmid(doc_id: str, data: Mapping[str, Any], passages: Iterable[BiocPassage]) -> str | None:
    """Find the PMID of a BioC document.

    PubTator3 gives ``pmid`` (int) and ``_id`` = ``"PMID|PMCID"``, while ``id``
    may be a PMC id or a DOI; PMC BioC puts the PMID in the passage infon
    ``article-id_pmid``; plain BioC uses the document id.

    Args:
        doc_id: The document's id.
        data: The JSON document object (``pmid``, ``_id``); ``{}`` for XML.
        passages: The document's passages.

    Returns:
        The first of these that is a PMID (1 to 12 ASCII digits), in that order; None when none is.
    """
    pmid = infon_value(data.get("pmid"))
    if names.is_pmid(pmid):
        return pmid
    underscore = infon_value(data.get("_id"))
    if underscore:
        head = underscore.split("|", 1)[0]
        if names.is_pmid(head):
            return head
    for passage in passages:
        value = infon_value(passage.infons.get("article-id_pmid"))
        if names.is_pmid(value):
            return value
    if names.is_pmid(doc_id):
        return doc_id
    return None


def document_from_json(
    data: Any, *, where: str = "<json>", counts: Counter[str] | None = None, skip_bad: bool = False
) -> BiocDocument:
    """Read one BioC JSON document object (as in a collection or a PubTator3 response).

    Args:
        data: The decoded JSON object.
        where: Names the source in messages.
        counts: Count keys (see the module docstring), updated in place; None to discard them.
        skip_bad: Skip (count and log) malformed annotations instead of raising.

    Returns:
        The document, offsets as the source gives them (source-document offsets).

    Raises:
        BiocFormatError: If ``data`` is not a document object, or a passage, sentence, offset or infons is
            malformed (and an annotation, unless ``skip_bad``).
    """
    counts = Counter() if counts is None else counts
    if not isinstance(data, Mapping) or not isinstance(data.get("passages", []), list):
        raise BiocFormatError(f"{where}: not a BioC document object")
    doc_id = infon_value(data.get("id")) or infon_value(data.get("_id")) or ""
    where = f"{where} document {doc_id or '?'}"
    passages: list[BiocPassage] = []
    annotations: list[BiocAnnotation] = []
    for index, p in enumerate(data.get("passages") or []):
        if not isinstance(p, Mapping):
            raise BiocFormatError(f"{where}: passage {index} is not an object")
        pwhere = f"{where} passage {index}"
        offset = _int(p.get("offset", 0), "offset", pwhere)
        sentences = []
        for s in p.get("sentences") or []:
            if not isinstance(s, Mapping):
                raise BiocFormatError(f"{pwhere}: sentence is not an object")
            stext = s.get("text")
            soffset = _int(s.get("offset", 0), "sentence offset", pwhere)
            sentences.append((soffset, stext if isinstance(stext, str) else ""))
            annotations.extend(_json_annotations(s.get("annotations"), index, pwhere, counts, skip_bad))
        text = p.get("text")
        passages.append(
            BiocPassage(
                offset=offset,
                text=text if isinstance(text, str) else "",
                infons=_infons(p.get("infons"), pwhere),
                sentences=tuple(sentences),
            )
        )
        annotations.extend(_json_annotations(p.get("annotations"), index, pwhere, counts, skip_bad))
    annotations.extend(_json_annotations(data.get("annotations"), None, where, counts, skip_bad))
    counts["bioc_documents"] += 1
    counts["bioc_annotations"] += len(annotations)
    return BiocDocument(
        id=doc_id,
        pmid=document_pmid(doc_id, data, passages),
        passages=tuple(passages),
        annotations=tuple(annotations),
        infons=_infons(data.get("infons"), where),
        concept_relations=_concept_relations(data.get("relations"), where, counts),
    )


#: ``Chemical|MESH:D000001``: a PubTator3 role written as concept type, bar, identifier (BioC XML
#: infons are strings); a variant identifier has bars too (``tmVar:p|SUB|L|858|R``), never after a
#: capitalised word alone
_TYPED_ROLE = re.compile(r"^[A-Z][A-Za-z_]*\|(?P<identifier>.+)$")


def _role_identifier(role: Any) -> str | None:
    """The concept identifier of a PubTator3 relation role.

    An object's ``identifier`` (BioC JSON), or a string ``Type|identifier`` or ``identifier`` (BioC XML infons).
    """
    if isinstance(role, Mapping):
        return infon_value(role.get("identifier"))
    value = infon_value(role)
    if not value:
        return None
    typed = _TYPED_ROLE.match(value)
    return typed.group("identifier").strip() if typed else value.strip()


def _concept_relations(value: Any, where: str, counts: Counter[str]) -> tuple[tuple[str, str, str], ...]:
    """PubTator3's document-level relations.

    Infons ``type`` and ``role1``/``role2``: objects with an ``identifier`` in BioC JSON,
    ``Type|identifier`` strings in BioC XML.  Other BioC relations (nodes referring to annotations) are not
    concept relations and are left to the BioC readers; a PubTator3 relation without a type or both
    identifiers is counted (``bioc_concept_relations_incomplete``) and logged.
    """
    out: list[tuple[str, str, str]] = []
    for rel in value or ():
        infons = rel.get("infons") if isinstance(rel, Mapping) else None
        if not isinstance(infons, Mapping) or "role1" not in infons:
            continue
        kind = infon_value(infons.get("type"))
        id1, id2 = _role_identifier(infons.get("role1")), _role_identifier(infons.get("role2"))
        if not kind or not id1 or not id2:
            counts["bioc_concept_relations_incomplete"] += 1
            logger.warning("%s: relation %s without a type or both concept identifiers: not used", where,
                           rel.get("id"))
            continue
        out.append((kind, id1, id2))
    counts["bioc_concept_relations"] += len(out)
    return tuple(out)


def json_document_objects(payload: Any) -> list[Any] | None:
    """Find the document objects of a decoded JSON value.

    Shapes: ``{"PubTator3": [docs]}`` (current PubTator3 API), a BioC
    collection ``{"documents": [...]}``, a bare document ``{"passages": ...}``
    and a list of any of these.

    Args:
        payload: The decoded JSON value.

    Returns:
        The document objects (not checked), or None when the value (or an item of a list) has no
        recognised shape.
    """
    if isinstance(payload, list):
        out: list[Any] = []
        for item in payload:
            docs = json_document_objects(item)
            if docs is None:
                return None
            out.extend(docs)
        return out
    if isinstance(payload, Mapping):
        if isinstance(payload.get("PubTator3"), list):
            return list(payload["PubTator3"])
        if isinstance(payload.get("documents"), list):
            return list(payload["documents"])
        if "passages" in payload:
            return [payload]
    return None


def iter_json_values(text: str) -> Iterator[Any]:
    """Decode one JSON value, or several concatenated / line-delimited ones (the old PubTator API).

    Args:
        text: The JSON text; whitespace and BOMs between values are skipped.

    Yields:
        The decoded values, in order.

    Raises:
        json.JSONDecodeError: At the first malformed value (the values before it have been yielded).
    """
    decoder = json.JSONDecoder()
    pos = 0
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n\ufeff":
            pos += 1
        if pos >= n:
            return
        value, pos = decoder.raw_decode(text, pos)
        yield value


def read_bioc_json(path: Path, *, counts: Counter[str] | None = None, skip_bad: bool = False) -> Iterator[BiocDocument]:
    """Read a BioC JSON file (collection, PubTator3 response, document, list or concatenated documents).

    Args:
        path: The file, UTF-8, plain or gzip (recognised by its magic bytes); read in full.
        counts: Count keys (see the module docstring), updated in place; None to discard them.
        skip_bad: Skip (count and log) malformed documents and annotations instead of raising.

    Yields:
        The documents, in file order, offsets as the file gives them.

    Raises:
        BiocFormatError: Naming the file (and line), for text that is not UTF-8, malformed JSON, a value
            of no BioC shape, or a malformed document unless ``skip_bad``.
    """
    counts = Counter() if counts is None else counts
    path = Path(path)
    raw = _read_bytes(path)
    try:
        text = raw.decode("utf-8-sig")
        values = list(iter_json_values(text))
    except UnicodeDecodeError as err:
        raise BiocFormatError(f"{path}: not UTF-8 text ({err})") from None
    except json.JSONDecodeError as err:
        raise BiocFormatError(f"{path}:{err.lineno}: malformed JSON: {err.msg}") from None
    for value in values:
        docs = json_document_objects(value)
        if docs is None:
            raise BiocFormatError(f"{path}: JSON value is not a BioC collection, document or PubTator3 response")
        for index, doc in enumerate(docs):
            where = f"{path} [document {index}]"
            try:
                yield document_from_json(doc, where=where, counts=counts, skip_bad=skip_bad)
            except BiocFormatError as err:
                if not skip_bad:
                    raise
                counts["bioc_bad_records"] += 1
                logger.warning("skipped malformed document: %s", err)


# --- XML -------------------------------------------------------------------

def _read_bytes(path: Path) -> bytes:
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head == b"\x1f\x8b":
        with gzip.open(path, "rb") as gz:
            return gz.read()
    return path.read_bytes()


def _child_text(elem: Any, tag: str) -> str | None:
    child = elem.find(tag)
    if child is None:
        return None
    return child.text or ""


def _xml_infons(elem: Any) -> dict[str, Any]:
    return {i.get("key", ""): (i.text or "") for i in elem.findall("infon")}


def _xml_annotation(elem: Any, passage: int | None, where: str) -> BiocAnnotation:
    ann_id = elem.get("id")
    where = f"{where}:{elem.sourceline}: annotation {ann_id}"
    locations = []
    for loc in elem.findall("location"):
        locations.append((_int(loc.get("offset"), "offset", where), _int(loc.get("length"), "length", where)))
    if not locations:
        raise BiocFormatError(f"{where}: no location")
    return BiocAnnotation(
        id=ann_id,
        locations=tuple(sorted(locations)),
        text=_child_text(elem, "text") or "",
        infons=_xml_infons(elem),
        passage=passage,
    )


def _xml_annotations(
    parent: Any, passage: int | None, where: str, counts: Counter[str], skip_bad: bool
) -> list[BiocAnnotation]:
    return _annotations(
        parent.findall("annotation"), lambda elem: _xml_annotation(elem, passage, where), counts, skip_bad
    )


def document_from_xml(
    elem: Any, *, where: str = "<xml>", counts: Counter[str] | None = None, skip_bad: bool = False
) -> BiocDocument:
    """Read one BioC XML ``<document>`` element.

    Args:
        elem: The element.
        where: Names the file in errors.
        counts: Count keys (see the module docstring), updated in place; None to discard them.
        skip_bad: Skip (count and log) malformed annotations instead of raising.

    Returns:
        The document, offsets as the source gives them (source-document offsets).

    Raises:
        BiocFormatError: Naming the file and line, for a non-integer offset (or a malformed annotation,
            unless ``skip_bad``).
    """
    counts = Counter() if counts is None else counts
    doc_id = (_child_text(elem, "id") or "").strip()
    passages: list[BiocPassage] = []
    annotations: list[BiocAnnotation] = []
    for index, p in enumerate(elem.findall("passage")):
        pwhere = f"{where}:{p.sourceline}: document {doc_id} passage {index}"
        offset = _int(_child_text(p, "offset") or "0", "offset", pwhere)
        sentences = []
        for s in p.findall("sentence"):
            soffset = _int(_child_text(s, "offset") or "0", "sentence offset", pwhere)
            sentences.append((soffset, _child_text(s, "text") or ""))
            annotations.extend(_xml_annotations(s, index, where, counts, skip_bad))
        passages.append(
            BiocPassage(
                offset=offset,
                text=_child_text(p, "text") or "",
                infons=_xml_infons(p),
                sentences=tuple(sentences),
            )
        )
        annotations.extend(_xml_annotations(p, index, where, counts, skip_bad))
    annotations.extend(_xml_annotations(elem, None, where, counts, skip_bad))
    counts["bioc_documents"] += 1
    counts["bioc_annotations"] += len(annotations)
    infons = _xml_infons(elem)
    # PubTator3's relations are document-level ``<relation>`` elements with role1/role2 infons
    relations = [{"id": r.get("id"), "infons": _xml_infons(r)} for r in elem.findall("relation")]
    return BiocDocument(
        id=doc_id,
        pmid=document_pmid(doc_id, {}, passages),
        passages=tuple(passages),
        annotations=tuple(annotations),
        infons=infons,
        concept_relations=_concept_relations(relations, f"{where}: document {doc_id}", counts),
    )


def read_bioc_xml(path: Path, *, counts: Counter[str] | None = None, skip_bad: bool = False) -> Iterator[BiocDocument]:
    """Stream the documents of a BioC XML file (plain or gzip); no DTD is loaded or fetched.

    Args:
        path: The file, plain or gzip (recognised by its magic bytes).
        counts: Count keys (see the module docstring), updated in place; None to discard them.
        skip_bad: Skip (count and log) malformed documents and annotations instead of raising.

    Yields:
        The documents, in file order, offsets as the file gives them.

    Raises:
        BiocFormatError: Naming the file and line, for malformed XML, or a malformed document unless
            ``skip_bad``.
    """
    counts = Counter() if counts is None else counts
    path = Path(path)
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    source: Any = gzip.open(path, "rb") if gz else open(path, "rb")
    try:
        context = etree.iterparse(
            source,
            events=("end",),
            tag="document",
            load_dtd=False,
            resolve_entities=False,
            no_network=True,
            huge_tree=True,
        )
        try:
            for _event, elem in context:
                try:
                    yield document_from_xml(elem, where=str(path), counts=counts, skip_bad=skip_bad)
                except BiocFormatError as err:
                    if not skip_bad:
                        raise
                    counts["bioc_bad_records"] += 1
                    logger.warning("skipped malformed document: %s", err)
                # Free what has been read: dump files can be large.
                elem.clear()
                while elem.getprevious() is not None:
                    del elem.getparent()[0]
        except etree.XMLSyntaxError as err:
            line = err.lineno if err.lineno else "?"
            raise BiocFormatError(f"{path}:{line}: malformed XML: {err.msg}") from None
    finally:
        source.close()


def read_bioc(path: Path, *, counts: Counter[str] | None = None, skip_bad: bool = False) -> Iterator[BiocDocument]:
    """Read a BioC file, XML or JSON, chosen by its first non-blank byte (``<`` or ``{``/``[``).

    Args:
        path: The file, plain or gzip.
        counts: Count keys (see the module docstring), updated in place; None to discard them.
        skip_bad: Skip (count and log) malformed documents and annotations instead of raising.

    Returns:
        A lazy iterator over the documents, in file order, as
        [`read_bioc_xml`][pipeline.sources.bioc_io.read_bioc_xml] or
        [`read_bioc_json`][pipeline.sources.bioc_io.read_bioc_json] yields them.

    Raises:
        BiocFormatError: If the file is neither BioC XML nor BioC JSON (and as the readers raise).
    """
    kind = sniff_format(Path(path))
    if kind == "bioc-xml":
        return read_bioc_xml(path, counts=counts, skip_bad=skip_bad)
    if kind == "bioc-json":
        return read_bioc_json(path, counts=counts, skip_bad=skip_bad)
    raise BiocFormatError(f"{path}: neither BioC XML nor BioC JSON")


def sniff_format(path: Path) -> str:
    """Guess the format of an annotation file from its first non-blank character (gzip aware).

    Args:
        path: The file; its first 4 KiB (decompressed) are read.

    Returns:
        ``"bioc-xml"`` (``<``), ``"bioc-json"`` (``{`` or ``[``), or ``"pubtator"`` for anything else.
    """
    with open(path, "rb") as probe:
        gz = probe.read(2) == b"\x1f\x8b"
    opener: Any = gzip.open if gz else open
    with opener(path, "rb") as fh:
        head = fh.read(4096)
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped.startswith(b"<"):
        return "bioc-xml"
    if stripped.startswith((b"{", b"[")):
        return "bioc-json"
    return "pubtator"


__all__ = [
    "BiocAnnotation",
    "BiocDocument",
    "BiocFormatError",
    "BiocPassage",
    "IDENTIFIER_KEYS",
    "UNKNOWN",
    "document_from_json",
    "document_from_xml",
    "document_pmid",
    "infon_value",
    "iter_json_values",
    "json_document_objects",
    "read_bioc",
    "read_bioc_json",
    "read_bioc_xml",
    "sniff_format",
]
