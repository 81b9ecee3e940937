"""Composite-entity extension: key entities + ontology terms in their syntactic vicinity.

[`extend_documents`][pipeline.nlp.extend.extend_documents] parses every sentence (``Document.sentences``) with a
spaCy pipeline (``nlp.pipe``, batched across documents), aligns the key
entities of the document (annotations of sources pubtator/local/gold whose
type is a key-entity type of the ontology: Chemical, Gene, Mutation, Disease
and their aliases, or that a surface rule's ``key_type`` makes one, e.g. a
genotype "A2/A2" PubTator types as Gene acts as a variant) to tokens, and
looks around each key entity's syntactic head for ontology terms.  Rules
(recorded in ``Annotation.rule``):

* ``<label>`` / ``prep:<word>``: up the head chain (at most
  [`MAX_HOPS`][pipeline.nlp.extend_search.MAX_HOPS] hops through noun modifiers), the key attaching with one of
  the class's ``relations`` ("warfarin sensitivity": ``compound``; "clearance **of**
  tacrolimus": ``prep:of``); after a hit the chain may continue through noun
  modifiers to a larger, nesting composite ("KIT exon 11" -> "KIT exon 11
  mutation");
* ``linker:<lemma>``: through a linker of the class ("warfarin-**induced**
  bleeding", "bleeding **induced by** warfarin", "EGFR-**mutated** NSCLC");
* ``<rule>+both``: a term that key entities on either side extend is one
  composite with both ("TNF-alpha-mediated expression of VCAM-1", "COMT
  inhibition by entacapone"), replacing the left key's composite;
* ``linker:<lemma>+state``: the gene-defined state of a disease subtype made
  through a state linker, an entity of its own too ("HER2 -positive" in "HER2
  -positive breast cancer");
* ``linker:<lemma>+effect``: the effect of a drug-linked drug phenotype, an
  entity of its own too ("bleeding" in "warfarin-induced bleeding"; a key entity
  of exactly its span, the disease "anemia" of "ribavirin-induced anemia", is
  replaced by it);
* ``governs:<label>``: down to the key's own dependents ("**mutant** p53");
* other key entities acting as the term (``term_entities``: "EGFR-mutated
  NSCLC", "ABCB1 C3435T");
* ``compound+shared``: coordinated modifiers the parser made conjuncts of
  their shared head ("CYP2C9 and SLCO1B1 polymorphisms");
* ``<label>+sibling``: a term right after the key, both modifying the same
  noun in a flat parse ("COX-2 mRNA suppression" gives "COX-2 mRNA"), or the
  term modifying a noun modifier of that noun ("MGMT promotor methylation
  status" gives "MGMT promotor"); the term may be the shorter one a longer
  term starts with ("5-HTT mRNA levels" gives "5-HTT mRNA");
* ``prefix:anti``: "anti-" right before a gene names a drug against it
  ("anti-LFA-1", class GeneTargetedDrug);
* ``suffix:<rule>``: text right after a key (``suffix_rules``: "CYP2D6*4",
  "CYP2C9*1, *2 and *3", "HLA-DR 7");
* standalone drug terms ("statins", "NRTIs") are Chemical keys of the search
  too ("response to statins"), their own standalone annotation the key;
* ``standalone``: terms of ``standalone`` classes outside any composite and
  any key entity ("poor metabolizers", "adverse drug reactions"), or holding
  key entities strictly inside ("tumor growth" around the disease "tumor");
* short forms: an entity, key or composite, of a parsed sentence written right
  before a parenthesised short form that its source left untagged ("superoxide
  dismutase ( SOD )", "Norepinephrine ( NE )") gives the short form the same
  annotation (source, type, identifier, class) by the built-in rule of
  [`builtin_definitions`][pipeline.nlp.abbreviations.builtin_definitions].  PubTator
  often leaves such short forms out, and the local annotator only defines those
  of its own matches.  A composite's short form has ``rule`` ``abbreviation``
  and no ``key``; a short form is never added where an annotation already
  covers it exactly, lies inside it or crosses it.

Suffixes ``+conj`` (the key is a later conjunct and takes the first
conjunct's attachment) and ``+merged`` (gene and variant on the same
variation term, "ABCB1 C3435T polymorphism") qualify a rule.  Words between
key and term that do not belong to the composite (other conjuncts, "and",
commas, clauses) are left out, giving a discontiguous composite ("warfarin ...
sensitivity", brat fragments); a parenthesised abbreviation inside or right
after the key belongs to it; qualifiers of the class on the term's left
("plasma") and a number right after it ("exon 11") are taken in.  The key
entity itself is kept (nested), except where the class ``absorbs`` its type
(a variant annotated together with its gene).  Of two composites on the same
term occurrence where one covers the other, the larger is kept.  A composite
with more than [`MAX_SPAN_TOKENS`][pipeline.nlp.extend_search.MAX_SPAN_TOKENS] tokens outside its key entity
(first to last) is a parse accident and dropped.

Offsets: the input and output annotations are document-relative half-open
character spans (``Document`` convention); composites record their key
entity's fragments in ``key`` (document-relative too).

Count keys (``counts``):
``documents``, ``documents_without_sentences`` (the whole text is then parsed
as one sentence), ``sentences_parsed``, ``skipped_empty``,
``skipped_too_long`` (more than ``max_tokens`` whitespace tokens or
``max_chars`` characters; logged), ``skipped_cannot_pass`` (not parsed: the
content filter would drop the sentence anyway, see ``should_parse``), ``key_entities``,
``key_entities_crossing_sentence``, ``key_entities_in_skipped_sentence``,
``key_aligned``, ``key_subtoken_expanded`` (the entity ends inside a token at
a hyphen, slash or plus, "CYP2C9+VKORC1", or before punctuation only, "NF-kappa
B." at a sentence end; the token is used for syntax, the composite keeps the
entity's own boundary), ``misaligned`` (no safe token
alignment; the key is kept but not extended), ``composites``,
``composites_<Class>``, ``composites_discontiguous``, ``composites_merged``,
``composites_subsumed``, ``composites_too_long``, ``absorbed_<type>``,
``standalone_<Class>``, ``short_forms`` (of which ``short_forms_composite``: of
a composite's long form).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from spacy.language import Language
from spacy.tokens import Doc, Token

from pipeline.documents import Annotation, Document, Sentence, SentenceParse, Span
from pipeline.nlp.abbreviations import builtin_definitions
from pipeline.nlp.extend_search import _adjacent, _Composite, _Key, _linker_forms, _Occurrence, _search
from pipeline.nlp.ontology import ANTI_CLASS, Ontology, normalise

logger = logging.getLogger(__name__)

MAX_TOKENS = 400
"""Sentences with more whitespace tokens than this are not parsed (default of ``max_tokens``)."""
MAX_CHARS = 5000
"""Sentences with more characters than this are not parsed (default of ``max_chars``)."""
#: Characters at which a key entity may end inside a token ("CYP2C9-guided").
_SUBTOKEN_SEPARATORS = frozenset("-/+")
KEY_SOURCES = frozenset({"pubtator", "local", "gold"})
"""Sources whose annotations can be key entities (composites are never keys)."""


def extend_documents(
    docs: Iterable[Document],
    ontology: Ontology,
    nlp: Language,
    counts: Counter[str],
    *,
    batch_size: int = 256,
    max_tokens: int = MAX_TOKENS,
    max_chars: int = MAX_CHARS,
    should_parse: Callable[[Document, Sentence], bool] | None = None,
    keep_parses: bool = False,
) -> Iterator[Document]:
    """Add composite entities to the annotations of documents, lazily.

    Documents are streamed in chunks of about ``batch_size`` sentences; each
    document's counts are added to ``counts`` just after it is yielded.

    Args:
        docs: Documents with sentences and document-relative key annotations.
        ontology: The classes, terms and rules that make composites.
        nlp: A loaded spaCy pipeline with a dependency parser and lemmas
            (see [`load_parser`][pipeline.nlp.spacy_models.load_parser]).
        counts: Counter incremented with the module's count keys.
        batch_size: Sentences per chunk and per ``nlp.pipe`` batch.
        max_tokens: Sentences with more whitespace tokens are not parsed
            (counted ``skipped_too_long``, logged).
        max_chars: Sentences with more characters are not parsed (likewise).
        should_parse: ``should_parse(doc, sentence)`` False: the sentence is
            not parsed (counted ``skipped_cannot_pass``);
            [`ParseGate.can_pass`][pipeline.nlp.parse_gate.ParseGate.can_pass]
            says which sentences cannot pass the content filter anyway.
            ``None``: every sentence is parsed.  Not asked for a document
            without sentences.
        keep_parses: Each document also keeps the parses of its parsed
            sentences (``Document.parses``,
            [`sentence_parse`][pipeline.nlp.extend.sentence_parse]) for the relation stage,
            which then needs no parser of its own.

    Yields:
        The same documents, in the same order, whose annotations are the
            originals (minus the absorbed ones) plus the composites (source
            ``ontology``, ``type`` and ``ontology_class`` = the class, ``rule``,
            ``key`` = the key entity's fragments), all half-open and
            document-relative, de-duplicated and sorted by
            [`Document.with_annotations`][pipeline.documents.Document.with_annotations].
    """
    chunk: list[Document] = []
    pending = 0
    for doc in docs:
        chunk.append(doc)
        pending += max(1, len(doc.sentences))
        if pending >= batch_size:
            yield from _extend_chunk(chunk, ontology, nlp, counts, batch_size, max_tokens, max_chars, should_parse,
                                     keep_parses)
            chunk, pending = [], 0
    if chunk:
        yield from _extend_chunk(chunk, ontology, nlp, counts, batch_size, max_tokens, max_chars, should_parse,
                                 keep_parses)


def _extend_chunk(
    chunk: Sequence[Document],
    ontology: Ontology,
    nlp: Language,
    counts: Counter[str],
    batch_size: int,
    max_tokens: int,
    max_chars: int,
    should_parse: Callable[[Document, Sentence], bool] | None = None,
    keep_parses: bool = False,
) -> Iterator[Document]:
    # Counts per document, added to ``counts`` just after the document is yielded: each
    # document's share stays attributable (the per-document memo, pipeline.memo, needs it).
    own: list[Counter[str]] = [Counter() for _ in chunk]
    jobs: list[tuple[int, Sentence]] = []
    for d, doc in enumerate(chunk):
        doc_counts = own[d]
        doc_counts["documents"] += 1
        sentences = doc.sentences
        if not sentences:
            doc_counts["documents_without_sentences"] += 1
            sentences = (Sentence(0, len(doc.text)),) if doc.text else ()
        for sent in sentences:
            text = doc.text[sent.start : sent.end]
            if not text.strip():
                doc_counts["skipped_empty"] += 1
                continue
            if len(text) > max_chars or len(text.split()) > max_tokens:
                doc_counts["skipped_too_long"] += 1
                logger.warning(
                    "PMID %s: sentence at %d-%d too long to parse (%d chars), not extended",
                    doc.pmid, sent.start, sent.end, len(text),
                )
                continue
            if should_parse is not None and doc.sentences and not should_parse(doc, sent):
                doc_counts["skipped_cannot_pass"] += 1
                continue
            jobs.append((d, sent))
    parsed: dict[int, list[tuple[Sentence, Doc]]] = {}
    texts = (chunk[d].text[s.start : s.end] for d, s in jobs)
    for (d, sent), sdoc in zip(jobs, nlp.pipe(texts, batch_size=batch_size), strict=True):
        own[d]["sentences_parsed"] += 1
        parsed.setdefault(d, []).append((sent, sdoc))
    for d, doc in enumerate(chunk):
        extended = _extend_document(doc, parsed.get(d, []), ontology, own[d])
        if keep_parses:
            extended = dataclasses.replace(extended, parses=tuple(
                sentence_parse(sdoc, sent.start, sent.end) for sent, sdoc in parsed.get(d, [])))
        yield extended
        for key, value in own[d].items():
            counts[key] += value


def _extend_document(
    doc: Document, parsed: Sequence[tuple[Sentence, Doc]], ontology: Ontology, counts: Counter[str]
) -> Document:
    keys = [
        a for a in doc.annotations
        if a.source in KEY_SOURCES and ontology.key_type(a.type, a.covered(doc.text)) is not None
    ]
    counts["key_entities"] += len(keys)
    placed: set[Annotation] = set()
    new: list[Annotation] = []
    absorbed: set[Annotation] = set()
    for sent, sdoc in parsed:
        inside = [a for a in keys if a.start >= sent.start and a.end <= sent.end]
        placed.update(inside)
        composites, standalone, drop = _extend_sentence(sdoc, sent.start, inside, ontology, counts, doc.text)
        new.extend(composites)
        new.extend(standalone)
        absorbed |= drop
    for a in keys:
        if a in placed:
            continue
        if any(a.start < s.end and s.start < a.end for s, _ in parsed):
            counts["key_entities_crossing_sentence"] += 1
        else:
            counts["key_entities_in_skipped_sentence"] += 1
    kept = [a for a in doc.annotations if a not in absorbed]
    annotations = [*kept, *new]
    return doc.with_annotations([*annotations, *_short_forms(doc, [s for s, _ in parsed], annotations, counts)])


def _short_forms(doc: Document, sentences: Sequence[Sentence], annotations: Sequence[Annotation],
                 counts: Counter[str]) -> list[Annotation]:
    """Short forms defined right after an entity of a parsed sentence and not annotated yet.

    Offsets are document-relative and half-open, like ``annotations``.  The long form is a
    one-fragment annotation; where a key entity and a composite share its span, the key entity
    gives the short form its annotation (its identifier is the more specific).
    """
    text = doc.text
    by_span: dict[Span, Annotation] = {}
    for a in sorted(annotations, key=lambda a: (a.source == "ontology", a.sort_key())):
        if len(a.fragments) == 1 and any(s.start <= a.start and a.end <= s.end for s in sentences):
            by_span.setdefault(a.fragments[0], a)
    out: list[Annotation] = []
    taken = [(a.start, a.end) for a in annotations]
    for pair in builtin_definitions(text, sorted(by_span)):
        start, end = pair.short
        # an annotation equal to, inside or crossing the short form already says what it is;
        # one around it (the composite "NE levels") does not
        if any(s < end and start < e and not (s <= start and end <= e and (s, e) != (start, end))
               for s, e in taken):
            continue
        if not any(s.start <= start and end <= s.end for s in sentences):
            continue
        long_form = by_span[pair.long]
        composite = long_form.source == "ontology"
        out.append(dataclasses.replace(long_form, fragments=((start, end),), text=text[start:end],
                                       rule="abbreviation" if composite else long_form.rule,
                                       key=None if composite else long_form.key))
        taken.append((start, end))
        counts["short_forms"] += 1
        if composite:
            counts["short_forms_composite"] += 1
    return out


def sentence_parse(sdoc: Doc, offset: int, end: int) -> SentenceParse:
    """Keep what the relation stage needs of a sentence's parse.

    Args:
        sdoc: The spaCy parse of the sentence's text alone.
        offset: The sentence's start in the document: token offsets (relative
            to the sentence) are moved by it, to document-relative.
        end: The sentence's end in the document (exclusive).

    Returns:
        The [`SentenceParse`][pipeline.documents.SentenceParse]: half-open,
            document-relative token spans, each token's head index (within the
            sentence), dependency label, coarse part of speech and lower-cased lemma.
    """
    tokens = tuple((offset + t.idx, offset + t.idx + len(t.text)) for t in sdoc)
    return SentenceParse(
        start=offset, end=end, tokens=tokens,
        heads=tuple(t.head.i for t in sdoc), deps=tuple(t.dep_ for t in sdoc),
        tags=tuple(t.pos_ for t in sdoc), lemmas=tuple(t.lemma_.lower() for t in sdoc),
    )


# --- one sentence -------------------------------------------------------------

def _forms(token: Token) -> tuple[str, ...]:
    text = normalise(token.text)
    if token.pos_ in ("VERB", "AUX"):
        # Verbs match by their surface form only: "genotyped" is not the term "genotype",
        # while "mutated" still matches the term "mutated".
        return (text,)
    lemma = normalise(token.lemma_) if token.lemma_ else text
    return (lemma, text) if lemma != text else (text,)


def _anchor(sdoc: Doc, start: int, end: int) -> int:
    """The syntactic head of a token range: the token whose head lies outside it."""
    for i in range(start, end):
        head = sdoc[i].head.i
        if head == i or not start <= head < end:
            return i
    return start


def _punctuation_only(text: str) -> bool:
    return bool(text) and all(not ch.isalnum() and not ch.isspace() for ch in text)


def _align(
    sdoc: Doc, text: str, key: Annotation, offset: int, ktype: str, counts: Counter[str]
) -> _Key | None:
    """Token alignment of a key entity; ``text`` is the sentence text (``sdoc.text``, computed once)."""
    tokens: list[int] = []
    clip: Span | None = None
    for fs, fe in key.fragments:
        s, e = fs - offset, fe - offset
        span = sdoc.char_span(s, e, alignment_mode="strict")
        if span is None:
            span = sdoc.char_span(s, e, alignment_mode="expand")
            if span is None or len(span) == 0:
                counts["misaligned"] += 1
                logger.debug("misaligned key %r at %d-%d", key.text, fs, fe)
                return None
            # Safe only when the rest of the token is clearly another sub-token: after a hyphen,
            # slash or plus ("CYP2C9+VKORC1"), or punctuation only ("NF-kappa B." at a sentence end).
            left_ok = (
                span.start_char == s
                or text[s - 1] in _SUBTOKEN_SEPARATORS
                or text[s] in _SUBTOKEN_SEPARATORS
                or _punctuation_only(text[span.start_char : s])
            )
            right_ok = (
                span.end_char == e
                or text[e] in _SUBTOKEN_SEPARATORS
                or text[e - 1] in _SUBTOKEN_SEPARATORS
                or _punctuation_only(text[e : span.end_char])
            )
            if not (left_ok and right_ok):
                counts["misaligned"] += 1
                logger.debug("misaligned key %r at %d-%d (inside token %r)", key.text, fs, fe, span.text)
                return None
            counts["key_subtoken_expanded"] += 1
            clip = (key.start - offset, key.end - offset)
        tokens.extend(range(span.start, span.end))
    if not tokens:
        counts["misaligned"] += 1
        return None
    counts["key_aligned"] += 1
    toks = tuple(sorted(set(tokens)))
    head = next(
        (i for i in toks if sdoc[i].head.i == i or sdoc[i].head.i not in toks),
        toks[0],
    )
    return _Key(key, ktype, toks, head, clip)


def _suffix_composites(keys: Sequence[Annotation], ontology: Ontology, text: str, offset: int, end: int,
                       counts: Counter[str]) -> tuple[list[Annotation], set[Annotation]]:
    """The composites a key makes with a suffix or an "anti-" prefix (document-relative).

    Args:
        keys: The sentence's key annotations.
        ontology: The ontology.
        text: The document's text.
        offset: Where the sentence starts in the text.
        end: Where the sentence ends in the text.
        counts: Counters, updated (``composites`` ...).

    Returns:
        ``(composites, suffixed)``: the composites, and the keys that made one with a suffix.
    """
    suffixed: set[Annotation] = set()
    suffix_composites: list[Annotation] = []
    for a in keys:
        for made in _suffixes(a, ontology, text, end):
            suffix_composites.append(made)
            suffixed.add(a)
            counts["composites"] += 1
            counts[f"composites_{made.type}"] += 1
            if made.discontiguous:
                counts["composites_discontiguous"] += 1
    for a in keys:
        anti = _anti(a, ontology, text, offset)
        if anti is not None:
            suffix_composites.append(anti)
            counts["composites"] += 1
            counts[f"composites_{anti.type}"] += 1
    return suffix_composites, suffixed


def _term_occurrences(sdoc: Doc, forms: Sequence[tuple[str, ...]], ontology: Ontology
                      ) -> tuple[list[_Occurrence], dict[int, _Occurrence], dict[int, _Occurrence]]:
    """The ontology's terms in one sentence.

    Args:
        sdoc: The sentence.
        forms: Its tokens' forms (``_forms``).
        ontology: The ontology.

    Returns:
        ``(occurrences, occ_at, prefix_at)``: the term occurrences in order, the occurrence at each of their
            tokens, and at the first token of a multi-word term the shorter term it starts with.
    """
    occ_at: dict[int, _Occurrence] = {}
    term_occurrences: list[_Occurrence] = []
    prefix_at: dict[int, _Occurrence] = {}
    for start, end, words in ontology.match_terms(forms):
        occ = _Occurrence(start, end, _anchor(sdoc, start, end), words)
        term_occurrences.append(occ)
        for i in range(start, end):
            occ_at[i] = occ
        if end - start > 1:
            # The shorter term a longer one starts with ("mRNA" in "mRNA level"): what a key right
            # before it may make in a flat parse ("5-HTT mRNA levels" holds "5-HTT mRNA").
            inner = ontology.match_terms(forms[start : end - 1])
            if inner and inner[0][0] == 0:
                _s, e, w = inner[0]
                prefix_at[start] = _Occurrence(start, start + e, _anchor(sdoc, start, start + e), w)
    return term_occurrences, occ_at, prefix_at


def _standalone_terms(sdoc: Doc, stext: str, offset: int, term_occurrences: Sequence[_Occurrence], covered: set[int],
                      aligned: Sequence[_Key], ontology: Ontology, counts: Counter[str]) -> list[Annotation]:
    """The ontology terms that are entities on their own, outside every composite (document-relative).

    Args:
        sdoc: The sentence.
        stext: Its text.
        offset: Where the sentence starts in the text.
        term_occurrences: The sentence's term occurrences (``_term_occurrences``).
        covered: The tokens of the sentence's composites.
        aligned: The sentence's aligned keys.
        ontology: The ontology.
        counts: Counters, updated (``standalone_<class>``).

    Returns:
        The standalone annotations.
    """
    standalone: list[Annotation] = []
    key_tokens = {i for k in aligned if k.annotation.source != "ontology" for i in k.tokens}
    for occ in term_occurrences:
        if occ.words is None or occ.start in covered:
            continue
        # A key entity crossing the term or equal to it says what the words are; one strictly inside
        # the term is a part of it ("tumor" in "tumor growth").
        if any(i in key_tokens for i in range(occ.start, occ.end)) and not all(
                set(k.tokens) <= set(range(occ.start, occ.end)) and len(k.tokens) < occ.end - occ.start
                for k in aligned if set(k.tokens) & set(range(occ.start, occ.end))):
            continue
        cls = next((c for c in ontology.classes_for_term(occ.words) if c.standalone), None)
        if cls is None:
            continue
        s, e = sdoc[occ.start].idx, sdoc[occ.end - 1].idx + len(sdoc[occ.end - 1].text)
        standalone.append(
            Annotation(((s + offset, e + offset),), cls.name, "ontology", text=stext[s:e],
                       ontology_class=cls.name, rule="standalone")
        )
        counts[f"standalone_{cls.name}"] += 1
    return standalone


def _extend_sentence(
    sdoc: Doc, offset: int, keys: Sequence[Annotation], ontology: Ontology, counts: Counter[str], text: str
) -> tuple[list[Annotation], list[Annotation], set[Annotation]]:
    """Composites, standalone terms and absorbed key annotations of one sentence (document-relative)."""
    forms = [_forms(t) for t in sdoc]
    stext = sdoc.text  # Doc.text joins every token: compute it once per sentence
    suffix_composites, suffixed = _suffix_composites(keys, ontology, text, offset, offset + len(stext), counts)
    term_occurrences, occ_at, prefix_at = _term_occurrences(sdoc, forms, ontology)
    aligned: list[_Key] = []
    for a in keys:
        ktype = ontology.key_type(a.type, a.covered(text))
        if ktype is None:
            continue
        k = _align(sdoc, stext, a, offset, ktype, counts)
        if k is not None:
            aligned.append(k)
    aligned.extend(_drug_class_keys(sdoc, offset, term_occurrences, aligned, ontology))
    entity_at: dict[int, list[_Occurrence]] = {}
    for k in aligned:
        occ = _Occurrence(k.tokens[0], k.tokens[-1] + 1, k.head, None, k.type)
        for i in k.tokens:
            entity_at.setdefault(i, []).append(occ)

    found: list[_Composite] = []
    for k in aligned:
        hits = _search(sdoc, k, ontology, occ_at, entity_at, counts, prefix_at)
        if not hits and k.annotation not in suffixed:
            hits = _adjacent(sdoc, k, ontology, occ_at, counts)
        for c in hits:
            # The allele a suffix names is the variant: "HLA-B*5701 allele" stays "HLA-B*5701".
            if k.annotation in suffixed and ontology.is_a(c.cls.name, "GenomicVariation"):
                continue
            found.append(c)
    found = _merge_variants(sdoc, found, counts)
    found = _drop_subsumed(found, counts)
    both = _both_sides(sdoc, found, counts)
    if both:
        # the union replaces the composite of the key on the left, which ends inside the phrase
        lefts = {id(c) for c in found for u in both
                 if c.occurrence == u.occurrence and c.key.tokens[-1] < u.occurrence.start}
        found = [c for c in found if id(c) not in lefts] + both
    found = found + _induced_effects(sdoc, found, ontology, counts)
    found = found + _defining_states(sdoc, found, ontology, counts)

    composites: list[Annotation] = list(suffix_composites)
    absorbed: set[Annotation] = set()
    covered: set[int] = set()
    for c in found:
        frags = tuple((s + offset, e + offset) for s, e in c.fragments)
        composites.append(
            Annotation(
                fragments=frags,
                type=c.cls.name,
                source="ontology",
                text=" ".join(stext[s:e] for s, e in c.fragments),
                ontology_class=c.cls.name,
                rule=c.rule,
                # the effect lies outside its key entity: like a short form, it has none
                key=None if c.rule.endswith(_EFFECT_SUFFIX) else c.key.annotation.fragments,
            )
        )
        counts["composites"] += 1
        counts[f"composites_{c.cls.name}"] += 1
        if len(frags) > 1:
            counts["composites_discontiguous"] += 1
        covered.update(range(c.occurrence.start, c.occurrence.end))
        if c.rule.endswith(_EFFECT_SUFFIX):
            # The effect replaces the key entity it is made of ("anemia" in "ribavirin-induced anemia").
            for k in aligned:
                if k.annotation.fragments == frags and k.annotation not in absorbed:
                    counts[f"absorbed_{k.type}"] += 1
                    absorbed.add(k.annotation)
        if c.cls.absorbs:
            for k in aligned:
                if k.type in c.cls.absorbs and _inside(k.annotation.fragments, frags):
                    if k.annotation not in absorbed:
                        counts[f"absorbed_{k.type}"] += 1
                    absorbed.add(k.annotation)

    standalone = _standalone_terms(sdoc, stext, offset, term_occurrences, covered, aligned, ontology, counts)
    return composites, standalone, absorbed


def _drug_class_keys(sdoc: Doc, offset: int, occurrences: Sequence[_Occurrence], aligned: Sequence[_Key],
                     ontology: Ontology) -> list[_Key]:
    """Standalone drug terms ("statins", "NRTIs", "antidepressant") as Chemical keys of the search.

    A pharmacological class is a chemical (its standalone entity is typed so); what a drug makes with the
    words around it, a class makes too ("response to statins", "resistance to NRTIs").  The key is the
    term's own standalone annotation (source ``ontology``), so it is never a key entity of the document;
    terms overlapping a key entity are left to it.
    """
    taken = {i for k in aligned for i in k.tokens}
    out: list[_Key] = []
    for occ in occurrences:
        if occ.words is None or any(i in taken for i in range(occ.start, occ.end)):
            continue
        cls = next((c for c in ontology.classes_for_term(occ.words)
                    if c.standalone and ontology.is_a(c.name, "Drug")), None)
        if cls is None:
            continue
        s, e = sdoc[occ.start].idx, sdoc[occ.end - 1].idx + len(sdoc[occ.end - 1].text)
        ann = Annotation(((s + offset, e + offset),), cls.name, "ontology", text=sdoc.text[s:e],
                         ontology_class=cls.name, rule="standalone")
        out.append(_Key(ann, "Chemical", tuple(range(occ.start, occ.end)), occ.anchor, None))
    return out


#: "anti-" right before a gene: a drug against it ("anti-LFA-1", "anti- CD40L"); not "anti-inflammatory".
_ANTI = re.compile(r"(?i)(?<![\w-])anti\s*-\s*$")


def _anti(key: Annotation, ontology: Ontology, text: str, start: int) -> Annotation | None:
    """A drug named "anti-" and its gene target ("anti-LFA-1", "anti- CD40L"): document-relative."""
    if ANTI_CLASS not in ontology.classes or key.discontiguous or ontology.key_type(
            key.type, key.covered(text)) != "Gene":
        return None
    m = _ANTI.search(text, max(start, key.start - 8), key.start)
    if m is None:
        return None
    frags = ((m.start(), key.end),)
    return Annotation(frags, ANTI_CLASS, "ontology", text=text[m.start() : key.end], ontology_class=ANTI_CLASS,
                      rule="prefix:anti", key=key.fragments)


def _suffixes(key: Annotation, ontology: Ontology, text: str, limit: int) -> list[Annotation]:
    """Composites of a key with the allele suffixes following it (document-relative)."""
    out: list[Annotation] = []
    if key.discontiguous:
        return out
    covered = text[key.start : key.end]
    for rule in ontology.suffix_rules:
        if key.type not in rule.types or (rule.entity is not None and not rule.entity.search(covered)):
            continue
        m = rule.pattern.match(text, key.end, limit)
        if m is None or not m.group().strip():
            continue
        out.append(_suffix_annotation(key, rule.target, rule.name, [(key.start, m.end())], text))
        pos = m.end()
        while rule.coordination is not None:
            sep = rule.coordination.match(text, pos, limit)
            if sep is None:
                break
            nxt = rule.pattern.match(text, sep.end(), limit)
            if nxt is None or not nxt.group().strip():
                break
            start = nxt.start() + len(nxt.group()) - len(nxt.group().lstrip())
            out.append(_suffix_annotation(key, rule.target, rule.name, [key.fragments[0], (start, nxt.end())], text))
            pos = nxt.end()
        break
    return out


def _suffix_annotation(key: Annotation, cls: str, rule: str, frags: list[Span], text: str) -> Annotation:
    fragments = tuple(sorted(frags))
    return Annotation(
        fragments=fragments,
        type=cls,
        source="ontology",
        text=" ".join(text[s:e] for s, e in fragments),
        ontology_class=cls,
        rule=f"suffix:{rule}",
        key=key.fragments,
    )


def _merge_variants(sdoc: Doc, found: list[_Composite], counts: Counter[str]) -> list[_Composite]:
    """One composite for a gene and a variant attached to the same variation term.

    "ABCB1 C3435T polymorphism": the gene and the variant both reach
    "polymorphism"; PGxCorpus annotates one variant covering both.  Only for
    classes that absorb key entities (variation classes), never across a
    coordination.
    """
    groups: dict[tuple[_Occurrence, str], list[_Composite]] = {}
    for c in found:
        if c.cls.absorbs and not c.rule.endswith("+conj"):
            groups.setdefault((c.occurrence, c.cls.name), []).append(c)
    out = list(found)
    for group in groups.values():
        if len({c.key.annotation for c in group}) < 2:
            continue
        spans = sorted({f for c in group for f in c.fragments})
        merged: list[list[int]] = []
        for s, e in spans:
            gap = sdoc.text[merged[-1][1] : s] if merged else None
            if merged and (s <= merged[-1][1] or (gap is not None and not gap.strip())):
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        if len(merged) != 1:
            continue
        first = min(group, key=lambda c: c.key.tokens[0])
        span = ((merged[0][0], merged[0][1]),)
        out.append(_Composite(first.cls, first.rule + "+merged", first.key, first.occurrence, span))
        counts["composites_merged"] += 1
    return out


_BOTH_SUFFIX = "+both"


def _both_sides(sdoc: Doc, found: list[_Composite], counts: Counter[str]) -> list[_Composite]:
    """One composite for a term that two key entities extend from either side.

    "TNF-alpha-mediated expression of VCAM-1", "COX-2 inhibitory effects of celecoxib", "COMT inhibition by
    entacapone": one key before the term and another after it each make a composite with the same term
    occurrence; the phenotype is the whole phrase, both keys included.  The two are united when their words
    make one contiguous run; the class and key are those of the composite whose key is a Chemical (a drug
    phenotype), else of the one on the left (rule ``<rule>+both``).  The caller drops the left key's
    composite, which ends inside the phrase; the right one ("expression of VCAM-1") stays.
    """
    out: list[_Composite] = []
    by_occ: dict[_Occurrence, list[_Composite]] = {}
    for c in found:
        if c.occurrence.words is not None:
            by_occ.setdefault(c.occurrence, []).append(c)
    for occ, group in by_occ.items():
        left = [c for c in group if c.key.tokens[-1] < occ.start and len(c.fragments) == 1]
        right = [c for c in group if c.key.tokens[0] >= occ.end and len(c.fragments) == 1]
        for a in left:
            for b in right:
                (s1, e1), (s2, e2) = a.fragments[0], b.fragments[0]
                if s2 > e1 + 1 and sdoc.text[e1:s2].strip():
                    continue  # words of neither lie between them
                if s2 < s1 or e2 < e1:
                    continue
                main = b if b.key.type == "Chemical" and a.key.type != "Chemical" else a
                out.append(_Composite(main.cls, main.rule + _BOTH_SUFFIX, main.key, occ, ((s1, e2),)))
                counts["composites_both"] += 1
    return out


_EFFECT_SUFFIX = "+effect"
#: Tokens that never begin or end the effect part of a linker composite.
_EFFECT_TRIM = frozenset({"-", "by", "of", "the", "a", "an"})


def _induced_effects(sdoc: Doc, found: list[_Composite], ontology: Ontology, counts: Counter[str]
                     ) -> list[_Composite]:
    """The effect of a drug-linked composite, as an entity of its own.

    A drug phenotype made through a linker ("ribavirin-induced anemia", "ethanol-induced liver injury",
    "hydrogen peroxide-induced p53 activity", "bleeding induced by warfarin") names an effect that is a drug
    phenotype on its own too: PGxCorpus annotates both the whole and the effect.  The effect is the
    composite's words on the term's side of the linker, with the composite's class (rule
    ``linker:<lemma>+effect``, no ``key``: the drug lies outside it); a key entity with exactly its span
    (the disease "anemia") is replaced by it.  Only for Chemical keys and classes under ``Pharmacodynamic``.
    """
    out: list[_Composite] = []
    if "Pharmacodynamic" not in ontology.classes:
        return out
    for c in found:
        if not c.rule.startswith("linker:") or c.key.type != "Chemical" or not ontology.is_a(c.cls.name,
                                                                                            "Pharmacodynamic"):
            continue
        lemma = c.rule.split(":", 1)[1].split("+", 1)[0]
        tokens = [t.i for t in sdoc if any(s <= t.idx and t.idx + len(t.text) <= e for s, e in c.fragments)]
        linkers = [i for i in tokens
                   if lemma in _linker_forms(sdoc[i]) and not c.occurrence.start <= i < c.occurrence.end]
        if not linkers:
            continue
        if c.occurrence.start > linkers[-1]:
            part = [i for i in tokens if i > linkers[-1]]
        else:
            part = [i for i in tokens if i < linkers[0]]
        while part and (sdoc[part[0]].is_punct or sdoc[part[0]].lower_ in _EFFECT_TRIM):
            part.pop(0)
        while part and (sdoc[part[-1]].is_punct or sdoc[part[-1]].lower_ in _EFFECT_TRIM):
            part.pop()
        if not part or not c.occurrence.start >= part[0] or not c.occurrence.end - 1 <= part[-1]:
            continue
        if any(i in c.key.tokens for i in part):
            continue
        runs: list[list[int]] = []
        for i in part:
            if runs and runs[-1][-1] == i - 1:
                runs[-1].append(i)
            else:
                runs.append([i])
        frags = tuple((sdoc[r[0]].idx, sdoc[r[-1]].idx + len(sdoc[r[-1]].text)) for r in runs)
        out.append(_Composite(c.cls, c.rule + _EFFECT_SUFFIX, c.key, c.occurrence, frags))
        counts["composites_effect"] += 1
    return out


_STATE_CLASS = "GeneDefinedPhenotype"


def _defining_states(sdoc: Doc, found: list[_Composite], ontology: Ontology, counts: Counter[str]
                     ) -> list[_Composite]:
    """The gene-defined state of a genetically defined disease, as an entity of its own.

    "HER2-positive breast cancer" is a disease subtype defined by a state of the tumour, "HER2-positive",
    which PGxCorpus annotates as a phenotype too.  For a composite made through a linker that is a term of
    the gene-defined state class ("positive", "negative", "expressing"...), the key entity and the linker
    (with what lies between them) make that state (rule ``linker:<lemma>+state``).
    """
    out: list[_Composite] = []
    state = ontology.classes.get(_STATE_CLASS)
    if state is None:
        return out
    for c in found:
        if not c.rule.startswith("linker:") or c.rule.endswith(_EFFECT_SUFFIX):
            continue
        lemma = c.rule.split(":", 1)[1].split("+", 1)[0]
        if state not in ontology.classes_for_term((lemma,)):
            continue
        tokens = [t.i for t in sdoc if any(s <= t.idx and t.idx + len(t.text) <= e for s, e in c.fragments)]
        linkers = [i for i in tokens if lemma in _linker_forms(sdoc[i]) and i > c.key.tokens[-1]]
        if not linkers or linkers[0] >= c.occurrence.start:
            continue
        part = [i for i in tokens if i <= linkers[0]]
        if not part or part[0] != c.key.tokens[0]:
            continue
        s, e = sdoc[part[0]].idx, sdoc[part[-1]].idx + len(sdoc[part[-1]].text)
        if c.key.clip is not None:
            s = max(s, c.key.clip[0])
        if any(o.fragments == ((s, e),) and o.cls is state for o in [*found, *out]):
            continue  # the state is there already ("KRAS-negative" made by nmod)
        out.append(_Composite(state, f"linker:{lemma}+state", c.key, c.occurrence, ((s, e),)))
        counts["composites_state"] += 1
    return out


def _inside(inner: Sequence[Span], outer: Sequence[Span]) -> bool:
    return all(any(os_ <= s and e <= oe for os_, oe in outer) for s, e in inner)


def _drop_subsumed(found: list[_Composite], counts: Counter[str]) -> list[_Composite]:
    """Of composites on the same term occurrence, drop those covered by a larger one."""
    out = []
    for c in found:
        bigger = any(
            o is not c
            and o.occurrence == c.occurrence
            and o.fragments != c.fragments
            and _inside(c.fragments, o.fragments)
            for o in found
        )
        if bigger:
            counts["composites_subsumed"] += 1
        else:
            out.append(c)
    unique: dict[tuple[Span, ...], _Composite] = {}
    for c in out:
        unique.setdefault(c.fragments, c)
    return list(unique.values())


__all__ = ["KEY_SOURCES", "MAX_CHARS", "MAX_TOKENS", "extend_documents"]


def extend_from_files(
    docs: Iterable[Document],
    counts: Counter[str],
    *,
    ontology_path: Path,
    model: str,
    batch_size: int = 256,
    gate: tuple[Path, Path] | None = None,
    keep_parses: bool = False,
) -> Iterator[Document]:
    """Extend documents with the configuration read from files, each loaded once per process and content.

    Args:
        docs: Documents with sentences and document-relative key annotations.
        counts: Updated with the extension's counts.
        ontology_path: The ontology file.
        model: The spaCy pipeline that parses.
        batch_size: Sentences per parsing batch.
        gate: The schema and filter settings files of the parse gate
            ([`pipeline.nlp.parse_gate`][pipeline.nlp.parse_gate]), which skips the sentences that cannot
            pass the filter; None parses every sentence.
        keep_parses: Keep the sentences' parses on the documents (for relation pre-annotation).

    Returns:
        The documents, as [`extend_documents`][pipeline.nlp.extend.extend_documents] returns them.
    """
    from pipeline.nlp import spacy_models
    from pipeline.nlp.ontology import load_ontology
    from pipeline.process_cache import loaded

    onto = loaded(load_ontology, ontology_path)
    nlp = spacy_models.load_parser(model)
    should_parse = None
    if gate is not None:
        from pipeline.nlp import parse_gate

        schema_path, filter_path = gate
        should_parse = loaded(parse_gate.gate_for, ontology_path, schema_path, filter_path, extra=(model,)).can_pass
    return extend_documents(docs, onto, nlp, counts, batch_size=batch_size, should_parse=should_parse,
                            keep_parses=keep_parses)
