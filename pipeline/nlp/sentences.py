r"""Sentence splitting of PubMed titles and abstracts with exact document offsets.

Input: [`Document`][pipeline.documents.Document] records (``text = title + "\n" + abstract``,
structured abstracts inlined as ``"LABEL: text"`` sections).  Output: the same
documents with ``sentences`` filled, each a half-open ``[start, end)`` span of
``Document.text`` (document-relative offsets), stripped of surrounding
whitespace, sorted, non-overlapping, together covering every non-space
character of the text.

Rules (the PGxCorpus build used GeniaSS, trained on GENIA; these rules aim at
GENIA's gold splits):

* the title is split on its own and never merged with the abstract;
* a structured-abstract section always starts a new sentence and no sentence
  crosses a section boundary; a section's ``"LABEL: "`` prefix stays at the
  start of its first sentence (as in GENIA's gold sentences);
* inside a segment, a sentence may end after ``.``, ``!``, ``?`` (plus any
  closing quotes or brackets) followed by white space (or glued to PubMed's
  "(ABSTRACT TRUNCATED AT 250 WORDS)" note), decided from the word
  before the punctuation and the token after it: abbreviations ("et al.",
  "e.g.", "i.v.", "approx.", "Fig.", "No.", "vs.", "U.S."...), initials and
  species names ("E. coli"), numbered lists ("1. The..." / "(i) The..."),
  lower-case continuations (but gene-like starts such as "p53", "mRNA", "c-Myc"
  do start sentences), and open brackets (no break inside a balanced ``( )`` or
  ``[ ]`` pair).  Pre-tokenized text ("et al .", "P = 0.01 )") is handled by
  looking through a stand-alone punctuation token to the word before it.
  Line breaks inside a segment are ordinary white space.

The splitter is a scanner of white-space delimited tokens written for this
corpus (fast: it needs no model); [`add_to_pipeline`][pipeline.nlp.sentences.add_to_pipeline]
installs the same rules as a spaCy pipeline component, so spaCy pipelines see identical sentences.

Count keys incremented by [`split_documents`][pipeline.nlp.sentences.split_documents]:

* ``documents``: documents processed;
* ``sentences``: sentences produced (all documents);
* ``title_sentences``: sentences inside the title;
* ``abstract_sentences``: sentences inside the abstract;
* ``documents_without_abstract``: documents whose text is the title alone;
* ``structured_documents``: documents with at least one labelled section;
* ``sections``: sections used as hard boundaries;
* ``sections_invalid``: sections ignored because their offsets overlap or do not
  fit the abstract (logged with the PMID);
* ``documents_title_mismatch``: documents whose text does not start with the
  title and the separator (logged; split with
  [`split_text`][pipeline.nlp.sentences.split_text], sections ignored);
* ``documents_empty``: documents without any non-space text (no sentence);
* ``title_multi_sentence``: titles split into more than one sentence.
"""

from __future__ import annotations

import bisect
import dataclasses
import logging
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from pipeline.documents import TITLE_SEPARATOR, Document, Sentence, Span

log = logging.getLogger(__name__)

__all__ = ["add_to_pipeline", "split_documents", "split_text"]

# --- word lists --------------------------------------------------------------
# Lists are case-sensitive: "NO." (nitric oxide), "CF." or "MS." end sentences,
# "No. 5" and "cf." do not.
#
# Abbreviations (without the final period) that never end a sentence in
# scientific abstracts: they announce what follows ("Fig. 2", "vs. placebo",
# "e.g. IL-2", "approx. 5 mg", "Dr. Smith").
_NEVER_FINAL = frozenset(
    """
    e.g eg i.e ie cf Cf viz vs Vs v fig Fig figs Figs tab Tab tabs Tabs eq Eq eqs Eqs ref Ref refs Refs
    No Nos nr Nr vol Vol vols pp p approx Approx appr ca cca Dr Mr Mrs Ms Prof St Mt esp Esp incl
    var subsp ssp cv sect Sect chap Chap suppl Suppl dept Dept univ Univ
    """.split()
)
# Abbreviations that may end a sentence: "... by Smith et al. The ...", "given i.v. Mice ...".
# Dotted abbreviations ("U.S.", "i.v.", "b.i.d.", "a.m.") are recognized by their shape.
_MAYBE_FINAL = frozenset("al etc resp Inc Ltd Co Corp sp spp nov Jr Sr Bros ed eds".split())
# Of those, the ones usually followed by a proper noun ("Sigma Chemical Co. St. Louis",
# "the U.S. Food and Drug Administration", "Smith et al. Blood 1999"): a break
# needs a word from _STARTERS after them.
_NAME_ABBREVIATIONS = frozenset("al Inc Ltd Co Corp Jr Sr Bros U.S U.K U.S.A ed eds".split())
# Frequent first words of sentences in abstracts (closed class words and
# discourse adverbs): after an abbreviation they confirm a break.
_STARTERS = frozenset(
    """
    A An The This These That Those It Its We Our In On At By For From Of To With Without Within After
    Before During Since As Although Though While Whereas When Where Because If Unlike Like However
    Moreover Furthermore Thus Therefore Hence Here Finally Further Additionally Also Both
    All Each No Neither None Only Such Taken Together Consequently Similarly Conversely Interestingly
    Importantly Notably Nevertheless Nonetheless Instead Overall Among Using There They Their He She
    His Her Patients Results Conclusions Methods Background Objective Aim
    """.split()
)
# Months before a day or year ("Jan. 2001"); otherwise ordinary words: "Fos and Jun." ends
# sentences (c-Jun), as do "Oct." and "Nov." (gene names).
_MONTHS = frozenset("Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split())
_TITLES = frozenset("Dr. Prof. Mr. Mrs. Ms.".split())
_COMPARATORS = "<>=\u2264\u2265~"
_GREEK = frozenset(
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau"
    " upsilon phi chi psi omega".split()
)

_OPENERS = "([{\"'\u201c\u2018\u00ab"
_CLOSERS = ")]}\"'\u201d\u2019\u00bb"
_BRACKETS = {")": "(", "]": "["}

# A candidate end: terminal punctuation (several allowed: "?!", "...") plus any
# closing quotes/brackets, followed by white space -- or glued to an upper-case
# note in brackets, as PubMed appends "(ABSTRACT TRUNCATED AT 250 WORDS)".
_CANDIDATE = re.compile(
    r"[.!?\u2026]+[)\]}\"'\u201d\u2019\u00bb]*(?=\s)"
    r"|(?<=[A-Za-z0-9)\]][.!?])(?=[(\[][A-Z][A-Z0-9]+(?: [A-Z0-9,.:-]+){2,}[)\]])"
)
_NONSPACE = re.compile(r"\S+")
_BRACKET = re.compile(r"[()\[\]]")
_INITIAL = re.compile(r"^[A-Z]\.$")
_MULTI_DOT = re.compile(r"^(?:[A-Za-z]{1,3}\.)+[A-Za-z]{1,3}$")
_NUMBER = re.compile(r"^[0-9]+(?:[.,][0-9]+)*%?$")
_ENUMERATOR = re.compile(r"^(?:[0-9]{1,2}|[ivxIVX]{1,4}|[a-hA-H])$")
# Short capitalized abbreviation after an initial ("C. Sub. on ...").
_SHORT_CAPITALIZED_ABBREVIATION = re.compile(r"^[A-Z][a-z]{1,4}\.$")
# Lower-case words that are gene/protein/molecule names and may start a
# sentence: "p53", "mRNA", "cDNA", "gp41", "c-Myc", "v-erbA", "bcl-2", "cis-acting".
_GENE_NAME = re.compile(r"^[a-z]{1,4}[A-Z0-9]")
_GENE_LIKE = re.compile(r"^(?:[a-z]{1,4}[A-Z0-9]|[a-z]{1,5}-[A-Za-z0-9])")


def _strip_openers(token: str) -> str:
    return token.lstrip(_OPENERS)


def _is_titlecase(word: str) -> bool:
    """'The', 'However', 'Mice': a capital then lower-case letters only (gene names such as 'IL-2' are not)."""
    core = word.rstrip(",;:")
    return len(core) > 1 and core[0].isupper() and core[1:].isalpha() and core[1:].islower()


def _abbreviation_kind(word: str, previous: str) -> str | None:
    """How the word before a period (``word``, period excluded) behaves.

    ``"never"``: never ends a sentence; ``"maybe"``: may end one; ``"initial"``: a
    single capital letter ("E. coli", "J. Smith", but also "protein kinase C.");
    ``None``: an ordinary word.  ``previous`` is the token before ``word``.
    """
    if len(word) == 1 and word.islower() and _NUMBER.match(previous):
        return None  # a unit ending a sentence ("for 24 h.", "chromosome 3 p.")
    if word in _NEVER_FINAL:
        return "never"
    if word in _MAYBE_FINAL or _MULTI_DOT.match(word):
        return "maybe"
    if len(word) == 1 and word.isalpha():
        return "initial" if word.isupper() else "maybe"
    return None


def _gene_like(core: str, following: str) -> bool:
    """A lower-case token may start a sentence when it names a gene, molecule or organism part.

    "p53", "mRNA", "cDNA", "gp41", "c-Myc", "v-erbA", "bcl-2", "alpha-IFN", "β-catenin"; a bare
    spelled-out Greek letter only when a number or capital follows ("alpha 4 integrins", "kappa B sites").
    """
    if _GENE_LIKE.match(core) or "\u03b1" <= core[:1] <= "\u03c9":  # Greek letters: "β-catenin", "α2"
        return True
    return core in _GREEK and bool(following[:1]) and (following[0].isdigit() or following[0].isupper())


def _bracket_spans(text: str) -> list[tuple[int, int]]:
    """Outermost matched ``(``/``)`` and ``[``/``]`` pairs as (open index, close index), sorted and disjoint.

    Unmatched brackets are ignored.
    """
    stack: list[tuple[str, int]] = []
    pairs: list[tuple[int, int]] = []
    for match in _BRACKET.finditer(text):
        char = match.group()
        if char in "([":
            stack.append((char, match.start()))
            continue
        opener = _BRACKETS[char]
        # Pop to the nearest matching opener; stray closers ("1) first", "2) second") are ignored.
        for depth in range(len(stack) - 1, -1, -1):
            if stack[depth][0] == opener:
                pairs.append((stack[depth][1], match.start()))
                del stack[depth:]
                break
    # Matched pairs nest, so a position is inside some pair iff it is inside an outermost one.
    outermost: list[tuple[int, int]] = []
    for open_, close in sorted(pairs):
        if not outermost or open_ > outermost[-1][1]:
            outermost.append((open_, close))
    return outermost


def _inside_brackets(pairs: list[tuple[int, int]], opens: list[int], position: int) -> bool:
    """Is ``position`` (a boundary before ``text[position]``) inside one of the disjoint ``pairs``?"""
    i = bisect.bisect_left(opens, position) - 1
    return i >= 0 and pairs[i][0] < position <= pairs[i][1]


def _tokens_before(text: str, position: int, floor: int, count: int) -> list[str]:
    """Up to ``count`` white-space delimited tokens of ``text[floor:position]``, nearest last."""
    tokens: list[str] = []
    end = position
    while len(tokens) < count:
        while end > floor and text[end - 1].isspace():
            end -= 1
        if end <= floor:
            break
        start = _token_start(text, end, floor)
        tokens.append(text[start:end])
        end = start
    tokens.reverse()
    return tokens


def _token_start(text: str, position: int, floor: int) -> int:
    """Start of the white-space delimited token that contains ``position`` (not before ``floor``)."""
    i = position
    while i > floor and not text[i - 1].isspace():
        i -= 1
    return i


def _is_boundary(text: str, match: re.Match[str], sentence_start: int, next_token: str, following: str) -> bool:
    """Does the candidate ``match`` (terminal punctuation + closers) end the sentence started at ``sentence_start``?

    ``next_token`` is the white-space delimited token after the candidate, ``following`` the one after it.
    """
    if match.start() == match.end():
        return True  # glued "(ABSTRACT TRUNCATED ...)" note
    punct_start = match.start()
    punct = match.group().rstrip(_CLOSERS)
    closers = match.group()[len(punct) :]
    token_start = _token_start(text, punct_start, sentence_start)
    word = _strip_openers(text[token_start:punct_start])
    # The (at most) three tokens before the word, nearest last; only these matter and a
    # bounded look-back keeps long sentences linear.
    before = _tokens_before(text, token_start, sentence_start, 3)
    previous = before[-1] if before else ""
    if not word:
        if len(punct) > 1 or punct == "\u2026":
            return False  # a free-standing ellipsis ("CTTGG ... CCAAG")
        # Pre-tokenized text ("et al .", "cells ."): judge the word before the lone punctuation.
        word = _strip_openers(previous)
        previous = before[-2] if len(before) >= 2 else ""
        before = before[:-1]
    if word[-1:] in (",", ";", ":") or not word.strip(_COMPARATORS):
        return False  # "Oct2,." is a typo, "P <. 001" a decimal broken by a space, not ends
    core = _strip_openers(next_token)
    opened = next_token[:1] in _OPENERS
    if not core:  # a free-standing bracket or quote ("... ) . [ Mutations")
        core, following = _strip_openers(following), ""
    first = core[:1]

    if "?" in punct or "!" in punct:
        return not (first.islower() and not _gene_like(core, following))

    # An enumerator opening the sentence: "1. The ...", "(ii). The ..." is not a sentence of its own.
    if not before and _ENUMERATOR.match(word):
        return False

    kind = _abbreviation_kind(word, previous)
    if kind == "never" or not first:
        return False
    if opened:
        # "(ABSTRACT TRUNCATED ...)", "(i) The ...", "[3H]Thymidine ..." start sentences;
        # "et al. (1999)" and "i.v. (5 mg/kg)" do not.
        return kind != "maybe"
    if first.islower():
        # "E. coli", "et al. reported", "i.v. injection" continue; "... cells. p53 was ..." does not.
        if kind == "initial":
            # Species epithets ("E. coli", "T. parva-infected") have no digit or inner capital;
            # "... at 37 degrees C. mRNA levels ..." starts a sentence.
            return bool(_GENE_NAME.match(core))
        return kind is None and _gene_like(core, following)
    if first.isdigit():
        # "2. 5%" is a decimal broken by a space (PubTator texts); GENIA has no sentence that
        # ends with a bare number and is followed by one starting with a digit.
        return kind != "maybe" and not _NUMBER.match(word) and word not in _MONTHS
    if first.isupper():
        if kind == "maybe":
            if core.rstrip(",;:") in _STARTERS:
                return True
            if word in _NAME_ABBREVIATIONS or any(c in ")]" for c in closers):
                return False  # "Co. St. Louis", "(at 11 p.m.) Type I receptors"
            return _is_titlecase(core)
        if kind == "initial":
            # "C. Sub. on ..." (abbreviated name), "J. R. Smith", "in J. B. Methylation" (runs of
            # initials), "Dr. W. Kniest".
            if (
                _SHORT_CAPITALIZED_ABBREVIATION.match(core)
                or _INITIAL.match(core.rstrip(",;:)]"))
                or _INITIAL.match(previous)
                or previous in _TITLES
            ):
                return False
        return True
    # Symbols ("--", "+/-", Greek capitals...).
    return kind is None


def _split_segment(text: str, start: int, end: int, protect_until: int = -1) -> list[Span]:
    """Sentences of ``text[start:end]`` as document-relative spans; no break before ``protect_until``."""
    segment = text[start:end]
    spans: list[Span] = []
    sentence_start = len(segment) - len(segment.lstrip())
    if sentence_start >= len(segment):
        return spans
    pairs: list[tuple[int, int]] | None = None
    opens: list[int] = []
    for match in _CANDIDATE.finditer(segment):
        boundary = match.end()
        if boundary <= sentence_start or start + boundary <= protect_until:
            continue
        next_match = _NONSPACE.search(segment, boundary)
        if next_match is None:
            break
        if pairs is None:
            pairs = _bracket_spans(segment)
            opens = [open_ for open_, _ in pairs]
        if _inside_brackets(pairs, opens, boundary):
            continue  # no break inside balanced brackets
        after = _NONSPACE.search(segment, next_match.end())
        if _is_boundary(segment, match, sentence_start, next_match.group(), after.group() if after else ""):
            spans.append((start + sentence_start, start + boundary))
            sentence_start = next_match.start()
    tail = len(segment.rstrip())
    if tail > sentence_start:
        spans.append((start + sentence_start, start + tail))
    return spans


def split_text(text: str) -> list[Span]:
    r"""Split plain text into sentences.

    A line break is a hard boundary (a title and its abstract joined by ``"\n"``
    never merge); within a line the rules of this module decide.

    Args:
        text: Any text (a document text, a sentence, a line).

    Returns:
        The sentences as ``(start, end)`` spans: half-open offsets into
            ``text``, sorted, non-overlapping, stripped of surrounding white space
            and together covering every non-space character.
    """
    spans: list[Span] = []
    line_start = 0
    for line_break in re.finditer(r"[\r\n]+", text):
        spans.extend(_split_segment(text, line_start, line_break.start()))
        line_start = line_break.end()
    spans.extend(_split_segment(text, line_start, len(text)))
    return spans


def _segments(doc: Document, counts: Counter[str]) -> list[tuple[int, int, int]]:
    """The hard segments of a well-formed document: (start, end, label end), document-relative.

    The title is one segment; the abstract is one segment per structured section
    (text before the first section, after the last one or between sections forms
    its own segment).  The third value is the end of the section's ``"LABEL: "``
    prefix (no break before it), ``-1`` when there is none.
    """
    title_end = len(doc.title)
    segments = [(0, title_end, -1)]
    abstract_start = doc.abstract_start
    length = len(doc.text)
    if abstract_start > length:
        return segments
    cuts = {abstract_start: -1}
    previous_end = abstract_start
    for section in sorted(doc.sections, key=lambda s: (s.start, s.end)):
        if not previous_end <= section.start <= section.text_start <= section.end <= length:
            counts["sections_invalid"] += 1
            log.warning("PMID %s: section %r at %d-%d ignored (overlapping or outside the abstract %d-%d)",
                        doc.pmid, section.label, section.start, section.end, abstract_start, length)
            continue
        counts["sections"] += 1
        cuts[section.start] = section.text_start if section.label else -1
        cuts.setdefault(section.end, -1)
        previous_end = section.end
    points = sorted(cuts)
    for i, cut in enumerate(points):
        segment_end = points[i + 1] if i + 1 < len(points) else length
        if segment_end > cut:
            segments.append((cut, segment_end, cuts[cut]))
    return segments


def _split_document(doc: Document, counts: Counter[str]) -> tuple[Sentence, ...]:
    title_end = len(doc.title)
    if doc.text[:title_end] != doc.title or doc.text[title_end : title_end + 1] not in ("", TITLE_SEPARATOR):
        # Not the model's layout: still split (line breaks stay hard boundaries) rather than lose the record.
        counts["documents_title_mismatch"] += 1
        log.warning("PMID %s: text does not start with the title and %r; sections ignored", doc.pmid,
                    TITLE_SEPARATOR)
        return tuple(Sentence(s, e) for s, e in split_text(doc.text))
    spans: list[Span] = []
    for start, end, label_end in _segments(doc, counts):
        spans.extend(_split_segment(doc.text, start, end, label_end))
    return tuple(Sentence(s, e) for s, e in spans)


def split_documents(docs: Iterable[Document], counts: Counter[str]) -> Iterator[Document]:
    r"""Fill ``Document.sentences`` of each document, lazily.

    Existing sentences are replaced; nothing else changes.  The title is split on
    its own, structured sections are hard boundaries (each starts a sentence that
    keeps its ``"LABEL: "``); a section whose offsets overlap another or fall
    outside the abstract is ignored, counted and logged.  A document whose text
    does not start with its title and ``"\n"`` is still split, with
    [`split_text`][pipeline.nlp.sentences.split_text], and counted.

    Args:
        docs: Documents (``text = title + "\n" + abstract``, ``sections``
            document-relative).
        counts: Counter incremented with the count keys listed in the module
            docstring.

    Yields:
        Each document, in input order, with ``sentences`` set: half-open,
            document-relative spans, sorted, non-overlapping, stripped, together
            covering every non-space character of the text.
    """
    for doc in docs:
        sentences = _split_document(doc, counts)
        title_end = len(doc.title)
        n_title = sum(1 for s in sentences if s.end <= title_end)
        counts["documents"] += 1
        counts["sentences"] += len(sentences)
        counts["title_sentences"] += n_title
        counts["abstract_sentences"] += len(sentences) - n_title
        if n_title > 1:
            counts["title_multi_sentence"] += 1
        if len(doc.text) <= title_end:
            counts["documents_without_abstract"] += 1
        if any(section.label for section in doc.sections):
            counts["structured_documents"] += 1
        if not sentences:
            counts["documents_empty"] += 1
            log.warning("PMID %s: no text to split", doc.pmid)
        yield dataclasses.replace(doc, sentences=sentences)


def add_to_pipeline(nlp: Any, name: str = "pgx_sentences", **kwargs: Any) -> Any:
    """Add a component applying [`split_text`][pipeline.nlp.sentences.split_text] to a spaCy pipeline.

    Tokens that begin one of our sentences get ``is_sent_start = True``, every
    other token ``False``, so the parser keeps these boundaries.  The factory
    ``pgx_sentence_splitter`` is registered with spaCy on first use.  spaCy is
    imported here only, so this module stays light.

    Args:
        nlp: A spaCy ``Language``; modified in place.
        name: Name of the component in the pipeline.
        **kwargs: Passed to ``Language.add_pipe`` (``before``, ``after``,
            ``first``, ``last``...); without ``before`` or ``first``, the
            component goes before the ``parser`` when there is one.

    Returns:
        The component added.
    """
    from spacy.language import Language

    factory = "pgx_sentence_splitter"
    if not Language.has_factory(factory):

        @Language.component(factory)
        def _component(doc: Any) -> Any:
            # A token starts a sentence when a sentence start falls in (previous token start, its start]
            # (robust to tokens that do not begin exactly where our sentence does).
            starts = [s for s, _ in split_text(doc.text)]
            k = 0
            for token in doc:
                begins = False
                while k < len(starts) and starts[k] <= token.idx:
                    begins = True
                    k += 1
                token.is_sent_start = begins or token.i == 0
            return doc

    if "before" not in kwargs and "first" not in kwargs and "parser" in nlp.pipe_names:
        kwargs["before"] = "parser"
    return nlp.add_pipe(factory, name=name, **kwargs)

