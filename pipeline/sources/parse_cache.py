"""Parsed PubMed XML files, kept by content: a rebuild parses only new or changed files.

``cached_documents(path, cache_dir, counts)`` yields the documents of one
PubMed XML file ([`iter_documents`][pipeline.sources.pubmed_xml.iter_documents]) and adds
its parse counts to ``counts``.  The first time, the file is parsed and its
documents are written, in file order, to
``cache_dir/<sha256 of the file content and code version>.jsonl.gz`` (with
``.pmids``, their PMIDs in order, and ``.counts.json``); later calls read that instead of parsing (about 5x faster
than parsing XML).  Entries are written atomically (temporary name, then
rename; the counts file, written last, marks an entry complete) and never
modified; deleting the directory is always safe.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pipeline import __version__, durable, store
from pipeline.documents import Document
from pipeline.sources.pubmed_xml import iter_documents

log = logging.getLogger(__name__)


#: version of the entries' layout (2: one gzip member per document, as store files are written;
#: 3: documents carry PubTator relations, ``documents.FORMAT`` 2)
CACHE_FORMAT = 3


def file_key(path: Path) -> str:
    """Compute the cache key of a PubMed XML file.

    The key hashes the file's bytes, the code version (a new parser may read a file differently) and
    the entries' layout (``CACHE_FORMAT``).

    Args:
        path: The PubMed XML file (read in full).

    Returns:
        The first 32 hexadecimal digits of the SHA-256 digest.
    """
    digest = hashlib.sha256(f"pgx-corpus {__version__} parse cache {CACHE_FORMAT}\n".encode())
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:32]


def cached_documents(path: Path, cache_dir: Path, counts: Counter[str]) -> Iterator[Document]:
    """Yield the documents of a PubMed XML file, parsed once per content (see the module docstring).

    On a cache miss the file is parsed while the documents are yielded, and the entry
    (``<key>.jsonl.gz``, ``<key>.pmids``, ``<key>.counts.json``) is written atomically only when the
    generator is consumed to the end; an abandoned generator leaves no entry.

    Args:
        path: The PubMed XML file (``.xml`` or ``.xml.gz``).
        cache_dir: Directory of the cache entries, created when missing.
        counts: Parse counts, updated in place with this file's (from the entry on a hit).

    Yields:
        The file's documents, in file order.
    """
    key = file_key(path)
    docs_file = cache_dir / f"{key}.jsonl.gz"
    counts_file = cache_dir / f"{key}.counts.json"
    if docs_file.exists() and counts_file.exists():
        counts.update(store.read_json(counts_file))
        yield from store.read_records(docs_file, Document)
        return
    cache_dir.mkdir(parents=True, exist_ok=True)
    file_counts: Counter[str] = Counter()
    pmids: list[str] = []
    try:
        # an abandoned generator closes the block: the temporary is removed, no entry appears
        with durable.replacing(docs_file) as tmp, open(tmp, "wb") as raw:
            for doc in iter_documents(path, file_counts):
                # one member per document, the bytes a store file holds for its line
                raw.write(store.encode_member(store.dumps_records([doc])))
                pmids.append(doc.pmid)
                yield doc
        durable.replace_file(cache_dir / f"{key}.pmids", "".join(f"{pmid}\n" for pmid in pmids).encode("utf-8"))
        durable.replace_file(counts_file, store.dumps_json(dict(file_counts)).encode("utf-8"))
    finally:
        counts.update(file_counts)


def cached_lines(path: Path, cache_dir: Path, counts: Counter[str]) -> Iterator[store.StoredDocument]:
    """Yield a PubMed XML file's documents as store lines, without decoding a cached entry.

    Like [`cached_documents`][pipeline.sources.parse_cache.cached_documents], but a cached file's
    documents are passed on as their compressed members (only their PMIDs are read); a miss parses and
    writes the entry as [`cached_documents`][pipeline.sources.parse_cache.cached_documents] does.

    Args:
        path: The PubMed XML file.
        cache_dir: Directory of the cache entries, created when missing.
        counts: Parse counts, updated in place with this file's.

    Yields:
        One [`StoredDocument`][pipeline.store.StoredDocument] per document, in file order.
    """
    key = file_key(path)
    docs_file = cache_dir / f"{key}.jsonl.gz"
    counts_file = cache_dir / f"{key}.counts.json"
    if docs_file.exists() and counts_file.exists():
        counts.update(store.read_json(counts_file))
        # a line that is not its own member (a damaged or foreign entry) is compressed as a store file would
        members = [item.data if isinstance(item, store.MemberLine) else store.encode_member(item)
                   for item in store.iter_member_lines(docs_file)]
        try:
            # the PMIDs in file order, written with the entry: no member is decompressed
            pmids = (cache_dir / f"{key}.pmids").read_text(encoding="utf-8").split()
        except OSError:
            pmids = []
        if len(pmids) != len(members):  # an entry without its PMIDs
            pmids = [json.loads(store.decompress(member))["pmid"] for member in members]
        for pmid, member in zip(pmids, members, strict=True):
            yield store.StoredDocument(pmid, member)
        return
    for doc in cached_documents(path, cache_dir, counts):
        yield store.StoredDocument.of(doc)


__all__ = ["cached_documents", "cached_lines", "file_key"]
