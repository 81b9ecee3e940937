"""PubTator3 API client: ``publications/export/biocjson?pmids=...`` with batching, rate limit, retries and cache.

[`PubtatorClient`][pipeline.sources.pubtator_api.PubtatorClient] fetches PubTator3's annotations for a set of
PMIDs:

* at most 100 PMIDs per request (``batch_size``), PMIDs sorted numerically and
  de-duplicated, so the same set always gives the same batches;
* at most ``requests_per_second`` request starts in any sliding second
  (default 3, the NCBI limit) for every process on the host: a
  [`HostRateLimiter`][pipeline.sources.httputil.HostRateLimiter] logs the request times
  of service ``pubtator`` in a file-locked log (``rate_limit_dir``, default
  [`rate_limit_dir`][pipeline.sources.httputil.rate_limit_dir]), with a 10% margin;
  ``clock``/``sleep`` are injectable;
* every request has a timeout and its status checked; 429 (honouring
  ``Retry-After``), 5xx, timeouts, connection errors and resets, bodies cut
  off mid-transfer (``ChunkedEncodingError``/``IncompleteRead``), bodies
  shorter or longer than their ``Content-Length`` and undecodable bodies are
  retried by the web clients' one policy
  ([`RetryPolicy`][pipeline.sources.retry.RetryPolicy]: exponential backoff, equal jitter, seeded);
  other 4xx fail at once.  An HTTP 200 whose body is an error message or
  malformed JSON is a failure of that batch and retried too.  After the last
  try a [`PubtatorApiError`][pipeline.sources.pubtator_api.PubtatorApiError] names the batch;
* an empty collection is a valid answer: PubTator knows none of the batch's
  PMIDs.  It is cached like any other answer (every PMID of the batch listed
  as unknown in the sidecar) and the PMIDs are reported missing, so the caller
  can fall back (the local annotator) and a rerun does not ask again;
* raw successful responses are cached gzip-compressed under ``cache_dir``,
  keyed by the batch's sorted PMIDs, each with a ``.pmids`` sidecar listing
  the PMIDs it answers (``-PMID``: unknown to PubTator): a rerun makes no
  request, and a rebuild whose PMID set grew asks only for PMIDs no cached
  response answers.

Responses are parsed in every shape the API has used (see
[`parse_response`][pipeline.sources.pubtator_api.parse_response]) into
[`BiocDocument`][pipeline.sources.bioc_io.BiocDocument] records:
passages (text, offset, infons type title/abstract) and annotations (locations
``(offset, length)``, text, infons type/identifier/...), offsets as the API
gives them (document-relative: the abstract starts at ``len(title) + 1``).
PMIDs requested but not returned are listed in the ``missing`` field of the
[`FetchResult`][pipeline.sources.pubtator_api.FetchResult].

This is the only module of the pre-annotation stage that uses the network.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import requests

from pipeline import durable
from pipeline.documents import pmid_sort_key
from pipeline.sources.bioc_io import (
    BiocDocument,
    BiocFormatError,
    document_from_json,
    iter_json_values,
    json_document_objects,
)
from pipeline.sources.httputil import HostRateLimiter, check_body_length, parse_retry_after
from pipeline.sources.retry import RetriesExhausted, Retryable, RetryPolicy

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://www.ncbi.nlm.nih.gov/research/pubtator3-api/"
EXPORT_PATH = "publications/export/biocjson"
MAX_BATCH = 100

#: Keys of a JSON object that is an error message rather than documents.
_ERROR_KEYS = ("error", "errors", "message", "detail", "status", "msg")


class PubtatorApiError(RuntimeError):
    """A batch could not be fetched; the message names the batch and the last error."""


class PubtatorResponseError(ValueError):
    """A response body that is not a usable BioC JSON answer (malformed JSON, error body, unknown shape)."""


def parse_response(
    raw: bytes | str, where: str = "response", counts: Counter[str] | None = None
) -> list[BiocDocument]:
    """Parse the documents of a PubTator (BioC JSON) response body.

    Shapes: ``{"PubTator3": [doc, ...]}`` (current API), a BioC collection
    ``{"documents": [...]}``, a bare document, a list of documents, and
    several documents concatenated or one per line (the old PubTator API).
    A malformed annotation (no location, non-integer offset) is
    skipped, logged and counted in ``counts["bioc_bad_records"]``.

    Args:
        raw: The body, UTF-8 (a BOM is allowed).
        where: Names the body in messages.
        counts: Parse counts, updated in place; None to discard them.

    Returns:
        The documents in body order, offsets as the API gives them (document-relative); ``[]`` for an
        empty collection.

    Raises:
        PubtatorResponseError: For a body that is empty or not UTF-8, malformed JSON, an error body, an
            unrecognised shape or a malformed document.
    """
    try:
        text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as err:
        raise PubtatorResponseError(f"{where}: body is not UTF-8 ({err})") from None
    if not text.strip():
        raise PubtatorResponseError(f"{where}: empty body")
    try:
        values = list(iter_json_values(text))
    except json.JSONDecodeError as err:
        snippet = text.strip()[:120].replace("\n", " ")
        raise PubtatorResponseError(f"{where}: malformed JSON at line {err.lineno}: {err.msg} ({snippet!r})") from None
    docs: list[BiocDocument] = []
    for value in values:
        objects = json_document_objects(value)
        if objects is None:
            if isinstance(value, dict) and any(k in value for k in _ERROR_KEYS):
                detail = {k: value[k] for k in _ERROR_KEYS if k in value}
                raise PubtatorResponseError(f"{where}: error body {json.dumps(detail)[:300]}")
            raise PubtatorResponseError(f"{where}: not a PubTator/BioC JSON shape: {json.dumps(value)[:120]}")
        for index, obj in enumerate(objects):
            try:
                docs.append(
                    document_from_json(obj, where=f"{where} [document {index}]", counts=counts, skip_bad=True)
                )
            except BiocFormatError as err:
                raise PubtatorResponseError(str(err)) from None
    return docs


def describe_batch(batch: Sequence[str]) -> str:
    """Name a batch for messages.

    Args:
        batch: The batch's PMIDs, in order.

    Returns:
        ``"3 PMIDs 100..300"`` (first and last PMID), ``"PMID 100"`` or ``"empty batch"``.
    """
    if not batch:
        return "empty batch"
    return f"{len(batch)} PMIDs {batch[0]}..{batch[-1]}" if len(batch) > 1 else f"PMID {batch[0]}"


def _sidecar(response: Path) -> Path:
    """``NAME.json.gz`` -> ``NAME.pmids``."""
    return response.with_name(response.name[: -len(".json.gz")] + ".pmids")


def cache_key(batch: Sequence[str]) -> str:
    """Name the cache file of a batch.

    Args:
        batch: The batch's PMIDs, in any order; not empty.

    Returns:
        ``biocjson_<first>_<last>_<size>_<hash>.json.gz``: first and last PMID in numeric order, the size
        and a hash of the sorted PMIDs, so the same set always gives the same name.
    """
    ordered = sorted(batch, key=pmid_sort_key)
    digest = hashlib.sha256(",".join(ordered).encode()).hexdigest()[:20]
    return f"biocjson_{ordered[0]}_{ordered[-1]}_{len(ordered)}_{digest}.json.gz"


@dataclass
class FetchResult:
    """What [`PubtatorClient.fetch`][pipeline.sources.pubtator_api.PubtatorClient.fetch] got.

    Attributes:
        documents: The documents returned, by PMID.
        missing: Requested PMIDs PubTator did not return, sorted numerically (non-numeric PMIDs included).
        batches: Batches not answered by the cache index (fetched, or read from the cache by batch name).
        requests: HTTP requests made (tries included).
        cache_hits: Batches (cached responses) read from the cache.
        retries: Failed tries.
        unrequested: Documents returned for PMIDs not asked for (ignored).
        bad_annotations: Malformed annotations skipped (logged).
    """

    documents: dict[str, BiocDocument] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    batches: int = 0
    requests: int = 0
    cache_hits: int = 0
    retries: int = 0
    unrequested: int = 0
    bad_annotations: int = 0


class PubtatorClient:
    """PubTator3 ``export/biocjson`` client (see the module docstring).

    The request rate is shared by every client (process) of the host through ``rate_limit_dir``
    (default: the host-wide directory).

    Args:
        base_url: The API root (tests point it at a loopback server); a missing trailing ``/`` is added.
        cache_dir: Directory of cached responses (created on the first write); None for no cache.
        batch_size: Most PMIDs per request, within 1..100.
        requests_per_second: Most request starts in any sliding second, positive.
        timeout: Timeout of each request, in seconds.
        max_tries: Tries per batch, at least 1.
        backoff: Base delay of the exponential backoff, in seconds.
        max_backoff: Cap of the backoff before jitter, in seconds.
        max_wait: Cap of one wait between tries, ``Retry-After`` included, in seconds.
        rate_limit_dir: Directory of the host-wide rate-limit log; None for
            [`rate_limit_dir`][pipeline.sources.httputil.rate_limit_dir].
        limiter: Replaces the limiter (then ``rate_limit_dir`` and ``requests_per_second`` do not limit).
        session: The ``requests`` session to send through; None for a new one.
        sleep: How to wait (injectable so tests run without waiting).
        clock: The rate limiter's clock, in seconds.
        seed: Seed of the backoff jitter (reproducible).

    Attributes:
        requests: HTTP requests made by this client so far (tries included).
        retries: Failed tries so far.

    Raises:
        ValueError: If ``batch_size``, ``requests_per_second`` or ``max_tries`` is out of range.
    """

    def __init__(
        self,
        base_url: str = DEFAULT_BASE_URL,
        *,
        cache_dir: Path | None = None,
        batch_size: int = MAX_BATCH,
        requests_per_second: float = 3.0,
        timeout: float = 30.0,
        max_tries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        max_wait: float = 300.0,
        rate_limit_dir: Path | None = None,
        limiter: HostRateLimiter | None = None,
        session: requests.Session | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        seed: int = 0,
    ) -> None:
        if not 1 <= batch_size <= MAX_BATCH:
            raise ValueError(f"batch_size must be between 1 and {MAX_BATCH}, got {batch_size}")
        if requests_per_second <= 0:
            raise ValueError("requests_per_second must be positive")
        if max_tries < 1:
            raise ValueError("max_tries must be at least 1")
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.url = self.base_url + EXPORT_PATH
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.batch_size = batch_size
        self.interval = 1.0 / requests_per_second
        self.timeout = timeout
        self.max_tries = max_tries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_wait = max_wait
        self.limiter = limiter or HostRateLimiter(
            "pubtator", requests_per_second, directory=rate_limit_dir, clock=clock, sleep=sleep
        )
        if session is None:
            session = requests.Session()
            session.headers["User-Agent"] = "pgx-corpus (PubTator3 client)"
        self.session = session
        self._sleep = sleep
        self._clock = clock
        self.retry = RetryPolicy(max_tries, backoff, max_backoff, max_wait, seed)
        self.requests = 0
        self.retries = 0
        self._parse_counts: Counter[str] = Counter()

    # -- batching -------------------------------------------------------------
    def batches(self, pmids: Iterable[str]) -> list[list[str]]:
        """Cut PMIDs into batches.

        Args:
            pmids: The PMIDs, in any order; blanks are dropped and duplicates merged.

        Returns:
            The PMIDs sorted numerically, de-duplicated, in batches of at most ``batch_size``.
        """
        ordered = sorted({p.strip() for p in pmids if p.strip()}, key=pmid_sort_key)
        return [ordered[i : i + self.batch_size] for i in range(0, len(ordered), self.batch_size)]

    def fetch(self, pmids: Iterable[str]) -> FetchResult:
        """Get the PubTator3 documents of PMIDs, from the cache when present.

        PMIDs answered by any cached response (its ``.pmids`` sidecar) are read from the cache; the
        others are fetched in batches, one GET each (retried as the module docstring says), and, with a
        cache directory, every successful response is cached (written atomically, its sidecar last).
        Non-numeric PMIDs are not sent and reported missing.

        Args:
            pmids: The PMIDs, in any order; blanks are dropped and duplicates merged.

        Returns:
            The documents by PMID, the PMIDs missing, and request and cache counts.

        Raises:
            PubtatorApiError: Naming the batch, when one fails after the last try or gets a 4xx status
                other than 429.
        """
        result = FetchResult()
        wanted = sorted({p.strip() for p in pmids if p.strip()}, key=pmid_sort_key)
        numeric = [p for p in wanted if p.isdigit()]
        for pmid in wanted:
            if not pmid.isdigit():
                logger.warning("PMID %r is not numeric; not sent to PubTator3", pmid)
        requests_before, retries_before = self.requests, self.retries
        bad_before = self._parse_counts["bioc_bad_records"]
        # PMIDs answered by any earlier batch come from the cache: a rebuild whose
        # shards gained PMIDs only asks PubTator for the new ones.
        from_cache = self._from_cached_batches(numeric, result)
        for batch in self.batches(p for p in numeric if p not in from_cache):
            result.batches += 1
            docs, cached = self.fetch_batch(batch)
            result.cache_hits += int(cached)
            requested = set(batch)
            for doc in docs:
                if doc.pmid is None or doc.pmid not in requested:
                    result.unrequested += 1
                    logger.warning("PubTator3 returned document %s (PMID %s) not asked for", doc.id, doc.pmid)
                    continue
                result.documents.setdefault(doc.pmid, doc)
        result.missing = [p for p in wanted if p not in result.documents]
        result.requests = self.requests - requests_before
        result.retries = self.retries - retries_before
        result.bad_annotations = self._parse_counts["bioc_bad_records"] - bad_before
        if result.missing:
            shown = ", ".join(result.missing[:20]) + (" ..." if len(result.missing) > 20 else "")
            logger.warning("PubTator3 returned no document for %d PMID(s): %s", len(result.missing), shown)
        return result

    # -- one batch ------------------------------------------------------------
    def cache_path(self, batch: Sequence[str]) -> Path | None:
        """Locate the cached response of a batch (whether it exists or not).

        Args:
            batch: The batch's PMIDs; not empty.

        Returns:
            ``cache_dir / cache_key(batch)``, or None without a cache directory.
        """
        return None if self.cache_dir is None else self.cache_dir / cache_key(batch)

    def _read_cache(self, batch: Sequence[str]) -> list[BiocDocument] | None:
        path = self.cache_path(batch)
        if path is None or not path.exists():
            return None
        return self._load_cached(path)

    def _load_cached(self, path: Path) -> list[BiocDocument] | None:
        """The documents of a cached response (``[]``: an empty collection, a valid answer).

        An unusable file (unreadable, cut short, not a BioC answer) is removed
        with its sidecar -> None, so the batch is fetched again.
        """
        counts: Counter[str] = Counter()
        try:
            with gzip.open(path, "rb") as fh:
                docs = parse_response(fh.read(), where=str(path), counts=counts)
        except (OSError, EOFError, PubtatorResponseError) as err:
            logger.warning("unusable cached response %s (%s); fetching again", path, err)
            path.unlink(missing_ok=True)
            _sidecar(path).unlink(missing_ok=True)
            return None
        self._parse_counts.update(counts)
        return docs

    def _write_cache(self, batch: Sequence[str], raw: bytes, returned: Iterable[str] = ()) -> None:
        """Store a raw response, then its ``.pmids`` sidecar (the PMIDs it answers).

        The sidecar lists every PMID of the batch, those PubTator did not
        return prefixed with ``-``: a later fetch takes both from the cache
        (remove the cache to ask PubTator again for PMIDs it did not know).
        The sidecar is written last, so its presence means the response is
        complete; sidecars make up the per-PMID index (no shared index file that
        parallel workers would have to lock).
        """
        path = self.cache_path(batch)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        # mode 0600 less the umask, as tempfile.mkstemp gave them before
        with durable.replacing(path, mode=0o600) as tmp, open(tmp, "wb") as raw_fh, \
                gzip.GzipFile(filename="", fileobj=raw_fh, mode="wb", mtime=0) as gz:
            gz.write(raw)
        answered = set(returned)
        durable.replace_file(_sidecar(path), "".join(f"{'' if p in answered else '-'}{p}\n"
                                                     for p in sorted(set(batch), key=pmid_sort_key)).encode("utf-8"),
                             mode=0o600)

    def _cache_index(self) -> dict[str, Path]:
        """PMID -> cached response answering it (the newest file wins when several do)."""
        index: dict[str, tuple[float, Path]] = {}
        if self.cache_dir is None or not self.cache_dir.is_dir():
            return {}
        for sidecar in self.cache_dir.glob("*.pmids"):
            response = sidecar.with_name(sidecar.name[: -len(".pmids")] + ".json.gz")
            if not response.exists():
                continue
            mtime = response.stat().st_mtime
            for line in sidecar.read_text(encoding="utf-8").split():
                pmid = line.lstrip("-")
                if pmid not in index or index[pmid][0] < mtime:
                    index[pmid] = (mtime, response)
        return {pmid: path for pmid, (_, path) in index.items()}

    def _from_cached_batches(self, pmids: Sequence[str], result: FetchResult) -> set[str]:
        """Fill ``result`` with the documents of ``pmids`` found in cached responses; returns those PMIDs."""
        index = self._cache_index()
        by_file: dict[Path, set[str]] = {}
        for pmid in pmids:
            if pmid in index:
                by_file.setdefault(index[pmid], set()).add(pmid)
        found: set[str] = set()
        for path, wanted in sorted(by_file.items()):
            docs = self._load_cached(path)
            if docs is None:
                continue
            result.cache_hits += 1
            for doc in docs:
                if doc.pmid in wanted and doc.pmid not in result.documents:
                    result.documents[doc.pmid] = doc
            # Requested then but not returned: known missing, not asked again.
            found |= wanted
        return found

    def _throttle(self) -> None:
        self.limiter.wait()

    def _try(self, batch: Sequence[str]) -> tuple[list[BiocDocument], bytes, Counter[str]]:
        self._throttle()
        self.requests += 1
        try:
            response = self.session.get(self.url, params={"pmids": ",".join(batch)}, timeout=self.timeout)
        except requests.Timeout as err:
            raise Retryable(f"timeout ({err})") from None
        except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError,
                requests.exceptions.ContentDecodingError) as err:
            # a reset, or a body cut off under its Content-Length (urllib3 IncompleteRead)
            raise Retryable(f"connection error or incomplete body ({err})") from None
        status = response.status_code
        if status == 429 or status >= 500:
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
            raise Retryable(f"HTTP {status}", retry_after)
        try:
            response.raise_for_status()
        except requests.HTTPError as err:
            raise PubtatorApiError(f"PubTator3 batch {describe_batch(batch)}: {err}") from err
        raw = response.content
        short = check_body_length(response.headers, raw)
        if short is not None:
            raise Retryable(f"incomplete body ({short})")
        counts: Counter[str] = Counter()
        try:
            docs = parse_response(raw, where=f"PubTator3 response for {describe_batch(batch)}", counts=counts)
        except PubtatorResponseError as err:
            raise Retryable(str(err)) from None
        return docs, raw, counts

    def fetch_batch(self, batch: Sequence[str]) -> tuple[list[BiocDocument], bool]:
        """Get the documents of one batch, from its cached response or with retried requests.

        With a cache directory, a fetched response is cached (atomically, then its ``.pmids`` sidecar); an
        empty collection is a valid answer and cached too.

        Args:
            batch: At most 100 PMIDs; an empty batch makes no request.

        Returns:
            The documents returned (in response order, offsets document-relative) and whether they came
            from the cache.

        Raises:
            ValueError: If the batch holds more than 100 PMIDs.
            PubtatorApiError: If the batch fails after the last try or gets a 4xx status other than 429.
        """
        if not batch:
            return [], False
        if len(batch) > MAX_BATCH:
            raise ValueError(f"a batch holds at most {MAX_BATCH} PMIDs, got {len(batch)}")
        cached = self._read_cache(batch)
        if cached is not None:
            logger.debug("PubTator3 batch %s from cache", describe_batch(batch))
            return cached, True

        def on_failure(n: int, retry: Retryable, _wait: float | None) -> None:
            self.retries += 1
            logger.warning("PubTator3 batch %s: try %d/%d failed: %s", describe_batch(batch), n, self.max_tries,
                           retry.reason)

        try:
            docs, raw, counts = self.retry.call(lambda: self._try(batch), self._sleep, on_failure)
        except RetriesExhausted as exc:
            raise PubtatorApiError(
                f"PubTator3 batch {describe_batch(batch)} failed after {self.max_tries} tries: {exc.last.reason}"
            ) from None
        self._parse_counts.update(counts)
        if not docs:
            logger.warning("PubTator3 batch %s: empty collection (PubTator knows none of these PMIDs); "
                           "cached, reported missing", describe_batch(batch))
        self._write_cache(batch, raw, (d.pmid for d in docs if d.pmid is not None))
        return docs, False


__all__ = [
    "DEFAULT_BASE_URL",
    "EXPORT_PATH",
    "MAX_BATCH",
    "FetchResult",
    "PubtatorApiError",
    "PubtatorClient",
    "PubtatorResponseError",
    "cache_key",
    "describe_batch",
    "parse_response",
    "parse_retry_after",
]
