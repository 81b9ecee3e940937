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
* A :class:`Relation` is typed and directed and names its two arguments by
  their index in the record's ``annotations`` tuple.  Every operation that
  rebuilds that tuple (:meth:`Document.with_annotations`,
  :meth:`Document.sentence_records`) re-indexes the relations, so an argument
  is always the same entity from the relation stage to the brat export.
* A :class:`SentenceParse` keeps what later stages need of a sentence's
  dependency parse (token spans, heads, labels, tags, lemmas; offsets
  document-relative), so the sentence is parsed once.

Every record is a frozen dataclass; :func:`to_dict` / :func:`from_dict` give
the JSON form used between tasks (defaults omitted, so files stay small and
byte-identical across reruns).
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger(__name__)

Span = tuple[int, int]

TITLE_SEPARATOR = "\n"

#: Annotation sources.  ``pubtator`` = PubTator API/files/BioC, ``local`` = the
#: offline annotator, ``ontology`` = composite entities built by extension,
#: ``gold`` = manual annotations read back from brat.
SOURCES = ("pubtator", "local", "ontology", "gold")

#: Version of the JSON form of records; caches keyed by it (memo, stage reuse, parse cache) start afresh
#: when it changes.  2: documents and sentence records carry relations, documents sentence parses.
FORMAT = 2

#: Relation modalities, in canonical order; the same names as :mod:`pipeline.brat.modality`
#: (not imported: this module is the lowest layer; a test checks they agree).
MODALITIES = ("Hypothetical", "Negated")


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


@dataclass(frozen=True, order=True)
class Relation:
    """A typed, directed relation between two entities of one record.

    ``arg1`` and ``arg2`` are indices into the ``annotations`` of the record
    holding the relation (a :class:`Document` or a :class:`SentenceRecord`).
    ``modality`` is a subset of :data:`MODALITIES` in canonical order.
    ``source`` says who proposed it (``rules``: pipeline.nlp.relations,
    ``pubtator``: a PubTator3 relation, ``gold``: read back from brat);
    ``rule`` and ``trigger`` (the trigger word, as written) are its provenance,
    which goes to the sidecar, never into a brat file.
    """

    type: str
    arg1: int
    arg2: int
    modality: tuple[str, ...] = ()
    source: str = "rules"
    rule: str | None = None
    trigger: str | None = None

    def __post_init__(self) -> None:
        if self.arg1 < 0 or self.arg2 < 0 or self.arg1 == self.arg2:
            raise ValueError(f"relation {self.type!r}: bad arguments {self.arg1}, {self.arg2}")
        if self.modality != tuple(m for m in MODALITIES if m in self.modality) or len(
            set(self.modality)
        ) != len(self.modality):
            raise ValueError(
                f"relation {self.type!r}: modality {self.modality!r} is not a subset of {MODALITIES} in that order"
            )

    def reindexed(self, arg1: int, arg2: int) -> Relation:
        return dataclasses.replace(self, arg1=arg1, arg2=arg2)


@dataclass(frozen=True)
class ConceptRelation:
    """A document-level relation between two concept identifiers, as PubTator3 gives them (undirected).

    ``type`` is the source's (BioRED) type; ``concept1``/``concept2`` the identifiers as the
    annotations carry them (``identifier``); the relation stage turns it into sentence-level
    :class:`Relation` proposals between mentions.
    """

    type: str
    concept1: str
    concept2: str
    source: str = "pubtator"


@dataclass(frozen=True)
class SentenceParse:
    """The dependency parse of one sentence, as the relation stage needs it.

    ``tokens``: half-open document-relative spans; ``heads``: the index (in this
    sentence) of each token's head, a root being its own head; ``deps``,
    ``tags`` (coarse part of speech) and ``lemmas`` (lower-cased) per token.
    """

    start: int
    end: int
    tokens: tuple[Span, ...]
    heads: tuple[int, ...]
    deps: tuple[str, ...]
    tags: tuple[str, ...]
    lemmas: tuple[str, ...]

    def __post_init__(self) -> None:
        n = len(self.tokens)
        if not (len(self.heads) == len(self.deps) == len(self.tags) == len(self.lemmas) == n):
            raise ValueError(f"parse of sentence {self.start}-{self.end}: token fields of unequal length")
        if any(not 0 <= h < n for h in self.heads):
            raise ValueError(f"parse of sentence {self.start}-{self.end}: head index out of range")


def reindex_relations(
    relations: Iterable[Relation], old: tuple[Annotation, ...], new: tuple[Annotation, ...]
) -> tuple[tuple[Relation, ...], int]:
    """``relations`` over ``old`` annotations re-indexed onto ``new`` (matched by value).

    Returns the relations kept (sorted, de-duplicated) and how many were lost because an
    argument is not in ``new``.
    """
    position = {a: i for i, a in enumerate(new)}
    kept: dict[Relation, None] = {}
    lost = 0
    for rel in relations:
        i, j = position.get(old[rel.arg1]), position.get(old[rel.arg2])
        if i is None or j is None or i == j:
            lost += 1
            continue
        kept[rel.reindexed(i, j)] = None
    return tuple(sorted(kept)), lost


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
    by pre-annotation, extension and type mapping, ``relations`` (indices into
    ``annotations``) by the relation stage.  ``concept_relations`` are the
    source's document-level relations (PubTator3), ``parses`` the dependency
    parses extension made for the relation stage, which consumes them.
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
    relations: tuple[Relation, ...] = ()
    concept_relations: tuple[ConceptRelation, ...] = ()
    parses: tuple[SentenceParse, ...] = ()

    def __post_init__(self) -> None:
        _check_relations(self.relations, len(self.annotations), self.pmid)

    @property
    def abstract_start(self) -> int:
        return len(self.title) + len(TITLE_SEPARATOR)

    @property
    def abstract(self) -> str:
        return self.text[self.abstract_start :]

    def with_annotations(self, annotations: Iterable[Annotation]) -> Document:
        """A copy whose annotations are ``annotations``, de-duplicated and sorted.

        Relations are re-indexed onto the new tuple (arguments matched by value); a relation whose
        argument is gone is dropped and logged with the PMID.
        """
        unique = {a: None for a in annotations}
        new = tuple(sorted(unique, key=Annotation.sort_key))
        relations, lost = reindex_relations(self.relations, self.annotations, new)
        if lost:
            log.warning("PMID %s: %d relation(s) dropped: an argument is no longer among the annotations",
                        self.pmid, lost)
        return dataclasses.replace(self, annotations=new, relations=relations)

    def with_relations(self, relations: Iterable[Relation]) -> Document:
        """A copy whose relations are ``relations`` (indices into this document's annotations), sorted."""
        return dataclasses.replace(self, relations=tuple(sorted({r: None for r in relations})))

    def sentence_records(self) -> tuple[list[SentenceRecord], int]:
        """Project the annotations onto the sentences.

        Returns one :class:`SentenceRecord` per sentence (sentence-relative
        offsets) and the number of annotations that cross a sentence boundary
        (those are left out of every record).  Relations whose two arguments
        lie in one sentence go to its record, re-indexed; any other relation
        (an argument crossing a boundary, or arguments in two sentences) is
        left out and logged with the PMID.
        """
        records: list[SentenceRecord] = []
        placed = 0
        projected = 0
        starts = [a.start for a in self.annotations]
        ends = [a.end for a in self.annotations]
        ordered = all(x <= y for x, y in zip(starts, starts[1:], strict=False))
        for index, sent in enumerate(self.sentences):
            # Annotations are normally sorted by start: only those starting inside the sentence can fit.
            lo, hi = (
                (bisect.bisect_left(starts, sent.start), bisect.bisect_left(starts, sent.end))
                if ordered else (0, len(starts))
            )
            inside = [
                self.annotations[i].shifted(-sent.start)
                for i in range(lo, hi)
                if starts[i] >= sent.start and ends[i] <= sent.end
            ]
            placed += len(inside)
            relations: tuple[Relation, ...] = ()
            if self.relations:
                local = {i: k for k, i in enumerate(
                    i for i in range(lo, hi) if starts[i] >= sent.start and ends[i] <= sent.end)}
                relations = tuple(sorted(
                    r.reindexed(local[r.arg1], local[r.arg2])
                    for r in self.relations if r.arg1 in local and r.arg2 in local
                ))
                projected += len(relations)
            records.append(
                SentenceRecord(
                    pmid=self.pmid,
                    index=index,
                    text=self.text[sent.start : sent.end],
                    start=sent.start,
                    annotations=tuple(inside),
                    relations=relations,
                )
            )
        if projected != len(self.relations):
            log.warning("PMID %s: %d relation(s) not inside one sentence left out of the sentence records",
                        self.pmid, len(self.relations) - projected)
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
    relations: tuple[Relation, ...] = ()

    def __post_init__(self) -> None:
        _check_relations(self.relations, len(self.annotations), self.name)

    @property
    def name(self) -> str:
        return f"{self.pmid}_{self.index + 1}"


def _check_relations(relations: tuple[Relation, ...], n: int, where: str) -> None:
    for rel in relations:
        if rel.arg1 >= n or rel.arg2 >= n:
            raise ValueError(f"{where}: relation {rel.type} ({rel.arg1}, {rel.arg2}) names an entity beyond "
                             f"the {n} annotations")


Record = Document | SentenceRecord
T = TypeVar("T")


def pmid_sort_key(pmid: str) -> tuple[int, int | str]:
    """Numeric PMIDs in numeric order, then anything else in string order."""
    return (0, int(pmid)) if pmid.isdigit() else (1, pmid)


def record_sort_key(record: Record) -> tuple[tuple[int, int | str], int]:
    index = record.index if isinstance(record, SentenceRecord) else -1
    return (pmid_sort_key(record.pmid), index)


# --- JSON form -------------------------------------------------------------
#
# Every stage reads and writes every record, so the JSON form is compiled once per
# dataclass into a list of per-field converters chosen from the type hints (the
# generic walk over ``dataclasses.fields`` and ``typing.get_origin`` for every value
# cost more than the JSON encoding itself).  The result is the same as the generic
# walk's, value for value: :func:`_generic_to_dict` / :func:`_generic_from_dict` are
# kept as the reference the tests compare against.

_Converter = typing.Callable[[Any], Any]
_PLAIN = (str, int, float, bool, type(None))


def _plain_out(value: Any) -> Any:
    # Values of plain-typed fields are normally str/int/bool/None; anything else
    # (a tuple put where a string belongs) goes through the generic walk.
    return value if type(value) in _PLAIN else _generic_to_dict(value)


def _out_converter(tp: Any) -> _Converter:
    """JSON-ready form of one value of type ``tp`` (what :func:`_generic_to_dict` gives)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = tuple(a for a in typing.get_args(tp) if a is not type(None))
        if len(args) == 1:
            inner = _out_converter(args[0])
            return lambda v: None if v is None else inner(v)
        return _plain_out
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            item = args[0]
            if typing.get_origin(item) is tuple and all(a in _PLAIN for a in typing.get_args(item)):
                # tuple[Span, ...]: fragments, keys

                def spans(v: Any) -> Any:
                    if not isinstance(v, tuple | list):
                        return _generic_to_dict(v)
                    return [[x if type(x) in _PLAIN else _generic_to_dict(x) for x in pair]
                            if isinstance(pair, tuple | list) else _generic_to_dict(pair) for pair in v]

                return spans
            inner = _out_converter(item)
            return lambda v: [inner(x) for x in v] if isinstance(v, tuple | list) else _generic_to_dict(v)
        return _generic_to_dict
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return lambda v: _encoder(type(v))(v) if dataclasses.is_dataclass(v) else _generic_to_dict(v)
    return _plain_out


_ENCODERS: dict[type, _Converter] = {}


def _encoder(cls: type) -> _Converter:
    """The compiled :func:`to_dict` of dataclass ``cls``."""
    found = _ENCODERS.get(cls)
    if found is not None:
        return found
    hints = _hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default, has_default = f.default, True
        elif f.default_factory is not dataclasses.MISSING:
            default, has_default = f.default_factory(), True
        else:
            default, has_default = None, False
        plan.append((f.name, has_default, default, _out_converter(hints[f.name])))
    fields = tuple(plan)

    def encode(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, has_default, default, convert in fields:
            value = getattr(obj, name)
            if has_default and value == default:
                continue
            if convert is _plain_out:
                out[name] = value if type(value) in _PLAIN else _generic_to_dict(value)
            else:
                out[name] = convert(value)
        return out

    _ENCODERS[cls] = encode
    return encode


def to_dict(obj: Any) -> Any:
    """JSON-ready form of a record: dataclasses become dicts without default-valued fields."""
    if type(obj) in _ENCODERS:
        return _ENCODERS[type(obj)](obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _encoder(type(obj))(obj)
    return _generic_to_dict(obj)


def _generic_to_dict(obj: Any) -> Any:
    """The reference walk of :func:`to_dict` (used for values outside the declared types)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.default is not dataclasses.MISSING and value == f.default:
                continue
            if f.default_factory is not dataclasses.MISSING and value == f.default_factory():
                continue
            out[f.name] = _generic_to_dict(value)
        return out
    if isinstance(obj, tuple | list):
        return [_generic_to_dict(v) for v in obj]
    return obj


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _generic_convert(tp: Any, value: Any) -> Any:
    """The reference walk of :func:`from_dict` for one value of type ``tp``."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = tuple(a for a in typing.get_args(tp) if a is not type(None))
        return _generic_convert(args[0], value) if len(args) == 1 else value
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_generic_convert(args[0], v) for v in value)
        return tuple(_generic_convert(a, v) for a, v in zip(args, value, strict=True))
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _generic_from_dict(tp, value)
    return value


def _generic_from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """The reference walk of :func:`from_dict`."""
    hints = _hints(cls)
    kwargs = {k: _generic_convert(hints[k], v) for k, v in data.items() if k in hints}
    unknown = set(data) - set(hints)
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)} for {cls.__name__}")
    return cls(**kwargs)


def _in_converter(tp: Any) -> _Converter | None:
    """The compiled :func:`_generic_convert` for type ``tp`` (None: the value is kept as it is)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = tuple(a for a in typing.get_args(tp) if a is not type(None))
        return _in_converter(args[0]) if len(args) == 1 else None
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            item = args[0]
            if typing.get_origin(item) is tuple and not any(map(_in_converter, typing.get_args(item))):
                n = len(typing.get_args(item))

                def pair(v: Any) -> Any:
                    if v is None:
                        return None
                    out = tuple(v)
                    if len(out) != n:  # what zip(..., strict=True) refuses
                        raise ValueError(f"expected {n} values, got {len(out)}")
                    return out

                return lambda v: tuple(map(pair, v))
            inner = _in_converter(item)
            if inner is None:
                return tuple
            return lambda v: tuple(None if x is None else inner(x) for x in v)
        return lambda v: _generic_convert(tp, v)
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _decoder(tp)
    return None


_DECODERS: dict[type, _Converter] = {}


def _decoder(cls: type) -> _Converter:
    """The compiled :func:`from_dict` of dataclass ``cls``."""
    found = _DECODERS.get(cls)
    if found is not None:
        return found
    hints = _hints(cls)
    converters = {name: _in_converter(tp) for name, tp in hints.items()}

    def decode(data: Mapping[str, Any]) -> Any:
        kwargs = {}
        for k, v in data.items():
            if k not in converters:
                unknown = set(data) - set(hints)
                raise ValueError(f"unknown field(s) {sorted(unknown)} for {cls.__name__}")
            convert = converters[k]
            kwargs[k] = v if convert is None or v is None else convert(v)
        return cls(**kwargs)

    _DECODERS[cls] = decode
    return decode


def from_dict(cls: type[T], data: Mapping[str, Any]) -> T:
    """Inverse of :func:`to_dict` for the dataclasses of this module."""
    return _decoder(cls)(data)  # type: ignore[no-any-return]


__all__ = [
    "Annotation",
    "ConceptRelation",
    "Document",
    "FORMAT",
    "MODALITIES",
    "MeshHeading",
    "MeshQualifier",
    "Record",
    "Relation",
    "Section",
    "Sentence",
    "SentenceParse",
    "SentenceRecord",
    "Span",
    "TITLE_SEPARATOR",
    "from_dict",
    "pmid_sort_key",
    "record_sort_key",
    "reindex_relations",
    "to_dict",
]
