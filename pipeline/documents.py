"""The one document model shared by every stage.

Offset convention (the single source of truth):

* A :class:`Document`'s ``text`` is its title and its abstract joined by ONE
  character (``"\\n"``), so the abstract starts at ``len(title) + 1`` exactly as
  in PubTator and BioC.  When there is no abstract the text is the title alone.
* Structured-abstract sections are inlined as ``"LABEL: section text"`` and
  joined by single spaces, as PubMed's own abstract display and PubTator do;
  each :class:`Section` records where its label and its text sit.
* All offsets are half-open ``[start, end)`` character offsets into
  ``Document.text`` (Python ``str`` indices, i.e. Unicode code points).
  Sentence-relative offsets only appear in :class:`SentenceRecord`, which is
  derived from a document by :meth:`Document.sentence_records`.
* An :class:`Annotation` has one or more fragments (brat-style discontiguous
  spans), sorted by start; its ``text`` is the fragment texts joined by one
  space.

Every record is a frozen dataclass; :func:`to_dict` / :func:`from_dict` give
the JSON form used between tasks (defaults omitted, so files stay small and
byte-identical across reruns).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

Span = tuple[int, int]

TITLE_SEPARATOR = "\n"

#: Annotation sources.  ``pubtator`` = PubTator API/files/BioC, ``local`` = the
#: offline annotator, ``ontology`` = composite entities built by extension,
#: ``gold`` = manual annotations read back from brat.
SOURCES = ("pubtator", "local", "ontology", "gold")


@dataclass(frozen=True, order=True)
class Annotation:
    """A (possibly discontiguous) entity mention.

    ``fragments`` are half-open offsets, relative to the document text inside a
    :class:`Document` and to the sentence text inside a :class:`SentenceRecord`.
    ``type`` is the source's type until type mapping, the corpus schema type
    after it (the source's type is then kept in ``original_type``).
    Composite entities (source ``ontology``) record their ontology class, the
    rule that produced them and the fragments of the key entity they extend.
    """

    fragments: tuple[Span, ...]
    type: str
    source: str
    identifier: str | None = None
    text: str = ""
    original_type: str | None = None
    ontology_class: str | None = None
    rule: str | None = None
    key: tuple[Span, ...] | None = None

    def __post_init__(self) -> None:
        if not self.fragments:
            raise ValueError(f"annotation {self.type!r} {self.text!r} has no fragment")
        for start, end in self.fragments:
            if not 0 <= start < end:
                raise ValueError(f"bad fragment ({start}, {end}) in {self.type!r} {self.text!r}")
        if list(self.fragments) != sorted(self.fragments):
            raise ValueError(f"fragments of {self.type!r} {self.text!r} are not sorted")

    @property
    def start(self) -> int:
        return self.fragments[0][0]

    @property
    def end(self) -> int:
        return max(end for _, end in self.fragments)

    @property
    def discontiguous(self) -> bool:
        return len(self.fragments) > 1

    def covered(self, text: str) -> str:
        """The fragment texts of ``text`` joined by single spaces (brat's convention)."""
        return " ".join(text[s:e] for s, e in self.fragments)

    def shifted(self, delta: int) -> Annotation:
        """The same annotation with every offset (fragments and key) moved by ``delta``."""
        key = None if self.key is None else tuple((s + delta, e + delta) for s, e in self.key)
        return dataclasses.replace(
            self, fragments=tuple((s + delta, e + delta) for s, e in self.fragments), key=key
        )

    def sort_key(self) -> tuple[int, int, str, str, tuple[Span, ...]]:
        """Deterministic order: (start, end, type, source, fragments)."""
        return (self.start, self.end, self.type, self.source, self.fragments)


@dataclass(frozen=True)
class Section:
    """A structured-abstract section (or the whole plain abstract, label None).

    ``start``/``end`` cover the section in the document text including its
    inlined ``"LABEL: "`` prefix; ``text_start`` is where the section's own text
    begins (equal to ``start`` when there is no label).
    """

    start: int
    end: int
    text_start: int
    label: str | None = None
    category: str | None = None


@dataclass(frozen=True)
class MeshQualifier:
    name: str
    ui: str | None = None
    major: bool = False


@dataclass(frozen=True)
class MeshHeading:
    descriptor: str
    ui: str | None = None
    major: bool = False
    qualifiers: tuple[MeshQualifier, ...] = ()


@dataclass(frozen=True)
class Sentence:
    """A sentence as a half-open span of the document text."""

    start: int
    end: int


@dataclass(frozen=True)
class Document:
    """One PubMed record (title + abstract) and everything stages add to it.

    ``origin`` says where the record came from (``pubmed`` XML, ``pubtator``
    file, ``bioc``).  ``sentences`` is filled by the sentence stage,
    ``annotations`` (document-relative, sorted by :meth:`Annotation.sort_key`)
    by pre-annotation, extension and type mapping.
    """

    pmid: str
    title: str
    text: str
    sections: tuple[Section, ...] = ()
    mesh: tuple[MeshHeading, ...] = ()
    year: int | None = None
    journal: str | None = None
    language: str | None = None
    publication_types: tuple[str, ...] = ()
    origin: str = "pubmed"
    sentences: tuple[Sentence, ...] = ()
    annotations: tuple[Annotation, ...] = ()

    @property
    def abstract_start(self) -> int:
        return len(self.title) + len(TITLE_SEPARATOR)

    @property
    def abstract(self) -> str:
        return self.text[self.abstract_start :]

    def with_annotations(self, annotations: Iterable[Annotation]) -> Document:
        """A copy whose annotations are ``annotations``, de-duplicated and sorted."""
        unique = {a: None for a in annotations}
        return dataclasses.replace(self, annotations=tuple(sorted(unique, key=Annotation.sort_key)))

    def sentence_records(self) -> tuple[list[SentenceRecord], int]:
        """Project the annotations onto the sentences.

        Returns one :class:`SentenceRecord` per sentence (sentence-relative
        offsets) and the number of annotations that cross a sentence boundary
        (those are left out of every record).
        """
        records: list[SentenceRecord] = []
        placed = 0
        for index, sent in enumerate(self.sentences):
            inside = [
                a.shifted(-sent.start)
                for a in self.annotations
                if a.start >= sent.start and a.end <= sent.end
            ]
            placed += len(inside)
            records.append(
                SentenceRecord(
                    pmid=self.pmid,
                    index=index,
                    text=self.text[sent.start : sent.end],
                    start=sent.start,
                    annotations=tuple(inside),
                )
            )
        return records, len(self.annotations) - placed


@dataclass(frozen=True)
class SentenceRecord:
    """A sentence taken out of its document, annotations sentence-relative.

    ``index`` is the 0-based position of the sentence in its document (the
    title is sentence 0 when it is one sentence); ``start`` is the sentence's
    offset in the document text.  The brat file name is ``{pmid}_{k}`` with
    ``k = index + 1``: 1-based with the title as sentence 1, the numbering of
    the published PGxCorpus files.
    """

    pmid: str
    index: int
    text: str
    start: int = 0
    annotations: tuple[Annotation, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.pmid}_{self.index + 1}"


Record = Document | SentenceRecord
T = TypeVar("T")


def pmid_sort_key(pmid: str) -> tuple[int, int | str]:
    """Numeric PMIDs in numeric order, then anything else in string order."""
    return (0, int(pmid)) if pmid.isdigit() else (1, pmid)


def record_sort_key(record: Record) -> tuple[tuple[int, int | str], int]:
    index = record.index if isinstance(record, SentenceRecord) else -1
    return (pmid_sort_key(record.pmid), index)


# --- JSON form -------------------------------------------------------------

def to_dict(obj: Any) -> Any:
    """JSON-ready form of a record: dataclasses become dicts without default-valued fields."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.default is not dataclasses.MISSING and value == f.default:
                continue
            if f.default_factory is not dataclasses.MISSING and value == f.default_factory():
                continue
            out[f.name] = to_dict(value)
        return out
    if isinstance(obj, tuple | list):
        return [to_dict(v) for v in obj]
    return obj


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = tuple(a for a in typing.get_args(tp) if a is not type(None))
        return _convert(args[0], value) if len(args) == 1 else value
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_convert(args[0], v) for v in value)
        return tuple(_convert(a, v) for a, v in zip(args, value, strict=True))
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_dict(tp, value)
    return value


def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """Inverse of :func:`to_dict` for the dataclasses of this module."""
    hints = _hints(cls)
    kwargs = {k: _convert(hints[k], v) for k, v in data.items() if k in hints}
    unknown = set(data) - set(hints)
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)} for {cls.__name__}")
    return cls(**kwargs)


__all__ = [
    "Annotation",
    "Document",
    "MeshHeading",
    "MeshQualifier",
    "Record",
    "Section",
    "Sentence",
    "SentenceRecord",
    "Span",
    "TITLE_SEPARATOR",
    "from_dict",
    "pmid_sort_key",
    "record_sort_key",
    "to_dict",
]
