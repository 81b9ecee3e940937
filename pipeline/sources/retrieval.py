"""Retrieval: PubMed search records, the incremental EFetch cache, and offline sources.

Functions (network only through [`EutilsClient`][pipeline.sources.eutils.EutilsClient]):

* [`search`][pipeline.sources.retrieval.search] -- query ->
  [`SearchRecord`][pipeline.sources.retrieval.SearchRecord] (query, search date, Count, sorted PMIDs).
* [`fetch_to_cache`][pipeline.sources.retrieval.fetch_to_cache] -- download, in batches, the PMIDs not yet
  in the cache.
* [`revised_pmids`][pipeline.sources.retrieval.revised_pmids] -- PMIDs of the query modified (``mdat``)
  since a date.
* [`load_documents`][pipeline.sources.retrieval.load_documents] -- cached batches ->
  [`Document`][pipeline.documents.Document]s, sorted by PMID.
* [`documents_from_files`][pipeline.sources.retrieval.documents_from_files] -- PubMed XML files/directories
  and PubTator files -> Documents.

Cache layout (``cache_dir``, e.g. ``OUT/cache/efetch``)::

    batches/<first>-<last>-<sha1[:12]>.xml.gz   raw EFetch answer, gzip (reproducible header)
    batches/<first>-<last>-<sha1[:12]>.json     sidecar: requested/returned PMIDs, fetch time
    index.json                                  PMID -> batch file + fetch time (rebuilt from sidecars)

A batch name is its first and last requested PMID plus a hash of the raw
bytes, so the same answer always gets the same name.  The XML file is written
first, then its sidecar, each through a temporary file and ``os.replace``: a
batch counts as cached only once its sidecar exists, so an interrupted run
loses at most the batch in flight.  ``index.json`` is a convenience view
rebuilt from the sidecars (atomically) at the end of every fetch; when a PMID
is in several batches (re-fetched revised records) the newest fetch wins,
ties broken by file name.  PMIDs requested but absent from NCBI's answer
(deleted or withdrawn records) are remembered as ``not_returned`` so reruns
do not ask again (``refetch`` does).

Count keys of [`load_documents`][pipeline.sources.retrieval.load_documents]: ``requested`` (distinct PMIDs asked
for), ``kept``, ``no_abstract``, ``missing_from_cache`` (never fetched or
fetch failed), ``not_returned`` (NCBI returned no record for it),
``superseded_copies`` (older cached copies ignored), ``duplicate_requested``
(PMIDs listed twice).  [`documents_from_files`][pipeline.sources.retrieval.documents_from_files] passes
``counts`` to the parsers (keys of [`pipeline.sources.pubmed_xml`][pipeline.sources.pubmed_xml]; PubTator keys
prefixed
``pubtator_``) and adds ``files_pubmed_xml``, ``files_pubtator``,
``duplicate_documents`` (same PMID in several files: the first wins),
``no_abstract``.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import json
import logging
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pipeline import durable
from pipeline.documents import Document, pmid_sort_key
from pipeline.sources.eutils import EutilsClient, EutilsError
from pipeline.sources.parse_cache import cached_documents, cached_lines
from pipeline.sources.pubmed_xml import PubmedXmlError, count_records, iter_documents
from pipeline.sources.pubtator_format import PubtatorFormatError, read_pubtator, to_document
from pipeline.store import StoredDocument

log = logging.getLogger(__name__)

INDEX_NAME = "index.json"
BATCH_DIR = "batches"
INDEX_VERSION = 1


# --- search ----------------------------------------------------------------


@dataclass(frozen=True)
class SearchRecord:
    """What a run searched: the query, the date, the unsplit Count and the sorted PMIDs.

    Attributes:
        query: The PubMed query.
        search_date: The date recorded for the search (it does not limit the query).
        count: The unsplit ``Count``.
        pmids: The PMIDs found, sorted numerically, de-duplicated.
        query_translation: How PubMed read the query, or None.
        pieces: Date ranges the search was split into (1 when not split).
        errors: NCBI's ``ErrorList`` (``PhraseNotFound`` ...): tag -> the texts.
        warnings: NCBI's ``WarningList``: tag -> the texts.
    """

    query: str
    search_date: dt.date
    count: int
    pmids: tuple[str, ...]
    query_translation: str | None = None
    pieces: int = 1
    errors: dict[str, tuple[str, ...]] = field(default_factory=dict)
    warnings: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """Encode the record as a JSON object.

        Returns:
            The fields, the date in ISO format and the NCBI lists sorted by tag.
        """
        return {
            "query": self.query,
            "search_date": self.search_date.isoformat(),
            "count": self.count,
            "pmids": list(self.pmids),
            "query_translation": self.query_translation,
            "pieces": self.pieces,
            "errors": {k: list(v) for k, v in sorted(self.errors.items())},
            "warnings": {k: list(v) for k, v in sorted(self.warnings.items())},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SearchRecord:
        """Decode a record written by [`to_json`][pipeline.sources.retrieval.SearchRecord.to_json].

        Args:
            data: The JSON object; ``query_translation``, ``pieces``, ``errors`` and ``warnings`` are
                optional.

        Returns:
            The record.

        Raises:
            KeyError: If ``query``, ``search_date``, ``count`` or ``pmids`` is missing.
            ValueError: If the date or the count is malformed.
        """
        return cls(
            query=data["query"],
            search_date=dt.date.fromisoformat(data["search_date"]),
            count=int(data["count"]),
            pmids=tuple(data["pmids"]),
            query_translation=data.get("query_translation"),
            pieces=int(data.get("pieces", 1)),
            errors={k: tuple(v) for k, v in data.get("errors", {}).items()},
            warnings={k: tuple(v) for k, v in data.get("warnings", {}).items()},
        )


def search(client: EutilsClient, query: str, search_date: dt.date) -> SearchRecord:
    """Run a query on PubMed (all PMIDs, the 9,999 cap handled by date splitting).

    Zero hits give a record with ``count == 0`` (NCBI's
    ErrorList/WarningList kept in ``errors``/``warnings``); the caller decides
    whether that is fatal.

    Args:
        client: The E-utilities client (network, rate limit and retries).
        query: The PubMed query.
        search_date: Recorded as the date of the search (it does not limit the query).

    Returns:
        The record, PMIDs sorted numerically.

    Raises:
        EutilsError: If a request fails after its retries, or the split search stays incomplete
            ([`SearchIncompleteError`][pipeline.sources.eutils.SearchIncompleteError]).
    """
    result = client.search_pmids(query)
    return SearchRecord(
        query=query,
        search_date=search_date,
        count=result.count,
        pmids=tuple(sorted(set(result.pmids), key=pmid_sort_key)),
        query_translation=result.query_translation,
        pieces=len(result.pieces),
        errors=result.errors,
        warnings=result.warnings,
    )


def revised_pmids(client: EutilsClient, query: str, since: dt.date) -> list[str]:
    """Find the PMIDs matching a query whose record was modified on or after a date (``datetype=mdat``).

    Args:
        client: The E-utilities client.
        query: The PubMed query.
        since: First modification day searched (inclusive).

    Returns:
        The PMIDs, sorted numerically.

    Raises:
        EutilsError: If a request fails after its retries, or the split search stays incomplete.
    """
    result = client.search_pmids(query, datetype="mdat", mindate=since)
    return sorted(set(result.pmids), key=pmid_sort_key)


# --- cache -----------------------------------------------------------------


@dataclass
class FetchReport:
    """Outcome of [`fetch_to_cache`][pipeline.sources.retrieval.fetch_to_cache].

    Attributes:
        requested: Distinct PMIDs asked for.
        already_cached: PMIDs the cache held (returned or known not returned) and not forced again.
        downloaded: PMIDs returned by the batches downloaded now.
        refetched: PMIDs downloaded again because ``refetch`` named them.
        batches: Batches downloaded and stored.
        files: File names of the stored batches, in download order.
        not_returned: PMIDs asked for in a stored batch that NCBI did not return (deleted, withdrawn).
        failed: ``{batch, pmids, error}`` per batch that failed for good; its PMIDs are not cached.
    """

    requested: int = 0
    already_cached: int = 0
    downloaded: int = 0
    refetched: int = 0
    batches: int = 0
    files: list[str] = field(default_factory=list)
    not_returned: list[str] = field(default_factory=list)
    failed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no batch failed."""
        return not self.failed

    def to_json(self) -> dict[str, Any]:
        """Encode the report as a JSON object.

        Returns:
            The fields, plus ``failed_pmids``: the number of PMIDs in failed batches.
        """
        return {
            "requested": self.requested,
            "already_cached": self.already_cached,
            "downloaded": self.downloaded,
            "refetched": self.refetched,
            "batches": self.batches,
            "files": list(self.files),
            "not_returned": list(self.not_returned),
            "failed": [dict(f) for f in self.failed],
            "failed_pmids": sum(len(f["pmids"]) for f in self.failed),
        }


@dataclass(frozen=True)
class _Entry:
    batch: str
    fetched: str


@dataclass
class _Index:
    pmids: dict[str, _Entry]
    not_returned: dict[str, _Entry]
    copies: Counter[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": INDEX_VERSION,
            "pmids": {p: {"batch": e.batch, "fetched": e.fetched}
                      for p, e in sorted(self.pmids.items(), key=lambda kv: pmid_sort_key(kv[0]))},
            "not_returned": {p: {"batch": e.batch, "fetched": e.fetched}
                             for p, e in sorted(self.not_returned.items(), key=lambda kv: pmid_sort_key(kv[0]))},
        }


def _gzip_bytes(payload: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
        gz.write(payload)
    return buf.getvalue()


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _read_index(cache_dir: Path) -> _Index:
    """Index rebuilt from the batch sidecars (complete batches only); newest copy of a PMID wins."""
    batches = Path(cache_dir) / BATCH_DIR
    sidecars: list[tuple[str, str, dict[str, Any]]] = []
    if batches.is_dir():
        for side in batches.glob("*.json"):
            xml = side.with_suffix(".xml.gz")
            if not xml.exists():
                log.warning("%s: batch file missing, its PMIDs count as not cached", xml)
                continue
            try:
                meta = json.loads(side.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                log.warning("%s: unreadable sidecar (%s); batch ignored", side, exc)
                continue
            sidecars.append((str(meta.get("fetched", "")), xml.name, meta))
    sidecars.sort(key=lambda t: (t[0], t[1]))  # oldest first, later ones overwrite
    pmids: dict[str, _Entry] = {}
    missing: dict[str, _Entry] = {}
    copies: Counter[str] = Counter()
    for fetched, name, meta in sidecars:
        entry = _Entry(batch=name, fetched=fetched)
        returned = [str(p) for p in meta.get("returned", [])]
        for pmid in returned:
            copies[pmid] += 1
            pmids[pmid] = entry
            missing.pop(pmid, None)
        got = set(returned)
        for pmid in meta.get("requested", []):
            pmid = str(pmid)
            if pmid not in got and pmid not in pmids:
                missing[pmid] = entry
    return _Index(pmids=pmids, not_returned=missing, copies=copies)


def _write_index(cache_dir: Path, index: _Index) -> None:
    payload = json.dumps(index.to_json(), sort_keys=True, indent=1).encode("utf-8") + b"\n"
    durable.replace_file(Path(cache_dir) / INDEX_NAME, payload, durable=True)


def _store_batch(cache_dir: Path, requested: Sequence[str], payload: bytes) -> tuple[str, list[str]]:
    """Write one raw EFetch answer (+ sidecar); returns its file name and the PMIDs it holds."""
    returned, _ = count_records(payload, name=f"efetch batch {requested[0]}..{requested[-1]}")
    digest = hashlib.sha1(payload).hexdigest()[:12]
    stem = f"{requested[0]}-{requested[-1]}-{digest}"
    batches = Path(cache_dir) / BATCH_DIR
    batches.mkdir(parents=True, exist_ok=True)
    xml = batches / f"{stem}.xml.gz"
    durable.replace_file(xml, _gzip_bytes(payload), durable=True)
    stored = sorted({p for p in returned if p}, key=pmid_sort_key)
    meta = {
        "batch": xml.name,
        "fetched": _now(),
        "requested": list(requested),
        "returned": stored,
        "sha1": hashlib.sha1(payload).hexdigest(),
    }
    durable.replace_file(batches / f"{stem}.json",
                         json.dumps(meta, sort_keys=True, indent=1).encode("utf-8") + b"\n", durable=True)
    return xml.name, stored


def fetch_to_cache(
    client: EutilsClient,
    pmids: Sequence[str],
    cache_dir: Path,
    *,
    batch_size: int = 200,
    refetch: Collection[str] = (),
) -> FetchReport:
    """Download (EFetch, POST) the PMIDs that the cache does not hold yet.

    Batches are taken in PMID order.  Each batch answer is checked (complete PubMed XML), then
    written with its sidecar, each atomically and fsynced (see the module docstring).  A batch that
    fails for good (after the client's retries) is recorded in
    ``report.failed`` with its PMIDs and the error; the other batches are kept.
    The index is rewritten atomically at the end.

    Args:
        client: The E-utilities client (network, rate limit and retries).
        pmids: The PMIDs wanted; blanks are dropped and duplicates merged.
        cache_dir: The EFetch cache directory, created when missing.
        batch_size: Most PMIDs per EFetch request, positive.
        refetch: PMIDs to download again even when cached (only those also in ``pmids``); the newest
            copy wins when loading.

    Returns:
        What was requested, found cached, downloaded, not returned and failed.

    Raises:
        ValueError: If ``batch_size`` is not positive.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be positive")
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    index = _read_index(cache_dir)
    wanted = sorted({str(p).strip() for p in pmids if str(p).strip()}, key=pmid_sort_key)
    forced = {str(p).strip() for p in refetch} & set(wanted)
    cached = {p for p in wanted if p in index.pmids or p in index.not_returned}
    todo = [p for p in wanted if p not in cached or p in forced]
    report = FetchReport(requested=len(wanted), already_cached=len(cached - forced))
    log.info("efetch cache %s: %d requested, %d cached, %d to download (%d forced)", cache_dir, len(wanted),
             report.already_cached, len(todo), len(forced & cached))
    for i in range(0, len(todo), batch_size):
        batch = todo[i : i + batch_size]
        label = f"{batch[0]}..{batch[-1]}"
        try:
            payload = client.efetch(batch)
            name, returned = _store_batch(cache_dir, batch, payload)
        except (EutilsError, PubmedXmlError) as exc:
            log.error("efetch batch %s (%d PMIDs) failed: %s", label, len(batch), exc)
            report.failed.append({"batch": label, "pmids": list(batch), "error": str(exc)})
            continue
        report.batches += 1
        report.files.append(name)
        if report.batches % 25 == 0:
            log.info("efetch: %d batch(es) stored, %d failed, %d/%d PMIDs done", report.batches, len(report.failed),
                     i + len(batch), len(todo))
        got = set(returned)
        report.downloaded += len(got & set(batch))
        report.refetched += len(got & forced & cached)
        report.not_returned.extend(p for p in batch if p not in got)
    _write_index(cache_dir, _read_index(cache_dir))
    return report


def load_documents(cache_dir: Path, pmids: Collection[str], counts: Counter[str]) -> Iterator[Document]:
    r"""Read the documents of the requested PMIDs from the cached batches, sorted by PMID.

    Each PMID is read from its newest cached copy; records without abstract
    are skipped and counted, as are PMIDs the cache does not hold.  All documents are parsed before
    the first is yielded.

    Args:
        cache_dir: The EFetch cache directory.
        pmids: The PMIDs wanted; blanks are dropped, duplicates counted (``duplicate_requested``).
        counts: Count keys (see the module docstring), updated in place.

    Yields:
        The documents, sorted numerically by PMID (text ``title + "\n" + abstract``, offsets
        half-open and document-relative).

    Raises:
        PubmedXmlError: Naming the file, for a corrupt batch file.
    """
    index = _read_index(Path(cache_dir))
    listed = [str(p).strip() for p in pmids if str(p).strip()]
    wanted = set(listed)
    counts["requested"] += len(wanted)
    if len(listed) != len(wanted):
        counts["duplicate_requested"] += len(listed) - len(wanted)
    by_batch: dict[str, set[str]] = {}
    for pmid in sorted(wanted, key=pmid_sort_key):
        entry = index.pmids.get(pmid)
        if entry is None:
            key = "not_returned" if pmid in index.not_returned else "missing_from_cache"
            counts[key] += 1
            continue
        if index.copies[pmid] > 1:
            counts["superseded_copies"] += index.copies[pmid] - 1
        by_batch.setdefault(entry.batch, set()).add(pmid)
    found: dict[str, Document] = {}
    for name in sorted(by_batch):
        want = by_batch[name]
        parse_counts: Counter[str] = Counter()
        for doc in iter_documents(Path(cache_dir) / BATCH_DIR / name, parse_counts):
            if doc.pmid in want and doc.pmid not in found:
                found[doc.pmid] = doc
        lost = want - set(found)
        if lost:
            counts["no_abstract"] += len(lost)
    counts["kept"] += len(found)
    for pmid in sorted(found, key=pmid_sort_key):
        yield found[pmid]


# --- offline sources -----------------------------------------------------------------


def _is_pubmed_xml_name(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(".xml") or name.endswith(".xml.gz")


def expand_pubmed_paths(paths: Iterable[Path]) -> list[Path]:
    """Expand PubMed XML paths: files as given, directories to their XML files.

    Args:
        paths: Files and directories; a directory without XML file is logged.

    Returns:
        The files, in the order given; a directory's ``*.xml``/``*.xml.gz`` files (searched recursively,
        case-insensitive suffix) sorted.

    Raises:
        PubmedXmlError: If a path does not exist.
    """
    out: list[Path] = []
    for path in paths:
        path = Path(path)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _is_pubmed_xml_name(p))
            if not found:
                log.warning("%s: no *.xml or *.xml.gz file in this directory", path)
            out.extend(found)
        elif path.exists():
            out.append(path)
        else:
            raise PubmedXmlError(f"{path}: no such file or directory")
    return out


def documents_from_files(
    pubmed_xml: Sequence[Path],
    pubtator: Sequence[Path],
    counts: Counter[str],
    *,
    skip_bad_lines: bool = False,
    cache_dir: Path | None = None,
) -> Iterator[Document]:
    r"""Read the documents of offline sources: PubMed XML files/directories (plain or .gz), then PubTator files.

    PubMed XML directories are searched recursively for ``*.xml``/``*.xml.gz``
    (sorted); documents come in file order.  A PMID met again in a later file
    is skipped and counted (``duplicate_documents``).  PubTator records keep
    their annotations (source ``pubtator``, document-relative offsets; see
    [`to_document`][pipeline.sources.pubtator_format.to_document]); a PubTator record without abstract
    is skipped and counted (``no_abstract``).

    Args:
        pubmed_xml: PubMed XML files and directories.
        pubtator: PubTator files (not directories).
        counts: Count keys (see the module docstring), updated in place as files are read.
        skip_bad_lines: Skip (count and log) malformed PubTator lines instead of raising.
        cache_dir: Parsed PubMed XML files are kept there by content and not parsed
            again ([`pipeline.sources.parse_cache`][pipeline.sources.parse_cache]); None to parse every time.

    Returns:
        A lazy iterator over the documents, PubMed XML first, then PubTator, each in file order; text
        ``title + "\n" + abstract``, offsets half-open and document-relative.  Files are read, and
        the errors below raised, as it is consumed.

    Raises:
        PubmedXmlError: Naming the file (and line), for a missing path or unreadable or wrong-format XML.
        PubtatorFormatError: Naming the file (and line), for a directory given as a PubTator file, an
            unreadable file or a malformed line (unless ``skip_bad_lines``).
    """

    def read_xml(path: Path, file_counts: Counter[str]) -> Iterator[Document]:
        if cache_dir is None:
            return iter_documents(path, file_counts)
        return cached_documents(path, cache_dir, file_counts)

    return _from_files(pubmed_xml, pubtator, counts, skip_bad_lines, read_xml, lambda doc: doc)


def document_lines_from_files(
    pubmed_xml: Sequence[Path],
    pubtator: Sequence[Path],
    counts: Counter[str],
    *,
    skip_bad_lines: bool = False,
    cache_dir: Path,
) -> Iterator[StoredDocument]:
    """Read the documents of offline sources as store lines, without decoding cached ones.

    Like [`documents_from_files`][pipeline.sources.retrieval.documents_from_files]: same documents, order
    and counts; documents read back from the parse cache are passed on as their compressed lines.

    Args:
        pubmed_xml: PubMed XML files and directories.
        pubtator: PubTator files (not directories).
        counts: Count keys (see the module docstring), updated in place as files are read.
        skip_bad_lines: Skip (count and log) malformed PubTator lines instead of raising.
        cache_dir: The parse cache ([`pipeline.sources.parse_cache`][pipeline.sources.parse_cache]); required.

    Returns:
        A lazy iterator of one [`StoredDocument`][pipeline.store.StoredDocument] per document: its line as
        the store writes it.

    Raises:
        PubmedXmlError: As [`documents_from_files`][pipeline.sources.retrieval.documents_from_files] does.
        PubtatorFormatError: As [`documents_from_files`][pipeline.sources.retrieval.documents_from_files] does.
    """

    def read_xml(path: Path, file_counts: Counter[str]) -> Iterator[StoredDocument]:
        return cached_lines(path, cache_dir, file_counts)

    return _from_files(pubmed_xml, pubtator, counts, skip_bad_lines, read_xml, StoredDocument.of)


D = TypeVar("D", Document, StoredDocument)


def _from_files(
    pubmed_xml: Sequence[Path],
    pubtator: Sequence[Path],
    counts: Counter[str],
    skip_bad_lines: bool,
    read_xml: Callable[[Path, Counter[str]], Iterator[D]],
    wrap: Callable[[Document], D],
) -> Iterator[D]:
    seen: set[str] = set()
    for path in expand_pubmed_paths(pubmed_xml):
        counts["files_pubmed_xml"] += 1
        file_counts: Counter[str] = Counter()
        duplicates = 0
        for doc in read_xml(path, file_counts):
            if doc.pmid in seen:
                duplicates += 1
                log.warning("%s: PMID %s already read from an earlier file; skipped", path, doc.pmid)
                continue
            seen.add(doc.pmid)
            yield doc
        # "kept" counts documents passed on, so duplicates are not kept twice.
        file_counts["kept"] -= duplicates
        file_counts["duplicate_documents"] += duplicates
        counts.update(+file_counts)
    for path in pubtator:
        path = Path(path)
        if path.is_dir():
            raise PubtatorFormatError(f"{path}: is a directory; give PubTator files")
        counts["files_pubtator"] += 1
        pt_counts: Counter[str] = Counter()
        yield from map(wrap, _pubtator_documents(path, seen, pt_counts, counts, skip_bad_lines))
        counts.update({f"pubtator_{k}": v for k, v in pt_counts.items()})


def _pubtator_documents(
    path: Path, seen: set[str], pt_counts: Counter[str], counts: Counter[str], skip_bad_lines: bool
) -> Iterator[Document]:
    for record in read_pubtator(path, skip_bad_lines=skip_bad_lines, counts=pt_counts):
        if record.pmid in seen:
            counts["duplicate_documents"] += 1
            log.warning("%s:%d: PMID %s already read from an earlier file; skipped", path, record.line, record.pmid)
            continue
        if not record.abstract.strip():
            counts["no_abstract"] += 1
            continue
        seen.add(record.pmid)
        yield to_document(record, pt_counts)


__all__ = [
    "FetchReport",
    "SearchRecord",
    "document_lines_from_files",
    "documents_from_files",
    "expand_pubmed_paths",
    "fetch_to_cache",
    "load_documents",
    "revised_pmids",
    "search",
]


# --- a build's documents ----------------------------------------------------


def query_hash(query: str) -> str:
    """Return the short hash naming a query's searches (whitespace differences do not count).

    Args:
        query: A PubMed query.

    Returns:
        12 hexadecimal digits of the SHA-256 of the query, its runs of white space made single spaces.
    """
    return hashlib.sha256(" ".join(query.split()).encode()).hexdigest()[:12]


def check_search(record: SearchRecord, *, allow_empty: bool = False) -> SearchRecord:
    """Return a search record, refusing one without a PubMed record unless that is allowed.

    Args:
        record: The search's record, from [`search`][pipeline.sources.retrieval.search].
        allow_empty: Accept a search that found nothing (``--allow-empty``).

    Returns:
        ``record``.

    Raises:
        RuntimeError: If the search found no record and ``allow_empty`` is false.
    """
    if record.count == 0 and not allow_empty:
        raise RuntimeError(f"the query returned no PubMed record (use --allow-empty to accept): {record.query}")
    return record


def previous_search_date(searches: Path, search_date: str) -> dt.date | None:
    """Return the date of the latest earlier search of a query, from its search records.

    Args:
        searches: The query's directory of search records, ``<date>.json`` each (``OUT/searches/<hash>/``).
        search_date: The current search's ISO date.

    Returns:
        The latest date before ``search_date`` with a record, None when there is none.
    """
    earlier = sorted(p.stem for p in searches.glob("*.json") if p.stem < search_date)
    return dt.date.fromisoformat(earlier[-1]) if earlier else None


def build_documents(
    counts: Counter[str],
    *,
    efetch_cache: Path | None = None,
    search: Mapping[str, Any] | None = None,
    fetch: Mapping[str, Any] | None = None,
    pubmed_xml: Sequence[Path] = (),
    pubtator: Sequence[Path] = (),
    skip_bad_lines: bool = False,
    cache_dir: Path,
) -> Iterator[StoredDocument]:
    """Return a build's documents from every source, de-duplicated by PMID, as store lines.

    Offline files win over the search: a PMID found in both is the file's, counted as
    ``duplicate_pmid``.  Documents read back from the parse cache are not decoded: only their PMIDs are
    read.

    Args:
        counts: Updated with what was read: ``searched``, ``fetch_failed_batches``, ``fetch_failed_pmids``,
            the readers' counts, ``duplicate_pmid`` and ``documents``.
        efetch_cache: The raw efetch batches of the search (``OUT/cache/efetch``); needed with ``search``.
        search: The search record as JSON (its ``pmids``), None for an offline build.
        fetch: The fetch report as JSON (its ``failed`` batches), None for an offline build.
        pubmed_xml: PubMed XML files or directories.
        pubtator: PubTator-format files.
        skip_bad_lines: Count and skip malformed input lines instead of failing.
        cache_dir: The parse cache of the offline files (``OUT/cache/sources``): unchanged files are not
            parsed again.

    Returns:
        The documents, in the order their PMIDs were first seen.

    Raises:
        ValueError: If ``search`` is given without ``efetch_cache``.
    """
    seen: dict[str, StoredDocument] = {}
    if search is not None:
        if efetch_cache is None:
            raise ValueError("the documents of a search need its efetch cache")
        failed = (fetch or {}).get("failed", [])
        counts["fetch_failed_batches"] = len(failed)
        counts["fetch_failed_pmids"] = sum(len(f.get("pmids", [])) for f in failed)
        pmids = search["pmids"]
        counts["searched"] = len(pmids)
        for doc in load_documents(efetch_cache, pmids, counts):
            seen[doc.pmid] = StoredDocument.of(doc)
    for line in document_lines_from_files(pubmed_xml, pubtator, counts, skip_bad_lines=skip_bad_lines,
                                          cache_dir=cache_dir):
        if line.pmid in seen:
            counts["duplicate_pmid"] += 1
        seen[line.pmid] = line
    counts["documents"] = len(seen)
    return iter(seen.values())
