"""Abbreviation definitions: scispaCy's Schwartz-Hearst detector or the project's built-in rule.

Two detectors of ``long form (SF)`` definitions, both returning
[`Abbreviation`][pipeline.nlp.abbreviations.Abbreviation] pairs whose
offsets are half-open and relative to the ``text`` given (document-relative when given a document text):

* ``scispacy`` ([`find_abbreviations`][pipeline.nlp.abbreviations.find_abbreviations]):
  scispaCy's ``AbbreviationDetector`` (Schwartz & Hearst 2003) on a blank
  English pipeline with scispaCy's tokenizer; no model is loaded or downloaded.
  It finds ``long form (SF)`` and ``SF (long form)`` definitions whose short
  form letters occur in order in the long form, the first one starting a word;
  the long form starts at the word where that first letter was found.
* ``builtin`` ([`builtin_definitions`][pipeline.nlp.abbreviations.builtin_definitions]):
  the rule the local annotator used before scispaCy: a known entity
  immediately followed by ``(SF)``, SF of 2-10 characters with a letter and an
  upper-case letter or digit, SF's first letter the first letter of a word of
  the entity.

[`entity_definitions`][pipeline.nlp.abbreviations.entity_definitions] anchors
either detector on entity spans (the local annotator's lexicon matches): each
returned pair's ``long`` is one of the given entity spans, so the short form
can inherit that entity's type and identifier.  For ``scispacy`` the entity
must end where the Schwartz-Hearst long form ends and contain it; the longest
such entity is taken.

``union`` takes the built-in definitions, then scispaCy's for short forms the
built-in rule left undefined.  The detectors were compared on the dev data by
``bench/abbreviations.py``; the figures and the reason for the default
(``builtin``) are in the README ("Abbreviations: scispaCy's detector vs the
built-in rule").  The scispaCy pipeline is cached per process and, like
scispaCy's detector (which adds and removes matcher rules on each call), is
not meant to be shared between threads.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import spacy
from spacy.language import Language
from spacy.util import compile_infix_regex, compile_prefix_regex

METHODS = ("builtin", "scispacy", "union")
"""Detector names, for the local annotator's ``abbreviations`` option."""
DEFAULT_METHOD = "builtin"
"""The detector used unless another is chosen (see the module docstring for why)."""

Span = tuple[int, int]

#: A word, for word initials: a run of ASCII letters and digits.
_WORD = re.compile(r"[A-Za-z0-9]+")
#: Built-in rule: ``(SF)`` right after the entity.
_PARENTHESISED = re.compile(r"\s*\(\s*([^()\s]{2,10})\s*\)")
#: Short forms accepted by the built-in rule: 2-10 characters, at least one letter, upper case first or inside,
#: no spaces.
SHORT_FORM = re.compile(r"^(?=.*[A-Za-z])(?=.*[A-Z0-9])[A-Za-z0-9][\w+./-]{1,9}$")


@dataclass(frozen=True, order=True)
class Abbreviation:
    """One definition: the short form's span and the long form's span.

    Pairs sort by short form, then long form.

    Attributes:
        short: The short form's span, ``(start, end)``: half-open character
            offsets relative to the text searched (document-relative when
            that is a document's text), parentheses excluded.
        long: The long form's span, same offsets.
    """

    short: Span
    long: Span

    def texts(self, text: str) -> tuple[str, str]:
        """Return the two forms as written in a text.

        Args:
            text: The text the offsets are relative to (the one searched).

        Returns:
            ``(short form, long form)``.
        """
        return text[self.short[0] : self.short[1]], text[self.long[0] : self.long[1]]


@functools.lru_cache(maxsize=1)
def detector_pipeline() -> Language:
    """Build a blank English spaCy pipeline with scispaCy's tokenizer and ``abbreviation_detector``.

    The tokenizer is scispaCy's ``combined_rule_tokenizer`` (hyphenated names such as
    ``N-acetyl-L-cysteine`` stay one token, so they fit the detector's long-form window) with
    parentheses and brackets always split off: the detector only sees ``( SF )`` as three tokens,
    and ``(LPS)-mediated`` would otherwise be one.  No model is loaded or downloaded.

    Returns:
        The pipeline, built once per process and cached (not meant to be shared
            between threads).

    Raises:
        ImportError: If scispaCy is not installed (the message names the package).
    """
    try:
        import scispacy.abbreviation  # noqa: F401  (registers the "abbreviation_detector" factory)
        from scispacy.custom_tokenizer import combined_rule_tokenizer
    except ImportError as exc:  # pragma: no cover - scispacy is a dependency
        raise ImportError(
            "the scispacy abbreviation detector needs the scispacy package (`pip install scispacy==0.6.2`); "
            f"or use the built-in detector ({exc})"
        ) from exc
    nlp = spacy.blank("en")
    with warnings.catch_warnings():
        # Python's re warns about "[[" in scispaCy's own prefix pattern; harmless, and not ours to fix.
        warnings.filterwarnings("ignore", message="Possible set union", category=FutureWarning)
        tokenizer = combined_rule_tokenizer(nlp)
    tokenizer.prefix_search = compile_prefix_regex([r"[(\[]", tokenizer.prefix_search.__self__.pattern]).search
    tokenizer.infix_finditer = compile_infix_regex([tokenizer.infix_finditer.__self__.pattern, r"[()\[\]]"]).finditer
    nlp.tokenizer = tokenizer
    nlp.add_pipe("abbreviation_detector")
    return nlp


def find_abbreviations(text: str) -> list[Abbreviation]:
    """Find the definitions scispaCy's Schwartz-Hearst detector sees in a text.

    Only definition sites are returned (the short form next to its long form,
    with a parenthesis between them), not the later uses of the short form.

    Args:
        text: The text searched (a document text, or any string).

    Returns:
        The definitions, sorted by short form; offsets are half-open and
            relative to ``text``.  Empty when ``text`` has no ``(``.

    Raises:
        ImportError: If scispaCy is not installed.
    """
    if "(" not in text:
        return []  # every definition has a parenthesis: skip the tokenizer
    with warnings.catch_warnings():
        # W036: scispaCy runs its matcher of found short forms even when it found none.
        warnings.filterwarnings("ignore", message=r"\[W036\]", category=UserWarning)
        doc = detector_pipeline()(text)
    found: set[Abbreviation] = set()
    for short in doc._.abbreviations:
        long = short._.long_form
        if long is None:
            continue
        s = (short.start_char, short.end_char)
        lf = (long.start_char, long.end_char)
        gap = text[lf[1] : s[0]] if lf[1] <= s[0] else text[s[1] : lf[0]]
        if gap.strip() == "(":  # the definition, not a later use of the short form
            found.add(Abbreviation(s, lf))
    return sorted(found)


def word_initials(text: str) -> set[str]:
    """Return the case-folded first characters of the words of ``text``.

    A short form's first letter is one of its long form's word initials: ``(-)-epigallocatechin``
    has the initial ``e`` (``EGC``), ``3,5-dihydroxyphenylglycine`` the initial ``d`` (``DHPG``).

    Args:
        text: A long form; its words are the runs of ASCII letters and digits.

    Returns:
        The words' first characters, case-folded.
    """
    return {w[0].casefold() for w in _WORD.findall(text)}


def builtin_definitions(text: str, entities: Sequence[Span]) -> list[Abbreviation]:
    """Find definitions by the built-in rule: an entity immediately followed by ``(SF)``.

    ``SF`` must be 2-10 characters with a letter and an upper-case letter or
    digit, differ from the entity's text, and start with the first letter of a
    word of the entity.

    Args:
        text: The text the spans are relative to.
        entities: Entity spans, ``(start, end)``: half-open offsets into ``text``.

    Returns:
        At most one definition per entity, in the order of ``entities``; each
            pair's ``long`` is the entity span, its ``short`` the span of ``SF``
            inside the parentheses.
    """
    out: list[Abbreviation] = []
    for start, end in entities:
        after = _PARENTHESISED.match(text, end)
        if not after:
            continue
        sf = after.group(1)
        long_form = text[start:end]
        if not SHORT_FORM.match(sf) or sf.casefold() == long_form.casefold():
            continue
        if sf[0].casefold() not in word_initials(long_form):
            continue
        out.append(Abbreviation(after.span(1), (start, end)))
    return out


def scispacy_definitions(text: str, entities: Sequence[Span]) -> list[Abbreviation]:
    """Find scispaCy's definitions and anchor them on entity spans.

    ``long`` is the longest entity that ends where the Schwartz-Hearst long form ends and
    contains it (``p38 mitogen-activated protein kinase (MAPK)``).  An entity inside the long
    form does not explain every letter of the short form (``HMG-CoA reductase (HMGCR)`` is no
    definition of the entity ``reductase``), so such definitions are left out, like those with no
    entity at all.

    Args:
        text: The text searched, as in [`find_abbreviations`][pipeline.nlp.abbreviations.find_abbreviations].
        entities: Entity spans, ``(start, end)``: half-open offsets into ``text``.

    Returns:
        The anchored definitions (``long`` is an entity span), ordered by
            entity, then short form.

    Raises:
        ImportError: If scispaCy is not installed.
    """
    pairs = find_abbreviations(text)
    if not pairs:
        return []
    by_end: dict[int, list[Span]] = {}
    for span in entities:
        by_end.setdefault(span[1], []).append(span)
    out: list[Abbreviation] = []
    for pair in pairs:
        candidates = [e for e in by_end.get(pair.long[1], ()) if e[0] <= pair.long[0]]
        if candidates:
            out.append(Abbreviation(pair.short, min(candidates)))  # starts first = longest
    return sorted(out, key=lambda a: (a.long, a.short))


def entity_definitions(text: str, entities: Sequence[Span], method: str = DEFAULT_METHOD) -> list[Abbreviation]:
    """Find the definitions whose long form is one of the given entity spans.

    Within each detector the result is ordered by entity; a caller keeping the first definition
    of each short form gives the built-in rule precedence in ``union``.

    Args:
        text: The text the spans are relative to.
        entities: Entity spans, ``(start, end)``: half-open offsets into ``text``.
        method: One of [`METHODS`][pipeline.nlp.abbreviations.METHODS]: ``builtin``
            ([`builtin_definitions`][pipeline.nlp.abbreviations.builtin_definitions]), ``scispacy``
            ([`scispacy_definitions`][pipeline.nlp.abbreviations.scispacy_definitions]), or ``union`` (the built-in
            definitions, then scispaCy's for short forms the built-in rule left undefined).

    Returns:
        The definitions; each ``long`` is one of ``entities``.

    Raises:
        ValueError: If ``method`` is not a known detector.
        ImportError: If ``method`` needs scispaCy and it is not installed.
    """
    if method == "builtin":
        return builtin_definitions(text, entities)
    if method == "scispacy":
        return scispacy_definitions(text, entities)
    if method == "union":
        builtin = builtin_definitions(text, entities)
        defined = {text[a.short[0] : a.short[1]] for a in builtin}
        extra = [a for a in scispacy_definitions(text, entities) if text[a.short[0] : a.short[1]] not in defined]
        return builtin + extra
    raise ValueError(f"unknown abbreviation detector {method!r}; choose one of {', '.join(METHODS)}")


__all__ = [
    "DEFAULT_METHOD",
    "METHODS",
    "Abbreviation",
    "builtin_definitions",
    "detector_pipeline",
    "entity_definitions",
    "word_initials",
    "find_abbreviations",
    "scispacy_definitions",
]
