r"""The one document model shared by every stage.

Offset convention (the single source of truth):

* A [`Document`][pipeline.documents.Document]'s ``text`` is its title and its abstract joined by ONE
  character (``"\n"``, [`TITLE_SEPARATOR`][pipeline.documents.TITLE_SEPARATOR]), so the abstract
  starts at ``len(title) + 1`` exactly as in PubTator and BioC.  When there is no abstract the text
  is the title alone.
* Structured-abstract sections are inlined as ``"LABEL: section text"`` and
  joined by single spaces, as PubMed's own abstract display and PubTator do;
  each [`Section`][pipeline.documents.Section] records where its label and its text sit.
* All offsets are half-open ``[start, end)`` character offsets into
  ``Document.text`` (Python ``str`` indices, i.e. Unicode code points).
  Sentence-relative offsets only appear in [`SentenceRecord`][pipeline.documents.SentenceRecord],
  which is derived from a document by
  [`Document.sentence_records`][pipeline.documents.Document.sentence_records].
* An [`Annotation`][pipeline.documents.Annotation] has one or more fragments (brat-style
  discontiguous spans), sorted by start; its ``text`` is the fragment texts joined by one
  space.
* A [`Relation`][pipeline.documents.Relation] is typed and directed and names its two arguments by
  their index in the record's ``annotations`` tuple.  Every operation that
  rebuilds that tuple ([`Document.with_annotations`][pipeline.documents.Document.with_annotations],
  [`Document.sentence_records`][pipeline.documents.Document.sentence_records]) re-indexes the
  relations, so an argument is always the same entity from the relation stage to the brat export.
* A [`SentenceParse`][pipeline.documents.SentenceParse] keeps what later stages need of a sentence's
  dependency parse (token spans, heads, labels, tags, lemmas; offsets
  document-relative), so the sentence is parsed once.

Every record is a frozen dataclass; [`to_dict`][pipeline.documents.to_dict] /
[`from_dict`][pipeline.documents.from_dict] give the JSON form used between tasks (defaults
omitted, so files stay small and byte-identical across reruns).
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
"""A half-open ``(start, end)`` character span; relative to what depends on the record holding it."""

TITLE_SEPARATOR = "\n"
"""The one character joining title and abstract in ``Document.text``."""

SOURCES = ("pubtator", "local", "ontology", "gold")
"""Annotation sources.

``pubtator`` = PubTator API/files/BioC, ``local`` = the offline annotator, ``ontology`` = composite
entities built by extension, ``gold`` = manual annotations read back from brat.
"""

FORMAT = 2
"""Version of the JSON form of records.

Caches keyed by it (memo, stage reuse, parse cache) start afresh when it changes.  2: documents and
sentence records carry relations, documents sentence parses.
"""

MODALITIES = ("Hypothetical", "Negated")
"""Relation modalities, in canonical order.

The same names as [`pipeline.brat.modality`][pipeline.brat.modality] (not imported: this module is
the lowest layer; a test checks they agree).
"""


@dataclass(frozen=True, order=True)
class Annotation:
    """A (possibly discontiguous) entity mention.

    Offsets are half-open ``[start, end)`` character offsets, relative to the document text
    (``Document.text``) inside a [`Document`][pipeline.documents.Document] and to the sentence
    text (``SentenceRecord.text``) inside a [`SentenceRecord`][pipeline.documents.SentenceRecord].
    ``type`` is the source's type until type mapping, the corpus schema type
    after it (the source's type is then kept in ``original_type``).
    Composite entities (source ``ontology``) record their ontology class, the
    rule that produced them and the fragments of the key entity they extend.

    Attributes:
        fragments: The mention's spans, half-open ``(start, end)`` offsets relative to the
            holding record's text (document- or sentence-relative, see above); at least one,
            sorted, each non-empty (``0 <= start < end``). Several fragments make a brat
            discontiguous entity.
        type: The entity type: the source's type before type mapping, the corpus schema type after.
        source: Who produced it, one of [`SOURCES`][pipeline.documents.SOURCES]
            (``pubtator``, ``local``, ``ontology``, ``gold``).
        identifier: The normalized concept identifier (e.g. a PubTator/MeSH/NCBI Gene id), or
            None when the source gives none.
        text: The covered text: the fragment texts joined by single spaces (see
            [`covered`][pipeline.documents.Annotation.covered]); empty when not filled.
        original_type: The source's type, kept once type mapping has replaced ``type``; None before.
        ontology_class: For a composite (``ontology``) entity, the ontology class it was built for.
        rule: For a composite entity, the name of the extension rule that produced it.
        key: For a composite entity, the fragments of the key entity it extends (same offsets
            convention as ``fragments``); None otherwise.

    Raises:
        ValueError: On construction, if there is no fragment, a fragment is empty or negative,
            or the fragments are not sorted.
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
        """Start of the first fragment (inclusive), in the record's offsets."""
        return self.fragments[0][0]

    @property
    def end(self) -> int:
        """End of the mention (exclusive): the largest fragment end, in the record's offsets."""
        fragments = self.fragments
        # most mentions have one fragment; every stage asks for the end of every annotation
        return fragments[0][1] if len(fragments) == 1 else max(end for _, end in fragments)

    @property
    def discontiguous(self) -> bool:
        """Whether the mention has more than one fragment."""
        return len(self.fragments) > 1

    def covered(self, text: str) -> str:
        """Return the fragment texts of ``text`` joined by single spaces (brat's convention).

        Args:
            text: The text the fragments index into: the document text for an annotation of a
                [`Document`][pipeline.documents.Document], the sentence text for one of a
                [`SentenceRecord`][pipeline.documents.SentenceRecord].

        Returns:
            The covered text, one space between fragments.
        """
        return " ".join(text[s:e] for s, e in self.fragments)

    def shifted(self, delta: int) -> Annotation:
        """Return the same annotation with every offset (fragments and key) moved by ``delta``.

        Used to convert between document-relative and sentence-relative offsets.

        Args:
            delta: Characters added to every offset; negative moves left (e.g. ``-sentence.start``
                turns document-relative offsets into sentence-relative ones).

        Returns:
            A copy with shifted ``fragments`` and ``key``.

        Raises:
            ValueError: If a shifted fragment would start below 0.
        """
        key = None if self.key is None else tuple((s + delta, e + delta) for s, e in self.key)
        return dataclasses.replace(
            self, fragments=tuple((s + delta, e + delta) for s, e in self.fragments), key=key
        )

    def sort_key(self) -> tuple[int, int, str, str, tuple[Span, ...]]:
        """Return the deterministic sort key of the annotation.

        Returns:
            ``(start, end, type, source, fragments)``.
        """
        return (self.start, self.end, self.type, self.source, self.fragments)


@dataclass(frozen=True, order=True)
class Relation:
    """A typed, directed relation between two entities of one record.

    ``arg1`` and ``arg2`` are indices into the ``annotations`` of the record
    holding the relation (a [`Document`][pipeline.documents.Document] or a
    [`SentenceRecord`][pipeline.documents.SentenceRecord]), not offsets.
    ``rule`` and ``trigger`` are its provenance, which goes to the sidecar, never into a brat file.

    Attributes:
        type: The relation type (a corpus schema relation type).
        arg1: Index of the first (source) argument in the holding record's ``annotations``.
        arg2: Index of the second (target) argument; different from ``arg1``.
        modality: A subset of [`MODALITIES`][pipeline.documents.MODALITIES] in canonical order
            (empty: neither hypothetical nor negated).
        source: Who proposed it: ``rules`` (``pipeline.nlp.relations``), ``pubtator`` (a PubTator3
            relation) or ``gold`` (read back from brat).
        rule: The name of the rule that proposed it, or None.
        trigger: The trigger word, as written in the text, or None.

    Raises:
        ValueError: On construction, if an argument index is negative, both arguments are the
            same entity, or ``modality`` is not a subset of ``MODALITIES`` in canonical order.
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
        """Return the same relation with new argument indices.

        Args:
            arg1: The new index of the first argument in the new ``annotations`` tuple.
            arg2: The new index of the second argument.

        Returns:
            A copy with ``arg1`` and ``arg2`` replaced.
        """
        return dataclasses.replace(self, arg1=arg1, arg2=arg2)


@dataclass(frozen=True)
class ConceptRelation:
    """A document-level relation between two concept identifiers, as PubTator3 gives them (undirected).

    It has no offsets: the relation stage turns it into sentence-level
    [`Relation`][pipeline.documents.Relation] proposals between mentions.

    Attributes:
        type: The source's (BioRED) relation type.
        concept1: The first concept identifier, as the annotations carry it (``identifier``).
        concept2: The second concept identifier (the relation is undirected).
        source: Who gave it (``pubtator``).
    """

    type: str
    concept1: str
    concept2: str
    source: str = "pubtator"


@dataclass(frozen=True)
class SentenceParse:
    """The dependency parse of one sentence, as the relation stage needs it.

    All per-token tuples have one item per token, in token order.

    Attributes:
        start: Start of the sentence, a half-open document-relative character offset.
        end: End of the sentence (exclusive), document-relative.
        tokens: The token spans, half-open ``(start, end)`` document-relative offsets.
        heads: The index (in this sentence's ``tokens``) of each token's head, a root being its
            own head.
        deps: The dependency label of each token.
        tags: The coarse part of speech of each token.
        lemmas: The lower-cased lemma of each token.

    Raises:
        ValueError: On construction, if the per-token tuples differ in length or a head index
            is out of range.
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
        # min/max rather than a test per head: every parse of a shard is checked when it is read
        if self.heads and (min(self.heads) < 0 or max(self.heads) >= n):
            raise ValueError(f"parse of sentence {self.start}-{self.end}: head index out of range")


def reindex_relations(
    relations: Iterable[Relation], old: tuple[Annotation, ...], new: tuple[Annotation, ...]
) -> tuple[tuple[Relation, ...], int]:
    """Re-index relations over ``old`` annotations onto ``new`` ones, matching annotations by value.

    Args:
        relations: Relations whose ``arg1``/``arg2`` index into ``old``.
        old: The annotations the relations currently index.
        new: The annotations to index instead; an annotation is found by equality, so offsets
            must be in the same frame (both document- or both sentence-relative).

    Returns:
        The relations kept (re-indexed, sorted, de-duplicated) and the number lost because an
            argument is not in ``new`` (or both arguments became the same annotation).
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

    Attributes:
        start: Start of the section in the document text, including its inlined ``"LABEL: "``
            prefix (a half-open, document-relative character offset).
        end: End of the section (exclusive), document-relative.
        text_start: Where the section's own text begins, after the prefix (document-relative;
            equal to ``start`` when there is no label).
        label: The section label as PubMed gives it (``Label`` attribute), or None.
        category: PubMed's normalized category (``NlmCategory``, e.g. ``METHODS``), or None.
    """

    start: int
    end: int
    text_start: int
    label: str | None = None
    category: str | None = None


@dataclass(frozen=True)
class MeshQualifier:
    """A MeSH qualifier (subheading) of a [`MeshHeading`][pipeline.documents.MeshHeading].

    Attributes:
        name: The qualifier name, as written in the PubMed record.
        ui: The MeSH unique identifier (``Q...``), or None.
        major: Whether the qualifier is marked as a major topic (``MajorTopicYN="Y"``).
    """

    name: str
    ui: str | None = None
    major: bool = False


@dataclass(frozen=True)
class MeshHeading:
    """A MeSH heading of a PubMed record: a descriptor and its qualifiers.

    Attributes:
        descriptor: The descriptor name, as written in the PubMed record.
        ui: The MeSH descriptor unique identifier (``D...``), or None.
        major: Whether the descriptor is marked as a major topic (``MajorTopicYN="Y"``).
        qualifiers: The heading's qualifiers, in record order.
    """

    descriptor: str
    ui: str | None = None
    major: bool = False
    qualifiers: tuple[MeshQualifier, ...] = ()


@dataclass(frozen=True)
class Sentence:
    """A sentence as a half-open span of the document text.

    Attributes:
        start: Start of the sentence, a half-open document-relative character offset.
        end: End of the sentence (exclusive), document-relative.
    """

    start: int
    end: int


@dataclass(frozen=True)
class Document:
    """One PubMed record (title + abstract) and everything stages add to it.

    Every offset held by a document (sections, sentences, annotations, parses) is a half-open
    ``[start, end)`` character offset into ``text``.

    Attributes:
        pmid: The PubMed identifier (or the brat document name for a record read from brat).
        title: The title.
        text: The title, [`TITLE_SEPARATOR`][pipeline.documents.TITLE_SEPARATOR] and the abstract
            (sections inlined); the title alone when there is no abstract. Every offset is into it.
        sections: The abstract's sections (document-relative), empty when the source gives none.
        mesh: The record's MeSH headings.
        year: The publication year, or None when unknown.
        journal: The journal title, or None.
        language: The article language as PubMed gives it (e.g. ``eng``), or None.
        publication_types: PubMed's publication types, in record order.
        origin: Where the record came from: ``pubmed`` (XML), ``pubtator`` (file or API),
            ``bioc`` or ``brat``.
        sentences: The sentences (document-relative), filled by the sentence stage.
        annotations: The entity mentions (document-relative), sorted by
            [`Annotation.sort_key`][pipeline.documents.Annotation.sort_key]; filled by
            pre-annotation, extension and type mapping.
        relations: The relations (argument indices into ``annotations``), filled by the relation
            stage.
        concept_relations: The source's document-level relations (PubTator3).
        parses: The dependency parses (document-relative) that extension made for the relation
            stage, which consumes them.

    Raises:
        ValueError: On construction, if a relation names an annotation index beyond ``annotations``.
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
        """Document-relative offset where the abstract starts: ``len(title) + 1``."""
        return len(self.title) + len(TITLE_SEPARATOR)

    @property
    def abstract(self) -> str:
        """The abstract: ``text`` from ``abstract_start`` on (empty when there is none)."""
        return self.text[self.abstract_start :]

    def with_annotations(self, annotations: Iterable[Annotation]) -> Document:
        """Return a copy whose annotations are ``annotations``, de-duplicated and sorted.

        Relations are re-indexed onto the new tuple (arguments matched by value); a relation whose
        argument is gone is dropped and logged (a warning with the PMID).

        Args:
            annotations: The new annotations, document-relative (half-open offsets into ``text``).

        Returns:
            A copy with the annotations sorted by
                [`Annotation.sort_key`][pipeline.documents.Annotation.sort_key] and the relations
                re-indexed.
        """
        unique = {a: None for a in annotations}
        new = tuple(sorted(unique, key=Annotation.sort_key))
        relations, lost = reindex_relations(self.relations, self.annotations, new)
        if lost:
            log.warning("PMID %s: %d relation(s) dropped: an argument is no longer among the annotations",
                        self.pmid, lost)
        return dataclasses.replace(self, annotations=new, relations=relations)

    def with_relations(self, relations: Iterable[Relation]) -> Document:
        """Return a copy whose relations are ``relations``, de-duplicated and sorted.

        Args:
            relations: The new relations, their arguments indices into this document's
                ``annotations``.

        Returns:
            The copy.

        Raises:
            ValueError: If a relation names an annotation index beyond ``annotations``.
        """
        return dataclasses.replace(self, relations=tuple(sorted({r: None for r in relations})))

    def sentence_records(self) -> tuple[list[SentenceRecord], int]:
        """Project the annotations onto the sentences.

        An annotation goes to the sentence that contains all of it (its offsets shifted to be
        sentence-relative); one that crosses a sentence boundary is left out of every record.
        Relations whose two arguments lie in one sentence go to its record, re-indexed; any
        other relation (an argument crossing a boundary, or arguments in two sentences) is
        left out and logged (a warning with the PMID).

        Returns:
            One [`SentenceRecord`][pipeline.documents.SentenceRecord] per sentence, in document
                order (annotation offsets half-open and sentence-relative), and the number of
                annotations left out because they cross a sentence boundary.
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

    The brat file name is ``{pmid}_{k}`` with ``k = index + 1``: 1-based with the title as
    sentence 1, the numbering of the published PGxCorpus files (see
    [`name`][pipeline.documents.SentenceRecord.name]).

    Attributes:
        pmid: The PubMed identifier of the document.
        index: The 0-based position of the sentence in its document (the title is sentence 0
            when it is one sentence).
        text: The sentence text (``Document.text[start:start + len(text)]``).
        start: The sentence's offset in the document text (document-relative); add it to a
            sentence-relative offset to get the document-relative one.
        annotations: The entity mentions inside the sentence; their fragments are half-open,
            sentence-relative offsets into ``text``.
        relations: The relations between them, argument indices into ``annotations``.

    Raises:
        ValueError: On construction, if a relation names an annotation index beyond ``annotations``.
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
        """The brat document name, ``{pmid}_{index + 1}``."""
        return f"{self.pmid}_{self.index + 1}"


def _check_relations(relations: tuple[Relation, ...], n: int, where: str) -> None:
    for rel in relations:
        if rel.arg1 >= n or rel.arg2 >= n:
            raise ValueError(f"{where}: relation {rel.type} ({rel.arg1}, {rel.arg2}) names an entity beyond "
                             f"the {n} annotations")


Record = Document | SentenceRecord
T = TypeVar("T")


def pmid_sort_key(pmid: str) -> tuple[int, int | str]:
    """Return a key ordering numeric PMIDs numerically, then anything else as strings.

    Args:
        pmid: A PMID or other document name.

    Returns:
        ``(0, int(pmid))`` for an all-digit PMID, else ``(1, pmid)``.
    """
    return (0, int(pmid)) if pmid.isdigit() else (1, pmid)


def record_sort_key(record: Record) -> tuple[tuple[int, int | str], int]:
    """Return the deterministic sort key of a document or sentence record.

    Records sort by PMID ([`pmid_sort_key`][pipeline.documents.pmid_sort_key]), then by sentence
    index, a document before its sentences.

    Args:
        record: A [`Document`][pipeline.documents.Document] or a
            [`SentenceRecord`][pipeline.documents.SentenceRecord].

    Returns:
        ``(pmid_sort_key(pmid), index)`` with index -1 for a document.
    """
    index = record.index if isinstance(record, SentenceRecord) else -1
    return (pmid_sort_key(record.pmid), index)


# --- JSON form -------------------------------------------------------------
#
# Every stage reads and writes every record, so the JSON form is compiled once per
# dataclass into a list of per-field converters chosen from the type hints (the
# generic walk over ``dataclasses.fields`` and ``typing.get_origin`` for every value
# cost more than the JSON encoding itself).  The result is the same as the generic
# walk's, value for value: ``_generic_to_dict`` / ``_generic_from_dict`` are
# kept as the reference the tests compare against.

_Converter = typing.Callable[[Any], Any]
_PLAIN = (str, int, float, bool, type(None))


def _plain_out(value: Any) -> Any:
    # Values of plain-typed fields are normally str/int/bool/None; anything else
    # (a tuple put where a string belongs) goes through the generic walk.
    return value if type(value) in _PLAIN else _generic_to_dict(value)


def _out_converter(tp: Any) -> _Converter:
    """JSON-ready form of one value of type ``tp`` (what ``_generic_to_dict`` gives)."""
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
    """The compiled ``to_dict`` of dataclass ``cls``."""
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
    """Return the JSON-ready form of a record.

    Dataclasses become dicts without their default-valued fields (so files stay small and
    byte-identical across reruns), tuples become lists; offsets are kept as they are.

    Args:
        obj: A record of this module (or a tuple/list of them, or a plain value).

    Returns:
        A value ``json.dumps`` accepts.
    """
    if type(obj) in _ENCODERS:
        return _ENCODERS[type(obj)](obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return _encoder(type(obj))(obj)
    return _generic_to_dict(obj)


def _generic_to_dict(obj: Any) -> Any:
    """The reference walk of ``to_dict`` (used for values outside the declared types)."""
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
    """The reference walk of ``from_dict`` for one value of type ``tp``."""
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
    """The reference walk of ``from_dict``."""
    hints = _hints(cls)
    kwargs = {k: _generic_convert(hints[k], v) for k, v in data.items() if k in hints}
    unknown = set(data) - set(hints)
    if unknown:
        raise ValueError(f"unknown field(s) {sorted(unknown)} for {cls.__name__}")
    return cls(**kwargs)


def _in_converter(tp: Any) -> _Converter | None:
    """The compiled ``_generic_convert`` for type ``tp`` (None: the value is kept as it is)."""
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

                def pairs(v: Any) -> Any:
                    # the common case (lists of n values) at C speed; anything else (None items,
                    # other lengths) through pair, which keeps its result or its error
                    try:
                        out = tuple(map(tuple, v))
                    except TypeError:
                        return tuple(map(pair, v))
                    if out and (len(out[0]) != n or len(set(map(len, out))) != 1):
                        return tuple(map(pair, v))
                    return out

                return pairs
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
    """The compiled ``from_dict`` of dataclass ``cls``."""
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
    """Rebuild a record from its JSON form, the inverse of [`to_dict`][pipeline.documents.to_dict].

    Args:
        cls: The record class to build (e.g. [`Document`][pipeline.documents.Document]).
        data: The dict [`to_dict`][pipeline.documents.to_dict] made (missing fields take their
            defaults).

    Returns:
        The record, nested records and tuples rebuilt.

    Raises:
        ValueError: If ``data`` has a field ``cls`` does not have, or a record's own checks fail
            (e.g. an empty fragment).
    """
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
