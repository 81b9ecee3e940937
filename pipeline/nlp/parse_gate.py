"""Which sentences need a dependency parse under the ``pgx`` content filter.

Extension parses every sentence, but under ``--filter pgx`` only sentences
that end with a Chemical and a Genomic_factor annotation (schema types, after
type mapping) and pass the malformed-sentence checks are kept
([`pipeline.corpus.select`][pipeline.corpus.select]).
[`ParseGate`][pipeline.nlp.parse_gate.ParseGate] says, *before* parsing, whether
a sentence can still pass; a sentence that cannot is not parsed, and the brat
output is the same.

Why "cannot pass" is provable:

* The malformed checks ([`malformed_reason`][pipeline.corpus.select.malformed_reason]) read
  the sentence text only: a malformed sentence is dropped whatever its
  annotations.
* An annotation of a kind (Chemical, Genomic_factor) reaches the sentence
  record in one of four ways, and the gate looks for a trace of each:

  1. a key entity (pre-annotation) whose mapped schema type is of that kind
     (mapped here exactly as [`TypeMapper`][pipeline.nlp.typemap.TypeMapper] will,
     surface rules included; extension only removes key entities);
  2. a composite or standalone term of an ontology class whose schema type is
     of that kind: the class's term must occur, every word of it as a token's
     normalised text or lemma (``pipeline.nlp.extend._forms``).  Without a
     parse there are no lemmas, so the gate asks for a *stem* of each word in
     the lower-cased sentence text: the word minus the longest suffix a lemma
     rule of the model can add (a rule turns ``<stem><old>`` into
     ``<stem><new>``, so the text holds ``<stem>``), or any surface form the
     model's exception tables and attribute-ruler patterns map to the word;
  3. a class with ``term_entities`` of that kind: a key entity of such a type;
  4. a suffix rule whose class is of that kind: a key entity of a type the
     rule applies to.
  5. the ``anti-`` prefix rule of the extension (a drug against a gene,
     ``pipeline.nlp.ontology.ANTI_CLASS``): a Gene key entity and ``anti`` in
     the text.

  The gate is conservative: every sentence with such a trace is parsed.

A model whose lemmatizer is neither spaCy's rule nor lookup lemmatizer gives
no stems to rely on: the gate then lets every sentence through
([`ParseGate`][pipeline.nlp.parse_gate.ParseGate]'s ``enabled`` False).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.documents import Document, Sentence
from pipeline.nlp.ontology import ANTI_CLASS, Ontology, normalise
from pipeline.schema import Schema

logger = logging.getLogger(__name__)

KINDS = ("Chemical", "Genomic_factor")
"""Schema types whose presence the pgx rule requires (one of each)."""


@dataclass(frozen=True)
class LemmaForms:
    """What a spaCy model's lemmatizer can turn into a word: suffixes its rules add, exception forms.

    Attributes:
        rule_suffixes: Every suffix a lemma rule of the model can add
            (``<stem><old>`` -> ``<stem><new>``: the ``<new>`` parts).
        forms_of: Normalised lemma -> the lower-cased surface forms the model's
            exception tables, lookup table or attribute-ruler patterns map to it
            (``""`` when a pattern could set the lemma on any token).
        enabled: False when the lemmatizer is missing or neither a rule nor a
            lookup lemmatizer: no stem is then provable, and the gate lets every
            sentence through.
    """

    rule_suffixes: frozenset[str]
    forms_of: dict[str, frozenset[str]]  # lemma (normalised) -> lower-cased surface forms listed for it
    enabled: bool = True

    def stems(self, word: str) -> frozenset[str]:
        """Return strings one of which occurs in the text of any token whose lemma is a word.

        Args:
            word: A normalised word (see [`normalise`][pipeline.nlp.ontology.normalise]).

        Returns:
            The word minus the longest rule suffix it ends with, plus the
                surface forms listed for it; the lower-cased text of a token whose
                lemma is ``word`` contains at least one of them.
        """
        cut = max((len(s) for s in self.rule_suffixes if s and word.endswith(s)), default=0)
        return frozenset({word[: len(word) - cut], *self.forms_of.get(word, ())})


def lemma_forms(nlp: Any) -> LemmaForms:
    """Read the lemma rules, exceptions and attribute-ruler lemmas of a loaded spaCy pipeline.

    Args:
        nlp: A loaded spaCy ``Language`` (for instance from
            [`load_parser`][pipeline.nlp.spacy_models.load_parser]).

    Returns:
        The pipeline's [`LemmaForms`][pipeline.nlp.parse_gate.LemmaForms]; disabled (and a warning
            logged for an unknown lemmatizer mode) when it has no rule or lookup
            lemmatizer.
    """
    suffixes: set[str] = set()
    forms: dict[str, set[str]] = {}
    if "lemmatizer" not in nlp.pipe_names:
        return LemmaForms(frozenset(), {}, enabled=False)
    lemmatizer = nlp.get_pipe("lemmatizer")
    mode = getattr(lemmatizer, "mode", "")
    tables = lemmatizer.lookups
    if mode == "rule":
        for rules in tables.get_table("lemma_rules", {}).values():
            suffixes.update(new for _old, new in rules)
        for exceptions in tables.get_table("lemma_exc", {}).values():
            for form, lemmas in exceptions.items():
                for lemma in lemmas:
                    forms.setdefault(normalise(lemma), set()).add(form.lower())
    elif mode == "lookup":
        for form, lemma in tables.get_table("lemma_lookup", {}).items():
            if isinstance(form, str) and isinstance(lemma, str):
                forms.setdefault(normalise(lemma), set()).add(form.lower())
    else:
        logger.warning("lemmatizer mode %r: every sentence is parsed (no provable stems)", mode)
        return LemmaForms(frozenset(), {}, enabled=False)
    if "attribute_ruler" in nlp.pipe_names:
        for pattern in nlp.get_pipe("attribute_ruler").patterns:
            lemma = pattern.get("attrs", {}).get("LEMMA")
            if not isinstance(lemma, str):
                continue
            texts = [
                str(spec.get(key)).lower()
                for tokens in pattern.get("patterns", [])
                for spec in tokens
                for key in ("LOWER", "ORTH", "TEXT", "NORM")
                if isinstance(spec.get(key), str)
            ]
            # A pattern without a literal token text could set this lemma on any token: the empty stem.
            forms.setdefault(normalise(lemma), set()).update(texts or [""])
    return LemmaForms(frozenset(suffixes), {k: frozenset(v) for k, v in forms.items()})


class ParseGate:
    """Say, before parsing, whether a sentence can still pass the ``pgx`` content filter.

    [`can_pass`][pipeline.nlp.parse_gate.ParseGate.can_pass] is False only when the sentence provably
    cannot pass (see the module docstring for the proof).  Built by
    [`gate_for`][pipeline.nlp.parse_gate.gate_for] from the configuration files.

    Args:
        ontology: The ontology whose classes, terms and suffix rules give traces.
        schema: The corpus schema (types are mapped to it).
        settings: The filter settings of the malformed-sentence checks
            (``pipeline.corpus.select.FilterSettings``).
        lemmas: The parsing model's [`LemmaForms`][pipeline.nlp.parse_gate.LemmaForms].

    Attributes:
        enabled: False when the model gives no provable stems: every sentence
            then passes the gate.
        terms: Per kind, the ontology terms that are traces of it, each a tuple
            of per-word stem sets (every word must occur).
        key_types: Per kind, the key entity types that are traces of it
            (``term_entities`` and suffix rule types).
    """

    def __init__(self, ontology: Ontology, schema: Schema, settings: Any, lemmas: LemmaForms) -> None:
        from pipeline.nlp.typemap import TypeMapper

        self.enabled = lemmas.enabled
        self.ontology = ontology
        self.schema = schema
        self.settings = settings
        self.mapper = TypeMapper(schema, ontology)
        # per kind: term alternatives, each a tuple of per-word stem sets (all words must occur)
        self.terms: dict[str, list[tuple[frozenset[str], ...]]] = {k: [] for k in KINDS}
        self.key_types: dict[str, set[str]] = {k: set() for k in KINDS}
        for name, cls in sorted(ontology.classes.items()):
            for kind in self._kinds(self.mapper.class_type(name)):
                self.terms[kind].extend(tuple(lemmas.stems(w) for w in words) for words in cls.terms)
                self.key_types[kind].update(cls.term_entities)
        for rule in ontology.suffix_rules:
            for kind in self._kinds(self.mapper.class_type(rule.target)):
                self.key_types[kind].update(rule.types)
        self.anti_kinds: frozenset[str] = frozenset(
            self._kinds(self.mapper.class_type(ANTI_CLASS)) if ANTI_CLASS in ontology.classes else ())
        # One-word terms reduce to a set of stems (any one present is a trace), checked first.
        self.single_stems: dict[str, tuple[str, ...]] = {
            k: tuple(sorted({stem for term in self.terms[k] if len(term) == 1 for stem in term[0]})) for k in KINDS
        }
        self.multi_terms: dict[str, list[tuple[frozenset[str], ...]]] = {
            k: sorted(set(t for t in self.terms[k] if len(t) > 1), key=lambda t: [sorted(w) for w in t])
            for k in KINDS
        }

    def _kinds(self, schema_type: object) -> list[str]:
        if not isinstance(schema_type, str) or schema_type not in self.schema.entity_parent:
            return []
        return [k for k in KINDS if self.schema.is_a(schema_type, k)]

    def _possible(self, doc: Document, sent: Sentence) -> set[str]:
        found: set[str] = set()
        scratch: Counter[str] = Counter()
        for ann in doc.annotations:
            if not (ann.start < sent.end and sent.start < ann.end):
                continue
            mapped = self.mapper.map_annotation(ann, doc.text, scratch)
            if mapped is not None:
                found.update(self._kinds(mapped.type))
            key_type = self.ontology.key_type(ann.type, ann.covered(doc.text) if ann.end <= len(doc.text) else "")
            for kind in KINDS:
                if key_type is not None and key_type in self.key_types[kind]:
                    found.add(kind)
            if key_type == "Gene" and self.anti_kinds and "anti" in doc.text[sent.start : sent.end].lower():
                found |= self.anti_kinds
        if len(found) == len(KINDS):
            return found
        lowered = doc.text[sent.start : sent.end].lower().replace("metabolis", "metaboliz")
        for kind in KINDS:
            if kind in found:
                continue
            if any(stem in lowered for stem in self.single_stems[kind]) or any(
                _occurs(term, lowered) for term in self.multi_terms[kind]
            ):
                found.add(kind)
        return found

    def can_pass(self, doc: Document, sent: Sentence) -> bool:
        """Say whether a sentence may pass the pgx rule once extended and mapped.

        Args:
            doc: The document, with its pre-annotations (document-relative offsets).
            sent: One of ``doc``'s sentences (half-open, document-relative span).

        Returns:
            False only when the sentence is malformed or lacks a trace of a
                Chemical or a Genomic_factor; True otherwise, and always when the
                gate is disabled.
        """
        from pipeline.corpus.select import malformed_reason

        if not self.enabled:
            return True
        text = doc.text[sent.start : sent.end]
        if malformed_reason(text, self.settings, title=sent.start < len(doc.title)) is not None:
            return False
        return len(self._possible(doc, sent)) == len(KINDS)


def gate_for(ontology_path: Path, schema_path: Path, filter_path: Path, model: str = "") -> ParseGate:
    """Build the gate for the configuration files and a spaCy model.

    Args:
        ontology_path: The ontology file (``config/ontology.yaml``).
        schema_path: The schema file (``config/schema.yaml``).
        filter_path: The filter settings file (``config/filter.yaml``).
        model: A spaCy model name or directory; empty for
            [`DEFAULT_MODEL`][pipeline.nlp.spacy_models.DEFAULT_MODEL].  Loaded
            through [`load_parser`][pipeline.nlp.spacy_models.load_parser]'s cache.

    Returns:
        The [`ParseGate`][pipeline.nlp.parse_gate.ParseGate].

    Raises:
        pipeline.nlp.ontology.OntologyError: If the ontology file is invalid.
        pipeline.schema.SchemaError: If the schema file is invalid.
        pipeline.corpus.select.FilterConfigError: If the filter file is invalid.
        pipeline.nlp.spacy_models.ModelNotAvailableError: If the model cannot be loaded.
    """
    from pipeline.corpus.select import load_filter_settings
    from pipeline.nlp.ontology import load_ontology
    from pipeline.nlp.spacy_models import DEFAULT_MODEL, load_parser
    from pipeline.schema import load_schema

    nlp = load_parser(model or DEFAULT_MODEL)
    return ParseGate(load_ontology(ontology_path), load_schema(schema_path), load_filter_settings(filter_path),
                     lemma_forms(nlp))


def _occurs(term: Iterable[frozenset[str]], lowered: str) -> bool:
    return all(any(stem in lowered for stem in stems) for stems in term)


__all__ = ["KINDS", "LemmaForms", "ParseGate", "gate_for", "lemma_forms"]
