"""The lexicon lookup's faster loop finds exactly what the former loop found, on the real lexicon and real text.

``LocalAnnotator._lexicon_matches`` visits only the token positions where a table can match, and
``LookupTable.longest`` tries only the key lengths the sidecar's ``lengths`` section lists;
[`lexicon_matches_reference`][tests.nlp.lexicon_matches_reference] is the former loop, which tries every
table at every token and every length up to the first token's bound.

Covers: pipeline.nlp.lexicon_lookup, pipeline.nlp.local_annotator
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pipeline.nlp import lexicon as lx
from pipeline.nlp import lexicon_lookup as lk
from pipeline.nlp.local_annotator import LocalAnnotator
from tests.conftest import shared_path
from tests.nlp.lexicon_matches_reference import lexicon_matches, pair_lengths, pubmed_texts
from tests.nlp.test_lexicon_lookup import TEXTS, write_lexicon
from tests.nlp.test_local_annotator import TABLES

PROJECT = Path(__file__).resolve().parents[2]
def both_ways(lookup: lk.Lookup) -> tuple[LocalAnnotator, LocalAnnotator]:
    """The same lexicon as the former loop saw it (no lengths) and as the current one sees it (lengths)."""
    without = {name: dataclasses.replace(getattr(lookup, name), lengths={}) for name in lk.TABLES}
    with_lengths = {name: dataclasses.replace(t, lengths=pair_lengths(t)) for name, t in without.items()}
    old = LocalAnnotator(lookup=lk.Lookup(**without, gene_folded=lookup.gene_folded))
    old.stop = dataclasses.replace(old.stop, lengths={})
    new = LocalAnnotator(lookup=lk.Lookup(**with_lengths, gene_folded=lookup.gene_folded))
    return old, new


def test_small_lexicon_same_matches_and_sidecar_lengths(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.json.gz"
    write_lexicon(path)
    lk.write_lookup(path)
    lookup = lk.load_lookup(path)
    assert lookup is not None
    for name in lk.TABLES:  # the sidecar's section is what the keys say
        assert getattr(lookup, name).lengths == pair_lengths(getattr(lookup, name))
    old, new = both_ways(lookup)
    for text in TEXTS:
        assert new._lexicon_matches(text) == lexicon_matches(old, text)


def test_sidecar_without_lengths_is_read_and_matches_the_same(tmp_path: Path) -> None:
    """A sidecar written before the ``lengths`` section existed is still read (every length is tried)."""
    path = tmp_path / "lexicon.json.gz"
    write_lexicon(path)
    lk.write_lookup(path)
    sidecar = lk.lookup_path(path)
    header_line, _, body = sidecar.read_bytes().partition(b"\n")
    header = json.loads(header_line)
    kept, offset, blobs = [], 0, []
    for name, size in header["sections"]:
        if not name.endswith(".lengths"):
            kept.append([name, size])
            blobs.append(body[offset : offset + size])
        offset += size
    header["sections"] = kept
    sidecar.write_bytes(json.dumps(header, sort_keys=True).encode() + b"\n" + b"".join(blobs))
    old_form = lk.load_lookup(path)
    assert old_form is not None and not old_form.exact.lengths
    annotator = LocalAnnotator(lookup=old_form)
    reference = LocalAnnotator(TABLES)
    for text in TEXTS:
        assert annotator.annotate(text) == reference.annotate(text)


def real_texts() -> list[str]:
    """Titles and abstracts of the 1,699 GENIA records and the demo's records."""
    files = sorted(shared_path("data", "genia", "pubmed-xml").glob("*.xml"))
    files += sorted((PROJECT / "data").rglob("*.xml"))
    return pubmed_texts(files)


@pytest.mark.slow
def test_real_lexicon_same_matches_on_real_text() -> None:
    if not lx.DEFAULT_LEXICON.is_file():
        pytest.skip(f"real lexicon not built ({lx.DEFAULT_LEXICON}); run `make setup` or `pgx-corpus lexicon build`")
    lookup = lk.load_lookup(lx.DEFAULT_LEXICON)
    if lookup is None:
        pytest.skip(f"no lookup sidecar next to {lx.DEFAULT_LEXICON} (`pgx-corpus lexicon build` writes it)")
    old, new = both_ways(lookup)
    texts = real_texts()
    assert len(texts) > 1_000
    found = 0
    for text in texts:
        expected = lexicon_matches(old, text)
        assert new._lexicon_matches(text) == expected, text[:80]
        found += len(expected)
    assert found > 10_000
