"""Type mapping: source types (PubTator, local annotator, ontology classes) -> corpus schema types.

[`map_documents`][pipeline.nlp.typemap.map_documents] rewrites each annotation's ``type`` to a schema type and
keeps the source's type in ``original_type``:

1. *Surface rules* of the ontology (``surface_rules`` in
   ``config/ontology.yaml``) first: a key entity whose text matches a rule's
   regular expression takes the schema type of the rule's ontology class
   (star alleles and HLA alleles -> Haplotype; genotype and variant notations
   PubTator types as Gene, such as "A2/A2" or "C677T" -> Limited_variation).
2. Composites (source ``ontology``): the ``mapping.ontology`` entry of the
   class or, failing that, of its nearest ancestor in the ontology (this is the
   fine mapping to Pharmacokinetic_phenotype, Pharmacodynamic_phenotype,
   Haplotype, Limited_variation...).
3. Everything else: ``mapping.<source>`` of ``config/schema.yaml`` (Table 5 of
   the PGxCorpus paper); a type that is already a schema type maps to itself.

A type mapped to ``null`` is dropped; a type with no mapping at all is dropped
and logged.  When two annotations end with the same fragments and schema type
(a composite identical to its key entity) one is kept, the key entity's.
Annotations that already carry an ``original_type`` are left as they are, so
mapping twice changes nothing.  Offsets are untouched (document-relative).

Count keys: ``annotations``, ``mapped``, ``mapped_<schema type>``,
``already_mapped``, ``surface_<rule>``, ``dropped_null_<source>_<type>``,
``dropped_unmapped_<source>_<type>``, ``duplicates_merged``.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path

from pipeline.documents import Annotation, Document
from pipeline.nlp.ontology import DEFAULT_ONTOLOGY, Ontology, load_ontology
from pipeline.schema import Schema

logger = logging.getLogger(__name__)

_UNMAPPED = object()


def map_documents(
    docs: Iterable[Document], schema: Schema, counts: Counter[str], *, ontology: Ontology | None = None
) -> Iterator[Document]:
    """Map the annotations of documents to schema types, lazily.

    Each document goes through [`TypeMapper.map_document`][pipeline.nlp.typemap.TypeMapper.map_document]
    (the rules are in the module docstring).  Offsets are untouched.

    Args:
        docs: Documents whose annotations carry source types.
        schema: The corpus schema; its ``mapping`` tables give the target types.
        counts: Counter incremented with the module's count keys.
        ontology: The class hierarchy and the surface rules; ``None`` loads
            the default ``config/ontology.yaml``.

    Yields:
        Each document, in input order, whose annotations carry schema types
            (``original_type`` = the source type); dropped and merged annotations
            are counted.
    """
    onto = ontology if ontology is not None else load_ontology(DEFAULT_ONTOLOGY)
    mapper = TypeMapper(schema, onto)
    for doc in docs:
        yield mapper.map_document(doc, counts)


class TypeMapper:
    """Maps annotations of one schema and ontology; caches per (source, type).

    Attributes:
        schema: The corpus schema mapped to.
        ontology: The ontology whose classes and surface rules are used.
    """

    def __init__(self, schema: Schema, ontology: Ontology) -> None:
        self.schema = schema
        self.ontology = ontology
        self._cache: dict[tuple[str, str], object] = {}

    def class_type(self, cls: str) -> str | None | object:
        """Return the schema type of an ontology class.

        Args:
            cls: Name of an ontology class (or of a schema type).

        Returns:
            The ``mapping.ontology`` entry of the class or, failing that, of its
                nearest ancestor; ``None`` when that entry is ``null`` (dropped);
                ``cls`` itself when it is already a schema entity type; otherwise
                a private sentinel meaning "no mapping".
        """
        table = self.schema.mapping.get("ontology", {})
        names = self.ontology.ancestors(cls, include_self=True) if cls in self.ontology.classes else [cls]
        for name in names:
            if name in table:
                return table[name]
        if cls in self.schema.entity_parent:
            return cls
        return _UNMAPPED

    def source_type(self, source: str, type_: str) -> str | None | object:
        """Return the schema type of a source's type, cached per ``(source, type_)``.

        Args:
            source: The annotation source (``pubtator``, ``local``, ``ontology``...).
            type_: The source's type; for ``ontology``, an ontology class name.

        Returns:
            The schema type; ``None`` when the mapping is ``null`` (dropped);
                otherwise a private sentinel meaning "no mapping".
        """
        key = (source, type_)
        if key not in self._cache:
            if source == "ontology":
                self._cache[key] = self.class_type(type_)
            else:
                try:
                    self._cache[key] = self.schema.map_type(source, type_)
                except KeyError:
                    self._cache[key] = _UNMAPPED
        return self._cache[key]

    def map_annotation(self, ann: Annotation, text: str, counts: Counter[str]) -> Annotation | None:
        """Map one annotation to its schema type.

        Surface rules apply first (not to composites), then the type mapping;
        an annotation that already has an ``original_type`` is returned as is.

        Args:
            ann: The annotation, with document-relative half-open offsets.
            text: The document text, used to read the annotation's covered text
                for the surface rules.
            counts: Counter incremented with the module's count keys.

        Returns:
            The annotation with ``type`` = schema type and ``original_type`` =
                its source type, or ``None`` when it is dropped (mapped to ``null``
                or unmapped; counted, and the unmapped case logged).
        """
        counts["annotations"] += 1
        if ann.original_type is not None:
            counts["already_mapped"] += 1
            return ann
        target: str | None | object = _UNMAPPED
        if ann.source != "ontology":
            covered = ann.covered(text) if ann.end <= len(text) else ann.text
            for rule in self.ontology.surface_rules:
                if rule.applies(ann.type, covered):
                    target = self.class_type(rule.target)
                    counts[f"surface_{rule.name}"] += 1
                    break
        if target is _UNMAPPED:
            source_type = ann.ontology_class or ann.type if ann.source == "ontology" else ann.type
            target = self.source_type(ann.source, source_type)
        if target is _UNMAPPED:
            counts[f"dropped_unmapped_{ann.source}_{ann.type}"] += 1
            logger.warning("no schema mapping for %s type %r (%r): dropped", ann.source, ann.type, ann.text)
            return None
        if target is None:
            counts[f"dropped_null_{ann.source}_{ann.type}"] += 1
            return None
        assert isinstance(target, str)
        counts["mapped"] += 1
        counts[f"mapped_{target}"] += 1
        return dataclasses.replace(ann, type=target, original_type=ann.type)

    def map_document(self, doc: Document, counts: Counter[str]) -> Document:
        """Map every annotation of a document and merge duplicates.

        When two mapped annotations have the same fragments and schema type,
        one is kept: the key entity's over an identical composite.

        Args:
            doc: The document.
            counts: Counter incremented with the module's count keys.

        Returns:
            A copy of the document with the mapped annotations (relations are
                sorted and re-indexed by
                [`Document.with_annotations`][pipeline.documents.Document.with_annotations]).
        """
        mapped = [m for a in doc.annotations if (m := self.map_annotation(a, doc.text, counts)) is not None]
        # One annotation per (fragments, type): a key entity wins over an identical composite.
        best: dict[tuple[tuple[tuple[int, int], ...], str], Annotation] = {}
        for a in sorted(mapped, key=lambda a: (a.source == "ontology", a.sort_key())):
            slot = (a.fragments, a.type)
            if slot in best:
                counts["duplicates_merged"] += 1
                continue
            best[slot] = a
        return doc.with_annotations(best.values())


__all__ = ["TypeMapper", "map_documents"]


def map_from_files(docs: Iterable[Document], counts: Counter[str], *, schema_path: Path,
                   ontology_path: Path = DEFAULT_ONTOLOGY) -> Iterator[Document]:
    """Type documents' annotations with the schema and ontology read from files, loaded once per process and content.

    Args:
        docs: Documents with annotations typed by their source.
        counts: Updated with the mapping's counts.
        schema_path: The schema file.
        ontology_path: The ontology file (class hierarchy and surface rules).

    Returns:
        The documents, as [`map_documents`][pipeline.nlp.typemap.map_documents] returns them.
    """
    from pipeline.process_cache import loaded
    from pipeline.schema import load_schema

    onto = loaded(load_ontology, ontology_path)
    return map_documents(docs, loaded(load_schema, schema_path), counts, ontology=onto)
