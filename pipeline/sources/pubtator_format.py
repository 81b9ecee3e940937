r"""PubTator format (``PMID|t|title``, ``PMID|a|abstract``, tab-separated annotation/relation lines).

Input: a PubTator file as written by the PubTator3 API (``export/pubtator``),
the legacy PubTator Central FTP dump (``bioconcepts2pubtator_offsets``), tmVar
and the NCBI disease corpus.  Output: a [`PubtatorRecord`][pipeline.sources.pubtator_format.PubtatorRecord]
per document and, via [`to_document`][pipeline.sources.pubtator_format.to_document], a
[`Document`][pipeline.documents.Document] carrying the annotations (source ``pubtator``).

Line syntax accepted (one document per block, blocks separated by blank lines
or simply by the next ``|t|`` line):

* ``PMID|t|title`` and ``PMID|a|abstract`` (``\r`` and trailing spaces tolerated);
* annotations ``PMID<TAB>start<TAB>end<TAB>mention<TAB>type[<TAB>identifier[<TAB>extra...]]``:
  6 columns usually, 5 when there is no identifier column, 7 and more in tmVar
  files (the extra columns are kept in the ``extra`` field of a
  [`PubtatorAnnotation`][pipeline.sources.pubtator_format.PubtatorAnnotation]).
  Empty identifiers become ``None``; identifiers are stripped (the NCBI disease
  corpus has ``" D008661"``).  Annotations may come in any order.
* relations ``PMID<TAB>type<TAB>id1<TAB>id2[<TAB>...]`` (second column a word such as
  ``CID``).  A line whose start offset is not an integer (``12a``, ``1.5``, or a
  word followed by an integer end and mention/type columns) is a malformed
  annotation: an error naming ``file:line``, never read as a relation.

Anything else is a malformed line: [`PubtatorFormatError`][pipeline.sources.pubtator_format.PubtatorFormatError] naming
``file:line`` is raised, unless ``skip_bad_lines`` is set (then the line is
logged, counted and ignored).  A PMID seen twice in one file (the NCBI disease
training set repeats 8528200) is kept once: the first block wins, later ones
are counted and skipped.

Offsets: PubTator offsets are half-open character offsets into
``title + " " + abstract`` (one separator character), so with the model's
``text = title + "\n" + abstract`` they map directly.  Trailing whitespace of
the title is dropped first: in the legacy dump titles end with a space that is
*not* counted (offsets fit ``title.rstrip() + " " + abstract``).  If a title
has trailing whitespace and the abstract annotations fit the other reading
(the space counted), that reading is used instead.

Count keys (``counts``): ``documents`` (records yielded), ``annotations``,
``relations``, ``duplicate_documents``, ``bad_lines`` (only with
``skip_bad_lines``); [`to_document`][pipeline.sources.pubtator_format.to_document] adds ``annotations_kept``,
``annotations_text_mismatch`` (mention text differs from the document text
at the offsets, also after stripping the mention column), ``annotations_out_of_range`` (offsets beyond the text, e.g.
PMC full-text offsets in an abstract-only file), ``annotations_empty_span``,
``documents_trailing_space_title`` (the "space counted" reading was used), ``concept_relations``
(relation lines turned into the document's concept relations).
"""

from __future__ import annotations

import gzip
import io
import logging
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import names
from pipeline.documents import TITLE_SEPARATOR, Annotation, ConceptRelation, Document
from pipeline.errors import InputError

log = logging.getLogger(__name__)

_TA = re.compile(r"^([^|\t]*)\|([ta])\|(.*)$", re.DOTALL)


class PubtatorFormatError(InputError):
    """A malformed PubTator line; the message starts with ``file:line:``."""


@dataclass(frozen=True)
class PubtatorAnnotation:
    """One annotation line of a PubTator file.

    Attributes:
        start: Start offset, half-open, into ``title + sep + abstract`` as written in the file (one
            separator character; see the module docstring for the title's trailing whitespace).
        end: End offset (exclusive), same reference.
        text: The mention column, as written.
        type: The annotation type (``Gene``, ``Chemical``, ``Disease`` ...), stripped.
        identifier: The concept identifier, stripped; None when empty or absent.
        line: 1-based line number in the file.
        extra: Further columns (tmVar), stripped.
    """

    start: int
    end: int
    text: str
    type: str
    identifier: str | None
    line: int
    extra: tuple[str, ...] = ()


@dataclass(frozen=True)
class PubtatorRelation:
    """One relation line ``PMID type arg1 arg2`` of a PubTator file.

    Attributes:
        type: The relation type, a word (``CID``, ``Association``, ``Positive_Correlation``).
        arg1: The first concept identifier, as written (stripped).
        arg2: The second concept identifier, as written (stripped).
        line: 1-based line number in the file.
        extra: Further columns, stripped.
    """

    type: str
    arg1: str
    arg2: str
    line: int
    extra: tuple[str, ...] = ()


@dataclass(frozen=True)
class PubtatorRecord:
    """A document block of a PubTator file (title and abstract as in the file, minus line ends).

    Attributes:
        pmid: The document's PMID (or document id), stripped.
        title: The ``|t|`` line's text, trailing whitespace included.
        abstract: The ``|a|`` line's text; ``""`` when the block has none.
        annotations: The block's annotation lines, in file order.
        relations: The block's relation lines, in file order.
        source: The file the block was read from, for messages.
        line: 1-based line number of the ``|t|`` line.
    """

    pmid: str
    title: str
    abstract: str
    annotations: tuple[PubtatorAnnotation, ...] = ()
    relations: tuple[PubtatorRelation, ...] = ()
    source: str = ""
    line: int = 0


@dataclass
class _Block:
    pmid: str
    line: int
    title: str = ""
    abstract: str = ""
    has_abstract: bool = False
    annotations: list[PubtatorAnnotation] = field(default_factory=list)
    relations: list[PubtatorRelation] = field(default_factory=list)

    def record(self, source: str) -> PubtatorRecord:
        return PubtatorRecord(
            pmid=self.pmid,
            title=self.title,
            abstract=self.abstract,
            annotations=tuple(self.annotations),
            relations=tuple(self.relations),
            source=source,
            line=self.line,
        )


#: Dropped annotations shown one by one per document before "and N more".
_SHOWN_PROBLEMS = 3
#: A relation type: a word (``CID``, ``Association``, ``Positive_Correlation``).
_RELATION_TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_\-]*$")


def _int(value: str) -> int | None:
    value = value.strip()
    return int(value) if value.isdigit() else None


class PubtatorLimitError(PubtatorFormatError):
    """A PubTator file beyond a size limit of [`read_pubtator`][pipeline.sources.pubtator_format.read_pubtator].

    The message is ``file:line: ...``, naming the limit; never skipped by ``skip_bad_lines``.

    Attributes:
        limit: Which: ``max_bytes``, ``max_line`` or ``max_block_lines`` (the argument's name).
    """

    def __init__(self, message: str, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class _Counted(io.RawIOBase):
    """A binary stream that refuses to give more than ``limit`` bytes (the decompressed size of a file)."""

    def __init__(self, raw: Any, limit: int | None, path: Path) -> None:
        self.raw, self.limit, self.path, self.total = raw, limit, path, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        self.total += len(data)
        if self.limit is not None and self.total > self.limit:
            raise PubtatorLimitError(f"{self.path}: more than {self.limit:,} bytes once decompressed (the limit "
                                     "on the input's size)", "max_bytes")
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        self.raw.close()
        super().close()


def read_pubtator(
    path: Path, *, skip_bad_lines: bool = False, counts: Counter[str] | None = None,
    max_bytes: int | None = None, max_line: int | None = None, max_block_lines: int | None = None,
    refuse_duplicates: bool = False,
) -> Iterator[PubtatorRecord]:
    """Stream the documents of a PubTator file (plain or gzip-compressed), in file order.

    A PMID seen twice is kept once (the first block), or refused with ``refuse_duplicates``; a PMID that
    is not a valid document id is a malformed line, since it names files.  The file is read line by line,
    so memory holds one document block: with the limits set, no line, block or file beyond them is
    read into memory either.

    Args:
        path: The PubTator file (gzip recognised by its magic bytes), UTF-8.
        skip_bad_lines: Log, count (``bad_lines``) and skip malformed lines instead of raising.
        counts: Count keys (see the module docstring), updated in place; None to discard them.
        max_bytes: The most bytes the file may hold once decompressed; None for no limit.
        max_line: The most characters a line may hold; None for no limit.
        max_block_lines: The most annotation and relation lines a document block may hold; None for no
            limit.
        refuse_duplicates: Raise on a PMID seen twice (naming both lines) instead of keeping the first.

    Yields:
        One [`PubtatorRecord`][pipeline.sources.pubtator_format.PubtatorRecord] per document block, with
        annotation offsets as written in the file.

    Raises:
        PubtatorFormatError: ``"file:line: ..."`` for a malformed line unless ``skip_bad_lines``; naming the
            file when it cannot be read or is not UTF-8 text.
        PubtatorLimitError: ``"file:line: ..."`` when a limit is passed (whatever ``skip_bad_lines``).
    """
    counts = counts if counts is not None else Counter()
    path = Path(path)
    seen: dict[str, int] = {}  # PMID -> line of its title
    current: _Block | None = None
    skipping: str | None = None  # PMID of a duplicate block being skipped

    def bad(lineno: int, message: str) -> None:
        if not skip_bad_lines:
            raise PubtatorFormatError(f"{path}:{lineno}: {message}")
        counts["bad_lines"] += 1
        log.warning("%s:%d: %s (line skipped)", path, lineno, message)

    def finish(block: _Block | None) -> PubtatorRecord | None:
        if block is None:
            return None
        seen.setdefault(block.pmid, block.line)
        counts["documents"] += 1
        counts["annotations"] += len(block.annotations)
        counts["relations"] += len(block.relations)
        return block.record(str(path))

    fh = _open_text(path, max_bytes)
    lineno = 0
    try:
        while True:
            # readline with a bound: a line of a gigabyte (a gzip bomb) is never held whole
            raw = fh.readline(max_line + 3) if max_line is not None else fh.readline()
            if not raw:
                break
            lineno += 1
            line = raw.rstrip("\r\n")
            if max_line is not None and len(line) > max_line:
                raise PubtatorLimitError(f"{path}:{lineno}: a line of more than {max_line:,} characters (the "
                                         "limit on a line, from the limit on a document's text)", "max_line")
            if not line.strip():
                done = finish(current)
                current, skipping = None, None
                if done is not None:
                    yield done
                continue
            match = _TA.match(line)
            if match and "\t" not in match.group(1):
                pmid, kind, body = match.group(1).strip(), match.group(2), match.group(3)
                if kind == "t":
                    done = finish(current)
                    current, skipping = None, None
                    if done is not None:
                        yield done
                    if not names.is_document_id(pmid):
                        # the PMID names files (``{PMID}_{k}.txt``): never a path, whatever the file says
                        skipping = pmid
                        bad(lineno, names.document_id_problem(pmid))
                        continue
                    if pmid in seen and refuse_duplicates:
                        raise PubtatorFormatError(f"{path}:{lineno}: document {pmid} appears again (first at line "
                                                  f"{seen[pmid]}): two documents of one name, refused")
                    if pmid in seen:
                        counts["duplicate_documents"] += 1
                        log.warning("%s:%d: PMID %s appears again; keeping the first copy", path, lineno, pmid)
                        skipping = pmid
                        continue
                    current = _Block(pmid=pmid, line=lineno, title=body)
                    continue
                if skipping != pmid:
                    _add_abstract(current, pmid, body, lineno, bad)
                continue
            cols = line.split("\t")
            pmid = cols[0].strip()
            if skipping is not None and pmid == skipping:
                continue
            if len(cols) < 4:
                bad(lineno, f"expected a |t|/|a| line, an annotation or a relation line, got {len(cols)} column(s)")
                continue
            if current is None or current.pmid != pmid:
                bad(lineno, f"line for PMID {pmid} outside that document's block")
                continue
            _add_data_line(cols, current, lineno, path, max_block_lines, bad)
        done = finish(current)
        if done is not None:
            yield done
    except UnicodeDecodeError as exc:
        raise PubtatorFormatError(f"{path}: not UTF-8 text: {exc}") from exc
    except (OSError, EOFError, zlib.error) as exc:  # a truncated or corrupt gzip stream, a read error
        raise PubtatorFormatError(f"{path}:{lineno + 1}: cannot read: {exc}") from exc
    finally:
        fh.close()


def _open_text(path: Path, max_bytes: int | None) -> io.TextIOWrapper:
    """Open a PubTator file (plain or gzip) as UTF-8 text, counting its decompressed bytes against max_bytes."""
    try:
        # Bulk dumps (bioconcepts2pubtator_offsets.gz) ship gzip-compressed: sniff the magic bytes.
        with open(path, "rb") as probe:
            gz = probe.read(2) == b"\x1f\x8b"
        binary: Any = gzip.open(path, "rb") if gz else open(path, "rb")  # noqa: SIM115 - closed by the caller
        return io.TextIOWrapper(io.BufferedReader(_Counted(binary, max_bytes, path)), encoding="utf-8", newline="")
    except OSError as exc:
        raise PubtatorFormatError(f"{path}: cannot read: {exc.strerror or exc}") from exc


def _add_abstract(
    current: _Block | None, pmid: str, body: str, lineno: int, bad: Callable[[int, str], None]
) -> None:
    """Set the abstract of the current block, or report an abstract line out of place."""
    if current is None or current.pmid != pmid:
        bad(lineno, f"abstract line for PMID {pmid} without its title line")
        return
    if current.has_abstract:
        bad(lineno, f"second abstract line for PMID {pmid}")
        return
    current.abstract, current.has_abstract = body, True


def _add_data_line(
    cols: list[str], current: _Block, lineno: int, path: Path, max_block_lines: int | None,
    bad: Callable[[int, str], None],
) -> None:
    """Append an annotation or relation line to its document block, or report it as malformed."""
    pmid = current.pmid
    if max_block_lines is not None and len(current.annotations) + len(current.relations) >= max_block_lines:
        raise PubtatorLimitError(f"{path}:{lineno}: document {pmid} (line {current.line}) has more than "
                                 f"{max_block_lines:,} annotation and relation lines (the limit per document)",
                                 "max_block_lines")
    start, end = _int(cols[1]), _int(cols[2])
    if start is not None and end is not None:
        if len(cols) < 5:
            bad(lineno, "annotation line needs at least 5 columns (PMID start end mention type)")
            return
        identifier = cols[5].strip() if len(cols) > 5 else ""
        current.annotations.append(
            PubtatorAnnotation(
                start=start,
                end=end,
                text=cols[3],
                type=cols[4].strip(),
                identifier=identifier or None,
                line=lineno,
                extra=tuple(c.strip() for c in cols[6:]),
            )
        )
    elif start is None and _RELATION_TYPE.match(cols[1].strip()) and not (len(cols) >= 5 and end is not None):
        # a relation (PMID type arg1 arg2): its second column is a word; "12a", "1.5" or
        # a word followed by an integer end offset and mention/type columns is an
        # annotation whose start offset is not an integer (an error below, not a relation)
        current.relations.append(
            PubtatorRelation(
                type=cols[1].strip(),
                arg1=cols[2].strip(),
                arg2=cols[3].strip(),
                line=lineno,
                extra=tuple(c.strip() for c in cols[4:]),
            )
        )
    else:
        bad(lineno, f"bad offsets {cols[1]!r}, {cols[2]!r}")


def _fit(text: str, annotations: tuple[PubtatorAnnotation, ...]) -> int:
    return sum(
        1
        for a in annotations
        if 0 <= a.start < a.end <= len(text) and text[a.start : a.end] in (a.text, a.text.strip())
    )


def to_document(record: PubtatorRecord, counts: Counter[str] | None = None) -> Document:
    r"""Turn a record into a Document (origin ``pubtator``) with its annotations (source ``pubtator``).

    ``text = title + "\n" + abstract`` (title right-stripped, see the module
    docstring); annotation offsets are used as they are (document-relative,
    half-open) and each is checked against the text: empty, mismatching or
    out-of-range annotations are dropped, counted and logged (the first few per document).
    Relation lines become the document's ``concept_relations`` (type and the two concept ids,
    as written).

    Args:
        record: A record read by [`read_pubtator`][pipeline.sources.pubtator_format.read_pubtator].
        counts: Count keys (see the module docstring), updated in place; None to discard them.

    Returns:
        The document; the annotations' fragments are half-open, document-relative offsets.
    """
    counts = counts if counts is not None else Counter()
    abstract = record.abstract.rstrip()
    title = record.title.rstrip()
    text = title + TITLE_SEPARATOR + abstract if abstract else title
    if title != record.title and abstract:
        # Legacy dumps: does the trailing space belong to the title (offsets shifted by its length)?
        alt_text = record.title + TITLE_SEPARATOR + abstract
        if _fit(alt_text, record.annotations) > _fit(text, record.annotations):
            title, text = record.title, alt_text
            counts["documents_trailing_space_title"] += 1
    kept: list[Annotation] = []
    problems: list[str] = []  # logged at WARNING, the first few per document (no flood on a bad dump)
    for ann in record.annotations:
        if ann.start >= ann.end:
            counts["annotations_empty_span"] += 1
            problems.append(f"{record.source}:{ann.line}: empty span {ann.start}-{ann.end}")
            continue
        if ann.end > len(text):
            counts["annotations_out_of_range"] += 1
            problems.append(f"{record.source}:{ann.line}: offsets {ann.start}-{ann.end} beyond the text "
                            f"({len(text)} chars)")
            continue
        covered = text[ann.start : ann.end]
        if covered != ann.text and covered != ann.text.strip():
            # (a mention column with trailing spaces, as in the NCBI disease corpus, still matches)
            counts["annotations_text_mismatch"] += 1
            problems.append(f"{record.source}:{ann.line}: {ann.text!r} at {ann.start}-{ann.end} but the text has "
                            f"{covered!r}")
            continue
        kept.append(
            Annotation(
                fragments=((ann.start, ann.end),),
                type=ann.type,
                source="pubtator",
                identifier=ann.identifier,
                text=covered,
            )
        )
    counts["annotations_kept"] += len(kept)
    if problems:
        more = f"; and {len(problems) - _SHOWN_PROBLEMS} more" if len(problems) > _SHOWN_PROBLEMS else ""
        log.warning("PMID %s: %d annotation(s) dropped: %s%s", record.pmid, len(problems),
                    "; ".join(problems[:_SHOWN_PROBLEMS]), more)
    # document-level, undirected concept pairs (PubTator3's BioRED relations): the relation stage
    # turns them into sentence-level proposals
    concept_relations = tuple(ConceptRelation(r.type, r.arg1, r.arg2) for r in record.relations)
    counts["concept_relations"] += len(concept_relations)
    doc = Document(pmid=record.pmid, title=title, text=text, origin="pubtator", concept_relations=concept_relations)
    return doc.with_annotations(kept)


__all__ = [
    "PubtatorAnnotation",
    "PubtatorFormatError",
    "PubtatorLimitError",
    "PubtatorRecord",
    "PubtatorRelation",
    "read_pubtator",
    "to_document",
]


def format_record(record: PubtatorRecord) -> str:
    """Write a record as a PubTator block.

    [`read_pubtator`][pipeline.sources.pubtator_format.read_pubtator] reads it back to the same record
    (line numbers aside).

    Args:
        record: The record; its offsets are written as they are.

    Returns:
        The block: title, abstract, annotation and relation lines, then a blank line.
    """
    lines = [f"{record.pmid}|t|{record.title}", f"{record.pmid}|a|{record.abstract}"]
    for a in record.annotations:
        cols = [record.pmid, str(a.start), str(a.end), a.text, a.type, a.identifier or "", *a.extra]
        lines.append("\t".join(cols))
    for r in record.relations:
        lines.append("\t".join([record.pmid, r.type, r.arg1, r.arg2, *r.extra]))
    return "\n".join(lines) + "\n\n"
