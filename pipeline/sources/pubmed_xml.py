r"""PubMed XML (EFetch ``PubmedArticleSet``, baseline/update files) -> [`Document`][pipeline.documents.Document].

Input: a file path (plain or gzip, recognised by its magic bytes) or the raw
bytes of one ``PubmedArticleSet``.  Output: one [`Document`][pipeline.documents.Document]
per ``PubmedArticle`` / ``PubmedBookArticle`` that has an abstract, in file order.

Parsing is streaming (``lxml.etree.iterparse``); every record element is
cleared once it has been turned into a document, so memory stays flat on
baseline files of 30,000 records.  DTDs are never loaded or fetched
(``load_dtd=False, no_network=True``) and entities are not resolved
(``resolve_entities=False``: the predefined XML entities and character
references are all PubMed uses), which also rules out XXE tricks.

Text (offset convention of [`pipeline.documents`][pipeline.documents]):

* ``Document.text = title + "\n" + abstract``; the abstract starts at
  ``len(title) + 1``.  Offsets are half-open, document-relative.
* Inline markup (``<i> <b> <u> <sup> <sub>`` and anything else inside a text
  field) is flattened to its text content.  MathML (``<mml:math>``) is
  flattened to the text of its token elements (``mi mn mo mtext ms``) with
  indentation between them dropped; ``mmultiscripts`` puts prescripts before
  the base (``<sup>3</sup>He`` -> ``3He``) and ``mfrac`` becomes ``a/b``.
* Entities and character references are decoded by the XML parser.
* Whitespace is normalised as PubMed displays it: runs of ASCII whitespace
  collapse to one space and fields are stripped.  A whitespace run that
  *starts with a line break* right before a tag (opening or closing), or a
  line break right after an opening tag, is indentation added by
  pretty-printers (e.g. ``&#946;\n\t\t<sub>2</sub>`` in a re-indented
  file), not text, and is removed (PubMed shows ``β2``).  After a closing tag
  such a run stays one space (``<i>b</i>\n c`` -> ``b c``): dropping it
  could glue two words.  Titles therefore never contain ``"\n"``.
  Only ASCII whitespace is collapsed: no-break and thin spaces (U+00A0,
  U+2009...) are text in PubMed and PubTator and are kept, one character each.
* A structured abstract (``AbstractText`` elements with a ``Label``) is
  inlined as ``"LABEL: text"`` sections joined by single spaces; each becomes
  a [`Section`][pipeline.documents.Section] (label, ``NlmCategory``, label span and
  text span).  Unlabelled ``AbstractText`` paragraphs are joined by one space,
  each with a ``Section`` whose label is ``None``.

Other fields: MeSH descriptors with UI, the descriptor's own ``MajorTopicYN``
flag and qualifiers (name, UI, major flag); publication year from
``PubDate/Year``, else the first year in ``PubDate/MedlineDate``, else
``ArticleDate/Year`` (books: ``Book/PubDate``, then ``ContributionDate``);
journal title (books: the book title); the first ``Language``; publication
types.  Book records without an ``ArticleTitle`` use their ``BookTitle``.

Count keys (``counts``):

- ``records``: ``PubmedArticle`` + ``PubmedBookArticle`` elements seen.
- ``kept``: documents yielded.
- ``no_abstract``: records skipped because they have no (non-empty) abstract.
- ``no_pmid``: records skipped because they have no PMID (logged).
- ``book_articles``: ``PubmedBookArticle`` records kept.
- ``structured_abstracts``: kept documents whose abstract has at least one labelled section.
- ``empty_abstract_sections``: ``AbstractText`` elements without text that were left out of an abstract.
- ``no_title``: kept documents with an empty title (text is then ``"\n" + abstract``).
- ``delete_citations``: PMIDs listed in ``DeleteCitation`` (update files); they are not acted on here.
"""

from __future__ import annotations

import gzip
import io
import logging
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from lxml import etree

from pipeline import names
from pipeline.documents import TITLE_SEPARATOR, Document, MeshHeading, MeshQualifier, Section
from pipeline.errors import InputError

log = logging.getLogger(__name__)

MATHML_NS = "http://www.w3.org/1998/Math/MathML"
RECORD_TAGS = ("PubmedArticle", "PubmedBookArticle")
ROOT_TAGS = ("PubmedArticleSet", "PubmedBookArticleSet")
_GZIP_MAGIC = b"\x1f\x8b"

# Sentinels marking where a child element opens and closes while flattening mixed
# content.  Control characters below 0x09 can never occur in XML text, so they
# cannot collide with real characters.
_OPEN = "\x01"
_CLOSE = "\x02"
# Indentation added by pretty-printers: a whitespace run that starts with a line
# break right before a tag, or that directly follows an opening tag.
_INDENT_BEFORE_TAG = re.compile(r"\n[ \t\r\n]*([\x01\x02])")
_INDENT_AFTER_OPEN = re.compile(r"\x01[ \t\r]*\n[ \t\r\n]*")
_WS = re.compile(r"[ \t\r\n\f\v]+")
_NEEDS_WS = re.compile(r"[\t\r\n\f\v]|  ")
_YEAR = re.compile(r"\b(1[5-9]\d\d|2\d\d\d)\b")


class PubmedXmlError(InputError):
    """Malformed or wrong-format PubMed XML; the message names the source and line."""


# --- text flattening ---------------------------------------------------------


def _local(tag: object) -> str:
    """Local name of an element tag (namespace dropped); '' for comments/PIs."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _math_text(elem: etree._Element) -> str:
    """Readable linear text of a MathML subtree (indentation ignored)."""
    name = _local(elem.tag)
    if name in ("mi", "mn", "mo", "ms"):
        return _WS.sub(" ", elem.text or "").strip()
    if name == "mtext":
        # mtext carries deliberate spaces (e.g. "<mml:mtext> </mml:mtext>" between symbol and word).
        return _WS.sub(" ", elem.text or "")
    if name in ("none", "mprescripts", "annotation", "annotation-xml", "mspace"):
        return ""
    children = [c for c in elem if isinstance(c.tag, str)]
    if name == "semantics":
        return _math_text(children[0]) if children else ""
    if name == "mmultiscripts" and children:
        names = [_local(c.tag) for c in children]
        split = names.index("mprescripts") if "mprescripts" in names else len(children)
        base = _math_text(children[0])
        post = "".join(_math_text(c) for c in children[1:split])
        pre = "".join(_math_text(c) for c in children[split + 1 :])
        return pre + base + post
    if name == "mfrac" and len(children) == 2:
        return f"{_math_text(children[0])}/{_math_text(children[1])}"
    if name == "msqrt":
        return "√" + "".join(_math_text(c) for c in children)
    return "".join(_math_text(c) for c in children)


def _collect(elem: etree._Element, parts: list[str]) -> None:
    """Append the text of ``elem``'s content to ``parts`` with boundary sentinels."""
    if elem.text:
        parts.append(elem.text)
    for child in elem:
        if isinstance(child.tag, str):
            parts.append(_OPEN)
            if child.tag.startswith("{" + MATHML_NS + "}") or child.tag == "math":
                parts.append(_math_text(child))
            else:
                _collect(child, parts)
            parts.append(_CLOSE)
        if child.tail:
            parts.append(child.tail)


def flatten_text(elem: etree._Element | None) -> str:
    """Return the displayed text of a mixed-content element: markup flattened, whitespace normalised.

    See the module docstring for the rules (MathML, pretty-printer indentation, ASCII whitespace only).

    Args:
        elem: The element (``ArticleTitle``, ``AbstractText`` ...); None for a missing one.

    Returns:
        The text as PubMed displays it, stripped; ``""`` for None.
    """
    if elem is None:
        return ""
    if len(elem) == 0:  # fast path: no child element (most fields: MeSH names, dates, plain abstracts)
        text = elem.text or ""
        return _WS.sub(" ", text).strip() if _NEEDS_WS.search(text) else text.strip()
    parts: list[str] = []
    _collect(elem, parts)
    raw = _INDENT_BEFORE_TAG.sub(r"\1", "".join(parts))
    raw = _INDENT_AFTER_OPEN.sub(_OPEN, raw)
    return _WS.sub(" ", raw.replace(_OPEN, "").replace(_CLOSE, "")).strip()


# --- record fields -----------------------------------------------------------


def _yn(value: str | None) -> bool:
    return (value or "").strip().upper() == "Y"


def _mesh(citation: etree._Element | None) -> tuple[MeshHeading, ...]:
    if citation is None:
        return ()
    headings: list[MeshHeading] = []
    for heading in citation.iterfind("MeshHeadingList/MeshHeading"):
        desc = heading.find("DescriptorName")
        if desc is None:
            continue
        qualifiers = tuple(
            MeshQualifier(name=flatten_text(q), ui=q.get("UI"), major=_yn(q.get("MajorTopicYN")))
            for q in heading.iterfind("QualifierName")
        )
        headings.append(
            MeshHeading(
                descriptor=flatten_text(desc),
                ui=desc.get("UI"),
                major=_yn(desc.get("MajorTopicYN")),
                qualifiers=qualifiers,
            )
        )
    return tuple(headings)


def _year_of(date: etree._Element | None) -> int | None:
    """Year of a PubDate-like element: ``Year``, else the first year in ``MedlineDate``."""
    if date is None:
        return None
    year = (date.findtext("Year") or "").strip()
    if year.isdigit():
        return int(year)
    match = _YEAR.search(date.findtext("MedlineDate") or "")
    return int(match.group(1)) if match else None


def _first_year(*dates: etree._Element | None) -> int | None:
    for date in dates:
        year = _year_of(date)
        if year is not None:
            return year
    return None


def _abstract(
    abstract: etree._Element | None, offset: int, counts: Counter[str]
) -> tuple[str, tuple[Section, ...]]:
    """Inline the ``AbstractText`` parts; sections are offset by ``offset`` (= abstract start)."""
    if abstract is None:
        return "", ()
    pieces: list[str] = []
    sections: list[Section] = []
    pos = offset
    for part in abstract.iterfind("AbstractText"):
        body = flatten_text(part)
        if not body:
            counts["empty_abstract_sections"] += 1
            continue
        label = _WS.sub(" ", part.get("Label") or "").strip() or None
        category = (part.get("NlmCategory") or "").strip() or None
        if pieces:
            pos += 1  # the joining space
        prefix = f"{label}: " if label else ""
        piece = prefix + body
        sections.append(Section(start=pos, end=pos + len(piece), text_start=pos + len(prefix),
                                label=label, category=category))
        pieces.append(piece)
        pos += len(piece)
    return " ".join(pieces), tuple(sections)


def _article_document(record: etree._Element, counts: Counter[str]) -> Document | None:
    citation = record.find("MedlineCitation")
    if citation is None:
        return None
    pmid = (citation.findtext("PMID") or "").strip()
    article = citation.find("Article")
    if article is None:
        return Document(pmid=pmid, title="", text="") if pmid else None
    title = flatten_text(article.find("ArticleTitle"))
    if not title:
        title = flatten_text(article.find("VernacularTitle"))
    abstract, sections = _abstract(article.find("Abstract"), len(title) + len(TITLE_SEPARATOR), counts)
    journal = flatten_text(article.find("Journal/Title")) or flatten_text(citation.find("MedlineJournalInfo/MedlineTA"))
    return Document(
        pmid=pmid,
        title=title,
        text=title + TITLE_SEPARATOR + abstract if abstract else title,
        sections=sections,
        mesh=_mesh(citation),
        year=_first_year(article.find("Journal/JournalIssue/PubDate"), article.find("ArticleDate")),
        journal=journal or None,
        language=(article.findtext("Language") or "").strip() or None,
        publication_types=tuple(
            t for t in (flatten_text(p) for p in article.iterfind("PublicationTypeList/PublicationType")) if t
        ),
        origin="pubmed",
    )


def _book_document(record: etree._Element, counts: Counter[str]) -> Document | None:
    book_doc = record.find("BookDocument")
    if book_doc is None:
        return None
    pmid = (book_doc.findtext("PMID") or "").strip()
    book_title = flatten_text(book_doc.find("Book/BookTitle"))
    title = flatten_text(book_doc.find("ArticleTitle")) or book_title
    abstract, sections = _abstract(book_doc.find("Abstract"), len(title) + len(TITLE_SEPARATOR), counts)
    types = [flatten_text(p) for p in book_doc.iterfind("PublicationType")]
    types += [flatten_text(p) for p in book_doc.iterfind("PublicationTypeList/PublicationType")]
    return Document(
        pmid=pmid,
        title=title,
        text=title + TITLE_SEPARATOR + abstract if abstract else title,
        sections=sections,
        mesh=_mesh(record.find("MedlineCitation")),
        year=_first_year(book_doc.find("Book/PubDate"), book_doc.find("ContributionDate")),
        journal=book_title or None,
        language=(book_doc.findtext("Language") or "").strip() or None,
        publication_types=tuple(t for t in types if t),
        origin="pubmed",
    )


def record_to_document(record: etree._Element, counts: Counter[str], where: str | None = None) -> Document | None:
    r"""Turn one ``PubmedArticle``/``PubmedBookArticle`` element into a document.

    Args:
        record: The record element.
        counts: Count keys (see the module docstring), updated in place: ``records``, ``kept`` and the
            reason a record is skipped.
        where: Names the record in messages (file, line, record number); None for its line.

    Returns:
        The document (text ``title + "\n" + abstract``, offsets half-open and document-relative), or None
        when the record is skipped for want of a PMID (logged) or of an abstract.

    Raises:
        PubmedXmlError: If the PMID is not 1 to 12 ASCII digits (it becomes a file name).
    """
    counts["records"] += 1
    book = record.tag == "PubmedBookArticle"
    doc = _book_document(record, counts) if book else _article_document(record, counts)
    place = where or (f"line {record.sourceline}" if record.sourceline else "unknown position")
    if doc is None or not doc.pmid:
        counts["no_pmid"] += 1
        log.warning("%s: skipping a %s without PMID", place, record.tag)
        return None
    if not names.is_pmid(doc.pmid):
        # the PMID becomes a file name (``{PMID}_{k}.txt``): refuse anything PubMed would not assign
        raise PubmedXmlError(f"{place}: PMID {doc.pmid[:80]!r} refused: a PMID is 1 to 12 ASCII digits")
    if len(doc.text) <= len(doc.title):
        counts["no_abstract"] += 1
        log.debug("PMID %s: no abstract, skipped", doc.pmid)
        return None
    if not doc.title:
        counts["no_title"] += 1
    if any(s.label for s in doc.sections):
        counts["structured_abstracts"] += 1
    if book:
        counts["book_articles"] += 1
    counts["kept"] += 1
    return doc


# --- streaming ---------------------------------------------------------------


def _open(source: str | Path | bytes) -> tuple[IO[bytes], str]:
    """A binary stream of the (decompressed) XML and a name for messages."""
    if isinstance(source, bytes | bytearray):
        data = bytes(source)
        if data[:2] == _GZIP_MAGIC:
            return gzip.GzipFile(fileobj=io.BytesIO(data)), "<bytes>"  # type: ignore[return-value]
        return io.BytesIO(data), "<bytes>"
    path = Path(source)
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    except OSError as exc:
        raise PubmedXmlError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    if raw.read(2) == _GZIP_MAGIC:
        raw.seek(0)
        return gzip.GzipFile(fileobj=raw), str(path)  # type: ignore[return-value]
    raw.seek(0)
    return raw, str(path)


def _release(elem: Any) -> None:
    """Free a processed element and its already-seen siblings, so iterparse memory stays flat."""
    elem.clear(keep_tail=True)
    parent = elem.getparent()
    if parent is not None:
        while elem.getprevious() is not None:
            del parent[0]


def iter_documents(
    source: str | Path | bytes, counts: Counter[str], *, name: str | None = None
) -> Iterator[Document]:
    r"""Stream the documents of one PubMed XML file (plain or gzip) or bytes buffer.

    Records without abstract or PMID are skipped and counted.  Documents yielded before an error stand.

    Args:
        source: A file path (gzip recognised by its magic bytes) or the raw bytes of one ``PubmedArticleSet``.
        counts: Count keys (see the module docstring), updated in place.
        name: Names the source in messages; None for the path, or ``<bytes>``.

    Yields:
        The documents, in file order (text ``title + "\n" + abstract``, see the module docstring).

    Raises:
        PubmedXmlError: Naming the source and line, for malformed XML, an unreadable or corrupt gzip
            file, XML whose root is not ``PubmedArticleSet``, or a malformed PMID.
    """
    stream, default_name = _open(source)
    label = name or default_name
    seen_root = False
    position = 0  # records of this file, for messages
    try:
        context = etree.iterparse(
            stream,
            events=("start", "end"),
            tag=(*ROOT_TAGS, *RECORD_TAGS, "DeleteCitation"),
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=True,
            remove_comments=True,
        )
        for event, elem in context:
            if event == "start":
                if elem.tag in ROOT_TAGS and elem.getparent() is None:
                    seen_root = True
                continue
            if elem.tag in ROOT_TAGS:
                continue
            if elem.tag == "DeleteCitation":
                counts["delete_citations"] += len(elem.findall("PMID"))
            elif seen_root:
                position += 1
                doc = record_to_document(elem, counts, f"{label}:{elem.sourceline}: record {position}")
                if doc is not None:
                    yield doc
            _release(elem)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno is not None else "?"
        raise PubmedXmlError(f"{label}:{line}: malformed PubMed XML: {exc.msg}") from exc
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError; truncated gzip -> EOFError
        raise PubmedXmlError(f"{label}: cannot decompress/read: {exc}") from exc
    finally:
        stream.close()
    if not seen_root:
        raise PubmedXmlError(f"{label}:1: not PubMed XML (the root element is not PubmedArticleSet)")


def parse_bytes(payload: bytes, counts: Counter[str] | None = None, *, name: str = "<bytes>") -> list[Document]:
    """Parse all documents of an in-memory ``PubmedArticleSet`` (a convenience wrapper, not streaming).

    Args:
        payload: The XML, plain or gzip.
        counts: Count keys, updated in place; None to discard them.
        name: Names the payload in messages.

    Returns:
        The documents, in file order, as [`iter_documents`][pipeline.sources.pubmed_xml.iter_documents]
        yields them.

    Raises:
        PubmedXmlError: As [`iter_documents`][pipeline.sources.pubmed_xml.iter_documents] does.
    """
    return list(iter_documents(payload, counts if counts is not None else Counter(), name=name))


def count_records(payload: bytes, *, name: str = "<bytes>") -> tuple[list[str], int]:
    """List the PMIDs of every record in ``payload``, with or without abstract.

    Used to check a downloaded efetch batch is complete and well-formed.

    Args:
        payload: The XML of one ``PubmedArticleSet``, plain or gzip.
        name: Names the payload in messages.

    Returns:
        The PMIDs in file order (``""`` for a record without one) and the record count.

    Raises:
        PubmedXmlError: Like [`iter_documents`][pipeline.sources.pubmed_xml.iter_documents], for malformed
            XML, a corrupt gzip stream or another root element.
    """
    stream, _ = _open(payload)
    pmids: list[str] = []
    seen_root = False
    try:
        for event, elem in etree.iterparse(
            stream, events=("start", "end"), tag=(*ROOT_TAGS, *RECORD_TAGS),
            resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True,
        ):
            if event == "start":
                seen_root = seen_root or elem.tag in ROOT_TAGS
                continue
            if elem.tag in RECORD_TAGS:
                pmid = elem.findtext("MedlineCitation/PMID") or elem.findtext("BookDocument/PMID") or ""
                pmids.append(pmid.strip())
                _release(elem)
    except etree.XMLSyntaxError as exc:
        line = exc.lineno if exc.lineno is not None else "?"
        raise PubmedXmlError(f"{name}:{line}: malformed PubMed XML: {exc.msg}") from exc
    except (OSError, EOFError) as exc:
        raise PubmedXmlError(f"{name}: cannot decompress/read: {exc}") from exc
    if not seen_root:
        raise PubmedXmlError(f"{name}:1: not PubMed XML (the root element is not PubmedArticleSet)")
    return pmids, len(pmids)


__all__ = ["PubmedXmlError", "count_records", "flatten_text", "iter_documents", "parse_bytes", "record_to_document"]
