"""Parsed PubMed XML files are kept by content: the second read gives the same documents without parsing.

Covers: pipeline.sources.parse_cache, pipeline.sources.pubmed_xml, pipeline.sources.retrieval, pipeline.store
"""

from __future__ import annotations

import collections
import gzip
import shutil
from pathlib import Path

import pytest

from pipeline import store
from pipeline.sources import parse_cache, pubmed_xml, retrieval

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo" / "pubmed"


def test_second_read_comes_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    first_counts: collections.Counter[str] = collections.Counter()
    first = list(retrieval.documents_from_files([DEMO], [], first_counts, cache_dir=cache))
    plain_counts: collections.Counter[str] = collections.Counter()
    assert first == list(retrieval.documents_from_files([DEMO], [], plain_counts))
    assert first_counts == plain_counts
    assert len(list(cache.glob("*.jsonl.gz"))) == 2

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(parse_cache, "iter_documents", no_parsing)
    again_counts: collections.Counter[str] = collections.Counter()
    assert list(retrieval.documents_from_files([DEMO], [], again_counts, cache_dir=cache)) == first
    assert again_counts == first_counts


def test_a_changed_file_is_parsed_again(tmp_path: Path) -> None:
    source = tmp_path / "demo.xml"
    shutil.copyfile(DEMO / "demo.xml", source)
    cache = tmp_path / "cache"
    before = list(parse_cache.cached_documents(source, cache, collections.Counter()))
    source.write_text(source.read_text(encoding="utf-8").replace("<PMID Version=\"1\">90000001</PMID>",
                                                                   "<PMID Version=\"1\">90000101</PMID>", 1),
                      encoding="utf-8")
    after = list(parse_cache.cached_documents(source, cache, collections.Counter()))
    assert len(list(cache.glob("*.counts.json"))) == 2
    assert [d.pmid for d in after] == [d.pmid for d in pubmed_xml.iter_documents(source, collections.Counter())]
    assert {d.pmid for d in after} != {d.pmid for d in before}


def test_cached_lines_take_their_pmids_from_the_sidecar_without_decoding(tmp_path: Path) -> None:
    source = tmp_path / "demo.xml"
    shutil.copyfile(DEMO / "demo.xml", source)
    cache = tmp_path / "cache"
    first = list(parse_cache.cached_lines(source, cache, collections.Counter()))  # parses, writes the entry
    (sidecar,) = cache.glob("*.pmids")
    assert sidecar.read_text().split() == [line.pmid for line in first]
    assert list(parse_cache.cached_lines(source, cache, collections.Counter())) == first
    sidecar.unlink()  # an entry written by an older version: PMIDs read from the lines
    assert list(parse_cache.cached_lines(source, cache, collections.Counter())) == first


def test_cached_lines_of_an_entry_that_is_one_plain_gzip_stream(tmp_path: Path) -> None:
    """An entry not written one member per document (damaged or foreign) still gives the same documents,
    each compressed as its own member as a store file holds it."""
    source = tmp_path / "demo.xml"
    shutil.copyfile(DEMO / "demo.xml", source)
    cache = tmp_path / "cache"
    first = list(parse_cache.cached_lines(source, cache, collections.Counter()))
    (entry,) = cache.glob("*.jsonl.gz")
    entry.write_bytes(gzip.compress(b"".join(d.line for d in first)))
    (cache / entry.name.replace(".jsonl.gz", ".pmids")).unlink()
    assert store.scan_members(entry.read_bytes()) is None
    assert list(parse_cache.cached_lines(source, cache, collections.Counter())) == first
