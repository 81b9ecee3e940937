"""The lexicon's lookup form: same annotations as keying the entries in memory, deterministic bytes, load once.

Covers: pipeline.nlp.lexicon, pipeline.nlp.lexicon_lookup, pipeline.nlp.local_annotator
"""

from __future__ import annotations

import collections
import gzip
import json
from pathlib import Path

from pipeline.nlp import lexicon as lx
from pipeline.nlp import lexicon_lookup as lk
from pipeline.nlp.local_annotator import LocalAnnotator
from tests.nlp.test_local_annotator import TABLES

TEXTS = (
    "Warfarin dose and CYP2D6*4, c-kit and H-ras in breast and ovarian cancers treated with imatinib mesylate.",
    "Alcohol dependence, tyrosine kinase, glutamate receptor 1, 25-OH vitamin D, cytochrome P450 enzymes.",
    "methotrexate (MTX) and MTX again; EGFR and epidermal growth factor receptors; OR2 or 2; Drd2 and DRD2.",
)


def write_lexicon(path: Path) -> None:
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({"format": lx.LEXICON_FORMAT, "wheels": lx.WHEELS, "tables": TABLES}, fh)


def test_lookup_file_gives_the_same_annotations_and_counts(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.json.gz"
    write_lexicon(path)
    in_memory = LocalAnnotator(TABLES)
    written = lk.write_lookup(path)
    assert written == lk.lookup_path(path) and written.is_file()
    lookup = lk.load_lookup(path)
    assert lookup is not None
    stored = LocalAnnotator(lookup=lookup)
    assert len(stored.exact) == len(in_memory.exact) and len(stored.folded) == len(in_memory.folded)
    for text in TEXTS:
        ca: collections.Counter[str] = collections.Counter()
        cb: collections.Counter[str] = collections.Counter()
        assert stored.annotate(text, ca) == in_memory.annotate(text, cb)
        assert ca == cb
    assert [a.text for a in stored.annotate(TEXTS[0])][:3] == ["Warfarin", "CYP2D6", "c-kit"]


def test_lookup_bytes_are_reproducible_and_tied_to_their_lexicon(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.json.gz"
    write_lexicon(path)
    first = lk.write_lookup(path).read_bytes()
    assert lk.write_lookup(path).read_bytes() == first
    # another lexicon content: the stale sidecar is ignored (the annotator keys the entries itself)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({"format": lx.LEXICON_FORMAT, "wheels": lx.WHEELS, "tables": {"folded": TABLES["folded"]}}, fh)
    assert lk.load_lookup(path) is None
    annotator = LocalAnnotator.load(path)
    assert [a.text for a in annotator.annotate("warfarin and CYP2D6")] == ["warfarin"]


def test_load_is_cached_per_process_by_content(tmp_path: Path) -> None:
    path = tmp_path / "lexicon.json.gz"
    write_lexicon(path)
    lk.write_lookup(path)
    first = LocalAnnotator.load(path)
    assert LocalAnnotator.load(path) is first
    write_lexicon(tmp_path / "other.json.gz")
    assert LocalAnnotator.load(tmp_path / "other.json.gz") is not first
