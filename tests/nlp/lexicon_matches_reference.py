"""The local annotator's lexicon lookup as it was before candidate positions, for the tests only.

[`LocalAnnotator._lexicon_matches`][pipeline.nlp.local_annotator.LocalAnnotator] visits only the token
positions where a table can match; this straightforward version tries every table at every token, and
the tests check that the two find the same matches on real text.  Also what the tests and
``bench/lexicon_lookup.py`` share: a table's ``lengths`` computed from its keys, and the texts of
PubMed XML files.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from pipeline.nlp import lexicon as lx
from pipeline.nlp.lexicon_lookup import SEP, Entry, LookupTable
from pipeline.nlp.local_annotator import _SPLIT_WORD, LocalAnnotator, _Match


def lexicon_matches(annotator: LocalAnnotator, text: str) -> list[_Match]:
    """Return the lexicon matches of a text, trying every table at every token (the former loop).

    Args:
        annotator: The annotator whose tables are used.
        text: A document text.

    Returns:
        The matches, as ``LocalAnnotator._lexicon_matches`` returns them.
    """
    tokens = [t for t in lx.tokenize(text) if t[0] not in lx.HYPHENS]
    exact = [lx.exact_token(t) for t, _, _ in tokens]
    folded = [lx.folded_token(t) for t, _, _ in tokens]
    tables = (
        (0, annotator.stop, folded), (1, annotator.exact, exact),
        (2, annotator.relaxed, folded), (3, annotator.folded, folded),
    )
    found: list[_Match] = []
    i = 0
    n = len(tokens)
    while i < n:
        best: tuple[int, int, Entry] | None = None  # (length, rank, entry)
        for rank, table, keys in tables:
            first = keys[i]
            if first in table.long and i + 1 < n and f"{first}{SEP}{keys[i + 1]}" in table.pairs:
                hit = table.longest(keys, i)  # a longer key starts with these two tokens
            else:  # the one-token key only (what ``longest`` does then, without the call)
                j = table.index.get(first)
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
            prefixed = annotator._prefixed_gene(text, tokens, i)
            if prefixed is not None:
                found.append(prefixed[1])
                i += prefixed[0]
                continue
            i += 1
            continue
        length, rank, entry = best
        start, end = tokens[i][1], tokens[i + length - 1][2]
        if annotator._acceptable(text, start, end):
            if entry.type:  # stop phrases consume their tokens and give nothing
                found.extend(annotator._reshape(text, _Match(start, end, entry.type, entry.identifier, rank)))
            i += length
        else:
            i += 1
    return found


ARTICLE = re.compile(r"<PubmedArticle>.*?</PubmedArticle>", re.S)
TITLE_OR_ABSTRACT = re.compile(r"<(ArticleTitle|AbstractText)[^>]*>(.*?)</\1>", re.S)
TAG = re.compile(r"<[^>]+>")


def pair_lengths(table: LookupTable) -> dict[str, str]:
    """The ``lengths`` of a table, computed here from its keys (independently of the sidecar writer)."""
    lengths: dict[str, set[int]] = {}
    for key in table.index:
        parts = key.split(SEP)
        if len(parts) > 1:
            lengths.setdefault(parts[0] + SEP + parts[1], set()).add(len(parts))
    return {pair: ",".join(map(str, sorted(n, reverse=True))) for pair, n in lengths.items()}


def pubmed_texts(files: Iterable[Path]) -> list[str]:
    """The title and abstract of every article of PubMed XML files, markup removed, in file order."""
    texts = []
    for path in files:
        for article in ARTICLE.findall(path.read_text(encoding="utf-8")):
            texts.append("\n".join(TAG.sub("", m.group(2)) for m in TITLE_OR_ABSTRACT.finditer(article)))
    return texts
