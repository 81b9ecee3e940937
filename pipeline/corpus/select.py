"""Sentence filtering: drop malformed sentences, keep those that pass the content rule.

Input: [`Document`][pipeline.documents.Document] records with sentences (and, for the
``pgx`` rule, mapped annotations).  Output: one
[`SentenceRecord`][pipeline.documents.SentenceRecord] per kept sentence, annotations
sentence-relative (half-open offsets into the sentence text), in document
order.  Settings come from ``config/filter.yaml``
([`load_filter_settings`][pipeline.corpus.select.load_filter_settings]).

Checks, in this order; a dropped sentence is counted under the FIRST failing
reason only (``dropped:<reason>``):

- ``no_alpha``:
  no alphabetic character at all (numbers, punctuation, stray markup).
- ``section_label``:
  the sentence is only a structured-abstract label (``"METHODS:"``,
  ``"Results"``), or an all-capitals run of at most 5 words ending in a
  colon: a fragment of a bad split.
- ``too_short`` / ``too_long``:
  fewer than ``min_chars`` / more than ``max_chars`` characters (after
  stripping surrounding whitespace).
- ``too_few_tokens`` / ``too_many_tokens``:
  whitespace tokens outside ``[min_tokens, max_tokens]``.
- ``lowercase_start``:
  the first word is all lower-case letters (``"and the ..."``): the tail of
  a sentence split in the middle.  Words holding a capital or a digit
  (``p53``, ``mRNA``) and the prefixes in ``lowercase_start_allowed``
  (``alpha``, ``in vitro`` ...) are accepted.
- ``unbalanced_brackets``:
  ``()``, ``[]``, ``{}`` do not pair up (a split inside a parenthesis).
- ``no_verb``:
  no token looks like a verb: a cheap heuristic, no parser.  A token counts
  as a verb when it is an auxiliary/modal (``is``, ``was``, ``may`` ...),
  a known verb base or its ``-s``/``-es``/``-ed``/``-d``/``-ied`` form
  (built-in lexicon of common verbs of biomedical abstracts plus
  ``extra_verbs``), or any word of 5+ letters ending in ``-ed`` (minus a
  short exception list: ``need``, ``speed``, ``hundred``, ``indeed`` ...).
  Limits: participles used as adjectives (``increased risk``) count as
  verbs, so verb-less titles such as "Increased bleeding in X carriers"
  pass; present-tense verbs missing from the lexicon (``"X abrogates
  Y"``) are missed, and then a real sentence is dropped.  The lexicon is
  deliberately broad to keep the second kind rare.
- content rule (``rule="pgx"`` only):
  ``no_chemical``: no annotation whose type is (a descendant of)
  ``Chemical``; ``no_genomic_factor``: none that is a ``Genomic_factor``
  (``Gene_or_protein`` or any variation type).  Key and composite entities
  count alike.  A type that is not a schema type yet is mapped with
  [`Schema.map_type`][pipeline.schema.Schema.map_type] first, so unmapped input works too.

``rule="none"`` keeps every sentence, malformed ones included.

A sentence starting inside the title is exempt from ``no_verb`` (titles are
verb-less noun phrases by convention, and PGxCorpus kept them: 15 of its 300
development sentences are verb-less titles) unless ``titles_need_verb`` is
set; every other check applies to titles too.

Count keys: ``documents``, ``sentences``, ``kept``, ``dropped:<reason>`` (reasons
above), ``annotations_crossing_sentences`` (annotations left out because they
cross a sentence boundary), ``documents_without_sentences``.
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipeline import resources, yamlfile
from pipeline.documents import Annotation, Document, SentenceRecord
from pipeline.errors import InputError
from pipeline.schema import Schema
from pipeline.yamlfile import read_mapping

log = logging.getLogger(__name__)

DEFAULT_FILTER = resources.config_file("filter.yaml")
RULES = ("pgx", "none")

#: Reasons in the order they are checked (the first failing one is counted).
REASONS = (
    "no_alpha",
    "section_label",
    "too_short",
    "too_long",
    "too_few_tokens",
    "too_many_tokens",
    "lowercase_start",
    "unbalanced_brackets",
    "no_verb",
    "no_chemical",
    "no_genomic_factor",
)


class FilterConfigError(InputError):
    """An invalid filter settings file; the message names the file."""


@dataclass(frozen=True)
class FilterSettings:
    """Parameters of the malformed-sentence checks (see ``config/filter.yaml`` and the module docstring).

    Attributes:
        min_chars: Fewest characters of a kept sentence (stripped).
        max_chars: Most characters of a kept sentence (stripped).
        min_tokens: Fewest whitespace tokens.
        max_tokens: Most whitespace tokens.
        section_labels: Structured-abstract labels (lower-case) a sentence may not consist of.
        lowercase_start_allowed: Lower-case openers (lower-case prefixes) that are not a split sentence's tail.
        extra_verbs: Verb bases (lower-case) added to the built-in lexicon, with their derived forms.
        titles_need_verb: Apply ``no_verb`` to sentences starting inside the title too.
        trigger_phrases: Phrases of the stratified sample's triggered stratum.
        path: The file the settings were read from (``""`` for the defaults); not compared.
    """

    min_chars: int = 20
    max_chars: int = 1000
    min_tokens: int = 4
    max_tokens: int = 150
    section_labels: frozenset[str] = frozenset()
    lowercase_start_allowed: tuple[str, ...] = ()
    extra_verbs: frozenset[str] = frozenset()
    titles_need_verb: bool = False
    trigger_phrases: tuple[str, ...] = ()
    path: str = field(default="", compare=False)


@yamlfile.checked_types(FilterConfigError)
def load_filter_settings(path: str | Path = DEFAULT_FILTER) -> FilterSettings:
    """Read the filter settings file.

    Args:
        path: The settings file (``config/filter.yaml`` by default); every key is optional, unknown keys
            are refused.

    Returns:
        The settings; a missing key keeps its default.

    Raises:
        FilterConfigError: Naming the file, when it cannot be read or parsed, has an unknown key, a value
            of the wrong type, or a minimum larger than its maximum.
    """
    p = Path(path)
    data = read_mapping(p, FilterConfigError, "filter settings")
    known = {
        "min_chars", "max_chars", "min_tokens", "max_tokens", "section_labels",
        "lowercase_start_allowed", "extra_verbs", "titles_need_verb", "trigger_phrases",
    }
    unknown = set(data) - known
    if unknown:
        raise FilterConfigError(f"{p}: unknown setting(s) {sorted(unknown)}")

    def integer(name: str, default: int) -> int:
        value = data.get(name, default)
        if not isinstance(value, int) or value < 0:
            raise FilterConfigError(f"{p}: {name} must be a non-negative integer, got {value!r}")
        return value

    def strings(name: str) -> list[str]:
        value = data.get(name) or []
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise FilterConfigError(f"{p}: {name} must be a list of non-empty strings")
        return [v.strip() for v in value]

    settings = FilterSettings(
        min_chars=integer("min_chars", 20),
        max_chars=integer("max_chars", 1000),
        min_tokens=integer("min_tokens", 4),
        max_tokens=integer("max_tokens", 150),
        section_labels=frozenset(s.lower() for s in strings("section_labels")),
        lowercase_start_allowed=tuple(s.lower() for s in strings("lowercase_start_allowed")),
        extra_verbs=frozenset(s.lower() for s in strings("extra_verbs")),
        titles_need_verb=bool(data.get("titles_need_verb", False)),
        trigger_phrases=tuple(strings("trigger_phrases")),
        path=str(p),
    )
    if settings.min_chars > settings.max_chars or settings.min_tokens > settings.max_tokens:
        raise FilterConfigError(f"{p}: a minimum is larger than its maximum")
    return settings


# --- the verb heuristic ----------------------------------------------------------------------

_AUXILIARIES = frozenset(
    """am is are was were be been being has have had having do does did may might can could shall
    should will would must ought""".split()
)

# Base forms of verbs common in biomedical abstracts; -s/-es/-ed/-d/-ied forms are derived.
_VERB_BASES = frozenset(
    """abolish accelerate accompany account achieve act activate add address administer affect aggravate
    alleviate alter analyse analyze appear apply arise assess associate attenuate base become begin bind
    block carry cause change characterize characterise combine compare compromise conclude confer confirm
    consider consist constitute contain contribute control convert correlate counteract cover decrease
    define demonstrate depend describe detect determine develop differ diminish display disrupt divide
    document elevate elicit eliminate enable encode enhance ensure establish estimate evaluate examine
    exceed exert exhibit exist expand explain explore express extend facilitate fail find follow form
    generate give go harbor harbour help identify impair implicate improve include increase indicate
    induce influence inhibit initiate interact investigate involve lack lead limit link lower maintain
    make measure mediate metabolize metabolise modify modulate need observe obtain occur offer perform
    play possess potentiate predict predispose present prevent produce prolong promote propose protect
    prove provide raise range reach receive recommend reduce reflect regulate relate remain render
    replace report represent require result reveal seem select serve show signal stimulate suggest
    support suppress take target tend test transport treat undergo underlie use vary yield""".split()
)

# Irregular finite forms and frequent irregular past forms.
_IRREGULAR = frozenset(
    """became began bound brought came found gave got went held kept led left made meant met paid put
    ran rose said saw seen set shown showed taken took thought told underwent underlain understood
    known knew grew grown""".split()
)

_ED_EXCEPTIONS = frozenset(
    "need needs speed seed seeds bleed breed feed hundred hundreds indeed kindred shed shred red bed embed".split()
)

_WORD_RE = re.compile(r"[A-Za-z]+(?:-[A-Za-z]+)*")


def _verb_forms(bases: Iterable[str]) -> frozenset[str]:
    forms: set[str] = set()
    for base in bases:
        forms.add(base)
        forms.add(base + "s")
        forms.add(base + "es")
        if base.endswith("e"):
            forms.add(base + "d")
        else:
            forms.add(base + "ed")
        if base.endswith("y") and len(base) > 2 and base[-2] not in "aeiou":
            forms.add(base[:-1] + "ies")
            forms.add(base[:-1] + "ied")
    return frozenset(forms)


_VERB_FORMS = _verb_forms(_VERB_BASES)


def looks_like_verb(word: str, extra: frozenset[str] = frozenset()) -> bool:
    """Tell whether a word looks like a verb form (a heuristic; see the module docstring for its limits).

    Args:
        word: One word, any case.
        extra: Verb bases (lower-case) added to the built-in lexicon, with their derived forms.

    Returns:
        True for an auxiliary or modal, a lexicon verb or its derived form, an irregular form, or a word of
        5+ letters ending in ``-ed`` outside a short exception list.
    """
    w = word.lower()
    if w in _AUXILIARIES or w in _VERB_FORMS or w in _IRREGULAR:
        return True
    if extra and (w in extra or w in _verb_forms(extra)):
        return True
    return len(w) >= 5 and w.endswith("ed") and w not in _ED_EXCEPTIONS


def has_verb(text: str, extra: frozenset[str] = frozenset()) -> bool:
    """Tell whether any word of a text looks like a verb.

    Args:
        text: The sentence.
        extra: Verb bases (lower-case) added to the built-in lexicon.

    Returns:
        True when a word (a hyphenated compound by its last part: ``drug-induced``) passes
        [`looks_like_verb`][pipeline.corpus.select.looks_like_verb].
    """
    for m in _WORD_RE.finditer(text):
        # hyphenated compounds ("drug-induced") count by their last part
        if looks_like_verb(m.group().rsplit("-", 1)[-1], extra):
            return True
    return False


# --- the other checks ------------------------------------------------------------------------

_PAIRS = {")": "(", "]": "[", "}": "{"}


def brackets_balanced(text: str) -> bool:
    """Tell whether the brackets of a text pair up.

    Args:
        text: The sentence.

    Returns:
        True when ``()``, ``[]`` and ``{}`` pair up and nest properly.
    """
    stack: list[str] = []
    for ch in text:
        if ch in "([{":
            stack.append(ch)
        elif ch in _PAIRS:
            if not stack or stack.pop() != _PAIRS[ch]:
                return False
    return not stack


_CAPS_LABEL_RE = re.compile(r"^[A-Z][A-Z0-9 ,/&-]*:$")


def is_section_label(text: str, labels: frozenset[str]) -> bool:
    """Tell whether a sentence is only a structured-abstract label.

    Args:
        text: The sentence.
        labels: Known labels, lower-case, without colon.

    Returns:
        True when the text, stripped and without trailing colons, is one of ``labels`` (any case), or is
        an all-capitals run of at most 5 words ending in a colon.
    """
    stripped = text.strip()
    bare = stripped.rstrip(":").strip().lower()
    if bare in labels:
        return True
    return bool(_CAPS_LABEL_RE.match(stripped)) and len(stripped.split()) <= 5


def starts_lowercase(text: str, allowed: Sequence[str]) -> bool:
    """Tell whether a sentence starts like the tail of a sentence split in the middle.

    Args:
        text: The sentence; leading quotes and opening brackets are skipped.
        allowed: Lower-case prefixes that are accepted openers (``alpha``, ``in vitro``).

    Returns:
        True when the first word is all lower-case letters and the text does not start with an allowed
        opener (any case).
    """
    stripped = text.lstrip(" \t\n\"'([{")
    if any(stripped.lower().startswith(prefix) for prefix in allowed):
        return False
    first = stripped.split(maxsplit=1)[0].rstrip(".,;:") if stripped.split() else ""
    # a capital or a digit inside the first token (p53, mRNA, cDNA) makes it a name, not a fragment
    return first.isalpha() and first.islower()


def malformed_reason(text: str, settings: FilterSettings, *, title: bool = False) -> str | None:
    """Find the first failing malformed-sentence check of a sentence.

    Args:
        text: The sentence.
        settings: The check parameters.
        title: The sentence is (the start of) the article title; titles are
            verb-less noun phrases by convention, so ``no_verb`` does not apply to
            them unless ``titles_need_verb`` is set.

    Returns:
        The reason (``no_alpha`` ... ``no_verb``, in the order of the module docstring), or None when the
        sentence is well formed.
    """
    stripped = text.strip()
    if not any(ch.isalpha() for ch in stripped):
        return "no_alpha"
    if is_section_label(stripped, settings.section_labels):
        return "section_label"
    if len(stripped) < settings.min_chars:
        return "too_short"
    if len(stripped) > settings.max_chars:
        return "too_long"
    tokens = stripped.split()
    if len(tokens) < settings.min_tokens:
        return "too_few_tokens"
    if len(tokens) > settings.max_tokens:
        return "too_many_tokens"
    if starts_lowercase(stripped, settings.lowercase_start_allowed):
        return "lowercase_start"
    if not brackets_balanced(stripped):
        return "unbalanced_brackets"
    if (settings.titles_need_verb or not title) and not has_verb(stripped, settings.extra_verbs):
        return "no_verb"
    return None


def _schema_type(annotation: Annotation, schema: Schema) -> str | None:
    if annotation.type in schema.entity_parent:
        return annotation.type
    try:
        return schema.map_type(annotation.source, annotation.type)
    except KeyError:
        return None


def content_reason(record: SentenceRecord, schema: Schema) -> str | None:
    """Check the PGx content rule on a sentence.

    Args:
        record: The sentence and its annotations; a type that is not a schema type is mapped
            with [`Schema.map_type`][pipeline.schema.Schema.map_type] (unmappable types are ignored).
        schema: The annotation schema (type hierarchy).

    Returns:
        ``no_chemical`` or ``no_genomic_factor`` (the first missing), or None when the sentence has both.
    """
    types = [t for t in (_schema_type(a, schema) for a in record.annotations) if t is not None]
    if not any(schema.is_a(t, "Chemical") for t in types):
        return "no_chemical"
    if not any(schema.is_a(t, "Genomic_factor") for t in types):
        return "no_genomic_factor"
    return None


def filter_sentences(
    docs: Iterable[Document],
    rule: str,
    schema: Schema,
    counts: Counter[str],
    *,
    settings: FilterSettings | None = None,
) -> Iterator[SentenceRecord]:
    """Yield the sentence records of documents that are well formed and pass a rule.

    Annotations crossing a sentence boundary are left out and counted; a document without
    sentences is counted and logged.

    Args:
        docs: The documents, with sentences and annotations (document-relative offsets).
        rule: ``"pgx"`` (malformed-sentence checks, then the content rule) or ``"none"`` (keep every
            sentence).
        schema: The annotation schema, for the content rule.
        counts: Count keys (see the module docstring), updated in place.
        settings: The check parameters; None for ``config/filter.yaml`` (read only for ``"pgx"``).

    Yields:
        The kept sentences, in document order; offsets in the records are sentence-relative (half-open).

    Raises:
        ValueError: For an unknown rule (when the generator is first advanced).
        FilterConfigError: If ``settings`` is None and ``config/filter.yaml`` is invalid.
    """
    if rule not in RULES:
        raise ValueError(f"unknown filter rule {rule!r} (expected one of {', '.join(RULES)})")
    if settings is None and rule != "none":
        settings = load_filter_settings()
    for doc in docs:
        counts["documents"] += 1
        if not doc.sentences:
            counts["documents_without_sentences"] += 1
            log.warning("PMID %s has no sentences (was the sentence stage run?)", doc.pmid)
            continue
        records, crossing = doc.sentence_records()
        counts["annotations_crossing_sentences"] += crossing
        for record in records:
            counts["sentences"] += 1
            reason = None
            if rule == "pgx":
                assert settings is not None
                # the title is sentence 0 of the text (title + "\n" + abstract)
                is_title = record.start < len(doc.title)
                reason = malformed_reason(record.text, settings, title=is_title) or content_reason(record, schema)
            if reason is None:
                counts["kept"] += 1
                yield record
            else:
                counts[f"dropped:{reason}"] += 1


def settings_as_dict(settings: FilterSettings) -> dict[str, Any]:
    """Encode filter settings as JSON (for run manifests).

    Args:
        settings: The settings.

    Returns:
        Every setting but ``path``; sets sorted, tuples as lists.
    """
    return {
        "min_chars": settings.min_chars,
        "max_chars": settings.max_chars,
        "min_tokens": settings.min_tokens,
        "max_tokens": settings.max_tokens,
        "section_labels": sorted(settings.section_labels),
        "lowercase_start_allowed": list(settings.lowercase_start_allowed),
        "extra_verbs": sorted(settings.extra_verbs),
        "titles_need_verb": settings.titles_need_verb,
        "trigger_phrases": list(settings.trigger_phrases),
    }


def filter_from_files(docs: Iterable[Document], rule: str, counts: Counter[str], *, schema_path: Path,
                      settings_path: Path = DEFAULT_FILTER) -> Iterator[SentenceRecord]:
    """Filter sentences with the schema and settings read from files, loaded once per process and content.

    Args:
        docs: Documents with sentences and typed annotations.
        rule: The content rule, ``pgx`` or ``none`` (which keeps every well-formed sentence).
        counts: Updated with the kept sentences and the dropped ones by reason.
        schema_path: The schema file.
        settings_path: The filter settings file.

    Returns:
        The kept sentences, as [`filter_sentences`][pipeline.corpus.select.filter_sentences] returns them.

    Raises:
        ValueError: If ``rule`` is unknown or a file is not valid.
    """
    from pipeline.process_cache import loaded
    from pipeline.schema import load_schema

    settings = loaded(load_filter_settings, settings_path)
    return filter_sentences(docs, rule, loaded(load_schema, schema_path), counts,
                            settings=settings if rule != "none" else None)
